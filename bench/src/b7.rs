//! B7: many groups, few of them active (issue 19). `groups` groups of 3
//! voters, all three nodes of every group in this process (node n holds
//! one replica of each group, as a multi-raft host does); leaders spread
//! over the nodes; `active` of the groups (1 % by default) get one
//! proposal of a fresh 128-byte payload per round, the others are idle.
//!
//! A round is one tick sweep on each node, then the proposals, then every
//! Ready handled and every message delivered until the cluster is quiet.
//!
//! * raftlet (`impl=raftlet`): `Config::quiesce` on, each node a
//!   `raftlet::multi::MultiNode`: the sweep ticks only awake groups, and
//!   the messages of all groups for one node travel in one frame.
//! * raft-rs and raftlet without quiescence (`impl=raftlet-noquiesce`):
//!   every group ticked, then `has_ready`, on every node (what a
//!   multi-raft host without quiescence does), one encoded message at a
//!   time.
//!
//! Metrics, per node (one host of `groups` group replicas):
//! `ns_per_sweep` (CPU of the tick sweep: tick + has_ready over the groups
//! the host ticks; raftlet's also queues the node-level heartbeats and
//! checks peer liveness), `ns_per_round` (the sweep plus all the work of
//! the round: heartbeats of idle groups, proposals, replication),
//! `heap_bytes_per_group` (live heap per group replica once idle groups
//! are idle: quiesced under raftlet), `groups_ticked_per_sweep`.

use bytes::Bytes;
use raftlet::multi::MultiNode;
use raftlet::pb::{ConfState, EntryType};
use raftlet::{Config, MemoryStorage, RawNode};

use crate::alloc::{live_bytes, Clock};
use crate::node::{Applied, BenchNode, Opts, Wire};
use crate::workloads::Metrics;

const NODES: usize = 3;
const PAYLOAD: usize = 128;

/// Idle ticks after the election before anything is measured (idle
/// groups quiesce within a few).
const WARM_ROUNDS: usize = 30;

fn is_hot(g: usize, groups: usize, active: usize) -> bool {
    if active == 0 {
        return false;
    }
    let step = (groups / active).max(1);
    g.is_multiple_of(step) && g / step < active
}

fn payload(r: usize, g: usize) -> Bytes {
    let mut v = vec![(r ^ g) as u8; PAYLOAD];
    v[..8].copy_from_slice(&(r as u64).to_le_bytes());
    Bytes::from(v)
}

/// Drives a library without quiescence: every group ticked on every node.
pub fn plain<N: BenchNode>(opts: &Opts, groups: usize, active: usize, rounds: usize) -> Metrics {
    let mut app = Applied::default();
    let mut out: Vec<Wire> = Vec::new();
    let mut work: Vec<(usize, usize)> = Vec::new();
    let before = live_bytes();
    let mut nodes: Vec<Vec<N>> = (1..=NODES as u64)
        .map(|id| {
            (0..groups)
                .map(|_| N::create(id, &[1, 2, 3], opts))
                .collect()
        })
        .collect();
    fn pump<N: BenchNode>(
        nodes: &mut [Vec<N>],
        work: &mut Vec<(usize, usize)>,
        out: &mut Vec<Wire>,
        app: &mut Applied,
    ) {
        while let Some((n, g)) = work.pop() {
            let node = &mut nodes[n][g];
            while node.has_ready() {
                node.cycle(out, app);
            }
            for w in out.drain(..) {
                let t = (w.to - 1) as usize;
                nodes[t][g].step(&w.data);
                work.push((t, g));
            }
        }
    }
    for g in 0..groups {
        nodes[g % NODES][g].campaign();
        work.push((g % NODES, g));
        pump(&mut nodes, &mut work, &mut out, &mut app);
    }
    let sweep = |nodes: &mut [Vec<N>], work: &mut Vec<(usize, usize)>| {
        for (n, row) in nodes.iter_mut().enumerate() {
            for (g, node) in row.iter_mut().enumerate() {
                node.tick();
                if node.has_ready() {
                    work.push((n, g));
                }
            }
        }
    };
    for _ in 0..WARM_ROUNDS {
        sweep(&mut nodes, &mut work);
        pump(&mut nodes, &mut work, &mut out, &mut app);
    }
    let heap = (live_bytes() - before) as f64 / (NODES * groups) as f64;
    for g in 0..groups {
        assert!(nodes[g % NODES][g].is_leader(), "group {g} lost its leader");
    }
    let (mut sweep_cpu, mut round_cpu) = (0.0, 0.0);
    let applied0 = app.entries;
    for r in 0..rounds {
        let t = Clock::start();
        sweep(&mut nodes, &mut work);
        let s = t.secs().0;
        for g in (0..groups).filter(|&g| is_hot(g, groups, active)) {
            nodes[g % NODES][g].propose(&payload(r, g));
            work.push((g % NODES, g));
        }
        pump(&mut nodes, &mut work, &mut out, &mut app);
        sweep_cpu += s;
        round_cpu += t.secs().0;
    }
    let hot = (0..groups).filter(|&g| is_hot(g, groups, active)).count();
    assert_eq!(
        app.entries - applied0,
        (NODES * hot * rounds) as u64,
        "every proposal applied on every node"
    );
    metrics(
        heap,
        sweep_cpu,
        round_cpu,
        rounds,
        groups as f64,
        groups,
        hot,
    )
}

fn metrics(
    heap: f64,
    sweep_cpu: f64,
    round_cpu: f64,
    rounds: usize,
    ticked_per_sweep: f64,
    groups: usize,
    hot: usize,
) -> Metrics {
    let per = (rounds * NODES) as f64;
    vec![
        ("ns_per_sweep", sweep_cpu * 1e9 / per),
        ("ns_per_round", round_cpu * 1e9 / per),
        ("heap_bytes_per_group", heap),
        ("groups_ticked_per_sweep", ticked_per_sweep),
        ("groups", groups as f64),
        ("active_groups", hot as f64),
    ]
}

fn config(id: u64, g: usize, opts: &Opts) -> Config {
    let mut cfg = Config::new(id);
    cfg.election_tick = opts.election_tick;
    cfg.heartbeat_tick = opts.heartbeat_tick;
    cfg.max_size_per_msg = opts.max_size_per_msg;
    cfg.max_committed_size_per_ready = opts.max_size_per_msg;
    cfg.max_inflight_msgs = opts.max_inflight_msgs;
    cfg.coalesce_appends = opts.coalesce;
    cfg.quiesce = true;
    cfg.seed = id * 1_000_003 + g as u64 + 1;
    cfg
}

/// Handles the Readies of one host's groups; returns its frames.
fn handle(h: &mut MultiNode<MemoryStorage>, app: &mut Applied) -> Vec<(u64, Vec<u8>)> {
    for g in h.take_ready_groups() {
        h.with_group(g, |n, out| {
            while n.has_ready() {
                let mut rd = n.ready();
                {
                    let s = n.store().clone();
                    let mut w = s.wl();
                    if !rd.entries.is_empty() {
                        w.append(&rd.entries).expect("append");
                    }
                    if let Some(hs) = rd.hard_state {
                        w.set_hard_state(hs);
                    }
                }
                out.send(rd.take_all_messages());
                for e in &rd.committed_entries {
                    if e.entry_type == EntryType::EntryNormal && !e.data().is_empty() {
                        app.entries += 1;
                        app.bytes += e.data().len() as u64;
                    }
                    app.index = e.index;
                }
                n.advance(rd);
            }
        });
    }
    h.take_frames()
}

fn pump(hosts: &mut [MultiNode<MemoryStorage>], app: &mut Applied) {
    loop {
        let mut frames = Vec::new();
        for h in hosts.iter_mut() {
            frames.extend(handle(h, app));
        }
        if frames.is_empty() {
            return;
        }
        for (to, f) in frames {
            hosts[(to - 1) as usize]
                .receive(&Bytes::from(f))
                .expect("well-formed frame");
        }
    }
}

/// raftlet with quiescence, each node a `MultiNode`.
pub fn quiesced(opts: &Opts, groups: usize, active: usize, rounds: usize) -> Metrics {
    let mut app = Applied::default();
    let before = live_bytes();
    let mut hosts: Vec<MultiNode<MemoryStorage>> = (1..=NODES as u64)
        .map(|id| {
            let mut h = MultiNode::new(id, opts.election_tick, opts.heartbeat_tick);
            h.reserve(groups);
            for g in 0..groups {
                let s = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3]))
                    .expect("storage");
                let n = RawNode::new(&config(id, g, opts), s).expect("raftlet node");
                h.add_group(g as u64, n).expect("new group");
            }
            for p in 1..=NODES as u64 {
                h.add_peer(p);
            }
            h
        })
        .collect();
    for g in 0..groups {
        hosts[g % NODES]
            .with_group(g as u64, |n, _| n.campaign())
            .expect("held")
            .expect("campaign");
        pump(&mut hosts, &mut app);
    }
    for _ in 0..WARM_ROUNDS {
        for h in hosts.iter_mut() {
            h.tick();
        }
        pump(&mut hosts, &mut app);
    }
    let heap = (live_bytes() - before) as f64 / (NODES * groups) as f64;
    let asleep = hosts.iter().map(|h| h.len() - h.awake_len()).sum::<usize>();
    assert_eq!(asleep, NODES * groups, "idle groups quiesce");
    let (mut sweep_cpu, mut round_cpu) = (0.0, 0.0);
    let ticks0: u64 = hosts.iter().map(|h| h.stats().group_ticks).sum();
    let applied0 = app.entries;
    for r in 0..rounds {
        let t = Clock::start();
        for h in hosts.iter_mut() {
            h.tick();
        }
        let s = t.secs().0;
        for g in (0..groups).filter(|&g| is_hot(g, groups, active)) {
            hosts[g % NODES]
                .with_group(g as u64, |n, _| n.propose(payload(r, g)))
                .expect("held")
                .expect("propose");
        }
        pump(&mut hosts, &mut app);
        sweep_cpu += s;
        round_cpu += t.secs().0;
    }
    let hot = (0..groups).filter(|&g| is_hot(g, groups, active)).count();
    assert_eq!(
        app.entries - applied0,
        (NODES * hot * rounds) as u64,
        "every proposal applied on every node"
    );
    let ticked: u64 = hosts.iter().map(|h| h.stats().group_ticks).sum::<u64>() - ticks0;
    metrics(
        heap,
        sweep_cpu,
        round_cpu,
        rounds,
        ticked as f64 / (rounds * NODES) as f64,
        groups,
        hot,
    )
}
