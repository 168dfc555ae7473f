//! The learner lifecycle that etcd's learner design proposed for later,
//! decided by the leader alone: automatic promotion of caught-up learners
//! and standby learners that replace a failed voter.
//!
//! Both act at the end of a check-quorum round (every `election_tick`
//! ticks on the leader), from the activity the round saw, and only through
//! an ordinary conf-change proposal: the promotion-safety checks of
//! `check_conf_change` still apply, only one change is ever pending, and a
//! learner never promotes itself (only a leader runs this code).

use crate::pb::{
    ConfChangeI, ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, Entry,
    Message, MessageType,
};
use crate::storage::Storage;
use crate::tracker::ProgressState;

use super::{Level, Raft, StateRole, INVALID_ID};
use crate::logging::rlog;

/// A membership change the leader proposed by itself, reported in
/// [`crate::Ready::membership_events`] so that the host can log it. The
/// change takes effect like any other once committed and applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MembershipEvent {
    /// The leader proposed promoting learner `id` to voter
    /// ([`crate::Config::auto_promote`]); the entry is at `index`.
    PromotionProposed {
        /// The learner.
        id: u64,
        /// The index of the conf-change entry.
        index: u64,
    },
    /// The leader proposed replacing the silent voter `demoted` by the
    /// caught-up learner `promoted` in one joint change
    /// ([`crate::Config::standby_promotion`]); the entry is at `index`.
    StandbySwapProposed {
        /// The standby learner becoming a voter.
        promoted: u64,
        /// The failed voter becoming a learner.
        demoted: u64,
        /// The index of the conf-change entry.
        index: u64,
    },
}

/// Why a learner cannot be promoted now (see [`crate::LearnerStatus`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotPromotable {
    /// More than `promote_max_lag` entries behind the leader's last index.
    Lagging {
        /// Entries behind.
        lag: u64,
        /// The threshold.
        max: u64,
    },
    /// The leader is sending it a snapshot.
    InSnapshot,
    /// It has not answered in enough consecutive check-quorum rounds.
    NotActiveLongEnough {
        /// Consecutive rounds it answered in.
        active_rounds: u16,
        /// Rounds required.
        needed: u32,
    },
    /// Another configuration change is pending or the configuration is joint.
    ConfChangePending,
    /// A leader transfer is under way.
    TransferInProgress,
}

impl std::fmt::Display for NotPromotable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotPromotable::Lagging { lag, max } => {
                write!(f, "{lag} entries behind (at most {max} allowed)")
            }
            NotPromotable::InSnapshot => write!(f, "receiving a snapshot"),
            NotPromotable::NotActiveLongEnough {
                active_rounds,
                needed,
            } => write!(
                f,
                "active in {active_rounds} consecutive check-quorum rounds ({needed} needed)"
            ),
            NotPromotable::ConfChangePending => {
                write!(f, "another configuration change is pending")
            }
            NotPromotable::TransferInProgress => write!(f, "a leader transfer is under way"),
        }
    }
}

/// The leader's membership policy (from [`crate::Config`]); kept small,
/// every group carries one.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MembershipPolicy {
    pub auto_promote: bool,
    pub standby_promotion: bool,
    pub learner_forwards_proposals: bool,
    pub min_active_rounds: u32,
    pub dead_rounds: u32,
}

impl<S: Storage> Raft<S> {
    /// Counts, for every peer, the consecutive check-quorum rounds it
    /// answered or stayed silent in; called at the end of each round,
    /// before `recent_active` is cleared for the next.
    ///
    /// A peer added by a conf change starts "recently active" (so that
    /// check-quorum does not count it as lost before it could answer), but
    /// that is credit, not an answer: a round counts as active only once
    /// the peer has acknowledged an entry of ours (`matched > 0`), so a
    /// member that never started is never promoted.
    pub(crate) fn count_activity_rounds(&mut self) {
        let id = self.id;
        self.trk.visit(|pid, pr| {
            if pid == id {
                return;
            }
            if pr.recent_active && pr.matched > 0 {
                pr.active_rounds = pr.active_rounds.saturating_add(1);
                pr.silent_rounds = 0;
            } else {
                pr.active_rounds = 0;
                pr.silent_rounds = pr.silent_rounds.saturating_add(1);
            }
        });
    }

    /// Whether a conf change is pending or the configuration is joint.
    fn conf_change_in_progress(&self) -> bool {
        self.pending_conf_index > self.raft_log.applied
            || !self.trk.config.voters.outgoing.is_empty()
            || !self.trk.config.learners_next.is_empty()
    }

    /// Why learner `id` cannot be promoted now, if it cannot (leader only).
    pub(crate) fn promotion_blocker(&self, id: u64) -> Option<NotPromotable> {
        let pr = self.trk.get(id)?;
        if self.conf_change_in_progress() {
            return Some(NotPromotable::ConfChangePending);
        }
        if self.lead_transferee != INVALID_ID {
            return Some(NotPromotable::TransferInProgress);
        }
        #[allow(unused_mut)]
        let mut lag = self.raft_log.last_index().saturating_sub(pr.matched);
        #[cfg(feature = "bug-injection")]
        if self.bugs.promote_ignores_lag {
            lag = 0;
        }
        if pr.state == ProgressState::Snapshot {
            return Some(NotPromotable::InSnapshot);
        }
        if lag > self.promote_max_lag {
            return Some(NotPromotable::Lagging {
                lag,
                max: self.promote_max_lag,
            });
        }
        let needed = self.membership.min_active_rounds;
        if u32::from(pr.active_rounds) < needed || !pr.recent_active || pr.matched == 0 {
            return Some(NotPromotable::NotActiveLongEnough {
                active_rounds: pr.active_rounds,
                needed,
            });
        }
        None
    }

    /// At the end of a check-quorum round the leader still holds: proposes
    /// at most one membership change of its own.
    pub(crate) fn maybe_change_membership(&mut self) {
        let policy = self.membership;
        if self.state != StateRole::Leader
            || !(policy.auto_promote || policy.standby_promotion)
            || self.conf_change_in_progress()
            || self.lead_transferee != INVALID_ID
        {
            return;
        }
        // The first learner (by id) that meets every threshold.
        let candidate = self
            .trk
            .config
            .learners
            .iter()
            .copied()
            .find(|&l| self.promotion_blocker(l).is_none());
        let Some(learner) = candidate else {
            return;
        };
        if policy.standby_promotion {
            if let Some(dead) = self.failed_voter() {
                let cc = ConfChangeV2 {
                    transition: ConfChangeTransition::ConfChangeTransitionAuto,
                    changes: vec![
                        ConfChangeSingle {
                            change_type: ConfChangeType::ConfChangeAddNode,
                            node_id: learner,
                        },
                        ConfChangeSingle {
                            change_type: ConfChangeType::ConfChangeAddLearnerNode,
                            node_id: dead,
                        },
                    ],
                    context: None,
                };
                if let Some(index) = self.propose_own_conf_change(ConfChangeI::V2(cc)) {
                    rlog!(
                        Level::Info,
                        self.id,
                        "proposed swapping silent voter {} for standby {} at index {}",
                        dead,
                        learner,
                        index
                    );
                    self.membership_events
                        .get_or_insert_with(Box::default)
                        .push(MembershipEvent::StandbySwapProposed {
                            promoted: learner,
                            demoted: dead,
                            index,
                        });
                }
                return;
            }
        }
        if policy.auto_promote {
            let cc = ConfChangeV2 {
                transition: ConfChangeTransition::ConfChangeTransitionAuto,
                changes: vec![ConfChangeSingle {
                    change_type: ConfChangeType::ConfChangeAddNode,
                    node_id: learner,
                }],
                context: None,
            };
            if let Some(index) = self.propose_own_conf_change(ConfChangeI::V2(cc)) {
                rlog!(
                    Level::Info,
                    self.id,
                    "proposed promoting learner {} at index {}",
                    learner,
                    index
                );
                self.membership_events
                    .get_or_insert_with(Box::default)
                    .push(MembershipEvent::PromotionProposed { id: learner, index });
            }
        }
    }

    /// A voter (not this leader) silent for `dead_rounds` consecutive
    /// rounds, if swapping it out keeps a quorum of the voters that
    /// answered this round in both halves of the joint configuration.
    fn failed_voter(&self) -> Option<u64> {
        let dead_rounds = self.membership.dead_rounds;
        let voters = self.trk.config.voters.incoming.ids();
        let dead = voters.iter().copied().find(|&v| {
            v != self.id
                && self
                    .trk
                    .get(v)
                    .is_some_and(|pr| u32::from(pr.silent_rounds) >= dead_rounds)
        })?;
        // The voters heard this round (the leader counts itself), without
        // the one being swapped out: they must be a majority of the old
        // configuration, and with the standby of the new one (same size).
        let alive = voters
            .iter()
            .filter(|&&v| v != dead)
            .filter(|&&v| v == self.id || self.trk.get(v).is_some_and(|pr| pr.recent_active))
            .count();
        (alive > voters.len() / 2).then_some(dead)
    }

    /// Proposes a conf change as if the host had; returns its index, or
    /// `None` if the leader refused it (the refusal is logged).
    fn propose_own_conf_change(&mut self, cc: ConfChangeI) -> Option<u64> {
        let (t, data) = cc.to_entry_parts();
        let mut m = Message::new(MessageType::MsgProp, self.id, INVALID_ID);
        m.entries.push(Entry {
            entry_type: t,
            data: Some(data),
            ..Entry::default()
        });
        let before = self.raft_log.last_index();
        match self.step(m) {
            Ok(()) if self.raft_log.last_index() > before => Some(self.raft_log.last_index()),
            Ok(()) => None,
            Err(e) => {
                rlog!(Level::Warn, self.id, "own membership change refused: {}", e);
                None
            }
        }
    }
}
