//! The replication state of a follower, as seen by the leader.

use std::fmt;

/// How the leader currently replicates to a follower.
///
/// Ported from etcd-io/raft tracker/state.go (`StateType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProgressState {
    /// The follower's last index is not known. The leader sends at most one
    /// append per heartbeat interval and narrows the follower's log down from
    /// its answers (usually one round trip, thanks to the reject hint). A
    /// follower that stays here for long is usually offline.
    #[default]
    Probe,
    /// The steady state: the leader streams entries to the follower
    /// optimistically, bounded by the in-flight window.
    Replicate,
    /// The follower needs entries the leader no longer has; a snapshot is on
    /// its way and appends are paused until it lands.
    Snapshot,
}

impl fmt::Display for ProgressState {
    /// Formats as etcd does: `StateProbe`, `StateReplicate`, `StateSnapshot`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProgressState::Probe => "StateProbe",
            ProgressState::Replicate => "StateReplicate",
            ProgressState::Snapshot => "StateSnapshot",
        })
    }
}
