//! [`PyStatus`], [`PyBasicStatus`] and [`PyProgress`]: snapshots of a
//! node's state.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use raftlet::pb::ConfState;
use raftlet::tracker::Progress;
use raftlet::{BasicStatus, Status};

use crate::convert::{id_list, state_role};
use crate::learner::PyLearnerStatus;
use crate::types::{PyConfState, PyHardState, PySoftState};

/// The leader's view of one peer's log (etcd ``tracker.Progress``), as of
/// the ``status()`` call.
#[pyclass(frozen, module = "raftlet._raftlet", name = "Progress")]
pub struct PyProgress {
    inner: Progress,
}

#[pymethods]
impl PyProgress {
    /// The highest index known to match the leader's log.
    #[getter]
    fn matched(&self) -> u64 {
        self.inner.matched
    }

    /// The index of the next entry to send.
    #[getter]
    fn next(&self) -> u64 {
        self.inner.next
    }

    /// The replication state: ``"StateProbe"``, ``"StateReplicate"`` or
    /// ``"StateSnapshot"`` (etcd's names).
    #[getter]
    fn state(&self) -> String {
        self.inner.state.to_string()
    }

    /// In ``StateSnapshot``: the index of the snapshot being sent (else 0).
    #[getter]
    fn pending_snapshot(&self) -> u64 {
        self.inner.pending_snapshot
    }

    /// Whether the leader heard from the peer recently.
    #[getter]
    fn recent_active(&self) -> bool {
        self.inner.recent_active
    }

    /// Whether appends to the peer are throttled.
    #[getter]
    fn msg_app_flow_paused(&self) -> bool {
        self.inner.msg_app_flow_paused
    }

    /// Whether the peer is a learner.
    #[getter]
    fn is_learner(&self) -> bool {
        self.inner.is_learner
    }

    /// The highest commit index sent to the peer.
    #[getter]
    fn sent_commit(&self) -> u64 {
        self.inner.sent_commit
    }

    /// The number of append messages in flight to the peer.
    #[getter]
    fn inflight(&self) -> usize {
        self.inner.inflights.count()
    }

    fn __repr__(&self) -> String {
        let p = &self.inner;
        format!(
            "Progress(state={}, matched={}, next={}, recent_active={}, is_learner={})",
            p.state,
            p.matched,
            p.next,
            if p.recent_active { "True" } else { "False" },
            if p.is_learner { "True" } else { "False" },
        )
    }
}

/// The cheap part of a node's state (etcd ``BasicStatus``), taken by
/// ``RawNode.basic_status()``: a handful of numbers copied under the node's
/// lock, no configuration and no progress.
#[pyclass(frozen, module = "raftlet._raftlet", name = "BasicStatus", eq)]
#[derive(Clone, PartialEq)]
pub struct PyBasicStatus {
    pub inner: BasicStatus,
}

#[pymethods]
impl PyBasicStatus {
    /// The node's id.
    #[getter]
    fn id(&self) -> u64 {
        self.inner.id
    }

    /// The current term.
    #[getter]
    fn term(&self) -> u64 {
        self.inner.hard_state.term
    }

    /// Whom the node voted for in this term (0 for nobody).
    #[getter]
    fn vote(&self) -> u64 {
        self.inner.hard_state.vote
    }

    /// The commit index.
    #[getter]
    fn commit(&self) -> u64 {
        self.inner.hard_state.commit
    }

    /// The known leader (0 for none).
    #[getter]
    fn leader_id(&self) -> u64 {
        self.inner.soft_state.leader_id
    }

    /// The node's role (a ``StateRole``, a ``str``: ``raft_state == "Leader"``).
    #[getter]
    fn raft_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        state_role(py, self.inner.soft_state.raft_state)
    }

    /// The last index the host reported applied.
    #[getter]
    fn applied(&self) -> u64 {
        self.inner.applied
    }

    /// The target of a leader transfer under way (0 for none).
    #[getter]
    fn lead_transferee(&self) -> u64 {
        self.inner.lead_transferee
    }

    /// Term, vote and commit.
    #[getter]
    fn hard_state(&self) -> PyHardState {
        PyHardState {
            inner: self.inner.hard_state,
        }
    }

    /// Leader and role.
    #[getter]
    fn soft_state(&self) -> PySoftState {
        PySoftState {
            inner: self.inner.soft_state,
        }
    }

    fn __repr__(&self) -> String {
        let b = &self.inner;
        format!(
            "BasicStatus(id={}, raft_state={}, term={}, vote={}, commit={}, applied={}, leader_id={}, lead_transferee={})",
            b.id,
            b.soft_state.raft_state,
            b.hard_state.term,
            b.hard_state.vote,
            b.hard_state.commit,
            b.applied,
            b.soft_state.leader_id,
            b.lead_transferee
        )
    }
}

/// A snapshot of a node's state: hard and soft state, applied index,
/// configuration and, on the leader, every peer's ``Progress``.
#[pyclass(frozen, module = "raftlet._raftlet", name = "Status")]
pub struct PyStatus {
    pub inner: Status,
}

#[pymethods]
impl PyStatus {
    /// The node's id.
    #[getter]
    fn id(&self) -> u64 {
        self.inner.basic.id
    }

    /// The current term.
    #[getter]
    fn term(&self) -> u64 {
        self.inner.basic.hard_state.term
    }

    /// Whom the node voted for in this term (0 for nobody).
    #[getter]
    fn vote(&self) -> u64 {
        self.inner.basic.hard_state.vote
    }

    /// The commit index.
    #[getter]
    fn commit(&self) -> u64 {
        self.inner.basic.hard_state.commit
    }

    /// The known leader (0 for none).
    #[getter]
    fn leader_id(&self) -> u64 {
        self.inner.basic.soft_state.leader_id
    }

    /// The node's role (a ``StateRole``, a ``str``: ``status.raft_state == "Leader"``).
    #[getter]
    fn raft_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        state_role(py, self.inner.basic.soft_state.raft_state)
    }

    /// The last index the host reported applied.
    #[getter]
    fn applied(&self) -> u64 {
        self.inner.basic.applied
    }

    /// The target of a leader transfer under way (0 for none).
    #[getter]
    fn lead_transferee(&self) -> u64 {
        self.inner.basic.lead_transferee
    }

    /// Term, vote and commit.
    #[getter]
    fn hard_state(&self) -> PyHardState {
        PyHardState {
            inner: self.inner.basic.hard_state,
        }
    }

    /// Leader and role.
    #[getter]
    fn soft_state(&self) -> PySoftState {
        PySoftState {
            inner: self.inner.basic.soft_state,
        }
    }

    /// The voters (of the incoming configuration), sorted.
    #[getter]
    fn voters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        id_list(py, self.inner.config.voters.incoming.iter().copied())
    }

    /// The voters of the outgoing configuration (only during a joint change).
    #[getter]
    fn voters_outgoing<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        id_list(py, self.inner.config.voters.outgoing.iter().copied())
    }

    /// The learners, sorted.
    #[getter]
    fn learners<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        id_list(py, self.inner.config.learners.iter().copied())
    }

    /// Voters that become learners when the joint configuration is left.
    #[getter]
    fn learners_next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        id_list(py, self.inner.config.learners_next.iter().copied())
    }

    /// Whether the joint configuration is left automatically.
    #[getter]
    fn auto_leave(&self) -> bool {
        self.inner.config.auto_leave
    }

    /// The configuration as a ``ConfState``.
    #[getter]
    fn conf_state(&self) -> PyConfState {
        let c = &self.inner.config;
        PyConfState {
            inner: ConfState {
                voters: c.voters.incoming.iter().copied().collect(),
                learners: c.learners.iter().copied().collect(),
                voters_outgoing: c.voters.outgoing.iter().copied().collect(),
                learners_next: c.learners_next.iter().copied().collect(),
                auto_leave: c.auto_leave,
            },
        }
    }

    /// Every peer's ``Progress`` by id (the node itself included); empty
    /// unless this node leads.
    #[getter]
    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (id, pr) in &self.inner.progress {
            d.set_item(id, PyProgress { inner: pr.clone() })?;
        }
        Ok(d)
    }

    /// Every learner as the leader sees it (``LearnerStatus`` objects, by
    /// ascending id): lag, activity and whether it could be promoted now;
    /// empty unless this node leads. (``learners`` lists the learners' ids.)
    #[getter]
    fn learner_status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            self.inner
                .learners
                .iter()
                .map(|l| PyLearnerStatus { inner: l.clone() }),
        )
    }

    /// The status as JSON, in the shape of etcd's ``Status.MarshalJSON``
    /// (ids in hex), with the learners added.
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    fn __repr__(&self) -> String {
        let b = &self.inner.basic;
        format!(
            "Status(id={}, raft_state={}, term={}, vote={}, commit={}, applied={}, leader_id={})",
            b.id,
            b.soft_state.raft_state,
            b.hard_state.term,
            b.hard_state.vote,
            b.hard_state.commit,
            b.applied,
            b.soft_state.leader_id
        )
    }
}
