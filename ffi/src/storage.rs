//! `raftlet_storage`: the storage shared by a node and its host, in memory
//! or on disk (storage_disk.rs opens the latter).

use std::sync::atomic::Ordering;

use parking_lot::Mutex;
use raftlet_core::pb::{ConfState, Decode, Entry, HardState, Message, Snapshot};
use raftlet_core::MemoryStorage;

use crate::any_storage::AnyStorage;

use crate::ready::raftlet_ready;
use crate::result::{code, fail, from_error, raftlet_result, raftlet_result::*};

/// An opaque handle to a storage: in memory (raftlet_storage_new_memory)
/// or one group of a durable store on disk (raftlet_storage_open); every
/// raftlet_storage_* call works on both. The storage is shared: a node
/// created over it keeps its own reference, so the handle may be freed
/// before or after the node. Thread-safe (a lock inside).
pub struct raftlet_storage {
    pub(crate) inner: AnyStorage,
    /// The ready raftlet_storage_append_ready (or _append_readies)
    /// persisted last, as (node generation, ready number); (0, 0) before
    /// the first. Held across the whole append so that the check and the
    /// write are one step.
    pub(crate) appended: Mutex<(u64, u64)>,
}

impl raftlet_storage {
    /// A handle on `inner` (the one place that builds the struct).
    pub(crate) fn new(inner: AnyStorage) -> raftlet_storage {
        raftlet_storage {
            inner,
            appended: Mutex::new((0, 0)),
        }
    }
}

fn st<'a>(p: *const raftlet_storage) -> &'a raftlet_storage {
    // SAFETY: callers check for NULL first; the handle comes from
    // raftlet_storage_new_memory and is alive for the call.
    unsafe { &*p }
}

/// Creates an empty in-memory storage. On success `*storage_out` owns a new
/// handle; release it with raftlet_storage_free.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_new_memory(
    storage_out: *mut *mut raftlet_storage,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage_out);
        let b = Box::new(raftlet_storage::new(AnyStorage::Memory(
            MemoryStorage::new(),
        )));
        // SAFETY: non-null output pointer.
        unsafe { *storage_out = Box::into_raw(b) };
        RAFTLET_OK
    })
}

/// Releases a storage handle (the node keeps its own reference). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_free(storage: *mut raftlet_storage) {
    if storage.is_null() {
        return;
    }
    let _ = crate::boundary::catch(|| {
        // SAFETY: from raftlet_storage_new_memory, freed once.
        drop(unsafe { Box::from_raw(storage) });
    });
}

/// Sets the configuration the storage reports at start (voters and
/// learners), as a host does before creating the first node of a new
/// cluster. `voters`/`learners` may be NULL when their count is 0.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or
/// RAFTLET_ERR_CONF_CHANGE_REFUSED (an id of 0, UINT64_MAX or
/// UINT64_MAX - 1, an id given twice, or a voter that is also a learner;
/// the configuration held is kept).
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_set_conf_state(
    storage: *mut raftlet_storage,
    voters: *const u64,
    voters_len: usize,
    learners: *const u64,
    learners_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage);
        let v = match crate::id_slice(voters, voters_len, "voters") {
            Ok(v) => v,
            Err(code) => return code,
        };
        let l = match crate::id_slice(learners, learners_len, "learners") {
            Ok(l) => l,
            Err(code) => return code,
        };
        code(&st(storage).inner.set_conf_state(ConfState {
            voters: v.to_vec(),
            learners: l.to_vec(),
            ..ConfState::default()
        }))
    })
}

/// Stores a hard state (term, vote, commit). The stored commit index never
/// goes back: a lower commit keeps the stored one.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_set_hard_state(
    storage: *mut raftlet_storage,
    term: u64,
    vote: u64,
    commit: u64,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage);
        code(
            &st(storage)
                .inner
                .set_hard_state(HardState { term, vote, commit }),
        )
    })
}

/// Appends one raftpb-encoded Entry (truncating any conflicting tail).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_DECODE or
/// RAFTLET_ERR_UNAVAILABLE (a gap after the last index, or entries that
/// are not consecutive).
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_append_entry(
    storage: *mut raftlet_storage,
    entry: *const u8,
    entry_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage);
        let buf = c_slice!(entry, entry_len, "entry");
        let e = match Entry::decode(buf) {
            Ok(e) => e,
            Err(e) => return from_error(&e.into()),
        };
        code(&st(storage).inner.append(&[e]))
    })
}

/// Checks that `rd` may be persisted now to a storage that persisted the
/// ready `appended` (node generation, ready number) last: it is not
/// advanced nor covered by an advanced ready of its node, and it is newer
/// than `appended` (readies persist in the order they were taken, each
/// once, and never from an older node). Returns the pair to record once
/// the write succeeds, or the error code and message (nothing written).
pub(crate) fn check_ready_order(
    rd: &raftlet_ready,
    appended: (u64, u64),
) -> Result<(u64, u64), (raftlet_result, String)> {
    let number = rd.rd.number();
    if rd.is_stale() {
        return Err((
            RAFTLET_ERR_READY_STALE,
            format!("ready {number} was already advanced"),
        ));
    }
    let done = rd.track.advanced.load(Ordering::Acquire);
    if number <= done {
        return Err((
            RAFTLET_ERR_READY_STALE,
            format!(
                "ready {number} is covered by ready {done}, which its node already \
                 advanced: persist readies in the order they were taken"
            ),
        ));
    }
    let this = (rd.generation(), number);
    if this <= appended {
        let why = if this.0 < appended.0 {
            format!(
                "ready {number} comes from a node older than the one whose ready {} \
                 this storage persisted last",
                appended.1
            )
        } else {
            format!(
                "ready {number} is not newer than ready {}, persisted before: \
                 persist readies in the order they were taken, each once",
                appended.1
            )
        };
        return Err((RAFTLET_ERR_READY_STALE, why));
    }
    Ok(this)
}

/// Persists what a Ready asks for: its snapshot (if any), its entries and
/// its hard state (if any), in that order. This is step 1 of the Ready loop
/// for hosts that keep their log in this storage. Call it before
/// raftlet_node_advance.
///
/// Readies must be persisted in the order they were taken, each once (see
/// raftlet_node_ready). The storage remembers the last ready it persisted
/// (its node and number) and refuses, with RAFTLET_ERR_READY_STALE and
/// without writing anything, a ready that is not newer: the same ready
/// again, an earlier ready of the same node, or a ready of a node created
/// before that one (a node this storage was restarted from since). Also
/// refused as stale: a ready that was advanced, or one covered by the
/// advance of a later ready of its node. Persisting an old ready again
/// would replace newer entries and roll back the hard state under the
/// node. On an error nothing is written; a ready whose persistence failed
/// must not be advanced, nor any later ready until it is persisted (the
/// node would take its entries as durable, and fail with RAFTLET_PANIC
/// when it reads them back).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_READY_STALE, or a
/// storage code (RAFTLET_ERR_UNAVAILABLE for entries that would leave a
/// gap, RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE).
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_append_ready(
    storage: *mut raftlet_storage,
    ready: *const raftlet_ready,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage, ready);
        // SAFETY: non-null handle from raftlet_node_ready.
        let rd = unsafe { &*ready };
        append_ready(st(storage), rd)
    })
}

/// The body of raftlet_storage_append_ready, for the calls that persist
/// a ready as they take it (raftlet_node_ready_flat).
pub(crate) fn append_ready(store: &raftlet_storage, rd: &raftlet_ready) -> raftlet_result {
    if let Some(commit) = rd.light {
        // A light ready writes its commit index only (unsynced on disk);
        // it takes no place in the order of the node's readies.
        if rd.is_stale() {
            return fail(RAFTLET_ERR_READY_STALE, "the ready was already advanced");
        }
        return match commit {
            Some(c) => code(&store.inner.set_commit(c)),
            None => RAFTLET_OK,
        };
    }
    let mut appended = store.appended.lock();
    let this = match check_ready_order(rd, *appended) {
        Ok(this) => this,
        Err((code, why)) => return fail(code, why),
    };
    if let Some(snap) = &rd.rd.snapshot {
        // Entries that would not follow the snapshot fail after it is
        // applied: refuse them first, so nothing is written on an error.
        if let Some(first) = rd.rd.entries.first() {
            if first.index > snap.metadata.index.saturating_add(1) {
                return fail(
                    RAFTLET_ERR_UNAVAILABLE,
                    "the ready's entries do not follow its snapshot",
                );
            }
        }
    }
    if let Err(e) = store.inner.persist_ready(&rd.rd) {
        return from_error(&e);
    }
    *appended = this;
    RAFTLET_OK
}

/// Replaces the storage's contents with a raftpb-encoded Snapshot.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_DECODE,
/// RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE or RAFTLET_ERR_CONF_CHANGE_REFUSED
/// (its configuration is invalid, as for raftlet_storage_set_conf_state).
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_apply_snapshot(
    storage: *mut raftlet_storage,
    snapshot: *const u8,
    snapshot_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage);
        let buf = c_slice!(snapshot, snapshot_len, "snapshot");
        let snap = match Snapshot::decode(buf) {
            Ok(s) => s,
            Err(e) => return from_error(&e.into()),
        };
        code(&st(storage).inner.apply_snapshot(snap))
    })
}

/// Records a snapshot of the state machine at `index` (which must be
/// applied) with the host's `data`, keeping the storage's current
/// configuration. Follow with raftlet_storage_compact to drop old entries.
/// `index` must also be covered by the commit index the storage holds (a
/// ready's hard state written, or a light ready's commit): a host that
/// applies entries before their ready's write lands snapshots them once
/// that write is done. Above the stored commit the storage may still hold
/// an older entry that the ready in flight replaces, and the snapshot
/// would record that entry's term: such an index is refused with
/// RAFTLET_ERR_UNAVAILABLE, as one past the last entry is.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE,
/// RAFTLET_ERR_COMPACTED or RAFTLET_ERR_UNAVAILABLE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_create_snapshot(
    storage: *mut raftlet_storage,
    index: u64,
    data: *const u8,
    data_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage);
        let d = c_slice!(data, data_len, "data");
        if let Err(rc) = check_snapshot_committed(st(storage), index) {
            return rc;
        }
        code(&st(storage).inner.create_snapshot(
            index,
            None,
            Some(bytes::Bytes::copy_from_slice(d)),
        ))
    })
}

/// Sets the configuration recorded with future snapshots (pass the
/// ConfState returned by raftlet_node_apply_conf_change, raftpb-encoded).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_DECODE or
/// RAFTLET_ERR_CONF_CHANGE_REFUSED (an invalid configuration, as for
/// raftlet_storage_set_conf_state; the configuration held is kept).
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_set_conf_state_encoded(
    storage: *mut raftlet_storage,
    conf_state: *const u8,
    conf_state_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage);
        let buf = c_slice!(conf_state, conf_state_len, "conf_state");
        match ConfState::decode(buf) {
            Ok(cs) => code(&st(storage).inner.set_conf_state(cs)),
            Err(e) => from_error(&e.into()),
        }
    })
}

/// Discards entries up to and including `index` (they must be covered by
/// a snapshot). Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG,
/// RAFTLET_ERR_COMPACTED (already compacted) or RAFTLET_ERR_UNAVAILABLE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_compact(
    storage: *mut raftlet_storage,
    index: u64,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage);
        code(&st(storage).inner.compact(index))
    })
}

/// Writes the first and last index of the log held (first = snapshot
/// index + 1; last = first - 1 when empty).
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_bounds(
    storage: *const raftlet_storage,
    first_out: *mut u64,
    last_out: *mut u64,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage, first_out, last_out);
        use raftlet_core::Storage as _;
        let s = &st(storage).inner;
        let (f, l) = match (s.first_index(), s.last_index()) {
            (Ok(f), Ok(l)) => (f, l),
            (Err(e), _) | (_, Err(e)) => return from_error(&e),
        };
        // SAFETY: non-null output pointers.
        unsafe {
            *first_out = f;
            *last_out = l;
        }
        RAFTLET_OK
    })
}

/// Appends the entries of a raftpb-encoded Message (only its `entries`
/// field is read; a Message is the envelope a binding already has an
/// encoder for), truncating any conflicting tail, in one call and one
/// lock: either all entries are appended or, on an error, none.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_DECODE or
/// RAFTLET_ERR_UNAVAILABLE (a gap after the last index, or entries that
/// are not consecutive).
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_append_entries(
    storage: *mut raftlet_storage,
    message: *const u8,
    message_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage);
        let buf = c_slice!(message, message_len, "message");
        let m = match Message::decode(buf) {
            Ok(m) => m,
            Err(e) => return from_error(&e.into()),
        };
        code(&st(storage).inner.append(&m.entries))
    })
}

/// Refuses a snapshot at `index` above the commit index the storage
/// holds (see `raftlet_disk::uncommitted_snapshot`), after the storage's
/// own refusals, with their codes.
fn check_snapshot_committed(store: &raftlet_storage, index: u64) -> Result<(), raftlet_result> {
    match raftlet_disk::uncommitted_snapshot(&store.inner, index, None) {
        Ok(None) => Ok(()),
        Ok(Some(covered)) => Err(fail(
            RAFTLET_ERR_UNAVAILABLE,
            format!(
                "index {index} is past the storage's commit index ({covered}): snapshot it \
                 once the ready that commits it is written"
            ),
        )),
        Err(e) => Err(from_error(&e)),
    }
}

/// Records a snapshot as raftlet_storage_create_snapshot does, with the
/// configuration at `index`: `conf_state` is a raftpb-encoded ConfState
/// (what raftlet_node_apply_conf_change returns), or NULL (with length 0)
/// to keep the configuration held (etcd `MemoryStorage.CreateSnapshot`
/// with a nil ConfState). Nothing changes on an error.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_DECODE,
/// RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE, RAFTLET_ERR_COMPACTED,
/// RAFTLET_ERR_UNAVAILABLE or RAFTLET_ERR_CONF_CHANGE_REFUSED (an invalid
/// configuration, as for raftlet_storage_set_conf_state).
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_create_snapshot_with_conf_state(
    storage: *mut raftlet_storage,
    index: u64,
    conf_state: *const u8,
    conf_state_len: usize,
    data: *const u8,
    data_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage);
        let cs = if conf_state.is_null() && conf_state_len == 0 {
            None
        } else {
            let buf = c_slice!(conf_state, conf_state_len, "conf_state");
            match ConfState::decode(buf) {
                Ok(cs) => Some(cs),
                Err(e) => return from_error(&e.into()),
            }
        };
        let d = c_slice!(data, data_len, "data");
        if let Err(rc) = check_snapshot_committed(st(storage), index) {
            return rc;
        }
        code(
            &st(storage)
                .inner
                .create_snapshot(index, cs, Some(bytes::Bytes::copy_from_slice(d))),
        )
    })
}

/// Copies the snapshot the storage holds, raftpb-encoded (the one the
/// node sends to a peer that needs it). `*len_out` always receives the
/// encoded size; the bytes are written to `out` when it is not NULL and
/// `cap` is enough (call with `out` NULL and `cap` 0 to size the buffer).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_INVALID_ARG
/// (buffer too small).
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_snapshot(
    storage: *const raftlet_storage,
    out: *mut u8,
    cap: usize,
    len_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage, len_out);
        let enc = match st(storage).inner.snapshot_encoded() {
            Ok(enc) => enc,
            Err(e) => return from_error(&e),
        };
        // SAFETY: non-null output pointer.
        unsafe { *len_out = enc.len() };
        if out.is_null() {
            if cap != 0 {
                return fail(
                    RAFTLET_ERR_NULL_ARG,
                    "argument `out` is NULL with a non-zero capacity",
                );
            }
            return RAFTLET_OK;
        }
        if enc.len() > cap {
            return fail(
                RAFTLET_ERR_INVALID_ARG,
                "the output buffer is too small; *len_out holds the size needed",
            );
        }
        // SAFETY: the caller provides `cap` writable bytes at `out`.
        unsafe { std::ptr::copy_nonoverlapping(enc.as_ptr(), out, enc.len()) };
        RAFTLET_OK
    })
}
