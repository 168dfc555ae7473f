//! A joint configuration: two majorities that must both agree.

use std::collections::BTreeSet;
use std::fmt;

use super::{AckedIndexer, MajorityConfig, VoteResult};

/// Two majority configurations, possibly overlapping, used during a
/// membership change. A decision needs a majority of *each*.
///
/// Outside a membership change `outgoing` is empty, and an empty majority
/// never holds a decision back, so the pair behaves as `incoming` alone.
///
/// Ported from etcd-io/raft quorum/joint.go (`JointConfig`, a `[2]MajorityConfig`
/// there: `incoming` is index 0, `outgoing` index 1).
#[derive(Clone, Default, PartialEq, Eq, Debug, Hash)]
pub struct JointConfig {
    /// The configuration being moved to (the only one outside a change).
    pub incoming: MajorityConfig,
    /// The configuration being moved from; empty unless joint.
    pub outgoing: MajorityConfig,
}

impl JointConfig {
    /// A non-joint configuration of the given voters.
    pub fn new(voters: BTreeSet<u64>) -> JointConfig {
        JointConfig {
            incoming: MajorityConfig::new(voters),
            outgoing: MajorityConfig::default(),
        }
    }

    /// Every voter of either half.
    pub fn ids(&self) -> BTreeSet<u64> {
        self.incoming
            .iter()
            .chain(&self.outgoing)
            .copied()
            .collect()
    }

    /// Whether `id` is a voter of either half.
    pub fn contains(&self, id: u64) -> bool {
        self.incoming.contains(id) || self.outgoing.contains(id)
    }

    /// Whether the configuration is a single voter (not joint).
    pub fn is_singleton(&self) -> bool {
        self.outgoing.is_empty() && self.incoming.len() == 1
    }

    /// Empties both halves.
    pub fn clear(&mut self) {
        self.incoming.clear();
        self.outgoing.clear();
    }

    /// The highest index committed in both halves: the smaller of the two
    /// halves' committed indexes.
    ///
    /// Ported from etcd-io/raft quorum/joint.go (`CommittedIndex`).
    pub fn committed_index(&self, l: &impl AckedIndexer) -> u64 {
        let incoming = self.incoming.committed_index(l);
        let outgoing = self.outgoing.committed_index(l);
        incoming.min(outgoing)
    }

    /// The outcome of a vote: won only when both halves won, lost as soon as
    /// either half lost, pending otherwise.
    ///
    /// Ported from etcd-io/raft quorum/joint.go (`VoteResult`).
    pub fn vote_result(&self, check: impl Fn(u64) -> Option<bool>) -> VoteResult {
        let incoming = self.incoming.vote_result(&check);
        let outgoing = self.outgoing.vote_result(&check);
        match (incoming, outgoing) {
            (a, b) if a == b => a,
            (VoteResult::Lost, _) | (_, VoteResult::Lost) => VoteResult::Lost,
            // One half won, the other is still pending.
            _ => VoteResult::Pending,
        }
    }

    /// The picture of [`MajorityConfig::describe`] over the voters of both
    /// halves.
    ///
    /// Ported from etcd-io/raft quorum/joint.go (`Describe`).
    pub fn describe(&self, l: &impl AckedIndexer) -> String {
        MajorityConfig::new(self.ids()).describe(l)
    }
}

impl fmt::Display for JointConfig {
    /// Formats as etcd does: `(1 2 3)`, or `(1 2 3)&&(4 5)` when joint.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.outgoing.is_empty() {
            write!(f, "{}", self.incoming)
        } else {
            write!(f, "{}&&{}", self.incoming, self.outgoing)
        }
    }
}
