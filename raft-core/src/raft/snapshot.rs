//! Snapshots: sending them to peers that fell behind the compacted log, and
//! restoring from them on followers.
//!
//! Ported from etcd-io/raft raft.go (maybeSendSnapshot, handleSnapshot,
//! restore, the MsgSnapStatus case of stepLeader).

use super::{Raft, StateRole, INVALID_ID};
use crate::confchange;
use crate::errors::StorageError;
use crate::logging::{rlog, Level};
use crate::pb::{Message, MessageType, Snapshot};
use crate::storage::Storage;
use crate::tracker::ProgressState;
use crate::types::EntryId;
use crate::Error;

impl<S: Storage> Raft<S> {
    /// Sends the latest snapshot to `to` and pauses appends to it until the
    /// outcome is known (etcd `maybeSendSnapshot`). Returns whether it was sent.
    pub(crate) fn maybe_send_snapshot(&mut self, to: u64) -> bool {
        let recent_active = match self.trk.get(to) {
            Some(pr) => pr.recent_active,
            None => return false,
        };
        if !recent_active {
            // A peer that has not answered lately may be down: a snapshot
            // is expensive, so wait until it shows signs of life.
            return false;
        }
        let next = self.trk.get(to).map_or(0, |pr| pr.next);
        let snapshot = match self.raft_log.snapshot(next.saturating_sub(1), to) {
            Ok(s) => s,
            Err(Error::Store(StorageError::SnapshotTemporarilyUnavailable)) => {
                // The host is preparing one; the next heartbeat response or
                // append response from the peer triggers another try.
                return false;
            }
            Err(_) => return false,
        };
        if snapshot.is_empty() {
            // Nothing to send: the storage claims entries are compacted but
            // has no snapshot. Wait for one rather than crash.
            return false;
        }
        let sindex = snapshot.metadata.index;
        rlog!(
            Level::Info,
            self.id,
            "{} sent snapshot [index: {}, term: {}] to {}",
            self.id,
            sindex,
            snapshot.metadata.term,
            to
        );
        if let Some(pr) = self.trk.get_mut(to) {
            pr.become_snapshot(sindex);
        }
        let mut m = Message::new(MessageType::MsgSnap, INVALID_ID, to);
        m.snapshot = Some(Box::new(snapshot));
        self.send(m);
        true
    }

    /// Processes a snapshot from the leader (etcd `handleSnapshot`).
    pub(crate) fn handle_snapshot(&mut self, m: Message) {
        let from = m.from;
        let s = m.snapshot.map(|b| *b).unwrap_or_default();
        let mut resp = Message::new(MessageType::MsgAppResp, INVALID_ID, from);
        if self.restore(s) {
            resp.index = self.raft_log.last_index();
        } else {
            resp.index = self.raft_log.committed;
        }
        self.send(resp);
    }

    /// Resets the log and configuration to a snapshot (etcd `restore`).
    /// Returns false when the snapshot is ignored (stale, or already
    /// covered by the log).
    pub(crate) fn restore(&mut self, s: Snapshot) -> bool {
        if s.metadata.index <= self.raft_log.committed {
            return false;
        }
        if self.state != StateRole::Follower {
            // A leader or candidate never receives a snapshot in its own
            // term from someone else; step down defensively (etcd does too),
            // never past the limit on terms.
            let term = if self.term < crate::validate::MAX_TERM_OR_INDEX {
                self.term + 1
            } else {
                self.term
            };
            self.become_follower(term, INVALID_ID);
            return false;
        }
        // A node that is not in the snapshot's configuration would lose its
        // own membership by applying it; that indicates a bug elsewhere.
        let cs = &s.metadata.conf_state;
        let id = self.id;
        let found = cs.voters.contains(&id)
            || cs.learners.contains(&id)
            || cs.voters_outgoing.contains(&id);
        if !found {
            return false;
        }
        // If our log already has the snapshot's last entry, fast-forward the
        // commit index instead of throwing the log away.
        let sid = EntryId {
            term: s.metadata.term,
            index: s.metadata.index,
        };
        if self.raft_log.match_term(sid) {
            self.raft_log.commit_to(s.metadata.index);
            return false;
        }
        // Committed entries handed out to a host that applies them
        // asynchronously are not applied yet. A conf change among them
        // would then be applied on top of the snapshot's configuration,
        // leaving this node in a configuration no other node has: refuse
        // the snapshot until they are applied (the leader sends it again).
        #[allow(unused_mut)]
        let mut applying = self.raft_log.applying > self.raft_log.applied;
        #[cfg(feature = "bug-injection")]
        if self.bugs.restore_while_applying {
            applying = false;
        }
        if applying {
            return false;
        }
        // Build the snapshot's configuration before touching the log, so a
        // malformed configuration from the network is refused, not applied.
        let fresh = crate::tracker::ProgressTracker::new(
            self.trk.max_inflight,
            self.trk.max_inflight_bytes,
        );
        let restored = confchange::restore(
            confchange::Changer {
                tracker: &fresh,
                last_index: s.metadata.index,
            },
            cs,
        );
        let (cfg, prs) = match restored {
            Ok(x) => x,
            Err(_) => return false,
        };
        rlog!(
            Level::Info,
            self.id,
            "{} restored snapshot [index: {}, term: {}]",
            self.id,
            s.metadata.index,
            s.metadata.term
        );
        self.raft_log.restore(s);
        self.trk = fresh;
        self.switch_to_config(cfg, prs);
        true
    }

    /// Processes the host's report of a snapshot send (`report_snapshot`).
    pub(crate) fn handle_snapshot_status(&mut self, m: &Message) {
        let pr = match self.trk.get_mut(m.from) {
            Some(pr) => pr,
            None => return,
        };
        if pr.state != ProgressState::Snapshot {
            return;
        }
        if m.reject {
            // The send failed: forget the pending snapshot so the next
            // probe may pick a newer one.
            pr.pending_snapshot = 0;
        }
        // Either way, wait for the peer's MsgAppResp (or the next heartbeat
        // response) before sending again: probe paused.
        pr.become_probe();
        pr.msg_app_flow_paused = true;
    }
}
