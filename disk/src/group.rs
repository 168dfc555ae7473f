//! [`DiskGroup`]: one group's view of a [`DiskStore`], the
//! [`raftlet::Storage`] a `RawNode` reads from.

use bytes::Bytes;
use raftlet::pb::{ConfState, Entry, HardState, Snapshot};
use raftlet::{RaftState, Ready, Storage, StorageError};

use crate::batch::WriteBatch;
use crate::error::{DiskError, Result};
use crate::store::{DiskStore, Group};

/// One group of a [`DiskStore`]: its [`Storage`] for a
/// [`raftlet::RawNode`], and the host's calls to persist what the node's
/// Readies ask for.
///
/// Cloning gives another handle on the same group (the node reads through
/// one, the host writes through another). A group that was never written
/// reads as an empty log, like a new [`raftlet::MemoryStorage`].
///
/// Reads keep working after the log failed ([`DiskError::Failed`]), from
/// what the index holds, so that a node does not panic before the host
/// stops it.
#[derive(Debug, Clone)]
pub struct DiskGroup {
    store: DiskStore,
    id: u64,
}

impl DiskGroup {
    pub(crate) fn new(store: DiskStore, id: u64) -> DiskGroup {
        DiskGroup { store, id }
    }

    /// The group's id in its store.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The store the group lives in.
    pub fn store(&self) -> &DiskStore {
        &self.store
    }

    fn batch(&self, f: impl FnOnce(&mut WriteBatch) -> Result<()>) -> Result<()> {
        let mut b = WriteBatch::new();
        f(&mut b)?;
        self.store.write(&b)
    }

    /// Persists what `rd` asks for this group (its snapshot, entries and
    /// hard state, as one record), synced if `rd.must_sync`. The stored
    /// commit index never goes back: a Ready taken before a light Ready
    /// whose commit was written since keeps that commit. Afterwards the
    /// host may send `rd.persisted_messages` and call `advance`.
    ///
    /// # Errors
    /// As [`DiskStore::write`].
    pub fn persist_ready(&self, rd: &Ready) -> Result<()> {
        self.batch(|b| b.add_ready(self.id, rd))
    }

    /// Appends `entries` (as [`raftlet::MemoryStorageCore::append`]),
    /// durably.
    ///
    /// # Errors
    /// [`DiskError::Storage`] (`Unavailable`) if they would leave a gap;
    /// [`DiskError::InvalidInput`] if they are not consecutive; I/O errors
    /// as [`DiskStore::write`].
    pub fn append(&self, entries: &[Entry]) -> Result<()> {
        self.batch(|b| b.append(self.id, entries))
    }

    /// Saves the hard state, durably. The stored commit index never goes
    /// back: a hard state whose commit is below the stored one keeps the
    /// stored commit (see [`DiskStore::write`]).
    ///
    /// # Errors
    /// I/O errors as [`DiskStore::write`].
    pub fn set_hard_state(&self, hs: &HardState) -> Result<()> {
        self.batch(|b| {
            b.set_hard_state(self.id, hs);
            Ok(())
        })
    }

    /// Raises the hard state's commit index to `commit` (nothing when it is
    /// there already), without a sync: what a light Ready's
    /// [`raftlet::LightReady::commit_index`] asks to persist. The next
    /// synced write makes it durable.
    ///
    /// # Errors
    /// I/O errors as [`DiskStore::write`].
    pub fn set_commit(&self, commit: u64) -> Result<()> {
        self.store.raise_commit(self.id, commit)
    }

    /// Sets the configuration [`Storage::initial_state`] reports (for a new
    /// group, its initial voters), durably.
    ///
    /// # Errors
    /// [`DiskError::InvalidInput`] for a configuration no node could run
    /// (as [`WriteBatch::set_conf_state`]); I/O errors as
    /// [`DiskStore::write`].
    pub fn set_conf_state(&self, cs: &ConfState) -> Result<()> {
        self.batch(|b| b.set_conf_state(self.id, cs))
    }

    /// Replaces the log with `snapshot` (as
    /// [`raftlet::MemoryStorageCore::apply_snapshot`]), durably.
    ///
    /// # Errors
    /// [`DiskError::Storage`] (`SnapshotOutOfDate`) if it is not newer than
    /// the snapshot held; [`DiskError::InvalidInput`] if its configuration
    /// is not one a node could run (as `MemoryStorage` checks it); I/O
    /// errors as [`DiskStore::write`].
    pub fn apply_snapshot(&self, snapshot: &Snapshot) -> Result<()> {
        raftlet::validate::check_conf_state(&snapshot.metadata.conf_state)
            .map_err(|e| DiskError::InvalidInput(e.to_string()))?;
        self.batch(|b| {
            b.apply_snapshot(self.id, snapshot);
            Ok(())
        })
    }

    /// Records a snapshot at `index` (see [`DiskStore::create_snapshot`]).
    ///
    /// # Errors
    /// As [`DiskStore::create_snapshot`].
    pub fn create_snapshot(
        &self,
        index: u64,
        cs: Option<ConfState>,
        data: Option<Bytes>,
    ) -> Result<Snapshot> {
        self.store.create_snapshot(self.id, index, cs, data)
    }

    /// Drops the entries before `index` (as
    /// [`raftlet::MemoryStorageCore::compact`]); not synced by itself. The
    /// space comes back when no group needs the segments any more.
    ///
    /// # Errors
    /// [`DiskError::Storage`]: `Compacted` if `index` is not past the last
    /// compacted index, `Unavailable` if it is past the last entry; I/O
    /// errors as [`DiskStore::write`].
    pub fn compact(&self, index: u64) -> Result<()> {
        self.batch(|b| {
            b.compact(self.id, index);
            Ok(())
        })
    }

    /// The saved hard state.
    pub fn hard_state(&self) -> HardState {
        self.with(|g| g.map(|g| g.hard_state).unwrap_or_default())
    }

    /// The index of the snapshot held (0 for none), without reading its
    /// file.
    pub fn snapshot_index(&self) -> u64 {
        self.with(|g| g.map_or(0, |g| g.snapshot.index))
    }

    fn with<T>(&self, f: impl FnOnce(Option<&Group>) -> T) -> T {
        let inner = self.store.lock();
        f(inner.groups.get(&self.id))
    }
}

impl Storage for DiskGroup {
    fn initial_state(&self) -> raftlet::Result<RaftState> {
        Ok(self.with(|g| match g {
            Some(g) => RaftState {
                hard_state: g.hard_state,
                conf_state: g.snapshot.conf_state.clone(),
            },
            None => RaftState::default(),
        }))
    }

    fn entries(&self, low: u64, high: u64, max_size: u64) -> raftlet::Result<Vec<Entry>> {
        let mut out = Vec::new();
        self.entries_into(low, high, max_size, &mut out)?;
        Ok(out)
    }

    // The checks and their order are MemoryStorage's (etcd storage.go
    // Entries), so a node sees the same errors from either.
    fn entries_into(
        &self,
        low: u64,
        high: u64,
        max_size: u64,
        out: &mut Vec<Entry>,
    ) -> raftlet::Result<()> {
        let inner = self.store.lock();
        let empty = Group::default();
        let g = inner.groups.get(&self.id).unwrap_or(&empty);
        if low <= g.offset {
            return Err(StorageError::Compacted.into());
        }
        if high > g.last_index() + 1 {
            return Err(StorageError::Unavailable.into());
        }
        if g.entries.is_empty() {
            return Err(StorageError::Unavailable.into());
        }
        if low > high {
            return Err(StorageError::Other(format!("invalid range [{low}, {high})")).into());
        }
        let from = (low - g.offset - 1) as usize;
        let to = (high - g.offset - 1) as usize;
        let mut n = 0;
        let mut size = 0u64;
        for l in g.entries.range(from..to) {
            size = size.saturating_add(u64::from(l.len));
            if n > 0 && max_size != u64::MAX && size > max_size {
                break;
            }
            n += 1;
        }
        let locs: Vec<_> = g.entries.range(from..from + n).copied().collect();
        let mut got = Vec::with_capacity(n);
        inner.read_entries(low, &locs, &mut got)?;
        out.extend(got);
        Ok(())
    }

    fn term(&self, idx: u64) -> raftlet::Result<u64> {
        let inner = self.store.lock();
        match inner.groups.get(&self.id) {
            Some(g) => Ok(g.term(idx)?),
            None => Ok(Group::default().term(idx)?),
        }
    }

    fn checks_range(&self) -> bool {
        // Group::term and entries_into: Compacted below the compaction
        // point, Unavailable past the last entry, `out` untouched on an
        // error (a group not written yet is an empty one).
        true
    }

    fn first_index(&self) -> raftlet::Result<u64> {
        Ok(self.with(|g| g.map_or(1, Group::first_index)))
    }

    fn snapshot_index(&self) -> raftlet::Result<u64> {
        // The snapshot's record, not its compaction (which is not synced
        // and may be behind it after a crash).
        Ok(DiskGroup::snapshot_index(self))
    }

    fn last_index(&self) -> raftlet::Result<u64> {
        Ok(self.with(|g| g.map_or(0, Group::last_index)))
    }

    fn snapshot(&self, _request_index: u64, _to: u64) -> raftlet::Result<Snapshot> {
        let inner = self.store.lock();
        match inner.groups.get(&self.id) {
            Some(g) if g.snapshot_file => Ok(inner.read_snapshot(self.id, g)?),
            Some(g) => Ok(Snapshot {
                data: None,
                metadata: g.snapshot.clone(),
            }),
            None => Ok(Snapshot::default()),
        }
    }
}

impl From<DiskError> for StorageError {
    fn from(e: DiskError) -> Self {
        match e {
            DiskError::Storage(se) => se,
            other => StorageError::Other(other.to_string()),
        }
    }
}
