//! `raftlet_payload`: a proposal's bytes in the library's memory, filled in
//! place by the host and proposed without a copy.
//!
//! raftlet_node_propose and raftlet_node_propose_batch copy the host's
//! bytes: the library keeps an entry until it is compacted, longer than any
//! call, and a binding's memory (a Go slice) may not be kept past a call.
//! For large payloads that copy is a real cost, so the host may instead ask
//! the library for the buffers, write each payload into one, and hand them
//! over: raftlet_payloads_new, raftlet_node_propose_payloads.

use crate::bulk::checked_handles;
use crate::node::{raftlet_node, with_node};
use crate::result::{code, fail, raftlet_result, raftlet_result::*};

/// A payload buffer the library allocated for the host to fill
/// (raftlet_payloads_new), then to propose (raftlet_node_propose_payloads)
/// or free (raftlet_payload_free). Opaque.
pub struct raftlet_payload {
    data: Vec<u8>,
}

/// A zeroed buffer of `len` bytes, or `None` when it cannot be allocated
/// (never an abort: the allocation failure is reported).
fn zeroed(len: usize) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).ok()?;
    v.resize(len, 0);
    Some(v)
}

/// Allocates `count` payload buffers, buffer `i` of `lens[i]` bytes,
/// zeroed, for the host to fill in place and then propose without a copy
/// (raftlet_node_propose_payloads) or free (raftlet_payload_free). Writes
/// each handle to `payloads_out[i]` and a pointer to its bytes to
/// `data_out[i]` (NULL for a length of 0); the bytes may be written until
/// the payload is proposed or freed. One call for a whole batch, so that a
/// binding crosses its boundary once.
///
/// Returns RAFTLET_OK; RAFTLET_ERR_NULL_ARG (nothing allocated) for a NULL
/// `lens`, `payloads_out` or `data_out` with a non-zero `count`; or
/// RAFTLET_ERR_INVALID_ARG (nothing allocated) when the memory cannot be
/// had (the lengths are the host's: the library sets no limit of its own).
#[no_mangle]
pub unsafe extern "C" fn raftlet_payloads_new(
    lens: *const usize,
    count: usize,
    payloads_out: *mut *mut raftlet_payload,
    data_out: *mut *mut u8,
) -> raftlet_result {
    ffi_boundary!({
        if count == 0 {
            return RAFTLET_OK;
        }
        check_null!(lens, payloads_out, data_out);
        if count > isize::MAX as usize / std::mem::size_of::<usize>() {
            return fail(
                RAFTLET_ERR_INVALID_ARG,
                format!("count {count} is too large"),
            );
        }
        // SAFETY: the caller promises `count` readable lengths at `lens`.
        let lens = unsafe { std::slice::from_raw_parts(lens, count) };
        let mut made = Vec::new();
        if made.try_reserve_exact(count).is_err() {
            return fail(RAFTLET_ERR_INVALID_ARG, "out of memory for the handles");
        }
        for (i, &len) in lens.iter().enumerate() {
            match zeroed(len) {
                Some(data) => made.push(Box::new(raftlet_payload { data })),
                None => {
                    // `made` is dropped: nothing stays allocated.
                    return fail(
                        RAFTLET_ERR_INVALID_ARG,
                        format!("cannot allocate payload {i} of {len} bytes"),
                    );
                }
            }
        }
        for (i, mut p) in made.into_iter().enumerate() {
            let data = if p.data.is_empty() {
                std::ptr::null_mut()
            } else {
                p.data.as_mut_ptr()
            };
            // SAFETY: the caller promises `count` writable slots in each
            // output array; the box's heap buffer does not move with it.
            unsafe {
                *data_out.add(i) = data;
                *payloads_out.add(i) = Box::into_raw(p);
            }
        }
        RAFTLET_OK
    })
}

/// Frees a payload from raftlet_payloads_new that was not proposed (a
/// proposed one belongs to the library). NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn raftlet_payload_free(payload: *mut raftlet_payload) {
    if payload.is_null() {
        return;
    }
    let _ = crate::boundary::catch(|| {
        // SAFETY: from raftlet_payloads_new, not proposed, freed once.
        drop(unsafe { Box::from_raw(payload) });
    });
}

/// Proposes the `count` payloads (from raftlet_payloads_new, filled by the
/// host) as one proposal, as raftlet_node_propose_batch does, without
/// copying their bytes: on the leader they are appended together, in
/// order, or not at all. Every payload is taken, whatever the outcome (a
/// dropped proposal frees them), except on RAFTLET_ERR_NULL_ARG, when none
/// is. From the call on, the bytes belong to the library: the host
/// neither writes nor reads them through the pointers it was given.
///
/// Returns RAFTLET_OK; RAFTLET_ERR_NULL_ARG (nothing taken) for a NULL
/// `node`, a NULL `payloads` with a non-zero `count` or a NULL among them;
/// RAFTLET_ERR_INVALID_ARG (nothing taken) when a payload appears twice;
/// RAFTLET_ERR_PROPOSAL_DROPPED (also for `count` 0); or RAFTLET_PANIC
/// when the node is poisoned.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_propose_payloads(
    node: *mut raftlet_node,
    payloads: *const *mut raftlet_payload,
    count: usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(node);
        let handles = match checked_handles(payloads, count, "payloads") {
            Ok(h) => h,
            Err(c) => return c,
        };
        // The same payload twice would be freed twice: refused.
        if handles.len() > 1 {
            let mut sorted = handles.to_vec();
            sorted.sort_unstable();
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                return fail(RAFTLET_ERR_INVALID_ARG, "a payload appears twice");
            }
        }
        let batch: Vec<bytes::Bytes> = handles
            .iter()
            .map(|&p| {
                // SAFETY: from raftlet_payloads_new, not yet proposed or
                // freed (the caller's promise); taken here, once.
                let p = unsafe { Box::from_raw(p) };
                raftlet::payload_from_vec(p.data)
            })
            .collect();
        with_node(node, |n| code(&n.propose_batch(batch)))
    })
}
