//! The storage behind a `raftlet_storage` handle: in memory
//! (`raftlet_storage_new_memory`) or on disk (`raftlet_storage_open`), with
//! the same calls for both, so a disk storage works wherever a memory one
//! does.

use bytes::Bytes;
use raftlet_core::pb::{ConfState, Encode, Entry, HardState, Snapshot};
use raftlet_core::{Error, MemoryStorage, RaftState, Ready, Result, Storage};
use raftlet_disk::DiskGroup;

/// A MemoryStorage or one group of a DiskStore. Cloning gives another
/// handle on the same storage.
#[derive(Clone, Debug)]
pub(crate) enum AnyStorage {
    Memory(MemoryStorage),
    Disk(DiskGroup),
}

impl AnyStorage {
    pub(crate) fn set_conf_state(&self, cs: ConfState) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => {
                m.wl().set_conf_state(cs);
                Ok(())
            }
            AnyStorage::Disk(d) => Ok(d.set_conf_state(&cs)?),
        }
    }

    pub(crate) fn set_hard_state(&self, hs: HardState) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => {
                m.wl().set_hard_state(hs);
                Ok(())
            }
            AnyStorage::Disk(d) => Ok(d.set_hard_state(&hs)?),
        }
    }

    /// Appends `entries` all or nothing.
    pub(crate) fn append(&self, entries: &[Entry]) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => m.wl().append(entries),
            AnyStorage::Disk(d) => Ok(d.append(entries)?),
        }
    }

    /// Persists a Ready's snapshot, entries and hard state (on disk: one
    /// record, synced when the Ready says so).
    pub(crate) fn persist_ready(&self, rd: &Ready) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => {
                let mut s = m.wl();
                if let Some(snap) = &rd.snapshot {
                    s.apply_snapshot(snap.clone())?;
                }
                s.append(&rd.entries)?;
                if let Some(hs) = rd.hard_state {
                    s.set_hard_state(hs);
                }
                Ok(())
            }
            AnyStorage::Disk(d) => Ok(d.persist_ready(rd)?),
        }
    }

    pub(crate) fn apply_snapshot(&self, snap: Snapshot) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => m.wl().apply_snapshot(snap),
            AnyStorage::Disk(d) => Ok(d.apply_snapshot(&snap)?),
        }
    }

    pub(crate) fn create_snapshot(
        &self,
        index: u64,
        cs: Option<ConfState>,
        data: Bytes,
    ) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => m.wl().create_snapshot(index, cs, Some(data)).map(|_| ()),
            AnyStorage::Disk(d) => d
                .create_snapshot(index, cs, Some(data))
                .map(|_| ())
                .map_err(Error::from),
        }
    }

    pub(crate) fn compact(&self, index: u64) -> Result<()> {
        match self {
            AnyStorage::Memory(m) => m.wl().compact(index),
            AnyStorage::Disk(d) => Ok(d.compact(index)?),
        }
    }

    /// The snapshot held, raftpb-encoded.
    pub(crate) fn snapshot_encoded(&self) -> Result<Vec<u8>> {
        match self {
            AnyStorage::Memory(m) => Ok(m.rl().snapshot_ref().encode_to_vec()),
            AnyStorage::Disk(d) => Ok(d.snapshot(0, 0)?.encode_to_vec()),
        }
    }
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

    fn snapshot(&self, request_index: u64, to: u64) -> Result<Snapshot> {
        match self {
            AnyStorage::Memory(m) => m.snapshot(request_index, to),
            AnyStorage::Disk(d) => d.snapshot(request_index, to),
        }
    }
}
