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
    pub option: ReadOnlyOption,
    pending: VecDeque<ReadIndexStatus>,
    /// For each peer that acknowledged a read round: the highest sequence
    /// number it acknowledged. An acknowledgement of round `s` confirms
    /// every pending read with a sequence number <= `s`, so the reads
    /// acknowledged by a peer are exactly those with `seq <= acked`: the
    /// acknowledgement sets shrink along the queue, and the reads to
    /// release are always a prefix of it. (Keeping one set per read made
    /// each acknowledgement cost O(pending reads) set inserts.)
    acked: Vec<(u64, u64)>,
}

/// The length of a read round's heartbeat context: a magic byte and the
/// big-endian sequence number.
const CTX_LEN: usize = 9;
const CTX_MAGIC: u8 = 0xa5;

fn encode_seq(seq: u64) -> Bytes {
    let mut v = Vec::with_capacity(CTX_LEN);
    v.push(CTX_MAGIC);
    v.extend_from_slice(&seq.to_be_bytes());
    Bytes::from(v)
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
    pub(crate) fn new(option: ReadOnlyOption) -> ReadOnly {
        ReadOnly {
            option,
            pending: VecDeque::new(),
            acked: Vec::new(),
        }
    }

    /// Registers a read at commit index `index` confirmed by round `seq`.
    fn add_request(&mut self, index: u64, seq: u64, req: Message) {
        self.pending.push_back(ReadIndexStatus { req, index, seq });
    }

    /// The heartbeat context of the newest pending read, if any.
    pub(crate) fn last_pending_request_ctx(&self) -> Option<Bytes> {
        self.pending.back().map(|s| encode_seq(s.seq))
    }
}

#[cfg(test)]
impl ReadOnly {
    /// The number of reads waiting for their heartbeat round.
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
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
            self.pending_read_index_messages.push(m);
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
        match self.read_only.option {
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
                let committed = self.raft_log.committed;
                self.respond_to_read_index(m, committed);
            }
        }
    }

    /// Releases reads that waited for the first commit of this term.
    pub(crate) fn release_pending_read_index_messages(&mut self) {
        if self.pending_read_index_messages.is_empty() {
            return;
        }
        if !self.committed_entry_in_current_term() {
            return;
        }
        let msgs = std::mem::take(&mut self.pending_read_index_messages);
        for m in msgs {
            self.send_read_index_response(m);
        }
    }

    /// Processes the read context echoed in a heartbeat response.
    pub(crate) fn handle_read_ack(&mut self, m: &Message) {
        if self.read_only.option != ReadOnlyOption::Safe {
            return;
        }
        let Some(seq) = decode_seq(m.context()) else {
            return;
        };
        self.ack_read_round(m.from, seq);
    }

    /// Records that `from` acknowledged round `seq` (and so every earlier
    /// round: their reads were registered before that heartbeat was sent),
    /// and answers every read whose round now has a quorum.
    fn ack_read_round(&mut self, from: u64, seq: u64) {
        // Acknowledgements of rounds no longer pending change nothing.
        match self.read_only.pending.front() {
            Some(front) if front.seq <= seq => {}
            _ => return,
        }
        let acked = &mut self.read_only.acked;
        match acked.iter_mut().find(|(id, _)| *id == from) {
            Some((_, s)) => *s = (*s).max(seq),
            None => acked.push((from, seq)),
        }
        // Release the reads, oldest first, while a quorum acknowledged them.
        while let Some(front) = self.read_only.pending.front() {
            let seq = front.seq;
            let acked = &self.read_only.acked;
            let won = self.trk.config.voters.vote_result(|id| {
                acked
                    .iter()
                    .any(|&(p, s)| p == id && s >= seq)
                    .then_some(true)
            }) == VoteResult::Won;
            if !won {
                break;
            }
            let st = self.read_only.pending.pop_front().expect("front exists");
            self.respond_to_read_index(st.req, st.index);
        }
        if self.read_only.pending.is_empty() {
            self.read_only.acked.clear();
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
