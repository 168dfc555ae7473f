package raftlet

import (
	"errors"
	"fmt"
)

// Code is a raftlet_result code of the C ABI. The numbers are fixed
// forever (include/raftlet.h).
type Code uint32

// The result codes of the C ABI.
const (
	CodeOK                             Code = 0
	CodeProposalDropped                Code = 1
	CodeStepLocalMsg                   Code = 2
	CodeStepPeerNotFound               Code = 3
	CodeCompacted                      Code = 4
	CodeUnavailable                    Code = 5
	CodeSnapOutOfDate                  Code = 6
	CodeSnapshotTemporarilyUnavailable Code = 7
	CodeStorage                        Code = 8
	CodeConfigInvalid                  Code = 9
	CodeDecode                         Code = 10
	CodeConfChangeRefused              Code = 11
	CodePromotionNotReady              Code = 12
	CodeTooManyLearners                Code = 13
	CodeTransferRefused                Code = 14
	CodeNoLeader                       Code = 15
	CodeInvalidState                   Code = 16
	CodeInvalidMessage                 Code = 17
	CodeNullArg                        Code = 100
	CodeInvalidArg                     Code = 101
	CodeReadyStale                     Code = 102
	CodeReadyForeign                   Code = 103
	CodeReadyNotPersisted              Code = 104
	CodePanic                          Code = 200
)

// String gives the C name of the code, e.g. "RAFTLET_ERR_PROPOSAL_DROPPED".
func (c Code) String() string { return cResultName(c) }

// Error is a failure reported by raftlet: the C result code and the
// library's message. Use errors.Is with the Err* sentinels to test for a
// kind of failure: an *Error matches the sentinel of its Code.
type Error struct {
	Code Code
	Msg  string
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("raftlet: %s", e.Code)
	}
	return fmt.Sprintf("raftlet: %s (%s)", e.Msg, e.Code)
}

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, raftlet.ErrProposalDropped) holds for every dropped
// proposal whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// The sentinel errors, one per result code. Compare with errors.Is.
var (
	// ErrProposalDropped: the proposal was dropped (no leader, forwarding
	// disabled, a leader transfer under way, or the uncommitted budget
	// exhausted). The caller should retry or give up; etcd's
	// raft.ErrProposalDropped.
	ErrProposalDropped = &Error{CodeProposalDropped, "raft proposal dropped"}
	// ErrStepLocalMsg: a local-only message type was passed to Step.
	ErrStepLocalMsg = &Error{CodeStepLocalMsg, "raft: cannot step raft local message"}
	// ErrStepPeerNotFound: a response from a peer that is not in the configuration.
	ErrStepPeerNotFound = &Error{CodeStepPeerNotFound, "raft: cannot step as peer not found"}
	// ErrCompacted: the requested index was compacted away.
	ErrCompacted = &Error{CodeCompacted, "requested index is unavailable due to compaction"}
	// ErrUnavailable: the requested index is not available yet.
	ErrUnavailable = &Error{CodeUnavailable, "requested entry at index is unavailable"}
	// ErrSnapOutOfDate: the snapshot is older than the one held.
	ErrSnapOutOfDate = &Error{CodeSnapOutOfDate, "requested index is older than the existing snapshot"}
	// ErrSnapshotTemporarilyUnavailable: the snapshot is being prepared.
	ErrSnapshotTemporarilyUnavailable = &Error{CodeSnapshotTemporarilyUnavailable, "snapshot is temporarily unavailable"}
	// ErrStorage: another storage failure.
	ErrStorage = &Error{CodeStorage, "storage failure"}
	// ErrConfigInvalid: the Config is invalid; the message names the field.
	ErrConfigInvalid = &Error{CodeConfigInvalid, "invalid configuration"}
	// ErrDecode: bytes could not be decoded as raftpb.
	ErrDecode = &Error{CodeDecode, "malformed raftpb bytes"}
	// ErrConfChangeRefused: a configuration change was refused.
	ErrConfChangeRefused = &Error{CodeConfChangeRefused, "configuration change refused"}
	// ErrPromotionNotReady: promoting a learner was refused because it has
	// not caught up with the leader yet; retry later.
	ErrPromotionNotReady = &Error{CodePromotionNotReady, "learner not caught up: promotion refused"}
	// ErrTooManyLearners: one more learner than Config.MaxLearners.
	ErrTooManyLearners = &Error{CodeTooManyLearners, "too many learners"}
	// ErrTransferRefused: a leader transfer was refused.
	ErrTransferRefused = &Error{CodeTransferRefused, "leader transfer refused"}
	// ErrNoLeader: no leader is known.
	ErrNoLeader = &Error{CodeNoLeader, "no leader"}
	// ErrInvalidState: the operation does not fit the node's state (e.g.
	// Bootstrap of a non-empty storage).
	ErrInvalidState = &Error{CodeInvalidState, "invalid state"}
	// ErrInvalidMessage: Step refused a message before it reached the
	// node: an unknown message type, a term or index above 2^63-1, or a
	// peer message from an id that cannot be a member. Nothing changed.
	ErrInvalidMessage = &Error{CodeInvalidMessage, "invalid message"}
	// ErrNullArg: a required argument was missing (a bug in this binding).
	ErrNullArg = &Error{CodeNullArg, "NULL argument"}
	// ErrInvalidArg: an argument was out of range or malformed.
	ErrInvalidArg = &Error{CodeInvalidArg, "invalid argument"}
	// ErrReadyStale: the Ready was already advanced, or it is out of
	// order: a later Ready of its node was advanced (which released it),
	// or persisted to the storage before it (MemoryStorage.AppendReady).
	// Nothing was written or acknowledged.
	ErrReadyStale = &Error{CodeReadyStale, "the Ready was already advanced"}
	// ErrReadyForeign: the Ready was not handed out by this node's Ready
	// (another node's, or one built by hand). Nothing was acknowledged.
	ErrReadyForeign = &Error{CodeReadyForeign, "the Ready was handed out by another node"}
	// ErrReadyNotPersisted: the Ready cannot be advanced because its
	// entries or snapshot (or those of an earlier Ready it would cover)
	// are not in the node's storage: persist it first
	// (MemoryStorage.AppendReady). Nothing was acknowledged.
	ErrReadyNotPersisted = &Error{CodeReadyNotPersisted, "the Ready is not persisted"}
	// ErrPanic: the library caught a panic (a bug in raftlet); the node is
	// poisoned and refuses every later call.
	ErrPanic = &Error{CodePanic, "panic inside raftlet"}
)

// ErrClosed is returned by the methods of a RawNode or MemoryStorage after
// Close.
var ErrClosed = errors.New("raftlet: use of a closed handle")

// isCode reports whether err is an *Error with code c.
func isCode(err error, c Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == c
}
