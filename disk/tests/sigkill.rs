//! Real processes: a child (this executable, re-invoked) appends entries
//! and hard states to a store on a real directory and prints an
//! acknowledgement after each synced write; the parent SIGKILLs it at a
//! random moment, at least 200 times, and after each kill reopens the store
//! and checks that every acknowledged entry and hard state is there and
//! intact. Bounded to about a minute.
//!
//! `SIGKILL_ROUNDS=n` sets the number of kills (default 220).

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::entries;
use raftlet::pb::HardState;
use raftlet::Storage;
use raftlet_disk::{DiskStore, Options, StdFs, WriteBatch};

const CHILD_ENV: &str = "RAFTLET_DISK_SIGKILL_CHILD";
const GROUPS: u64 = 4;

fn options() -> Options {
    // Small segments: the child switches segments and reclaims them often.
    // Records of 1 KiB or more are written past the page cache (where the
    // filesystem allows it), smaller ones through it.
    Options {
        segment_size: 64 << 10,
        rewrite_max_bytes: 16 << 10,
        direct_min_bytes: 1024,
        read_cache_bytes: 4 << 10,
    }
}

fn open(dir: &Path) -> DiskStore {
    DiskStore::open_with(Arc::new(StdFs), dir, options())
        .unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

/// The child: writes until it is killed.
fn child(dir: &Path, seed: u64) -> ! {
    let store = open(dir);
    let mut rng = seed | 1;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut last: Vec<u64> = (0..GROUPS)
        .map(|g| store.group(g).last_index().unwrap())
        .collect();
    let out = std::io::stdout();
    loop {
        // One or two groups per batch, one sync.
        let mut b = WriteBatch::new();
        let mut acks = Vec::new();
        for _ in 0..1 + next() % 2 {
            let g = next() % GROUPS;
            if acks.iter().any(|&(a, _)| a == g) {
                continue;
            }
            let n = 1 + next() % 16;
            b.append(g, &entries(g, last[g as usize] + 1, n, 1))
                .unwrap();
            last[g as usize] += n;
            let commit = last[g as usize];
            b.set_hard_state(
                g,
                &HardState {
                    term: 1,
                    vote: 1,
                    commit,
                },
            );
            if commit > 300 && next() % 8 == 0 {
                b.compact(g, commit - 200);
            }
            acks.push((g, commit));
        }
        store.write(&b).unwrap();
        let mut o = out.lock();
        for (g, commit) in acks {
            writeln!(o, "ack {g} {commit}").unwrap();
        }
        o.flush().unwrap();
    }
}

/// Checks the store against the highest acknowledged index of each group.
fn verify(dir: &Path, acked: &BTreeMap<u64, u64>, round: usize) {
    let store = open(dir);
    for g in 0..GROUPS {
        let grp = store.group(g);
        let want = acked.get(&g).copied().unwrap_or(0);
        let last = grp.last_index().unwrap();
        assert!(
            last >= want,
            "round {round}: group {g} has {last} entries, {want} were acknowledged"
        );
        let first = grp.first_index().unwrap();
        if last >= first {
            // Every entry there is one the child wrote, intact.
            let got = grp.entries(first, last + 1, u64::MAX).unwrap();
            assert_eq!(
                got,
                entries(g, first, last - first + 1, 1),
                "round {round}: group {g}"
            );
        }
        let hs = grp.hard_state();
        assert!(
            hs.commit >= want && hs.commit <= last,
            "round {round}: group {g}: hard state {hs:?}, acknowledged {want}, last {last}"
        );
    }
}

fn parent() {
    let rounds: usize = std::env::var("SIGKILL_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(220);
    let deadline = Instant::now() + Duration::from_secs(90);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let exe = std::env::current_exe().unwrap();
    let mut acked: BTreeMap<u64, u64> = BTreeMap::new();
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut total_acks = 0u64;
    let started = Instant::now();
    for round in 0..rounds {
        assert!(
            Instant::now() < deadline,
            "only {round} kills before the deadline"
        );
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let mut child = Command::new(&exe)
            .env(CHILD_ENV, &dir)
            .env("SIGKILL_CHILD_SEED", rng.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        std::thread::sleep(Duration::from_micros(rng % 60_000));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(
            !status.success(),
            "round {round}: the child exited by itself: {status}"
        );
        reader.join().unwrap();
        // Only whole lines count: each was printed after its sync returned.
        for line in rx.try_iter() {
            let mut parts = line.split_whitespace();
            if parts.next() != Some("ack") {
                continue;
            }
            let g: u64 = parts.next().unwrap().parse().unwrap();
            let idx: u64 = parts.next().unwrap().parse().unwrap();
            let a = acked.entry(g).or_default();
            *a = (*a).max(idx);
            total_acks += 1;
        }
        verify(&dir, &acked, round);
    }
    println!(
        "sigkill: {rounds} kills in {:?}, {total_acks} acknowledged writes, all present after \
         every restart (last indexes {acked:?})",
        started.elapsed()
    );
    assert!(total_acks > 0, "the child never acknowledged a write");
    println!("sigkill: 1 passed, 0 failed");
}

fn main() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        let seed = std::env::var("SIGKILL_CHILD_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        child(Path::new(&dir), seed);
    }
    // cargo passes libtest's flags (--list, filters); `--list` must not
    // run the test.
    if std::env::args().any(|a| a == "--list") {
        println!("sigkill: test");
        return;
    }
    parent();
}
