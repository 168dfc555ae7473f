//! [`DiskError`]: every failure the durable store reports.

use std::io;
use std::path::{Path, PathBuf};

use raftlet::StorageError;

/// A failure of the durable store.
///
/// Every variant that concerns a file names it; corruption also names the
/// byte offset. Errors are values: nothing in the store panics on what it
/// reads from disk or on what a caller passes in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiskError {
    /// A filesystem call failed. `code` is the raw OS error (EIO is 5,
    /// ENOSPC 28 on Linux) when there is one.
    Io {
        /// The operation that failed (`"write"`, `"sync"`, `"create"`...).
        op: &'static str,
        /// The file or directory it was applied to.
        path: PathBuf,
        /// The kind of the underlying [`io::Error`].
        kind: io::ErrorKind,
        /// The raw OS error code, if any.
        code: Option<i32>,
        /// The underlying error's message.
        message: String,
    },
    /// A record in the middle of the log is damaged: valid records after it
    /// say it was durable, so it cannot be a torn tail. The store refuses
    /// to open rather than skip data.
    Corrupt {
        /// The segment file.
        file: PathBuf,
        /// The byte offset of the damaged record in `file`.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The log refers to a snapshot file that is not there.
    SnapshotMissing {
        /// The file the log refers to.
        file: PathBuf,
    },
    /// A snapshot file the log refers to is damaged or half written.
    SnapshotCorrupt {
        /// The snapshot file.
        file: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Another open of the same directory (in this process or another)
    /// holds the store's lock.
    Locked {
        /// The store's directory.
        dir: PathBuf,
    },
    /// The log failed earlier (a sync failed, so what is on disk is
    /// unknown) and takes no more writes. Holds the first error. Reopen the
    /// store to recover from what really reached the disk.
    Failed(Box<DiskError>),
    /// The request does not fit the group's log, with the same meaning as
    /// for [`raftlet::MemoryStorage`]: `Compacted`, `Unavailable` or
    /// `SnapshotOutOfDate`.
    Storage(StorageError),
    /// The request is malformed (for example entries that are not
    /// consecutive); nothing was written.
    InvalidInput(String),
    /// A snapshot was asked for at `index`, above the commit index the
    /// group's storage holds (`commit`, its hard state's or its snapshot's):
    /// the entry stored there may be an older one that a Ready still in
    /// flight replaces, and the snapshot would record its term. Take it
    /// once the Ready that commits `index` is written; nothing was written.
    SnapshotUncommitted {
        /// The index asked for.
        index: u64,
        /// The commit index the storage holds.
        commit: u64,
    },
}

impl DiskError {
    /// A [`DiskError::Io`] for `op` on `path`.
    pub(crate) fn io(op: &'static str, path: &Path, e: &io::Error) -> DiskError {
        DiskError::Io {
            op,
            path: path.to_path_buf(),
            kind: e.kind(),
            code: e.raw_os_error(),
            message: e.to_string(),
        }
    }

    /// The raw OS error code of the I/O failure behind this error (looking
    /// through [`DiskError::Failed`]), if any.
    pub fn os_error(&self) -> Option<i32> {
        match self {
            DiskError::Io { code, .. } => *code,
            DiskError::Failed(e) => e.os_error(),
            _ => None,
        }
    }

    /// Whether the log is failed for good ([`DiskError::Failed`]).
    pub fn is_fatal(&self) -> bool {
        matches!(self, DiskError::Failed(_))
    }
}

impl std::fmt::Display for DiskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiskError::Io {
                op, path, message, ..
            } => write!(f, "raftlet-disk: {op} {}: {message}", path.display()),
            DiskError::Corrupt {
                file,
                offset,
                reason,
            } => write!(
                f,
                "raftlet-disk: corrupt record in {} at offset {offset}: {reason}",
                file.display()
            ),
            DiskError::SnapshotMissing { file } => write!(
                f,
                "raftlet-disk: snapshot file {} is missing (the log refers to it)",
                file.display()
            ),
            DiskError::SnapshotCorrupt { file, reason } => write!(
                f,
                "raftlet-disk: snapshot file {} is corrupt: {reason}",
                file.display()
            ),
            DiskError::Locked { dir } => write!(
                f,
                "raftlet-disk: {} is locked by another open store",
                dir.display()
            ),
            DiskError::Failed(e) => write!(f, "raftlet-disk: the log failed earlier: {e}"),
            DiskError::Storage(e) => write!(f, "raftlet-disk: {e}"),
            DiskError::InvalidInput(s) => write!(f, "raftlet-disk: invalid input: {s}"),
            DiskError::SnapshotUncommitted { index, commit } => write!(
                f,
                "raftlet-disk: a snapshot at {index} is above the stored commit index {commit}"
            ),
        }
    }
}

impl std::error::Error for DiskError {}

impl From<StorageError> for DiskError {
    fn from(e: StorageError) -> Self {
        DiskError::Storage(e)
    }
}

impl From<DiskError> for raftlet::Error {
    fn from(e: DiskError) -> Self {
        match e {
            DiskError::Storage(se) => raftlet::Error::Store(se),
            // What the C ABI and the bindings report for it, as for an
            // index the storage does not have yet.
            DiskError::SnapshotUncommitted { .. } => {
                raftlet::Error::Store(StorageError::Unavailable)
            }
            other => raftlet::Error::Store(StorageError::Other(other.to_string())),
        }
    }
}

/// The result type of the store.
pub type Result<T> = std::result::Result<T, DiskError>;
