//! The [`Storage`] trait through which the core reads the stable log, and
//! [`MemoryStorage`], an in-memory implementation (etcd `storage.go`).

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bytes::Bytes;

use crate::errors::{Result, StorageError};
use crate::log::size_limited_len;
use crate::pb::{ConfState, Entry, HardState, Snapshot};
use crate::types::EntryId;
use crate::validate::check_conf_state;
#[cfg(doc)]
use crate::Error;

/// The persisted state a node starts from: its [`HardState`] and the
/// configuration it last saved.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct RaftState {
    /// The last saved term, vote and commit index.
    pub hard_state: HardState,
    /// The last saved configuration.
    pub conf_state: ConfState,
}

/// Read access to the host's stable log, snapshot and persisted state
/// (etcd `Storage`).
///
/// The host writes to its storage on its own (after handling a `Ready`); the
/// core only reads through this trait. Any error other than the ones each
/// method documents is treated as fatal by the core: the node stops taking
/// part until the host recovers it.
pub trait Storage {
    /// The persisted hard state and configuration.
    ///
    /// # Errors
    /// Whatever the implementation's backing store reports.
    fn initial_state(&self) -> Result<RaftState>;

    /// The entries with indexes in `[low, high)`, in order.
    ///
    /// The total of their encoded sizes is at most `max_size` bytes
    /// (`u64::MAX` means no limit), except that at least one entry is
    /// returned whenever the range is not empty.
    ///
    /// # Errors
    /// [`StorageError::Compacted`] if `low` was compacted away,
    /// [`StorageError::Unavailable`] if part of the range is not in the log.
    fn entries(&self, low: u64, high: u64, max_size: u64) -> Result<Vec<Entry>>;

    /// Like [`Storage::entries`], but appends the entries to `out` (which
    /// lets the core reuse its buffers). The default calls
    /// [`Storage::entries`]; implementations may avoid the extra vector.
    ///
    /// # Errors
    /// As [`Storage::entries`]; `out` is left unchanged on error.
    fn entries_into(&self, low: u64, high: u64, max_size: u64, out: &mut Vec<Entry>) -> Result<()> {
        out.extend(self.entries(low, high, max_size)?);
        Ok(())
    }

    /// The term of the entry at `idx`, for `idx` in
    /// `[first_index() - 1, last_index()]`. The term of the entry just before
    /// the first one is kept for log matching even though the entry itself
    /// was compacted.
    ///
    /// # Errors
    /// [`StorageError::Compacted`] below that range,
    /// [`StorageError::Unavailable`] above it.
    fn term(&self, idx: u64) -> Result<u64>;

    /// Whether [`Storage::term`] and [`Storage::entries_into`] are known
    /// to check their ranges exactly as documented, with no other outcome
    /// than those (in particular, an entries read that succeeds was in
    /// range). The log then asks the storage directly for a stable entry's
    /// term, or for a range of stable entries, instead of reading
    /// [`Storage::first_index`] and [`Storage::last_index`] first: three
    /// reads of the storage, each taking its lock, become one. The default
    /// is `false`, which checks the ranges in the log and is right for any
    /// implementation; [`MemoryStorage`] and the library's durable storage
    /// say `true`.
    fn checks_range(&self) -> bool {
        false
    }

    /// The index of the first entry that may be read with
    /// [`Storage::entries`]; older entries are covered by the snapshot. When
    /// the log holds no entries this is `last_index() + 1`.
    ///
    /// # Errors
    /// Whatever the implementation's backing store reports.
    fn first_index(&self) -> Result<u64>;

    /// The index of the last entry in the log (the snapshot's index when the
    /// log holds no entries).
    ///
    /// # Errors
    /// Whatever the implementation's backing store reports.
    fn last_index(&self) -> Result<u64>;

    /// The most recent snapshot.
    ///
    /// `request_index` (the index the leader needs the peer to reach) and `to`
    /// (the peer the snapshot is for) are hints an implementation may use,
    /// for example to build a fresh snapshot on demand.
    ///
    /// # Errors
    /// [`StorageError::SnapshotTemporarilyUnavailable`] while a snapshot is
    /// being prepared: the core asks again later.
    fn snapshot(&self, request_index: u64, to: u64) -> Result<Snapshot>;

    /// The index of the snapshot held (0 for none), read when a node
    /// starts: the entries up to it were applied, so they are committed,
    /// even when the stored commit index lags behind it. That happens when
    /// a host applies entries before their Ready's write lands (which the
    /// Ready contract allows), takes a snapshot of that state, and crashes
    /// before the hard state that commits them is written; or when the
    /// snapshot was recorded and the compaction after it was lost.
    ///
    /// The default is the index just before [`Storage::first_index`]
    /// (etcd's assumption: the snapshot sits where the log was
    /// compacted), which is right for a storage that compacts, durably,
    /// exactly at each snapshot it records. [`MemoryStorage`] and the
    /// library's durable storage report the snapshot they hold.
    ///
    /// # Errors
    /// As [`Storage::first_index`].
    fn snapshot_index(&self) -> Result<u64> {
        Ok(self.first_index()?.saturating_sub(1))
    }
}

/// An in-memory [`Storage`] (etcd `MemoryStorage`).
///
/// Cloning gives another handle on the same storage, so the host and the node
/// can share it: the node reads through [`Storage`], the host writes through
/// [`MemoryStorage::wl`].
#[derive(Clone, Default, Debug)]
pub struct MemoryStorage {
    core: Arc<RwLock<MemoryStorageCore>>,
}

impl MemoryStorage {
    /// An empty storage: no entries, no snapshot, an empty configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty storage whose [`Storage::initial_state`] reports `cs`.
    ///
    /// # Errors
    /// [`Error::ConfChangeRefused`] for a configuration no node can start
    /// from (see [`MemoryStorageCore::set_conf_state`]).
    pub fn new_with_conf_state(cs: ConfState) -> Result<Self> {
        let s = Self::new();
        s.initialize_with_conf_state(cs)?;
        Ok(s)
    }

    /// Sets the configuration that [`Storage::initial_state`] reports (see
    /// [`MemoryStorageCore::set_conf_state`]).
    ///
    /// # Errors
    /// As [`MemoryStorageCore::set_conf_state`].
    pub fn initialize_with_conf_state(&self, cs: ConfState) -> Result<()> {
        self.wl().set_conf_state(cs)
    }

    /// Locks the storage for reading.
    ///
    /// A lock poisoned by a panicking writer is recovered, not propagated:
    /// every writer leaves the core consistent before it can panic.
    pub fn rl(&self) -> RwLockReadGuard<'_, MemoryStorageCore> {
        self.core.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Locks the storage for writing (poisoning is recovered as in
    /// [`MemoryStorage::rl`]).
    pub fn wl(&self) -> RwLockWriteGuard<'_, MemoryStorageCore> {
        self.core.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The contents of a [`MemoryStorage`], reached through
/// [`MemoryStorage::rl`] and [`MemoryStorage::wl`].
///
/// The default is an empty log: nothing compacted (index 0, term 0), no
/// entries, an empty hard state and snapshot.
#[derive(Debug, Default)]
pub struct MemoryStorageCore {
    hard_state: HardState,
    snapshot: Snapshot,
    /// The index and term of the last compacted entry (the snapshot's, or a
    /// later one after [`MemoryStorageCore::compact`]). Kept beside the log
    /// rather than as a placeholder entry at its head, so that an empty log
    /// allocates nothing.
    compacted: EntryId,
    /// `entries[i]` sits at log index `compacted.index + 1 + i`.
    entries: Vec<Entry>,
    /// One-shot test switch: the next [`Storage::snapshot`] call fails with
    /// [`StorageError::SnapshotTemporarilyUnavailable`].
    trigger_snap_unavailable: bool,
}

impl MemoryStorageCore {
    /// The saved hard state.
    pub fn hard_state(&self) -> &HardState {
        &self.hard_state
    }

    /// Saves the hard state.
    pub fn set_hard_state(&mut self, hs: HardState) {
        self.hard_state = hs;
    }

    /// Sets the commit index of the saved hard state.
    ///
    /// # Errors
    /// [`StorageError::Unavailable`] if `index` is past the last entry.
    pub fn commit_to(&mut self, index: u64) -> Result<()> {
        if index > self.last_index() {
            return Err(StorageError::Unavailable.into());
        }
        self.hard_state.commit = index;
        Ok(())
    }

    /// Sets the configuration reported by [`Storage::initial_state`] (the
    /// configuration in the snapshot metadata).
    ///
    /// # Errors
    /// [`Error::ConfChangeRefused`], leaving the configuration held, when
    /// `cs` names an id that is not a member id (0, `u64::MAX`,
    /// `u64::MAX - 1`), names an id twice, has a voter that is also a
    /// learner, or is otherwise not a configuration membership changes can
    /// produce (see [`crate::validate::check_conf_state`]).
    pub fn set_conf_state(&mut self, cs: ConfState) -> Result<()> {
        check_conf_state(&cs)?;
        self.snapshot.metadata.conf_state = cs;
        Ok(())
    }

    /// Replaces the whole contents with `snapshot`: the log becomes empty
    /// and starts right after the snapshot. The hard state is left alone.
    ///
    /// # Errors
    /// [`StorageError::SnapshotOutOfDate`] if `snapshot` is not newer than
    /// the snapshot already held; [`Error::ConfChangeRefused`] if its
    /// configuration is invalid (as for
    /// [`MemoryStorageCore::set_conf_state`]). Nothing changes then.
    // Ported from etcd-io/raft storage.go (ApplySnapshot).
    pub fn apply_snapshot(&mut self, snapshot: Snapshot) -> Result<()> {
        if self.snapshot.metadata.index >= snapshot.metadata.index {
            return Err(StorageError::SnapshotOutOfDate.into());
        }
        check_conf_state(&snapshot.metadata.conf_state)?;
        self.entries.clear();
        self.compacted = EntryId {
            term: snapshot.metadata.term,
            index: snapshot.metadata.index,
        };
        self.snapshot = snapshot;
        Ok(())
    }

    /// Records a snapshot of the state machine at `index` (returned by later
    /// [`Storage::snapshot`] calls) and returns it. `cs` is the configuration
    /// at `index` when it changed since the previous snapshot; `None` keeps
    /// the configuration held. The log is not compacted: call
    /// [`MemoryStorageCore::compact`] for that.
    ///
    /// `index` must be applied and covered by the commit index the storage
    /// holds (a Ready's hard state written, or a light Ready's commit): a
    /// host that applies entries before their Ready's write lands
    /// snapshots them once that write is done. Above the stored commit the
    /// storage may still hold an older entry that the Ready in flight
    /// replaces, and the snapshot would record that entry's term.
    ///
    /// # Errors
    /// [`StorageError::SnapshotOutOfDate`] if `index` is not past the
    /// current snapshot; [`StorageError::Unavailable`] if `index` is past the
    /// last entry; [`StorageError::Compacted`] if the entry at `index` was
    /// compacted away (its term is no longer known);
    /// [`Error::ConfChangeRefused`] if `cs` is invalid (as for
    /// [`MemoryStorageCore::set_conf_state`]). Nothing changes then.
    // Ported from etcd-io/raft storage.go (CreateSnapshot).
    pub fn create_snapshot(
        &mut self,
        index: u64,
        cs: Option<ConfState>,
        data: Option<Bytes>,
    ) -> Result<Snapshot> {
        if index <= self.snapshot.metadata.index {
            return Err(StorageError::SnapshotOutOfDate.into());
        }
        if let Some(cs) = &cs {
            check_conf_state(cs)?;
        }
        // etcd panics on the next two; they are caller input here.
        if index > self.last_index() {
            return Err(StorageError::Unavailable.into());
        }
        // Compacted when below the offset; in the log otherwise.
        let term = self.term(index)?;
        let meta = &mut self.snapshot.metadata;
        meta.index = index;
        meta.term = term;
        if let Some(cs) = cs {
            meta.conf_state = cs;
        }
        self.snapshot.data = data;
        Ok(self.snapshot.clone())
    }

    /// Discards the entries before `compact_index`; the entry at
    /// `compact_index` becomes the placeholder, so its term stays known.
    /// The caller must not compact past what the state machine applied.
    ///
    /// # Errors
    /// [`StorageError::Compacted`] if `compact_index` is not past the last
    /// compacted index; [`StorageError::Unavailable`] if it is past the last
    /// entry.
    // Ported from etcd-io/raft storage.go (Compact).
    pub fn compact(&mut self, compact_index: u64) -> Result<()> {
        let offset = self.offset();
        if compact_index <= offset {
            return Err(StorageError::Compacted.into());
        }
        if compact_index > self.last_index() {
            return Err(StorageError::Unavailable.into());
        }
        // `entries[i - 1]` is the entry at `compact_index`, which becomes the
        // last compacted one.
        let i = (compact_index - offset) as usize;
        let last = &self.entries[i - 1];
        self.compacted = EntryId {
            term: last.term,
            index: last.index,
        };
        let held = self.entries.len();
        self.entries.drain(..i);
        // Give memory back only when the log used less than half of its
        // buffer before this compaction too. A busy log compacted at
        // intervals fills its buffer again: shrinking it at every
        // compaction made it grow again by doubling, copying the entries
        // and faulting fresh pages in each time.
        if self.entries.capacity() > 2 * held + 64 {
            self.entries.shrink_to(held.max(2 * self.entries.len()));
        }
        Ok(())
    }

    /// Appends `ents`, which must be consecutive. Entries already compacted
    /// are skipped; existing entries from the index of the first new one on
    /// are replaced.
    ///
    /// # Errors
    /// [`StorageError::Unavailable`] if `ents` would leave a gap after the
    /// last entry, or are not consecutive (nothing is changed then).
    // Ported from etcd-io/raft storage.go (Append).
    pub fn append(&mut self, ents: &[Entry]) -> Result<()> {
        if let Some((skip, at)) = self.append_position(ents)? {
            // Drop the conflicting tail, if any, then extend.
            self.entries.truncate(at);
            self.entries.extend_from_slice(&ents[skip..]);
        }
        Ok(())
    }

    /// [`MemoryStorageCore::append`], taking the entries instead of cloning
    /// them: on success `ents` is left empty (its capacity kept), on error
    /// it is left as it was. A host that persists a Ready's entries and has
    /// no other use for them spares a reference-count increment and
    /// decrement per payload.
    ///
    /// # Errors
    /// As [`MemoryStorageCore::append`].
    ///
    /// ```
    /// # use raftlet::pb::{ConfState, Entry};
    /// # use raftlet::{MemoryStorage, Storage};
    /// let storage = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1]))?;
    /// let mut ents = vec![Entry { term: 1, index: 1, ..Entry::default() }];
    /// storage.wl().append_owned(&mut ents)?;
    /// assert!(ents.is_empty());
    /// assert_eq!(storage.last_index()?, 1);
    /// # Ok::<(), raftlet::Error>(())
    /// ```
    pub fn append_owned(&mut self, ents: &mut Vec<Entry>) -> Result<()> {
        if let Some((skip, at)) = self.append_position(ents)? {
            self.entries.truncate(at);
            self.entries.extend(ents.drain(skip..));
        }
        ents.clear();
        Ok(())
    }

    /// Where an append of `ents` goes: how many of them to skip (already
    /// compacted) and the position in `entries` of the first one kept;
    /// `None` when nothing is new.
    fn append_position(&self, ents: &[Entry]) -> Result<Option<(usize, usize)>> {
        let (Some(head), Some(tail)) = (ents.first(), ents.last()) else {
            return Ok(None);
        };
        // etcd assumes a consecutive batch; one that is not (from a host
        // passing its own entries) would be stored at the wrong positions,
        // or overflow computing its last index.
        if ents
            .windows(2)
            .any(|w| w[0].index.checked_add(1) != Some(w[1].index))
        {
            return Err(StorageError::Unavailable.into());
        }
        let first = self.first_index();
        let last = tail.index;
        // Nothing new: everything is already compacted.
        if last < first {
            return Ok(None);
        }
        // Skip the part that is already compacted.
        let skip = first.saturating_sub(head.index) as usize;
        // The position in `entries` of the first new entry: at least 0, as
        // its index is at least first_index once the compacted part is
        // skipped.
        let at = ents[skip].index - first;
        let len = self.entries.len() as u64;
        if at > len {
            // etcd panics: "missing log entry".
            return Err(StorageError::Unavailable.into());
        }
        Ok(Some((skip, at as usize)))
    }

    /// Makes the next [`Storage::snapshot`] call (and only that one) fail
    /// with [`StorageError::SnapshotTemporarilyUnavailable`]. For tests.
    pub fn trigger_snap_unavailable(&mut self) {
        self.trigger_snap_unavailable = true;
    }

    /// The snapshot held (its metadata carries the configuration).
    pub fn snapshot_ref(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The entries held, from [`Storage::first_index`] to
    /// [`Storage::last_index`].
    pub fn entries_ref(&self) -> &[Entry] {
        &self.entries
    }

    /// The last compacted index.
    fn offset(&self) -> u64 {
        self.compacted.index
    }

    fn first_index(&self) -> u64 {
        self.offset() + 1
    }

    fn last_index(&self) -> u64 {
        self.offset() + self.entries.len() as u64
    }

    // Ported from etcd-io/raft storage.go (Entries).
    fn entries(&self, low: u64, high: u64, max_size: u64) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        self.entries_into(low, high, max_size, &mut out)?;
        Ok(out)
    }

    fn entries_into(&self, low: u64, high: u64, max_size: u64, out: &mut Vec<Entry>) -> Result<()> {
        let offset = self.offset();
        if low <= offset {
            return Err(StorageError::Compacted.into());
        }
        // etcd panics on a range past the end; report it instead.
        if high > self.last_index() + 1 {
            return Err(StorageError::Unavailable.into());
        }
        // An empty log: there is nothing to read.
        if self.entries.is_empty() {
            return Err(StorageError::Unavailable.into());
        }
        if low > high {
            return Err(StorageError::Other(format!("invalid range [{low}, {high})")).into());
        }
        // `offset < low <= high <= last_index + 1`.
        let first = offset + 1;
        let range = &self.entries[(low - first) as usize..(high - first) as usize];
        let n = size_limited_len(range, max_size);
        out.extend_from_slice(&range[..n]);
        Ok(())
    }

    // Ported from etcd-io/raft storage.go (Term).
    fn term(&self, idx: u64) -> Result<u64> {
        let offset = self.offset();
        if idx < offset {
            return Err(StorageError::Compacted.into());
        }
        if idx == offset {
            return Ok(self.compacted.term);
        }
        match self.entries.get((idx - offset - 1) as usize) {
            Some(e) => Ok(e.term),
            None => Err(StorageError::Unavailable.into()),
        }
    }
}

impl Storage for MemoryStorage {
    fn initial_state(&self) -> Result<RaftState> {
        let core = self.rl();
        Ok(RaftState {
            hard_state: core.hard_state,
            conf_state: core.snapshot.metadata.conf_state.clone(),
        })
    }

    fn entries(&self, low: u64, high: u64, max_size: u64) -> Result<Vec<Entry>> {
        self.rl().entries(low, high, max_size)
    }

    fn entries_into(&self, low: u64, high: u64, max_size: u64, out: &mut Vec<Entry>) -> Result<()> {
        self.rl().entries_into(low, high, max_size, out)
    }

    fn term(&self, idx: u64) -> Result<u64> {
        self.rl().term(idx)
    }

    fn checks_range(&self) -> bool {
        true
    }

    fn first_index(&self) -> Result<u64> {
        Ok(self.rl().first_index())
    }

    fn last_index(&self) -> Result<u64> {
        Ok(self.rl().last_index())
    }

    fn snapshot_index(&self) -> Result<u64> {
        Ok(self.rl().snapshot.metadata.index)
    }

    fn snapshot(&self, _request_index: u64, _to: u64) -> Result<Snapshot> {
        let mut core = self.wl();
        if core.trigger_snap_unavailable {
            core.trigger_snap_unavailable = false;
            return Err(StorageError::SnapshotTemporarilyUnavailable.into());
        }
        Ok(core.snapshot.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::Error;
    use crate::pb::Encode;
    use crate::types::test_util::ents;

    /// A storage whose `entries` (placeholder first) are given directly, as
    /// etcd's tests build `MemoryStorage{ents: ents}`.
    fn storage_with(entries: Vec<Entry>) -> MemoryStorage {
        let s = MemoryStorage::new();
        {
            let mut core = s.wl();
            let (head, rest) = entries.split_first().expect("a placeholder");
            core.compacted = EntryId {
                term: head.term,
                index: head.index,
            };
            core.entries = rest.to_vec();
        }
        s
    }

    impl MemoryStorageCore {
        /// The log as etcd's tests see it: the placeholder of the last
        /// compacted entry (index and term only), then the entries.
        fn with_placeholder(&self) -> Vec<Entry> {
            let mut v = vec![Entry {
                term: self.compacted.term,
                index: self.compacted.index,
                ..Entry::default()
            }];
            v.extend_from_slice(&self.entries);
            v
        }
    }

    fn size(e: &Entry) -> u64 {
        e.encoded_len() as u64
    }

    fn err<T>(e: StorageError) -> Result<T> {
        Err(Error::Store(e))
    }

    /// etcd: TestStorageTerm
    #[test]
    fn test_storage_term() {
        let cases = [
            (2, err(StorageError::Compacted)),
            (3, Ok(3)),
            (4, Ok(4)),
            (5, Ok(5)),
            (6, err(StorageError::Unavailable)),
        ];
        for (i, want) in cases {
            let s = storage_with(ents(3, &[3, 4, 5]));
            assert_eq!(s.term(i), want, "term({i})");
        }
    }

    /// etcd: TestStorageEntries
    #[test]
    fn test_storage_entries() {
        let all = ents(3, &[3, 4, 5, 6]);
        let (s1, s2, s3) = (size(&all[1]), size(&all[2]), size(&all[3]));
        let cases = [
            (2, 6, u64::MAX, err(StorageError::Compacted)),
            (3, 4, u64::MAX, err(StorageError::Compacted)),
            (4, 5, u64::MAX, Ok(ents(4, &[4]))),
            (4, 6, u64::MAX, Ok(ents(4, &[4, 5]))),
            (4, 7, u64::MAX, Ok(ents(4, &[4, 5, 6]))),
            // Even with no room at all, the first entry is returned.
            (4, 7, 0, Ok(ents(4, &[4]))),
            // Room for two.
            (4, 7, s1 + s2, Ok(ents(4, &[4, 5]))),
            (4, 7, s1 + s2 + s3 / 2, Ok(ents(4, &[4, 5]))),
            (4, 7, s1 + s2 + s3 - 1, Ok(ents(4, &[4, 5]))),
            // Room for all.
            (4, 7, s1 + s2 + s3, Ok(ents(4, &[4, 5, 6]))),
        ];
        for (i, (lo, hi, max, want)) in cases.into_iter().enumerate() {
            let s = storage_with(all.clone());
            assert_eq!(s.entries(lo, hi, max), want, "#{i}");
        }
    }

    /// etcd: TestStorageLastIndex
    #[test]
    fn test_storage_last_index() {
        let s = storage_with(ents(3, &[3, 4, 5]));
        assert_eq!(s.last_index(), Ok(5));
        s.wl().append(&ents(6, &[5])).unwrap();
        assert_eq!(s.last_index(), Ok(6));
    }

    /// etcd: TestStorageFirstIndex
    #[test]
    fn test_storage_first_index() {
        let s = storage_with(ents(3, &[3, 4, 5]));
        assert_eq!(s.first_index(), Ok(4));
        s.wl().compact(4).unwrap();
        assert_eq!(s.first_index(), Ok(5));
    }

    /// raftlet: compaction keeps the buffer of a log that filled it (a busy
    /// log compacted at intervals fills it again) and gives back the
    /// buffer of one that used little of it.
    #[test]
    fn test_storage_compaction_keeps_a_busy_logs_buffer() {
        let s = MemoryStorage::new();
        let batch = |from: u64, n: u64| -> Vec<Entry> {
            (from..from + n).map(|i| Entry::new(1, i, vec![])).collect()
        };
        s.wl().append(&batch(1, 1000)).unwrap();
        let cap = s.rl().entries.capacity();
        assert!(cap >= 1000);
        s.wl().compact(1000).unwrap();
        assert_eq!(s.rl().entries.capacity(), cap, "a busy log's buffer");
        // The next interval fills it again without growing it.
        s.wl().append(&batch(1001, 999)).unwrap();
        assert_eq!(s.rl().entries.capacity(), cap);
        s.wl().compact(1999).unwrap();
        // An interval that uses a tenth of the buffer: given back.
        s.wl().append(&batch(2000, 100)).unwrap();
        s.wl().compact(2099).unwrap();
        let small = s.rl().entries.capacity();
        assert!(small < cap / 4, "capacity {small} of {cap} kept");
        assert_eq!(s.last_index(), Ok(2099));
        assert_eq!(s.first_index(), Ok(2100));
    }

    /// raftlet: an empty storage holds no entry vector (the last compacted
    /// entry's index and term are kept beside the log, not as an entry).
    #[test]
    fn test_storage_empty_log_allocates_nothing() {
        let s = MemoryStorage::new();
        assert_eq!(s.rl().entries.capacity(), 0);
        assert_eq!(s.first_index(), Ok(1));
        assert_eq!(s.last_index(), Ok(0));
        assert_eq!(s.term(0), Ok(0));
        let s = storage_with(ents(3, &[3, 4, 5]));
        s.wl().compact(5).expect("compact");
        assert!(s.rl().entries_ref().is_empty());
        assert_eq!(s.term(5), Ok(5));
        assert_eq!(s.first_index(), Ok(6));
        assert_eq!(s.last_index(), Ok(5));
    }

    /// etcd: TestStorageCompact
    #[test]
    fn test_storage_compact() {
        let cases = [
            (2, err(StorageError::Compacted), 3, 3, 3),
            (3, err(StorageError::Compacted), 3, 3, 3),
            (4, Ok(()), 4, 4, 2),
            (5, Ok(()), 5, 5, 1),
        ];
        for (i, want, windex, wterm, wlen) in cases {
            let s = storage_with(ents(3, &[3, 4, 5]));
            assert_eq!(s.wl().compact(i), want, "compact({i})");
            let core = s.rl();
            assert_eq!(core.compacted.index, windex);
            assert_eq!(core.compacted.term, wterm);
            assert_eq!(core.with_placeholder().len(), wlen);
        }
    }

    /// etcd: TestStorageCreateSnapshot
    #[test]
    fn test_storage_create_snapshot() {
        let cs = ConfState::from_voters([1, 2, 3]);
        let data = Bytes::from_static(b"data");
        let snap = |index, term| Snapshot {
            data: Some(data.clone()),
            metadata: crate::pb::SnapshotMetadata {
                conf_state: cs.clone(),
                index,
                term,
            },
        };
        let cases = [(4, Ok(snap(4, 4))), (5, Ok(snap(5, 5)))];
        for (i, want) in cases {
            let s = storage_with(ents(3, &[3, 4, 5]));
            let got = s
                .wl()
                .create_snapshot(i, Some(cs.clone()), Some(data.clone()));
            assert_eq!(got, want, "create_snapshot({i})");
            if let Ok(snap) = want {
                assert_eq!(s.snapshot(0, 0), Ok(snap));
            }
        }
    }

    /// etcd: TestStorageAppend
    #[test]
    fn test_storage_append() {
        let cases = [
            (ents(1, &[1, 2]), ents(3, &[3, 4, 5])),
            (ents(3, &[3, 4, 5]), ents(3, &[3, 4, 5])),
            (ents(3, &[3, 6, 6]), ents(3, &[3, 6, 6])),
            (ents(3, &[3, 4, 5, 5]), ents(3, &[3, 4, 5, 5])),
            // Skip the compacted prefix of the input, truncate, append.
            (ents(2, &[3, 3, 5]), ents(3, &[3, 5])),
            // Truncate the existing entries and append.
            (ents(4, &[5]), ents(3, &[3, 5])),
            // Plain append.
            (ents(6, &[5]), ents(3, &[3, 4, 5, 5])),
        ];
        for (i, (input, want)) in cases.into_iter().enumerate() {
            let s = storage_with(ents(3, &[3, 4, 5]));
            assert_eq!(s.wl().append(&input), Ok(()), "#{i}");
            assert_eq!(s.rl().with_placeholder(), want, "#{i}");
            // raftlet: append_owned stores the same and leaves its input
            // empty.
            let s = storage_with(ents(3, &[3, 4, 5]));
            let mut taken = input.clone();
            assert_eq!(s.wl().append_owned(&mut taken), Ok(()), "#{i} owned");
            assert_eq!(s.rl().with_placeholder(), want, "#{i} owned");
            assert!(taken.is_empty(), "#{i} owned");
        }
    }

    /// etcd: TestStorageApplySnapshot
    #[test]
    fn test_storage_apply_snapshot() {
        let cs = ConfState::from_voters([1, 2, 3]);
        let snap = |index, term| Snapshot {
            data: Some(Bytes::from_static(b"data")),
            metadata: crate::pb::SnapshotMetadata {
                conf_state: cs.clone(),
                index,
                term,
            },
        };
        let s = MemoryStorage::new();
        assert_eq!(s.wl().apply_snapshot(snap(4, 4)), Ok(()));
        assert_eq!(s.first_index(), Ok(5));
        assert_eq!(s.last_index(), Ok(4));
        assert_eq!(s.term(4), Ok(4));
        assert_eq!(s.initial_state().unwrap().conf_state, cs);
        // An older snapshot is refused.
        assert_eq!(
            s.wl().apply_snapshot(snap(3, 3)),
            err(StorageError::SnapshotOutOfDate)
        );
    }

    /// raftlet: where etcd panics on caller input, MemoryStorage reports an
    /// error and leaves its contents unchanged.
    #[test]
    fn test_storage_errors_instead_of_panics() {
        let s = storage_with(ents(3, &[3, 4, 5]));
        let before = s.rl().with_placeholder();
        fn unavailable<T>() -> Result<T> {
            err(StorageError::Unavailable)
        }
        assert_eq!(s.entries(4, 7, u64::MAX), unavailable());
        assert_eq!(s.wl().compact(6), unavailable());
        assert_eq!(s.wl().create_snapshot(6, None, None), unavailable());
        assert_eq!(s.wl().append(&ents(7, &[5])), unavailable());
        assert_eq!(s.wl().commit_to(6), unavailable());
        assert_eq!(s.rl().with_placeholder(), before);
        // A batch that is not consecutive (a gap, a repeat, an index that
        // cannot be followed) is refused: etcd would store it at the wrong
        // positions, or overflow computing its last index.
        let e = |i| Entry::new(5, i, vec![]);
        for bad in [
            vec![e(4), e(6)],
            vec![e(4), e(4)],
            vec![e(0), e(0), e(0)],
            vec![e(u64::MAX), e(0)],
            vec![e(5), e(4)],
        ] {
            assert_eq!(s.wl().append(&bad), unavailable(), "{bad:?}");
            assert_eq!(s.rl().with_placeholder(), before);
            // A refused append_owned leaves its input as it was.
            let mut taken = bad.clone();
            assert_eq!(s.wl().append_owned(&mut taken), unavailable(), "{bad:?}");
            assert_eq!(taken, bad);
            assert_eq!(s.rl().with_placeholder(), before);
        }
        let mut gap = ents(7, &[5]);
        assert_eq!(s.wl().append_owned(&mut gap), unavailable());
        assert_eq!(gap, ents(7, &[5]));

        // The entry at the snapshot index was compacted away.
        s.wl().compact(5).unwrap();
        assert_eq!(
            s.wl().create_snapshot(4, None, None),
            err(StorageError::Compacted)
        );
        // Only the placeholder is left: nothing to read.
        assert_eq!(s.entries(6, 6, u64::MAX), unavailable());
        assert_eq!(s.wl().commit_to(5), Ok(()));
        assert_eq!(s.rl().hard_state().commit, 5);
    }

    /// raftlet: the unavailable-snapshot switch fails exactly one call.
    #[test]
    fn test_storage_trigger_snap_unavailable() {
        let s = MemoryStorage::new_with_conf_state(ConfState::from_voters([1])).unwrap();
        s.wl().append(&ents(1, &[1, 1])).unwrap();
        s.wl().create_snapshot(2, None, None).unwrap();
        s.wl().trigger_snap_unavailable();
        assert_eq!(
            s.snapshot(2, 1),
            err(StorageError::SnapshotTemporarilyUnavailable)
        );
        let snap = s.snapshot(2, 1).unwrap();
        assert_eq!(snap.metadata.index, 2);
        assert_eq!(snap.metadata.conf_state, ConfState::from_voters([1]));
        // Handles share one storage.
        let other = s.clone();
        other.wl().compact(2).unwrap();
        assert_eq!(s.first_index(), Ok(3));
        assert!(s.rl().entries_ref().is_empty());
    }
}
