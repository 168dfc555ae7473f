//! Calls that do the work of many calls in one crossing of the ABI: step a
//! batch of messages, propose a batch of payloads, tick many nodes and
//! learn which have a ready. A binding whose every call into C has a fixed
//! cost (Go's cgo) pays it once per batch instead of once per item.

use bytes::Bytes;
use raftlet_core::pb::{Decode, Message};

use crate::node::{raftlet_node, with_node};
use crate::raftlet_bytes;
use crate::result::set_last_error;
use crate::result::{code, fail, from_error, last_error, raftlet_result, raftlet_result::*};

/// The `count` byte views at `p` (NULL allowed only with `count` 0),
/// each checked: a NULL `ptr` with a non-zero `len` is refused. Read them
/// with [`bytes_of`].
fn checked_bytes<'a>(
    p: *const raftlet_bytes,
    count: usize,
    name: &str,
) -> Result<&'a [raftlet_bytes], raftlet_result> {
    if p.is_null() {
        if count != 0 {
            return Err(fail(
                RAFTLET_ERR_NULL_ARG,
                format!("argument `{name}` is NULL with a non-zero count"),
            ));
        }
        return Ok(&[]);
    }
    // SAFETY: the caller promises `count` readable raftlet_bytes at `p`.
    let items = unsafe { std::slice::from_raw_parts(p, count) };
    if let Some(i) = items.iter().position(|b| b.ptr.is_null() && b.len != 0) {
        return Err(fail(
            RAFTLET_ERR_NULL_ARG,
            format!("`{name}[{i}]` is NULL with a non-zero length"),
        ));
    }
    Ok(items)
}

/// The `count` handles at `p` (NULL allowed only with `count` 0), none of
/// them NULL: each refusal is RAFTLET_ERR_NULL_ARG naming `name`.
pub(crate) fn checked_handles<'a, T>(
    p: *const *mut T,
    count: usize,
    name: &str,
) -> Result<&'a [*mut T], raftlet_result> {
    let list: &[*mut T] = if p.is_null() {
        if count != 0 {
            return Err(fail(
                RAFTLET_ERR_NULL_ARG,
                format!("argument `{name}` is NULL with a non-zero count"),
            ));
        }
        &[]
    } else {
        // SAFETY: the caller promises `count` readable handles at `p`.
        unsafe { std::slice::from_raw_parts(p, count) }
    };
    if let Some(i) = list.iter().position(|h| h.is_null()) {
        return Err(fail(RAFTLET_ERR_NULL_ARG, format!("`{name}[{i}]` is NULL")));
    }
    Ok(list)
}

/// The bytes a view from [`checked_bytes`] points to.
fn bytes_of(b: &raftlet_bytes) -> &[u8] {
    if b.ptr.is_null() {
        &[]
    } else {
        // SAFETY: checked by `checked_bytes`; the caller promises `len`
        // readable bytes at `ptr` for the duration of the call.
        unsafe { std::slice::from_raw_parts(b.ptr, b.len) }
    }
}

/// The vector raftlet_node_step_batch decodes into, kept per thread with
/// its capacity (a message is 160 bytes; the largest kept holds 256).
struct DecodeBuf;

thread_local! {
    static DECODED: std::cell::Cell<Vec<(usize, Message)>> = const { std::cell::Cell::new(Vec::new()) };
}

impl DecodeBuf {
    fn take() -> Vec<(usize, Message)> {
        DECODED.try_with(|c| c.take()).unwrap_or_default()
    }

    fn put(v: Vec<(usize, Message)>) {
        const MAX_KEPT: usize = 256;
        if v.is_empty() && v.capacity() <= MAX_KEPT {
            let _ = DECODED.try_with(|c| c.set(v));
        }
    }
}

/// The largest batch raftlet_node_step_batch decodes under the node lock,
/// a message at a time (heartbeats, votes, acknowledgements); a larger one
/// is decoded first, outside the lock, so that the lock is not held while
/// entries are copied.
const DECODE_UNDER_LOCK: usize = 4096;

/// Steps `count` raftpb-encoded messages (`msgs[i]`, read for the duration
/// of the call) in order, under one lock of the node, as `count` calls of
/// raftlet_node_step would. Every message is stepped even when an earlier
/// one fails (as a host looping over raftlet_node_step and ignoring the
/// errors of bad messages would). When `results_out` is not NULL it holds
/// `count` codes and gets each message's outcome (the codes of
/// raftlet_node_step), whatever this function returns.
/// Returns RAFTLET_OK when every message was stepped without error; else
/// the code of the first failure (its detail in
/// raftlet_last_error_message); RAFTLET_ERR_NULL_ARG, with nothing
/// stepped, for a NULL `node`, a NULL `msgs` with a non-zero `count` or a
/// NULL message with a non-zero length; RAFTLET_PANIC when the node is
/// poisoned (the messages not stepped then get RAFTLET_PANIC).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_step_batch(
    node: *mut raftlet_node,
    msgs: *const raftlet_bytes,
    count: usize,
    results_out: *mut raftlet_result,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(node);
        let bufs = match checked_bytes(msgs, count, "msgs") {
            Ok(b) => b,
            Err(c) => return c,
        };
        let results: &mut [raftlet_result] = if results_out.is_null() {
            &mut []
        } else {
            // SAFETY: the caller promises `count` writable codes.
            unsafe { std::slice::from_raw_parts_mut(results_out, count) }
        };
        results.fill(RAFTLET_PANIC);
        // Decode outside the lock; remember the first failure's detail.
        let mut first: Option<(raftlet_result, std::ffi::CString)> = None;
        let mut note = |i: usize, c: raftlet_result, results: &mut [raftlet_result]| {
            if let Some(r) = results.get_mut(i) {
                *r = c;
            }
            if c != RAFTLET_OK && first.is_none() {
                first = Some((c, last_error()));
            }
        };
        let total = bufs.iter().fold(0usize, |t, b| t.saturating_add(b.len));
        let rc = if total <= DECODE_UNDER_LOCK {
            // Each message decoded straight into its step: moving a decoded
            // Message into the vector and out again cost as much as
            // decoding it.
            with_node(node, |n| {
                for (i, b) in bufs.iter().enumerate() {
                    let c = match Message::decode(bytes_of(b)) {
                        Ok(m) => code(&n.step(m)),
                        Err(e) => from_error(&e.into()),
                    };
                    note(i, c, results);
                }
                RAFTLET_OK
            })
        } else {
            let mut decoded = DecodeBuf::take();
            decoded.reserve(bufs.len());
            for (i, b) in bufs.iter().enumerate() {
                match Message::decode(bytes_of(b)) {
                    Ok(m) => decoded.push((i, m)),
                    Err(e) => note(i, from_error(&e.into()), results),
                }
            }
            let rc = with_node(node, |n| {
                for (i, m) in decoded.drain(..) {
                    let c = code(&n.step(m));
                    note(i, c, results);
                }
                RAFTLET_OK
            });
            // A poisoned node left its messages undelivered: they go with
            // the vector's memory.
            decoded.clear();
            DecodeBuf::put(decoded);
            rc
        };
        if rc != RAFTLET_OK {
            return rc;
        }
        match first {
            None => RAFTLET_OK,
            Some((c, msg)) => {
                set_last_error(msg.to_string_lossy().into_owned());
                c
            }
        }
    })
}

/// Proposes `count` payloads (`payloads[i]`, copied) as one proposal: on
/// the leader they are appended together, in order, or not at all.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG (nothing proposed) or
/// RAFTLET_ERR_PROPOSAL_DROPPED (nothing proposed; also for `count` 0).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_propose_batch(
    node: *mut raftlet_node,
    payloads: *const raftlet_bytes,
    count: usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(node);
        let bufs = match checked_bytes(payloads, count, "payloads") {
            Ok(b) => b,
            Err(c) => return c,
        };
        let bufs = bufs.iter().map(bytes_of);
        // Small batches: one copy of the whole batch, each entry a view of
        // it (one allocation). Large ones: a copy per payload, so that no
        // huge buffer is mapped per batch and each entry frees its memory
        // when compacted.
        // The largest batch proposal copied into one buffer.
        const ONE_BUFFER_BATCH: usize = 64 << 10;
        let total: usize = bufs.clone().map(|b| b.len()).sum();
        let batch: Vec<Bytes> = if total <= ONE_BUFFER_BATCH {
            let mut all = Vec::with_capacity(total);
            for b in bufs.clone() {
                all.extend_from_slice(b);
            }
            let all = Bytes::from(all);
            let mut at = 0;
            bufs.map(|b| {
                let d = all.slice(at..at + b.len());
                at += b.len();
                d
            })
            .collect()
        } else {
            bufs.map(raftlet_core::copy_payload).collect()
        };
        with_node(node, |n| code(&n.propose_batch(batch)))
    })
}

/// Ticks the `count` nodes at `nodes` (each once, in order, each under its
/// own lock) and, when `has_ready_bitmap_out` is not NULL, writes which of
/// them have a ready afterwards: bit `i % 8` of byte `i / 8` is set for
/// node `i` (the `(count + 7) / 8` bytes are all written; unset bits for a
/// node without a ready or one that failed). For a host of many groups,
/// the tick and has_ready sweep in one call.
/// Returns RAFTLET_OK; RAFTLET_ERR_NULL_ARG, with no node ticked, for a
/// NULL `nodes` with a non-zero `count` or a NULL among them; or
/// RAFTLET_PANIC when a node is poisoned (the others are ticked all the
/// same).
#[no_mangle]
pub unsafe extern "C" fn raftlet_tick_many(
    nodes: *const *mut raftlet_node,
    count: usize,
    has_ready_bitmap_out: *mut u8,
) -> raftlet_result {
    ffi_boundary!({
        let list = match checked_handles(nodes, count, "nodes") {
            Ok(l) => l,
            Err(c) => return c,
        };
        let bitmap: &mut [u8] = if has_ready_bitmap_out.is_null() {
            &mut []
        } else {
            // SAFETY: the caller promises (count + 7) / 8 writable bytes.
            unsafe { std::slice::from_raw_parts_mut(has_ready_bitmap_out, count.div_ceil(8)) }
        };
        bitmap.fill(0);
        let mut first: Option<(raftlet_result, std::ffi::CString)> = None;
        for (i, &p) in list.iter().enumerate() {
            let mut has = false;
            let rc = with_node(p, |n| {
                n.tick();
                has = n.has_ready();
                RAFTLET_OK
            });
            if rc != RAFTLET_OK {
                if first.is_none() {
                    first = Some((rc, last_error()));
                }
                continue;
            }
            if has {
                if let Some(b) = bitmap.get_mut(i / 8) {
                    *b |= 1 << (i % 8);
                }
            }
        }
        match first {
            None => RAFTLET_OK,
            Some((c, msg)) => {
                set_last_error(msg.to_string_lossy().into_owned());
                c
            }
        }
    })
}
