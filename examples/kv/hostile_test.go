package main

import (
	"encoding/binary"
	"math"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// TestHostilePeer sends a node what a broken or hostile peer could: frames
// that are not raftpb, an oversized frame, messages for another node,
// from ids that cannot be members, of local-only types, with absurd
// terms. The node drops them (closing the connection where the stream
// cannot be trusted), never crashes, and the cluster keeps serving.
func TestHostilePeer(t *testing.T) {
	c := startCluster(t, 3)
	frame := func(b []byte) []byte {
		out := make([]byte, 4+len(b))
		binary.BigEndian.PutUint32(out, uint32(len(b)))
		copy(out[4:], b)
		return out
	}
	msg := func(m raftpb.Message) []byte {
		b, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return frame(b)
	}
	target := c.Node(1)
	streams := [][]byte{
		frame([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}), // not raftpb
		{0x7f, 0xff, 0xff, 0xff},                    // a 2 GiB frame
		{0x80, 0x10, 0x00, 0x00},                    // a chunk over the frame limit
		frame(nil),                                  // empty message
		msg(raftpb.Message{Type: raftpb.MsgHeartbeat, To: 7, From: 2, Term: 1}), // for another node
		msg(raftpb.Message{Type: raftpb.MsgHeartbeat, To: 1, From: math.MaxUint64, Term: 1}),
		msg(raftpb.Message{Type: raftpb.MsgHup, To: 1, From: 2}), // local only
		msg(raftpb.Message{Type: raftpb.MessageType(99), To: 1, From: 2, Term: 1}),
		msg(raftpb.Message{Type: raftpb.MsgApp, To: 1, From: 9, Term: math.MaxInt64 + 1, Index: 5}),
		msg(raftpb.Message{Type: raftpb.MsgAppResp, To: 1, From: 9, Term: 1, Index: 1 << 62}), // unknown peer
	}
	for i, s := range streams {
		conn, err := net.DialTimeout("tcp", target.Raft, time.Second)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = conn.Write(s)
		conn.Close()
	}
	time.Sleep(300 * time.Millisecond)
	if !target.Running() {
		t.Fatal("node 1 died of hostile input")
	}
	if err := c.PutRetry("after", "ok", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(1, "after", false)
	if err != nil || got != "ok" {
		t.Fatalf("read on node 1 after hostile input: %q %v", got, err)
	}
	// The node saw them: the log names the refusals.
	b, err := os.ReadFile(target.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bad message", "frame of", "message for 7", "refused"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("node 1's log has no %q line", want)
		}
	}
}
