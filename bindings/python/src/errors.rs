//! The exception hierarchy of DESIGN §5 and the mapping from
//! [`raftlet::Error`] to it.
//!
//! The exception classes are plain Python classes defined in
//! `raftlet/_errors.py` (so that `ConfigError` and `DecodeError` can also be
//! `ValueError`s, which needs multiple inheritance); this module imports
//! them once and raises them.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use raftlet::{Error, StorageError};

/// The Python module that defines the exception classes.
const ERRORS_MODULE: &str = "raftlet._errors";

/// One cached exception class of `raftlet._errors`.
struct ExcClass {
    name: &'static str,
    cell: PyOnceLock<Py<PyType>>,
}

impl ExcClass {
    const fn new(name: &'static str) -> ExcClass {
        ExcClass {
            name,
            cell: PyOnceLock::new(),
        }
    }

    /// The class object.
    fn get<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyType>> {
        Ok(self.cell.import(py, ERRORS_MODULE, self.name)?.clone())
    }

    /// An exception of this class with `msg` as its only argument.
    fn err(&self, msg: impl Into<String>) -> PyErr {
        let msg = msg.into();
        Python::attach(|py| match self.get(py) {
            Ok(ty) => PyErr::from_type(ty, (msg,)),
            Err(e) => e,
        })
    }
}

static RAFT_ERROR: ExcClass = ExcClass::new("RaftError");
static PROPOSAL_DROPPED: ExcClass = ExcClass::new("ProposalDroppedError");
static STEP_LOCAL_MESSAGE: ExcClass = ExcClass::new("StepLocalMessageError");
static STEP_PEER_NOT_FOUND: ExcClass = ExcClass::new("StepPeerNotFoundError");
static STORAGE_ERROR: ExcClass = ExcClass::new("StorageError");
static COMPACTED: ExcClass = ExcClass::new("CompactedError");
static UNAVAILABLE: ExcClass = ExcClass::new("UnavailableError");
static SNAPSHOT_OUT_OF_DATE: ExcClass = ExcClass::new("SnapshotOutOfDateError");
static SNAPSHOT_TEMPORARILY_UNAVAILABLE: ExcClass =
    ExcClass::new("SnapshotTemporarilyUnavailableError");
static CONFIG_ERROR: ExcClass = ExcClass::new("ConfigError");
static DECODE_ERROR: ExcClass = ExcClass::new("DecodeError");
static CONF_CHANGE_REFUSED: ExcClass = ExcClass::new("ConfChangeRefusedError");
static PROMOTION_NOT_READY: ExcClass = ExcClass::new("PromotionNotReadyError");
static TOO_MANY_LEARNERS: ExcClass = ExcClass::new("TooManyLearnersError");
static TRANSFER_REFUSED: ExcClass = ExcClass::new("TransferRefusedError");
static NO_LEADER: ExcClass = ExcClass::new("NoLeaderError");
static READY_STALE: ExcClass = ExcClass::new("ReadyStaleError");
static FOREIGN_READY: ExcClass = ExcClass::new("ForeignReadyError");
static READY_NOT_PERSISTED: ExcClass = ExcClass::new("ReadyNotPersistedError");
static INVALID_STATE: ExcClass = ExcClass::new("InvalidStateError");
static INVALID_MESSAGE: ExcClass = ExcClass::new("InvalidMessageError");
static PANIC_ERROR: ExcClass = ExcClass::new("PanicError");

/// The Python exception for a core error; the message is the core's
/// (etcd's wording).
pub fn raft_err(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::ProposalDropped => PROPOSAL_DROPPED.err(msg),
        Error::StepLocalMsg => STEP_LOCAL_MESSAGE.err(msg),
        Error::StepPeerNotFound => STEP_PEER_NOT_FOUND.err(msg),
        Error::Store(se) => match se {
            StorageError::Compacted => COMPACTED.err(msg),
            StorageError::Unavailable => UNAVAILABLE.err(msg),
            StorageError::SnapshotOutOfDate => SNAPSHOT_OUT_OF_DATE.err(msg),
            StorageError::SnapshotTemporarilyUnavailable => {
                SNAPSHOT_TEMPORARILY_UNAVAILABLE.err(msg)
            }
            StorageError::Other(_) => STORAGE_ERROR.err(msg),
        },
        Error::ConfigInvalid(_) => CONFIG_ERROR.err(msg),
        Error::Decode(_) => DECODE_ERROR.err(msg),
        Error::ConfChangeRefused(_) => CONF_CHANGE_REFUSED.err(msg),
        Error::PromotionNotReady {
            id,
            lag,
            pending_snapshot,
            recent_active,
        } => Python::attach(|py| {
            let make = || -> PyResult<PyErr> {
                let ty = PROMOTION_NOT_READY.get(py)?;
                let kwargs = pyo3::types::PyDict::new(py);
                kwargs.set_item("id", id)?;
                kwargs.set_item("lag", lag)?;
                kwargs.set_item("pending_snapshot", pending_snapshot)?;
                kwargs.set_item("recent_active", recent_active)?;
                let exc = ty.call((msg,), Some(&kwargs))?;
                Ok(PyErr::from_value(exc))
            };
            make().unwrap_or_else(|e| e)
        }),
        Error::TooManyLearners => TOO_MANY_LEARNERS.err(msg),
        Error::TransferRefused(_) => TRANSFER_REFUSED.err(msg),
        Error::NoLeader => NO_LEADER.err(msg),
        Error::InvalidState(_) => INVALID_STATE.err(msg),
        Error::InvalidMessage(_) => INVALID_MESSAGE.err(msg),
        // `raftlet::Error` may grow variants; they are still RaftErrors.
        #[allow(unreachable_patterns, reason = "future core variants")]
        _ => RAFT_ERROR.err(msg),
    }
}

/// `UnavailableError` with `msg`.
pub fn unavailable(msg: &str) -> PyErr {
    UNAVAILABLE.err(msg)
}

/// `ReadyStaleError` with `msg`.
pub fn ready_stale(msg: &str) -> PyErr {
    READY_STALE.err(msg)
}

/// `ForeignReadyError` with `msg` (a Ready of another node).
pub fn foreign_ready(msg: &str) -> PyErr {
    FOREIGN_READY.err(msg)
}

/// `ReadyNotPersistedError` with `msg`.
pub fn ready_not_persisted(msg: &str) -> PyErr {
    READY_NOT_PERSISTED.err(msg)
}

/// `InvalidStateError` with `msg` (a closed node, a node poisoned by a
/// panic inside the core).
pub fn invalid_state(msg: &str) -> PyErr {
    INVALID_STATE.err(msg)
}

/// `PanicError` with `msg` (a panic inside the core, caught at the boundary
/// instead of surfacing as PyO3's `PanicException`, which is no `RaftError`).
pub fn panic_error(msg: &str) -> PyErr {
    PANIC_ERROR.err(msg)
}

/// Extension for core results: `.py()?` raises the mapped exception.
pub trait IntoPy<T> {
    /// The result with the core error mapped to its Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for raftlet::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(raft_err)
    }
}

impl<T> IntoPy<T> for Result<T, raftlet::pb::DecodeError> {
    fn py(self) -> PyResult<T> {
        self.map_err(|e| raft_err(Error::Decode(e)))
    }
}
