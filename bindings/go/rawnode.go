package raftlet

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"go.etcd.io/raft/v3/raftpb"
)

// SnapshotStatus is the outcome of sending a snapshot, reported with
// RawNode.ReportSnapshot (etcd's raft.SnapshotStatus, same values).
type SnapshotStatus int

// The outcomes of sending a snapshot.
const (
	SnapshotFinish  SnapshotStatus = 1
	SnapshotFailure SnapshotStatus = 2
)

// Peer is a member of the first configuration, for Bootstrap.
type Peer struct {
	ID uint64
	// Context must be nil: raftlet's bootstrap entries carry none.
	Context []byte
}

// RawNode is a Raft node driven by its host, with the API of etcd's
// raft.RawNode: the host calls Tick, feeds peers' messages to Step, and
// handles each Ready (persist, send, apply) before calling Advance.
//
// A RawNode is not safe for concurrent use, like etcd's: use it from one
// goroutine or under a lock.
type RawNode struct {
	h       *nodeHandle
	cleanup runtime.Cleanup
	x       *scratch // reused buffers, made on first use
	set     *TickSet // the TickSet the node is in, if any
	slot    int      // its index in set
	// What the last call that read it said about has_ready: valid while
	// hrOK, and, for a node in a TickSet, until the set's next Tick.
	hrEpoch uint64
	hr      bool
	hrOK    bool
	// The ready (and its generation) whose take set that cache, nil when
	// another call set it: only then does the ready's idle_after_apply
	// describe the node as it is.
	hrTake    *readyHandle
	hrTakeGen uint64
	// The applied index owed to the node: the entries of views released
	// without a crossing whose advance would only have reported them
	// applied (see deferAdvance). The node's next crossing reports it
	// first; 0 when nothing is owed.
	applyOwed uint64
}

// scratch holds the buffers a node reuses from call to call: the
// encoding of the message being stepped, the ConfState written by
// ApplyConfChange, the arrays of a batch call.
type scratch struct {
	stepBuf []byte
	csBuf   []byte
	b       batch
	// The handles of a ProposePayloads call.
	payloads []uintptr
}

func (rn *RawNode) scratch() *scratch {
	if rn.x == nil {
		rn.x = &scratch{}
	}
	return rn.x
}

// nodeHandle owns the C node and the C readies handed out and not yet
// advanced; it is the cleanup's argument, so it must not point back to
// the RawNode.
type nodeHandle struct {
	p       cNode
	pending []*readyHandle
}

// Released ready handles, reused by the next readies of any node: no
// allocation per Ready, and nothing kept per idle node. A few wait in
// slots (one compare-and-swap to put, a load and a swap to take: a Ready
// cycle's hand-off costs less than a sync.Pool's), the rest in the pool.
var (
	handleSlots [8]atomic.Pointer[readyHandle]
	handlePool  = sync.Pool{New: func() any { return &readyHandle{} }}
)

// takeHandle returns a released handle to reuse, or a new one.
func (h *nodeHandle) takeHandle() *readyHandle {
	for i := range handleSlots {
		if handleSlots[i].Load() == nil {
			continue
		}
		if r := handleSlots[i].Swap(nil); r != nil {
			return r
		}
	}
	return handlePool.Get().(*readyHandle)
}

// putHandle keeps r, released, for the next takeHandle.
func putHandle(r *readyHandle) {
	for i := range handleSlots {
		if handleSlots[i].CompareAndSwap(nil, r) {
			return
		}
	}
	handlePool.Put(r)
}

// releaseHandle forgets the C ready of r (freed already) and makes every
// Ready and ReadyView of it stale: the generation changes, so a view of
// it is refused even once the handle holds another ready (of this node
// or another).
func (h *nodeHandle) releaseHandle(r *readyHandle) {
	r.p, r.flat = nil, nil
	r.gen.Add(1)
	putHandle(r)
}

func (h *nodeHandle) free() {
	for _, r := range h.pending {
		cReadyFree(r.p)
		r.p, r.flat = nil, nil
		r.gen.Add(1) // not pooled: the cleanup may run on any goroutine
	}
	h.pending = nil
	freeReleased()
	cNodeFree(h.p)
	h.p = nil
}

// NewRawNode creates a node from c over c.Storage, restarting from
// whatever the storage holds (etcd's raft.NewRawNode). Errors:
// ErrConfigInvalid (the message names the field), ErrInvalidState for an
// inconsistent storage.
func NewRawNode(c *Config) (*RawNode, error) {
	if c == nil {
		return nil, &Error{CodeConfigInvalid, "Config must not be nil"}
	}
	cc, err := c.toC()
	if err != nil {
		return nil, err
	}
	sp, err := c.Storage.ptr()
	if err != nil {
		return nil, err
	}
	p, err := cNodeNew(cc, sp)
	runtime.KeepAlive(c.Storage)
	if err != nil {
		return nil, err
	}
	rn := &RawNode{h: &nodeHandle{p: p}}
	rn.cleanup = runtime.AddCleanup(rn, func(h *nodeHandle) { h.free() }, rn.h)
	return rn, nil
}

// Close releases the node and any Ready not yet advanced. It is
// idempotent and always returns nil; other methods fail with ErrClosed
// (or panic, for those without an error result) afterwards.
func (rn *RawNode) Close() error {
	if rn == nil || rn.h.p == nil {
		return nil
	}
	rn.cleanup.Stop()
	if rn.set != nil {
		rn.set.remove(rn)
	}
	rn.h.free()
	rn.hrOK = false
	return nil
}

// ptr is the C node for a call that may change it: the has_ready cache
// is dropped (calls that read has_ready in the same crossing set it
// again). An applied index owed to the node is reported first, in a
// crossing of its own: every call sees the node as an advance would
// have left it.
func (rn *RawNode) ptr() (cNode, error) {
	p, owed, err := rn.ptrOwing()
	if owed != 0 {
		// It fails only on a poisoned node, which the call reports.
		_ = cNodeAdvanceApplyTo(p, owed)
	}
	return p, err
}

// ptrOwing is ptr for a call that reports the owed applied index itself,
// first thing in its own crossing: the index comes back (0 when none is
// owed) and is no longer owed. Call it last before the crossing.
func (rn *RawNode) ptrOwing() (cNode, uint64, error) {
	if rn == nil || rn.h.p == nil {
		return nil, 0, ErrClosed
	}
	rn.hrOK = false
	owed := rn.applyOwed
	rn.applyOwed = 0
	return rn.h.p, owed, nil
}

// owe records that entries up to index are applied and owed to the node
// (see deferAdvance); a TickSet reports it before it ticks the node.
func (rn *RawNode) owe(index uint64) {
	if index <= rn.applyOwed {
		return
	}
	if rn.applyOwed == 0 && rn.set != nil {
		rn.set.owing = append(rn.set.owing, rn)
	}
	rn.applyOwed = index
}

// setHR records what a call learned about has_ready.
func (rn *RawNode) setHR(has, known bool) {
	rn.hr, rn.hrOK = has, known
	rn.hrTake = nil
	if rn.set != nil {
		rn.hrEpoch = rn.set.epoch
	}
}

// setHRTaken is setHR for a call that took the ready of h (nil when it
// took none): the cache then speaks for the node as that ready left it.
func (rn *RawNode) setHRTaken(has, known bool, h *readyHandle) {
	rn.setHR(has, known)
	if h != nil {
		rn.hrTake, rn.hrTakeGen = h, h.gen.Load()
	}
}

// must panics on errors of methods that have no error result in etcd's
// API: they only fail on a closed node or a poisoned one (ErrPanic).
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Bootstrap initializes an empty node with its first configuration: one
// conf-change entry per peer, committed at term 1, as etcd's
// RawNode.Bootstrap writes them (so raftlet and etcd nodes bootstrapped
// with the same peers hold the same log). The entries come out in the
// next Ready. Everything is checked first: a refused Bootstrap changes
// nothing, so a corrected call may follow. Errors: ErrInvalidState (no
// peers, or a non-empty storage), ErrConfChangeRefused (an ID of 0,
// math.MaxUint64 or math.MaxUint64-1, an ID given twice, or a voter that
// is also a learner), ErrInvalidArg (a Peer with a Context).
func (rn *RawNode) Bootstrap(peers []Peer) error {
	ids := make([]uint64, len(peers))
	for i, p := range peers {
		if p.Context != nil {
			return &Error{CodeInvalidArg, "Peer.Context is not supported by Bootstrap"}
		}
		ids[i] = p.ID
	}
	return rn.BootstrapWithLearners(ids, nil)
}

// BootstrapWithLearners is Bootstrap with learners in the first
// configuration too (their entries follow the voters').
func (rn *RawNode) BootstrapWithLearners(voters, learners []uint64) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	err = cNodeBootstrap(p, voters, learners)
	runtime.KeepAlive(rn)
	return err
}

// Tick advances the node's logical clock by one tick.
func (rn *RawNode) Tick() {
	p, err := rn.ptr()
	must(err)
	has, known, err := cNodeTickHR(p)
	must(err)
	rn.setHR(has, known)
	runtime.KeepAlive(rn)
}

// Campaign makes the node campaign at once.
func (rn *RawNode) Campaign() error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	err = cNodeCampaign(p)
	runtime.KeepAlive(rn)
	return err
}

// Propose proposes that data be appended to the log. It returns
// ErrProposalDropped when there is no leader, forwarding is disabled, a
// leader transfer is under way or the uncommitted budget is exhausted.
func (rn *RawNode) Propose(data []byte) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	has, known, err := cNodeProposeHR(p, data)
	rn.setHR(has, known)
	runtime.KeepAlive(rn)
	return err
}

// ProposeBatch proposes the payloads as one proposal, in one cgo
// crossing: on the leader they are appended together, in order, or not
// at all (an empty batch is dropped). The payloads are read during the
// call only (small ones are copied into a reused buffer, large ones
// pinned), never kept. Errors as for Propose.
func (rn *RawNode) ProposeBatch(payloads [][]byte) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	has, known, err := cNodeProposeBatch(p, &rn.scratch().b, payloads)
	rn.setHR(has, known)
	runtime.KeepAlive(rn)
	return err
}

// ProposeConfChange proposes a configuration change (raftpb.ConfChange or
// raftpb.ConfChangeV2). Besides ErrProposalDropped, the leader refuses a
// change with ErrConfChangeRefused, ErrPromotionNotReady (the learner to
// promote has not caught up: retry later) or ErrTooManyLearners; nothing
// is appended then.
func (rn *RawNode) ProposeConfChange(cc raftpb.ConfChangeI) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	typ, data, err := raftpb.MarshalConfChange(cc)
	if err != nil {
		return err
	}
	err = cNodeProposeConfChange(p, data, typ == raftpb.EntryConfChangeV2)
	runtime.KeepAlive(rn)
	return err
}

// ApplyConfChange applies a committed configuration change and returns
// the new configuration, to be saved with the next snapshot. When raftlet
// refuses the change (where etcd would panic), the configuration is left
// unchanged and returned as it is; TryApplyConfChange reports the error.
func (rn *RawNode) ApplyConfChange(cc raftpb.ConfChangeI) *raftpb.ConfState {
	cs, err := rn.TryApplyConfChange(cc)
	if err != nil {
		if !isCode(err, CodeConfChangeRefused) {
			panic(err)
		}
		cur, err := rn.confState()
		must(err)
		return cur
	}
	return cs
}

// TryApplyConfChange is ApplyConfChange with the error: ErrConfChangeRefused
// when the change does not fit the current configuration (left unchanged).
func (rn *RawNode) TryApplyConfChange(cc raftpb.ConfChangeI) (*raftpb.ConfState, error) {
	p, err := rn.ptr()
	if err != nil {
		return nil, err
	}
	typ, data, err := raftpb.MarshalConfChange(cc)
	if err != nil {
		return nil, err
	}
	x := rn.scratch()
	if x.csBuf == nil {
		x.csBuf = make([]byte, 512)
	}
	n, err := cNodeApplyConfChange(p, data, typ == raftpb.EntryConfChangeV2, x.csBuf)
	runtime.KeepAlive(rn)
	if err != nil {
		return nil, err
	}
	if n > len(x.csBuf) {
		// Applied, but the ConfState did not fit: read it again.
		return rn.confState()
	}
	cs := &raftpb.ConfState{}
	if err := cs.Unmarshal(x.csBuf[:n]); err != nil {
		return nil, err
	}
	return cs, nil
}

// confState reads the current configuration.
func (rn *RawNode) confState() (*raftpb.ConfState, error) {
	p, err := rn.ptr()
	if err != nil {
		return nil, err
	}
	x := rn.scratch()
	if x.csBuf == nil {
		x.csBuf = make([]byte, 512)
	}
	for {
		n, err := cNodeConfState(p, x.csBuf)
		if err != nil {
			return nil, err
		}
		if n <= len(x.csBuf) {
			runtime.KeepAlive(rn)
			cs := &raftpb.ConfState{}
			if err := cs.Unmarshal(x.csBuf[:n]); err != nil {
				return nil, err
			}
			return cs, nil
		}
		x.csBuf = make([]byte, n)
	}
}

// Step feeds a message from a peer. Errors: ErrStepLocalMsg for local-only
// message types, ErrInvalidMessage for a message of an unknown type, with
// a term or index above 2^63-1, or from an ID that cannot be a member
// (nothing in the node changes), ErrStepPeerNotFound for responses from
// unknown peers, and
// the error the message caused (e.g. ErrProposalDropped for a forwarded
// proposal the leader drops).
func (rn *RawNode) Step(m raftpb.Message) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	x := rn.scratch()
	n := m.Size()
	if cap(x.stepBuf) < n {
		x.stepBuf = make([]byte, n, n+n/2)
	}
	buf := x.stepBuf[:n]
	if _, err := m.MarshalToSizedBuffer(buf); err != nil {
		return err
	}
	has, known, err := cNodeStepHR(p, buf)
	rn.setHR(has, known)
	runtime.KeepAlive(rn)
	if cap(x.stepBuf) > 1<<20 {
		x.stepBuf = nil // do not keep a large snapshot's buffer
	}
	return err
}

// StepBytes feeds a raftpb-encoded message, as received from the network,
// without decoding it in Go. Errors as for Step, plus ErrDecode.
func (rn *RawNode) StepBytes(msg []byte) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	has, known, err := cNodeStepHR(p, msg)
	rn.setHR(has, known)
	runtime.KeepAlive(rn)
	return err
}

// StepBatch feeds raftpb-encoded messages, as received from the network,
// in order and in one cgo crossing (StepBytes for each, under one lock).
// Every message is stepped even when an earlier one fails; the error is
// the first failure's. The messages are read during the call only.
func (rn *RawNode) StepBatch(msgs [][]byte) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	has, known, err := cNodeStepBatch(p, &rn.scratch().b, msgs)
	rn.setHR(has, known)
	runtime.KeepAlive(rn)
	return err
}

// HasReady reports whether a Ready with work in it is available. Most
// calls learn it in their own crossing (Tick, Step, Propose, Ready,
// Advance and the batch calls), so HasReady after them crosses nothing.
func (rn *RawNode) HasReady() bool {
	if has, ok := rn.cachedHR(); ok {
		return has
	}
	p, err := rn.ptr()
	must(err)
	has, err := cNodeHasReady(p)
	must(err)
	rn.setHR(has, true)
	runtime.KeepAlive(rn)
	return has
}

// takeReady takes the next C ready and its flat view into a handle, in
// one crossing, and records it as pending.
// With s not nil the ready is also persisted into s, in the same
// crossing: persistErr is the write's outcome.
func (rn *RawNode) takeReady(s *MemoryStorage) (h *readyHandle, persistErr, err error) {
	var sp cStorage
	if s != nil {
		if sp, err = s.ptr(); err != nil {
			return nil, nil, err
		}
	}
	p, owed, err := rn.ptrOwing()
	if err != nil {
		return nil, nil, err
	}
	h = rn.h.takeHandle()
	has, known, persistErr, err := cReadyFlat(p, sp, h, owed)
	runtime.KeepAlive(rn)
	runtime.KeepAlive(s)
	if err != nil {
		rn.h.releaseHandle(h)
		return nil, nil, err
	}
	rn.setHRTaken(has, known, h)
	rn.h.pending = append(rn.h.pending, h)
	return h, persistErr, nil
}

// Ready returns the next batch of work. It must be handed back to Advance
// once handled. The whole Ready crosses from the library in one call and
// is copied into Go memory (ReadyView reads it in place instead).
func (rn *RawNode) Ready() Ready {
	h, _, err := rn.takeReady(nil)
	must(err)
	rd := Ready{h: h, gen: h.gen.Load(), rn: rn}
	err = fillReady(&rd, h)
	if err == nil && membershipEventCount(h) > 0 {
		rd.MembershipEvents, err = cReadyMembershipEvents(h.p)
	}
	runtime.KeepAlive(rn)
	if err != nil {
		panic(err) // the C ready stays pending: released by Close
	}
	return rd
}

// ReadyView returns the next batch of work as views over the library's
// memory, in one cgo crossing and without copying or allocating (see
// ReadyView for how long the views are valid). Handle it as a Ready:
// MemoryStorage.AppendReadyView, send, apply, then AdvanceView.
func (rn *RawNode) ReadyView() (ReadyView, error) {
	h, _, err := rn.takeReady(nil)
	if err != nil {
		return ReadyView{}, err
	}
	return ReadyView{h: h, gen: h.gen.Load(), rn: rn}, nil
}

// ReadyViewPersisted is ReadyView followed by s.AppendReadyView, in one
// cgo crossing: the Ready comes back already written to s (synced when
// it must be, for a disk storage). When the write fails, the view is
// returned all the same with the write's error: nothing of the Ready is
// durable then; retry AppendReadyView, and do not send or advance before
// it succeeds.
//
// The write is also reported durable to the node in the same crossing
// (raftlet_node_ready_persisted), and what that made available joins the
// view: the entries it committed (a single voter's proposal, a
// follower's entries its leader's commit covers) after the Ready's own
// committed entries, and the messages it lets leave after the Ready's
// own. Every message of such a view may be sent at once (PersistedStart
// is len(Messages)), and the new commit index is written to s too; the
// view's HardState stays the one the Ready wrote. A Ready cycle is then
// this call and one advance. The write is reported at once only when
// every earlier view of the node was advanced and the Ready holds no
// snapshot; otherwise the view is as ReadyView and AppendReadyView make
// it, and advancing it reports the write.
func (rn *RawNode) ReadyViewPersisted(s *MemoryStorage) (ReadyView, error) {
	if s == nil {
		return ReadyView{}, &Error{CodeNullArg, "the storage must not be nil"}
	}
	h, perr, err := rn.takeReady(s)
	if err != nil {
		return ReadyView{}, err
	}
	return ReadyView{h: h, gen: h.gen.Load(), rn: rn}, perr
}

// AdvanceView is TryAdvance for a ReadyView: the view, and every slice
// it handed out, is invalid afterwards. Same errors.
//
// A view whose advance would change nothing in the node costs no cgo
// crossing: one taken persisted with its write acknowledged (see
// ReadyViewPersisted), with nothing to apply that the node has not
// applied (heartbeats, their responses, read states), and the node's only
// view not yet advanced. Its memory is then freed by the next call of any
// node that takes a Ready (ReadyView, ReadyViewPersisted, AdvanceViewNext,
// StepBatchReady, ProposeReady, ReadIndexReady), the next Tick of any
// TickSet, or the next Close, first thing in that call's crossing.
//
// So does a view taken persisted whose advance would only report its
// committed entries applied, when the node was not called since it was
// taken and the library said reporting them leaves the node without a
// Ready (a single voter's proposal, a leader's entries its own write
// commits): the report is made first thing in the node's next crossing,
// whatever the call, and HasReady stays false without one.
func (rn *RawNode) AdvanceView(v ReadyView) error {
	if v.rn != rn {
		return &Error{CodeReadyForeign, "the ReadyView was not handed out by this node"}
	}
	if rn.deferAdvance(v.h, v.gen) {
		return nil
	}
	return rn.advance(v.h, v.gen)
}

// deferAdvance releases the ready of h (generation gen) without a
// crossing when advancing it would change nothing in the node: the
// library says so (advance_is_noop: its write was acknowledged as it was
// taken and it hands out nothing left to apply) and it is the node's only
// pending ready. Freeing it is left to the next crossing of any node that
// takes a ready or ticks a set (see released), so that the ready taken
// there reuses its buffers. The has_ready cache stays as it is: the node
// did not change. It reports whether it released h; when it did not,
// nothing changed.
//
// A view whose advance would only report its entries applied
// (advance_is_apply_only: its write acknowledged as it was taken) is
// released the same way when the library said the node has no Ready
// once they are reported (idle_after_apply) and nothing reached the node
// since the view was taken (the has_ready cache is the one its take set):
// the report is owed to the node, made first thing in its next crossing
// (see ptr), and the cache stays false, as the report leaves it. No call
// of the node sees the difference; a single voter's proposal then costs
// one crossing (ProposeReady) instead of two.
func (rn *RawNode) deferAdvance(h *readyHandle, gen uint64) bool {
	if rn == nil || rn.h.p == nil || !h.live(gen) || h.flat == nil ||
		len(rn.h.pending) != 1 || rn.h.pending[0] != h {
		return false
	}
	f := h.flat
	switch {
	case bool(f.advance_is_noop):
	case bool(f.advance_is_apply_only) && bool(f.idle_after_apply) &&
		rn.hrTake == h && rn.hrTakeGen == gen && rn.knownIdle():
		rn.owe(uint64(f.apply_index))
	default:
		return false
	}
	releaseLater(h.p)
	rn.advanced(h)
	return true
}

// cachedHR is what the last call that read has_ready said (ok false when
// it is not known without a crossing: not read since the node changed, or
// its TickSet ticked since).
func (rn *RawNode) cachedHR() (has, ok bool) {
	if rn != nil && rn.hrOK && rn.h.p != nil && (rn.set == nil || rn.hrEpoch == rn.set.epoch) {
		return rn.hr, true
	}
	return false, false
}

// knownIdle reports whether the node is known to have no Ready without a
// crossing (HasReady's cache).
func (rn *RawNode) knownIdle() bool {
	has, ok := rn.cachedHR()
	return ok && !has
}

// Advance tells the node that rd was handled: persisted, sent and
// applied. Readies taken before rd and not advanced are covered by it and
// released. A Ready the node refuses is ignored, as etcd's Advance would
// take it: one advanced twice or released, one that did not come from
// this node's Ready, or one whose entries or snapshot are not in the
// storage yet; TryAdvance reports why.
func (rn *RawNode) Advance(rd Ready) {
	err := rn.TryAdvance(rd)
	if err == nil || errors.Is(err, ErrReadyStale) || errors.Is(err, ErrReadyForeign) ||
		errors.Is(err, ErrReadyNotPersisted) {
		return
	}
	panic(err) // a closed or poisoned node, as for the other methods
}

// TryAdvance is Advance with the outcome. Errors: ErrReadyStale (rd was
// already advanced, or released by the Advance of a later Ready: readies
// are advanced in the order they were taken), ErrReadyForeign (rd did
// not come from this node's Ready), ErrReadyNotPersisted (the storage
// lacks rd's entries or snapshot, or those of an earlier Ready it would
// cover: AppendReady first), ErrClosed and ErrPanic. On an error nothing
// is acknowledged and rd stays as it was.
func (rn *RawNode) TryAdvance(rd Ready) error {
	if _, err := rn.ptr(); err != nil {
		return err
	}
	if rd.h == nil || rd.rn != rn {
		return &Error{CodeReadyForeign, "the Ready was not handed out by this node"}
	}
	return rn.advance(rd.h, rd.gen)
}

// advance acknowledges the ready of h (generation gen) and releases it
// and the earlier ones it covers.
func (rn *RawNode) advance(h *readyHandle, gen uint64) error {
	p, err := rn.advancePtr(h, gen)
	if err != nil {
		return err
	}
	has, known, err := cNodeAdvanceHR(p, h.p)
	runtime.KeepAlive(rn)
	if err != nil {
		return err
	}
	rn.setHR(has, known)
	rn.advanced(h)
	return nil
}

// advancePtr is the C node for advancing the ready of h (generation
// gen), once h is known to be a live ready.
func (rn *RawNode) advancePtr(h *readyHandle, gen uint64) (cNode, error) {
	p, err := rn.ptr()
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, &Error{CodeReadyForeign, "the Ready was not handed out by this node"}
	}
	if !h.live(gen) {
		return nil, &Error{CodeReadyStale, "the Ready was already advanced or released"}
	}
	return p, nil
}

// advanced releases h, advanced (its C ready freed by the advance), and
// the earlier pending readies it covers.
func (rn *RawNode) advanced(h *readyHandle) {
	rn.h.unpend(h)
	rn.h.releaseHandle(h)
}

// unpend takes the advanced ready of r out of the pending ones, and
// releases the earlier ones it covers (freeing their C readies); r itself
// is left to the caller.
func (h *nodeHandle) unpend(r *readyHandle) {
	if len(h.pending) == 1 && h.pending[0] == r {
		// The usual case: one Ready in flight.
		h.pending[0] = nil
		h.pending = h.pending[:0]
		return
	}
	for i, p := range h.pending {
		if p == r {
			for _, old := range h.pending[:i] {
				cReadyFree(old.p)
				h.releaseHandle(old)
			}
			n := copy(h.pending, h.pending[i+1:])
			clear(h.pending[n:])
			h.pending = h.pending[:n]
			return
		}
	}
}

// AdvanceViewNext is AdvanceView(v) followed, when the node then has a
// Ready, by ReadyViewPersisted(s) (ReadyView when s is nil), in one cgo
// crossing: the end of one Ready cycle and the start of the next. next
// is the new view, not Valid when no Ready was waiting (HasReady is then
// false without a crossing). Errors: those of AdvanceView, when v was
// not advanced (nothing is taken then); else those of taking the next
// Ready (next not Valid) or of writing it (next Valid, as for
// ReadyViewPersisted: retry AppendReadyView before sending or advancing).
//
// With a storage, next may be a light Ready (raftlet_node_advance_light):
// what v's write being durable made available at once (the entries it
// committed, as a single voter's proposal, and messages to send), with
// nothing to persist but its commit index, which is written to s in the
// same crossing. It is handled like any view (apply, send, advance), so a
// proposal takes one Ready cycle instead of two. (A v taken by
// ReadyViewPersisted, AdvanceViewNext or StepBatchReady with a storage
// had its write reported at once, and holds that already: no light
// Ready follows it.)
//
// When the node is known to have no Ready (HasReady would answer false
// without a crossing) and v's advance would change nothing, the call
// makes no crossing at all, as AdvanceView.
func (rn *RawNode) AdvanceViewNext(v ReadyView, s *MemoryStorage) (next ReadyView, err error) {
	if v.rn != rn {
		return ReadyView{}, &Error{CodeReadyForeign, "the ReadyView was not handed out by this node"}
	}
	// Without a crossing when there is no next Ready to take and v's
	// advance would change nothing, or only report entries applied (see
	// AdvanceView).
	if rn.knownIdle() && rn.deferAdvance(v.h, v.gen) {
		return ReadyView{}, nil
	}
	p, err := rn.advancePtr(v.h, v.gen)
	if err != nil {
		return ReadyView{}, err
	}
	var sp cStorage
	if s != nil {
		if sp, err = s.ptr(); err != nil {
			return ReadyView{}, err
		}
	}
	h, has, known, advErr, persistErr, err := cNodeAdvanceReadyFlat(p, v.h, sp, rn.h)
	runtime.KeepAlive(rn)
	runtime.KeepAlive(s)
	if advErr != nil {
		return ReadyView{}, advErr
	}
	if err != nil {
		return ReadyView{}, err
	}
	rn.setHRTaken(has, known, h)
	if h == nil {
		return ReadyView{}, nil
	}
	rn.h.pending = append(rn.h.pending, h)
	return ReadyView{h: h, gen: h.gen.Load(), rn: rn}, persistErr
}

// StepBatchReady is StepBatch(msgs) followed, when the node then has a
// Ready, by ReadyViewPersisted(s) (ReadyView when s is nil), in one cgo
// crossing: what a host does with the messages of one network read.
// stepErr is StepBatch's outcome (every message is stepped even when one
// fails). next is the new view, not Valid when no Ready was waiting; err
// is the failure to take it (next not Valid) or to write it (next Valid,
// as for ReadyViewPersisted).
func (rn *RawNode) StepBatchReady(msgs [][]byte, s *MemoryStorage) (next ReadyView, stepErr, err error) {
	return rn.thenReady(s, func(p cNode, sp cStorage, owed uint64) (*readyHandle, bool, bool, error, error, error) {
		return cNodeStepBatchReady(p, &rn.scratch().b, msgs, sp, rn.h, owed)
	})
}

// ProposeReady is Propose(data) followed, when the node then has a Ready,
// by ReadyViewPersisted(s) (ReadyView when s is nil), in one cgo
// crossing: a proposal and the Ready that carries it. With a storage the
// Ready's write is acknowledged at once, so a single voter's proposal
// comes back committed in the same view. proposeErr is Propose's outcome
// (ErrProposalDropped: nothing was appended); next is the new view, not
// Valid when no Ready was waiting; err is the failure to take it (next
// not Valid) or to write it (next Valid, as for ReadyViewPersisted).
func (rn *RawNode) ProposeReady(data []byte, s *MemoryStorage) (next ReadyView, proposeErr, err error) {
	return rn.thenReady(s, func(p cNode, sp cStorage, owed uint64) (*readyHandle, bool, bool, error, error, error) {
		return cNodeProposeReady(p, data, sp, rn.h, owed)
	})
}

// thenReady runs call, one crossing that changes the node and then takes
// the Ready it left (persisted into s when s is not nil), and hands the
// Ready out as a view: the body of StepBatchReady and ProposeReady.
// firstErr is the outcome of the change; err that of taking or writing
// the Ready, as those methods report them.
func (rn *RawNode) thenReady(s *MemoryStorage,
	call func(p cNode, sp cStorage, owed uint64) (h *readyHandle, has, known bool, firstErr, persistErr, err error),
) (next ReadyView, firstErr, err error) {
	var sp cStorage
	if s != nil {
		if sp, err = s.ptr(); err != nil {
			return ReadyView{}, err, err
		}
	}
	p, owed, err := rn.ptrOwing()
	if err != nil {
		return ReadyView{}, err, err
	}
	h, has, known, firstErr, persistErr, err := call(p, sp, owed)
	runtime.KeepAlive(rn)
	runtime.KeepAlive(s)
	if err != nil {
		return ReadyView{}, firstErr, err
	}
	rn.setHRTaken(has, known, h)
	if h == nil {
		return ReadyView{}, firstErr, nil
	}
	rn.h.pending = append(rn.h.pending, h)
	return ReadyView{h: h, gen: h.gen.Load(), rn: rn}, firstErr, persistErr
}

// ReadIndex requests a linearizable read; the answer comes as a ReadState
// carrying rctx in a later Ready. It returns ErrNoLeader when no leader is
// known (etcd drops the request silently; the error may be ignored).
func (rn *RawNode) ReadIndex(rctx []byte) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	has, known, err := cNodeReadIndexHR(p, rctx)
	rn.setHR(has, known)
	runtime.KeepAlive(rn)
	return err
}

// ReadIndexReady is ReadIndex(rctx) followed, when the node then has a
// Ready, by ReadyViewPersisted(s) (ReadyView when s is nil), in one cgo
// crossing: a read request and the Ready that carries the heartbeats
// confirming it (a single voter's answer, its ReadState, comes in that
// Ready). readErr is ReadIndex's outcome; next and err as for
// ProposeReady.
func (rn *RawNode) ReadIndexReady(rctx []byte, s *MemoryStorage) (next ReadyView, readErr, err error) {
	return rn.thenReady(s, func(p cNode, sp cStorage, owed uint64) (*readyHandle, bool, bool, error, error, error) {
		return cNodeReadIndexReady(p, rctx, sp, rn.h, owed)
	})
}

// TransferLeader asks the leader to hand leadership to transferee. It
// returns ErrTransferRefused when the target is not a voter or no leader
// is known (etcd ignores such requests; the error may be ignored).
func (rn *RawNode) TransferLeader(transferee uint64) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	err = cNodeTransferLeader(p, transferee)
	runtime.KeepAlive(rn)
	return err
}

// ForgetLeader makes a follower forget its leader, so it grants pre-votes
// at once (when the host knows the leader is gone).
func (rn *RawNode) ForgetLeader() error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	err = cNodeForgetLeader(p)
	runtime.KeepAlive(rn)
	return err
}

// ReportUnreachable tells the leader the last message to id may be lost.
func (rn *RawNode) ReportUnreachable(id uint64) {
	p, err := rn.ptr()
	must(err)
	must(cNodeReportUnreachable(p, id))
	runtime.KeepAlive(rn)
}

// ReportSnapshot tells the leader how sending a snapshot to id ended.
func (rn *RawNode) ReportSnapshot(id uint64, status SnapshotStatus) {
	p, err := rn.ptr()
	must(err)
	must(cNodeReportSnapshot(p, id, status == SnapshotFinish))
	runtime.KeepAlive(rn)
}
