//! raftlet-disk: durable, crash-safe storage for raftlet, one log for one
//! group or for many thousands of groups in a process.
//!
//! A [`DiskStore`] owns one directory: a log of segment files shared by
//! every group, plus one snapshot file per group. [`DiskStore::group`]
//! gives a group's [`DiskGroup`], which is the [`raftlet::Storage`] of its
//! `RawNode` and persists what the node's Readies ask for:
//!
//! ```
//! use raftlet::pb::{ConfState, EntryType};
//! use raftlet::{Config, RawNode, StateRole, Storage};
//! use raftlet_disk::{DiskGroup, DiskStore};
//!
//! // The host's Ready loop: persist, (send,) apply, advance.
//! fn drain(node: &mut RawNode<DiskGroup>, applied: &mut Vec<Vec<u8>>) -> Result<(), Box<dyn std::error::Error>> {
//!     while node.has_ready() {
//!         let rd = node.ready();
//!         node.store().persist_ready(&rd)?; // snapshot, entries, hard state: one synced record
//!         for e in &rd.committed_entries {
//!             if e.entry_type == EntryType::EntryNormal && !e.data().is_empty() {
//!                 applied.push(e.data().to_vec());
//!             }
//!         }
//!         node.advance(rd);
//!     }
//!     Ok(())
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let mut applied = Vec::new();
//! {
//!     let store = DiskStore::open(dir.path())?;
//!     let group = store.group(1);
//!     group.set_conf_state(&ConfState::from_voters(vec![1]))?;
//!     let mut node = RawNode::new(&Config::new(1), group)?;
//!     node.campaign()?;
//!     drain(&mut node, &mut applied)?;
//!     assert_eq!(node.basic_status().soft_state.raft_state, StateRole::Leader);
//!     node.propose(b"x=1".to_vec())?;
//!     drain(&mut node, &mut applied)?;
//! } // the process goes away
//! assert_eq!(applied, vec![b"x=1".to_vec()]);
//!
//! // Restart: the log is back.
//! let store = DiskStore::open(dir.path())?;
//! let group = store.group(1);
//! let last = group.last_index()?;
//! let ents = group.entries(1, last + 1, u64::MAX)?;
//! assert!(ents.iter().any(|e| e.data() == b"x=1"));
//! let node = RawNode::new(&Config::new(1), group)?;
//! assert_eq!(node.basic_status().hard_state.commit, last);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A host of many groups persists the Readies of all of them with one sync
//! (group commit): [`WriteBatch::add_ready`] for each, then
//! [`DiskStore::write`].
//!
//! Every record carries a CRC32C; a torn tail is cut off on open and damage
//! in the middle of the log is refused with [`DiskError::Corrupt`] naming
//! the file and offset; a failed fsync fails the log for good
//! ([`DiskError::Failed`]). All file access goes through the
//! [`FileSystem`] seam: [`StdFs`] is the real filesystem, [`FaultFs`] an
//! in-memory one for tests that loses unsynced writes at a simulated crash,
//! tears writes, flips bits and fails writes and syncs on demand. See
//! docs/architecture.md ("Durable storage") for the design.

#![deny(missing_docs)]

mod any;
mod batch;
mod error;
mod fault;
mod fs;
mod group;
mod record;
mod store;

pub use any::{uncommitted_snapshot, AnyStorage, MissingWrite, ReadyWrites};
pub use batch::WriteBatch;
pub use error::{DiskError, Result};
pub use fault::{CrashMode, FaultFs, FaultOp, FaultStats, EIO, ENOSPC, SECTOR};
pub use fs::{read_all, FileSystem, FsFile, FsLock, StdFs, DIRECT_ALIGN};
pub use group::DiskGroup;
#[cfg(feature = "bug-injection")]
pub use store::DiskBugs;
pub use store::{DiskStore, Options, StoreStats};
