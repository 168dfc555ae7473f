//! [`PyMemoryStorage`]: the in-memory storage shared by a node and its host.

use pyo3::prelude::*;
use pyo3::types::PyList;
use raftlet::{MemoryStorage, Storage};

use crate::convert::{BytesArg, U64};
use crate::errors::{unavailable, IntoPy};
use crate::types::{entry_list, PyConfState, PyEntry, PyHardState, PySnapshot};

/// An in-memory log, snapshot and hard state (etcd ``MemoryStorage``).
///
/// The host writes to it after handling each ``Ready`` (``apply_snapshot``,
/// ``append``, ``set_hard_state``); the ``RawNode`` built on it reads from
/// the same storage (it holds another handle on it, not a copy).
#[pyclass(frozen, module = "raftlet._raftlet", name = "MemoryStorage")]
pub struct PyMemoryStorage {
    pub inner: MemoryStorage,
}

#[pymethods]
impl PyMemoryStorage {
    /// Creates an empty storage. ``conf_state`` is the configuration a node
    /// started on it begins with (the initial members of a new cluster, or
    /// the current ones for a node that joins); without it the node starts
    /// with an empty configuration (for ``RawNode.bootstrap`` or a snapshot).
    ///
    /// Raises ``ConfChangeRefusedError`` for a configuration no node can
    /// start from (see ``set_conf_state``).
    #[new]
    #[pyo3(signature = (conf_state = None))]
    fn new(conf_state: Option<PyRef<'_, PyConfState>>) -> PyResult<Self> {
        let inner = match conf_state {
            Some(cs) => MemoryStorage::new_with_conf_state(cs.inner.clone()).py()?,
            None => MemoryStorage::new(),
        };
        Ok(PyMemoryStorage { inner })
    }

    /// Appends entries (from ``Ready.entries``), which must be consecutive.
    /// Entries already compacted are skipped; existing entries from the
    /// index of the first new one on are replaced.
    ///
    /// Raises ``UnavailableError`` if the entries would leave a gap after
    /// the last one, or are not consecutive (nothing is changed then).
    fn append(&self, entries: &Bound<'_, PyAny>) -> PyResult<()> {
        let ents =
            crate::convert::extract_each::<PyEntry, _>(entries, "Entry", |e| e.inner.clone())?;
        self.inner.wl().append(&ents).py()
    }

    /// Saves the hard state (from ``Ready.hard_state``).
    fn set_hard_state(&self, hard_state: PyRef<'_, PyHardState>) {
        self.inner.wl().set_hard_state(hard_state.inner);
    }

    /// The saved hard state.
    fn hard_state(&self) -> PyHardState {
        PyHardState {
            inner: *self.inner.rl().hard_state(),
        }
    }

    /// Sets the commit index of the saved hard state; raises
    /// ``UnavailableError`` if ``index`` is past the last entry.
    fn commit_to(&self, index: U64) -> PyResult<()> {
        self.inner.wl().commit_to(index.0).py()
    }

    /// The configuration a node restarting from this storage begins with.
    fn conf_state(&self) -> PyConfState {
        PyConfState {
            inner: self.inner.rl().snapshot_ref().metadata.conf_state.clone(),
        }
    }

    /// Sets the configuration a node started on this storage begins with.
    ///
    /// Raises ``ConfChangeRefusedError`` (keeping the configuration held)
    /// when it names 0, 2**64 - 1 or 2**64 - 2, names an id twice, has a
    /// voter that is also a learner, or is otherwise not a configuration
    /// membership changes can produce.
    fn set_conf_state(&self, conf_state: PyRef<'_, PyConfState>) -> PyResult<()> {
        self.inner
            .wl()
            .set_conf_state(conf_state.inner.clone())
            .py()
    }

    /// Replaces the whole contents with ``snapshot`` (from
    /// ``Ready.snapshot``): the log becomes empty and starts right after it.
    ///
    /// Raises ``SnapshotOutOfDateError`` if it is not newer than the
    /// snapshot held, ``ConfChangeRefusedError`` if its configuration is
    /// invalid (as for ``set_conf_state``).
    fn apply_snapshot(&self, snapshot: PyRef<'_, PySnapshot>) -> PyResult<()> {
        self.inner.wl().apply_snapshot(snapshot.inner.clone()).py()
    }

    /// Records a snapshot of the state machine at ``index`` and returns it.
    /// ``conf_state`` is the configuration at ``index`` (``None`` keeps the
    /// one held); ``data`` the serialized state machine. The log is not
    /// compacted: call ``compact`` for that.
    ///
    /// Raises ``SnapshotOutOfDateError`` if ``index`` is not past the
    /// current snapshot, ``UnavailableError`` if it is past the last entry
    /// or past the commit index the storage holds (the entry stored there
    /// may be an older one that a Ready in flight replaces),
    /// ``CompactedError`` if its entry was compacted away and
    /// ``ConfChangeRefusedError`` if ``conf_state`` is invalid (as for
    /// ``set_conf_state``).
    #[pyo3(signature = (index, conf_state = None, data = None))]
    fn create_snapshot(
        &self,
        index: U64,
        conf_state: Option<PyRef<'_, PyConfState>>,
        data: Option<BytesArg>,
    ) -> PyResult<PySnapshot> {
        check_snapshot_committed(&self.inner, index.0, conf_state.as_ref().map(|c| &c.inner))?;
        let snap = self
            .inner
            .wl()
            .create_snapshot(
                index.0,
                conf_state.map(|c| c.inner.clone()),
                data.map(|d| d.0),
            )
            .py()?;
        Ok(PySnapshot { inner: snap })
    }

    /// Discards the entries before ``compact_index``. Do not compact past
    /// what the state machine applied.
    ///
    /// Raises ``CompactedError`` if ``compact_index`` is not past the last
    /// compacted index and ``UnavailableError`` if it is past the last entry.
    fn compact(&self, compact_index: U64) -> PyResult<()> {
        self.inner.wl().compact(compact_index.0).py()
    }

    /// The most recent snapshot. Raises
    /// ``SnapshotTemporarilyUnavailableError`` once after
    /// ``trigger_snap_unavailable()``.
    fn snapshot(&self) -> PyResult<PySnapshot> {
        Ok(PySnapshot {
            inner: self.inner.snapshot(0, 0).py()?,
        })
    }

    /// The entries with indexes in ``[low, high)``, at most ``max_size``
    /// bytes of them (``None``: no limit), but at least one.
    ///
    /// Raises ``CompactedError`` if ``low`` was compacted away and
    /// ``UnavailableError`` if part of the range is not in the log.
    #[pyo3(signature = (low, high, max_size = None))]
    fn entries<'py>(
        &self,
        py: Python<'py>,
        low: U64,
        high: U64,
        max_size: Option<U64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let max = max_size.map_or(u64::MAX, |m| m.0);
        let ents = self.inner.entries(low.0, high.0, max).py()?;
        entry_list(py, ents)
    }

    /// The term of the entry at ``index``.
    ///
    /// Raises ``CompactedError`` below the first index - 1 and
    /// ``UnavailableError`` past the last index.
    fn term(&self, index: U64) -> PyResult<u64> {
        self.inner.term(index.0).py()
    }

    /// The index of the first entry that can be read (last index + 1 when
    /// the log holds none).
    fn first_index(&self) -> PyResult<u64> {
        Storage::first_index(&self.inner).py()
    }

    /// The index of the last entry (the snapshot's index when the log holds none).
    fn last_index(&self) -> PyResult<u64> {
        Storage::last_index(&self.inner).py()
    }

    /// Makes the next ``snapshot()`` call (and only that one) raise
    /// ``SnapshotTemporarilyUnavailableError``, as a storage still building
    /// a snapshot would. For tests.
    fn trigger_snap_unavailable(&self) {
        self.inner.wl().trigger_snap_unavailable();
    }

    fn __repr__(&self) -> String {
        let first = Storage::first_index(&self.inner).unwrap_or_default();
        let last = Storage::last_index(&self.inner).unwrap_or_default();
        let (hs, snap_index) = {
            let core = self.inner.rl();
            (*core.hard_state(), core.snapshot_ref().metadata.index)
        };
        format!(
            "MemoryStorage(first_index={first}, last_index={last}, term={}, commit={}, snapshot_index={snap_index})",
            hs.term, hs.commit
        )
    }
}

/// Refuses a snapshot at `index` above the commit index `store` holds, as
/// the C ABI does (see `raftlet_disk::uncommitted_snapshot`), after the
/// storage's own refusals.
pub(crate) fn check_snapshot_committed(
    store: &impl Storage,
    index: u64,
    cs: Option<&raftlet::pb::ConfState>,
) -> PyResult<()> {
    match raftlet_disk::uncommitted_snapshot(store, index, cs).py()? {
        None => Ok(()),
        Some(covered) => Err(unavailable(&format!(
            "index {index} is past the storage's commit index ({covered}): snapshot it once \
             the Ready that commits it is persisted"
        ))),
    }
}
