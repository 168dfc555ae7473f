package raftlet

import (
	"encoding/binary"
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
// all of them after the write is always safe; a host that sends early
// splits them with ImmediateMessages and PersistedMessages, the two lists
// of the C ABI and the Rust and Python APIs.
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

	// MustSync tells whether HardState and Entries must be synced to disk.
	MustSync bool

	// immediate is how many of Messages (the first ones) may be sent at once.
	immediate int

	h  *readyHandle // the C ready, until Advance
	rn *RawNode     // keeps the node (and so the C ready) alive
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

// readyHandle owns a C ready between RawNode.Ready and RawNode.Advance.
type readyHandle struct {
	p   cReady
	env []byte // the envelope: C memory owned by p
}

// EncodedMessages returns Messages as raftlet encoded them (raftpb bytes,
// in the same order), so that a transport can send them without encoding
// them again in Go. The bytes are copies. It must be called before
// Advance: afterwards it returns ErrReadyStale.
func (rd *Ready) EncodedMessages() ([][]byte, error) {
	if rd.h == nil || rd.h.p == nil {
		return nil, ErrReadyStale
	}
	out := make([][]byte, 0, len(rd.Messages))
	// The immediate messages first, then the persisted ones, as in Messages.
	for _, want := range [2]uint64{envMessages, envPersistedMessages} {
		buf := rd.h.env
		for len(buf) > 0 {
			num, _, _, payload, rest, err := field(buf)
			if err != nil {
				return nil, err
			}
			buf = rest
			if num == want {
				out = append(out, append([]byte(nil), payload...))
			}
		}
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

// The fields of the ready envelope (raftlet_ready_encode).
const (
	envMessages          = 1
	envPersistedMessages = 2
	envEntries           = 3
	envCommittedEntries  = 4
	envHardState         = 5
	envSoftState         = 6
	envSnapshot          = 7
	envReadStates        = 8
	envMustSync          = 9
)

// field reads one protobuf field: its number, wire type, and either its
// varint value or its payload.
func field(buf []byte) (num uint64, wire uint64, v uint64, payload []byte, rest []byte, err error) {
	key, n := binary.Uvarint(buf)
	if n <= 0 {
		return 0, 0, 0, nil, nil, fmt.Errorf("raftlet: bad field key in ready envelope")
	}
	buf = buf[n:]
	num, wire = key>>3, key&7
	switch wire {
	case 0:
		v, n = binary.Uvarint(buf)
		if n <= 0 {
			return 0, 0, 0, nil, nil, fmt.Errorf("raftlet: bad varint in ready envelope")
		}
		return num, wire, v, nil, buf[n:], nil
	case 2:
		l, n := binary.Uvarint(buf)
		if n <= 0 || l > uint64(len(buf)-n) {
			return 0, 0, 0, nil, nil, fmt.Errorf("raftlet: bad length in ready envelope")
		}
		end := n + int(l)
		return num, wire, 0, buf[n:end], buf[end:], nil
	default:
		return 0, 0, 0, nil, nil, fmt.Errorf("raftlet: unexpected wire type %d in ready envelope", wire)
	}
}

// count tells how many fields of each number the envelope holds, to size
// the slices once.
func countFields(buf []byte) (counts [envMustSync + 1]int, err error) {
	for len(buf) > 0 {
		num, _, _, _, rest, err := field(buf)
		if err != nil {
			return counts, err
		}
		if num < uint64(len(counts)) {
			counts[num]++
		}
		buf = rest
	}
	return counts, nil
}

// decodeReady fills rd from a ready envelope. The byte fields it decodes
// are copied (gogoproto's Unmarshal copies), so buf may be C memory freed
// afterwards.
func decodeReady(buf []byte, rd *Ready) error {
	counts, err := countFields(buf)
	if err != nil {
		return err
	}
	if n := counts[envMessages] + counts[envPersistedMessages]; n > 0 {
		rd.Messages = make([]raftpb.Message, n)
	}
	// Immediate messages fill Messages from the front, persisted ones
	// follow them, whatever the order of the envelope.
	rd.immediate = counts[envMessages]
	nextImmediate, nextPersisted := 0, rd.immediate
	if n := counts[envEntries]; n > 0 {
		rd.Entries = make([]raftpb.Entry, 0, n)
	}
	if n := counts[envCommittedEntries]; n > 0 {
		rd.CommittedEntries = make([]raftpb.Entry, 0, n)
	}
	if n := counts[envReadStates]; n > 0 {
		rd.ReadStates = make([]ReadState, 0, n)
	}
	for len(buf) > 0 {
		num, _, v, payload, rest, err := field(buf)
		if err != nil {
			return err
		}
		buf = rest
		switch num {
		case envMessages:
			err = rd.Messages[nextImmediate].Unmarshal(payload)
			nextImmediate++
		case envPersistedMessages:
			err = rd.Messages[nextPersisted].Unmarshal(payload)
			nextPersisted++
		case envEntries:
			rd.Entries = append(rd.Entries, raftpb.Entry{})
			err = rd.Entries[len(rd.Entries)-1].Unmarshal(payload)
		case envCommittedEntries:
			rd.CommittedEntries = append(rd.CommittedEntries, raftpb.Entry{})
			err = rd.CommittedEntries[len(rd.CommittedEntries)-1].Unmarshal(payload)
		case envHardState:
			err = rd.HardState.Unmarshal(payload)
		case envSoftState:
			ss := &SoftState{}
			for len(payload) > 0 {
				n, _, x, _, r, e := field(payload)
				if e != nil {
					return e
				}
				payload = r
				switch n {
				case 1:
					ss.Lead = x
				case 2:
					ss.RaftState = StateType(x)
				}
			}
			rd.SoftState = ss
		case envSnapshot:
			err = rd.Snapshot.Unmarshal(payload)
		case envReadStates:
			var rs ReadState
			for len(payload) > 0 {
				n, _, x, p, r, e := field(payload)
				if e != nil {
					return e
				}
				payload = r
				switch n {
				case 1:
					rs.Index = x
				case 2:
					rs.RequestCtx = append([]byte(nil), p...)
				}
			}
			rd.ReadStates = append(rd.ReadStates, rs)
		case envMustSync:
			rd.MustSync = v != 0
		}
		if err != nil {
			return fmt.Errorf("raftlet: ready envelope field %d: %w", num, err)
		}
	}
	return nil
}
