package raftlet

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// checkHR fails when the has_ready a node remembers differs from the
// library's (read without the cache).
func checkHR(t testing.TB, n *testNode) {
	t.Helper()
	if n.rn.h.p == nil {
		return
	}
	want, err := cNodeHasReady(n.rn.h.p)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.rn.HasReady(); got != want {
		t.Fatalf("node %d: HasReady %v, the library says %v", n.id, got, want)
	}
}

// handleView runs one Ready of n through the zero-copy API: ReadyView
// (or ReadyViewPersisted, every other time), checking each view against
// what it decodes to.
func (c *testCluster) handleView(n *testNode, persisted bool) bool {
	t := c.t
	checkHR(t, n)
	if !n.rn.HasReady() {
		return false
	}
	var v ReadyView
	var err error
	if persisted {
		v, err = n.rn.ReadyViewPersisted(n.storage)
	} else {
		v, err = n.rn.ReadyView()
		if err == nil {
			err = n.storage.AppendReadyView(v)
		}
	}
	if err != nil {
		t.Fatalf("node %d: %v", n.id, err)
	}
	c.readView(n, v)
	if err := n.rn.AdvanceView(v); err != nil {
		t.Fatalf("node %d: AdvanceView: %v", n.id, err)
	}
	checkHR(t, n)
	return true
}

// readView handles the Ready v of n (persisted already), checking each
// view against what it decodes to: messages into the mailbox, entries
// applied.
func (c *testCluster) readView(n *testNode, v ReadyView) {
	t := c.t
	if _, _, ok, _ := v.SnapshotMetadata(); ok {
		s, err := v.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		n.snaps++
		n.cs = s.Metadata.ConfState
		if d, _ := v.SnapshotData(); !bytes.Equal(d, s.Data) {
			t.Fatal("SnapshotData differs from the decoded snapshot")
		}
	}
	msgs, err := v.Messages()
	if err != nil {
		t.Fatal(err)
	}
	if ps, _ := v.PersistedStart(); ps > len(msgs) {
		t.Fatalf("PersistedStart %d of %d", ps, len(msgs))
	}
	for i := range msgs {
		m := &msgs[i]
		dm, err := m.Message()
		if err != nil {
			t.Fatal(err)
		}
		if dm.To != m.To || dm.From != m.From || dm.Type != m.Type {
			t.Fatalf("message view %d/%d/%v decodes to %d/%d/%v", m.To, m.From, m.Type, dm.To, dm.From, dm.Type)
		}
		c.mailbox = append(c.mailbox, append([]byte(nil), m.Data()...))
		if m.Type == raftpb.MsgSnap {
			n.rn.ReportSnapshot(m.To, SnapshotFinish)
		}
	}
	ents, err := v.CommittedEntries()
	if err != nil {
		t.Fatal(err)
	}
	for i := range ents {
		e := &ents[i]
		if got := e.Entry(); got.Index != e.Index || !bytes.Equal(got.Data, e.Data()) {
			t.Fatal("EntryView.Entry differs from the view")
		}
		switch e.Type {
		case raftpb.EntryNormal:
			if len(e.Data()) > 0 {
				n.applied = append(n.applied, append([]byte(nil), e.Data()...))
			}
		case raftpb.EntryConfChange:
			var cc raftpb.ConfChange
			if err := cc.Unmarshal(e.Data()); err != nil {
				t.Fatal(err)
			}
			n.cs = *n.rn.ApplyConfChange(cc)
		case raftpb.EntryConfChangeV2:
			var cc raftpb.ConfChangeV2
			if err := cc.Unmarshal(e.Data()); err != nil {
				t.Fatal(err)
			}
			n.cs = *n.rn.ApplyConfChange(cc)
		}
	}
	rss, err := v.ReadStates()
	if err != nil {
		t.Fatal(err)
	}
	for i := range rss {
		n.reads = append(n.reads, ReadState{Index: rss[i].Index, RequestCtx: append([]byte(nil), rss[i].RequestCtx()...)})
	}
	evs, err := v.MembershipEvents()
	if err != nil {
		t.Fatal(err)
	}
	n.events = append(n.events, evs...)
}

// settleView is settle through handleView, each node's messages stepped
// in one StepBatch.
func (c *testCluster) settleView() {
	for i := 0; i < 10000; i++ {
		work := false
		for _, id := range c.ids() {
			if c.handleView(c.nodes[id], i%2 == 0) {
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
			if _, ok := c.nodes[h.To]; !ok || c.down[h.To] || c.down[h.From] {
				continue
			}
			byDest[h.To] = append(byDest[h.To], b)
		}
		for _, id := range c.ids() {
			if bs := byDest[id]; len(bs) > 0 {
				_ = c.nodes[id].rn.StepBatch(bs)
				checkHR(c.t, c.nodes[id])
			}
		}
		if !work && len(box) == 0 {
			return
		}
	}
	c.t.Fatal("cluster did not settle")
}

// payload is proposal i of a run: sizes on both sides of pinAbove, so
// that batches are packed or pinned.
func payload(i int) []byte {
	size := 1 + i*613%(3*pinAbove)
	p := make([]byte, size)
	for j := range p {
		p[j] = byte(i + j)
	}
	return p
}

// The zero-copy API and the batch calls drive a cluster to the same
// result as the typed API, with the has_ready cache right at every step.
func TestViewsAndBatchesMatchTheTypedAPI(t *testing.T) {
	typed := newTestCluster(t, 1, 2, 3)
	view := newTestCluster(t, 1, 2, 3)
	typed.elect(1)
	view.settleView()
	if err := view.nodes[1].rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	view.settleView()
	if view.leader() != 1 {
		t.Fatal("node 1 did not win")
	}
	var want [][]byte
	for round := 0; round < 12; round++ {
		var batch [][]byte
		for i := 0; i < 1+round%5; i++ {
			p := payload(round*10 + i)
			batch = append(batch, p)
			want = append(want, p)
			if err := typed.nodes[1].rn.Propose(p); err != nil {
				t.Fatal(err)
			}
		}
		if round%2 == 0 {
			if err := view.nodes[1].rn.ProposeBatch(batch); err != nil {
				t.Fatal(err)
			}
		} else {
			for _, p := range batch {
				if err := view.nodes[1].rn.Propose(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		checkHR(t, view.nodes[1])
		// Mutating the batch after the call must not matter: the library
		// copied it.
		for _, p := range batch {
			p[0] ^= 0xff
		}
		for _, p := range want[len(want)-len(batch):] {
			p[0] ^= 0xff
		}
		typed.settle()
		view.settleView()
		if round%3 == 0 {
			ctx := []byte(fmt.Sprintf("read-%d", round))
			if err := view.nodes[1].rn.ReadIndex(ctx); err != nil {
				t.Fatal(err)
			}
			view.settleView()
			if r := view.nodes[1].reads; len(r) == 0 || !bytes.Equal(r[len(r)-1].RequestCtx, ctx) {
				t.Fatalf("read %q not answered: %v", ctx, r)
			}
		}
		for i := 0; i < 3; i++ {
			for _, id := range view.ids() {
				view.nodes[id].rn.Tick()
				checkHR(t, view.nodes[id])
			}
			view.settleView()
		}
	}
	for _, c := range []*testCluster{typed, view} {
		for _, id := range c.ids() {
			got := c.nodes[id].applied
			if len(got) != len(want) {
				t.Fatalf("node %d applied %d entries, want %d", id, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("node %d entry %d differs", id, i)
				}
			}
		}
	}
}

// A ReadyView is refused once advanced, and so is a typed Ready whose
// handle was reused by a later Ready (the generation check).
func TestViewsAreStaleAfterAdvance(t *testing.T) {
	c := newTestCluster(t, 1)
	n := c.nodes[1]
	c.elect(1)
	if err := n.rn.Propose([]byte("first")); err != nil {
		t.Fatal(err)
	}
	v, err := n.rn.ReadyViewPersisted(n.storage)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Valid() {
		t.Fatal("a fresh view is not valid")
	}
	if err := n.rn.AdvanceView(v); err != nil {
		t.Fatal(err)
	}
	if v.Valid() {
		t.Fatal("an advanced view is valid")
	}
	stale := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrReadyStale) {
			t.Fatalf("%s after Advance: %v, want ErrReadyStale", what, err)
		}
	}
	_, err = v.Entries()
	stale("Entries", err)
	_, err = v.CommittedEntries()
	stale("CommittedEntries", err)
	_, err = v.Messages()
	stale("Messages", err)
	_, err = v.ReadStates()
	stale("ReadStates", err)
	_, _, err = v.HardState()
	stale("HardState", err)
	_, _, err = v.SoftState()
	stale("SoftState", err)
	_, err = v.MustSync()
	stale("MustSync", err)
	_, _, _, err = v.SnapshotMetadata()
	stale("SnapshotMetadata", err)
	_, err = v.SnapshotData()
	stale("SnapshotData", err)
	_, err = v.Snapshot()
	stale("Snapshot", err)
	_, err = v.MembershipEvents()
	stale("MembershipEvents", err)
	_, err = v.PersistedStart()
	stale("PersistedStart", err)
	stale("AdvanceView", n.rn.AdvanceView(v))
	stale("AppendReadyView", n.storage.AppendReadyView(v))

	// The next ready reuses the handle: the old view stays stale.
	if err := n.rn.Propose([]byte("second")); err != nil {
		t.Fatal(err)
	}
	if !n.rn.HasReady() {
		t.Fatal("no second ready")
	}
	rd := n.rn.Ready()
	// Handles come from a pool: usually rd reuses v's (not always: the
	// race detector drops pooled objects at random).
	if v.Valid() {
		t.Fatal("the old view came back to life with its handle")
	}
	if err := n.storage.AppendReady(rd); err != nil {
		t.Fatal(err)
	}
	n.rn.Advance(rd)
	v2, err := n.rn.ReadyView() // reuses the handle of rd
	if err != nil {
		t.Fatal(err)
	}
	_, err = rd.EncodedMessages()
	stale("typed EncodedMessages", err)
	stale("typed AppendReady", n.storage.AppendReady(rd))
	stale("typed TryAdvance", n.rn.TryAdvance(rd))
	// Another node's view is foreign.
	other := newTestCluster(t, 1).nodes[1]
	if err := other.rn.AdvanceView(v2); !errors.Is(err, ErrReadyForeign) {
		t.Fatalf("foreign view: %v", err)
	}
	if err := n.storage.AppendReadyView(v2); err != nil {
		t.Fatal(err)
	}
	if err := n.rn.AdvanceView(v2); err != nil {
		t.Fatal(err)
	}
	// A view pending at Close is stale afterwards.
	if err := n.rn.Propose([]byte("x")); err != nil {
		t.Fatal(err)
	}
	v3, err := n.rn.ReadyView()
	if err != nil {
		t.Fatal(err)
	}
	n.rn.Close()
	if v3.Valid() {
		t.Fatal("a view outlived its node's Close")
	}
	_, err = v3.Entries()
	stale("Entries after Close", err)
	if _, err := n.rn.ReadyView(); !errors.Is(err, ErrClosed) {
		t.Fatalf("ReadyView on a closed node: %v", err)
	}
	if _, err := other.rn.ReadyViewPersisted(nil); !errors.Is(err, ErrNullArg) {
		t.Fatalf("ReadyViewPersisted(nil): %v", err)
	}
}

// StepBatch steps every message even when one fails and returns the first
// failure; ProposeBatch refuses an empty batch and proposes nothing
// without a leader.
func TestBatchErrors(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	f := c.nodes[2]
	// Heartbeats from the leader, with garbage between them; a big one
	// (a context over pinAbove) takes the pinned path.
	term := f.rn.BasicStatus().Term
	for _, big := range []int{0, 3 * pinAbove} {
		m := raftpb.Message{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: term, Context: make([]byte, big)}
		good, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		err = f.rn.StepBatch([][]byte{{0xff, 0xff}, good, nil})
		if !errors.Is(err, ErrDecode) {
			t.Fatalf("garbage first: %v", err)
		}
		if !f.rn.HasReady() {
			t.Fatal("the good message after the garbage was not stepped")
		}
		checkHR(t, f)
		c.settle()
	}
	if err := f.rn.StepBatch(nil); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
	if err := c.nodes[1].rn.ProposeBatch(nil); !errors.Is(err, ErrProposalDropped) {
		t.Fatalf("empty proposal batch: %v", err)
	}
	lone := newTestCluster(t, 7).nodes[7]
	if err := lone.rn.ProposeBatch([][]byte{[]byte("a"), make([]byte, 3*pinAbove)}); !errors.Is(err, ErrProposalDropped) {
		t.Fatalf("no leader: %v", err)
	}
	lone.rn.Close()
	if err := lone.rn.StepBatch([][]byte{{1}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
	if err := lone.rn.ProposeBatch([][]byte{{1}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
	// A batch of many items takes the allocated path in C (over 64).
	var many [][]byte
	for i := 0; i < 300; i++ {
		many = append(many, []byte(fmt.Sprintf("m%d", i)))
	}
	if err := c.nodes[1].rn.ProposeBatch(many); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if got := c.nodes[3].applied; len(got) < 300 || string(got[len(got)-1]) != "m299" {
		t.Fatalf("the 300-item batch was not applied: %d", len(got))
	}
}

// A TickSet ticks every node in one call and says which have a Ready, as
// the nodes themselves do; Close and Remove take a node out.
func TestTickSet(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.elect(1)
	var nodes []*RawNode
	for _, id := range c.ids() {
		nodes = append(nodes, c.nodes[id].rn)
	}
	set, err := NewTickSet(nodes...)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Add(nodes[0]); err == nil {
		t.Fatal("a node was added twice")
	}
	if _, err := NewTickSet(nodes[1]); err == nil {
		t.Fatal("a node joined a second set")
	}
	sawBusy := false
	for round := 0; round < 30; round++ {
		if err := set.Tick(); err != nil {
			t.Fatal(err)
		}
		busy := set.Busy(nil)
		k := 0
		for i := 0; i < set.Len(); i++ {
			rn := set.Node(i)
			want, err := cNodeHasReady(rn.h.p)
			if err != nil {
				t.Fatal(err)
			}
			if set.HasReady(i) != want || rn.HasReady() != want {
				t.Fatalf("round %d node %d: set says %v, node %v, library %v", round, i, set.HasReady(i), rn.HasReady(), want)
			}
			if want {
				if k >= len(busy) || busy[k] != i {
					t.Fatalf("Busy %v misses %d", busy, i)
				}
				k++
				sawBusy = true
			}
		}
		if k != len(busy) {
			t.Fatalf("Busy %v has extra nodes", busy)
		}
		c.settle()
		if c.leader() != 1 {
			t.Fatal("the leader changed under regular ticks")
		}
	}
	if !sawBusy {
		t.Fatal("the leader never had a Ready after a tick")
	}
	if set.HasReady(-1) || set.HasReady(1000) {
		t.Fatal("HasReady out of range")
	}
	// Closing a node takes it out of the set; Tick goes on with the rest.
	c.nodes[2].rn.Close()
	if set.Len() != 2 {
		t.Fatalf("Len %d after Close", set.Len())
	}
	if !set.Remove(c.nodes[3].rn) || set.Remove(c.nodes[3].rn) {
		t.Fatal("Remove")
	}
	if err := set.Tick(); err != nil {
		t.Fatal(err)
	}
	if set.Len() != 1 || set.Node(0) != c.nodes[1].rn {
		t.Fatal("the wrong node is left")
	}
	if err := set.Add(c.nodes[2].rn); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed node added: %v", err)
	}
	if err := set.Add(c.nodes[3].rn); err != nil {
		t.Fatalf("re-adding a removed node: %v", err)
	}
	empty, _ := NewTickSet()
	if err := empty.Tick(); err != nil || len(empty.Busy(nil)) != 0 {
		t.Fatal("empty set")
	}
	runtime.KeepAlive(set)
}

// Ready views and batches allocate nothing per call once warm.
func TestViewPathAllocatesNothing(t *testing.T) {
	c := newTestCluster(t, 1)
	n := c.nodes[1]
	c.elect(1)
	data := [][]byte{[]byte("a"), []byte("bb")}
	loop := func() {
		if err := n.rn.ProposeBatch(data); err != nil {
			t.Fatal(err)
		}
		for n.rn.HasReady() {
			v, err := n.rn.ReadyViewPersisted(n.storage)
			if err != nil {
				t.Fatal(err)
			}
			ents, _ := v.CommittedEntries()
			_ = ents
			if err := n.rn.AdvanceView(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	loop()
	if raceEnabled {
		t.Skip("the race detector drops pooled objects: allocations are not counted under it")
	}
	if a := testing.AllocsPerRun(200, loop); a != 0 {
		t.Fatalf("%.1f Go allocations per propose/ready/advance loop, want 0", a)
	}
}

// crossings counts the cgo calls f makes.
func crossings(f func()) int64 {
	before := runtime.NumCgoCall()
	f()
	return runtime.NumCgoCall() - before
}

// A view whose advance changes nothing in the node (taken persisted, its
// write acknowledged, nothing left to apply: a read state) is advanced
// without a cgo crossing, by AdvanceView and by AdvanceViewNext when the
// node is known to have no Ready; it is stale at once. A single voter's
// proposal, whose view has an entry to apply and nothing after it, is
// advanced without a crossing too, its report owed to the node's next
// call (TestApplyOnlyAdvanceIsOwed), which reads the entry applied.
// The ready released without a crossing is freed by the node's next call
// that takes a Ready, whose write is still acknowledged at once (the
// entry comes back committed in the view that carries it), and by Close.
func TestNoopAdvanceCostsNoCrossing(t *testing.T) {
	c := newTestCluster(t, 1)
	n := c.nodes[1]
	c.elect(1)
	rn, s := n.rn, n.storage
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// proposeApplied proposes data and advances its view, without a
	// crossing; the next call reads the entry applied.
	proposeApplied := func(data string) {
		t.Helper()
		v, index := proposeOwnView(t, rn, s, data)
		if calls := crossings(func() {
			next, err := rn.AdvanceViewNext(v, s)
			check("AdvanceViewNext", err)
			if next.Valid() {
				t.Fatal("a Ready after a single voter's proposal")
			}
		}); calls != 0 {
			t.Fatalf("a single voter's proposal's view was advanced with %d crossings, want 0", calls)
		}
		if got := rn.BasicStatus().Applied; got != index {
			t.Fatalf("applied %d after advancing entry %d", got, index)
		}
	}
	// readView requests a read and returns its view, the read answered.
	readView := func(ctx string) ReadyView {
		t.Helper()
		v, rerr, err := rn.ReadIndexReady([]byte(ctx), s)
		check("ReadIndexReady", rerr)
		check("ReadIndexReady", err)
		rss, err := v.ReadStates()
		check("ReadStates", err)
		if len(rss) != 1 || string(rss[0].RequestCtx()) != ctx {
			t.Fatalf("read %q: %d read states", ctx, len(rss))
		}
		return v
	}
	proposeApplied("a")
	applied := rn.BasicStatus().Applied

	v := readView("r1")
	if calls := crossings(func() {
		next, err := rn.AdvanceViewNext(v, s)
		check("AdvanceViewNext", err)
		if next.Valid() {
			t.Fatal("a Ready after a read")
		}
		if rn.HasReady() {
			t.Fatal("HasReady after a read's view was advanced")
		}
	}); calls != 0 {
		t.Fatalf("a read's view was advanced with %d crossings, want 0", calls)
	}
	if v.Valid() {
		t.Fatal("a view advanced without a crossing is valid")
	}
	if _, err := v.ReadStates(); !errors.Is(err, ErrReadyStale) {
		t.Fatalf("ReadStates of the advanced view: %v, want ErrReadyStale", err)
	}
	if err := rn.AdvanceView(v); !errors.Is(err, ErrReadyStale) {
		t.Fatalf("the view advanced again: %v, want ErrReadyStale", err)
	}

	v = readView("r2")
	if calls := crossings(func() { check("AdvanceView", rn.AdvanceView(v)) }); calls != 0 {
		t.Fatalf("AdvanceView of a read's view: %d crossings, want 0", calls)
	}
	if got := rn.BasicStatus().Applied; got != applied {
		t.Fatalf("applied moved from %d to %d on reads", applied, got)
	}
	// The released ready is freed by the next take, which is acknowledged
	// at once as after an advance.
	proposeApplied("b")

	// A released ready waits for the next crossing of any node that takes
	// a Ready, not its own node's: an idle node keeps none.
	// More than fit in the slots wait in the list; one crossing frees
	// them all.
	v = readView("r3")
	var more []*testNode
	var views []ReadyView
	for i := 0; i < releaseSlots+2; i++ {
		c := newTestCluster(t, 1)
		c.elect(1)
		n := c.nodes[1]
		v, rerr, err := n.rn.ReadIndexReady([]byte("s"), n.storage)
		check("ReadIndexReady", rerr)
		check("ReadIndexReady", err)
		more, views = append(more, n), append(views, v)
	}
	check("AdvanceView", rn.AdvanceView(v))
	if got := releasedCount(); got != 1 {
		t.Fatalf("%d readies released, want 1", got)
	}
	for i, n := range more {
		check("AdvanceView", n.rn.AdvanceView(views[i]))
	}
	if got, listed := releasedCount(), int(released.n.Load()); got != len(more)+1 || listed != got-releaseSlots {
		t.Fatalf("%d readies released (%d in the list), want %d (%d)", got, listed, len(more)+1, len(more)+1-releaseSlots)
	}
	other := newTestCluster(t, 2).nodes[2]
	if _, err := other.rn.ReadyViewPersisted(other.storage); err != nil {
		t.Fatal(err)
	}
	if got := releasedCount(); got != 0 {
		t.Fatalf("another node's Ready left %d released readies", got)
	}
	// A TickSet's Tick frees them too, and so does Close.
	set, err := NewTickSet()
	check("NewTickSet", err)
	check("Add", set.Add(other.rn))
	v = readView("r4")
	check("AdvanceView", rn.AdvanceView(v))
	check("Tick", set.Tick())
	if got := releasedCount(); got != 0 {
		t.Fatalf("a Tick left %d released readies", got)
	}
	v = readView("r5")
	check("AdvanceView", rn.AdvanceView(v))
	check("Close", rn.Close())
	if got := releasedCount(); got != 0 {
		t.Fatalf("Close left %d released readies", got)
	}
}

// TestReleasedReadiesAcrossGoroutines drives single-voter nodes from
// several goroutines at once, each releasing its read views without a
// crossing (so that the released-ready slots, their overflow list and the
// handle slots are shared by all of them) and checking that every view
// it is handed is its own: a handle or a C ready given to two goroutines
// would show another node's read or fail as stale (and the race detector
// would see it).
func TestReleasedReadiesAcrossGoroutines(t *testing.T) {
	const workers, rounds = 6, 300
	nodes := make([]*testNode, workers)
	for i := range nodes {
		c := newTestCluster(t, 1)
		c.elect(1)
		nodes[i] = c.nodes[1]
	}
	errs := make(chan error, workers)
	for w, n := range nodes {
		go func() {
			errs <- func() error {
				var held []ReadyView
				for r := 0; r < rounds; r++ {
					ctx := fmt.Sprintf("w%d-r%d", w, r)
					v, rerr, err := n.rn.ReadIndexReady([]byte(ctx), n.storage)
					if rerr != nil || err != nil {
						return fmt.Errorf("%s: ReadIndexReady: %v, %v", ctx, rerr, err)
					}
					rss, err := v.ReadStates()
					if err != nil || len(rss) != 1 || string(rss[0].RequestCtx()) != ctx {
						return fmt.Errorf("%s: the view reads %d states (%v)", ctx, len(rss), err)
					}
					// Every third view is kept past the next read and then
					// advanced: a crossing in between, so it is no longer
					// the node's only pending ready and takes a crossing.
					if r%3 == 0 {
						held = append(held, v)
						continue
					}
					if err := n.rn.AdvanceView(v); err != nil {
						return fmt.Errorf("%s: AdvanceView: %v", ctx, err)
					}
					for _, h := range held {
						if err := n.rn.AdvanceView(h); err != nil && !errors.Is(err, ErrReadyStale) {
							return fmt.Errorf("%s: AdvanceView of a held view: %v", ctx, err)
						}
					}
					held = held[:0]
				}
				return nil
			}()
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	freeReleased()
	if got := releasedCount(); got != 0 {
		t.Fatalf("%d readies left released after a crossing", got)
	}
}

// An apply-only view (taken persisted, its write acknowledged: advancing
// it only reports its entries applied) is released without a crossing
// when the library said the node has no Ready once they are reported
// (idle_after_apply) and nothing reached the node since the take. The
// report is owed and made first thing in the node's next crossing: a
// single voter's proposal costs one crossing, and every call sees the
// node as an advance would have left it (Status, a proposal, a Tick of a
// TickSet, Close). A view whose entries the applying budget cut short,
// or one after which the node was called, is advanced by a crossing.
func TestApplyOnlyAdvanceIsOwed(t *testing.T) {
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	c := newTestCluster(t, 1)
	c.elect(1)
	n := c.nodes[1]
	rn, s := n.rn, n.storage
	applied := rn.BasicStatus().Applied

	proposal := func(data string) (ReadyView, uint64) {
		t.Helper()
		return proposeOwnView(t, rn, s, data)
	}

	// The propose/apply loop: one crossing per proposal.
	const rounds = 50
	var last uint64
	if calls := crossings(func() {
		for i := 0; i < rounds; i++ {
			v, index := proposal(fmt.Sprintf("p%d", i))
			next, err := rn.AdvanceViewNext(v, s)
			check("AdvanceViewNext", err)
			if next.Valid() || rn.HasReady() {
				t.Fatal("a Ready after a single voter's proposal")
			}
			if v.Valid() {
				t.Fatal("an advanced view is valid")
			}
			last = index
		}
	}); calls != rounds {
		t.Fatalf("%d proposals took %d crossings, want one each", rounds, calls)
	}
	if rn.applyOwed != last {
		t.Fatalf("owed %d, want %d", rn.applyOwed, last)
	}
	// Every call sees the entries applied.
	if got := rn.BasicStatus().Applied; got != last || got != applied+rounds {
		t.Fatalf("applied %d, want %d", got, last)
	}
	if rn.applyOwed != 0 {
		t.Fatal("still owed after a call of the node")
	}

	// A call between the take and the advance: the view says nothing of
	// the node any more, so the advance crosses.
	v, index := proposal("between")
	rn.Tick()
	if calls := crossings(func() { check("AdvanceView", rn.AdvanceView(v)) }); calls == 0 {
		t.Fatal("a view was released without a crossing after a Tick")
	}
	if got := rn.BasicStatus().Applied; got != index {
		t.Fatalf("applied %d, want %d", got, index)
	}

	// In a TickSet the set's Tick makes the report, in its one crossing.
	set, err := NewTickSet(rn)
	check("NewTickSet", err)
	v, index = proposal("in a set")
	check("AdvanceView", rn.AdvanceView(v))
	if rn.applyOwed != index {
		t.Fatalf("owed %d, want %d", rn.applyOwed, index)
	}
	if calls := crossings(func() { check("Tick", set.Tick()) }); calls != 1 {
		t.Fatalf("a Tick with an owed report took %d crossings, want 1", calls)
	}
	if rn.applyOwed != 0 {
		t.Fatal("the set's Tick left the report owed")
	}
	if got := rn.BasicStatus().Applied; got != index {
		t.Fatalf("applied %d after the set's Tick, want %d", got, index)
	}
	set.Remove(rn)

	// Owed when the node closes: nothing to report to.
	v, _ = proposal("closing")
	check("AdvanceView", rn.AdvanceView(v))
	check("Close", rn.Close())

	// The applying budget cuts a batch short: each view hands out one
	// entry, the others wait, and the report releases the next.
	st := NewMemoryStorage()
	cfg := testConfig(1, st)
	cfg.MaxCommittedSizePerReady = 1
	b, err := NewRawNode(cfg)
	check("NewRawNode", err)
	defer b.Close()
	check("Bootstrap", b.Bootstrap([]Peer{{ID: 1}}))
	drain := func() {
		for b.HasReady() {
			v, err := b.ReadyViewPersisted(st)
			check("ReadyViewPersisted", err)
			check("AdvanceView", b.AdvanceView(v))
		}
	}
	drain()
	check("Campaign", b.Campaign())
	drain()
	if b.BasicStatus().RaftState != StateLeader {
		t.Fatal("the single voter is not the leader")
	}
	check("ProposeBatch", b.ProposeBatch([][]byte{[]byte("x"), []byte("y"), []byte("z")}))
	var got []string
	for b.HasReady() {
		v, err := b.ReadyViewPersisted(st)
		check("ReadyViewPersisted", err)
		ents, err := v.CommittedEntries()
		check("CommittedEntries", err)
		for i := range ents {
			got = append(got, string(ents[i].Data()))
		}
		more := len(got) < 3
		calls := crossings(func() { check("AdvanceView", b.AdvanceView(v)) })
		if more && calls == 0 {
			t.Fatalf("a view cut short by the budget was released without a crossing (%d entries so far)", len(got))
		}
		if !more && calls != 0 {
			t.Fatalf("the last view was advanced with %d crossings, want 0", calls)
		}
	}
	if strings.Join(got, "") != "xyz" {
		t.Fatalf("applied %q, want x, y, z", got)
	}
	if st, last := b.BasicStatus().Applied, mustLastIndex(t, st); st != last {
		t.Fatalf("applied %d of %d", st, last)
	}
}

func mustLastIndex(t *testing.T, s *MemoryStorage) uint64 {
	t.Helper()
	i, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// proposeOwnView proposes data on rn, a single voter, with ProposeReady
// and returns the view, which must commit the entry at once, and the
// entry's index.
func proposeOwnView(t *testing.T, rn *RawNode, s *MemoryStorage, data string) (ReadyView, uint64) {
	t.Helper()
	v, perr, err := rn.ProposeReady([]byte(data), s)
	if perr != nil || err != nil {
		t.Fatalf("ProposeReady: %v, %v", perr, err)
	}
	ents, err := v.CommittedEntries()
	if err != nil {
		t.Fatalf("CommittedEntries: %v", err)
	}
	if len(ents) != 1 || string(ents[0].Data()) != data {
		t.Fatalf("the view of %q commits %d entries, want its own at once", data, len(ents))
	}
	return v, ents[0].Index
}
