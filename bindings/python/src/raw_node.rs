//! [`PyRawNode`] and [`PyReady`]: the driver API.
//!
//! The core's `RawNode` is not thread-safe, so it sits in a `Mutex` inside
//! a frozen pyclass. No Python object is created or touched while that lock
//! is held, and the GIL is released around `step` and `ready`, which can
//! be long (a snapshot, a big batch of entries).
//!
//! A panic inside the core (a broken invariant, or a host that broke the
//! storage contract) is caught at this boundary and raised as
//! ``PanicError``, a ``RaftError``; it unwinds through the node's lock,
//! which poisons it, so every later call raises ``InvalidStateError``.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyList;
use raftlet::pb::{ConfChangeI, Message};
use raftlet::{RawNode, Ready, SnapshotStatus};
use raftlet_disk::{AnyStorage, MissingWrite, ReadyWrites};

use crate::config::PyConfig;
use crate::convert::{state_role, type_name, BytesArg, Ids, U64};
use crate::disk_storage::PyDiskStorage;
use crate::errors::{
    foreign_ready, invalid_state, panic_error, ready_not_persisted, ready_stale, IntoPy,
};
use crate::learner::{PyLocalRead, PyMembershipEvent};
use crate::status::{PyBasicStatus, PyStatus};
use crate::storage::PyMemoryStorage;
use crate::types::{
    entry_list, message_list, PyConfChange, PyConfChangeV2, PyConfState, PyHardState, PyMessage,
    PyReadState, PySnapshot, PySoftState,
};

/// Gives every node a distinct number, so a Ready cannot be advanced on a
/// node other than the one that produced it.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// Why the node could not be reached, or the call did not finish.
enum NodeUnusable {
    Closed,
    Poisoned,
    /// The core panicked during this call (the payload's message).
    Panicked(String),
}

impl From<NodeUnusable> for PyErr {
    fn from(e: NodeUnusable) -> PyErr {
        match e {
            NodeUnusable::Closed => invalid_state("raftlet: the RawNode is closed"),
            NodeUnusable::Poisoned => {
                invalid_state("raftlet: the RawNode is unusable after a panic inside the core")
            }
            NodeUnusable::Panicked(msg) => panic_error(&format!(
                "raftlet: panic inside the core: {msg} (the RawNode is unusable from now on)"
            )),
        }
    }
}

/// The message of a panic payload (`panic!` with a literal or a format).
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Runs `f`, turning a panic into [`NodeUnusable::Panicked`]. A guard that
/// `f` holds is dropped while unwinding, which poisons the node's lock.
fn no_panic<R>(f: impl FnOnce() -> Result<R, NodeUnusable>) -> Result<R, NodeUnusable> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(NodeUnusable::Panicked(panic_message(payload.as_ref()))),
    }
}

type Guard<'a> = MutexGuard<'a, Option<NodeState>>;

/// The node and what the binding tracks about its Readies, under one lock.
struct NodeState {
    rn: RawNode<AnyStorage>,
    /// The last committed index handed out by the Readies taken so far.
    applying: u64,
    /// What the Readies taken so far asked to write.
    written: ReadyWrites,
    /// The number of the last Ready advanced (0 before the first): it and
    /// every earlier one are acknowledged.
    advanced: u64,
}

/// Why advancing a Ready now would lie to the node: what it asked to
/// write is not in the storage.
fn missing_write(m: MissingWrite) -> String {
    match m {
        MissingWrite::Snapshot { index, held } => format!(
            "raftlet: the snapshot at index {index} is not in the storage (it holds {held})"
        ),
        MissingWrite::Entry { index, term } => format!(
            "raftlet: entry {index} (term {term}) is not in the storage: persist the \
             Ready before advancing it"
        ),
    }
}

/// A configuration change argument: a ``ConfChange`` or a ``ConfChangeV2``.
fn conf_change_arg(cc: &Bound<'_, PyAny>) -> PyResult<ConfChangeI> {
    if let Ok(c) = cc.cast::<PyConfChange>() {
        return Ok(ConfChangeI::V1(c.borrow().inner.clone()));
    }
    if let Ok(c) = cc.cast::<PyConfChangeV2>() {
        return Ok(ConfChangeI::V2(c.borrow().inner.clone()));
    }
    Err(PyTypeError::new_err(format!(
        "expected a ConfChange or ConfChangeV2, got {}",
        type_name(cc)
    )))
}

/// A Raft node driven by its host (etcd ``RawNode``).
///
/// The host calls ``tick()`` on a timer, feeds peer messages to ``step()``,
/// proposes with ``propose()`` and, whenever ``has_ready()`` is true,
/// handles a ``Ready``: persist its snapshot, entries and hard state to the
/// storage, send its messages (``persisted_messages`` only after the
/// write), apply its committed entries, then ``advance(ready)``.
///
/// A node may be shared between threads (calls are serialized by a lock).
#[pyclass(frozen, module = "raftlet._raftlet", name = "RawNode")]
pub struct PyRawNode {
    node: Mutex<Option<NodeState>>,
    storage: Py<PyAny>,
    serial: u64,
}

impl PyRawNode {
    /// Locks the node while attached to the interpreter (without
    /// deadlocking against a thread that waits for the GIL).
    fn lock(&self, py: Python<'_>) -> Result<Guard<'_>, NodeUnusable> {
        self.node
            .lock_py_attached(py)
            .map_err(|_| NodeUnusable::Poisoned)
    }

    /// Runs `f` on the node under its lock.
    fn with<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut RawNode<AnyStorage>) -> R,
    ) -> PyResult<R> {
        self.with_state(py, |st| f(&mut st.rn))
    }

    /// Runs `f` on the node and its Ready tracking under its lock.
    fn with_state<R>(&self, py: Python<'_>, f: impl FnOnce(&mut NodeState) -> R) -> PyResult<R> {
        let r = no_panic(|| {
            let mut g = self.lock(py)?;
            let st = g.as_mut().ok_or(NodeUnusable::Closed)?;
            Ok(f(st))
        });
        crate::logging::flush(py);
        Ok(r?)
    }

    /// Runs `f` on the node and its Ready tracking under its lock with the
    /// GIL released.
    fn with_detached<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut NodeState) -> R + Send,
    ) -> PyResult<R> {
        let r = py.detach(|| {
            no_panic(|| {
                let mut g = self.node.lock().map_err(|_| NodeUnusable::Poisoned)?;
                let st = g.as_mut().ok_or(NodeUnusable::Closed)?;
                Ok(f(st))
            })
        });
        crate::logging::flush(py);
        Ok(r?)
    }

    /// Acknowledges `rd` as durable (and, with `apply`, its committed
    /// entries and those of earlier Readies as applied). Every check and
    /// the acknowledgement happen under the node lock: of two threads
    /// advancing the same Ready, exactly one succeeds; on an error nothing
    /// changes.
    fn advance_ready(&self, py: Python<'_>, rd: &PyReady, apply: bool) -> PyResult<()> {
        if rd.serial != self.serial {
            return Err(foreign_ready(
                "raftlet: this Ready was produced by another RawNode",
            ));
        }
        let number = rd.number;
        self.with_state(py, |st| {
            if rd.used.load(Ordering::Acquire) {
                return Err(ready_stale(&format!(
                    "raftlet: Ready {number} was already advanced"
                )));
            }
            if number <= st.advanced {
                return Err(ready_stale(&format!(
                    "raftlet: Ready {number} is covered by Ready {}, advanced before it: \
                     advance Readies in the order they were taken",
                    st.advanced
                )));
            }
            let term = st.rn.basic_status().hard_state.term;
            let rn = &st.rn;
            rd.written
                .check_against(rn.store(), term, |i, t| rn.entry_term(i) == Some(t))
                .map_err(|m| ready_not_persisted(&missing_write(m)))?;
            if rd.used.swap(true, Ordering::AcqRel) {
                return Err(ready_stale(&format!(
                    "raftlet: Ready {number} was already advanced"
                )));
            }
            st.rn.on_persist_ready(number);
            st.advanced = number;
            if apply {
                // Only what this Ready and the earlier ones handed out: a
                // later Ready, taken already, may still be being applied.
                st.rn.advance_apply_to(rd.applying);
            }
            Ok(())
        })?
    }
}

#[pymethods]
impl PyRawNode {
    /// Creates a node on ``storage``, restarting from whatever it holds
    /// (hard state, configuration, snapshot, entries).
    ///
    /// Raises ``ConfigError`` for an invalid configuration.
    #[new]
    fn new(config: PyRef<'_, PyConfig>, storage: Bound<'_, PyAny>) -> PyResult<Self> {
        let store = if let Ok(m) = storage.cast::<PyMemoryStorage>() {
            AnyStorage::Memory(m.get().inner.clone())
        } else if let Ok(d) = storage.cast::<PyDiskStorage>() {
            AnyStorage::Disk(d.get().handle()?)
        } else {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "expected a MemoryStorage or DiskStorage, got {}",
                type_name(&storage)
            )));
        };
        crate::logging::sync_level(storage.py());
        let rn = no_panic(|| Ok(RawNode::new(&config.inner, store)))?.py()?;
        Ok(PyRawNode {
            node: Mutex::new(Some(NodeState {
                rn,
                applying: 0,
                written: ReadyWrites::default(),
                advanced: 0,
            })),
            storage: storage.unbind(),
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// Initializes an empty node with its first configuration: one
    /// committed conf-change entry per voter and learner, which the next
    /// Ready hands out to persist and apply.
    ///
    /// Everything is checked first: a refused bootstrap changes nothing, so
    /// a corrected call may follow. Raises ``InvalidStateError`` when there
    /// are no voters or the storage is not empty, and
    /// ``ConfChangeRefusedError`` when an id is 0, 2**64 - 1 or 2**64 - 2,
    /// appears twice, or is both a voter and a learner.
    #[pyo3(signature = (voters, learners = Ids::default()))]
    #[pyo3(text_signature = "($self, voters, learners=())")]
    fn bootstrap(&self, py: Python<'_>, voters: Ids, learners: Ids) -> PyResult<()> {
        self.with(py, |n| n.bootstrap(&voters.0, &learners.0))?.py()
    }

    /// Advances the logical clock by one tick (and picks up the level of
    /// ``logging.getLogger("raftlet")``).
    fn tick(&self, py: Python<'_>) -> PyResult<()> {
        crate::logging::sync_level(py);
        self.with(py, |n| n.tick())
    }

    /// Makes this node campaign at once (pre-vote first when enabled).
    ///
    /// Raises ``InvalidStateError`` when the node's term or last index is
    /// at the limit 2**63 - 1 (it can never campaign again).
    fn campaign(&self, py: Python<'_>) -> PyResult<()> {
        crate::logging::sync_level(py);
        self.with(py, |n| n.campaign())?.py()
    }

    /// Proposes that ``data`` be appended to the log.
    ///
    /// Raises ``ProposalDroppedError`` when no leader is known, forwarding
    /// is disabled, a leader transfer is under way or the uncommitted
    /// budget is exhausted.
    fn propose(&self, py: Python<'_>, data: BytesArg) -> PyResult<()> {
        self.with(py, |n| n.propose(data.0))?.py()
    }

    /// Proposes several payloads in one message (one append on the leader).
    ///
    /// Raises ``ProposalDroppedError`` as ``propose`` does, and for an empty batch.
    fn propose_batch(&self, py: Python<'_>, batch: &Bound<'_, PyAny>) -> PyResult<()> {
        let not_iterable = || {
            PyTypeError::new_err(format!(
                "expected an iterable of bytes, got {}",
                type_name(batch)
            ))
        };
        if batch.is_instance_of::<pyo3::types::PyBytes>() {
            return Err(not_iterable());
        }
        let mut items = Vec::new();
        for item in batch.try_iter().map_err(|_| not_iterable())? {
            let BytesArg(b) = item?.extract()?;
            items.push(b);
        }
        self.with(py, |n| n.propose_batch(items))?.py()
    }

    /// Proposes a configuration change (a ``ConfChange`` or ``ConfChangeV2``).
    ///
    /// Raises ``ProposalDroppedError`` as ``propose`` does, and, when the
    /// leader refuses the change, ``ConfChangeRefusedError``,
    /// ``PromotionNotReadyError`` (a learner that lags) or
    /// ``TooManyLearnersError``. A change of an unknown type or transition,
    /// or of node 0, 2**64 - 1 or 2**64 - 2, is refused with
    /// ``ConfChangeRefusedError`` on every node.
    fn propose_conf_change(&self, py: Python<'_>, cc: &Bound<'_, PyAny>) -> PyResult<()> {
        let cc = conf_change_arg(cc)?;
        self.with(py, |n| n.propose_conf_change(cc))?.py()
    }

    /// Applies a committed configuration change (from a conf-change entry,
    /// see ``Entry.conf_change()``) and returns the new configuration.
    ///
    /// Raises ``ConfChangeRefusedError`` when the change is not valid for
    /// the current configuration; the configuration is left unchanged and
    /// the node keeps working. A raftlet leader never commits such a
    /// change, but an etcd leader may: log it and treat the entry as a
    /// no-op, as every raftlet node does.
    fn apply_conf_change(&self, py: Python<'_>, cc: &Bound<'_, PyAny>) -> PyResult<PyConfState> {
        let cc = conf_change_arg(cc)?;
        let cs = self.with(py, |n| n.apply_conf_change(&cc))?.py()?;
        Ok(PyConfState { inner: cs })
    }

    /// Processes a message received from a peer (the GIL is released).
    ///
    /// Raises ``StepLocalMessageError`` for local-only message types,
    /// ``InvalidMessageError`` for a message of an unknown type, with a
    /// term or index above 2**63 - 1, or from an id that cannot be a member
    /// (nothing in the node changes), and ``StepPeerNotFoundError`` for
    /// responses from unknown peers.
    fn step(&self, py: Python<'_>, message: PyRef<'_, PyMessage>) -> PyResult<()> {
        let m: Message = message.inner.clone();
        drop(message);
        self.with_detached(py, move |st| st.rn.step(m))?.py()
    }

    /// Requests a linearizable read; the answer arrives as a ``ReadState``
    /// carrying ``ctx`` in a later Ready.
    ///
    /// Raises ``NoLeaderError`` when no leader is known.
    fn read_index(&self, py: Python<'_>, ctx: BytesArg) -> PyResult<()> {
        self.with(py, |n| n.read_index(ctx.0))?.py()
    }

    /// Proposes adding member ``id`` with the host's ``context`` (for
    /// example its address): as a learner when ``Config.learner_first`` is
    /// on (the default), to be promoted once it has caught up (by the host,
    /// or by the leader with ``Config.auto_promote``); as a voter otherwise.
    /// A learner added first never changes the quorum, so a member that
    /// never answers can be removed again without losing availability.
    ///
    /// Raises ``ConfChangeRefusedError`` when ``id`` is already a member,
    /// and the errors of ``propose_conf_change``.
    #[pyo3(signature = (id, context = None))]
    #[pyo3(text_signature = "($self, id, context=b'')")]
    fn add_member(&self, py: Python<'_>, id: U64, context: Option<BytesArg>) -> PyResult<()> {
        let ctx = context.map(|c| c.0).unwrap_or_default();
        self.with(py, |n| n.add_member(id.0, ctx))?.py()
    }

    /// Turns automatic promotion (``Config.auto_promote``) on or off at run
    /// time; off, a promotion already proposed still takes effect.
    ///
    /// Raises ``ConfigError`` when turning it on without check-quorum.
    fn set_auto_promote(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.with(py, |n| n.set_auto_promote(on))?.py()
    }

    /// Turns standby promotion (``Config.standby_promotion``) on or off at
    /// run time.
    ///
    /// Raises ``ConfigError`` when turning it on without check-quorum.
    fn set_standby_promotion(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.with(py, |n| n.set_standby_promotion(on))?.py()
    }

    /// A weak (local) read: serve it from the state applied up to
    /// ``applied``; ``commit - applied`` is how stale it may be by this
    /// node's knowledge. For a read that sees every write acknowledged
    /// before it began, use ``read_index`` (a learner forwards it to the
    /// leader) and serve it once applied up to the ``ReadState``'s index.
    fn read_local(&self, py: Python<'_>) -> PyResult<PyLocalRead> {
        Ok(PyLocalRead {
            inner: self.with(py, |n| n.read_local())?,
        })
    }

    /// Asks the leader to hand leadership to ``transferee``.
    ///
    /// Raises ``TransferRefusedError`` when the target is not a voter or no
    /// leader is known.
    fn transfer_leader(&self, py: Python<'_>, transferee: U64) -> PyResult<()> {
        self.with(py, |n| n.transfer_leader(transferee.0))?.py()
    }

    /// Makes a follower forget its leader, so that it grants pre-votes at
    /// once (a no-op on the leader).
    fn forget_leader(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |n| n.forget_leader())?.py()
    }

    /// Tells the leader that the last message to ``id`` may not have arrived.
    fn report_unreachable(&self, py: Python<'_>, id: U64) -> PyResult<()> {
        self.with(py, |n| n.report_unreachable(id.0))
    }

    /// Tells the leader how sending a snapshot to ``id`` ended: ``ok`` is
    /// ``True`` when the peer applied it, ``False`` when sending failed.
    fn report_snapshot(&self, py: Python<'_>, id: U64, ok: bool) -> PyResult<()> {
        let status = if ok {
            SnapshotStatus::Finish
        } else {
            SnapshotStatus::Failure
        };
        self.with(py, |n| n.report_snapshot(id.0, status))
    }

    /// Whether a Ready with something in it is available.
    fn has_ready(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |n| n.has_ready())
    }

    /// Takes the next batch of work (the GIL is released while it is
    /// built). Every Ready must be handed back with ``advance`` (or
    /// ``advance_append``) once handled.
    ///
    /// Several Readies may be in flight, but they are advanced in the
    /// order they were taken, each once: advancing one covers the earlier
    /// ones, which can no longer be advanced. A host that runs the Ready
    /// loop from several threads must keep that order itself.
    fn ready(&self, py: Python<'_>) -> PyResult<PyReady> {
        crate::logging::sync_level(py);
        let (rd, applying, written) = self.with_detached(py, |st| {
            let rd = st.rn.ready();
            if let Some(last) = rd.committed_entries.last() {
                st.applying = st.applying.max(last.index);
            }
            let term = st.rn.basic_status().hard_state.term;
            st.written.record(&rd, term);
            (rd, st.applying, st.written)
        })?;
        PyReady::from_ready(py, self.serial, rd, applying, written)
    }

    /// Reports that a Ready was fully handled: its writes are durable and
    /// its committed entries applied, with those of earlier Readies (not
    /// those of later Readies already taken). Earlier Readies not advanced
    /// yet are covered by it.
    ///
    /// Raises ``ReadyStaleError`` if the Ready was already advanced or a
    /// later one was, ``ForeignReadyError`` (also a ``ValueError``) for a
    /// Ready of another node and ``ReadyNotPersistedError`` when the
    /// storage lacks its entries or snapshot (or an earlier Ready's it
    /// would cover). Nothing changes on an error.
    fn advance(&self, py: Python<'_>, ready: PyRef<'_, PyReady>) -> PyResult<()> {
        self.advance_ready(py, &ready, true)
    }

    /// Reports that a Ready's writes are durable, for hosts that apply
    /// committed entries asynchronously; follow up with
    /// ``advance_apply_to``. Earlier Readies are covered, as by ``advance``.
    ///
    /// Raises as ``advance`` does.
    fn advance_append(&self, py: Python<'_>, ready: PyRef<'_, PyReady>) -> PyResult<()> {
        self.advance_ready(py, &ready, false)
    }

    /// Reports that committed entries up to ``index`` are applied (capped
    /// at what was handed out).
    fn advance_apply_to(&self, py: Python<'_>, index: U64) -> PyResult<()> {
        self.with(py, |n| n.advance_apply_to(index.0))
    }

    /// Reports that every committed entry handed out so far is applied.
    fn advance_apply(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |n| n.advance_apply())
    }

    /// The node's full status (peers' progress only on the leader).
    fn status(&self, py: Python<'_>) -> PyResult<PyStatus> {
        Ok(PyStatus {
            inner: self.with(py, |n| n.status())?,
        })
    }

    /// The cheap part of the status (etcd ``BasicStatus``): id, hard and
    /// soft state, applied index and lead transferee, read in one call
    /// under the lock, without the configuration or the peers' progress.
    fn basic_status(&self, py: Python<'_>) -> PyResult<PyBasicStatus> {
        Ok(PyBasicStatus {
            inner: self.with(py, |n| n.basic_status())?,
        })
    }

    /// Drops the node now instead of when it is garbage-collected; any
    /// later call raises ``InvalidStateError``. Closing twice is fine.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let old = self.lock(py)?.take();
        drop(old);
        Ok(())
    }

    /// The storage the node reads from (the object passed to the constructor).
    #[getter]
    fn storage(&self, py: Python<'_>) -> Py<PyAny> {
        self.storage.clone_ref(py)
    }

    /// This node's id.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |n| n.id())
    }

    /// The current term.
    #[getter]
    fn term(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |n| n.basic_status().hard_state.term)
    }

    /// Whom this node voted for in the current term (0 for nobody).
    #[getter]
    fn vote(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |n| n.basic_status().hard_state.vote)
    }

    /// The commit index.
    #[getter]
    fn commit(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |n| n.basic_status().hard_state.commit)
    }

    /// The last index the host reported applied.
    #[getter]
    fn applied(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |n| n.basic_status().applied)
    }

    /// The known leader (0 for none).
    #[getter]
    fn leader_id(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |n| n.basic_status().soft_state.leader_id)
    }

    /// This node's role (a ``StateRole``).
    #[getter]
    fn raft_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let role = self.with(py, |n| n.basic_status().soft_state.raft_state)?;
        state_role(py, role)
    }

    /// The target of a leader transfer under way (0 for none).
    #[getter]
    fn lead_transferee(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |n| n.basic_status().lead_transferee)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        match self.with(py, |n| n.basic_status()) {
            Ok(b) => format!(
                "RawNode(id={}, role={}, term={}, commit={})",
                b.id, b.soft_state.raft_state, b.hard_state.term, b.hard_state.commit
            ),
            Err(_) => "RawNode(<closed>)".to_string(),
        }
    }
}

/// A batch of work handed out by ``RawNode.ready()``.
///
/// Handle it in order: persist ``snapshot``, ``entries`` and
/// ``hard_state`` (sync when ``must_sync``); send ``messages`` at any time
/// and ``persisted_messages`` only after the write; apply
/// ``committed_entries`` in order (conf-change entries through
/// ``RawNode.apply_conf_change``, and only once the write is durable:
/// ``must_sync`` is set for a Ready that hands one out before a durable
/// commit index covers it); then ``RawNode.advance(ready)``. A Ready can be
/// advanced once; its contents stay readable afterwards.
#[pyclass(frozen, module = "raftlet._raftlet", name = "Ready")]
pub struct PyReady {
    serial: u64,
    number: u64,
    /// What advancing it reports applied.
    applying: u64,
    /// What advancing it makes the node take as durable.
    written: ReadyWrites,
    used: AtomicBool,
    soft_state: Option<Py<PySoftState>>,
    hard_state: Option<Py<PyHardState>>,
    read_states: Py<PyList>,
    entries: Py<PyList>,
    snapshot: Option<Py<PySnapshot>>,
    committed_entries: Py<PyList>,
    messages: Py<PyList>,
    persisted_messages: Py<PyList>,
    membership_events: Py<PyList>,
    must_sync: bool,
}

impl PyReady {
    fn from_ready(
        py: Python<'_>,
        serial: u64,
        rd: Ready,
        applying: u64,
        written: ReadyWrites,
    ) -> PyResult<PyReady> {
        let number = rd.number();
        Ok(PyReady {
            serial,
            number,
            applying,
            written,
            used: AtomicBool::new(false),
            soft_state: rd
                .soft_state
                .map(|s| Py::new(py, PySoftState { inner: s }))
                .transpose()?,
            hard_state: rd
                .hard_state
                .map(|h| Py::new(py, PyHardState { inner: h }))
                .transpose()?,
            read_states: PyList::new(
                py,
                rd.read_states.into_iter().map(|r| PyReadState { inner: r }),
            )?
            .unbind(),
            entries: entry_list(py, rd.entries)?.unbind(),
            snapshot: rd
                .snapshot
                .map(|s| Py::new(py, PySnapshot { inner: s }))
                .transpose()?,
            committed_entries: entry_list(py, rd.committed_entries)?.unbind(),
            messages: message_list(py, rd.messages)?.unbind(),
            persisted_messages: message_list(py, rd.persisted_messages)?.unbind(),
            membership_events: PyList::new(
                py,
                rd.membership_events
                    .into_iter()
                    .map(|e| PyMembershipEvent { inner: e }),
            )?
            .unbind(),
            must_sync: rd.must_sync,
        })
    }
}

#[pymethods]
impl PyReady {
    /// The sequence number of this Ready (1 for a node's first).
    #[getter]
    fn number(&self) -> u64 {
        self.number
    }

    /// Leader and role, only when they changed since the last Ready.
    #[getter]
    fn soft_state(&self, py: Python<'_>) -> Option<Py<PySoftState>> {
        self.soft_state.as_ref().map(|s| s.clone_ref(py))
    }

    /// Term, vote and commit to persist, only when they changed.
    #[getter]
    fn hard_state(&self, py: Python<'_>) -> Option<Py<PyHardState>> {
        self.hard_state.as_ref().map(|s| s.clone_ref(py))
    }

    /// Answers to ``read_index`` requests (``ReadState`` objects).
    #[getter]
    fn read_states(&self, py: Python<'_>) -> Py<PyList> {
        self.read_states.clone_ref(py)
    }

    /// Entries to append to stable storage.
    #[getter]
    fn entries(&self, py: Python<'_>) -> Py<PyList> {
        self.entries.clone_ref(py)
    }

    /// A snapshot to apply to stable storage and the state machine, or ``None``.
    #[getter]
    fn snapshot(&self, py: Python<'_>) -> Option<Py<PySnapshot>> {
        self.snapshot.as_ref().map(|s| s.clone_ref(py))
    }

    /// Entries to apply to the state machine, in order.
    #[getter]
    fn committed_entries(&self, py: Python<'_>) -> Py<PyList> {
        self.committed_entries.clone_ref(py)
    }

    /// Messages that may be sent at once.
    #[getter]
    fn messages(&self, py: Python<'_>) -> Py<PyList> {
        self.messages.clone_ref(py)
    }

    /// Messages to send only once ``entries``, ``hard_state`` and
    /// ``snapshot`` are durable (append and vote responses).
    #[getter]
    fn persisted_messages(&self, py: Python<'_>) -> Py<PyList> {
        self.persisted_messages.clone_ref(py)
    }

    /// The membership changes the leader proposed by itself since the
    /// previous Ready (``MembershipEvent`` objects), for the host's log.
    #[getter]
    fn membership_events(&self, py: Python<'_>) -> Py<PyList> {
        self.membership_events.clone_ref(py)
    }

    /// Every message of this Ready in one new list, ``messages`` first and
    /// then ``persisted_messages``: what a synchronous host sends once the
    /// write of this Ready is durable (etcd's ``Ready.Messages``).
    fn all_messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let all = PyList::empty(py);
        for m in self.messages.bind(py).iter() {
            all.append(m)?;
        }
        for m in self.persisted_messages.bind(py).iter() {
            all.append(m)?;
        }
        Ok(all)
    }

    /// Whether the write of this Ready must be synced to disk.
    #[getter]
    fn must_sync(&self) -> bool {
        self.must_sync
    }

    /// Whether this Ready was already advanced.
    #[getter]
    fn advanced(&self) -> bool {
        self.used.load(Ordering::Acquire)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Ready(number={}, entries={}, committed_entries={}, messages={}, \
             persisted_messages={}, hard_state={}, soft_state={}, snapshot={}, \
             read_states={}, must_sync={})",
            self.number,
            self.entries.bind(py).len(),
            self.committed_entries.bind(py).len(),
            self.messages.bind(py).len(),
            self.persisted_messages.bind(py).len(),
            if self.hard_state.is_some() {
                "<set>"
            } else {
                "None"
            },
            if self.soft_state.is_some() {
                "<set>"
            } else {
                "None"
            },
            if self.snapshot.is_some() {
                "<set>"
            } else {
                "None"
            },
            self.read_states.bind(py).len(),
            if self.must_sync { "True" } else { "False" },
        )
    }
}
