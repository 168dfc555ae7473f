package raftlet

// The zero-copy side of the binding: Ready views over the library's
// memory, batches of steps and proposals, and the tick sweep of many
// nodes, each in one cgo crossing. The C helpers are in cgo.go.

/*
#include "raftlet.h"
*/
import "C"

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

	"go.etcd.io/raft/v3/raftpb"
)

// readyHandle owns a C ready between RawNode.Ready (or ReadyView) and
// RawNode.Advance. Handles are reused once released, by any node: gen
// changes on every release, so a Ready or ReadyView kept past its Advance
// is recognised as stale however the handle was reused. gen is atomic
// because a stale view's check may run while another goroutine's node
// fills the reused handle; p and flat are read only once gen matched,
// that is by the goroutine that owns the handle.
type readyHandle struct {
	p    cReady
	gen  atomic.Uint64
	flat *C.raftlet_ready_flat // the whole ready, in C memory owned by p (nil when released)
}

// live reports whether the handle still holds the ready of generation
// gen. Its generation is read first: p belongs to whoever holds the
// handle now.
func (h *readyHandle) live(gen uint64) bool { return h != nil && h.gen.Load() == gen && h.p != nil }

// EntryView is an entry of a ReadyView, laid out as raftlet_entry_view:
// its payload is the library's memory, valid until the ReadyView's
// Advance. Copy what must outlive it (Entry does).
type EntryView struct {
	Index uint64
	Term  uint64
	Type  raftpb.EntryType
	data  *byte
	len   uintptr
}

// Data is the payload, a view of the library's memory valid until
// Advance (nil when empty). Do not write to it.
func (e *EntryView) Data() []byte {
	if e.len == 0 {
		return nil
	}
	return unsafe.Slice(e.data, e.len)
}

// Entry returns the entry as a raftpb.Entry with a copy of its payload.
func (e *EntryView) Entry() raftpb.Entry {
	var d []byte
	if e.len > 0 {
		d = append([]byte(nil), e.Data()...)
	}
	return raftpb.Entry{Index: e.Index, Term: e.Term, Type: e.Type, Data: d}
}

// MessageView is a message of a ReadyView, laid out as
// raftlet_message_view: its routing fields and its raftpb encoding, the
// library's memory valid until Advance, to be written to a transport as
// it is.
type MessageView struct {
	To   uint64
	From uint64
	Type raftpb.MessageType
	data *byte
	len  uintptr
}

// Data is the raftpb encoding of the message, valid until Advance.
func (m *MessageView) Data() []byte { return unsafe.Slice(m.data, m.len) }

// Message decodes the message (payloads copied).
func (m *MessageView) Message() (raftpb.Message, error) {
	var msg raftpb.Message
	err := msg.Unmarshal(m.Data())
	return msg, err
}

// ReadStateView is a read state of a ReadyView, laid out as
// raftlet_read_state_view.
type ReadStateView struct {
	Index uint64
	ctx   *byte
	len   uintptr
}

// RequestCtx is the context given to ReadIndex, valid until Advance.
func (r *ReadStateView) RequestCtx() []byte {
	if r.len == 0 {
		return nil
	}
	return unsafe.Slice(r.ctx, r.len)
}

// The views are the C structs themselves: check the layouts once.
func init() {
	var ce C.raftlet_entry_view
	var ge EntryView
	var cm C.raftlet_message_view
	var gm MessageView
	var cr C.raftlet_read_state_view
	var gr ReadStateView
	if unsafe.Sizeof(ce) != unsafe.Sizeof(ge) || unsafe.Offsetof(ce.entry_type) != unsafe.Offsetof(ge.Type) ||
		unsafe.Offsetof(ce.data) != unsafe.Offsetof(ge.data) ||
		unsafe.Sizeof(cm) != unsafe.Sizeof(gm) || unsafe.Offsetof(cm.msg_type) != unsafe.Offsetof(gm.Type) ||
		unsafe.Offsetof(cm.data) != unsafe.Offsetof(gm.data) ||
		unsafe.Sizeof(cr) != unsafe.Sizeof(gr) || unsafe.Offsetof(cr.request_ctx) != unsafe.Offsetof(gr.ctx) {
		panic("raftlet: the view layouts differ from raftlet.h")
	}
}

// ReadyView is a Ready read in place: views over the library's memory,
// with nothing decoded or copied until asked for. It is taken with
// RawNode.ReadyView and handed back with RawNode.AdvanceView (after
// MemoryStorage.AppendReadyView), in one cgo crossing each.
//
// Validity: everything a ReadyView hands out (the slices of EntryView,
// MessageView and ReadStateView and the byte slices of their Data) is the
// library's memory, valid until the view is advanced (or covered by the
// advance of a later one, or its node closed). Its methods check that and
// return ErrReadyStale afterwards; slices taken before cannot be checked,
// and reading them afterwards reads freed memory: copy what must outlive
// the Ready (EntryView.Entry, append to a buffer of your own). A
// ReadyView is a small value: copies of it share the same ready.
type ReadyView struct {
	h   *readyHandle
	gen uint64
	rn  *RawNode
}

func (v ReadyView) flat() (*C.raftlet_ready_flat, error) {
	if !v.h.live(v.gen) {
		return nil, ErrReadyStale
	}
	return v.h.flat, nil
}

// Valid reports whether the view is still readable (not advanced,
// covered or closed).
func (v ReadyView) Valid() bool { return v.h.live(v.gen) }

// Entries are the entries to append to stable storage.
func (v ReadyView) Entries() ([]EntryView, error) {
	f, err := v.flat()
	if err != nil || f.entry_count == 0 {
		return nil, err
	}
	return unsafe.Slice((*EntryView)(unsafe.Pointer(f.entries)), int(f.entry_count)), nil
}

// CommittedEntries are the entries to apply, in order.
func (v ReadyView) CommittedEntries() ([]EntryView, error) {
	f, err := v.flat()
	if err != nil || f.committed_entry_count == 0 {
		return nil, err
	}
	return unsafe.Slice((*EntryView)(unsafe.Pointer(f.committed_entries)), int(f.committed_entry_count)), nil
}

// Messages are all the messages, in the order of Ready.Messages: the
// PersistedStart first ones may be sent at once, the others only once
// this Ready (and every earlier one) is durable.
func (v ReadyView) Messages() ([]MessageView, error) {
	f, err := v.flat()
	if err != nil || f.message_count == 0 {
		return nil, err
	}
	return unsafe.Slice((*MessageView)(unsafe.Pointer(f.messages)), int(f.message_count)), nil
}

// PersistedStart is the index in Messages of the first message that must
// wait for the write (len(Messages) when none must).
func (v ReadyView) PersistedStart() (int, error) {
	f, err := v.flat()
	if err != nil {
		return 0, err
	}
	return int(f.persisted_message_start), nil
}

// ReadStates answer ReadIndex requests.
func (v ReadyView) ReadStates() ([]ReadStateView, error) {
	f, err := v.flat()
	if err != nil || f.read_state_count == 0 {
		return nil, err
	}
	return unsafe.Slice((*ReadStateView)(unsafe.Pointer(f.read_states)), int(f.read_state_count)), nil
}

// HardState is the state to persist; ok is false when it did not change.
func (v ReadyView) HardState() (hs raftpb.HardState, ok bool, err error) {
	f, err := v.flat()
	if err != nil || !bool(f.has_hard_state) {
		return raftpb.HardState{}, false, err
	}
	return raftpb.HardState{Term: uint64(f.hard_state.term), Vote: uint64(f.hard_state.vote),
		Commit: uint64(f.hard_state.commit)}, true, nil
}

// SoftState is the leader and role; ok is false when neither changed.
func (v ReadyView) SoftState() (ss SoftState, ok bool, err error) {
	f, err := v.flat()
	if err != nil || !bool(f.has_soft_state) {
		return SoftState{}, false, err
	}
	return SoftState{Lead: uint64(f.soft_state.leader_id), RaftState: StateType(f.soft_state.role)}, true, nil
}

// MustSync tells whether the write must be synced to disk (see
// Ready.MustSync: a configuration change among the committed entries is
// applied only once the write is durable).
func (v ReadyView) MustSync() (bool, error) {
	f, err := v.flat()
	if err != nil {
		return false, err
	}
	return bool(f.must_sync), nil
}

// SnapshotMetadata gives the index and term of the snapshot to persist
// and apply; ok is false when there is none.
func (v ReadyView) SnapshotMetadata() (index, term uint64, ok bool, err error) {
	f, err := v.flat()
	if err != nil || !bool(f.has_snapshot) {
		return 0, 0, false, err
	}
	return uint64(f.snapshot.index), uint64(f.snapshot.term), true, nil
}

// SnapshotData is the state-machine data of the snapshot, a view valid
// until Advance (nil when there is no snapshot or it is empty).
func (v ReadyView) SnapshotData() ([]byte, error) {
	f, err := v.flat()
	if err != nil || !bool(f.has_snapshot) || f.snapshot.data.len == 0 {
		return nil, err
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(f.snapshot.data.ptr)), int(f.snapshot.data.len)), nil
}

// Snapshot decodes the snapshot (a copy; empty when there is none).
func (v ReadyView) Snapshot() (raftpb.Snapshot, error) {
	f, err := v.flat()
	var s raftpb.Snapshot
	if err != nil || !bool(f.has_snapshot) {
		return s, err
	}
	err = s.Unmarshal(unsafe.Slice((*byte)(unsafe.Pointer(f.snapshot.encoded.ptr)), int(f.snapshot.encoded.len)))
	return s, err
}

// MembershipEvents copies the membership changes the leader proposed by
// itself (nil, without a crossing, when there are none).
func (v ReadyView) MembershipEvents() ([]MembershipEvent, error) {
	f, err := v.flat()
	if err != nil || f.membership_event_count == 0 {
		return nil, err
	}
	evs, err := cReadyMembershipEvents(v.h.p)
	runtime.KeepAlive(v.rn)
	return evs, err
}

// Payloads up to this size are copied into one buffer for a batch call;
// larger ones are pinned where they are (pinning costs about as much as
// copying this many bytes).
const pinAbove = 2048

// batch holds what a batch call hands to C, reused from call to call. A
// batch of small items only is packed: copied into buf, with their
// lengths in lens, and nothing else crosses (no Go pointer inside Go
// memory for cgo to check, nothing to pin). Otherwise items is an array
// of raftlet_bytes over Go memory: small items copied into buf, large
// ones pinned where they are, so that the array holds only pinned Go
// pointers (the cgo rules).
type batch struct {
	items  []C.raftlet_bytes
	lens   []C.size_t
	buf    []byte
	pin    runtime.Pinner
	pinned bool // pin holds a pointer: release must unpin
}

// packable reports whether every item is small enough to be packed.
func (b *batch) packable(bufs [][]byte) bool {
	for _, x := range bufs {
		if len(x) > pinAbove {
			return false
		}
	}
	return true
}

// pack copies bufs into buf and their lengths into lens.
func (b *batch) pack(bufs [][]byte) {
	total := 0
	for _, x := range bufs {
		total += len(x)
	}
	if cap(b.buf) < total {
		b.buf = make([]byte, 0, total)
	}
	b.buf = b.buf[:0]
	if cap(b.lens) < len(bufs) {
		b.lens = make([]C.size_t, len(bufs))
	}
	b.lens = b.lens[:len(bufs)]
	for i, x := range bufs {
		b.buf = append(b.buf, x...)
		b.lens[i] = C.size_t(len(x))
	}
}

// fill prepares the items for bufs; release must follow the call.
func (b *batch) fill(bufs [][]byte) {
	small := 0
	for _, x := range bufs {
		if len(x) <= pinAbove {
			small += len(x)
		}
	}
	if cap(b.buf) < small {
		b.buf = make([]byte, 0, small)
	}
	b.buf = b.buf[:0]
	if cap(b.items) < len(bufs) {
		b.items = make([]C.raftlet_bytes, len(bufs))
	}
	b.items = b.items[:len(bufs)]
	for i, x := range bufs {
		switch {
		case len(x) == 0:
			b.items[i] = C.raftlet_bytes{}
		case len(x) <= pinAbove:
			at := len(b.buf)
			b.buf = append(b.buf, x...)
			b.items[i] = C.raftlet_bytes{ptr: (*C.uint8_t)(unsafe.Pointer(&b.buf[at])), len: C.size_t(len(x))}
		default:
			b.pin.Pin(&x[0])
			b.pinned = true
			b.items[i] = C.raftlet_bytes{ptr: (*C.uint8_t)(unsafe.Pointer(&x[0])), len: C.size_t(len(x))}
		}
	}
	if len(b.buf) > 0 {
		b.pin.Pin(&b.buf[0])
		b.pinned = true
	}
}

// release unpins and drops the references to the caller's buffers; a
// large scratch buffer is not kept.
func (b *batch) release() {
	if b.pinned {
		b.pin.Unpin()
		b.pinned = false
	}
	clear(b.items)
	b.items = b.items[:0]
	if cap(b.buf) > 1<<20 {
		b.buf = nil
	}
	if cap(b.items) > 1<<16 {
		b.items = nil
	}
	if cap(b.lens) > 1<<16 {
		b.lens = nil
	}
}

// packed is what pack left, as the C arguments of a packed call: the
// buffer and the lengths (nil when empty).
func (b *batch) packed() (*C.uint8_t, *C.size_t) {
	var bp *C.uint8_t
	if len(b.buf) > 0 {
		bp = (*C.uint8_t)(unsafe.Pointer(&b.buf[0]))
	}
	var lp *C.size_t
	if len(b.lens) > 0 {
		lp = &b.lens[0]
	}
	return bp, lp
}

func (b *batch) ptr() (*C.raftlet_bytes, C.size_t) {
	if len(b.items) == 0 {
		return nil, 0
	}
	return &b.items[0], C.size_t(len(b.items))
}

// fillReady decodes the flat view of h into rd, copying everything (the
// Ready outlives its C ready, as etcd's does): the payloads of the
// entries and committed entries into one buffer, the messages' encodings
// into another that their payloads alias (decodeMessage).
func fillReady(rd *Ready, h *readyHandle) error {
	f := h.flat
	ents := unsafe.Slice((*EntryView)(unsafe.Pointer(f.entries)), int(f.entry_count))
	committed := unsafe.Slice((*EntryView)(unsafe.Pointer(f.committed_entries)), int(f.committed_entry_count))
	total := 0
	for i := range ents {
		total += int(ents[i].len)
	}
	for i := range committed {
		total += int(committed[i].len)
	}
	var arena []byte
	if total > 0 {
		arena = make([]byte, 0, total)
	}
	copyEnts := func(src []EntryView) []raftpb.Entry {
		if len(src) == 0 {
			return nil
		}
		out := make([]raftpb.Entry, len(src))
		for i := range src {
			e := &src[i]
			out[i] = raftpb.Entry{Index: e.Index, Term: e.Term, Type: e.Type}
			if e.len > 0 {
				at := len(arena)
				arena = append(arena, e.Data()...)
				out[i].Data = arena[at:len(arena):len(arena)]
			}
		}
		return out
	}
	rd.Entries = copyEnts(ents)
	rd.CommittedEntries = copyEnts(committed)
	rd.immediate = int(f.persisted_message_start)
	if f.message_count > 0 {
		// One copy of all the encodings; the messages' payloads alias it.
		msgs := unsafe.Slice((*MessageView)(unsafe.Pointer(f.messages)), int(f.message_count))
		size := 0
		for i := range msgs {
			size += int(msgs[i].len)
		}
		buf := make([]byte, 0, size)
		rd.Messages = make([]raftpb.Message, len(msgs))
		for i := range msgs {
			at := len(buf)
			buf = append(buf, msgs[i].Data()...)
			if err := decodeMessage(buf[at:len(buf):len(buf)], &rd.Messages[i]); err != nil {
				return err
			}
		}
	}
	if f.read_state_count > 0 {
		rss := unsafe.Slice((*ReadStateView)(unsafe.Pointer(f.read_states)), int(f.read_state_count))
		rd.ReadStates = make([]ReadState, len(rss))
		for i := range rss {
			rd.ReadStates[i] = ReadState{Index: rss[i].Index, RequestCtx: append([]byte(nil), rss[i].RequestCtx()...)}
		}
	}
	if f.has_hard_state {
		rd.HardState = raftpb.HardState{Term: uint64(f.hard_state.term), Vote: uint64(f.hard_state.vote),
			Commit: uint64(f.hard_state.commit)}
	}
	if f.has_soft_state {
		rd.SoftState = &SoftState{Lead: uint64(f.soft_state.leader_id), RaftState: StateType(f.soft_state.role)}
	}
	if f.has_snapshot {
		enc := unsafe.Slice((*byte)(unsafe.Pointer(f.snapshot.encoded.ptr)), int(f.snapshot.encoded.len))
		if err := rd.Snapshot.Unmarshal(enc); err != nil {
			return err
		}
	}
	rd.MustSync = bool(f.must_sync)
	return nil
}

// membershipEventCount is the number of membership events of the ready
// held by h.
func membershipEventCount(h *readyHandle) int { return int(h.flat.membership_event_count) }

// TickSet is a set of nodes ticked together, in one cgo crossing for the
// whole set (raftlet_tick_many), which also tells which of them have a
// Ready: the sweep of a host of many groups. A node is in at most one
// set; Close removes it. Like RawNode, a TickSet is not safe for
// concurrent use, and its nodes must not be used concurrently with Tick.
type TickSet struct {
	nodes  []*RawNode
	ptrs   []cNode // the nodes' C handles (C pointers only)
	bitmap []byte
	epoch  uint64 // bumped by every Tick: the nodes' has_ready caches expire
	// The nodes that may owe an applied index (RawNode.owe): Tick reports
	// what they owe before it ticks them. The arrays are reused.
	owing     []*RawNode
	owedNodes []C.uintptr_t
	owedIndex []C.uint64_t
}

// NewTickSet makes a set of the given nodes (see Add).
func NewTickSet(nodes ...*RawNode) (*TickSet, error) {
	s := &TickSet{}
	for _, rn := range nodes {
		if err := s.Add(rn); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add puts rn in the set. Errors: ErrClosed for a closed node,
// ErrInvalidArg when rn is in a set already.
func (s *TickSet) Add(rn *RawNode) error {
	if rn == nil || rn.h.p == nil {
		return ErrClosed
	}
	if rn.set != nil {
		return &Error{CodeInvalidArg, "the node is in a TickSet already"}
	}
	rn.set, rn.slot = s, len(s.nodes)
	rn.hrOK = false
	if rn.applyOwed != 0 {
		s.owing = append(s.owing, rn)
	}
	s.nodes = append(s.nodes, rn)
	s.ptrs = append(s.ptrs, rn.h.p)
	return nil
}

// remove takes rn out of the set (the last node takes its slot).
func (s *TickSet) remove(rn *RawNode) {
	i, last := rn.slot, len(s.nodes)-1
	s.nodes[i], s.ptrs[i] = s.nodes[last], s.ptrs[last]
	s.nodes[i].slot = i
	s.nodes[last], s.ptrs[last] = nil, nil
	s.nodes, s.ptrs = s.nodes[:last], s.ptrs[:last]
	rn.set, rn.slot = nil, 0
	rn.hrOK = false
}

// Remove takes rn out of the set; false when it was not in it.
func (s *TickSet) Remove(rn *RawNode) bool {
	if rn == nil || rn.set != s {
		return false
	}
	s.remove(rn)
	return true
}

// Len is the number of nodes in the set.
func (s *TickSet) Len() int { return len(s.nodes) }

// Node is the node at index i (indexes change when a node leaves: the
// last one takes its place).
func (s *TickSet) Node(i int) *RawNode { return s.nodes[i] }

// Tick ticks every node once, in one cgo crossing, and records which
// have a Ready (HasReady). Error: ErrPanic when a node is poisoned (the
// others are ticked all the same).
func (s *TickSet) Tick() error {
	s.epoch++
	n := len(s.ptrs)
	if cap(s.bitmap) < (n+7)/8 {
		s.bitmap = make([]byte, (n+7)/8)
	}
	s.bitmap = s.bitmap[:(n+7)/8]
	s.owedNodes, s.owedIndex = s.owedNodes[:0], s.owedIndex[:0]
	for i, rn := range s.owing {
		// Nodes that left the set, closed or paid since are skipped.
		if rn.set == s && rn.h.p != nil && rn.applyOwed != 0 {
			s.owedNodes = append(s.owedNodes, nodeH(rn.h.p))
			s.owedIndex = append(s.owedIndex, C.uint64_t(rn.applyOwed))
			rn.applyOwed = 0
		}
		s.owing[i] = nil
	}
	s.owing = s.owing[:0]
	err := cTickMany(s.ptrs, s.bitmap, s.owedNodes, s.owedIndex)
	runtime.KeepAlive(s)
	return err
}

// HasReady reports whether node i had a Ready after the last Tick.
func (s *TickSet) HasReady(i int) bool {
	return i >= 0 && i/8 < len(s.bitmap) && s.bitmap[i/8]&(1<<(i%8)) != 0
}

// Busy appends to out the indexes of the nodes that had a Ready after the
// last Tick and returns it.
func (s *TickSet) Busy(out []int) []int {
	for b, w := range s.bitmap {
		for w != 0 {
			j := bits.TrailingZeros8(w)
			out = append(out, b*8+j)
			w &= w - 1
		}
	}
	return out
}
