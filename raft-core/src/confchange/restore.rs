//! Rebuilding a configuration from a [`ConfState`].

use crate::pb::{ConfChangeSingle, ConfChangeType, ConfState};
use crate::tracker::{Config, ProgressMap, ProgressTracker};

use super::Changer;

/// Splits a [`ConfState`] into two lists of changes: `outgoing` builds the
/// outgoing half as a plain configuration, and `incoming`, applied on top of
/// it while entering joint, produces the state described.
///
/// For `voters=(1 2 3) learners=(5) voters_outgoing=(1 2 4 6)
/// learners_next=(4)`, `outgoing` adds voters 1, 2, 4 and 6, giving
/// `(1 2 4 6)`; `incoming` then removes 1, 2, 4 and 6, adds voters 1, 2
/// and 3, and adds learners 5 and 4, which yields
/// `(1 2 3)&&(1 2 4 6) learners=(5) learners_next=(4)` (4 still votes in
/// the outgoing half, so its demotion is staged). Whether 5 was a learner
/// before is unknowable and does not matter.
///
/// Ported from etcd-io/raft confchange/restore.go (`toConfChangeSingle`).
fn to_conf_change_single(cs: &ConfState) -> (Vec<ConfChangeSingle>, Vec<ConfChangeSingle>) {
    let single = ConfChangeSingle::new;
    let outgoing = cs
        .voters_outgoing
        .iter()
        .map(|&id| single(ConfChangeType::ConfChangeAddNode, id))
        .collect();
    let incoming = cs
        .voters_outgoing
        .iter()
        .map(|&id| single(ConfChangeType::ConfChangeRemoveNode, id))
        .chain(
            cs.voters
                .iter()
                .map(|&id| single(ConfChangeType::ConfChangeAddNode, id)),
        )
        .chain(
            cs.learners
                .iter()
                .chain(&cs.learners_next)
                .map(|&id| single(ConfChangeType::ConfChangeAddLearnerNode, id)),
        )
        .collect();
    (outgoing, incoming)
}

/// Applies one change step to `tracker`, which then holds its outcome.
fn step(
    tracker: &mut ProgressTracker,
    last_index: u64,
    op: impl FnOnce(&Changer<'_>) -> Result<(Config, ProgressMap), String>,
) -> Result<(), String> {
    let (cfg, trk) = op(&Changer {
        tracker,
        last_index,
    })?;
    tracker.apply_conf(cfg, trk);
    Ok(())
}

/// Builds the configuration described by `cs` on top of the changer's
/// tracker (normally empty), as a sequence of changes: one simple change
/// per member when `cs` is not joint; otherwise simple changes building
/// the outgoing half, then one joint change producing the incoming half.
///
/// The empty `ConfState` leaves the configuration as it is.
///
/// # Errors
/// When a step fails, i.e. `cs` is not a valid configuration (for example
/// an id that is both voter and learner).
///
/// Ported from etcd-io/raft confchange/restore.go (`Restore`).
pub fn restore(changer: Changer<'_>, cs: &ConfState) -> Result<(Config, ProgressMap), String> {
    let (outgoing, incoming) = to_conf_change_single(cs);
    // Each step starts from the outcome of the previous one, so work on an
    // owned copy of the tracker.
    let mut tracker = ProgressTracker::new(
        changer.tracker.max_inflight,
        changer.tracker.max_inflight_bytes,
    );
    tracker.config = changer.tracker.config.clone();
    tracker.progress = changer.tracker.progress.clone();
    let last_index = changer.last_index;

    if outgoing.is_empty() {
        for cc in &incoming {
            step(&mut tracker, last_index, |c| {
                c.simple(std::slice::from_ref(cc))
            })?;
        }
    } else {
        // Build the outgoing half as the plain configuration first, e.g.
        // (2 3 4) for (1 2 3)&&(2 3 4)...
        for cc in &outgoing {
            step(&mut tracker, last_index, |c| {
                c.simple(std::slice::from_ref(cc))
            })?;
        }
        // ...then enter joint with the changes that produce the incoming half.
        step(&mut tracker, last_index, |c| {
            c.enter_joint(cs.auto_leave, &incoming)
        })?;
    }
    Ok((tracker.config, tracker.progress))
}
