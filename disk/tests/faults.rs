//! Failing writes and syncs: EIO and ENOSPC come back as typed errors; a
//! failed write leaves the store as it was and it goes on; a failed sync
//! fails the log for good (never retried), while reads keep working. And
//! the directory lock refuses a second open.

mod common;

use common::*;
use raftlet::pb::HardState;
use raftlet::Storage;
use raftlet_disk::{CrashMode, DiskError, DiskStore, FaultFs, FaultOp, Options, EIO, ENOSPC};

fn hs(commit: u64) -> HardState {
    HardState {
        term: 1,
        vote: 1,
        commit,
    }
}

#[test]
fn a_failed_write_is_a_typed_error_and_changes_nothing() {
    for code in [EIO, ENOSPC] {
        let fs = FaultFs::new();
        let store = open(&fs, medium()).unwrap();
        let g = store.group(1);
        g.append(&entries(1, 1, 3, 1)).unwrap();
        fs.fail_after(FaultOp::Write, 0, code);
        let err = g.append(&entries(1, 4, 3, 1)).unwrap_err();
        assert!(
            matches!(&err, DiskError::Io { op: "write", code: Some(c), .. } if *c == code),
            "{err:?}"
        );
        assert!(!err.is_fatal());
        assert_eq!(g.last_index(), Ok(3));
        // The store goes on: the same append succeeds now.
        g.append(&entries(1, 4, 3, 1)).unwrap();
        g.set_hard_state(&hs(6)).unwrap();
        drop((g, store));
        fs.crash(CrashMode::LoseUnsynced);
        let store = open(&fs, medium()).unwrap();
        assert_eq!(
            store.group(1).entries(1, 7, u64::MAX).unwrap(),
            entries(1, 1, 6, 1)
        );
        assert_eq!(store.group(1).hard_state(), hs(6));
    }
}

#[test]
fn no_space_for_a_new_segment_is_a_typed_error_and_the_store_goes_on() {
    let fs = FaultFs::new();
    let store = open(&fs, small()).unwrap();
    let g = store.group(1);
    let mut next = 1;
    // Arm ENOSPC on the first write of each append: the record's own
    // write, or, when the append needs a new segment, its preallocation.
    let err = loop {
        fs.fail_after(FaultOp::Write, 0, ENOSPC);
        let r = g.append(&entries(1, next, 4, 1));
        fs.clear_faults();
        match r {
            Ok(()) => panic!("the fault did not fire"),
            Err(e @ DiskError::Io { op: "allocate", .. }) => break e,
            Err(DiskError::Io { op: "write", .. }) => {
                g.append(&entries(1, next, 4, 1)).unwrap();
                next += 4;
            }
            Err(e) => panic!("unexpected {e:?}"),
        }
        assert!(next < 1000, "never needed a new segment");
    };
    assert_eq!(err.os_error(), Some(ENOSPC));
    assert!(!err.is_fatal());
    assert_eq!(segments(&fs).len(), 1, "the half-made segment is left");
    assert_eq!(g.last_index(), Ok(next - 1));
    g.append(&entries(1, next, 4, 1)).unwrap();
    assert_eq!(segments(&fs).len(), 2);
    drop((g, store));
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, small()).unwrap();
    assert_eq!(
        store.group(1).entries(1, next + 4, u64::MAX).unwrap(),
        entries(1, 1, next + 3, 1)
    );
}

/// PostgreSQL's lesson: after a failed fsync the data may be gone while
/// the page cache still shows it. The store never syncs again: every later
/// write returns the first error.
#[test]
fn a_failed_sync_fails_the_log_for_good_and_is_never_retried() {
    for code in [EIO, ENOSPC] {
        let fs = FaultFs::new();
        let store = open(&fs, medium()).unwrap();
        let g = store.group(1);
        g.append(&entries(1, 1, 3, 1)).unwrap();
        fs.fail_after(FaultOp::Sync, 0, code);
        let err = g.append(&entries(1, 4, 3, 1)).unwrap_err();
        assert!(err.is_fatal(), "{err:?}");
        assert_eq!(err.os_error(), Some(code));
        assert!(
            matches!(&err, DiskError::Failed(inner) if matches!(**inner, DiskError::Io { op: "sync", .. })),
            "{err:?}"
        );
        let syncs = fs.stats().syncs;
        // Every later write call returns the same error and syncs nothing.
        assert_eq!(g.set_hard_state(&hs(3)), Err(err.clone()));
        assert_eq!(g.append(&entries(1, 4, 1, 1)), Err(err.clone()));
        assert_eq!(g.compact(2), Err(err.clone()));
        assert_eq!(store.sync(), Err(err.clone()));
        assert_eq!(store.purge(), Err(err.clone()));
        assert_eq!(g.create_snapshot(3, None, None), Err(err.clone()));
        assert_eq!(g.apply_snapshot(&snapshot(9, 2, &[1])), Err(err.clone()));
        assert_eq!(fs.stats().syncs, syncs, "a sync was retried");
        assert_eq!(
            store.failure().map(|e| DiskError::Failed(Box::new(e))),
            Some(err)
        );
        // Reads still answer, so a node does not panic before it is stopped.
        assert_eq!(g.first_index(), Ok(1));
        assert!(g.entries(1, 4, u64::MAX).is_ok());
        // Reopening recovers what really reached the disk.
        drop((g, store));
        fs.crash(CrashMode::LoseUnsynced);
        let store = open(&fs, medium()).unwrap();
        assert_eq!(store.group(1).last_index(), Ok(3));
    }
}

#[test]
fn a_failed_snapshot_sync_fails_the_log() {
    let fs = FaultFs::new();
    let store = open(&fs, medium()).unwrap();
    let g = store.group(1);
    g.append(&entries(1, 1, 3, 1)).unwrap();
    fs.fail_after(FaultOp::Sync, 0, EIO);
    let err = g.apply_snapshot(&snapshot(10, 2, &[1])).unwrap_err();
    assert!(err.is_fatal(), "{err:?}");
    assert!(err.to_string().contains(".snap.tmp"), "{err}");
    assert_eq!(g.last_index(), Ok(3));
    assert!(g.set_hard_state(&hs(1)).unwrap_err().is_fatal());
}

#[test]
fn a_second_open_of_the_directory_is_refused() {
    let fs = FaultFs::new();
    let store = open(&fs, medium()).unwrap();
    assert_eq!(
        open(&fs, medium()).unwrap_err(),
        DiskError::Locked { dir: dir() }
    );
    drop(store);
    open(&fs, medium()).unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let a = DiskStore::open(tmp.path()).unwrap();
    let err = DiskStore::open(tmp.path()).unwrap_err();
    assert_eq!(
        err,
        DiskError::Locked {
            dir: tmp.path().to_path_buf()
        }
    );
    assert!(err.to_string().contains("locked"), "{err}");
    // Clones share the lock; it goes with the last handle.
    let b = a.clone();
    drop(a);
    assert!(DiskStore::open(tmp.path()).is_err());
    drop(b);
    DiskStore::open(tmp.path()).unwrap();
}

#[test]
fn a_zero_segment_size_is_refused() {
    let fs = FaultFs::new();
    let opts = Options {
        segment_size: 0,
        ..Options::default()
    };
    assert!(matches!(open(&fs, opts), Err(DiskError::InvalidInput(_))));
}
