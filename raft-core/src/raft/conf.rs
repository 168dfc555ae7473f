//! Applying membership changes (etcd `applyConfChange`).

use super::Raft;
use crate::confchange::Changer;
use crate::errors::{Error, Result};
use crate::logging::{rlog, Level};
use crate::pb::{ConfChangeV2, ConfState};
use crate::storage::Storage;

impl<S: Storage> Raft<S> {
    /// Applies a committed conf change and returns the new configuration.
    ///
    /// # Errors
    /// [`Error::ConfChangeRefused`] when the change cannot apply to the
    /// current configuration, or names a type, transition or node id that
    /// no configuration can hold (etcd panics there; raftlet leaves the
    /// configuration unchanged and reports it).
    pub(crate) fn apply_conf_change(&mut self, cc: &ConfChangeV2) -> Result<ConfState> {
        // An etcd leader appends changes without checking them: refuse
        // what no configuration can hold before computing anything.
        crate::validate::check_conf_change_to_apply(cc)?;
        let changer = Changer {
            tracker: &self.trk,
            last_index: self.raft_log.last_index(),
        };
        let res = if cc.leave_joint() {
            changer.leave_joint()
        } else {
            let (auto_leave, joint) = cc.enter_joint();
            if joint {
                changer.enter_joint(auto_leave, &cc.changes)
            } else {
                changer.simple(&cc.changes)
            }
        };
        let (cfg, prs) = res.map_err(Error::ConfChangeRefused)?;
        rlog!(
            Level::Info,
            self.id,
            "{} switched to configuration {}",
            self.id,
            cfg
        );
        Ok(self.switch_to_config(cfg, prs))
    }
}
