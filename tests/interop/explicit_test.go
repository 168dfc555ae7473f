package interop

import (
	"errors"
	"fmt"
	"testing"

	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/raft/v3/raftpb"
)

var defaultOptions = nodeOptions{electionTick: 10, maxSizePerMsg: 1 << 20, coalesceAppends: true}

// newMixed starts one voter per kind given, ids 1..n, all bootstrapped
// with the same peers.
func newMixed(t *testing.T, kinds ...kind) *cluster {
	t.Helper()
	c := newCluster(t, 1)
	t.Cleanup(c.close)
	peers := make([]uint64, len(kinds))
	for i := range kinds {
		peers[i] = uint64(i + 1)
	}
	for i, k := range kinds {
		c.start(peers[i], k, defaultOptions, peers)
	}
	c.settle()
	return c
}

// elect makes id campaign and checks that it leads.
func (c *cluster) elect(id uint64) {
	c.t.Helper()
	if err := c.hosts[id].n.Campaign(); err != nil {
		c.t.Fatal(err)
	}
	c.settle()
	if l := c.leader(); l != id {
		c.t.Fatalf("leader is %d, want %d", l, id)
	}
}

func (c *cluster) proposeN(id uint64, n int, prefix string) {
	c.t.Helper()
	for i := 0; i < n; i++ {
		if err := c.hosts[id].n.Propose([]byte(fmt.Sprintf("%s-%d", prefix, i))); err != nil {
			c.t.Fatalf("propose on %d: %v", id, err)
		}
		c.settle()
	}
}

// checkAllApplied checks every node applied the same n entries with data.
func (c *cluster) checkAllApplied(n int) {
	c.t.Helper()
	c.checkConverged()
	for _, id := range c.ids {
		if got := len(c.hosts[id].appliedData()); got != n {
			c.t.Fatalf("node %d (%s) applied %d entries, want %d", id, c.hosts[id].n.Kind(), got, n)
		}
	}
}

// replicateWithSnapshot has leader 1 replicate to both followers, then
// catch follower 3 up with a snapshot after compacting its log.
func replicateWithSnapshot(t *testing.T, leaderKind, followerKind kind) {
	c := newMixed(t, leaderKind, followerKind, followerKind)
	c.elect(1)
	c.proposeN(1, 20, "a")
	c.checkAllApplied(20)

	c.isolate(3)
	c.proposeN(1, 30, "b")
	leader := c.hosts[1]
	if !c.snapshot(1, 0) {
		t.Fatal("no snapshot taken")
	}
	snapIndex := leader.appliedIndex
	if first := leader.n.FirstIndex(); first != snapIndex+1 {
		t.Fatalf("leader's log starts at %d after compacting to %d", first, snapIndex)
	}
	c.heal()
	c.ticks(3)
	f := c.hosts[3]
	if f.snapshots != 1 {
		t.Fatalf("follower 3 (%s) installed %d snapshots, want 1", f.n.Kind(), f.snapshots)
	}
	if first := f.n.FirstIndex(); first != snapIndex+1 {
		t.Fatalf("follower 3's log starts at %d, want %d", first, snapIndex+1)
	}
	pr := leader.n.Progress()[3]
	if pr.Snapshot || pr.Match != leader.n.Basic().Commit {
		t.Fatalf("leader's progress of 3: %+v", pr)
	}
	c.proposeN(1, 5, "c")
	c.checkAllApplied(55)
	if c.hosts[2].snapshots != 0 {
		t.Fatal("follower 2 needed no snapshot")
	}
}

func TestRaftletLeaderReplicatesToEtcdFollowers(t *testing.T) {
	replicateWithSnapshot(t, kindRaftlet, kindEtcd)
}

func TestEtcdLeaderReplicatesToRaftletFollowers(t *testing.T) {
	replicateWithSnapshot(t, kindEtcd, kindRaftlet)
}

// TestElectionsAcrossImplementations elects each node in turn, each
// needing the votes (and pre-votes) of the other kind.
func TestElectionsAcrossImplementations(t *testing.T) {
	c := newMixed(t, kindRaftlet, kindEtcd, kindEtcd, kindRaftlet, kindEtcd)
	for round := 0; round < 2; round++ {
		for _, id := range c.ids {
			// Followers of a live leader ignore campaigns (check-quorum):
			// make them forget it first, as after a crash of the leader.
			for _, o := range c.ids {
				if o != id {
					c.isolate(o)
				}
			}
			c.ticks(25) // every lease runs out
			c.heal()
			c.elect(id)
			c.proposeN(id, 1, fmt.Sprintf("by-%d-%d", id, round))
		}
	}
	c.ticks(3)
	c.checkAllApplied(10)
}

// TestLeaderTransferAcrossImplementations hands leadership around the
// cluster: raftlet to etcd, etcd to etcd, etcd to raftlet, raftlet to
// raftlet. It works only if both honour the other's MsgTimeoutNow and
// the "CampaignTransfer" context that lets a transfer through the leader
// lease of check-quorum.
func TestLeaderTransferAcrossImplementations(t *testing.T) {
	c := newMixed(t, kindRaftlet, kindEtcd, kindEtcd, kindRaftlet)
	c.elect(1)
	c.proposeN(1, 3, "x")
	prev := c.hosts[1].n.Basic().Term
	for _, step := range [][2]uint64{{1, 2}, {2, 3}, {3, 4}, {4, 1}} {
		from, to := step[0], step[1]
		c.hosts[from].n.TransferLeader(to)
		if lt := c.hosts[from].n.Basic().LeadTransferee; lt != to {
			t.Fatalf("LeadTransferee on %d: %d", from, lt)
		}
		c.settle()
		if l := c.leader(); l != to {
			t.Fatalf("transfer %d (%s) -> %d (%s): leader is %d", from, c.hosts[from].n.Kind(), to, c.hosts[to].n.Kind(), l)
		}
		term := c.hosts[to].n.Basic().Term
		if term != prev+1 {
			t.Fatalf("transfer to %d took term %d after %d (a pre-vote round or a lost election)", to, term, prev)
		}
		prev = term
		c.proposeN(to, 1, fmt.Sprintf("after-%d", to))
	}
	c.checkAllApplied(7)
}

// TestReadIndexAcrossImplementations reads through followers of the other
// kind (forwarded MsgReadIndex and MsgReadIndexResp) and on each leader.
func TestReadIndexAcrossImplementations(t *testing.T) {
	for _, lk := range []kind{kindRaftlet, kindEtcd} {
		other := kindEtcd
		if lk == kindEtcd {
			other = kindRaftlet
		}
		t.Run(string(lk)+"-leader", func(t *testing.T) {
			c := newMixed(t, lk, other, other)
			c.elect(1)
			c.proposeN(1, 4, "w")
			commit := c.hosts[1].n.Basic().Commit
			before := c.readsDone
			c.readIndex(1, "on-leader")
			c.readIndex(2, "on-follower-2")
			c.readIndex(3, "on-follower-3")
			c.settle()
			if got := c.readsDone - before; got != 3 {
				t.Fatalf("%d reads answered, want 3", got)
			}
			if c.hosts[2].n.Basic().Commit != commit {
				t.Fatal("commit moved")
			}
		})
	}
}

// TestLearnerPromotionAcrossImplementations adds a learner of the other
// kind and promotes it. A raftlet leader refuses the promotion until the
// learner has caught up; for an etcd leader the host checks, as etcd's
// server does.
func TestLearnerPromotionAcrossImplementations(t *testing.T) {
	for _, lk := range []kind{kindRaftlet, kindEtcd} {
		other := kindEtcd
		if lk == kindEtcd {
			other = kindRaftlet
		}
		t.Run(string(lk)+"-leader", func(t *testing.T) {
			c := newMixed(t, lk, lk, other)
			c.elect(1)
			c.proposeN(1, 10, "w")
			l := c.hosts[1].n
			if err := l.ProposeConfChange(raftpb.ConfChange{Type: raftpb.ConfChangeAddLearnerNode, NodeID: 4}); err != nil {
				t.Fatal(err)
			}
			c.settle()
			// The learner is not running: after a check-quorum round the
			// leader sees it inactive.
			c.ticks(25)
			promote := raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddNode, NodeID: 4}}}
			if lk == kindRaftlet {
				if err := l.ProposeConfChange(promote); !errors.Is(err, raftlet.ErrPromotionNotReady) {
					t.Fatalf("promotion of an absent learner: %v", err)
				}
			} else if pr := l.Progress()[4]; pr.RecentActive || pr.Match != 0 {
				t.Fatalf("etcd leader's progress of the absent learner: %+v", pr)
			}
			c.start(4, other, defaultOptions, nil)
			c.ticks(3)
			pr := l.Progress()[4]
			if !pr.IsLearner || !pr.RecentActive || pr.Match != l.Basic().Commit {
				t.Fatalf("learner progress %+v, commit %d", pr, l.Basic().Commit)
			}
			if got := len(c.hosts[4].appliedData()); got != 10 {
				t.Fatalf("learner applied %d entries", got)
			}
			if err := l.ProposeConfChange(promote); err != nil {
				t.Fatalf("promotion of a caught-up learner: %v", err)
			}
			c.settle()
			for _, id := range c.ids {
				cs := c.hosts[id].cs
				if len(cs.Voters) != 4 || len(cs.Learners) != 0 {
					t.Fatalf("node %d conf state %+v", id, cs)
				}
			}
			// The new voter counts: with two of four down, nothing commits;
			// with the learner-turned-voter up, it does.
			c.isolate(2)
			c.proposeN(1, 1, "needs-4")
			c.checkConvergedAmong(1, 3, 4)
			c.heal()
			c.ticks(2)
			c.checkAllApplied(11)
		})
	}
}

// checkConvergedAmong checks that the given nodes applied the same.
func (c *cluster) checkConvergedAmong(ids ...uint64) {
	c.t.Helper()
	ref := c.hosts[ids[0]]
	for _, id := range ids[1:] {
		h := c.hosts[id]
		if h.appliedIndex != ref.appliedIndex {
			c.t.Fatalf("node %d applied up to %d, node %d up to %d", id, h.appliedIndex, ref.id, ref.appliedIndex)
		}
	}
}

// TestJointConsensusAcrossImplementations swaps a voter through an
// explicit joint configuration proposed on each kind of leader.
func TestJointConsensusAcrossImplementations(t *testing.T) {
	for _, lk := range []kind{kindRaftlet, kindEtcd} {
		t.Run(string(lk)+"-leader", func(t *testing.T) {
			other := kindEtcd
			if lk == kindEtcd {
				other = kindRaftlet
			}
			c := newMixed(t, lk, other, other)
			c.elect(1)
			c.proposeN(1, 3, "w")
			c.start(4, other, defaultOptions, nil)
			l := c.hosts[1].n
			swap := raftpb.ConfChangeV2{
				Transition: raftpb.ConfChangeTransitionJointExplicit,
				Changes: []raftpb.ConfChangeSingle{
					{Type: raftpb.ConfChangeAddNode, NodeID: 4},
					{Type: raftpb.ConfChangeRemoveNode, NodeID: 3},
				},
			}
			if err := l.ProposeConfChange(swap); err != nil {
				t.Fatal(err)
			}
			c.ticks(3)
			for _, id := range c.ids {
				cs := c.hosts[id].cs
				if fmt.Sprint(cs.Voters, cs.VotersOutgoing) != "[1 2 4] [1 2 3]" {
					t.Fatalf("node %d in joint: %+v", id, cs)
				}
			}
			if err := l.ProposeConfChange(raftpb.ConfChangeV2{}); err != nil {
				t.Fatal(err)
			}
			c.ticks(3)
			for _, id := range []uint64{1, 2, 4} {
				cs := c.hosts[id].cs
				if fmt.Sprint(cs.Voters, cs.VotersOutgoing) != "[1 2 4] []" {
					t.Fatalf("node %d after leaving joint: %+v", id, cs)
				}
			}
			c.proposeN(1, 1, "after")
			c.checkConvergedAmong(1, 2, 4)
		})
	}
}
