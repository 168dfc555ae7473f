//! The C ABI of raftlet (`libraftlet.so` / `libraftlet.a`, header
//! `include/raftlet.h`).
//!
//! Every exported function is a panic boundary, checks its pointers and
//! returns a [`raftlet_result`]. Handles are opaque: C sees only pointers.
//! Messages, entries and conf changes cross the boundary as raftpb bytes,
//! the same bytes a transport sends.
#![allow(
    non_camel_case_types,
    reason = "C type names follow the raftlet_* convention of the header"
)]
#![allow(
    clippy::missing_safety_doc,
    reason = "every export documents its pointer contract in the header prose"
)]
#![deny(unsafe_op_in_unsafe_fn)]

// The core crate, under the name the modules use (its Cargo key is
// `raftlet_core` because this crate's own lib is also called `raftlet`).
extern crate raftlet_core as raftlet;

#[macro_use]
mod boundary;
mod any_storage;
mod bulk;
mod config;
mod frame;
mod learner;
mod log;
mod message;
mod node;
mod payload;
mod quiesce;
mod ready;
mod result;
mod storage;
mod storage_disk;
#[cfg(test)]
mod tests_bindings;
#[cfg(test)]
mod tests_power_loss;
mod version;

pub use bulk::*;
pub use config::*;
pub use learner::*;
pub use log::*;
pub use message::*;
pub use node::*;
pub use payload::*;
pub use quiesce::*;
pub use ready::*;
pub use result::*;
pub use storage::*;
pub use storage_disk::*;
pub use version::*;

/// A borrowed byte slice: `len` bytes at `ptr` (`ptr` may be NULL when
/// `len` is 0). Who owns the bytes and how long they live is stated by the
/// function that hands it out.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct raftlet_bytes {
    /// The first byte.
    pub ptr: *const u8,
    /// The number of bytes.
    pub len: usize,
}

impl raftlet_bytes {
    /// No bytes (a NULL pointer and a length of 0).
    pub(crate) const EMPTY: raftlet_bytes = raftlet_bytes {
        ptr: std::ptr::null(),
        len: 0,
    };

    pub(crate) fn from_slice(s: &[u8]) -> raftlet_bytes {
        raftlet_bytes {
            ptr: if s.is_empty() {
                std::ptr::null()
            } else {
                s.as_ptr()
            },
            len: s.len(),
        }
    }
}

/// The ids a C caller passed as `len` values at `p`; NULL is allowed only
/// with `len` 0. A NULL with a non-zero length records the error and gives
/// `RAFTLET_ERR_NULL_ARG`.
pub(crate) fn id_slice<'a>(
    p: *const u64,
    len: usize,
    name: &str,
) -> Result<&'a [u64], result::raftlet_result> {
    if p.is_null() {
        if len != 0 {
            return Err(result::fail(
                result::raftlet_result::RAFTLET_ERR_NULL_ARG,
                format!("argument `{name}` is NULL with a non-zero length"),
            ));
        }
        return Ok(&[]);
    }
    // SAFETY: the caller promises `len` readable u64s at `p` for the call.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}
