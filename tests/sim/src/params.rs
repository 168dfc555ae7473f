//! What a run does: the [`Options`] a caller picks (profile, planted bug,
//! trace) and the [`Params`] drawn from the seed (cluster size, fault and
//! operation rates, node configuration).

use crate::rng::{mix, Rng};

/// Simulated time units per tick of a node whose clock runs at the base
/// rate. Message latency is 1-3 units, so a tick is long compared with a
/// network round trip, as in a real deployment.
pub const UNITS_PER_TICK: u64 = 10;

/// The election timeout of every node, in ticks.
pub const ELECTION_TICK: usize = 10;

/// The liveness bound: once the faults stop, a leader must be elected and
/// a new proposal committed within this many election timeouts (measured
/// in base-rate ticks).
pub const LIVENESS_BOUND_ELECTIONS: u64 = 10;

/// Once a probe has committed, every running member of the configuration
/// must have applied it within this many times the liveness bound (a
/// member far behind catches up at the pace its flow control allows).
pub const CATCH_UP_FACTOR: u64 = 3;

/// The liveness bound of [`Profile::Churn`], whose flow control (one entry
/// per append, one append in flight) makes catching up on the uncommitted
/// backlog of a re-elected leader take longer; and of seeds without
/// pre-vote, where nodes that cannot win keep raising the term (resetting
/// the timers of those that can), so elections converge only
/// probabilistically.
pub const CHURN_LIVENESS_BOUND_ELECTIONS: u64 = 30;

/// The most Readies a [`HostKind::Pipelined`] host keeps in flight (taken,
/// not yet durable); each seed draws its own limit in `1..=` this.
pub const MAX_READIES_IN_FLIGHT: u64 = 4;

/// The longest a [`HostKind::Pipelined`] host takes to make one Ready's
/// write durable, in time units (4 base ticks: a slow, fsyncing disk).
pub const MAX_WRITE_LATENCY: u64 = 40;

/// The longest disk stall of a [`HostKind::Pipelined`] host, in time
/// units (30 base ticks: longer than an election timeout, so that a vote
/// or an append response may leave long after it was decided).
pub const MAX_WRITE_STALL: u64 = 300;

/// Durable writes on the critical path of one election and one commit: the
/// pre-vote responses, the candidate's term and vote, the votes granted, the
/// leader's first entry and a follower's copy, then the same for a
/// proposal (each waits for the write before its message may leave). The
/// liveness bound of a [`HostKind::Pipelined`] host grows by this many write
/// latencies per election timeout.
pub const WRITES_PER_ELECTION: u64 = 8;

/// The clock drift bound of seeds with lease-based reads: the slowest
/// node's tick period is at most this many tenths of the fastest one's
/// (periods 10 and 11 units: 10 % drift), and no clock pauses (a paused
/// process is unbounded drift). See the README for why lease reads need
/// such a bound.
pub const LEASE_TICK_PERIODS: [u64; 2] = [10, 11];

/// How adversarial the scenario mix is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// The default: every fault and operation, at rates drawn per seed.
    Mixed,
    /// More and longer partitions, more crashes, slower and paused clocks,
    /// more learners and reads: for planting bugs that need a rare
    /// interleaving (stale leaders, lagging voters).
    Adversarial,
    /// No faults at all: only operations (a sanity baseline).
    Calm,
    /// Short leaderships: small clusters, one entry per append, frequent
    /// crashes and short partitions, many proposals. Leaders often die
    /// after replicating an entry of an earlier term to a majority but
    /// before their own entry gets there (the paper's Figure 8).
    Churn,
    /// Pipelined hosts on slow, stalling disks over lossy links, crashed
    /// (and promptly restarted) while they act on a term or vote their disk
    /// does not hold yet: for bugs that let state leave a node before it is
    /// durable.
    Durability,
    /// Every node on the durable store (raftlet-disk) over a fault-injecting
    /// filesystem, with small segments (frequent segment switches) and
    /// frequent crashes that lose unsynced writes and tear the tail: for
    /// bugs that lose a write the host was told was durable.
    Disk,
    /// The mixed faults with the learner lifecycle on in every seed:
    /// check-quorum, automatic promotion and standby learners (each on most
    /// seeds), members added with `RawNode::add_member`, more membership
    /// changes and more reads, strong and weak, on learners.
    Learners,
}

impl Profile {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Mixed => "mixed",
            Profile::Adversarial => "adversarial",
            Profile::Calm => "calm",
            Profile::Churn => "churn",
            Profile::Durability => "durability",
            Profile::Learners => "learners",
            Profile::Disk => "disk",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(s: &str) -> Option<Profile> {
        match s {
            "mixed" => Some(Profile::Mixed),
            "adversarial" => Some(Profile::Adversarial),
            "calm" => Some(Profile::Calm),
            "churn" => Some(Profile::Churn),
            "durability" => Some(Profile::Durability),
            "learners" => Some(Profile::Learners),
            "disk" => Some(Profile::Disk),
            _ => None,
        }
    }
}

/// How each simulated host drives its node's Ready loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    /// One Ready at a time, handled at once: persist (everything durable
    /// immediately), send, apply, advance; a crash loses at most the Ready
    /// being handled. Some seeds send `Ready::messages` before persisting or
    /// apply asynchronously.
    Disciplined,
    /// Takes every freedom the Ready contract gives: sends
    /// `Ready::messages` the moment a Ready is taken; keeps up to
    /// [`Params::max_in_flight`] Readies in flight, whose writes become
    /// durable later, in order, after simulated latencies; sends
    /// `persisted_messages` and acknowledges each Ready (`advance_append` or
    /// `on_persist_ready`) only once its write and every earlier one are
    /// durable; steps messages, ticks, proposes and reads while writes are
    /// in flight; applies committed entries asynchronously
    /// (`advance_apply_to`), on some seeds before they are durable locally.
    /// A crash loses every write not yet durable, and the write in progress
    /// may be torn: a prefix of (snapshot, entries in order) lands, its hard
    /// state is lost.
    Pipelined,
}

impl HostKind {
    /// Every host kind.
    pub const ALL: [HostKind; 2] = [HostKind::Disciplined, HostKind::Pipelined];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            HostKind::Disciplined => "disciplined",
            HostKind::Pipelined => "pipelined",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(s: &str) -> Option<HostKind> {
        HostKind::ALL.into_iter().find(|h| h.name() == s)
    }
}

/// What each node's disk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    /// A `MemoryStorage` holding exactly what the simulator counts as
    /// durable (the disk is a model).
    Memory,
    /// The durable store of raftlet-disk over its own in-memory
    /// fault-injecting filesystem (`FaultFs`): the host writes each Ready
    /// through the store's API, a crash loses what was not synced and may
    /// tear the tail, and the node restarts by reopening the store.
    Disk,
}

impl StorageKind {
    /// Every storage kind.
    pub const ALL: [StorageKind; 2] = [StorageKind::Memory, StorageKind::Disk];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            StorageKind::Memory => "memory",
            StorageKind::Disk => "disk",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(s: &str) -> Option<StorageKind> {
        StorageKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// A deliberate bug planted in every node (raftlet feature
/// `bug-injection`, enabled through this crate's feature of the same name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bug {
    /// Learners count as voters for commit (and votes).
    LearnerCountsInQuorum,
    /// The leader commits entries of earlier terms by counting replicas.
    CommitOldTermByCounting,
    /// Votes are granted without comparing logs.
    VoteIgnoresLog,
    /// Reads are answered from the leader's commit index without a
    /// heartbeat round.
    ReadWithoutQuorum,
    /// A node votes for a second candidate in the same term.
    VoteTwice,
    /// A follower accepts an append whose previous entry's term differs
    /// from its own.
    AppendIgnoresPrevTerm,
    /// Learners campaign.
    LearnerCampaigns,
    /// Nodes never campaign when their election timeout elapses.
    NoElectionTimeout,
    /// The same committed entries are handed out in every Ready.
    ReapplyCommitted,
    /// A snapshot is restored while handed-out entries are not applied.
    RestoreWhileApplying,
    /// Vote requests leave with `Ready::messages`, before the candidate's
    /// term and vote are durable.
    VoteRequestEarly,
    /// A leader counts its own append before the write is durable.
    SelfAckEarly,
    /// The leader promotes learners automatically whatever their lag.
    PromoteIgnoresLag,
    /// The durable store returns success from a sync of its log without
    /// syncing (raftlet-disk's `DiskBugs::skip_sync`); implies disk
    /// storage unless `--storage` says otherwise.
    DiskSkipSync,
    /// The durable store creates a segment without syncing its directory
    /// (raftlet-disk's `DiskBugs::skip_dir_sync`); implies disk storage
    /// unless `--storage` says otherwise.
    DiskSkipDirSync,
    /// A follower ignores its host's report that the leader's node fell
    /// silent (`RawNode::wake_leader_lost`): a quiesced follower of a dead
    /// leader sleeps on.
    QuiescedNeverWakes,
    /// `advance_light` hands out committed entries without taking them as
    /// being applied, so the next Ready hands them out again.
    LightSkipsApplying,
}

impl Bug {
    /// Every bug.
    pub const ALL: [Bug; 17] = [
        Bug::LearnerCountsInQuorum,
        Bug::CommitOldTermByCounting,
        Bug::VoteIgnoresLog,
        Bug::ReadWithoutQuorum,
        Bug::VoteTwice,
        Bug::AppendIgnoresPrevTerm,
        Bug::LearnerCampaigns,
        Bug::NoElectionTimeout,
        Bug::ReapplyCommitted,
        Bug::RestoreWhileApplying,
        Bug::VoteRequestEarly,
        Bug::SelfAckEarly,
        Bug::PromoteIgnoresLag,
        Bug::DiskSkipSync,
        Bug::DiskSkipDirSync,
        Bug::QuiescedNeverWakes,
        Bug::LightSkipsApplying,
    ];

    /// The name of raftlet's switch.
    pub fn name(self) -> &'static str {
        match self {
            Bug::LearnerCountsInQuorum => "learner_counts_in_quorum",
            Bug::CommitOldTermByCounting => "commit_old_term_by_counting",
            Bug::VoteIgnoresLog => "vote_ignores_log",
            Bug::ReadWithoutQuorum => "read_without_quorum",
            Bug::VoteTwice => "vote_twice",
            Bug::AppendIgnoresPrevTerm => "append_ignores_prev_term",
            Bug::LearnerCampaigns => "learner_campaigns",
            Bug::NoElectionTimeout => "no_election_timeout",
            Bug::ReapplyCommitted => "reapply_committed",
            Bug::RestoreWhileApplying => "restore_while_applying",
            Bug::VoteRequestEarly => "vote_request_early",
            Bug::SelfAckEarly => "self_ack_early",
            Bug::PromoteIgnoresLag => "promote_ignores_lag",
            Bug::DiskSkipSync => "disk_skip_sync",
            Bug::DiskSkipDirSync => "disk_skip_dir_sync",
            Bug::QuiescedNeverWakes => "quiesced_never_wakes",
            Bug::LightSkipsApplying => "light_skips_applying",
        }
    }

    /// Parses a switch name.
    pub fn from_name(s: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|b| b.name() == s)
    }

    /// Whether the bug is planted in the durable store rather than in the
    /// core.
    pub fn in_disk(self) -> bool {
        matches!(self, Bug::DiskSkipSync | Bug::DiskSkipDirSync)
    }
}

/// What the caller chooses about a run; everything else comes from the seed.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The scenario mix.
    pub profile: Option<Profile>,
    /// A bug to plant in every node (needs the `bug-injection` feature).
    pub bug: Option<Bug>,
    /// Print a per-step trace to stdout.
    pub trace: bool,
    /// Overrides the length of the fault phase, in base ticks.
    pub chaos_ticks: Option<u64>,
    /// Overrides the host kind drawn from the seed.
    pub host: Option<HostKind>,
    /// Overrides the storage kind drawn from the seed.
    pub storage: Option<StorageKind>,
    /// Overrides whether the seed uses lease-based reads (on forces
    /// `check_quorum`, which they require).
    pub lease_reads: Option<bool>,
    /// Overrides whether the seed runs with quiescence
    /// (`Config::quiesce`).
    pub quiesce: Option<bool>,
    /// Overrides whether hosts acknowledge some Readies with
    /// `advance_light` (on: every acknowledgement that can).
    pub light: Option<bool>,
    /// Skips the [`Invariant::ReadyContract`](crate::Invariant) check, to
    /// see what a node that breaks the Ready contract leads to.
    pub no_contract_check: bool,
    /// Checks [`Invariant::LocalRead`](crate::Invariant) without the
    /// snapshot exception: a weak read must report exactly what the
    /// state machine applied even while a snapshot is acknowledged durable
    /// but not applied yet (see the README).
    pub strict_local_reads: bool,
}

impl Options {
    /// The profile (default [`Profile::Mixed`]).
    pub fn profile(&self) -> Profile {
        self.profile.unwrap_or(Profile::Mixed)
    }

    /// The command line that replays `seed` with these options.
    pub fn repro_command(&self, seed: u64) -> String {
        let mut s = String::from("cargo run --release -p raftlet-sim");
        if self.bug.is_some() {
            s.push_str(" --features bug-injection");
        }
        s.push_str(&format!(" -- --seed {seed}"));
        if self.profile() != Profile::Mixed {
            s.push_str(&format!(" --profile {}", self.profile().name()));
        }
        if let Some(b) = self.bug {
            s.push_str(&format!(" --bug {}", b.name()));
        }
        if let Some(t) = self.chaos_ticks {
            s.push_str(&format!(" --ticks {t}"));
        }
        if let Some(h) = self.host {
            s.push_str(&format!(" --host {}", h.name()));
        }
        if let Some(k) = self.storage {
            s.push_str(&format!(" --storage {}", k.name()));
        }
        if let Some(l) = self.lease_reads {
            s.push_str(if l { " --lease on" } else { " --lease off" });
        }
        if let Some(q) = self.quiesce {
            s.push_str(if q { " --quiesce on" } else { " --quiesce off" });
        }
        if let Some(l) = self.light {
            s.push_str(if l { " --light on" } else { " --light off" });
        }
        if self.no_contract_check {
            s.push_str(" --no-contract-check");
        }
        if self.strict_local_reads {
            s.push_str(" --strict-local-reads");
        }
        s.push_str(" --trace");
        s
    }
}

/// The parameters of one run, drawn from its seed.
#[derive(Debug, Clone)]
pub struct Params {
    /// Voters at the start (3, 5 or 7).
    pub nodes: u64,
    /// `Config::heartbeat_tick`.
    pub heartbeat_tick: usize,
    /// `Config::pre_vote`.
    pub pre_vote: bool,
    /// `Config::check_quorum`.
    pub check_quorum: bool,
    /// `Config::max_size_per_msg`.
    pub max_size_per_msg: u64,
    /// `Config::max_inflight_msgs`.
    pub max_inflight_msgs: usize,
    /// `Config::max_committed_size_per_ready`.
    pub max_committed_size_per_ready: u64,
    /// `Config::promote_max_lag`.
    pub promote_max_lag: u64,
    /// `Config::max_uncommitted_entries_size`.
    pub max_uncommitted_entries_size: u64,
    /// Once the faults stop, a proposal must commit within this many
    /// election timeouts.
    pub liveness_bound_elections: u64,
    /// The liveness bound in base ticks: `liveness_bound_elections`
    /// election timeouts, each lengthened by [`WRITES_PER_ELECTION`] write
    /// latencies for a pipelined host.
    pub liveness_bound_ticks: u64,
    /// How the hosts drive their Ready loops.
    pub host: HostKind,
    /// Pipelined hosts: the most Readies in flight (taken, not durable).
    pub max_in_flight: usize,
    /// Pipelined hosts: the range of write latencies, in time units (a
    /// write becomes durable this long after its Ready is taken, and never
    /// before an earlier one).
    pub write_latency: (u64, u64),
    /// Pipelined hosts: the per-unit probability that a node's disk stalls
    /// (a fault: none once the faults stop) for up to [`MAX_WRITE_STALL`]
    /// units; no write lands meanwhile, while the node keeps running.
    pub write_stall: f64,
    /// Pipelined hosts: the probability of acknowledging a durable Ready
    /// with `on_persist_ready(number)` rather than `advance_append(ready)`.
    pub ack_by_number: f64,
    /// Pipelined hosts: the probability of leaving a durable Ready
    /// unacknowledged until the next one is durable too (whose
    /// acknowledgement covers both).
    pub ack_later: f64,
    /// Pipelined hosts: whether committed entries may be applied before the
    /// Ready that handed them out is durable locally (they are durable on a
    /// quorum already).
    pub apply_before_durable: bool,
    /// Pipelined hosts: the probability that a crash hits while the write
    /// of a Ready that changes the term or vote is in flight (the window
    /// in which a host that sent too early would be caught).
    pub crash_in_vote_write: f64,
    /// Pipelined hosts: the probability of aiming a crash at a node that
    /// leads in a term its disk does not hold yet (elected by its peers'
    /// votes alone), before that write lands; the node restarts promptly.
    pub aim_crashes: f64,
    /// The probability that a crash aimed so comes with the node's link
    /// to one peer failing until the crash.
    pub aim_cut_link: f64,
    /// The probability that a crash aimed so comes with the node's disk
    /// stalling first (it leads on, and may commit, until the crash).
    pub aim_stall: f64,
    /// The probability that a crashed node restarts within a tick (as
    /// under a supervisor) rather than after `down_ticks`.
    pub quick_restart: f64,
    /// Whether messages in flight to a node that crashes are lost when it
    /// restarts (a connection-based transport) rather than delivered to
    /// its next incarnation (a datagram transport).
    pub lose_on_restart: bool,
    /// Per-step probability that a host applies some of its queued
    /// committed work (hosts that apply asynchronously).
    pub apply_rate: f64,
    /// `Config::read_only_option` is `LeaseBased` (with `check_quorum`) and
    /// clocks drift by at most [`LEASE_TICK_PERIODS`], without pauses.
    pub lease_reads: bool,
    /// Whether hosts send `Ready::messages` before persisting (allowed by
    /// the Ready contract) rather than after.
    pub send_before_persist: bool,
    /// Whether hosts apply committed entries asynchronously
    /// (`advance_append` after persisting, `advance_apply_to` later).
    pub async_apply: bool,
    /// Length of the fault phase, in base ticks.
    pub chaos_ticks: u64,
    /// Per-message drop probability.
    pub drop: f64,
    /// Per-message duplication probability.
    pub dup: f64,
    /// Per-message probability of an extra delay (which reorders).
    pub delay: f64,
    /// The largest extra delay, in time units.
    pub max_delay: u64,
    /// Per-unit probability that a partition starts (when none is active).
    pub partition_rate: f64,
    /// Partition length range, in base ticks.
    pub partition_ticks: (u64, u64),
    /// Per-Ready crash probability.
    pub crash_rate: f64,
    /// Down time range, in base ticks.
    pub down_ticks: (u64, u64),
    /// Per-unit probability that a node's clock pauses.
    pub pause_rate: f64,
    /// Tick periods (in units) to draw node clocks from.
    pub tick_periods: Vec<u64>,
    /// Per-unit probabilities of client operations.
    pub propose_rate: f64,
    /// ReadIndex reads.
    pub read_rate: f64,
    /// Membership changes.
    pub conf_rate: f64,
    /// Leader transfers.
    pub transfer_rate: f64,
    /// Snapshot + compaction on a node.
    pub compact_rate: f64,
    /// `Config::auto_promote` (only with `check_quorum`).
    pub auto_promote: bool,
    /// `Config::standby_promotion` (only with `check_quorum`).
    pub standby_promotion: bool,
    /// `Config::promote_min_active_rounds`.
    pub promote_min_active_rounds: u32,
    /// `Config::standby_dead_rounds`.
    pub standby_dead_rounds: u32,
    /// `Config::learner_forwards_proposals`.
    pub learner_forwards_proposals: bool,
    /// Whether the client adds new members with `RawNode::add_member`
    /// (learner first, `Config::learner_first` on) rather than with a raw
    /// conf change.
    pub add_member: bool,
    /// The probability that a read (strong or weak) goes to a learner when
    /// the configuration has one.
    pub learner_read_share: f64,
    /// Per-unit probability of a weak read (`RawNode::read_local`).
    pub local_read_rate: f64,
    /// What each node's disk is.
    pub storage: StorageKind,
    /// Disk storage: the store's segment size in bytes (small, so that the
    /// log moves to new segments often).
    pub segment_size: u64,
    /// Disk storage: the store's `rewrite_max_bytes` (0: a segment goes
    /// only once compaction frees it, so a new segment's directory entry
    /// stays unsynced until something else syncs the directory).
    pub rewrite_max_bytes: u64,
    /// Disk storage: the store's `direct_min_bytes`: every record written
    /// past the page cache (0), the larger ones, the default, or none.
    /// Drawn from its own stream, so that the seeds' other parameters are
    /// those they had before it was added.
    pub direct_min_bytes: u64,
    /// Disk storage: the store's `read_cache_bytes` (none, 4 KiB, the
    /// default), from a stream of its own as `direct_min_bytes`.
    pub read_cache_bytes: u64,
    /// Disk storage: the share of crashes that tear the unsynced tail
    /// (`CrashMode::Torn`) rather than lose all of it.
    pub torn_crashes: f64,
    /// Disk storage: client payloads are padded with up to this many
    /// bytes, so that records span sectors and a torn crash can cut one.
    pub payload_pad: u64,
    /// Disk storage: now and then (3% of proposals) a payload padded with
    /// up to this many bytes instead, so that a Ready's record reaches the
    /// sizes the store writes differently (256 KiB: applied to its index
    /// while it is written; over 2 MiB: written direct in several chunks).
    /// 0 on most seeds; drawn from a stream of its own.
    pub payload_big: u64,
    /// `Config::quiesce`: idle groups sleep; each host sends node-level
    /// heartbeats to every peer every `heartbeat_tick` of its ticks and
    /// tells its node (`RawNode::wake_leader_lost`) when the leader's node
    /// has been silent for an election timeout.
    pub quiesce: bool,
    /// The probability that a host acknowledges a durable Ready with
    /// `advance_light` and handles the light Ready at once: its messages
    /// sent, its entries applied (or queued), its commit index written to
    /// the disk only sometimes (an unsynced write, lost as often as not).
    pub light_advance: f64,
    /// Pipelined hosts: whether a snapshot and compaction may be taken
    /// while writes are in flight, as soon as the applied index is at most
    /// the commit index the storage holds (the documented rule for
    /// `create_snapshot`), rather than once the disk has caught up.
    pub snapshot_in_flight: bool,
}

impl Params {
    /// Draws the parameters of `seed` under `opts`.
    pub fn draw(seed: u64, opts: &Options) -> Params {
        let mut r = Rng::new(mix(seed, 0x005e_ed0f_9a7a));
        let profile = opts.profile();
        let nodes = r.pick(&[3, 3, 5, 5, 7]);
        let mut p = Params {
            nodes,
            heartbeat_tick: r.range(1, 3) as usize,
            pre_vote: r.chance(0.85),
            check_quorum: r.chance(0.85),
            max_size_per_msg: r.pick(&[0, 64, 512, 1 << 20, 1 << 20]),
            max_inflight_msgs: r.pick(&[1, 4, 256, 256]) as usize,
            max_committed_size_per_ready: r.pick(&[0, 0, 0, 64]),
            promote_max_lag: r.pick(&[0, 5, 50, 1000]),
            max_uncommitted_entries_size: r.pick(&[0, 0, 4096]),
            liveness_bound_elections: LIVENESS_BOUND_ELECTIONS,
            liveness_bound_ticks: 0,
            host: HostKind::Disciplined,
            max_in_flight: 1,
            write_latency: (0, 0),
            write_stall: 0.0,
            ack_by_number: 0.0,
            ack_later: 0.0,
            apply_before_durable: false,
            apply_rate: 0.3,
            crash_in_vote_write: 0.0,
            aim_crashes: 0.0,
            aim_cut_link: 0.0,
            aim_stall: 0.0,
            quick_restart: 0.0,
            lose_on_restart: false,
            lease_reads: false,
            send_before_persist: r.chance(0.3),
            async_apply: r.chance(0.3),
            chaos_ticks: r.range(400, 700),
            drop: r.prob(0.0, 0.05),
            dup: r.prob(0.0, 0.03),
            delay: r.prob(0.0, 0.2),
            max_delay: r.range(5, 60),
            partition_rate: r.prob(0.0005, 0.004),
            partition_ticks: (5, r.range(30, 120)),
            crash_rate: r.prob(0.0, 0.004),
            down_ticks: (1, r.range(10, 60)),
            pause_rate: r.prob(0.0, 0.0005),
            tick_periods: vec![UNITS_PER_TICK],
            propose_rate: r.prob(0.02, 0.08),
            read_rate: r.prob(0.005, 0.03),
            conf_rate: r.prob(0.001, 0.006),
            transfer_rate: r.prob(0.0, 0.002),
            compact_rate: r.prob(0.0005, 0.004),
            auto_promote: false,
            standby_promotion: false,
            promote_min_active_rounds: 3,
            standby_dead_rounds: 3,
            learner_forwards_proposals: true,
            add_member: false,
            learner_read_share: 0.0,
            local_read_rate: 0.0,
            storage: StorageKind::Memory,
            segment_size: 0,
            rewrite_max_bytes: 0,
            direct_min_bytes: u64::MAX,
            read_cache_bytes: 0,
            torn_crashes: 0.0,
            payload_pad: 0,
            payload_big: 0,
            quiesce: false,
            light_advance: 0.0,
            snapshot_in_flight: false,
        };
        // Clock skew: some nodes tick less often than others.
        if r.chance(0.6) {
            p.tick_periods = vec![10, 10, 11, 12, 15];
        }
        match profile {
            Profile::Mixed => {}
            Profile::Adversarial => {
                p.nodes = r.pick(&[3, 5, 5, 7]);
                p.partition_rate = r.prob(0.003, 0.01);
                p.partition_ticks = (10, r.range(60, 200));
                p.crash_rate = r.prob(0.002, 0.01);
                p.down_ticks = (1, r.range(20, 100));
                p.pause_rate = r.prob(0.0005, 0.002);
                p.tick_periods = vec![10, 10, 12, 15, 20, 30];
                p.read_rate = r.prob(0.02, 0.06);
                p.conf_rate = r.prob(0.004, 0.01);
                p.drop = r.prob(0.0, 0.1);
                p.delay = r.prob(0.05, 0.4);
                p.max_delay = r.range(20, 250);
            }
            Profile::Churn => {
                p.nodes = r.pick(&[3, 3, 5]);
                p.max_size_per_msg = 0;
                p.max_inflight_msgs = 1;
                p.max_uncommitted_entries_size = 1024;
                p.liveness_bound_elections = CHURN_LIVENESS_BOUND_ELECTIONS;
                p.chaos_ticks = r.range(800, 1200);
                p.partition_rate = r.prob(0.005, 0.02);
                p.partition_ticks = (3, r.range(15, 40));
                p.crash_rate = r.prob(0.005, 0.02);
                p.down_ticks = (1, r.range(10, 40));
                p.propose_rate = r.prob(0.05, 0.15);
                p.drop = r.prob(0.0, 0.1);
                p.delay = r.prob(0.0, 0.3);
                p.conf_rate = r.prob(0.0, 0.002);
            }
            Profile::Durability => {
                p.nodes = r.pick(&[3, 3, 5]);
                p.drop = r.prob(0.03, 0.15);
                p.dup = r.prob(0.0, 0.01);
                p.delay = r.prob(0.0, 0.05);
                p.partition_rate = r.prob(0.0, 0.001);
                p.crash_rate = r.prob(0.001, 0.004);
                p.pause_rate = 0.0;
                p.propose_rate = r.prob(0.05, 0.15);
                // Many proposals on slow disks: bound the backlog a new
                // leader may have to replicate once the faults stop.
                p.max_uncommitted_entries_size = 1024;
                p.conf_rate = r.prob(0.0, 0.002);
            }
            Profile::Learners => {
                p.conf_rate = r.prob(0.004, 0.012);
                p.read_rate = r.prob(0.01, 0.04);
            }
            Profile::Disk => {
                p.nodes = r.pick(&[3, 3, 5]);
                p.crash_rate = r.prob(0.002, 0.008);
                p.propose_rate = r.prob(0.04, 0.12);
                p.max_uncommitted_entries_size = 4096;
            }
            Profile::Calm => {
                p.drop = 0.0;
                p.dup = 0.0;
                p.delay = 0.0;
                p.partition_rate = 0.0;
                p.crash_rate = 0.0;
                p.pause_rate = 0.0;
                p.tick_periods = vec![UNITS_PER_TICK];
            }
        }
        if !p.pre_vote {
            p.liveness_bound_elections = CHURN_LIVENESS_BOUND_ELECTIONS;
        }
        if let Some(t) = opts.chaos_ticks {
            p.chaos_ticks = t;
        }
        // Drawn last, so that the draws above stay those of earlier versions.
        let pipelined_share = match profile {
            Profile::Adversarial => 0.75,
            Profile::Durability => 1.0,
            _ => 0.5,
        };
        // Overrides replace a draw but do not skip it: a seed keeps its other
        // parameters.
        let drawn = if r.chance(pipelined_share) {
            HostKind::Pipelined
        } else {
            HostKind::Disciplined
        };
        p.host = opts.host.unwrap_or(drawn);
        p.max_in_flight = r.range(1, MAX_READIES_IN_FLIGHT) as usize;
        let lo = r.range(0, 3);
        p.write_latency = (lo, r.range(lo + 1, MAX_WRITE_LATENCY));
        p.write_stall = r.pick(&[0.0, 0.0003, 0.001, 0.003]);
        p.ack_by_number = r.pick(&[0.0, 0.5, 1.0]);
        p.ack_later = r.pick(&[0.0, 0.0, 0.3]);
        p.apply_before_durable = r.chance(0.5);
        p.apply_rate = r.prob(0.1, 0.6);
        p.crash_in_vote_write = match profile {
            Profile::Calm => 0.0,
            _ => r.pick(&[0.0, 0.02, 0.05, 0.1]),
        };
        p.quick_restart = r.pick(&[0.0, 0.3, 0.7]);
        p.lose_on_restart = r.chance(0.5);
        p.aim_crashes = r.pick(&[0.0, 0.1, 0.5]);
        p.aim_cut_link = r.pick(&[0.0, 0.5]);
        p.aim_stall = r.pick(&[0.0, 0.5]);
        if profile == Profile::Durability {
            p.write_latency = (r.range(0, 3), r.range(20, MAX_WRITE_LATENCY));
            p.write_stall = r.pick(&[0.001, 0.003]);
            p.crash_in_vote_write = r.pick(&[0.05, 0.1, 0.2]);
            p.aim_crashes = 1.0;
            p.aim_cut_link = 0.7;
            p.aim_stall = 0.7;
            p.quick_restart = 0.5;
        }
        if p.host == HostKind::Disciplined {
            p.max_in_flight = 1;
            p.write_latency = (0, 0);
            p.write_stall = 0.0;
            p.crash_in_vote_write = 0.0;
            p.aim_crashes = 0.0;
            p.quick_restart = 0.0;
        }
        // Lease reads on about 30 % of the seeds with check-quorum.
        let drawn = p.check_quorum && r.chance(0.3);
        p.lease_reads = opts.lease_reads.unwrap_or(drawn);
        if p.lease_reads {
            p.check_quorum = true;
            p.tick_periods = LEASE_TICK_PERIODS.to_vec();
            p.pause_rate = 0.0;
        }
        if p.host == HostKind::Pipelined && (p.max_inflight_msgs == 1 || p.max_size_per_msg <= 64) {
            // Catching up is throughput-bound here: every append of a
            // re-elected leader's backlog (one entry, or one append in
            // flight) waits for a follower's write.
            p.liveness_bound_elections = CHURN_LIVENESS_BOUND_ELECTIONS;
        }
        // The learner lifecycle, drawn after everything else (earlier
        // draws stay those of earlier versions).
        let learners = profile == Profile::Learners;
        if learners {
            p.check_quorum = true;
        }
        let (auto, standby, add) = if learners {
            (0.8, 0.6, 0.7)
        } else {
            (0.3, 0.3, 0.4)
        };
        let auto = r.chance(auto);
        let standby = r.chance(standby);
        p.auto_promote = p.check_quorum && auto;
        p.standby_promotion = p.check_quorum && standby;
        p.promote_min_active_rounds = r.pick(&[1, 2, 3, 5]) as u32;
        p.standby_dead_rounds = r.pick(&[2, 3, 5]) as u32;
        p.learner_forwards_proposals = r.chance(0.8);
        p.add_member = r.chance(add);
        p.learner_read_share = if learners {
            r.prob(0.3, 0.8)
        } else {
            r.pick(&[0.0, 0.2, 0.5])
        };
        p.local_read_rate = if learners {
            r.prob(0.005, 0.03)
        } else {
            r.pick(&[0.0, 0.0, 0.01])
        };
        // The storage, drawn after everything else (earlier draws stay
        // those of earlier versions).
        let disk_share = match profile {
            Profile::Disk => 1.0,
            Profile::Mixed | Profile::Durability => 0.25,
            _ => 0.0,
        };
        let drawn = if r.chance(disk_share) {
            StorageKind::Disk
        } else {
            StorageKind::Memory
        };
        let implied = opts.bug.filter(|b| b.in_disk()).map(|_| StorageKind::Disk);
        p.storage = opts.storage.or(implied).unwrap_or(drawn);
        p.segment_size = r.pick(&[4 << 10, 16 << 10, 64 << 10, 1 << 20]);
        p.rewrite_max_bytes = r.pick(&[0, 0, 4 << 10, 16 << 20]);
        p.direct_min_bytes =
            Rng::new(mix(seed, 0x0d12_ec70)).pick(&[0, 0, 512, 64 << 10, u64::MAX]);
        p.read_cache_bytes = Rng::new(mix(seed, 0x0cac_4e00)).pick(&[0, 4 << 10, 64 << 20]);
        p.torn_crashes = r.pick(&[0.0, 0.5, 0.5, 1.0]);
        p.payload_pad = r.pick(&[0, 0, 200, 1000]);
        if p.storage == StorageKind::Memory
            || p.max_size_per_msg < 1 << 20
            || p.max_committed_size_per_ready > 0
        {
            // Padding only where the size limits of appends and applies
            // stay far above an entry: elsewhere it would throttle flow
            // control beyond what the liveness bound allows for (mixed seed
            // 1625 with disk storage: a restarted leader re-applied its
            // log one padded entry per Ready, 512-byte limit, for longer
            // than the bound).
            p.payload_pad = 0;
        } else {
            p.payload_big = Rng::new(mix(seed, 0x0b16_9a0d)).pick(&[
                0,
                0,
                0,
                0,
                0,
                0,
                300 << 10,
                1 << 20,
                3 << 20,
            ]);
        }
        // Quiescence on about 30 % of the seeds, drawn after the storage (earlier
        // draws stay those of earlier versions).
        let quiesce_drawn = r.chance(0.3);
        p.quiesce = opts.quiesce.unwrap_or(quiesce_drawn);
        // Light Readies on half of the seeds, drawn after quiescence
        // (earlier draws stay those of earlier versions).
        let light_drawn = r.pick(&[0.0, 0.0, 0.5, 1.0]);
        p.light_advance = match opts.light {
            Some(true) => 1.0,
            Some(false) => 0.0,
            None => light_drawn,
        };
        // Snapshots with writes in flight on half of the pipelined seeds,
        // drawn after light Readies (earlier draws stay those of earlier
        // versions).
        let eager = r.chance(0.5);
        p.snapshot_in_flight = p.host == HostKind::Pipelined && eager;
        let per_election = ELECTION_TICK as u64
            + (WRITES_PER_ELECTION * p.write_latency.1).div_ceil(UNITS_PER_TICK);
        p.liveness_bound_ticks = p.liveness_bound_elections * per_election;
        p
    }
}
