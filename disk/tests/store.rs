//! DiskStore behaves as MemoryStorage does, keeps it across a restart,
//! commits many groups with one sync and gives space back as groups
//! compact.

mod common;

use common::*;
use raftlet::pb::{ConfState, HardState};
use raftlet::{MemoryStorage, Storage, StorageError};
use raftlet_disk::{CrashMode, DiskError, FaultFs, WriteBatch};

/// The same operations on a DiskGroup and on MemoryStorage give the same
/// view, before and after a restart; refused operations change neither.
#[test]
fn mirrors_memory_storage_and_survives_restart() {
    let fs = FaultFs::new();
    let store = open(&fs, small()).unwrap();
    let g = store.group(7);
    let m = MemoryStorage::new();
    assert_eq!(view(&g), model_view(&m));

    g.set_conf_state(&ConfState::from_voters([1, 2, 3]))
        .unwrap();
    raftlet_disk::AnyStorage::Memory(m.clone())
        .set_conf_state(ConfState::from_voters([1, 2, 3]))
        .unwrap();
    g.append(&entries(7, 1, 10, 1)).unwrap();
    m.wl().append(&entries(7, 1, 10, 1)).unwrap();
    // Replace a suffix with a later term.
    g.append(&entries(7, 6, 8, 2)).unwrap();
    m.wl().append(&entries(7, 6, 8, 2)).unwrap();
    let hs = HardState {
        term: 2,
        vote: 1,
        commit: 9,
    };
    g.set_hard_state(&hs).unwrap();
    m.wl().set_hard_state(hs);
    g.compact(4).unwrap();
    m.wl().compact(4).unwrap();
    let s1 = g
        .create_snapshot(8, None, Some(bytes::Bytes::from_static(b"sm@8")))
        .unwrap();
    let s2 = m
        .wl()
        .create_snapshot(8, None, Some(bytes::Bytes::from_static(b"sm@8")))
        .unwrap();
    assert_eq!(s1, s2);
    assert_eq!(view(&g), model_view(&m));

    // Refusals: same error, nothing moves.
    let before = view(&g);
    assert_eq!(
        g.append(&entries(7, 20, 1, 2)),
        Err(DiskError::Storage(StorageError::Unavailable))
    );
    assert_eq!(
        g.compact(3),
        Err(DiskError::Storage(StorageError::Compacted))
    );
    assert_eq!(
        g.compact(99),
        Err(DiskError::Storage(StorageError::Unavailable))
    );
    assert_eq!(
        g.create_snapshot(7, None, None),
        Err(DiskError::Storage(StorageError::SnapshotOutOfDate))
    );
    assert_eq!(
        g.apply_snapshot(&snapshot(8, 2, &[1])),
        Err(DiskError::Storage(StorageError::SnapshotOutOfDate))
    );
    let mut bad = entries(7, 14, 3, 2);
    bad[2].index = 20;
    assert!(matches!(g.append(&bad), Err(DiskError::InvalidInput(_))));
    assert_eq!(view(&g), before);
    assert_eq!(g.entries(2, 5, u64::MAX), m.entries(2, 5, u64::MAX));
    assert_eq!(g.entries(5, 15, u64::MAX), m.entries(5, 15, u64::MAX));
    assert_eq!(g.term(3), m.term(3));
    assert_eq!(g.term(14), m.term(14));

    // A snapshot from a leader replaces the log.
    g.apply_snapshot(&snapshot(20, 3, &[1, 2])).unwrap();
    m.wl().apply_snapshot(snapshot(20, 3, &[1, 2])).unwrap();
    g.append(&entries(7, 21, 3, 3)).unwrap();
    m.wl().append(&entries(7, 21, 3, 3)).unwrap();
    assert_eq!(view(&g), model_view(&m));

    drop(g);
    drop(store);
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, small()).unwrap();
    assert_eq!(view(&store.group(7)), model_view(&m));
    assert_eq!(store.groups(), vec![7]);
}

/// Entry reads honour max_size as MemoryStorage does (at least one entry).
#[test]
fn entries_respect_max_size() {
    let fs = FaultFs::new();
    let store = open(&fs, medium()).unwrap();
    let g = store.group(1);
    let m = MemoryStorage::new();
    let ents = entries(1, 1, 20, 1);
    g.append(&ents).unwrap();
    m.wl().append(&ents).unwrap();
    for max in [0, 1, 30, 100, 250, 1000, u64::MAX] {
        assert_eq!(g.entries(3, 18, max), m.entries(3, 18, max), "max {max}");
    }
}

/// A batch of many groups' Readies costs one sync; a batch that does not
/// fit one group writes nothing for any.
#[test]
fn group_commit_syncs_once_for_many_groups() {
    let fs = FaultFs::new();
    let store = open(&fs, medium()).unwrap();
    let before = fs.stats().syncs;
    let mut b = WriteBatch::new();
    for gid in 0..100 {
        b.append(gid, &entries(gid, 1, 3, 1)).unwrap();
        b.set_hard_state(
            gid,
            &HardState {
                term: 1,
                vote: 1,
                commit: 2,
            },
        );
    }
    assert!(b.must_sync());
    store.write(&b).unwrap();
    assert_eq!(fs.stats().syncs - before, 1);
    assert_eq!(store.groups().len(), 100);

    let mut b = WriteBatch::new();
    b.append(5, &entries(5, 4, 1, 1)).unwrap();
    b.append(6, &entries(6, 9, 1, 1)).unwrap(); // gap
    assert_eq!(
        store.write(&b),
        Err(DiskError::Storage(StorageError::Unavailable))
    );
    assert_eq!(store.group(5).last_index(), Ok(3));

    drop(store);
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, medium()).unwrap();
    for gid in 0..100 {
        let g = store.group(gid);
        assert_eq!(g.last_index(), Ok(3));
        assert_eq!(g.entries(1, 4, u64::MAX).unwrap(), entries(gid, 1, 3, 1));
        assert_eq!(g.hard_state().commit, 2);
    }
}

/// An unsynced write is lost at a crash; the next synced one carries it.
#[test]
fn unsynced_writes_are_lost_and_carried_by_the_next_sync() {
    let fs = FaultFs::new();
    let store = open(&fs, medium()).unwrap();
    let g = store.group(1);
    g.append(&entries(1, 1, 5, 1)).unwrap();
    g.compact(2).unwrap(); // not synced
    drop((g, store));
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, medium()).unwrap();
    let g = store.group(1);
    assert_eq!(g.first_index(), Ok(1));
    g.compact(2).unwrap();
    let mut b = WriteBatch::new();
    b.set_must_sync(true);
    store.write(&b).unwrap(); // an empty synced batch syncs what came before
    drop((g, store));
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, medium()).unwrap();
    assert_eq!(store.group(1).first_index(), Ok(3));
}

/// Segments are deleted once no group needs them: groups that compact free
/// them without copying; a small idle group is rewritten rather than
/// pinning the oldest segment forever; a large uncompacted one pins it.
#[test]
fn space_is_reclaimed_as_groups_compact() {
    let fs = FaultFs::new();
    let store = open(&fs, small()).unwrap();
    // Group 1 is idle with a small log from the start.
    store.group(1).append(&entries(1, 1, 3, 1)).unwrap();
    let busy = store.group(2);
    let mut last = 0;
    for round in 0..60 {
        let ents = entries(2, last + 1, 10, 1);
        busy.append(&ents).unwrap();
        last += 10;
        if round % 5 == 4 {
            busy.compact(last - 5).unwrap();
        }
    }
    let st = store.stats();
    assert!(
        st.segments <= 4,
        "{} segments left for a compacted log: {st:?}",
        st.segments
    );
    assert_eq!(
        store.group(1).entries(1, 4, u64::MAX).unwrap(),
        entries(1, 1, 3, 1)
    );
    // A group with more live entries than the rewrite budget pins.
    let big = store.group(3);
    big.append(&entries(3, 1, 200, 1)).unwrap();
    let pinned_at = segments(&fs)[0].clone();
    for _ in 0..30 {
        busy.append(&entries(2, last + 1, 10, 1)).unwrap();
        last += 10;
        busy.compact(last - 5).unwrap();
    }
    assert!(segments(&fs).len() > 2);
    assert!(segments(&fs)[0] <= pinned_at);
    big.compact(200).unwrap();
    busy.append(&entries(2, last + 1, 10, 1)).unwrap();
    store.purge().unwrap();
    assert!(segments(&fs).len() <= 3, "{:?}", segments(&fs));

    let want1 = view(&store.group(1));
    let want2 = view(&store.group(2));
    let want3 = view(&store.group(3));
    drop((busy, big, store));
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, small()).unwrap();
    assert_eq!(view(&store.group(1)), want1);
    assert_eq!(view(&store.group(2)), want2);
    assert_eq!(view(&store.group(3)), want3);
}

/// A snapshot's file replaces the previous one once its record is durable.
#[test]
fn snapshot_files_are_replaced_and_removed_groups_leave_nothing() {
    let fs = FaultFs::new();
    let store = open(&fs, medium()).unwrap();
    let g = store.group(4);
    g.apply_snapshot(&snapshot(10, 2, &[1, 2, 3])).unwrap();
    g.apply_snapshot(&snapshot(20, 3, &[1, 2, 3])).unwrap();
    let snaps: Vec<_> = fs
        .files(&dir())
        .into_iter()
        .filter(|n| n.ends_with(".snap"))
        .collect();
    assert_eq!(snaps.len(), 1, "{snaps:?}");
    assert_eq!(g.snapshot(0, 0).unwrap(), snapshot(20, 3, &[1, 2, 3]));
    assert_eq!(g.first_index(), Ok(21));
    assert_eq!(g.term(20), Ok(3));
    let mut b = WriteBatch::new();
    b.remove_group(4);
    store.write(&b).unwrap();
    assert!(store.groups().is_empty());
    assert!(!fs.files(&dir()).iter().any(|n| n.ends_with(".snap")));
    drop((g, store));
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, medium()).unwrap();
    assert!(store.groups().is_empty());
}

/// Why: a DiskGroup says its `term` and `entries_into` check the log's
/// range themselves (`Storage::checks_range`), so the node asks it
/// directly without reading first_index and last_index first. Every index, for a group not
/// written yet, one with entries and one compacted (before and after a
/// restart), must get what the range rule says: Compacted below
/// first_index - 1, Unavailable past last_index, the term in between.
#[test]
fn reads_check_the_range_themselves() {
    let check = |what: &str, g: &dyn Storage| {
        assert!(g.checks_range(), "{what}");
        let (first, last) = (g.first_index().unwrap(), g.last_index().unwrap());
        for i in 0..=last + 3 {
            let got = g.term(i);
            if i + 1 < first {
                assert!(
                    matches!(got, Err(raftlet::Error::Store(StorageError::Compacted))),
                    "{what}: term({i}) = {got:?}"
                );
            } else if i > last {
                assert!(
                    matches!(got, Err(raftlet::Error::Store(StorageError::Unavailable))),
                    "{what}: term({i}) = {got:?}"
                );
            } else {
                assert!(got.is_ok(), "{what}: term({i}) = {got:?}");
            }
        }
        // Entries too: a read succeeds exactly when its range is in the
        // log, and leaves `out` alone when it fails.
        for lo in 0..=last + 2 {
            for hi in lo + 1..=last + 3 {
                let mut out = vec![entry(9, 99, 9)];
                let got = g.entries_into(lo, hi, u64::MAX, &mut out);
                let in_range = lo >= first && hi <= last + 1;
                assert_eq!(
                    got.is_ok(),
                    in_range,
                    "{what}: entries [{lo}, {hi}) = {got:?}"
                );
                let want = if in_range { (hi - lo) as usize + 1 } else { 1 };
                assert_eq!(out.len(), want, "{what}: entries [{lo}, {hi})");
            }
        }
    };
    let fs = FaultFs::new();
    let store = open(&fs, small()).unwrap();
    check("a group not written yet", &store.group(7));
    let g = store.group(1);
    g.append(&entries(1, 1, 20, 3)).unwrap();
    check("entries", &g);
    assert_eq!(g.term(20).unwrap(), 3);
    g.compact(12).unwrap();
    check("compacted", &g);
    assert_eq!(g.term(12).unwrap(), 3);
    drop((g, store));
    let store = open(&fs, small()).unwrap();
    check("compacted, after a restart", &store.group(1));
}

/// Why: a host writes a light Ready's commit index (`set_commit`), then, in
/// the order the Readies were taken, the hard state of a Ready taken before
/// it, whose commit is older. The stored commit must not go back: a state
/// machine made durable at the newer index would be refused at restart.
/// Checked for a Ready persisted alone, for a batch of several groups (one
/// lowered, one raised), for two hard states of one group in one batch,
/// after a crash, and for the in-memory storage behind the same calls.
#[test]
fn a_stored_commit_never_goes_back() {
    use raftlet::Ready;
    use raftlet_disk::AnyStorage;
    let ready = |term: u64, vote: u64, commit: u64| {
        let mut rd = Ready::default();
        rd.hard_state = Some(HardState { term, vote, commit });
        rd.must_sync = true;
        rd
    };
    let hs = |term: u64, vote: u64, commit: u64| HardState { term, vote, commit };
    let fs = FaultFs::new();
    let store = open(&fs, small()).unwrap();
    let (g1, g2) = (store.group(1), store.group(2));
    for g in [&g1, &g2] {
        g.append(&entries(g.id(), 1, 10, 1)).unwrap();
        g.set_hard_state(&hs(1, 1, 3)).unwrap();
    }
    g1.set_commit(7).unwrap();
    g1.persist_ready(&ready(2, 2, 4)).unwrap();
    assert_eq!(
        g1.hard_state(),
        hs(2, 2, 7),
        "term and vote new, commit kept"
    );
    let mut b = WriteBatch::new();
    b.add_ready(1, &ready(3, 1, 5)).unwrap();
    b.add_ready(2, &ready(3, 1, 9)).unwrap();
    b.add_ready(1, &ready(3, 1, 8)).unwrap();
    b.add_ready(1, &ready(3, 1, 6)).unwrap();
    store.write(&b).unwrap();
    assert_eq!(g1.hard_state(), hs(3, 1, 8));
    assert_eq!(g2.hard_state(), hs(3, 1, 9));
    drop((g1, g2, store));
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, small()).unwrap();
    assert_eq!(store.group(1).hard_state(), hs(3, 1, 8));
    assert_eq!(store.group(2).hard_state(), hs(3, 1, 9));

    let m = AnyStorage::Memory(MemoryStorage::new());
    m.append(&entries(1, 1, 10, 1)).unwrap();
    m.set_commit(7).unwrap();
    m.persist_ready(&ready(2, 2, 4)).unwrap();
    assert_eq!(m.hard_state(), hs(2, 2, 7));
}

/// A snapshot above the commit index the group holds is refused: the entry
/// stored there may be an older one that a Ready in flight replaces (a
/// follower's tail that a new leader's entries overwrite), and the snapshot
/// would record its term. Nothing is written, the refusal holds
/// after a restart, and the same snapshot is taken once the commit index
/// covers it.
#[test]
fn a_snapshot_above_the_stored_commit_is_refused() {
    let fs = FaultFs::new();
    {
        let store = open(&fs, small()).unwrap();
        let g = store.group(3);
        g.set_conf_state(&ConfState::from_voters([1, 2, 3]))
            .unwrap();
        g.append(&entries(3, 1, 6, 1)).unwrap();
        g.set_hard_state(&HardState {
            term: 1,
            vote: 1,
            commit: 3,
        })
        .unwrap();
        let before = view(&g);
        let files = fs.stats().writes;
        assert_eq!(
            g.create_snapshot(5, None, Some(bytes::Bytes::from_static(b"sm@5"))),
            Err(DiskError::SnapshotUncommitted {
                index: 5,
                commit: 3
            })
        );
        // The storage's own refusals come first.
        assert_eq!(
            g.create_snapshot(9, None, None),
            Err(DiskError::Storage(StorageError::Unavailable))
        );
        assert_eq!(view(&g), before);
        assert_eq!(fs.stats().writes, files, "a refused snapshot wrote");
        // Through the node-facing error type, as the C ABI reports it.
        let e: raftlet::Error = DiskError::SnapshotUncommitted {
            index: 5,
            commit: 3,
        }
        .into();
        assert_eq!(e, raftlet::Error::Store(StorageError::Unavailable));
        // Up to the commit index is allowed.
        let s = g.create_snapshot(3, None, None).unwrap();
        assert_eq!((s.metadata.index, s.metadata.term), (3, 1));
    }
    let store = open(&fs, small()).unwrap();
    let g = store.group(3);
    assert_eq!(g.snapshot_index(), 3);
    assert!(matches!(
        g.create_snapshot(5, None, None),
        Err(DiskError::SnapshotUncommitted {
            index: 5,
            commit: 3
        })
    ));
    g.set_hard_state(&HardState {
        term: 1,
        vote: 1,
        commit: 6,
    })
    .unwrap();
    let s = g.create_snapshot(5, None, None).unwrap();
    assert_eq!(s.metadata.index, 5);
}
