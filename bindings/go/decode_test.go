package raftlet

import (
	"reflect"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// sameAsGogoproto fails when decodeMessage and gogoproto's Unmarshal
// disagree on b (the result, or whether it is an error).
func sameAsGogoproto(t *testing.T, b []byte) {
	t.Helper()
	var want, got raftpb.Message
	werr := want.Unmarshal(b)
	gerr := decodeMessage(append([]byte(nil), b...), &got)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("% x: gogoproto error %v, decodeMessage error %v", b, werr, gerr)
	}
	if werr == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("% x:\ngogoproto    %#v\ndecodeMessage %#v", b, want, got)
	}
}

func marshal(t testing.TB, m raftpb.Message) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeSeeds(t testing.TB) [][]byte {
	snap := raftpb.Snapshot{Data: []byte("s"), Metadata: raftpb.SnapshotMetadata{Index: 3, Term: 2,
		ConfState: raftpb.ConfState{Voters: []uint64{1, 2}}}}
	seeds := [][]byte{
		marshal(t, raftpb.Message{}),
		marshal(t, raftpb.Message{Type: raftpb.MsgApp, To: 2, From: 1, Term: 5, LogTerm: 4, Index: 9, Commit: 8,
			Entries: []raftpb.Entry{{Term: 5, Index: 10, Data: []byte("abc")}, {Term: 5, Index: 11},
				{Term: 5, Index: 12, Type: raftpb.EntryConfChangeV2, Data: []byte{1, 2}}}}),
		marshal(t, raftpb.Message{Type: raftpb.MsgAppResp, Reject: true, RejectHint: 7, Vote: 3, Context: []byte("ctx")}),
		marshal(t, raftpb.Message{Type: raftpb.MsgSnap, Snapshot: &snap}),
		marshal(t, raftpb.Message{Type: raftpb.MsgStorageAppend, Responses: []raftpb.Message{{Type: raftpb.MsgAppResp}}}),
		{0x62, 0x00},                         // context present and empty
		{0x3a, 0x02, 0x22, 0x00},             // an entry whose data is present and empty
		{0x3a, 0x02, 0x2a, 0x00},             // an entry with an unknown field
		{0x08, 0xff, 0xff, 0xff, 0xff, 0x7f}, // a type over int32
		{0x78, 0x01},                         // an unknown varint field (15)
		{0x0a, 0x01, 0x03},                   // field 1 as bytes
		{0x3a, 0x05, 0x00},                   // a length past the end
		{0x10},                               // a truncated varint
		{0x0d, 0, 0, 0, 0},                   // a fixed32 field
		{0x3a, 0x02, 0x08},                   // a truncated entry
		{0x10, 0x01, 0x10, 0x02},             // a field given twice
	}
	return seeds
}

// decodeMessage gives what gogoproto gives, on every message a cluster
// sends and on hand-made edge cases.
func TestDecodeMessageMatchesGogoproto(t *testing.T) {
	for _, b := range decodeSeeds(t) {
		sameAsGogoproto(t, b)
	}
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	var seen [][]byte
	for i := 0; i < 20; i++ {
		_ = c.nodes[1].rn.Propose(payload(i))
		for _, id := range c.ids() {
			c.handle(c.nodes[id])
		}
		seen = append(seen, c.mailbox...)
		c.settle()
		c.tick(1)
	}
	if len(seen) < 20 {
		t.Fatalf("only %d messages", len(seen))
	}
	for _, b := range seen {
		sameAsGogoproto(t, b)
	}
}

// FuzzDecodeMessage: go test -fuzz=FuzzDecodeMessage (the seeds run in
// go test).
func FuzzDecodeMessage(f *testing.F) {
	for _, b := range decodeSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAsGogoproto(t, b) })
}
