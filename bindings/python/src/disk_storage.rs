//! [`PyDiskStorage`]: a durable storage (raftlet-disk), usable wherever a
//! `MemoryStorage` is.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use raftlet::Storage;
use raftlet_disk::{DiskGroup, DiskStore, Options, StdFs, WriteBatch};

use crate::convert::{BytesArg, U64};
use crate::errors::IntoPy;
use crate::types::{entry_list, PyConfState, PyEntry, PyHardState, PySnapshot};

/// Maps a store error to the package's exceptions (``StorageError`` and
/// its subclasses).
fn dk<T>(r: raftlet_disk::Result<T>) -> PyResult<T> {
    r.map_err(raftlet::Error::from).py()
}

/// Adds what `ready` (a ``Ready``) asks group `gid` to persist to `b`:
/// its snapshot, entries and hard state. Returns its ``must_sync``, which
/// the caller sets on the batch (the batch's methods ask for a sync).
fn add_ready(b: &mut WriteBatch, gid: u64, ready: &Bound<'_, PyAny>) -> PyResult<bool> {
    let snap = ready.getattr("snapshot")?;
    if !snap.is_none() {
        let s: PyRef<'_, PySnapshot> = snap.extract()?;
        raftlet::validate::check_conf_state(&s.inner.metadata.conf_state).py()?;
        b.apply_snapshot(gid, &s.inner);
    }
    let entries = ready.getattr("entries")?;
    let ents = crate::convert::extract_each::<PyEntry, _>(&entries, "Entry", |e| e.inner.clone())?;
    dk(b.append(gid, &ents))?;
    let hs = ready.getattr("hard_state")?;
    if !hs.is_none() {
        let h: PyRef<'_, PyHardState> = hs.extract()?;
        b.set_hard_state(gid, &h.inner);
    }
    ready.getattr("must_sync")?.extract()
}

/// A durable log, snapshot and hard state on disk: one group of a
/// crash-safe store in a directory (created if needed).
///
/// It is used like a ``MemoryStorage`` (``RawNode(config, storage)``, then
/// ``persist_ready`` or ``append``, ``set_hard_state`` and
/// ``apply_snapshot`` after each ``Ready``), but every write is durable
/// when the call returns, and a node created over it after a restart gets
/// its log back. It is a context manager: ``with DiskStorage(path) as s:``
/// closes it at the end. The directory is locked while the store is open
/// (by this object, by ``open_group`` ones, or by a node over one of them).
#[pyclass(frozen, module = "raftlet._raftlet", name = "DiskStorage")]
pub struct PyDiskStorage {
    group: Mutex<Option<DiskGroup>>,
    path: PathBuf,
    id: u64,
}

impl PyDiskStorage {
    /// The group handle, or ``ValueError`` once closed.
    pub fn handle(&self) -> PyResult<DiskGroup> {
        self.group
            .lock()
            .map_err(|_| PyValueError::new_err("DiskStorage lock poisoned"))?
            .clone()
            .ok_or_else(|| PyValueError::new_err("I/O operation on a closed DiskStorage"))
    }
}

#[pymethods]
impl PyDiskStorage {
    /// Opens (creating it if needed) the store in directory ``path`` and
    /// gives its group ``group``. The keyword arguments tune the store
    /// (``None``: the default): ``segment_size`` (64 MiB),
    /// ``rewrite_max_bytes`` (16 MiB), ``direct_min_bytes`` (1 MiB;
    /// records this large are written past the page cache) and
    /// ``read_cache_bytes`` (64 MiB of the newest records kept for reads).
    ///
    /// Raises ``StorageError`` if the directory is locked by another open
    /// store, if a record in the middle of the log is corrupt (the message
    /// names the file and offset), if a snapshot file is missing or
    /// damaged, or if the filesystem fails; ``ValueError`` for a
    /// ``segment_size`` of 0.
    #[new]
    #[pyo3(
        signature = (path, group = U64(1), *, segment_size = None, rewrite_max_bytes = None, direct_min_bytes = None, read_cache_bytes = None),
        text_signature = "(path, group=1, *, segment_size=None, rewrite_max_bytes=None, direct_min_bytes=None, read_cache_bytes=None)"
    )]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        group: U64,
        segment_size: Option<U64>,
        rewrite_max_bytes: Option<U64>,
        direct_min_bytes: Option<U64>,
        read_cache_bytes: Option<U64>,
    ) -> PyResult<Self> {
        let d = Options::default();
        let opts = Options {
            segment_size: segment_size.map_or(d.segment_size, |v| v.0),
            rewrite_max_bytes: rewrite_max_bytes.map_or(d.rewrite_max_bytes, |v| v.0),
            direct_min_bytes: direct_min_bytes.map_or(d.direct_min_bytes, |v| v.0),
            read_cache_bytes: read_cache_bytes.map_or(d.read_cache_bytes, |v| v.0),
        };
        if opts.segment_size == 0 {
            return Err(PyValueError::new_err("segment_size must not be 0"));
        }
        let p = path.clone();
        let store = py.detach(|| DiskStore::open_with(Arc::new(StdFs), &p, opts));
        let store = dk(store)?;
        Ok(PyDiskStorage {
            group: Mutex::new(Some(store.group(group.0))),
            path,
            id: group.0,
        })
    }

    /// Another group of the same store (one log, one directory lock).
    fn open_group(&self, group: U64) -> PyResult<PyDiskStorage> {
        let g = self.handle()?;
        Ok(PyDiskStorage {
            group: Mutex::new(Some(g.store().group(group.0))),
            path: self.path.clone(),
            id: group.0,
        })
    }

    /// Persists what ``ready`` asks for this group: its snapshot, entries
    /// and hard state, as one record, synced if ``ready.must_sync``. Then
    /// send ``ready.persisted_messages`` and call ``advance``.
    fn persist_ready(&self, py: Python<'_>, ready: &Bound<'_, PyAny>) -> PyResult<()> {
        let g = self.handle()?;
        let mut b = WriteBatch::new();
        let must_sync = add_ready(&mut b, g.id(), ready)?;
        b.set_must_sync(must_sync);
        dk(py.detach(|| g.store().write(&b)))
    }

    /// Persists the Readies of many groups of one store with ONE sync
    /// (group commit): for each ``(storage, ready)`` pair, what
    /// ``storage.persist_ready(ready)`` would write, all in one record,
    /// synced once if any ready ``must_sync``. A host of many groups takes
    /// every node's Ready, persists them with one call, then sends and
    /// advances each.
    ///
    /// Nothing is written if any pair does not fit its group's log.
    /// Raises ``ValueError`` if the storages are not groups of one store
    /// (or one is closed), ``UnavailableError`` and the other
    /// ``StorageError`` subclasses as ``persist_ready`` does.
    #[staticmethod]
    fn persist_readies(py: Python<'_>, pairs: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut b = WriteBatch::new();
        let mut must_sync = false;
        let mut store: Option<DiskStore> = None;
        for item in pairs.try_iter()? {
            let item = item?;
            let (storage, ready): (PyRef<'_, PyDiskStorage>, Bound<'_, PyAny>) = item.extract()?;
            let g = storage.handle()?;
            match &store {
                None => store = Some(g.store().clone()),
                Some(s) if s.same_store(g.store()) => {}
                Some(_) => {
                    return Err(PyValueError::new_err(
                        "persist_readies: the storages are groups of different stores",
                    ))
                }
            }
            must_sync |= add_ready(&mut b, g.id(), &ready)?;
        }
        b.set_must_sync(must_sync);
        match store {
            Some(s) => dk(py.detach(|| s.write(&b))),
            None => Ok(()),
        }
    }

    /// Appends entries (from ``Ready.entries``), which must be consecutive,
    /// durably. Raises ``UnavailableError`` if they would leave a gap
    /// after the last one (nothing is changed then).
    fn append(&self, py: Python<'_>, entries: &Bound<'_, PyAny>) -> PyResult<()> {
        let g = self.handle()?;
        let ents =
            crate::convert::extract_each::<PyEntry, _>(entries, "Entry", |e| e.inner.clone())?;
        dk(py.detach(|| g.append(&ents)))
    }

    /// Saves the hard state (from ``Ready.hard_state``), durably.
    fn set_hard_state(&self, py: Python<'_>, hard_state: PyRef<'_, PyHardState>) -> PyResult<()> {
        let g = self.handle()?;
        let hs = hard_state.inner;
        dk(py.detach(|| g.set_hard_state(&hs)))
    }

    /// The saved hard state.
    fn hard_state(&self) -> PyResult<PyHardState> {
        Ok(PyHardState {
            inner: self.handle()?.hard_state(),
        })
    }

    /// The configuration a node restarting from this storage begins with.
    fn conf_state(&self) -> PyResult<PyConfState> {
        Ok(PyConfState {
            inner: self.handle()?.initial_state().py()?.conf_state,
        })
    }

    /// Sets the configuration a node started on this storage begins with,
    /// durably. Raises ``ConfChangeRefusedError`` (keeping the
    /// configuration held) for one ``MemoryStorage.set_conf_state``
    /// refuses.
    fn set_conf_state(&self, py: Python<'_>, conf_state: PyRef<'_, PyConfState>) -> PyResult<()> {
        let g = self.handle()?;
        let cs = conf_state.inner.clone();
        raftlet::validate::check_conf_state(&cs).py()?;
        dk(py.detach(|| g.set_conf_state(&cs)))
    }

    /// Replaces the log with ``snapshot`` (from ``Ready.snapshot``),
    /// durably. Raises ``SnapshotOutOfDateError`` if it is not newer than
    /// the snapshot held, ``ConfChangeRefusedError`` if its configuration
    /// is invalid (as for ``set_conf_state``).
    fn apply_snapshot(&self, py: Python<'_>, snapshot: PyRef<'_, PySnapshot>) -> PyResult<()> {
        let g = self.handle()?;
        let s = snapshot.inner.clone();
        raftlet::validate::check_conf_state(&s.metadata.conf_state).py()?;
        dk(py.detach(|| g.apply_snapshot(&s)))
    }

    /// Records a snapshot of the state machine at ``index`` and returns it
    /// (as ``MemoryStorage.create_snapshot``), durably; the log is kept.
    #[pyo3(signature = (index, conf_state = None, data = None))]
    fn create_snapshot(
        &self,
        py: Python<'_>,
        index: U64,
        conf_state: Option<PyRef<'_, PyConfState>>,
        data: Option<BytesArg>,
    ) -> PyResult<PySnapshot> {
        let g = self.handle()?;
        let cs = conf_state.map(|c| c.inner.clone());
        // Checked here too, so that it refuses as MemoryStorage does (the
        // out-of-date check comes first there as well).
        if let Some(cs) = &cs {
            if index.0 > g.snapshot_index() {
                raftlet::validate::check_conf_state(cs).py()?;
            }
        }
        crate::storage::check_snapshot_committed(&g, index.0, cs.as_ref())?;
        let snap = dk(py.detach(|| g.create_snapshot(index.0, cs, data.map(|d| d.0))))?;
        Ok(PySnapshot { inner: snap })
    }

    /// Discards the entries before ``compact_index`` (not synced by itself:
    /// a compaction lost in a crash is harmless).
    fn compact(&self, py: Python<'_>, compact_index: U64) -> PyResult<()> {
        let g = self.handle()?;
        dk(py.detach(|| g.compact(compact_index.0)))
    }

    /// The most recent snapshot (read from its file).
    fn snapshot(&self) -> PyResult<PySnapshot> {
        Ok(PySnapshot {
            inner: self.handle()?.snapshot(0, 0).py()?,
        })
    }

    /// The entries with indexes in ``[low, high)``, at most ``max_size``
    /// bytes of them (``None``: no limit), but at least one.
    #[pyo3(signature = (low, high, max_size = None))]
    fn entries<'py>(
        &self,
        py: Python<'py>,
        low: U64,
        high: U64,
        max_size: Option<U64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let max = max_size.map_or(u64::MAX, |m| m.0);
        let ents = self.handle()?.entries(low.0, high.0, max).py()?;
        entry_list(py, ents)
    }

    /// The term of the entry at ``index``.
    fn term(&self, index: U64) -> PyResult<u64> {
        self.handle()?.term(index.0).py()
    }

    /// The index of the first entry that can be read.
    fn first_index(&self) -> PyResult<u64> {
        Storage::first_index(&self.handle()?).py()
    }

    /// The index of the last entry.
    fn last_index(&self) -> PyResult<u64> {
        Storage::last_index(&self.handle()?).py()
    }

    /// The store's directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The group's id in the store.
    #[getter]
    fn group(&self) -> u64 {
        self.id
    }

    /// Whether ``close()`` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.group.lock().map_or(true, |g| g.is_none())
    }

    /// Releases this handle on the store; later calls raise ``ValueError``.
    /// The store (and its directory lock) goes away with its last handle:
    /// close the nodes created over it too. Closing twice is fine.
    fn close(&self) {
        if let Ok(mut g) = self.group.lock() {
            g.take();
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the storage; exceptions propagate.
    fn __exit__(
        &self,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let path = self.path.display().to_string();
        match self.handle() {
            Ok(g) => {
                let hs = g.hard_state();
                format!(
                    "DiskStorage(path={path:?}, group={}, first_index={}, last_index={}, term={}, commit={})",
                    self.id,
                    Storage::first_index(&g).unwrap_or_default(),
                    Storage::last_index(&g).unwrap_or_default(),
                    hs.term,
                    hs.commit
                )
            }
            Err(_) => format!("DiskStorage(path={path:?}, group={}, closed)", self.id),
        }
    }
}
