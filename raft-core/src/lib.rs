//! raftlet: a synchronous Raft consensus core with the behaviour of etcd raft v3.6.
#![deny(missing_docs)]

pub mod confchange;
mod config;
pub mod describe;
mod errors;
mod log;
mod log_unstable;
pub mod pb;
pub mod quorum;
mod raft;
mod raw_node;
mod status;
mod storage;
pub mod tracker;
mod types;

pub use config::{Config, ReadOnlyOption};
pub use errors::{Error, Result, StorageError};
#[cfg(feature = "bug-injection")]
pub use raft::Bugs;
pub use raft::{ReadState, SoftState, StateRole, INVALID_ID};
pub use raw_node::{RawNode, Ready, SnapshotStatus};
pub use status::{BasicStatus, Status};
pub use storage::{MemoryStorage, MemoryStorageCore, RaftState, Storage};
