package raftlet

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// mixedHost drives a cluster taking every freedom the Ready API gives a
// host, chosen at random: the typed Ready, views written by the host or
// by the library (ReadyViewPersisted, ProposeReady, StepBatchReady,
// AdvanceViewNext), several views held before they are advanced
// (pipelined, advanced in order), messages delivered late, out of order,
// in batches or dropped, and ticks that move elections, one node's or
// every node's through a TickSet (which makes the applied reports the
// nodes owe for views released without a crossing).
type mixedHost struct {
	t       *testing.T
	rng     *rand.Rand
	c       *testCluster
	set     *TickSet
	pending map[uint64][]ReadyView // taken and handled, not advanced yet, oldest first
	seq     int
}

// hold records v (Valid) as handled: its entries applied and its
// messages queued now, its advance left for later.
func (h *mixedHost) hold(n *testNode, v ReadyView) {
	h.c.readView(n, v)
	h.pending[n.id] = append(h.pending[n.id], v)
}

// advance advances the oldest k views held by n, in order; with next the
// last goes through AdvanceViewNext, whose next Ready is held in turn.
func (h *mixedHost) advance(n *testNode, k int, next bool) {
	for i := 0; i < k; i++ {
		v := h.pending[n.id][0]
		h.pending[n.id] = h.pending[n.id][1:]
		if next && i == k-1 {
			nv, err := n.rn.AdvanceViewNext(v, n.storage)
			if err != nil {
				h.t.Fatalf("node %d: AdvanceViewNext: %v", n.id, err)
			}
			if nv.Valid() {
				h.hold(n, nv)
			}
			continue
		}
		if err := n.rn.AdvanceView(v); err != nil {
			h.t.Fatalf("node %d: AdvanceView: %v", n.id, err)
		}
	}
}

func (h *mixedHost) propose(n *testNode) {
	data := []byte(fmt.Sprintf("p%d", h.seq))
	h.seq++
	if len(h.pending[n.id]) == 0 && h.rng.Intn(2) == 0 {
		v, _, err := n.rn.ProposeReady(data, n.storage) // a dropped proposal is fine
		if err != nil {
			h.t.Fatalf("node %d: ProposeReady: %v", n.id, err)
		}
		if v.Valid() {
			h.hold(n, v)
		}
		return
	}
	_ = n.rn.Propose(data)
}

// ready handles n's next Ready by one of the paths.
func (h *mixedHost) ready(n *testNode) {
	if !n.rn.HasReady() {
		return
	}
	switch h.rng.Intn(3) {
	case 0:
		v, err := n.rn.ReadyViewPersisted(n.storage)
		if err != nil {
			h.t.Fatalf("node %d: ReadyViewPersisted: %v", n.id, err)
		}
		h.hold(n, v)
	case 1:
		v, err := n.rn.ReadyView()
		if err != nil {
			h.t.Fatal(err)
		}
		if err := n.storage.AppendReadyView(v); err != nil {
			h.t.Fatalf("node %d: AppendReadyView: %v", n.id, err)
		}
		h.hold(n, v)
	default:
		// The typed Ready, advanced at once, covers every view taken
		// before it: only when none is held.
		if len(h.pending[n.id]) == 0 {
			h.c.handle(n)
		}
	}
}

// deliver steps a random part of the mailbox, shuffled, some of it
// dropped; the rest waits.
func (h *mixedHost) deliver() {
	box := h.c.mailbox
	h.rng.Shuffle(len(box), func(i, j int) { box[i], box[j] = box[j], box[i] })
	k := h.rng.Intn(len(box) + 1)
	h.c.mailbox = append([][]byte(nil), box[k:]...)
	byDest := map[uint64][][]byte{}
	for _, b := range box[:k] {
		if h.rng.Intn(10) == 0 {
			continue
		}
		hd, err := DecodeMessageHeader(b)
		if err != nil {
			h.t.Fatal(err)
		}
		if h.c.down[hd.To] || h.c.down[hd.From] {
			continue
		}
		byDest[hd.To] = append(byDest[hd.To], b)
	}
	for _, id := range h.c.ids() {
		bs := byDest[id]
		if len(bs) == 0 {
			continue
		}
		n := h.c.nodes[id]
		if len(h.pending[id]) == 0 && h.rng.Intn(2) == 0 {
			v, _, err := n.rn.StepBatchReady(bs, n.storage) // a stale message may be refused
			if err != nil {
				h.t.Fatalf("node %d: StepBatchReady: %v", id, err)
			}
			if v.Valid() {
				h.hold(n, v)
			}
			continue
		}
		_ = n.rn.StepBatch(bs)
	}
}

// agree fails unless every node's applied entries are a prefix of the
// longest node's: the state machines never diverge.
func (h *mixedHost) agree(when string) {
	var longest [][]byte
	for _, id := range h.c.ids() {
		if a := h.c.nodes[id].applied; len(a) > len(longest) {
			longest = a
		}
	}
	for _, id := range h.c.ids() {
		for i, e := range h.c.nodes[id].applied {
			if !bytes.Equal(e, longest[i]) {
				h.t.Fatalf("%s: node %d applied %q at position %d, another node %q", when, id, e, i, longest[i])
			}
		}
	}
}

// Three nodes driven through every Ready path at random, for many seeds:
// no call is refused that the API's rules allow, the applied entries
// never diverge, and once the network heals every node applies the same
// entries, among them every proposal the leader of the last term
// accepted before the end.
func TestMixedReadyPathsAgree(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			h := &mixedHost{
				t:       t,
				rng:     rand.New(rand.NewSource(int64(seed))),
				c:       newTestCluster(t, 1, 2, 3),
				pending: map[uint64][]ReadyView{},
			}
			set, err := NewTickSet(h.c.nodes[1].rn, h.c.nodes[2].rn, h.c.nodes[3].rn)
			if err != nil {
				t.Fatal(err)
			}
			h.set = set
			h.c.settle()
			for step := 0; step < 800; step++ {
				n := h.c.nodes[uint64(1+h.rng.Intn(3))]
				switch r := h.rng.Intn(20); {
				case r < 4:
					h.propose(n)
				case r < 7:
					n.rn.Tick()
				case r < 8:
					if err := h.set.Tick(); err != nil {
						t.Fatalf("TickSet.Tick: %v", err)
					}
				case r < 12:
					h.ready(n)
				case r < 15:
					if p := len(h.pending[n.id]); p > 0 {
						h.advance(n, 1+h.rng.Intn(p), h.rng.Intn(2) == 0)
					}
				case r < 19:
					h.deliver()
				default:
					// Cut one node off for a while, or heal: leaders
					// change, and some entries are overwritten.
					if len(h.c.down) > 0 {
						h.c.down = map[uint64]bool{}
					} else {
						h.c.down[n.id] = true
					}
				}
				h.agree(fmt.Sprintf("step %d", step))
			}
			// Heal: advance what is held, then settle, with ticks, until
			// a leader's last proposal is applied everywhere.
			h.c.down = map[uint64]bool{}
			for _, id := range h.c.ids() {
				if p := len(h.pending[id]); p > 0 {
					h.advance(h.c.nodes[id], p, false)
				}
			}
			h.c.settle()
			for i := 0; i < 200 && h.c.leader() == 0; i++ {
				h.c.tick(1)
			}
			lead := h.c.leader()
			if lead == 0 {
				t.Fatal("no leader after healing")
			}
			h.c.propose(lead, "last")
			// A follower whose probe was lost waits for a heartbeat.
			done := func() bool {
				for _, id := range h.c.ids() {
					a := h.c.nodes[id].applied
					if len(a) == 0 || string(a[len(a)-1]) != "last" {
						return false
					}
				}
				return true
			}
			for i := 0; i < 50 && !done(); i++ {
				h.c.tick(1)
			}
			h.agree("healed")
			first := h.c.nodes[1].applied
			for _, id := range h.c.ids() {
				a := h.c.nodes[id].applied
				if len(a) != len(first) || string(a[len(a)-1]) != "last" {
					t.Fatalf("node %d applied %d entries (last %q), node 1 %d", id, len(a), a[len(a)-1], len(first))
				}
			}
		})
	}
}
