//! Simulated power loss at random points: after every crash the store opens
//! (never `Corrupt`: a crash alone damages nothing that was synced) and
//! holds exactly the state of some prefix of the batches written, no
//! shorter than the last one acknowledged as synced and no longer than the
//! last one attempted. The model is raftlet's MemoryStorage, fed the same
//! operations.
//!
//! After every successful write the store also answers as the model does
//! (its index, its read cache, its files), before any crash.
//!
//! `CRASH_SEEDS=n` runs more seeds (default 150).

mod common;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use common::*;
use raftlet::pb::{ConfState, Entry, HardState, Snapshot};
use raftlet::{MemoryStorage, Storage};
use raftlet_disk::{CrashMode, DiskStore, FaultFs, FaultOp, Options, WriteBatch, EIO, ENOSPC};

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// One operation, as given to both the store and the model.
#[derive(Debug, Clone)]
enum MOp {
    Append(Vec<Entry>),
    HardState(HardState),
    ConfState(ConfState),
    ApplySnapshot(Snapshot),
    Compact(u64),
    CreateSnapshot(u64, Option<ConfState>, Option<Bytes>),
    Remove,
}

type Batch = Vec<(u64, MOp)>;
type Model = BTreeMap<u64, MemoryStorage>;

fn apply_model(m: &mut Model, gid: u64, op: &MOp) {
    if let MOp::Remove = op {
        m.remove(&gid);
        return;
    }
    let g = m.entry(gid).or_default();
    if let MOp::ConfState(cs) = op {
        raftlet_disk::AnyStorage::Memory(g.clone())
            .set_conf_state(cs.clone())
            .unwrap();
        return;
    }
    let mut w = g.wl();
    match op {
        MOp::Append(ents) => w.append(ents).unwrap(),
        // The store never lowers a stored commit index (a light Ready's
        // commit stands when an older Ready's hard state is written).
        MOp::HardState(hs) => {
            let commit = hs.commit.max(w.hard_state().commit);
            w.set_hard_state(HardState { commit, ..*hs })
        }
        MOp::ConfState(_) | MOp::Remove => unreachable!(),
        MOp::ApplySnapshot(s) => w.apply_snapshot(s.clone()).unwrap(),
        MOp::Compact(i) => w.compact(*i).unwrap(),
        MOp::CreateSnapshot(i, cs, d) => {
            w.create_snapshot(*i, cs.clone(), d.clone()).unwrap();
        }
    }
}

fn replay(batches: &[Batch]) -> Model {
    let mut m = Model::new();
    for b in batches {
        for (gid, op) in b {
            apply_model(&mut m, *gid, op);
        }
    }
    m
}

/// A view for a message: its entries by index, term and length (the data
/// of large ones would take longer to print than the test to run; most
/// mismatches are expected, in the search for the prefix recovered).
fn brief(v: &View) -> String {
    let ents: Vec<(u64, u64, usize)> = v
        .entries
        .iter()
        .map(|e| (e.index, e.term, e.data().len()))
        .collect();
    format!(
        "state {:?}, first {}, last {}, first term {}, snapshot {:?}, entries (index, term, len) {ents:?}",
        v.state, v.first, v.last, v.first_term, v.snapshot.metadata
    )
}

/// Whether the store holds exactly the model's state.
fn matches(store: &DiskStore, m: &Model) -> Result<(), String> {
    let ids: BTreeSet<u64> = store.groups().into_iter().collect();
    let want: BTreeSet<u64> = m.keys().copied().collect();
    if ids != want {
        return Err(format!("groups {ids:?}, model {want:?}"));
    }
    for (gid, g) in m {
        let got = view(&store.group(*gid));
        let exp = model_view(g);
        if got != exp {
            return Err(format!(
                "group {gid}:\n got {}\nwant {}",
                brief(&got),
                brief(&exp)
            ));
        }
    }
    Ok(())
}

/// A random operation on `gid` that is valid for the model's state. With
/// `big`, some appends carry entries of hundreds of kilobytes, so that
/// batches reach the sizes the store writes differently: applied to its
/// index while written (256 KiB), past the page cache in several chunks
/// (over 2 MiB).
fn gen_op(rng: &mut Rng, m: &Model, gid: u64, term: &mut u64, big: bool) -> MOp {
    let g = m.get(&gid).cloned().unwrap_or_default();
    let first = g.first_index().unwrap();
    let last = g.last_index().unwrap();
    let snap_index = g.rl().snapshot_ref().metadata.index;
    let commit = g.rl().hard_state().commit;
    if rng.chance(8) {
        *term += 1;
    }
    let roll = rng.below(100);
    match roll {
        0..=49 => {
            // Append, sometimes overwriting a suffix.
            let from = if last >= first && rng.chance(20) {
                first + rng.below(last - first + 1)
            } else {
                last + 1
            };
            if big && rng.chance(30) {
                let n = 1 + rng.below(3);
                let size = [100 << 10, 300 << 10, 900 << 10][rng.below(3) as usize];
                return MOp::Append(big_entries(gid, from, n, *term, size));
            }
            let n = 1 + rng.below(8);
            MOp::Append(entries(gid, from, n, *term))
        }
        50..=69 => MOp::HardState(HardState {
            term: *term,
            vote: rng.below(4),
            commit: last.min(rng.below(last + 1)),
        }),
        70..=79 if last > first => MOp::Compact(first + rng.below(last - first)),
        // A snapshot only up to the stored commit index (the store refuses
        // one above it).
        80..=85 if last.min(commit) > snap_index.max(first.saturating_sub(1)) => {
            let lo = snap_index.max(first - 1) + 1;
            let idx = lo + rng.below(last.min(commit) - lo + 1);
            let cs = rng
                .chance(50)
                .then(|| ConfState::from_voters(vec![1, 2, 3 + rng.below(5)]));
            let data = rng
                .chance(80)
                .then(|| Bytes::from(format!("sm-{gid}-{idx}").repeat(1 + rng.below(30) as usize)));
            MOp::CreateSnapshot(idx, cs, data)
        }
        86..=90 => {
            *term += 1;
            let idx = last.max(snap_index) + 1 + rng.below(20);
            MOp::ApplySnapshot(snapshot(idx, *term, &[1, 2, 3]))
        }
        91..=94 => MOp::ConfState(ConfState::from_voters(vec![1, 2 + rng.below(6)])),
        95 if rng.chance(30) => MOp::Remove,
        _ => MOp::HardState(HardState {
            term: *term,
            vote: 1,
            commit: last,
        }),
    }
}

/// `n` entries of `size` bytes each from `from`, their bytes telling the
/// group, the index and the term apart.
fn big_entries(gid: u64, from: u64, n: u64, term: u64, size: usize) -> Vec<Entry> {
    (from..from + n)
        .map(|i| {
            // (Zeros, then a fill: `vec![b; n]` is a loop in a debug build.)
            let mut data = vec![0u8; size];
            data.fill((gid * 31 + i * 7 + term) as u8);
            data[..8].copy_from_slice(&i.to_le_bytes());
            Entry::new(term, i, Bytes::from(data))
        })
        .collect()
}

/// Writes `batch` to the store; `Ok(synced)` if it returned success.
fn write(store: &DiskStore, batch: &Batch) -> Result<bool, raftlet_disk::DiskError> {
    if let [(gid, MOp::CreateSnapshot(i, cs, d))] = batch.as_slice() {
        store.create_snapshot(*gid, *i, cs.clone(), d.clone())?;
        return Ok(true);
    }
    let mut b = WriteBatch::new();
    for (gid, op) in batch {
        match op {
            MOp::Append(e) => b.append(*gid, e)?,
            MOp::HardState(hs) => b.set_hard_state(*gid, hs),
            MOp::ConfState(cs) => b.set_conf_state(*gid, cs).expect("a valid configuration"),
            MOp::ApplySnapshot(s) => b.apply_snapshot(*gid, s),
            MOp::Compact(i) => b.compact(*gid, *i),
            MOp::Remove => b.remove_group(*gid),
            MOp::CreateSnapshot(..) => unreachable!(),
        }
    }
    let sync = b.must_sync();
    store.write(&b)?;
    Ok(sync)
}

/// What a run went through, to show that every path was taken.
#[derive(Debug, Default)]
struct Tally {
    crashes: u64,
    torn: u64,
    fatal: u64,
    failed_writes: u64,
    /// Recoveries that kept unsynced batches past the last acknowledged one.
    kept_unsynced: u64,
    /// Batches with 256 KiB of entry data or more, written, failed, and
    /// with more than 2 MiB.
    large: u64,
    large_failed: u64,
    multi_chunk: u64,
}

/// The bytes of entry data in `batch`.
fn data_bytes(batch: &Batch) -> usize {
    batch
        .iter()
        .map(|(_, op)| match op {
            MOp::Append(ents) => ents.iter().map(|e| e.data().len()).sum(),
            _ => 0,
        })
        .sum()
}

fn run_seed(seed: u64, tally: &mut Tally) {
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0xABCD);
    let fs = FaultFs::new();
    let opts = Options {
        segment_size: [2048, 4096, 16384][rng.below(3) as usize],
        rewrite_max_bytes: [0, 1024, 8192][rng.below(3) as usize],
        // Every record direct, the larger ones, the default, or none.
        direct_min_bytes: [0, 512, 64 << 10, u64::MAX][rng.below(4) as usize],
        // No read cache, a small one, the default.
        read_cache_bytes: [0, 2048, 64 << 20][rng.below(3) as usize],
    };
    let big = rng.chance(25);
    let mut store = open(&fs, opts).unwrap();
    // Batches whose effect is in the store (durable or not), in order.
    let mut batches: Vec<Batch> = Vec::new();
    // Batches known durable: the prefix up to the last synced success.
    let mut acked = 0usize;
    let mut terms: BTreeMap<u64, u64> = BTreeMap::new();
    const STEPS: usize = 160;
    for step in 0..STEPS {
        if rng.chance(6) {
            fs.power_off_after(rng.below(10));
        }
        if rng.chance(5) {
            let op = if rng.chance(50) {
                FaultOp::Write
            } else {
                FaultOp::Sync
            };
            let code = if rng.chance(50) { EIO } else { ENOSPC };
            fs.fail_after(op, rng.below(4), code);
        }
        let mut batch = Batch::new();
        // The model after every batch so far (replayed: MemoryStorage
        // clones share their contents).
        let mut staged = replay(&batches);
        let n_ops = 1 + rng.below(4);
        for _ in 0..n_ops {
            let gid = rng.below(5);
            let t = terms.entry(gid).or_insert(1);
            let op = gen_op(&mut rng, &staged, gid, t, big);
            if let MOp::CreateSnapshot(..) = op {
                if batch.is_empty() {
                    batch.push((gid, op));
                    break;
                }
                continue;
            }
            apply_model(&mut staged, gid, &op);
            batch.push((gid, op));
        }
        if let [(gid, op @ MOp::CreateSnapshot(..))] = batch.as_slice() {
            apply_model(&mut staged, *gid, op);
        }
        let res = write(&store, &batch);
        fs.clear_faults();
        let data = data_bytes(&batch);
        if data >= 256 << 10 {
            tally.large += 1;
            tally.large_failed += u64::from(res.is_err());
            tally.multi_chunk += u64::from(data > 2 << 20);
        }
        let mut failed = false;
        match res {
            Ok(synced) => {
                // What the store answers now (its index, the read cache,
                // the files) is the model's state after this batch (unless
                // the power is off, and reads fail).
                if !fs.is_powered_off() {
                    if let Err(why) = matches(&store, &staged) {
                        panic!("seed {seed} step {step}: after a successful write: {why}");
                    }
                }
                batches.push(batch);
                if synced {
                    acked = batches.len();
                }
            }
            Err(e) if e.is_fatal() || fs.is_powered_off() => {
                // Maybe written, maybe not; the log takes no more writes.
                assert!(
                    matches!(e.os_error(), Some(EIO) | Some(ENOSPC)),
                    "seed {seed} step {step}: {e}"
                );
                batches.push(batch);
                failed = true;
                tally.fatal += 1;
            }
            Err(e) => {
                // A failed write leaves the store as it was, and it goes on.
                let code = e.os_error();
                assert!(
                    code == Some(EIO) || code == Some(ENOSPC),
                    "seed {seed} step {step}: error without a fault: {e}"
                );
                tally.failed_writes += 1;
                if let Err(why) = matches(&store, &replay(&batches)) {
                    panic!(
                        "seed {seed} step {step}: a failed write ({e}) changed the store: {why}"
                    );
                }
            }
        }
        // Every seed ends with a crash and a check.
        let crash_now = failed || rng.chance(3) || step == STEPS - 1;
        if !crash_now {
            continue;
        }
        tally.crashes += 1;
        drop(store);
        let mode = if rng.chance(50) {
            CrashMode::LoseUnsynced
        } else {
            CrashMode::Torn { seed: rng.next() }
        };
        if let CrashMode::Torn { .. } = mode {
            tally.torn += 1;
        }
        fs.crash(mode);
        store = open(&fs, opts).unwrap_or_else(|e| {
            panic!("seed {seed} step {step}: reopen after a crash ({mode:?}) failed: {e}")
        });
        let k = (acked..=batches.len())
            .rev()
            .find(|&k| matches(&store, &replay(&batches[..k])).is_ok())
            .unwrap_or_else(|| {
                let why = matches(&store, &replay(&batches[..acked])).unwrap_err();
                panic!(
                    "seed {seed} step {step}: after {mode:?} the store matches no prefix of \
                     batches {acked}..={} (synced {acked}); against {acked}: {why}",
                    batches.len()
                )
            });
        if k > acked {
            tally.kept_unsynced += 1;
        }
        batches.truncate(k);
        acked = k;
    }
}

#[test]
fn restart_after_random_crashes_recovers_every_synced_write_and_nothing_unwritten() {
    let seeds: u64 = std::env::var("CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    let mut tally = Tally::default();
    for seed in 0..seeds {
        run_seed(seed, &mut tally);
    }
    eprintln!("{seeds} seeds: {tally:?}");
    assert!(
        tally.torn > 0 && tally.fatal > 0 && tally.failed_writes > 0 && tally.kept_unsynced > 0
    );
    if seeds >= 100 {
        assert!(tally.large_failed > 0 && tally.multi_chunk > 0, "{tally:?}");
    }
}
