//! The store's planted bugs (feature `bug-injection`) do what they say: a
//! store that skips the sync of its log, or the directory sync of a new
//! segment, loses writes it reported durable in a crash, and the same
//! store without the bug does not. The simulator relies on these to show
//! its checks catch a store that breaks durability (tests/sim,
//! `--bug disk_skip_sync` and `--bug disk_skip_dir_sync`).
//!
//! Run with `cargo test -p raftlet-disk --features bug-injection --test
//! planted_bugs` (part of `make test-rust`).

mod common;

use common::{entries, open, small};
use raftlet::pb::HardState;
use raftlet::Storage;
use raftlet_disk::{CrashMode, DiskBugs, FaultFs, Options};

/// Appends `n` entries of term 1 to group 1, one durable write each, then
/// crashes and reopens: returns the last index the store still holds and
/// the number of segment files created before the crash.
fn durable_appends_then_crash(bugs: DiskBugs, opts: Options, n: u64) -> (u64, usize) {
    let fs = FaultFs::new();
    let store = open(&fs, opts).unwrap();
    store.plant_bugs(bugs);
    let g = store.group(1);
    g.set_hard_state(&HardState {
        term: 1,
        vote: 1,
        commit: 0,
    })
    .unwrap();
    for i in 1..=n {
        g.append(&entries(1, i, 1, 1)).unwrap();
    }
    assert_eq!(g.last_index().unwrap(), n);
    let segments = fs
        .files(&common::dir())
        .iter()
        .filter(|f| f.ends_with(".log"))
        .count();
    drop(g);
    drop(store);
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, opts).unwrap();
    let last = store.group(1).last_index().unwrap();
    (last, segments)
}

#[test]
fn without_a_planted_bug_every_durable_write_survives() {
    let (last, segments) = durable_appends_then_crash(DiskBugs::default(), small(), 200);
    assert!(segments > 1, "the log never moved to a new segment");
    assert_eq!(last, 200);
}

#[test]
fn skipping_the_sync_loses_durable_writes() {
    let bugs = DiskBugs {
        skip_sync: true,
        ..DiskBugs::default()
    };
    // One segment: only the skipped record syncs are at stake.
    let big = Options {
        segment_size: 1 << 20,
        rewrite_max_bytes: 0,
        ..Options::default()
    };
    let (last, _) = durable_appends_then_crash(bugs, big, 50);
    assert!(last < 50, "every write survived: the sync was not skipped");
}

#[test]
fn skipping_the_directory_sync_of_a_new_segment_loses_its_records() {
    let bugs = DiskBugs {
        skip_dir_sync: true,
        ..DiskBugs::default()
    };
    // Segments are never deleted (nothing compacts), so nothing else syncs
    // the directory after a segment switch.
    let opts = Options {
        rewrite_max_bytes: 0,
        ..small()
    };
    let (last, segments) = durable_appends_then_crash(bugs, opts, 200);
    assert!(segments > 1, "the log never moved to a new segment");
    assert!(last < 200, "every write survived: the directory was synced");
    assert!(last > 0, "the first segment was lost too");
}
