//! Quiescence: an idle group stops ticking (raftlet extension, off unless
//! [`crate::Config::quiesce`] is set; docs/architecture.md "Quiescence"
//! states the rule and why it is safe).
//!
//! A leader whose group is idle (everything committed, applied and
//! acknowledged by every peer, nothing pending) sends, instead of its
//! next heartbeat, a *quiesce request*: an ordinary `MsgHeartbeat` whose
//! context names the leader's last entry. A caught-up raftlet follower
//! quiesces and answers with a *quiesce ack* context; once every peer
//! acked the same round the leader quiesces too. A quiesced node ignores
//! ticks; any other message, proposal or read wakes it, and the host
//! wakes followers whose leader's node fell silent
//! ([`crate::RawNode::wake_leader_lost`]).
//!
//! Both contexts are plain heartbeat contexts, so an etcd peer decodes
//! them. An etcd follower (or a raftlet one with quiescence off) echoes the
//! request unchanged, as etcd does with every heartbeat context; the
//! leader then stops offering quiescence for the rest of its term, and the
//! group behaves as if quiescence were off.

use bytes::Bytes;

use super::{Raft, StateRole, INVALID_ID};
use crate::pb::{Message, MessageType};
use crate::storage::Storage;
use crate::tracker::ProgressState;

/// The first byte of both quiescence contexts (read-round contexts use
/// 0xa5, so neither is ever taken for the other).
const MAGIC: u8 = 0xa6;
/// Second byte of a quiesce request: `MAGIC, REQ, last index, last term`.
const REQ: u8 = b'Q';
/// Second byte of a quiesce ack: `MAGIC, ACK, last index`.
const ACK: u8 = b'A';
const REQ_LEN: usize = 18;
const ACK_LEN: usize = 10;

fn encode_req(index: u64, term: u64) -> Bytes {
    let mut v = Vec::with_capacity(REQ_LEN);
    v.push(MAGIC);
    v.push(REQ);
    v.extend_from_slice(&index.to_be_bytes());
    v.extend_from_slice(&term.to_be_bytes());
    Bytes::from(v)
}

fn encode_ack(index: u64) -> Bytes {
    let mut v = Vec::with_capacity(ACK_LEN);
    v.push(MAGIC);
    v.push(ACK);
    v.extend_from_slice(&index.to_be_bytes());
    Bytes::from(v)
}

fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// The (last index, last term) a quiesce request names, if `ctx` is one.
pub(crate) fn decode_req(ctx: &[u8]) -> Option<(u64, u64)> {
    (ctx.len() == REQ_LEN && ctx[0] == MAGIC && ctx[1] == REQ)
        .then(|| (be_u64(&ctx[2..10]), be_u64(&ctx[10..18])))
}

/// The last index a quiesce ack names, if `ctx` is one.
fn decode_ack(ctx: &[u8]) -> Option<u64> {
    (ctx.len() == ACK_LEN && ctx[0] == MAGIC && ctx[1] == ACK).then(|| be_u64(&ctx[2..10]))
}

/// A leader's quiescence round (the ack list is allocated only while a
/// round is in flight). The node's flags sit in `Raft` beside its other
/// flags, where they cost no padding: `quiesced` (the node sleeps) with
/// the fields a tick reads, `quiesce_enabled`, `quiesce_unsupported` and
/// `quiesce_retry` with the rest.
#[derive(Debug, Clone, Default)]
pub(crate) struct Quiesce {
    /// Leader: the round in flight, if any (a pointer: 8 bytes in every
    /// node rather than 32, allocated only while an idle leader asks).
    round: Option<Box<Round>>,
}

/// A leader's quiescence round in flight.
#[derive(Debug, Clone)]
struct Round {
    /// The last index the round names (never 0).
    index: u64,
    /// The peers that acked it.
    acks: Vec<u64>,
}

impl Quiesce {
    /// The last index named by the round in flight (0: none).
    fn round(&self) -> u64 {
        self.round.as_ref().map_or(0, |r| r.index)
    }

    /// Starts a round for `index`, forgetting any earlier one's acks.
    fn start(&mut self, index: u64) {
        match &mut self.round {
            Some(r) => {
                r.index = index;
                r.acks.clear();
            }
            None => {
                self.round = Some(Box::new(Round {
                    index,
                    acks: Vec::new(),
                }))
            }
        }
    }

    /// Forgets the round in flight.
    fn clear(&mut self) {
        self.round = None;
    }

    /// Records `from`'s ack of the round in flight; returns every peer
    /// that acked it.
    fn ack(&mut self, from: u64) -> &[u64] {
        match &mut self.round {
            Some(r) => {
                if !r.acks.contains(&from) {
                    r.acks.push(from);
                }
                &r.acks
            }
            None => &[],
        }
    }
}

impl<S: Storage> Raft<S> {
    /// Any role change, term change or restart wakes the node and
    /// forgets the leader's round.
    pub(crate) fn quiesce_reset(&mut self) {
        self.quiesced = false;
        self.quiesce_unsupported = false;
        self.quiesce.clear();
    }

    /// Whether the leader's group is idle enough to quiesce: everything
    /// committed in its term, applied, durable here and acknowledged by
    /// every peer; no read, transfer, conf change or append pending.
    pub(crate) fn leader_can_quiesce(&self) -> bool {
        if !self.quiesce_enabled
            || self.quiesce_unsupported
            || self.state != StateRole::Leader
            || self.lead_transferee != INVALID_ID
            || !self.trk.config.voters.outgoing.is_empty()
            || self.appends_deferred
            || !self.msgs_after_append.is_empty()
            || !self.read_only.no_pending()
            || !self.read_only.no_waiting()
        {
            return false;
        }
        let last = self.raft_log.last_index();
        if self.raft_log.committed != last
            || self.raft_log.applied < last
            || self.pending_conf_index > self.raft_log.applied
            || !self.committed_entry_in_current_term()
        {
            return false;
        }
        self.trk
            .progress
            .iter()
            .all(|(_, pr)| pr.matched == last && pr.state != ProgressState::Snapshot)
    }

    /// At a heartbeat tick: sends a quiesce request instead of the
    /// heartbeat when the group is idle. Returns whether it did.
    pub(crate) fn maybe_send_quiesce_request(&mut self) -> bool {
        if !self.leader_can_quiesce() {
            return false;
        }
        let last = self.raft_log.last_entry_id();
        if self.quiesce.round() != last.index {
            self.quiesce.start(last.index);
            self.quiesce_retry = false;
        } else {
            // A round for this index is unanswered (a peer is down or
            // slow): alternate with ordinary heartbeats, which under
            // lease-based reads renew the lease (a request does not).
            self.quiesce_retry = !self.quiesce_retry;
            if self.quiesce_retry {
                return false;
            }
        }
        if self.trk.progress.len() == 1 {
            // A group of one: nobody to ask.
            self.enter_quiesce();
            return true;
        }
        // The request is a heartbeat (it keeps followers' timers reset and
        // carries the commit index) whose context names our last entry.
        self.bcast_heartbeat_with_ctx(Some(encode_req(last.index, last.term)));
        true
    }

    /// Follower: answers a quiesce request (in `handle_heartbeat`, after
    /// the commit index moved). Returns the context of the response: an
    /// ack if this node quiesced, none if it cannot yet, the request
    /// itself (an echo, as etcd answers) if quiescence is off here.
    pub(crate) fn answer_quiesce_request(
        &mut self,
        from: u64,
        index: u64,
        term: u64,
        ctx: Option<Bytes>,
    ) -> Option<Bytes> {
        if !self.quiesce_enabled {
            return ctx;
        }
        let last = self.raft_log.last_entry_id();
        let caught_up = self.state == StateRole::Follower
            && self.lead == from
            && last.index == index
            && last.term == term
            && self.raft_log.committed == index
            && !self.raft_log.has_next_or_in_progress_snapshot();
        if !caught_up {
            // Not where the leader is (the leader only asks once every
            // peer matched its log, so this is a stale request): awake.
            self.wake();
            return None;
        }
        self.quiesced_now();
        Some(encode_ack(index))
    }

    /// Leader: processes the context of a heartbeat response.
    pub(crate) fn handle_quiesce_ack(&mut self, m: &Message) {
        let ctx = m.context();
        if ctx.first() != Some(&MAGIC) {
            return;
        }
        if decode_req(ctx).is_some() {
            // Echoed: the peer does not quiesce. Offer it no more this term.
            self.quiesce_unsupported = true;
            self.quiesce.clear();
            return;
        }
        let Some(index) = decode_ack(ctx) else {
            return;
        };
        if self.quiesced || index == 0 || index != self.quiesce.round() {
            return;
        }
        let acks = self.quiesce.ack(m.from);
        let id = self.id;
        let all = self
            .trk
            .progress
            .iter()
            .all(|(pid, _)| *pid == id || acks.contains(pid));
        if all && self.leader_can_quiesce() && self.raft_log.last_index() == index {
            self.enter_quiesce();
        }
    }

    /// The leader quiesces: its lease is dropped (a lease counts leader
    /// ticks, which stop now, so it could otherwise outlive its followers'
    /// vote refusals), and so are the buffers an idle group does not need.
    fn enter_quiesce(&mut self) {
        self.read_only.drop_lease();
        self.trk.visit(|_, pr| pr.inflights.shrink_idle());
        self.quiesce.clear();
        self.quiesced_now();
    }

    /// Marks the node quiesced and frees its idle buffers.
    fn quiesced_now(&mut self) {
        self.quiesced = true;
        if self.read_states.is_empty() {
            self.read_states = Vec::new();
        }
        self.read_only.shrink_idle();
        if self.msgs.is_empty() {
            self.msgs = Vec::new();
        }
        if self.msgs_after_append.is_empty() {
            self.msgs_after_append = Vec::new();
        }
        self.raft_log.unstable.shrink_idle();
    }

    /// Whether `m` leaves a quiesced node asleep: only the quiescence
    /// exchange itself, in the current term (a repeated request from our
    /// leader; a late or duplicated ack to the leader). Everything else —
    /// appends, ordinary heartbeats, votes, proposals, reads — wakes it.
    pub(crate) fn keeps_quiesced(&self, m: &Message) -> bool {
        if m.term != self.term {
            return false;
        }
        match (m.msg_type, self.state) {
            (MessageType::MsgHeartbeat, StateRole::Follower) => {
                m.from == self.lead && decode_req(m.context()).is_some()
            }
            (MessageType::MsgHeartbeatResp, StateRole::Leader) => decode_ack(m.context()).is_some(),
            _ => false,
        }
    }

    /// Wakes the node: it ticks again from where its clocks stopped. A
    /// woken leader starts a fresh heartbeat interval and check-quorum
    /// round (its followers' acknowledgements are from before the sleep).
    pub(crate) fn wake(&mut self) {
        if !self.quiesced {
            return;
        }
        self.quiesced = false;
        if self.state == StateRole::Leader {
            self.election_elapsed = 0;
            self.heartbeat_elapsed = 0;
        }
    }

    /// A follower whose host has heard nothing from the leader's node for
    /// at least an election timeout: wakes it if it sleeps, and makes its
    /// election clock read at least the election timeout, which is what
    /// it would read had it ticked all along (every message of the leader
    /// arrives on that node's link), so it campaigns within one more
    /// election timeout. A follower that was woken meanwhile by another
    /// message (a peer's pre-vote) had its clock stopped while it slept,
    /// so it needs this too.
    pub(crate) fn wake_leader_lost(&mut self) {
        #[cfg(feature = "bug-injection")]
        if self.bugs.quiesced_never_wakes {
            return;
        }
        self.wake();
        if self.state == StateRole::Follower {
            self.election_elapsed = self.election_elapsed.max(self.election_timeout);
        }
    }
}
