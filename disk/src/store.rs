//! [`DiskStore`]: the process-wide log of every group in one directory,
//! its recovery, group commit and space reclamation.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use raftlet::pb::{ConfState, Decode, Entry, HardState, Snapshot, SnapshotMetadata};
use raftlet::StorageError;

use crate::batch::{Change, WriteBatch};
use crate::error::{DiskError, Result};
use crate::fs::{read_all, FileSystem, FsFile, FsLock, StdFs, DIRECT_ALIGN};
use crate::group::DiskGroup;
use crate::record::{
    self, align8, encode_record, parse_record, Op, PayloadReader, PayloadWriter, HEADER,
    KIND_BATCH, KIND_CHECKPOINT, MAX_PAYLOAD,
};

/// Records up to this size (header and padding included) are written with
/// zeros after them, up to [`ZERO_AHEAD`] bytes past their end, when they
/// reach into blocks not written yet (see [`Inner::append`]). A larger
/// record amortizes the block-map update over its own bytes: measured on
/// ext4 with 9.6 KB records, zeros ahead gave 1.4x the synced writes per
/// second; with 150 KB records they gained nothing (the doubled bytes cost
/// what the block-map updates saved), so larger records get none.
const ZERO_AHEAD_MAX_RECORD: usize = 64 << 10;

/// How many bytes of zeros a small record is followed by when it reaches
/// past the blocks already written.
const ZERO_AHEAD: u64 = 1 << 20;

/// Records with a larger payload are written from the batch's own buffer
/// rather than copied into the store's (see [`Inner::append`]): the copy
/// would cost more than the two extra write calls, and the store's buffer
/// would keep the size of the largest batch for good.
const COPY_MAX: usize = 1 << 20;

/// The bounce buffers of a direct write: a larger record is written in
/// several direct writes of this size (the last one shorter).
const DIRECT_CHUNK: usize = 2 << 20;

/// Batch records whose payload is at least this long, and at least
/// [`Options::direct_min_bytes`], are applied to the index on a second
/// thread while they are written ([`Inner::append_applying`]); below it a
/// thread costs more than it saves.
const PARALLEL_APPLY_MIN: u64 = 256 << 10;

/// Tuning of a [`DiskStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The size a segment is preallocated to; the log moves to a new
    /// segment when a record would not fit (a record larger than this gets
    /// a segment of its own). Default 64 MiB.
    pub segment_size: u64,
    /// At each segment switch, the live entries of the groups that keep the
    /// oldest segment alive are rewritten into the current segment (so it
    /// can be deleted) while they total at most this many bytes. Groups
    /// with more live entries keep their segments until the host compacts
    /// them. Default 16 MiB.
    pub rewrite_max_bytes: u64,
    /// Records of at least this many bytes (header and padding included)
    /// are written past the page cache (`O_DIRECT`, see
    /// [`FsFile::write_direct_at`]) where the filesystem takes it; smaller
    /// ones through it. `u64::MAX` writes every record through the page
    /// cache. Default 1 MiB: records of megabytes (many groups' writes in
    /// one) fill the page cache slower than the disk writes them, while
    /// for records of a few hundred kilobytes the synchronous direct write
    /// cost a Go host of one group more than the page cache
    /// (docs/bench-d1.md, D2).
    ///
    /// A batch record of this size and of at least 256 KiB is applied to
    /// the store's index on a second thread while it is written, and one
    /// of more than 2 MiB written direct is handed to the disk by a third
    /// one, chunk by chunk, while the writing thread copies the next: the
    /// write call runs on up to three threads, started for it and joined
    /// before it returns (where no thread can be started, it does all of
    /// that itself).
    pub direct_min_bytes: u64,
    /// The bytes of the records written most recently that the store keeps
    /// in memory, so that reading their entries back (a node applying what
    /// it just wrote, a leader sending it to followers) costs no read of
    /// the file; the oldest go first. A record larger than this is not
    /// kept. 0 keeps none. Default 64 MiB. Records written past the page
    /// cache would otherwise be read back from the disk itself.
    pub read_cache_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            segment_size: 64 << 20,
            rewrite_max_bytes: 16 << 20,
            direct_min_bytes: COPY_MAX as u64,
            read_cache_bytes: 64 << 20,
        }
    }
}

/// Figures about a [`DiskStore`], from [`DiskStore::stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreStats {
    /// Groups held.
    pub groups: usize,
    /// Segment files in the log.
    pub segments: usize,
    /// Descriptors the store holds open: the lock, the segments, and a
    /// second one for each segment written past the page cache
    /// ([`Options::direct_min_bytes`]).
    pub open_files: usize,
    /// The bytes of the log, up to the end of the last record.
    pub log_bytes: u64,
    /// The bytes of recent records kept in memory for reads
    /// ([`Options::read_cache_bytes`]).
    pub read_cache_bytes: u64,
    /// An estimate of the heap the in-memory index uses (groups, entry
    /// locations), in bytes.
    pub index_bytes: u64,
    /// The sequence number the next record gets.
    pub next_seq: u64,
}

/// Deliberate bugs a test can plant in a store with
/// [`DiskStore::plant_bugs`] (feature `bug-injection`, for tests only), to
/// show that a crash test catches a store that skips a sync.
#[cfg(feature = "bug-injection")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskBugs {
    /// Syncs of the log (a record that must be durable, or
    /// [`DiskStore::sync`]) return success without syncing the segment.
    pub skip_sync: bool,
    /// A new segment is created without syncing its directory, so its name
    /// may be lost in a crash with everything written to it.
    pub skip_dir_sync: bool,
}

/// Where an entry's raftpb bytes are.
///
/// Invariant: `off + len` is inside segment `seg`, within one record;
/// outside recovery, no entry is a [`Loc::HOLE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Loc {
    pub(crate) seg: u32,
    pub(crate) len: u32,
    pub(crate) off: u64,
    pub(crate) term: u64,
}

impl Loc {
    /// During recovery, an entry whose record was in a deleted segment.
    /// It must be compacted away by the end of the log.
    const HOLE: Loc = Loc {
        seg: u32::MAX,
        len: 0,
        off: 0,
        term: 0,
    };
}

/// One group's state, rebuilt from the log at open.
#[derive(Debug, Default, Clone)]
pub(crate) struct Group {
    pub(crate) hard_state: HardState,
    /// The latest snapshot's metadata; its `conf_state` is what
    /// `initial_state` reports.
    pub(crate) snapshot: SnapshotMetadata,
    /// Whether a snapshot file holds the latest snapshot's data.
    pub(crate) snapshot_file: bool,
    /// The index of the last compacted entry (the snapshot's, or later).
    pub(crate) offset: u64,
    /// The term of the entry at `offset`.
    pub(crate) offset_term: u64,
    /// During recovery: `offset_term` is not known yet (the log was
    /// compacted to an entry whose segment is deleted); a later group-state
    /// record restates it.
    pub(crate) term_unknown: bool,
    /// `entries[i]` is the entry at index `offset + 1 + i`.
    /// Invariant: the segments of the entries do not decrease with index.
    pub(crate) entries: VecDeque<Loc>,
}

/// What [`check_change`] tracks of a group.
#[derive(Debug, Clone, Copy, Default)]
struct Meta {
    offset: u64,
    last: u64,
    snapshot: u64,
}

impl Group {
    fn meta(&self) -> Meta {
        Meta {
            offset: self.offset,
            last: self.last_index(),
            snapshot: self.snapshot.index,
        }
    }

    pub(crate) fn first_index(&self) -> u64 {
        self.offset + 1
    }

    pub(crate) fn last_index(&self) -> u64 {
        self.offset + self.entries.len() as u64
    }

    pub(crate) fn term(&self, idx: u64) -> std::result::Result<u64, StorageError> {
        if idx < self.offset {
            return Err(StorageError::Compacted);
        }
        if idx == self.offset {
            return Ok(self.offset_term);
        }
        match self.entries.get((idx - self.offset - 1) as usize) {
            Some(l) => Ok(l.term),
            None => Err(StorageError::Unavailable),
        }
    }

    /// Whether the entry at `idx` is a [`Loc::HOLE`] (or is the compaction
    /// point with an unknown term).
    fn hole_at(&self, idx: u64) -> bool {
        if idx == self.offset {
            return self.term_unknown;
        }
        idx > self.offset
            && self
                .entries
                .get((idx - self.offset - 1) as usize)
                .is_some_and(|l| *l == Loc::HOLE)
    }

    /// The first index of a hole left by recovery, if any.
    fn first_hole(&self) -> Option<u64> {
        if self.term_unknown {
            return Some(self.offset);
        }
        self.entries
            .iter()
            .position(|l| *l == Loc::HOLE)
            .map(|i| self.offset + 1 + i as u64)
    }

    /// The segment of the first live entry: the oldest segment the group
    /// needs.
    fn first_segment(&self) -> Option<u32> {
        self.entries.front().map(|l| l.seg)
    }

    fn live_bytes(&self) -> u64 {
        self.entries.iter().map(|l| u64::from(l.len) + 12).sum()
    }

    fn heap_bytes(&self) -> u64 {
        let cs = &self.snapshot.conf_state;
        let ids = cs.voters.capacity()
            + cs.learners.capacity()
            + cs.voters_outgoing.capacity()
            + cs.learners_next.capacity();
        (ids * 8 + self.entries.capacity() * std::mem::size_of::<Loc>()) as u64
    }
}

/// Checks that `change` fits a group in state `m` (the rules of
/// [`raftlet::MemoryStorage`]) and moves `m` past it.
fn check_change(m: &mut Meta, change: Change) -> std::result::Result<(), StorageError> {
    match change {
        Change::Entries { first, count } => {
            if count == 0 {
                return Ok(());
            }
            let last_new = first + count - 1;
            if last_new <= m.offset {
                return Ok(());
            }
            if first.max(m.offset + 1) > m.last + 1 {
                return Err(StorageError::Unavailable);
            }
            m.last = last_new;
        }
        Change::SnapshotApply { index } => {
            if index <= m.snapshot {
                return Err(StorageError::SnapshotOutOfDate);
            }
            *m = Meta {
                offset: index,
                last: index,
                snapshot: index,
            };
        }
        Change::Compact(index) => {
            if index <= m.offset {
                return Err(StorageError::Compacted);
            }
            if index > m.last {
                return Err(StorageError::Unavailable);
            }
            m.offset = index;
        }
        Change::Remove => *m = Meta::default(),
        Change::State => {}
    }
    Ok(())
}

/// The name of the snapshot file of `group` at `index`/`term`.
pub(crate) fn snapshot_name(group: u64, index: u64, term: u64) -> String {
    format!("snap-{group:016x}-{index:016x}-{term:016x}.snap")
}

fn segment_name(n: u32) -> String {
    format!("{n:016x}.log")
}

fn parse_segment_name(name: &str) -> Option<u32> {
    let hex = name.strip_suffix(".log")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16)
        .ok()
        .and_then(|n| u32::try_from(n).ok())
}

/// Applies the operations of one record to `groups`. The payload sits at
/// byte `payload_off` of segment `seg`. Files of snapshots replaced by the
/// record are added to `superseded`. `Err` says why the record does not
/// fit the groups (which are then in an unspecified state).
///
/// `recovering` allows what only a log whose oldest segments were deleted
/// holds: entries of a group that start past its last entry (the ones
/// between were in a deleted segment, and a later compaction drops them)
/// and compactions to such an entry (a later group-state record restates
/// the term). [`Inner::recover`] checks that no such hole is left.
fn apply_payload(
    groups: &mut HashMap<u64, Group>,
    kind: u8,
    payload: &[u8],
    seg: u32,
    payload_off: u64,
    superseded: &mut Vec<String>,
    recovering: bool,
) -> std::result::Result<(), String> {
    let mut r = PayloadReader::new(payload);
    let ops = std::iter::from_fn(move || r.next_op().transpose());
    apply_ops(groups, kind, ops, seg, payload_off, superseded, recovering)
}

/// What [`apply_noted`] did with a record.
enum Applied {
    /// Applied; the changes, to put back in reverse order if the write
    /// fails.
    Done(Vec<Undo>),
    /// Not applied (an operation that cannot be put back): its operations.
    Read(Vec<(u64, Op)>),
}

/// How to put back one change [`apply_noted`] made.
#[derive(Debug)]
enum Undo {
    /// The group was created: remove it.
    Created(u64),
    /// Its entries from `pos` on were replaced: truncate to `pos`, then
    /// append `removed`.
    Entries {
        gid: u64,
        pos: usize,
        removed: Vec<Loc>,
    },
    /// Its hard state was `old`.
    HardState { gid: u64, old: HardState },
    /// Its configuration was `old`.
    ConfState { gid: u64, old: ConfState },
}

/// Applies a batch record at `at` (segment, payload offset) as
/// [`apply_payload`] does, noting each change, if every operation is one
/// that [`undo_noted`] can put back (entries, hard states, configurations);
/// otherwise only reads them.
fn apply_noted(
    groups: &mut HashMap<u64, Group>,
    payload: &[u8],
    at: (u32, u64),
) -> std::result::Result<Applied, String> {
    let mut r = PayloadReader::new(payload);
    let mut ops = Vec::new();
    while let Some(op) = r.next_op()? {
        ops.push(op);
    }
    let undoable = |op: &Op| matches!(op, Op::Entries { .. } | Op::HardState(_) | Op::ConfState(_));
    if !ops.iter().all(|(_, op)| undoable(op)) {
        return Ok(Applied::Read(ops));
    }
    let mut undo = Vec::with_capacity(ops.len() + 1);
    for (gid, op) in ops {
        if !groups.contains_key(&gid) {
            undo.push(Undo::Created(gid));
        }
        let g = groups.entry(gid).or_default();
        apply_op(g, gid, op, at.0, at.1, false, Some(&mut undo))?;
    }
    Ok(Applied::Done(undo))
}

/// Puts back the changes [`apply_noted`] noted, the last first.
fn undo_noted(groups: &mut HashMap<u64, Group>, undo: Vec<Undo>) {
    for u in undo.into_iter().rev() {
        match u {
            Undo::Created(gid) => {
                groups.remove(&gid);
            }
            Undo::Entries { gid, pos, removed } => {
                if let Some(g) = groups.get_mut(&gid) {
                    g.entries.truncate(pos);
                    g.entries.extend(removed);
                }
            }
            Undo::HardState { gid, old } => {
                if let Some(g) = groups.get_mut(&gid) {
                    g.hard_state = old;
                }
            }
            Undo::ConfState { gid, old } => {
                if let Some(g) = groups.get_mut(&gid) {
                    g.snapshot.conf_state = old;
                }
            }
        }
    }
}

/// [`apply_payload`] for operations read already (a read error among them
/// ends the record as a read error of the payload does).
fn apply_ops(
    groups: &mut HashMap<u64, Group>,
    kind: u8,
    ops: impl IntoIterator<Item = std::result::Result<(u64, Op), String>>,
    seg: u32,
    payload_off: u64,
    superseded: &mut Vec<String>,
    recovering: bool,
) -> std::result::Result<(), String> {
    let mut restated = 0usize;
    for op in ops {
        let (gid, op) = op?;
        if kind == KIND_CHECKPOINT && !matches!(op, Op::GroupState { .. }) {
            return Err("a checkpoint holds an operation that is not a group state".into());
        }
        let old_file = groups
            .get(&gid)
            .filter(|g| g.snapshot_file)
            .map(|g| snapshot_name(gid, g.snapshot.index, g.snapshot.term));
        match op {
            Op::Remove => {
                groups.remove(&gid);
                superseded.extend(old_file);
            }
            Op::GroupState {
                hard_state,
                snapshot,
                snapshot_file,
                offset,
                offset_term,
            } => {
                restated += 1;
                let g = groups.entry(gid).or_insert_with(|| Group {
                    offset,
                    offset_term,
                    ..Group::default()
                });
                if g.term_unknown && g.offset == offset {
                    g.offset_term = offset_term;
                    g.term_unknown = false;
                }
                if g.offset != offset || g.offset_term != offset_term {
                    return Err(format!(
                        "checkpoint of group {gid} says its log starts after {offset} \
                         (term {offset_term}), the log says {} (term {})",
                        g.offset, g.offset_term
                    ));
                }
                g.hard_state = hard_state;
                g.snapshot = snapshot;
                g.snapshot_file = snapshot_file;
            }
            op => {
                let g = groups.entry(gid).or_default();
                apply_op(g, gid, op, seg, payload_off, recovering, None)?;
                let new_file = g
                    .snapshot_file
                    .then(|| snapshot_name(gid, g.snapshot.index, g.snapshot.term));
                if old_file.is_some() && old_file != new_file {
                    superseded.extend(old_file);
                }
            }
        }
    }
    if kind == KIND_CHECKPOINT && restated != groups.len() {
        return Err(format!(
            "checkpoint restates {restated} groups, the log holds {}",
            groups.len()
        ));
    }
    Ok(())
}

/// Applies one operation to group `gid` (see [`apply_payload`]). With
/// `undo`, an operation [`undo_noted`] can put back notes its change there
/// (the others are not given one).
fn apply_op(
    g: &mut Group,
    gid: u64,
    op: Op,
    seg: u32,
    payload_off: u64,
    recovering: bool,
    undo: Option<&mut Vec<Undo>>,
) -> std::result::Result<(), String> {
    if recovering {
        // Entries between the last one and those this operation needs were
        // in a deleted segment: stand-ins until a compaction drops them.
        let upto = match &op {
            Op::Entries { first, .. } => first.saturating_sub(1),
            Op::Compact(index) => *index,
            Op::SnapshotCreate(meta) => meta.index,
            _ => 0,
        };
        let last = g.last_index();
        if upto > last {
            g.entries.extend((last + 1..=upto).map(|_| Loc::HOLE));
        }
    }
    let mut m = g.meta();
    let change = match &op {
        Op::Entries { first, entries } => Change::Entries {
            first: *first,
            count: entries.len() as u64,
        },
        Op::SnapshotApply(meta) => Change::SnapshotApply { index: meta.index },
        Op::Compact(i) => Change::Compact(*i),
        _ => Change::State,
    };
    check_change(&mut m, change).map_err(|e| format!("group {gid}: {e}"))?;
    match op {
        Op::Entries { first, entries } => {
            let Some(last_new) = (first + entries.len() as u64).checked_sub(1) else {
                return Ok(());
            };
            if entries.is_empty() || last_new <= g.offset {
                return Ok(());
            }
            let skip = (g.offset + 1).saturating_sub(first) as usize;
            let pos = (first + skip as u64 - g.offset - 1) as usize;
            match undo {
                Some(u) => {
                    let pos = pos.min(g.entries.len());
                    u.push(Undo::Entries {
                        gid,
                        pos,
                        removed: g.entries.drain(pos..).collect(),
                    })
                }
                None => g.entries.truncate(pos),
            }
            g.entries.extend(entries[skip..].iter().map(|e| Loc {
                seg,
                len: e.len,
                off: payload_off + e.at as u64,
                term: e.term,
            }));
        }
        // A stored commit index never goes back (see `DiskStore::write`):
        // the same rule when the record is written and when it is replayed.
        Op::HardState(hs) => {
            if let Some(u) = undo {
                u.push(Undo::HardState {
                    gid,
                    old: g.hard_state,
                });
            }
            g.hard_state = HardState {
                commit: hs.commit.max(g.hard_state.commit),
                ..hs
            }
        }
        Op::ConfState(cs) => {
            if let Some(u) = undo {
                u.push(Undo::ConfState {
                    gid,
                    old: std::mem::replace(&mut g.snapshot.conf_state, cs),
                });
            } else {
                g.snapshot.conf_state = cs;
            }
        }
        Op::SnapshotApply(meta) => {
            g.entries = VecDeque::new();
            g.offset = meta.index;
            g.offset_term = meta.term;
            g.snapshot = meta;
            g.snapshot_file = true;
        }
        Op::SnapshotCreate(meta) => {
            if meta.index <= g.snapshot.index {
                return Err(format!("group {gid}: {}", StorageError::SnapshotOutOfDate));
            }
            let term = g
                .term(meta.index)
                .map_err(|e| format!("group {gid}: {e}"))?;
            let known = !(recovering && g.hole_at(meta.index));
            if known && term != meta.term {
                return Err(format!(
                    "group {gid}: snapshot at {} has term {}, the log {term}",
                    meta.index, meta.term
                ));
            }
            g.snapshot = meta;
            g.snapshot_file = true;
        }
        Op::Compact(index) => {
            let term = g.term(index).map_err(|e| format!("group {gid}: {e}"))?;
            g.term_unknown = recovering && g.hole_at(index);
            g.entries.drain(..(index - g.offset) as usize);
            g.offset = index;
            g.offset_term = term;
            if g.entries.capacity() > 2 * g.entries.len() + 64 {
                g.entries.shrink_to(2 * g.entries.len());
            }
        }
        Op::Remove | Op::GroupState { .. } => unreachable!("handled by apply_payload"),
    }
    Ok(())
}

#[derive(Debug)]
struct Segment {
    /// Shared so that a writer can sync it without holding the store's lock.
    file: Arc<dyn FsFile>,
    path: PathBuf,
    /// A direct write went to it: the file holds a second descriptor
    /// (see [`FsFile::write_direct_at`]).
    direct: bool,
}

/// Everything behind the store's lock.
#[derive(Debug)]
pub(crate) struct Inner {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    opts: Options,
    pub(crate) groups: HashMap<u64, Group>,
    segments: BTreeMap<u32, Segment>,
    /// The segment records are appended to (the last one).
    active: u32,
    /// Where the next record goes in the active segment.
    write_off: u64,
    /// The active segment's bytes before this offset have been written
    /// (records, or zeros written ahead of them; see [`Inner::append`]);
    /// past it, the preallocated blocks may still be unwritten extents.
    written_to: u64,
    /// Records in the active segment (its checkpoint included).
    active_records: u64,
    next_seq: u64,
    /// Every record up to this seq is durable.
    synced_seq: u64,
    /// The first fatal error; every later write returns it.
    failed: Option<DiskError>,
    /// A writer is syncing the active segment without the lock (group
    /// commit); the others wait on [`Shared::durable`].
    syncing: bool,
    /// Writers waiting on [`Shared::durable`].
    waiting: usize,
    buf: Vec<u8>,
    /// The bounce buffers of direct writes ([`Inner::write_direct`]), each
    /// with [`DIRECT_CHUNK`] bytes from an address aligned to
    /// [`DIRECT_ALIGN`]: one, and three once a record needs more than one
    /// chunk; allocated by the first direct write that needs them.
    direct_bufs: Vec<Vec<u8>>,
    /// The bytes of the active segment from the last multiple of
    /// [`DIRECT_ALIGN`] below `write_off` up to it, as a direct write left
    /// them: `(segment, write_off, bytes)`, valid while both still match.
    /// A direct write that follows another one takes its first block's
    /// head from here instead of reading it back.
    direct_tail: Option<(u32, u64, Vec<u8>)>,
    /// The payloads of the records written most recently, for reads.
    cache: RecordCache,
    _lock: Box<dyn FsLock>,
    /// Bugs planted by a test.
    #[cfg(feature = "bug-injection")]
    bugs: DiskBugs,
}

/// The durable log of every group of a process in one directory.
///
/// Cloning gives another handle on the same store; it is `Send + Sync`
/// (one lock inside). Get a group's [`raftlet::Storage`] with
/// [`DiskStore::group`], persist Readies with [`DiskGroup::persist_ready`]
/// or, for many groups with one sync, with [`WriteBatch::add_ready`] and
/// [`DiskStore::write`]. The directory is locked while any handle is alive.
#[derive(Debug, Clone)]
pub struct DiskStore {
    shared: Arc<Shared>,
}

/// The state of a store and the signal of its syncs.
#[derive(Debug)]
struct Shared {
    inner: Mutex<Inner>,
    /// Notified whenever `synced_seq` moves or the log fails.
    durable: Condvar,
}

impl DiskStore {
    /// Opens (creating it if needed) the store in `dir` on the real
    /// filesystem, with default [`Options`].
    ///
    /// # Errors
    /// As [`DiskStore::open_with`].
    pub fn open(dir: impl AsRef<Path>) -> Result<DiskStore> {
        DiskStore::open_with(Arc::new(StdFs), dir.as_ref(), Options::default())
    }

    /// Opens (creating it if needed) the store in `dir` on `fs` and
    /// recovers it: every record that was synced is back, a torn tail is
    /// cut off, leftover temporary files are deleted.
    ///
    /// # Errors
    /// [`DiskError::Locked`] if the directory is already open;
    /// [`DiskError::Corrupt`] naming the segment and offset of a damaged
    /// record in the middle of the log; [`DiskError::SnapshotMissing`] or
    /// [`DiskError::SnapshotCorrupt`] for a snapshot file the log needs;
    /// [`DiskError::Io`] if the filesystem fails;
    /// [`DiskError::InvalidInput`] if `options.segment_size` is 0.
    pub fn open_with(fs: Arc<dyn FileSystem>, dir: &Path, options: Options) -> Result<DiskStore> {
        if options.segment_size == 0 {
            return Err(DiskError::InvalidInput("segment_size must not be 0".into()));
        }
        let dir = dir.to_path_buf();
        fs.create_dir_all(&dir)
            .map_err(|e| DiskError::io("create", &dir, &e))?;
        let lock_path = dir.join("LOCK");
        let lock = fs.lock(&lock_path).map_err(|e| {
            if e.kind() == io::ErrorKind::WouldBlock {
                DiskError::Locked { dir: dir.clone() }
            } else {
                DiskError::io("lock", &lock_path, &e)
            }
        })?;
        let mut inner = Inner {
            fs,
            dir,
            opts: options,
            groups: HashMap::new(),
            segments: BTreeMap::new(),
            active: 0,
            write_off: 0,
            written_to: 0,
            active_records: 0,
            next_seq: 1,
            synced_seq: 0,
            failed: None,
            syncing: false,
            waiting: 0,
            buf: Vec::new(),
            direct_bufs: Vec::new(),
            direct_tail: None,
            cache: RecordCache::default(),
            _lock: lock,
            #[cfg(feature = "bug-injection")]
            bugs: DiskBugs::default(),
        };
        inner.recover()?;
        Ok(DiskStore {
            shared: Arc::new(Shared {
                inner: Mutex::new(inner),
                durable: Condvar::new(),
            }),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        match self.shared.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => {
                // A panic under the lock may have left the index half
                // updated: take no more writes.
                let mut g = poisoned.into_inner();
                if g.failed.is_none() {
                    g.failed = Some(DiskError::InvalidInput(
                        "a thread panicked while writing to the store".into(),
                    ));
                }
                g
            }
        }
    }

    /// A handle on `group`, implementing [`raftlet::Storage`]. A group that
    /// was never written reads as an empty log.
    pub fn group(&self, group: u64) -> DiskGroup {
        DiskGroup::new(self.clone(), group)
    }

    /// The ids of the groups held, sorted.
    pub fn groups(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.lock().groups.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Persists `batch` as one record, synced once if
    /// [`WriteBatch::must_sync`] (group commit). Concurrent writers share
    /// syncs: the sync runs without the store's lock and covers every
    /// record written before it. Snapshot files are written
    /// and synced first. Nothing is written if any operation does not fit
    /// its group's log. A hard state whose commit index is below its
    /// group's stored one keeps the stored commit: a stored commit index
    /// never goes back (a light Ready's commit written before the hard
    /// state of a Ready taken earlier stands). The record holds what was
    /// written; the rule applies as it is applied to the index, when it is
    /// written and when it is replayed at recovery.
    ///
    /// # Errors
    /// [`DiskError::Storage`] for an operation that does not fit (entries
    /// leaving a gap, an out-of-date snapshot, a compaction out of range);
    /// [`DiskError::Io`] if a write fails (the store is unchanged and takes
    /// further writes); [`DiskError::Failed`] if a sync fails, now or
    /// earlier (the store takes no more writes).
    pub fn write(&self, batch: &WriteBatch) -> Result<()> {
        let mut inner = self.lock();
        inner.check_failed()?;
        if batch.is_empty() {
            if batch.must_sync() {
                inner.sync_log()?;
            }
            return Ok(());
        }
        if batch.size() > MAX_PAYLOAD {
            return Err(DiskError::InvalidInput(format!(
                "batch of {} bytes exceeds the record limit of {MAX_PAYLOAD}",
                batch.size()
            )));
        }
        inner.validate(batch)?;
        for (gid, snap) in &batch.snapshots {
            inner.write_snapshot_file(*gid, snap)?;
        }
        let (seq, superseded) = inner.commit(KIND_BATCH, &batch.payload.buf, false)?;
        if !batch.must_sync() {
            return Ok(());
        }
        let inner = self.wait_durable(inner, seq)?;
        // The records pointing to newer snapshots are durable: the old
        // files may go (a crash first leaves them to the next open).
        for name in superseded {
            let _ = inner.fs.remove(&inner.path(&name));
        }
        Ok(())
    }

    /// Raises `group`'s commit index to `commit` (nothing when it is there
    /// already) in a record written without a sync ([`DiskGroup::set_commit`]).
    /// The hard state is read and written back under the store's lock: read
    /// outside it, a hard state saved by another thread in between (a new
    /// term, a vote) would be written over by the older one read before it,
    /// and a node restarted on that would have forgotten its vote.
    ///
    /// # Errors
    /// I/O errors as [`DiskStore::write`].
    pub(crate) fn raise_commit(&self, group: u64, commit: u64) -> Result<()> {
        let mut inner = self.lock();
        inner.check_failed()?;
        let mut hs = inner
            .groups
            .get(&group)
            .map(|g| g.hard_state)
            .unwrap_or_default();
        if hs.commit >= commit {
            return Ok(());
        }
        hs.commit = commit;
        let mut b = WriteBatch::new();
        b.set_hard_state(group, &hs);
        inner.validate(&b)?;
        inner.commit(KIND_BATCH, &b.payload.buf, false).map(drop)
    }

    /// Makes every write so far durable.
    ///
    /// # Errors
    /// [`DiskError::Failed`] if the sync fails, now or earlier.
    pub fn sync(&self) -> Result<()> {
        let inner = self.lock();
        inner.check_failed()?;
        let last = inner.next_seq - 1;
        self.wait_durable(inner, last).map(drop)
    }

    /// Returns once record `seq` is durable (group commit). The first
    /// writer that finds it is not syncs the active segment without the
    /// lock, for every record written so far; writers that come meanwhile
    /// wait for that sync or the next one, so concurrent writers of many
    /// groups share syncs. A failed sync fails the log for all of them.
    fn wait_durable<'a>(
        &'a self,
        mut inner: MutexGuard<'a, Inner>,
        seq: u64,
    ) -> Result<MutexGuard<'a, Inner>> {
        loop {
            if inner.synced_seq >= seq {
                return Ok(inner);
            }
            inner.check_failed()?;
            if inner.syncing {
                inner.waiting += 1;
                inner = self
                    .shared
                    .durable
                    .wait(inner)
                    .unwrap_or_else(PoisonError::into_inner);
                inner.waiting -= 1;
                continue;
            }
            let target = inner.next_seq - 1;
            let seg = &inner.segments[&inner.active];
            let (file, path) = (Arc::clone(&seg.file), seg.path.clone());
            let skip = inner.skip_sync();
            inner.syncing = true;
            drop(inner);
            let r = if skip { Ok(()) } else { file.sync() };
            inner = self.lock();
            inner.syncing = false;
            let outcome = match r {
                Ok(()) => {
                    // (A segment switch meanwhile may have synced further.)
                    inner.synced_seq = inner.synced_seq.max(target);
                    Ok(())
                }
                Err(e) => Err(inner.fail(DiskError::io("sync", &path, &e))),
            };
            // A wake-up is a system call even with no one to wake: a single
            // writer (a host of one group) would pay one per synced write.
            if inner.waiting > 0 {
                self.shared.durable.notify_all();
            }
            outcome?;
        }
    }

    /// Records a snapshot of `group`'s state machine at `index` (as
    /// [`raftlet::MemoryStorageCore::create_snapshot`]) and returns it:
    /// `cs` is the configuration at `index` (`None` keeps the one held),
    /// `data` the serialized state machine; `index` must be applied and
    /// covered by the group's stored commit index (the hard state's the
    /// group holds, or its snapshot's). The log is kept; compact it with
    /// [`DiskGroup::compact`]. Durable on return.
    ///
    /// # Errors
    /// [`DiskError::Storage`] with `SnapshotOutOfDate` if `index` is not
    /// past the current snapshot, `Unavailable` if it is past the last
    /// entry, `Compacted` if its term is no longer known;
    /// [`DiskError::InvalidInput`] if `cs` is not a configuration a node
    /// could run (as `MemoryStorage` checks it);
    /// [`DiskError::SnapshotUncommitted`] if `index` is above the stored
    /// commit index (checked after the others); I/O errors as
    /// [`DiskStore::write`].
    pub fn create_snapshot(
        &self,
        group: u64,
        index: u64,
        cs: Option<ConfState>,
        data: Option<Bytes>,
    ) -> Result<Snapshot> {
        let mut inner = self.lock();
        inner.check_failed()?;
        let g = inner.groups.get(&group).cloned().unwrap_or_default();
        if index <= g.snapshot.index {
            return Err(StorageError::SnapshotOutOfDate.into());
        }
        if let Some(cs) = &cs {
            raftlet::validate::check_conf_state(cs)
                .map_err(|e| DiskError::InvalidInput(e.to_string()))?;
        }
        if index > g.last_index() {
            return Err(StorageError::Unavailable.into());
        }
        let term = g.term(index)?;
        let commit = g.hard_state.commit.max(g.snapshot.index);
        if index > commit {
            return Err(DiskError::SnapshotUncommitted { index, commit });
        }
        let snap = Snapshot {
            data,
            metadata: SnapshotMetadata {
                conf_state: cs.unwrap_or(g.snapshot.conf_state),
                index,
                term,
            },
        };
        inner.write_snapshot_file(group, &snap)?;
        let mut w = PayloadWriter::default();
        w.snapshot_create(group, &snap.metadata);
        let (seq, superseded) = inner.commit(KIND_BATCH, &w.buf, false)?;
        let inner = self.wait_durable(inner, seq)?;
        for name in superseded {
            let _ = inner.fs.remove(&inner.path(&name));
        }
        Ok(snap)
    }

    /// Reclaims space now: deletes the segments no group needs, after
    /// rewriting the small live logs that keep the oldest ones alive (see
    /// [`Options::rewrite_max_bytes`]). Also done at every segment switch.
    ///
    /// # Errors
    /// As [`DiskStore::write`].
    pub fn purge(&self) -> Result<()> {
        let mut inner = self.lock();
        inner.check_failed()?;
        inner.purge()
    }

    /// Figures about the store (files, bytes, index memory).
    pub fn stats(&self) -> StoreStats {
        let inner = self.lock();
        let log_bytes = inner
            .segments
            .iter()
            .map(|(&n, s)| {
                if n == inner.active {
                    inner.write_off
                } else {
                    s.file.size().unwrap_or(0)
                }
            })
            .sum();
        let per_entry = std::mem::size_of::<(u64, Group)>() as u64 + 8;
        let index_bytes = inner
            .groups
            .values()
            .map(|g| per_entry + g.heap_bytes())
            .sum::<u64>()
            + (inner.groups.capacity() as u64 - inner.groups.len() as u64) * per_entry;
        StoreStats {
            groups: inner.groups.len(),
            segments: inner.segments.len(),
            open_files: 1 + inner
                .segments
                .values()
                .map(|s| 1 + usize::from(s.direct))
                .sum::<usize>(),
            log_bytes,
            read_cache_bytes: inner.cache.bytes,
            index_bytes,
            next_seq: inner.next_seq,
        }
    }

    /// The error that failed the log, if a sync failed.
    pub fn failure(&self) -> Option<DiskError> {
        self.lock().failed.clone()
    }

    /// Whether `self` and `other` are handles on the same store (so that
    /// their groups' writes can share a [`WriteBatch`]).
    pub fn same_store(&self, other: &DiskStore) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// The directory of the store.
    pub fn dir(&self) -> PathBuf {
        self.lock().dir.clone()
    }

    /// Plants `bugs` in this store (and every handle on it) from now on.
    /// For tests only: a planted bug breaks durability on purpose.
    #[cfg(feature = "bug-injection")]
    pub fn plant_bugs(&self, bugs: DiskBugs) {
        self.lock().bugs = bugs;
    }
}

/// The payloads of the batch records this process wrote most recently
/// ([`Options::read_cache_bytes`]), by where they are in the log. A record
/// never changes once written (the next one goes after it, and segment
/// numbers are not reused), so a kept payload is what the file holds there.
/// Records are written at ever later places, so the first key is always
/// the oldest record.
#[derive(Debug, Default)]
struct RecordCache {
    /// (segment, payload offset) -> payload.
    by_place: BTreeMap<(u32, u64), Bytes>,
    /// Payload bytes held.
    bytes: u64,
}

impl RecordCache {
    /// Keeps `payload`, written at `off` of segment `seg` (after every
    /// record kept), dropping the oldest records beyond `budget` bytes.
    fn insert(&mut self, seg: u32, off: u64, payload: &[u8], budget: u64) {
        let len = payload.len() as u64;
        if len == 0 || len > budget {
            return;
        }
        debug_assert!(
            self.by_place
                .last_key_value()
                .is_none_or(|(k, _)| *k < (seg, off)),
            "a record kept at or after ({seg}, {off})"
        );
        while self.bytes + len > budget {
            let Some((_, b)) = self.by_place.pop_first() else {
                break;
            };
            self.bytes -= b.len() as u64;
        }
        self.by_place
            .insert((seg, off), Bytes::copy_from_slice(payload));
        self.bytes += len;
    }

    /// The `len` bytes at `off` of segment `seg`, if a kept payload holds
    /// them.
    fn get(&self, seg: u32, off: u64, len: u64) -> Option<Bytes> {
        let (&(s, start), b) = self.by_place.range(..=(seg, off)).next_back()?;
        let from = off.checked_sub(start)?;
        if s != seg || from + len > b.len() as u64 {
            return None;
        }
        Some(b.slice(from as usize..(from + len) as usize))
    }

    /// Forgets the records of segment `seg` (deleted).
    fn drop_segment(&mut self, seg: u32) {
        let gone: Vec<(u32, u64)> = self
            .by_place
            .range((seg, 0)..=(seg, u64::MAX))
            .map(|(k, _)| *k)
            .collect();
        for k in &gone {
            if let Some(b) = self.by_place.remove(k) {
                self.bytes -= b.len() as u64;
            }
        }
    }
}

/// The bytes of a direct write ([`Inner::write_direct`]): the
/// concatenation of `pieces` (the head block's earlier bytes, the record's
/// header, its payload, its padding), then zeros, copied out chunk by
/// chunk while the payload's checksum is taken.
struct Pieces<'a> {
    pieces: [&'a [u8]; 4],
    /// The piece being copied, and how far.
    at: usize,
    off: usize,
    /// The checksum so far (of the header's fields and the payload copied).
    crc: u32,
}

impl Pieces<'_> {
    /// The index of the payload in `pieces`.
    const PAYLOAD: usize = 2;

    /// Fills `dst` with the next bytes (zeros once the pieces are out).
    fn fill(&mut self, dst: &mut [u8]) {
        let mut n = 0;
        while n < dst.len() && self.at < self.pieces.len() {
            let p = &self.pieces[self.at][self.off..];
            let k = p.len().min(dst.len() - n);
            dst[n..n + k].copy_from_slice(&p[..k]);
            if self.at == Self::PAYLOAD {
                self.crc = crc32c::crc32c_append(self.crc, &p[..k]);
            }
            n += k;
            self.off += k;
            if self.off == self.pieces[self.at].len() {
                self.at += 1;
                self.off = 0;
            }
        }
        dst[n..].fill(0);
    }
}

/// One direct write of a record's chunk ([`FsFile::write_direct_at`]).
/// `Ok(false)`: the file takes no direct writes, and this is the record's
/// `first` write (nothing of it was written); a refusal after earlier
/// chunks went out direct is an error.
fn write_chunk(file: &dyn FsFile, buf: &[u8], off: u64, first: bool) -> io::Result<bool> {
    if file.write_direct_at(buf, off)? {
        return Ok(true);
    }
    if first {
        return Ok(false);
    }
    Err(io::Error::other(
        "direct writes refused part way through a record",
    ))
}

/// Writes the next `total` bytes of `src` direct at `off`, in chunks of
/// [`DIRECT_CHUNK`] through the bounce buffers `bufs` (two or more): this
/// thread fills one while another writes the last, so that the copy and
/// the checksum are done while the disk writes. `Ok(false)`: the file
/// took no direct write, and none was made.
fn write_chunks(
    file: &dyn FsFile,
    src: &mut Pieces<'_>,
    bufs: &mut Vec<Vec<u8>>,
    off: u64,
    total: usize,
) -> io::Result<bool> {
    use std::sync::mpsc::sync_channel;
    let mut fill_one = |buf: &mut Vec<u8>, done: usize| {
        let at = buf.as_ptr().align_offset(DIRECT_ALIGN);
        let n = (total - done).min(DIRECT_CHUNK);
        src.fill(&mut buf[at..at + n]);
        (at, n)
    };
    std::thread::scope(|s| {
        let (jobs_tx, jobs) = sync_channel::<(Vec<u8>, usize, usize, u64)>(bufs.len());
        let (free_tx, free) = sync_channel::<Vec<u8>>(bufs.len());
        let writer = std::thread::Builder::new()
            .name("raftlet-disk-write".into())
            .spawn_scoped(s, move || {
                // Writes until one fails; the buffers come back either way.
                let mut outcome = Ok(0usize);
                for (buf, at, n, off) in jobs {
                    if let Ok(wrote) = outcome {
                        outcome = match write_chunk(file, &buf[at..at + n], off, wrote == 0) {
                            Ok(true) => Ok(wrote + 1),
                            Ok(false) => Err(None),
                            Err(e) => Err(Some(e)),
                        };
                    }
                    if free_tx.send(buf).is_err() {
                        break;
                    }
                }
                outcome
            });
        let Ok(writer) = writer else {
            // No thread: write each chunk here once it is filled.
            let mut done = 0;
            let buf = &mut bufs[0];
            while done < total {
                let (at, n) = fill_one(buf, done);
                if !write_chunk(file, &buf[at..at + n], off + done as u64, done == 0)? {
                    return Ok(false);
                }
                done += n;
            }
            return Ok(true);
        };
        let count = bufs.len();
        let mut spare: Vec<Vec<u8>> = std::mem::take(bufs);
        let mut done = 0;
        let mut sent = 0;
        while done < total {
            let mut buf = match spare.pop() {
                Some(b) => b,
                None => match free.recv() {
                    Ok(b) => b,
                    Err(_) => break,
                },
            };
            let (at, n) = fill_one(&mut buf, done);
            if jobs_tx.send((buf, at, n, off + done as u64)).is_err() {
                break;
            }
            sent += 1;
            done += n;
        }
        drop(jobs_tx);
        let outcome = writer.join();
        // The buffers back, for the next record (all of them, unless the
        // thread failed: the next record makes new ones).
        bufs.append(&mut spare);
        bufs.extend(free.try_iter());
        debug_assert!(outcome.is_err() || bufs.len() == count);
        match outcome {
            Ok(Ok(wrote)) if wrote == sent && done == total => Ok(true),
            Ok(Ok(_)) => Err(io::Error::other("a direct write was not made")),
            Ok(Err(None)) => Ok(false),
            Ok(Err(Some(e))) => Err(e),
            Err(_) => Err(io::Error::other("the thread writing the record failed")),
        }
    })
}

/// The last `n` bytes of the concatenation of `pieces`.
fn last_bytes(pieces: &[&[u8]], mut n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    for p in pieces.iter().rev() {
        let k = n.min(p.len());
        out[n - k..n].copy_from_slice(&p[p.len() - k..]);
        n -= k;
        if n == 0 {
            break;
        }
    }
    out
}

/// Syncs a segment of the log, unless a test planted
/// `DiskBugs::skip_sync`.
fn sync_segment(inner: &Inner, file: &dyn FsFile) -> io::Result<()> {
    if inner.skip_sync() {
        return Ok(());
    }
    file.sync()
}

impl Inner {
    /// Whether a test planted `DiskBugs::skip_sync`.
    fn skip_sync(&self) -> bool {
        #[cfg(feature = "bug-injection")]
        return self.bugs.skip_sync;
        #[cfg(not(feature = "bug-injection"))]
        false
    }

    /// Whether a test planted `DiskBugs::skip_dir_sync`.
    fn skip_dir_sync(&self) -> bool {
        #[cfg(feature = "bug-injection")]
        return self.bugs.skip_dir_sync;
        #[cfg(not(feature = "bug-injection"))]
        false
    }

    fn check_failed(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(DiskError::Failed(Box::new(e.clone()))),
            None => Ok(()),
        }
    }

    /// Records `e` as the log's fatal error and returns it as
    /// [`DiskError::Failed`].
    fn fail(&mut self, e: DiskError) -> DiskError {
        let first = self.failed.get_or_insert(e).clone();
        DiskError::Failed(Box::new(first))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn sync_dir(&mut self) -> Result<()> {
        let dir = self.dir.clone();
        self.fs
            .sync_dir(&dir)
            .map_err(|e| self.fail(DiskError::io("sync directory", &dir, &e)))
    }

    fn sync_log(&mut self) -> Result<()> {
        if self.synced_seq + 1 >= self.next_seq {
            return Ok(());
        }
        let seg = &self.segments[&self.active];
        let (r, path) = (sync_segment(self, &*seg.file), seg.path.clone());
        r.map_err(|e| self.fail(DiskError::io("sync", &path, &e)))?;
        self.synced_seq = self.next_seq - 1;
        Ok(())
    }

    fn validate(&self, batch: &WriteBatch) -> Result<()> {
        let mut staged: HashMap<u64, Meta> = HashMap::new();
        for &(gid, change) in &batch.changes {
            let m = staged
                .entry(gid)
                .or_insert_with(|| self.groups.get(&gid).map(Group::meta).unwrap_or_default());
            check_change(m, change)?;
        }
        Ok(())
    }

    /// Writes `snap` to its file: `.tmp`, sync, rename, sync the directory.
    fn write_snapshot_file(&mut self, gid: u64, snap: &Snapshot) -> Result<()> {
        let name = snapshot_name(gid, snap.metadata.index, snap.metadata.term);
        let path = self.path(&name);
        let tmp = self.path(&format!("{name}.tmp"));
        let data = record::encode_snapshot_file(snap);
        let file = self
            .fs
            .create(&tmp)
            .map_err(|e| DiskError::io("create", &tmp, &e))?;
        if let Err(e) = file.write_at(&data, 0) {
            drop(file);
            let _ = self.fs.remove(&tmp);
            return Err(DiskError::io("write", &tmp, &e));
        }
        if let Err(e) = file.sync() {
            return Err(self.fail(DiskError::io("sync", &tmp, &e)));
        }
        drop(file);
        self.fs
            .rename(&tmp, &path)
            .map_err(|e| DiskError::io("rename", &tmp, &e))?;
        self.sync_dir()
    }

    /// Appends a record, syncs it if `sync` (callers that may wait without
    /// the lock pass false and use [`DiskStore::wait_durable`]), applies it
    /// to the index, and reclaims space if the log moved to a new segment.
    /// Returns the record's seq and the snapshot files it supersedes, to be
    /// deleted once it is durable.
    fn commit(&mut self, kind: u8, payload: &[u8], sync: bool) -> Result<(u64, Vec<String>)> {
        let rotated = self.maybe_rotate(payload.len())?;
        let at = (self.active, self.write_off + HEADER as u64);
        let mut superseded = Vec::new();
        let (appended, applied) = if kind == KIND_BATCH
            && payload.len() as u64 >= self.opts.direct_min_bytes.max(PARALLEL_APPLY_MIN)
        {
            self.append_applying(payload, sync, at, &mut superseded)
        } else {
            (self.append(kind, payload, sync), None)
        };
        // (An index changed part way is no index, even if the write failed.)
        let applied = match applied {
            Some(Err(reason)) => Err(reason),
            Some(Ok(())) => Ok(()),
            None => match &appended {
                Ok(_) => apply_payload(
                    &mut self.groups,
                    kind,
                    payload,
                    at.0,
                    at.1,
                    &mut superseded,
                    false,
                ),
                Err(_) => Ok(()),
            },
        };
        if let Err(reason) = applied {
            // Validation said it fits: the index no longer matches the log.
            let file = self.segments[&at.0].path.clone();
            return Err(self.fail(DiskError::Corrupt {
                file,
                offset: at.1 - HEADER as u64,
                reason: format!("a record written could not be applied: {reason}"),
            }));
        }
        let (seg, payload_off) = appended?;
        debug_assert_eq!((seg, payload_off), at);
        let seq = self.next_seq - 1;
        if rotated {
            // The write is durable whatever happens here: only a failed
            // sync (which fails the log) is reported.
            if let Err(e) = self.purge() {
                if e.is_fatal() {
                    return Err(e);
                }
            }
        }
        Ok((seq, superseded))
    }

    /// [`Inner::append`] of a large batch record, its operations applied to
    /// the index by a second thread meanwhile (for a round of 1,000 groups
    /// x 1,024 entries, 40-90 ms of CPU beside a write of 150 ms). Each
    /// change is noted as it is made and put back if the write fails, so
    /// that a failed write still changes nothing. A record with an
    /// operation that cannot be put back so (a snapshot, a compaction, a
    /// removal) is only read there, and applied here after the write, as
    /// [`Inner::commit`] applies the others. The second result is `None` if
    /// the record is still to be applied (no thread could be started).
    #[allow(clippy::type_complexity)]
    fn append_applying(
        &mut self,
        payload: &[u8],
        sync: bool,
        at: (u32, u64),
        superseded: &mut Vec<String>,
    ) -> (Result<(u32, u64)>, Option<std::result::Result<(), String>>) {
        let mut groups = std::mem::take(&mut self.groups);
        let (appended, worked) = std::thread::scope(|s| {
            let worker = std::thread::Builder::new()
                .name("raftlet-disk-apply".into())
                .spawn_scoped(s, || apply_noted(&mut groups, payload, at));
            let appended = self.append(KIND_BATCH, payload, sync);
            (appended, worker.map(|w| w.join()))
        });
        let worked = match worked {
            // No thread: nothing was applied.
            Err(_) => {
                self.groups = groups;
                return (appended, None);
            }
            Ok(w) => w,
        };
        let applied = match worked {
            Ok(Ok(Applied::Done(undo))) => {
                if appended.is_err() {
                    undo_noted(&mut groups, undo);
                }
                Ok(())
            }
            Ok(Ok(Applied::Read(ops))) => {
                self.groups = groups;
                if appended.is_err() {
                    return (appended, Some(Ok(())));
                }
                let r = apply_ops(
                    &mut self.groups,
                    KIND_BATCH,
                    ops.into_iter().map(Ok),
                    at.0,
                    at.1,
                    superseded,
                    false,
                );
                return (appended, Some(r));
            }
            Ok(Err(reason)) => Err(reason),
            Err(_) => Err("the thread applying the record failed".into()),
        };
        self.groups = groups;
        (appended, Some(applied))
    }

    /// Appends one record to the active segment. A failed write changes
    /// nothing (the next record goes to the same offset); a failed sync is
    /// fatal.
    ///
    /// A small record that reaches past [`Inner::written_to`] is written
    /// together with [`ZERO_AHEAD`] bytes of zeros after it (within the
    /// preallocated `segment_size`). `fallocate` leaves *unwritten*
    /// extents: the first write into one changes the file's block map, so
    /// the `fdatasync` after it must commit the filesystem journal too (on
    /// ext4 about twice the cost of a sync of the data alone). Zeros
    /// written ahead pay that once per [`ZERO_AHEAD`] bytes instead of on
    /// every sync. Recovery reads them as what they are: no record.
    ///
    /// A record of [`Options::direct_min_bytes`] or more is written past the
    /// page cache where the filesystem allows it ([`Inner::write_direct`]).
    /// Where it does not, a record
    /// larger than [`COPY_MAX`] is written in place, as its header, its
    /// payload and its padding, one after the other (a failure part way
    /// leaves a prefix of the record, as a failed single write may),
    /// instead of being copied into one buffer first.
    fn append(&mut self, kind: u8, payload: &[u8], sync: bool) -> Result<(u32, u64)> {
        let len = align8(HEADER + payload.len()) as u64;
        let end = self.write_off + len;
        let file = Arc::clone(&self.segments[&self.active].file);
        let mut written = end;
        let mut direct = Ok(None);
        if len >= self.opts.direct_min_bytes {
            direct = self.write_direct(&*file, kind, payload);
        }
        let r = match direct {
            Ok(Some(to)) => {
                written = to;
                Ok(())
            }
            Err(e) => Err(e),
            Ok(None) if payload.len() > COPY_MAX => {
                let head = record::record_header(kind, self.next_seq, self.synced_seq, payload);
                let pad = [0u8; 8];
                let pad = &pad[..(len as usize - HEADER - payload.len())];
                file.write_at(&head, self.write_off)
                    .and_then(|()| file.write_at(payload, self.write_off + HEADER as u64))
                    .and_then(|()| {
                        if pad.is_empty() {
                            Ok(())
                        } else {
                            file.write_at(pad, end - pad.len() as u64)
                        }
                    })
            }
            Ok(None) => {
                let mut buf = std::mem::take(&mut self.buf);
                buf.clear();
                encode_record(&mut buf, kind, self.next_seq, self.synced_seq, payload);
                if buf.len() <= ZERO_AHEAD_MAX_RECORD && end > self.written_to {
                    written = (end + ZERO_AHEAD).min(self.opts.segment_size).max(end);
                    buf.resize((written - self.write_off) as usize, 0);
                }
                let r = file.write_at(&buf, self.write_off);
                self.buf = buf;
                r
            }
        };
        if let Err(e) = r {
            let path = self.segments[&self.active].path.clone();
            return Err(DiskError::io("write", &path, &e));
        }
        let at = (self.active, self.write_off + HEADER as u64);
        if kind == KIND_BATCH {
            self.cache
                .insert(at.0, at.1, payload, self.opts.read_cache_bytes);
        }
        self.write_off = end;
        self.written_to = self.written_to.max(written);
        self.next_seq += 1;
        self.active_records += 1;
        if sync {
            self.sync_log()?;
        }
        Ok(at)
    }

    /// Writes a record at `write_off` of the active segment `file` past the
    /// page cache ([`FsFile::write_direct_at`]), and returns the offset the
    /// blocks it wrote end at; `None` if the file takes no direct writes
    /// (nothing was written).
    ///
    /// Direct writes cover whole blocks of [`DIRECT_ALIGN`] bytes, so the
    /// first one starts at the block that holds `write_off`: its bytes
    /// before `write_off` (the end of earlier records) are written again
    /// as they are, which a crash that tears the write at any sector leaves
    /// as they were. The last block is filled with zeros after the record,
    /// which recovery reads as the end of the log. The record goes out
    /// through bounce buffers of [`DIRECT_CHUNK`] bytes, in as many writes
    /// as it needs, each of which is durable only with the record's sync,
    /// as a buffered write. The record's checksum is taken as its payload
    /// is copied into them, so the first chunk, which holds the header, is
    /// written last; the others go out on a second thread while this one
    /// fills the next ([`write_chunks`]). A failure part way leaves some
    /// of the record's blocks written and no whole record (the next record
    /// goes over them); a crash part way may leave any of them, as with a
    /// single write, and is a torn tail.
    ///
    /// The page cache is left out because filling it is, for a large
    /// record, slower than the disk: docs/bench-d1.md measured the copy
    /// of a 9.6 MB record into fresh page-cache pages at 25-40 ms, and
    /// the same bytes written direct and synced at about 10 ms.
    fn write_direct(
        &mut self,
        file: &dyn FsFile,
        kind: u8,
        payload: &[u8],
    ) -> io::Result<Option<u64>> {
        let align = DIRECT_ALIGN as u64;
        let base = self.write_off / align * align;
        let mut head = [0u8; DIRECT_ALIGN];
        let head = &mut head[..(self.write_off - base) as usize];
        match &self.direct_tail {
            Some((seg, off, bytes)) if (*seg, *off) == (self.active, self.write_off) => {
                head.copy_from_slice(bytes);
                #[cfg(debug_assertions)]
                {
                    let mut disk = vec![0u8; head.len()];
                    let n = file.read_at(&mut disk, base)?;
                    debug_assert_eq!(&disk[..n], &head[..], "the kept head block is stale");
                }
            }
            _ => {
                if file.read_at(head, base)? != head.len() {
                    // The bytes before `write_off` are always there; if the
                    // file says otherwise, write as before.
                    return Ok(None);
                }
            }
        }
        let len = align8(HEADER + payload.len());
        let end = self.write_off + len as u64;
        let to = end.next_multiple_of(align);
        let total = (to - base) as usize;
        let chunks = total.div_ceil(DIRECT_CHUNK);
        // The first chunk and, for a record of more, two that take turns.
        let pool = if chunks > 1 { 3 } else { 1 };
        while self.direct_bufs.len() < pool {
            self.direct_bufs
                .push(vec![0u8; DIRECT_CHUNK + DIRECT_ALIGN]);
        }
        let (mut header, crc) =
            record::header_start(kind, self.next_seq, self.synced_seq, payload.len());
        let zeros = [0u8; 8];
        let pad = &zeros[..len - HEADER - payload.len()];
        let mut src = Pieces {
            pieces: [head, &header, payload, pad],
            at: 0,
            off: 0,
            crc,
        };
        // The first chunk, which holds the header, is filled first and
        // written last: the payload's checksum is taken as it is copied,
        // and is known once the last byte is.
        let mut first = std::mem::take(&mut self.direct_bufs[0]);
        let at0 = first.as_ptr().align_offset(DIRECT_ALIGN);
        let len0 = total.min(DIRECT_CHUNK);
        let mut rest = (chunks > 1).then(|| self.direct_bufs.split_off(1));
        let written = if at0 >= DIRECT_ALIGN {
            Ok(false)
        } else {
            src.fill(&mut first[at0..at0 + len0]);
            let others = match rest.as_mut() {
                Some(bufs) => write_chunks(file, &mut src, bufs, base + len0 as u64, total - len0),
                None => Ok(true),
            };
            let crc = src.crc;
            let crc_at = at0 + head.len() + record::HEADER_CRC_AT;
            first[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
            record::header_finish(&mut header, crc);
            match others {
                Ok(true) => write_chunk(file, &first[at0..at0 + len0], base, chunks == 1),
                // An error, or nothing written (no direct writes here).
                r => r,
            }
        };
        self.direct_bufs[0] = first;
        if let Some(bufs) = rest {
            self.direct_bufs.extend(bufs);
        }
        if !written? {
            return Ok(None);
        }
        let pieces: [&[u8]; 4] = [head, &header, payload, pad];
        if let Some(seg) = self.segments.get_mut(&self.active) {
            seg.direct = true;
        }
        let tail_len = (end % align) as usize;
        let tail = last_bytes(&pieces, tail_len);
        if tail_len > 0 {
            // The direct write dropped the last block from the page cache: a
            // small record written after it would have the kernel read the
            // block back from the disk first (a synchronous read, 0.1-0.3 ms
            // on the machines D2 ran on). Writing the whole block again
            // through the page cache, as the direct write left it, keeps it
            // there. Its bytes are those on the disk, so a failure or a
            // crash part way through changes nothing.
            let mut block = [0u8; DIRECT_ALIGN];
            block[..tail_len].copy_from_slice(&tail);
            let _ = file.write_at(&block, end - tail_len as u64);
        }
        self.direct_tail = Some((self.active, end, tail));
        Ok(Some(to))
    }

    /// Moves to a new segment if a record of `payload_len` bytes would not
    /// fit the active one (which must hold more than its checkpoint).
    fn maybe_rotate(&mut self, payload_len: usize) -> Result<bool> {
        let len = align8(HEADER + payload_len) as u64;
        if self.write_off + len <= self.opts.segment_size || self.active_records <= 1 {
            return Ok(false);
        }
        self.rotate(len)?;
        Ok(true)
    }

    /// Syncs the active segment, creates the next one (preallocated, its
    /// directory synced) with room for its checkpoint and a record of
    /// `next_len` bytes, and writes the checkpoint. The checkpoint is not
    /// synced here: the sync of the record that follows covers it (and
    /// the new file's size), and until then no record of the new segment
    /// counts as durable. A crash before that sync leaves a segment
    /// without a valid checkpoint, which recovery drops.
    fn rotate(&mut self, next_len: u64) -> Result<()> {
        self.sync_log()?;
        let n = self
            .active
            .checked_add(1)
            .ok_or_else(|| DiskError::InvalidInput("segment numbers exhausted".into()))?;
        let payload = self.checkpoint_payload();
        let checkpoint_len = align8(HEADER + payload.len()) as u64;
        // Whole blocks, so that a direct write of the record's last block
        // stays inside the preallocated file.
        let need = (checkpoint_len + next_len).next_multiple_of(DIRECT_ALIGN as u64);
        self.create_segment(n, need.max(self.opts.segment_size))?;
        if next_len > ZERO_AHEAD_MAX_RECORD as u64 {
            // The record that follows is written whole, right after the
            // checkpoint: zeros written ahead of the checkpoint would only
            // be overwritten by it (a mebibyte more per switch).
            self.written_to = need;
        }
        if let Err(e) = self.append(KIND_CHECKPOINT, &payload, false) {
            // A segment without its checkpoint must not take records.
            return Err(self.fail(e));
        }
        Ok(())
    }

    /// Creates segment `n`, preallocated to `len` bytes, and syncs the
    /// directory. The file itself is synced by the first sync of a record
    /// in it (`fdatasync` also writes the size that `fallocate` set).
    fn create_segment(&mut self, n: u32, len: u64) -> Result<()> {
        let path = self.path(&segment_name(n));
        let file = self
            .fs
            .create(&path)
            .map_err(|e| DiskError::io("create", &path, &e))?;
        if let Err(e) = file.allocate(len) {
            drop(file);
            let _ = self.fs.remove(&path);
            return Err(DiskError::io("allocate", &path, &e));
        }
        if !self.skip_dir_sync() {
            self.sync_dir()?;
        }
        self.segments.insert(
            n,
            Segment {
                file: Arc::from(file),
                path,
                direct: false,
            },
        );
        self.active = n;
        self.write_off = 0;
        self.written_to = 0;
        self.direct_tail = None;
        self.active_records = 0;
        Ok(())
    }

    fn checkpoint_payload(&self) -> Vec<u8> {
        let mut w = PayloadWriter::default();
        let mut ids: Vec<&u64> = self.groups.keys().collect();
        ids.sort_unstable();
        for gid in ids {
            let g = &self.groups[gid];
            w.group_state(
                *gid,
                &g.hard_state,
                &g.snapshot,
                g.snapshot_file,
                g.offset,
                g.offset_term,
            );
        }
        w.buf
    }

    /// Deletes the segments older than any live entry, first rewriting
    /// small live logs that pin the oldest segment.
    ///
    /// Before segments go, the state of every group is restated in a
    /// synced record: a group may have compacted (after the checkpoint
    /// that will open the log) to an entry that lived in a deleted
    /// segment, and recovery takes that entry's term from the restatement.
    fn purge(&mut self) -> Result<()> {
        let mut budget = self.opts.rewrite_max_bytes;
        let mut doomed = Vec::new();
        let old: Vec<u32> = self
            .segments
            .range(..self.active)
            .map(|(&n, _)| n)
            .collect();
        for n in old {
            let mut pinned: Vec<u64> = self
                .groups
                .iter()
                .filter(|(_, g)| g.first_segment().is_some_and(|s| s <= n))
                .map(|(&id, _)| id)
                .collect();
            if !pinned.is_empty() {
                // Stops counting once over the budget: with large logs that
                // are never compacted, this runs at every segment switch.
                let mut total = 0u64;
                for id in &pinned {
                    total += self.groups[id].live_bytes();
                    if total > budget {
                        break;
                    }
                }
                if total > budget {
                    break;
                }
                budget -= total;
                pinned.sort_unstable();
                let payload = self.rewrite_payload(&pinned)?;
                self.maybe_rotate(payload.len())?;
                let (seg, off) = self.append(KIND_BATCH, &payload, true)?;
                let mut superseded = Vec::new();
                if let Err(reason) = apply_payload(
                    &mut self.groups,
                    KIND_BATCH,
                    &payload,
                    seg,
                    off,
                    &mut superseded,
                    false,
                ) {
                    let file = self.segments[&seg].path.clone();
                    return Err(self.fail(DiskError::Corrupt {
                        file,
                        offset: off - HEADER as u64,
                        reason: format!("a rewrite could not be applied: {reason}"),
                    }));
                }
            }
            doomed.push(n);
        }
        if doomed.is_empty() {
            return Ok(());
        }
        let payload = self.checkpoint_payload();
        self.maybe_rotate(payload.len())?;
        self.append(KIND_BATCH, &payload, true)?;
        for n in doomed {
            if let Some(seg) = self.segments.remove(&n) {
                self.cache.drop_segment(n);
                drop(seg.file);
                self.fs
                    .remove(&seg.path)
                    .map_err(|e| DiskError::io("remove", &seg.path, &e))?;
            }
        }
        self.sync_dir()
    }

    /// An entries operation per group holding its whole live log, read
    /// back from the segments.
    fn rewrite_payload(&self, ids: &[u64]) -> Result<Vec<u8>> {
        let mut w = PayloadWriter::default();
        for id in ids {
            let g = &self.groups[id];
            w.entries_head(*id, g.first_index(), g.entries.len() as u32);
            for l in &g.entries {
                let raw = self.read_loc(l)?;
                w.entry(l.term, &raw);
            }
        }
        Ok(w.buf)
    }

    fn read_loc(&self, l: &Loc) -> Result<Bytes> {
        if let Some(b) = self.cache.get(l.seg, l.off, u64::from(l.len)) {
            return Ok(b);
        }
        let seg = self
            .segments
            .get(&l.seg)
            .ok_or_else(|| DiskError::Corrupt {
                file: self.path(&segment_name(l.seg)),
                offset: l.off,
                reason: "the index points into a segment that is gone".into(),
            })?;
        let mut buf = vec![0u8; l.len as usize];
        let n = seg
            .file
            .read_at(&mut buf, l.off)
            .map_err(|e| DiskError::io("read", &seg.path, &e))?;
        if n != buf.len() {
            return Err(DiskError::Corrupt {
                file: seg.path.clone(),
                offset: l.off,
                reason: "entry runs past the end of the file".into(),
            });
        }
        Ok(Bytes::from(buf))
    }

    /// Reads and decodes the entries at `locs`, starting at index `first`.
    pub(crate) fn read_entries(
        &self,
        first: u64,
        locs: &[Loc],
        out: &mut Vec<Entry>,
    ) -> Result<()> {
        let mut i = 0;
        while i < locs.len() {
            // One read per run of entries that sit together in a segment.
            let start = locs[i];
            let mut end = start.off + u64::from(start.len);
            let mut j = i + 1;
            while j < locs.len()
                && locs[j].seg == start.seg
                && locs[j].off >= end
                && locs[j].off - end <= 64
            {
                end = locs[j].off + u64::from(locs[j].len);
                j += 1;
            }
            let span = self.read_loc(&Loc {
                seg: start.seg,
                len: u32::try_from(end - start.off).unwrap_or(u32::MAX),
                off: start.off,
                term: 0,
            })?;
            for (k, l) in locs[i..j].iter().enumerate() {
                let at = (l.off - start.off) as usize;
                let raw = span.slice(at..at + l.len as usize);
                let index = first + (i + k) as u64;
                let e = Entry::decode_bytes(&raw).map_err(|err| DiskError::Corrupt {
                    file: self.path(&segment_name(l.seg)),
                    offset: l.off,
                    reason: format!("entry {index}: {err}"),
                })?;
                if e.index != index || e.term != l.term {
                    return Err(DiskError::Corrupt {
                        file: self.path(&segment_name(l.seg)),
                        offset: l.off,
                        reason: format!(
                            "entry {index} (term {}) reads back as {} (term {})",
                            l.term, e.index, e.term
                        ),
                    });
                }
                out.push(e);
            }
            i = j;
        }
        Ok(())
    }

    /// Reads `group`'s snapshot file and checks it against the log.
    pub(crate) fn read_snapshot(&self, gid: u64, g: &Group) -> Result<Snapshot> {
        let name = snapshot_name(gid, g.snapshot.index, g.snapshot.term);
        let path = self.path(&name);
        let file = match self.fs.open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(DiskError::SnapshotMissing { file: path })
            }
            Err(e) => return Err(DiskError::io("open", &path, &e)),
        };
        let data = read_all(&*file).map_err(|e| DiskError::io("read", &path, &e))?;
        let snap =
            record::decode_snapshot_file(data).map_err(|reason| DiskError::SnapshotCorrupt {
                file: path.clone(),
                reason,
            })?;
        if snap.metadata.index != g.snapshot.index || snap.metadata.term != g.snapshot.term {
            return Err(DiskError::SnapshotCorrupt {
                file: path,
                reason: format!(
                    "holds the snapshot at {} (term {}), the log expects {} (term {})",
                    snap.metadata.index, snap.metadata.term, g.snapshot.index, g.snapshot.term
                ),
            });
        }
        Ok(Snapshot {
            data: snap.data,
            // The log's metadata is the truth (a later conf-state record
            // may have changed the configuration).
            metadata: g.snapshot.clone(),
        })
    }

    /// Rebuilds the index from the directory (see the crate docs for the
    /// rules).
    fn recover(&mut self) -> Result<()> {
        let names = self
            .fs
            .list(&self.dir)
            .map_err(|e| DiskError::io("list", &self.dir, &e))?;
        let mut segs: Vec<u32> = Vec::new();
        let mut snaps: BTreeSet<String> = BTreeSet::new();
        let mut dir_changed = false;
        for name in names {
            if let Some(n) = parse_segment_name(&name) {
                segs.push(n);
            } else if name.ends_with(".tmp") {
                // A snapshot that was never renamed into place.
                let p = self.path(&name);
                self.fs
                    .remove(&p)
                    .map_err(|e| DiskError::io("remove", &p, &e))?;
                dir_changed = true;
            } else if name.starts_with("snap-") && name.ends_with(".snap") {
                snaps.insert(name);
            }
        }
        segs.sort_unstable();
        let mut superseded = Vec::new();
        let mut expected: Option<u64> = None;
        // Per segment replayed: where its last record ends, how many it holds.
        let mut ends: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        let mut i = 0;
        while i < segs.len() {
            let n = segs[i];
            let path = self.path(&segment_name(n));
            let file = self
                .fs
                .open(&path)
                .map_err(|e| DiskError::io("open", &path, &e))?;
            let data = read_all(&*file).map_err(|e| DiskError::io("read", &path, &e))?;
            let mut off = 0usize;
            let mut records = 0u64;
            let bad: Option<(usize, String)> = loop {
                match parse_record(&data, off) {
                    Ok((h, payload, next)) => {
                        if let Some(s) = expected {
                            if h.seq != s {
                                break Some((
                                    off,
                                    format!("sequence gap: expected {s}, found {}", h.seq),
                                ));
                            }
                        }
                        if (records == 0) != (h.kind == KIND_CHECKPOINT) {
                            return Err(DiskError::Corrupt {
                                file: path,
                                offset: off as u64,
                                reason: if records == 0 {
                                    "the segment does not start with a checkpoint".into()
                                } else {
                                    "a checkpoint in the middle of a segment".into()
                                },
                            });
                        }
                        apply_payload(
                            &mut self.groups,
                            h.kind,
                            payload,
                            n,
                            (off + HEADER) as u64,
                            &mut superseded,
                            true,
                        )
                        .map_err(|reason| DiskError::Corrupt {
                            file: path.clone(),
                            offset: off as u64,
                            reason,
                        })?;
                        expected = Some(h.seq + 1);
                        records += 1;
                        off = next;
                    }
                    Err(reason) => break Some((off, reason)),
                }
            };
            self.segments.insert(
                n,
                Segment {
                    file: Arc::from(file),
                    path: path.clone(),
                    direct: false,
                },
            );
            ends.insert(n, (off as u64, records));
            let Some((bad_off, reason)) = bad else {
                i += 1;
                continue;
            };
            // Did the segment simply end, with the next one going on? A
            // segment ends in zeros, or in what a failed write left after
            // its last record (a failed write takes no seq, and the next
            // record goes to the same place; when that one is shorter, the
            // rest stays behind it). Either way no record is missing if
            // the next segment starts with the seq expected here: a record
            // at `bad_off` would have taken it. (A record's padding may
            // run past a truncated file's end.)
            let bad_off = bad_off.min(data.len());
            match segs.get(i + 1) {
                None if data[bad_off..].iter().all(|&b| b == 0) => break,
                None => {}
                Some(&next) => {
                    let np = self.path(&segment_name(next));
                    let nf = self
                        .fs
                        .open(&np)
                        .map_err(|e| DiskError::io("open", &np, &e))?;
                    let mut head = vec![0u8; HEADER];
                    let got = nf
                        .read_at(&mut head, 0)
                        .map_err(|e| DiskError::io("read", &np, &e))?;
                    let next_seq = u64::from_le_bytes(head[8..16].try_into().unwrap_or([0; 8]));
                    let continues =
                        got == HEADER && head[..4] == record::MAGIC && Some(next_seq) == expected;
                    if continues {
                        i += 1;
                        continue;
                    }
                }
            }
            // Torn tail or corruption: does any later record say the bad
            // one was durable?
            let claimed = self.later_claim(&segs[i..], &data, bad_off, expected)?;
            if let Some((cfile, coff)) = claimed {
                return Err(DiskError::Corrupt {
                    file: path,
                    offset: bad_off as u64,
                    reason: format!(
                        "{reason}; the record at {} offset {coff} says it was durable",
                        cfile.display()
                    ),
                });
            }
            // A torn tail: cut it off, drop the later segments.
            let seg = &self.segments[&n];
            seg.file
                .set_len(bad_off as u64)
                .and_then(|()| seg.file.allocate(self.opts.segment_size))
                .and_then(|()| seg.file.sync())
                .map_err(|e| DiskError::io("truncate", &path, &e))?;
            for &later in &segs[i + 1..] {
                let p = self.path(&segment_name(later));
                self.fs
                    .remove(&p)
                    .map_err(|e| DiskError::io("remove", &p, &e))?;
                dir_changed = true;
            }
            segs.truncate(i + 1);
            break;
        }
        // Every hole the deleted segments left must have been compacted.
        if let Some((&first_seg, seg)) = self.segments.iter().next() {
            let mut ids: Vec<u64> = self.groups.keys().copied().collect();
            ids.sort_unstable();
            for gid in ids {
                if let Some(idx) = self.groups[&gid].first_hole() {
                    return Err(DiskError::Corrupt {
                        file: seg.path.clone(),
                        offset: 0,
                        reason: format!(
                            "group {gid}: entry {idx} is missing (segments before {} are gone)",
                            segment_name(first_seg)
                        ),
                    });
                }
            }
        }
        // A last segment without even its checkpoint holds nothing: drop it.
        if let Some((&n, &(0, 0))) = ends.iter().next_back() {
            ends.remove(&n);
            let seg = self.segments.remove(&n).expect("segment was opened");
            drop(seg.file);
            self.fs
                .remove(&seg.path)
                .map_err(|e| DiskError::io("remove", &seg.path, &e))?;
            dir_changed = true;
        }
        self.next_seq = expected.unwrap_or(1);
        self.synced_seq = self.next_seq - 1;
        if let Some((&n, &(off, records))) = ends.iter().next_back() {
            self.active = n;
            self.write_off = off;
            self.written_to = off;
            self.active_records = records;
        }
        // Referenced snapshot files must be whole; the others are left
        // over from a crash before their record (or after a replacement).
        let mut wanted = BTreeSet::new();
        let mut ids: Vec<u64> = self.groups.keys().copied().collect();
        ids.sort_unstable();
        for gid in ids {
            let g = &self.groups[&gid];
            if g.snapshot_file {
                let name = snapshot_name(gid, g.snapshot.index, g.snapshot.term);
                if !snaps.contains(&name) {
                    return Err(DiskError::SnapshotMissing {
                        file: self.path(&name),
                    });
                }
                self.read_snapshot(gid, g)?;
                wanted.insert(name);
            }
        }
        for name in snaps.difference(&wanted) {
            let p = self.path(name);
            self.fs
                .remove(&p)
                .map_err(|e| DiskError::io("remove", &p, &e))?;
            dir_changed = true;
        }
        if self.segments.is_empty() {
            // A new store (or one whose every record was torn).
            let len = self.opts.segment_size;
            self.create_segment(segs.first().copied().unwrap_or(1).max(1), len)
                .map_err(unfail)?;
            let payload = self.checkpoint_payload();
            self.append(KIND_CHECKPOINT, &payload, true)
                .map_err(unfail)?;
        } else {
            // What a killed process left in the page cache must be durable
            // before records build on it.
            let seg = &self.segments[&self.active];
            seg.file
                .allocate(self.opts.segment_size)
                .and_then(|()| seg.file.sync())
                .map_err(|e| DiskError::io("sync", &seg.path, &e))?;
        }
        if dir_changed {
            self.sync_dir().map_err(unfail)?;
        }
        Ok(())
    }

    /// The first valid record after `bad_off` of `data` (the first of
    /// `segs`), or in the later segments, whose `synced` covers `expected`.
    fn later_claim(
        &self,
        segs: &[u32],
        data: &[u8],
        bad_off: usize,
        expected: Option<u64>,
    ) -> Result<Option<(PathBuf, u64)>> {
        let claims = |h: &record::Header| match expected {
            Some(s) => h.seq >= s && h.synced >= s,
            // The very first record is bad: any valid record after it
            // means the log went on.
            None => true,
        };
        let scan = |d: &[u8], from: usize| -> Option<usize> {
            let mut at = from;
            while at + HEADER <= d.len() {
                if d[at..at + 4] == record::MAGIC {
                    if let Ok((h, _, _)) = parse_record(d, at) {
                        if claims(&h) {
                            return Some(at);
                        }
                    }
                }
                at += 8;
            }
            None
        };
        if let Some(at) = scan(data, bad_off + 8) {
            return Ok(Some((self.path(&segment_name(segs[0])), at as u64)));
        }
        for &n in &segs[1..] {
            let p = self.path(&segment_name(n));
            let f = self
                .fs
                .open(&p)
                .map_err(|e| DiskError::io("open", &p, &e))?;
            let d = read_all(&*f).map_err(|e| DiskError::io("read", &p, &e))?;
            if let Some(at) = scan(&d, 0) {
                return Ok(Some((p, at as u64)));
            }
        }
        Ok(None)
    }
}

/// During open the store is not handed out, so a fatal error is reported
/// as what it is.
fn unfail(e: DiskError) -> DiskError {
    match e {
        DiskError::Failed(inner) => *inner,
        e => e,
    }
}
