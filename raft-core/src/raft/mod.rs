//! The Raft state machine: roles, terms and the step dispatch.
//!
//! Ported from etcd-io/raft raft.go (v3.6). The code is split by concern:
//! this file holds the struct, the role transitions and [`Raft::step`];
//! `election.rs` campaigns and votes, `replication.rs` appends, heartbeats
//! and commit, `snapshot.rs` sends and restores snapshots, `read_only.rs`
//! serves ReadIndex, `transfer.rs` moves leadership, `conf.rs` applies
//! membership changes.

mod conf;
mod election;
mod membership;
mod quiesce;
mod read_only;
mod replication;
mod snapshot;
mod transfer;

#[cfg(test)]
mod tests;

pub use membership::{MembershipEvent, NotPromotable};
pub(crate) use read_only::ReadOnly;
pub use read_only::ReadState;

use std::sync::atomic::AtomicU8;

use bytes::Bytes;

use crate::confchange;
use crate::config::{Config, ReadOnlyOption};
use crate::errors::{Error, Result};
use crate::log::RaftLog;
use crate::logging::{rlog, Level};
use crate::pb::{ConfState, HardState, Message, MessageType};
use crate::storage::Storage;
use crate::tracker::ProgressTracker;
use crate::validate::MAX_TERM_OR_INDEX;

/// The id meaning "no node".
pub const INVALID_ID: u64 = 0;

/// The role of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StateRole {
    /// Follows a leader (or waits for one).
    #[default]
    Follower,
    /// Campaigns for leadership in a raised term.
    Candidate,
    /// Leads the cluster.
    Leader,
    /// Runs a pre-vote round without raising its term.
    PreCandidate,
}

impl StateRole {
    /// etcd's name of the role (`StateFollower`, ...).
    pub fn etcd_name(self) -> &'static str {
        match self {
            StateRole::Follower => "StateFollower",
            StateRole::Candidate => "StateCandidate",
            StateRole::Leader => "StateLeader",
            StateRole::PreCandidate => "StatePreCandidate",
        }
    }
}

impl std::fmt::Display for StateRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StateRole::Follower => "Follower",
            StateRole::Candidate => "Candidate",
            StateRole::Leader => "Leader",
            StateRole::PreCandidate => "PreCandidate",
        })
    }
}

/// The volatile state a host may want to observe: who leads and in which
/// role this node is. Reported in a Ready only when it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SoftState {
    /// The known leader (0 for none).
    pub leader_id: u64,
    /// This node's role.
    pub raft_state: StateRole,
}

/// Why a node campaigns (etcd `CampaignType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CampaignType {
    /// A pre-vote round (pre_vote on).
    PreElection,
    /// A normal election.
    Election,
    /// An election forced by a leader transfer.
    Transfer,
}

/// The context that marks a vote request as part of a leader transfer; the
/// bytes are etcd's, so etcd voters honour raftlet's transfers and back.
pub(crate) const CAMPAIGN_TRANSFER: &[u8] = b"CampaignTransfer";

/// A small deterministic PRNG (splitmix64) for the election jitter.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value uniformly drawn from `[0, n)`; `n` must be positive.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        // Lemire's multiply-shift; the bias is negligible for the small n used here.
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Test-only switches that plant deliberate bugs (feature `bug-injection`),
/// so the simulator can prove each of its invariants fires.
#[cfg(feature = "bug-injection")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bugs {
    /// Count learners as voters when computing the commit index.
    pub learner_counts_in_quorum: bool,
    /// Commit entries of earlier terms by counting replicas.
    pub commit_old_term_by_counting: bool,
    /// Grant votes without comparing logs.
    pub vote_ignores_log: bool,
    /// Answer reads with the commit index without confirming leadership.
    pub read_without_quorum: bool,
    /// Grant a vote even after voting for another candidate in the term.
    pub vote_twice: bool,
    /// Accept an append whose previous entry has another term than ours
    /// (only its index is checked).
    pub append_ignores_prev_term: bool,
    /// Let learners campaign.
    pub learner_campaigns: bool,
    /// Never campaign when the election timeout elapses.
    pub no_election_timeout: bool,
    /// Hand the same committed entries out again in every Ready.
    pub reapply_committed: bool,
    /// Restore a snapshot even while handed-out committed entries are not
    /// yet applied.
    pub restore_while_applying: bool,
    /// Let vote requests leave with `Ready::messages`, before the
    /// candidate's term and vote are durable.
    pub vote_request_early: bool,
    /// Let a leader count its own append acknowledgement when the Ready is
    /// taken, before the write is durable.
    pub self_ack_early: bool,
    /// Promote learners automatically whatever their lag.
    pub promote_ignores_lag: bool,
    /// Ignore the host's report that the leader's node fell silent
    /// ([`crate::RawNode::wake_leader_lost`] does nothing): a quiesced
    /// follower then never wakes when its leader dies.
    pub quiesced_never_wakes: bool,
    /// Let [`crate::RawNode::advance_light`] hand out committed entries
    /// without taking them as being applied: the next Ready hands them
    /// out again.
    pub light_skips_applying: bool,
}

/// [`Raft::maybe_ready`]: a Ready may be due (`RawNode::has_ready` must
/// look).
pub(crate) const MAYBE_READY: u8 = 1;
/// [`Raft::maybe_ready`]: reading the committed entries to apply failed;
/// none are handed out until the next message or acting tick.
pub(crate) const READ_FAILED: u8 = 2;

/// The Raft state machine of one node.
// `repr(C)`: the fields are laid out in the order written. The ones an
// idle group's tick and `RawNode::has_ready` read come first: the first
// 32 bytes hold everything a follower's tick below its election timeout
// reads and writes, and `maybe_ready`, all an idle group's `has_ready`
// reads, so that a sweep over thousands of groups touches one cache line
// (two when the node straddles a line boundary) of each. What the full
// `has_ready` check reads follows, then the rest, grouped by alignment so
// that no padding is added.
#[repr(C)]
pub(crate) struct Raft<S: Storage> {
    pub state: StateRole,
    /// The node ignores ticks until woken (quiescence, see `quiesce.rs`).
    pub quiesced: bool,
    /// `RawNode`'s "maybe ready" bits (kept here, in the node's first
    /// bytes, for the sweep's sake). [`MAYBE_READY`]: clear only when
    /// `RawNode::has_ready` found nothing and no entry point that may change
    /// its answer ran since. [`READ_FAILED`]: the last read of committed
    /// entries to apply failed (a storage error such as EIO), and none are
    /// handed out until a message or an acting tick clears it (no Ready
    /// fails the same read again meanwhile, and the node does not panic).
    /// Atomic only so that `has_ready`, which takes `&self`, may clear a
    /// bit without making the node `!Sync`; every access is relaxed.
    pub maybe_ready: AtomicU8,
    /// Under lease-based reads, a restarted node does not know whom it last
    /// heard from: it refuses votes for its first election timeout, as if
    /// it had heard from a leader just before starting, so a lease it
    /// helped grant before the restart still holds.
    pub restart_lease: bool,
    /// Appends to every peer are due at the next flush (see
    /// `bcast_append_deferred`).
    pub appends_deferred: bool,
    /// Whether this node is a learner in the current configuration.
    pub is_learner: bool,
    pub check_quorum: bool,
    pub pre_vote: bool,
    /// Ticks since the last election timeout reset (leader: since the last
    /// check-quorum round); saturates rather than wraps (a learner's clock
    /// runs on without ever being reset).
    ///
    /// The tick counts are `u32` (`Config::validate` bounds the election
    /// tick so that twice it fits): 24 bytes fewer in every node than
    /// `usize`s, and the four fit the node's first cache line.
    pub election_elapsed: u32,
    pub election_timeout: u32,
    /// A number in `[election_timeout, 2 * election_timeout)`, redrawn on every reset.
    pub randomized_election_timeout: u32,
    /// Leader: ticks since the last heartbeat (saturates, as above).
    pub heartbeat_elapsed: u32,
    pub term: u64,
    pub vote: u64,
    pub lead: u64,
    /// Messages that may be sent at once.
    pub msgs: Vec<Message>,
    /// Messages to send (or, when addressed to self, to step) only after the
    /// current unstable entries, hard state and snapshot are durable.
    pub msgs_after_append: Vec<Message>,
    pub read_states: Vec<ReadState>,
    /// Membership changes the leader proposed by itself, for the next
    /// Ready; `Some` only when not empty (rare: a pointer rather than an
    /// empty vector in every node, 8 bytes instead of 24).
    #[allow(
        clippy::box_collection,
        reason = "the box is the point: a pointer inline instead of an empty vector"
    )]
    pub membership_events: Option<Box<Vec<MembershipEvent>>>,
    pub raft_log: RaftLog<S>,
    /// A leader's quiescence round (see `quiesce.rs`).
    pub quiesce: quiesce::Quiesce,
    /// [`Config::quiesce`].
    pub quiesce_enabled: bool,
    /// Leader: a peer echoed a quiesce request (it does not speak the
    /// extension); no more requests in this term.
    pub quiesce_unsupported: bool,
    /// Leader: the next heartbeat of an unanswered round is an ordinary
    /// one.
    pub quiesce_retry: bool,
    /// Whether proposals defer their appends to the next flush
    /// (`RawNode` turns this on; the bare state machine sends at once, as
    /// etcd's does, which its ported tests rely on).
    pub coalesce_appends: bool,
    /// How many messages the last Ready carried in `msgs`, as the power of
    /// two at or above it (0 when few): the first message sent after it
    /// reserves `1 << msgs_hint`, so a busy node does not regrow the vector
    /// from nothing on every Ready, and an idle one pins no capacity (the
    /// vector is allocated only when a message is sent). One byte, to fit
    /// the node's padding.
    pub msgs_hint: u8,
    /// The same for `msgs_after_append`.
    pub after_hint: u8,
    pub disable_conf_change_validation: bool,
    pub disable_proposal_forwarding: bool,
    pub step_down_on_removal: bool,
    /// Whether [`crate::RawNode::add_member`] adds learners
    /// ([`Config::learner_first`]; kept here, in the padding before
    /// `membership`, rather than in `RawNode`, where it cost 8 bytes).
    pub learner_first: bool,
    /// How reads are confirmed ([`Config::read_only_option`]; here, in the
    /// same padding, rather than in `read_only`, where it cost 8 bytes).
    pub read_only_option: ReadOnlyOption,
    /// The role the last Ready reported: `RawNode`'s, kept here in the
    /// last byte of the same padding (next to `RawNode::prev_lead` it
    /// would cost 8 bytes). Only `RawNode` reads or writes it.
    pub prev_role: StateRole,
    /// Automatic promotion and standby learners (see `membership.rs`).
    pub membership: membership::MembershipPolicy,
    pub heartbeat_timeout: u32,
    /// [`Config::max_learners`], saturated to `u32` (no group gets near).
    pub max_learners: u32,
    pub id: u64,
    pub max_msg_size: u64,
    pub max_uncommitted_size: u64,
    /// The transfer target while a leader transfer is under way (0 otherwise).
    pub lead_transferee: u64,
    /// Only one conf change may be pending (appended but not yet applied);
    /// this is the index of the latest one, and no new one is proposed while
    /// `applied < pending_conf_index`.
    pub pending_conf_index: u64,
    /// Payload bytes of uncommitted entries appended by this leader.
    pub uncommitted_size: u64,
    /// The sequence number of the next read round; never reset, so a late
    /// heartbeat response can never confirm a newer round.
    pub next_read_seq: u64,
    pub promote_max_lag: u64,
    rng: SplitMix64,
    pub read_only: ReadOnly,
    pub trk: ProgressTracker,
    #[cfg(feature = "bug-injection")]
    pub bugs: Bugs,
}

impl<S: Storage> Raft<S> {
    /// Creates a node over `store`, restarting from whatever it holds
    /// (etcd `newRaft`).
    pub fn new(c: &Config, store: S) -> Result<Raft<S>> {
        c.validate()?;
        let raft_log = RaftLog::new(store, c.committed_size_per_ready())?;
        let rs = raft_log.store.initial_state()?;
        check_stored_state(&raft_log, &rs)?;
        let seed = c.election_seed();
        let mut r = Raft {
            id: c.id,
            term: 0,
            vote: INVALID_ID,
            read_states: Vec::new(),
            raft_log,
            max_msg_size: c.max_size_per_msg,
            max_uncommitted_size: c.uncommitted_size_limit(),
            trk: ProgressTracker::new(c.max_inflight_msgs, c.max_inflight_bytes),
            state: StateRole::Follower,
            is_learner: false,
            msgs: Vec::new(),
            msgs_after_append: Vec::new(),
            msgs_hint: 0,
            after_hint: 0,
            lead: INVALID_ID,
            lead_transferee: INVALID_ID,
            pending_conf_index: 0,
            disable_conf_change_validation: c.disable_conf_change_validation,
            uncommitted_size: 0,
            read_only: ReadOnly::new(),
            read_only_option: c.read_only_option,
            election_elapsed: 0,
            heartbeat_elapsed: 0,
            check_quorum: c.check_quorum,
            pre_vote: c.pre_vote,
            // `validate` bounds both below `u32::MAX / 2`.
            heartbeat_timeout: c.heartbeat_tick as u32,
            election_timeout: c.election_tick as u32,
            randomized_election_timeout: c.election_tick as u32,
            disable_proposal_forwarding: c.disable_proposal_forwarding,
            step_down_on_removal: c.step_down_on_removal,
            learner_first: c.learner_first,
            prev_role: StateRole::Follower,
            promote_max_lag: c.promote_max_lag,
            max_learners: u32::try_from(c.max_learners).unwrap_or(u32::MAX),
            membership: membership::MembershipPolicy {
                auto_promote: c.auto_promote,
                standby_promotion: c.standby_promotion,
                learner_forwards_proposals: c.learner_forwards_proposals,
                min_active_rounds: c.promote_min_active_rounds,
                dead_rounds: c.standby_dead_rounds,
            },
            membership_events: None,
            restart_lease: false,
            appends_deferred: false,
            coalesce_appends: false,
            next_read_seq: 1,
            quiesce: quiesce::Quiesce::default(),
            quiesce_enabled: c.quiesce,
            quiesce_unsupported: false,
            quiesce_retry: false,
            quiesced: false,
            maybe_ready: AtomicU8::new(MAYBE_READY),
            rng: SplitMix64::new(seed),
            #[cfg(feature = "bug-injection")]
            bugs: Bugs::default(),
        };
        let last = r.raft_log.last_index();
        let (cfg, prs) = confchange::restore(
            confchange::Changer {
                tracker: &r.trk,
                last_index: last,
            },
            &rs.conf_state,
        )
        .map_err(|e| {
            Error::InvalidState(format!(
                "cannot restore configuration {:?}: {e}",
                rs.conf_state
            ))
        })?;
        let cs = r.switch_to_config(cfg, prs);
        if let Err(e) = cs.equivalent(&rs.conf_state) {
            return Err(Error::InvalidState(format!(
                "restored configuration differs from storage: {e}"
            )));
        }
        if !rs.hard_state.is_empty() {
            r.load_state(&rs.hard_state)?;
        }
        if c.applied > 0 {
            if c.applied > r.raft_log.committed {
                return Err(Error::ConfigInvalid(format!(
                    "applied ({}) must not be greater than the stored commit index ({})",
                    c.applied, r.raft_log.committed
                )));
            }
            if c.applied < r.raft_log.applied {
                // etcd panics here: the state machine would be older than
                // the snapshot the storage holds.
                return Err(Error::ConfigInvalid(format!(
                    "applied ({}) must not be less than the stored snapshot index ({})",
                    c.applied, r.raft_log.applied
                )));
            }
            r.raft_log.applied_to(c.applied, 0);
        }
        r.become_follower(r.term, INVALID_ID);
        // A node that was in a term before may have acknowledged a lease
        // round just before it stopped (a node at term 0 never heard from
        // any leader).
        r.restart_lease =
            c.check_quorum && c.read_only_option == ReadOnlyOption::LeaseBased && r.term > 0;
        Ok(r)
    }

    /// The current soft state.
    pub fn soft_state(&self) -> SoftState {
        SoftState {
            leader_id: self.lead,
            raft_state: self.state,
        }
    }

    /// The current hard state.
    pub fn hard_state(&self) -> HardState {
        HardState {
            term: self.term,
            vote: self.vote,
            commit: self.raft_log.committed,
        }
    }

    fn load_state(&mut self, hs: &HardState) -> Result<()> {
        // A snapshot that landed without the hard state written after it
        // leaves a stored commit below the snapshot: the snapshot itself is
        // committed, so its index stands.
        let commit = hs.commit.max(self.raft_log.committed);
        if commit > self.raft_log.last_index() {
            return Err(Error::InvalidState(format!(
                "{} stored commit {} is out of range [{}, {}]",
                self.id,
                hs.commit,
                self.raft_log.committed,
                self.raft_log.last_index()
            )));
        }
        self.raft_log.committed = commit;
        self.term = hs.term;
        self.vote = hs.vote;
        Ok(())
    }

    /// Queues `m` for sending, filling in `from` and `term` (etcd `send`).
    pub(crate) fn send(&mut self, mut m: Message) {
        if m.from == INVALID_ID {
            m.from = self.id;
        }
        match m.msg_type {
            MessageType::MsgVote
            | MessageType::MsgVoteResp
            | MessageType::MsgPreVote
            | MessageType::MsgPreVoteResp => {
                debug_assert!(
                    m.term != 0,
                    "term should be set when sending {:?}",
                    m.msg_type
                );
            }
            MessageType::MsgProp | MessageType::MsgReadIndex => {}
            _ => m.term = self.term,
        }
        // Vote requests, and every response whose meaning depends on our log,
        // term or vote, wait for the write that makes them true (see the
        // Ready contract in the crate docs). A candidate's vote request
        // sent before its term and vote are durable lets a restarted
        // incarnation win the same term again with another log.
        #[cfg(feature = "bug-injection")]
        let vote_early = self.bugs.vote_request_early && m.msg_type == MessageType::MsgVote;
        #[cfg(not(feature = "bug-injection"))]
        let vote_early = false;
        match m.msg_type {
            MessageType::MsgAppResp
            | MessageType::MsgVote
            | MessageType::MsgVoteResp
            | MessageType::MsgPreVoteResp
                if !vote_early =>
            {
                if self.msgs_after_append.capacity() == 0 && self.after_hint > 0 {
                    self.msgs_after_append.reserve_exact(1 << self.after_hint);
                }
                self.msgs_after_append.push(m)
            }
            _ => {
                debug_assert!(m.to != self.id, "message to self: {m:?}");
                if self.msgs.capacity() == 0 && self.msgs_hint > 0 {
                    self.msgs.reserve_exact(1 << self.msgs_hint);
                }
                self.msgs.push(m)
            }
        }
    }

    /// Resets the per-term state (etcd `reset`).
    fn reset(&mut self, term: u64) {
        if self.term != term {
            self.term = term;
            self.vote = INVALID_ID;
        }
        self.lead = INVALID_ID;
        self.election_elapsed = 0;
        self.heartbeat_elapsed = 0;
        self.reset_randomized_election_timeout();
        self.abort_leader_transfer();
        self.trk.reset_votes();
        // Only a leader tracks its peers' progress: `become_leader` starts
        // it afresh, every other transition drops it.
        self.trk.untrack_members();
        self.pending_conf_index = 0;
        self.uncommitted_size = 0;
        self.appends_deferred = false;
        // Also drops the reads waiting for a commit of the term.
        self.read_only = ReadOnly::new();
        self.quiesce_reset();
    }

    pub(crate) fn reset_randomized_election_timeout(&mut self) {
        let et = self.election_timeout as u64;
        // Below 2 * election_timeout, which fits (see `Config::validate`).
        self.randomized_election_timeout = (et + self.rng.below(et)) as u32;
    }

    pub(crate) fn past_election_timeout(&self) -> bool {
        self.election_elapsed >= self.randomized_election_timeout
    }

    /// Advances the logical clock by one tick. Returns whether the tick did
    /// more than count: a follower's or candidate's tick below its election
    /// timeouts changes nothing but `election_elapsed` (nothing a Ready
    /// reports), a quiesced node's tick changes nothing; every other tick
    /// returns true, which tells `RawNode` that a Ready may be due.
    #[inline]
    pub fn tick(&mut self) -> bool {
        if self.quiesced {
            // A quiesced group sleeps: its clocks stop until it is woken.
            return false;
        }
        if self.state == StateRole::Leader {
            self.tick_heartbeat();
            return true;
        }
        self.tick_election()
    }

    /// A follower's or candidate's tick (etcd `tickElection`); returns
    /// whether it campaigned.
    #[inline]
    fn tick_election(&mut self) -> bool {
        // The common tick of an idle follower: reads and writes the first
        // bytes of the node only (see the layout comment on `Raft`).
        self.election_elapsed = self.election_elapsed.saturating_add(1);
        if self.election_elapsed < self.election_timeout
            && self.election_elapsed < self.randomized_election_timeout
        {
            return false;
        }
        self.tick_election_due()
    }

    /// The rest of a follower's or candidate's tick once its election
    /// clock reached `election_timeout` or `randomized_election_timeout`
    /// (a test may set the latter below the former): the restart lease
    /// ends, and past the randomized timeout a promotable node campaigns.
    /// Returns whether it campaigned.
    #[inline(never)]
    fn tick_election_due(&mut self) -> bool {
        if self.election_elapsed >= self.election_timeout {
            self.restart_lease = false;
        }
        #[cfg(feature = "bug-injection")]
        if self.bugs.no_election_timeout {
            return false;
        }
        // The timeout check comes first: it reads only this struct, so a
        // tick of an unpromotable node touches no heap memory.
        if self.past_election_timeout() && self.promotable() {
            self.election_elapsed = 0;
            let _ = self.step(Message::new(MessageType::MsgHup, self.id, INVALID_ID));
            return true;
        }
        false
    }

    #[inline(never)]
    fn tick_heartbeat(&mut self) {
        self.heartbeat_elapsed = self.heartbeat_elapsed.saturating_add(1);
        self.tick_lease();
        self.election_elapsed = self.election_elapsed.saturating_add(1);
        if self.election_elapsed >= self.election_timeout {
            self.election_elapsed = 0;
            if self.check_quorum {
                let _ = self.step(Message::new(
                    MessageType::MsgCheckQuorum,
                    self.id,
                    INVALID_ID,
                ));
            }
            if self.state == StateRole::Leader && self.lead_transferee != INVALID_ID {
                self.abort_leader_transfer();
            }
        }
        if self.state != StateRole::Leader {
            return;
        }
        if self.heartbeat_elapsed >= self.heartbeat_timeout {
            self.heartbeat_elapsed = 0;
            if !self.maybe_send_quiesce_request() {
                let _ = self.step(Message::new(MessageType::MsgBeat, self.id, INVALID_ID));
            }
        }
    }

    /// Becomes a follower in `term` under `lead` (etcd `becomeFollower`).
    pub fn become_follower(&mut self, term: u64, lead: u64) {
        self.reset(term);
        self.lead = lead;
        self.state = StateRole::Follower;
        rlog!(
            Level::Info,
            self.id,
            "{} became follower at term {}",
            self.id,
            self.term
        );
    }

    /// Becomes a candidate in the next term (etcd `becomeCandidate`).
    pub fn become_candidate(&mut self) {
        assert!(
            self.state != StateRole::Leader,
            "invalid transition [leader -> candidate]"
        );
        let term = self.next_campaign_term();
        self.reset(term);
        self.vote = self.id;
        self.state = StateRole::Candidate;
        rlog!(
            Level::Info,
            self.id,
            "{} became candidate at term {}",
            self.id,
            self.term
        );
    }

    /// The term of our next (pre-)campaign: the next term, and never one
    /// below the last term of our log. Storage can hold entries (or a
    /// snapshot) of a term its hard state does not know yet: the write of a
    /// Ready need not be atomic, and a crash may keep its entries and lose
    /// the hard state written after them. Campaigning in an older term
    /// would let us lead it and append entries of a lower term after those.
    /// Campaigning in the last log term itself is safe: its leader won it
    /// with a quorum of durable votes, so no other candidate can.
    pub(crate) fn next_campaign_term(&self) -> u64 {
        (self.term + 1).max(self.raft_log.last_entry_id().term)
    }

    /// Becomes a pre-candidate without changing term or vote (etcd `becomePreCandidate`).
    pub fn become_pre_candidate(&mut self) {
        assert!(
            self.state != StateRole::Leader,
            "invalid transition [leader -> pre-candidate]"
        );
        // Pre-candidates keep their term, vote and timers: only the votes
        // and the leader are reset.
        self.trk.reset_votes();
        self.lead = INVALID_ID;
        self.state = StateRole::PreCandidate;
        rlog!(
            Level::Info,
            self.id,
            "{} became pre-candidate at term {}",
            self.id,
            self.term
        );
    }

    /// Becomes leader and appends the empty entry of the new term (etcd `becomeLeader`).
    pub fn become_leader(&mut self) {
        assert!(
            self.state != StateRole::Follower,
            "invalid transition [follower -> leader]"
        );
        let term = self.term;
        self.reset(term);
        self.lead = self.id;
        self.state = StateRole::Leader;
        let id = self.id;
        let last = self.raft_log.last_index();
        self.trk.track_members(last + 1);
        if let Some(pr) = self.trk.get_mut(id) {
            pr.matched = last;
            pr.become_replicate();
            pr.recent_active = true;
        }
        // Conservatively treat any unapplied entry as a possible conf change:
        // no new one is proposed before the log is applied up to here.
        self.pending_conf_index = self.raft_log.last_index();
        let empty = crate::pb::Entry::default();
        assert!(self.append_entry(vec![empty]), "empty entry was dropped");
        rlog!(
            Level::Info,
            self.id,
            "{} became leader at term {}",
            self.id,
            self.term
        );
    }

    /// Whether this node may campaign: it is a voter and is not applying a
    /// snapshot (etcd `promotable`).
    pub fn promotable(&self) -> bool {
        if !self.trk.is_member(self.id) {
            return false;
        }
        #[allow(unused_mut)]
        let mut learner = self.trk.config.learners.contains(&self.id);
        #[cfg(feature = "bug-injection")]
        if self.bugs.learner_campaigns {
            learner = false;
        }
        !learner && !self.raft_log.has_next_or_in_progress_snapshot()
    }

    /// Steps a message that waited for its Ready's write (the node's own
    /// append acknowledgement and vote). A leader's acknowledgement of its
    /// own append, in its current term, while awake and a member, goes
    /// straight to the append-response handler: that is where
    /// [`Raft::step`] would take it, through checks that all pass. Every
    /// other message is stepped as usual.
    pub(crate) fn step_persisted(&mut self, m: Message) {
        if m.msg_type == MessageType::MsgAppResp
            && m.from == self.id
            && m.term == self.term
            && self.state == StateRole::Leader
            && !self.quiesced
            && self.trk.get(self.id).is_some()
        {
            self.handle_append_response(&m);
        } else {
            let _ = self.step(m);
        }
    }

    /// Processes one message (etcd `Step`).
    ///
    /// # Errors
    /// [`Error::ProposalDropped`] for proposals that cannot be accepted,
    /// conf-change and transfer refusals, storage failures.
    pub fn step(&mut self, m: Message) -> Result<()> {
        if self.quiesced && !self.keeps_quiesced(&m) {
            self.wake();
        }
        // Handle the message term, which may result in our stepping down.
        if m.term == 0 {
            // Local message.
        } else if m.term > self.term {
            if m.msg_type == MessageType::MsgVote || m.msg_type == MessageType::MsgPreVote {
                let force = m.context() == CAMPAIGN_TRANSFER;
                let in_lease = self.check_quorum
                    && (self.lead != INVALID_ID || self.restart_lease)
                    && self.election_elapsed < self.election_timeout;
                if !force && in_lease {
                    // Within the minimum election timeout of hearing from the
                    // current leader: neither update the term nor grant the vote.
                    rlog!(
                        Level::Info,
                        self.id,
                        "{} [term: {}] ignored {:?} from {} at term {}: lease with leader {} is not expired",
                        self.id,
                        self.term,
                        m.msg_type,
                        m.from,
                        m.term,
                        self.lead
                    );
                    return Ok(());
                }
            }
            match m.msg_type {
                // Never change our term in response to a pre-vote.
                MessageType::MsgPreVote => {}
                // A granted pre-vote response in a higher term is expected
                // (pre-candidates ask for term+1); a rejection means we are stale.
                MessageType::MsgPreVoteResp if !m.reject => {}
                _ => {
                    if matches!(
                        m.msg_type,
                        MessageType::MsgApp | MessageType::MsgHeartbeat | MessageType::MsgSnap
                    ) {
                        self.become_follower(m.term, m.from);
                    } else {
                        self.become_follower(m.term, INVALID_ID);
                    }
                }
            }
        } else if m.term < self.term {
            if (self.check_quorum || self.pre_vote)
                && (m.msg_type == MessageType::MsgHeartbeat || m.msg_type == MessageType::MsgApp)
            {
                // A stale leader (partitioned, or whose term we raised): tell
                // it about our term so it steps down. With check-quorum or
                // pre-vote a node that cannot win never raises the term of
                // others, so without this answer the old leader would never
                // learn of the new term.
                self.send(Message::new(MessageType::MsgAppResp, INVALID_ID, m.from));
            } else if m.msg_type == MessageType::MsgPreVote {
                // Reject, so that a pre-candidate that missed a term change
                // learns the current term and does not stay stuck.
                let mut resp = Message::new(MessageType::MsgPreVoteResp, INVALID_ID, m.from);
                resp.term = self.term;
                resp.reject = true;
                self.send(resp);
            }
            // Ignore any other message of an older term.
            return Ok(());
        }

        match m.msg_type {
            MessageType::MsgHup => {
                if self.pre_vote {
                    self.hup(CampaignType::PreElection)
                } else {
                    self.hup(CampaignType::Election)
                }
            }
            MessageType::MsgVote | MessageType::MsgPreVote => self.handle_vote_request(m),
            _ => match self.state {
                StateRole::Leader => self.step_leader(m)?,
                StateRole::Candidate | StateRole::PreCandidate => self.step_candidate(m)?,
                StateRole::Follower => self.step_follower(m)?,
            },
        }
        Ok(())
    }

    fn step_follower(&mut self, mut m: Message) -> Result<()> {
        match m.msg_type {
            MessageType::MsgProp => {
                if self.lead == INVALID_ID
                    || self.disable_proposal_forwarding
                    || (self.is_learner && !self.membership.learner_forwards_proposals)
                {
                    return Err(Error::ProposalDropped);
                }
                m.to = self.lead;
                self.send(m);
            }
            MessageType::MsgApp => {
                self.election_elapsed = 0;
                self.lead = m.from;
                self.handle_append_entries(m);
            }
            MessageType::MsgHeartbeat => {
                self.election_elapsed = 0;
                self.lead = m.from;
                self.handle_heartbeat(m);
            }
            MessageType::MsgSnap => {
                self.election_elapsed = 0;
                self.lead = m.from;
                self.handle_snapshot(m);
            }
            MessageType::MsgTransferLeader => {
                if self.lead == INVALID_ID {
                    return Err(Error::TransferRefused(format!(
                        "no leader at term {}; dropping leader transfer",
                        self.term
                    )));
                }
                m.to = self.lead;
                self.send(m);
            }
            MessageType::MsgForgetLeader => {
                if self.read_only_option == ReadOnlyOption::LeaseBased {
                    // Forgetting the leader would let this node grant votes
                    // inside the leader's lease and break lease reads.
                    return Ok(());
                }
                self.lead = INVALID_ID;
            }
            MessageType::MsgTimeoutNow => {
                // Leadership transfers never use pre-vote: the leader asked.
                self.hup(CampaignType::Transfer);
            }
            MessageType::MsgReadIndex => {
                if self.lead == INVALID_ID {
                    return Err(Error::NoLeader);
                }
                m.to = self.lead;
                self.send(m);
            }
            MessageType::MsgReadIndexResp => {
                if m.entries.len() != 1 {
                    return Ok(());
                }
                let ctx = m.entries.pop().and_then(|e| e.data).unwrap_or_default();
                self.read_states.push(ReadState {
                    index: m.index,
                    request_ctx: ctx,
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn step_candidate(&mut self, m: Message) -> Result<()> {
        let my_vote_resp = if self.state == StateRole::PreCandidate {
            MessageType::MsgPreVoteResp
        } else {
            MessageType::MsgVoteResp
        };
        match m.msg_type {
            MessageType::MsgProp => return Err(Error::ProposalDropped),
            MessageType::MsgApp => {
                // m.term == self.term here: a leader was elected in our term.
                self.become_follower(m.term, m.from);
                self.handle_append_entries(m);
            }
            MessageType::MsgHeartbeat => {
                self.become_follower(m.term, m.from);
                self.handle_heartbeat(m);
            }
            MessageType::MsgSnap => {
                self.become_follower(m.term, m.from);
                self.handle_snapshot(m);
            }
            t if t == my_vote_resp => {
                self.handle_vote_response(m);
            }
            MessageType::MsgTimeoutNow => {
                // Ignored: a candidate is already campaigning.
            }
            MessageType::MsgReadIndex => return Err(Error::NoLeader),
            MessageType::MsgTransferLeader => {
                return Err(Error::TransferRefused(
                    "no leader while campaigning; dropping leader transfer".into(),
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// The payload of the ReadIndex request in `m` (its single entry's data).
    pub(crate) fn read_ctx(m: &Message) -> Bytes {
        m.entries
            .first()
            .and_then(|e| e.data.clone())
            .unwrap_or_default()
    }

    /// Applies a configuration after a conf change or snapshot (etcd `switchToConfig`).
    pub(crate) fn switch_to_config(
        &mut self,
        cfg: crate::tracker::Config,
        prs: crate::tracker::ProgressMap,
    ) -> ConfState {
        self.trk.apply_conf(cfg, prs);
        if self.state != StateRole::Leader {
            // Computed from fresh progress (see `Changer`); only a leader
            // keeps it.
            self.trk.untrack_members();
        }
        self.reset_lease_acks();
        let cs = self.trk.conf_state();
        let present = self.trk.is_member(self.id);
        let learner = self.trk.config.learners.contains(&self.id);
        self.is_learner = present && learner;
        if (!present || self.is_learner) && self.state == StateRole::Leader {
            // This node was removed or demoted while leading. It may keep
            // leading until the change commits elsewhere unless told to step
            // down, which is the default.
            if self.step_down_on_removal {
                let term = self.term;
                self.become_follower(term, INVALID_ID);
            }
            return cs;
        }
        if self.state != StateRole::Leader || cs.voters.is_empty() {
            return cs;
        }
        // The quorum may have changed: commit what the new configuration
        // allows, and make sure new peers get appends.
        if self.maybe_commit() {
            self.bcast_append();
        } else {
            let mut next = self.next_peer(None);
            while let Some(id) = next {
                if id != self.id {
                    self.maybe_send_append(id, false);
                }
                next = self.next_peer(Some(id));
            }
        }
        if self.lead_transferee != INVALID_ID
            && !self.trk.config.voters.contains(self.lead_transferee)
        {
            self.abort_leader_transfer();
        }
        cs
    }
}

/// Refuses a storage whose contents are beyond what the core handles: a
/// term, commit index or log index above [`MAX_TERM_OR_INDEX`], or a
/// configuration naming an id that is not a member id (see
/// [`crate::validate::check_conf_state`]). Such a storage was written by a
/// host that accepted hostile input or is corrupt; starting from it could
/// overflow later.
fn check_stored_state<S: Storage>(log: &RaftLog<S>, rs: &crate::storage::RaftState) -> Result<()> {
    let last = log.last_index();
    // Terms in a log never decrease, so the last entry's term bounds all.
    let last_term = log.term(last)?;
    let hs = &rs.hard_state;
    for (what, v) in [
        ("hard state term", hs.term),
        ("hard state commit", hs.commit),
        ("last index", last),
        ("last term", last_term),
    ] {
        if v > MAX_TERM_OR_INDEX {
            return Err(Error::InvalidState(format!(
                "stored {what} {v} is above the limit {MAX_TERM_OR_INDEX}"
            )));
        }
    }
    crate::validate::check_conf_state(&rs.conf_state).map_err(|e| {
        Error::InvalidState(format!(
            "stored configuration {:?} is invalid: {e}",
            rs.conf_state
        ))
    })
}
