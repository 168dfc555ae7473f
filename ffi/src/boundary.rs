//! The panic boundary and the pointer checks every export uses.

/// Runs `$body` (which evaluates to a `raftlet_result`) inside
/// `catch_unwind`; a panic becomes `RAFTLET_PANIC` with its message stored
/// as the thread's last error.
macro_rules! ffi_boundary {
    ($body:block) => {{
        match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| $body)) {
            Ok(r) => r,
            Err(payload) => {
                let msg = if let Some(s) = payload.downcast_ref::<&str>() {
                    (*s).to_string()
                } else if let Some(s) = payload.downcast_ref::<String>() {
                    s.clone()
                } else {
                    "unknown panic".to_string()
                };
                $crate::result::set_last_error(format!("panic: {msg}"));
                $crate::result::raftlet_result::RAFTLET_PANIC
            }
        }
    }};
}

/// Returns `RAFTLET_ERR_NULL_ARG` (naming the argument) when a pointer is NULL.
macro_rules! check_null {
    ($($p:ident),+ $(,)?) => {
        $(
            if $p.is_null() {
                return $crate::result::fail(
                    $crate::result::raftlet_result::RAFTLET_ERR_NULL_ARG,
                    concat!("argument `", stringify!($p), "` is NULL"),
                );
            }
        )+
    };
}

/// A byte slice from a C pointer and length; NULL is allowed only with
/// length 0.
macro_rules! c_slice {
    ($ptr:expr, $len:expr, $name:literal) => {{
        let (p, l) = ($ptr, $len);
        if p.is_null() {
            if l != 0 {
                return $crate::result::fail(
                    $crate::result::raftlet_result::RAFTLET_ERR_NULL_ARG,
                    concat!("argument `", $name, "` is NULL with a non-zero length"),
                );
            }
            &[][..]
        } else {
            // SAFETY: the caller promises `p` points to `l` readable bytes
            // for the duration of the call (documented on every export).
            unsafe { ::std::slice::from_raw_parts(p, l) }
        }
    }};
}
