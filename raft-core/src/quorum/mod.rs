//! Quorum arithmetic: which index is committed and who won a vote, for plain
//! majority configurations and for joint (two-majority) configurations.
//!
//! Ported from etcd-io/raft `quorum/`. This module is a leaf: it depends on
//! nothing else in raftlet, so the rules it encodes can be read (and tested)
//! in isolation.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

mod joint;
mod majority;

#[cfg(test)]
mod tests;

pub use joint::JointConfig;
pub use majority::MajorityConfig;

/// The outcome of a vote, as far as it can be told from the votes so far.
///
/// Ported from etcd-io/raft quorum/quorum.go (`VoteResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteResult {
    /// Neither the "yes" nor the "no" votes can be said to have reached a
    /// quorum yet: the outcome depends on votes still missing.
    Pending,
    /// A quorum voted "no" (or "yes" can no longer reach a quorum).
    Lost,
    /// A quorum voted "yes".
    Won,
}

impl std::fmt::Display for VoteResult {
    /// Formats as etcd's stringer does: `VotePending`, `VoteLost`, `VoteWon`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            VoteResult::Pending => "VotePending",
            VoteResult::Lost => "VoteLost",
            VoteResult::Won => "VoteWon",
        })
    }
}

/// Looks up the log index a voter is known to have acknowledged (for a leader:
/// the follower's `matched` index).
///
/// `None` means "nothing known about this voter", which is different from
/// `Some(0)` only in how [`MajorityConfig::describe`] prints it; for commit
/// purposes both count as index 0.
///
/// Ported from etcd-io/raft quorum/quorum.go (`AckedIndexer`).
pub trait AckedIndexer {
    /// The index acknowledged by `voter_id`, if known.
    fn acked_index(&self, voter_id: u64) -> Option<u64>;
}

impl<S: BuildHasher> AckedIndexer for HashMap<u64, u64, S> {
    fn acked_index(&self, voter_id: u64) -> Option<u64> {
        self.get(&voter_id).copied()
    }
}

impl AckedIndexer for BTreeMap<u64, u64> {
    fn acked_index(&self, voter_id: u64) -> Option<u64> {
        self.get(&voter_id).copied()
    }
}

impl<T: AckedIndexer + ?Sized> AckedIndexer for &T {
    fn acked_index(&self, voter_id: u64) -> Option<u64> {
        (**self).acked_index(voter_id)
    }
}

/// Formats a log index as etcd's `quorum.Index` does: `u64::MAX` (the
/// "everything is committed" answer of an empty configuration) prints as `∞`.
pub fn index_string(index: u64) -> String {
    if index == u64::MAX {
        "∞".to_string()
    } else {
        index.to_string()
    }
}
