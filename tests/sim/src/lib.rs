//! raftlet-sim: a deterministic cluster simulator for raftlet, with fault
//! injection and safety checks after every step.
//!
//! # Model
//!
//! A run simulates 3, 5 or 7 voters (chosen by the seed), each a
//! [`raftlet::RawNode`] over a [`raftlet::MemoryStorage`], driven by a
//! simulated host of the kind the seed draws ([`HostKind`]):
//!
//! * a **disciplined** host handles one Ready at a time: persist the
//!   snapshot, entries and hard state (durable at once); send the messages;
//!   apply the committed entries (conf changes through
//!   `apply_conf_change`); `advance`;
//! * a **pipelined** host takes every freedom the Ready contract gives: it
//!   sends `messages` as soon as it takes a Ready, keeps up to 4 Readies in
//!   flight whose writes become durable later and in order (latencies,
//!   disk stalls), sends `persisted_messages` and acknowledges each Ready
//!   (`advance_append` or `on_persist_ready`, sometimes late) only once
//!   durable, steps, ticks, proposes and reads meanwhile, and applies
//!   asynchronously (`advance_apply_to`), on some seeds before the entries
//!   are durable locally, and on some takes snapshots and compacts with
//!   writes in flight, as soon as its applied index is at most the commit
//!   index the storage holds (the rule of `create_snapshot`). Its crashes lose every write in flight and may
//!   tear the one in progress (a prefix of its snapshot and entries lands,
//!   its hard state does not); some are aimed at a node acting on a term
//!   its disk does not hold yet.
//!
//! * **Disk.** The `MemoryStorage` a node was created with holds exactly
//!   what became durable. With disk storage ([`StorageKind::Disk`]: a
//!   quarter of the mixed and durability seeds, every seed of the disk
//!   profile, or `--storage disk`) the node runs instead on a
//!   raftlet-disk store over its own fault-injecting `FaultFs`: the host
//!   writes every Ready through the store (a pipelined host unsynced when
//!   it takes the Ready, synced when the write lands), a crash cuts the
//!   power (unsynced writes lost, or a prefix kept and the tail torn at a
//!   sector boundary), the node restarts by reopening the store, and the
//!   `MemoryStorage` is the model of what the host was told is durable,
//!   rebuilt from the store at each restart. A **crash** drops the `RawNode` (and the
//!   volatile state machine) at a random point of the Ready loop — before
//!   persisting, after persisting but before sending, after sending but
//!   before applying, after applying but before `advance`; for a pipelined
//!   host, before or after sending a Ready's messages or while a write
//!   lands — so whatever a Ready handed out and did not become durable is
//!   lost. The node restarts later (sometimes at once, as under a
//!   supervisor) from its storage: the state machine from the storage's
//!   snapshot, `Config::applied` at the snapshot's index, the rest
//!   replayed. Some seeds let disciplined hosts send `Ready::messages`
//!   before persisting, as the contract allows.
//! * **Network.** Every message is delivered after 1-3 time units, or
//!   later when delayed (which reorders), or twice (duplicated), or never
//!   (dropped). In-flight messages sit in a priority queue keyed by
//!   delivery time; on some seeds those addressed to a node that restarts
//!   meanwhile are lost (a connection-based transport). **Partitions** — symmetric splits, the leader isolated
//!   (sometimes with the learners), one-way splits, and asymmetric cuts of
//!   random links — start and heal at random; a blocked link loses the
//!   messages that reach it. Lost snapshots are reported to the sender
//!   (`report_snapshot(Failure)`), lost appends sometimes as unreachable.
//! * **Clock.** Time advances in units; a node ticks every 10 units at the
//!   base rate, slower when its clock is skewed (some nodes tick 10-50 %
//!   less often, up to 3x in the adversarial profile), and not at all while
//!   paused.
//! * **Client.** Proposals with unique payloads (sometimes batched);
//!   ReadIndex reads (the read's issue time and the highest index applied
//!   anywhere before it are recorded); membership changes (learners added,
//!   promoted, removed; voters removed and demoted; V2 joint changes that
//!   promote a learner and demote a voter into `learners_next`, or replace a
//!   voter; explicit joint leaves) with `max_learners = 2`, where
//!   `ConfChangeRefused`, `PromotionNotReady` and `TooManyLearners` are
//!   expected outcomes; leader transfers; and snapshot + compaction on a
//!   node (`create_snapshot` at its applied index with its state machine,
//!   then `compact`); weak reads (`read_local`), on learners most of the
//!   time; on some seeds new members are added with `add_member` (learner
//!   first), and leaders promote caught-up learners (`auto_promote`) or
//!   swap a silent voter for a standby learner (`standby_promotion`). New members start with an empty storage, or one
//!   seeded with the leader's latest snapshot, before they are added; a
//!   removed member is stopped once its removal is applied.
//!
//! After the fault phase, the faults stop (partitions heal, nothing is
//! dropped, crashed nodes restart, paused clocks resume) and the run waits
//! for a leader and a committed proposal.
//!
//! A run is a pure function of its seed and [`Options`]: all randomness
//! comes from [`rng::Rng`] (splitmix64), every node's `Config::seed` is
//! derived from the run seed, and all maps are `BTreeMap`s.
//!
//! # Invariants
//!
//! Checked after every operation on a node (see [`check::Invariant`]):
//! at most one leader per term over the whole run; log matching on the
//! persisted logs (every (index, term) pair ever persisted determines its
//! content and its predecessor's term, plus a pairwise comparison of all
//! persisted logs every 64 steps); committed entries are never lost or
//! changed (every committed or applied entry agrees with the first one seen
//! at its index, and no leader at or after a commit's term holds another);
//! applied payload sequences are prefixes of one another; a ReadIndex
//! answer is at least the highest index applied anywhere before the read
//! was issued; every node that applies the conf change at an index ends in
//! the same configuration; every entry a leader commits is durable on a
//! majority of each half of its configuration's voters (learners never count); a node
//! that campaigns or leads is a voter of its own configuration; a strong
//! read (on a learner too) is served, once the node applied up to its
//! index, from a state holding every payload applied anywhere before the
//! read was issued; a weak read (`read_local`) reports the applied index
//! of the node's state machine; a learner the leader promotes by itself
//! (`auto_promote`, standby swaps) was within `promote_max_lag` of its log
//! and not in snapshot state when the leader proposed it, and a standby
//! swap demotes a voter and promotes a learner; while a
//! node's term or vote is not the one its host acknowledged durable, the
//! messages a Ready lets leave at once are only pre-vote requests,
//! heartbeat responses and term-less forwards (the Ready contract); with
//! disk storage, a restarted node's reopened store holds every write its
//! host was told was durable (term and vote, snapshot, last entry); on the
//! seeds with quiescence (`Config::quiesce`, whose host sends node-level
//! heartbeats and calls `wake_leader_lost`), a voter that has not heard
//! from its leader's node for two election timeouts has campaigned; and, once
//! the faults stop, a leader is elected and a proposal committed within
//! [`params::LIVENESS_BOUND_ELECTIONS`] election timeouts (30 in the churn
//! profile, whose flow control is throttled, and without pre-vote, where
//! disruptive candidates make elections converge only probabilistically,
//! and for pipelined hosts with throttled flow control), each lengthened
//! on pipelined hosts by [`params::WRITES_PER_ELECTION`] write latencies,
//! plus, where flow control is throttled, the time to replicate the
//! backlog at one round trip and two writes per entry; and applied by
//! every running member of the configuration within
//! [`params::CATCH_UP_FACTOR`] times that bound.
//!
//! # Use
//!
//! ```
//! let r = raftlet_sim::run_seed(7, &raftlet_sim::Options::default());
//! assert!(r.violation.is_none(), "{:?}", r.violation);
//! ```
//!
//! The `raftlet-sim` binary runs one seed (`--seed N [--trace]`) or many
//! (`--seeds N [--start S] [--threads T]`), and prints for every failing
//! seed the one line that replays it with a trace.

pub mod check;
pub mod params;
pub mod rng;
mod sim;
pub mod stats;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use check::{Invariant, Violation};
pub use params::{Bug, HostKind, Options, Params, Profile, StorageKind};
pub use sim::{decode_state, encode_state, RunResult, Sim, CAN_PLANT_BUGS};
pub use stats::Stats;

/// Runs one seed.
pub fn run_seed(seed: u64, opts: &Options) -> RunResult {
    Sim::new(seed, opts.clone()).run()
}

/// Silences the default panic message (raftlet panics are caught and
/// reported as [`Invariant::Panic`] violations).
pub fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::panic::set_hook(Box::new(|_| {})));
}

/// The outcome of many runs.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Seeds run.
    pub seeds: u64,
    /// Steps over all runs.
    pub steps: u64,
    /// The failing runs, in seed order.
    pub failures: Vec<RunResult>,
    /// Counters summed over all runs.
    pub stats: Stats,
    /// The longest recovery after the faults stopped, in ticks.
    pub max_liveness_ticks: u64,
    /// The sum of recovery times, in ticks (for a mean).
    pub sum_liveness_ticks: u64,
    /// Runs by initial cluster size.
    pub by_size: std::collections::BTreeMap<u64, u64>,
    /// Wall-clock time.
    pub elapsed: Duration,
}

/// Runs `seeds` on `threads` threads; `stop_at_first` ends early after a
/// failure (the failing seed is still the lowest one among those run).
pub fn run_many(
    seeds: std::ops::Range<u64>,
    opts: &Options,
    threads: usize,
    stop_at_first: bool,
) -> Summary {
    let start = Instant::now();
    let next = AtomicU64::new(seeds.start);
    let stop = AtomicU64::new(u64::MAX);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= seeds.end || seed > stop.load(Ordering::Relaxed) {
                    break;
                }
                let r = run_seed(seed, opts);
                if stop_at_first && r.violation.is_some() {
                    stop.fetch_min(seed, Ordering::Relaxed);
                }
                results.lock().unwrap_or_else(|e| e.into_inner()).push(r);
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|r| r.seed);
    let mut sum = Summary {
        elapsed: start.elapsed(),
        ..Summary::default()
    };
    for r in results {
        sum.seeds += 1;
        sum.steps += r.steps;
        sum.stats.merge(&r.stats);
        *sum.by_size.entry(r.nodes).or_default() += 1;
        if let Some(t) = r.liveness_ticks {
            sum.max_liveness_ticks = sum.max_liveness_ticks.max(t);
            sum.sum_liveness_ticks += t;
        }
        if r.violation.is_some() {
            sum.failures.push(r);
        }
    }
    sum
}
