//! Multi-group frames through the C ABI (raftlet::multi::frame): a host of
//! many groups packs the messages of all its groups bound for one node into
//! one frame, sends one write per destination node and round, and the
//! receiver unpacks the frame and steps each message into its group. The
//! format is the Rust core's, byte for byte (the Go and Python packages
//! write and read it too):
//!
//! ```text
//! frame = magic "RLF" | version 1 | from node (u64 LE) | count (u32 LE) | item*
//! item  = group id (u64 LE) | length (u32 LE) | raftpb Message (length bytes)
//! ```

use raftlet_core::multi::frame::{decode_raw, FrameBuilder};

use crate::raftlet_bytes;
use crate::result::{fail, raftlet_result, raftlet_result::*};

/// A frame being built (opaque). One thread at a time: the handle has no
/// lock of its own.
pub struct raftlet_frame_builder {
    inner: FrameBuilder,
}

/// One item of a decoded frame: the group and its message's raftpb bytes,
/// which point into the frame given to raftlet_frame_decode (valid as long
/// as those bytes are).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct raftlet_frame_item {
    /// The group the message belongs to.
    pub group: u64,
    /// The raftpb encoding of the message (for raftlet_node_step).
    pub message: raftlet_bytes,
}

/// Creates an empty frame from node `from` into `*builder_out` (free it
/// with raftlet_frame_builder_free). An empty frame is a node-level
/// heartbeat: the sending node is alive.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_frame_builder_new(
    from: u64,
    builder_out: *mut *mut raftlet_frame_builder,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(builder_out);
        let b = Box::new(raftlet_frame_builder {
            inner: FrameBuilder::new(from),
        });
        // SAFETY: non-null output pointer.
        unsafe { *builder_out = Box::into_raw(b) };
        RAFTLET_OK
    })
}

/// Releases a frame builder. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn raftlet_frame_builder_free(builder: *mut raftlet_frame_builder) {
    if builder.is_null() {
        return;
    }
    let _ = crate::boundary::catch(|| {
        // SAFETY: from raftlet_frame_builder_new, freed once.
        drop(unsafe { Box::from_raw(builder) });
    });
}

/// Appends a message of group `group`: `msg_len` bytes at `msg` (read for
/// the duration of the call and copied), the raftpb encoding of the
/// message as a ready hands it out. The bytes are checked by the receiver
/// when it steps them, not here.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, or RAFTLET_ERR_INVALID_ARG (a
/// message over 4 GiB, or a frame of 2^32 - 1 items; the frame is
/// unchanged).
#[no_mangle]
pub unsafe extern "C" fn raftlet_frame_builder_push(
    builder: *mut raftlet_frame_builder,
    group: u64,
    msg: *const u8,
    msg_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(builder);
        let data = c_slice!(msg, msg_len, "msg");
        // SAFETY: a live handle from raftlet_frame_builder_new, used by one
        // thread at a time (documented on the type).
        let b = unsafe { &mut *builder };
        match b.inner.push_encoded(group, data) {
            Ok(()) => RAFTLET_OK,
            Err(e) => fail(RAFTLET_ERR_INVALID_ARG, e.to_string()),
        }
    })
}

/// Writes the number of items pushed so far.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_frame_builder_len(
    builder: *const raftlet_frame_builder,
    len_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(builder, len_out);
        // SAFETY: a live handle and a non-null output pointer.
        unsafe { *len_out = (*builder).inner.len() };
        RAFTLET_OK
    })
}

/// Writes the frame as built so far, complete and ready to send, into
/// `*frame_out`: the builder's own bytes, valid until the next push, reset
/// or free of the builder.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_frame_builder_bytes(
    builder: *const raftlet_frame_builder,
    frame_out: *mut raftlet_bytes,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(builder, frame_out);
        // SAFETY: a live handle and a non-null output pointer.
        unsafe { *frame_out = raftlet_bytes::from_slice((*builder).inner.as_bytes()) };
        RAFTLET_OK
    })
}

/// Empties the builder for a new frame from node `from`, keeping its
/// buffer (one builder per destination can serve round after round).
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_frame_builder_reset(
    builder: *mut raftlet_frame_builder,
    from: u64,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(builder);
        // SAFETY: a live handle, one thread at a time.
        unsafe { (*builder).inner.reset(from) };
        RAFTLET_OK
    })
}

/// Reads the frame of `frame_len` bytes at `frame`: the sending node into
/// `*from_out`, the number of items into `*count_out`, and, when they fit
/// (`count <= items_cap`), the items into `items[0..count]`, each message
/// pointing into `frame`. The frame's structure is checked (magic,
/// version, every length against the bytes that remain, the item count
/// against the items); the messages are checked when stepped.
/// Returns RAFTLET_OK; RAFTLET_ERR_DECODE for bytes that are not exactly a
/// well-formed frame (nothing written); RAFTLET_ERR_INVALID_ARG when the
/// frame holds more items than `items_cap` (only `*count_out` written: call
/// again with room for that many); RAFTLET_ERR_NULL_ARG (`items` may be NULL
/// only when `items_cap` is 0).
#[no_mangle]
pub unsafe extern "C" fn raftlet_frame_decode(
    frame: *const u8,
    frame_len: usize,
    from_out: *mut u64,
    items: *mut raftlet_frame_item,
    items_cap: usize,
    count_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(from_out, count_out);
        if items.is_null() && items_cap != 0 {
            return fail(
                RAFTLET_ERR_NULL_ARG,
                "argument `items` is NULL with a non-zero capacity",
            );
        }
        let buf = c_slice!(frame, frame_len, "frame");
        let raw = match decode_raw(buf) {
            Ok(r) => r,
            Err(e) => return fail(RAFTLET_ERR_DECODE, e.to_string()),
        };
        // SAFETY: non-null output pointer.
        unsafe { *count_out = raw.items.len() };
        if raw.items.len() > items_cap {
            return fail(
                RAFTLET_ERR_INVALID_ARG,
                format!(
                    "the frame holds {} items, room for {items_cap}",
                    raw.items.len()
                ),
            );
        }
        // SAFETY: non-null output pointer.
        unsafe { *from_out = raw.from };
        for (i, (group, range)) in raw.items.into_iter().enumerate() {
            let item = raftlet_frame_item {
                group,
                message: raftlet_bytes::from_slice(&buf[range]),
            };
            // SAFETY: the caller promises `items_cap` writable items at
            // `items` (non-null whenever items_cap > 0), and i < count <=
            // items_cap.
            unsafe { items.add(i).write(item) };
        }
        RAFTLET_OK
    })
}
