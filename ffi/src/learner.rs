//! The learner lifecycle through the C ABI: learner-first membership,
//! automatic and standby promotion, weak reads and the leader's view of
//! its learners (raftlet::RawNode::add_member, set_auto_promote,
//! set_standby_promotion, read_local, Ready::membership_events,
//! Status::learners).

use std::fmt::Write as _;

use raftlet_core::tracker::ProgressState;
use raftlet_core::{LearnerStatus, MembershipEvent, NotPromotable, Status};

use crate::node::{raftlet_node, with_node};
use crate::ready::raftlet_ready;
use crate::result::{code, fail, raftlet_result, raftlet_result::*};

/// The kind of a raftlet_membership_event.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum raftlet_membership_event_kind {
    /// The leader proposed promoting learner `id` to voter (auto_promote).
    RAFTLET_MEMBERSHIP_PROMOTION_PROPOSED = 1,
    /// The leader proposed one joint change promoting the standby learner
    /// `promoted` and demoting the silent voter `demoted` to learner
    /// (standby_promotion).
    RAFTLET_MEMBERSHIP_STANDBY_SWAP_PROPOSED = 2,
}

/// A membership change the leader proposed by itself, reported in a ready
/// so that the host can log it; it takes effect like any other change
/// once committed and applied.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct raftlet_membership_event {
    /// What the leader proposed.
    pub kind: raftlet_membership_event_kind,
    /// The learner being promoted (the same as `promoted`).
    pub id: u64,
    /// The learner becoming a voter.
    pub promoted: u64,
    /// The voter becoming a learner (0 for a plain promotion).
    pub demoted: u64,
    /// The index of the conf-change entry the leader appended.
    pub index: u64,
}

impl raftlet_membership_event {
    fn of(e: &MembershipEvent) -> raftlet_membership_event {
        use raftlet_membership_event_kind::*;
        match *e {
            MembershipEvent::PromotionProposed { id, index } => raftlet_membership_event {
                kind: RAFTLET_MEMBERSHIP_PROMOTION_PROPOSED,
                id,
                promoted: id,
                demoted: 0,
                index,
            },
            MembershipEvent::StandbySwapProposed {
                promoted,
                demoted,
                index,
            } => raftlet_membership_event {
                kind: RAFTLET_MEMBERSHIP_STANDBY_SWAP_PROPOSED,
                id: promoted,
                promoted,
                demoted,
                index,
            },
        }
    }
}

/// Why a learner cannot be promoted now (raftlet_learner_status.not_promotable).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum raftlet_not_promotable {
    /// It could be promoted now.
    RAFTLET_PROMOTABLE = 0,
    /// More than promote_max_lag entries behind: `have` is its lag, `need`
    /// the threshold.
    RAFTLET_NOT_PROMOTABLE_LAGGING = 1,
    /// The leader is sending it a snapshot.
    RAFTLET_NOT_PROMOTABLE_IN_SNAPSHOT = 2,
    /// Not active in enough consecutive check-quorum rounds: `have` rounds
    /// answered, `need` required.
    RAFTLET_NOT_PROMOTABLE_NOT_ACTIVE_LONG_ENOUGH = 3,
    /// Another configuration change is pending or the configuration is joint.
    RAFTLET_NOT_PROMOTABLE_CONF_CHANGE_PENDING = 4,
    /// A leader transfer is under way.
    RAFTLET_NOT_PROMOTABLE_TRANSFER_IN_PROGRESS = 5,
}

/// A learner as the leader sees it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct raftlet_learner_status {
    /// The learner's id.
    pub id: u64,
    /// Entries behind the leader's last index.
    pub lag: u64,
    /// Whether it answered in the current check-quorum round.
    pub recent_active: bool,
    /// Consecutive check-quorum rounds it answered in.
    pub active_rounds: u32,
    /// How the leader replicates to it: 0 probe, 1 replicate, 2 snapshot.
    pub state: u32,
    /// RAFTLET_PROMOTABLE (0) when it could be promoted now, else why not.
    pub not_promotable: raftlet_not_promotable,
    /// For LAGGING the lag, for NOT_ACTIVE_LONG_ENOUGH the rounds answered; else 0.
    pub not_promotable_have: u64,
    /// For LAGGING promote_max_lag, for NOT_ACTIVE_LONG_ENOUGH the rounds
    /// required; else 0.
    pub not_promotable_need: u64,
}

fn state_code(s: ProgressState) -> u32 {
    match s {
        ProgressState::Probe => 0,
        ProgressState::Replicate => 1,
        ProgressState::Snapshot => 2,
    }
}

fn blocker_code(b: Option<NotPromotable>) -> (raftlet_not_promotable, u64, u64) {
    use raftlet_not_promotable::*;
    match b {
        None => (RAFTLET_PROMOTABLE, 0, 0),
        Some(NotPromotable::Lagging { lag, max }) => (RAFTLET_NOT_PROMOTABLE_LAGGING, lag, max),
        Some(NotPromotable::InSnapshot) => (RAFTLET_NOT_PROMOTABLE_IN_SNAPSHOT, 0, 0),
        Some(NotPromotable::NotActiveLongEnough {
            active_rounds,
            needed,
        }) => (
            RAFTLET_NOT_PROMOTABLE_NOT_ACTIVE_LONG_ENOUGH,
            u64::from(active_rounds),
            u64::from(needed),
        ),
        Some(NotPromotable::ConfChangePending) => {
            (RAFTLET_NOT_PROMOTABLE_CONF_CHANGE_PENDING, 0, 0)
        }
        Some(NotPromotable::TransferInProgress) => {
            (RAFTLET_NOT_PROMOTABLE_TRANSFER_IN_PROGRESS, 0, 0)
        }
    }
}

impl raftlet_learner_status {
    fn of(l: &LearnerStatus) -> raftlet_learner_status {
        let (np, have, need) = blocker_code(l.not_promotable);
        raftlet_learner_status {
            id: l.id,
            lag: l.lag,
            recent_active: l.recent_active,
            active_rounds: u32::from(l.active_rounds),
            state: state_code(l.state),
            not_promotable: np,
            not_promotable_have: have,
            not_promotable_need: need,
        }
    }
}

/// The status as JSON: `Status::to_json` with `"learnerStatus"` added, one
/// object per learner the leader tracks (empty unless this node leads).
pub(crate) fn status_json(s: &Status) -> String {
    let mut j = s.to_json();
    // to_json always ends with the closing brace of its object.
    j.pop();
    j.push_str(",\"learnerStatus\":[");
    for (i, l) in s.learners.iter().enumerate() {
        if i > 0 {
            j.push(',');
        }
        let (np, have, need) = blocker_code(l.not_promotable);
        let why = match l.not_promotable {
            None => "null".to_string(),
            Some(b) => format!("\"{}\"", b.to_string().replace('"', "'")),
        };
        let _ = write!(
            j,
            "{{\"id\":\"{:x}\",\"lag\":{},\"recentActive\":{},\"activeRounds\":{},\"state\":\"{}\",\"promotable\":{},\"notPromotable\":{},\"notPromotableCode\":{},\"notPromotableHave\":{},\"notPromotableNeed\":{}}}",
            l.id,
            l.lag,
            l.recent_active,
            l.active_rounds,
            l.state,
            l.not_promotable.is_none(),
            why,
            np as u32,
            have,
            need
        );
    }
    j.push_str("]}");
    j
}

/// Proposes adding member `id` with the host's context (`ctx_len` bytes
/// at `ctx`, copied; for example its address; NULL when `ctx_len` is 0):
/// as a learner when learner_first is on (the default), so that a member
/// that never answers never changes the quorum; as a voter otherwise.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_CONF_CHANGE_REFUSED
/// (`id` is already a member, or cannot be one), RAFTLET_ERR_TOO_MANY_LEARNERS
/// or RAFTLET_ERR_PROPOSAL_DROPPED; nothing is appended on an error.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_add_member(
    node: *mut raftlet_node,
    id: u64,
    ctx: *const u8,
    ctx_len: usize,
) -> raftlet_result {
    ffi_boundary!({
        let c = raftlet_core::copy_payload(c_slice!(ctx, ctx_len, "ctx"));
        with_node(node, |n| code(&n.add_member(id, c)))
    })
}

/// Turns automatic promotion on or off at run time (a promotion already
/// proposed still takes effect). Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG
/// or RAFTLET_ERR_CONFIG_INVALID (turning it on without check-quorum).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_set_auto_promote(
    node: *mut raftlet_node,
    on: bool,
) -> raftlet_result {
    ffi_boundary!({ with_node(node, |n| code(&n.set_auto_promote(on))) })
}

/// Turns standby promotion on or off at run time. Returns RAFTLET_OK,
/// RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_CONFIG_INVALID (turning it on
/// without check-quorum).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_set_standby_promotion(
    node: *mut raftlet_node,
    on: bool,
) -> raftlet_result {
    ffi_boundary!({ with_node(node, |n| code(&n.set_standby_promotion(on))) })
}

/// What a weak (local) read may serve at once, without the leader.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct raftlet_local_read {
    /// The last index the host reported applied: the state a weak read sees.
    pub applied: u64,
    /// The highest index this node knows committed (commit - applied is
    /// how far behind the answer is by this node's knowledge).
    pub commit: u64,
    /// The leader this node knows (0 = none).
    pub leader: u64,
}

/// A weak read: writes the applied index the host serves the read from,
/// the commit index this node knows and its leader. For a read that sees
/// every write acknowledged before it began, use raftlet_node_read_index
/// (a learner forwards it to the leader) and serve it once applied up to
/// the read state's index. Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_read_local(
    node: *const raftlet_node,
    read_out: *mut raftlet_local_read,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(read_out);
        with_node(node, |n| {
            let l = n.read_local();
            // SAFETY: non-null output pointer.
            unsafe {
                *read_out = raftlet_local_read {
                    applied: l.applied,
                    commit: l.commit,
                    leader: l.leader,
                }
            };
            RAFTLET_OK
        })
    })
}

/// The number of learners the leader reports in raftlet_node_learner_status
/// (0 unless this node leads). Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_learner_count(
    node: *const raftlet_node,
    count_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(count_out);
        with_node(node, |n| {
            let c = n.status().learners.len();
            // SAFETY: non-null output pointer.
            unsafe { *count_out = c };
            RAFTLET_OK
        })
    })
}

/// Learner `index` (0-based, ascending id) as the leader sees it: lag,
/// activity, replication state and whether it could be promoted now, and
/// if not why. The set may change between calls (it is read afresh each
/// time). Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or
/// RAFTLET_ERR_INVALID_ARG (index out of range, for example because this
/// node no longer leads).
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_learner_status(
    node: *const raftlet_node,
    index: usize,
    status_out: *mut raftlet_learner_status,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(status_out);
        with_node(node, |n| {
            let s = n.status();
            let Some(l) = s.learners.get(index) else {
                return fail(RAFTLET_ERR_INVALID_ARG, "learner index out of range");
            };
            // SAFETY: non-null output pointer.
            unsafe { *status_out = raftlet_learner_status::of(l) };
            RAFTLET_OK
        })
    })
}

/// Borrows a live ready or returns the matching error code.
fn live(ready: *const raftlet_ready) -> Result<&'static raftlet_ready, raftlet_result> {
    if ready.is_null() {
        return Err(fail(RAFTLET_ERR_NULL_ARG, "argument `ready` is NULL"));
    }
    // SAFETY: non-null handle from raftlet_node_ready, alive until
    // raftlet_ready_free; the 'static is confined to the calling export.
    let r = unsafe { &*ready };
    if r.is_stale() {
        return Err(fail(
            RAFTLET_ERR_READY_STALE,
            "the ready was already advanced",
        ));
    }
    Ok(r)
}

/// The number of membership changes the leader proposed by itself since
/// the previous ready (automatic or standby promotions).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_membership_event_count(
    ready: *const raftlet_ready,
    count_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        let r = match live(ready) {
            Ok(r) => r,
            Err(c) => return c,
        };
        check_null!(count_out);
        // SAFETY: non-null output pointer.
        unsafe { *count_out = r.rd.membership_events.len() };
        RAFTLET_OK
    })
}

/// Membership event `index` (0-based, in the order proposed).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_READY_STALE or
/// RAFTLET_ERR_INVALID_ARG (index out of range).
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_membership_event(
    ready: *const raftlet_ready,
    index: usize,
    event_out: *mut raftlet_membership_event,
) -> raftlet_result {
    ffi_boundary!({
        let r = match live(ready) {
            Ok(r) => r,
            Err(c) => return c,
        };
        check_null!(event_out);
        let Some(e) = r.rd.membership_events.get(index) else {
            return fail(
                RAFTLET_ERR_INVALID_ARG,
                "membership event index out of range",
            );
        };
        // SAFETY: non-null output pointer.
        unsafe { *event_out = raftlet_membership_event::of(e) };
        RAFTLET_OK
    })
}
