//! The workloads of DESIGN §8, written once over [`BenchNode`].

use bytes::Bytes;

use crate::alloc::{allocs, live_bytes, peak_rss_kib, Clock};
use crate::node::{Applied, BenchNode, Kind, Opts, Wire};

/// A set of metrics, printed as one JSON object.
pub type Metrics = Vec<(&'static str, f64)>;

/// Nodes with ids 1..=n in one process; messages are encoded by the sender
/// and decoded by the receiver.
pub struct Cluster<N> {
    pub nodes: Vec<N>,
    pub apps: Vec<Applied>,
    pub down: Vec<bool>,
    out: Vec<Wire>,
    inflight: Vec<Wire>,
    pub msgs: u64,
    pub bytes: u64,
}

impl<N: BenchNode> Cluster<N> {
    /// `voters` voters (ids 1..=voters) and `extra` empty nodes after them.
    pub fn new(voters: usize, extra: usize, opts: &Opts) -> Self {
        let ids: Vec<u64> = (1..=voters as u64).collect();
        let mut nodes: Vec<N> = ids.iter().map(|&id| N::create(id, &ids, opts)).collect();
        for i in 0..extra {
            nodes.push(N::create((voters + i + 1) as u64, &[], opts));
        }
        let n = nodes.len();
        Cluster {
            nodes,
            apps: vec![Applied::default(); n],
            down: vec![false; n],
            out: Vec::new(),
            inflight: Vec::new(),
            msgs: 0,
            bytes: 0,
        }
    }

    /// Ready cycles on every node and delivery of every message until
    /// nothing is left to do.
    pub fn pump(&mut self) {
        loop {
            let mut worked = false;
            for i in 0..self.nodes.len() {
                if !self.down[i] && self.nodes[i].has_ready() {
                    self.nodes[i].cycle(&mut self.out, &mut self.apps[i]);
                    worked = true;
                }
            }
            if self.out.is_empty() {
                if !worked {
                    return;
                }
                continue;
            }
            std::mem::swap(&mut self.out, &mut self.inflight);
            for w in self.inflight.drain(..) {
                self.msgs += 1;
                self.bytes += w.data.len() as u64;
                let to = w.to as usize - 1;
                if !self.down[to] {
                    self.nodes[to].step(&w.data);
                }
            }
        }
    }

    pub fn elect(&mut self) {
        self.nodes[0].campaign();
        self.pump();
        assert!(self.nodes[0].is_leader(), "node 1 did not win its election");
    }
}

/// B1: 3 voters; rounds of `batch` proposals of `size` bytes (each a fresh
/// payload) on the leader
/// (`one_message`: one proposal message carrying the round), then Ready
/// cycles on all nodes until the round is applied everywhere. Logs are
/// compacted (to the applied index) whenever a round crosses a multiple of
/// `compact_every` entries.
pub fn b1<N: BenchNode>(
    opts: &Opts,
    total: u64,
    batch: usize,
    size: usize,
    one_message: bool,
    compact_every: u64,
) -> Metrics {
    let mut c = Cluster::<N>::new(3, 0, opts);
    c.elect();
    let payload = vec![0x5au8; size];
    let rounds = total / batch as u64;
    let (m0, b0) = (c.msgs, c.bytes);
    let a0 = allocs();
    let t = Clock::start();
    let mut next_compact = compact_every;
    for r in 0..rounds {
        if one_message {
            c.nodes[0].propose_batch(&payload, batch);
        } else {
            for _ in 0..batch {
                c.nodes[0].propose(&payload);
            }
        }
        c.pump();
        if (r + 1) * batch as u64 >= next_compact {
            for i in 0..3 {
                let idx = c.apps[i].index;
                c.nodes[i].compact(idx);
            }
            next_compact += compact_every;
        }
    }
    let (secs, wall) = t.secs();
    let allocs = allocs() - a0;
    let n = rounds * batch as u64;
    for (i, a) in c.apps.iter().enumerate() {
        assert_eq!(a.entries, n, "node {} applied {} of {n}", i + 1, a.entries);
    }
    vec![
        ("entries_per_s", n as f64 / secs),
        ("entries_per_s_wall", n as f64 / wall),
        ("mb_per_s", (n * size as u64) as f64 / secs / 1e6),
        ("allocs_per_entry", allocs as f64 / n as f64),
        ("msgs_per_entry", (c.msgs - m0) as f64 / n as f64),
        ("wire_bytes_per_entry", (c.bytes - b0) as f64 / n as f64),
        ("peak_rss_mib", peak_rss_kib() as f64 / 1024.0),
        ("entries", n as f64),
        ("cpu_secs", secs),
        ("wall_secs", wall),
    ]
}

/// B3: one voter; propose one entry of `size` bytes, then Ready cycles
/// (persist, apply, advance) until the node is idle; ns and allocations per
/// operation in steady state (after a warm-up of a tenth of `ops`).
pub fn b3<N: BenchNode>(opts: &Opts, ops: u64, size: usize) -> Metrics {
    let mut node = N::create(1, &[1], opts);
    let mut out = Vec::new();
    let mut app = Applied::default();
    node.campaign();
    while node.has_ready() {
        node.cycle(&mut out, &mut app);
    }
    assert!(node.is_leader());
    let payload = vec![0x5au8; size];
    let mut run = |node: &mut N, n: u64, app: &mut Applied| {
        for _ in 0..n {
            node.propose(&payload);
            while node.has_ready() {
                node.cycle(&mut out, app);
            }
        }
    };
    run(&mut node, ops / 10, &mut app);
    let before = app.entries;
    let a0 = allocs();
    let t = Clock::start();
    run(&mut node, ops, &mut app);
    let (cpu, wall) = t.secs();
    let ns = cpu * 1e9 / ops as f64;
    let a = allocs() - a0;
    assert_eq!(app.entries - before, ops);
    vec![
        ("ns_per_op", ns),
        ("ns_per_op_wall", wall * 1e9 / ops as f64),
        ("allocs_per_op", a as f64 / ops as f64),
        ("ops", ops as f64),
    ]
}

/// B4: `groups` idle follower groups (3 voters each, this process holding
/// node 2, which heard its leader's heartbeat): live heap bytes per group
/// (the node struct included), and ns per group for one tick sweep
/// (sweeps of 5 ticks, each group hearing a heartbeat again between them so
/// that none times out), alone and followed by `has_ready` (what a
/// multi-raft host calls after each tick).
pub fn b4<N: BenchNode>(opts: &Opts, groups: usize, measurements: usize) -> Metrics {
    let mut out = Vec::new();
    let mut app = Applied::default();
    let hb = N::encode_heartbeat(1, 2, 1);
    let before = live_bytes();
    let mut nodes: Vec<N> = Vec::with_capacity(groups);
    for _ in 0..groups {
        let mut n = N::create(2, &[1, 2, 3], opts);
        n.step(&hb);
        while n.has_ready() {
            n.cycle(&mut out, &mut app);
        }
        out.clear();
        nodes.push(n);
    }
    let per_group = (live_bytes() - before) as f64 / groups as f64;
    const SWEEPS: usize = 5;
    let mut best = f64::MAX;
    let mut samples = Vec::new();
    let mut with_ready = Vec::new();
    for _ in 0..measurements {
        let t = Clock::start();
        for _ in 0..SWEEPS {
            for n in nodes.iter_mut() {
                n.tick();
            }
        }
        let ns = t.secs().0 * 1e9 / (SWEEPS * groups) as f64;
        samples.push(ns);
        best = best.min(ns);
        for n in nodes.iter_mut() {
            n.step(&hb);
            while n.has_ready() {
                n.cycle(&mut out, &mut app);
            }
            out.clear();
        }
        // The sweep a multi-raft host runs: tick, then ask for work.
        let t = Clock::start();
        let mut busy = 0usize;
        for _ in 0..SWEEPS {
            for n in nodes.iter_mut() {
                n.tick();
                busy += n.has_ready() as usize;
            }
        }
        with_ready.push(t.secs().0 * 1e9 / (SWEEPS * groups) as f64);
        assert_eq!(busy, 0, "an idle group had work");
        for n in nodes.iter_mut() {
            n.step(&hb);
            while n.has_ready() {
                n.cycle(&mut out, &mut app);
            }
            out.clear();
        }
    }
    for n in &nodes {
        assert!(!n.is_leader());
    }
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    with_ready.sort_by(|a, b| a.partial_cmp(b).unwrap());
    vec![
        ("heap_bytes_per_group", per_group),
        ("ns_per_group_tick", samples[samples.len() / 2]),
        ("ns_per_group_tick_best", best),
        (
            "ns_per_group_tick_has_ready",
            with_ready[with_ready.len() / 2],
        ),
        ("node_struct_bytes", std::mem::size_of::<N>() as f64),
        ("groups", groups as f64),
    ]
}

/// B5: 3 voters; the leader takes `per_round` ReadIndex (Safe) requests,
/// then Ready cycles run until they are all confirmed; reads per second.
pub fn b5<N: BenchNode>(opts: &Opts, rounds: u64, per_round: u64) -> Metrics {
    let mut c = Cluster::<N>::new(3, 0, opts);
    c.elect();
    let payload = vec![0x5au8; 128];
    c.nodes[0].propose(&payload);
    c.pump();
    let m0 = c.msgs;
    let a0 = allocs();
    let t = Clock::start();
    let mut ctx = 0u64;
    for _ in 0..rounds {
        for _ in 0..per_round {
            ctx += 1;
            c.nodes[0].read_index(ctx);
        }
        c.pump();
    }
    let (secs, wall) = t.secs();
    let reads = rounds * per_round;
    assert_eq!(c.apps[0].reads, reads, "reads confirmed");
    vec![
        ("reads_per_s", reads as f64 / secs),
        ("reads_per_s_wall", reads as f64 / wall),
        ("msgs_per_read", (c.msgs - m0) as f64 / reads as f64),
        ("allocs_per_read", (allocs() - a0) as f64 / reads as f64),
        ("reads", reads as f64),
    ]
}

/// B6: 3 voters hold `total` entries of `size` bytes, their logs compacted
/// at `compact_at` (a snapshot whose image is `compact_at * size` bytes); a
/// learner (added by a conf change while its host was down, so that the
/// snapshot carries it) starts with an empty log. Each tick: deliver what
/// was sent during the previous tick (one network hop per tick), tick every
/// node, run Ready cycles. Measures ticks and wall time until the learner's
/// log is within `lag` entries of the leader's, bytes sent to it, and the
/// longest gap in ticks between two heartbeats of the leader to a voter.
pub fn b6<N: BenchNode>(
    opts: &Opts,
    total: u64,
    compact_at: u64,
    size: usize,
    lag: u64,
) -> Metrics {
    let mut c = Cluster::<N>::new(3, 1, opts);
    c.down[3] = true;
    c.elect();
    c.nodes[0].propose_add_learner(4);
    c.pump();
    let payload = vec![0x5au8; size];
    let fill = |c: &mut Cluster<N>, upto: u64| loop {
        let last = c.nodes[0].last_index();
        if last >= upto {
            break;
        }
        c.nodes[0].propose_batch(&payload, (upto - last).min(256) as usize);
        c.pump();
    };
    fill(&mut c, compact_at);
    let image = Bytes::from(vec![0xa5u8; compact_at as usize * size]);
    for i in 0..3 {
        assert_eq!(c.apps[i].index, compact_at);
        c.nodes[i].snapshot_and_compact(compact_at, Some(image.clone()));
    }
    drop(image);
    fill(&mut c, total);
    let leader_last = c.nodes[0].last_index();
    assert_eq!(leader_last, total);

    // The learner's host starts.
    c.down[3] = false;
    let mut pending: Vec<Wire> = Vec::new();
    let mut out: Vec<Wire> = Vec::new();
    let mut last_hb = [0u64; 3];
    let mut max_gap = 0u64;
    let (mut to_learner, mut sent) = (0u64, 0u64);
    let mut max_tick_ms = 0f64;
    let t = Clock::start();
    let mut tick = 0u64;
    let ticks = loop {
        tick += 1;
        assert!(tick < 10_000, "the learner did not catch up");
        let t_tick = Clock::start();
        for w in pending.drain(..) {
            c.nodes[w.to as usize - 1].step(&w.data);
        }
        for n in c.nodes.iter_mut() {
            n.tick();
        }
        for (i, n) in c.nodes.iter_mut().enumerate() {
            while n.has_ready() {
                n.cycle(&mut out, &mut c.apps[i]);
            }
        }
        for w in out.drain(..) {
            sent += w.data.len() as u64;
            if w.from == 1 && w.to == 4 {
                to_learner += w.data.len() as u64;
            }
            if w.from == 1 && w.to <= 3 && w.kind == Kind::Heartbeat {
                let v = w.to as usize - 1;
                if last_hb[v] > 0 {
                    max_gap = max_gap.max(tick - last_hb[v]);
                }
                last_hb[v] = tick;
            }
            pending.push(w);
        }
        max_tick_ms = max_tick_ms.max(t_tick.secs().0 * 1e3);
        if c.nodes[3].last_index() + lag >= leader_last {
            break tick;
        }
    };
    let (secs, wall) = t.secs();
    assert!(c.nodes[0].is_leader(), "the leader kept its role");
    assert!(c.apps[3].snapshots >= 1, "the learner installed a snapshot");
    vec![
        ("ticks", ticks as f64),
        ("cpu_ms", secs * 1e3),
        ("wall_ms", wall * 1e3),
        ("bytes_to_learner", to_learner as f64),
        ("bytes_sent", sent as f64),
        ("max_heartbeat_gap_ticks", max_gap as f64),
        ("max_tick_cpu_ms", max_tick_ms),
        ("snapshots_installed", c.apps[3].snapshots as f64),
    ]
}
