package bench

import (
	"encoding/binary"

	raftlet "github.com/raftlet/raftlet/bindings/go"
	"go.etcd.io/raft/v3/raftpb"
)

// raftletView is raftlet through its Go binding's zero-copy API: Ready
// read in place and persisted to the MemoryStorage in the same crossing
// (RawNode.ReadyViewPersisted, payloads not copied), messages sent as the
// library encoded them, from the Ready's memory (the view advanced once
// they were delivered: Sent), the
// messages for one node stepped in one crossing (StepBatch), batch
// proposals in one crossing (ProposeBatch) and the B4 sweep through a
// TickSet (one crossing for all groups). A call that ends a Ready cycle
// (AdvanceViewNext) or steps a network read (StepBatchReady) takes the
// next Ready, persisted, in its own crossing when there is one: the same
// Ready the next Cycle would take, as nothing reaches the node in
// between (StepBatchReady, ProposeReady and ReadIndexReady are used only
// when no Ready is held). A Ready taken persisted has its write
// acknowledged in the same crossing (raftlet_node_ready_persisted): what
// the write made available, such as a single voter's committed entry, is
// in that view.
type raftletView struct {
	rn      *raftlet.RawNode
	storage *raftlet.MemoryStorage
	// The last Ready whose messages were sent straight from its memory:
	// advanced (which releases it and every earlier one) by Sent, once
	// the transport is done with them. Invalid when none is held.
	held raftlet.ReadyView
	// The next Ready, taken and persisted by the crossing that ended the
	// last cycle or stepped the last messages: what Cycle handles next.
	// Invalid when none was waiting.
	next raftlet.ReadyView
	// Payloads handed out by Payloads and not yet proposed, in order.
	pending []raftlet.Payload
}

// inPlaceMin is the smallest payload this host has the library allocate
// (raftlet.NewPayloads) and proposes without a copy: just above the
// library's MAX_INLINE_PAYLOAD (512 bytes). Up to that size the library
// keeps a payload in one allocation with its reference count, so it
// would copy one allocated in place again, and the copy from Go memory
// is the cheaper way; above it a payload allocated in place is kept as
// it is. (It was 4 KiB: at 1 KiB, in place measured 1.07x-1.11x the
// entries/s of the copy, B1batch and B1, five runs each.)
const inPlaceMin = 513

// Payloads: large payloads in the library's memory, filled in place and
// proposed without a copy; small ones in Go memory.
func (n *raftletView) Payloads(k, size int) [][]byte {
	if size < inPlaceMin {
		return goPayloads(k, size)
	}
	sizes := make([]int, k)
	for i := range sizes {
		sizes[i] = size
	}
	ps, err := raftlet.NewPayloads(sizes...)
	if err != nil {
		panic(err)
	}
	n.pending = append(n.pending, ps...)
	out := make([][]byte, k)
	for i := range ps {
		out[i] = ps[i].Data
	}
	return out
}

// taken returns the pending payloads that datas are, in order, and drops
// them from pending; ok is false when they are not the next pending ones
// (Go memory: proposed by copy instead).
func (n *raftletView) taken(datas [][]byte) (ps []raftlet.Payload, ok bool) {
	if len(datas) == 0 || len(datas) > len(n.pending) {
		return nil, false
	}
	for i, d := range datas {
		p := n.pending[i].Data
		if len(d) == 0 || len(p) == 0 || &d[0] != &p[0] {
			return nil, false
		}
	}
	ps = n.pending[:len(datas)]
	n.pending = n.pending[len(datas):]
	if len(n.pending) == 0 {
		n.pending = n.pending[:0:0]
	}
	return ps, true
}

func newRaftletView(id uint64, voters []uint64) node {
	n := newRaftletGo(id, voters).(*raftletNode)
	return &raftletView{rn: n.rn, storage: n.storage}
}

func (n *raftletView) Campaign() {
	if err := n.rn.Campaign(); err != nil {
		panic(err)
	}
}

func (n *raftletView) Propose(data []byte) {
	if ps, ok := n.taken([][]byte{data}); ok {
		if err := n.rn.ProposePayloads(ps); err != nil {
			panic(err)
		}
		return
	}
	if n.held.Valid() || n.next.Valid() {
		if err := n.rn.Propose(data); err != nil {
			panic(err)
		}
		return
	}
	// Nothing held: the Ready the proposal leaves is taken (persisted,
	// its write acknowledged) in the same crossing.
	v, perr, err := n.rn.ProposeReady(data, n.storage)
	if perr != nil {
		panic(perr)
	}
	if err != nil {
		panic(err)
	}
	n.next = v
}

func (n *raftletView) ProposeBatch(payloads [][]byte) bool {
	if ps, ok := n.taken(payloads); ok {
		if err := n.rn.ProposePayloads(ps); err != nil {
			panic(err)
		}
		return true
	}
	if err := n.rn.ProposeBatch(payloads); err != nil {
		panic(err)
	}
	return true
}

func (n *raftletView) ReadIndex(ctx uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], ctx)
	if n.held.Valid() || n.next.Valid() {
		if err := n.rn.ReadIndex(b[:]); err != nil {
			panic(err)
		}
		return
	}
	// Nothing held: the Ready the request leaves (the heartbeats that
	// confirm it) is taken, persisted, in the same crossing.
	v, rerr, err := n.rn.ReadIndexReady(b[:], n.storage)
	if rerr != nil {
		panic(rerr)
	}
	if err != nil {
		panic(err)
	}
	n.next = v
}

func (n *raftletView) Tick() { n.rn.Tick() }

func (n *raftletView) Step(b []byte) { _ = n.rn.StepBytes(b) }

// StepMany: the messages of a peer's network read, in one crossing
// (errors, as for Step, are a network's: dropped).
func (n *raftletView) StepMany(bs [][]byte) {
	if n.held.Valid() || n.next.Valid() {
		_ = n.rn.StepBatch(bs)
		return
	}
	// Nothing held: the Ready these messages leave is taken (and
	// persisted) in the same crossing.
	v, _, err := n.rn.StepBatchReady(bs, n.storage)
	if err != nil {
		panic(err)
	}
	n.next = v
}

func (n *raftletView) HasReady() bool { return n.next.Valid() || n.rn.HasReady() }

func (n *raftletView) Cycle(out *[]wire, app *applied) {
	v := n.next
	n.next = raftlet.ReadyView{}
	if !v.Valid() {
		// Taken and persisted in one crossing.
		var err error
		if v, err = n.rn.ReadyViewPersisted(n.storage); err != nil {
			panic(err)
		}
	}
	if idx, _, ok, _ := v.SnapshotMetadata(); ok {
		app.index = idx
	}
	msgs, err := v.Messages()
	if err != nil {
		panic(err)
	}
	// The messages go out as the library encoded them, straight from the
	// Ready's memory (its one copy, as etcd's Marshal is etcd's): the
	// view is advanced by Sent, after the transport is done with them.
	for i := range msgs {
		m := &msgs[i]
		*out = append(*out, wire{to: m.To, data: m.Data()})
	}
	rss, _ := v.ReadStates()
	app.reads += uint64(len(rss))
	ents, err := v.CommittedEntries()
	if err != nil {
		panic(err)
	}
	for i := range ents {
		e := &ents[i]
		switch e.Type {
		case raftpb.EntryNormal:
			if d := e.Data(); len(d) > 0 {
				app.entries++
				app.bytes += uint64(len(d))
			}
		case raftpb.EntryConfChange:
			var cc raftpb.ConfChange
			if err := cc.Unmarshal(e.Data()); err != nil {
				panic(err)
			}
			n.rn.ApplyConfChange(cc)
		case raftpb.EntryConfChangeV2:
			var cc raftpb.ConfChangeV2
			if err := cc.Unmarshal(e.Data()); err != nil {
				panic(err)
			}
			n.rn.ApplyConfChange(cc)
		}
		app.index = e.Index
	}
	if len(msgs) > 0 || n.held.Valid() {
		// Advanced by Sent: advancing it now would release the memory
		// of the messages handed out (its own, or an earlier Ready's).
		n.held = v
		return
	}
	next, err := n.rn.AdvanceViewNext(v, n.storage)
	if err != nil {
		panic(err)
	}
	n.next = next
}

// Sent advances the last Ready whose messages were handed out, which
// releases it and every earlier one.
func (n *raftletView) Sent() {
	if !n.held.Valid() {
		return
	}
	next, err := n.rn.AdvanceViewNext(n.held, n.storage)
	if err != nil {
		panic(err)
	}
	n.held, n.next = raftlet.ReadyView{}, next
}

func (n *raftletView) Compact(index uint64) {
	if err := n.storage.Compact(index); err != nil {
		panic(err)
	}
}

func (n *raftletView) IsLeader() bool {
	return n.rn.BasicStatus().RaftState == raftlet.StateLeader
}

func (n *raftletView) Close() {
	for i := range n.pending {
		n.pending[i].Free()
	}
	n.pending = nil
	_ = n.rn.Close()
	_ = n.storage.Close()
}

// sweepView is the B4 sweep of raftlet-go-view: all groups ticked in one
// crossing (a TickSet), the busy ones read from its bitmap.
func sweepView(nodes []node) func() int {
	set, err := raftlet.NewTickSet()
	if err != nil {
		panic(err)
	}
	for _, n := range nodes {
		if err := set.Add(n.(*raftletView).rn); err != nil {
			panic(err)
		}
	}
	var busy []int
	return func() int {
		if err := set.Tick(); err != nil {
			panic(err)
		}
		busy = set.Busy(busy[:0])
		return len(busy)
	}
}
