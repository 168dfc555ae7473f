//! Durable storage from C: `raftlet_storage_open` gives a `raftlet_storage`
//! backed by one group of a raftlet-disk store (one crash-safe log per
//! directory, shared by every group opened from it), usable wherever a
//! memory storage is; `raftlet_storage_append_readies` persists the Readies
//! of many groups with one sync (group commit).

use std::ffi::{c_char, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use raftlet_disk::{DiskStore, Options, StdFs, WriteBatch};

use crate::any_storage::AnyStorage;
use crate::ready::raftlet_ready;
use crate::result::{fail, from_error, raftlet_result, raftlet_result::*};
use crate::storage::{check_ready_order, raftlet_storage};

fn disk_failure(e: raftlet_disk::DiskError) -> raftlet_result {
    from_error(&e.into())
}

fn new_handle(inner: AnyStorage, storage_out: *mut *mut raftlet_storage) -> raftlet_result {
    let b = Box::new(raftlet_storage::new(inner));
    // SAFETY: the caller checked the output pointer for NULL.
    unsafe { *storage_out = Box::into_raw(b) };
    RAFTLET_OK
}

/// Opens (creating it if needed) the durable store in directory `dir` (a
/// NUL-terminated path) and gives group `group` of it as a storage handle:
/// its log, hard state, configuration and snapshot survive a crash, and a
/// node created over it restarts from them. Each raftlet_storage_* write
/// call is durable when it returns (raftlet_storage_append_ready syncs when
/// the Ready must be synced), but for two that need not be: a light
/// ready's commit index (written unsynced; the next synced write carries
/// it) and raftlet_storage_compact (a compaction lost in a crash only
/// keeps entries the snapshot covers; a restart takes the snapshot's index
/// as committed). The stored commit index never goes back: a hard state
/// whose commit is below the stored one (an older ready's, written after a
/// light ready's commit) keeps the stored commit. The directory is locked
/// while any handle on it is alive: open the other groups of the same
/// directory with raftlet_storage_open_group. On success `*storage_out` owns a new handle;
/// release it with raftlet_storage_free.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, or RAFTLET_ERR_STORAGE (the
/// directory is locked by another open, a record in the middle of the log
/// is corrupt, a snapshot file is missing or damaged, or the filesystem
/// failed; raftlet_last_error_message() names the file, and the offset for
/// a corrupt record).
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_open(
    dir: *const c_char,
    group: u64,
    storage_out: *mut *mut raftlet_storage,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(dir, storage_out);
        // SAFETY: a non-null, NUL-terminated string from the caller.
        let path = OsStr::from_bytes(unsafe { CStr::from_ptr(dir) }.to_bytes());
        match DiskStore::open(path) {
            Ok(store) => new_handle(AnyStorage::Disk(store.group(group)), storage_out),
            Err(e) => disk_failure(e),
        }
    })
}

/// Tuning of a durable store, for raftlet_storage_open_with. Start from
/// raftlet_storage_options_default() and change the fields wanted.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct raftlet_storage_options {
    /// The size a log segment is preallocated to; the log moves to a new
    /// segment when a record would not fit (a larger record gets a segment
    /// of its own). Must not be 0. Default 64 MiB.
    pub segment_size: u64,
    /// At each segment switch, the live entries of the groups that keep
    /// the oldest segment alive are rewritten (so that it can be deleted)
    /// while they total at most this many bytes. Default 16 MiB.
    pub rewrite_max_bytes: u64,
    /// Records of at least this many bytes are written past the page cache
    /// (O_DIRECT) where the filesystem takes it; UINT64_MAX writes every
    /// record through the page cache. Default 1 MiB.
    pub direct_min_bytes: u64,
    /// The bytes of the most recent records kept in memory, from which
    /// their entries are read back without reading the file; 0 keeps none.
    /// Default 64 MiB.
    pub read_cache_bytes: u64,
}

impl From<raftlet_storage_options> for Options {
    fn from(o: raftlet_storage_options) -> Options {
        Options {
            segment_size: o.segment_size,
            rewrite_max_bytes: o.rewrite_max_bytes,
            direct_min_bytes: o.direct_min_bytes,
            read_cache_bytes: o.read_cache_bytes,
        }
    }
}

/// The default options of a durable store (those raftlet_storage_open
/// uses).
#[no_mangle]
pub extern "C" fn raftlet_storage_options_default() -> raftlet_storage_options {
    let o = Options::default();
    raftlet_storage_options {
        segment_size: o.segment_size,
        rewrite_max_bytes: o.rewrite_max_bytes,
        direct_min_bytes: o.direct_min_bytes,
        read_cache_bytes: o.read_cache_bytes,
    }
}

/// raftlet_storage_open with `options` (see raftlet_storage_options) instead
/// of the defaults. The options hold for the store as long as it is open,
/// for every group of it.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_INVALID_ARG (a
/// `segment_size` of 0), or RAFTLET_ERR_STORAGE as raftlet_storage_open.
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_open_with(
    dir: *const c_char,
    group: u64,
    options: *const raftlet_storage_options,
    storage_out: *mut *mut raftlet_storage,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(dir, options, storage_out);
        // SAFETY: a non-null pointer to the caller's options.
        let opts = Options::from(unsafe { *options });
        if opts.segment_size == 0 {
            return fail(
                RAFTLET_ERR_INVALID_ARG,
                "raftlet_storage_open_with: segment_size must not be 0",
            );
        }
        // SAFETY: a non-null, NUL-terminated string from the caller.
        let path = OsStr::from_bytes(unsafe { CStr::from_ptr(dir) }.to_bytes());
        match DiskStore::open_with(Arc::new(StdFs), Path::new(path), opts) {
            Ok(store) => new_handle(AnyStorage::Disk(store.group(group)), storage_out),
            Err(e) => disk_failure(e),
        }
    })
}

/// Gives group `group` of the same durable store as `storage` (a handle
/// from raftlet_storage_open) as a new storage handle. On success
/// `*storage_out` owns it; release it with raftlet_storage_free.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_INVALID_ARG
/// (`storage` is a memory storage).
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_open_group(
    storage: *const raftlet_storage,
    group: u64,
    storage_out: *mut *mut raftlet_storage,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(storage, storage_out);
        // SAFETY: a non-null handle from raftlet_storage_open.
        match unsafe { &(*storage).inner } {
            AnyStorage::Disk(d) => {
                new_handle(AnyStorage::Disk(d.store().group(group)), storage_out)
            }
            AnyStorage::Memory(_) => fail(
                RAFTLET_ERR_INVALID_ARG,
                "raftlet_storage_open_group needs a storage from raftlet_storage_open",
            ),
        }
    })
}

/// Persists the Readies of many groups with ONE sync (group commit):
/// `readies[i]` (from the node over `storages[i]`) is written to
/// `storages[i]` as raftlet_storage_append_ready would, all in one record,
/// synced once if any of them must be. Every storage must be a group of
/// the same durable store (raftlet_storage_open / _open_group). Nothing is
/// written if any Ready does not fit its group's log, or breaks the
/// ready-order rules of raftlet_storage_append_ready (each against what its
/// storage persisted last, or an earlier element of the same call).
/// `count` 0 is a no-op.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_INVALID_ARG (a
/// memory storage, or groups of different stores), RAFTLET_ERR_READY_STALE,
/// or a storage code.
#[no_mangle]
pub unsafe extern "C" fn raftlet_storage_append_readies(
    storages: *const *const raftlet_storage,
    readies: *const *const raftlet_ready,
    count: usize,
) -> raftlet_result {
    ffi_boundary!({
        if count == 0 {
            return RAFTLET_OK;
        }
        check_null!(storages, readies);
        // SAFETY: the caller provides `count` pointers in each array.
        let (ss, rs) = unsafe {
            (
                std::slice::from_raw_parts(storages, count),
                std::slice::from_raw_parts(readies, count),
            )
        };
        let mut store: Option<DiskStore> = None;
        let mut pairs: Vec<(&raftlet_storage, &raftlet_disk::DiskGroup, &raftlet_ready)> =
            Vec::with_capacity(count);
        for (i, (&s, &r)) in ss.iter().zip(rs).enumerate() {
            if s.is_null() || r.is_null() {
                return fail(RAFTLET_ERR_NULL_ARG, format!("element {i} is NULL"));
            }
            // SAFETY: non-null handles from their constructors.
            let (s, r) = unsafe { (&*s, &*r) };
            let AnyStorage::Disk(d) = &s.inner else {
                return fail(
                    RAFTLET_ERR_INVALID_ARG,
                    format!("storage {i} is a memory storage"),
                );
            };
            match &store {
                None => store = Some(d.store().clone()),
                Some(st) if !st.same_store(d.store()) => {
                    return fail(
                        RAFTLET_ERR_INVALID_ARG,
                        format!("storage {i} belongs to another store"),
                    )
                }
                Some(_) => {}
            }
            pairs.push((s, d, r));
        }
        // The order checks of raftlet_storage_append_ready, for each
        // element against what its storage persisted last (or the earlier
        // element of this call on the same storage), with every storage's
        // lock held across the write. The locks are taken once per storage,
        // in address order, so that concurrent calls cannot deadlock.
        let mut distinct: Vec<*const raftlet_storage> = pairs
            .iter()
            .map(|(s, _, _)| std::ptr::from_ref(*s))
            .collect();
        distinct.sort_unstable();
        distinct.dedup();
        let mut guards: Vec<_> = distinct
            .iter()
            // SAFETY: the pointers come from the live handles above.
            .map(|&p| unsafe { &*p }.appended.lock())
            .collect();
        let mut last: Vec<(u64, u64)> = guards.iter().map(|g| **g).collect();
        let mut batch = WriteBatch::new();
        for (i, (s, d, r)) in pairs.iter().enumerate() {
            // Always found: `distinct` holds every storage of the call.
            let (Ok(k) | Err(k)) = distinct.binary_search(&std::ptr::from_ref(*s));
            match check_ready_order(r, last[k]) {
                Ok(this) => last[k] = this,
                Err((code, why)) => return fail(code, format!("element {i}: {why}")),
            }
            if let Err(e) = batch.add_ready(d.id(), &r.rd) {
                return disk_failure(e);
            }
        }
        match store.map(|s| s.write(&batch)) {
            Some(Err(e)) => disk_failure(e),
            _ => {
                for (g, l) in guards.iter_mut().zip(last) {
                    **g = l;
                }
                RAFTLET_OK
            }
        }
    })
}
