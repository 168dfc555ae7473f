package raftlet

import (
	"fmt"
	"runtime"
)

// MembershipEventKind says what the leader proposed by itself.
type MembershipEventKind int

// The kinds of MembershipEvent (the C ABI's raftlet_membership_event_kind).
const (
	// PromotionProposed: the leader proposed promoting learner ID to voter
	// (Config.AutoPromote).
	PromotionProposed MembershipEventKind = 1
	// StandbySwapProposed: the leader proposed one joint change that
	// promotes the standby learner Promoted and demotes the silent voter
	// Demoted to learner (Config.StandbyPromotion).
	StandbySwapProposed MembershipEventKind = 2
)

// String gives the kind's name, e.g. "PromotionProposed".
func (k MembershipEventKind) String() string {
	switch k {
	case PromotionProposed:
		return "PromotionProposed"
	case StandbySwapProposed:
		return "StandbySwapProposed"
	}
	return fmt.Sprintf("MembershipEventKind(%d)", int(k))
}

// MembershipEvent is a membership change the leader proposed by itself,
// reported in Ready.MembershipEvents so that the host can log it. It takes
// effect like any other change once committed and applied.
type MembershipEvent struct {
	Kind MembershipEventKind
	// ID is the learner being promoted (the same as Promoted).
	ID uint64
	// Promoted is the learner becoming a voter.
	Promoted uint64
	// Demoted is the voter becoming a learner (0 for a plain promotion).
	Demoted uint64
	// Index is the index of the conf-change entry the leader appended.
	Index uint64
}

// NotPromotableReason says why a learner cannot be promoted now.
type NotPromotableReason int

// The reasons (the C ABI's raftlet_not_promotable).
const (
	// Promotable: nothing stands in the way (LearnerStatus.NotPromotable is nil).
	Promotable NotPromotableReason = iota
	// NotPromotableLagging: more than Config.PromoteMaxLag entries behind.
	NotPromotableLagging
	// NotPromotableInSnapshot: the leader is sending it a snapshot.
	NotPromotableInSnapshot
	// NotPromotableNotActiveLongEnough: it has not answered in
	// Config.PromoteMinActiveRounds consecutive check-quorum rounds.
	NotPromotableNotActiveLongEnough
	// NotPromotableConfChangePending: another change is pending, or the
	// configuration is joint.
	NotPromotableConfChangePending
	// NotPromotableTransferInProgress: a leader transfer is under way.
	NotPromotableTransferInProgress
)

var notPromotableNames = [...]string{
	"Promotable", "Lagging", "InSnapshot", "NotActiveLongEnough", "ConfChangePending", "TransferInProgress",
}

// String gives the reason's name, e.g. "Lagging".
func (r NotPromotableReason) String() string {
	if r >= 0 && int(r) < len(notPromotableNames) {
		return notPromotableNames[r]
	}
	return fmt.Sprintf("NotPromotableReason(%d)", int(r))
}

// NotPromotable is why a learner cannot be promoted now, with the numbers
// behind it.
type NotPromotable struct {
	Reason NotPromotableReason
	// Lag and MaxLag: for NotPromotableLagging, entries behind and the
	// threshold.
	Lag, MaxLag uint64
	// ActiveRounds and Needed: for NotPromotableNotActiveLongEnough, the
	// consecutive rounds it answered in and the rounds required.
	ActiveRounds, Needed uint64
}

// String gives a sentence for a log or a dashboard.
func (np NotPromotable) String() string {
	switch np.Reason {
	case NotPromotableLagging:
		return fmt.Sprintf("%d entries behind (at most %d allowed)", np.Lag, np.MaxLag)
	case NotPromotableInSnapshot:
		return "receiving a snapshot"
	case NotPromotableNotActiveLongEnough:
		return fmt.Sprintf("active in %d consecutive check-quorum rounds (%d needed)", np.ActiveRounds, np.Needed)
	case NotPromotableConfChangePending:
		return "another configuration change is pending"
	case NotPromotableTransferInProgress:
		return "a leader transfer is under way"
	}
	return np.Reason.String()
}

// LearnerStatus is a learner as the leader sees it (Status.Learners).
type LearnerStatus struct {
	ID uint64
	// Lag is how many entries it is behind the leader's last index.
	Lag uint64
	// RecentActive says whether it answered in the current check-quorum round.
	RecentActive bool
	// ActiveRounds is how many consecutive check-quorum rounds it answered in.
	ActiveRounds uint32
	// State is how the leader replicates to it.
	State ProgressStateType
	// NotPromotable is nil when it could be promoted now, else why not.
	NotPromotable *NotPromotable
}

// LocalRead is the answer to RawNode.ReadLocal: what a weak read sees.
type LocalRead struct {
	// Applied is the last index the host reported applied: serve the read
	// from the state machine as of this index.
	Applied uint64
	// Commit is the highest index this node knows committed; Commit -
	// Applied is how far behind the answer is by this node's knowledge.
	Commit uint64
	// Leader is the leader this node knows (0 for none).
	Leader uint64
}

// AddMember proposes adding member id with the host's context (for
// example its address): as a learner when Config.LearnerFirst is on, so
// that a member that never answers never changes the quorum and can be
// removed again without losing availability; as a voter otherwise
// (raftlet only). It returns ErrConfChangeRefused when id is already a
// member or cannot be one, and the errors of ProposeConfChange.
func (rn *RawNode) AddMember(id uint64, context []byte) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	err = cNodeAddMember(p, id, context)
	runtime.KeepAlive(rn)
	return err
}

// SetAutoPromote turns Config.AutoPromote on or off at run time (a
// promotion already proposed still takes effect). It returns
// ErrConfigInvalid when turning it on without check-quorum.
func (rn *RawNode) SetAutoPromote(on bool) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	err = cNodeSetAutoPromote(p, on)
	runtime.KeepAlive(rn)
	return err
}

// SetStandbyPromotion turns Config.StandbyPromotion on or off at run time.
// It returns ErrConfigInvalid when turning it on without check-quorum.
func (rn *RawNode) SetStandbyPromotion(on bool) error {
	p, err := rn.ptr()
	if err != nil {
		return err
	}
	err = cNodeSetStandbyPromotion(p, on)
	runtime.KeepAlive(rn)
	return err
}

// ReadLocal is a weak read: the applied index to serve it from, the commit
// index this node knows and its leader (raftlet only). For a read that
// sees every write acknowledged before it began, use ReadIndex (a learner
// forwards it to the leader) and serve it once applied up to the
// ReadState's Index.
func (rn *RawNode) ReadLocal() LocalRead {
	p, err := rn.ptr()
	must(err)
	lr, err := cNodeReadLocal(p)
	must(err)
	runtime.KeepAlive(rn)
	return lr
}
