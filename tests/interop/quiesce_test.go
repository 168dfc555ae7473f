package interop

import (
	"testing"
)

// With quiescence on every raftlet node (Config.Quiesce), a group with an
// etcd voter never quiesces, whoever leads: an etcd follower echoes the
// raftlet leader's quiesce request (a heartbeat context, which it decodes
// as any other) and the leader stops asking for the term; an etcd leader
// never asks. Every message still decodes on the etcd side (the cluster
// fails the test on any refusal), elections and commits go on as usual.
func TestQuiescenceDegradesWithAnEtcdPeer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kinds []kind
	}{
		{"raftlet leader", []kind{kindRaftlet, kindRaftlet, kindEtcd}},
		{"etcd leader", []kind{kindEtcd, kindRaftlet, kindRaftlet}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOptions
			o.quiesce = true
			c := newCluster(t, 1)
			t.Cleanup(c.close)
			peers := []uint64{1, 2, 3}
			for i, k := range tc.kinds {
				c.start(peers[i], k, o, peers)
			}
			c.settle()
			c.elect(1)
			c.proposeN(1, 3, "q")
			// Idle for three election timeouts: a quiescing group would
			// have slept long before.
			c.ticks(30)
			check := func() {
				t.Helper()
				for _, id := range c.ids {
					if rn, ok := c.hosts[id].n.(*raftletNode); ok && rn.rn.IsQuiesced() {
						t.Fatalf("raftlet node %d is quiesced in a group with an etcd voter", id)
					}
				}
				if l := c.leader(); l != 1 {
					t.Fatalf("leader is %d, want 1 (no election while idle)", l)
				}
			}
			check()
			c.proposeN(1, 3, "r")
			c.ticks(5)
			check()
			c.checkAllApplied(6)
		})
	}
}
