//! raftlet-disk: durable, crash-safe storage for raftlet, one log for one
//! group or for many thousands of groups in a process.
//!
//! All file access goes through the [`FileSystem`] seam: [`StdFs`] is the
//! real filesystem, [`FaultFs`] an in-memory one for tests that loses
//! unsynced writes at a simulated crash, tears writes, flips bits and fails
//! writes and syncs on demand. See docs/architecture.md ("Durable storage")
//! for the design.

#![deny(missing_docs)]

mod batch;
mod error;
mod fault;
mod fs;
mod group;
mod record;
mod store;

pub use batch::WriteBatch;
pub use error::{DiskError, Result};
pub use fault::{CrashMode, FaultFs, FaultOp, FaultStats, EIO, ENOSPC, SECTOR};
pub use fs::{read_all, FileSystem, FsFile, FsLock, StdFs};
pub use group::DiskGroup;
pub use store::{DiskStore, Options, StoreStats};
