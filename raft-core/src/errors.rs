//! Errors returned by the core: [`Error`] and [`StorageError`].

use crate::pb::DecodeError;

/// A storage failure (etcd `ErrCompacted`, `ErrUnavailable`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageError {
    /// The requested index is older than the storage's first index: it was
    /// compacted away (etcd `ErrCompacted`).
    Compacted,
    /// The requested index is past the storage's last index (etcd `ErrUnavailable`).
    Unavailable,
    /// The snapshot is older than the one the storage holds (etcd `ErrSnapOutOfDate`).
    SnapshotOutOfDate,
    /// The snapshot is being prepared; ask again later
    /// (etcd `ErrSnapshotTemporarilyUnavailable`).
    SnapshotTemporarilyUnavailable,
    /// Any other failure of a host's storage implementation.
    Other(String),
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StorageError::Compacted => {
                f.write_str("requested index is unavailable due to compaction")
            }
            StorageError::Unavailable => f.write_str("requested entry at index is unavailable"),
            StorageError::SnapshotOutOfDate => {
                f.write_str("requested index is older than the existing snapshot")
            }
            StorageError::SnapshotTemporarilyUnavailable => {
                f.write_str("snapshot is temporarily unavailable")
            }
            StorageError::Other(s) => write!(f, "storage error: {s}"),
        }
    }
}

impl std::error::Error for StorageError {}

/// Every error the core reports to its caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The proposal was not accepted: no leader is known, forwarding is
    /// disabled, a leader transfer is pending, or the uncommitted-size budget
    /// is exhausted (etcd `ErrProposalDropped`).
    ProposalDropped,
    /// A local-only message type, a message claiming to come from the node
    /// itself, or a peer message without a term (term 0 marks local
    /// messages) arrived through `step` (etcd `ErrStepLocalMsg`).
    StepLocalMsg,
    /// A response came from a peer that is not in the configuration
    /// (etcd `ErrStepPeerNotFound`).
    StepPeerNotFound,
    /// The storage failed.
    Store(StorageError),
    /// The configuration is invalid; the sentence names the field.
    ConfigInvalid(String),
    /// Bytes could not be decoded.
    Decode(DecodeError),
    /// A configuration change was refused before it was appended.
    ConfChangeRefused(String),
    /// Promoting a learner was refused because it is not caught up.
    PromotionNotReady {
        /// The learner.
        id: u64,
        /// How far its match index is behind the leader's last index.
        lag: u64,
        /// Whether the leader is sending it a snapshot.
        pending_snapshot: bool,
        /// Whether the leader has heard from it recently.
        recent_active: bool,
    },
    /// Adding one more learner would exceed `Config::max_learners`.
    TooManyLearners,
    /// A leadership transfer was refused; the sentence says why.
    TransferRefused(String),
    /// The operation needs a leader and none is known.
    NoLeader,
    /// The operation is not valid in the node's current state (for example
    /// bootstrapping a non-empty storage).
    InvalidState(String),
    /// A message from the network was refused before it was stepped: its
    /// type is unknown, a term or index in it is above
    /// [`crate::MAX_TERM_OR_INDEX`], or a peer message does not come from a
    /// member id; the sentence names the field (see
    /// [`crate::validate::check_message`]). Nothing in the node changed.
    InvalidMessage(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::ProposalDropped => f.write_str("raft proposal dropped"),
            Error::StepLocalMsg => f.write_str("raft: cannot step raft local message"),
            Error::StepPeerNotFound => f.write_str("raft: cannot step as peer not found"),
            Error::Store(e) => write!(f, "raft: {e}"),
            Error::ConfigInvalid(s) => write!(f, "raft: invalid config: {s}"),
            Error::Decode(e) => write!(f, "raft: {e}"),
            Error::ConfChangeRefused(s) => write!(f, "raft: conf change refused: {s}"),
            Error::PromotionNotReady {
                id,
                lag,
                pending_snapshot,
                recent_active,
            } => write!(
                f,
                "raft: learner {id} is not ready to be promoted (lag {lag}, \
                 pending snapshot {pending_snapshot}, recently active {recent_active})"
            ),
            Error::TooManyLearners => f.write_str("raft: too many learners"),
            Error::TransferRefused(s) => write!(f, "raft: leader transfer refused: {s}"),
            Error::NoLeader => f.write_str("raft: no leader"),
            Error::InvalidState(s) => write!(f, "raft: {s}"),
            Error::InvalidMessage(s) => write!(f, "raft: invalid message: {s}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Store(e) => Some(e),
            Error::Decode(e) => Some(e),
            _ => None,
        }
    }
}

impl From<StorageError> for Error {
    fn from(e: StorageError) -> Self {
        Error::Store(e)
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::Decode(e)
    }
}

/// The result type of the core.
pub type Result<T> = std::result::Result<T, Error>;
