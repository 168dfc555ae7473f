//! Forwarding the core's log records to a C callback.

use std::ffi::c_void;
use std::sync::Arc;

use raftlet_core::logging::{set_log_sink, Level, LogRecord};

use crate::result::{fail, raftlet_result, raftlet_result::*};

/// Receives one log record: `level` (0 debug, 1 info, 2 warn, 3 error),
/// the id of the node that logged it, and the message as `message_len`
/// bytes of UTF-8 followed by a NUL. The message is valid only during the
/// call. The callback may be called from any thread that drives a node,
/// concurrently; it must not call back into raftlet.
pub type raftlet_log_callback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        level: u32,
        node_id: u64,
        message: *const u8,
        message_len: usize,
    ),
>;

struct UserData(*mut c_void);
// SAFETY: the pointer is only handed back to the host's callback, which the
// header documents as callable from any thread.
unsafe impl Send for UserData {}
// SAFETY: as above; raftlet never dereferences it.
unsafe impl Sync for UserData {}

/// Installs a process-wide log callback receiving records at `min_level`
/// (0 debug .. 3 error) and above; `user_data` is passed back unchanged.
/// A NULL `callback` removes the current one. Replacing or removing a
/// callback while other threads log is safe; a record in flight may still
/// reach the previous callback. A panic caught inside the library (a bug
/// in raftlet, reported as RAFTLET_PANIC) is logged here at level 3 with
/// node id 0, and printed nowhere else (not to stderr). Returns RAFTLET_OK
/// or RAFTLET_ERR_INVALID_ARG (min_level above 3).
#[no_mangle]
pub unsafe extern "C" fn raftlet_set_log_callback(
    callback: raftlet_log_callback,
    user_data: *mut c_void,
    min_level: u32,
) -> raftlet_result {
    ffi_boundary!({
        let level = match min_level {
            0 => Level::Debug,
            1 => Level::Info,
            2 => Level::Warn,
            3 => Level::Error,
            _ => return fail(RAFTLET_ERR_INVALID_ARG, "min_level must be 0..=3"),
        };
        match callback {
            None => set_log_sink(None, level),
            Some(cb) => {
                let ud = UserData(user_data);
                set_log_sink(
                    Some(Arc::new(move |r: &LogRecord<'_>| {
                        let mut msg = Vec::with_capacity(r.message.len() + 1);
                        msg.extend_from_slice(r.message.as_bytes());
                        msg.push(0);
                        let ud = &ud;
                        // A panic must not unwind through the host's frames;
                        // the callback itself is C and cannot unwind.
                        // SAFETY: the host registered `cb` for exactly this call shape.
                        unsafe { cb(ud.0, r.level as u32, r.node_id, msg.as_ptr(), msg.len() - 1) };
                    })),
                    level,
                );
            }
        }
        RAFTLET_OK
    })
}
