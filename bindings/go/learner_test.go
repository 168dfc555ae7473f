package raftlet

import (
	"errors"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// newLifecycleCluster starts voters and learners from a shared initial
// configuration, each with DefaultConfig changed by mod.
func newLifecycleCluster(t *testing.T, voters, learners []uint64, mod func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, nodes: map[uint64]*testNode{}, down: map[uint64]bool{}}
	t.Cleanup(c.close)
	cs := raftpb.ConfState{Voters: voters, Learners: learners}
	for _, id := range append(append([]uint64{}, voters...), learners...) {
		c.addWith(id, &cs, mod)
	}
	return c
}

func (c *testCluster) addWith(id uint64, cs *raftpb.ConfState, mod func(*Config)) *testNode {
	c.t.Helper()
	s := NewMemoryStorage()
	if err := s.SetConfState(*cs); err != nil {
		c.t.Fatal(err)
	}
	cfg := testConfig(id, s)
	mod(cfg)
	rn, err := NewRawNode(cfg)
	if err != nil {
		c.t.Fatalf("NewRawNode(%d): %v", id, err)
	}
	n := &testNode{id: id, rn: rn, storage: s, cs: *cs}
	c.nodes[id] = n
	return n
}

func TestLearnerConfigDefaults(t *testing.T) {
	c := DefaultConfig(1)
	if !c.LearnerFirst || !c.LearnerForwardsProposals || c.AutoPromote || c.StandbyPromotion {
		t.Fatalf("defaults: %+v", c)
	}
	// Both promotions need check-quorum, at creation and at run time.
	for _, mod := range []func(*Config){
		func(c *Config) { c.AutoPromote = true },
		func(c *Config) { c.StandbyPromotion = true },
		func(c *Config) { c.StandbyDeadRounds = 1; c.CheckQuorum = true },
	} {
		cfg := DefaultConfig(1)
		cfg.CheckQuorum = false
		mod(&cfg)
		cfg.Storage = NewMemoryStorage()
		if _, err := NewRawNode(&cfg); !errors.Is(err, ErrConfigInvalid) {
			t.Fatalf("NewRawNode(%+v) = %v, want ErrConfigInvalid", cfg, err)
		}
		cfg.Storage.Close()
	}
	cfg := DefaultConfig(1)
	cfg.CheckQuorum = false
	cfg.Storage = NewMemoryStorage()
	defer cfg.Storage.Close()
	rn, err := NewRawNode(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	if err := rn.SetAutoPromote(true); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("SetAutoPromote = %v", err)
	}
	if err := rn.SetStandbyPromotion(true); !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("SetStandbyPromotion = %v", err)
	}
	if err := rn.SetAutoPromote(false); err != nil {
		t.Fatal(err)
	}
}

func TestAddMemberLearnerFirstAndAutoPromotion(t *testing.T) {
	c := newLifecycleCluster(t, []uint64{1}, nil, func(c *Config) {
		c.AutoPromote = true
		c.PromoteMinActiveRounds = 2
		c.LearnerForwardsProposals = false
	})
	c.elect(1)
	c.propose(1, "x=1")
	leader := c.nodes[1].rn
	if err := leader.AddMember(1, nil); !errors.Is(err, ErrConfChangeRefused) {
		t.Fatalf("AddMember(self) = %v", err)
	}
	if err := leader.SetAutoPromote(false); err != nil {
		t.Fatal(err)
	}
	if err := leader.AddMember(2, []byte("10.0.0.2:7000")); err != nil {
		t.Fatal(err)
	}
	c.settle()
	st := leader.Status()
	if len(st.Config.Voters) != 1 || len(st.Config.Learners) != 1 || st.Config.Learners[0] != 2 {
		t.Fatalf("config after AddMember: %+v", st.Config)
	}
	if len(st.Learners) != 1 || st.Learners[0].ID != 2 || st.Learners[0].NotPromotable == nil {
		t.Fatalf("learners: %+v", st.Learners)
	}
	if why := st.Learners[0].NotPromotable.String(); why == "" {
		t.Fatal("empty reason")
	}
	// The member joins; off, auto-promotion leaves it a learner.
	c.addWith(2, &raftpb.ConfState{Voters: []uint64{1}, Learners: []uint64{2}}, func(c *Config) {
		c.AutoPromote = true
		c.LearnerForwardsProposals = false
	})
	c.tick(60)
	st = leader.Status()
	if len(st.Learners) != 1 {
		t.Fatalf("learners: %+v", st.Learners)
	}
	ls := st.Learners[0]
	if ls.Lag != 0 || !ls.RecentActive || ls.ActiveRounds < 2 || ls.State != StateReplicate || ls.NotPromotable != nil {
		t.Fatalf("caught-up learner: %+v", ls)
	}
	if len(c.nodes[1].events) != 0 {
		t.Fatalf("events with auto-promotion off: %+v", c.nodes[1].events)
	}
	// A read-only learner: weak reads report the applied index; writes refused.
	lr := c.nodes[2].rn.ReadLocal()
	if lr.Applied == 0 || lr.Commit < lr.Applied || lr.Leader != 1 {
		t.Fatalf("ReadLocal on the learner: %+v", lr)
	}
	if err := c.nodes[2].rn.Propose([]byte("w")); !errors.Is(err, ErrProposalDropped) {
		t.Fatalf("Propose on a read-only learner = %v", err)
	}
	// On again: promoted exactly once, and the Ready says so.
	if err := leader.SetAutoPromote(true); err != nil {
		t.Fatal(err)
	}
	c.tick(40)
	evs := c.nodes[1].events
	if len(evs) != 1 {
		t.Fatalf("events: %+v", evs)
	}
	e := evs[0]
	if e.Kind != PromotionProposed || e.ID != 2 || e.Promoted != 2 || e.Demoted != 0 || e.Index == 0 {
		t.Fatalf("event: %+v", e)
	}
	if e.Kind.String() != "PromotionProposed" {
		t.Fatal(e.Kind.String())
	}
	st = leader.Status()
	if len(st.Config.Voters) != 2 || len(st.Config.Learners) != 0 || st.Learners != nil || st.RaftState != StateLeader {
		t.Fatalf("after promotion: %+v", st)
	}
}

func TestLearnerNotActiveLongEnoughNumbers(t *testing.T) {
	c := newLifecycleCluster(t, []uint64{1}, []uint64{2}, func(c *Config) {
		c.AutoPromote = true
		c.PromoteMinActiveRounds = 1000
	})
	c.elect(1)
	c.tick(40)
	st := c.nodes[1].rn.Status()
	if len(st.Learners) != 1 || st.Learners[0].NotPromotable == nil {
		t.Fatalf("learners: %+v", st.Learners)
	}
	np := st.Learners[0].NotPromotable
	if np.Reason != NotPromotableNotActiveLongEnough || np.Needed != 1000 || np.ActiveRounds < 2 || np.ActiveRounds >= 1000 {
		t.Fatalf("not promotable: %+v", np)
	}
	if !strings.Contains(np.String(), "1000 needed") || np.Reason.String() != "NotActiveLongEnough" {
		t.Fatalf("reason text: %q / %q", np.String(), np.Reason.String())
	}
	if len(c.nodes[1].events) != 0 {
		t.Fatalf("events: %+v", c.nodes[1].events)
	}
}

func TestStandbyReplacesDeadVoter(t *testing.T) {
	c := newLifecycleCluster(t, []uint64{1, 2, 3}, []uint64{4}, func(c *Config) {
		c.StandbyPromotion = true
		c.StandbyDeadRounds = 2
		c.PromoteMinActiveRounds = 2
	})
	c.elect(1)
	c.propose(1, "a")
	c.tick(30)
	if len(c.nodes[1].events) != 0 {
		t.Fatalf("events before the failure: %+v", c.nodes[1].events)
	}
	c.down[3] = true
	for i := 0; i < 300 && len(c.nodes[1].events) == 0; i++ {
		c.tick(1)
		if c.nodes[1].rn.BasicStatus().RaftState != StateLeader {
			t.Fatal("the leader lost its role")
		}
	}
	c.tick(30)
	evs := c.nodes[1].events
	if len(evs) != 1 || evs[0].Kind != StandbySwapProposed || evs[0].Promoted != 4 || evs[0].ID != 4 || evs[0].Demoted != 3 {
		t.Fatalf("events: %+v", evs)
	}
	st := c.nodes[1].rn.Status()
	if len(st.Config.Voters) != 3 || len(st.Config.Learners) != 1 || st.Config.Learners[0] != 3 {
		t.Fatalf("config after the swap: %+v", st.Config)
	}
	if len(st.Learners) != 1 || st.Learners[0].ID != 3 || st.Learners[0].RecentActive || st.Learners[0].NotPromotable == nil {
		t.Fatalf("learners: %+v", st.Learners)
	}
}
