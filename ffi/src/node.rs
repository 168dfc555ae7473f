//! `raftlet_node`: a RawNode behind a lock, callable from any thread.

use std::ffi::{c_char, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use raftlet_core::pb::{
    ConfChange, ConfChangeI, ConfChangeV2, ConfState, Decode, Encode, Entry, Message,
};
use raftlet_core::{RawNode, Ready, SnapshotStatus, StateRole};

use crate::any_storage::AnyStorage;
use raftlet_disk::{MissingWrite, ReadyWrites};

use crate::config::raftlet_config;
use crate::ready::{raftlet_ready, NewReady};
use crate::result::{code, fail, from_error, raftlet_result, raftlet_result::*};
use crate::storage::raftlet_storage;

/// An opaque Raft node over a raftlet_storage. Created by raftlet_node_new,
/// released by raftlet_node_free. Every function on it may be called from
/// any thread; a lock inside serialises them.
pub struct raftlet_node {
    inner: Mutex<NodeState>,
    /// What the node's readies know about it (they may outlive it).
    track: Arc<NodeTrack>,
    /// Set when a panic escaped the core while this node was in use: its
    /// state may be inconsistent, so every later call fails.
    poisoned: AtomicBool,
}

/// The node and what the ABI tracks about its readies, under one lock.
struct NodeState {
    rn: RawNode<AnyStorage>,
    /// The last committed index handed out by the readies taken so far:
    /// what raftlet_node_advance of the latest one reports applied.
    applying: u64,
    /// What the readies taken so far asked to write.
    written: ReadyWrites,
}

/// Why acknowledging a ready now would lie to the node: what it asked
/// to write is not in the node's storage.
fn missing_write(m: MissingWrite) -> String {
    match m {
        MissingWrite::Snapshot { index, held } => {
            format!("the snapshot at index {index} is not in the node's storage (it holds {held})")
        }
        MissingWrite::Entry { index, term } => format!(
            "entry {index} (term {term}) is not in the node's storage: persist the \
             ready (raftlet_storage_append_ready) before advancing it"
        ),
    }
}

/// A generation for a new node: distinct for every node, never reused in
/// the process, so that a ready is recognised as another node's even when
/// that node was freed and a new one was allocated at the same address.
fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What a node shares with the readies it hands out.
#[derive(Debug)]
pub(crate) struct NodeTrack {
    /// The node's generation (see [`next_generation`]).
    pub(crate) generation: u64,
    /// The number of the last ready acknowledged with raftlet_node_advance
    /// or raftlet_node_advance_append (0 before the first): that ready and
    /// every earlier one are durable, so none of them may be persisted or
    /// acknowledged again. Written under the node lock, read by
    /// raftlet_storage_append_ready without it.
    pub(crate) advanced: AtomicU64,
    /// The message-encoding buffer of the last ready freed, reused by the
    /// next one: a large buffer would otherwise be mapped (and its pages
    /// faulted in) afresh for every ready. Behind a pointer, `None` until a
    /// buffer worth keeping is freed: an idle group keeps 8 bytes for it,
    /// not an empty vector's 24.
    // The box is the point: 8 bytes for the many nodes that keep nothing.
    #[allow(clippy::box_collection)]
    pub(crate) spare_buf: Mutex<Option<Box<Vec<u8>>>>,
}

pub(crate) fn role_code(r: StateRole) -> u32 {
    match r {
        StateRole::Follower => 0,
        StateRole::Candidate => 1,
        StateRole::Leader => 2,
        StateRole::PreCandidate => 3,
    }
}

/// Runs `f` on the locked node; a panic poisons the node.
pub(crate) fn with_node(
    node: *const raftlet_node,
    f: impl FnOnce(&mut RawNode<AnyStorage>) -> raftlet_result,
) -> raftlet_result {
    with_state(node, |st, _| f(&mut st.rn))
}

/// Runs `f` on the locked node state and its track; a panic poisons the node.
fn with_state(
    node: *const raftlet_node,
    f: impl FnOnce(&mut NodeState, &Arc<NodeTrack>) -> raftlet_result,
) -> raftlet_result {
    if node.is_null() {
        return fail(RAFTLET_ERR_NULL_ARG, "argument `node` is NULL");
    }
    // SAFETY: non-null handle from raftlet_node_new, alive for the call.
    let n = unsafe { &*node };
    if n.poisoned.load(Ordering::Acquire) {
        return fail(RAFTLET_PANIC, "the node is poisoned by an earlier panic");
    }
    let mut guard = n.inner.lock();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut guard, &n.track))) {
        Ok(r) => r,
        Err(payload) => {
            n.poisoned.store(true, Ordering::Release);
            let msg = crate::boundary::payload_message(&*payload);
            fail(
                RAFTLET_PANIC,
                format!("panic inside the node; it is now poisoned: {msg}"),
            )
        }
    }
}

/// Creates a node from `config` over `storage`, restarting from whatever
/// the storage holds. The node keeps its own reference to the storage and
/// copies the config: both handles may be freed afterwards. On success
/// `*node_out` owns a new handle (release with raftlet_node_free).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_CONFIG_INVALID,
/// RAFTLET_ERR_INVALID_STATE (inconsistent storage) or a storage code.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_new(
    config: *const raftlet_config,
    storage: *const raftlet_storage,
    node_out: *mut *mut raftlet_node,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(config, storage, node_out);
        // SAFETY: non-null handles from their _new functions.
        let (c, s) = unsafe { (&*config, &*storage) };
        match RawNode::new(&c.inner, s.inner.clone()) {
            Ok(rn) => {
                let b = Box::new(raftlet_node {
                    inner: Mutex::new(NodeState {
                        rn,
                        applying: 0,
                        written: ReadyWrites::default(),
                    }),
                    track: Arc::new(NodeTrack {
                        generation: next_generation(),
                        advanced: AtomicU64::new(0),
                        spare_buf: Mutex::new(None),
                    }),
                    poisoned: AtomicBool::new(false),
                });
                // SAFETY: non-null output pointer.
                unsafe { *node_out = Box::into_raw(b) };
                RAFTLET_OK
            }
            Err(e) => from_error(&e),
        }
    })
}

/// Releases a node. NULL is a no-op. Readies it produced stay valid until
/// their own raftlet_ready_free.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_free(node: *mut raftlet_node) {
    if node.is_null() {
        return;
    }
    let _ = crate::boundary::catch(|| {
        // SAFETY: from raftlet_node_new, freed once.
        drop(unsafe { Box::from_raw(node) });
    });
}

/// Initializes a node over an empty storage with its first configuration
/// (`voters` and `learners`, which may be NULL when their count is 0).
/// Everything is checked first: on an error nothing changes (no entry, no
/// hard state, no ready), and a corrected call may follow.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_INVALID_STATE
/// (no voters, or the storage is not empty) or
/// RAFTLET_ERR_CONF_CHANGE_REFUSED (an id of 0, UINT64_MAX or
/// UINT64_MAX - 1, an id given twice, or a voter that is also a learner).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_bootstrap(
    node: *mut raftlet_node,
    voters: *const u64,
    voters_len: usize,
    learners: *const u64,
    learners_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        let v = match crate::id_slice(voters, voters_len, "voters") {
            Ok(v) => v,
            Err(code) => return code,
        };
        let l = match crate::id_slice(learners, learners_len, "learners") {
            Ok(l) => l,
            Err(code) => return code,
        };
        with_node(node, |n| code(&n.bootstrap(v, l)))
    })
}

/// Advances the node's logical clock by one tick.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_tick(node: *mut raftlet_node) -> raftlet_result {
    ffi_boundary!({
        with_node(node, |n| {
            n.tick();
            RAFTLET_OK
        })
    })
}

/// Makes the node campaign at once.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_INVALID_STATE
/// (the node's term or last index is at the limit 2^63 - 1, so it can
/// never campaign again).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_campaign(node: *mut raftlet_node) -> raftlet_result {
    ffi_boundary!({ with_node(node, |n| code(&n.campaign())) })
}

/// Proposes `data` (copied) for the log. Returns RAFTLET_OK,
/// RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_PROPOSAL_DROPPED.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_propose(
    node: *mut raftlet_node,
    data: *const u8,
    data_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        let d = raftlet_core::copy_payload(c_slice!(data, data_len, "data"));
        with_node(node, |n| code(&n.propose(d)))
    })
}

fn decode_cc(buf: &[u8], v2: bool) -> Result<ConfChangeI, raftlet_result> {
    if v2 {
        ConfChangeV2::decode(buf)
            .map(ConfChangeI::V2)
            .map_err(|e| from_error(&e.into()))
    } else {
        ConfChange::decode(buf)
            .map(ConfChangeI::V1)
            .map_err(|e| from_error(&e.into()))
    }
}

/// Proposes a configuration change given as raftpb bytes: a ConfChange
/// when `v2` is false, a ConfChangeV2 when true. Returns RAFTLET_OK,
/// RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_DECODE, RAFTLET_ERR_PROPOSAL_DROPPED,
/// RAFTLET_ERR_CONF_CHANGE_REFUSED, RAFTLET_ERR_PROMOTION_NOT_READY or
/// RAFTLET_ERR_TOO_MANY_LEARNERS (nothing is appended on a refusal). A
/// change of an unknown type or transition, or of node 0, UINT64_MAX or
/// UINT64_MAX - 1, is refused with RAFTLET_ERR_CONF_CHANGE_REFUSED on
/// every node.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_propose_conf_change(
    node: *mut raftlet_node,
    cc: *const u8,
    cc_len: usize,
    v2: bool,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(node);
        let buf = c_slice!(cc, cc_len, "cc");
        let cc = match decode_cc(buf, v2) {
            Ok(c) => c,
            Err(code) => return code,
        };
        with_node(node, |n| code(&n.propose_conf_change(cc)))
    })
}

/// Applies a committed configuration change (the data of a conf-change
/// entry; `v2` as its entry type says). When `conf_state_out` is not NULL,
/// the new ConfState is written there raftpb-encoded if it fits in
/// `conf_state_cap` bytes; `*conf_state_len_out` (if not NULL) receives its
/// length either way. Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG,
/// RAFTLET_ERR_DECODE, RAFTLET_ERR_CONF_CHANGE_REFUSED (configuration left
/// unchanged; the change came from a leader that does not validate, such
/// as etcd's: log it and treat the entry as a no-op, as every raftlet node
/// does, and keep going) or RAFTLET_ERR_INVALID_ARG (buffer too small; the change is
/// applied and the length reported).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_apply_conf_change(
    node: *mut raftlet_node,
    cc: *const u8,
    cc_len: usize,
    v2: bool,
    conf_state_out: *mut u8,
    conf_state_cap: usize,
    conf_state_len_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(node);
        let buf = c_slice!(cc, cc_len, "cc");
        let cc = match decode_cc(buf, v2) {
            Ok(c) => c,
            Err(code) => return code,
        };
        with_node(node, |n| match n.apply_conf_change(&cc) {
            Ok(cs) => {
                let enc = cs.encode_to_vec();
                if !conf_state_len_out.is_null() {
                    // SAFETY: non-null output pointer.
                    unsafe { *conf_state_len_out = enc.len() };
                }
                if !conf_state_out.is_null() {
                    if enc.len() > conf_state_cap {
                        return fail(
                            RAFTLET_ERR_INVALID_ARG,
                            "conf_state_out is too small for the ConfState",
                        );
                    }
                    // SAFETY: the caller provides conf_state_cap writable bytes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(enc.as_ptr(), conf_state_out, enc.len())
                    };
                }
                RAFTLET_OK
            }
            Err(e) => from_error(&e),
        })
    })
}

/// Feeds a raftpb-encoded message from a peer. Returns RAFTLET_OK,
/// RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_DECODE (malformed bytes),
/// RAFTLET_ERR_STEP_LOCAL_MSG, RAFTLET_ERR_INVALID_MESSAGE (an unknown
/// message type, a term or index above 2^63 - 1, or a peer message from an
/// id that cannot be a member; the node is left unchanged),
/// RAFTLET_ERR_STEP_PEER_NOT_FOUND, or the error the message caused (e.g.
/// RAFTLET_ERR_PROPOSAL_DROPPED).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_step(
    node: *mut raftlet_node,
    msg: *const u8,
    msg_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(node);
        let buf = c_slice!(msg, msg_len, "msg");
        let m = match Message::decode(buf) {
            Ok(m) => m,
            Err(e) => return from_error(&e.into()),
        };
        with_node(node, |n| code(&n.step(m)))
    })
}

/// Requests a linearizable read; the answer arrives as a read state
/// carrying `ctx` (copied) in a later ready. Returns RAFTLET_OK,
/// RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_NO_LEADER.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_read_index(
    node: *mut raftlet_node,
    ctx: *const u8,
    ctx_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        let c = raftlet_core::copy_payload(c_slice!(ctx, ctx_len, "ctx"));
        with_node(node, |n| code(&n.read_index(c)))
    })
}

/// Asks the leader to hand leadership to `transferee`. Returns RAFTLET_OK,
/// RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_TRANSFER_REFUSED.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_transfer_leader(
    node: *mut raftlet_node,
    transferee: u64,
) -> raftlet_result {
    ffi_boundary!({ with_node(node, |n| code(&n.transfer_leader(transferee))) })
}

/// Makes a follower forget its leader. Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_forget_leader(node: *mut raftlet_node) -> raftlet_result {
    ffi_boundary!({ with_node(node, |n| code(&n.forget_leader())) })
}

/// Tells the leader the last message to `id` may be lost.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_report_unreachable(
    node: *mut raftlet_node,
    id: u64,
) -> raftlet_result {
    ffi_boundary!({
        with_node(node, |n| {
            n.report_unreachable(id);
            RAFTLET_OK
        })
    })
}

/// Tells the leader how sending a snapshot to `id` ended (`success`).
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_report_snapshot(
    node: *mut raftlet_node,
    id: u64,
    success: bool,
) -> raftlet_result {
    ffi_boundary!({
        with_node(node, |n| {
            let st = if success {
                SnapshotStatus::Finish
            } else {
                SnapshotStatus::Failure
            };
            n.report_snapshot(id, st);
            RAFTLET_OK
        })
    })
}

/// Writes whether a ready with work in it is available.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_has_ready(
    node: *const raftlet_node,
    has_ready_out: *mut bool,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(has_ready_out);
        with_node(node, |n| {
            // SAFETY: non-null output pointer.
            unsafe { *has_ready_out = n.has_ready() };
            RAFTLET_OK
        })
    })
}

/// Takes the next ready. On success `*ready_out` owns a new handle: read
/// it, persist it (raftlet_storage_append_ready), send its messages, apply
/// its committed entries, then call raftlet_node_advance and finally
/// raftlet_ready_free.
///
/// Readies are numbered in the order they are taken. Several may be in
/// flight at once (taken before the previous one is durable), but they
/// must be persisted and acknowledged (raftlet_node_advance or
/// raftlet_node_advance_append) in that order, each once. Acknowledging a
/// ready covers the earlier ones not acknowledged yet: a covered ready can
/// no longer be persisted or acknowledged (RAFTLET_ERR_READY_STALE), nor
/// can a ready acknowledged itself. A host that runs the Ready loop from
/// several threads must keep that order itself (for instance one thread at
/// a time from raftlet_node_ready to raftlet_node_advance): the library
/// refuses what arrives out of order, which leaves the node and the
/// storage as they were, but it cannot write what the host skipped.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_ready(
    node: *mut raftlet_node,
    ready_out: *mut *mut raftlet_ready,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(ready_out);
        with_state(node, |st, track| {
            let rd = take_ready(st, track).seal();
            // SAFETY: non-null output pointer.
            unsafe { *ready_out = rd };
            RAFTLET_OK
        })
    })
}

/// Takes the next ready with its flat view and, when `storage` is not
/// NULL, persists it there, then reads whether the node has another
/// ready: raftlet_node_ready, raftlet_ready_view,
/// raftlet_storage_append_ready and raftlet_node_has_ready in one call,
/// so that a binding handles the start of a Ready cycle in one crossing
/// of the ABI. The ready is handled as one from raftlet_node_ready (read,
/// send, apply, raftlet_node_advance, raftlet_ready_free); `*flat_out`
/// points to its flat view (what raftlet_ready_view copies out), in the
/// ready's memory: valid until raftlet_ready_free, like the views.
///
/// With `only_if_ready`, nothing is taken when the node has no ready:
/// `*ready_out` and `*flat_out` are then NULL and `*has_ready_out`
/// false. Without it a ready is always taken, possibly empty.
///
/// `*persist_out` gets the outcome of the write, as
/// raftlet_storage_append_ready returns it (RAFTLET_OK when `storage` is
/// NULL or no ready was taken). When the write fails the ready is taken
/// all the same and the thread's last error message is the write's:
/// nothing of it is durable; persist it again before sending its
/// messages or advancing it. The write happens outside the node lock, as
/// with the separate calls. `*has_ready_out` is true when the node has a
/// ready after this one, read under the lock that takes the ready (for
/// raftlet_node_ready_persisted, the one that acknowledges its write;
/// true when the node was poisoned in between: the next call reports it).
///
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG (`node`, `ready_out`,
/// `flat_out`, `persist_out` or `has_ready_out` NULL) or RAFTLET_PANIC
/// (the node is poisoned; nothing is taken).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_ready_flat(
    node: *mut raftlet_node,
    storage: *mut raftlet_storage,
    only_if_ready: bool,
    ready_out: *mut *mut raftlet_ready,
    flat_out: *mut *const crate::ready::raftlet_ready_flat,
    persist_out: *mut raftlet_result,
    has_ready_out: *mut bool,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(ready_out, flat_out, persist_out, has_ready_out);
        // SAFETY: output pointers checked non-null above.
        let taken = match unsafe {
            take_to_hand_out(
                node,
                only_if_ready,
                true,
                ready_out,
                flat_out,
                persist_out,
                has_ready_out,
            )
        } {
            Ok(Some(taken)) => taken,
            Ok(None) => return RAFTLET_OK,
            Err(rc) => return rc,
        };
        // SAFETY: the output pointers checked non-null above.
        unsafe {
            hand_out(
                taken,
                storage,
                ready_out,
                flat_out,
                persist_out,
                has_ready_out,
            )
        };
        RAFTLET_OK
    })
}

/// raftlet_node_ready_flat with a storage, and the write acknowledged in
/// the same call: the ready is taken, written to `storage` (synced when
/// it must be, for a disk storage) and, once the write succeeded, reported
/// durable to the node at once, as raftlet_node_advance_light would. What
/// that made available joins the ready handed out: the entries it
/// committed (a single voter's proposal, a follower's entries the
/// leader's commit covers) after the ready's own committed entries, and
/// the messages it lets leave after the ready's own. Every message of the
/// ready may then be sent at once (`persisted_message_start` is the
/// message count), and the commit index the acknowledgement moved is
/// written to `storage` too (unsynced, as for a light ready); the ready's
/// hard state stays the one it wrote. A Ready cycle is then one call to
/// take it and one to advance it.
///
/// Apply the ready's committed entries, send its messages, then pass it to
/// raftlet_node_advance (or raftlet_node_advance_light, which makes no
/// light ready for it), which reports the entries applied, and free it.
///
/// The write is acknowledged only when the ready follows every ready
/// taken before it, all advanced, and holds no snapshot (a snapshot is
/// applied by the host before the entries after it). Otherwise, or when
/// the write fails (`*persist_out` says why, as for
/// raftlet_node_ready_flat), the ready is handed out as
/// raftlet_node_ready_flat hands it out. Other arguments, outputs and
/// result codes as for raftlet_node_ready_flat; `storage` must not be
/// NULL (RAFTLET_ERR_NULL_ARG).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_ready_persisted(
    node: *mut raftlet_node,
    storage: *mut raftlet_storage,
    only_if_ready: bool,
    ready_out: *mut *mut raftlet_ready,
    flat_out: *mut *const crate::ready::raftlet_ready_flat,
    persist_out: *mut raftlet_result,
    has_ready_out: *mut bool,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage, ready_out, flat_out, persist_out, has_ready_out);
        // SAFETY: output pointers checked non-null above.
        let taken = match unsafe {
            take_to_hand_out(
                node,
                only_if_ready,
                false,
                ready_out,
                flat_out,
                persist_out,
                has_ready_out,
            )
        } {
            Ok(Some(taken)) => taken,
            Ok(None) => return RAFTLET_OK,
            Err(rc) => return rc,
        };
        let (mut r, _) = taken;
        // Read under the lock that acknowledges the write; by its own
        // call when there is none.
        let mut has = None;
        // SAFETY: non-null handle from raftlet_storage_new_memory or
        // raftlet_storage_open, alive for the call.
        let store = unsafe { &*storage };
        // The write happens outside the node lock, as with the separate
        // calls.
        let mut written = crate::storage::append_ready(store, &r);
        if written == RAFTLET_OK && r.rd.snapshot.is_none() {
            let mut commit = None;
            // A poisoned node acknowledges nothing: the ready goes out as
            // written, with a ready said to follow, so that the next call
            // reports the poison.
            let acked = with_state(node, |st, track| {
                let number = r.rd.number();
                // Only the next ready in line: acknowledging a later one
                // would cover (and make stale) readies taken before it
                // that their host has not advanced yet.
                if track.advanced.load(Ordering::Relaxed) + 1 != number {
                    return RAFTLET_OK;
                }
                // The ready's own committed entries are none when its write
                // is what commits them: its empty vector goes back to the
                // node, which fills it with what the acknowledgement
                // commits.
                if r.rd.committed_entries.is_empty() && r.rd.committed_entries.capacity() > 0 {
                    let v = std::mem::take(&mut r.rd.committed_entries);
                    if let Some(back) = st.rn.recycle_entries(v) {
                        r.rd.committed_entries = back;
                    }
                }
                let (committed, messages, c) = acknowledge_light(st, track, number);
                commit = c;
                r.absorb_light(committed, messages, commit, st.applying);
                r.set_noop(st.rn.basic_status().applied);
                let now = st.rn.has_ready();
                r.set_idle_after_apply(now, st.rn.apply_may_make_ready());
                has = Some(now);
                RAFTLET_OK
            });
            if acked != RAFTLET_OK {
                has = Some(true);
            }
            if let Some(c) = commit {
                written = code(&store.inner.set_commit(c));
            }
        }
        let taken = r.seal();
        // SAFETY: the ready just handed out, alive until raftlet_ready_free.
        let flat: *const crate::ready::raftlet_ready_flat = unsafe { (*taken).flat_ref() };
        // SAFETY: non-null output pointers.
        unsafe {
            *ready_out = taken;
            *flat_out = flat;
            *persist_out = written;
            *has_ready_out = has.unwrap_or_else(|| has_ready_now(node));
        }
        RAFTLET_OK
    })
}

/// The start of the calls that take a ready and hand it out: the outputs
/// cleared (NULL, RAFTLET_OK, false), then the node's next ready taken,
/// or none (`Ok(None)`) when `only_if_ready` and the node has nothing,
/// with, when `read_has`, whether the node has a ready after it (read
/// under the same lock: writing the ready to a storage does not change the
/// answer; false when not read); `Err` is the node's failure (nothing
/// taken).
///
/// # Safety
/// The output pointers are non-null and writable.
unsafe fn take_to_hand_out(
    node: *const raftlet_node,
    only_if_ready: bool,
    read_has: bool,
    ready_out: *mut *mut raftlet_ready,
    flat_out: *mut *const crate::ready::raftlet_ready_flat,
    persist_out: *mut raftlet_result,
    has_ready_out: *mut bool,
) -> Result<Option<(NewReady, bool)>, raftlet_result> {
    // SAFETY: non-null output pointers (the caller's promise).
    unsafe {
        *ready_out = std::ptr::null_mut();
        *flat_out = std::ptr::null();
        *persist_out = RAFTLET_OK;
        *has_ready_out = false;
    }
    let mut taken = None;
    let rc = with_state(node, |st, track| {
        if only_if_ready && !st.rn.has_ready() {
            return RAFTLET_OK;
        }
        let rd = take_ready(st, track);
        taken = Some((rd, read_has && st.rn.has_ready()));
        RAFTLET_OK
    });
    if rc != RAFTLET_OK {
        return Err(rc);
    }
    Ok(taken)
}

/// Hands `taken` out with its flat view, persists it into `storage` when
/// that is not NULL (the outcome in `*persist_out`), and writes whether
/// the node has another ready (read when the ready was taken).
///
/// # Safety
/// The output pointers are non-null and writable; `storage` is NULL or a
/// live handle.
unsafe fn hand_out(
    (taken, has): (NewReady, bool),
    storage: *mut raftlet_storage,
    ready_out: *mut *mut raftlet_ready,
    flat_out: *mut *const crate::ready::raftlet_ready_flat,
    persist_out: *mut raftlet_result,
    has_ready_out: *mut bool,
) {
    let taken = taken.seal();
    // SAFETY: the ready just handed out, owned by the caller from here
    // and alive for this call.
    let r = unsafe { &*taken };
    let flat: *const crate::ready::raftlet_ready_flat = r.flat_ref();
    // SAFETY: non-null output pointers.
    unsafe {
        *ready_out = taken;
        *flat_out = flat;
    }
    if !storage.is_null() {
        // SAFETY: non-null handle from raftlet_storage_new_memory or
        // raftlet_storage_open, alive for the call.
        let w = crate::storage::append_ready(unsafe { &*storage }, r);
        // SAFETY: non-null output pointer.
        unsafe { *persist_out = w };
    }
    // SAFETY: non-null output pointer.
    unsafe { *has_ready_out = has };
}

/// Whether the node has a ready, read by its own lock; true when that
/// cannot be read (a node poisoned: the next call says so).
fn has_ready_now(node: *const raftlet_node) -> bool {
    let mut has = true;
    let hr = with_node(node, |n| {
        has = n.has_ready();
        RAFTLET_OK
    });
    has || hr != RAFTLET_OK
}

/// Takes the next ready of the locked node (raftlet_node_ready's body).
fn take_ready(st: &mut NodeState, track: &Arc<NodeTrack>) -> NewReady {
    NewReady::new_with(
        st,
        |st, spare| {
            for v in spare.iter_mut().filter(|v| v.capacity() > 0) {
                if let Some(back) = st.rn.recycle_entries(std::mem::take(v)) {
                    *v = back;
                }
            }
            st.rn.ready()
        },
        |st, rd| {
            if let Some(last) = rd.committed_entries.last() {
                st.applying = st.applying.max(last.index);
            }
            let term = st.rn.basic_status().hard_state.term;
            st.written.record(rd, term);
            (st.applying, st.written)
        },
        Arc::clone(track),
    )
}

/// Reports ready `number` of the locked node durable and takes what that
/// made available at once: the entries it committed (counted in
/// `st.applying`, as handed out), the messages it lets leave and the new
/// commit index to persist, if any. The caller checked that `number` may
/// be acknowledged.
fn acknowledge_light(
    st: &mut NodeState,
    track: &NodeTrack,
    number: u64,
) -> (Vec<Entry>, Vec<Message>, Option<u64>) {
    let mut lr = st.rn.on_persist_ready_light(number);
    track.advanced.store(number, Ordering::Release);
    let committed = lr.take_committed_entries();
    if let Some(last) = committed.last() {
        st.applying = st.applying.max(last.index);
    }
    (committed, lr.take_messages(), lr.commit_index())
}

/// Acknowledges `ready` as durable on `node` (and, with `apply`, its
/// committed entries and those of earlier readies as applied). The checks
/// and the acknowledgement happen under the node lock, so of two threads
/// advancing the same ready exactly one succeeds.
fn advance_ready(
    node: *const raftlet_node,
    ready: *const raftlet_ready,
    apply: bool,
) -> raftlet_result {
    advance_ready_light(node, ready, apply, None)
}

/// [`advance_ready`], and with `light` set, the light ready the write's
/// acknowledgement made available (`None` when it has nothing) is put
/// there (see raftlet_node_advance_light), and whether the node has a
/// ready after it, read under the same lock, in the flag beside it. Advancing a light ready reports its
/// entries (and those handed out before them) applied, and makes no
/// light ready.
fn advance_ready_light(
    node: *const raftlet_node,
    ready: *const raftlet_ready,
    apply: bool,
    light: Option<(&mut Option<NewReady>, &mut bool)>,
) -> raftlet_result {
    // NULL first: a NULL node must not be reported as "another node".
    if node.is_null() {
        return fail(RAFTLET_ERR_NULL_ARG, "argument `node` is NULL");
    }
    if ready.is_null() {
        return fail(RAFTLET_ERR_NULL_ARG, "argument `ready` is NULL");
    }
    // SAFETY: non-null handles from raftlet_node_new and raftlet_node_ready;
    // the caller keeps them alive for the call.
    let (n, r) = unsafe { (&*node, &*ready) };
    if r.generation() != n.track.generation {
        return fail(
            RAFTLET_ERR_READY_FOREIGN,
            "the ready was handed out by another node",
        );
    }
    let (mut light, has_out) = match light {
        Some((l, h)) => (Some(l), Some(h)),
        None => (None, None),
    };
    with_state(node, |st, track| {
        let rc = advance_locked(st, track, r, apply, light.as_deref_mut());
        if let (RAFTLET_OK, Some(h)) = (rc, has_out) {
            *h = st.rn.has_ready();
            if let Some(Some(lr)) = light {
                lr.set_idle_after_apply(*h, st.rn.apply_may_make_ready());
            }
        }
        rc
    })
}

/// The body of [`advance_ready_light`], under the node lock.
fn advance_locked(
    st: &mut NodeState,
    track: &Arc<NodeTrack>,
    r: &raftlet_ready,
    apply: bool,
    light: Option<&mut Option<NewReady>>,
) -> raftlet_result {
    {
        let number = r.rd.number();
        if r.light.is_some() {
            if !r.mark_stale() {
                return fail(RAFTLET_ERR_READY_STALE, "the ready was already advanced");
            }
            if apply {
                st.rn.advance_apply_to(r.applying);
            }
            return RAFTLET_OK;
        }
        if r.is_stale() {
            return fail(
                RAFTLET_ERR_READY_STALE,
                format!("ready {number} was already advanced"),
            );
        }
        // Only this function writes it, under the node lock.
        let done = track.advanced.load(Ordering::Relaxed);
        if number <= done {
            return fail(
                RAFTLET_ERR_READY_STALE,
                format!(
                    "ready {number} is covered by ready {done}, advanced before it: \
                     advance readies in the order they were taken"
                ),
            );
        }
        let term = st.rn.basic_status().hard_state.term;
        let rn = &st.rn;
        if let Err(m) = r
            .written
            .check_against(rn.store(), term, |i, t| rn.entry_term(i) == Some(t))
        {
            return fail(RAFTLET_ERR_READY_NOT_PERSISTED, missing_write(m));
        }
        if !r.mark_stale() {
            return fail(
                RAFTLET_ERR_READY_STALE,
                format!("ready {number} was already advanced"),
            );
        }
        let made = match light {
            Some(_) => Some(acknowledge_light(st, track, number)),
            None => {
                st.rn.on_persist_ready(number);
                track.advanced.store(number, Ordering::Release);
                None
            }
        };
        if apply {
            // Only what this ready and the earlier ones handed out: a later
            // ready, taken already, may still be being applied.
            st.rn.advance_apply_to(r.applying);
        }
        if let (Some(out), Some((committed, messages, commit))) = (light, made) {
            if !committed.is_empty() || !messages.is_empty() || commit.is_some() {
                let mut rd = Ready::default();
                rd.committed_entries = committed;
                rd.messages = messages;
                let mut lr =
                    NewReady::new_light(rd, Arc::clone(track), st.applying, st.written, commit);
                lr.set_noop(st.rn.basic_status().applied);
                *out = Some(lr);
            }
        }
        RAFTLET_OK
    }
}

/// Reports that `ready` was fully handled: persisted, sent, and its
/// committed entries (and those of earlier readies) applied; committed
/// entries of later readies, if any were taken, are not reported applied.
/// The ready becomes stale: its accessors return RAFTLET_ERR_READY_STALE,
/// but views already taken stay valid until raftlet_ready_free. Earlier
/// readies not advanced yet are covered (see raftlet_node_ready). Returns
/// RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_READY_STALE (the ready
/// was already advanced, or a later ready was: readies are advanced in
/// the order they were taken), RAFTLET_ERR_READY_FOREIGN (a ready handed
/// out by another node, including one freed before this node was created),
/// RAFTLET_ERR_READY_NOT_PERSISTED (the node's storage lacks the entries or
/// the snapshot of this ready, or of an earlier one it would cover: the
/// node would read them back later) or RAFTLET_PANIC (the node is
/// poisoned). On an error nothing changes.
/// Two threads advancing the same ready: exactly one gets RAFTLET_OK.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_advance(
    node: *mut raftlet_node,
    ready: *mut raftlet_ready,
) -> raftlet_result {
    ffi_boundary!({ advance_ready(node, ready, true) })
}

/// Reports that `ready`'s writes are durable, for hosts that apply
/// asynchronously (follow with raftlet_node_advance_apply_to). The ready
/// becomes stale and earlier readies are covered as with
/// raftlet_node_advance. Same result codes and rules.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_advance_append(
    node: *mut raftlet_node,
    ready: *mut raftlet_ready,
) -> raftlet_result {
    ffi_boundary!({ advance_ready(node, ready, false) })
}

/// raftlet_node_advance, then what that made available without a full
/// ready (the core's light Ready, raft-rs's `LightReady`): the entries the
/// write's acknowledgement committed (a single voter's proposal, a leader's
/// entries its own acknowledgement completes) and the messages that may
/// leave at once, as a light ready in `*light_out` with its flat view in
/// `*flat_out`; both NULL when nothing was made available. A Ready cycle
/// per proposal instead of two.
///
/// A light ready is read like any ready (its views, raftlet_ready_view,
/// raftlet_ready_flat) and holds nothing to persist but the commit index:
/// `storage` (when not NULL) gets it at once, unsynced, and
/// `*persist_out` the outcome (RAFTLET_OK when there was nothing to write);
/// with a NULL `storage` the host writes it with
/// raftlet_storage_append_ready on the light ready. It must be written
/// before state applied from the light ready's entries becomes durable (a
/// restart with `applied` beyond the stored commit index is refused).
/// Apply its entries, send its messages, then pass it to
/// raftlet_node_advance (which reports them applied; passing it to
/// raftlet_node_advance_light does the same and makes no light ready) and
/// free it with raftlet_ready_free. `*has_ready_out` is true when the node
/// has a ready after this, read under the lock of the advance.
///
/// Returns what raftlet_node_advance returns, or RAFTLET_ERR_NULL_ARG
/// (`light_out`, `flat_out`, `persist_out` or `has_ready_out` NULL). On an
/// error nothing changes.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_advance_light(
    node: *mut raftlet_node,
    ready: *mut raftlet_ready,
    storage: *mut raftlet_storage,
    light_out: *mut *mut raftlet_ready,
    flat_out: *mut *const crate::ready::raftlet_ready_flat,
    persist_out: *mut raftlet_result,
    has_ready_out: *mut bool,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(light_out, flat_out, persist_out, has_ready_out);
        // SAFETY: non-null output pointers.
        unsafe {
            *light_out = std::ptr::null_mut();
            *flat_out = std::ptr::null();
            *persist_out = RAFTLET_OK;
            *has_ready_out = false;
        }
        let mut light = None;
        let mut has = false;
        let rc = advance_ready_light(node, ready, true, Some((&mut light, &mut has)));
        if rc != RAFTLET_OK {
            return rc;
        }
        match light {
            // SAFETY: the output pointers checked non-null above.
            Some(light) => unsafe {
                hand_out(
                    (light, has),
                    storage,
                    light_out,
                    flat_out,
                    persist_out,
                    has_ready_out,
                )
            },
            // SAFETY: non-null output pointer.
            None => unsafe { *has_ready_out = has },
        }
        RAFTLET_OK
    })
}

/// Reports that committed entries up to `index` are applied.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_advance_apply_to(
    node: *mut raftlet_node,
    index: u64,
) -> raftlet_result {
    ffi_boundary!({
        with_node(node, |n| {
            n.advance_apply_to(index);
            RAFTLET_OK
        })
    })
}

/// The scalar part of a node's status.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct raftlet_status {
    /// The node's id.
    pub id: u64,
    /// The current term.
    pub term: u64,
    /// The vote in that term (0 = none).
    pub vote: u64,
    /// The commit index.
    pub commit: u64,
    /// The known leader (0 = none).
    pub lead: u64,
    /// 0 follower, 1 candidate, 2 leader, 3 pre-candidate.
    pub role: u32,
    /// The applied index.
    pub applied: u64,
    /// The target of a leader transfer under way (0 = none).
    pub lead_transferee: u64,
    /// How many peers raftlet_node_progress reports (non-zero on the leader only).
    pub progress_count: usize,
    /// How many voters (incoming configuration).
    pub voters_count: usize,
    /// How many learners.
    pub learners_count: usize,
}

/// One peer's replication progress (on the leader).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct raftlet_progress {
    /// The peer's id.
    pub id: u64,
    /// The highest index known to be replicated on the peer.
    pub match_index: u64,
    /// The next index to send.
    pub next_index: u64,
    /// 0 probe, 1 replicate, 2 snapshot.
    pub state: u32,
    /// Whether the peer is a learner.
    pub is_learner: bool,
    /// Whether the leader heard from it in the current check-quorum window.
    pub recent_active: bool,
    /// The index of the snapshot being sent (0 = none).
    pub pending_snapshot: u64,
}

/// Writes the node's status. Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_status(
    node: *const raftlet_node,
    status_out: *mut raftlet_status,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(status_out);
        with_node(node, |n| {
            let s = n.status();
            let st = raftlet_status {
                id: s.basic.id,
                term: s.basic.hard_state.term,
                vote: s.basic.hard_state.vote,
                commit: s.basic.hard_state.commit,
                lead: s.basic.soft_state.leader_id,
                role: role_code(s.basic.soft_state.raft_state),
                applied: s.basic.applied,
                lead_transferee: s.basic.lead_transferee,
                progress_count: s.progress.len(),
                voters_count: s.config.voters.incoming.len(),
                learners_count: s.config.learners.len(),
            };
            // SAFETY: non-null output pointer.
            unsafe { *status_out = st };
            RAFTLET_OK
        })
    })
}

/// The cheap part of a node's status (etcd `BasicStatus`): what
/// raftlet_node_basic_status writes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct raftlet_basic_status {
    /// The node's id.
    pub id: u64,
    /// The current term.
    pub term: u64,
    /// The vote in that term (0 = none).
    pub vote: u64,
    /// The commit index.
    pub commit: u64,
    /// The known leader (0 = none).
    pub lead: u64,
    /// 0 follower, 1 candidate, 2 leader, 3 pre-candidate.
    pub role: u32,
    /// The applied index.
    pub applied: u64,
    /// The target of a leader transfer under way (0 = none).
    pub lead_transferee: u64,
}

/// Writes the node's basic status: the scalars of raftlet_status without
/// the counts, read without copying the configuration or the peers'
/// progress (cheap enough to call on every loop iteration). May be called
/// from any thread. Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_basic_status(
    node: *const raftlet_node,
    status_out: *mut raftlet_basic_status,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(status_out);
        with_node(node, |n| {
            let b = n.basic_status();
            let st = raftlet_basic_status {
                id: b.id,
                term: b.hard_state.term,
                vote: b.hard_state.vote,
                commit: b.hard_state.commit,
                lead: b.soft_state.leader_id,
                role: role_code(b.soft_state.raft_state),
                applied: b.applied,
                lead_transferee: b.lead_transferee,
            };
            // SAFETY: non-null output pointer.
            unsafe { *status_out = st };
            RAFTLET_OK
        })
    })
}

/// Copies up to `cap` progress records (ascending peer id) into
/// `progress_out` and writes how many exist into `*len_out` (which may
/// exceed `cap`: call again with a larger array). `progress_out` may be
/// NULL when `cap` is 0. Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_progress(
    node: *const raftlet_node,
    progress_out: *mut raftlet_progress,
    cap: usize,
    len_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(len_out);
        if progress_out.is_null() && cap != 0 {
            return fail(RAFTLET_ERR_NULL_ARG, "argument `progress_out` is NULL");
        }
        with_node(node, |n| {
            let s = n.status();
            for (i, (id, pr)) in s.progress.iter().enumerate().take(cap) {
                let p = raftlet_progress {
                    id: *id,
                    match_index: pr.matched,
                    next_index: pr.next,
                    state: match pr.state {
                        raftlet_core::tracker::ProgressState::Probe => 0,
                        raftlet_core::tracker::ProgressState::Replicate => 1,
                        raftlet_core::tracker::ProgressState::Snapshot => 2,
                    },
                    is_learner: pr.is_learner,
                    recent_active: pr.recent_active,
                    pending_snapshot: pr.pending_snapshot,
                };
                // SAFETY: i < cap and the caller provides cap records.
                unsafe { *progress_out.add(i) = p };
            }
            // SAFETY: non-null output pointer.
            unsafe { *len_out = s.progress.len() };
            RAFTLET_OK
        })
    })
}

/// Writes the node's status as a JSON string (etcd's shape, ids in hex,
/// plus the configuration and, on the leader, `"learnerStatus"`: each
/// learner's lag, activity and whether it is promotable now, and why not). On success `*json_out` owns a NUL-terminated
/// string; release it with raftlet_string_free.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_status_json(
    node: *const raftlet_node,
    json_out: *mut *mut c_char,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(json_out);
        with_node(node, |n| {
            let s = CString::new(crate::learner::status_json(&n.status())).unwrap_or_default();
            // SAFETY: non-null output pointer.
            unsafe { *json_out = s.into_raw() };
            RAFTLET_OK
        })
    })
}

/// Releases a string returned by the library. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn raftlet_string_free(s: *mut c_char) {
    if s.is_null() {
        return;
    }
    let _ = crate::boundary::catch(|| {
        // SAFETY: from CString::into_raw in this library, freed once.
        drop(unsafe { CString::from_raw(s) });
    });
}

/// Test-only (cargo feature `testing`, never in the header): panics inside
/// the node lock as a bug in the core would, so that tests can check that
/// the panic comes back as RAFTLET_PANIC and poisons the node.
#[cfg(feature = "testing")]
#[doc(hidden)]
#[no_mangle]
pub unsafe extern "C" fn raftlet_testing_panic(node: *mut raftlet_node) -> raftlet_result {
    ffi_boundary!({
        with_node(node, |_| {
            panic!("raftlet_testing_panic: a deliberate panic")
        })
    })
}

/// Copies the node's current configuration as a raftpb-encoded ConfState
/// (voters, learners, and in a joint configuration the outgoing voters,
/// learners_next and auto_leave), the same value
/// raftlet_node_apply_conf_change returns. `*len_out` always receives the
/// encoded size; the bytes are written to `out` when it is not NULL and
/// `cap` is enough (call with `out` NULL and `cap` 0 to size the buffer).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_INVALID_ARG
/// (buffer too small).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_conf_state(
    node: *const raftlet_node,
    out: *mut u8,
    cap: usize,
    len_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(len_out);
        if out.is_null() && cap != 0 {
            return fail(
                RAFTLET_ERR_NULL_ARG,
                "argument `out` is NULL with a non-zero capacity",
            );
        }
        with_node(node, |n| {
            let c = n.status().config;
            let cs = ConfState {
                voters: c.voters.incoming.iter().copied().collect(),
                learners: c.learners.iter().copied().collect(),
                voters_outgoing: c.voters.outgoing.iter().copied().collect(),
                learners_next: c.learners_next.iter().copied().collect(),
                auto_leave: c.auto_leave,
            };
            let enc = cs.encode_to_vec();
            // SAFETY: non-null output pointer.
            unsafe { *len_out = enc.len() };
            if out.is_null() {
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
    })
}
