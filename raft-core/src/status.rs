//! [`Status`] and [`BasicStatus`]: snapshots of a node's state for hosts,
//! dashboards and tests (etcd status.go).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::pb::HardState;
use crate::raft::{NotPromotable, Raft, SoftState, StateRole};
use crate::storage::Storage;
use crate::tracker::ProgressState;
use crate::tracker::{Config as TrackerConfig, Progress};

/// A cheap snapshot of a node's state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BasicStatus {
    /// The node's id.
    pub id: u64,
    /// Term, vote and commit.
    pub hard_state: HardState,
    /// Leader and role.
    pub soft_state: SoftState,
    /// The last index the host reported applied.
    pub applied: u64,
    /// The target of a leader transfer under way (0 for none).
    pub lead_transferee: u64,
}

impl BasicStatus {
    pub(crate) fn new<S: Storage>(r: &Raft<S>) -> BasicStatus {
        BasicStatus {
            id: r.id,
            hard_state: r.hard_state(),
            soft_state: r.soft_state(),
            applied: r.raft_log.applied,
            lead_transferee: r.lead_transferee,
        }
    }
}

/// A full snapshot of a node's state, including the configuration and, on
/// the leader, every peer's replication progress.
#[derive(Debug, Clone, Default)]
pub struct Status {
    /// The scalar part.
    pub basic: BasicStatus,
    /// The configuration: voters (incoming and outgoing), learners,
    /// learners_next and auto_leave.
    pub config: TrackerConfig,
    /// Every peer's progress, by id; empty unless this node leads.
    pub progress: BTreeMap<u64, Progress>,
    /// Every learner of the configuration as the leader sees it; empty
    /// unless this node leads.
    pub learners: Vec<LearnerStatus>,
}

/// A learner as the leader sees it: how far behind, how active, and
/// whether it could be promoted now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnerStatus {
    /// The learner's id.
    pub id: u64,
    /// Entries behind the leader's last index.
    pub lag: u64,
    /// Whether it answered in the current check-quorum round.
    pub recent_active: bool,
    /// Consecutive check-quorum rounds it answered in.
    pub active_rounds: u16,
    /// How the leader replicates to it.
    pub state: ProgressState,
    /// `None` when it could be promoted now, else why not.
    pub not_promotable: Option<NotPromotable>,
}

impl Status {
    pub(crate) fn new<S: Storage>(r: &Raft<S>) -> Status {
        let basic = BasicStatus::new(r);
        let progress = if basic.soft_state.raft_state == StateRole::Leader {
            r.trk
                .progress
                .iter()
                .map(|(id, pr)| (*id, pr.clone()))
                .collect()
        } else {
            BTreeMap::new()
        };
        let learners = if basic.soft_state.raft_state == StateRole::Leader {
            let last = r.raft_log.last_index();
            r.trk
                .config
                .learners
                .iter()
                .filter_map(|&id| {
                    let pr = r.trk.get(id)?;
                    Some(LearnerStatus {
                        id,
                        lag: last.saturating_sub(pr.matched),
                        recent_active: pr.recent_active,
                        active_rounds: pr.active_rounds,
                        state: pr.state,
                        not_promotable: r.promotion_blocker(id),
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        Status {
            basic,
            config: r.trk.config.clone(),
            progress,
            learners,
        }
    }

    /// The status as JSON, in the shape of etcd's `Status.MarshalJSON`
    /// (ids in hex), with the configuration's learners added.
    pub fn to_json(&self) -> String {
        let b = &self.basic;
        let mut j = format!(
            "{{\"id\":\"{:x}\",\"term\":{},\"vote\":\"{:x}\",\"commit\":{},\"lead\":\"{:x}\",\"raftState\":\"{}\",\"applied\":{},\"progress\":{{",
            b.id,
            b.hard_state.term,
            b.hard_state.vote,
            b.hard_state.commit,
            b.soft_state.leader_id,
            b.soft_state.raft_state.etcd_name(),
            b.applied
        );
        for (i, (id, pr)) in self.progress.iter().enumerate() {
            if i > 0 {
                j.push(',');
            }
            let _ = write!(
                j,
                "\"{:x}\":{{\"match\":{},\"next\":{},\"state\":\"{}\",\"isLearner\":{}}}",
                id, pr.matched, pr.next, pr.state, pr.is_learner
            );
        }
        let ids = |v: Vec<u64>| {
            v.iter()
                .map(|x| format!("\"{x:x}\""))
                .collect::<Vec<_>>()
                .join(",")
        };
        let _ = write!(
            j,
            "}},\"leadtransferee\":\"{:x}\",\"voters\":[{}],\"votersOutgoing\":[{}],\"learners\":[{}],\"learnersNext\":[{}]}}",
            b.lead_transferee,
            ids(self.config.voters.incoming.iter().copied().collect()),
            ids(self.config.voters.outgoing.iter().copied().collect()),
            ids(self.config.learners.iter().copied().collect()),
            ids(self.config.learners_next.iter().copied().collect()),
        );
        j
    }
}
