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
}

impl Profile {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Mixed => "mixed",
            Profile::Adversarial => "adversarial",
            Profile::Calm => "calm",
            Profile::Churn => "churn",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(s: &str) -> Option<Profile> {
        match s {
            "mixed" => Some(Profile::Mixed),
            "adversarial" => Some(Profile::Adversarial),
            "calm" => Some(Profile::Calm),
            "churn" => Some(Profile::Churn),
            _ => None,
        }
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
}

impl Bug {
    /// Every bug.
    pub const ALL: [Bug; 10] = [
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
        }
    }

    /// Parses a switch name.
    pub fn from_name(s: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|b| b.name() == s)
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
        p
    }
}
