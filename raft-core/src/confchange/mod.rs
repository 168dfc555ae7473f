//! Configuration changes: computing the configuration and progress map that
//! result from applying [`ConfChangeSingle`]s, with or without joint
//! consensus, and rebuilding a configuration from a [`ConfState`].
//!
//! Ported from etcd-io/raft `confchange/`. Nothing here mutates a tracker:
//! every operation returns the new [`Config`](crate::tracker::Config) and
//! [`ProgressMap`](crate::tracker::ProgressMap) for the caller to install
//! with [`ProgressTracker::apply_conf`](crate::tracker::ProgressTracker::apply_conf).
//!
//! [`ConfState`]: crate::pb::ConfState

use crate::pb::{ConfChangeSingle, ConfChangeType};

mod changer;
mod restore;

#[cfg(test)]
mod tests;

pub use changer::Changer;
pub use restore::restore;

/// Describes changes compactly, one token per change: `v` add voter, `l`
/// add learner, `r` remove, `u` update, followed by the node id, e.g.
/// `v1 l2 r3 u4` (an unknown change type prints as `?`).
///
/// This is the syntax of etcd's confchange test files; etcd's own
/// `confchange.Describe` spells the types out (`ConfChangeAddNode(1)`).
pub fn describe(ccs: &[ConfChangeSingle]) -> String {
    let mut out = String::new();
    for cc in ccs {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(match cc.change_type {
            ConfChangeType::ConfChangeAddNode => "v",
            ConfChangeType::ConfChangeAddLearnerNode => "l",
            ConfChangeType::ConfChangeRemoveNode => "r",
            ConfChangeType::ConfChangeUpdateNode => "u",
            _ => "?",
        });
        out.push_str(&cc.node_id.to_string());
    }
    out
}
