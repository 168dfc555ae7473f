//! 10,000 groups in one process on the real filesystem: the files the store
//! holds open do not grow with the number of groups, the index costs a few
//! hundred bytes per group, and a restart recovers every group. The figures
//! are printed (`cargo test -p raftlet-disk --test many_groups -- --nocapture`).

mod common;

use std::time::Instant;

use common::*;
use raftlet::pb::{ConfState, HardState};
use raftlet::Storage;
use raftlet_disk::{DiskStore, Options, StdFs, WriteBatch};

const GROUPS: u64 = 10_000;
const PER_BATCH: u64 = 1_000;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn hs(gid: u64) -> HardState {
    HardState {
        term: 1 + gid % 3,
        vote: 1 + gid % 3,
        commit: 2,
    }
}

fn voters(gid: u64) -> ConfState {
    ConfState::from_voters(vec![1, 2, 3 + gid % 2])
}

#[test]
fn ten_thousand_groups_share_a_few_files_and_all_come_back() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = Options {
        segment_size: 8 << 20,
        ..Options::default()
    };
    let fds_before = open_fds();
    let rss_before = rss_bytes();
    let store = DiskStore::open_with(std::sync::Arc::new(StdFs), tmp.path(), opts).unwrap();
    let started = Instant::now();
    let mut fds_at_first_batch = 0;
    for chunk in 0..GROUPS / PER_BATCH {
        let mut b = WriteBatch::new();
        for gid in chunk * PER_BATCH..(chunk + 1) * PER_BATCH {
            b.set_conf_state(gid, &voters(gid)).expect("valid voters");
            b.append(gid, &entries(gid, 1, 3, 1)).unwrap();
            b.set_hard_state(gid, &hs(gid));
        }
        store.write(&b).unwrap();
        if chunk == 0 {
            fds_at_first_batch = open_fds();
        }
    }
    // A second round crosses segments (each new one opens with a
    // checkpoint of all 10,000 groups) and compacts the first round away.
    for chunk in 0..GROUPS / PER_BATCH {
        let mut b = WriteBatch::new();
        for gid in chunk * PER_BATCH..(chunk + 1) * PER_BATCH {
            b.append(gid, &entries(gid, 4, 10, 1)).unwrap();
            b.compact(gid, 3);
        }
        store.write(&b).unwrap();
    }
    let write_time = started.elapsed();
    // Reading every group opens nothing either.
    for gid in 0..GROUPS {
        assert_eq!(store.group(gid).entries(4, 14, u64::MAX).unwrap().len(), 10);
    }
    let fds_after = open_fds();
    let stats = store.stats();
    let rss_after = rss_bytes();
    println!(
        "{GROUPS} groups: {} files open by the store ({} process fds before, {} after {PER_BATCH} \
         groups, {} after {GROUPS}); {} segments, {} log bytes; index {} bytes/group (10 entries \
         each); {} bytes of recent records kept for reads; process RSS grew {} bytes/group; \
         written in {:?} ({} synced batches)",
        stats.open_files,
        fds_before,
        fds_at_first_batch,
        fds_after,
        stats.segments,
        stats.log_bytes,
        stats.index_bytes / GROUPS,
        stats.read_cache_bytes,
        rss_after.saturating_sub(rss_before) / GROUPS,
        write_time,
        2 * GROUPS / PER_BATCH,
    );
    // The log moved past its first segment, and reclaimed it (the first
    // round is compacted; what pinned it was small enough to rewrite).
    let seg = last_segment(tmp.path());
    assert_ne!(
        seg.file_name().unwrap(),
        "0000000000000001.log",
        "the test should cross segments"
    );
    assert!(!tmp.path().join("0000000000000001.log").exists());
    assert_eq!(stats.groups, GROUPS as usize);
    // (The segment's direct-write descriptor opens with the first record
    // of a mebibyte or more, which may come after the first batch.)
    assert!(
        fds_after <= fds_at_first_batch + 1,
        "open files grew with the number of groups: {fds_at_first_batch} -> {fds_after}"
    );
    assert!(stats.open_files <= 4, "{stats:?}");
    // The store's own count is the descriptors it holds (the lock, the
    // segment, its direct-write descriptor): this test is alone in its
    // process.
    assert_eq!(fds_after - fds_before, stats.open_files, "{stats:?}");
    assert!(fds_after <= fds_before + 4, "{fds_before} -> {fds_after}");
    assert!(
        stats.index_bytes / GROUPS < 1024,
        "index {} bytes per group",
        stats.index_bytes / GROUPS
    );

    drop(store);
    let started = Instant::now();
    let store = DiskStore::open_with(std::sync::Arc::new(StdFs), tmp.path(), opts).unwrap();
    let reopen = started.elapsed();
    assert_eq!(store.groups().len(), GROUPS as usize);
    for gid in 0..GROUPS {
        let g = store.group(gid);
        let st = g.initial_state().unwrap();
        assert_eq!(st.hard_state, hs(gid), "group {gid}");
        assert_eq!(st.conf_state, voters(gid), "group {gid}");
        assert_eq!(g.first_index(), Ok(4), "group {gid}");
        assert_eq!(g.term(3), Ok(1), "group {gid}");
        assert_eq!(
            g.entries(4, 14, u64::MAX).unwrap(),
            entries(gid, 4, 10, 1),
            "group {gid}"
        );
    }
    println!("restart recovered all {GROUPS} groups in {reopen:?}");
}
