//! [`WriteBatch`]: the writes of one or many groups that
//! [`DiskStore::write`](crate::DiskStore::write) persists as one record
//! with one sync (group commit).

use raftlet::pb::{ConfState, Entry, HardState, Snapshot};
use raftlet::Ready;

use crate::error::{DiskError, Result};
use crate::record::PayloadWriter;

/// What an operation does to a group's log, enough to check it before
/// anything is written (see `store::check_change`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Entries `first..first + count`.
    Entries { first: u64, count: u64 },
    /// A snapshot at `index` applied: the log restarts after it.
    SnapshotApply { index: u64 },
    /// Entries up to `index` dropped.
    Compact(u64),
    /// The group deleted.
    Remove,
    /// Hard state or conf state: always valid.
    State,
}

/// The writes of one or many groups, persisted together by
/// [`DiskStore::write`](crate::DiskStore::write) as a single record: after
/// a crash the whole batch is there or none of it is, and the batch costs
/// one sync however many groups it covers.
///
/// Operations apply in the order they were added. Adding checks only the
/// shape of the input (entries must be consecutive); whether it fits the
/// groups' logs is checked by [`DiskStore::write`](crate::DiskStore::write),
/// which writes nothing if any operation does not fit.
#[derive(Debug, Default, Clone)]
pub struct WriteBatch {
    pub(crate) payload: PayloadWriter,
    pub(crate) changes: Vec<(u64, Change)>,
    pub(crate) snapshots: Vec<(u64, Snapshot)>,
    pub(crate) must_sync: bool,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The number of operations in the batch.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// The size of the record the batch will be written as, without its
    /// header (snapshot data goes to snapshot files and is not counted).
    pub fn size(&self) -> usize {
        self.payload.buf.len()
    }

    /// Whether [`DiskStore::write`](crate::DiskStore::write) will sync the
    /// write: set by [`WriteBatch::add_ready`] from [`Ready::must_sync`],
    /// by every method below except [`WriteBatch::compact`], and by
    /// [`WriteBatch::set_must_sync`]. A batch holding a snapshot is always
    /// synced.
    pub fn must_sync(&self) -> bool {
        self.must_sync || !self.snapshots.is_empty()
    }

    /// Asks for (or, with `false`, stops asking for) a sync of this batch.
    /// A later synced write makes an unsynced one durable too.
    pub fn set_must_sync(&mut self, sync: bool) {
        self.must_sync = sync;
    }

    /// Empties the batch, keeping its buffers.
    pub fn clear(&mut self) {
        self.payload.buf.clear();
        self.changes.clear();
        self.snapshots.clear();
        self.must_sync = false;
    }

    /// Adds everything `rd` asks to persist for `group`, in the order the
    /// Ready contract gives: its snapshot, its entries, its hard state; and
    /// asks for a sync if `rd.must_sync`.
    ///
    /// # Errors
    /// [`DiskError::InvalidInput`] if the entries are not consecutive or
    /// the snapshot's configuration is not one a node could run (as
    /// [`raftlet::validate::check_conf_state`]); the batch is left as it
    /// was.
    pub fn add_ready(&mut self, group: u64, rd: &Ready) -> Result<()> {
        let mark = self.mark();
        if let Some(snap) = &rd.snapshot {
            check_conf(&snap.metadata.conf_state)?;
            self.push_snapshot(group, snap);
        }
        if let Err(e) = self.push_entries(group, &rd.entries) {
            self.rewind(mark);
            return Err(e);
        }
        if let Some(hs) = &rd.hard_state {
            self.push_hard_state(group, hs);
        }
        self.must_sync |= rd.must_sync;
        Ok(())
    }

    /// Appends `entries` (consecutive) to `group`'s log. Entries already
    /// compacted are skipped; existing entries from the first new index on
    /// are replaced. Asks for a sync.
    ///
    /// # Errors
    /// [`DiskError::InvalidInput`] if the entries are not consecutive or
    /// start at index 0; the batch is left as it was.
    pub fn append(&mut self, group: u64, entries: &[Entry]) -> Result<()> {
        self.push_entries(group, entries)?;
        if !entries.is_empty() {
            self.must_sync = true;
        }
        Ok(())
    }

    /// Saves `group`'s hard state. Asks for a sync.
    pub fn set_hard_state(&mut self, group: u64, hs: &HardState) {
        self.push_hard_state(group, hs);
        self.must_sync = true;
    }

    /// Sets the configuration `group`'s
    /// [`Storage::initial_state`](raftlet::Storage::initial_state) reports
    /// (as [`raftlet::MemoryStorageCore::set_conf_state`]). Asks for a sync.
    ///
    /// # Errors
    /// [`DiskError::InvalidInput`] for a configuration no node could run
    /// (the checks of [`raftlet::validate::check_conf_state`], which
    /// `MemoryStorage` makes too); the batch is left as it was.
    pub fn set_conf_state(&mut self, group: u64, cs: &ConfState) -> Result<()> {
        check_conf(cs)?;
        self.payload.conf_state(group, cs);
        self.changes.push((group, Change::State));
        self.must_sync = true;
        Ok(())
    }

    /// Replaces `group`'s log with `snapshot` (as
    /// [`raftlet::MemoryStorageCore::apply_snapshot`]): its data goes to a
    /// snapshot file, written before the record. The hard state is left
    /// alone. The batch will be synced.
    pub fn apply_snapshot(&mut self, group: u64, snapshot: &Snapshot) {
        self.push_snapshot(group, snapshot);
    }

    /// Drops `group`'s entries before `index`; the entry at `index` stays
    /// as the marker of the last compacted entry (as
    /// [`raftlet::MemoryStorageCore::compact`]). Does not ask for a sync:
    /// a compaction lost in a crash is harmless.
    pub fn compact(&mut self, group: u64, index: u64) {
        self.payload.compact(group, index);
        self.changes.push((group, Change::Compact(index)));
    }

    /// Deletes `group` and everything it holds. Asks for a sync.
    pub fn remove_group(&mut self, group: u64) {
        self.payload.remove(group);
        self.changes.push((group, Change::Remove));
        self.must_sync = true;
    }

    fn mark(&self) -> (usize, usize, usize) {
        (
            self.payload.buf.len(),
            self.changes.len(),
            self.snapshots.len(),
        )
    }

    fn rewind(&mut self, (p, c, s): (usize, usize, usize)) {
        self.payload.buf.truncate(p);
        self.changes.truncate(c);
        self.snapshots.truncate(s);
    }

    fn push_entries(&mut self, group: u64, entries: &[Entry]) -> Result<()> {
        let Some(head) = entries.first() else {
            return Ok(());
        };
        if head.index == 0 {
            return Err(DiskError::InvalidInput("entry index 0".into()));
        }
        for (i, e) in entries.iter().enumerate() {
            if Some(e.index) != head.index.checked_add(i as u64) {
                return Err(DiskError::InvalidInput(format!(
                    "entries are not consecutive: index {} follows {}",
                    e.index,
                    entries[i - 1].index
                )));
            }
        }
        let count = u32::try_from(entries.len())
            .map_err(|_| DiskError::InvalidInput("too many entries in one batch".into()))?;
        self.payload.entries_head(group, head.index, count);
        for e in entries {
            self.payload.entry_encoded(e);
        }
        self.changes.push((
            group,
            Change::Entries {
                first: head.index,
                count: entries.len() as u64,
            },
        ));
        Ok(())
    }

    fn push_hard_state(&mut self, group: u64, hs: &HardState) {
        self.payload.hard_state(group, hs);
        self.changes.push((group, Change::State));
    }

    fn push_snapshot(&mut self, group: u64, snapshot: &Snapshot) {
        self.payload.snapshot_apply(group, &snapshot.metadata);
        self.changes.push((
            group,
            Change::SnapshotApply {
                index: snapshot.metadata.index,
            },
        ));
        self.snapshots.push((group, snapshot.clone()));
    }
}

/// [`raftlet::validate::check_conf_state`] as a [`DiskError`].
fn check_conf(cs: &ConfState) -> Result<()> {
    raftlet::validate::check_conf_state(cs).map_err(|e| DiskError::InvalidInput(e.to_string()))
}
