//! The raftpb wire types as Python classes: [`PyEntry`], [`PyHardState`],
//! [`PyConfState`], [`PySnapshot`], [`PyMessage`], [`PyConfChange`],
//! [`PyConfChangeSingle`], [`PyConfChangeV2`], plus [`PySoftState`] and
//! [`PyReadState`] from the Ready.
//!
//! Each wraps the core's value. Attribute reads return copies: changing a
//! list read from `message.entries` does not change the message; assign
//! the attribute instead. `encode()` writes etcd v3.6's raftpb bytes and
//! `decode()` reads them.

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use raftlet::pb::{
    ConfChange, ConfChangeI, ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2,
    ConfState, Decode, Encode, Entry, EntryType, HardState, Message, MessageType, Snapshot,
    SnapshotMetadata,
};
use raftlet::{ReadState, SoftState, StateRole};

use crate::convert::{
    extract_each, id_list, py_bytes, state_role, BytesArg, EnumNum, Ids, CONF_CHANGE_TRANSITION,
    CONF_CHANGE_TYPE, ENTRY_TYPE, MESSAGE_TYPE, U64,
};
use crate::errors::IntoPy;

/// Writes `b` for a `__repr__`: the bytes literal when short, the length
/// otherwise.
fn repr_bytes(py: Python<'_>, b: Option<&Bytes>) -> String {
    match b {
        None => "None".to_string(),
        Some(b) if b.len() <= 32 => PyBytes::new(py, b)
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_default(),
        Some(b) => format!("<{} bytes>", b.len()),
    }
}

/// The name of an open enum value for a `__repr__`.
fn enum_repr(cls: &str, name: Option<&str>, n: i32) -> String {
    match name {
        Some(name) => format!("{cls}.{name}"),
        None => format!("{cls}({n})"),
    }
}

/// Encodes a value as raftpb bytes.
fn encode<'py, T: Encode>(py: Python<'py>, v: &T) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &v.encode_to_vec())
}

/// Decodes raftpb bytes, sharing one copy of the input among the payloads.
fn decode<T: Decode>(data: BytesArg) -> PyResult<T> {
    T::decode_bytes(&data.0).py()
}

/// A list of entries as `Entry` objects.
pub fn entry_list<'py>(py: Python<'py>, ents: Vec<Entry>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, ents.into_iter().map(|inner| PyEntry { inner }))
}

/// A list of messages as `Message` objects.
pub fn message_list<'py>(py: Python<'py>, msgs: Vec<Message>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, msgs.into_iter().map(|inner| PyMessage { inner }))
}

// ---------------------------------------------------------------------------
// Entry
// ---------------------------------------------------------------------------

/// One log entry (raftpb ``Entry``).
///
/// ``data`` reads as ``bytes`` (empty when absent); assigning ``None``
/// makes it absent, which etcd encodes differently from empty bytes.
#[pyclass(module = "raftlet._raftlet", name = "Entry", eq)]
#[derive(Clone, PartialEq)]
pub struct PyEntry {
    pub inner: Entry,
}

#[pymethods]
impl PyEntry {
    /// Creates an entry.
    #[new]
    #[pyo3(signature = (*, term = U64(0), index = U64(0), data = None, entry_type = EnumNum(0)))]
    #[pyo3(text_signature = "(*, term=0, index=0, data=None, entry_type=0)")]
    fn new(term: U64, index: U64, data: Option<BytesArg>, entry_type: EnumNum) -> Self {
        PyEntry {
            inner: Entry {
                entry_type: EntryType(entry_type.0),
                term: term.0,
                index: index.0,
                data: data.map(|d| d.0),
            },
        }
    }

    /// What ``data`` holds (an ``EntryType``).
    #[getter]
    fn entry_type<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ENTRY_TYPE.member(py, self.inner.entry_type.0)
    }

    #[setter]
    fn set_entry_type(&mut self, v: EnumNum) {
        self.inner.entry_type = EntryType(v.0);
    }

    /// The term in which the entry was proposed.
    #[getter]
    fn term(&self) -> u64 {
        self.inner.term
    }

    #[setter]
    fn set_term(&mut self, v: U64) {
        self.inner.term = v.0;
    }

    /// The entry's position in the log.
    #[getter]
    fn index(&self) -> u64 {
        self.inner.index
    }

    #[setter]
    fn set_index(&mut self, v: U64) {
        self.inner.index = v.0;
    }

    /// The payload (empty bytes when absent).
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        py_bytes(py, self.inner.data())
    }

    #[setter]
    fn set_data(&mut self, v: Option<BytesArg>) {
        self.inner.data = v.map(|d| d.0);
    }

    /// The configuration change carried by a conf-change entry, as a
    /// ``ConfChange`` (``EntryType.CONF_CHANGE``) or ``ConfChangeV2``
    /// (``EntryType.CONF_CHANGE_V2``).
    ///
    /// Raises ``DecodeError`` for a normal entry or a malformed payload.
    fn conf_change(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match ConfChangeI::from_entry(&self.inner).py()? {
            ConfChangeI::V1(cc) => Ok(Py::new(py, PyConfChange { inner: cc })?.into_any()),
            ConfChangeI::V2(cc) => Ok(Py::new(py, PyConfChangeV2 { inner: cc })?.into_any()),
        }
    }

    /// The raftpb encoding (as etcd v3.6 writes it).
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        encode(py, &self.inner)
    }

    /// Decodes raftpb bytes; raises ``DecodeError`` when they are malformed.
    #[staticmethod]
    fn decode(data: BytesArg) -> PyResult<Self> {
        Ok(PyEntry {
            inner: decode(data)?,
        })
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let t = self.inner.entry_type;
        format!(
            "Entry(term={}, index={}, entry_type={}, data={})",
            self.inner.term,
            self.inner.index,
            enum_repr("EntryType", t.name(), t.0),
            repr_bytes(py, self.inner.data.as_ref())
        )
    }

    /// etcd's one-line description (``DescribeEntry``).
    fn __str__(&self) -> String {
        raftlet::describe::describe_entry(&self.inner)
    }
}

// ---------------------------------------------------------------------------
// HardState
// ---------------------------------------------------------------------------

/// The state a node must persist before it sends messages (raftpb
/// ``HardState``): term, vote and commit index.
#[pyclass(module = "raftlet._raftlet", name = "HardState", eq)]
#[derive(Clone, PartialEq)]
pub struct PyHardState {
    pub inner: HardState,
}

#[pymethods]
impl PyHardState {
    /// Creates a hard state.
    #[new]
    #[pyo3(signature = (*, term = U64(0), vote = U64(0), commit = U64(0)))]
    #[pyo3(text_signature = "(*, term=0, vote=0, commit=0)")]
    fn new(term: U64, vote: U64, commit: U64) -> Self {
        PyHardState {
            inner: HardState {
                term: term.0,
                vote: vote.0,
                commit: commit.0,
            },
        }
    }

    /// The current term.
    #[getter]
    fn term(&self) -> u64 {
        self.inner.term
    }

    #[setter]
    fn set_term(&mut self, v: U64) {
        self.inner.term = v.0;
    }

    /// Whom the node voted for in ``term`` (0 for nobody).
    #[getter]
    fn vote(&self) -> u64 {
        self.inner.vote
    }

    #[setter]
    fn set_vote(&mut self, v: U64) {
        self.inner.vote = v.0;
    }

    /// The highest index known to be committed.
    #[getter]
    fn commit(&self) -> u64 {
        self.inner.commit
    }

    #[setter]
    fn set_commit(&mut self, v: U64) {
        self.inner.commit = v.0;
    }

    /// Whether every field is zero.
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The raftpb encoding (as etcd v3.6 writes it).
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        encode(py, &self.inner)
    }

    /// Decodes raftpb bytes; raises ``DecodeError`` when they are malformed.
    #[staticmethod]
    fn decode(data: BytesArg) -> PyResult<Self> {
        Ok(PyHardState {
            inner: decode(data)?,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "HardState(term={}, vote={}, commit={})",
            self.inner.term, self.inner.vote, self.inner.commit
        )
    }
}

// ---------------------------------------------------------------------------
// ConfState
// ---------------------------------------------------------------------------

/// A cluster configuration (raftpb ``ConfState``): voters, learners and,
/// during a joint change, the outgoing voters.
#[pyclass(module = "raftlet._raftlet", name = "ConfState", eq)]
#[derive(Clone, PartialEq)]
pub struct PyConfState {
    pub inner: ConfState,
}

#[pymethods]
impl PyConfState {
    /// Creates a configuration.
    #[new]
    #[pyo3(signature = (*, voters = Ids::default(), learners = Ids::default(), voters_outgoing = Ids::default(), learners_next = Ids::default(), auto_leave = false))]
    #[pyo3(
        text_signature = "(*, voters=(), learners=(), voters_outgoing=(), learners_next=(), auto_leave=False)"
    )]
    fn new(
        voters: Ids,
        learners: Ids,
        voters_outgoing: Ids,
        learners_next: Ids,
        auto_leave: bool,
    ) -> Self {
        PyConfState {
            inner: ConfState {
                voters: voters.0,
                learners: learners.0,
                voters_outgoing: voters_outgoing.0,
                learners_next: learners_next.0,
                auto_leave,
            },
        }
    }

    /// The voters of the incoming configuration.
    #[getter]
    fn voters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        id_list(py, self.inner.voters.iter().copied())
    }

    #[setter]
    fn set_voters(&mut self, v: Ids) {
        self.inner.voters = v.0;
    }

    /// The learners.
    #[getter]
    fn learners<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        id_list(py, self.inner.learners.iter().copied())
    }

    #[setter]
    fn set_learners(&mut self, v: Ids) {
        self.inner.learners = v.0;
    }

    /// The voters of the outgoing configuration (only in a joint configuration).
    #[getter]
    fn voters_outgoing<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        id_list(py, self.inner.voters_outgoing.iter().copied())
    }

    #[setter]
    fn set_voters_outgoing(&mut self, v: Ids) {
        self.inner.voters_outgoing = v.0;
    }

    /// Outgoing voters that become learners when the joint configuration is left.
    #[getter]
    fn learners_next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        id_list(py, self.inner.learners_next.iter().copied())
    }

    #[setter]
    fn set_learners_next(&mut self, v: Ids) {
        self.inner.learners_next = v.0;
    }

    /// Whether the joint configuration is left automatically.
    #[getter]
    fn auto_leave(&self) -> bool {
        self.inner.auto_leave
    }

    #[setter]
    fn set_auto_leave(&mut self, v: bool) {
        self.inner.auto_leave = v;
    }

    /// Whether ``other`` is the same configuration up to the order of the ids.
    fn equivalent(&self, other: PyRef<'_, PyConfState>) -> bool {
        self.inner.equivalent(&other.inner).is_ok()
    }

    /// The raftpb encoding (as etcd v3.6 writes it).
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        encode(py, &self.inner)
    }

    /// Decodes raftpb bytes; raises ``DecodeError`` when they are malformed.
    #[staticmethod]
    fn decode(data: BytesArg) -> PyResult<Self> {
        Ok(PyConfState {
            inner: decode(data)?,
        })
    }

    fn __repr__(&self) -> String {
        let c = &self.inner;
        let mut s = format!("ConfState(voters={:?}, learners={:?}", c.voters, c.learners);
        if !c.voters_outgoing.is_empty() || !c.learners_next.is_empty() || c.auto_leave {
            s.push_str(&format!(
                ", voters_outgoing={:?}, learners_next={:?}, auto_leave={}",
                c.voters_outgoing,
                c.learners_next,
                if c.auto_leave { "True" } else { "False" }
            ));
        }
        s.push(')');
        s
    }
}

// ---------------------------------------------------------------------------
// Snapshot
// ---------------------------------------------------------------------------

/// A state-machine snapshot (raftpb ``Snapshot``). The metadata is
/// flattened: ``index``, ``term`` and ``conf_state`` are attributes of the
/// snapshot itself.
#[pyclass(module = "raftlet._raftlet", name = "Snapshot", eq)]
#[derive(Clone, PartialEq)]
pub struct PySnapshot {
    pub inner: Snapshot,
}

#[pymethods]
impl PySnapshot {
    /// Creates a snapshot.
    #[new]
    #[pyo3(signature = (*, data = None, index = U64(0), term = U64(0), conf_state = None))]
    #[pyo3(text_signature = "(*, data=None, index=0, term=0, conf_state=None)")]
    fn new(
        data: Option<BytesArg>,
        index: U64,
        term: U64,
        conf_state: Option<PyRef<'_, PyConfState>>,
    ) -> Self {
        PySnapshot {
            inner: Snapshot {
                data: data.map(|d| d.0),
                metadata: SnapshotMetadata {
                    conf_state: conf_state.map(|c| c.inner.clone()).unwrap_or_default(),
                    index: index.0,
                    term: term.0,
                },
            },
        }
    }

    /// The host's serialized state machine (empty bytes when absent).
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        py_bytes(py, self.inner.data())
    }

    #[setter]
    fn set_data(&mut self, v: Option<BytesArg>) {
        self.inner.data = v.map(|d| d.0);
    }

    /// The last log index the snapshot covers.
    #[getter]
    fn index(&self) -> u64 {
        self.inner.metadata.index
    }

    #[setter]
    fn set_index(&mut self, v: U64) {
        self.inner.metadata.index = v.0;
    }

    /// The term of the entry at ``index``.
    #[getter]
    fn term(&self) -> u64 {
        self.inner.metadata.term
    }

    #[setter]
    fn set_term(&mut self, v: U64) {
        self.inner.metadata.term = v.0;
    }

    /// The configuration at ``index`` (a copy).
    #[getter]
    fn conf_state(&self) -> PyConfState {
        PyConfState {
            inner: self.inner.metadata.conf_state.clone(),
        }
    }

    #[setter]
    fn set_conf_state(&mut self, v: PyRef<'_, PyConfState>) {
        self.inner.metadata.conf_state = v.inner.clone();
    }

    /// Whether this is the empty snapshot (index 0).
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The raftpb encoding (as etcd v3.6 writes it).
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        encode(py, &self.inner)
    }

    /// Decodes raftpb bytes; raises ``DecodeError`` when they are malformed.
    #[staticmethod]
    fn decode(data: BytesArg) -> PyResult<Self> {
        Ok(PySnapshot {
            inner: decode(data)?,
        })
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let m = &self.inner.metadata;
        format!(
            "Snapshot(index={}, term={}, conf_state={}, data={})",
            m.index,
            m.term,
            PyConfState {
                inner: m.conf_state.clone()
            }
            .__repr__(),
            repr_bytes(py, self.inner.data.as_ref())
        )
    }
}

// ---------------------------------------------------------------------------
// Message
// ---------------------------------------------------------------------------

/// A Raft message (raftpb ``Message``). The sender is ``from_`` (``from``
/// is a Python keyword).
#[pyclass(module = "raftlet._raftlet", name = "Message", eq)]
#[derive(Clone, PartialEq)]
pub struct PyMessage {
    pub inner: Message,
}

#[pymethods]
impl PyMessage {
    /// Creates a message.
    #[new]
    #[pyo3(signature = (
        *,
        msg_type = EnumNum(0),
        to = U64(0),
        from_ = U64(0),
        term = U64(0),
        log_term = U64(0),
        index = U64(0),
        entries = None,
        commit = U64(0),
        snapshot = None,
        reject = false,
        reject_hint = U64(0),
        context = None,
        vote = U64(0),
        responses = None,
    ))]
    #[pyo3(
        text_signature = "(*, msg_type=0, to=0, from_=0, term=0, log_term=0, index=0, entries=(), commit=0, snapshot=None, reject=False, reject_hint=0, context=None, vote=0, responses=())"
    )]
    #[allow(
        clippy::too_many_arguments,
        reason = "one keyword argument per raftpb field"
    )]
    fn new(
        msg_type: EnumNum,
        to: U64,
        from_: U64,
        term: U64,
        log_term: U64,
        index: U64,
        entries: Option<&Bound<'_, PyAny>>,
        commit: U64,
        snapshot: Option<PyRef<'_, PySnapshot>>,
        reject: bool,
        reject_hint: U64,
        context: Option<BytesArg>,
        vote: U64,
        responses: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let entries = match entries {
            Some(e) => extract_each::<PyEntry, _>(e, "Entry", |e| e.inner.clone())?,
            None => Vec::new(),
        };
        let responses = match responses {
            Some(r) => extract_each::<PyMessage, _>(r, "Message", |m| m.inner.clone())?,
            None => Vec::new(),
        };
        Ok(PyMessage {
            inner: Message {
                msg_type: MessageType(msg_type.0),
                to: to.0,
                from: from_.0,
                term: term.0,
                log_term: log_term.0,
                index: index.0,
                entries,
                commit: commit.0,
                snapshot: snapshot.map(|s| Box::new(s.inner.clone())),
                reject,
                reject_hint: reject_hint.0,
                context: context.map(|c| c.0),
                vote: vote.0,
                responses,
            },
        })
    }

    /// What kind of message this is (a ``MessageType``).
    #[getter]
    fn msg_type<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        MESSAGE_TYPE.member(py, self.inner.msg_type.0)
    }

    #[setter]
    fn set_msg_type(&mut self, v: EnumNum) {
        self.inner.msg_type = MessageType(v.0);
    }

    /// The recipient's id.
    #[getter]
    fn to(&self) -> u64 {
        self.inner.to
    }

    #[setter]
    fn set_to(&mut self, v: U64) {
        self.inner.to = v.0;
    }

    /// The sender's id.
    #[getter]
    fn from_(&self) -> u64 {
        self.inner.from
    }

    #[setter]
    fn set_from_(&mut self, v: U64) {
        self.inner.from = v.0;
    }

    /// The sender's term (0 for local messages).
    #[getter]
    fn term(&self) -> u64 {
        self.inner.term
    }

    #[setter]
    fn set_term(&mut self, v: U64) {
        self.inner.term = v.0;
    }

    /// The term of the entry at ``index`` (appends), the candidate's last
    /// term (votes) or a hint (rejections).
    #[getter]
    fn log_term(&self) -> u64 {
        self.inner.log_term
    }

    #[setter]
    fn set_log_term(&mut self, v: U64) {
        self.inner.log_term = v.0;
    }

    /// An index whose meaning depends on the type.
    #[getter]
    fn index(&self) -> u64 {
        self.inner.index
    }

    #[setter]
    fn set_index(&mut self, v: U64) {
        self.inner.index = v.0;
    }

    /// The entries carried by appends and proposals (a new list of copies).
    #[getter]
    fn entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        entry_list(py, self.inner.entries.clone())
    }

    #[setter]
    fn set_entries(&mut self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.entries = extract_each::<PyEntry, _>(v, "Entry", |e| e.inner.clone())?;
        Ok(())
    }

    /// The sender's commit index.
    #[getter]
    fn commit(&self) -> u64 {
        self.inner.commit
    }

    #[setter]
    fn set_commit(&mut self, v: U64) {
        self.inner.commit = v.0;
    }

    /// The snapshot of a ``MSG_SNAP`` (a copy), or ``None``.
    #[getter]
    fn snapshot(&self) -> Option<PySnapshot> {
        self.inner.snapshot.as_ref().map(|s| PySnapshot {
            inner: (**s).clone(),
        })
    }

    #[setter]
    fn set_snapshot(&mut self, v: Option<PyRef<'_, PySnapshot>>) {
        self.inner.snapshot = v.map(|s| Box::new(s.inner.clone()));
    }

    /// Whether a response rejects the request.
    #[getter]
    fn reject(&self) -> bool {
        self.inner.reject
    }

    #[setter]
    fn set_reject(&mut self, v: bool) {
        self.inner.reject = v;
    }

    /// The rejecting follower's hint for the leader's next probe.
    #[getter]
    fn reject_hint(&self) -> u64 {
        self.inner.reject_hint
    }

    #[setter]
    fn set_reject_hint(&mut self, v: U64) {
        self.inner.reject_hint = v.0;
    }

    /// Opaque context (read requests, campaign types); empty when absent.
    #[getter]
    fn context<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        py_bytes(py, self.inner.context())
    }

    #[setter]
    fn set_context(&mut self, v: Option<BytesArg>) {
        self.inner.context = v.map(|c| c.0);
    }

    /// Carried for etcd interop (its asynchronous storage messages).
    #[getter]
    fn vote(&self) -> u64 {
        self.inner.vote
    }

    #[setter]
    fn set_vote(&mut self, v: U64) {
        self.inner.vote = v.0;
    }

    /// Carried for etcd interop (its asynchronous storage messages).
    #[getter]
    fn responses<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        message_list(py, self.inner.responses.clone())
    }

    #[setter]
    fn set_responses(&mut self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.responses = extract_each::<PyMessage, _>(v, "Message", |m| m.inner.clone())?;
        Ok(())
    }

    /// The raftpb encoding (as etcd v3.6 writes it): what a transport sends.
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        encode(py, &self.inner)
    }

    /// Decodes raftpb bytes; raises ``DecodeError`` when they are malformed.
    #[staticmethod]
    fn decode(data: BytesArg) -> PyResult<Self> {
        Ok(PyMessage {
            inner: decode(data)?,
        })
    }

    fn __repr__(&self) -> String {
        let m = &self.inner;
        let mut s = format!(
            "Message(msg_type={}, from_={}, to={}, term={}, log_term={}, index={}, commit={}",
            enum_repr("MessageType", m.msg_type.name(), m.msg_type.0),
            m.from,
            m.to,
            m.term,
            m.log_term,
            m.index,
            m.commit
        );
        if !m.entries.is_empty() {
            s.push_str(&format!(", entries=<{} entries>", m.entries.len()));
        }
        if m.snapshot.is_some() {
            s.push_str(", snapshot=<Snapshot>");
        }
        if m.reject {
            s.push_str(&format!(", reject=True, reject_hint={}", m.reject_hint));
        }
        s.push(')');
        s
    }

    /// etcd's one-line description (``DescribeMessage``).
    fn __str__(&self) -> String {
        raftlet::describe::describe_message(&self.inner)
    }
}

// ---------------------------------------------------------------------------
// Configuration changes
// ---------------------------------------------------------------------------

/// A single-member configuration change (raftpb ``ConfChange``).
#[pyclass(module = "raftlet._raftlet", name = "ConfChange", eq)]
#[derive(Clone, PartialEq)]
pub struct PyConfChange {
    pub inner: ConfChange,
}

#[pymethods]
impl PyConfChange {
    /// Creates a change of ``node_id``.
    #[new]
    #[pyo3(signature = (*, change_type = EnumNum(0), node_id = U64(0), context = None, id = U64(0)))]
    #[pyo3(text_signature = "(*, change_type=0, node_id=0, context=None, id=0)")]
    fn new(change_type: EnumNum, node_id: U64, context: Option<BytesArg>, id: U64) -> Self {
        PyConfChange {
            inner: ConfChange {
                id: id.0,
                change_type: ConfChangeType(change_type.0),
                node_id: node_id.0,
                context: context.map(|c| c.0),
            },
        }
    }

    /// What to do with ``node_id`` (a ``ConfChangeType``).
    #[getter]
    fn change_type<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        CONF_CHANGE_TYPE.member(py, self.inner.change_type.0)
    }

    #[setter]
    fn set_change_type(&mut self, v: EnumNum) {
        self.inner.change_type = ConfChangeType(v.0);
    }

    /// The member concerned.
    #[getter]
    fn node_id(&self) -> u64 {
        self.inner.node_id
    }

    #[setter]
    fn set_node_id(&mut self, v: U64) {
        self.inner.node_id = v.0;
    }

    /// Opaque host data (for example the new member's address); empty when absent.
    #[getter]
    fn context<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        py_bytes(py, self.inner.context.as_deref().unwrap_or(&[]))
    }

    #[setter]
    fn set_context(&mut self, v: Option<BytesArg>) {
        self.inner.context = v.map(|c| c.0);
    }

    /// Unused by raft; carried for compatibility.
    #[getter]
    fn id(&self) -> u64 {
        self.inner.id
    }

    #[setter]
    fn set_id(&mut self, v: U64) {
        self.inner.id = v.0;
    }

    /// This change as a ``ConfChangeV2``.
    fn as_v2(&self) -> PyConfChangeV2 {
        PyConfChangeV2 {
            inner: self.inner.as_v2(),
        }
    }

    /// The raftpb encoding (as etcd v3.6 writes it).
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        encode(py, &self.inner)
    }

    /// Decodes raftpb bytes; raises ``DecodeError`` when they are malformed.
    #[staticmethod]
    fn decode(data: BytesArg) -> PyResult<Self> {
        Ok(PyConfChange {
            inner: decode(data)?,
        })
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let t = self.inner.change_type;
        format!(
            "ConfChange(change_type={}, node_id={}, context={})",
            enum_repr("ConfChangeType", t.name(), t.0),
            self.inner.node_id,
            repr_bytes(py, self.inner.context.as_ref())
        )
    }
}

/// One change within a ``ConfChangeV2`` (raftpb ``ConfChangeSingle``).
#[pyclass(module = "raftlet._raftlet", name = "ConfChangeSingle", eq)]
#[derive(Clone, PartialEq)]
pub struct PyConfChangeSingle {
    pub inner: ConfChangeSingle,
}

#[pymethods]
impl PyConfChangeSingle {
    /// Creates a change of ``node_id``.
    #[new]
    #[pyo3(signature = (*, change_type = EnumNum(0), node_id = U64(0)))]
    #[pyo3(text_signature = "(*, change_type=0, node_id=0)")]
    fn new(change_type: EnumNum, node_id: U64) -> Self {
        PyConfChangeSingle {
            inner: ConfChangeSingle::new(ConfChangeType(change_type.0), node_id.0),
        }
    }

    /// What to do with ``node_id`` (a ``ConfChangeType``).
    #[getter]
    fn change_type<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        CONF_CHANGE_TYPE.member(py, self.inner.change_type.0)
    }

    #[setter]
    fn set_change_type(&mut self, v: EnumNum) {
        self.inner.change_type = ConfChangeType(v.0);
    }

    /// The member concerned.
    #[getter]
    fn node_id(&self) -> u64 {
        self.inner.node_id
    }

    #[setter]
    fn set_node_id(&mut self, v: U64) {
        self.inner.node_id = v.0;
    }

    /// The raftpb encoding (as etcd v3.6 writes it).
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        encode(py, &self.inner)
    }

    /// Decodes raftpb bytes; raises ``DecodeError`` when they are malformed.
    #[staticmethod]
    fn decode(data: BytesArg) -> PyResult<Self> {
        Ok(PyConfChangeSingle {
            inner: decode(data)?,
        })
    }

    fn __repr__(&self) -> String {
        let t = self.inner.change_type;
        format!(
            "ConfChangeSingle(change_type={}, node_id={})",
            enum_repr("ConfChangeType", t.name(), t.0),
            self.inner.node_id
        )
    }
}

/// A change of several members at once, possibly through joint consensus
/// (raftpb ``ConfChangeV2``). An empty one leaves a joint configuration.
#[pyclass(module = "raftlet._raftlet", name = "ConfChangeV2", eq)]
#[derive(Clone, PartialEq)]
pub struct PyConfChangeV2 {
    pub inner: ConfChangeV2,
}

#[pymethods]
impl PyConfChangeV2 {
    /// Creates a change.
    #[new]
    #[pyo3(signature = (*, changes = None, transition = EnumNum(0), context = None))]
    #[pyo3(text_signature = "(*, changes=(), transition=0, context=None)")]
    fn new(
        changes: Option<&Bound<'_, PyAny>>,
        transition: EnumNum,
        context: Option<BytesArg>,
    ) -> PyResult<Self> {
        let changes = match changes {
            Some(c) => extract_each::<PyConfChangeSingle, _>(c, "ConfChangeSingle", |c| c.inner)?,
            None => Vec::new(),
        };
        Ok(PyConfChangeV2 {
            inner: ConfChangeV2 {
                transition: ConfChangeTransition(transition.0),
                changes,
                context: context.map(|c| c.0),
            },
        })
    }

    /// How joint consensus is used (a ``ConfChangeTransition``).
    #[getter]
    fn transition<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        CONF_CHANGE_TRANSITION.member(py, self.inner.transition.0)
    }

    #[setter]
    fn set_transition(&mut self, v: EnumNum) {
        self.inner.transition = ConfChangeTransition(v.0);
    }

    /// The changes, applied in order (a new list of copies).
    #[getter]
    fn changes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            self.inner
                .changes
                .iter()
                .map(|c| PyConfChangeSingle { inner: *c }),
        )
    }

    #[setter]
    fn set_changes(&mut self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.changes =
            extract_each::<PyConfChangeSingle, _>(v, "ConfChangeSingle", |c| c.inner)?;
        Ok(())
    }

    /// Opaque host data; empty when absent.
    #[getter]
    fn context<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        py_bytes(py, self.inner.context.as_deref().unwrap_or(&[]))
    }

    #[setter]
    fn set_context(&mut self, v: Option<BytesArg>) {
        self.inner.context = v.map(|c| c.0);
    }

    /// ``(auto_leave, uses_joint)``: whether the change goes through a joint
    /// configuration and, if so, whether that is left automatically.
    fn enter_joint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let (auto_leave, joint) = self.inner.enter_joint();
        PyTuple::new(py, [auto_leave, joint])
    }

    /// Whether this is the empty change that leaves a joint configuration.
    fn leave_joint(&self) -> bool {
        self.inner.leave_joint()
    }

    /// The raftpb encoding (as etcd v3.6 writes it).
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        encode(py, &self.inner)
    }

    /// Decodes raftpb bytes; raises ``DecodeError`` when they are malformed.
    #[staticmethod]
    fn decode(data: BytesArg) -> PyResult<Self> {
        Ok(PyConfChangeV2 {
            inner: decode(data)?,
        })
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let t = self.inner.transition;
        let changes: Vec<String> = self
            .inner
            .changes
            .iter()
            .map(|c| PyConfChangeSingle { inner: *c }.__repr__())
            .collect();
        format!(
            "ConfChangeV2(changes=[{}], transition={}, context={})",
            changes.join(", "),
            enum_repr("ConfChangeTransition", t.name(), t.0),
            repr_bytes(py, self.inner.context.as_ref())
        )
    }
}

// ---------------------------------------------------------------------------
// SoftState and ReadState
// ---------------------------------------------------------------------------

/// Who leads and this node's role; in a Ready only when it changed.
#[pyclass(frozen, module = "raftlet._raftlet", name = "SoftState", eq)]
#[derive(Clone, PartialEq)]
pub struct PySoftState {
    pub inner: SoftState,
}

/// Parses a role name (`"Leader"` or etcd's `"StateLeader"`, or a
/// `StateRole` member, whose value is the former).
pub fn parse_role(obj: &Bound<'_, PyAny>) -> PyResult<StateRole> {
    let s: String = obj.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "expected a StateRole or str, got {}",
            crate::convert::type_name(obj)
        ))
    })?;
    match s.strip_prefix("State").unwrap_or(&s) {
        "Follower" => Ok(StateRole::Follower),
        "Candidate" => Ok(StateRole::Candidate),
        "Leader" => Ok(StateRole::Leader),
        "PreCandidate" => Ok(StateRole::PreCandidate),
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "expected one of 'Follower', 'Candidate', 'Leader', 'PreCandidate', got {other:?}"
        ))),
    }
}

#[pymethods]
impl PySoftState {
    /// Creates a soft state.
    #[new]
    #[pyo3(signature = (*, leader_id = U64(0), raft_state = None))]
    #[pyo3(text_signature = "(*, leader_id=0, raft_state='Follower')")]
    fn new(leader_id: U64, raft_state: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let raft_state = match raft_state {
            Some(r) => parse_role(r)?,
            None => StateRole::Follower,
        };
        Ok(PySoftState {
            inner: SoftState {
                leader_id: leader_id.0,
                raft_state,
            },
        })
    }

    /// The known leader (0 for none).
    #[getter]
    fn leader_id(&self) -> u64 {
        self.inner.leader_id
    }

    /// This node's role (a ``StateRole``).
    #[getter]
    fn raft_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        state_role(py, self.inner.raft_state)
    }

    fn __repr__(&self) -> String {
        format!(
            "SoftState(leader_id={}, raft_state={})",
            self.inner.leader_id, self.inner.raft_state
        )
    }
}

/// The answer to a ``read_index`` request: once the host has applied up to
/// ``index``, a read carrying ``request_ctx`` is linearizable.
#[pyclass(frozen, module = "raftlet._raftlet", name = "ReadState", eq)]
#[derive(Clone, PartialEq)]
pub struct PyReadState {
    pub inner: ReadState,
}

#[pymethods]
impl PyReadState {
    /// Creates a read state.
    #[new]
    #[pyo3(signature = (*, index = U64(0), request_ctx = None))]
    #[pyo3(text_signature = "(*, index=0, request_ctx=b'')")]
    fn new(index: U64, request_ctx: Option<BytesArg>) -> Self {
        PyReadState {
            inner: ReadState {
                index: index.0,
                request_ctx: request_ctx.map(|c| c.0).unwrap_or_default(),
            },
        }
    }

    /// The commit index at the time the read was confirmed.
    #[getter]
    fn index(&self) -> u64 {
        self.inner.index
    }

    /// The context passed to ``read_index``.
    #[getter]
    fn request_ctx<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        py_bytes(py, &self.inner.request_ctx)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "ReadState(index={}, request_ctx={})",
            self.inner.index,
            repr_bytes(py, Some(&self.inner.request_ctx))
        )
    }
}
