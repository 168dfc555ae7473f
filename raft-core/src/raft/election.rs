//! Elections: campaigning, pre-vote, granting and counting votes.
//!
//! Ported from etcd-io/raft raft.go (hup, campaign, poll, Step's vote case).

use super::{CampaignType, Raft, StateRole, CAMPAIGN_TRANSFER, INVALID_ID};
use crate::logging::{rlog, Level};
use crate::pb::{Entry, Message, MessageType};
use crate::quorum::VoteResult;
use crate::storage::Storage;
use crate::types::EntryId;
use crate::validate::MAX_TERM_OR_INDEX;

impl<S: Storage> Raft<S> {
    /// Starts an election if this node may (etcd `hup`).
    pub(crate) fn hup(&mut self, t: CampaignType) {
        if self.state == StateRole::Leader {
            return;
        }
        if !self.promotable() {
            return;
        }
        if self.has_unapplied_conf_changes() {
            // A conf change that is committed but not applied could change
            // who may vote; campaigning now could elect a leader that the
            // next configuration would not.
            return;
        }
        self.campaign(t);
    }

    /// Whether a conf change is committed but not yet applied.
    fn has_unapplied_conf_changes(&self) -> bool {
        let log = &self.raft_log;
        if log.applied >= log.committed {
            return false;
        }
        let (lo, hi) = (log.applied + 1, log.committed + 1);
        // The closure stops the scan with an error at the first conf change.
        // A storage failure also ends it with an error: the committed,
        // unapplied range must be readable, so refuse to campaign then too.
        log.scan(lo, hi, log.max_applying_ents_size, |ents| {
            if ents.iter().any(Entry::is_conf_change) {
                return Err(crate::Error::InvalidState("found".into()));
            }
            Ok(())
        })
        .is_err()
    }

    /// Runs a (pre-)election round (etcd `campaign`).
    ///
    /// Not from a term or last index at [`MAX_TERM_OR_INDEX`]: the round
    /// would raise the term (or append the new leader's first entry) past
    /// it, so the node stays where it is instead of wrapping.
    pub(crate) fn campaign(&mut self, t: CampaignType) {
        if self.term >= MAX_TERM_OR_INDEX || self.raft_log.last_index() >= MAX_TERM_OR_INDEX {
            rlog!(
                Level::Warn,
                self.id,
                "{} [term: {}, last index: {}] cannot campaign: at the limit {}",
                self.id,
                self.term,
                self.raft_log.last_index(),
                MAX_TERM_OR_INDEX
            );
            return;
        }
        let (vote_msg, term) = if t == CampaignType::PreElection {
            self.become_pre_candidate();
            // Pre-vote RPCs are sent for the next term before we've
            // incremented our own.
            (MessageType::MsgPreVote, self.next_campaign_term())
        } else {
            self.become_candidate();
            (MessageType::MsgVote, self.term)
        };
        let ids = self.trk.config.voters.ids();
        let last = self.raft_log.last_entry_id();
        for id in ids {
            if id == self.id {
                // Our own vote counts once it is durable: it is delivered
                // back to us after the hard state has been persisted.
                let mut m =
                    Message::new(vote_msg.vote_response().expect("vote type"), INVALID_ID, id);
                m.term = term;
                self.send(m);
                continue;
            }
            let mut m = Message::new(vote_msg, INVALID_ID, id);
            m.term = term;
            m.index = last.index;
            m.log_term = last.term;
            if t == CampaignType::Transfer {
                m.context = Some(bytes::Bytes::from_static(CAMPAIGN_TRANSFER));
            }
            self.send(m);
        }
    }

    /// Records a vote and returns the tally (etcd `poll`).
    pub(crate) fn poll(&mut self, id: u64, v: bool) -> (usize, usize, VoteResult) {
        self.trk.record_vote(id, v);
        self.tally_votes()
    }

    fn tally_votes(&self) -> (usize, usize, VoteResult) {
        #[cfg(feature = "bug-injection")]
        if self.bugs.learner_counts_in_quorum {
            // Planted bug: learners' votes count as if they were voters.
            let mut cfg = self.trk.config.voters.clone();
            for l in &self.trk.config.learners {
                cfg.incoming.insert(*l);
            }
            let res = cfg.vote_result(|id| self.trk.vote(id));
            let granted = self.trk.votes().filter(|&(_, v)| v).count();
            let rejected = self.trk.votes().count() - granted;
            return (granted, rejected, res);
        }
        self.trk.tally_votes()
    }

    /// Answers a (pre-)vote request (etcd `Step`, case MsgVote/MsgPreVote).
    pub(crate) fn handle_vote_request(&mut self, m: Message) {
        // We can vote if this is a repeat of a vote we've already cast, or we
        // haven't voted and don't think there's a leader yet in this term, or
        // this is a pre-vote for a future term.
        #[allow(unused_mut)]
        let mut can_vote = self.vote == m.from
            || (self.vote == INVALID_ID && self.lead == INVALID_ID)
            || (m.msg_type == MessageType::MsgPreVote && m.term > self.term);
        #[cfg(feature = "bug-injection")]
        if self.bugs.vote_twice {
            can_vote = true;
        }
        let cand = EntryId {
            term: m.log_term,
            index: m.index,
        };
        #[allow(unused_mut)]
        let mut up_to_date = self.raft_log.is_up_to_date(cand);
        #[cfg(feature = "bug-injection")]
        if self.bugs.vote_ignores_log {
            up_to_date = true;
        }
        let resp_type = m.msg_type.vote_response().expect("vote type");
        if can_vote && up_to_date {
            // The response carries the term of the request, not ours: a
            // pre-vote is granted for the future term the candidate will
            // use, and a vote's term equals ours by now.
            let mut resp = Message::new(resp_type, INVALID_ID, m.from);
            resp.term = m.term;
            self.send(resp);
            if m.msg_type == MessageType::MsgVote {
                // Only record real votes.
                self.election_elapsed = 0;
                self.vote = m.from;
            }
        } else if self.term != 0 {
            let mut resp = Message::new(resp_type, INVALID_ID, m.from);
            resp.term = self.term;
            resp.reject = true;
            self.send(resp);
        }
        // At term 0 (storage holds entries whose hard state a crash lost)
        // a rejection would carry no term, which every peer refuses as
        // malformed: the candidate learns nothing from it, so none is sent.
        // It still loses: our log is ahead of its, and without our vote it
        // waits for the others' answers.
    }

    /// Counts a vote response while (pre-)campaigning.
    pub(crate) fn handle_vote_response(&mut self, m: Message) {
        let (_, _, res) = self.poll(m.from, !m.reject);
        match res {
            VoteResult::Won => {
                if self.state == StateRole::PreCandidate {
                    self.campaign(CampaignType::Election);
                } else {
                    self.become_leader();
                    self.bcast_append();
                }
            }
            VoteResult::Lost => {
                // A rejected pre-vote response carries the voter's term,
                // which may be ours; stay in it.
                let term = self.term;
                self.become_follower(term, INVALID_ID);
            }
            VoteResult::Pending => {}
        }
    }
}
