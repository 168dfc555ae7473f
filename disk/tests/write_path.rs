//! The costs of the write path that docs/bench-d1.md measures: small
//! records are followed by zeros written ahead (so that a sync does not also
//! commit a block-map change), a segment switch costs one file sync and one
//! directory sync, and a record of `direct_min_bytes` or more (1 MiB by
//! default) is written past the page cache in whole blocks (or, where the
//! filesystem refuses that, in place when over 1 MiB). Either must be as safe as a single write: a failure part
//! way changes nothing, and a crash part way is a torn tail.

mod common;

use bytes::Bytes;
use common::*;
use raftlet::pb::{Entry, HardState};
use raftlet::Storage;
use raftlet_disk::{
    CrashMode, DiskError, FaultFs, FaultOp, Options, WriteBatch, DIRECT_ALIGN, EIO,
};

/// The zeros written after a small record that reaches unwritten blocks.
const ZERO_AHEAD: u64 = 1 << 20;

fn hs(commit: u64) -> HardState {
    HardState {
        term: 1,
        vote: 1,
        commit,
    }
}

/// `n` entries of group 1 from `from`, each with `size` bytes of data that
/// depend on its index.
fn big_entries(from: u64, n: u64, size: usize) -> Vec<Entry> {
    (from..from + n)
        .map(|i| Entry::new(1, i, Bytes::from(vec![(i % 251) as u8; size])))
        .collect()
}

#[test]
fn small_records_write_zeros_ahead_once_per_mebibyte_within_the_segment() {
    let fs = FaultFs::new();
    let opts = Options {
        segment_size: 3 << 19, // 1.5 MiB: the second run of zeros is cut short
        rewrite_max_bytes: 0,
        ..Options::default()
    };
    let before = fs.stats().bytes_written;
    let store = open(&fs, opts).unwrap();
    // The segment's checkpoint is the first small record: zeros follow it.
    let opened = fs.stats().bytes_written - before;
    assert!(
        (ZERO_AHEAD..ZERO_AHEAD + 4096).contains(&opened),
        "open wrote {opened} bytes: no zeros were written ahead"
    );
    let g = store.group(1);
    let mut next = 1;
    let mut record_bytes = 0;
    // 100 small appends inside the zeroed MiB write only themselves.
    for _ in 0..100 {
        let at = fs.stats().bytes_written;
        g.append(&entries(1, next, 2, 1)).unwrap();
        next += 2;
        let n = fs.stats().bytes_written - at;
        assert!(n < 1024, "a small append wrote {n} bytes");
        record_bytes += n;
    }
    assert!(record_bytes > 0);
    // Past the first MiB the next run of zeros is written, up to the end of
    // the preallocated segment and never past it.
    let seg = dir().join("0000000000000001.log");
    let mut zeros_again = false;
    while store.stats().log_bytes < ZERO_AHEAD + 4096 {
        let at = fs.stats().bytes_written;
        g.append(&big_entries(next, 8, 4000)).unwrap();
        next += 8;
        zeros_again |= fs.stats().bytes_written - at > 100_000;
    }
    assert!(zeros_again, "no zeros were written past the first MiB");
    assert_eq!(store.stats().segments, 1);
    assert_eq!(fs.contents(&seg).unwrap().len() as u64, opts.segment_size);
    // What was written reads back, before and after a crash.
    let last = next - 1;
    let want = g.entries(1, last + 1, u64::MAX).unwrap();
    drop((g, store));
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, opts).unwrap();
    assert_eq!(store.group(1).entries(1, last + 1, u64::MAX).unwrap(), want);
}

#[test]
fn a_segment_switch_costs_one_file_sync_and_one_directory_sync() {
    let fs = FaultFs::new();
    let opts = Options {
        segment_size: 64 << 10,
        rewrite_max_bytes: 0,
        ..Options::default()
    };
    let store = open(&fs, opts).unwrap();
    let g = store.group(1);
    let mut next = 1;
    let mut switches = Vec::new();
    for k in 0.. {
        if switches.len() == 3 {
            break;
        }
        let segments = store.stats().segments;
        let (syncs, dir_syncs) = (fs.stats().syncs, fs.stats().dir_syncs);
        g.append(&big_entries(next, 4, 3000)).unwrap();
        next += 4;
        let (syncs, dir_syncs) = (fs.stats().syncs - syncs, fs.stats().dir_syncs - dir_syncs);
        if store.stats().segments > segments {
            switches.push(k);
            assert_eq!((syncs, dir_syncs), (1, 1), "a write that switched segments");
        } else {
            assert_eq!((syncs, dir_syncs), (1, 0), "a write inside a segment");
        }
    }
    let want = g.entries(1, next, u64::MAX).unwrap();
    // A power cut at every step of the second switch loses nothing
    // acknowledged, and the new segment holds its checkpoint once synced.
    let k = switches[1];
    for ops in 0..8 {
        let fs = FaultFs::new();
        let store = open(&fs, opts).unwrap();
        let g = store.group(1);
        for a in 0..k {
            g.append(&big_entries(1 + 4 * a, 4, 3000)).unwrap();
        }
        let before = 4 * k;
        fs.power_off_after(ops);
        let done = g.append(&big_entries(before + 1, 4, 3000)).is_ok();
        drop((g, store));
        fs.crash(CrashMode::Torn { seed: ops });
        let store = open(&fs, opts).unwrap();
        let last = store.group(1).last_index().unwrap();
        assert!(
            last == before + 4 || (!done && last == before),
            "ops {ops}: last {last}, acknowledged {before}, done {done}"
        );
        assert_eq!(
            store.group(1).entries(1, last + 1, u64::MAX).unwrap(),
            want[..last as usize],
            "ops {ops}"
        );
        // It takes writes again, into the segment it switched to or anew.
        store
            .group(1)
            .append(&big_entries(last + 1, 4, 3000))
            .unwrap();
    }
}

/// 8 MiB segments and no rewrites: room for the large records these tests
/// write, each where the test expects it.
fn large_records() -> Options {
    Options {
        segment_size: 8 << 20,
        rewrite_max_bytes: 0,
        ..Options::default()
    }
}

/// A [`FaultFs`] that takes direct writes (`direct`) or refuses them, as
/// a filesystem without `O_DIRECT` does.
fn fault_fs(direct: bool) -> FaultFs {
    let fs = FaultFs::new();
    fs.set_direct_writes(direct);
    fs
}

#[test]
fn a_record_over_a_mebibyte_gets_room_in_its_segment_and_reads_back() {
    for direct in [true, false] {
        let fs = fault_fs(direct);
        let opts = Options {
            segment_size: 256 << 10,
            rewrite_max_bytes: 0,
            ..Options::default()
        };
        let store = open(&fs, opts).unwrap();
        let g = store.group(1);
        g.append(&entries(1, 1, 3, 1)).unwrap();
        // 3 MiB and a few odd bytes, so that the record has padding.
        let big = big_entries(4, 3, (1 << 20) + 3);
        let mut b = WriteBatch::new();
        b.append(1, &big).unwrap();
        b.set_hard_state(1, &hs(6));
        let at = fs.stats().bytes_written;
        store.write(&b).unwrap();
        assert_eq!(store.stats().segments, 2);
        // The switch writes the new checkpoint and the record, and no zeros
        // ahead of the checkpoint for the record to overwrite.
        let wrote = fs.stats().bytes_written - at;
        let data = 3 * ((1 << 20) + 3);
        assert!(
            (data..data + (64 << 10)).contains(&wrote),
            "the switch to a large record wrote {wrote} bytes for {data} of data"
        );
        // The new segment holds its checkpoint and the record, preallocated
        // to fit them in whole blocks (no zeros follow a large record).
        let seg = dir().join("0000000000000002.log");
        let len = fs.contents(&seg).unwrap().len() as u64;
        let used = store.stats().log_bytes - opts.segment_size;
        assert_eq!(
            len,
            used.div_ceil(DIRECT_ALIGN as u64) * DIRECT_ALIGN as u64
        );
        assert!(len > 3 << 20);
        assert_eq!(fs.stats().direct_writes > 0, direct);
        let want = g.entries(1, 7, u64::MAX).unwrap();
        assert_eq!(want[3..], big[..]);
        drop((g, store));
        fs.crash(CrashMode::LoseUnsynced);
        let store = open(&fs, opts).unwrap();
        assert_eq!(store.group(1).entries(1, 7, u64::MAX).unwrap(), want);
        assert_eq!(store.group(1).hard_state(), hs(6));
    }
}

#[test]
fn a_direct_write_rewrites_the_start_of_its_first_block_as_it_was() {
    let fs = fault_fs(true);
    let opts = Options {
        direct_min_bytes: 64 << 10,
        ..large_records()
    };
    let store = open(&fs, opts).unwrap();
    let g = store.group(1);
    let seg = dir().join("0000000000000001.log");
    let mut next = 1;
    let mut want = Vec::new();
    // Small and large records in turn, so that large ones start inside a
    // block written by a small one or by a large one; records of sizes
    // around the threshold and the bounce buffer.
    for (k, (n, size)) in [
        (3, 100),
        (2, 40_000),
        (1, 70_000),
        (5, 100),
        (3, 700_000),
        (2, 1_100_000),
        (1, 65_000),
        (1, 2 << 20),
        (4, 33),
    ]
    .into_iter()
    .enumerate()
    {
        let before = fs.contents(&seg).unwrap();
        let off = store.stats().log_bytes;
        let direct = fs.stats().direct_writes;
        let ents = big_entries(next, n, size);
        g.append(&ents).unwrap();
        next += n;
        want.extend(ents);
        let after = fs.contents(&seg).unwrap();
        assert_eq!(
            before[..off as usize],
            after[..off as usize],
            "record {k} changed the bytes before it"
        );
        let large = 40 + n as usize * (size + 20) > 64 << 10;
        assert_eq!(fs.stats().direct_writes > direct, large, "record {k}");
        if large {
            // Its blocks end with zeros after it, up to a block boundary.
            let end = store.stats().log_bytes as usize;
            let to = end.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
            assert!(after[end..to].iter().all(|&b| b == 0), "record {k}");
        }
    }
    assert_eq!(g.entries(1, next, u64::MAX).unwrap(), want);
    drop((g, store));
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, opts).unwrap();
    assert_eq!(store.group(1).entries(1, next, u64::MAX).unwrap(), want);
    // After a restart the first direct write reads its block's head back.
    store
        .group(1)
        .append(&big_entries(next, 1, 100_000))
        .unwrap();
    drop(store);
    fs.crash(CrashMode::LoseUnsynced);
    let store = open(&fs, opts).unwrap();
    assert_eq!(store.group(1).last_index(), Ok(next));
    assert_eq!(store.group(1).entries(1, next, u64::MAX).unwrap(), want);
}

#[test]
fn a_failure_in_any_write_of_a_large_record_changes_nothing() {
    let opts = large_records();
    // In place: the header, the payload and the padding are three writes.
    // Direct: 2 MiB blocks through the bounce buffer, three for this 5 MiB
    // record.
    for direct in [true, false] {
        for nth in 0..3 {
            let fs = fault_fs(direct);
            let store = open(&fs, opts).unwrap();
            let g = store.group(1);
            g.append(&entries(1, 1, 3, 1)).unwrap();
            let big = big_entries(4, 5, (1 << 20) + 3);
            fs.fail_after(FaultOp::Write, nth, EIO);
            let err = g.append(&big).unwrap_err();
            assert!(
                matches!(err, DiskError::Io { op: "write", .. }),
                "direct {direct}, write {nth}: {err:?}"
            );
            assert_eq!(g.last_index(), Ok(3));
            // The store goes on at the same offset; a small record there
            // leaves the rest of the failed one behind, which recovery cuts.
            g.append(&entries(1, 4, 2, 1)).unwrap();
            drop((g, store));
            fs.crash(CrashMode::LoseUnsynced);
            let store = open(&fs, opts).unwrap();
            assert_eq!(
                store.group(1).entries(1, 6, u64::MAX).unwrap(),
                entries(1, 1, 5, 1),
                "direct {direct}, write {nth}"
            );
            // And a large record goes through after it.
            store.group(1).append(&big_entries(6, 2, 1 << 20)).unwrap();
            drop(store);
            fs.crash(CrashMode::LoseUnsynced);
            let store = open(&fs, opts).unwrap();
            assert_eq!(
                store.group(1).last_index(),
                Ok(7),
                "direct {direct}, write {nth}"
            );
        }
    }
}

/// What a failed large write leaves after the shorter record that takes
/// its place stays in the file; once the log has moved on to a new
/// segment, recovery must read it as the end of the old one (the new one
/// goes on with the next seq), not as a record lost in the middle.
#[test]
fn what_a_failed_write_leaves_behind_a_segment_is_not_a_lost_record() {
    let opts = Options {
        segment_size: 64 << 10,
        rewrite_max_bytes: 0,
        ..Options::default()
    };
    for direct in [true, false] {
        // Failures of the record's writes (those of the switch to the
        // segment before it fail the log, and are left out).
        let mut failed_records = 0;
        for nth in 0..6 {
            let fs = fault_fs(direct);
            let store = open(&fs, opts).unwrap();
            let g = store.group(1);
            g.append(&entries(1, 1, 3, 1)).unwrap();
            // A segment of its own for the 5 MiB record, whose write fails
            // part way.
            fs.fail_after(FaultOp::Write, nth, EIO);
            let r = g.append(&big_entries(4, 5, (1 << 20) + 3));
            fs.clear_faults();
            match r {
                Err(e) if e.is_fatal() => continue,
                Err(_) => failed_records += 1,
                Ok(()) => continue,
            }
            // A shorter one in its place, then a switch to a new segment.
            g.append(&big_entries(4, 1, 300 << 10)).unwrap();
            g.append(&big_entries(5, 1, 100 << 10)).unwrap();
            assert_eq!(store.stats().segments, 3, "direct {direct}, write {nth}");
            let want = g.entries(1, 6, u64::MAX).unwrap();
            drop((g, store));
            fs.crash(CrashMode::LoseUnsynced);
            let store =
                open(&fs, opts).unwrap_or_else(|e| panic!("direct {direct}, write {nth}: {e}"));
            assert_eq!(store.group(1).entries(1, 6, u64::MAX).unwrap(), want);
        }
        assert!(failed_records >= 3, "direct {direct}: {failed_records}");
    }
}

/// A large batch record is applied to the index while it is written; a
/// failed write must put every change back: entries that replaced others,
/// a group it created, hard states and configurations. A batch with an
/// operation that cannot be put back (a compaction) is applied after the
/// write instead, and a failure leaves it unapplied too.
#[test]
fn a_failed_large_batch_puts_back_every_change_it_made_to_the_index() {
    use raftlet::pb::ConfState;
    let opts = large_records();
    for direct in [true, false] {
        for compact in [false, true] {
            // Direct: the 4 MiB record goes out in 2 MiB writes (the one
            // holding the header last); in place: header, payload, padding.
            for nth in 0..4 {
                let fs = fault_fs(direct);
                let store = open(&fs, opts).unwrap();
                let mut b = WriteBatch::new();
                b.append(1, &entries(1, 1, 6, 1)).unwrap();
                b.set_hard_state(1, &hs(4));
                b.set_conf_state(1, &ConfState::from_voters(vec![1, 2, 3]))
                    .unwrap();
                b.append(3, &entries(3, 1, 2, 1)).unwrap();
                store.write(&b).unwrap();
                let before = (view(&store.group(1)), view(&store.group(3)), store.groups());
                // Entries 5 and 6 of group 1 replaced by a term-2 suffix of
                // large ones, group 2 created, hard states and configuration.
                let mut b = WriteBatch::new();
                let mut big: Vec<Entry> = big_entries(5, 4, 1 << 20);
                for e in &mut big {
                    e.term = 2;
                }
                b.append(1, &big).unwrap();
                b.set_hard_state(
                    1,
                    &HardState {
                        term: 2,
                        vote: 2,
                        commit: 6,
                    },
                );
                b.set_conf_state(1, &ConfState::from_voters(vec![1, 2]))
                    .unwrap();
                b.append(2, &entries(2, 1, 3, 1)).unwrap();
                b.set_hard_state(2, &hs(1));
                b.append(3, &entries(3, 3, 1, 1)).unwrap();
                if compact {
                    b.compact(3, 1);
                }
                fs.fail_after(FaultOp::Write, nth, EIO);
                let r = store.write(&b);
                fs.clear_faults();
                let case = format!("direct {direct}, compact {compact}, write {nth}");
                let Err(err) = r else {
                    // Fewer writes than `nth`: it went through.
                    assert_eq!(store.group(1).last_index(), Ok(8), "{case}");
                    assert_eq!(store.groups(), vec![1, 2, 3], "{case}");
                    continue;
                };
                assert!(
                    matches!(err, DiskError::Io { op: "write", .. }),
                    "{case}: {err:?}"
                );
                let after = (view(&store.group(1)), view(&store.group(3)), store.groups());
                assert_eq!(after, before, "{case}");
                // The same batch goes through afterwards, and survives a
                // restart.
                store.write(&b).unwrap();
                let want = (view(&store.group(1)), view(&store.group(2)));
                assert_eq!(want.0.last, 8, "{case}");
                assert_eq!(want.0.state.hard_state.term, 2, "{case}");
                drop(store);
                fs.crash(CrashMode::LoseUnsynced);
                let store = open(&fs, opts).unwrap();
                assert_eq!(
                    (view(&store.group(1)), view(&store.group(2))),
                    want,
                    "{case}"
                );
            }
        }
    }
}

#[test]
fn a_crash_part_way_through_a_large_record_is_a_torn_tail() {
    let opts = large_records();
    for direct in [true, false] {
        for ops in 0..5 {
            for seed in 0..4 {
                let fs = fault_fs(direct);
                let store = open(&fs, opts).unwrap();
                let g = store.group(1);
                g.append(&entries(1, 1, 3, 1)).unwrap();
                fs.power_off_after(ops);
                let done = g.append(&big_entries(4, 2, (1 << 20) + 3)).is_ok();
                drop((g, store));
                fs.crash(CrashMode::Torn { seed });
                let store = open(&fs, opts).unwrap();
                let last = store.group(1).last_index().unwrap();
                assert!(
                    last == 5 || (!done && last == 3),
                    "direct {direct}, ops {ops} seed {seed}: last {last}, acknowledged {done}"
                );
                assert_eq!(
                    store.group(1).entries(1, 4, u64::MAX).unwrap(),
                    entries(1, 1, 3, 1)
                );
            }
        }
    }
}

#[test]
fn entries_just_written_read_back_from_memory_until_evicted() {
    let opts = Options {
        direct_min_bytes: 64 << 10,
        read_cache_bytes: 200 << 10,
        ..large_records()
    };
    let fs = FaultFs::new();
    let store = open(&fs, opts).unwrap();
    let g = store.group(1);
    // Records of about 80 KiB (written direct) and 2 KiB (buffered).
    let mut next = 1;
    let mut want = Vec::new();
    for k in 0..6 {
        let (n, size) = if k % 2 == 0 { (2, 40_000) } else { (4, 500) };
        let ents = big_entries(next, n, size);
        g.append(&ents).unwrap();
        want.extend(ents);
        next += n;
    }
    let last = next - 1;
    // The newest records are in memory: reading them reads no file.
    let reads = fs.stats().reads;
    let tail = g.entries(last - 5, last + 1, u64::MAX).unwrap();
    assert_eq!(tail.len(), 6);
    assert_eq!(
        fs.stats().reads,
        reads,
        "the newest entries were read from the file"
    );
    assert!(store.stats().read_cache_bytes <= 200 << 10);
    assert!(store.stats().read_cache_bytes > 80 << 10);
    // The oldest were dropped from memory: they come from the file, intact.
    let all = g.entries(1, last + 1, u64::MAX).unwrap();
    assert!(
        fs.stats().reads > reads,
        "the oldest entries did not come from the file"
    );
    assert_eq!(all, want);
    // Without a cache every read goes to the file; the same entries.
    drop((g, store));
    let store = open(
        &fs,
        Options {
            read_cache_bytes: 0,
            ..opts
        },
    )
    .unwrap();
    let g = store.group(1);
    g.append(&big_entries(next, 2, 40_000)).unwrap();
    let reads = fs.stats().reads;
    let got = g.entries(next, next + 2, u64::MAX).unwrap();
    assert_eq!(got, big_entries(next, 2, 40_000));
    assert!(fs.stats().reads > reads);
    assert_eq!(store.stats().read_cache_bytes, 0);
}
