package raftlet

import (
	"fmt"
	"runtime"

	"go.etcd.io/raft/v3/raftpb"
)

// ProgressStateType is the replication state of a follower, as the leader
// sees it (etcd's tracker.StateType, same values and names).
type ProgressStateType uint64

// The replication states.
const (
	// StateProbe: the leader sends one append per heartbeat until it finds
	// where the follower's log matches.
	StateProbe ProgressStateType = iota
	// StateReplicate: the leader streams appends.
	StateReplicate
	// StateSnapshot: the follower needs a snapshot; appends are paused.
	StateSnapshot
)

var progressStateNames = [...]string{"StateProbe", "StateReplicate", "StateSnapshot"}

// String gives etcd's name, e.g. "StateReplicate".
func (st ProgressStateType) String() string {
	if int(st) < len(progressStateNames) {
		return progressStateNames[st]
	}
	return fmt.Sprintf("ProgressStateType(%d)", uint64(st))
}

// Progress is a follower's replication progress as the leader sees it
// (the fields of etcd's tracker.Progress that raftlet reports).
type Progress struct {
	Match, Next     uint64
	State           ProgressStateType
	PendingSnapshot uint64
	RecentActive    bool
	IsLearner       bool
}

// BasicStatus is the cheap part of a node's status (etcd's raft.BasicStatus).
type BasicStatus struct {
	ID uint64

	raftpb.HardState
	SoftState

	Applied uint64

	LeadTransferee uint64
}

// Status is a node's status (etcd's raft.Status): BasicStatus, the
// configuration, and on the leader every member's progress.
type Status struct {
	BasicStatus
	// Config is the active configuration (voters, learners, and the
	// outgoing half of a joint configuration).
	Config raftpb.ConfState
	// Progress has an entry per member on the leader; it is nil elsewhere.
	Progress map[uint64]Progress
	// Learners is every learner as the leader sees it, by ascending id:
	// lag, activity and whether it could be promoted now (raftlet only);
	// nil unless this node leads.
	Learners []LearnerStatus
}

func basicOf(st cStatus) BasicStatus {
	return BasicStatus{
		ID:             st.id,
		HardState:      raftpb.HardState{Term: st.term, Vote: st.vote, Commit: st.commit},
		SoftState:      SoftState{Lead: st.lead, RaftState: StateType(st.role)},
		Applied:        st.applied,
		LeadTransferee: st.leadTransferee,
	}
}

// BasicStatus returns the node's basic status: one call into the library
// that copies a few numbers, not the configuration or the progress (cheap
// enough for every loop iteration).
func (rn *RawNode) BasicStatus() BasicStatus {
	p, err := rn.ptr()
	must(err)
	st, err := cNodeBasicStatus(p)
	must(err)
	runtime.KeepAlive(rn)
	return basicOf(st)
}

// Status returns the node's full status.
func (rn *RawNode) Status() Status {
	p, err := rn.ptr()
	must(err)
	prs := newProgressBuf(8)
	st, err := cNodeStatus(p, prs)
	must(err)
	if st.progressCount > len(prs) {
		prs = newProgressBuf(st.progressCount)
		st, err = cNodeStatus(p, prs)
		must(err)
	}
	cs, err := rn.confState()
	must(err)
	learners, err := cNodeLearners(p)
	must(err)
	runtime.KeepAlive(rn)
	s := Status{BasicStatus: basicOf(st), Config: *cs, Learners: learners}
	if st.progressCount > 0 {
		n := st.progressCount
		if n > len(prs) {
			n = len(prs)
		}
		s.Progress = make(map[uint64]Progress, n)
		for i := 0; i < n; i++ {
			id, match, next, state, learner, active, pending := progressFields(&prs[i])
			s.Progress[id] = Progress{
				Match: match, Next: next, State: ProgressStateType(state),
				PendingSnapshot: pending, RecentActive: active, IsLearner: learner,
			}
		}
	}
	return s
}

// Version is the version of the linked raftlet library ("MAJOR.MINOR.PATCH").
func Version() string { return cVersion() }
