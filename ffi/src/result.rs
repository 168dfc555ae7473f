//! Result codes, their names, and the thread-local detail of the last failure.

use std::cell::RefCell;
use std::ffi::{c_char, CString};

use raftlet_core::{Error, StorageError};

/// The outcome of a call. Numbers are fixed forever: codes are only ever
/// added, never renumbered or reused.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types, reason = "C naming")]
pub enum raftlet_result {
    /// Success.
    RAFTLET_OK = 0,
    /// The proposal was dropped (no leader, forwarding disabled, transfer
    /// under way, or uncommitted budget exhausted).
    RAFTLET_ERR_PROPOSAL_DROPPED = 1,
    /// A local-only message type arrived through raftlet_node_step.
    RAFTLET_ERR_STEP_LOCAL_MSG = 2,
    /// A response from a peer that is not in the configuration.
    RAFTLET_ERR_STEP_PEER_NOT_FOUND = 3,
    /// Storage: the index was compacted.
    RAFTLET_ERR_COMPACTED = 4,
    /// Storage: the index is not available yet.
    RAFTLET_ERR_UNAVAILABLE = 5,
    /// Storage: the snapshot is older than the one held.
    RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE = 6,
    /// Storage: the snapshot is being prepared; retry later.
    RAFTLET_ERR_SNAPSHOT_TEMPORARILY_UNAVAILABLE = 7,
    /// Storage: another failure.
    RAFTLET_ERR_STORAGE = 8,
    /// The configuration is invalid (the message names the field).
    RAFTLET_ERR_CONFIG_INVALID = 9,
    /// Bytes could not be decoded as raftpb.
    RAFTLET_ERR_DECODE = 10,
    /// A configuration change was refused.
    RAFTLET_ERR_CONF_CHANGE_REFUSED = 11,
    /// Promoting a learner was refused: it has not caught up.
    RAFTLET_ERR_PROMOTION_NOT_READY = 12,
    /// One more learner than Config::max_learners.
    RAFTLET_ERR_TOO_MANY_LEARNERS = 13,
    /// A leader transfer was refused.
    RAFTLET_ERR_TRANSFER_REFUSED = 14,
    /// No leader is known.
    RAFTLET_ERR_NO_LEADER = 15,
    /// The operation does not fit the node's state.
    RAFTLET_ERR_INVALID_STATE = 16,
    /// A message from the network was refused before it reached the node:
    /// an unknown message type, a term or index above 2^63 - 1, or a peer
    /// message from an id that cannot be a member.
    RAFTLET_ERR_INVALID_MESSAGE = 17,
    /// A required pointer argument was NULL.
    RAFTLET_ERR_NULL_ARG = 100,
    /// An argument was out of range or malformed.
    RAFTLET_ERR_INVALID_ARG = 101,
    /// The ready was already advanced, or it is out of order: a later
    /// ready of its node was already advanced (raftlet_node_advance,
    /// raftlet_node_advance_append, raftlet_storage_append_ready) or
    /// persisted to this storage (raftlet_storage_append_ready).
    RAFTLET_ERR_READY_STALE = 102,
    /// The ready was handed out by another node (raftlet_node_advance,
    /// raftlet_node_advance_append).
    RAFTLET_ERR_READY_FOREIGN = 103,
    /// The ready cannot be advanced: the node's storage lacks its entries
    /// or snapshot, or those of an earlier ready it would cover (persist
    /// them first).
    RAFTLET_ERR_READY_NOT_PERSISTED = 104,
    /// A panic was caught inside the library; the node is poisoned.
    RAFTLET_PANIC = 200,
}

use raftlet_result::*;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Stores `msg` as this thread's last error detail.
pub(crate) fn set_last_error(msg: impl Into<String>) {
    let mut s = msg.into();
    s.retain(|c| c != '\0');
    let c = CString::new(s).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Records a failure and returns its code.
pub(crate) fn fail(code: raftlet_result, msg: impl Into<String>) -> raftlet_result {
    set_last_error(msg);
    code
}

/// Maps a core error to its code, recording its message.
pub(crate) fn from_error(e: &Error) -> raftlet_result {
    let code = match e {
        Error::ProposalDropped => RAFTLET_ERR_PROPOSAL_DROPPED,
        Error::StepLocalMsg => RAFTLET_ERR_STEP_LOCAL_MSG,
        Error::StepPeerNotFound => RAFTLET_ERR_STEP_PEER_NOT_FOUND,
        Error::Store(StorageError::Compacted) => RAFTLET_ERR_COMPACTED,
        Error::Store(StorageError::Unavailable) => RAFTLET_ERR_UNAVAILABLE,
        Error::Store(StorageError::SnapshotOutOfDate) => RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE,
        Error::Store(StorageError::SnapshotTemporarilyUnavailable) => {
            RAFTLET_ERR_SNAPSHOT_TEMPORARILY_UNAVAILABLE
        }
        Error::Store(StorageError::Other(_)) => RAFTLET_ERR_STORAGE,
        Error::ConfigInvalid(_) => RAFTLET_ERR_CONFIG_INVALID,
        Error::Decode(_) => RAFTLET_ERR_DECODE,
        Error::ConfChangeRefused(_) => RAFTLET_ERR_CONF_CHANGE_REFUSED,
        Error::PromotionNotReady { .. } => RAFTLET_ERR_PROMOTION_NOT_READY,
        Error::TooManyLearners => RAFTLET_ERR_TOO_MANY_LEARNERS,
        Error::TransferRefused(_) => RAFTLET_ERR_TRANSFER_REFUSED,
        Error::NoLeader => RAFTLET_ERR_NO_LEADER,
        Error::InvalidState(_) => RAFTLET_ERR_INVALID_STATE,
        Error::InvalidMessage(_) => RAFTLET_ERR_INVALID_MESSAGE,
    };
    fail(code, e.to_string())
}

/// Turns a core result into a code.
pub(crate) fn code<T>(r: &raftlet_core::Result<T>) -> raftlet_result {
    match r {
        Ok(_) => RAFTLET_OK,
        Err(e) => from_error(e),
    }
}

/// The name of a result code, e.g. "RAFTLET_ERR_NULL_ARG". Returns a static
/// string (never freed); unknown codes give "RAFTLET_UNKNOWN". Thread-safe.
#[no_mangle]
pub extern "C" fn raftlet_result_str(code: u32) -> *const c_char {
    let s: &'static [u8] = match code {
        0 => b"RAFTLET_OK\0",
        1 => b"RAFTLET_ERR_PROPOSAL_DROPPED\0",
        2 => b"RAFTLET_ERR_STEP_LOCAL_MSG\0",
        3 => b"RAFTLET_ERR_STEP_PEER_NOT_FOUND\0",
        4 => b"RAFTLET_ERR_COMPACTED\0",
        5 => b"RAFTLET_ERR_UNAVAILABLE\0",
        6 => b"RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE\0",
        7 => b"RAFTLET_ERR_SNAPSHOT_TEMPORARILY_UNAVAILABLE\0",
        8 => b"RAFTLET_ERR_STORAGE\0",
        9 => b"RAFTLET_ERR_CONFIG_INVALID\0",
        10 => b"RAFTLET_ERR_DECODE\0",
        11 => b"RAFTLET_ERR_CONF_CHANGE_REFUSED\0",
        12 => b"RAFTLET_ERR_PROMOTION_NOT_READY\0",
        13 => b"RAFTLET_ERR_TOO_MANY_LEARNERS\0",
        14 => b"RAFTLET_ERR_TRANSFER_REFUSED\0",
        15 => b"RAFTLET_ERR_NO_LEADER\0",
        16 => b"RAFTLET_ERR_INVALID_STATE\0",
        17 => b"RAFTLET_ERR_INVALID_MESSAGE\0",
        100 => b"RAFTLET_ERR_NULL_ARG\0",
        101 => b"RAFTLET_ERR_INVALID_ARG\0",
        102 => b"RAFTLET_ERR_READY_STALE\0",
        103 => b"RAFTLET_ERR_READY_FOREIGN\0",
        104 => b"RAFTLET_ERR_READY_NOT_PERSISTED\0",
        200 => b"RAFTLET_PANIC\0",
        _ => b"RAFTLET_UNKNOWN\0",
    };
    s.as_ptr().cast()
}

/// The detail of the last failure on the calling thread ("" if none). The
/// string is owned by the library and valid until the next raftlet call
/// on this thread; copy it to keep it.
#[no_mangle]
pub extern "C" fn raftlet_last_error_message() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// This thread's last error detail (what raftlet_last_error_message shows).
pub(crate) fn last_error() -> CString {
    LAST_ERROR.with(|e| e.borrow().clone())
}
