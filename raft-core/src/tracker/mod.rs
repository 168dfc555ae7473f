//! The leader's bookkeeping of the cluster: the active configuration, each
//! member's replication progress, and the votes of an election.
//!
//! Ported from etcd-io/raft `tracker/`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::pb::ConfState;
use crate::quorum::{AckedIndexer, JointConfig, VoteResult};

mod inflights;
mod progress;
mod progress_map;
mod state;

pub use inflights::Inflights;
pub use progress::Progress;
pub use state::ProgressState;

pub use progress_map::ProgressMap;

/// Describes a progress map as etcd's `ProgressMap.String` does: one
/// `id: progress` line per member, in id order.
pub fn describe_progress_map(progress: &ProgressMap) -> String {
    progress
        .iter()
        .map(|(id, pr)| format!("{id}: {pr}\n"))
        .collect()
}

/// A cluster configuration: who votes (possibly jointly, during a change)
/// and who only learns.
///
/// Ported from etcd-io/raft tracker/tracker.go (`Config`).
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct Config {
    /// The voters; `voters.outgoing` is non-empty only in a joint
    /// configuration.
    pub voters: JointConfig,
    /// Whether a joint configuration is left automatically by raft as soon
    /// as possible, rather than when the application asks.
    ///
    /// Invariant: false unless joint.
    pub auto_leave: bool,
    /// The learners: members that receive the log but do not vote.
    ///
    /// Invariant: disjoint from both halves of `voters`, so every member has
    /// one clear role without reasoning about joint consensus.
    pub learners: BTreeSet<u64>,
    /// Voters of the outgoing configuration that become learners once the
    /// joint configuration is left.
    ///
    /// Demoting voter 3 of `(1 2 3)` cannot put 3 into `learners` on entering
    /// the joint configuration `(1 2)&&(1 2 3)`, as 3 still votes in the
    /// outgoing half; it waits here instead and moves to `learners` when the
    /// joint configuration is left. A learner that was not a voter is added
    /// to `learners` directly, so that it catches up as soon as possible.
    ///
    /// Invariant: a subset of `voters.outgoing`; empty unless joint.
    pub learners_next: BTreeSet<u64>,
}

impl Config {
    /// A non-joint configuration of the given voters and learners.
    pub fn new(voters: BTreeSet<u64>, learners: BTreeSet<u64>) -> Config {
        Config {
            voters: JointConfig::new(voters),
            learners,
            ..Config::default()
        }
    }
}

/// Writes `(1 2 3)`.
fn write_ids(f: &mut fmt::Formatter<'_>, ids: &BTreeSet<u64>) -> fmt::Result {
    f.write_str("(")?;
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            f.write_str(" ")?;
        }
        write!(f, "{id}")?;
    }
    f.write_str(")")
}

impl fmt::Display for Config {
    /// Formats as etcd does, e.g.
    /// `voters=(1 2)&&(1 2 3) learners=(4) learners_next=(3) autoleave`
    /// (learner sets only when non-empty).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "voters={}", self.voters)?;
        if !self.learners.is_empty() {
            f.write_str(" learners=")?;
            write_ids(f, &self.learners)?;
        }
        if !self.learners_next.is_empty() {
            f.write_str(" learners_next=")?;
            write_ids(f, &self.learners_next)?;
        }
        if self.auto_leave {
            f.write_str(" autoleave")?;
        }
        Ok(())
    }
}

/// Looks up acknowledged indexes in the `matched` of a progress map.
pub(crate) struct MatchAckIndexer<'a>(pub(crate) &'a ProgressMap);

impl AckedIndexer for MatchAckIndexer<'_> {
    fn acked_index(&self, voter_id: u64) -> Option<u64> {
        self.0.get(&voter_id).map(|pr| pr.matched)
    }
}

/// The configuration, the progress of every member and the votes of the
/// current election.
///
/// Ported from etcd-io/raft tracker/tracker.go (`ProgressTracker`).
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct ProgressTracker {
    /// The active configuration.
    pub config: Config,
    /// The progress of every voter and learner of `config`, kept only while
    /// this node leads (see [`ProgressTracker::track_members`]): nothing
    /// else reads it, and an idle follower's group pays for none.
    ///
    /// Invariant: empty, or has an entry for exactly the members of
    /// `config` (voters of either half, learners, learners_next), each
    /// marked a learner exactly when it is in `config.learners`. A leader's
    /// is never empty (the leader is a member).
    pub progress: ProgressMap,
    /// The votes received in the current election (`true` for granted);
    /// `None` when none was received (a pointer rather than an empty map
    /// inline: 8 bytes instead of 24 in every node). Read it through
    /// [`ProgressTracker::vote`] and [`ProgressTracker::votes`].
    #[allow(
        clippy::box_collection,
        reason = "the box is the point: a pointer inline instead of an empty map"
    )]
    votes: Option<Box<BTreeMap<u64, bool>>>,
    /// The in-flight message limit of new progresses.
    pub max_inflight: usize,
    /// The in-flight byte limit of new progresses (0: unlimited).
    pub max_inflight_bytes: u64,
}

impl ProgressTracker {
    /// An empty tracker whose progresses will allow `max_inflight` messages
    /// and `max_bytes` bytes (0: unlimited) in flight.
    pub fn new(max_inflight: usize, max_bytes: u64) -> ProgressTracker {
        ProgressTracker {
            max_inflight,
            max_inflight_bytes: max_bytes,
            ..ProgressTracker::default()
        }
    }

    /// The active configuration as a [`ConfState`], ids sorted.
    pub fn conf_state(&self) -> ConfState {
        ConfState {
            voters: self.config.voters.incoming.slice(),
            learners: self.config.learners.iter().copied().collect(),
            voters_outgoing: self.config.voters.outgoing.slice(),
            learners_next: self.config.learners_next.iter().copied().collect(),
            auto_leave: self.config.auto_leave,
        }
    }

    /// Whether the configuration is a single voter (not joint).
    pub fn is_singleton(&self) -> bool {
        self.config.voters.is_singleton()
    }

    /// The highest index acknowledged (matched) by a quorum of the voters.
    ///
    /// Ported from etcd-io/raft tracker/tracker.go (`Committed`).
    pub fn committed(&self) -> u64 {
        self.config
            .voters
            .committed_index(&MatchAckIndexer(&self.progress))
    }

    /// Calls `f` on every member's progress, in ascending id order.
    pub fn visit(&mut self, mut f: impl FnMut(u64, &mut Progress)) {
        for (&id, pr) in self.progress.iter_mut() {
            f(id, pr);
        }
    }

    /// Whether a quorum of the voters was recently active (learners do not
    /// count).
    ///
    /// Ported from etcd-io/raft tracker/tracker.go (`QuorumActive`).
    pub fn quorum_active(&self) -> bool {
        let active = |id: u64| {
            self.progress
                .get(&id)
                .filter(|pr| !pr.is_learner)
                .map(|pr| pr.recent_active)
        };
        self.config.voters.vote_result(active) == VoteResult::Won
    }

    /// The voters of either half, sorted.
    pub fn voter_nodes(&self) -> Vec<u64> {
        self.config.voters.ids().into_iter().collect()
    }

    /// The learners, sorted.
    pub fn learner_nodes(&self) -> Vec<u64> {
        self.config.learners.iter().copied().collect()
    }

    /// Forgets the votes of the last election.
    pub fn reset_votes(&mut self) {
        self.votes = None;
    }

    /// Records `id`'s vote (`true` for granted); a voter's first vote in an
    /// election is the one that counts.
    pub fn record_vote(&mut self, id: u64, v: bool) {
        self.votes
            .get_or_insert_with(Box::default)
            .entry(id)
            .or_insert(v);
    }

    /// `id`'s vote in the current election, if it sent one (`true` for
    /// granted).
    pub fn vote(&self, id: u64) -> Option<bool> {
        self.votes.as_ref()?.get(&id).copied()
    }

    /// Every vote of the current election, by voter id, ascending.
    pub fn votes(&self) -> impl Iterator<Item = (u64, bool)> + '_ {
        self.votes
            .iter()
            .flat_map(|m| m.iter().map(|(&id, &v)| (id, v)))
    }

    /// The granted and rejected votes of current voters (informational) and
    /// the outcome of the election so far.
    ///
    /// Ported from etcd-io/raft tracker/tracker.go (`TallyVotes`).
    pub fn tally_votes(&self) -> (usize, usize, VoteResult) {
        let (mut granted, mut rejected) = (0, 0);
        for (id, v) in self.votes() {
            if !self.config.voters.contains(id) {
                continue;
            }
            if v {
                granted += 1;
            } else {
                rejected += 1;
            }
        }
        let result = self.config.voters.vote_result(|id| self.vote(id));
        (granted, rejected, result)
    }

    /// Whether `id` is a member of the configuration: a voter of either
    /// half or a learner (what etcd tells by the presence of a progress).
    pub fn is_member(&self, id: u64) -> bool {
        self.config.voters.contains(id)
            || self.config.learners.contains(&id)
            || self.config.learners_next.contains(&id)
    }

    /// A fresh progress for every member, probing from `next` (what a new
    /// leader starts from, etcd `reset`): `progress` for a node that takes
    /// the lead, or the starting point of a configuration change computed
    /// on a node that keeps none.
    pub fn members_progress(&self, next: u64) -> ProgressMap {
        let c = &self.config;
        let mut ids: Vec<u64> = c
            .voters
            .incoming
            .iter()
            .chain(c.voters.outgoing.iter())
            .chain(&c.learners)
            .chain(&c.learners_next)
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let mut map = ProgressMap::with_capacity(ids.len());
        for id in ids {
            let mut pr = Progress::new(next, self.max_inflight, self.max_inflight_bytes);
            pr.is_learner = c.learners.contains(&id);
            map.insert(id, pr);
        }
        map
    }

    /// Starts tracking every member's progress, probing from `next`: the
    /// node takes the lead.
    pub fn track_members(&mut self, next: u64) {
        self.progress = self.members_progress(next);
    }

    /// Stops tracking progress (the node no longer leads) and frees it.
    pub fn untrack_members(&mut self) {
        self.progress = ProgressMap::default();
    }

    /// The progress of member `id`.
    #[inline]
    pub fn get(&self, id: u64) -> Option<&Progress> {
        self.progress.get(&id)
    }

    /// The progress of member `id`, mutably.
    #[inline]
    pub fn get_mut(&mut self, id: u64) -> Option<&mut Progress> {
        self.progress.get_mut(&id)
    }

    /// Replaces the configuration and the progress map, as computed by
    /// [`crate::confchange`].
    pub fn apply_conf(&mut self, config: Config, mut progress: ProgressMap) {
        // Configurations change rarely; a group keeps exactly what it needs.
        progress.shrink_to_fit();
        self.config = config;
        self.progress = progress;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker(voters: &[u64], learners: &[u64]) -> ProgressTracker {
        let mut t = ProgressTracker::new(10, 0);
        t.config = Config::new(
            voters.iter().copied().collect(),
            learners.iter().copied().collect(),
        );
        for &id in voters.iter().chain(learners) {
            let mut pr = Progress::new(1, 10, 0);
            pr.is_learner = learners.contains(&id);
            t.progress.insert(id, pr);
        }
        t
    }

    /// Commit index, votes and activity of a small cluster with a learner.
    #[test]
    fn test_tracker_basics() {
        let mut t = tracker(&[1, 2, 3], &[4]);
        assert_eq!(t.voter_nodes(), vec![1, 2, 3]);
        assert_eq!(t.learner_nodes(), vec![4]);
        assert!(!t.is_singleton());
        assert_eq!(t.committed(), 0);

        for (id, m) in [(1, 5), (2, 7), (4, 9)] {
            t.get_mut(id).unwrap().maybe_update(m);
        }
        assert_eq!(t.committed(), 5);

        let mut seen = vec![];
        t.visit(|id, pr| {
            seen.push(id);
            pr.recent_active = id == 1 || id == 4;
        });
        assert_eq!(seen, vec![1, 2, 3, 4]);
        // Only voter 1 (and learner 4, which does not count) is active.
        assert!(!t.quorum_active());
        t.get_mut(3).unwrap().recent_active = true;
        assert!(t.quorum_active());

        t.record_vote(1, true);
        t.record_vote(2, false);
        t.record_vote(2, true); // the first vote counts
        t.record_vote(4, true); // a learner's vote is ignored
        assert_eq!(t.tally_votes(), (1, 1, VoteResult::Pending));
        t.record_vote(3, true);
        assert_eq!(t.tally_votes(), (2, 1, VoteResult::Won));
        t.reset_votes();
        assert_eq!(t.tally_votes(), (0, 0, VoteResult::Pending));

        let cs = t.conf_state();
        assert_eq!(
            cs,
            ConfState {
                voters: vec![1, 2, 3],
                learners: vec![4],
                ..ConfState::default()
            }
        );
        assert_eq!(t.config.to_string(), "voters=(1 2 3) learners=(4)");
        assert!(describe_progress_map(&t.progress).starts_with("1: StateProbe match=5 next=6\n2:"));
    }

    /// etcd: Config.String
    #[test]
    fn test_config_string() {
        let mut c = Config::new([1, 2].into(), BTreeSet::new());
        c.voters.outgoing = [1, 2, 3].into_iter().collect();
        c.learners_next = [3].into();
        c.learners = [4].into();
        c.auto_leave = true;
        assert_eq!(
            c.to_string(),
            "voters=(1 2)&&(1 2 3) learners=(4) learners_next=(3) autoleave"
        );
        assert!(tracker(&[1], &[]).is_singleton());
    }
}
