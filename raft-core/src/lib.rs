//! raftlet: a synchronous Raft consensus core with the behaviour of etcd raft v3.6.
#![deny(missing_docs)]

mod config;
pub mod confchange;
pub mod describe;
mod errors;
mod log;
mod log_unstable;
pub mod pb;
pub mod quorum;
mod storage;
pub mod tracker;
mod types;

pub use config::{Config, ReadOnlyOption};
pub use errors::{Error, Result, StorageError};
pub use storage::{MemoryStorage, MemoryStorageCore, RaftState, Storage};
