package raftlet

import (
	"errors"
	"math"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// maxBound is the largest term or index raftlet accepts (2^63 - 1).
const maxBound = uint64(math.MaxInt64)

// reservedIDs cannot name a member: etcd's "no node" and the ids of its
// storage threads.
var reservedIDs = []uint64{0, math.MaxUint64, math.MaxUint64 - 1}

// refused checks that call fails with want and moves nothing: term, vote,
// commit, applied, role, log bounds, configuration and the Ready queue.
func refused(t *testing.T, n *testNode, what string, want error, call func() error) {
	t.Helper()
	before := viewOf(t, n)
	had := n.rn.HasReady()
	if err := call(); !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
	if got := viewOf(t, n); !viewsEqual(got, before) {
		t.Fatalf("%s: the node moved: %+v, want %+v", what, got, before)
	}
	if n.rn.HasReady() != had {
		t.Fatalf("%s: the Ready queue changed", what)
	}
}

func viewsEqual(a, b nodeView) bool {
	return a.term == b.term && a.vote == b.vote && a.commit == b.commit && a.applied == b.applied &&
		a.role == b.role && a.first == b.first && a.last == b.last && a.cs.Equivalent(*b.cs) == nil
}

// Every hostile input that goes through the binding's own code (Step,
// ProposeConfChange, Bootstrap, SetConfState) gets its sentinel error and
// moves nothing; the node works afterwards.
func TestHostileInputIsRefused(t *testing.T) {
	c := newTestCluster(t, 1)
	c.elect(1)
	c.propose(1, "x")
	leader := c.nodes[1]
	// A follower of {1, 2, 3} that knows no leader, driven by hand.
	fc := &testCluster{t: t, nodes: map[uint64]*testNode{}, down: map[uint64]bool{}}
	follower := fc.add(2, &raftpb.ConfState{Voters: []uint64{1, 2, 3}})
	t.Cleanup(fc.close)

	step := func(n *testNode, m raftpb.Message) func() error { return func() error { return n.rn.Step(m) } }
	peerTypes := []raftpb.MessageType{
		raftpb.MsgApp, raftpb.MsgAppResp, raftpb.MsgVote, raftpb.MsgVoteResp, raftpb.MsgSnap,
		raftpb.MsgHeartbeat, raftpb.MsgHeartbeatResp, raftpb.MsgTimeoutNow, raftpb.MsgReadIndexResp,
		raftpb.MsgPreVote, raftpb.MsgPreVoteResp,
	}
	for _, typ := range peerTypes {
		for _, term := range []uint64{math.MaxUint64, maxBound + 1} {
			refused(t, leader, typ.String()+" term to the leader", ErrInvalidMessage,
				step(leader, raftpb.Message{Type: typ, From: 2, To: 1, Term: term}))
			refused(t, follower, typ.String()+" term to the follower", ErrInvalidMessage,
				step(follower, raftpb.Message{Type: typ, From: 3, To: 2, Term: term}))
		}
	}
	huge := []struct {
		name string
		m    raftpb.Message
	}{
		{"MsgApp index", raftpb.Message{Type: raftpb.MsgApp, From: 3, To: 2, Term: 1, Index: math.MaxUint64}},
		{"MsgApp log term", raftpb.Message{Type: raftpb.MsgApp, From: 3, To: 2, Term: 1, LogTerm: math.MaxUint64}},
		{"MsgApp commit", raftpb.Message{Type: raftpb.MsgApp, From: 3, To: 2, Term: 1, Commit: maxBound + 1}},
		{"MsgApp entry index", raftpb.Message{Type: raftpb.MsgApp, From: 3, To: 2, Term: 1,
			Entries: []raftpb.Entry{{Term: 1, Index: math.MaxUint64, Data: []byte("far")}}}},
		{"MsgApp entry term", raftpb.Message{Type: raftpb.MsgApp, From: 3, To: 2, Term: 1,
			Entries: []raftpb.Entry{{Term: math.MaxUint64, Index: 1}}}},
		{"MsgHeartbeat commit", raftpb.Message{Type: raftpb.MsgHeartbeat, From: 3, To: 2, Term: 1, Commit: math.MaxUint64}},
		{"MsgSnap index", raftpb.Message{Type: raftpb.MsgSnap, From: 3, To: 2, Term: 1, Snapshot: &raftpb.Snapshot{
			Metadata: raftpb.SnapshotMetadata{Index: math.MaxUint64, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}}},
		{"MsgSnap member 0", raftpb.Message{Type: raftpb.MsgSnap, From: 3, To: 2, Term: 1, Snapshot: &raftpb.Snapshot{
			Metadata: raftpb.SnapshotMetadata{Index: 10, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1, 0}}}}}},
		{"unknown type", raftpb.Message{Type: raftpb.MessageType(99), From: 3, To: 2, Term: 1}},
		{"negative type", raftpb.Message{Type: raftpb.MessageType(-1), From: 3, To: 2, Term: 1}},
	}
	for _, h := range huge {
		refused(t, follower, h.name, ErrInvalidMessage, step(follower, h.m))
	}
	for _, field := range []string{"index", "reject hint", "commit"} {
		m := raftpb.Message{Type: raftpb.MsgAppResp, From: 2, To: 1, Term: 1}
		switch field {
		case "index":
			m.Index = math.MaxUint64
		case "reject hint":
			m.Reject, m.RejectHint = true, math.MaxUint64
		case "commit":
			m.Commit = maxBound + 1
		}
		refused(t, leader, "MsgAppResp "+field, ErrInvalidMessage, step(leader, m))
	}
	for _, id := range reservedIDs {
		refused(t, follower, "MsgVote from a reserved id", ErrInvalidMessage,
			step(follower, raftpb.Message{Type: raftpb.MsgVote, From: id, To: 2, Term: 1}))
		refused(t, leader, "MsgHeartbeatResp from a reserved id", ErrInvalidMessage,
			step(leader, raftpb.Message{Type: raftpb.MsgHeartbeatResp, From: id, To: 1, Term: 1}))
	}
	// The bound itself is accepted.
	if err := follower.rn.Step(raftpb.Message{Type: raftpb.MsgHeartbeat, From: 3, To: 2, Term: maxBound}); err != nil {
		t.Fatal(err)
	}
	if b := follower.rn.BasicStatus(); b.Term != maxBound || b.Lead != 3 {
		t.Fatalf("follower %+v", b)
	}
	for follower.rn.HasReady() {
		rd := follower.rn.Ready()
		if err := follower.storage.AppendReady(rd); err != nil {
			t.Fatal(err)
		}
		follower.rn.Advance(rd)
	}

	// Conf changes no node can apply.
	propose := func(n *testNode, cc raftpb.ConfChangeI) func() error {
		return func() error { return n.rn.ProposeConfChange(cc) }
	}
	refused(t, leader, "unknown conf change type", ErrConfChangeRefused,
		propose(leader, raftpb.ConfChange{Type: raftpb.ConfChangeType(7), NodeID: 2}))
	refused(t, leader, "unknown transition", ErrConfChangeRefused,
		propose(leader, raftpb.ConfChangeV2{Transition: raftpb.ConfChangeTransition(3),
			Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddNode, NodeID: 2}}}))
	refused(t, leader, "unknown V2 change type", ErrConfChangeRefused,
		propose(leader, raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeType(9), NodeID: 2}}}))
	for _, id := range reservedIDs {
		refused(t, leader, "AddNode of a reserved id", ErrConfChangeRefused,
			propose(leader, raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: id}))
		refused(t, leader, "AddLearnerNode of a reserved id", ErrConfChangeRefused,
			propose(leader, raftpb.ConfChange{Type: raftpb.ConfChangeAddLearnerNode, NodeID: id}))
		refused(t, leader, "V2 AddNode of a reserved id", ErrConfChangeRefused,
			propose(leader, raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddNode, NodeID: id}}}))
		refused(t, follower, "a follower's AddNode of a reserved id", ErrConfChangeRefused,
			propose(follower, raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: id}))
	}

	// Configurations no node can start from: the storage keeps its own.
	if err := leader.storage.SetConfState(raftpb.ConfState{Voters: []uint64{1}}); err != nil {
		t.Fatal(err)
	}
	snapBefore, err := leader.storage.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	setCS := func(cs raftpb.ConfState) func() error {
		return func() error { return leader.storage.SetConfState(cs) }
	}
	for _, cs := range []raftpb.ConfState{
		{Voters: []uint64{1, 0}},
		{Voters: []uint64{1, math.MaxUint64}},
		{Voters: []uint64{1, math.MaxUint64 - 1}},
		{Voters: []uint64{1, 1}},
		{Voters: []uint64{1}, Learners: []uint64{1}},
		{Voters: []uint64{1}, Learners: []uint64{0}},
	} {
		refused(t, leader, "SetConfState "+cs.String(), ErrConfChangeRefused, setCS(cs))
	}
	snapAfter, err := leader.storage.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if snapAfter.Metadata.ConfState.Equivalent(snapBefore.Metadata.ConfState) != nil ||
		snapAfter.Metadata.Index != snapBefore.Metadata.Index || len(snapAfter.Metadata.ConfState.Voters) != 1 {
		t.Fatalf("the storage's configuration moved: %v, want %v", snapAfter.Metadata, snapBefore.Metadata)
	}

	// Bootstrap memberships that cannot be: refused, no trace left.
	s := NewMemoryStorage()
	defer s.Close()
	bn, err := NewRawNode(testConfig(1, s))
	if err != nil {
		t.Fatal(err)
	}
	defer bn.Close()
	b := &testNode{id: 1, rn: bn, storage: s}
	for _, peers := range [][]Peer{
		{{ID: 1}, {ID: 0}}, {{ID: 0}, {ID: 1}}, {{ID: 1}, {ID: math.MaxUint64}},
		{{ID: 1}, {ID: math.MaxUint64 - 1}}, {{ID: 1}, {ID: 1}},
	} {
		refused(t, b, "Bootstrap", ErrConfChangeRefused, func() error { return bn.Bootstrap(peers) })
	}
	for _, learners := range [][]uint64{{1}, {0}, {math.MaxUint64}} {
		refused(t, b, "BootstrapWithLearners", ErrConfChangeRefused,
			func() error { return bn.BootstrapWithLearners([]uint64{1}, learners) })
	}
	if bn.HasReady() {
		t.Fatal("a refused bootstrap left a Ready")
	}
	if err := bn.Bootstrap([]Peer{{ID: 1}}); err != nil {
		t.Fatalf("a correct bootstrap after the refusals: %v", err)
	}
	if !bn.HasReady() {
		t.Fatal("no Ready after bootstrap")
	}

	checkStillWorks(t, c, 1, "after-hostile")
}
