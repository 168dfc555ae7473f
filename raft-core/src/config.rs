//! [`Config`]: the parameters of one Raft node, with etcd's defaults, and
//! [`Config::validate`].

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

use crate::errors::{Error, Result};

/// How linearizable reads are served (etcd `ReadOnlyOption`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadOnlyOption {
    /// The leader confirms its leadership with a heartbeat round before it
    /// answers a read (etcd `ReadOnlySafe`).
    #[default]
    Safe,
    /// The leader answers from its lease (requires `check_quorum`); faster,
    /// but relies on bounded clock drift (etcd `ReadOnlyLeaseBased`).
    LeaseBased,
}

/// The parameters of one Raft node.
///
/// Defaults (see [`Config::new`]) follow etcd raft v3.6 with pre-vote and
/// check-quorum turned on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// This node's id; must not be zero, `u64::MAX` or `u64::MAX - 1`.
    pub id: u64,
    /// Ticks a follower waits without hearing from a leader before it
    /// campaigns. The actual timeout is drawn from
    /// `[election_tick, 2 * election_tick)`. Must exceed `heartbeat_tick`.
    pub election_tick: usize,
    /// Ticks between the leader's heartbeats.
    pub heartbeat_tick: usize,
    /// The last index the host applied before a restart; entries up to it
    /// are not handed out again.
    pub applied: u64,
    /// The most bytes of entries in one append message (0 means one entry
    /// per message).
    pub max_size_per_msg: u64,
    /// The most bytes of committed entries in one Ready (0 means the same as
    /// `max_size_per_msg`, and one entry per Ready if that is 0 too).
    pub max_committed_size_per_ready: u64,
    /// The most bytes of uncommitted entry payload the leader accepts; more
    /// proposals are dropped with [`Error::ProposalDropped`] (0 = unlimited).
    pub max_uncommitted_entries_size: u64,
    /// The most append messages in flight to one peer.
    ///
    /// With the defaults a leader may queue up to 256 MiB of appends for a
    /// peer that is catching up. On a link that carries less than that per
    /// election timeout, heartbeats queued behind the appends arrive late
    /// and followers start elections: size `max_size_per_msg`,
    /// `max_inflight_msgs` and `max_inflight_bytes` to a few ticks' worth of
    /// the link (the learner-design figure 1 test shows both cases).
    pub max_inflight_msgs: usize,
    /// The most bytes of entries in flight to one peer (0 = unlimited).
    pub max_inflight_bytes: u64,
    /// The leader steps down when it has not heard from a quorum within an
    /// election timeout, and followers ignore votes while in a lease.
    pub check_quorum: bool,
    /// Candidates run a pre-vote round before raising their term.
    pub pre_vote: bool,
    /// How reads are served.
    pub read_only_option: ReadOnlyOption,
    /// Followers drop proposals instead of forwarding them to the leader.
    pub disable_proposal_forwarding: bool,
    /// Skip the propose-time checks of configuration changes.
    pub disable_conf_change_validation: bool,
    /// A leader removed from the configuration steps down.
    pub step_down_on_removal: bool,
    /// A learner may be promoted only when its match index is at most this
    /// many entries behind the leader's last index (0 = fully caught up).
    pub promote_max_lag: u64,
    /// The most learners the configuration may hold.
    pub max_learners: usize,
    /// The seed of the election-timeout RNG. 0 (the default) draws a fresh
    /// seed from the operating system each time a node is created, so a
    /// restarted node does not repeat its earlier timeouts and nodes do not
    /// share a sequence (etcd draws from the OS too). Any other value makes
    /// the timeouts a pure function of it: tests and simulators set one to
    /// replay a run.
    pub seed: u64,
    /// Whether the leader coalesces the appends of proposals made between
    /// two Readies into one message per peer (default on). Off, every
    /// proposal sends its own append at once, as etcd raft does; the
    /// replicated log and commit behaviour are the same either way.
    pub coalesce_appends: bool,
    /// Whether [`crate::RawNode::add_member`] adds a new member as a learner
    /// (default on), to be promoted once it has caught up. Off, it adds a
    /// voter at once, as etcd's `AddNode` does: a member that never answers
    /// (a wrong address, etcd's learner design, figures 8 and 9) then
    /// counts in the quorum from the moment the change applies.
    pub learner_first: bool,
    /// Whether the leader promotes learners by itself (default off) once
    /// each promotion threshold holds: within [`Config::promote_max_lag`]
    /// entries (a lagging voter would stall commits), active in
    /// [`Config::promote_min_active_rounds`] consecutive check-quorum rounds
    /// (a voter that does not answer weakens the quorum), not being sent a
    /// snapshot (it could not acknowledge entries yet), and no other
    /// configuration change pending (one change at a time). Requires
    /// `check_quorum`: activity is measured in its rounds.
    pub auto_promote: bool,
    /// Consecutive check-quorum rounds (each `election_tick` ticks) a learner
    /// must have answered the leader in before it is promoted automatically
    /// or as a standby (default 3, at least 1). A learner that flaps is
    /// never promoted: one silent round starts the count again.
    pub promote_min_active_rounds: u32,
    /// Whether the leader replaces a voter that stopped answering with a
    /// caught-up learner (a standby; default off): once a voter has been
    /// silent for [`Config::standby_dead_rounds`] consecutive check-quorum
    /// rounds while the rest still form a quorum, the leader proposes one
    /// joint change that promotes the standby and demotes the silent voter
    /// to learner, so the number of voters and the quorum size stay the
    /// same. Requires `check_quorum`.
    pub standby_promotion: bool,
    /// Consecutive silent check-quorum rounds after which a voter counts
    /// as failed for [`Config::standby_promotion`] (default 3, at least 2,
    /// so that one lost round never swaps a voter out).
    pub standby_dead_rounds: u32,
    /// Whether a learner forwards proposals to the leader (default on, as
    /// etcd does) or refuses them with [`crate::Error::ProposalDropped`]
    /// (a read-only learner that must never originate a write).
    pub learner_forwards_proposals: bool,
    /// Whether an idle group quiesces (default off; a raftlet extension,
    /// see docs/architecture.md "Quiescence"): once everything is
    /// committed, applied and acknowledged by every peer, the leader asks
    /// its followers to stop ticking with a heartbeat whose context marks
    /// it; a quiesced node ignores [`crate::RawNode::tick`] until a
    /// message, proposal or read wakes it, or its host wakes it with
    /// [`crate::RawNode::wake_leader_lost`] once the leader's node has
    /// been silent for an election timeout. A quiesced leader serves no
    /// lease read from its old lease. With a peer that does not quiesce
    /// (an etcd node, or quiescence off there) the group never quiesces.
    pub quiesce: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            id: 0,
            election_tick: 10,
            heartbeat_tick: 1,
            applied: 0,
            max_size_per_msg: 1024 * 1024,
            max_committed_size_per_ready: 0,
            max_uncommitted_entries_size: 0,
            max_inflight_msgs: 256,
            max_inflight_bytes: 0,
            check_quorum: true,
            pre_vote: true,
            read_only_option: ReadOnlyOption::Safe,
            disable_proposal_forwarding: false,
            disable_conf_change_validation: false,
            step_down_on_removal: true,
            promote_max_lag: 1000,
            max_learners: 1,
            seed: 0,
            coalesce_appends: true,
            learner_first: true,
            auto_promote: false,
            promote_min_active_rounds: 3,
            standby_promotion: false,
            standby_dead_rounds: 3,
            learner_forwards_proposals: true,
            quiesce: false,
        }
    }
}

impl Config {
    /// The default configuration for node `id`.
    ///
    /// ```
    /// let c = raftlet::Config::new(1);
    /// assert_eq!((c.election_tick, c.heartbeat_tick), (10, 1));
    /// assert!(c.pre_vote && c.check_quorum);
    /// c.validate().unwrap();
    /// ```
    pub fn new(id: u64) -> Config {
        Config {
            id,
            ..Config::default()
        }
    }

    /// Checks every field and combination.
    ///
    /// # Errors
    /// [`Error::ConfigInvalid`] with a sentence naming the offending field.
    ///
    /// ```
    /// let mut c = raftlet::Config::new(1);
    /// c.election_tick = 1;
    /// assert!(c.validate().unwrap_err().to_string().contains("election_tick"));
    /// ```
    pub fn validate(&self) -> Result<()> {
        let bad = |s: &str| Err(Error::ConfigInvalid(s.to_string()));
        if self.id == 0 {
            return bad("id must not be zero (0 is reserved for \"no node\")");
        }
        if self.id >= u64::MAX - 1 {
            // etcd refuses these ids too (its LocalAppendThread and
            // LocalApplyThread); an etcd peer would take messages from
            // them for its own storage threads.
            return bad("id must not be u64::MAX or u64::MAX - 1 (reserved by etcd raft)");
        }
        if self.heartbeat_tick == 0 {
            return bad("heartbeat_tick must be greater than 0");
        }
        if self.election_tick <= self.heartbeat_tick {
            return bad("election_tick must be greater than heartbeat_tick");
        }
        if self.election_tick > (u32::MAX / 2) as usize {
            return bad("election_tick is too large (2 * election_tick must fit in 32 bits)");
        }
        if self.max_inflight_msgs == 0 {
            return bad("max_inflight_msgs must be greater than 0");
        }
        if self.max_inflight_bytes != 0 && self.max_inflight_bytes < self.max_size_per_msg {
            return bad("max_inflight_bytes must be 0 (unlimited) or at least max_size_per_msg");
        }
        if self.read_only_option == ReadOnlyOption::LeaseBased && !self.check_quorum {
            return bad("read_only_option LeaseBased requires check_quorum to be true");
        }
        if self.auto_promote && !self.check_quorum {
            return bad("auto_promote requires check_quorum to be true (activity is measured in its rounds)");
        }
        if self.standby_promotion && !self.check_quorum {
            return bad("standby_promotion requires check_quorum to be true (failures are measured in its rounds)");
        }
        if self.promote_min_active_rounds == 0 {
            return bad("promote_min_active_rounds must be at least 1");
        }
        if self.standby_dead_rounds < 2 {
            return bad("standby_dead_rounds must be at least 2");
        }
        Ok(())
    }

    /// The seed the election-timeout RNG starts from: `seed`, or for 0 one
    /// drawn from the operating system.
    ///
    /// std's `RandomState` carries keys the OS provided (once per thread;
    /// each later `RandomState` differs from the previous one), so hashing
    /// the id with a fresh one gives a seed that differs across processes,
    /// restarts and nodes without a dependency on a random-number crate.
    pub(crate) fn election_seed(&self) -> u64 {
        if self.seed != 0 {
            return self.seed;
        }
        let mut h = RandomState::new().build_hasher();
        h.write_u64(self.id);
        h.finish()
    }

    /// The effective byte limit of committed entries per Ready.
    pub(crate) fn committed_size_per_ready(&self) -> u64 {
        if self.max_committed_size_per_ready == 0 {
            // With max_size_per_msg 0 too this is one entry per Ready: the
            // log hands out at least one entry, but needs a positive budget.
            self.max_size_per_msg.max(1)
        } else {
            self.max_committed_size_per_ready
        }
    }

    /// The effective uncommitted-size limit (`u64::MAX` when unlimited).
    pub(crate) fn uncommitted_size_limit(&self) -> u64 {
        if self.max_uncommitted_entries_size == 0 {
            u64::MAX
        } else {
            self.max_uncommitted_entries_size
        }
    }
}
