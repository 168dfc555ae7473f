package raftlet

import "testing"

// newQuiesceCluster is newTestCluster with Config.Quiesce on every node.
func newQuiesceCluster(t *testing.T, ids ...uint64) *testCluster {
	t.Helper()
	c := &testCluster{t: t, nodes: map[uint64]*testNode{}, down: map[uint64]bool{}}
	t.Cleanup(c.close)
	peers := make([]Peer, len(ids))
	for i, id := range ids {
		peers[i] = Peer{ID: id}
	}
	for _, id := range ids {
		s := NewMemoryStorage()
		cfg := testConfig(id, s)
		cfg.Quiesce = true
		rn, err := NewRawNode(cfg)
		if err != nil {
			s.Close()
			t.Fatalf("NewRawNode(%d): %v", id, err)
		}
		c.nodes[id] = &testNode{id: id, rn: rn, storage: s}
		if err := rn.Bootstrap(peers); err != nil {
			t.Fatalf("bootstrap %d: %v", id, err)
		}
	}
	return c
}

// Idle groups sleep (Tick does nothing), a proposal wakes them, and
// followers told that the leader's node is silent elect a new leader.
func TestQuiesce(t *testing.T) {
	c := newQuiesceCluster(t, 1, 2, 3)
	c.elect(1)
	c.propose(1, "a")
	c.tick(3)
	asleep := func(want bool) {
		t.Helper()
		for _, id := range c.ids() {
			if got := c.nodes[id].rn.IsQuiesced(); got != want {
				t.Fatalf("node %d quiesced = %v, want %v", id, got, want)
			}
		}
	}
	asleep(true)
	c.tick(50)
	asleep(true)
	if l := c.leader(); l != 1 {
		t.Fatalf("leader %d after idle ticks, want 1", l)
	}
	// A proposal on a follower wakes the group; it sleeps again once idle.
	c.propose(2, "b")
	c.tick(3)
	asleep(true)
	for _, id := range c.ids() {
		if n := len(c.nodes[id].applied); n != len(c.nodes[1].applied) || n < 2 {
			t.Fatalf("node %d applied %d entries", id, n)
		}
	}
	c.nodes[3].rn.Wake()
	if c.nodes[3].rn.IsQuiesced() {
		t.Fatal("Wake left node 3 asleep")
	}
	// The leader's node goes silent.
	c.down[1] = true
	c.nodes[2].rn.WakeLeaderLost()
	c.nodes[3].rn.WakeLeaderLost()
	for i := 0; i < 20 && c.leader() != 2 && c.leader() != 3; i++ {
		c.tick(1)
	}
	if l := c.leader(); l != 2 && l != 3 {
		t.Fatalf("no new leader after the old one's node went silent (leader %d)", l)
	}
}
