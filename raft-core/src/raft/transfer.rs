//! Leadership transfer: the leader catches the target up, then tells it to
//! campaign at once (MsgTimeoutNow).
//!
//! Ported from etcd-io/raft raft.go (stepLeader, case MsgTransferLeader).

use super::{Raft, INVALID_ID};
use crate::errors::{Error, Result};
use crate::pb::{Message, MessageType};
use crate::storage::Storage;

impl<S: Storage> Raft<S> {
    /// Starts a transfer of leadership to `transferee` (on the leader).
    pub(crate) fn handle_transfer_leader(&mut self, transferee: u64) -> Result<()> {
        let Some(pr) = self.trk.get(transferee) else {
            return Err(Error::TransferRefused(format!(
                "{transferee} is not a member of the configuration"
            )));
        };
        if pr.is_learner {
            return Err(Error::TransferRefused(format!(
                "{transferee} is a learner and cannot lead"
            )));
        }
        let matched = pr.matched;
        let last = self.lead_transferee;
        if last != INVALID_ID {
            if last == transferee {
                // Already under way to the same node.
                return Ok(());
            }
            self.abort_leader_transfer();
        }
        if transferee == self.id {
            // Already the leader: nothing to do.
            return Ok(());
        }
        crate::logging::rlog!(
            crate::logging::Level::Info,
            self.id,
            "{} [term {}] starts to transfer leadership to {}",
            self.id,
            self.term,
            transferee
        );
        // The transfer must complete within one election timeout.
        self.election_elapsed = 0;
        self.lead_transferee = transferee;
        if matched == self.raft_log.last_index() {
            self.send_timeout_now(transferee);
        } else {
            // Catch it up first; the MsgAppResp that shows it has our last
            // index sends the MsgTimeoutNow.
            self.send_append(transferee);
        }
        Ok(())
    }

    pub(crate) fn send_timeout_now(&mut self, to: u64) {
        // The transferee will campaign past every follower's lease: no
        // read may be served from ours for the rest of the term.
        self.revoke_lease();
        self.send(Message::new(MessageType::MsgTimeoutNow, INVALID_ID, to));
    }

    pub(crate) fn abort_leader_transfer(&mut self) {
        self.lead_transferee = INVALID_ID;
    }
}
