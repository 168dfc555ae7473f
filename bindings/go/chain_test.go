package raftlet

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// checkNext fails when n's chained state is wrong: a node holding a
// Ready taken in advance must not have had another one taken, and one
// holding none must agree with the library about has_ready.
func checkNext(t testing.TB, n *testNode) {
	t.Helper()
	if !n.next.Valid() {
		checkHR(t, n)
	}
}

// handleChained runs one Ready of n the chained way: the Ready taken in
// advance (by AdvanceViewNext or StepBatchReady), else ReadyViewPersisted;
// then AdvanceViewNext, which takes the next one if there is one.
func (c *testCluster) handleChained(n *testNode) bool {
	t := c.t
	checkNext(t, n)
	v := n.next
	n.next = ReadyView{}
	if !v.Valid() {
		if !n.rn.HasReady() {
			return false
		}
		var err error
		if v, err = n.rn.ReadyViewPersisted(n.storage); err != nil {
			t.Fatalf("node %d: %v", n.id, err)
		}
	}
	c.readView(n, v)
	next, err := n.rn.AdvanceViewNext(v, n.storage)
	if err != nil {
		t.Fatalf("node %d: AdvanceViewNext: %v", n.id, err)
	}
	if v.Valid() {
		t.Fatalf("node %d: the view advanced by AdvanceViewNext is still valid", n.id)
	}
	n.next = next
	checkNext(t, n)
	return true
}

// settleChained is settle through handleChained, each node's messages
// stepped with StepBatchReady (StepBatch while a Ready is held).
func (c *testCluster) settleChained() {
	for i := 0; i < 10000; i++ {
		work := false
		for _, id := range c.ids() {
			if c.handleChained(c.nodes[id]) {
				work = true
			}
		}
		box := c.mailbox
		c.mailbox = nil
		byDest := map[uint64][][]byte{}
		for _, b := range box {
			h, err := DecodeMessageHeader(b)
			if err != nil {
				c.t.Fatal(err)
			}
			byDest[h.To] = append(byDest[h.To], b)
		}
		for _, id := range c.ids() {
			n := c.nodes[id]
			bs := byDest[id]
			if len(bs) == 0 {
				continue
			}
			if n.next.Valid() {
				if err := n.rn.StepBatch(bs); err != nil {
					c.t.Fatal(err)
				}
			} else {
				next, stepErr, err := n.rn.StepBatchReady(bs, n.storage)
				if stepErr != nil || err != nil {
					c.t.Fatalf("node %d: StepBatchReady: %v, %v", id, stepErr, err)
				}
				n.next = next
			}
			checkNext(c.t, n)
		}
		if !work && len(box) == 0 {
			return
		}
	}
	c.t.Fatal("cluster did not settle")
}

// A cluster driven by the chained calls (AdvanceViewNext ends a cycle
// and takes the next Ready, StepBatchReady steps a read and takes the
// Ready it leaves) applies what the typed API applies, answers reads,
// and never loses a Ready nor takes one twice.
func TestChainedCallsMatchTheTypedAPI(t *testing.T) {
	typed := newTestCluster(t, 1, 2, 3)
	chained := newTestCluster(t, 1, 2, 3)
	typed.elect(1)
	chained.settleChained()
	if err := chained.nodes[1].rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	chained.settleChained()
	if chained.leader() != 1 {
		t.Fatal("node 1 did not win")
	}
	var want [][]byte
	for round := 0; round < 12; round++ {
		for i := 0; i < 1+round%5; i++ {
			p := payload(round*10 + i)
			want = append(want, p)
			if err := typed.nodes[1].rn.Propose(p); err != nil {
				t.Fatal(err)
			}
			if err := chained.nodes[1].rn.Propose(p); err != nil {
				t.Fatal(err)
			}
		}
		typed.settle()
		chained.settleChained()
		ctx := []byte(fmt.Sprintf("read-%d", round))
		if err := chained.nodes[1].rn.ReadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		chained.settleChained()
		if r := chained.nodes[1].reads; len(r) == 0 || !bytes.Equal(r[len(r)-1].RequestCtx, ctx) {
			t.Fatalf("read %q not answered: %v", ctx, r)
		}
		for _, id := range chained.ids() {
			chained.nodes[id].rn.Tick()
		}
		chained.settleChained()
	}
	for _, c := range []*testCluster{typed, chained} {
		for _, id := range c.ids() {
			n := c.nodes[id]
			if n.next.Valid() || n.rn.HasReady() {
				t.Fatalf("node %d has work left after settling", id)
			}
			if len(n.applied) != len(want) {
				t.Fatalf("node %d applied %d entries, want %d", id, len(n.applied), len(want))
			}
			for i := range want {
				if !bytes.Equal(n.applied[i], want[i]) {
					t.Fatalf("node %d entry %d differs", id, i)
				}
			}
		}
	}
}

// AdvanceViewNext refuses what AdvanceView refuses and then takes
// nothing; with no Ready waiting it returns an invalid view; with a nil
// storage the next Ready is taken but not persisted.
func TestAdvanceViewNextErrors(t *testing.T) {
	c := newTestCluster(t, 1)
	n := c.nodes[1]
	c.elect(1)
	if err := n.rn.Propose([]byte("a")); err != nil {
		t.Fatal(err)
	}
	// Taken and written apart, so that the write is acknowledged by the
	// advance (ReadyViewPersisted acknowledges it at once).
	v, err := n.rn.ReadyView()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.storage.AppendReadyView(v); err != nil {
		t.Fatal(err)
	}
	// A view of another node is foreign; nothing is advanced or taken.
	other := newTestCluster(t, 1).nodes[1]
	if _, err := other.rn.AdvanceViewNext(v, other.storage); !errors.Is(err, ErrReadyForeign) {
		t.Fatalf("foreign view: %v", err)
	}
	if !v.Valid() {
		t.Fatal("a refused AdvanceViewNext released the view")
	}
	// The single voter commits its entry once it is durable: the next
	// Ready (the committed entry) is taken, here without persisting it.
	next, err := n.rn.AdvanceViewNext(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid() || !next.Valid() {
		t.Fatalf("after AdvanceViewNext: old view valid %v, next valid %v", v.Valid(), next.Valid())
	}
	ents, err := next.CommittedEntries()
	if err != nil || len(ents) != 1 || string(ents[0].Data()) != "a" {
		t.Fatalf("next Ready commits %v (%v), want the proposal", ents, err)
	}
	// v is stale now: refused, and nothing is taken.
	if _, err := n.rn.AdvanceViewNext(v, n.storage); !errors.Is(err, ErrReadyStale) {
		t.Fatalf("stale view: %v", err)
	}
	if !next.Valid() {
		t.Fatal("a refused AdvanceViewNext released another view")
	}
	// Nothing waits after the committed entry is applied.
	c.readView(n, next)
	last, err := n.rn.AdvanceViewNext(next, n.storage)
	if err != nil {
		t.Fatal(err)
	}
	if last.Valid() || n.rn.HasReady() {
		t.Fatalf("a Ready was taken from an idle node (view valid %v, HasReady %v)", last.Valid(), n.rn.HasReady())
	}
	checkHR(t, n)
	// A Ready taken with a nil storage is not persisted: it cannot be
	// advanced before AppendReadyView.
	if err := n.rn.Propose([]byte("b")); err != nil {
		t.Fatal(err)
	}
	w, err := n.rn.ReadyView()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.storage.AppendReadyView(w); err != nil {
		t.Fatal(err)
	}
	c.readView(n, w)
	w2, err := n.rn.AdvanceViewNext(w, nil)
	if err != nil || !w2.Valid() {
		t.Fatalf("AdvanceViewNext: %v (valid %v)", err, w2.Valid())
	}
	if err := n.rn.Propose([]byte("c")); err != nil {
		t.Fatal(err)
	}
	c.readView(n, w2)
	w3, err := n.rn.AdvanceViewNext(w2, nil)
	if err != nil || !w3.Valid() {
		t.Fatalf("AdvanceViewNext: %v (valid %v)", err, w3.Valid())
	}
	if _, err := n.rn.AdvanceViewNext(w3, n.storage); !errors.Is(err, ErrReadyNotPersisted) {
		t.Fatalf("advancing an unpersisted Ready: %v", err)
	}
	if !w3.Valid() {
		t.Fatal("a refused AdvanceViewNext released the view")
	}
	if err := n.storage.AppendReadyView(w3); err != nil {
		t.Fatal(err)
	}
	c.readView(n, w3)
	if n.next, err = n.rn.AdvanceViewNext(w3, n.storage); err != nil {
		t.Fatal(err)
	}
	c.settleChained()
	if got := len(n.applied); got != 3 {
		t.Fatalf("applied %d entries, want 3", got)
	}
	// A closed node refuses, as AdvanceView does.
	if err := n.rn.Propose([]byte("d")); err != nil {
		t.Fatal(err)
	}
	x, err := n.rn.ReadyViewPersisted(n.storage)
	if err != nil {
		t.Fatal(err)
	}
	n.rn.Close()
	if _, err := n.rn.AdvanceViewNext(x, n.storage); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed node: %v", err)
	}
}

// StepBatchReady steps every message, reports the first failure, and
// takes the Ready the messages left (none when they left nothing).
func TestStepBatchReady(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	f := c.nodes[2]
	term := f.rn.BasicStatus().Term
	for _, big := range []int{0, 3 * pinAbove} {
		m := raftpb.Message{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: term, Context: make([]byte, big)}
		hb, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		next, stepErr, err := f.rn.StepBatchReady([][]byte{{0xff, 0xff}, hb}, f.storage)
		if !errors.Is(stepErr, ErrDecode) || err != nil {
			t.Fatalf("StepBatchReady with garbage first: %v, %v", stepErr, err)
		}
		if !next.Valid() {
			t.Fatal("the heartbeat's response was not taken")
		}
		msgs, err := next.Messages()
		if err != nil || len(msgs) != 1 || msgs[0].Type != raftpb.MsgHeartbeatResp || msgs[0].To != 1 {
			t.Fatalf("next Ready's messages: %v (%v), want one MsgHeartbeatResp to 1", msgs, err)
		}
		checkHR(t, f)
		if err := f.rn.AdvanceView(next); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing to do: no Ready taken.
	next, stepErr, err := f.rn.StepBatchReady(nil, f.storage)
	if stepErr != nil || err != nil || next.Valid() {
		t.Fatalf("empty StepBatchReady: %v, %v, valid %v", stepErr, err, next.Valid())
	}
	checkHR(t, f)
	f.rn.Close()
	if _, stepErr, err := f.rn.StepBatchReady(nil, f.storage); !errors.Is(stepErr, ErrClosed) || !errors.Is(err, ErrClosed) {
		t.Fatalf("closed node: %v, %v", stepErr, err)
	}
}

// A single voter's proposal takes one Ready cycle through AdvanceViewNext
// when the host writes the Ready itself: advancing the Ready of its entry
// hands the entry back at once,
// committed, in a light Ready with nothing to persist, whose commit index
// reached the storage (a restart claiming the entry applied is accepted);
// advancing the light Ready reports it applied and leaves nothing.
func TestAdvanceViewNextHandsOutALightReady(t *testing.T) {
	n := leadAlone(t)
	for i := 0; i < 3; i++ {
		data := []byte(fmt.Sprintf("light-%d", i))
		if err := n.rn.Propose(data); err != nil {
			t.Fatal(err)
		}
		// Taken and written apart: ReadyViewPersisted would acknowledge
		// the write at once and hand the entry out in the same view.
		v, err := n.rn.ReadyView()
		if err != nil {
			t.Fatal(err)
		}
		if err := n.storage.AppendReadyView(v); err != nil {
			t.Fatal(err)
		}
		if ents, _ := v.Entries(); len(ents) != 1 {
			t.Fatalf("the proposal's Ready holds %d entries", len(ents))
		}
		light, err := n.rn.AdvanceViewNext(v, n.storage)
		if err != nil {
			t.Fatal(err)
		}
		if !light.Valid() {
			t.Fatal("no light Ready after the entry's write")
		}
		ents, _ := light.Entries()
		committed, _ := light.CommittedEntries()
		if len(ents) != 0 || len(committed) != 1 || !bytes.Equal(committed[0].Data(), data) {
			t.Fatalf("light Ready: %d entries, committed %v", len(ents), committed)
		}
		if _, ok, _ := light.HardState(); ok {
			t.Fatal("a light Ready has no hard state to persist")
		}
		checkAppliedLast(t, n, light, committed[0].Index)
	}
}

// ReadyViewPersisted acknowledges the write it made: a single voter's
// proposal comes back committed in the view that carries it, its commit
// index in the storage (a restart claiming it applied is accepted), and
// advancing the view leaves nothing to do. ProposeReady does the proposal
// and the same in one crossing; a refused proposal is reported and takes
// nothing.
func TestReadyViewPersistedHandsOutWhatItsWriteCommitted(t *testing.T) {
	n := leadAlone(t)
	for i := 0; i < 4; i++ {
		data := []byte(fmt.Sprintf("fused-%d", i))
		var v ReadyView
		var err error
		if i%2 == 0 {
			if err := n.rn.Propose(data); err != nil {
				t.Fatal(err)
			}
			v, err = n.rn.ReadyViewPersisted(n.storage)
		} else {
			var perr error
			v, perr, err = n.rn.ProposeReady(data, n.storage)
			if perr != nil {
				t.Fatal(perr)
			}
		}
		if err != nil || !v.Valid() {
			t.Fatalf("no view (%v)", err)
		}
		ents, _ := v.Entries()
		committed, _ := v.CommittedEntries()
		if len(ents) != 1 || len(committed) != 1 || !bytes.Equal(committed[0].Data(), data) {
			t.Fatalf("view: %d entries, committed %v", len(ents), committed)
		}
		msgs, _ := v.Messages()
		if start, _ := v.PersistedStart(); start != len(msgs) {
			t.Fatalf("%d of %d messages still wait for the write", len(msgs)-start, len(msgs))
		}
		checkAppliedLast(t, n, v, committed[0].Index)
	}
	// With no leader the proposal is dropped: reported, nothing appended.
	fc := newTestCluster(t, 1, 2, 3)
	fc.settleChained()
	f := fc.nodes[2]
	last, err := f.storage.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	next, perr, err := f.rn.ProposeReady([]byte("x"), f.storage)
	if !errors.Is(perr, ErrProposalDropped) || err != nil {
		t.Fatalf("leaderless proposal: %v, %v", perr, err)
	}
	if next.Valid() {
		if ents, _ := next.Entries(); len(ents) != 0 {
			t.Fatal("a dropped proposal was appended")
		}
		if err := f.rn.AdvanceView(next); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := f.storage.LastIndex(); got != last {
		t.Fatalf("last index %d, was %d", got, last)
	}
	f.rn.Close()
	if _, perr, err := f.rn.ProposeReady([]byte("x"), f.storage); !errors.Is(perr, ErrClosed) || !errors.Is(err, ErrClosed) {
		t.Fatalf("closed node: %v, %v", perr, err)
	}
}

// ReadIndexReady requests a read and takes the Ready it left in one
// crossing: a single voter answers at once, so the ReadState is in that
// view; a three-voter leader's view carries the heartbeats that confirm
// it; without a leader the request is refused and nothing is taken.
func TestReadIndexReadyTakesTheReadsReady(t *testing.T) {
	n := leadAlone(t)
	v, rerr, err := n.rn.ReadIndexReady([]byte("r1"), n.storage)
	if rerr != nil || err != nil || !v.Valid() {
		t.Fatalf("read: %v, %v, valid %v", rerr, err, v.Valid())
	}
	rss, err := v.ReadStates()
	if err != nil || len(rss) != 1 || string(rss[0].RequestCtx()) != "r1" {
		t.Fatalf("read states %v (%v)", rss, err)
	}
	if err := n.rn.AdvanceView(v); err != nil {
		t.Fatal(err)
	}

	c := newTestCluster(t, 1, 2, 3)
	c.settleChained()
	l := c.nodes[1]
	if err := l.rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	c.settleChained()
	if l.rn.BasicStatus().RaftState != StateLeader {
		t.Fatal("node 1 did not win")
	}
	v, rerr, err = l.rn.ReadIndexReady([]byte("r2"), l.storage)
	if rerr != nil || err != nil || !v.Valid() {
		t.Fatalf("leader read: %v, %v, valid %v", rerr, err, v.Valid())
	}
	msgs, _ := v.Messages()
	hb := 0
	for i := range msgs {
		if msgs[i].Type == raftpb.MsgHeartbeat {
			hb++
		}
	}
	if hb != 2 {
		t.Fatalf("%d heartbeats in the read's Ready, want 2", hb)
	}
	if err := l.rn.AdvanceView(v); err != nil {
		t.Fatal(err)
	}

	f := newTestCluster(t, 1, 2, 3).nodes[2]
	v, rerr, err = f.rn.ReadIndexReady([]byte("r3"), f.storage)
	if !errors.Is(rerr, ErrNoLeader) || err != nil {
		t.Fatalf("leaderless read: %v, %v", rerr, err)
	}
	if v.Valid() {
		if rss, _ := v.ReadStates(); len(rss) != 0 {
			t.Fatal("a refused read was answered")
		}
		if err := f.rn.AdvanceView(v); err != nil {
			t.Fatal(err)
		}
	}
}

// leadAlone is a single voter that won its election, its Readies handled.
func leadAlone(t *testing.T) *testNode {
	t.Helper()
	c := newTestCluster(t, 1)
	n := c.nodes[1]
	c.settleChained()
	if err := n.rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	c.settleChained()
	if c.leader() != 1 {
		t.Fatal("node 1 did not win")
	}
	return n
}

// checkAppliedLast: the storage holds index as committed (a restart
// claiming it applied is accepted), and advancing v, which handed index
// out last, reports it applied and leaves nothing to do.
func checkAppliedLast(t *testing.T, n *testNode, v ReadyView, index uint64) {
	t.Helper()
	cfg := testConfig(1, n.storage)
	cfg.Applied = index
	again, err := NewRawNode(cfg)
	if err != nil {
		t.Fatalf("restart with applied %d: %v", index, err)
	}
	_ = again.Close()
	next, err := n.rn.AdvanceViewNext(v, n.storage)
	if err != nil {
		t.Fatal(err)
	}
	if next.Valid() || n.rn.HasReady() {
		t.Fatal("work left after the view")
	}
	if st := n.rn.BasicStatus(); st.Applied != index || st.Commit != index {
		t.Fatalf("applied %d, commit %d; want %d", st.Applied, st.Commit, index)
	}
}
