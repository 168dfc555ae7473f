package raftlet

import (
	"errors"
	"runtime"

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
	// Reused buffers: the encoding of the message being stepped and the
	// ConfState written by ApplyConfChange.
	stepBuf []byte
	csBuf   []byte
}

// nodeHandle owns the C node and the C readies handed out and not yet
// advanced; it is the cleanup's argument, so it must not point back to
// the RawNode.
type nodeHandle struct {
	p       cNode
	pending []*readyHandle
}

func (h *nodeHandle) free() {
	for _, r := range h.pending {
		cReadyFree(r.p)
		r.p, r.env = nil, nil
	}
	h.pending = nil
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
	rn.h.free()
	return nil
}

func (rn *RawNode) ptr() (cNode, error) {
	if rn == nil || rn.h.p == nil {
		return nil, ErrClosed
	}
	return rn.h.p, nil
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
	must(cNodeTick(p))
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
	err = cNodePropose(p, data)
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
	if rn.csBuf == nil {
		rn.csBuf = make([]byte, 512)
	}
	n, err := cNodeApplyConfChange(p, data, typ == raftpb.EntryConfChangeV2, rn.csBuf)
	runtime.KeepAlive(rn)
	if err != nil {
		return nil, err
	}
	if n > len(rn.csBuf) {
		// Applied, but the ConfState did not fit: read it again.
		return rn.confState()
	}
	cs := &raftpb.ConfState{}
	if err := cs.Unmarshal(rn.csBuf[:n]); err != nil {
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
	if rn.csBuf == nil {
		rn.csBuf = make([]byte, 512)
	}
	for {
		n, err := cNodeConfState(p, rn.csBuf)
		if err != nil {
			return nil, err
		}
		if n <= len(rn.csBuf) {
			runtime.KeepAlive(rn)
			cs := &raftpb.ConfState{}
			if err := cs.Unmarshal(rn.csBuf[:n]); err != nil {
				return nil, err
			}
			return cs, nil
		}
		rn.csBuf = make([]byte, n)
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
	n := m.Size()
	if cap(rn.stepBuf) < n {
		rn.stepBuf = make([]byte, n, n+n/2)
	}
	buf := rn.stepBuf[:n]
	if _, err := m.MarshalToSizedBuffer(buf); err != nil {
		return err
	}
	err = cNodeStep(p, buf)
	runtime.KeepAlive(rn)
	if cap(rn.stepBuf) > 1<<20 {
		rn.stepBuf = nil // do not pin a large snapshot's buffer
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
	err = cNodeStep(p, msg)
	runtime.KeepAlive(rn)
	return err
}

// HasReady reports whether a Ready with work in it is available.
func (rn *RawNode) HasReady() bool {
	p, err := rn.ptr()
	must(err)
	has, err := cNodeHasReady(p)
	must(err)
	runtime.KeepAlive(rn)
	return has
}

// Ready returns the next batch of work. It must be handed back to Advance
// once handled. The whole Ready crosses from the library in one call.
func (rn *RawNode) Ready() Ready {
	p, err := rn.ptr()
	must(err)
	crd, view, err := cNodeReady(p)
	must(err)
	rd := Ready{h: &readyHandle{p: crd, env: view}, rn: rn}
	err = decodeReady(view, &rd)
	if err == nil {
		rd.MembershipEvents, err = cReadyMembershipEvents(crd)
	}
	runtime.KeepAlive(rn)
	if err != nil {
		cReadyFree(crd)
		panic(err)
	}
	rn.h.pending = append(rn.h.pending, rd.h)
	return rd
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
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	if rd.h == nil || rd.rn != rn {
		return &Error{CodeReadyForeign, "the Ready was not handed out by this node"}
	}
	if rd.h.p == nil {
		return &Error{CodeReadyStale, "the Ready was already advanced or released"}
	}
	err = cNodeAdvance(p, rd.h.p)
	runtime.KeepAlive(rn)
	if err != nil {
		return err
	}
	rd.h.p, rd.h.env = nil, nil
	// Earlier readies are covered by this one: release them.
	for i, r := range rn.h.pending {
		if r == rd.h {
			for _, old := range rn.h.pending[:i] {
				cReadyFree(old.p)
				old.p, old.env = nil, nil
			}
			rn.h.pending = append(rn.h.pending[:0], rn.h.pending[i+1:]...)
			break
		}
	}
	return nil
}

// ReadIndex requests a linearizable read; the answer comes as a ReadState
// carrying rctx in a later Ready. It returns ErrNoLeader when no leader is
// known (etcd drops the request silently; the error may be ignored).
func (rn *RawNode) ReadIndex(rctx []byte) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	err = cNodeReadIndex(p, rctx)
	runtime.KeepAlive(rn)
	return err
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
