//! Encoding and decoding helpers for what crosses a transport: conf
//! changes to propose and message headers to route.

use raftlet_core::pb::{
    ConfChange, ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, Decode,
    Encode, Message,
};

use crate::result::{fail, from_error, raftlet_result, raftlet_result::*};

/// One change of a ConfChangeV2: a raftpb ConfChangeType number (0 add
/// voter, 1 remove, 2 update, 3 add learner) and the member's id.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct raftlet_conf_change_single {
    /// The raftpb ConfChangeType number.
    pub change_type: u32,
    /// The member concerned.
    pub node_id: u64,
}

/// The routing fields of an encoded message.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct raftlet_message_header {
    /// The raftpb MessageType number.
    pub msg_type: i32,
    /// The recipient.
    pub to: u64,
    /// The sender.
    pub from: u64,
    /// The sender's term.
    pub term: u64,
}

fn write_out(enc: &[u8], out: *mut u8, cap: usize, len_out: *mut usize) -> raftlet_result {
    // SAFETY: callers checked len_out for NULL.
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
}

fn ctx_bytes(p: *const u8, len: usize) -> Option<Option<bytes::Bytes>> {
    if p.is_null() {
        return if len == 0 { Some(None) } else { None };
    }
    // SAFETY: the caller promises `len` readable bytes.
    Some(Some(raftlet_core::copy_payload(unsafe {
        std::slice::from_raw_parts(p, len)
    })))
}

/// Encodes a ConfChange (v1) as raftpb bytes for
/// raftlet_node_propose_conf_change. `context` may be NULL (absent) when
/// `context_len` is 0. `*len_out` always receives the encoded size; the
/// bytes are written to `out` when it is not NULL and `cap` is enough
/// (call with `out` NULL and `cap` 0 to size the buffer). Returns
/// RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_INVALID_ARG (buffer
/// too small or an unknown change type).
#[no_mangle]
pub unsafe extern "C" fn raftlet_conf_change_encode(
    change_type: u32,
    node_id: u64,
    context: *const u8,
    context_len: usize,
    out: *mut u8,
    cap: usize,
    len_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(len_out);
        if change_type > 3 {
            return fail(RAFTLET_ERR_INVALID_ARG, "unknown conf change type");
        }
        let Some(ctx) = ctx_bytes(context, context_len) else {
            return fail(RAFTLET_ERR_NULL_ARG, "argument `context` is NULL");
        };
        let cc = ConfChange {
            id: 0,
            change_type: ConfChangeType(change_type as i32),
            node_id,
            context: ctx,
        };
        write_out(&cc.encode_to_vec(), out, cap, len_out)
    })
}

/// Encodes a ConfChangeV2 (`transition`: 0 auto, 1 joint implicit, 2 joint
/// explicit; `changes` may be NULL when `changes_len` is 0, which encodes
/// the change that leaves a joint configuration). Output as for
/// raftlet_conf_change_encode. Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or
/// RAFTLET_ERR_INVALID_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_conf_change_v2_encode(
    transition: u32,
    changes: *const raftlet_conf_change_single,
    changes_len: usize,
    context: *const u8,
    context_len: usize,
    out: *mut u8,
    cap: usize,
    len_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(len_out);
        if transition > 2 {
            return fail(RAFTLET_ERR_INVALID_ARG, "unknown conf change transition");
        }
        let chs: &[raftlet_conf_change_single] = if changes.is_null() {
            if changes_len != 0 {
                return fail(RAFTLET_ERR_NULL_ARG, "argument `changes` is NULL");
            }
            &[]
        } else {
            // SAFETY: the caller promises changes_len records.
            unsafe { std::slice::from_raw_parts(changes, changes_len) }
        };
        if chs.iter().any(|c| c.change_type > 3) {
            return fail(RAFTLET_ERR_INVALID_ARG, "unknown conf change type");
        }
        let Some(ctx) = ctx_bytes(context, context_len) else {
            return fail(RAFTLET_ERR_NULL_ARG, "argument `context` is NULL");
        };
        let cc = ConfChangeV2 {
            transition: ConfChangeTransition(transition as i32),
            changes: chs
                .iter()
                .map(|c| ConfChangeSingle::new(ConfChangeType(c.change_type as i32), c.node_id))
                .collect(),
            context: ctx,
        };
        write_out(&cc.encode_to_vec(), out, cap, len_out)
    })
}

/// Decodes a ConfChange (v1) from raftpb bytes into `*change_out`.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_DECODE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_conf_change_decode(
    data: *const u8,
    data_len: usize,
    change_out: *mut raftlet_conf_change_single,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(change_out);
        let buf = c_slice!(data, data_len, "data");
        match ConfChange::decode(buf) {
            Ok(cc) => {
                // SAFETY: non-null output pointer.
                unsafe {
                    *change_out = raftlet_conf_change_single {
                        change_type: cc.change_type.0 as u32,
                        node_id: cc.node_id,
                    }
                };
                RAFTLET_OK
            }
            Err(e) => from_error(&e.into()),
        }
    })
}

/// Decodes the routing fields of a raftpb-encoded message, validating the
/// whole message as raftlet_node_step would before stepping it: a
/// transport may call this to drop a bad message before routing it.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_DECODE (malformed
/// bytes) or RAFTLET_ERR_INVALID_MESSAGE (an unknown message type, a term
/// or index above 2^63 - 1, or a peer message from an id that cannot be a
/// member). `*header_out` is written only on RAFTLET_OK.
#[no_mangle]
pub unsafe extern "C" fn raftlet_message_decode_header(
    data: *const u8,
    data_len: usize,
    header_out: *mut raftlet_message_header,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(header_out);
        let buf = c_slice!(data, data_len, "data");
        match Message::decode(buf) {
            Ok(m) => {
                if let Err(e) = raftlet_core::validate::check_message(&m) {
                    return from_error(&e);
                }
                // SAFETY: non-null output pointer.
                unsafe {
                    *header_out = raftlet_message_header {
                        msg_type: m.msg_type.0,
                        to: m.to,
                        from: m.from,
                        term: m.term,
                    }
                };
                RAFTLET_OK
            }
            Err(e) => from_error(&e.into()),
        }
    })
}

/// Decodes a ConfChangeV2 from raftpb bytes: `*transition_out` receives the
/// transition (0 auto, 1 joint implicit, 2 joint explicit) and
/// `*changes_len_out` the number of changes; up to `changes_cap` changes are
/// written to `changes_out` (which may be NULL when `changes_cap` is 0;
/// call again with a larger array if `*changes_len_out` exceeds it).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_DECODE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_conf_change_v2_decode(
    data: *const u8,
    data_len: usize,
    transition_out: *mut u32,
    changes_out: *mut raftlet_conf_change_single,
    changes_cap: usize,
    changes_len_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(transition_out, changes_len_out);
        if changes_out.is_null() && changes_cap != 0 {
            return fail(RAFTLET_ERR_NULL_ARG, "argument `changes_out` is NULL");
        }
        let buf = c_slice!(data, data_len, "data");
        match ConfChangeV2::decode(buf) {
            Ok(cc) => {
                for (i, c) in cc.changes.iter().enumerate().take(changes_cap) {
                    // SAFETY: i < changes_cap records provided by the caller.
                    unsafe {
                        *changes_out.add(i) = raftlet_conf_change_single {
                            change_type: c.change_type.0 as u32,
                            node_id: c.node_id,
                        }
                    };
                }
                // SAFETY: non-null output pointers.
                unsafe {
                    *transition_out = cc.transition.0 as u32;
                    *changes_len_out = cc.changes.len();
                }
                RAFTLET_OK
            }
            Err(e) => from_error(&e.into()),
        }
    })
}
