//! The library version.

use std::ffi::c_char;

/// The library version as "MAJOR.MINOR.PATCH" (equal to the
/// RAFTLET_VERSION_* macros of the header it was built with). A static
/// string: never free it.
#[no_mangle]
pub extern "C" fn raftlet_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
