package raftlet

import (
	"fmt"
	"runtime"

	"go.etcd.io/raft/v3/raftpb"
)

// StateType is a node's role (etcd's raft.StateType, same values and names).
type StateType uint64

// The roles.
const (
	StateFollower StateType = iota
	StateCandidate
	StateLeader
	StatePreCandidate
)

var stateNames = [...]string{"StateFollower", "StateCandidate", "StateLeader", "StatePreCandidate"}

// String gives etcd's name, e.g. "StateLeader".
func (st StateType) String() string {
	if int(st) < len(stateNames) {
		return stateNames[st]
	}
	return fmt.Sprintf("StateType(%d)", uint64(st))
}

// SoftState is volatile state: the known leader and this node's role. It
// need not be persisted.
type SoftState struct {
	Lead      uint64
	RaftState StateType
}

// ReadState answers a ReadIndex request: once the host has applied up to
// Index, a read issued before the request is linearizable. RequestCtx is
// the context passed to ReadIndex.
type ReadState struct {
	Index      uint64
	RequestCtx []byte
}

// Ready is a batch of work for the host (etcd's raft.Ready): state to
// persist, messages to send and entries to apply. Handle it in this order:
// persist Snapshot, Entries and HardState (MemoryStorage.AppendReady; fsync
// when MustSync), send Messages (only after the write, as etcd's contract
// says), apply CommittedEntries in order (passing conf changes to
// RawNode.ApplyConfChange), then call RawNode.Advance.
//
// Messages holds both of the core's lists: those that need nothing
// durable (a leader's appends and heartbeats in a durable term, heartbeat
// responses, pre-vote requests, forwarded proposals and reads) and those
// that must wait for the write (vote requests, vote and append responses,
// anything sent while the node's term or vote was not yet durable). Sending
// all of them after the write is always safe; the C ABI and the Rust and
// Python APIs keep the two lists apart for hosts that send early.
type Ready struct {
	// SoftState is non-nil when the leader or the role changed.
	*SoftState

	// HardState is the state to persist; empty when unchanged.
	raftpb.HardState

	// ReadStates answer ReadIndex requests.
	ReadStates []ReadState

	// Entries are to be appended to stable storage before Messages are sent.
	Entries []raftpb.Entry

	// Snapshot is to be saved to stable storage (and the state machine),
	// when not empty.
	Snapshot raftpb.Snapshot

	// CommittedEntries are to be applied to the state machine, in order.
	CommittedEntries []raftpb.Entry

	// MembershipEvents are the membership changes the leader proposed by
	// itself since the previous Ready (Config.AutoPromote and
	// Config.StandbyPromotion), for the host's log (raftlet only).
	MembershipEvents []MembershipEvent

	// Messages are to be sent once Entries, HardState and Snapshot are
	// durable. The ones raftlet allows sending at once come first; the
	// responses that wait for the write follow. A MsgSnap among them must
	// be followed by RawNode.ReportSnapshot.
	Messages []raftpb.Message

	// MustSync tells whether HardState and Entries must be synced to disk:
	// they hold entries, change the term or vote, or CommittedEntries holds
	// a configuration change no durable commit index covers yet (HardState
	// then carries one that does). Apply such a change only once the write
	// is durable, even when other entries are applied earlier.
	MustSync bool

	// immediate is how many of Messages (the first ones) may be sent at once.
	immediate int

	h   *readyHandle // the C ready, until Advance
	gen uint64       // h's generation when this Ready was taken
	rn  *RawNode     // keeps the node (and so the C ready) alive
}

// ImmediateMessages returns the first messages of Messages: those that may
// be sent at once, before or while the Ready is written (the C ABI's
// messages). The slice shares Messages' array.
func (rd *Ready) ImmediateMessages() []raftpb.Message {
	return rd.Messages[:rd.immediate]
}

// PersistedMessages returns the rest of Messages: those that may be sent
// only once the writes of this Ready and of every earlier Ready are
// durable (the C ABI's persisted_messages). The slice shares Messages'
// array; EncodedMessages gives both lists in the same order, so the
// encoded bytes of these are EncodedMessages()[len(ImmediateMessages()):].
func (rd *Ready) PersistedMessages() []raftpb.Message {
	return rd.Messages[rd.immediate:]
}

// EncodedMessages returns Messages as raftlet encoded them (raftpb bytes,
// in the same order), so that a transport can send them without encoding
// them again in Go. The bytes are copies. It must be called before
// Advance: afterwards it returns ErrReadyStale.
func (rd *Ready) EncodedMessages() ([][]byte, error) {
	v := ReadyView{h: rd.h, gen: rd.gen, rn: rd.rn}
	msgs, err := v.Messages()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(msgs))
	for i := range msgs {
		out[i] = append([]byte(nil), msgs[i].Data()...)
	}
	runtime.KeepAlive(rd.rn)
	return out, nil
}

// MessageHeader is the routing part of a raftpb-encoded message.
type MessageHeader struct {
	Type     raftpb.MessageType
	To, From uint64
	Term     uint64
}

// DecodeMessageHeader validates a raftpb-encoded message with raftlet's
// decoder and returns its routing fields, for transports that route bytes
// without decoding them. A malformed message gives ErrDecode.
func DecodeMessageHeader(b []byte) (MessageHeader, error) {
	typ, to, from, term, err := cMessageDecodeHeader(b)
	if err != nil {
		return MessageHeader{}, err
	}
	return MessageHeader{Type: raftpb.MessageType(typ), To: to, From: from, Term: term}, nil
}

// containsUpdates reports whether the Ready holds anything.
func (rd *Ready) containsUpdates() bool {
	return rd.SoftState != nil || !IsEmptyHardState(rd.HardState) ||
		!IsEmptySnap(rd.Snapshot) || len(rd.Entries) > 0 ||
		len(rd.CommittedEntries) > 0 || len(rd.Messages) > 0 || len(rd.ReadStates) > 0
}
