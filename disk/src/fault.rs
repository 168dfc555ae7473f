//! [`FaultFs`]: an in-memory [`FileSystem`] for tests that simulates power
//! loss (every write not yet synced is lost, the last one may be torn at a
//! sector boundary), media corruption (flipped bits) and failing writes
//! and syncs (EIO, ENOSPC).
//!
//! The model is POSIX at its strictest: file data is durable only after
//! [`FsFile::sync`] of that file, and a file's name (its creation, rename or
//! removal) only after [`FileSystem::sync_dir`] of its directory. A failed
//! sync drops the file's unsynced writes from the durable copy while reads
//! still return them, as Linux does after a writeback error.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::fs::{FileSystem, FsFile, FsLock, DIRECT_ALIGN};

/// Linux's EIO (input/output error).
pub const EIO: i32 = 5;
/// Linux's EINVAL (invalid argument: a misaligned direct write).
const EINVAL: i32 = 22;
/// Linux's ENOSPC (no space left on device).
pub const ENOSPC: i32 = 28;
/// The sector size at which [`CrashMode::Torn`] tears a write.
pub const SECTOR: u64 = 512;

/// What survives a simulated crash ([`FaultFs::crash`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Every write not yet synced is lost.
    LoseUnsynced,
    /// For each file, a prefix (chosen by `seed`) of the writes not yet
    /// synced survives, and the write after that prefix is torn: only its
    /// first sectors (whole 512-byte sectors of the file) reach the disk.
    /// Writes are kept in the order they were issued.
    Torn {
        /// Chooses how much of each file's unsynced writes survives.
        seed: u64,
    },
}

/// The kind of operation a fault is injected into ([`FaultFs::fail_after`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultOp {
    /// `write_at`, `set_len` and `allocate`.
    Write,
    /// File `sync` and `sync_dir`.
    Sync,
}

/// Counts of the operations a [`FaultFs`] has served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Calls of `write_at`, `set_len` and `allocate`.
    pub writes: u64,
    /// Bytes passed to successful calls of `write_at` and
    /// `write_direct_at`.
    pub bytes_written: u64,
    /// Successful calls of `write_direct_at` (counted in `writes` too).
    pub direct_writes: u64,
    /// Calls of `read_at`.
    pub reads: u64,
    /// Calls of file `sync`.
    pub syncs: u64,
    /// Calls of `sync_dir`.
    pub dir_syncs: u64,
    /// Simulated crashes.
    pub crashes: u64,
    /// Unsynced writes a crash dropped whole.
    pub lost_writes: u64,
    /// Unsynced writes a [`CrashMode::Torn`] crash kept whole.
    pub kept_writes: u64,
    /// Unsynced writes a [`CrashMode::Torn`] crash cut short: some of
    /// their first sectors survived, the rest did not.
    pub torn_writes: u64,
}

/// An in-memory, fault-injecting [`FileSystem`]. Cloning gives another
/// handle on the same files.
#[derive(Debug, Clone, Default)]
pub struct FaultFs {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
enum Pending {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

#[derive(Debug, Default)]
struct Inode {
    /// What reads return.
    current: Vec<u8>,
    /// What a crash keeps.
    durable: Vec<u8>,
    /// Operations applied to `current` but not yet to `durable`, in order.
    pending: Vec<Pending>,
    /// Open handles on this inode.
    handles: usize,
}

#[derive(Debug, Default)]
struct State {
    /// The namespace as processes see it.
    names: BTreeMap<PathBuf, u64>,
    /// The namespace as a crash leaves it (as of each directory's last sync).
    durable_names: BTreeMap<PathBuf, u64>,
    dirs: BTreeSet<PathBuf>,
    inodes: HashMap<u64, Inode>,
    next_inode: u64,
    /// Bumped by every crash: handles from an earlier epoch are dead.
    epoch: u64,
    locks: BTreeSet<PathBuf>,
    faults: Vec<(FaultOp, u64, i32)>,
    /// Mutating operations left before the power goes (None: never).
    power_left: Option<u64>,
    powered_off: bool,
    open_files: usize,
    /// `write_direct_at` declines (as on a filesystem without `O_DIRECT`).
    no_direct: bool,
    stats: FaultStats,
}

fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

fn apply(buf: &mut Vec<u8>, op: &Pending) {
    match op {
        Pending::Write { offset, data } => {
            let off = *offset as usize;
            if buf.len() < off + data.len() {
                set_len(buf, off + data.len());
            }
            buf[off..off + data.len()].copy_from_slice(data);
        }
        Pending::SetLen(len) => set_len(buf, *len as usize),
    }
}

/// `buf.resize(len, 0)`, without the byte-by-byte loop `resize` is in a
/// debug build (tests preallocate segments of megabytes).
fn set_len(buf: &mut Vec<u8>, len: usize) {
    if len <= buf.len() {
        buf.truncate(len);
    } else {
        buf.extend_from_slice(&vec![0u8; len - buf.len()]);
    }
}

/// splitmix64: the few random choices of a torn crash.
fn next_rand(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl State {
    /// Counts a mutating operation against the power budget and the
    /// injected faults. `Err` means the operation must fail.
    fn check(&mut self, op: Option<FaultOp>) -> io::Result<()> {
        if self.powered_off {
            return Err(errno(EIO));
        }
        if let Some(left) = self.power_left.as_mut() {
            if *left == 0 {
                self.powered_off = true;
                return Err(errno(EIO));
            }
            *left -= 1;
        }
        if let Some(op) = op {
            if let Some(i) = self.faults.iter().position(|f| f.0 == op) {
                let f = &mut self.faults[i];
                if f.1 == 0 {
                    let code = f.2;
                    self.faults.remove(i);
                    return Err(errno(code));
                }
                f.1 -= 1;
            }
        }
        Ok(())
    }

    fn inode_of(&self, path: &Path) -> io::Result<u64> {
        self.names.get(path).copied().ok_or_else(|| not_found(path))
    }

    /// Drops an inode nothing refers to any more.
    fn gc(&mut self, ino: u64) {
        let referenced = self.names.values().any(|&i| i == ino)
            || self.durable_names.values().any(|&i| i == ino)
            || self.inodes.get(&ino).is_some_and(|n| n.handles > 0);
        if !referenced {
            self.inodes.remove(&ino);
        }
    }

    fn new_handle(&mut self, arc: &Arc<Mutex<State>>, ino: u64) -> Box<dyn FsFile> {
        if let Some(n) = self.inodes.get_mut(&ino) {
            n.handles += 1;
        }
        self.open_files += 1;
        Box::new(FaultFile {
            state: Arc::clone(arc),
            ino,
            epoch: self.epoch,
        })
    }
}

impl FaultFs {
    /// An empty filesystem.
    pub fn new() -> FaultFs {
        FaultFs::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Simulates a power loss: unsynced data and unsynced names are lost
    /// (see [`CrashMode`]), locks are released, and every handle opened
    /// before is dead (its calls fail with EIO). Power is restored and
    /// injected faults are cleared.
    pub fn crash(&self, mode: CrashMode) {
        let mut st = self.lock();
        let mut seed = match mode {
            CrashMode::LoseUnsynced => 0,
            CrashMode::Torn { seed } => seed,
        };
        let mut inos: Vec<u64> = st.inodes.keys().copied().collect();
        inos.sort_unstable();
        for ino in inos {
            let Some(node) = st.inodes.get_mut(&ino) else {
                continue;
            };
            let pending = std::mem::take(&mut node.pending);
            let writes = pending
                .iter()
                .filter(|op| matches!(op, Pending::Write { .. }))
                .count() as u64;
            let mut kept_writes = 0;
            let mut torn = 0;
            if let CrashMode::Torn { .. } = mode {
                let n = pending.len() as u64;
                let keep = (next_rand(&mut seed) % (n + 1)) as usize;
                for op in &pending[..keep] {
                    apply(&mut node.durable, op);
                    if matches!(op, Pending::Write { .. }) {
                        kept_writes += 1;
                    }
                }
                if let Some(Pending::Write { offset, data }) = pending.get(keep) {
                    // Cut at a sector boundary inside the write (or keep
                    // none of it).
                    let end = offset + data.len() as u64;
                    let first = (offset / SECTOR + 1) * SECTOR;
                    let mut cuts = vec![*offset];
                    let mut c = first;
                    while c < end {
                        cuts.push(c);
                        c += SECTOR;
                    }
                    let cut = cuts[(next_rand(&mut seed) % cuts.len() as u64) as usize];
                    let kept = (cut - offset) as usize;
                    if kept > 0 {
                        torn = 1;
                        apply(
                            &mut node.durable,
                            &Pending::Write {
                                offset: *offset,
                                data: data[..kept].to_vec(),
                            },
                        );
                    }
                }
            }
            node.current = node.durable.clone();
            node.handles = 0;
            st.stats.torn_writes += torn;
            st.stats.kept_writes += kept_writes;
            st.stats.lost_writes += writes - kept_writes - torn;
        }
        st.names = st.durable_names.clone();
        let live: BTreeSet<u64> = st.names.values().copied().collect();
        st.inodes.retain(|ino, _| live.contains(ino));
        st.locks.clear();
        st.faults.clear();
        st.power_left = None;
        st.powered_off = false;
        st.open_files = 0;
        st.epoch += 1;
        st.stats.crashes += 1;
    }

    /// Lets `ops` more mutating operations (write, set_len, allocate,
    /// sync, create, rename, remove, sync_dir) succeed, then cuts the
    /// power: that operation and every later one fails with EIO (a write
    /// cut by the power may still be kept in part by a
    /// [`CrashMode::Torn`] crash). Call [`FaultFs::crash`] afterwards.
    pub fn power_off_after(&self, ops: u64) {
        self.lock().power_left = Some(ops);
    }

    /// Whether files take direct writes ([`FsFile::write_direct_at`]; by
    /// default they do). Without them, `write_direct_at` writes nothing
    /// and returns `Ok(false)`, as on a filesystem that refuses `O_DIRECT`.
    pub fn set_direct_writes(&self, on: bool) {
        self.lock().no_direct = !on;
    }

    /// Whether the power was cut by [`FaultFs::power_off_after`].
    pub fn is_powered_off(&self) -> bool {
        self.lock().powered_off
    }

    /// Makes the operation of kind `op` that comes after `after` more
    /// successful ones fail once with the OS error `code` ([`EIO`],
    /// [`ENOSPC`]). A failed write changes nothing; a failed file sync
    /// loses the file's unsynced writes from the durable copy (reads still
    /// see them).
    pub fn fail_after(&self, op: FaultOp, after: u64, code: i32) {
        self.lock().faults.push((op, after, code));
    }

    /// Drops the faults injected with [`FaultFs::fail_after`] that have not
    /// fired yet, and a power cut of [`FaultFs::power_off_after`] that has
    /// not happened yet.
    pub fn clear_faults(&self) {
        let mut st = self.lock();
        st.faults.clear();
        if !st.powered_off {
            st.power_left = None;
        }
    }

    /// Flips bit `bit` (0-7) of the byte at `offset` of `path`, in what
    /// reads see and in what a crash keeps (media corruption).
    ///
    /// # Errors
    /// NotFound if there is no such file; InvalidInput if `offset` is past
    /// its end.
    pub fn flip_bit(&self, path: &Path, offset: u64, bit: u8) -> io::Result<()> {
        let mut st = self.lock();
        let ino = st.inode_of(path)?;
        let node = st.inodes.get_mut(&ino).ok_or_else(|| not_found(path))?;
        let off = offset as usize;
        if off >= node.current.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "past the end"));
        }
        node.current[off] ^= 1 << (bit & 7);
        if off < node.durable.len() {
            node.durable[off] ^= 1 << (bit & 7);
        }
        Ok(())
    }

    /// Overwrites the bytes of `path` at `offset` with `data`, in what reads
    /// see and in what a crash keeps (a damaged or torn sector).
    ///
    /// # Errors
    /// NotFound if there is no such file.
    pub fn damage(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut st = self.lock();
        let ino = st.inode_of(path)?;
        let node = st.inodes.get_mut(&ino).ok_or_else(|| not_found(path))?;
        let op = Pending::Write {
            offset,
            data: data.to_vec(),
        };
        apply(&mut node.current, &op);
        apply(&mut node.durable, &op);
        Ok(())
    }

    /// Cuts `path` to `len` bytes, durably (a damaged or half-copied file).
    ///
    /// # Errors
    /// NotFound if there is no such file.
    pub fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let mut st = self.lock();
        let ino = st.inode_of(path)?;
        let node = st.inodes.get_mut(&ino).ok_or_else(|| not_found(path))?;
        node.pending.clear();
        node.current.truncate(len as usize);
        node.durable.truncate(len as usize);
        Ok(())
    }

    /// Removes `path` durably, as if the file were lost.
    ///
    /// # Errors
    /// NotFound if there is no such file.
    pub fn delete(&self, path: &Path) -> io::Result<()> {
        let mut st = self.lock();
        let ino = st.inode_of(path)?;
        st.names.remove(path);
        st.durable_names.remove(path);
        st.gc(ino);
        Ok(())
    }

    /// The contents of `path` as reads see them.
    ///
    /// # Errors
    /// NotFound if there is no such file.
    pub fn contents(&self, path: &Path) -> io::Result<Vec<u8>> {
        let st = self.lock();
        let ino = st.inode_of(path)?;
        Ok(st
            .inodes
            .get(&ino)
            .map(|n| n.current.clone())
            .unwrap_or_default())
    }

    /// The names of the files in `dir`, sorted.
    pub fn files(&self, dir: &Path) -> Vec<String> {
        let st = self.lock();
        st.names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
            .collect()
    }

    /// How many file handles are open.
    pub fn open_files(&self) -> usize {
        self.lock().open_files
    }

    /// The operation counts so far.
    pub fn stats(&self) -> FaultStats {
        self.lock().stats
    }
}

impl FileSystem for FaultFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.lock();
        if st.powered_off {
            return Err(errno(EIO));
        }
        // Directories are durable at once: the store creates its directory
        // only when it is opened for the first time.
        for a in dir.ancestors() {
            st.dirs.insert(a.to_path_buf());
        }
        Ok(())
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let mut st = self.lock();
        st.check(None)?;
        if let Some(&ino) = st.names.get(path) {
            // Truncate in place, as O_TRUNC does.
            if let Some(node) = st.inodes.get_mut(&ino) {
                node.current.clear();
                node.pending.push(Pending::SetLen(0));
            }
            return Ok(st.new_handle(&self.state, ino));
        }
        let parent = path.parent().unwrap_or(Path::new(""));
        if !st.dirs.contains(parent) {
            return Err(not_found(parent));
        }
        let ino = st.next_inode;
        st.next_inode += 1;
        st.inodes.insert(ino, Inode::default());
        st.names.insert(path.to_path_buf(), ino);
        Ok(st.new_handle(&self.state, ino))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let mut st = self.lock();
        if st.powered_off {
            return Err(errno(EIO));
        }
        let ino = st.inode_of(path)?;
        Ok(st.new_handle(&self.state, ino))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.lock();
        st.check(None)?;
        let ino = st.inode_of(from)?;
        st.names.remove(from);
        if let Some(old) = st.names.insert(to.to_path_buf(), ino) {
            st.gc(old);
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut st = self.lock();
        st.check(None)?;
        let ino = st.inode_of(path)?;
        st.names.remove(path);
        st.gc(ino);
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        if self.lock().powered_off {
            return Err(errno(EIO));
        }
        Ok(self.files(dir))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.lock();
        st.stats.dir_syncs += 1;
        st.check(Some(FaultOp::Sync))?;
        let in_dir = |p: &PathBuf| p.parent() == Some(dir);
        let stale: Vec<(PathBuf, u64)> = st
            .durable_names
            .iter()
            .filter(|(p, _)| in_dir(p))
            .map(|(p, &i)| (p.clone(), i))
            .collect();
        for (p, _) in &stale {
            st.durable_names.remove(p);
        }
        let now: Vec<(PathBuf, u64)> = st
            .names
            .iter()
            .filter(|(p, _)| in_dir(p))
            .map(|(p, &i)| (p.clone(), i))
            .collect();
        st.durable_names.extend(now);
        for (_, ino) in stale {
            st.gc(ino);
        }
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>> {
        let mut st = self.lock();
        if st.powered_off {
            return Err(errno(EIO));
        }
        if !st.locks.insert(path.to_path_buf()) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "the store is locked by another open",
            ));
        }
        Ok(Box::new(FaultLock {
            state: Arc::clone(&self.state),
            path: path.to_path_buf(),
            epoch: st.epoch,
        }))
    }
}

/// A handle on a [`FaultFs`] file.
#[derive(Debug)]
struct FaultFile {
    state: Arc<Mutex<State>>,
    ino: u64,
    epoch: u64,
}

impl FaultFile {
    /// The filesystem state and this file's inode, or EIO if the handle
    /// died in a crash.
    fn with<T>(&self, f: impl FnOnce(&mut State, u64) -> io::Result<T>) -> io::Result<T> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if st.epoch != self.epoch || !st.inodes.contains_key(&self.ino) {
            return Err(errno(EIO));
        }
        f(&mut st, self.ino)
    }

    fn mutate(&self, op: Pending) -> io::Result<()> {
        self.with(|st, ino| {
            st.stats.writes += 1;
            if let Err(e) = st.check(Some(FaultOp::Write)) {
                if st.powered_off {
                    // The power went during this write: a torn crash may
                    // keep part of it.
                    if let (Some(node), Pending::Write { .. }) = (st.inodes.get_mut(&ino), &op) {
                        node.pending.push(op);
                    }
                }
                return Err(e);
            }
            let node = st.inodes.get_mut(&ino).ok_or_else(|| errno(EIO))?;
            apply(&mut node.current, &op);
            let written = match &op {
                Pending::Write { data, .. } => data.len() as u64,
                _ => 0,
            };
            node.pending.push(op);
            st.stats.bytes_written += written;
            Ok(())
        })
    }
}

impl FsFile for FaultFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.with(|st, ino| {
            st.stats.reads += 1;
            if st.powered_off {
                return Err(errno(EIO));
            }
            let node = &st.inodes[&ino];
            let off = offset as usize;
            if off >= node.current.len() {
                return Ok(0);
            }
            let n = buf.len().min(node.current.len() - off);
            buf[..n].copy_from_slice(&node.current[off..off + n]);
            Ok(n)
        })
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.mutate(Pending::Write {
            offset,
            data: buf.to_vec(),
        })
    }

    /// As `write_at`, after the checks of `O_DIRECT`: offset, length and
    /// address aligned to [`DIRECT_ALIGN`] (EINVAL otherwise, as Linux
    /// answers). A crash treats it as any other write.
    fn write_direct_at(&self, buf: &[u8], offset: u64) -> io::Result<bool> {
        let align = DIRECT_ALIGN as u64;
        if self.with(|st, _| Ok(st.no_direct))? {
            return Ok(false);
        }
        if offset % align != 0
            || buf.len() as u64 % align != 0
            || buf.as_ptr() as usize % DIRECT_ALIGN != 0
        {
            return Err(errno(EINVAL));
        }
        self.write_at(buf, offset)?;
        self.with(|st, _| {
            st.stats.direct_writes += 1;
            Ok(true)
        })
    }

    fn size(&self) -> io::Result<u64> {
        self.with(|st, ino| {
            if st.powered_off {
                return Err(errno(EIO));
            }
            Ok(st.inodes[&ino].current.len() as u64)
        })
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.mutate(Pending::SetLen(len))
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        let size = self.size()?;
        if size >= len {
            return Ok(());
        }
        self.mutate(Pending::SetLen(len))
    }

    fn sync(&self) -> io::Result<()> {
        self.with(|st, ino| {
            st.stats.syncs += 1;
            if let Err(e) = st.check(Some(FaultOp::Sync)) {
                if !st.powered_off {
                    // Writeback failed: the unsynced writes will never
                    // reach the disk, though reads still return them.
                    if let Some(node) = st.inodes.get_mut(&ino) {
                        node.pending.clear();
                    }
                }
                return Err(e);
            }
            let node = st.inodes.get_mut(&ino).ok_or_else(|| errno(EIO))?;
            for op in std::mem::take(&mut node.pending) {
                apply(&mut node.durable, &op);
            }
            Ok(())
        })
    }
}

impl Drop for FaultFile {
    fn drop(&mut self) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if st.epoch != self.epoch {
            return;
        }
        st.open_files = st.open_files.saturating_sub(1);
        if let Some(node) = st.inodes.get_mut(&self.ino) {
            node.handles = node.handles.saturating_sub(1);
        }
        st.gc(self.ino);
    }
}

/// A lock on a [`FaultFs`] path, released when dropped (or by a crash).
#[derive(Debug)]
struct FaultLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
    epoch: u64,
}

impl FsLock for FaultLock {}

impl Drop for FaultLock {
    fn drop(&mut self) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if st.epoch == self.epoch {
            st.locks.remove(&self.path);
        }
    }
}
