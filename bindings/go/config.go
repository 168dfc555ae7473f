package raftlet

// ReadOnlyOption chooses how ReadIndex requests are served (etcd's
// raft.ReadOnlyOption, same values).
type ReadOnlyOption int

const (
	// ReadOnlySafe confirms leadership with a heartbeat round (the default).
	ReadOnlySafe ReadOnlyOption = iota
	// ReadOnlyLeaseBased relies on the leader lease; it requires CheckQuorum
	// and is affected by clock drift.
	ReadOnlyLeaseBased
)

// Config holds the parameters of a RawNode. Fields named as in etcd's
// raft.Config have etcd's meaning, zero values included: a Config literal
// that only sets ID, ElectionTick, HeartbeatTick, Storage and
// MaxInflightMsgs behaves as the same etcd Config would (check-quorum and
// pre-vote off). DefaultConfig gives raftlet's defaults instead
// (check-quorum and pre-vote on).
type Config struct {
	// ID is the identity of the local node. It cannot be 0.
	ID uint64
	// ElectionTick is the number of Tick calls without hearing from a
	// leader before a follower campaigns; it must exceed HeartbeatTick.
	// The actual timeout is drawn from [ElectionTick, 2*ElectionTick) by
	// a seeded generator (see Seed).
	ElectionTick int
	// HeartbeatTick is the number of Tick calls between heartbeats.
	HeartbeatTick int
	// Storage holds the node's log and state. It must not be nil. The node
	// keeps its own reference: the host may Close its MemoryStorage
	// handle once it no longer writes to it.
	Storage *MemoryStorage
	// Applied is the last applied index, for restarts.
	Applied uint64
	// MaxSizePerMsg limits the bytes of entries in one append message
	// (0: one entry per message).
	MaxSizePerMsg uint64
	// MaxCommittedSizePerReady limits the bytes of committed entries per
	// Ready (0: MaxSizePerMsg).
	MaxCommittedSizePerReady uint64
	// MaxUncommittedEntriesSize limits the bytes of uncommitted entries on
	// the leader (0: unlimited).
	MaxUncommittedEntriesSize uint64
	// MaxInflightMsgs limits the append messages in flight per follower;
	// it must be positive.
	MaxInflightMsgs int
	// MaxInflightBytes limits the bytes in flight per follower (0: unlimited).
	MaxInflightBytes uint64
	// CheckQuorum makes a leader step down when it does not hear from a
	// quorum within an election timeout.
	CheckQuorum bool
	// PreVote runs a pre-election before a real one, so a partitioned node
	// does not disrupt the cluster when it rejoins.
	PreVote bool
	// ReadOnlyOption chooses how ReadIndex is served.
	ReadOnlyOption ReadOnlyOption
	// DisableProposalForwarding makes followers drop proposals instead of
	// forwarding them to the leader.
	DisableProposalForwarding bool
	// DisableConfChangeValidation skips the checks a leader makes when a
	// conf change is proposed.
	DisableConfChangeValidation bool
	// StepDownOnRemoval makes a leader step down when it is removed or
	// demoted.
	StepDownOnRemoval bool

	// PromoteMaxLag is how many entries a learner may lag behind the
	// leader and still be promoted (raftlet only; 0: the default, 1000).
	PromoteMaxLag uint64
	// MaxLearners is the most learners the configuration may hold
	// (raftlet only; 0: the default, 1).
	MaxLearners int
	// Seed seeds the election-timeout generator (raftlet only). 0, the
	// zero value, draws a seed from the OS each time a node is created,
	// as etcd does; any other value makes the timeouts reproducible
	// (tests, simulations).
	Seed uint64
	// CoalesceAppends sends the entries of all proposals made between two
	// Readies in one append per follower (raftlet only). Off, as the zero
	// value, it sends one append per proposal, as etcd does.
	CoalesceAppends bool

	// LearnerFirst makes RawNode.AddMember propose a new member as a
	// learner, to be promoted once caught up, so that a member that never
	// answers (a wrong address) never changes the quorum (raftlet only).
	// On in DefaultConfig; off, as the zero value, AddMember adds a voter.
	LearnerFirst bool
	// AutoPromote makes the leader promote a learner by itself once it is
	// within PromoteMaxLag entries (a lagging voter would stall commits),
	// active in PromoteMinActiveRounds consecutive check-quorum rounds (a
	// silent voter weakens the quorum), not being sent a snapshot, and no
	// other change is pending (raftlet only; needs CheckQuorum). Each
	// promotion is reported in Ready.MembershipEvents.
	AutoPromote bool
	// PromoteMinActiveRounds is how many consecutive check-quorum rounds
	// (ElectionTick ticks each) a learner must have answered in before it
	// is promoted automatically or as a standby (0 means 3).
	PromoteMinActiveRounds uint32
	// StandbyPromotion makes the leader replace a voter silent for
	// StandbyDeadRounds check-quorum rounds by a caught-up learner, in one
	// joint change that keeps the voter count and the quorum size; never
	// without a quorum, never two at once (raftlet only; needs CheckQuorum).
	StandbyPromotion bool
	// StandbyDeadRounds is how many consecutive silent check-quorum rounds
	// make a voter count as failed for StandbyPromotion (0 means 3; at
	// least 2, so that one lost round never swaps a voter out).
	StandbyDeadRounds uint32
	// LearnerForwardsProposals makes a learner forward proposals to the
	// leader, as etcd does; off, a learner refuses them with
	// ErrProposalDropped (a read-only learner). On in DefaultConfig.
	LearnerForwardsProposals bool
	// Quiesce lets an idle group sleep (raftlet only; off by default):
	// once everything is committed, applied and acknowledged by every
	// peer, the leader asks its followers to stop ticking; a quiesced
	// node ignores Tick until a message, a proposal or a read wakes it,
	// or the host calls WakeLeaderLost when the leader's node has been
	// silent for an election timeout. With a peer that does not quiesce
	// (an etcd node) the group never quiesces. See docs/architecture.md,
	// "Quiescence".
	Quiesce bool
}

// DefaultConfig returns raftlet's defaults for node id: ElectionTick 10,
// HeartbeatTick 1, MaxSizePerMsg 1 MiB, MaxInflightMsgs 256, CheckQuorum,
// PreVote, StepDownOnRemoval and CoalesceAppends on. Set Storage before
// passing it to NewRawNode.
func DefaultConfig(id uint64) Config {
	return Config{
		ID:                id,
		ElectionTick:      10,
		HeartbeatTick:     1,
		MaxSizePerMsg:     1 << 20,
		MaxInflightMsgs:   256,
		CheckQuorum:       true,
		PreVote:           true,
		StepDownOnRemoval: true,
		CoalesceAppends:   true,

		LearnerFirst:             true,
		LearnerForwardsProposals: true,
	}
}

// toC converts the configuration, rejecting values C cannot take.
func (c *Config) toC() (*cConfig, error) {
	if c.Storage == nil {
		return nil, &Error{CodeConfigInvalid, "Storage must not be nil"}
	}
	if c.ElectionTick < 0 || c.HeartbeatTick < 0 || c.MaxInflightMsgs < 0 || c.MaxLearners < 0 {
		return nil, &Error{CodeConfigInvalid, "ElectionTick, HeartbeatTick, MaxInflightMsgs and MaxLearners must not be negative"}
	}
	if c.ReadOnlyOption != ReadOnlySafe && c.ReadOnlyOption != ReadOnlyLeaseBased {
		return nil, &Error{CodeConfigInvalid, "ReadOnlyOption must be ReadOnlySafe or ReadOnlyLeaseBased"}
	}
	cc := &cConfig{
		id:                          c.ID,
		electionTick:                uint64(c.ElectionTick),
		heartbeatTick:               uint64(c.HeartbeatTick),
		applied:                     c.Applied,
		maxSizePerMsg:               c.MaxSizePerMsg,
		maxCommittedSizePerReady:    c.MaxCommittedSizePerReady,
		maxUncommittedEntriesSize:   c.MaxUncommittedEntriesSize,
		maxInflightMsgs:             uint64(c.MaxInflightMsgs),
		maxInflightBytes:            c.MaxInflightBytes,
		promoteMaxLag:               c.PromoteMaxLag,
		maxLearners:                 uint64(c.MaxLearners),
		seed:                        c.Seed,
		readOnlyOption:              uint32(c.ReadOnlyOption),
		checkQuorum:                 c.CheckQuorum,
		preVote:                     c.PreVote,
		disableProposalForwarding:   c.DisableProposalForwarding,
		disableConfChangeValidation: c.DisableConfChangeValidation,
		stepDownOnRemoval:           c.StepDownOnRemoval,
		coalesce:                    c.CoalesceAppends,
		promoteMinActiveRounds:      uint64(c.PromoteMinActiveRounds),
		standbyDeadRounds:           uint64(c.StandbyDeadRounds),
		learnerFirst:                c.LearnerFirst,
		autoPromote:                 c.AutoPromote,
		standbyPromotion:            c.StandbyPromotion,
		learnerForwardsProposals:    c.LearnerForwardsProposals,
		quiesce:                     c.Quiesce,
	}
	if cc.promoteMinActiveRounds == 0 {
		cc.promoteMinActiveRounds = 3
	}
	if cc.standbyDeadRounds == 0 {
		cc.standbyDeadRounds = 3
	}
	if cc.promoteMaxLag == 0 {
		cc.promoteMaxLag = 1000
	}
	if cc.maxLearners == 0 {
		cc.maxLearners = 1
	}
	return cc, nil
}
