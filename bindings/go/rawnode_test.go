package raftlet

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func TestVersionAndCodes(t *testing.T) {
	if v := Version(); !strings.HasPrefix(v, "0.") {
		t.Fatalf("Version() = %q, want 0.x.y", v)
	}
	if got := CodeProposalDropped.String(); got != "RAFTLET_ERR_PROPOSAL_DROPPED" {
		t.Fatalf("Code.String() = %q", got)
	}
	if got := Code(999).String(); got != "RAFTLET_UNKNOWN" {
		t.Fatalf("unknown code name %q", got)
	}
	if s := StateLeader.String(); s != "StateLeader" {
		t.Fatal(s)
	}
	if s := StateType(9).String(); s != "StateType(9)" {
		t.Fatal(s)
	}
	if s := StateReplicate.String(); s != "StateReplicate" {
		t.Fatal(s)
	}
	if s := ProgressStateType(7).String(); s != "ProgressStateType(7)" {
		t.Fatal(s)
	}
}

func TestErrorMatchesItsSentinelOnly(t *testing.T) {
	sentinels := []*Error{
		ErrProposalDropped, ErrStepLocalMsg, ErrStepPeerNotFound, ErrCompacted,
		ErrUnavailable, ErrSnapOutOfDate, ErrSnapshotTemporarilyUnavailable, ErrStorage,
		ErrConfigInvalid, ErrDecode, ErrConfChangeRefused, ErrPromotionNotReady,
		ErrTooManyLearners, ErrTransferRefused, ErrNoLeader, ErrInvalidState,
		ErrInvalidMessage, ErrNullArg, ErrInvalidArg, ErrReadyStale, ErrReadyForeign, ErrReadyNotPersisted,
		ErrPanic,
	}
	for _, s := range sentinels {
		if !strings.HasPrefix(s.Code.String(), "RAFTLET_") || s.Code.String() == "RAFTLET_UNKNOWN" {
			t.Fatalf("sentinel %v has no C name", s)
		}
		e := fmt.Errorf("wrapped: %w", &Error{Code: s.Code, Msg: "detail"})
		for _, o := range sentinels {
			if got := errors.Is(e, o); got != (o == s) {
				t.Fatalf("errors.Is(%v, %v) = %v", e, o, got)
			}
		}
		if errors.Is(e, ErrClosed) {
			t.Fatal("matches ErrClosed")
		}
	}
	e := &Error{Code: CodeNoLeader, Msg: "no leader known"}
	if got := e.Error(); got != "raftlet: no leader known (RAFTLET_ERR_NO_LEADER)" {
		t.Fatalf("Error() = %q", got)
	}
	if got := (&Error{Code: CodeDecode}).Error(); got != "raftlet: RAFTLET_ERR_DECODE" {
		t.Fatalf("Error() = %q", got)
	}
}

func TestNewRawNodeRejectsInvalidConfigs(t *testing.T) {
	s := NewMemoryStorage()
	defer s.Close()
	cases := []struct {
		name   string
		mutate func(c *Config)
		want   string
	}{
		{"nil storage", func(c *Config) { c.Storage = nil }, "Storage"},
		{"zero id", func(c *Config) { c.ID = 0 }, "id"},
		{"election tick", func(c *Config) { c.ElectionTick = 1 }, "election_tick"},
		{"heartbeat tick", func(c *Config) { c.HeartbeatTick = 0 }, "heartbeat_tick"},
		{"inflight", func(c *Config) { c.MaxInflightMsgs = 0 }, "max_inflight_msgs"},
		{"negative", func(c *Config) { c.ElectionTick = -1 }, "negative"},
		{"read only option", func(c *Config) { c.ReadOnlyOption = 7 }, "ReadOnlyOption"},
		{"lease without check quorum", func(c *Config) {
			c.ReadOnlyOption = ReadOnlyLeaseBased
			c.CheckQuorum = false
		}, "check_quorum"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig(1, s)
			tc.mutate(c)
			rn, err := NewRawNode(c)
			if !errors.Is(err, ErrConfigInvalid) || rn != nil {
				t.Fatalf("got %v, %v; want ErrConfigInvalid", rn, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%q does not name %q", err, tc.want)
			}
		})
	}
	if _, err := NewRawNode(nil); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("nil config: %v", err)
	}
	closed := NewMemoryStorage()
	closed.Close()
	if _, err := NewRawNode(testConfig(1, closed)); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed storage: %v", err)
	}
	// A literal with etcd's zero values (no pre-vote, no check-quorum) is valid.
	rn, err := NewRawNode(&Config{ID: 1, ElectionTick: 10, HeartbeatTick: 1, Storage: s, MaxInflightMsgs: 256,
		ReadOnlyOption: ReadOnlySafe, Applied: 0, MaxSizePerMsg: 0, MaxCommittedSizePerReady: 0,
		MaxUncommittedEntriesSize: 1 << 20, MaxInflightBytes: 1 << 20, DisableProposalForwarding: true,
		DisableConfChangeValidation: true, StepDownOnRemoval: false})
	if err != nil {
		t.Fatal(err)
	}
	rn.Close()
}

func TestSingleNodeReadyLoop(t *testing.T) {
	s := NewMemoryStorage()
	defer s.Close()
	rn, err := NewRawNode(testConfig(1, s))
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	if err := rn.Bootstrap([]Peer{{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	if !rn.HasReady() {
		t.Fatal("no ready after bootstrap")
	}
	rd := rn.Ready()
	if len(rd.Entries) != 1 || len(rd.CommittedEntries) != 1 || rd.Entries[0].Type != raftpb.EntryConfChange {
		t.Fatalf("bootstrap ready: %+v", rd)
	}
	if rd.HardState != (raftpb.HardState{Term: 1, Commit: 1}) || !rd.MustSync {
		t.Fatalf("hard state %+v must sync %v", rd.HardState, rd.MustSync)
	}
	// The bootstrap entry is what etcd writes.
	want, _ := (&raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: 1}).Marshal()
	if !bytes.Equal(rd.Entries[0].Data, want) {
		t.Fatalf("bootstrap entry data %x, want %x", rd.Entries[0].Data, want)
	}
	if err := s.AppendReady(rd); err != nil {
		t.Fatal(err)
	}
	var cc raftpb.ConfChange
	if err := cc.Unmarshal(rd.CommittedEntries[0].Data); err != nil {
		t.Fatal(err)
	}
	cs := rn.ApplyConfChange(cc)
	if len(cs.Voters) != 1 || cs.Voters[0] != 1 {
		t.Fatalf("conf state %+v", cs)
	}
	rn.Advance(rd)
	rn.Advance(rd) // a second Advance of the same Ready is ignored

	if err := rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	var states []StateType
	for rn.HasReady() {
		rd := rn.Ready()
		if rd.SoftState != nil {
			states = append(states, rd.RaftState)
		}
		if err := s.AppendReady(rd); err != nil {
			t.Fatal(err)
		}
		rn.Advance(rd)
	}
	if len(states) < 2 || states[0] != StatePreCandidate || states[len(states)-1] != StateLeader {
		t.Fatalf("roles %v", states)
	}
	if err := rn.Propose([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	rd = rn.Ready()
	var got []string
	for _, e := range rd.CommittedEntries {
		got = append(got, string(e.Data))
	}
	if len(rd.Entries) != 1 || string(rd.Entries[0].Data) != "hello" {
		t.Fatalf("entries %+v", rd.Entries)
	}
	if err := s.AppendReady(rd); err != nil {
		t.Fatal(err)
	}
	rn.Advance(rd)
	for rn.HasReady() {
		rd := rn.Ready()
		for _, e := range rd.CommittedEntries {
			got = append(got, string(e.Data))
		}
		s.AppendReady(rd)
		rn.Advance(rd)
	}
	if got[len(got)-1] != "hello" {
		t.Fatalf("committed %q", got)
	}
	st := rn.Status()
	if st.ID != 1 || st.Lead != 1 || st.RaftState != StateLeader || st.Applied != st.Commit || st.Term != 2 {
		t.Fatalf("status %+v", st)
	}
	if pr := st.Progress[1]; pr.Match != st.Commit || pr.IsLearner {
		t.Fatalf("progress %+v", st.Progress)
	}
	if last, _ := s.LastIndex(); last != st.Commit {
		t.Fatalf("storage last index %d, commit %d", last, st.Commit)
	}
}

func TestBootstrapErrors(t *testing.T) {
	s := NewMemoryStorage()
	defer s.Close()
	rn, err := NewRawNode(testConfig(1, s))
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	if err := rn.Bootstrap(nil); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("no peers: %v", err)
	}
	if err := rn.Bootstrap([]Peer{{ID: 1, Context: []byte("x")}}); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("context: %v", err)
	}
	if err := rn.BootstrapWithLearners([]uint64{1, 2}, []uint64{3}); err != nil {
		t.Fatal(err)
	}
	rd := rn.Ready()
	if len(rd.Entries) != 3 {
		t.Fatalf("entries %d", len(rd.Entries))
	}
	s.AppendReady(rd)
	rn.Advance(rd)
	if err := rn.Bootstrap([]Peer{{ID: 1}}); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("second bootstrap: %v", err)
	}
}

func TestClusterElectsReplicatesAndReports(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	for i := 0; i < 10; i++ {
		c.propose(1, "e%d", i)
	}
	// A follower forwards proposals to the leader.
	c.propose(2, "from-follower")
	for _, id := range c.ids() {
		n := c.nodes[id]
		if len(n.applied) != 11 || string(n.applied[10]) != "from-follower" {
			t.Fatalf("node %d applied %q", id, n.applied)
		}
	}
	st := c.nodes[1].rn.Status()
	if len(st.Progress) != 3 || st.Progress[2].State != StateReplicate || !st.Progress[3].RecentActive {
		t.Fatalf("leader progress %+v", st.Progress)
	}
	if fs := c.nodes[2].rn.Status(); fs.Progress != nil || fs.Lead != 1 || fs.RaftState != StateFollower {
		t.Fatalf("follower status %+v", fs)
	}
	if len(st.Config.Voters) != 3 {
		t.Fatalf("config %+v", st.Config)
	}
	// BasicStatus (one cheap call) is the scalar part of Status.
	for _, id := range c.ids() {
		rn := c.nodes[id].rn
		if b, full := rn.BasicStatus(), rn.Status().BasicStatus; b != full || b.ID != id || b.Lead != 1 {
			t.Fatalf("node %d: BasicStatus %+v, Status %+v", id, b, full)
		}
	}
	// ReportUnreachable sends a replicating follower back to probing.
	c.nodes[1].rn.ReportUnreachable(2)
	if s := c.nodes[1].rn.Status().Progress[2].State; s != StateProbe {
		t.Fatalf("after ReportUnreachable: %v", s)
	}
	c.tick(2)
	if s := c.nodes[1].rn.Status().Progress[2].State; s != StateReplicate {
		t.Fatalf("after heartbeats: %v", s)
	}
}

func TestStepErrors(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	rn := c.nodes[1].rn
	if err := rn.Step(raftpb.Message{Type: raftpb.MsgHup, From: 2, To: 1}); !errors.Is(err, ErrStepLocalMsg) {
		t.Fatalf("local message: %v", err)
	}
	if err := rn.Step(raftpb.Message{Type: raftpb.MsgAppResp, From: 9, To: 1, Term: 2}); !errors.Is(err, ErrStepPeerNotFound) {
		t.Fatalf("unknown peer: %v", err)
	}
	if err := rn.Step(raftpb.Message{Type: raftpb.MsgHeartbeat, From: 2, To: 1, Term: math.MaxUint64}); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("term MaxUint64: %v", err)
	}
	if err := rn.Step(raftpb.Message{Type: raftpb.MessageType(99), From: 2, To: 1, Term: 2}); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("unknown type: %v", err)
	}
	if err := rn.ProposeConfChange(raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: math.MaxUint64}); !errors.Is(err, ErrConfChangeRefused) {
		t.Fatalf("reserved node id: %v", err)
	}
	if err := rn.StepBytes([]byte{0x08, 0xff}); !errors.Is(err, ErrDecode) {
		t.Fatalf("garbage: %v", err)
	}
	// A big message reuses, then drops, the step buffer.
	big := raftpb.Message{Type: raftpb.MsgHeartbeatResp, From: 2, To: 1, Term: 2, Context: make([]byte, 2<<20)}
	if err := rn.Step(big); err != nil {
		t.Fatal(err)
	}
	if rn.x.stepBuf != nil {
		t.Fatal("large step buffer kept")
	}
	// Without a leader a proposal is dropped.
	s := NewMemoryStorage()
	defer s.Close()
	lone, err := NewRawNode(testConfig(5, s))
	if err != nil {
		t.Fatal(err)
	}
	defer lone.Close()
	if err := lone.BootstrapWithLearners([]uint64{4, 5}, nil); err != nil {
		t.Fatal(err)
	}
	if err := lone.Propose([]byte("x")); !errors.Is(err, ErrProposalDropped) {
		t.Fatalf("propose without leader: %v", err)
	}
	if err := lone.ReadIndex([]byte("r")); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("read without leader: %v", err)
	}
	if err := lone.TransferLeader(4); !errors.Is(err, ErrTransferRefused) {
		t.Fatalf("transfer without leader: %v", err)
	}
}

func TestReadIndexTransferAndForgetLeader(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	c.propose(1, "x")
	if err := c.nodes[1].rn.ReadIndex([]byte("on-leader")); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[3].rn.ReadIndex([]byte("on-follower")); err != nil {
		t.Fatal(err)
	}
	c.settle()
	commit := c.nodes[1].rn.BasicStatus().Commit
	for _, id := range []uint64{1, 3} {
		r := c.nodes[id].reads
		if len(r) != 1 || r[0].Index != commit || !strings.HasPrefix(string(r[0].RequestCtx), "on-") {
			t.Fatalf("node %d read states %+v (commit %d)", id, r, commit)
		}
	}
	if err := c.nodes[1].rn.TransferLeader(9); !errors.Is(err, ErrTransferRefused) {
		t.Fatalf("transfer to a stranger: %v", err)
	}
	if err := c.nodes[1].rn.TransferLeader(2); err != nil {
		t.Fatal(err)
	}
	if lt := c.nodes[1].rn.BasicStatus().LeadTransferee; lt != 2 {
		t.Fatalf("LeadTransferee %d", lt)
	}
	c.settle()
	if l := c.leader(); l != 2 {
		t.Fatalf("leader after transfer: %d", l)
	}
	if err := c.nodes[3].rn.ForgetLeader(); err != nil {
		t.Fatal(err)
	}
	if l := c.nodes[3].rn.BasicStatus().Lead; l != 0 {
		t.Fatalf("lead after ForgetLeader: %d", l)
	}
}

func TestConfChangesLearnersAndRefusals(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	c.propose(1, "x")
	leader := c.nodes[1].rn
	// An empty V2 change outside a joint configuration is refused at once.
	if err := leader.ProposeConfChange(raftpb.ConfChangeV2{}); !errors.Is(err, ErrConfChangeRefused) {
		t.Fatalf("leave joint when not joint: %v", err)
	}
	// ... and, applied anyway, leaves the configuration unchanged.
	if _, err := leader.TryApplyConfChange(raftpb.ConfChangeV2{}); !errors.Is(err, ErrConfChangeRefused) {
		t.Fatalf("TryApplyConfChange: %v", err)
	}
	if cs := leader.ApplyConfChange(raftpb.ConfChangeV2{}); len(cs.Voters) != 3 {
		t.Fatalf("unchanged conf state %+v", cs)
	}
	if err := leader.ProposeConfChange(raftpb.ConfChange{Type: raftpb.ConfChangeAddLearnerNode, NodeID: 4}); err != nil {
		t.Fatal(err)
	}
	c.settle()
	// A second learner is one too many (MaxLearners 1).
	if err := leader.ProposeConfChange(raftpb.ConfChange{Type: raftpb.ConfChangeAddLearnerNode, NodeID: 5}); !errors.Is(err, ErrTooManyLearners) {
		t.Fatalf("second learner: %v", err)
	}
	// Node 4 is not running: once a check-quorum round found it inactive,
	// promoting it is refused.
	c.tick(25)
	promote := raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddNode, NodeID: 4}}}
	if err := leader.ProposeConfChange(promote); !errors.Is(err, ErrPromotionNotReady) {
		t.Fatalf("promotion of an absent learner: %v", err)
	}
	// Start it with the configuration it joins; it catches up.
	n4 := c.add(4, &raftpb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}})
	c.tick(3)
	if len(n4.applied) != 1 {
		t.Fatalf("learner applied %q", n4.applied)
	}
	if st := leader.Status(); !st.Progress[4].IsLearner || len(st.Config.Learners) != 1 {
		t.Fatalf("status %+v", st)
	}
	if err := leader.ProposeConfChange(promote); err != nil {
		t.Fatalf("promotion of a caught-up learner: %v", err)
	}
	c.settle()
	for _, id := range c.ids() {
		cs := c.nodes[id].cs
		if len(cs.Voters) != 4 || len(cs.Learners) != 0 {
			t.Fatalf("node %d conf state %+v", id, cs)
		}
	}
	// A joint change: replace 4 by nothing, explicitly, then leave.
	joint := raftpb.ConfChangeV2{
		Transition: raftpb.ConfChangeTransitionJointExplicit,
		Changes:    []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeRemoveNode, NodeID: 4}},
	}
	if err := leader.ProposeConfChange(joint); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if cs := leader.Status().Config; len(cs.VotersOutgoing) != 4 || len(cs.Voters) != 3 {
		t.Fatalf("joint config %+v", cs)
	}
	if err := leader.ProposeConfChange(raftpb.ConfChangeV2{}); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if cs := leader.Status().Config; len(cs.VotersOutgoing) != 0 || len(cs.Voters) != 3 {
		t.Fatalf("after leaving joint: %+v", cs)
	}
}

func TestSnapshotCatchUpAndReportSnapshot(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	c.down[3] = true
	for i := 0; i < 20; i++ {
		c.propose(1, "e%d", i)
	}
	leader := c.nodes[1]
	applied := leader.rn.BasicStatus().Applied
	snap, err := leader.storage.CreateSnapshot(applied, &leader.cs, []byte("state-at-20"))
	if err != nil {
		t.Fatal(err)
	}
	if snap.Metadata.Index != applied || string(snap.Data) != "state-at-20" || len(snap.Metadata.ConfState.Voters) != 3 {
		t.Fatalf("snapshot %+v", snap.Metadata)
	}
	if err := leader.storage.Compact(applied); err != nil {
		t.Fatal(err)
	}
	if first, _ := leader.storage.FirstIndex(); first != applied+1 {
		t.Fatalf("first index %d", first)
	}
	// Node 3 comes back: the leader must send the snapshot (the harness
	// reports it delivered with ReportSnapshot).
	leader.rn.ReportUnreachable(3)
	delete(c.down, 3)
	c.tick(2)
	n3 := c.nodes[3]
	if n3.snaps != 1 || string(n3.snapshotData()) != "state-at-20" {
		t.Fatalf("node 3 got %d snapshots", n3.snaps)
	}
	if first, _ := n3.storage.FirstIndex(); first != applied+1 {
		t.Fatalf("node 3 first index %d", first)
	}
	c.propose(1, "after")
	if got := n3.applied; len(got) != 1 || string(got[0]) != "after" {
		t.Fatalf("node 3 applied %q", got)
	}
	if pr := leader.rn.Status().Progress[3]; pr.State != StateReplicate || pr.Match != leader.rn.BasicStatus().Commit {
		t.Fatalf("progress of 3: %+v", pr)
	}
	// ReportSnapshot(failure) on a peer in snapshot state returns it to probing.
	leader.rn.ReportSnapshot(2, SnapshotFailure)
}

func (n *testNode) snapshotData() []byte {
	s, err := n.storage.Snapshot()
	if err != nil {
		panic(err)
	}
	return s.Data
}

func TestRestartFromStorage(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	c.propose(1, "x")
	n := c.nodes[2]
	st := n.rn.BasicStatus()
	n.rn.Close()
	rn, err := NewRawNode(func() *Config { cfg := testConfig(2, n.storage); cfg.Applied = st.Applied; return cfg }())
	if err != nil {
		t.Fatal(err)
	}
	n.rn = rn
	got := rn.BasicStatus()
	if got.Term != st.Term || got.Commit != st.Commit || got.Applied != st.Applied || got.Vote != st.Vote {
		t.Fatalf("restarted %+v, was %+v", got, st)
	}
	c.propose(1, "y")
	if a := n.applied; string(a[len(a)-1]) != "y" {
		t.Fatalf("applied after restart %q", a)
	}
}

func TestMemoryStorage(t *testing.T) {
	s := NewMemoryStorage()
	defer s.Close()
	if f, _ := s.FirstIndex(); f != 1 {
		t.Fatalf("first %d", f)
	}
	if l, _ := s.LastIndex(); l != 0 {
		t.Fatalf("last %d", l)
	}
	if err := s.Append(nil); err != nil {
		t.Fatal(err)
	}
	ents := []raftpb.Entry{{Term: 1, Index: 1, Data: []byte("a")}, {Term: 1, Index: 2}, {Term: 2, Index: 3, Data: []byte("c")}}
	if err := s.Append(ents); err != nil {
		t.Fatal(err)
	}
	if err := s.Append([]raftpb.Entry{{Term: 2, Index: 5}}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("gap: %v", err)
	}
	if l, _ := s.LastIndex(); l != 3 {
		t.Fatalf("last %d after a refused append", l)
	}
	if err := s.SetHardState(raftpb.HardState{Term: 2, Vote: 1, Commit: 3}); err != nil {
		t.Fatal(err)
	}
	if snap, err := s.Snapshot(); err != nil || !IsEmptySnap(snap) {
		t.Fatalf("initial snapshot %+v %v", snap, err)
	}
	big := bytes.Repeat([]byte("z"), 4096)
	snap, err := s.CreateSnapshot(2, &raftpb.ConfState{Voters: []uint64{1, 2}}, big)
	if err != nil || snap.Metadata.Index != 2 || snap.Metadata.Term != 1 || !bytes.Equal(snap.Data, big) {
		t.Fatalf("CreateSnapshot %+v %v", snap.Metadata, err)
	}
	if got, _ := s.Snapshot(); got.Metadata.Index != 2 || len(got.Data) != 4096 {
		t.Fatalf("Snapshot %+v", got.Metadata)
	}
	// nil keeps the configuration.
	snap, err = s.CreateSnapshot(3, nil, nil)
	if err != nil || len(snap.Metadata.ConfState.Voters) != 2 || len(snap.Data) != 0 {
		t.Fatalf("CreateSnapshot(nil cs) %+v %v", snap, err)
	}
	if _, err := s.CreateSnapshot(3, nil, nil); !errors.Is(err, ErrSnapOutOfDate) {
		t.Fatalf("same index: %v", err)
	}
	if _, err := s.CreateSnapshot(9, nil, nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("past the end: %v", err)
	}
	if err := s.Compact(2); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(2); !errors.Is(err, ErrCompacted) {
		t.Fatalf("compact twice: %v", err)
	}
	if err := s.Compact(9); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("compact past the end: %v", err)
	}
	if f, _ := s.FirstIndex(); f != 3 {
		t.Fatalf("first after compact %d", f)
	}
	if err := s.ApplySnapshot(raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 1, Term: 1}}); !errors.Is(err, ErrSnapOutOfDate) {
		t.Fatalf("old snapshot: %v", err)
	}
	if err := s.ApplySnapshot(raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 10, Term: 3,
		ConfState: raftpb.ConfState{Voters: []uint64{1}}}, Data: []byte("d")}); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.FirstIndex(); f != 11 {
		t.Fatalf("first after ApplySnapshot %d", f)
	}
	if l, _ := s.LastIndex(); l != 10 {
		t.Fatalf("last after ApplySnapshot %d", l)
	}
	if err := s.SetConfState(raftpb.ConfState{Voters: []uint64{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Snapshot(); len(got.Metadata.ConfState.Voters) != 3 {
		t.Fatalf("SetConfState: %+v", got.Metadata.ConfState)
	}
	// A Ready built by hand is persisted field by field.
	rd := Ready{
		HardState: raftpb.HardState{Term: 4, Commit: 10},
		Entries:   []raftpb.Entry{{Term: 4, Index: 11}},
		Snapshot:  raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 10, Term: 3}},
	}
	if err := s.AppendReady(rd); !errors.Is(err, ErrSnapOutOfDate) {
		t.Fatalf("AppendReady with an old snapshot: %v", err)
	}
	rd.Snapshot = raftpb.Snapshot{}
	if err := s.AppendReady(rd); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.LastIndex(); l != 11 {
		t.Fatalf("last after AppendReady %d", l)
	}
}

func TestCloseIsIdempotentAndGuardsUse(t *testing.T) {
	s := NewMemoryStorage()
	rn, err := NewRawNode(testConfig(1, s))
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.Bootstrap([]Peer{{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	rd := rn.Ready() // not advanced: Close releases it
	// The node keeps its own reference to the storage.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if rn.BasicStatus().Commit != 1 {
		t.Fatal("node lost its storage")
	}
	if err := rn.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rn.Close(); err != nil {
		t.Fatal(err)
	}
	if rd.h.p != nil {
		t.Fatal("Close left a ready")
	}
	var nilNode *RawNode
	var nilStorage *MemoryStorage
	if nilNode.Close() != nil || nilStorage.Close() != nil {
		t.Fatal("Close of nil")
	}
	for name, err := range map[string]error{
		"Propose":           rn.Propose(nil),
		"Campaign":          rn.Campaign(),
		"Step":              rn.Step(raftpb.Message{}),
		"StepBytes":         rn.StepBytes(nil),
		"ReadIndex":         rn.ReadIndex(nil),
		"TransferLeader":    rn.TransferLeader(1),
		"ForgetLeader":      rn.ForgetLeader(),
		"Bootstrap":         rn.Bootstrap([]Peer{{ID: 1}}),
		"ProposeConfChange": rn.ProposeConfChange(raftpb.ConfChange{}),
		"Append":            s.Append([]raftpb.Entry{{Index: 1}}),
		"AppendReady":       s.AppendReady(rd),
		"SetHardState":      s.SetHardState(raftpb.HardState{}),
		"SetConfState":      s.SetConfState(raftpb.ConfState{}),
		"ApplySnapshot":     s.ApplySnapshot(raftpb.Snapshot{}),
		"Compact":           s.Compact(1),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if _, err := rn.TryApplyConfChange(raftpb.ConfChange{}); !errors.Is(err, ErrClosed) {
		t.Error(err)
	}
	if _, err := s.CreateSnapshot(1, nil, nil); !errors.Is(err, ErrClosed) {
		t.Error(err)
	}
	if _, err := s.Snapshot(); !errors.Is(err, ErrClosed) {
		t.Error(err)
	}
	if _, err := s.FirstIndex(); !errors.Is(err, ErrClosed) {
		t.Error(err)
	}
	if _, err := s.LastIndex(); !errors.Is(err, ErrClosed) {
		t.Error(err)
	}
	for name, f := range map[string]func(){
		"Tick":              rn.Tick,
		"HasReady":          func() { rn.HasReady() },
		"Ready":             func() { rn.Ready() },
		"Advance":           func() { rn.Advance(rd) },
		"Status":            func() { rn.Status() },
		"BasicStatus":       func() { rn.BasicStatus() },
		"ReportUnreachable": func() { rn.ReportUnreachable(2) },
		"ReportSnapshot":    func() { rn.ReportSnapshot(2, SnapshotFinish) },
		"ApplyConfChange":   func() { rn.ApplyConfChange(raftpb.ConfChange{}) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !errors.Is(r.(error), ErrClosed) {
					t.Errorf("%s after Close: recovered %v", name, r)
				}
			}()
			f()
		}()
	}
}

// TestCleanupsFreeForgottenHandles drops nodes, storages and readies
// without Close and lets the garbage collector free them (run under
// GOGC=1 too, see scripts/go-test.sh).
func TestCleanupsFreeForgottenHandles(t *testing.T) {
	for i := 0; i < 200; i++ {
		s := NewMemoryStorage()
		rn, err := NewRawNode(testConfig(1, s))
		if err != nil {
			t.Fatal(err)
		}
		if err := rn.Bootstrap([]Peer{{ID: 1}}); err != nil {
			t.Fatal(err)
		}
		rd := rn.Ready()
		if i%2 == 0 {
			s.AppendReady(rd)
			rn.Advance(rd)
			rn.Campaign()
			_ = rn.Ready()
		}
		if i%10 == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	runtime.GC()
}

// TestReadyAdvanceReleasesEarlierReadies takes two Readies, advances the
// second, and checks the first is released too.
func TestReadyAdvanceReleasesEarlierReadies(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	rn := c.nodes[1].rn
	rn.Propose([]byte("a"))
	rd1 := rn.Ready()
	rn.Propose([]byte("b"))
	rd2 := rn.Ready()
	if len(rn.h.pending) != 2 {
		t.Fatalf("pending %d", len(rn.h.pending))
	}
	c.nodes[1].storage.AppendReady(rd1)
	c.nodes[1].storage.AppendReady(rd2)
	rn.Advance(rd2)
	if len(rn.h.pending) != 0 || rd1.h.p != nil {
		t.Fatalf("pending %d after advancing the later ready", len(rn.h.pending))
	}
	rn.Advance(rd1) // released: ignored
	// A Ready of another node is ignored.
	other := c.nodes[2].rn.Ready()
	rn.Advance(other)
	if other.h.p == nil {
		t.Fatal("advanced another node's ready")
	}
	c.nodes[2].rn.Advance(other)
}

func TestEncodedMessagesAreEtcdBytes(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.settle()
	rn := c.nodes[1].rn
	if err := rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	rd := rn.Ready()
	enc, err := rd.EncodedMessages()
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) != 2 || len(rd.Messages) != 2 {
		t.Fatalf("%d encoded, %d messages", len(enc), len(rd.Messages))
	}
	for i, m := range rd.Messages {
		want, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc[i], want) {
			t.Fatalf("message %d: raftlet %x, raftpb %x", i, enc[i], want)
		}
		h, err := DecodeMessageHeader(enc[i])
		if err != nil || h != (MessageHeader{Type: raftpb.MsgPreVote, To: m.To, From: 1, Term: m.Term}) {
			t.Fatalf("header %+v %v", h, err)
		}
	}
	c.nodes[1].storage.AppendReady(rd)
	rn.Advance(rd)
	if _, err := rd.EncodedMessages(); !errors.Is(err, ErrReadyStale) {
		t.Fatalf("after Advance: %v", err)
	}
	if _, err := DecodeMessageHeader([]byte{0x08}); !errors.Is(err, ErrDecode) {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := (&Ready{}).EncodedMessages(); !errors.Is(err, ErrReadyStale) {
		t.Fatalf("hand-made Ready: %v", err)
	}
}

// TestMemoryStorageConcurrentUse reads a storage from several goroutines
// while a node appends to it (run under -race by make test-go).
func TestMemoryStorageConcurrentUse(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	s := c.nodes[1].storage
	done := make(chan struct{})
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				first, err := s.FirstIndex()
				if err != nil {
					errs <- err
					return
				}
				last, err := s.LastIndex()
				if err != nil {
					errs <- err
					return
				}
				if last+1 < first {
					errs <- fmt.Errorf("first %d, last %d", first, last)
					return
				}
				if _, err := s.Snapshot(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < 50; i++ {
		c.propose(1, "c%d", i)
	}
	close(done)
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
