package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// TestFramesChunkLargeMessages: a message over chunkSize crosses as
// pieces no larger than chunkSize (the top bit of all but the last
// header set) and is joined again; small ones are one plain frame.
func TestFramesChunkLargeMessages(t *testing.T) {
	for _, size := range []int{1, 100, chunkSize, chunkSize + 1, 3*chunkSize + 17} {
		a, b := net.Pipe()
		msg := bytes.Repeat([]byte{byte(size)}, size)
		go func() {
			w := bufio.NewWriter(a)
			if err := writeMessage(a, w, msg); err == nil {
				_ = w.Flush()
			}
			a.Close()
		}()
		// Read the whole stream: check the frame headers, then parse it
		// back.
		r := bufio.NewReader(b)
		var raw []byte
		buf := make([]byte, 64<<10)
		for {
			n, err := r.Read(buf)
			raw = append(raw, buf[:n]...)
			if err != nil {
				break
			}
		}
		frames := 0
		for off := 0; off < len(raw); frames++ {
			h := binary.BigEndian.Uint32(raw[off:])
			n := int(h &^ moreFlag)
			if n > chunkSize {
				t.Fatalf("size %d: a frame of %d bytes", size, n)
			}
			off += 4 + n
			if (h&moreFlag == 0) != (off == len(raw)) {
				t.Fatalf("size %d: the more bit is wrong at frame %d", size, frames)
			}
		}
		if want := (size + chunkSize - 1) / chunkSize; frames != want {
			t.Fatalf("size %d: %d frames, want %d", size, frames, want)
		}
		c1, c2 := net.Pipe()
		go func() { _, _ = c1.Write(raw); c1.Close() }()
		got, err := readMessage(c2, bufio.NewReader(c2))
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("size %d: read back %d bytes, %v", size, len(got), err)
		}
		c2.Close()
	}
	// Refused: a frame over the limit, an empty message.
	for _, hdr := range []uint32{chunkSize + 1, moreFlag | (chunkSize + 1), 0} {
		c1, c2 := net.Pipe()
		go func() {
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], hdr)
			_, _ = c1.Write(b[:])
			c1.Close()
		}()
		if _, err := readMessage(c2, bufio.NewReader(c2)); err == nil {
			t.Fatalf("header %#x accepted", hdr)
		}
		c2.Close()
	}
}

// TestSnapshotStreamsInChunks: a follower that was down while the log
// was compacted past it catches up from a snapshot of several MiB, sent
// in chunks.
func TestSnapshotStreamsInChunks(t *testing.T) {
	c := startCluster(t, 3, "--snapshot-entries", "20")
	lead := c.Leader()
	down := lead%3 + 1
	if err := c.Kill(down); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	big := strings.Repeat("x", 64<<10)
	for i := 0; i < 60; i++ {
		k := fmt.Sprintf("big%02d", i)
		v := fmt.Sprintf("%d%s", i, big)
		if err := c.PutRetry(k, v, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	if err := c.Start(down); err != nil {
		t.Fatal(err)
	}
	if err := caughtUp(c, down, want); err != nil {
		t.Fatalf("node %d did not catch up: %v", down, err)
	}
	// The leader's log names a snapshot over one chunk.
	sent := 0
	for _, id := range c.IDs() {
		b, _ := os.ReadFile(c.Node(id).Log)
		for _, line := range strings.Split(string(b), "\n") {
			if i := strings.Index(line, "sending snapshot at"); i >= 0 {
				f := strings.Fields(line[i:])
				// sending snapshot at N (B bytes) to ID
				if len(f) > 4 {
					n, _ := strconv.Atoi(strings.TrimPrefix(f[4], "("))
					sent = max(sent, n)
				}
			}
		}
	}
	if sent <= chunkSize {
		t.Fatalf("largest snapshot sent: %d bytes, want more than one chunk (%d)", sent, chunkSize)
	}
}

// TestFirstMessageAfterPeerRestartArrives: when a peer restarts, the
// connection to its old process is dead, but a write to it still succeeds
// (the kernel takes the bytes; the peer answers with a reset). The first
// message after the restart, often a vote or a vote response that raft
// does not send again for an election timeout, must reach the new process
// rather than vanish into the dead connection.
func TestFirstMessageAfterPeerRestartArrives(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	// start runs node 2's side: a transport that reports each message's
	// term on got.
	start := func() (*transport, chan uint64) {
		got := make(chan uint64, 16)
		b := newTransport(2)
		b.onUnreachable = func(uint64) {}
		b.onSnapshot = func(uint64, bool) {}
		b.onMessage = func(buf []byte) error {
			var m raftpb.Message
			if err := m.Unmarshal(buf); err != nil {
				return err
			}
			got <- m.Term
			return nil
		}
		if err := b.listen(addr); err != nil {
			t.Fatal(err)
		}
		return b, got
	}
	msg := func(term uint64) []byte {
		m := raftpb.Message{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: term}
		buf, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return buf
	}
	expect := func(got chan uint64, term uint64) {
		t.Helper()
		select {
		case g := <-got:
			if g != term {
				t.Fatalf("received term %d, want %d", g, term)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("the message of term %d never arrived", term)
		}
	}

	a := newTransport(1)
	a.onUnreachable = func(uint64) {}
	a.onSnapshot = func(uint64, bool) {}
	a.onMessage = func([]byte) error { return nil }
	defer a.close()
	a.setPeer(2, addr)

	b, got := start()
	if !a.send(2, msg(1), false) {
		t.Fatal("send refused")
	}
	expect(got, 1)

	// Node 2 restarts; its old process's connection closes (the FIN
	// reaches node 1 at once on loopback).
	b.close()
	b, got = start()
	defer b.close()
	time.Sleep(200 * time.Millisecond)

	if !a.send(2, msg(2), false) {
		t.Fatal("send refused")
	}
	expect(got, 2)
}
