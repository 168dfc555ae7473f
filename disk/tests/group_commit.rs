//! Group commit across threads: writers of different groups that call
//! `write` at the same time share syncs (the first one syncs for all that
//! wrote before it, without holding the store's lock), and every write
//! acknowledged is durable.

mod common;

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use raftlet::Storage;
use raftlet_disk::{CrashMode, DiskStore, FaultFs, FileSystem, FsFile, FsLock, EIO};

/// FaultFs whose file syncs take 2 ms, like a disk's.
#[derive(Debug)]
struct SlowFs(FaultFs);

#[derive(Debug)]
struct SlowFile(Box<dyn FsFile>);

impl FsFile for SlowFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.0.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_at(buf, offset)
    }
    fn write_direct_at(&self, buf: &[u8], offset: u64) -> io::Result<bool> {
        self.0.write_direct_at(buf, offset)
    }
    fn size(&self) -> io::Result<u64> {
        self.0.size()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        self.0.allocate(len)
    }
    fn sync(&self) -> io::Result<()> {
        std::thread::sleep(Duration::from_millis(2));
        self.0.sync()
    }
}

impl FileSystem for SlowFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.0.create_dir_all(dir)
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(SlowFile(self.0.create(path)?)))
    }
    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(SlowFile(self.0.open(path)?)))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.0.remove(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.0.list(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>> {
        self.0.lock(path)
    }
}

const THREADS: u64 = 8;
const WRITES: u64 = 40;

/// Writes from `threads` threads, one group each (`g`): write `i` of a
/// thread appends `batch(g, i)`. Returns each thread's results in order.
fn hammer_with(
    store: &DiskStore,
    threads: u64,
    writes: u64,
    batch: impl Fn(u64, u64) -> Vec<raftlet::pb::Entry> + Sync,
) -> Vec<Vec<raftlet_disk::Result<()>>> {
    let batch = &batch;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|g| {
                let store = store.clone();
                s.spawn(move || {
                    let grp = store.group(g);
                    (0..writes)
                        .map(|i| grp.append(&batch(g, i)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// [`THREADS`] threads of [`WRITES`] small writes, results of all.
fn hammer(store: &DiskStore) -> Vec<raftlet_disk::Result<()>> {
    hammer_with(store, THREADS, WRITES, |g, i| entries(g, i * 2 + 1, 2, 1))
        .into_iter()
        .flatten()
        .collect()
}

#[test]
fn concurrent_writers_share_syncs_and_lose_nothing_acknowledged() {
    let fault = FaultFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(SlowFs(fault.clone()));
    let store = DiskStore::open_with(fs.clone(), &dir(), medium()).unwrap();
    let before = fault.stats().syncs;
    let results = hammer(&store);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let syncs = fault.stats().syncs - before;
    let writes = THREADS * WRITES;
    println!("{writes} synced writes from {THREADS} threads took {syncs} syncs");
    assert!(
        syncs * 2 <= writes,
        "{syncs} syncs for {writes} writes: the writers did not share them"
    );
    drop(store);
    fault.crash(CrashMode::LoseUnsynced);
    let store = DiskStore::open_with(fs, &dir(), medium()).unwrap();
    for g in 0..THREADS {
        let grp = store.group(g);
        assert_eq!(grp.last_index(), Ok(2 * WRITES), "group {g}");
        assert_eq!(
            grp.entries(1, 2 * WRITES + 1, u64::MAX).unwrap(),
            entries(g, 1, 2 * WRITES, 1)
        );
    }
}

/// A sync that fails while others wait on it fails them all, and the log.
#[test]
fn a_failed_shared_sync_fails_every_waiter() {
    let fault = FaultFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(SlowFs(fault.clone()));
    let store = DiskStore::open_with(fs, &dir(), medium()).unwrap();
    fault.fail_after(raftlet_disk::FaultOp::Sync, 3, EIO);
    let results = hammer(&store);
    let failed = results.iter().filter(|r| r.is_err()).count();
    assert!(failed > 0);
    assert!(
        results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .all(|e| e.is_fatal() && e.os_error() == Some(EIO)),
        "{results:?}"
    );
    // Sticky: in every thread, once a write failed, every later one did.
    for (t, chunk) in results.chunks(WRITES as usize).enumerate() {
        if let Some(first) = chunk.iter().position(Result::is_err) {
            assert!(
                chunk[first..].iter().all(Result::is_err),
                "thread {t} wrote again after the log failed"
            );
        }
    }
    assert!(store.failure().is_some());
    assert!(store
        .group(0)
        .append(&entries(0, 999, 1, 1))
        .unwrap_err()
        .is_fatal());
}

/// Group `g`'s entries `from..from + n`, each of `size` bytes that depend
/// on the group and the index.
fn sized_entries(g: u64, from: u64, n: u64, size: usize) -> Vec<raftlet::pb::Entry> {
    (from..from + n)
        .map(|i| {
            let b = (g * 31 + i) as u8;
            raftlet::pb::Entry::new(1, i, bytes::Bytes::from(vec![b; size]))
        })
        .collect()
}

/// The entry size of write `i` of [`hammer_mixed`]: every third write is a
/// record over 1 MiB (written past the page cache), the others are small.
fn mixed_size(i: u64) -> usize {
    if i % 3 == 2 {
        600 << 10
    } else {
        100
    }
}

/// Writes from `threads` threads, one group each, of sizes [`mixed_size`].
/// Returns each thread's results in order.
fn hammer_mixed(
    store: &DiskStore,
    threads: u64,
    writes: u64,
) -> Vec<Vec<raftlet_disk::Result<()>>> {
    hammer_with(store, threads, writes, |g, i| {
        sized_entries(g, i * 2 + 1, 2, mixed_size(i))
    })
}

fn large_options() -> raftlet_disk::Options {
    raftlet_disk::Options {
        segment_size: 64 << 20,
        ..raftlet_disk::Options::default()
    }
}

/// Checks that each of `threads` groups holds the `writes` writes of
/// [`hammer_mixed`].
fn check_mixed(store: &DiskStore, threads: u64, writes: u64, when: &str) {
    for g in 0..threads {
        let grp = store.group(g);
        assert_eq!(grp.last_index(), Ok(2 * writes), "{when}, group {g}");
        for i in 0..writes {
            assert_eq!(
                grp.entries(i * 2 + 1, i * 2 + 3, u64::MAX).unwrap(),
                sized_entries(g, i * 2 + 1, 2, mixed_size(i)),
                "{when}, group {g}, write {i}"
            );
        }
    }
}

#[test]
fn large_and_small_records_from_many_threads_lose_nothing_acknowledged() {
    let fault = FaultFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(SlowFs(fault.clone()));
    let store = DiskStore::open_with(fs.clone(), &dir(), large_options()).unwrap();
    let (threads, writes) = (4, 9);
    for (t, results) in hammer_mixed(&store, threads, writes).iter().enumerate() {
        assert!(results.iter().all(Result::is_ok), "thread {t}: {results:?}");
    }
    check_mixed(&store, threads, writes, "before the crash");
    // And one large write alone, with no later write to sync it by chance.
    let last = sized_entries(threads, 1, 2, 600 << 10);
    store.group(threads).append(&last).unwrap();
    drop(store);
    fault.crash(CrashMode::LoseUnsynced);
    let store = DiskStore::open_with(fs, &dir(), large_options()).unwrap();
    check_mixed(&store, threads, writes, "after the crash");
    assert_eq!(store.group(threads).entries(1, 3, u64::MAX).unwrap(), last);
}

/// A failed sync among large and small records fails every writer
/// waiting for it and the log, and leaves no writer waiting for good.
#[test]
fn a_failed_sync_of_a_large_record_fails_every_waiter() {
    for after in 0..6 {
        let fault = FaultFs::new();
        let fs: Arc<dyn FileSystem> = Arc::new(SlowFs(fault.clone()));
        let store = DiskStore::open_with(fs, &dir(), large_options()).unwrap();
        fault.fail_after(raftlet_disk::FaultOp::Sync, after, EIO);
        let results = hammer_mixed(&store, 3, 6);
        assert!(
            results.iter().flatten().any(Result::is_err),
            "after {after}: no write failed"
        );
        for (t, r) in results.iter().enumerate() {
            if let Some(first) = r.iter().position(Result::is_err) {
                assert!(
                    r[first..]
                        .iter()
                        .all(|r| r.as_ref().is_err_and(|e| e.is_fatal())),
                    "after {after}, thread {t}: {r:?}"
                );
            }
        }
        assert!(store.failure().is_some(), "after {after}");
    }
}

/// A commit raised (`set_commit`, what a light Ready's commit index asks
/// for, written unsynced) while another thread saves the same group's hard
/// state never writes back the term and vote it read before that save: a
/// node restarted on them would have forgotten a vote it gave, and could
/// give another in the same term. Two threads, one raising the commit, one
/// saving hard states with rising terms; the term read back never falls
/// below the last one saved.
#[test]
fn raising_the_commit_never_writes_back_an_older_term() {
    use raftlet::pb::HardState;
    let fs = FaultFs::new();
    let store = open(&fs, small()).unwrap();
    let g = store.group(1);
    g.append(&entries(1, 1, 1, 1)).unwrap();
    const ROUNDS: u64 = 4_000;
    let raiser = {
        let g = g.clone();
        std::thread::spawn(move || {
            for c in 1..=ROUNDS {
                g.set_commit(c).unwrap();
            }
        })
    };
    let mut regressions = 0;
    for term in 1..=ROUNDS {
        let hs = HardState {
            term,
            vote: term % 3 + 1,
            commit: 0,
        };
        g.set_hard_state(&hs).unwrap();
        let now = g.hard_state();
        if now.term < term || (now.term == term && now.vote != hs.vote) {
            regressions += 1;
        }
    }
    raiser.join().unwrap();
    let last = g.hard_state();
    assert_eq!(
        regressions, 0,
        "a saved term or vote was written over by an older one"
    );
    assert_eq!((last.term, last.vote), (ROUNDS, ROUNDS % 3 + 1));
}
