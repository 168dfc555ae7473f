package interop

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"

	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/raft/v3/raftpb"
)

// The number of seeded schedules and the first seed; INTEROP_SEEDS and
// INTEROP_SEED override them (a failure prints its seed: rerun it with
// INTEROP_SEED=<seed> INTEROP_SEEDS=1 go test -run TestMixedSchedules -v).
var (
	flagSeeds = flag.Int("interop.seeds", envInt("INTEROP_SEEDS", 240), "seeded schedules to run")
	flagSeed  = flag.Int64("interop.seed", int64(envInt("INTEROP_SEED", 1)), "first seed")
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// layouts are the mixes of raftlet and etcd voters a schedule draws from.
var layouts = []struct{ raftlet, etcd int }{{1, 2}, {2, 1}, {3, 2}}

// schedule is one seeded run: a mixed cluster under message loss,
// duplication, delay and partitions, with proposals, reads, leader
// transfers, snapshots with compaction, and a learner that joins and is
// promoted; then the network heals and the cluster must make progress
// and converge.
type schedule struct {
	c          *cluster
	layout     string
	proposals  int
	learner    uint64
	learnerAt  int  // step at which the learner is added
	promoted   bool // the promotion was accepted by the leader
	refusals   int  // promotions refused as not ready
	snapshots  int
	transfers  int
	partitions int
}

func runSchedule(t testing.TB, seed int64) *schedule {
	c := newCluster(t, seed)
	defer c.close()
	r := c.rng
	l := layouts[r.Intn(len(layouts))]
	n := l.raftlet + l.etcd
	kinds := make([]kind, 0, n)
	for i := 0; i < l.raftlet; i++ {
		kinds = append(kinds, kindRaftlet)
	}
	for i := 0; i < l.etcd; i++ {
		kinds = append(kinds, kindEtcd)
	}
	r.Shuffle(n, func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	peers := make([]uint64, n)
	for i := range peers {
		peers[i] = uint64(i + 1)
	}
	opts := func() nodeOptions {
		return nodeOptions{
			electionTick:    10,
			maxSizePerMsg:   []uint64{256, 4096, 1 << 20}[r.Intn(3)],
			coalesceAppends: r.Intn(2) == 0,
			// Quiescence on the raftlet nodes of odd seeds (not drawn
			// from r, so the schedules stay those of earlier versions):
			// every layout has an etcd voter, which echoes the quiesce
			// request, so the groups must degrade to never quiescing.
			quiesce: seed%2 == 1,
		}
	}
	for i, id := range peers {
		c.start(id, kinds[i], opts(), peers)
	}
	s := &schedule{c: c, layout: fmt.Sprintf("%d raftlet + %d etcd", l.raftlet, l.etcd)}
	c.dropRate = []float64{0, 0.02, 0.05, 0.1, 0.2}[r.Intn(5)]
	c.dupRate = []float64{0, 0, 0.02}[r.Intn(3)]
	c.maxDelay = r.Intn(3)
	s.learner = uint64(n + 1)
	s.learnerAt = 100 + r.Intn(800)
	learnerKind := []kind{kindRaftlet, kindEtcd}[r.Intn(2)]

	const faultySteps = 1200
	for step := 0; step < faultySteps; step++ {
		c.step(step%4 == 0)
		s.act(step, learnerKind, opts)
	}

	// Heal; a leader must emerge and commit a new entry everywhere.
	c.heal()
	marker := fmt.Sprintf("marker-%d", seed)
	done := false
	for step := 0; step < 2000 && !done; step++ {
		c.step(step%4 == 0)
		s.learnerStep(faultySteps+step, learnerKind, opts)
		if step%20 == 0 {
			if lead := c.leader(); lead != 0 {
				_ = c.hosts[lead].n.Propose([]byte(marker))
			}
		}
		done = true
		for _, id := range c.ids {
			if !c.hosts[id].hasApplied(marker) {
				done = false
				break
			}
		}
	}
	if !done {
		var st []string
		for _, id := range c.ids {
			h := c.hosts[id]
			st = append(st, fmt.Sprintf("%d(%s): %+v applied %d", id, h.n.Kind(), h.n.Basic(), h.appliedIndex))
		}
		c.t.Fatalf("seed %d (%s): no progress after the network healed:\n  %v\nrecent events:\n  %v",
			seed, c.kinds(), st, c.trace)
	}
	// Let the last commits reach everyone, then compare.
	for i := 0; i < 20; i++ {
		c.step(true)
	}
	c.settle()
	c.checkConverged()
	return s
}

func (h *host) hasApplied(data string) bool {
	for i := len(h.state) - 1; i >= 0; i-- {
		if h.state[i].Data == data {
			return true
		}
	}
	return false
}

// act draws the schedule's events for one step.
func (s *schedule) act(step int, learnerKind kind, opts func() nodeOptions) {
	c := s.c
	r := c.rng
	ids := c.ids
	switch x := r.Float64(); {
	case x < 0.10:
		id := ids[r.Intn(len(ids))]
		s.proposals++
		_ = c.hosts[id].n.Propose([]byte(fmt.Sprintf("s%d-%d", c.seed, s.proposals)))
	case x < 0.12:
		id := ids[r.Intn(len(ids))]
		c.readIndex(id, fmt.Sprintf("r%d-%d", c.seed, step))
	case x < 0.125:
		if lead := c.leader(); lead != 0 {
			to := ids[r.Intn(len(ids))]
			if to != lead && to != s.learner {
				c.tracef("transfer %d -> %d", lead, to)
				c.hosts[lead].n.TransferLeader(to)
				s.transfers++
			}
		}
	case x < 0.14:
		id := ids[r.Intn(len(ids))]
		if c.snapshot(id, uint64(r.Intn(5))) {
			s.snapshots++
		}
	case x < 0.15:
		s.partitions++
		switch p := r.Intn(5); p {
		case 0:
			c.heal()
			c.dropRate = []float64{0, 0.05, 0.1}[r.Intn(3)]
		case 1:
			c.cut = map[[2]uint64]bool{}
			c.isolate(ids[r.Intn(len(ids))])
		case 2: // two sides
			c.cut = map[[2]uint64]bool{}
			side := map[uint64]bool{}
			for _, id := range ids {
				side[id] = r.Intn(2) == 0
			}
			for _, a := range ids {
				for _, b := range ids {
					if side[a] != side[b] {
						c.cut[[2]uint64{a, b}] = true
					}
				}
			}
			c.tracef("split %v", side)
		case 3: // one way
			a, b := ids[r.Intn(len(ids))], ids[r.Intn(len(ids))]
			if a != b {
				c.cut[[2]uint64{a, b}] = true
				c.tracef("cut %d -> %d", a, b)
			}
		case 4: // the leader alone
			if lead := c.leader(); lead != 0 {
				c.cut = map[[2]uint64]bool{}
				c.isolate(lead)
			}
		}
	}
	s.learnerStep(step, learnerKind, opts)
}

// learnerStep adds the learner at its step, then promotes it once the
// leader deems it caught up.
func (s *schedule) learnerStep(step int, learnerKind kind, opts func() nodeOptions) {
	c := s.c
	if step < s.learnerAt || s.promoted {
		return
	}
	lead := c.leader()
	if lead == 0 || step%10 != 0 {
		return
	}
	l := c.hosts[lead]
	if _, ok := c.hosts[s.learner]; !ok {
		err := l.n.ProposeConfChange(raftpb.ConfChange{Type: raftpb.ConfChangeAddLearnerNode, NodeID: s.learner})
		if err != nil {
			return
		}
		// The new member starts empty and learns the configuration from
		// the leader (etcd's way of adding a member).
		c.start(s.learner, learnerKind, opts(), nil)
		return
	}
	pr, ok := l.n.Progress()[s.learner]
	if !ok {
		// The conf change was lost with an old leader's log: add it again
		// (adding a learner twice is a no-op).
		if step%100 == 0 {
			_ = l.n.ProposeConfChange(raftpb.ConfChange{Type: raftpb.ConfChangeAddLearnerNode, NodeID: s.learner})
		}
		return
	}
	if !pr.IsLearner {
		return // already a voter
	}
	promote := raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: s.learner}
	if l.n.Kind() == kindEtcd {
		// etcd raft promotes any learner: the host applies etcd server's
		// rule (the learner's match within 90% of the leader's).
		if !pr.RecentActive || pr.Snapshot || float64(pr.Match) < 0.9*float64(l.n.Basic().Commit) {
			s.refusals++
			return
		}
	}
	err := l.n.ProposeConfChange(promote)
	switch {
	case err == nil:
		s.promoted = true
		c.tracef("leader %d (%s) accepted the promotion of %d", lead, l.n.Kind(), s.learner)
	case errors.Is(err, raftlet.ErrPromotionNotReady):
		s.refusals++
	}
}

// TestMixedSchedules runs the seeded schedules (240 by default) over
// mixed clusters of raftlet and etcd raft nodes.
func TestMixedSchedules(t *testing.T) {
	first, n := *flagSeed, *flagSeeds
	if testing.Short() && n > 40 {
		n = 40
	}
	var stats struct {
		layouts                                            map[string]int
		proposals, snapshots, transfers, promoted, refused int
		installed, reads, raw                              int
	}
	stats.layouts = map[string]int{}
	for seed := first; seed < first+int64(n); seed++ {
		s := runSchedule(t, seed)
		if t.Failed() {
			return
		}
		stats.layouts[s.layout]++
		stats.proposals += s.proposals
		stats.snapshots += s.snapshots
		stats.transfers += s.transfers
		stats.refused += s.refusals
		if s.promoted {
			stats.promoted++
		}
		for _, h := range s.c.hosts {
			stats.installed += h.snapshots
		}
		stats.reads += s.c.readsDone
		stats.raw += s.c.rawChecked
	}
	t.Logf("%d schedules, zero safety violations: layouts %v; %d raftlet-encoded messages byte-identical to raftpb's; %d proposals, %d reads answered, %d snapshots taken and %d installed, %d transfers, %d learners promoted (%d promotions deferred as not caught up)",
		n, stats.layouts, stats.raw, stats.proposals, stats.reads, stats.snapshots, stats.installed, stats.transfers, stats.promoted, stats.refused)
}
