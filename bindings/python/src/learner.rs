//! The learner lifecycle's value types: [`PyMembershipEvent`] (in
//! ``Ready.membership_events``), [`PyLearnerStatus`] and
//! [`PyNotPromotable`] (in ``Status.learners``) and [`PyLocalRead`]
//! (``RawNode.read_local()``).

use pyo3::prelude::*;
use raftlet::{LearnerStatus, LocalRead, MembershipEvent, NotPromotable};

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// A membership change the leader proposed by itself (``Config.auto_promote``
/// or ``Config.standby_promotion``), reported so that the host can log it.
/// It takes effect like any other change once committed and applied.
#[pyclass(frozen, module = "raftlet._raftlet", name = "MembershipEvent", eq)]
#[derive(Clone, PartialEq)]
pub struct PyMembershipEvent {
    pub inner: MembershipEvent,
}

#[pymethods]
impl PyMembershipEvent {
    /// ``"PromotionProposed"`` (learner ``id`` becomes a voter) or
    /// ``"StandbySwapProposed"`` (learner ``promoted`` replaces the silent
    /// voter ``demoted``, which becomes a learner, in one joint change).
    #[getter]
    fn kind(&self) -> &'static str {
        match self.inner {
            MembershipEvent::PromotionProposed { .. } => "PromotionProposed",
            MembershipEvent::StandbySwapProposed { .. } => "StandbySwapProposed",
        }
    }

    /// The learner being promoted (the same as ``promoted``).
    #[getter]
    fn id(&self) -> u64 {
        self.promoted()
    }

    /// The learner becoming a voter.
    #[getter]
    fn promoted(&self) -> u64 {
        match self.inner {
            MembershipEvent::PromotionProposed { id, .. } => id,
            MembershipEvent::StandbySwapProposed { promoted, .. } => promoted,
        }
    }

    /// The voter becoming a learner (0 for a plain promotion).
    #[getter]
    fn demoted(&self) -> u64 {
        match self.inner {
            MembershipEvent::PromotionProposed { .. } => 0,
            MembershipEvent::StandbySwapProposed { demoted, .. } => demoted,
        }
    }

    /// The index of the conf-change entry the leader appended.
    #[getter]
    fn index(&self) -> u64 {
        match self.inner {
            MembershipEvent::PromotionProposed { index, .. }
            | MembershipEvent::StandbySwapProposed { index, .. } => index,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "MembershipEvent(kind='{}', id={}, promoted={}, demoted={}, index={})",
            self.kind(),
            self.id(),
            self.promoted(),
            self.demoted(),
            self.index()
        )
    }
}

/// Why a learner cannot be promoted now (``LearnerStatus.not_promotable``).
#[pyclass(frozen, module = "raftlet._raftlet", name = "NotPromotable", eq)]
#[derive(Clone, PartialEq)]
pub struct PyNotPromotable {
    pub inner: NotPromotable,
}

#[pymethods]
impl PyNotPromotable {
    /// ``"Lagging"`` (more than ``promote_max_lag`` entries behind),
    /// ``"InSnapshot"`` (being sent a snapshot), ``"NotActiveLongEnough"``
    /// (not answering in enough consecutive check-quorum rounds),
    /// ``"ConfChangePending"`` or ``"TransferInProgress"``.
    #[getter]
    fn reason(&self) -> &'static str {
        match self.inner {
            NotPromotable::Lagging { .. } => "Lagging",
            NotPromotable::InSnapshot => "InSnapshot",
            NotPromotable::NotActiveLongEnough { .. } => "NotActiveLongEnough",
            NotPromotable::ConfChangePending => "ConfChangePending",
            NotPromotable::TransferInProgress => "TransferInProgress",
        }
    }

    /// For ``"Lagging"``: entries behind the leader's last index; else ``None``.
    #[getter]
    fn lag(&self) -> Option<u64> {
        match self.inner {
            NotPromotable::Lagging { lag, .. } => Some(lag),
            _ => None,
        }
    }

    /// For ``"Lagging"``: the threshold ``promote_max_lag``; else ``None``.
    #[getter]
    fn max_lag(&self) -> Option<u64> {
        match self.inner {
            NotPromotable::Lagging { max, .. } => Some(max),
            _ => None,
        }
    }

    /// For ``"NotActiveLongEnough"``: consecutive rounds it answered in;
    /// else ``None``.
    #[getter]
    fn active_rounds(&self) -> Option<u16> {
        match self.inner {
            NotPromotable::NotActiveLongEnough { active_rounds, .. } => Some(active_rounds),
            _ => None,
        }
    }

    /// For ``"NotActiveLongEnough"``: the rounds required
    /// (``promote_min_active_rounds``); else ``None``.
    #[getter]
    fn needed(&self) -> Option<u32> {
        match self.inner {
            NotPromotable::NotActiveLongEnough { needed, .. } => Some(needed),
            _ => None,
        }
    }

    /// A sentence for a log or a dashboard.
    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "NotPromotable(reason='{}', {:?})",
            self.reason(),
            self.__str__()
        )
    }
}

/// A learner as the leader sees it (``Status.learners``): how far behind,
/// how active, and whether it could be promoted now.
#[pyclass(frozen, module = "raftlet._raftlet", name = "LearnerStatus")]
pub struct PyLearnerStatus {
    pub inner: LearnerStatus,
}

#[pymethods]
impl PyLearnerStatus {
    /// The learner's id.
    #[getter]
    fn id(&self) -> u64 {
        self.inner.id
    }

    /// Entries behind the leader's last index.
    #[getter]
    fn lag(&self) -> u64 {
        self.inner.lag
    }

    /// Whether it answered in the current check-quorum round.
    #[getter]
    fn recent_active(&self) -> bool {
        self.inner.recent_active
    }

    /// Consecutive check-quorum rounds it answered in.
    #[getter]
    fn active_rounds(&self) -> u16 {
        self.inner.active_rounds
    }

    /// How the leader replicates to it: ``"StateProbe"``,
    /// ``"StateReplicate"`` or ``"StateSnapshot"`` (as ``Progress.state``).
    #[getter]
    fn state(&self) -> String {
        self.inner.state.to_string()
    }

    /// ``None`` when it could be promoted now, else why not.
    #[getter]
    fn not_promotable(&self) -> Option<PyNotPromotable> {
        self.inner
            .not_promotable
            .map(|inner| PyNotPromotable { inner })
    }

    /// Whether it could be promoted now (``not_promotable is None``).
    #[getter]
    fn promotable(&self) -> bool {
        self.inner.not_promotable.is_none()
    }

    fn __repr__(&self) -> String {
        let l = &self.inner;
        format!(
            "LearnerStatus(id={}, lag={}, recent_active={}, active_rounds={}, state={}, not_promotable={})",
            l.id,
            l.lag,
            py_bool(l.recent_active),
            l.active_rounds,
            l.state,
            match l.not_promotable {
                None => "None".to_string(),
                Some(b) => format!("{:?}", b.to_string()),
            }
        )
    }
}

/// The answer to ``RawNode.read_local()``: what a weak read sees and how
/// stale it may be.
#[pyclass(frozen, module = "raftlet._raftlet", name = "LocalRead", eq)]
#[derive(Clone, PartialEq)]
pub struct PyLocalRead {
    pub inner: LocalRead,
}

#[pymethods]
impl PyLocalRead {
    /// The last index the host reported applied: serve the read from the
    /// state machine as of this index.
    #[getter]
    fn applied(&self) -> u64 {
        self.inner.applied
    }

    /// The highest index this node knows committed (``commit - applied``
    /// is how far behind the answer is by this node's knowledge).
    #[getter]
    fn commit(&self) -> u64 {
        self.inner.commit
    }

    /// The leader this node knows (0 for none).
    #[getter]
    fn leader(&self) -> u64 {
        self.inner.leader
    }

    fn __repr__(&self) -> String {
        let l = &self.inner;
        format!(
            "LocalRead(applied={}, commit={}, leader={})",
            l.applied, l.commit, l.leader
        )
    }
}
