//! A first benchmark harness for raftlet alone (the side-by-side runs
//! against raft-rs and etcd raft come with the benchmark issue): B3, the
//! single-voter loop, and B1, replication throughput on 3 in-process
//! voters with messages encoded and decoded on delivery. Counts heap
//! allocations with a counting global allocator.
//!
//! Run with `make bench` (release build).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use raftlet::pb::{ConfState, Decode, Encode, EntryType, Message};
use raftlet::{Config, MemoryStorage, RawNode};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);
static TRACE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static TRACE_SIZES: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];
static TRACE_N: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        if TRACE.load(Ordering::Relaxed) {
            let i = TRACE_N.fetch_add(1, Ordering::Relaxed) as usize;
            if i < 64 {
                TRACE_SIZES[i].store(layout.size() as u64, Ordering::Relaxed);
            }
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        LIVE_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn persist(storage: &MemoryStorage, rd: &raftlet::Ready) {
    let mut s = storage.wl();
    if let Some(snap) = &rd.snapshot {
        s.apply_snapshot(snap.clone()).expect("snapshot");
    }
    if !rd.entries.is_empty() {
        s.append(&rd.entries).expect("append");
    }
    if let Some(hs) = rd.hard_state {
        s.set_hard_state(hs);
    }
}

/// B3: propose one 128-byte entry, ready, append, apply, advance.
fn b3(ops: u64) -> (f64, f64) {
    let storage = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1]));
    let mut node = RawNode::new(&Config::new(1), storage.clone()).expect("node");
    node.campaign().expect("campaign");
    while node.has_ready() {
        let rd = node.ready();
        persist(&storage, &rd);
        node.advance(rd);
    }
    let payload = bytes::Bytes::from(vec![7u8; 128]);
    let mut applied = 0u64;
    let run = |node: &mut RawNode<MemoryStorage>, n: u64, applied: &mut u64| {
        for _ in 0..n {
            node.propose(payload.clone()).expect("propose");
            let rd = node.ready();
            persist(&storage, &rd);
            *applied += rd.committed_entries.len() as u64;
            node.advance(rd);
            if node.has_ready() {
                let rd = node.ready();
                persist(&storage, &rd);
                *applied += rd.committed_entries.len() as u64;
                node.advance(rd);
            }
        }
    };
    run(&mut node, ops / 10, &mut applied); // warm-up
    let a0 = ALLOCS.load(Ordering::Relaxed);
    let t = Instant::now();
    run(&mut node, ops, &mut applied);
    let ns = t.elapsed().as_nanos() as f64 / ops as f64;
    let allocs = (ALLOCS.load(Ordering::Relaxed) - a0) as f64 / ops as f64;
    assert!(applied >= ops, "applied {applied} of {ops}");
    (ns, allocs)
}

/// B1: 3 voters, rounds of `batch` proposals of `size` bytes on the leader,
/// Ready cycles on every node until the round is applied everywhere.
fn b1(total: u64, batch: u64, size: usize, one_message: bool) -> (f64, f64, f64) {
    let ids = [1u64, 2, 3];
    let mut nodes: Vec<(RawNode<MemoryStorage>, MemoryStorage, u64)> = ids
        .iter()
        .map(|&id| {
            let s = MemoryStorage::new_with_conf_state(ConfState::from_voters(ids.to_vec()));
            (
                RawNode::new(&Config::new(id), s.clone()).expect("node"),
                s,
                0,
            )
        })
        .collect();
    nodes[0].0.campaign().expect("campaign");
    let mut msgs_sent = 0u64;
    let mut pump = |nodes: &mut Vec<(RawNode<MemoryStorage>, MemoryStorage, u64)>| loop {
        let mut inflight: Vec<Vec<u8>> = Vec::new();
        for (node, storage, applied) in nodes.iter_mut() {
            if !node.has_ready() {
                continue;
            }
            let rd = node.ready();
            persist(storage, &rd);
            for m in rd.messages.iter().chain(rd.persisted_messages.iter()) {
                inflight.push(m.encode_to_vec());
            }
            *applied += rd
                .committed_entries
                .iter()
                .filter(|e| e.entry_type == EntryType::EntryNormal && !e.data().is_empty())
                .count() as u64;
            node.advance(rd);
        }
        if inflight.is_empty() {
            break;
        }
        msgs_sent += inflight.len() as u64;
        for buf in inflight {
            let m = Message::decode(&buf).expect("decode");
            let to = m.to as usize - 1;
            let _ = nodes[to].0.step(m);
        }
    };
    pump(&mut nodes);
    let payload = bytes::Bytes::from(vec![7u8; size]);
    let a0 = ALLOCS.load(Ordering::Relaxed);
    let t = Instant::now();
    let rounds = total / batch;
    for _ in 0..rounds {
        if one_message {
            nodes[0]
                .0
                .propose_batch((0..batch).map(|_| payload.clone()))
                .expect("propose");
        } else {
            for _ in 0..batch {
                nodes[0].0.propose(payload.clone()).expect("propose");
            }
        }
        pump(&mut nodes);
    }
    let secs = t.elapsed().as_secs_f64();
    let n = rounds * batch;
    for (node, _, applied) in &nodes {
        assert!(*applied >= n, "node {} applied {applied} of {n}", node.id());
    }
    let allocs = (ALLOCS.load(Ordering::Relaxed) - a0) as f64 / n as f64;
    (n as f64 / secs, allocs, msgs_sent as f64 / n as f64)
}

/// B4: `groups` idle follower groups (3 voters, this node a follower that
/// heard from its leader): heap bytes per group and ns per group for one
/// tick sweep.
fn b4(groups: usize) -> (f64, f64) {
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let mut nodes: Vec<RawNode<MemoryStorage>> = Vec::with_capacity(groups);
    for _ in 0..groups {
        let s = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3]));
        let mut n = RawNode::new(&Config::new(2), s).expect("node");
        let mut hb = Message::new(raftlet::pb::MessageType::MsgHeartbeat, 1, 2);
        hb.term = 1;
        n.step(hb).expect("heartbeat");
        let rd = n.ready();
        n.advance(rd);
        nodes.push(n);
    }
    let vec_bytes = (groups * std::mem::size_of::<RawNode<MemoryStorage>>()) as u64;
    let per_group = (LIVE_BYTES.load(Ordering::Relaxed) - before) as f64 / groups as f64;
    let _ = vec_bytes;
    let sweeps = 5;
    let t = Instant::now();
    for _ in 0..sweeps {
        for n in nodes.iter_mut() {
            n.tick();
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / (sweeps * groups) as f64;
    (per_group, ns)
}

fn main() {
    if std::env::var("RAFTLET_BENCH_ALLOC_TRACE").is_ok() {
        TRACE.store(true, Ordering::Relaxed);
        let before = LIVE_BYTES.load(Ordering::Relaxed);
        let _ = b4(1);
        TRACE.store(false, Ordering::Relaxed);
        let n = TRACE_N.load(Ordering::Relaxed) as usize;
        let sizes: Vec<u64> = TRACE_SIZES[..n.min(64)]
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .collect();
        println!(
            "allocations while building one group: {sizes:?}; live delta {}",
            LIVE_BYTES.load(Ordering::Relaxed) - before
        );
        return;
    }
    if std::env::var("RAFTLET_BENCH_B4_ONLY").is_ok() {
        let (bytes, ns) = b4(10_000);
        println!(
            "B4 10k idle groups   : {bytes:8.0} heap bytes/group, {ns:.1} ns/group/tick sweep"
        );
        return;
    }
    if let Ok(n) = std::env::var("RAFTLET_BENCH_B3_ONLY") {
        let (ns, allocs) = b3(n.parse().unwrap_or(20_000));
        println!("B3 single voter      : {ns:8.0} ns/op, {allocs:.2} allocations/op");
        return;
    }
    println!("raftlet-only benchmarks (release build); peers are compared by the benchmark issue's harness");
    let (ns, allocs) = b3(200_000);
    println!("B3 single voter      : {ns:8.0} ns/op, {allocs:.2} allocations/op");
    let (bytes, ns) = b4(10_000);
    println!("B4 10k idle groups   : {bytes:8.0} heap bytes/group, {ns:.1} ns/group/tick sweep");
    let (eps, allocs, mpe) = b1(200_000, 256, 128, false);
    println!(
        "B1 3 voters 128 B    : {:8.0} entries/s, {allocs:.2} allocations/entry, {mpe:.3} messages/entry",
        eps
    );
    let (eps, allocs, mpe) = b1(200_000, 256, 128, true);
    println!(
        "B1batch 3 voters 128B: {:8.0} entries/s, {allocs:.2} allocations/entry, {mpe:.3} messages/entry",
        eps
    );
}
