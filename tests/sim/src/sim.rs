//! The simulator: nodes, their hosts' Ready loops, the network, the clock,
//! the client and the fault injector. See the crate docs for the model.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;

use bytes::Bytes;
use raftlet::describe::{describe_conf_change, describe_entry, describe_message};
use raftlet::pb::{
    ConfChange, ConfChangeI, ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2,
    ConfState, Entry, EntryType, Message, MessageType, Snapshot,
};
use raftlet::{
    Config, Error, LightReady, MemoryStorage, RawNode, ReadOnlyOption, Ready, SnapshotStatus,
    StateRole, Storage,
};
use raftlet_disk::AnyStorage;

use crate::check::{logs_match, Checker, Invariant, Violation};
use crate::params::{
    Bug, HostKind, Options, Params, StorageKind, CATCH_UP_FACTOR, ELECTION_TICK, UNITS_PER_TICK,
};

mod disk;
mod pipeline;
use crate::rng::{mix, Rng};
use crate::stats::Stats;
use pipeline::Write;

type Res<T = ()> = Result<T, Violation>;

/// Where in the Ready loop a crash hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CrashPoint {
    /// After `ready()`, before anything was persisted: the Ready is lost.
    BeforePersist,
    /// After persisting, before sending: messages and applies are lost.
    AfterPersist,
    /// After sending, before applying and advancing.
    AfterSend,
    /// After applying, before `advance`.
    AfterApply,
}

impl CrashPoint {
    const ALL: [CrashPoint; 4] = [
        CrashPoint::BeforePersist,
        CrashPoint::AfterPersist,
        CrashPoint::AfterSend,
        CrashPoint::AfterApply,
    ];

    fn name(self) -> &'static str {
        match self {
            CrashPoint::BeforePersist => "crash-before-persist",
            CrashPoint::AfterPersist => "crash-after-persist",
            CrashPoint::AfterSend => "crash-after-send",
            CrashPoint::AfterApply => "crash-after-apply",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeState {
    Up,
    /// Crashed; restarts from its storage at `restart_at`.
    Down {
        restart_at: u64,
    },
    /// Removed from the configuration and stopped for good.
    Removed,
}

/// Work a host that applies asynchronously has taken from a Ready but
/// not applied yet.
enum Pending {
    Snapshot(Snapshot),
    Entry(Entry),
}

/// One simulated host: a RawNode, its disk and its state machine.
struct Node {
    /// `None` while crashed or removed.
    rn: Option<RawNode<AnyStorage>>,
    /// The disk: only what the host persisted. Survives crashes. With disk
    /// storage, the model of what the host was told is durable on the
    /// store (rebuilt from the store at every restart).
    storage: MemoryStorage,
    /// Disk storage: the node's filesystem and store, which the node runs
    /// on.
    disk: Option<disk::Disk>,
    incarnation: u64,
    state: NodeState,
    /// The state machine (volatile: rebuilt from the snapshot on restart):
    /// the applied payloads in order.
    sm: Vec<Bytes>,
    /// The last index applied to `sm`.
    applied: u64,
    /// The configuration after the last applied entry (what a snapshot
    /// taken at `applied` records).
    conf_state: ConfState,
    /// Time units between two ticks (clock skew: larger is slower).
    tick_period: u64,
    next_tick: u64,
    /// The clock does not tick before this time (a paused process).
    paused_until: u64,
    /// The commit index seen after the last operation.
    last_commit: u64,
    /// Role and term seen after the last operation.
    last_role: (StateRole, u64),
    /// Committed work not applied yet (hosts that apply asynchronously),
    /// each item with the number of the Ready that handed it out.
    apply_queue: VecDeque<(u64, Pending)>,
    /// Pipelined hosts: the writes of the Readies taken and not yet
    /// durable, oldest first (the front one is in progress).
    writes: VecDeque<Write>,
    /// Pipelined hosts: the number of the last Ready whose write is durable
    /// (in this incarnation).
    durable: u64,
    /// Pipelined hosts: a durable Ready whose acknowledgement the host put
    /// off (the next acknowledgement covers it).
    pending_ack: Option<(Ready, (u64, u64))>,
    /// Pipelined hosts: the snapshot index of a durable Ready whose put-off
    /// acknowledgement a later Ready's took over (0 for none): that
    /// snapshot is applied by the host and not yet reported durable, which
    /// the weak-read check allows for as it does for `pending_ack`'s.
    pending_ack_snapshot: u64,
    /// Pipelined hosts: no write lands before this time (a stalled disk).
    disk_stalled_until: u64,
    /// The node's term and vote as of the last Ready taken.
    seen_vote: (u64, u64),
    /// The term and vote of the last Ready the host acknowledged durable
    /// (or found on disk at a restart).
    acked_vote: (u64, u64),
    /// Leaders with automatic promotion or standby learners: what the
    /// leader knew of its configuration and learners just before each of
    /// its ticks since its last Ready (a membership change of its own is
    /// proposed in a tick and reported in the next Ready), newest last.
    promo_views: VecDeque<PromoView>,
    /// Strong reads answered to this node (a ReadState), waiting until its
    /// state machine has applied up to the read's index to be served.
    waiting_reads: Vec<WaitingRead>,
    /// Quiescence: this host's ticks so far (its own clock).
    local_ticks: u64,
    /// Quiescence: for each peer node, `local_ticks` when anything from
    /// it (a message or a node-level heartbeat) last arrived.
    heard: BTreeMap<u64, u64>,
    /// Quiescence: `local_ticks` when the host (re)started; peers not
    /// heard from since count as heard then.
    heard_floor: u64,
    /// Quiescence: the last `local_ticks` at which the node could not
    /// campaign (see `check_election_delay`).
    held_at: u64,
    /// Quiescence: peers the node was told are silent
    /// (`wake_leader_lost`), until heard from again.
    told_lost: BTreeSet<u64>,
}

/// What a leader knew just before one of its ticks, to check a membership
/// change it proposed in that tick against.
struct PromoView {
    term: u64,
    /// The leader's last index: a change proposed in the tick is at
    /// `last + 1`.
    last: u64,
    /// The voters of its configuration (both halves).
    voters: BTreeSet<u64>,
    /// Every learner: (lag behind `last`, replication state).
    learners: BTreeMap<u64, (u64, raftlet::tracker::ProgressState)>,
}

/// How many [`PromoView`]s a node keeps (the ticks a Ready may lag behind).
const PROMO_VIEWS: usize = 64;

/// A strong read answered (a ReadState) and not yet served.
struct WaitingRead {
    ctx: Bytes,
    index: u64,
    issued: u64,
    /// The number of payloads applied anywhere before the read was issued:
    /// the state served must hold at least these.
    payload_floor: usize,
}

/// A message in flight.
struct Flight {
    msg: Message,
    /// A node-level heartbeat of the quiescence host (`msg` only names the
    /// sender and the recipient; it is never stepped).
    beacon: bool,
    /// The recipient's incarnation when the message was sent.
    to_incarnation: u64,
}

/// The kinds of network partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartitionKind {
    /// Two groups that cannot reach each other.
    Symmetric,
    /// The leader (sometimes with the learners) cut from everyone else.
    IsolateLeader,
    /// Messages from one group to the other are lost; the other way works.
    OneWay,
    /// Random links cut in both directions: connectivity is not transitive.
    Asymmetric,
}

impl PartitionKind {
    fn name(self) -> &'static str {
        match self {
            PartitionKind::Symmetric => "partition-symmetric",
            PartitionKind::IsolateLeader => "partition-isolate-leader",
            PartitionKind::OneWay => "partition-one-way",
            PartitionKind::Asymmetric => "partition-asymmetric",
        }
    }
}

/// A read waiting for its answer.
struct PendingRead {
    node: u64,
    issued: u64,
    /// The highest index applied anywhere before the read was issued: every
    /// acknowledged write is at or below it.
    floor: u64,
    /// The number of payloads applied anywhere before the read was issued
    /// (every acknowledged write).
    payload_floor: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Faults and client operations.
    Chaos,
    /// Faults healed; waiting for a leader and a committed probe.
    Liveness { start: u64 },
    /// The probe committed at `at`; the run ends a little later.
    Done { at: u64 },
}

/// The outcome of a run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The seed.
    pub seed: u64,
    /// Steps (simulated time units) executed.
    pub steps: u64,
    /// The first violation, if any.
    pub violation: Option<Violation>,
    /// Counters of faults injected and operations performed.
    pub stats: Stats,
    /// Base ticks from the end of the faults until a probe committed.
    pub liveness_ticks: Option<u64>,
    /// Voters at the start.
    pub nodes: u64,
}

/// A deterministic simulation of one cluster. Build with [`Sim::new`] and
/// call [`Sim::run`]; or use [`crate::run_seed`].
pub struct Sim {
    seed: u64,
    opts: Options,
    p: Params,
    rng: Rng,
    now: u64,
    steps: u64,
    nodes: BTreeMap<u64, Node>,
    queue: BTreeMap<(u64, u64), Flight>,
    queue_seq: u64,
    blocked: BTreeSet<(u64, u64)>,
    /// Single links cut until a time (from, to) -> until, besides the
    /// partition's.
    cut_links: BTreeMap<(u64, u64), u64>,
    partition: Option<(PartitionKind, u64)>,
    chk: Checker,
    stats: Stats,
    next_id: u64,
    spares: Vec<u64>,
    payload_seq: u64,
    reads: BTreeMap<Bytes, PendingRead>,
    phase: Phase,
    probe: Option<(u64, u64)>,
    /// The nodes that applied a liveness probe.
    probe_applied: BTreeSet<u64>,
    /// Removed members to stop, with the time to stop them (some linger
    /// a while, as a host may be slow to notice its removal).
    pending_stop: Vec<(u64, u64)>,
    liveness_ticks: Option<u64>,
    /// The incarnation of the leader of each term.
    led: BTreeMap<u64, u64>,
    /// Added to the liveness bound when the faults stop: the time to
    /// replicate the uncommitted backlog where flow control makes that
    /// throughput-bound (see [`Sim::backlog_ticks`]).
    backlog_ticks: u64,
}

/// Encodes a state machine (the applied payloads) as snapshot data: a u32
/// big-endian length before each payload.
pub fn encode_state(sm: &[Bytes]) -> Bytes {
    let mut out = Vec::with_capacity(sm.iter().map(|d| d.len() + 4).sum());
    for d in sm {
        out.extend_from_slice(&(d.len() as u32).to_be_bytes());
        out.extend_from_slice(d);
    }
    Bytes::from(out)
}

/// Decodes what [`encode_state`] produced.
pub fn decode_state(mut b: &[u8]) -> Vec<Bytes> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let n = n.min(b.len() - 4);
        out.push(Bytes::copy_from_slice(&b[4..4 + n]));
        b = &b[4 + n..];
    }
    out
}

fn members(cs: &ConfState) -> BTreeSet<u64> {
    cs.voters
        .iter()
        .chain(&cs.learners)
        .chain(&cs.voters_outgoing)
        .chain(&cs.learners_next)
        .copied()
        .collect()
}

fn host_err(now: u64, what: String) -> Violation {
    Violation {
        invariant: Invariant::HostContract,
        time: now,
        detail: what,
    }
}

impl Sim {
    /// A cluster for `seed`: the parameters are drawn from it, and the
    /// initial voters are bootstrapped (their first Ready is handled, with
    /// no fault, before the run starts).
    pub fn new(seed: u64, opts: Options) -> Sim {
        let p = Params::draw(seed, &opts);
        let sim = Sim {
            seed,
            rng: Rng::new(mix(seed, 0x0005_1a1e)),
            opts,
            now: 0,
            steps: 0,
            nodes: BTreeMap::new(),
            queue: BTreeMap::new(),
            queue_seq: 0,
            blocked: BTreeSet::new(),
            cut_links: BTreeMap::new(),
            partition: None,
            chk: Checker::default(),
            stats: Stats::default(),
            next_id: p.nodes + 1,
            spares: Vec::new(),
            payload_seq: 0,
            reads: BTreeMap::new(),
            phase: Phase::Chaos,
            probe: None,
            probe_applied: BTreeSet::new(),
            pending_stop: Vec::new(),
            liveness_ticks: None,
            led: BTreeMap::new(),
            backlog_ticks: 0,
            p,
        };
        sim.tr(|| {
            format!(
                "seed {} profile {} bug {:?}: {} voters, heartbeat {} ticks, pre_vote {}, check_quorum {}, \
                 lease_reads {}, host {}{}, \
                 max_size_per_msg {}, max_inflight {}, promote_max_lag {}, send_before_persist {}, async_apply {}; \
                 drop {:.3} dup {:.3} delay {:.3} (max {}), partitions {:.4}/unit, crashes {:.4}/ready, \
                 chaos {} ticks, liveness bound {} ticks; storage {}",
                seed,
                sim.opts.profile().name(),
                sim.opts.bug.map(Bug::name),
                sim.p.nodes,
                sim.p.heartbeat_tick,
                sim.p.pre_vote,
                sim.p.check_quorum,
                sim.p.lease_reads,
                sim.p.host.name(),
                if sim.p.host == HostKind::Pipelined {
                    format!(
                        " (up to {} Readies in flight, write latency {}..={} units, ack by number {:.1}, \
                         ack later {:.1}, apply before durable {}, apply rate {:.2})",
                        sim.p.max_in_flight,
                        sim.p.write_latency.0,
                        sim.p.write_latency.1,
                        sim.p.ack_by_number,
                        sim.p.ack_later,
                        sim.p.apply_before_durable,
                        sim.p.apply_rate
                    )
                } else {
                    String::new()
                },
                sim.p.max_size_per_msg,
                sim.p.max_inflight_msgs,
                sim.p.promote_max_lag,
                sim.p.send_before_persist,
                sim.p.async_apply,
                sim.p.drop,
                sim.p.dup,
                sim.p.delay,
                sim.p.max_delay,
                sim.p.partition_rate,
                sim.p.crash_rate,
                sim.p.chaos_ticks,
                sim.p.liveness_bound_ticks,
                if sim.p.storage == StorageKind::Disk {
                    format!(
                        "disk (segments of {} bytes, rewrite_max_bytes {}, direct_min_bytes {}, read_cache_bytes {}, torn crashes {:.1}, payload padding up to {}, large payloads up to {})",
                        sim.p.segment_size,
                        sim.p.rewrite_max_bytes,
                        sim.p.direct_min_bytes,
                        sim.p.read_cache_bytes,
                        sim.p.torn_crashes,
                        sim.p.payload_pad,
                        sim.p.payload_big
                    )
                } else {
                    "memory".into()
                }
            )
        });
        sim
    }

    fn tr(&self, f: impl FnOnce() -> String) {
        if self.opts.trace {
            println!("[{:>6}] {}", self.now, f());
        }
    }

    fn config_for(&self, id: u64, incarnation: u64) -> Config {
        let mut c = Config::new(id);
        c.election_tick = ELECTION_TICK;
        c.heartbeat_tick = self.p.heartbeat_tick;
        c.pre_vote = self.p.pre_vote;
        c.check_quorum = self.p.check_quorum;
        c.max_size_per_msg = self.p.max_size_per_msg;
        c.max_inflight_msgs = self.p.max_inflight_msgs;
        c.max_committed_size_per_ready = self.p.max_committed_size_per_ready;
        c.promote_max_lag = self.p.promote_max_lag;
        c.max_uncommitted_entries_size = self.p.max_uncommitted_entries_size;
        c.max_learners = 2;
        c.auto_promote = self.p.auto_promote;
        c.standby_promotion = self.p.standby_promotion;
        c.promote_min_active_rounds = self.p.promote_min_active_rounds;
        c.standby_dead_rounds = self.p.standby_dead_rounds;
        c.learner_forwards_proposals = self.p.learner_forwards_proposals;
        c.quiesce = self.p.quiesce;
        if self.p.lease_reads {
            c.read_only_option = ReadOnlyOption::LeaseBased;
        }
        c.seed = mix(mix(self.seed, id), incarnation) | 1;
        c
    }

    fn new_raw(
        &self,
        id: u64,
        incarnation: u64,
        applied: u64,
        storage: &AnyStorage,
    ) -> Res<RawNode<AnyStorage>> {
        let mut cfg = self.config_for(id, incarnation);
        cfg.applied = applied;
        #[allow(unused_mut)]
        let mut rn = RawNode::new(&cfg, storage.clone())
            .map_err(|e| host_err(self.now, format!("node {id}: RawNode::new failed: {e}")))?;
        if let Some(bug) = self.opts.bug {
            plant(&mut rn, bug);
        }
        Ok(rn)
    }

    fn add_node(&mut self, id: u64, storage: MemoryStorage) -> Res {
        let snap = storage.rl().snapshot_ref().clone();
        let sm = decode_state(snap.data());
        self.chk.restored_state(id, &sm)?;
        let disk = if self.p.storage == StorageKind::Disk {
            Some(self.new_disk(id, &storage)?)
        } else {
            None
        };
        let runs_on = match disk.as_ref().and_then(|d| d.group.clone()) {
            Some(g) => AnyStorage::Disk(g),
            None => AnyStorage::Memory(storage.clone()),
        };
        let rn = self.new_raw(id, 0, snap.metadata.index, &runs_on)?;
        let period = self.rng.pick(&self.p.tick_periods.clone());
        if period != UNITS_PER_TICK {
            self.stats.fault("clock-skewed-node");
        }
        let bs = rn.basic_status();
        let node = Node {
            rn: Some(rn),
            storage,
            disk,
            incarnation: 0,
            state: NodeState::Up,
            sm,
            applied: snap.metadata.index,
            conf_state: snap.metadata.conf_state.clone(),
            tick_period: period,
            next_tick: self.now + 1 + self.rng.below(period),
            paused_until: 0,
            last_commit: bs.hard_state.commit,
            last_role: (bs.soft_state.raft_state, bs.hard_state.term),
            apply_queue: VecDeque::new(),
            writes: VecDeque::new(),
            durable: 0,
            pending_ack: None,
            pending_ack_snapshot: 0,
            disk_stalled_until: 0,
            seen_vote: (bs.hard_state.term, bs.hard_state.vote),
            acked_vote: (bs.hard_state.term, bs.hard_state.vote),
            promo_views: VecDeque::new(),
            waiting_reads: Vec::new(),
            local_ticks: 0,
            heard: BTreeMap::new(),
            heard_floor: 0,
            held_at: 0,
            told_lost: BTreeSet::new(),
        };
        self.nodes.insert(id, node);
        Ok(())
    }

    /// Runs the whole scenario: the fault phase, then the liveness phase.
    pub fn run(mut self) -> RunResult {
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_inner()));
        let violation = match res {
            Ok(Ok(())) => None,
            Ok(Err(v)) => Some(v),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                Some(Violation {
                    invariant: Invariant::Panic,
                    time: self.now,
                    detail: msg,
                })
            }
        };
        if let Some(v) = &violation {
            self.tr(|| format!("VIOLATION {v}"));
            if v.invariant != Invariant::Liveness {
                self.tr(|| self.dump());
            }
        }
        self.disk_figures();
        self.stats
            .op_n("leader-terms", self.chk.leader_terms() as u64);
        self.stats
            .op_n("payloads-applied", self.chk.payloads_applied() as u64);
        RunResult {
            seed: self.seed,
            steps: self.steps,
            violation,
            stats: self.stats,
            liveness_ticks: self.liveness_ticks,
            nodes: self.p.nodes,
        }
    }

    fn run_inner(&mut self) -> Res {
        let voters: Vec<u64> = (1..=self.p.nodes).collect();
        for &id in &voters {
            self.add_node(id, MemoryStorage::new())?;
            let rn = self
                .nodes
                .get_mut(&id)
                .and_then(|n| n.rn.as_mut())
                .expect("just added");
            rn.bootstrap(&voters, &[])
                .map_err(|e| host_err(0, format!("bootstrap of {id}: {e}")))?;
            while self.handle_ready(id, false)? {}
        }
        let chaos_end = self.p.chaos_ticks * UNITS_PER_TICK;
        loop {
            self.now += 1;
            self.steps += 1;
            self.chk.now = self.now;
            let bound = (self.p.liveness_bound_ticks + self.backlog_ticks) * UNITS_PER_TICK;
            let hard_cap = chaos_end + CATCH_UP_FACTOR * bound + 1000;
            if self.now > hard_cap {
                return Err(host_err(self.now, "run exceeded its step cap".into()));
            }
            match self.phase {
                Phase::Chaos if self.now >= chaos_end => self.enter_liveness()?,
                Phase::Liveness { start } => {
                    if self.probe_everywhere() {
                        self.liveness_ticks = Some((self.now - start) / UNITS_PER_TICK);
                        self.tr(|| {
                            format!(
                                "liveness: probe committed after {} ticks",
                                (self.now - start) / UNITS_PER_TICK
                            )
                        });
                        self.phase = Phase::Done { at: self.now };
                    } else if self.now - start > bound && self.probe_applied.is_empty() {
                        return Err(Violation {
                            invariant: Invariant::Liveness,
                            time: self.now,
                            detail: format!(
                                "no proposal committed within {} ticks ({} election timeouts, with write \
                                 latency, and {} ticks for the backlog) after the faults stopped (leader \
                                 {:?})\n{}",
                                bound / UNITS_PER_TICK,
                                self.p.liveness_bound_elections,
                                self.backlog_ticks,
                                self.leader(),
                                self.dump()
                            ),
                        });
                    } else if self.now - start > CATCH_UP_FACTOR * bound {
                        return Err(Violation {
                            invariant: Invariant::Liveness,
                            time: self.now,
                            detail: format!(
                                "the probe committed, but not every running member applied it within {} ticks \
                                 ({} election timeouts) after the faults stopped (leader {:?}, applied by {:?}, \
                                 not by {:?})\n{}",
                                CATCH_UP_FACTOR * bound / UNITS_PER_TICK,
                                CATCH_UP_FACTOR * self.p.liveness_bound_elections,
                                self.leader(),
                                self.probe_applied,
                                self.probe_laggards(),
                                self.dump()
                            ),
                        });
                    }
                }
                Phase::Done { at } if self.now > at + 5 * UNITS_PER_TICK => break,
                _ => {}
            }
            self.step()?;
        }
        self.check_logs_pairwise()?;
        Ok(())
    }

    /// One unit of simulated time.
    fn step(&mut self) -> Res {
        if self.phase == Phase::Chaos {
            self.inject_faults()?;
        }
        self.restarts_due()?;
        self.ticks()?;
        self.deliveries()?;
        match self.phase {
            Phase::Chaos => self.client_ops()?,
            Phase::Liveness { .. } => self.liveness_probe()?,
            Phase::Done { .. } => {}
        }
        if self.p.async_apply || self.p.host == HostKind::Pipelined {
            self.async_applies()?;
        }
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            if self.p.host == HostKind::Pipelined {
                self.pipelined_readies(id)?;
                continue;
            }
            for _ in 0..4 {
                if !self.handle_ready(id, true)? {
                    break;
                }
                if self.p.async_apply && self.phase != Phase::Chaos {
                    // Once the faults stop, hosts apply at once.
                    self.apply_queued(id, u64::MAX)?;
                }
            }
        }
        let now = self.now;
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending_stop)
            .into_iter()
            .partition(|&(_, at)| at <= now);
        self.pending_stop = later;
        for (id, _) in due {
            self.stop_removed(id);
        }
        if self.steps % 64 == 0 {
            self.check_logs_pairwise()?;
        }
        Ok(())
    }

    // ------------------------------------------------------------------
    // Observation and per-operation checks
    // ------------------------------------------------------------------

    /// Checks run after every operation on node `id`.
    fn after_op(&mut self, id: u64) -> Res {
        let Some(node) = self.nodes.get(&id) else {
            return Ok(());
        };
        let Some(rn) = node.rn.as_ref() else {
            return Ok(());
        };
        let bs = rn.basic_status();
        let (last_role, last_commit) = (node.last_role, node.last_commit);
        let role = bs.soft_state.raft_state;
        let term = bs.hard_state.term;
        let commit = bs.hard_state.commit;
        if role == StateRole::Leader {
            self.chk.leader(term, id)?;
            let inc = node.incarnation;
            if self.led.insert(term, inc).is_some_and(|prev| prev != inc) {
                // Possible only when the term was not durable when it led:
                // a restart forgot it.
                self.stats.op("terms-led-by-two-incarnations");
                self.tr(|| format!("n{id} leads term {term} again, in incarnation {inc}"));
            }
        }
        let changed = (role, term) != last_role;
        if changed {
            self.tr(|| {
                format!(
                    "n{id} is now {role} in term {term} (leader {})",
                    bs.soft_state.leader_id
                )
            });
            if role != StateRole::Follower {
                self.check_voter(id)?;
            }
            if role == StateRole::Leader && node.storage.rl().hard_state().term < term {
                // Elected by its peers' votes alone: its own term and vote
                // are still in flight.
                self.stats.op("leaders-before-own-term-durable");
                if self.p.host == HostKind::Pipelined {
                    self.aim_crash_at_term_write(id, term);
                }
            }
        }
        if commit > last_commit && role == StateRole::Leader {
            self.check_leader_commit(id, last_commit, commit, term)?;
        }
        let node = self.nodes.get_mut(&id).expect("present");
        node.last_role = (role, term);
        node.last_commit = commit;
        Ok(())
    }

    /// A node that campaigns or leads is a voter of its own configuration.
    fn check_voter(&self, id: u64) -> Res {
        let Some(rn) = self.nodes.get(&id).and_then(|n| n.rn.as_ref()) else {
            return Ok(());
        };
        let st = rn.status();
        let role = st.basic.soft_state.raft_state;
        if role != StateRole::Follower && !st.config.voters.contains(id) {
            return Err(Violation {
                invariant: Invariant::LearnerCampaigned,
                time: self.now,
                detail: format!(
                    "node {id} is {role} in term {} but not a voter of its configuration {}",
                    st.basic.hard_state.term, st.config
                ),
            });
        }
        Ok(())
    }

    /// Leader `id` moved its commit index from `old` to `new`: the entries
    /// are recorded as committed, and the entry at `new` must be persisted
    /// on a majority of each half of the leader's voters.
    fn check_leader_commit(&mut self, id: u64, old: u64, new: u64, term: u64) -> Res {
        let node = &self.nodes[&id];
        let storage = node.storage.clone();
        let st = node.rn.as_ref().expect("up").status();
        let first = storage.first_index().unwrap_or(1);
        let lo = (old + 1).max(first);
        // The leader's log as its host knows it: the disk, then the writes
        // in flight.
        let ents = self.host_entries(id, lo, new);
        let who = format!("leader {id} (term {term})");
        for e in &ents {
            self.chk.committed(e, term, &who)?;
        }
        let Some(t) = ents.last().filter(|e| e.index == new).map(|e| e.term) else {
            // Compacted away on the leader already: the apply-time checks
            // cover it.
            self.stats.op("commit-check-skipped");
            return Ok(());
        };
        let persisted = |v: u64| -> bool {
            let Some(n) = self.nodes.get(&v) else {
                return false;
            };
            match n.storage.term(new) {
                Ok(x) => x == t,
                Err(raftlet::Error::Store(raftlet::StorageError::Compacted)) => true,
                Err(_) => false,
            }
        };
        let count =
            |ids: &raftlet::quorum::MajorityConfig| ids.iter().filter(|v| persisted(**v)).count();
        let inc = &st.config.voters.incoming;
        let out = &st.config.voters.outgoing;
        let ok_in = count(inc) > inc.len() / 2;
        let ok_out = out.is_empty() || count(out) > out.len() / 2;
        if !(ok_in && ok_out) {
            let holders: Vec<u64> = self
                .nodes
                .keys()
                .copied()
                .filter(|v| persisted(*v))
                .collect();
            return Err(Violation {
                invariant: Invariant::CommitWithoutVoterQuorum,
                time: self.now,
                detail: format!(
                    "leader {id} (term {term}) committed {t}/{new} with configuration {}, but only nodes {holders:?} persisted it",
                    st.config
                ),
            });
        }
        Ok(())
    }

    // ------------------------------------------------------------------
    // The host's Ready loop
    // ------------------------------------------------------------------

    /// Handles one Ready of `id` if it has one, with a crash at a random
    /// point when `allow_crash` (and the dice) say so. Returns whether a
    /// Ready was taken.
    fn handle_ready(&mut self, id: u64, allow_crash: bool) -> Res<bool> {
        let Some(node) = self.nodes.get_mut(&id) else {
            return Ok(false);
        };
        let Some(rn) = node.rn.as_mut() else {
            return Ok(false);
        };
        if !rn.has_ready() {
            return Ok(false);
        }
        let mut rd: Ready = rn.ready();
        let storage = node.storage.clone();
        self.tr(|| describe_ready(id, &rd));
        self.stats.op("readies");
        let vote = self.check_early_messages(id, &rd)?;
        self.check_membership_events(id, &rd)?;
        let crash =
            if allow_crash && self.phase == Phase::Chaos && self.rng.chance(self.p.crash_rate) {
                Some(self.rng.pick(&CrashPoint::ALL))
            } else {
                None
            };
        if crash == Some(CrashPoint::BeforePersist) {
            if self.p.send_before_persist {
                self.send_all(id, std::mem::take(&mut rd.messages))?;
            }
            self.crash(id, CrashPoint::BeforePersist.name(), None);
            return Ok(true);
        }
        if self.p.send_before_persist {
            self.send_all(id, std::mem::take(&mut rd.messages))?;
        }
        // 1. Persist: snapshot, entries, hard state (through the store
        // with disk storage; the model follows).
        self.disk_persist_ready(id, &rd, vote.0)?;
        {
            let mut s = storage.wl();
            if let Some(snap) = &rd.snapshot {
                s.apply_snapshot(snap.clone())
                    .map_err(|e| host_err(self.now, format!("node {id}: apply_snapshot: {e}")))?;
            }
            s.append(&rd.entries)
                .map_err(|e| host_err(self.now, format!("node {id}: append: {e}")))?;
            if let Some(hs) = rd.hard_state {
                s.set_hard_state(hs);
            }
        }
        self.check_persisted(id, &storage, rd.snapshot.as_ref(), &rd.entries)?;
        self.nodes.get_mut(&id).expect("present").durable = rd.number();
        if crash == Some(CrashPoint::AfterPersist) {
            self.crash(id, CrashPoint::AfterPersist.name(), None);
            return Ok(true);
        }
        // 2. Send.
        let msgs: Vec<Message> = std::mem::take(&mut rd.messages)
            .into_iter()
            .chain(std::mem::take(&mut rd.persisted_messages))
            .collect();
        self.send_all(id, msgs)?;
        if crash == Some(CrashPoint::AfterSend) {
            self.crash(id, CrashPoint::AfterSend.name(), None);
            return Ok(true);
        }
        // 3. Apply (a host that applies asynchronously queues the work and
        // applies it in later steps, see `async_applies`).
        if self.p.async_apply {
            let node = self.nodes.get_mut(&id).expect("present");
            let number = rd.number();
            if let Some(snap) = rd.snapshot.take() {
                node.apply_queue
                    .push_back((number, Pending::Snapshot(snap)));
            }
            for e in rd.committed_entries.drain(..) {
                node.apply_queue.push_back((number, Pending::Entry(e)));
            }
        } else {
            if let Some(snap) = &rd.snapshot {
                self.apply_snapshot(id, snap)?;
            }
            for e in &rd.committed_entries {
                self.apply_entry(id, e)?;
            }
        }
        for rs in &rd.read_states {
            self.check_read(id, rs.index, &rs.request_ctx)?;
        }
        self.serve_reads(id)?;
        if crash == Some(CrashPoint::AfterApply) {
            self.crash(id, CrashPoint::AfterApply.name(), None);
            return Ok(true);
        }
        // 4. Advance.
        let light = self.rng.chance(self.p.light_advance);
        let number = rd.number();
        if let Some(node) = self.nodes.get_mut(&id) {
            if let Some(rn) = node.rn.as_mut() {
                if light {
                    let lr = rn.advance_light(rd);
                    node.acked_vote = vote;
                    self.handle_light(id, lr, number, self.p.async_apply)?;
                } else {
                    if self.p.async_apply {
                        rn.advance_append(rd);
                    } else {
                        rn.advance(rd);
                    }
                    node.acked_vote = vote;
                }
            }
        }
        self.after_op(id)?;
        Ok(true)
    }

    /// Handles the light Ready that acknowledging Ready `number` (durable)
    /// handed out: checks that its messages need nothing the host has not
    /// acknowledged durable and sends them, writes its commit index to the
    /// disk only sometimes (an unsynced write: with memory storage, half
    /// the time; with disk storage never, as if every such write were
    /// lost), then applies its entries at once (and reports everything
    /// applied) or queues them behind the Ready's own.
    fn handle_light(&mut self, id: u64, mut lr: LightReady, number: u64, queue: bool) -> Res {
        self.stats.op("light-readies");
        let msgs = lr.take_messages();
        if let Some(node) = self.nodes.get(&id) {
            let bs = node.rn.as_ref().map(|rn| rn.basic_status());
            let now_vote = bs.map(|b| (b.hard_state.term, b.hard_state.vote));
            if now_vote.is_some_and(|v| v != node.acked_vote) && !self.opts.no_contract_check {
                if let Some(m) = msgs.iter().find(|m| needs_durable_state(m)) {
                    return Err(Violation {
                        invariant: Invariant::ReadyContract,
                        time: self.now,
                        detail: format!(
                            "node {id}'s light Ready hands out {} to send at once, but its host \
                             has acknowledged only term {}, vote {} durable",
                            describe_message(m),
                            node.acked_vote.0,
                            node.acked_vote.1
                        ),
                    });
                }
            }
        }
        self.send_all(id, msgs)?;
        if let Some(commit) = lr.commit_index() {
            if self.p.storage == StorageKind::Memory && self.rng.chance(0.5) {
                let storage = self.nodes[&id].storage.clone();
                let mut s = storage.wl();
                let mut hs = *s.hard_state();
                hs.commit = hs.commit.max(commit);
                s.set_hard_state(hs);
            } else {
                self.stats.op("light-commits-lost");
            }
        }
        let ents = lr.take_committed_entries();
        if queue {
            let node = self.nodes.get_mut(&id).expect("present");
            for e in ents {
                node.apply_queue.push_back((number, Pending::Entry(e)));
            }
            return Ok(());
        }
        for e in &ents {
            self.apply_entry(id, e)?;
        }
        if let Some(rn) = self.nodes.get_mut(&id).and_then(|n| n.rn.as_mut()) {
            let idle = idle_after_apply(rn);
            rn.advance_apply_light(lr);
            self.check_idle_after_apply(id, idle)?;
        }
        self.serve_reads(id)
    }

    /// The promise of `RawNode::apply_may_make_ready`, which hosts and the
    /// Go binding rely on to report applied entries later without asking
    /// `has_ready` again: a node that had no Ready and whose report could
    /// make none (`idle`, read before the report) has none after it.
    fn check_idle_after_apply(&mut self, id: u64, idle: bool) -> Res {
        let Some(rn) = self.nodes.get(&id).and_then(|n| n.rn.as_ref()) else {
            return Ok(());
        };
        if idle {
            self.stats.op("idle-after-apply");
            if rn.has_ready() {
                return Err(Violation {
                    invariant: Invariant::ReadyContract,
                    time: self.now,
                    detail: format!(
                        "node {id} has a Ready after its host reported entries applied, \
                         though it had none and apply_may_make_ready said the report \
                         could make none"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Before a snapshot makes state applied up to `applied` durable, the
    /// host persists the commit index up to it (the light Ready contract:
    /// `RawNode::advance_light`). A commit index handed out by a light
    /// Ready may not be on the disk yet; with full Readies only it always
    /// is, and this writes nothing.
    fn persist_commit_upto(&mut self, id: u64, applied: u64) -> Res {
        let storage = self.nodes[&id].storage.clone();
        {
            let mut s = storage.wl();
            let mut hs = *s.hard_state();
            if hs.commit < applied {
                hs.commit = applied;
                s.set_hard_state(hs);
                self.stats.op("light-commits-persisted-for-snapshot");
            }
        }
        if let Some(g) = self.disk_group(id) {
            let mut hs = g.hard_state();
            if hs.commit < applied {
                hs.commit = applied;
                g.set_hard_state(&hs).map_err(|e| {
                    host_err(self.now, format!("node {id}: store set_hard_state: {e}"))
                })?;
            }
        }
        Ok(())
    }

    /// Checks the Ready contract on the messages `rd` lets leave at once,
    /// and returns the node's term and vote as of `rd`: while they differ
    /// from those the host acknowledged durable, a crash could take the
    /// node back to older ones, so only messages that need nothing durable
    /// may leave before the write (pre-vote requests, heartbeat responses,
    /// forwarded proposals and reads, which carry no term).
    fn check_early_messages(&mut self, id: u64, rd: &Ready) -> Res<(u64, u64)> {
        let node = self.nodes.get_mut(&id).expect("present");
        let vote = rd
            .hard_state
            .map_or(node.seen_vote, |hs| (hs.term, hs.vote));
        node.seen_vote = vote;
        if vote == node.acked_vote || self.opts.no_contract_check {
            return Ok(vote);
        }
        let acked = node.acked_vote;
        let early = rd.messages.iter().find(|m| needs_durable_state(m));
        if let Some(m) = early {
            return Err(Violation {
                invariant: Invariant::ReadyContract,
                time: self.now,
                detail: format!(
                    "node {id} (term {}, vote {}) hands out {} to send at once, but its host has \
                     acknowledged only term {}, vote {} durable",
                    vote.0,
                    vote.1,
                    describe_message(m),
                    acked.0,
                    acked.1
                ),
            });
        }
        Ok(vote)
    }

    /// Checks what a write put on `id`'s disk (already in `storage`).
    fn check_persisted(
        &mut self,
        id: u64,
        storage: &MemoryStorage,
        snapshot: Option<&Snapshot>,
        entries: &[Entry],
    ) -> Res {
        if let Some(snap) = snapshot {
            self.chk
                .snapshot(id, snap.metadata.index, snap.metadata.term)?;
        }
        let first = storage.first_index().unwrap_or(1);
        for e in entries {
            if e.index < first {
                continue;
            }
            let prev = storage.term(e.index - 1).unwrap_or(0);
            self.chk.persisted(id, e, prev)?;
        }
        Ok(())
    }

    fn apply_snapshot(&mut self, id: u64, snap: &Snapshot) -> Res {
        let sm = decode_state(snap.data());
        self.chk.restored_state(id, &sm)?;
        if sm.iter().any(|d| d.starts_with(b"live:")) {
            self.probe_applied.insert(id);
        }
        let node = self.nodes.get_mut(&id).expect("present");
        node.sm = sm;
        node.applied = snap.metadata.index;
        node.conf_state = snap.metadata.conf_state.clone();
        self.stats.op("snapshots-applied");
        self.tr(|| {
            format!(
                "n{id} applied snapshot {}",
                raftlet::describe::describe_snapshot(snap)
            )
        });
        Ok(())
    }

    /// Hosts that apply asynchronously apply some of their queued work
    /// (slowly and at random times: slow application is a fault too).
    fn async_applies(&mut self) -> Res {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            let node = &self.nodes[&id];
            if node.state != NodeState::Up
                || node.apply_queue.is_empty()
                || !self.rng.chance(self.p.apply_rate)
            {
                continue;
            }
            let n = self.rng.range(1, 8);
            self.apply_queued(id, n)?;
        }
        Ok(())
    }

    /// Applies up to `n` items of `id`'s queued work, then reports them
    /// with `advance_apply_to`.
    fn apply_queued(&mut self, id: u64, n: u64) -> Res {
        {
            let mut last = None;
            let pipelined = self.p.host == HostKind::Pipelined;
            let gated = pipelined && !self.p.apply_before_durable;
            for _ in 0..n {
                let Some(node) = self.nodes.get_mut(&id) else {
                    break;
                };
                // A host that applies only what is durable locally waits
                // for the write of the Ready that handed the work out. A
                // configuration change always does (the Ready contract:
                // the Ready that hands one out makes the commit index
                // covering it durable, and the change is applied only
                // once it is); a disciplined host queues work only once
                // its Ready is durable.
                match node.apply_queue.front() {
                    Some((number, item)) => {
                        let wait = match item {
                            Pending::Entry(e) if e.is_conf_change() => pipelined,
                            _ => gated,
                        };
                        if wait && *number > node.durable {
                            break;
                        }
                    }
                    None => break,
                }
                let Some((_, item)) = node.apply_queue.pop_front() else {
                    break;
                };
                match item {
                    Pending::Snapshot(s) => {
                        self.apply_snapshot(id, &s)?;
                        last = Some(s.metadata.index);
                    }
                    Pending::Entry(e) => {
                        self.apply_entry(id, &e)?;
                        last = Some(e.index);
                    }
                }
            }
            if let Some(i) = last {
                if let Some(rn) = self.nodes.get_mut(&id).and_then(|n| n.rn.as_mut()) {
                    let idle = idle_after_apply(rn);
                    rn.advance_apply_to(i);
                    self.check_idle_after_apply(id, idle)?;
                }
                self.stats.op("async-applies");
                self.serve_reads(id)?;
                self.after_op(id)?;
            }
        }
        Ok(())
    }

    fn apply_entry(&mut self, id: u64, e: &Entry) -> Res {
        let now = self.now;
        let node = self.nodes.get_mut(&id).expect("present");
        if e.index != node.applied + 1 {
            return Err(Violation {
                invariant: Invariant::AppliedPrefix,
                time: now,
                detail: format!(
                    "node {id} was handed {} to apply after applying {}",
                    describe_entry(e),
                    node.applied
                ),
            });
        }
        node.applied = e.index;
        let term = node
            .rn
            .as_ref()
            .map_or(0, |rn| rn.basic_status().hard_state.term);
        self.chk.committed(
            e,
            term.max(e.term),
            &format!("node {id} (applied in term {term})"),
        )?;
        self.chk.max_applied = self.chk.max_applied.max(e.index);
        match e.entry_type {
            EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => {
                let cc = ConfChangeI::from_entry(e).map_err(|err| {
                    host_err(
                        now,
                        format!(
                            "node {id}: conf change at {} does not decode: {err}",
                            e.index
                        ),
                    )
                })?;
                let node = self.nodes.get_mut(&id).expect("present");
                let prev = node.conf_state.clone();
                let rn = node.rn.as_mut().expect("up");
                let res = rn.apply_conf_change(&cc);
                let outcome = res.clone().map_err(|e| e.to_string());
                match res {
                    Ok(cs) => {
                        node.conf_state = cs.clone();
                        self.tr(|| format!("n{id} applied conf change {} at {}: voters {:?} outgoing {:?} learners {:?} learners_next {:?}{}",
                            describe_conf_change(&cc), e.index, cs.voters, cs.voters_outgoing, cs.learners, cs.learners_next,
                            if cs.auto_leave { " auto_leave" } else { "" }));
                        if e.index > self.chk.max_conf_applied {
                            self.chk.max_conf_applied = e.index;
                            if e.index > self.p.nodes {
                                self.stats.op("conf-changes-applied");
                            }
                            let gone: Vec<u64> =
                                members(&prev).difference(&members(&cs)).copied().collect();
                            for g in gone {
                                let linger = if self.phase == Phase::Chaos && self.rng.chance(0.3) {
                                    self.rng.range(1, 30) * UNITS_PER_TICK
                                } else {
                                    0
                                };
                                self.pending_stop.push((g, self.now + linger));
                            }
                        }
                    }
                    Err(err) => {
                        if e.index > self.chk.max_conf_applied {
                            self.chk.max_conf_applied = e.index;
                            self.stats.op("conf-changes-refused-on-apply");
                        }
                        self.tr(|| {
                            format!("n{id} refused conf change at {} on apply: {err}", e.index)
                        });
                    }
                }
                // The bootstrap entries are applied twice on the initial
                // voters (by bootstrap, then by the host), once from an
                // empty configuration elsewhere: only later changes compare.
                if e.index > self.p.nodes {
                    self.chk.conf_applied(id, e.index, outcome)?;
                }
                self.after_op(id)?;
                self.check_voter(id)?;
            }
            _ => {
                let data = e.data.clone().unwrap_or_default();
                if !data.is_empty() {
                    if data.starts_with(b"live:") {
                        self.probe_applied.insert(id);
                    }
                    let node = self.nodes.get_mut(&id).expect("present");
                    let pos = node.sm.len();
                    node.sm.push(data.clone());
                    self.chk.applied_payload(id, pos, &data)?;
                }
            }
        }
        Ok(())
    }

    fn check_read(&mut self, id: u64, index: u64, ctx: &Bytes) -> Res {
        let Some(r) = self.reads.get(ctx) else {
            return Ok(());
        };
        self.stats.op("reads-answered");
        self.tr(|| {
            format!(
                "n{id} read {:?} (issued at {} on n{}) answered with index {index}, floor {}",
                String::from_utf8_lossy(ctx),
                r.issued,
                r.node,
                r.floor
            )
        });
        if index < r.floor {
            return Err(Violation {
                invariant: Invariant::StaleRead,
                time: self.now,
                detail: format!(
                    "read {:?} issued on node {} at t={} answered with index {index} on node {id}, but index {} was applied before it was issued",
                    String::from_utf8_lossy(ctx),
                    r.node,
                    r.issued,
                    r.floor
                ),
            });
        }
        let (issued, payload_floor) = (r.issued, r.payload_floor);
        if let Some(node) = self.nodes.get_mut(&id) {
            node.waiting_reads.push(WaitingRead {
                ctx: ctx.clone(),
                index,
                issued,
                payload_floor,
            });
        }
        Ok(())
    }

    /// Serves the strong reads answered to `id` whose index its state
    /// machine has reached: the state served (on a learner too) holds every
    /// write acknowledged before the read was issued.
    fn serve_reads(&mut self, id: u64) -> Res {
        let now = self.now;
        let Some(node) = self.nodes.get_mut(&id) else {
            return Ok(());
        };
        if node.waiting_reads.is_empty() {
            return Ok(());
        }
        let applied = node.applied;
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut node.waiting_reads)
            .into_iter()
            .partition(|w| w.index <= applied);
        node.waiting_reads = waiting;
        let learner = node.conf_state.learners.contains(&id);
        let held = node.sm.len();
        for w in ready {
            self.stats.op(if learner {
                "learner-reads-served"
            } else {
                "reads-served"
            });
            self.tr(|| {
                format!(
                    "n{id} serves read {:?} at applied {applied} ({held} payloads, {} needed)",
                    String::from_utf8_lossy(&w.ctx),
                    w.payload_floor
                )
            });
            if held < w.payload_floor {
                return Err(Violation {
                    invariant: Invariant::StaleRead,
                    time: now,
                    detail: format!(
                        "node {id}{} served read {:?} (issued at t={}, index {}) from a state of {held} \
                         payloads at applied index {applied}, but {} payloads were applied before it was issued",
                        if learner { " (a learner)" } else { "" },
                        String::from_utf8_lossy(&w.ctx),
                        w.issued,
                        w.index,
                        w.payload_floor
                    ),
                });
            }
        }
        Ok(())
    }

    /// Records what leader `id` knows of its configuration and learners
    /// before a tick, for [`Sim::check_membership_events`].
    fn record_promo_view(&mut self, id: u64) {
        let node = self.nodes.get_mut(&id).expect("present");
        let rn = node.rn.as_ref().expect("up");
        if rn.basic_status().soft_state.raft_state != StateRole::Leader {
            // Views of earlier leaderships stay: a change proposed then may
            // reach a Ready only after the node stepped down.
            return;
        }
        let st = rn.status();
        let term = st.basic.hard_state.term;
        let Some(last) = st
            .learners
            .first()
            .and_then(|l| st.progress.get(&l.id).map(|pr| pr.matched + l.lag))
        else {
            // No learner: nothing to promote in this tick.
            return;
        };
        let view = PromoView {
            term,
            last,
            voters: st.config.voters.ids().into_iter().collect(),
            learners: st
                .learners
                .iter()
                .map(|l| (l.id, (l.lag, l.state)))
                .collect(),
        };
        if node.promo_views.len() >= PROMO_VIEWS {
            node.promo_views.pop_front();
        }
        node.promo_views.push_back(view);
    }

    /// Checks every membership change the leader proposed by itself (in
    /// `rd.membership_events`) against what it knew just before the tick
    /// that proposed it: a promoted learner was within `promote_max_lag`
    /// of the leader's log and not in snapshot state; a standby swap
    /// demoted a voter and promoted a learner, so the voter count stays.
    fn check_membership_events(&mut self, id: u64, rd: &Ready) -> Res {
        let res = self.check_membership_events_in(id, rd);
        // Every event proposed so far is in this Ready: views older than it
        // cannot match a later one (a log index may recur in a later term).
        if let Some(node) = self.nodes.get_mut(&id) {
            node.promo_views.clear();
        }
        res
    }

    fn check_membership_events_in(&mut self, id: u64, rd: &Ready) -> Res {
        use raftlet::MembershipEvent as E;
        for ev in &rd.membership_events {
            let (promoted, demoted, index) = match *ev {
                E::PromotionProposed { id, index } => {
                    self.stats.op("auto-promotions-proposed");
                    (id, None, index)
                }
                E::StandbySwapProposed {
                    promoted,
                    demoted,
                    index,
                } => {
                    self.stats.op("standby-swaps-proposed");
                    (promoted, Some(demoted), index)
                }
            };
            self.tr(|| format!("n{id} membership event {ev:?}"));
            // The tick that proposed it is the last of the first run of
            // ticks (oldest first, in one term) at which the leader's log
            // ended just before `index`; the views up to it are used up.
            let node = self.nodes.get_mut(&id).expect("present");
            let views = &mut node.promo_views;
            let found = views.iter().position(|v| v.last + 1 == index).map(|start| {
                let term = views[start].term;
                let mut end = start;
                while views
                    .get(end + 1)
                    .is_some_and(|v| v.term == term && v.last + 1 == index)
                {
                    end += 1;
                }
                end
            });
            let view = found.and_then(|end| views.drain(..=end).next_back());
            let Some(view) = view else {
                return Err(Violation {
                    invariant: Invariant::PromotionThreshold,
                    time: self.now,
                    detail: format!(
                        "node {id} reports {ev:?}, but it did not lead with a learner at index {} before any tick",
                        index - 1
                    ),
                });
            };
            let max = self.p.promote_max_lag;
            match view.learners.get(&promoted) {
                Some(&(lag, state))
                    if lag <= max && state != raftlet::tracker::ProgressState::Snapshot => {}
                other => {
                    return Err(Violation {
                        invariant: Invariant::PromotionThreshold,
                        time: self.now,
                        detail: format!(
                            "leader {id} (term {}) proposed {ev:?}, but when it proposed it learner {promoted} \
                             was {} (promote_max_lag {max})",
                            view.term,
                            match other {
                                Some((lag, state)) => format!("{lag} entries behind, in state {state:?}"),
                                None => "not a learner".into(),
                            }
                        ),
                    });
                }
            }
            if let Some(d) = demoted {
                if !view.voters.contains(&d) || view.voters.contains(&promoted) {
                    return Err(Violation {
                        invariant: Invariant::StandbySwap,
                        time: self.now,
                        detail: format!(
                            "leader {id} (term {}) proposed {ev:?} with voters {:?} and learners {:?}: \
                             the swap must demote a voter and promote a learner",
                            view.term,
                            view.voters,
                            view.learners.keys().collect::<Vec<_>>()
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Crashes `id` (the fault counted as `kind`): the node and its state
    /// machine are dropped, only its storage survives. It restarts after
    /// `down` units, or a drawn time. Writes still in
    /// flight must have been settled by the caller.
    fn crash(&mut self, id: u64, kind: &'static str, down: Option<u64>) {
        let down = if let Some(d) = down {
            d
        } else if self.rng.chance(self.p.quick_restart) {
            // A supervisor restarts the process at once.
            self.rng.range(1, UNITS_PER_TICK)
        } else {
            self.rng.range(self.p.down_ticks.0, self.p.down_ticks.1) * UNITS_PER_TICK
        };
        let node = self.nodes.get_mut(&id).expect("present");
        node.rn = None;
        node.apply_queue.clear();
        node.writes.clear();
        node.pending_ack = None;
        node.pending_ack_snapshot = 0;
        node.durable = 0;
        node.promo_views.clear();
        node.waiting_reads.clear();
        node.state = NodeState::Down {
            restart_at: self.now + down,
        };
        self.stats.fault(kind);
        self.tr(|| format!("n{id} CRASH ({kind}), restarts in {down} units"));
        self.disk_crash(id);
    }

    fn restart(&mut self, id: u64) -> Res {
        let node = self.nodes.get_mut(&id).expect("present");
        node.incarnation += 1;
        let inc = node.incarnation;
        let runs_on = match self.disk_reopen(id)? {
            Some(g) => AnyStorage::Disk(g),
            None => AnyStorage::Memory(self.nodes[&id].storage.clone()),
        };
        let storage = self.nodes[&id].storage.clone();
        let snap = storage.rl().snapshot_ref().clone();
        let sm = decode_state(snap.data());
        self.chk.restored_state(id, &sm)?;
        let rn = self.new_raw(id, inc, snap.metadata.index, &runs_on)?;
        let bs = rn.basic_status();
        let node = self.nodes.get_mut(&id).expect("present");
        node.sm = sm;
        node.applied = snap.metadata.index;
        node.conf_state = snap.metadata.conf_state.clone();
        node.last_commit = bs.hard_state.commit;
        node.last_role = (bs.soft_state.raft_state, bs.hard_state.term);
        node.seen_vote = (bs.hard_state.term, bs.hard_state.vote);
        node.acked_vote = node.seen_vote;
        node.rn = Some(rn);
        node.state = NodeState::Up;
        node.next_tick = self.now + 1;
        node.heard.clear();
        node.told_lost.clear();
        node.heard_floor = node.local_ticks;
        self.stats.fault("restart");
        self.tr(|| {
            format!(
                "n{id} RESTART from storage: {} applied {}",
                raftlet::describe::describe_hard_state(&bs.hard_state),
                snap.metadata.index
            )
        });
        Ok(())
    }

    fn stop_removed(&mut self, id: u64) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if node.state == NodeState::Removed {
            return;
        }
        node.rn = None;
        node.apply_queue.clear();
        node.writes.clear();
        node.pending_ack = None;
        node.pending_ack_snapshot = 0;
        node.promo_views.clear();
        node.waiting_reads.clear();
        node.state = NodeState::Removed;
        self.stats.op("nodes-removed");
        self.tr(|| format!("n{id} STOPPED: removed from the configuration"));
    }

    fn restarts_due(&mut self) -> Res {
        let due: Vec<u64> = self
            .nodes
            .iter()
            .filter(|(_, n)| matches!(n.state, NodeState::Down { restart_at } if restart_at <= self.now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.restart(id)?;
        }
        Ok(())
    }

    fn ticks(&mut self) -> Res {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            let now = self.now;
            let node = self.nodes.get_mut(&id).expect("present");
            if node.state != NodeState::Up || node.next_tick > now {
                continue;
            }
            node.next_tick = now + node.tick_period;
            if node.paused_until > now {
                continue;
            }
            if self.p.auto_promote || self.p.standby_promotion {
                self.record_promo_view(id);
            }
            if self.p.quiesce {
                self.quiesce_host_tick(id);
            }
            let node = self.nodes.get_mut(&id).expect("present");
            node.rn.as_mut().expect("up").tick();
            self.after_op(id)?;
            if self.p.quiesce {
                self.check_election_delay(id)?;
            }
        }
        Ok(())
    }

    /// The quiescence host's share of a tick: node-level heartbeats to
    /// every peer every `heartbeat_tick` ticks, and telling the node when
    /// its leader's node has been silent for an election timeout.
    fn quiesce_host_tick(&mut self, id: u64) {
        let peers: Vec<u64> = self.live_ids().into_iter().filter(|&p| p != id).collect();
        let node = self.nodes.get_mut(&id).expect("present");
        node.local_ticks += 1;
        let beat = node.local_ticks % self.p.heartbeat_tick as u64 == 0;
        let local = node.local_ticks;
        let bs = node.rn.as_ref().expect("up").basic_status();
        if node.rn.as_ref().expect("up").is_quiesced() {
            self.stats.op("ticks-while-quiesced");
        }
        let lead = bs.soft_state.leader_id;
        if bs.soft_state.raft_state == StateRole::Follower && lead != 0 && lead != id {
            let heard = node.heard.get(&lead).copied().unwrap_or(node.heard_floor);
            if local - heard >= ELECTION_TICK as u64 && node.told_lost.insert(lead) {
                let was = node.rn.as_ref().expect("up").is_quiesced();
                node.rn.as_mut().expect("up").wake_leader_lost();
                self.stats.op(if was {
                    "quiesced-woken-leader-lost"
                } else {
                    "told-leader-lost"
                });
                self.tr(|| format!("n{id} hears nothing from leader n{lead}: wake_leader_lost"));
            }
        }
        if beat {
            for p in peers {
                self.send_beacon(id, p);
            }
        }
    }

    /// [`Invariant::ElectionDelayed`]: a voter following a leader whose
    /// node it has not heard from for two election timeouts (plus a tick
    /// of slack for the order of ticks and deliveries) has campaigned.
    fn check_election_delay(&mut self, id: u64) -> Res {
        let now = self.now;
        let node = &self.nodes[&id];
        let Some(rn) = node.rn.as_ref() else {
            return Ok(());
        };
        let bs = rn.basic_status();
        let quiesced = rn.is_quiesced();
        let lead = bs.soft_state.leader_id;
        if bs.soft_state.raft_state != StateRole::Follower || lead == 0 || lead == id {
            return Ok(());
        }
        let cs = &node.conf_state;
        let voter = cs.voters.contains(&id) || cs.voters_outgoing.contains(&id);
        if !voter {
            return Ok(());
        }
        // A follower does not campaign while it applies a snapshot (etcd
        // `promotable`: a write in flight, a stalled disk) or has
        // committed entries left to apply (they may hold a conf change);
        // a refused attempt restarts its election clock. The bound then
        // counts from the last tick it was so held.
        let held = !node.writes.is_empty()
            || node.disk_stalled_until > now
            || node.applied < bs.hard_state.commit;
        let local = node.local_ticks;
        let node = self.nodes.get_mut(&id).expect("present");
        if held {
            node.held_at = local;
            return Ok(());
        }
        let heard = node
            .heard
            .get(&lead)
            .copied()
            .unwrap_or(node.heard_floor)
            .max(node.held_at);
        let silent = node.local_ticks - heard;
        if silent > 2 * ELECTION_TICK as u64 + 1 {
            return Err(Violation {
                invariant: Invariant::ElectionDelayed,
                time: now,
                detail: format!(
                    "n{id} still follows n{lead} at term {} after {silent} of its ticks without hearing from it (quiesced: {})",
                    bs.hard_state.term, quiesced
                ),
            });
        }
        Ok(())
    }

    // ------------------------------------------------------------------
    // The network
    // ------------------------------------------------------------------

    fn send_all(&mut self, from: u64, msgs: Vec<Message>) -> Res {
        for mut m in msgs {
            if m.msg_type == MessageType::MsgSnap {
                self.refresh_snapshot(from, &mut m)?;
            }
            if m.msg_type == MessageType::MsgApp {
                for e in &m.entries {
                    self.chk.sent(from, m.term, e)?;
                }
            }
            self.send(m);
        }
        Ok(())
    }

    /// A snapshot whose configuration does not list its recipient (taken
    /// before the recipient was added) would be refused by it forever. Like
    /// etcd's server, which sends a snapshot merged from its current state,
    /// the host then takes a fresh snapshot at its applied index and sends
    /// that instead.
    fn refresh_snapshot(&mut self, from: u64, m: &mut Message) -> Res {
        let Some(snap) = m.snapshot.as_ref() else {
            return Ok(());
        };
        if members(&snap.metadata.conf_state).contains(&m.to) {
            return Ok(());
        }
        let node = &self.nodes[&from];
        let stored = node.storage.rl().snapshot_ref().clone();
        if stored.metadata.index > snap.metadata.index
            && members(&stored.metadata.conf_state).contains(&m.to)
        {
            // Refreshed already (for another peer): send the newer one.
            m.snapshot = Some(Box::new(stored));
            return Ok(());
        }
        if node.applied <= stored.metadata.index
            || !members(&node.conf_state).contains(&m.to)
            || !self.may_snapshot(from)
        {
            // Nothing newer to offer, or the state machine is ahead of
            // what the storage may snapshot (writes in flight): the
            // recipient refuses this snapshot and the leader sends another
            // later.
            return Ok(());
        }
        let applied = node.applied;
        let Some(fresh) = self.snapshot_at_applied(from)? else {
            return Ok(());
        };
        self.stats.op("snapshots-refreshed");
        self.tr(|| {
            format!(
                "n{from} refreshes the snapshot for n{}: {} -> {}",
                m.to, snap.metadata.index, applied
            )
        });
        m.snapshot = Some(Box::new(fresh));
        Ok(())
    }

    fn send(&mut self, m: Message) {
        self.stats.op("messages-sent");
        let chaos = self.phase == Phase::Chaos;
        if chaos && self.rng.chance(self.p.drop) {
            self.stats.fault("message-dropped");
            self.tr(|| format!("drop {}", describe_message(&m)));
            self.on_lost(&m);
            return;
        }
        let mut delay = 1 + self.rng.below(3);
        if chaos && self.rng.chance(self.p.delay) {
            self.stats.fault("message-delayed");
            delay += self.rng.range(1, self.p.max_delay);
        }
        if chaos && self.rng.chance(self.p.dup) {
            self.stats.fault("message-duplicated");
            let d2 = 1 + self.rng.below(3 + self.p.max_delay);
            self.enqueue(d2, m.clone());
        }
        self.enqueue(delay, m);
    }

    fn enqueue(&mut self, delay: u64, msg: Message) {
        self.enqueue_flight(delay, msg, false);
    }

    fn enqueue_flight(&mut self, delay: u64, msg: Message, beacon: bool) {
        self.queue_seq += 1;
        let to_incarnation = self.nodes.get(&msg.to).map_or(0, |n| n.incarnation);
        self.queue.insert(
            (self.now + delay, self.queue_seq),
            Flight {
                msg,
                beacon,
                to_incarnation,
            },
        );
    }

    /// A node-level heartbeat of the quiescence host: dropped, delayed and
    /// cut by partitions like any message.
    fn send_beacon(&mut self, from: u64, to: u64) {
        if self.phase == Phase::Chaos && self.rng.chance(self.p.drop) {
            self.stats.fault("beacon-dropped");
            return;
        }
        let mut delay = 1 + self.rng.below(3);
        if self.phase == Phase::Chaos && self.rng.chance(self.p.delay) {
            delay += self.rng.range(1, self.p.max_delay);
        }
        self.stats.op("beacons-sent");
        self.enqueue_flight(
            delay,
            Message::new(MessageType::MsgHeartbeat, from, to),
            true,
        );
    }

    /// The host's transport tells the sender a message was lost: snapshot
    /// sends are reported as failed, appends sometimes as unreachable.
    fn on_lost(&mut self, m: &Message) {
        let from = m.from;
        let Some(rn) = self.nodes.get_mut(&from).and_then(|n| n.rn.as_mut()) else {
            return;
        };
        if m.msg_type == MessageType::MsgSnap {
            rn.report_snapshot(m.to, SnapshotStatus::Failure);
        } else if m.msg_type == MessageType::MsgApp && self.rng.chance(0.3) {
            rn.report_unreachable(m.to);
        }
    }

    fn deliveries(&mut self) -> Res {
        while let Some((&(at, seq), _)) = self.queue.first_key_value() {
            if at > self.now {
                break;
            }
            let Flight {
                msg: m,
                beacon,
                to_incarnation,
            } = self.queue.remove(&(at, seq)).expect("present");
            if beacon {
                self.deliver_beacon(m.from, m.to, to_incarnation);
                continue;
            }
            let (from, to) = (m.from, m.to);
            let restarted = self
                .nodes
                .get(&to)
                .is_some_and(|n| n.incarnation != to_incarnation);
            if restarted && self.p.lose_on_restart {
                // Sent to an earlier incarnation: its connection is gone.
                self.stats.fault("message-lost-to-restart");
                self.tr(|| format!("lost (n{to} restarted) {}", describe_message(&m)));
                self.on_lost(&m);
                self.after_op(from)?;
                continue;
            }
            let cut = self
                .cut_links
                .get(&(from, to))
                .is_some_and(|&until| until > self.now);
            if self.blocked.contains(&(from, to)) || cut {
                self.stats.fault("message-lost-in-partition");
                self.tr(|| format!("lost (partition) {}", describe_message(&m)));
                self.on_lost(&m);
                self.after_op(from)?;
                continue;
            }
            let up = self
                .nodes
                .get(&to)
                .is_some_and(|n| n.state == NodeState::Up);
            if !up {
                self.tr(|| format!("lost (n{to} down) {}", describe_message(&m)));
                self.on_lost(&m);
                self.after_op(from)?;
                continue;
            }
            self.tr(|| format!("deliver {}", describe_message(&m)));
            if self.p.quiesce {
                self.heard_from(to, from);
            }
            let is_snap = m.msg_type == MessageType::MsgSnap;
            let rn = self
                .nodes
                .get_mut(&to)
                .and_then(|n| n.rn.as_mut())
                .expect("up");
            let (mt, mfrom, mterm) = (m.msg_type, m.from, m.term);
            if let Err(e) = rn.step(m) {
                self.stats.op(match e {
                    Error::StepPeerNotFound => "step-response-from-non-member",
                    Error::ProposalDropped => "forwarded-proposals-dropped",
                    Error::ConfChangeRefused(_)
                    | Error::PromotionNotReady { .. }
                    | Error::TooManyLearners => "forwarded-conf-changes-refused",
                    Error::TransferRefused(_) => "forwarded-transfers-refused",
                    Error::NoLeader => "forwarded-reads-no-leader",
                    _ => {
                        // Every message here was sent by a raftlet node:
                        // refusing it as local, malformed or failing on
                        // storage is a bug.
                        return Err(Violation {
                            invariant: Invariant::HostContract,
                            time: self.now,
                            detail: format!(
                                "node {to} refused {mt} from {mfrom} (term {mterm}): {e}"
                            ),
                        });
                    }
                });
                self.tr(|| format!("n{to} refused {mt} from {mfrom}: {e}"));
            }
            self.after_op(to)?;
            if is_snap {
                if let Some(rn) = self.nodes.get_mut(&from).and_then(|n| n.rn.as_mut()) {
                    rn.report_snapshot(to, SnapshotStatus::Finish);
                }
                self.stats.op("snapshots-delivered");
                self.after_op(from)?;
            }
        }
        Ok(())
    }

    /// Delivers a node-level heartbeat (lost like a message to a
    /// restarted, cut off or stopped node).
    fn deliver_beacon(&mut self, from: u64, to: u64, to_incarnation: u64) {
        let restarted = self
            .nodes
            .get(&to)
            .is_some_and(|n| n.incarnation != to_incarnation);
        let cut = self
            .cut_links
            .get(&(from, to))
            .is_some_and(|&until| until > self.now);
        let up = self
            .nodes
            .get(&to)
            .is_some_and(|n| n.state == NodeState::Up);
        if (restarted && self.p.lose_on_restart) || cut || self.blocked.contains(&(from, to)) || !up
        {
            return;
        }
        self.heard_from(to, from);
    }

    fn heard_from(&mut self, to: u64, from: u64) {
        if let Some(n) = self.nodes.get_mut(&to) {
            n.heard.insert(from, n.local_ticks);
            n.told_lost.remove(&from);
        }
    }

    // ------------------------------------------------------------------
    // Faults
    // ------------------------------------------------------------------

    fn live_ids(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.state != NodeState::Removed)
            .map(|(id, _)| *id)
            .collect()
    }

    fn up_ids(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.state == NodeState::Up)
            .map(|(id, _)| *id)
            .collect()
    }

    /// The running leader of the highest term, if any.
    fn leader(&self) -> Option<u64> {
        self.nodes
            .iter()
            .filter_map(|(id, n)| {
                let bs = n.rn.as_ref()?.basic_status();
                (bs.soft_state.raft_state == StateRole::Leader).then_some((bs.hard_state.term, *id))
            })
            .max()
            .map(|(_, id)| id)
    }

    fn inject_faults(&mut self) -> Res {
        if let Some((kind, heal_at)) = self.partition {
            if self.now >= heal_at {
                self.blocked.clear();
                self.partition = None;
                self.stats.fault("partition-healed");
                self.tr(|| format!("HEAL {}", kind.name()));
            }
        } else if self.rng.chance(self.p.partition_rate) {
            self.start_partition();
        }
        if self.p.host == HostKind::Pipelined {
            self.stall_disks();
        }
        if self.rng.chance(self.p.pause_rate) {
            let ids = self.up_ids();
            if !ids.is_empty() {
                let id = self.rng.pick(&ids);
                let d = self.rng.range(5, 40) * UNITS_PER_TICK;
                self.nodes.get_mut(&id).expect("present").paused_until = self.now + d;
                self.stats.fault("clock-paused");
                self.tr(|| format!("n{id} clock PAUSED for {} ticks", d / UNITS_PER_TICK));
            }
        }
        Ok(())
    }

    fn start_partition(&mut self) {
        let ids = self.live_ids();
        if ids.len() < 2 {
            return;
        }
        let kind = self.rng.pick(&[
            PartitionKind::Symmetric,
            PartitionKind::Symmetric,
            PartitionKind::IsolateLeader,
            PartitionKind::OneWay,
            PartitionKind::Asymmetric,
        ]);
        let mut side: BTreeSet<u64> = BTreeSet::new();
        match kind {
            PartitionKind::IsolateLeader => {
                let Some(l) = self.leader() else { return };
                side.insert(l);
                if self.rng.chance(0.5) {
                    if let Some(rn) = self.nodes[&l].rn.as_ref() {
                        side.extend(rn.status().config.learners.iter().copied());
                    }
                }
            }
            PartitionKind::Asymmetric => {
                for (i, &a) in ids.iter().enumerate() {
                    for &b in &ids[i + 1..] {
                        if self.rng.chance(0.35) {
                            self.blocked.insert((a, b));
                            self.blocked.insert((b, a));
                        }
                    }
                }
            }
            _ => {
                for &id in &ids {
                    if self.rng.chance(0.5) {
                        side.insert(id);
                    }
                }
                if side.is_empty() || side.len() == ids.len() {
                    side = [ids[0]].into_iter().collect();
                }
            }
        }
        if kind != PartitionKind::Asymmetric {
            for &a in &side {
                for &b in &ids {
                    if side.contains(&b) {
                        continue;
                    }
                    self.blocked.insert((a, b));
                    if kind != PartitionKind::OneWay {
                        self.blocked.insert((b, a));
                    }
                }
            }
        }
        let len = self
            .rng
            .range(self.p.partition_ticks.0, self.p.partition_ticks.1)
            * UNITS_PER_TICK;
        self.partition = Some((kind, self.now + len));
        self.stats.fault(kind.name());
        self.tr(|| {
            format!(
                "PARTITION {} for {} ticks: {side:?} | rest, blocked links {:?}",
                kind.name(),
                len / UNITS_PER_TICK,
                self.blocked
            )
        });
    }

    /// The time, in base ticks, to replicate (and hand out for applying)
    /// the backlog a leader may face once the faults stop, where flow
    /// control makes that throughput-bound (one entry per append, one
    /// append in flight, or a small apply budget): every entry between the
    /// lowest commit index of a running voter and the longest log costs a
    /// round trip and, on a pipelined host, two writes.
    fn backlog_ticks(&self) -> u64 {
        let throttled = self.p.max_inflight_msgs == 1
            || self.p.max_size_per_msg <= 64
            || self.p.max_committed_size_per_ready > 0;
        if !throttled {
            return 0;
        }
        let mut lowest_commit = u64::MAX;
        let mut longest = 0;
        for n in self.nodes.values() {
            // A node down now restarts as the faults stop, and its log may
            // be the longest, which it then wins an election with (churn
            // seed 214: a leader of the last term restarted with 300
            // entries its followers lacked). A removed one never runs again.
            if n.state == NodeState::Removed {
                continue;
            }
            if let Some(rn) = n.rn.as_ref() {
                lowest_commit = lowest_commit.min(rn.basic_status().hard_state.commit);
            }
            let in_flight = n
                .writes
                .iter()
                .filter_map(|w| w.last_index())
                .max()
                .unwrap_or(0);
            longest = longest
                .max(n.storage.last_index().unwrap_or(0))
                .max(in_flight);
        }
        let backlog = longest.saturating_sub(lowest_commit);
        let per_entry = 6 + 2 * self.p.write_latency.1;
        (backlog * per_entry).div_ceil(UNITS_PER_TICK)
    }

    fn enter_liveness(&mut self) -> Res {
        self.backlog_ticks = self.backlog_ticks();
        self.phase = Phase::Liveness { start: self.now };
        self.blocked.clear();
        self.cut_links.clear();
        self.partition = None;
        self.tr(|| {
            "FAULTS STOP: heal, no drops, restart every crashed node, clocks at the base rate"
                .into()
        });
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            let node = self.nodes.get_mut(&id).expect("present");
            node.paused_until = 0;
            node.disk_stalled_until = 0;
            // Clock skew is a fault too: every clock runs at the base rate.
            node.tick_period = UNITS_PER_TICK;
            if matches!(node.state, NodeState::Down { .. }) {
                self.restart(id)?;
            }
        }
        Ok(())
    }

    /// Whether a liveness probe was applied by every running member of the
    /// leader's configuration.
    fn probe_everywhere(&self) -> bool {
        self.probe_laggards().is_some_and(|l| l.is_empty())
    }

    /// Whether running member `id` is stranded: without pre-vote and
    /// check-quorum (etcd's defaults), a node whose term is above the
    /// leader's ignores the leader's messages (etcd raft drops messages of
    /// a lower term then, and answers them only under pre-vote or
    /// check-quorum), and if its own, stale configuration names no other
    /// running node, its vote requests reach nobody either: nothing in the
    /// protocol ever brings it back. Raft does not promise it liveness, so
    /// the apply-everywhere bound leaves it out (etcd and raft-rs behave
    /// the same; raftlet's defaults turn both options on).
    fn stranded(&self, id: u64, leader_term: u64) -> bool {
        if self.p.pre_vote || self.p.check_quorum {
            return false;
        }
        let Some(rn) = self.nodes.get(&id).and_then(|n| n.rn.as_ref()) else {
            return false;
        };
        let st = rn.status();
        st.basic.hard_state.term > leader_term
            && st
                .config
                .voters
                .ids()
                .into_iter()
                .all(|v| v == id || self.nodes.get(&v).is_none_or(|n| n.state != NodeState::Up))
    }

    /// The running members of the leader's configuration that have not
    /// applied a liveness probe (`None` without a leader), but for stranded
    /// ones (see [`Sim::stranded`]).
    fn probe_laggards(&self) -> Option<Vec<u64>> {
        let l = self.leader()?;
        let leader_term = self.nodes[&l].rn.as_ref()?.basic_status().hard_state.term;
        let cfg = self.nodes[&l].rn.as_ref()?.status().config;
        let members: BTreeSet<u64> = cfg
            .voters
            .ids()
            .into_iter()
            .chain(cfg.learners.iter().copied())
            .chain(cfg.learners_next.iter().copied())
            .collect();
        Some(
            members
                .into_iter()
                .filter(|id| {
                    self.nodes.get(id).is_some_and(|n| n.state == NodeState::Up)
                        && !self.probe_applied.contains(id)
                        && !self.stranded(*id, leader_term)
                })
                .collect(),
        )
    }

    fn liveness_probe(&mut self) -> Res {
        if !self.probe_applied.is_empty() {
            // Committed: the members catch up on their own.
            return Ok(());
        }
        let Some(l) = self.leader() else {
            return Ok(());
        };
        let term = self.nodes[&l]
            .rn
            .as_ref()
            .expect("up")
            .basic_status()
            .hard_state
            .term;
        let retry = 2 * ELECTION_TICK as u64 * UNITS_PER_TICK;
        let due = match self.probe {
            None => true,
            Some((t, at)) => t != term || self.now >= at + retry,
        };
        if !due {
            return Ok(());
        }
        self.payload_seq += 1;
        let data = format!("live:{}:{}", self.seed, self.payload_seq);
        let rn = self
            .nodes
            .get_mut(&l)
            .and_then(|n| n.rn.as_mut())
            .expect("up");
        let r = rn.propose(data.clone().into_bytes());
        self.tr(|| format!("n{l} liveness probe {data:?}: {r:?}"));
        if r.is_ok() {
            self.probe = Some((term, self.now));
        }
        self.after_op(l)
    }

    // ------------------------------------------------------------------
    // The client
    // ------------------------------------------------------------------

    fn client_ops(&mut self) -> Res {
        if self.rng.chance(self.p.propose_rate) {
            self.op_propose()?;
        }
        if self.rng.chance(self.p.read_rate) {
            self.op_read()?;
        }
        if self.p.local_read_rate > 0.0 && self.rng.chance(self.p.local_read_rate) {
            self.op_read_local()?;
        }
        if self.rng.chance(self.p.conf_rate) {
            self.op_conf_change()?;
        }
        if self.rng.chance(self.p.transfer_rate) {
            self.op_transfer()?;
        }
        if self.rng.chance(self.p.transfer_rate / 2.0) {
            self.op_forget_leader()?;
        }
        if self.rng.chance(self.p.compact_rate) {
            self.op_compact()?;
        }
        Ok(())
    }

    /// A node to send a client request to: the leader most of the time.
    fn client_target(&mut self, leader_bias: f64) -> Option<u64> {
        if self.rng.chance(leader_bias) {
            if let Some(l) = self.leader() {
                return Some(l);
            }
        }
        let ids = self.up_ids();
        (!ids.is_empty()).then(|| self.rng.pick(&ids))
    }

    fn op_propose(&mut self) -> Res {
        let Some(id) = self.client_target(0.6) else {
            return Ok(());
        };
        let n = 1 + if self.rng.chance(0.2) {
            self.rng.below(4)
        } else {
            0
        };
        let mut batch = Vec::new();
        for _ in 0..n {
            self.payload_seq += 1;
            let mut payload = format!("p:{}:{}", self.seed, self.payload_seq);
            let big = self.p.payload_big > 0 && self.rng.chance(0.03);
            if big {
                let pad = self.rng.below(self.p.payload_big + 1) as usize;
                payload.push(':');
                payload.extend(std::iter::repeat_n('y', pad));
            } else if self.p.payload_pad > 0 {
                let pad = self.rng.below(self.p.payload_pad + 1) as usize;
                payload.push(':');
                payload.extend(std::iter::repeat_n('x', pad));
            }
            batch.push(Bytes::from(payload));
        }
        let rn = self
            .nodes
            .get_mut(&id)
            .and_then(|n| n.rn.as_mut())
            .expect("up");
        let r = if batch.len() == 1 {
            rn.propose(batch[0].clone())
        } else {
            rn.propose_batch(batch.clone())
        };
        self.stats.op(if r.is_ok() {
            "proposals"
        } else {
            "proposals-dropped"
        });
        self.tr(|| {
            format!(
                "n{id} propose {:?}: {r:?}",
                batch
                    .iter()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .collect::<Vec<_>>()
            )
        });
        self.after_op(id)
    }

    /// A running learner of the leader's configuration, on
    /// [`Params::learner_read_share`] of the calls that find one.
    fn learner_target(&mut self) -> Option<u64> {
        if self.p.learner_read_share == 0.0 || !self.rng.chance(self.p.learner_read_share) {
            return None;
        }
        let l = self.leader()?;
        let cfg = self.nodes[&l].rn.as_ref()?.status().config;
        let up: Vec<u64> = cfg
            .learners
            .iter()
            .copied()
            .filter(|x| self.nodes.get(x).is_some_and(|n| n.state == NodeState::Up))
            .collect();
        (!up.is_empty()).then(|| self.rng.pick(&up))
    }

    fn op_read(&mut self) -> Res {
        let target = match self.learner_target() {
            Some(x) => Some(x),
            None => self.client_target(0.4),
        };
        let Some(id) = target else {
            return Ok(());
        };
        self.payload_seq += 1;
        let ctx = Bytes::from(format!("r:{}", self.payload_seq));
        let floor = self.chk.max_applied;
        self.reads.insert(
            ctx.clone(),
            PendingRead {
                node: id,
                issued: self.now,
                floor,
                payload_floor: self.chk.payloads_applied(),
            },
        );
        let rn = self
            .nodes
            .get_mut(&id)
            .and_then(|n| n.rn.as_mut())
            .expect("up");
        let r = rn.read_index(ctx.clone());
        self.tr(|| {
            format!(
                "n{id} read_index {:?} (floor {floor}): {r:?}",
                String::from_utf8_lossy(&ctx)
            )
        });
        match r {
            Ok(()) => self.stats.op("reads"),
            Err(_) => {
                self.stats.op("reads-no-leader");
                self.reads.remove(&ctx);
            }
        }
        self.after_op(id)
    }

    /// A weak read (`RawNode::read_local`), on a learner most of the time:
    /// the applied index it reports is the one the host's state machine has
    /// applied (and reported with `advance`/`advance_apply_to`), and no
    /// more than the commit index it reports.
    fn op_read_local(&mut self) -> Res {
        let target = match self.learner_target() {
            Some(x) => Some(x),
            None => self.client_target(0.0),
        };
        let Some(id) = target else {
            return Ok(());
        };
        let node = &self.nodes[&id];
        let lr = node.rn.as_ref().expect("up").read_local();
        let (applied, held) = (node.applied, node.sm.len());
        let learner = node.conf_state.learners.contains(&id);
        self.stats.op(if learner {
            "learner-local-reads"
        } else {
            "local-reads"
        });
        self.tr(|| {
            format!("n{id} read_local: {lr:?} (state machine at {applied}, {held} payloads)")
        });
        if lr.applied != applied && !self.opts.strict_local_reads && snapshot_gap(node, lr.applied)
        {
            // raftlet counts a snapshot applied once its write is
            // acknowledged durable, whether or not the host applied it (and
            // caps an earlier `advance_apply_to`): see the README.
            self.stats.op("local-reads-snapshot-gap");
            self.tr(|| format!("n{id} read_local differs from its state machine by a snapshot not applied or not acknowledged yet"));
            return Ok(());
        }
        if lr.applied != applied || lr.applied > lr.commit {
            return Err(Violation {
                invariant: Invariant::LocalRead,
                time: self.now,
                detail: format!(
                    "node {id}{} answered a weak read with {lr:?}, but its state machine has applied up to {applied}",
                    if learner { " (a learner)" } else { "" }
                ),
            });
        }
        Ok(())
    }

    fn op_transfer(&mut self) -> Res {
        let Some(id) = self.client_target(0.5) else {
            return Ok(());
        };
        let target = match self.leader().and_then(|l| self.nodes[&l].rn.as_ref()) {
            Some(rn) if self.rng.chance(0.85) => {
                let v: Vec<u64> = rn.status().config.voters.ids().into_iter().collect();
                self.rng.pick(&v)
            }
            _ => {
                let ids: Vec<u64> = self.nodes.keys().copied().collect();
                self.rng.pick(&ids)
            }
        };
        let rn = self
            .nodes
            .get_mut(&id)
            .and_then(|n| n.rn.as_mut())
            .expect("up");
        let r = rn.transfer_leader(target);
        self.stats.op(if r.is_ok() {
            "transfers"
        } else {
            "transfers-refused"
        });
        self.tr(|| format!("n{id} transfer_leader({target}): {r:?}"));
        self.after_op(id)
    }

    fn op_forget_leader(&mut self) -> Res {
        let ids = self.up_ids();
        if ids.is_empty() {
            return Ok(());
        }
        let id = self.rng.pick(&ids);
        let rn = self
            .nodes
            .get_mut(&id)
            .and_then(|n| n.rn.as_mut())
            .expect("up");
        let r = rn.forget_leader();
        self.stats.op("forget-leader");
        self.tr(|| format!("n{id} forget_leader: {r:?}"));
        self.after_op(id)
    }

    fn op_compact(&mut self) -> Res {
        let ids = self.up_ids();
        if ids.is_empty() {
            return Ok(());
        }
        let id = self.rng.pick(&ids);
        let node = &self.nodes[&id];
        let s = node.storage.clone();
        let applied = node.applied;
        let snap_index = s.rl().snapshot_ref().metadata.index;
        let first = s.first_index().unwrap_or(1);
        if applied <= snap_index || applied < first || !self.may_snapshot(id) {
            return Ok(());
        }
        let keep = self.rng.below((applied - first + 1).min(6));
        let to = applied - keep;
        if self.snapshot_at_applied(id)?.is_none() {
            return Ok(());
        }
        if let Some(g) = self.disk_group(id) {
            // The same on the store the node runs on (not synced by
            // itself).
            if to >= first.max(g.first_index().unwrap_or(1)) {
                g.compact(to).map_err(|e| {
                    host_err(self.now, format!("node {id}: store compact({to}): {e}"))
                })?;
            }
        }
        if to >= first {
            s.wl()
                .compact(to)
                .map_err(|e| host_err(self.now, format!("node {id}: compact({to}): {e}")))?;
        }
        self.stats.op("compactions");
        self.tr(|| format!("n{id} snapshot at {applied}, compact to {to}"));
        Ok(())
    }

    /// Whether `id`'s host may take a snapshot at its applied index now.
    /// With writes in flight the state machine may hold entries the disk
    /// does not have yet, and the storage an older entry such a write
    /// replaces: `create_snapshot` is allowed only up to the commit index
    /// the storage holds (written by the Readies that landed). A careful
    /// host waits for its disk; an eager one (`snapshot_in_flight`) goes
    /// as soon as that rule allows.
    fn may_snapshot(&self, id: u64) -> bool {
        let node = &self.nodes[&id];
        node.writes.is_empty()
            || (self.p.snapshot_in_flight && node.applied <= node.storage.rl().hard_state().commit)
    }

    /// Takes a snapshot of `id`'s state machine at its applied index, which
    /// [`Sim::may_snapshot`] allows: on the store the node runs on (durable
    /// on return), then in the model. `None` if the storage refuses it as
    /// older than the snapshot it holds (a leader's, from a write in flight).
    fn snapshot_at_applied(&mut self, id: u64) -> Res<Option<Snapshot>> {
        let node = &self.nodes[&id];
        let (applied, cs, data) = (
            node.applied,
            node.conf_state.clone(),
            encode_state(&node.sm),
        );
        let in_flight = !node.writes.is_empty();
        if in_flight {
            self.stats.op("snapshots-with-writes-in-flight");
        } else {
            // Nothing in flight: every applied entry is in the storage, so
            // the host may write the commit index that covers them.
            self.persist_commit_upto(id, applied)?;
        }
        if let Some(g) = self.disk_group(id) {
            match g.create_snapshot(applied, Some(cs.clone()), Some(data.clone())) {
                Ok(_) => {}
                Err(raftlet_disk::DiskError::Storage(raftlet::StorageError::SnapshotOutOfDate))
                    if in_flight =>
                {
                    // A write in flight put a newer snapshot (a leader's)
                    // in the store already: the storage refuses an older
                    // one, as etcd's ErrSnapOutOfDate.
                    self.stats.op("snapshots-out-of-date");
                    return Ok(None);
                }
                Err(e) => {
                    return Err(host_err(
                        self.now,
                        format!("node {id}: store create_snapshot({applied}): {e}"),
                    ))
                }
            }
        }
        let fresh = self.nodes[&id]
            .storage
            .wl()
            .create_snapshot(applied, Some(cs), Some(data))
            .map_err(|e| {
                host_err(
                    self.now,
                    format!("node {id}: create_snapshot({applied}): {e}"),
                )
            })?;
        Ok(Some(fresh))
    }

    /// A node for a new member: a spare started earlier whose addition
    /// failed, or a fresh one (empty storage, or seeded with the leader's
    /// latest snapshot).
    fn joiner(&mut self, leader: u64) -> Res<Option<u64>> {
        if let Some(id) = self.spares.pop() {
            return Ok(Some(id));
        }
        if self.next_id > self.p.nodes + 6 {
            return Ok(None);
        }
        let id = self.next_id;
        self.next_id += 1;
        let storage = MemoryStorage::new();
        let snap = self.nodes[&leader].storage.rl().snapshot_ref().clone();
        let seeded = !snap.is_empty() && self.rng.chance(0.5);
        if seeded {
            storage
                .wl()
                .apply_snapshot(snap.clone())
                .map_err(|e| host_err(self.now, format!("seeding node {id}: {e}")))?;
        }
        self.add_node(id, storage)?;
        self.stats.op("nodes-started");
        self.tr(|| {
            format!(
                "n{id} STARTED ({})",
                if seeded {
                    format!(
                        "seeded with n{leader}'s snapshot at {}",
                        snap.metadata.index
                    )
                } else {
                    "empty storage".into()
                }
            )
        });
        Ok(Some(id))
    }

    fn op_conf_change(&mut self) -> Res {
        let Some(l) = self.leader() else {
            return Ok(());
        };
        let cfg = self.nodes[&l].rn.as_ref().expect("up").status().config;
        let voters: Vec<u64> = cfg.voters.incoming.iter().copied().collect();
        let learners: Vec<u64> = cfg.learners.iter().copied().collect();
        let joint = !cfg.voters.outgoing.is_empty();
        use ConfChangeType as T;
        let single = |t: ConfChangeType, id: u64| ConfChangeSingle::new(t, id);
        let mut started = None;
        let changes: Vec<ConfChangeSingle>;
        let mut transition = ConfChangeTransition::ConfChangeTransitionAuto;
        let mut force_v2 = false;
        if joint {
            if cfg.auto_leave && self.rng.chance(0.7) {
                return Ok(());
            }
            // Leaving explicitly (or, with auto-leave, racing it: refused
            // or harmless).
            changes = Vec::new();
            force_v2 = true;
        } else {
            let kind = self.rng.below(9);
            let big = voters.len() > 3;
            let v = self.rng.pick(&voters);
            let lr = (!learners.is_empty()).then(|| self.rng.pick(&learners));
            changes = match (kind, lr) {
                (0 | 1, _) => {
                    let Some(n) = self.joiner(l)? else {
                        return Ok(());
                    };
                    started = Some(n);
                    vec![single(T::ConfChangeAddLearnerNode, n)]
                }
                (2, Some(x)) | (3, Some(x)) => vec![single(T::ConfChangeAddNode, x)],
                (4, Some(x)) => vec![single(T::ConfChangeRemoveNode, x)],
                (5, _) if big => vec![single(T::ConfChangeRemoveNode, v)],
                (6, _) if big => vec![single(T::ConfChangeAddLearnerNode, v)],
                (7, Some(x)) => {
                    // Promote a learner and demote a voter at once: the
                    // demoted voter waits in learners_next.
                    transition = self.rng.pick(&[
                        ConfChangeTransition::ConfChangeTransitionAuto,
                        ConfChangeTransition::ConfChangeTransitionJointImplicit,
                        ConfChangeTransition::ConfChangeTransitionJointExplicit,
                    ]);
                    vec![
                        single(T::ConfChangeAddNode, x),
                        single(T::ConfChangeAddLearnerNode, v),
                    ]
                }
                (8, _) => {
                    // Replace a voter with a new one through joint consensus.
                    let Some(n) = self.joiner(l)? else {
                        return Ok(());
                    };
                    started = Some(n);
                    transition = self.rng.pick(&[
                        ConfChangeTransition::ConfChangeTransitionAuto,
                        ConfChangeTransition::ConfChangeTransitionJointImplicit,
                        ConfChangeTransition::ConfChangeTransitionJointExplicit,
                    ]);
                    vec![
                        single(T::ConfChangeAddNode, n),
                        single(T::ConfChangeRemoveNode, v),
                    ]
                }
                _ => {
                    let Some(n) = self.joiner(l)? else {
                        return Ok(());
                    };
                    started = Some(n);
                    vec![single(T::ConfChangeAddLearnerNode, n)]
                }
            };
        }
        let cc: ConfChangeI = if changes.len() == 1 && !force_v2 && self.rng.chance(0.5) {
            ConfChangeI::V1(ConfChange {
                change_type: changes[0].change_type,
                node_id: changes[0].node_id,
                ..ConfChange::default()
            })
        } else {
            ConfChangeI::V2(ConfChangeV2 {
                transition,
                changes,
                context: None,
            })
        };
        let proposer = if self.rng.chance(0.8) {
            l
        } else {
            self.client_target(0.0).unwrap_or(l)
        };
        let rn = self
            .nodes
            .get_mut(&proposer)
            .and_then(|n| n.rn.as_mut())
            .expect("up");
        let desc = describe_conf_change(&cc);
        // A new member alone, added through the learner-first path on the
        // seeds that use it.
        let add_member = match &cc {
            _ if !self.p.add_member => None,
            ConfChangeI::V1(c) if c.change_type == T::ConfChangeAddLearnerNode => {
                started.filter(|&n| n == c.node_id)
            }
            ConfChangeI::V2(c)
                if c.changes.len() == 1
                    && c.changes[0].change_type == T::ConfChangeAddLearnerNode =>
            {
                started.filter(|&n| n == c.changes[0].node_id)
            }
            _ => None,
        };
        let (desc, r) = match add_member {
            Some(n) => {
                self.stats.op("add-member");
                (
                    format!("add_member({n})"),
                    rn.add_member(n, Bytes::from(format!("addr-{n}"))),
                )
            }
            None => (desc, rn.propose_conf_change(cc)),
        };
        self.stats.op(match &r {
            Ok(()) => "conf-changes-proposed",
            Err(Error::ConfChangeRefused(_)) => "conf-changes-refused",
            Err(Error::PromotionNotReady { .. }) => "promotions-not-ready",
            Err(Error::TooManyLearners) => "too-many-learners",
            Err(Error::ProposalDropped) => "conf-changes-dropped",
            Err(_) => "conf-changes-other-error",
        });
        self.tr(|| format!("n{proposer} propose conf change {desc} (leader n{l}, transition {transition:?}): {r:?}"));
        if r.is_err() {
            if let Some(n) = started {
                self.spares.push(n);
            }
        }
        self.after_op(proposer)
    }

    // ------------------------------------------------------------------
    // Whole-cluster checks and dumps
    // ------------------------------------------------------------------

    fn check_logs_pairwise(&mut self) -> Res {
        let logs: Vec<(u64, Vec<Entry>)> = self
            .nodes
            .iter()
            .map(|(id, n)| (*id, n.storage.rl().entries_ref().to_vec()))
            .collect();
        for (i, (a, la)) in logs.iter().enumerate() {
            for (b, lb) in &logs[i + 1..] {
                if let Err(e) = logs_match(la, lb) {
                    return Err(Violation {
                        invariant: Invariant::LogMatching,
                        time: self.now,
                        detail: format!("persisted logs of nodes {a} and {b}: {e}"),
                    });
                }
            }
        }
        Ok(())
    }

    /// The state of every node, one line each.
    pub fn dump(&self) -> String {
        let mut s = String::from("=== nodes ===\n");
        for (id, n) in &self.nodes {
            let st = n.storage.rl();
            let (first, last) = (
                st.entries_ref().first().map_or(0, |e| e.index),
                st.entries_ref().last().map_or(0, |e| e.index),
            );
            let hs = *st.hard_state();
            drop(st);
            let _ = write!(
                s,
                "n{id} {:?} inc {} period {} applied {} disk[{first}..={last}] {}",
                n.state,
                n.incarnation,
                n.tick_period,
                n.applied,
                raftlet::describe::describe_hard_state(&hs)
            );
            if let Some(rn) = &n.rn {
                let st = rn.status();
                let _ = write!(
                    s,
                    " | {} term {} lead {} config {}",
                    st.basic.soft_state.raft_state,
                    st.basic.hard_state.term,
                    st.basic.soft_state.leader_id,
                    st.config
                );
                for (pid, pr) in &st.progress {
                    let _ = write!(s, "\n    {pid}: {pr}");
                }
            }
            s.push('\n');
        }
        let _ = write!(
            s,
            "blocked links: {:?}; in flight: {}",
            self.blocked,
            self.queue.len()
        );
        s
    }
}

/// Whether the applied index raftlet reports (`reported`) differs from the
/// host's state machine only by a snapshot: one acknowledged durable but
/// still queued for applying (raftlet ahead), or one applied whose write is
/// not acknowledged yet (the host ahead).
fn snapshot_gap(node: &Node, reported: u64) -> bool {
    let queued = node
        .apply_queue
        .iter()
        .any(|(_, p)| matches!(p, Pending::Snapshot(s) if s.metadata.index == reported));
    let unacked = node
        .writes
        .iter()
        .filter_map(Write::snapshot_index)
        .chain(
            node.pending_ack
                .as_ref()
                .and_then(|(rd, _)| rd.snapshot.as_ref().map(|s| s.metadata.index)),
        )
        .chain((node.pending_ack_snapshot > 0).then_some(node.pending_ack_snapshot))
        .any(|i| i > reported && i <= node.applied);
    (queued && node.applied < reported) || (unacked && reported < node.applied)
}

/// One line describing a Ready.
fn describe_ready(id: u64, rd: &Ready) -> String {
    let mut s = format!("n{id} ready #{}", rd.number());
    if let Some(ss) = rd.soft_state {
        let _ = write!(s, " soft:{}/lead {}", ss.raft_state, ss.leader_id);
    }
    if let Some(hs) = rd.hard_state {
        let _ = write!(s, " hard:{}", raftlet::describe::describe_hard_state(&hs));
    }
    if let Some(snap) = &rd.snapshot {
        let _ = write!(
            s,
            " snapshot:{}/{}",
            snap.metadata.term, snap.metadata.index
        );
    }
    if !rd.entries.is_empty() {
        let ents: Vec<String> = rd.entries.iter().map(describe_entry).collect();
        let _ = write!(s, " persist:[{}]", ents.join(", "));
    }
    if !rd.committed_entries.is_empty() {
        let f = &rd.committed_entries[0];
        let l = rd.committed_entries.last().expect("non-empty");
        let _ = write!(s, " apply:{}..={}", f.index, l.index);
    }
    if !rd.read_states.is_empty() {
        let _ = write!(s, " reads:{}", rd.read_states.len());
    }
    let _ = write!(
        s,
        " msgs:{}+{}",
        rd.messages.len(),
        rd.persisted_messages.len()
    );
    s
}

/// Whether `m` may leave only once its sender's term and vote are durable:
/// everything but pre-vote requests, heartbeat responses and messages that
/// carry no term (forwarded proposals and reads).
fn needs_durable_state(m: &Message) -> bool {
    !matches!(
        m.msg_type,
        MessageType::MsgPreVote | MessageType::MsgHeartbeatResp
    ) && m.term != 0
}

#[cfg(feature = "bug-injection")]
fn plant(rn: &mut RawNode<AnyStorage>, bug: Bug) {
    let b = rn.bugs_mut();
    match bug {
        Bug::LearnerCountsInQuorum => b.learner_counts_in_quorum = true,
        Bug::CommitOldTermByCounting => b.commit_old_term_by_counting = true,
        Bug::VoteIgnoresLog => b.vote_ignores_log = true,
        Bug::ReadWithoutQuorum => b.read_without_quorum = true,
        Bug::VoteTwice => b.vote_twice = true,
        Bug::AppendIgnoresPrevTerm => b.append_ignores_prev_term = true,
        Bug::LearnerCampaigns => b.learner_campaigns = true,
        Bug::NoElectionTimeout => b.no_election_timeout = true,
        Bug::ReapplyCommitted => b.reapply_committed = true,
        Bug::RestoreWhileApplying => b.restore_while_applying = true,
        Bug::VoteRequestEarly => b.vote_request_early = true,
        Bug::SelfAckEarly => b.self_ack_early = true,
        Bug::PromoteIgnoresLag => b.promote_ignores_lag = true,
        // Planted in the store (see `disk`).
        Bug::DiskSkipSync | Bug::DiskSkipDirSync => {}
        Bug::QuiescedNeverWakes => b.quiesced_never_wakes = true,
        Bug::LightSkipsApplying => b.light_skips_applying = true,
    }
}

#[cfg(not(feature = "bug-injection"))]
fn plant(_rn: &mut RawNode<AnyStorage>, bug: Bug) {
    panic!(
        "planting {} needs raftlet-sim's bug-injection feature (cargo ... --features bug-injection)",
        bug.name()
    );
}

/// Whether this build can plant bugs.
pub const CAN_PLANT_BUGS: bool = cfg!(feature = "bug-injection");

/// Whether `rn` has no Ready and reporting the entries handed out applied
/// could make none (`RawNode::apply_may_make_ready`): then it has none
/// after the report either.
fn idle_after_apply<S: raftlet::Storage>(rn: &raftlet::RawNode<S>) -> bool {
    !rn.has_ready() && !rn.apply_may_make_ready()
}
