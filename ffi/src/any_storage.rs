//! The storage behind a `raftlet_storage` handle: in memory
//! (`raftlet_storage_new_memory`) or on disk (`raftlet_storage_open`), with
//! the same calls for both (raftlet-disk's `AnyStorage`), so a disk storage
//! works wherever a memory one does.

pub(crate) use raftlet_disk::AnyStorage;
