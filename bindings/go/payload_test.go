package raftlet

import (
	"bytes"
	"errors"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// leaderOfOne is a single-voter node that has won its election, its
// Ready loop drained into s.
func leaderOfOne(t *testing.T, s *MemoryStorage) *RawNode {
	t.Helper()
	rn, err := NewRawNode(testConfig(1, s))
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.Bootstrap([]Peer{{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	drain(t, rn, s)
	if err := rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	drain(t, rn, s)
	if rn.BasicStatus().RaftState != StateLeader {
		t.Fatal("the single voter did not win its election")
	}
	return rn
}

// drain runs Ready cycles until the node is idle; it returns the
// committed entries' data.
func drain(t *testing.T, rn *RawNode, s *MemoryStorage) [][]byte {
	t.Helper()
	var got [][]byte
	for rn.HasReady() {
		rd := rn.Ready()
		if err := s.AppendReady(rd); err != nil {
			t.Fatal(err)
		}
		for _, e := range rd.CommittedEntries {
			if e.Type == raftpb.EntryConfChange {
				var cc raftpb.ConfChange
				if err := cc.Unmarshal(e.Data); err != nil {
					t.Fatal(err)
				}
				rn.ApplyConfChange(cc)
				continue
			}
			got = append(got, e.Data)
		}
		rn.Advance(rd)
	}
	return got
}

func TestPayloadsAreProposedInPlace(t *testing.T) {
	ps, err := NewPayloads(5, 0, 20000)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 || len(ps[0].Data) != 5 || ps[1].Data != nil || len(ps[2].Data) != 20000 {
		t.Fatalf("sizes %d %v %d", len(ps[0].Data), ps[1].Data, len(ps[2].Data))
	}
	if !bytes.Equal(ps[2].Data, make([]byte, 20000)) {
		t.Fatal("a new payload is not zeroed")
	}
	copy(ps[0].Data, "hello")
	for i := range ps[2].Data {
		ps[2].Data[i] = byte(i * 7)
	}
	want := bytes.Clone(ps[2].Data)

	s := NewMemoryStorage()
	defer s.Close()
	rn := leaderOfOne(t, s)
	defer rn.Close()
	if err := rn.ProposePayloads(ps); err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if p.h != 0 || p.Data != nil {
			t.Fatalf("payload %d not taken: %+v", i, p)
		}
	}
	got := drain(t, rn, s)
	if len(got) != 3 || string(got[0]) != "hello" || len(got[1]) != 0 || !bytes.Equal(got[2], want) {
		t.Fatalf("committed %d entries", len(got))
	}
	// A payload proposed already is refused, and nothing of the call is
	// taken: the fresh payload beside it is still the caller's.
	fresh, err := NewPayloads(3)
	if err != nil {
		t.Fatal(err)
	}
	two := []Payload{fresh[0], ps[0]}
	if err := rn.ProposePayloads(two); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("a proposed payload again: %v", err)
	}
	if two[0].h == 0 || len(two[0].Data) != 3 {
		t.Fatal("a refused call took a payload")
	}
	// The same payload twice: refused, nothing taken.
	dup := []Payload{fresh[0], fresh[0]}
	if err := rn.ProposePayloads(dup); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("a payload twice: %v", err)
	}
	if dup[0].h == 0 || dup[1].h == 0 {
		t.Fatal("a refused call took a payload")
	}
	two[0].Free()
	two[0].Free() // a second Free does nothing
	if two[0].Data != nil {
		t.Fatal("Free left Data")
	}
	if rn.HasReady() {
		t.Fatal("a refused call proposed something")
	}
}

func TestPayloadsRefusedOrDropped(t *testing.T) {
	if _, err := NewPayloads(4, -1); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("a negative size: %v", err)
	}
	if ps, err := NewPayloads(); err != nil || len(ps) != 0 {
		t.Fatalf("no sizes: %v %v", ps, err)
	}
	var zero Payload
	zero.Free()

	// No leader: the proposal is dropped and its payloads freed.
	s := NewMemoryStorage()
	defer s.Close()
	rn, err := NewRawNode(testConfig(1, s))
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.Bootstrap([]Peer{{ID: 1}, {ID: 2}, {ID: 3}}); err != nil {
		t.Fatal(err)
	}
	ps, err := NewPayloads(8, 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.ProposePayloads(ps); !errors.Is(err, ErrProposalDropped) {
		t.Fatalf("no leader: %v", err)
	}
	if ps[0].h != 0 || ps[1].h != 0 {
		t.Fatal("a dropped proposal's payloads were not taken")
	}
	if err := rn.ProposePayloads(nil); !errors.Is(err, ErrProposalDropped) {
		t.Fatalf("no payloads: %v", err)
	}

	// A closed node takes nothing.
	rn.Close()
	ps, err = NewPayloads(8)
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.ProposePayloads(ps); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed node: %v", err)
	}
	if ps[0].h == 0 {
		t.Fatal("a closed node took a payload")
	}
	ps[0].Free()
}
