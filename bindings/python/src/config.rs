//! [`PyConfig`]: the parameters of one node, with the core's names and
//! defaults.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use raftlet::{Config, ReadOnlyOption};

use crate::convert::{type_name, Usize, READ_ONLY_OPTION, U32, U64};
use crate::errors::IntoPy;

/// Parses `"Safe"` / `"LeaseBased"` (or etcd's `"ReadOnlySafe"` /
/// `"ReadOnlyLeaseBased"`, or a `ReadOnlyOption` member).
fn parse_read_only(obj: &Bound<'_, PyAny>) -> PyResult<ReadOnlyOption> {
    let s: String = obj.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "read_only_option: expected a ReadOnlyOption or str, got {}",
            type_name(obj)
        ))
    })?;
    match s.strip_prefix("ReadOnly").unwrap_or(&s) {
        "Safe" => Ok(ReadOnlyOption::Safe),
        "LeaseBased" => Ok(ReadOnlyOption::LeaseBased),
        other => Err(PyValueError::new_err(format!(
            "read_only_option must be 'Safe' or 'LeaseBased', got {other:?}"
        ))),
    }
}

fn read_only_name(o: ReadOnlyOption) -> &'static str {
    match o {
        ReadOnlyOption::Safe => "Safe",
        ReadOnlyOption::LeaseBased => "LeaseBased",
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// The parameters of one Raft node. Every argument is a keyword with the
/// core's default (etcd raft v3.6 with pre-vote and check-quorum on);
/// ``validate()`` checks them, and ``RawNode`` does so too.
#[pyclass(module = "raftlet._raftlet", name = "Config", eq)]
#[derive(Clone, PartialEq)]
pub struct PyConfig {
    pub inner: Config,
}

#[pymethods]
impl PyConfig {
    /// Creates a configuration for node ``id``.
    #[new]
    #[pyo3(signature = (
        id = U64(0),
        *,
        election_tick = Usize(10),
        heartbeat_tick = Usize(1),
        applied = U64(0),
        max_size_per_msg = U64(1024 * 1024),
        max_committed_size_per_ready = U64(0),
        max_uncommitted_entries_size = U64(0),
        max_inflight_msgs = Usize(256),
        max_inflight_bytes = U64(0),
        check_quorum = true,
        pre_vote = true,
        read_only_option = None,
        disable_proposal_forwarding = false,
        disable_conf_change_validation = false,
        step_down_on_removal = true,
        promote_max_lag = U64(1000),
        max_learners = Usize(1),
        seed = U64(0),
        coalesce_appends = true,
        learner_first = true,
        auto_promote = false,
        promote_min_active_rounds = U32(3),
        standby_promotion = false,
        standby_dead_rounds = U32(3),
        learner_forwards_proposals = true,
    ))]
    #[pyo3(
        text_signature = "(id=0, *, election_tick=10, heartbeat_tick=1, applied=0, max_size_per_msg=1048576, max_committed_size_per_ready=0, max_uncommitted_entries_size=0, max_inflight_msgs=256, max_inflight_bytes=0, check_quorum=True, pre_vote=True, read_only_option='Safe', disable_proposal_forwarding=False, disable_conf_change_validation=False, step_down_on_removal=True, promote_max_lag=1000, max_learners=1, seed=0, coalesce_appends=True, learner_first=True, auto_promote=False, promote_min_active_rounds=3, standby_promotion=False, standby_dead_rounds=3, learner_forwards_proposals=True)"
    )]
    #[allow(clippy::too_many_arguments, reason = "one keyword argument per field")]
    fn new(
        id: U64,
        election_tick: Usize,
        heartbeat_tick: Usize,
        applied: U64,
        max_size_per_msg: U64,
        max_committed_size_per_ready: U64,
        max_uncommitted_entries_size: U64,
        max_inflight_msgs: Usize,
        max_inflight_bytes: U64,
        check_quorum: bool,
        pre_vote: bool,
        read_only_option: Option<&Bound<'_, PyAny>>,
        disable_proposal_forwarding: bool,
        disable_conf_change_validation: bool,
        step_down_on_removal: bool,
        promote_max_lag: U64,
        max_learners: Usize,
        seed: U64,
        coalesce_appends: bool,
        learner_first: bool,
        auto_promote: bool,
        promote_min_active_rounds: U32,
        standby_promotion: bool,
        standby_dead_rounds: U32,
        learner_forwards_proposals: bool,
    ) -> PyResult<Self> {
        let read_only_option = match read_only_option {
            Some(o) => parse_read_only(o)?,
            None => ReadOnlyOption::Safe,
        };
        Ok(PyConfig {
            inner: Config {
                id: id.0,
                election_tick: election_tick.0,
                heartbeat_tick: heartbeat_tick.0,
                applied: applied.0,
                max_size_per_msg: max_size_per_msg.0,
                max_committed_size_per_ready: max_committed_size_per_ready.0,
                max_uncommitted_entries_size: max_uncommitted_entries_size.0,
                max_inflight_msgs: max_inflight_msgs.0,
                max_inflight_bytes: max_inflight_bytes.0,
                check_quorum,
                pre_vote,
                read_only_option,
                disable_proposal_forwarding,
                disable_conf_change_validation,
                step_down_on_removal,
                promote_max_lag: promote_max_lag.0,
                max_learners: max_learners.0,
                seed: seed.0,
                coalesce_appends,
                learner_first,
                auto_promote,
                promote_min_active_rounds: promote_min_active_rounds.0,
                standby_promotion,
                standby_dead_rounds: standby_dead_rounds.0,
                learner_forwards_proposals,
                // Quiescence serves hosts of many groups (raftlet::multi,
                // Rust); not offered to Python.
                quiesce: false,
            },
        })
    }

    /// Checks every field and combination; raises ``ConfigError`` (also a
    /// ``ValueError``) with a sentence naming the offending field.
    fn validate(&self) -> PyResult<()> {
        self.inner.validate().py()
    }

    /// This node's id; must not be zero.
    #[getter]
    fn id(&self) -> u64 {
        self.inner.id
    }
    #[setter]
    fn set_id(&mut self, v: U64) {
        self.inner.id = v.0;
    }

    /// Ticks without a leader before a follower campaigns (the timeout is
    /// drawn from ``[election_tick, 2 * election_tick)``).
    #[getter]
    fn election_tick(&self) -> usize {
        self.inner.election_tick
    }
    #[setter]
    fn set_election_tick(&mut self, v: Usize) {
        self.inner.election_tick = v.0;
    }

    /// Ticks between the leader's heartbeats.
    #[getter]
    fn heartbeat_tick(&self) -> usize {
        self.inner.heartbeat_tick
    }
    #[setter]
    fn set_heartbeat_tick(&mut self, v: Usize) {
        self.inner.heartbeat_tick = v.0;
    }

    /// The last index applied before a restart.
    #[getter]
    fn applied(&self) -> u64 {
        self.inner.applied
    }
    #[setter]
    fn set_applied(&mut self, v: U64) {
        self.inner.applied = v.0;
    }

    /// The most bytes of entries in one append message.
    #[getter]
    fn max_size_per_msg(&self) -> u64 {
        self.inner.max_size_per_msg
    }
    #[setter]
    fn set_max_size_per_msg(&mut self, v: U64) {
        self.inner.max_size_per_msg = v.0;
    }

    /// The most bytes of committed entries in one Ready (0: ``max_size_per_msg``).
    #[getter]
    fn max_committed_size_per_ready(&self) -> u64 {
        self.inner.max_committed_size_per_ready
    }
    #[setter]
    fn set_max_committed_size_per_ready(&mut self, v: U64) {
        self.inner.max_committed_size_per_ready = v.0;
    }

    /// The most bytes of uncommitted payload the leader accepts (0: unlimited).
    #[getter]
    fn max_uncommitted_entries_size(&self) -> u64 {
        self.inner.max_uncommitted_entries_size
    }
    #[setter]
    fn set_max_uncommitted_entries_size(&mut self, v: U64) {
        self.inner.max_uncommitted_entries_size = v.0;
    }

    /// The most append messages in flight to one peer.
    #[getter]
    fn max_inflight_msgs(&self) -> usize {
        self.inner.max_inflight_msgs
    }
    #[setter]
    fn set_max_inflight_msgs(&mut self, v: Usize) {
        self.inner.max_inflight_msgs = v.0;
    }

    /// The most bytes in flight to one peer (0: unlimited).
    #[getter]
    fn max_inflight_bytes(&self) -> u64 {
        self.inner.max_inflight_bytes
    }
    #[setter]
    fn set_max_inflight_bytes(&mut self, v: U64) {
        self.inner.max_inflight_bytes = v.0;
    }

    /// Whether the leader steps down without a quorum's recent contact.
    #[getter]
    fn check_quorum(&self) -> bool {
        self.inner.check_quorum
    }
    #[setter]
    fn set_check_quorum(&mut self, v: bool) {
        self.inner.check_quorum = v;
    }

    /// Whether candidates run a pre-vote round first.
    #[getter]
    fn pre_vote(&self) -> bool {
        self.inner.pre_vote
    }
    #[setter]
    fn set_pre_vote(&mut self, v: bool) {
        self.inner.pre_vote = v;
    }

    /// How reads are served: ``ReadOnlyOption.SAFE`` or
    /// ``ReadOnlyOption.LEASE_BASED`` (which requires ``check_quorum``).
    #[getter]
    fn read_only_option<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        READ_ONLY_OPTION.member(py, read_only_name(self.inner.read_only_option))
    }
    #[setter]
    fn set_read_only_option(&mut self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.read_only_option = parse_read_only(v)?;
        Ok(())
    }

    /// Whether followers drop proposals instead of forwarding them.
    #[getter]
    fn disable_proposal_forwarding(&self) -> bool {
        self.inner.disable_proposal_forwarding
    }
    #[setter]
    fn set_disable_proposal_forwarding(&mut self, v: bool) {
        self.inner.disable_proposal_forwarding = v;
    }

    /// Whether the propose-time checks of configuration changes are skipped.
    #[getter]
    fn disable_conf_change_validation(&self) -> bool {
        self.inner.disable_conf_change_validation
    }
    #[setter]
    fn set_disable_conf_change_validation(&mut self, v: bool) {
        self.inner.disable_conf_change_validation = v;
    }

    /// Whether a leader removed from the configuration steps down.
    #[getter]
    fn step_down_on_removal(&self) -> bool {
        self.inner.step_down_on_removal
    }
    #[setter]
    fn set_step_down_on_removal(&mut self, v: bool) {
        self.inner.step_down_on_removal = v;
    }

    /// How far behind the leader's last index a learner may be when promoted.
    #[getter]
    fn promote_max_lag(&self) -> u64 {
        self.inner.promote_max_lag
    }
    #[setter]
    fn set_promote_max_lag(&mut self, v: U64) {
        self.inner.promote_max_lag = v.0;
    }

    /// The most learners the configuration may hold.
    #[getter]
    fn max_learners(&self) -> usize {
        self.inner.max_learners
    }
    #[setter]
    fn set_max_learners(&mut self, v: Usize) {
        self.inner.max_learners = v.0;
    }

    /// The election-timeout RNG seed: 0 draws one from the OS each time a
    /// node is created; any other value makes the timeouts reproducible.
    #[getter]
    fn seed(&self) -> u64 {
        self.inner.seed
    }
    #[setter]
    fn set_seed(&mut self, v: U64) {
        self.inner.seed = v.0;
    }

    /// Whether the leader coalesces the appends of proposals made between
    /// two Readies into one message per peer (default ``True``).
    #[getter]
    fn coalesce_appends(&self) -> bool {
        self.inner.coalesce_appends
    }
    #[setter]
    fn set_coalesce_appends(&mut self, v: bool) {
        self.inner.coalesce_appends = v;
    }

    /// Whether ``RawNode.add_member`` proposes a new member as a learner
    /// (default ``True``), so that a member that never answers never changes
    /// the quorum; ``False`` adds voters directly.
    #[getter]
    fn learner_first(&self) -> bool {
        self.inner.learner_first
    }
    #[setter]
    fn set_learner_first(&mut self, v: bool) {
        self.inner.learner_first = v;
    }

    /// Whether the leader promotes a learner by itself (default ``False``;
    /// needs check-quorum) once it is within ``promote_max_lag`` entries
    /// (a lagging voter stalls commits), active in
    /// ``promote_min_active_rounds`` consecutive check-quorum rounds (a
    /// silent voter weakens the quorum), not being sent a snapshot and no
    /// other change is pending (one change at a time).
    #[getter]
    fn auto_promote(&self) -> bool {
        self.inner.auto_promote
    }
    #[setter]
    fn set_auto_promote(&mut self, v: bool) {
        self.inner.auto_promote = v;
    }

    /// Consecutive check-quorum rounds a learner must have answered in before
    /// it is promoted automatically or as a standby (default 3, at least 1).
    #[getter]
    fn promote_min_active_rounds(&self) -> u32 {
        self.inner.promote_min_active_rounds
    }
    #[setter]
    fn set_promote_min_active_rounds(&mut self, v: U32) {
        self.inner.promote_min_active_rounds = v.0;
    }

    /// Whether the leader replaces a voter silent for ``standby_dead_rounds``
    /// check-quorum rounds by a caught-up learner, in one joint change that
    /// keeps the voter count and the quorum size (default ``False``; needs
    /// check-quorum; never without a quorum, never two at once).
    #[getter]
    fn standby_promotion(&self) -> bool {
        self.inner.standby_promotion
    }
    #[setter]
    fn set_standby_promotion(&mut self, v: bool) {
        self.inner.standby_promotion = v;
    }

    /// Consecutive silent check-quorum rounds after which a voter counts as
    /// failed for ``standby_promotion`` (default 3, at least 2, so that one
    /// lost round never swaps a voter out).
    #[getter]
    fn standby_dead_rounds(&self) -> u32 {
        self.inner.standby_dead_rounds
    }
    #[setter]
    fn set_standby_dead_rounds(&mut self, v: U32) {
        self.inner.standby_dead_rounds = v.0;
    }

    /// Whether a learner forwards proposals to the leader (default ``True``,
    /// as etcd) or refuses them with ``ProposalDroppedError`` (a read-only
    /// learner that never originates a write).
    #[getter]
    fn learner_forwards_proposals(&self) -> bool {
        self.inner.learner_forwards_proposals
    }
    #[setter]
    fn set_learner_forwards_proposals(&mut self, v: bool) {
        self.inner.learner_forwards_proposals = v;
    }

    fn __repr__(&self) -> String {
        let c = &self.inner;
        format!(
            "Config(id={}, election_tick={}, heartbeat_tick={}, applied={}, \
             max_size_per_msg={}, max_committed_size_per_ready={}, \
             max_uncommitted_entries_size={}, max_inflight_msgs={}, max_inflight_bytes={}, \
             check_quorum={}, pre_vote={}, read_only_option='{}', \
             disable_proposal_forwarding={}, disable_conf_change_validation={}, \
             step_down_on_removal={}, promote_max_lag={}, max_learners={}, seed={}, \
             coalesce_appends={}, learner_first={}, auto_promote={}, \
             promote_min_active_rounds={}, standby_promotion={}, standby_dead_rounds={}, \
             learner_forwards_proposals={})",
            c.id,
            c.election_tick,
            c.heartbeat_tick,
            c.applied,
            c.max_size_per_msg,
            c.max_committed_size_per_ready,
            c.max_uncommitted_entries_size,
            c.max_inflight_msgs,
            c.max_inflight_bytes,
            py_bool(c.check_quorum),
            py_bool(c.pre_vote),
            read_only_name(c.read_only_option),
            py_bool(c.disable_proposal_forwarding),
            py_bool(c.disable_conf_change_validation),
            py_bool(c.step_down_on_removal),
            c.promote_max_lag,
            c.max_learners,
            c.seed,
            py_bool(c.coalesce_appends),
            py_bool(c.learner_first),
            py_bool(c.auto_promote),
            c.promote_min_active_rounds,
            py_bool(c.standby_promotion),
            c.standby_dead_rounds,
            py_bool(c.learner_forwards_proposals)
        )
    }
}
