//! The panic boundary and the pointer checks every export uses.
//!
//! A panic inside an export is caught and becomes `RAFTLET_PANIC`; it must
//! not print to the host's stderr either. Rust's default panic hook prints
//! the panic message, so the first export called installs a hook (once per
//! process) that, for panics raised while the calling thread is inside a
//! raftlet export, forwards the message to the log callback (if the host
//! installed one, at level error) and prints nothing. Every other panic,
//! for instance in a Rust host that links this library, goes to the hook
//! that was installed before, so the host's own panics are reported as
//! they were. A hook the host installs later replaces ours; that is the
//! host's choice.

use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

use raftlet_core::logging::{emit, enabled, Level};

thread_local! {
    /// How many raftlet exports the thread is inside (exports do not call
    /// each other today; a depth keeps nesting correct anyway).
    static IN_EXPORT: Cell<u32> = const { Cell::new(0) };
}

/// Marks the calling thread as inside an export until dropped.
struct ExportGuard;

impl ExportGuard {
    fn enter() -> ExportGuard {
        install_panic_hook();
        IN_EXPORT.with(|d| d.set(d.get().saturating_add(1)));
        ExportGuard
    }
}

impl Drop for ExportGuard {
    fn drop(&mut self) {
        IN_EXPORT.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Whether the calling thread is inside a raftlet export.
fn in_export() -> bool {
    // During thread teardown the thread-local may be gone: not ours then.
    IN_EXPORT.try_with(|d| d.get() > 0).unwrap_or(false)
}

/// The message of a panic payload.
pub(crate) fn payload_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Sends a panic inside an export to the log callback, if one is installed.
fn report_to_log_sink(info: &PanicHookInfo<'_>) {
    if !enabled(Level::Error) {
        return;
    }
    let msg = payload_message(info.payload());
    match info.location() {
        Some(l) => emit(
            Level::Error,
            0,
            format_args!(
                "panic inside raftlet at {}:{}:{}: {msg}",
                l.file(),
                l.line(),
                l.column()
            ),
        ),
        None => emit(Level::Error, 0, format_args!("panic inside raftlet: {msg}")),
    }
}

/// Installs the panic hook described in the module documentation, once.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    // set_hook panics when called from a panicking thread (an export
    // called from a destructor while unwinding): try again on a later call.
    if std::thread::panicking() {
        return;
    }
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if in_export() {
                report_to_log_sink(info);
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f` marked as inside an export, catching a panic.
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, Box<dyn Any + Send>> {
    let _guard = ExportGuard::enter();
    catch_unwind(AssertUnwindSafe(f))
}

/// Runs `$body` (which evaluates to a `raftlet_result`) inside
/// [`catch`]; a panic becomes `RAFTLET_PANIC` with its message stored
/// as the thread's last error (and nothing printed).
macro_rules! ffi_boundary {
    ($body:block) => {{
        match $crate::boundary::catch(|| $body) {
            Ok(r) => r,
            Err(payload) => {
                let msg = $crate::boundary::payload_message(&*payload);
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
