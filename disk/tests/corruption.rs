//! Damage on disk: a torn or bit-flipped tail is cut off on open; damage in
//! the middle of the log is refused with an error naming the file and the
//! offset; a missing or half-written snapshot file either falls back to the
//! previous snapshot or is refused with a clear error. Nothing panics.

mod common;

use std::path::PathBuf;

use common::*;
use raftlet::pb::HardState;
use raftlet::Storage;
use raftlet_disk::{CrashMode, DiskError, DiskStore, FaultFs, FileSystem, Options};

/// The offsets of the records of a segment, read from their headers.
fn record_offsets(data: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + 32 <= data.len() && &data[off..off + 4] == b"RLG1" {
        out.push(off);
        let len = u32::from_le_bytes(data[off + 4..off + 8].try_into().unwrap()) as usize;
        off += (32 + len + 7) & !7;
    }
    out
}

/// Writes `n` synced batches to group 1 (two entries and a hard state
/// each) and closes the store.
fn fill(fs: &FaultFs, opts: Options, n: u64) {
    let store = open(fs, opts).unwrap();
    let g = store.group(1);
    for b in 0..n {
        g.append(&entries(1, 2 * b + 1, 2, 1)).unwrap();
        g.set_hard_state(&HardState {
            term: 1,
            vote: 1,
            commit: 2 * b + 2,
        })
        .unwrap();
    }
}

/// Group 1 holds the first `2 * batches` entries, intact.
fn assert_entries(store: &DiskStore, batches: u64) {
    let g = store.group(1);
    assert_eq!(g.last_index(), Ok(2 * batches));
    if batches > 0 {
        assert_eq!(
            g.entries(1, 2 * batches + 1, u64::MAX).unwrap(),
            entries(1, 1, 2 * batches, 1)
        );
    }
}

fn only_segment(fs: &FaultFs) -> PathBuf {
    let segs = segments(fs);
    assert_eq!(segs.len(), 1, "{segs:?}");
    file(&segs[0])
}

#[test]
fn a_torn_tail_is_truncated_on_open_and_the_log_goes_on() {
    let fs = FaultFs::new();
    fill(&fs, medium(), 5);
    // One more append, torn: only its first part reached the disk.
    {
        let store = open(&fs, medium()).unwrap();
        store.group(1).append(&entries(1, 11, 40, 1)).unwrap();
    }
    let seg = only_segment(&fs);
    let data = fs.contents(&seg).unwrap();
    let recs = record_offsets(&data);
    let last = *recs.last().unwrap();
    let end = (last + 32 + 40 * 40).min(data.len());
    fs.damage(&seg, (last + 600) as u64, &vec![0u8; end - last - 600])
        .unwrap();
    let store = open(&fs, medium()).unwrap();
    assert_entries(&store, 5);
    // New records after the cut are read back after the next restart:
    // nothing of the torn record is left to confuse recovery.
    store.group(1).append(&entries(1, 11, 2, 1)).unwrap();
    drop(store);
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, medium()).unwrap();
    assert_entries(&store, 6);
}

#[test]
fn a_flipped_bit_in_the_last_record_is_truncated() {
    let fs = FaultFs::new();
    fill(&fs, medium(), 6);
    let seg = only_segment(&fs);
    let recs = record_offsets(&fs.contents(&seg).unwrap());
    // The last record is the hard state of batch 6.
    fs.flip_bit(&seg, (*recs.last().unwrap() + 40) as u64, 3)
        .unwrap();
    let store = open(&fs, medium()).unwrap();
    assert_entries(&store, 6);
    assert_eq!(store.group(1).hard_state().commit, 10);
}

#[test]
fn a_flipped_bit_in_the_middle_is_refused_naming_file_and_offset() {
    let fs = FaultFs::new();
    fill(&fs, medium(), 6);
    let seg = only_segment(&fs);
    let recs = record_offsets(&fs.contents(&seg).unwrap());
    let victim = recs[3];
    fs.flip_bit(&seg, (victim + 45) as u64, 0).unwrap();
    let err = open(&fs, medium()).unwrap_err();
    match &err {
        DiskError::Corrupt { file, offset, .. } => {
            assert_eq!(file, &seg);
            assert_eq!(*offset, victim as u64);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains(&seg.display().to_string()), "{text}");
    assert!(text.contains(&format!("offset {victim}")), "{text}");
    // Refusing moved nothing: the same error again.
    assert_eq!(open(&fs, medium()).unwrap_err(), err);
}

#[test]
fn damage_in_an_older_segment_or_a_missing_segment_is_refused() {
    let fs = FaultFs::new();
    fill(&fs, small(), 60);
    let segs = segments(&fs);
    assert!(segs.len() >= 3, "{segs:?}");
    let first = file(&segs[0]);
    let recs = record_offsets(&fs.contents(&first).unwrap());
    fs.flip_bit(&first, (recs[1] + 33) as u64, 7).unwrap();
    match open(&fs, small()).unwrap_err() {
        DiskError::Corrupt { file, offset, .. } => {
            assert_eq!(file, first);
            assert_eq!(offset, recs[1] as u64);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    fs.flip_bit(&first, (recs[1] + 33) as u64, 7).unwrap();
    open(&fs, small()).unwrap();
    // A segment lost from the middle: the records after it show the gap.
    fs.delete(&file(&segs[1])).unwrap();
    match open(&fs, small()).unwrap_err() {
        DiskError::Corrupt { file, reason, .. } => {
            assert_eq!(file, first, "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// The files of the store, to put back after each experiment.
fn save(fs: &FaultFs) -> Vec<(String, Vec<u8>)> {
    fs.files(&dir())
        .into_iter()
        .filter(|n| n != "LOCK")
        .map(|n| {
            let d = fs.contents(&file(&n)).unwrap();
            (n, d)
        })
        .collect()
}

fn restore(fs: &FaultFs, saved: &[(String, Vec<u8>)]) {
    for n in fs.files(&dir()) {
        if n != "LOCK" && !saved.iter().any(|(s, _)| *s == n) {
            fs.delete(&file(&n)).unwrap();
        }
    }
    for (n, d) in saved {
        let p = file(n);
        if fs.contents(&p).is_err() {
            let f = fs.create(&p).unwrap();
            f.sync().unwrap();
            fs.sync_dir(&dir()).unwrap();
        }
        fs.truncate(&p, 0).unwrap();
        fs.damage(&p, 0, d).unwrap();
    }
}

/// Flipped bits all over every file, and truncations of the last segment,
/// give either an open store that lost at most the last record, or a typed
/// error. Never a panic.
#[test]
fn no_damage_panics_and_one_flipped_bit_costs_at_most_the_last_record() {
    let fs = FaultFs::new();
    {
        let store = open(&fs, small()).unwrap();
        let g = store.group(1);
        for b in 0..12u64 {
            g.append(&entries(1, 2 * b + 1, 2, 1)).unwrap();
        }
        g.set_hard_state(&HardState {
            term: 1,
            vote: 1,
            commit: 24,
        })
        .unwrap();
        g.create_snapshot(10, None, Some(bytes::Bytes::from_static(b"sm")))
            .unwrap();
    }
    let saved = save(&fs);
    let mut outcomes = [0usize; 3];
    for (name, data) in &saved {
        let p = file(name);
        // The used part of a segment (the rest is preallocated zeros).
        let used = if is_segment(name) {
            let recs = record_offsets(data);
            let last = *recs.last().unwrap();
            let l = u32::from_le_bytes(data[last + 4..last + 8].try_into().unwrap()) as usize;
            (last + 32 + l + 64).min(data.len())
        } else {
            data.len()
        };
        for byte in (0..used).step_by(5) {
            let bit = (byte % 8) as u8;
            fs.flip_bit(&p, byte as u64, bit).unwrap();
            match open(&fs, small()) {
                Ok(store) => {
                    let last = store.group(1).last_index().unwrap();
                    assert!(last >= 22, "{name} byte {byte}: lost more than a record");
                    outcomes[0] += 1;
                }
                Err(DiskError::Corrupt { .. }) => outcomes[1] += 1,
                Err(DiskError::SnapshotCorrupt { .. }) => outcomes[2] += 1,
                Err(e) => panic!("{name} byte {byte} bit {bit}: unexpected {e:?}"),
            }
            restore(&fs, &saved);
        }
    }
    assert!(outcomes.iter().all(|&n| n > 0), "{outcomes:?}");
    // Truncations of the last segment.
    let segs = segments(&fs);
    let last = file(segs.last().unwrap());
    let recs = record_offsets(&fs.contents(&last).unwrap());
    for cut in (0..recs.last().unwrap() + 200).step_by(13) {
        fs.truncate(&last, cut as u64).unwrap();
        let _ = open(&fs, small());
        restore(&fs, &saved);
    }
}

fn snapshot_setup(fs: &FaultFs) -> PathBuf {
    let store = open(fs, medium()).unwrap();
    let g = store.group(2);
    g.apply_snapshot(&snapshot(10, 2, &[1, 2, 3])).unwrap();
    g.append(&entries(2, 11, 5, 2)).unwrap();
    g.set_hard_state(&HardState {
        term: 2,
        vote: 1,
        commit: 15,
    })
    .unwrap();
    file(&format!("snap-{:016x}-{:016x}-{:016x}.snap", 2, 10, 2))
}

#[test]
fn a_missing_snapshot_file_is_refused_with_a_clear_error() {
    let fs = FaultFs::new();
    let snap = snapshot_setup(&fs);
    fs.delete(&snap).unwrap();
    let err = open(&fs, medium()).unwrap_err();
    assert_eq!(err, DiskError::SnapshotMissing { file: snap.clone() });
    assert!(err.to_string().contains("missing"), "{err}");
}

#[test]
fn a_half_written_referenced_snapshot_file_is_refused() {
    let fs = FaultFs::new();
    let snap = snapshot_setup(&fs);
    let len = fs.contents(&snap).unwrap().len() as u64;
    fs.truncate(&snap, len / 2).unwrap();
    match open(&fs, medium()).unwrap_err() {
        DiskError::SnapshotCorrupt { file, reason } => {
            assert_eq!(file, snap);
            assert!(reason.contains("half written"), "{reason}");
        }
        other => panic!("expected SnapshotCorrupt, got {other:?}"),
    }
}

/// A crash while a new snapshot file was being written (before its rename)
/// or after the rename but before its record: the group keeps the previous
/// snapshot and the leftover file is deleted.
#[test]
fn a_snapshot_interrupted_by_a_crash_falls_back_to_the_previous_one() {
    for ops in 0..12 {
        let fs = FaultFs::new();
        snapshot_setup(&fs);
        let newer = {
            let store = open(&fs, medium()).unwrap();
            fs.power_off_after(ops);
            let r =
                store
                    .group(2)
                    .create_snapshot(14, None, Some(bytes::Bytes::from_static(b"new")));
            r.is_ok()
        };
        fs.crash(CrashMode::Torn { seed: ops });
        let store = open(&fs, medium()).unwrap();
        let got = store.group(2).snapshot(0, 0).unwrap();
        if newer {
            assert_eq!(got.metadata.index, 14);
        } else {
            assert!(
                got.metadata.index == 10 || got.metadata.index == 14,
                "ops {ops}"
            );
        }
        if got.metadata.index == 10 {
            assert_eq!(got, snapshot(10, 2, &[1, 2, 3]));
        } else {
            assert_eq!(got.data(), b"new");
        }
        let snaps: Vec<String> = fs
            .files(&dir())
            .into_iter()
            .filter(|n| n.contains("snap-"))
            .collect();
        assert_eq!(snaps.len(), 1, "ops {ops}: {snaps:?}");
        assert_eq!(store.group(2).last_index(), Ok(15));
    }
    // And the leftover .tmp of a snapshot that never got renamed.
    let fs = FaultFs::new();
    snapshot_setup(&fs);
    let tmp = file("snap-0000000000000002-0000000000000014-0000000000000003.snap.tmp");
    let f = fs.create(&tmp).unwrap();
    f.write_at(b"RLS1 half", 0).unwrap();
    f.sync().unwrap();
    fs.sync_dir(&dir()).unwrap();
    drop(f);
    let store = open(&fs, medium()).unwrap();
    assert_eq!(store.group(2).snapshot(0, 0).unwrap().metadata.index, 10);
    assert!(!fs.files(&dir()).iter().any(|n| n.ends_with(".tmp")));
}
