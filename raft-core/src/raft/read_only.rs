//! Linearizable reads: ReadIndex (safe, confirmed by a heartbeat round) and
//! lease-based reads.
//!
//! Ported from etcd-io/raft read_only.go with one deliberate change: the
//! heartbeat round that confirms leadership carries the leader's own
//! sequence number as its context, never the host's request context. A
//! retried or duplicated request context can therefore never release a read
//! early or be confused with another read (etcd#20418).

use std::collections::VecDeque;

use bytes::Bytes;

use super::{Raft, INVALID_ID};
use crate::config::ReadOnlyOption;
use crate::pb::{Message, MessageType};
use crate::quorum::VoteResult;
use crate::storage::Storage;

/// The answer to a `read_index` request: once the host has applied up to
/// `index`, reads issued before the request are linearizable.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadState {
    /// The commit index at the time the read was confirmed.
    pub index: u64,
    /// The context the host passed to `read_index`.
    pub request_ctx: Bytes,
}

/// One read waiting for its heartbeat round.
#[derive(Debug, Clone)]
struct ReadIndexStatus {
    req: Message,
    /// The commit index when the read arrived.
    index: u64,
    /// The sequence number of the heartbeat round confirming it.
    seq: u64,
}

/// The reads waiting for leadership confirmation, oldest first.
#[derive(Debug, Clone)]
pub(crate) struct ReadOnly {
    /// The ReadIndex queue, allocated at the first read: only a leader
    /// serving reads has one, so every other group carries one pointer
    /// instead of three empty collections (80 bytes).
    queue: Option<Box<ReadQueue>>,
    /// The leader's lease under [`ReadOnlyOption::LeaseBased`] (allocated
    /// on first use, so groups with safe reads carry only a pointer).
    lease: Option<Box<Lease>>,
}

/// The ReadIndex requests of a leader and their acknowledgements.
#[derive(Debug, Clone, Default)]
struct ReadQueue {
    pending: VecDeque<ReadIndexStatus>,
    /// For each peer that acknowledged a read round: the highest sequence
    /// number it acknowledged. An acknowledgement of round `s` confirms
    /// every pending read with a sequence number <= `s`, so the reads
    /// acknowledged by a peer are exactly those with `seq <= acked`: the
    /// acknowledgement sets shrink along the queue, and the reads to
    /// release are always a prefix of it. (Keeping one set per read made
    /// each acknowledgement cost O(pending reads) set inserts.)
    acked: Vec<(u64, u64)>,
    /// ReadIndex requests that arrived before the leader committed an
    /// entry of its term; answered once it has.
    waiting: Vec<Message>,
}

/// A leader's read lease, counted from the send time of the newest
/// heartbeat round a quorum acknowledged.
///
/// A follower that answers a heartbeat refuses votes (and pre-votes) for an
/// election timeout after it received it, so no other leader can be elected
/// with its vote until then; a quorum of such followers means no other
/// leader at all. The heartbeat was received after it was sent, so the
/// leader may serve reads from its own state for a while after the
/// *send* time of the round: [`Lease::LEN_DIVISOR`] of an election timeout
/// of its own ticks, which stays inside every follower's refusal window as
/// long as no clock runs more than twice as fast as another.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lease {
    /// The leader's ticks since it became leader.
    clock: u64,
    /// Lease rounds sent and not yet acknowledged by a quorum: (seq, clock
    /// at send), oldest first.
    sent: VecDeque<(u64, u64)>,
    /// For each peer, the newest lease round it acknowledged.
    acked: Vec<(u64, u64)>,
    /// The send time of the newest round a quorum acknowledged.
    start: Option<u64>,
    /// Set when the leader hands its leadership away (MsgTimeoutNow): the
    /// transferee campaigns past every follower's refusal, so no lease
    /// holds for the rest of the term.
    revoked: bool,
}

impl Lease {
    /// The lease lasts `election_timeout / LEN_DIVISOR` ticks (at least 1).
    pub(crate) const LEN_DIVISOR: u64 = 2;
}

/// The length of a read round's heartbeat context: a magic byte and the
/// big-endian sequence number.
const CTX_LEN: usize = 9;
const CTX_MAGIC: u8 = 0xa5;

/// The context of read round `seq`, in one allocation that its clones
/// (one per heartbeat) share.
fn encode_seq(seq: u64) -> Bytes {
    let mut ctx = [0u8; CTX_LEN];
    ctx[0] = CTX_MAGIC;
    ctx[1..].copy_from_slice(&seq.to_be_bytes());
    crate::copy_payload(&ctx)
}

fn decode_seq(ctx: &[u8]) -> Option<u64> {
    if ctx.len() != CTX_LEN || ctx[0] != CTX_MAGIC {
        return None;
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&ctx[1..]);
    Some(u64::from_be_bytes(b))
}

impl ReadOnly {
    pub(crate) fn new() -> ReadOnly {
        ReadOnly {
            queue: None,
            lease: None,
        }
    }

    /// Whether no read waits for its heartbeat round.
    pub(crate) fn no_pending(&self) -> bool {
        self.queue.as_ref().is_none_or(|q| q.pending.is_empty())
    }

    /// Forgets the lease: no round sent so far can give one any more
    /// (a quiescing leader, whose lease clock stops).
    pub(crate) fn drop_lease(&mut self) {
        self.lease = None;
    }

    /// Whether no read waits for the leader's first commit of its term.
    pub(crate) fn no_waiting(&self) -> bool {
        self.queue.as_ref().is_none_or(|q| q.waiting.is_empty())
    }

    /// Holds a read until the leader has committed an entry of its term.
    fn push_waiting(&mut self, m: Message) {
        self.queue
            .get_or_insert_with(Default::default)
            .waiting
            .push(m);
    }

    /// The reads held by [`ReadOnly::push_waiting`], oldest first.
    fn take_waiting(&mut self) -> Vec<Message> {
        self.queue
            .as_deref_mut()
            .map(|q| std::mem::take(&mut q.waiting))
            .unwrap_or_default()
    }

    /// Frees the buffers of an idle group: all of them when no read is
    /// pending or waiting, else those of the empty collections.
    pub(crate) fn shrink_idle(&mut self) {
        let Some(q) = self.queue.as_deref_mut() else {
            return;
        };
        if q.pending.is_empty() {
            // With no read pending, the recorded acknowledgements confirm
            // nothing: every later read has a higher sequence number.
            q.pending = VecDeque::new();
            q.acked = Vec::new();
        }
        if q.waiting.is_empty() {
            q.waiting = Vec::new();
        }
        if q.pending.is_empty() && q.waiting.is_empty() {
            self.queue = None;
        }
    }

    fn lease_mut(&mut self) -> &mut Lease {
        self.lease.get_or_insert_with(Default::default)
    }

    /// Registers a read at commit index `index` confirmed by round `seq`.
    fn add_request(&mut self, index: u64, seq: u64, req: Message) {
        self.queue
            .get_or_insert_with(Default::default)
            .pending
            .push_back(ReadIndexStatus { req, index, seq });
    }

    /// The heartbeat context of the newest pending read, if any.
    pub(crate) fn last_pending_request_ctx(&self) -> Option<Bytes> {
        self.queue
            .as_ref()
            .and_then(|q| q.pending.back())
            .map(|s| encode_seq(s.seq))
    }
}

#[cfg(test)]
impl ReadOnly {
    /// The number of reads waiting for their heartbeat round.
    pub(crate) fn pending_len(&self) -> usize {
        self.queue.as_ref().map_or(0, |q| q.pending.len())
    }

    /// The number of reads waiting for the leader's first commit of its term.
    pub(crate) fn waiting_len(&self) -> usize {
        self.queue.as_ref().map_or(0, |q| q.waiting.len())
    }
}

impl<S: Storage> Raft<S> {
    /// A read request reached the leader (etcd stepLeader, case MsgReadIndex).
    pub(crate) fn handle_read_index_on_leader(&mut self, m: Message) {
        if self.trk.is_singleton() {
            // With one voter, the leader's commit index is always current.
            let committed = self.raft_log.committed;
            self.respond_to_read_index(m, committed);
            return;
        }
        if !self.committed_entry_in_current_term() {
            // A new leader's commit index may lag the true one until it has
            // committed an entry of its own term: hold the read until then.
            self.read_only.push_waiting(m);
            return;
        }
        self.send_read_index_response(m);
    }

    /// Answers or registers a read once the leader committed in its term.
    pub(crate) fn send_read_index_response(&mut self, m: Message) {
        #[cfg(feature = "bug-injection")]
        if self.bugs.read_without_quorum {
            let committed = self.raft_log.committed;
            self.respond_to_read_index(m, committed);
            return;
        }
        match self.read_only_option {
            ReadOnlyOption::Safe => {
                let seq = self.next_read_seq;
                self.next_read_seq += 1;
                let committed = self.raft_log.committed;
                self.read_only.add_request(committed, seq, m);
                let id = self.id;
                self.ack_read_round(id, seq);
                self.bcast_heartbeat_with_ctx(Some(encode_seq(seq)));
            }
            ReadOnlyOption::LeaseBased => {
                if self.lease_valid() {
                    let committed = self.raft_log.committed;
                    self.respond_to_read_index(m, committed);
                    return;
                }
                // No lease now (a new leader, a lost quorum, a transfer
                // under way): confirm this read with a heartbeat round, as
                // a safe read is; the round renews the lease too.
                let seq = self.next_read_seq;
                self.next_read_seq += 1;
                let committed = self.raft_log.committed;
                self.read_only.add_request(committed, seq, m);
                let id = self.id;
                self.ack_read_round(id, seq);
                self.send_lease_round(seq);
            }
        }
    }

    /// Whether this leader's lease lets it answer a read at once.
    pub(crate) fn lease_valid(&self) -> bool {
        let Some(lease) = self.read_only.lease.as_deref() else {
            return false;
        };
        let len = (self.election_timeout as u64 / Lease::LEN_DIVISOR).max(1);
        !lease.revoked && lease.start.is_some_and(|start| lease.clock < start + len)
    }

    /// Under lease-based reads, a heartbeat broadcast is a lease round: its
    /// context carries a fresh sequence number whose send time is recorded.
    /// Returns the context for the heartbeats, `None` under safe reads.
    pub(crate) fn next_lease_round_ctx(&mut self) -> Option<Bytes> {
        if self.read_only_option != ReadOnlyOption::LeaseBased {
            return None;
        }
        let seq = self.next_read_seq;
        self.next_read_seq += 1;
        self.record_lease_round(seq);
        Some(encode_seq(seq))
    }

    /// Sends the heartbeat round `seq` (already numbered), as a lease round.
    fn send_lease_round(&mut self, seq: u64) {
        self.record_lease_round(seq);
        self.bcast_heartbeat_with_ctx(Some(encode_seq(seq)));
    }

    fn record_lease_round(&mut self, seq: u64) {
        let id = self.id;
        let lease = self.read_only.lease_mut();
        let clock = lease.clock;
        lease.sent.push_back((seq, clock));
        self.ack_lease_round(id, seq);
    }

    /// Advances the lease clock by one leader tick and forgets rounds too
    /// old to give a lease any more.
    pub(crate) fn tick_lease(&mut self) {
        let len = (self.election_timeout as u64 / Lease::LEN_DIVISOR).max(1);
        if let Some(lease) = self.read_only.lease.as_deref_mut() {
            lease.clock += 1;
            while lease
                .sent
                .front()
                .is_some_and(|&(_, t)| t + len <= lease.clock)
            {
                lease.sent.pop_front();
            }
        }
    }

    /// No lease holds any more in this term (a leadership transfer began).
    pub(crate) fn revoke_lease(&mut self) {
        if let Some(lease) = self.read_only.lease.as_deref_mut() {
            lease.revoked = true;
        }
    }

    /// The configuration changed: a lease acknowledged by a quorum of the
    /// old one proves nothing about the new one.
    pub(crate) fn reset_lease_acks(&mut self) {
        if let Some(lease) = self.read_only.lease.as_deref_mut() {
            lease.start = None;
            lease.acked.clear();
        }
    }

    /// Records that `from` acknowledged lease round `seq`, and moves the
    /// lease start to the newest round a quorum acknowledged.
    fn ack_lease_round(&mut self, from: u64, seq: u64) {
        let Some(lease) = self.read_only.lease.as_deref_mut() else {
            return;
        };
        match lease.acked.iter_mut().find(|(id, _)| *id == from) {
            Some((_, s)) => *s = (*s).max(seq),
            None => lease.acked.push((from, seq)),
        }
        let acked = &lease.acked;
        let won = |s: u64| {
            self.trk.config.voters.vote_result(|id| {
                acked
                    .iter()
                    .any(|&(p, a)| p == id && a >= s)
                    .then_some(true)
            }) == VoteResult::Won
        };
        let newest = lease.sent.iter().rev().find(|&&(s, _)| won(s)).copied();
        if let Some((s, t)) = newest {
            lease.start = Some(lease.start.map_or(t, |st| st.max(t)));
            while lease.sent.front().is_some_and(|&(f, _)| f <= s) {
                lease.sent.pop_front();
            }
        }
    }

    /// Releases reads that waited for the first commit of this term.
    pub(crate) fn release_pending_read_index_messages(&mut self) {
        if self.read_only.no_waiting() {
            return;
        }
        if !self.committed_entry_in_current_term() {
            return;
        }
        let msgs = self.read_only.take_waiting();
        for m in msgs {
            self.send_read_index_response(m);
        }
    }

    /// Processes the read context echoed in a heartbeat response.
    pub(crate) fn handle_read_ack(&mut self, m: &Message) {
        let Some(seq) = decode_seq(m.context()) else {
            return;
        };
        self.ack_read_round(m.from, seq);
        if self.read_only_option == ReadOnlyOption::LeaseBased {
            self.ack_lease_round(m.from, seq);
        }
    }

    /// Records that `from` acknowledged round `seq` (and so every earlier
    /// round: their reads were registered before that heartbeat was sent),
    /// and answers every read whose round now has a quorum.
    fn ack_read_round(&mut self, from: u64, seq: u64) {
        // Acknowledgements of rounds no longer pending change nothing.
        let Some(q) = self.read_only.queue.as_deref_mut() else {
            return;
        };
        match q.pending.front() {
            Some(front) if front.seq <= seq => {}
            _ => return,
        }
        match q.acked.iter_mut().find(|(id, _)| *id == from) {
            Some((_, s)) => *s = (*s).max(seq),
            None => q.acked.push((from, seq)),
        }
        // Release the reads, oldest first, while a quorum acknowledged them.
        while let Some(q) = self.read_only.queue.as_deref_mut() {
            let Some(front) = q.pending.front() else {
                break;
            };
            let seq = front.seq;
            let acked = &q.acked;
            let won = self.trk.config.voters.vote_result(|id| {
                acked
                    .iter()
                    .any(|&(p, s)| p == id && s >= seq)
                    .then_some(true)
            }) == VoteResult::Won;
            if !won {
                break;
            }
            let st = q.pending.pop_front().expect("front exists");
            self.respond_to_read_index(st.req, st.index);
        }
        if let Some(q) = self.read_only.queue.as_deref_mut() {
            if q.pending.is_empty() {
                q.acked.clear();
            }
        }
    }

    /// Delivers a read answer: locally as a ReadState, or to the follower
    /// that forwarded the request (etcd `responseToReadIndexReq`).
    pub(crate) fn respond_to_read_index(&mut self, req: Message, index: u64) {
        if req.from == INVALID_ID || req.from == self.id {
            let ctx = Self::read_ctx(&req);
            self.read_states.push(ReadState {
                index,
                request_ctx: ctx,
            });
            return;
        }
        let mut m = Message::new(MessageType::MsgReadIndexResp, INVALID_ID, req.from);
        m.index = index;
        m.entries = req.entries;
        self.send(m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_context_round_trips_and_rejects_foreign_contexts() {
        assert_eq!(decode_seq(&encode_seq(42)), Some(42));
        assert_eq!(decode_seq(b"ctx"), None);
        assert_eq!(decode_seq(&[0u8; CTX_LEN]), None);
    }
}
