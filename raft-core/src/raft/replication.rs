//! Replication: proposals, appends, heartbeats, flow control and commit.
//!
//! Ported from etcd-io/raft raft.go (maybeSendAppend, bcastAppend,
//! sendHeartbeat, appendEntry, stepLeader, handleAppendEntries,
//! handleHeartbeat).

use bytes::Bytes;

use super::{Raft, StateRole, INVALID_ID};
use crate::errors::{Error, Result};
use crate::log::payloads_size;
use crate::logging::{rlog, Level};
use crate::pb::{ConfChangeI, ConfChangeType, Entry, EntryType, Message, MessageType};
use crate::storage::Storage;
use crate::tracker::ProgressState;
use crate::types::{EntryId, LogSlice};

impl<S: Storage> Raft<S> {
    /// Sends an append (or a snapshot) to `to`, even if it carries no entries.
    pub(crate) fn send_append(&mut self, to: u64) {
        self.maybe_send_append(to, true);
    }

    /// Sends an append with new entries to `to` if flow control allows
    /// (etcd `maybeSendAppend`). With `send_if_empty` an append without
    /// entries is sent too (to carry the commit index or probe).
    ///
    /// Returns whether a message was sent.
    pub(crate) fn maybe_send_append(&mut self, to: u64, send_if_empty: bool) -> bool {
        let committed = self.raft_log.committed;
        let (paused, next, state, full) = match self.trk.get(to) {
            Some(pr) => (pr.is_paused(), pr.next, pr.state, pr.inflights.full()),
            None => return false,
        };
        if paused {
            return false;
        }
        // Nothing past the end to send: answered before the reads of the
        // previous entry's term and of the entries (storage reads, paid on
        // every call of the loops that send until nothing is left).
        if !send_if_empty && next > self.raft_log.last_index() {
            return false;
        }
        let prev_index = next - 1;
        let prev_term = match self.raft_log.term(prev_index) {
            Ok(t) => t,
            // The entry before `next` was compacted: only a snapshot helps.
            Err(_) => return self.maybe_send_snapshot(to),
        };
        let mut ents = Vec::new();
        let mut failed = false;
        if state != ProgressState::Replicate || !full {
            match self.raft_log.entries(next, self.max_msg_size) {
                Ok(e) => ents = e,
                Err(_) => failed = true,
            }
        }
        if ents.is_empty() && !send_if_empty {
            return false;
        }
        if failed {
            // The entries were compacted since the term lookup above.
            return self.maybe_send_snapshot(to);
        }
        let n = ents.len();
        let bytes = payloads_size(&ents);
        let mut m = Message::new(MessageType::MsgApp, INVALID_ID, to);
        m.index = prev_index;
        m.log_term = prev_term;
        m.entries = ents;
        m.commit = committed;
        self.send(m);
        if let Some(pr) = self.trk.get_mut(to) {
            pr.sent_entries(n, bytes);
            pr.sent_commit(committed);
        }
        true
    }

    /// Sends a heartbeat carrying `min(match, commit)` and `ctx`.
    pub(crate) fn send_heartbeat(&mut self, to: u64, ctx: Option<Bytes>) {
        let committed = self.raft_log.committed;
        let matched = match self.trk.get(to) {
            Some(pr) => pr.matched,
            None => return,
        };
        // A follower may not have all committed entries yet: telling it a
        // commit index beyond its match would make it commit entries it
        // does not have, or that conflict with ours.
        let commit = matched.min(committed);
        let mut m = Message::new(MessageType::MsgHeartbeat, INVALID_ID, to);
        m.commit = commit;
        m.context = ctx;
        self.send(m);
        if let Some(pr) = self.trk.get_mut(to) {
            pr.sent_commit(commit);
        }
    }

    /// Sends appends to every peer (etcd `bcastAppend`).
    pub(crate) fn bcast_append(&mut self) {
        self.appends_deferred = false;
        let mut next = self.next_peer(None);
        while let Some(id) = next {
            if id != self.id {
                self.send_append(id);
            }
            next = self.next_peer(Some(id));
        }
    }

    /// The peer with the smallest id above `after` (all peers in order,
    /// without allocating).
    pub(crate) fn next_peer(&self, after: Option<u64>) -> Option<u64> {
        self.trk.progress.next_id(after)
    }

    /// Schedules appends to every peer for the next flush (at the latest
    /// when the host takes a Ready). Proposals arriving between two Readies
    /// then travel in one append per peer instead of one each; what is
    /// sent, and when the host sees it, is otherwise the same.
    pub(crate) fn bcast_append_deferred(&mut self) {
        if self.coalesce_appends {
            self.appends_deferred = true;
        } else {
            self.bcast_append();
        }
    }

    /// Sends the appends scheduled by [`Raft::bcast_append_deferred`]:
    /// one append per peer, then as many more as flow control allows for
    /// peers being replicated to optimistically.
    pub(crate) fn flush_deferred_appends(&mut self) {
        if !self.appends_deferred {
            return;
        }
        self.appends_deferred = false;
        if self.state != StateRole::Leader {
            return;
        }
        let mut next = self.next_peer(None);
        while let Some(id) = next {
            if id != self.id {
                self.send_append(id);
                if self
                    .trk
                    .get(id)
                    .is_some_and(|pr| pr.state == ProgressState::Replicate)
                {
                    while self.maybe_send_append(id, false) {}
                }
            }
            next = self.next_peer(Some(id));
        }
    }

    /// Proposes one normal entry from the local host. On the leader the
    /// entry is appended directly (no message, no vector); elsewhere it
    /// takes the ordinary MsgProp path (forwarding or refusal).
    pub(crate) fn propose_entry(&mut self, mut e: Entry) -> Result<()> {
        if self.state != StateRole::Leader || e.entry_type != EntryType::EntryNormal {
            let mut m = Message::new(MessageType::MsgProp, self.id, INVALID_ID);
            m.entries.push(e);
            return self.step(m);
        }
        if self.trk.get(self.id).is_none() || self.lead_transferee != INVALID_ID {
            return Err(Error::ProposalDropped);
        }
        if !self.append_entries(std::slice::from_mut(&mut e)) {
            return Err(Error::ProposalDropped);
        }
        self.bcast_append_deferred();
        Ok(())
    }

    /// Sends heartbeats to every peer, carrying the latest pending read's context.
    pub(crate) fn bcast_heartbeat(&mut self) {
        // Under lease-based reads every heartbeat round renews the lease
        // (and, being numbered after every pending read, confirms those
        // too); under safe reads it carries the newest pending read.
        let ctx = self
            .next_lease_round_ctx()
            .or_else(|| self.read_only.last_pending_request_ctx());
        self.bcast_heartbeat_with_ctx(ctx);
    }

    pub(crate) fn bcast_heartbeat_with_ctx(&mut self, ctx: Option<Bytes>) {
        let mut next = self.next_peer(None);
        while let Some(id) = next {
            if id != self.id {
                self.send_heartbeat(id, ctx.clone());
            }
            next = self.next_peer(Some(id));
        }
    }

    /// Commits what a quorum has acknowledged, counting only entries of the
    /// current term (etcd `maybeCommit`). Returns whether commit advanced.
    pub(crate) fn maybe_commit(&mut self) -> bool {
        #[allow(unused_mut)]
        let mut mci = self.trk.committed();
        #[cfg(feature = "bug-injection")]
        {
            if self.bugs.learner_counts_in_quorum {
                let mut cfg = self.trk.config.voters.clone();
                for l in &self.trk.config.learners {
                    cfg.incoming.insert(*l);
                }
                let prs = &self.trk.progress;
                mci = cfg.committed_index(&crate::tracker::MatchAckIndexer(prs));
            }
            if self.bugs.commit_old_term_by_counting {
                if mci > self.raft_log.committed && mci <= self.raft_log.last_index() {
                    self.raft_log.commit_to(mci);
                    return true;
                }
                return false;
            }
        }
        let term = self.term;
        self.raft_log.maybe_commit(EntryId { term, index: mci })
    }

    /// Appends entries proposed on the leader, assigning term and index
    /// (etcd `appendEntry`). Returns false when the uncommitted-size budget
    /// refuses them.
    pub(crate) fn append_entry(&mut self, mut es: Vec<Entry>) -> bool {
        self.append_entries(&mut es)
    }

    /// [`Raft::append_entry`] over a slice, so a single proposal needs no
    /// vector. The entries are moved into the log when appended (their
    /// payloads taken out of `es`); on refusal `es` is left as it was.
    pub(crate) fn append_entries(&mut self, es: &mut [Entry]) -> bool {
        let li = self.raft_log.last_index();
        if es.len() as u64 > crate::validate::MAX_TERM_OR_INDEX.saturating_sub(li) {
            // The log never grows past the limit on indexes (no honest
            // cluster gets there; see crate::validate).
            return false;
        }
        for (i, e) in es.iter_mut().enumerate() {
            e.term = self.term;
            e.index = li + 1 + i as u64;
        }
        if !self.increase_uncommitted_size(es) {
            return false;
        }
        let li = self.raft_log.append_taken(es);
        // The leader's own acknowledgement counts only once the entries are
        // durable: it is stepped back in after the host persisted them.
        let mut m = Message::new(MessageType::MsgAppResp, INVALID_ID, self.id);
        m.index = li;
        self.send(m);
        true
    }

    fn increase_uncommitted_size(&mut self, ents: &[Entry]) -> bool {
        let s = payloads_size(ents);
        if self.uncommitted_size > 0
            && s > 0
            && self.uncommitted_size.saturating_add(s) > self.max_uncommitted_size
        {
            // An empty payload never counts (the leader's empty entry and
            // conf changes without context always fit); the first proposal
            // of any size always fits, so progress is always possible.
            return false;
        }
        self.uncommitted_size += s;
        true
    }

    /// Returns budget for entries that were committed and handed out.
    pub(crate) fn reduce_uncommitted_size(&mut self, s: u64) {
        self.uncommitted_size = self.uncommitted_size.saturating_sub(s);
    }

    /// The leader's step function (etcd `stepLeader`).
    pub(crate) fn step_leader(&mut self, mut m: Message) -> Result<()> {
        // Messages that do not need a progress for m.from.
        match m.msg_type {
            MessageType::MsgBeat => {
                self.bcast_heartbeat();
                return Ok(());
            }
            MessageType::MsgCheckQuorum => {
                if !self.trk.quorum_active() {
                    rlog!(
                        Level::Warn,
                        self.id,
                        "{} stepped down to follower since quorum is not active",
                        self.id
                    );
                    let term = self.term;
                    self.become_follower(term, INVALID_ID);
                } else {
                    self.count_activity_rounds();
                    self.maybe_change_membership();
                }
                // Mark everyone (but ourselves) as inactive in preparation
                // for the next check-quorum round.
                let id = self.id;
                self.trk.visit(|pid, pr| {
                    if pid != id {
                        pr.recent_active = false;
                    }
                });
                return Ok(());
            }
            MessageType::MsgProp => {
                if m.entries.is_empty() {
                    return Err(Error::InvalidState("stepped empty MsgProp".into()));
                }
                if self.trk.get(self.id).is_none() {
                    // Removed from the configuration while leading (and
                    // not stepping down): refuse new proposals.
                    return Err(Error::ProposalDropped);
                }
                if self.lead_transferee != INVALID_ID {
                    return Err(Error::ProposalDropped);
                }
                let local = m.from == INVALID_ID || m.from == self.id;
                let last = self.raft_log.last_index();
                // A proposal that ends up refused appends nothing, so it must
                // not leave a pending conf change behind either.
                let prev_pending_conf_index = self.pending_conf_index;
                for i in 0..m.entries.len() {
                    let e = &m.entries[i];
                    if e.entry_type != EntryType::EntryConfChange
                        && e.entry_type != EntryType::EntryConfChangeV2
                    {
                        continue;
                    }
                    let refusal = match ConfChangeI::from_entry(e) {
                        Ok(cc) => crate::validate::check_conf_change(&cc)
                            .err()
                            .or_else(|| self.check_conf_change(&cc)),
                        Err(err) => Some(Error::ConfChangeRefused(format!(
                            "malformed conf change: {err}"
                        ))),
                    };
                    match refusal {
                        Some(err) if local => {
                            self.pending_conf_index = prev_pending_conf_index;
                            return Err(err);
                        }
                        Some(_) => {
                            // A forwarded proposal: its proposer is on another
                            // node, so keep etcd's behaviour and turn it into
                            // an empty entry (its index still tells the
                            // proposer it went nowhere).
                            m.entries[i] = Entry {
                                entry_type: EntryType::EntryNormal,
                                ..Entry::default()
                            };
                        }
                        None => self.pending_conf_index = last + i as u64 + 1,
                    }
                }
                if !self.append_entries(&mut m.entries) {
                    self.pending_conf_index = prev_pending_conf_index;
                    return Err(Error::ProposalDropped);
                }
                self.bcast_append_deferred();
                return Ok(());
            }
            MessageType::MsgReadIndex => {
                self.handle_read_index_on_leader(m);
                return Ok(());
            }
            MessageType::MsgForgetLeader => return Ok(()),
            MessageType::MsgTransferLeader => {
                return self.handle_transfer_leader(m.from);
            }
            _ => {}
        }

        if self.trk.get(m.from).is_none() {
            return Ok(());
        }
        match m.msg_type {
            MessageType::MsgAppResp => self.handle_append_response(&m),
            MessageType::MsgHeartbeatResp => self.handle_heartbeat_response(m),
            MessageType::MsgSnapStatus => self.handle_snapshot_status(&m),
            MessageType::MsgUnreachable => {
                // The peer could not be reached: an append may have been
                // lost, so stop optimistic replication and probe.
                let pr = self.trk.get_mut(m.from).expect("checked above");
                if pr.state == ProgressState::Replicate {
                    pr.become_probe();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks a proposed conf change: etcd's propose-time validation plus
    /// raftlet's learner rules. Returns the refusal, if any.
    fn check_conf_change(&self, cc: &ConfChangeI) -> Option<Error> {
        let v2 = cc.as_v2();
        let already_pending = self.pending_conf_index > self.raft_log.applied;
        let already_joint = !self.trk.config.voters.outgoing.is_empty();
        let wants_leave_joint = v2.changes.is_empty();
        if !self.disable_conf_change_validation {
            let failed = if already_pending {
                Some(format!(
                    "possible unapplied conf change at index {} (applied to {})",
                    self.pending_conf_index, self.raft_log.applied
                ))
            } else if already_joint && !wants_leave_joint {
                Some("must transition out of joint config first".to_string())
            } else if !already_joint && wants_leave_joint {
                Some("not in joint state; refusing empty conf change".to_string())
            } else {
                None
            };
            if let Some(f) = failed {
                return Some(Error::ConfChangeRefused(f));
            }
        }
        // Promotion safety: a learner becomes a voter only once it has
        // caught up, so that it counts in the quorum without stalling it.
        let last = self.raft_log.last_index();
        let mut learners = self.trk.config.learners.clone();
        for c in &v2.changes {
            match c.change_type {
                ConfChangeType::ConfChangeAddNode => {
                    if self.trk.config.learners.contains(&c.node_id) {
                        if let Some(pr) = self.trk.get(c.node_id) {
                            #[allow(unused_mut)]
                            let mut lag = last.saturating_sub(pr.matched);
                            // The planted bug must pass this check too, or
                            // the leader refuses its own promotion.
                            #[cfg(feature = "bug-injection")]
                            if self.bugs.promote_ignores_lag {
                                lag = 0;
                            }
                            let pending_snapshot = pr.state == ProgressState::Snapshot;
                            if !pr.recent_active || pending_snapshot || lag > self.promote_max_lag {
                                return Some(Error::PromotionNotReady {
                                    id: c.node_id,
                                    lag,
                                    pending_snapshot,
                                    recent_active: pr.recent_active,
                                });
                            }
                        }
                    }
                    learners.remove(&c.node_id);
                }
                ConfChangeType::ConfChangeAddLearnerNode => {
                    learners.insert(c.node_id);
                }
                ConfChangeType::ConfChangeRemoveNode => {
                    learners.remove(&c.node_id);
                }
                _ => {}
            }
        }
        let total = learners.len() + self.trk.config.learners_next.len();
        let before = self.trk.config.learners.len() + self.trk.config.learners_next.len();
        if total > self.max_learners as usize && total > before {
            return Some(Error::TooManyLearners);
        }
        None
    }

    pub(crate) fn handle_append_response(&mut self, m: &Message) {
        let pr = self.trk.get_mut(m.from).expect("checked by caller");
        // Any response from the peer shows it is alive (check-quorum).
        pr.recent_active = true;
        if m.reject {
            // The peer rejected the append at m.index. Its hint (reject_hint,
            // log_term) is the last index of its log with a term <= log_term,
            // which lets us skip a whole term's worth of entries per probe.
            let mut next_probe = m.reject_hint;
            if m.log_term > 0 {
                // Skip every entry of ours whose term is above the hint's:
                // none of them can match.
                next_probe = self
                    .raft_log
                    .find_conflict_by_term(m.reject_hint, m.log_term)
                    .0;
            }
            let pr = self.trk.get_mut(m.from).expect("checked by caller");
            if pr.maybe_decr_to(m.index, next_probe) {
                if pr.state == ProgressState::Replicate {
                    pr.become_probe();
                }
                self.send_append(m.from);
            }
            return;
        }
        let old_paused_probe = pr.matched == m.index && pr.state == ProgressState::Probe;
        if !(pr.maybe_update(m.index) || old_paused_probe) {
            return;
        }
        match pr.state {
            ProgressState::Probe => pr.become_replicate(),
            // (The first index is read only here: it is a storage read.)
            ProgressState::Snapshot if pr.matched + 1 >= self.raft_log.first_index() => {
                // The peer caught up through appends or a different snapshot
                // than the one in flight: any snapshot that allows
                // replication from our log is as good as ours.
                pr.become_probe();
                pr.become_replicate();
            }
            ProgressState::Replicate => pr.inflights.free_le(m.index),
            _ => {}
        }
        if self.maybe_commit() {
            // Committing may release reads that waited for the first commit
            // of this term, and every follower should learn the new commit.
            self.release_pending_read_index_messages();
            self.bcast_append();
        } else if m.from != self.id {
            let committed = self.raft_log.committed;
            if self
                .trk
                .get(m.from)
                .is_some_and(|pr| pr.can_bump_commit(committed))
            {
                // The peer does not know the latest commit index yet.
                self.send_append(m.from);
            }
        }
        if m.from != self.id {
            // Flow control may have freed room: send what is left, in as
            // many messages as the inflight window allows.
            while self.maybe_send_append(m.from, false) {}
        }
        if m.from == self.lead_transferee {
            let last = self.raft_log.last_index();
            if self.trk.get(m.from).is_some_and(|pr| pr.matched == last) {
                self.send_timeout_now(m.from);
            }
        }
    }

    fn handle_heartbeat_response(&mut self, m: Message) {
        let last = self.raft_log.last_index();
        let pr = self.trk.get_mut(m.from).expect("checked by caller");
        pr.recent_active = true;
        pr.msg_app_flow_paused = false;
        if pr.matched < last || pr.state == ProgressState::Probe {
            // The follower is behind (or being probed): the heartbeat round
            // trip shows it is reachable, so resume appends.
            self.send_append(m.from);
        }
        self.handle_quiesce_ack(&m);
        self.handle_read_ack(&m);
    }

    /// Processes an append on a follower (etcd `handleAppendEntries`).
    pub(crate) fn handle_append_entries(&mut self, m: Message) {
        if m.index < self.raft_log.committed {
            // Everything up to our commit index matches the leader's log
            // already: acknowledge that much.
            let mut resp = Message::new(MessageType::MsgAppResp, INVALID_ID, m.from);
            resp.index = self.raft_log.committed;
            self.send(resp);
            return;
        }
        let from = m.from;
        let (prev_index, prev_term, commit) = (m.index, m.log_term, m.commit);
        let a = LogSlice {
            term: m.term,
            prev: EntryId {
                term: prev_term,
                index: prev_index,
            },
            entries: m.entries,
        };
        if !contiguous(a.prev, &a.entries) {
            // A malformed append (entries not contiguous after prev) can
            // only come from a buggy or hostile peer: never let it near the
            // log.
            return;
        }
        #[cfg(feature = "bug-injection")]
        let a = {
            let mut a = a;
            if self.bugs.append_ignores_prev_term && a.prev.index <= self.raft_log.last_index() {
                if let Ok(t) = self.raft_log.term(a.prev.index) {
                    a.prev.term = t;
                }
            }
            a
        };
        if let Some(last_new) = self.raft_log.maybe_append(a, commit) {
            let mut resp = Message::new(MessageType::MsgAppResp, INVALID_ID, from);
            resp.index = last_new;
            self.send(resp);
            return;
        }
        // Our log does not contain an entry at prev_index with prev_term.
        // Reject with a hint: the largest index <= min(prev_index, last) whose
        // term is <= prev_term. The leader can then skip every entry of its
        // own log in between that cannot match (fast log rejection).
        let hint = prev_index.min(self.raft_log.last_index());
        let (hint_index, hint_term) = self.raft_log.find_conflict_by_term(hint, prev_term);
        let mut resp = Message::new(MessageType::MsgAppResp, INVALID_ID, from);
        resp.index = prev_index;
        resp.reject = true;
        resp.reject_hint = hint_index;
        resp.log_term = hint_term;
        self.send(resp);
    }

    /// Processes a heartbeat on a follower (etcd `handleHeartbeat`).
    pub(crate) fn handle_heartbeat(&mut self, m: Message) {
        // The leader never sends a commit index beyond our match, so this
        // cannot commit an entry we don't share with it.
        let commit = m.commit.min(self.raft_log.last_index());
        self.raft_log.commit_to(commit);
        let mut resp = Message::new(MessageType::MsgHeartbeatResp, INVALID_ID, m.from);
        resp.context = match super::quiesce::decode_req(m.context()) {
            Some((index, term)) => self.answer_quiesce_request(m.from, index, term, m.context),
            None => m.context,
        };
        self.send(resp);
    }

    /// Records that the host applied entries up to `index` whose encoded
    /// size was `size` (etcd `appliedTo`), and starts the automatic leave of
    /// a joint configuration when its time has come.
    pub(crate) fn applied_to(&mut self, index: u64, size: u64) {
        let new_applied = index.max(self.raft_log.applied);
        self.raft_log.applied_to(new_applied, size);
        if self.trk.config.auto_leave
            && new_applied >= self.pending_conf_index
            && self.state == StateRole::Leader
        {
            // The joint configuration is applied: propose leaving it. The
            // empty V2 change is what an explicit leave looks like too.
            let cc = crate::pb::ConfChangeV2::default();
            let (t, data) = ConfChangeI::V2(cc).to_entry_parts();
            let mut m = Message::new(MessageType::MsgProp, INVALID_ID, INVALID_ID);
            m.entries.push(Entry {
                entry_type: t,
                data: Some(data),
                ..Entry::default()
            });
            // A refusal (for example a pending transfer) is retried at the
            // next application.
            let _ = self.step(m);
        }
    }

    /// Whether the leader has committed an entry of its own term (needed
    /// before it can serve reads: until then its commit index may be stale).
    pub(crate) fn committed_entry_in_current_term(&self) -> bool {
        crate::log::RaftLog::<S>::zero_term_on_out_of_bounds(
            self.raft_log.term(self.raft_log.committed),
        ) == self.term
    }
}

/// Whether `ents` follow `prev` index by index. (Terms are not checked:
/// a log whose terms go backwards is impossible from a correct leader but
/// cannot corrupt the log's structure, and etcd accepts it.)
fn contiguous(prev: EntryId, ents: &[Entry]) -> bool {
    let mut p = prev.index;
    for e in ents {
        if p.checked_add(1) != Some(e.index) {
            return false;
        }
        p = e.index;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::tests::{ent, new_test_raft, new_test_storage};

    /// A follower drops an append whose entries skip or repeat an index
    /// instead of corrupting its log.
    #[test]
    fn malformed_append_is_dropped() {
        let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1, 2], &[]));
        r.become_follower(2, 2);
        for entries in [
            vec![ent(2, 1), ent(2, 3)],
            vec![ent(2, 2)],
            vec![ent(2, 1), ent(2, 1)],
        ] {
            let mut m = Message::new(MessageType::MsgApp, 2, 1);
            m.term = 2;
            m.entries = entries;
            r.step(m).unwrap();
            assert_eq!(r.raft_log.last_index(), 0);
            assert!(r.read_messages().is_empty());
        }
        assert!(contiguous(EntryId::default(), &[ent(1, 1), ent(2, 2)]));
    }
}
