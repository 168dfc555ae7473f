package raftlet

import (
	"errors"
	"reflect"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// nodeView is what a host mistake must not move: term, vote, commit,
// applied, role, the storage's log bounds and the configuration.
type nodeView struct {
	term, vote, commit, applied uint64
	role                        StateType
	first, last                 uint64
	cs                          *raftpb.ConfState
}

func viewOf(t *testing.T, n *testNode) nodeView {
	t.Helper()
	b := n.rn.BasicStatus()
	first, err := n.storage.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	last, err := n.storage.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := n.rn.confState()
	if err != nil {
		t.Fatal(err)
	}
	return nodeView{b.Term, b.Vote, b.Commit, b.Applied, b.RaftState, first, last, cs}
}

func checkUnmoved(t *testing.T, n *testNode, want nodeView) {
	t.Helper()
	if got := viewOf(t, n); !reflect.DeepEqual(got, want) {
		t.Fatalf("the node moved: %+v, want %+v", got, want)
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}

// checkStillWorks proposes data and checks the Ready loop commits and
// applies it, in the same term.
func checkStillWorks(t *testing.T, c *testCluster, id uint64, data string) {
	t.Helper()
	n := c.nodes[id]
	term := n.rn.BasicStatus().Term
	c.propose(id, "%s", data)
	if got := string(n.applied[len(n.applied)-1]); got != data {
		t.Fatalf("applied %q, want %q", got, data)
	}
	if b := n.rn.BasicStatus(); b.Term != term || b.RaftState != StateLeader || b.Applied != b.Commit {
		t.Fatalf("status %+v", b)
	}
}

// Readies persisted or advanced out of order, advanced before they are
// persisted, twice, or on another node: each refused with its error, and
// nothing moved.
func TestReadyMistakesGetErrors(t *testing.T) {
	c := newTestCluster(t, 1)
	c.elect(1)
	n := c.nodes[1]
	rn, s := n.rn, n.storage

	if err := rn.Propose([]byte("a")); err != nil {
		t.Fatal(err)
	}
	rd1 := rn.Ready()
	if err := rn.Propose([]byte("b")); err != nil {
		t.Fatal(err)
	}
	rd2 := rn.Ready()
	if len(rd1.Entries) != 1 || len(rd2.Entries) != 1 || len(rd1.CommittedEntries)+len(rd2.CommittedEntries) != 0 {
		t.Fatalf("readies %+v %+v", rd1, rd2)
	}
	v0 := viewOf(t, n)

	// Ready 2 first: a gap in the log.
	wantErr(t, s.AppendReady(rd2), ErrUnavailable)
	// Advancing what is not persisted.
	wantErr(t, rn.TryAdvance(rd2), ErrReadyNotPersisted)
	wantErr(t, rn.TryAdvance(rd1), ErrReadyNotPersisted)
	rn.Advance(rd2) // ignored
	checkUnmoved(t, n, v0)

	if err := s.AppendReady(rd1); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendReady(rd2); err != nil {
		t.Fatal(err)
	}
	v1 := viewOf(t, n)
	if v1.last != v0.last+2 {
		t.Fatalf("last index %d, want %d", v1.last, v0.last+2)
	}
	// Ready 1 again would replace ready 2's entry; ready 2 again too.
	wantErr(t, s.AppendReady(rd1), ErrReadyStale)
	wantErr(t, s.AppendReady(rd2), ErrReadyStale)
	checkUnmoved(t, n, v1)

	// Advance 2, then 1: ready 1 is covered (and released).
	if err := rn.TryAdvance(rd2); err != nil {
		t.Fatal(err)
	}
	v2 := viewOf(t, n)
	if v2.commit != v1.last {
		t.Fatalf("commit %d, want %d", v2.commit, v1.last)
	}
	wantErr(t, rn.TryAdvance(rd1), ErrReadyStale)
	wantErr(t, rn.TryAdvance(rd2), ErrReadyStale)
	// A released or advanced Ready is not persisted again: its copy of
	// the entries would truncate the newer ones.
	wantErr(t, s.AppendReady(rd1), ErrReadyStale)
	wantErr(t, s.AppendReady(rd2), ErrReadyStale)
	rn.Advance(rd1) // ignored
	checkUnmoved(t, n, v2)
	_, err := rd2.EncodedMessages()
	wantErr(t, err, ErrReadyStale)
	c.settle()
	if got := len(n.applied); got != 2 {
		t.Fatalf("applied %d entries, want 2", got)
	}

	// An advanced Ready persisted again after later entries committed.
	c.propose(1, "c")
	rdOld := rd2
	last, _ := s.LastIndex()
	wantErr(t, s.AppendReady(rdOld), ErrReadyStale)
	if l, _ := s.LastIndex(); l != last {
		t.Fatalf("last index %d after a stale AppendReady, want %d", l, last)
	}

	// Readies that are not this node's.
	c2 := newTestCluster(t, 1)
	c2.nodes[1].rn.Campaign()
	other := c2.nodes[1].rn.Ready()
	v3 := viewOf(t, n)
	wantErr(t, rn.TryAdvance(other), ErrReadyForeign)
	wantErr(t, rn.TryAdvance(Ready{}), ErrReadyForeign)
	rn.Advance(other) // ignored
	checkUnmoved(t, n, v3)
	if other.h.p == nil {
		t.Fatal("another node's ready was released")
	}
	if err := c2.nodes[1].storage.AppendReady(other); err != nil {
		t.Fatal(err)
	}
	if err := c2.nodes[1].rn.TryAdvance(other); err != nil {
		t.Fatal(err)
	}
	c2.settle()

	checkStillWorks(t, c, 1, "after")
}

// A Ready of a node that was closed cannot be persisted, and its node
// refuses every call; a new node over the same storage goes on.
func TestReadyOfAClosedNode(t *testing.T) {
	c := newTestCluster(t, 1)
	c.elect(1)
	n := c.nodes[1]
	if err := n.rn.Propose([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	rd := n.rn.Ready()
	last, _ := n.storage.LastIndex()
	n.rn.Close()
	wantErr(t, n.storage.AppendReady(rd), ErrReadyStale)
	wantErr(t, n.rn.TryAdvance(rd), ErrClosed)
	if l, _ := n.storage.LastIndex(); l != last {
		t.Fatalf("last index %d, want %d", l, last)
	}
	rn, err := NewRawNode(testConfig(1, n.storage))
	if err != nil {
		t.Fatal(err)
	}
	n.rn = rn
	c.elect(1)
	checkStillWorks(t, c, 1, "restarted")
}
