//! The fault-injecting filesystem keeps its promises: what is synced
//! survives a crash, nothing else does (names included), torn writes stop
//! at sector boundaries, failed syncs lose their data, and faults fire once
//! where they were injected. The store's own tests rely on each of these.

use std::path::{Path, PathBuf};

use raftlet_disk::{
    read_all, CrashMode, FaultFs, FaultOp, FileSystem, StdFs, DIRECT_ALIGN, EIO, ENOSPC, SECTOR,
};

fn dir() -> PathBuf {
    PathBuf::from("/store")
}

fn setup() -> FaultFs {
    let fs = FaultFs::new();
    fs.create_dir_all(&dir()).unwrap();
    fs
}

fn read(fs: &FaultFs, p: &Path) -> Vec<u8> {
    read_all(&*fs.open(p).unwrap()).unwrap()
}

#[test]
fn synced_data_and_names_survive_and_nothing_else() {
    let fs = setup();
    let a = dir().join("a");
    let f = fs.create(&a).unwrap();
    f.write_at(b"hello", 0).unwrap();
    f.sync().unwrap();
    fs.sync_dir(&dir()).unwrap();
    f.write_at(b" world", 5).unwrap();
    assert_eq!(read(&fs, &a), b"hello world");
    fs.crash(CrashMode::LoseUnsynced);
    assert_eq!(read(&fs, &a), b"hello");
    // The handle from before the crash is dead.
    assert_eq!(f.size().unwrap_err().raw_os_error(), Some(EIO));
}

#[test]
fn a_synced_file_whose_directory_was_not_synced_is_lost() {
    let fs = setup();
    let b = dir().join("b");
    let f = fs.create(&b).unwrap();
    f.write_at(b"data", 0).unwrap();
    f.sync().unwrap();
    fs.crash(CrashMode::LoseUnsynced);
    assert!(fs.open(&b).is_err());
    assert!(fs.files(&dir()).is_empty());
}

#[test]
fn a_file_is_kept_once_its_directory_is_synced_even_if_synced_before() {
    // The order a store creates a segment in: create, write, sync the
    // file, then the directory. Without the last step the name is lost
    // (above); with it, the file survives.
    let fs = setup();
    let c = dir().join("c");
    let f = fs.create(&c).unwrap();
    f.write_at(b"data", 0).unwrap();
    f.sync().unwrap();
    fs.sync_dir(&dir()).unwrap();
    fs.crash(CrashMode::LoseUnsynced);
    assert_eq!(read(&fs, &c), b"data");
    // A second file created after that directory sync is lost again.
    let d = dir().join("d");
    let g = fs.create(&d).unwrap();
    g.write_at(b"more", 0).unwrap();
    g.sync().unwrap();
    fs.crash(CrashMode::LoseUnsynced);
    assert_eq!(fs.files(&dir()), vec!["c".to_string()]);
}

#[test]
fn crashes_count_the_writes_they_lose_and_tear() {
    let mut torn = 0;
    for seed in 0..32 {
        let fs = setup();
        let p = dir().join("t");
        let f = fs.create(&p).unwrap();
        fs.sync_dir(&dir()).unwrap();
        f.write_at(&[1u8; 2000], 0).unwrap();
        f.write_at(&[2u8; 2000], 2000).unwrap();
        fs.crash(CrashMode::Torn { seed });
        let st = fs.stats();
        let len = read(&fs, &p).len() as u64;
        // Every unsynced write is kept whole, torn or lost.
        let whole = len / 2000;
        assert_eq!(whole, st.kept_writes, "seed {seed}");
        assert_eq!(whole + st.torn_writes + st.lost_writes, 2, "seed {seed}");
        assert_eq!(st.torn_writes, u64::from(len % 2000 != 0), "seed {seed}");
        torn += st.torn_writes;
    }
    assert!(torn > 0, "no seed tore a write");
    let fs = setup();
    let f = fs.create(&dir().join("u")).unwrap();
    f.write_at(b"x", 0).unwrap();
    f.write_at(b"y", 1).unwrap();
    fs.crash(CrashMode::LoseUnsynced);
    assert_eq!((fs.stats().lost_writes, fs.stats().torn_writes), (2, 0));
}

#[test]
fn rename_and_remove_are_durable_only_after_sync_dir() {
    let fs = setup();
    let (tmp, fin) = (dir().join("x.tmp"), dir().join("x"));
    let f = fs.create(&tmp).unwrap();
    f.write_at(b"v1", 0).unwrap();
    f.sync().unwrap();
    fs.sync_dir(&dir()).unwrap();
    fs.rename(&tmp, &fin).unwrap();
    fs.crash(CrashMode::LoseUnsynced);
    assert_eq!(fs.files(&dir()), vec!["x.tmp".to_string()]);
    fs.rename(&tmp, &fin).unwrap();
    fs.sync_dir(&dir()).unwrap();
    fs.remove(&fin).unwrap();
    fs.crash(CrashMode::LoseUnsynced);
    assert_eq!(read(&fs, &fin), b"v1");
}

#[test]
fn torn_crash_keeps_a_prefix_cut_at_a_sector_boundary() {
    let mut seen_partial = false;
    for seed in 0..64 {
        let fs = setup();
        let p = dir().join("t");
        let f = fs.create(&p).unwrap();
        fs.sync_dir(&dir()).unwrap();
        f.write_at(&[1u8; 100], 0).unwrap();
        f.sync().unwrap();
        f.write_at(&[2u8; 3000], 100).unwrap();
        f.write_at(&[3u8; 10], 3100).unwrap();
        fs.crash(CrashMode::Torn { seed });
        let got = read(&fs, &p);
        assert!(got.len() >= 100, "synced data lost (seed {seed})");
        assert!(got[..100].iter().all(|&b| b == 1));
        let twos = got[100..].iter().take_while(|&&b| b == 2).count();
        let end = 100 + twos as u64;
        // A cut inside the first unsynced write falls on a sector boundary.
        if twos < 3000 {
            assert!(
                end == 100 || end % SECTOR == 0,
                "cut at {end} (seed {seed})"
            );
            assert_eq!(
                got.len() as u64,
                end,
                "bytes after a torn write (seed {seed})"
            );
            seen_partial |= twos > 0;
        } else {
            // The second write may follow the first only in full or not at all.
            assert!(got.len() == 3100 || got.len() == 3110, "seed {seed}");
        }
    }
    assert!(seen_partial, "no seed tore the write part way");
}

#[test]
fn a_failed_sync_loses_the_unsynced_writes_but_reads_still_see_them() {
    let fs = setup();
    let p = dir().join("f");
    let f = fs.create(&p).unwrap();
    fs.sync_dir(&dir()).unwrap();
    f.write_at(b"abc", 0).unwrap();
    fs.fail_after(FaultOp::Sync, 0, EIO);
    assert_eq!(f.sync().unwrap_err().raw_os_error(), Some(EIO));
    assert_eq!(read(&fs, &p), b"abc");
    // A retry "succeeds" but the data never reaches the disk.
    f.sync().unwrap();
    fs.crash(CrashMode::LoseUnsynced);
    assert_eq!(read(&fs, &p), b"");
}

#[test]
fn write_faults_fire_once_after_the_given_count_and_change_nothing() {
    let fs = setup();
    let p = dir().join("w");
    let f = fs.create(&p).unwrap();
    fs.fail_after(FaultOp::Write, 1, ENOSPC);
    f.write_at(b"1", 0).unwrap();
    assert_eq!(
        f.write_at(b"2", 1).unwrap_err().raw_os_error(),
        Some(ENOSPC)
    );
    f.write_at(b"3", 1).unwrap();
    assert_eq!(read(&fs, &p), b"13");
}

#[test]
fn power_off_fails_everything_until_the_crash() {
    let fs = setup();
    let p = dir().join("p");
    let f = fs.create(&p).unwrap();
    fs.sync_dir(&dir()).unwrap();
    fs.power_off_after(1);
    f.write_at(b"ok", 0).unwrap();
    assert!(f.sync().is_err());
    assert!(fs.is_powered_off());
    assert!(f.write_at(b"no", 2).is_err());
    fs.crash(CrashMode::LoseUnsynced);
    assert!(!fs.is_powered_off());
    assert_eq!(read(&fs, &p), b"");
}

#[test]
fn flip_bit_and_truncate_damage_the_durable_copy() {
    let fs = setup();
    let p = dir().join("m");
    let f = fs.create(&p).unwrap();
    f.write_at(&[0u8; 8], 0).unwrap();
    f.sync().unwrap();
    fs.sync_dir(&dir()).unwrap();
    fs.flip_bit(&p, 3, 2).unwrap();
    fs.crash(CrashMode::LoseUnsynced);
    assert_eq!(read(&fs, &p), [0, 0, 0, 4, 0, 0, 0, 0]);
    fs.truncate(&p, 2).unwrap();
    assert_eq!(read(&fs, &p), [0, 0]);
}

#[test]
fn locks_exclude_a_second_holder_until_dropped() {
    let fs = setup();
    let l = dir().join("LOCK");
    let g = fs.lock(&l).unwrap();
    assert_eq!(
        fs.lock(&l).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock
    );
    drop(g);
    let _g = fs.lock(&l).unwrap();
}

#[test]
fn open_files_are_counted() {
    let fs = setup();
    let f1 = fs.create(&dir().join("1")).unwrap();
    let f2 = fs.open(&dir().join("1")).unwrap();
    assert_eq!(fs.open_files(), 2);
    drop(f1);
    drop(f2);
    assert_eq!(fs.open_files(), 0);
}

#[test]
fn std_fs_lock_refuses_a_second_open_and_allocate_reads_as_zeros() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = StdFs;
    let l = tmp.path().join("LOCK");
    let g = fs.lock(&l).unwrap();
    assert_eq!(
        fs.lock(&l).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock
    );
    drop(g);
    fs.lock(&l).unwrap();
    let p = tmp.path().join("seg");
    let f = fs.create(&p).unwrap();
    f.write_at(b"ab", 0).unwrap();
    f.allocate(4096).unwrap();
    assert_eq!(f.size().unwrap(), 4096);
    let data = read_all(&*f).unwrap();
    assert_eq!(&data[..2], b"ab");
    assert!(data[2..].iter().all(|&b| b == 0));
    f.sync().unwrap();
    fs.sync_dir(tmp.path()).unwrap();
    assert_eq!(fs.list(tmp.path()).unwrap().len(), 2);
}

/// A buffer of `len` bytes (a multiple of [`DIRECT_ALIGN`]) at an address
/// aligned to it, inside `storage`.
fn aligned(storage: &mut Vec<u8>, len: usize) -> &mut [u8] {
    *storage = vec![0u8; len + DIRECT_ALIGN];
    let at = storage.as_ptr().align_offset(DIRECT_ALIGN);
    &mut storage[at..at + len]
}

#[test]
fn fault_fs_direct_writes_check_alignment_and_crash_as_any_write() {
    let fs = setup();
    let a = dir().join("a");
    let f = fs.create(&a).unwrap();
    fs.sync_dir(&dir()).unwrap();
    let mut storage = Vec::new();
    let block = aligned(&mut storage, 2 * DIRECT_ALIGN);
    block.fill(7);
    // Misaligned offset, length or address: EINVAL, as Linux answers, and
    // nothing written.
    for (off, range) in [
        (1, 0..DIRECT_ALIGN),
        (0, 0..DIRECT_ALIGN - 1),
        (0, 1..DIRECT_ALIGN + 1),
    ] {
        let e = f.write_direct_at(&block[range], off).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(22));
    }
    assert_eq!(fs.stats().writes, 0);
    assert!(f.write_direct_at(block, DIRECT_ALIGN as u64).unwrap());
    assert_eq!(fs.stats().direct_writes, 1);
    assert_eq!(read(&fs, &a).len(), 3 * DIRECT_ALIGN);
    // Not durable until synced.
    fs.crash(CrashMode::LoseUnsynced);
    assert!(read(&fs, &a).is_empty());
    // Torn at a sector boundary, as any write.
    let f = fs.open(&a).unwrap();
    assert!(f.write_direct_at(block, 0).unwrap());
    fs.crash(CrashMode::Torn { seed: 3 });
    let kept = read(&fs, &a);
    assert_eq!(kept.len() as u64 % SECTOR, 0);
    assert!(kept.iter().all(|&b| b == 7));
    // Turned off: declined, nothing written.
    fs.set_direct_writes(false);
    let f = fs.open(&a).unwrap();
    let before = fs.stats();
    assert!(!f.write_direct_at(block, 0).unwrap());
    assert_eq!(fs.stats().writes, before.writes);
}

#[test]
fn std_fs_direct_writes_read_back_or_are_declined_for_good() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = StdFs;
    let p = tmp.path().join("seg");
    let f = fs.create(&p).unwrap();
    f.allocate(4 * DIRECT_ALIGN as u64).unwrap();
    f.write_at(b"head", 0).unwrap();
    let mut storage = Vec::new();
    let block = aligned(&mut storage, DIRECT_ALIGN);
    block[..4].copy_from_slice(b"head");
    block[4..].fill(9);
    // A filesystem without O_DIRECT (tmpfs on older kernels) declines;
    // then nothing was written.
    let direct = f.write_direct_at(block, 0).unwrap();
    let data = read_all(&*f).unwrap();
    assert_eq!(data.len(), 4 * DIRECT_ALIGN);
    assert_eq!(&data[..4], b"head");
    if direct {
        // Buffered reads see what went past the page cache.
        assert!(data[4..DIRECT_ALIGN].iter().all(|&b| b == 9));
    } else {
        assert!(data[4..].iter().all(|&b| b == 0));
    }
    // A write the filesystem refuses with EINVAL (a misaligned length)
    // writes nothing and turns direct writes off for the file.
    assert!(!f
        .write_direct_at(&block[..100], DIRECT_ALIGN as u64)
        .unwrap());
    assert!(!f.write_direct_at(block, DIRECT_ALIGN as u64).unwrap());
    let after = read_all(&*f).unwrap();
    assert!(after[DIRECT_ALIGN..].iter().all(|&b| b == 0));
    f.sync().unwrap();
}
