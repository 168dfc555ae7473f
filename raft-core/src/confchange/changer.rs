//! Applying configuration changes to a copy of a tracker's configuration.

use crate::pb::{ConfChangeSingle, ConfChangeType};
use crate::quorum::MajorityConfig;
use crate::tracker::{Config, Progress, ProgressMap, ProgressTracker};

/// The outcome of a change: the new configuration and progress map, or why
/// the change is not allowed.
type Changed = Result<(Config, ProgressMap), String>;

/// Computes the configuration that results from configuration changes,
/// starting from a tracker's configuration, without modifying the tracker.
///
/// Ported from etcd-io/raft confchange/confchange.go (`Changer`).
#[derive(Clone, Copy, Debug)]
pub struct Changer<'a> {
    /// The tracker holding the configuration to change (left untouched).
    pub tracker: &'a ProgressTracker,
    /// The leader's last log index; progress for a new member starts
    /// probing there.
    pub last_index: u64,
}

impl Changer<'_> {
    /// Enters a joint configuration: the current voters become the outgoing
    /// half, and `ccs` are applied to the incoming half. With `auto_leave`,
    /// raft leaves the joint configuration on its own once it can.
    ///
    /// For example, entering joint from `(1 2 3)` with "remove 3, add 4"
    /// yields `(1 2 4)&&(1 2 3)`; with no changes at all, `(1 2 3)&&(1 2 3)`.
    ///
    /// # Errors
    /// When already joint, when there are no voters to start from, for an
    /// unknown change type, or when the incoming half would have no voters.
    ///
    /// Ported from etcd-io/raft confchange/confchange.go (`EnterJoint`).
    pub fn enter_joint(&self, auto_leave: bool, ccs: &[ConfChangeSingle]) -> Changed {
        let (mut cfg, mut trk) = self.check_and_copy()?;
        if is_joint(&cfg) {
            return Err("config is already joint".to_string());
        }
        if cfg.voters.incoming.is_empty() {
            // An empty configuration can be populated (bootstrap, tests),
            // but not made joint.
            return Err("can't make a zero-voter config joint".to_string());
        }
        cfg.voters.outgoing = cfg.voters.incoming.clone();
        self.apply(&mut cfg, &mut trk, ccs)?;
        cfg.auto_leave = auto_leave;
        check_and_return(cfg, trk)
    }

    /// Leaves a joint configuration: the outgoing half is dropped, staged
    /// demotions (`learners_next`) become learners, and the progress of
    /// outgoing voters that are neither incoming voters nor learners is
    /// dropped.
    ///
    /// # Errors
    /// When the configuration is not joint.
    ///
    /// Ported from etcd-io/raft confchange/confchange.go (`LeaveJoint`).
    pub fn leave_joint(&self) -> Changed {
        let (mut cfg, mut trk) = self.check_and_copy()?;
        if !is_joint(&cfg) {
            return Err("can't leave a non-joint config".to_string());
        }
        for id in std::mem::take(&mut cfg.learners_next) {
            cfg.learners.insert(id);
            if let Some(pr) = trk.get_mut(&id) {
                pr.is_learner = true;
            }
        }
        for &id in cfg.voters.outgoing.iter() {
            if !cfg.voters.incoming.contains(id) && !cfg.learners.contains(&id) {
                trk.remove(&id);
            }
        }
        cfg.voters.outgoing.clear();
        cfg.auto_leave = false;
        check_and_return(cfg, trk)
    }

    /// Applies `ccs` without joint consensus. Allowed only when at most one
    /// voter is added or removed in total (learners may change freely).
    ///
    /// # Errors
    /// In a joint configuration, for an unknown change type, when no voter
    /// would remain, or when more than one voter would change.
    ///
    /// Ported from etcd-io/raft confchange/confchange.go (`Simple`).
    pub fn simple(&self, ccs: &[ConfChangeSingle]) -> Changed {
        let (mut cfg, mut trk) = self.check_and_copy()?;
        if is_joint(&cfg) {
            return Err("can't apply simple config change in joint config".to_string());
        }
        self.apply(&mut cfg, &mut trk, ccs)?;
        if symdiff(&self.tracker.config.voters.incoming, &cfg.voters.incoming) > 1 {
            return Err("more than one voter changed without entering joint config".to_string());
        }
        check_and_return(cfg, trk)
    }

    /// Applies `ccs` to the incoming half of `cfg` (and to `trk`).
    fn apply(
        &self,
        cfg: &mut Config,
        trk: &mut ProgressMap,
        ccs: &[ConfChangeSingle],
    ) -> Result<(), String> {
        for cc in ccs {
            if cc.node_id == 0 {
                // etcd zeroes the node id of a change it decided (outside
                // raft) not to apply; such changes are skipped.
                continue;
            }
            match cc.change_type {
                ConfChangeType::ConfChangeAddNode => self.make_voter(cfg, trk, cc.node_id),
                ConfChangeType::ConfChangeAddLearnerNode => self.make_learner(cfg, trk, cc.node_id),
                ConfChangeType::ConfChangeRemoveNode => remove(cfg, trk, cc.node_id),
                ConfChangeType::ConfChangeUpdateNode => {}
                other => return Err(format!("unexpected conf type {}", other.0)),
            }
        }
        if cfg.voters.incoming.is_empty() {
            return Err("removed all voters".to_string());
        }
        Ok(())
    }

    /// Makes `id` a voter of the incoming half (adding or promoting it).
    fn make_voter(&self, cfg: &mut Config, trk: &mut ProgressMap, id: u64) {
        let Some(pr) = trk.get_mut(&id) else {
            self.init_progress(cfg, trk, id, false);
            return;
        };
        pr.is_learner = false;
        cfg.learners.remove(&id);
        cfg.learners_next.remove(&id);
        cfg.voters.incoming.insert(id);
    }

    /// Makes `id` a learner (adding or demoting it).
    ///
    /// A voter of the outgoing half cannot become a learner right away (that
    /// would break the invariant that learners and voters are disjoint), so
    /// its demotion is staged in `learners_next` until the joint
    /// configuration is left. Its progress is kept either way.
    fn make_learner(&self, cfg: &mut Config, trk: &mut ProgressMap, id: u64) {
        match trk.get(&id) {
            None => {
                self.init_progress(cfg, trk, id, true);
                return;
            }
            Some(pr) if pr.is_learner => return,
            Some(_) => {}
        }
        // Take it out of the incoming voters, keeping its progress.
        cfg.voters.incoming.remove(id);
        cfg.learners.remove(&id);
        cfg.learners_next.remove(&id);
        if cfg.voters.outgoing.contains(id) {
            cfg.learners_next.insert(id);
        } else {
            if let Some(pr) = trk.get_mut(&id) {
                pr.is_learner = true;
            }
            cfg.learners.insert(id);
        }
    }

    /// Adds `id` as a new voter or learner, with a fresh progress.
    ///
    /// Ported from etcd-io/raft confchange/confchange.go (`initProgress`).
    fn init_progress(&self, cfg: &mut Config, trk: &mut ProgressMap, id: u64, is_learner: bool) {
        if is_learner {
            cfg.learners.insert(id);
        } else {
            cfg.voters.incoming.insert(id);
        }
        // Probe from the last index: optimistic (the new member most likely
        // has no log and will need a snapshot), but that is what etcd does.
        let mut pr = Progress::new(
            self.last_index.max(1),
            self.tracker.max_inflight,
            self.tracker.max_inflight_bytes,
        );
        pr.is_learner = is_learner;
        // A new member counts as active, or check-quorum could depose the
        // leader before the member has had a chance to respond.
        pr.recent_active = true;
        trk.insert(id, pr);
    }

    /// Copies the tracker's configuration and progress, checking that they
    /// are consistent to begin with.
    ///
    /// Like etcd's `Config.Clone`, the copy starts with `auto_leave` false;
    /// every operation that succeeds sets it explicitly.
    fn check_and_copy(&self) -> Result<(Config, ProgressMap), String> {
        let current = &self.tracker.config;
        let cfg = Config {
            voters: current.voters.clone(),
            auto_leave: false,
            learners: current.learners.clone(),
            learners_next: current.learners_next.clone(),
        };
        // A node that does not lead keeps no progress: start from a fresh
        // one for every member (what matters here is who has one), as a
        // leader would hold it.
        let progress = if self.tracker.progress.is_empty() {
            self.tracker.members_progress(self.last_index.max(1))
        } else {
            self.tracker.progress.clone()
        };
        check_and_return(cfg, progress)
    }
}

/// Removes `id` from the incoming half and the learners. Its progress is
/// kept while it still votes in the outgoing half.
fn remove(cfg: &mut Config, trk: &mut ProgressMap, id: u64) {
    if !trk.contains_key(&id) {
        return;
    }
    cfg.voters.incoming.remove(id);
    cfg.learners.remove(&id);
    cfg.learners_next.remove(&id);
    if !cfg.voters.outgoing.contains(id) {
        trk.remove(&id);
    }
}

/// Whether the configuration is joint (the outgoing half has voters).
fn is_joint(cfg: &Config) -> bool {
    !cfg.voters.outgoing.is_empty()
}

/// The number of ids in exactly one of `l` and `r`.
fn symdiff(l: &MajorityConfig, r: &MajorityConfig) -> usize {
    let only_l = l.iter().filter(|&&id| !r.contains(id)).count();
    let only_r = r.iter().filter(|&&id| !l.contains(id)).count();
    only_l + only_r
}

/// Checks the invariants that tie a configuration to its progress map.
///
/// The empty configuration is allowed: it is never produced by a change,
/// but it is where bootstrap (and tests) start from.
///
/// Ported from etcd-io/raft confchange/confchange.go (`checkInvariants`).
fn check_invariants(cfg: &Config, trk: &ProgressMap) -> Result<(), String> {
    let members = cfg
        .voters
        .incoming
        .iter()
        .chain(cfg.voters.outgoing.iter())
        .chain(&cfg.learners)
        .chain(&cfg.learners_next);
    for id in members {
        if !trk.contains_key(id) {
            return Err(format!("no progress for {id}"));
        }
    }

    // A staged learner is staged because it still votes in the outgoing half.
    for id in &cfg.learners_next {
        if !cfg.voters.outgoing.contains(*id) {
            return Err(format!("{id} is in LearnersNext, but not Voters[1]"));
        }
        if trk[id].is_learner {
            return Err(format!(
                "{id} is in LearnersNext, but is already marked as learner"
            ));
        }
    }
    // Learners and voters are disjoint.
    for id in &cfg.learners {
        if cfg.voters.outgoing.contains(*id) {
            return Err(format!("{id} is in Learners and Voters[1]"));
        }
        if cfg.voters.incoming.contains(*id) {
            return Err(format!("{id} is in Learners and Voters[0]"));
        }
        if !trk[id].is_learner {
            return Err(format!("{id} is in Learners, but is not marked as learner"));
        }
    }

    if !is_joint(cfg) {
        if !cfg.learners_next.is_empty() {
            return Err("cfg.LearnersNext must be nil when not joint".to_string());
        }
        if cfg.auto_leave {
            return Err("AutoLeave must be false when not joint".to_string());
        }
    }
    Ok(())
}

fn check_and_return(cfg: Config, trk: ProgressMap) -> Changed {
    check_invariants(&cfg, &trk)?;
    Ok((cfg, trk))
}
