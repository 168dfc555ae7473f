//! [`AnyStorage`]: a [`MemoryStorage`] or a [`DiskGroup`] behind one type,
//! for hosts and bindings (the C ABI, Python) that hand either to a
//! `RawNode`.

use crate::group::DiskGroup;
use bytes::Bytes;
use raftlet::pb::{ConfState, Encode, Entry, HardState, Snapshot};
use raftlet::{Error, MemoryStorage, MemoryStorageCore, RaftState, Ready, Result, Storage};

/// A [`MemoryStorage`] or one group of a [`DiskStore`](crate::DiskStore),
/// with the host's write calls of both under one name, so that a node and
/// its host need not know which. Cloning gives another handle on the same
/// storage.
///
/// The write methods have [`raftlet::MemoryStorageCore`]'s meaning; on a
/// [`DiskGroup`] each is durable when it returns (see its methods), and its
/// errors come back as [`raftlet::Error::Store`].
#[derive(Clone, Debug)]
pub enum AnyStorage {
    /// In memory.
    Memory(MemoryStorage),
    /// On disk.
    Disk(DiskGroup),
}

impl AnyStorage {
    /// Sets the configuration [`Storage::initial_state`] reports.
    ///
    /// # Errors
    /// `ConfChangeRefused` for a configuration no node could run (see
    /// [`raftlet::validate::check_conf_state`]); a disk store's I/O errors.
    pub fn set_conf_state(&self, cs: ConfState) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => m.wl().set_conf_state(cs),
            AnyStorage::Disk(d) => {
                // Checked here too, so that both refuse with the same error.
                raftlet::validate::check_conf_state(&cs)?;
                Ok(d.set_conf_state(&cs)?)
            }
        }
    }

    /// Saves the hard state. The stored commit index never goes back: a
    /// lower one keeps the stored commit (as [`DiskGroup::set_hard_state`]).
    ///
    /// # Errors
    /// A disk store's I/O errors.
    pub fn set_hard_state(&self, hs: HardState) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => {
                keep_commit(&mut m.wl(), hs);
                Ok(())
            }
            AnyStorage::Disk(d) => Ok(d.set_hard_state(&hs)?),
        }
    }

    /// Raises the hard state's commit index to `commit` (a light Ready's
    /// [`raftlet::LightReady::commit_index`]); a disk store writes it
    /// without a sync.
    ///
    /// # Errors
    /// A disk store's I/O errors.
    pub fn set_commit(&self, commit: u64) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => {
                let mut w = m.wl();
                let mut hs = *w.hard_state();
                if hs.commit < commit {
                    hs.commit = commit;
                    w.set_hard_state(hs);
                }
                Ok(())
            }
            AnyStorage::Disk(d) => Ok(d.set_commit(commit)?),
        }
    }

    /// Appends `entries` (consecutive), all or nothing.
    ///
    /// # Errors
    /// `Unavailable` if they would leave a gap; a disk store's I/O errors.
    pub fn append(&self, entries: &[Entry]) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => m.wl().append(entries),
            AnyStorage::Disk(d) => Ok(d.append(entries)?),
        }
    }

    /// Persists a Ready's snapshot, entries and hard state (on disk: one
    /// record, synced when the Ready says so). The stored commit index
    /// never goes back: a Ready's hard state older than a commit index
    /// written since (a light Ready's) keeps the newer commit.
    ///
    /// # Errors
    /// As [`AnyStorage::apply_snapshot`] and [`AnyStorage::append`].
    pub fn persist_ready(&self, rd: &Ready) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => {
                if rd.snapshot.is_none() && rd.entries.is_empty() && rd.hard_state.is_none() {
                    // Nothing to write (a Ready of messages or reads only):
                    // not even the storage's lock.
                    return Ok(());
                }
                let mut s = m.wl();
                if let Some(snap) = &rd.snapshot {
                    s.apply_snapshot(snap.clone())?;
                }
                s.append(&rd.entries)?;
                if let Some(hs) = rd.hard_state {
                    keep_commit(&mut s, hs);
                }
                Ok(())
            }
            AnyStorage::Disk(d) => {
                // Checked here too, so that both refuse with the same error.
                if let Some(snap) = &rd.snapshot {
                    raftlet::validate::check_conf_state(&snap.metadata.conf_state)?;
                }
                Ok(d.persist_ready(rd)?)
            }
        }
    }

    /// Replaces the log with `snap`.
    ///
    /// # Errors
    /// `SnapshotOutOfDate` if it is not newer than the one held,
    /// `ConfChangeRefused` if its configuration is invalid; a disk store's
    /// I/O errors.
    pub fn apply_snapshot(&self, snap: Snapshot) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => m.wl().apply_snapshot(snap),
            AnyStorage::Disk(d) => {
                // Checked here too, so that both refuse with the same error.
                raftlet::validate::check_conf_state(&snap.metadata.conf_state)?;
                Ok(d.apply_snapshot(&snap)?)
            }
        }
    }

    /// Records a snapshot of the state machine at `index` (`cs`: the
    /// configuration there, `None` keeps the one held) and returns it.
    ///
    /// # Errors
    /// `SnapshotOutOfDate`, `Unavailable` or `Compacted` as
    /// [`raftlet::MemoryStorageCore::create_snapshot`], and
    /// `ConfChangeRefused` for an invalid `cs`; a disk store's I/O errors.
    pub fn create_snapshot(
        &self,
        index: u64,
        cs: Option<ConfState>,
        data: Option<Bytes>,
    ) -> Result<Snapshot> {
        match self {
            AnyStorage::Memory(m) => m.wl().create_snapshot(index, cs, data),
            AnyStorage::Disk(d) => {
                // Checked here too (after the same first check), so that
                // both refuse with the same error.
                if index > d.snapshot_index() {
                    if let Some(cs) = &cs {
                        raftlet::validate::check_conf_state(cs)?;
                    }
                }
                d.create_snapshot(index, cs, data).map_err(Error::from)
            }
        }
    }

    /// Drops the entries before `index`.
    ///
    /// # Errors
    /// `Compacted` or `Unavailable` as [`raftlet::MemoryStorageCore::compact`];
    /// a disk store's I/O errors.
    pub fn compact(&self, index: u64) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => m.wl().compact(index),
            AnyStorage::Disk(d) => Ok(d.compact(index)?),
        }
    }

    /// The snapshot held, raftpb-encoded.
    ///
    /// # Errors
    /// A disk store's I/O errors (the snapshot file is read).
    pub fn snapshot_encoded(&self) -> Result<Vec<u8>> {
        match self {
            AnyStorage::Memory(m) => Ok(m.rl().snapshot_ref().encode_to_vec()),
            AnyStorage::Disk(d) => Ok(d.snapshot(0, 0)?.encode_to_vec()),
        }
    }
}

impl AnyStorage {
    /// The saved hard state.
    pub fn hard_state(&self) -> HardState {
        match self {
            AnyStorage::Memory(m) => *m.rl().hard_state(),
            AnyStorage::Disk(d) => d.hard_state(),
        }
    }

    /// The index of the snapshot held (0 for none), without reading a
    /// snapshot file.
    pub fn snapshot_index(&self) -> u64 {
        match self {
            AnyStorage::Memory(m) => m.rl().snapshot_ref().metadata.index,
            AnyStorage::Disk(d) => d.snapshot_index(),
        }
    }
}

/// Saves `hs` in a memory storage, keeping the stored commit index when
/// `hs`'s is lower: a stored commit index never goes back (as on disk: see
/// `DiskStore::write`), so a light Ready's commit written before an older
/// Ready's hard state stands.
fn keep_commit(s: &mut MemoryStorageCore, hs: HardState) {
    let commit = hs.commit.max(s.hard_state().commit);
    s.set_hard_state(HardState { commit, ..hs });
}

/// The check a host's snapshot call makes before recording a snapshot of
/// `store` at `index`: `Ok(None)` when the commit index the storage holds
/// (its hard state's, or the snapshot it holds) covers `index`;
/// `Ok(Some(covered))` when it does not, with that commit index, and the
/// snapshot must be refused: the entry stored at `index` may be an older
/// one that a Ready in flight replaces, and the snapshot would record its
/// term. The storage's own refusals come first, as its error (an invalid
/// `cs`, a compacted entry, an index past the end). The commit only rises,
/// so an answer of `None` stays true for the write after it. The C ABI
/// and the Python bindings refuse with it, for either storage (the disk
/// store refuses such a snapshot itself too, with
/// [`DiskError::SnapshotUncommitted`](crate::DiskError::SnapshotUncommitted));
/// `MemoryStorageCore` keeps etcd's behaviour.
///
/// # Errors
/// `ConfChangeRefused` for an invalid `cs`; `Compacted` or `Unavailable`
/// from [`Storage::term`] at `index`; the storage's read errors.
pub fn uncommitted_snapshot(
    store: &impl Storage,
    index: u64,
    cs: Option<&ConfState>,
) -> Result<Option<u64>> {
    let covered = store
        .initial_state()?
        .hard_state
        .commit
        .max(store.snapshot_index()?);
    if index <= covered {
        return Ok(None);
    }
    if let Some(cs) = cs {
        raftlet::validate::check_conf_state(cs)?;
    }
    store.term(index)?;
    Ok(Some(covered))
}

impl Storage for AnyStorage {
    fn initial_state(&self) -> Result<RaftState> {
        match self {
            AnyStorage::Memory(m) => m.initial_state(),
            AnyStorage::Disk(d) => d.initial_state(),
        }
    }

    fn entries(&self, low: u64, high: u64, max_size: u64) -> Result<Vec<Entry>> {
        match self {
            AnyStorage::Memory(m) => m.entries(low, high, max_size),
            AnyStorage::Disk(d) => d.entries(low, high, max_size),
        }
    }

    fn entries_into(&self, low: u64, high: u64, max_size: u64, out: &mut Vec<Entry>) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => m.entries_into(low, high, max_size, out),
            AnyStorage::Disk(d) => d.entries_into(low, high, max_size, out),
        }
    }

    fn term(&self, idx: u64) -> Result<u64> {
        match self {
            AnyStorage::Memory(m) => m.term(idx),
            AnyStorage::Disk(d) => d.term(idx),
        }
    }

    fn checks_range(&self) -> bool {
        match self {
            AnyStorage::Memory(m) => m.checks_range(),
            AnyStorage::Disk(d) => d.checks_range(),
        }
    }

    fn first_index(&self) -> Result<u64> {
        match self {
            AnyStorage::Memory(m) => m.first_index(),
            AnyStorage::Disk(d) => d.first_index(),
        }
    }

    fn last_index(&self) -> Result<u64> {
        match self {
            AnyStorage::Memory(m) => m.last_index(),
            AnyStorage::Disk(d) => d.last_index(),
        }
    }

    fn snapshot_index(&self) -> Result<u64> {
        Ok(AnyStorage::snapshot_index(self))
    }

    fn snapshot(&self, request_index: u64, to: u64) -> Result<Snapshot> {
        match self {
            AnyStorage::Memory(m) => m.snapshot(request_index, to),
            AnyStorage::Disk(d) => d.snapshot(request_index, to),
        }
    }
}

/// What a Ready, and the earlier ones it covers, asked the host to write:
/// acknowledging it makes the node take exactly that as durable and read it
/// back from its storage later. The bindings keep one per node and check it
/// before they let a host acknowledge a Ready ([`ReadyWrites::check`]), so a
/// host that advances before persisting gets an error instead of a node
/// that later finds its log missing.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadyWrites {
    /// The last entry handed out for writing, as (index, term, the node's
    /// term when it was handed out): the last entry of the node's log then,
    /// which is what the core takes as stable.
    entry: Option<(u64, u64, u64)>,
    /// The highest snapshot index handed out (0 for none).
    snapshot: u64,
}

/// A write a Ready asked for that its storage does not hold (see
/// [`ReadyWrites::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingWrite {
    /// The snapshot at `index` is missing; the storage holds `held`.
    Snapshot {
        /// The snapshot index handed out.
        index: u64,
        /// The snapshot index the storage holds.
        held: u64,
    },
    /// The entry at `index` of `term` is missing.
    Entry {
        /// Its index.
        index: u64,
        /// Its term.
        term: u64,
    },
}

impl ReadyWrites {
    /// Takes in what `rd`, handed out while the node was in `term`, asks to
    /// write.
    pub fn record(&mut self, rd: &Ready, term: u64) {
        if let Some(e) = rd.entries.last() {
            self.entry = Some((e.index, e.term, term));
        }
        if let Some(s) = &rd.snapshot {
            self.snapshot = self.snapshot.max(s.metadata.index);
        }
    }

    /// Whether `store` holds what was asked, as far as the core relies on
    /// it: the snapshot, and the last entry unless the node's term (now
    /// `term`) changed since it was handed out (the core then no longer
    /// takes it as stable, and a newer leader's entries may have replaced
    /// it). An entry compacted away after it was applied was there.
    ///
    /// # Errors
    /// The first write found missing.
    pub fn check(&self, store: &AnyStorage, term: u64) -> std::result::Result<(), MissingWrite> {
        self.check_against(store, term, |_, _| true)
    }

    /// As [`ReadyWrites::check`], and the last entry is not asked for when
    /// the node's log no longer holds it (`in_log(index, term)`: whether it
    /// holds the entry, e.g. `rn.entry_term(index) == Some(term)` with
    /// [`raftlet::RawNode::entry_term`]): a later Ready of the same term
    /// replaced it. That happens to an entry of an older
    /// term that a follower handed out after moving to a new term, before
    /// the new leader's appends overwrote it; its Ready's write may then
    /// be overwritten in storage by the later one's.
    ///
    /// # Errors
    /// The first write found missing.
    pub fn check_against(
        &self,
        store: &AnyStorage,
        term: u64,
        in_log: impl Fn(u64, u64) -> bool,
    ) -> std::result::Result<(), MissingWrite> {
        let held = store.snapshot_index();
        if self.snapshot > held {
            return Err(MissingWrite::Snapshot {
                index: self.snapshot,
                held,
            });
        }
        let Some((index, entry_term, handed_out_in)) = self.entry else {
            return Ok(());
        };
        if handed_out_in != term {
            return Ok(());
        }
        if !in_log(index, entry_term) {
            // Replaced in the node's log by a later Ready of this term.
            return Ok(());
        }
        match store.term(index) {
            Ok(t) if t == entry_term => Ok(()),
            Err(Error::Store(raftlet::StorageError::Compacted)) => Ok(()),
            _ => Err(MissingWrite::Entry {
                index,
                term: entry_term,
            }),
        }
    }
}
