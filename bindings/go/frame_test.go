package raftlet

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func mustMarshal(t testing.TB, m raftpb.Message) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The frame the Rust core's frame tests build (raft-core/src/multi/frame.rs,
// vector_frame), from etcd's encoding of the same three messages.
func vectorItems(t testing.TB) []FrameItem {
	return []FrameItem{
		{1, mustMarshal(t, raftpb.Message{Type: raftpb.MsgHeartbeat, From: 7, To: 3, Term: 5, Commit: 12})},
		{42, mustMarshal(t, raftpb.Message{Type: raftpb.MsgApp, From: 7, To: 3, Term: 5, LogTerm: 5, Index: 6, Commit: 6,
			Entries: []raftpb.Entry{{Term: 5, Index: 7, Data: []byte("frame")}}})},
		{1 << 40, mustMarshal(t, raftpb.Message{Type: raftpb.MsgVote, From: 7, To: 4, Term: 9, LogTerm: 5, Index: 7})},
	}
}

func TestFrameVectorIsTheRustCoresEncoding(t *testing.T) {
	raw, err := os.ReadFile("../../raft-core/testdata/frame-v1.hex")
	if err != nil {
		t.Fatal(err)
	}
	want, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	b := NewFrameBuilder(7)
	for _, it := range vectorItems(t) {
		if err := b.Push(it.Group, it.Msg); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("frame\n got %x\nwant %x", b.Bytes(), want)
	}
	from, items, err := DecodeFrame(want, nil)
	if err != nil || from != 7 || len(items) != 3 {
		t.Fatalf("DecodeFrame: from %d, %d items, %v", from, len(items), err)
	}
	for i, it := range vectorItems(t) {
		if items[i].Group != it.Group || !bytes.Equal(items[i].Msg, it.Msg) {
			t.Fatalf("item %d: %d %x, want %d %x", i, items[i].Group, items[i].Msg, it.Group, it.Msg)
		}
	}

	// An empty frame is a node-level heartbeat; Reset reuses the builder.
	b.Reset(9)
	if from, items, err := DecodeFrame(b.Bytes(), items); err != nil || from != 9 || len(items) != 0 || b.Len() != 0 {
		t.Fatalf("empty frame: from %d, %d items, %v", from, len(items), err)
	}
}

func TestDecodeFrameRefusesWhatIsNotAFrame(t *testing.T) {
	b := NewFrameBuilder(7)
	for _, it := range vectorItems(t) {
		if err := b.Push(it.Group, it.Msg); err != nil {
			t.Fatal(err)
		}
	}
	good := append([]byte(nil), b.Bytes()...)
	// Every strict prefix is refused (a cut item or a missing one), and so
	// is the frame with a byte too many.
	for n := 0; n < len(good); n++ {
		if _, items, err := DecodeFrame(good[:n], nil); !errors.Is(err, ErrFrame) || len(items) != 0 {
			t.Fatalf("prefix of %d bytes: %d items, %v", n, len(items), err)
		}
	}
	if _, _, err := DecodeFrame(append(append([]byte(nil), good...), 0), nil); !errors.Is(err, ErrFrame) {
		t.Fatalf("a trailing byte: %v", err)
	}
	for name, mut := range map[string]func([]byte){
		"magic":       func(f []byte) { f[0] = 'X' },
		"version":     func(f []byte) { f[3] = 2 },
		"count lower": func(f []byte) { f[12] = 2 },
		"count more":  func(f []byte) { f[12] = 4 },
		"item length": func(f []byte) { f[frameHeaderLen+8] = 0xff },
	} {
		f := append([]byte(nil), good...)
		mut(f)
		if _, _, err := DecodeFrame(f, nil); !errors.Is(err, ErrFrame) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func FuzzDecodeFrame(f *testing.F) {
	b := NewFrameBuilder(7)
	for _, it := range vectorItems(f) {
		_ = b.Push(it.Group, it.Msg)
	}
	f.Add(b.Bytes())
	f.Add([]byte("RLF\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		from, items, err := DecodeFrame(data, nil)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes.
		re := NewFrameBuilder(from)
		for _, it := range items {
			if err := re.Push(it.Group, it.Msg); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(re.Bytes(), data) {
			t.Fatalf("decoded and re-encoded: %x, was %x", re.Bytes(), data)
		}
	})
}

// frameHost is one node of a multi-group process: a RawNode per group,
// and one frame per destination node and round.
type frameHost struct {
	id     uint64
	groups map[uint64]*RawNode
	stores map[uint64]*MemoryStorage
	out    map[uint64]*FrameBuilder
	apply  map[uint64][]string
}

// round runs every group's Ready and returns the frames to send, by
// destination node.
func (h *frameHost) round(t *testing.T) map[uint64][]byte {
	for to, b := range h.out {
		b.Reset(h.id)
		delete(h.out, to)
	}
	for g := uint64(1); g <= uint64(len(h.groups)); g++ {
		rn := h.groups[g]
		if !rn.HasReady() {
			continue
		}
		rd := rn.Ready()
		if err := h.stores[g].AppendReady(rd); err != nil {
			t.Fatal(err)
		}
		for _, m := range rd.Messages {
			b, ok := h.out[m.To]
			if !ok {
				b = NewFrameBuilder(h.id)
				h.out[m.To] = b
			}
			if err := b.Push(g, mustMarshal(t, m)); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range rd.CommittedEntries {
			if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
				h.apply[g] = append(h.apply[g], string(e.Data))
			}
		}
		rn.Advance(rd)
	}
	frames := map[uint64][]byte{}
	for to, b := range h.out {
		frames[to] = append([]byte(nil), b.Bytes()...)
	}
	return frames
}

// receive steps every message of a frame into its group.
func (h *frameHost) receive(t *testing.T, frame []byte) {
	_, items, err := DecodeFrame(frame, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		rn, ok := h.groups[it.Group]
		if !ok {
			t.Fatalf("node %d: a message for unknown group %d", h.id, it.Group)
		}
		if err := rn.StepBytes(it.Msg); err != nil {
			t.Fatalf("node %d group %d: %v", h.id, it.Group, err)
		}
	}
}

// Three nodes host four groups each; every round each node sends at most
// one frame to each other node, carrying the messages of all its groups.
func TestFramesCarryTheMessagesOfManyGroups(t *testing.T) {
	const nodes, groups = 3, 4
	hosts := map[uint64]*frameHost{}
	peers := []Peer{{ID: 1}, {ID: 2}, {ID: 3}}
	for id := uint64(1); id <= nodes; id++ {
		h := &frameHost{id: id, groups: map[uint64]*RawNode{}, stores: map[uint64]*MemoryStorage{},
			out: map[uint64]*FrameBuilder{}, apply: map[uint64][]string{}}
		for g := uint64(1); g <= groups; g++ {
			s := NewMemoryStorage()
			rn, err := NewRawNode(testConfig(id, s))
			if err != nil {
				t.Fatal(err)
			}
			if err := rn.Bootstrap(peers); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rn.Close(); s.Close() })
			h.groups[g], h.stores[g] = rn, s
		}
		hosts[id] = h
	}
	frames, messages := 0, 0
	settle := func() {
		for i := 0; i < 1000; i++ {
			moved := false
			for id := uint64(1); id <= nodes; id++ {
				for to, f := range hosts[id].round(t) {
					_, items, err := DecodeFrame(f, nil)
					if err != nil {
						t.Fatal(err)
					}
					frames++
					messages += len(items)
					hosts[to].receive(t, f)
					moved = true
				}
			}
			if !moved {
				return
			}
		}
		t.Fatal("the groups did not settle")
	}
	settle()
	// Group g is led by node (g-1)%3+1: leaders spread over the nodes.
	for g := uint64(1); g <= groups; g++ {
		if err := hosts[(g-1)%nodes+1].groups[g].Campaign(); err != nil {
			t.Fatal(err)
		}
	}
	settle()
	for g := uint64(1); g <= groups; g++ {
		lead := (g-1)%nodes + 1
		if st := hosts[lead].groups[g].BasicStatus(); st.RaftState != StateLeader {
			t.Fatalf("group %d: node %d is %v", g, lead, st.RaftState)
		}
		for i := 0; i < 3; i++ {
			if err := hosts[lead].groups[g].Propose([]byte(fmt.Sprintf("g%d-%d", g, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	settle()
	for id := uint64(1); id <= nodes; id++ {
		for g := uint64(1); g <= groups; g++ {
			want := []string{fmt.Sprintf("g%d-0", g), fmt.Sprintf("g%d-1", g), fmt.Sprintf("g%d-2", g)}
			if got := hosts[id].apply[g]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("node %d group %d applied %q, want %q", id, g, got, want)
			}
		}
	}
	if frames == 0 || messages <= frames {
		t.Fatalf("%d messages in %d frames: the frames batched nothing", messages, frames)
	}
	t.Logf("%d messages of %d groups in %d frames", messages, groups, frames)
}
