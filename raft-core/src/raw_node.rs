//! [`RawNode`]: the driver API a host calls, and [`Ready`], the batch of
//! work it hands back.
//!
//! Ported from etcd-io/raft rawnode.go (v3.6, synchronous storage writes).

use std::collections::VecDeque;
use std::num::NonZeroU64;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::config::Config;
use crate::errors::{Error, Result};
use crate::log::{ents_size, payloads_size};
use crate::logging::{rlog, Level};
use crate::pb::{
    ConfChange, ConfChangeI, ConfChangeType, ConfState, Entry, HardState, Message, MessageType,
    Snapshot,
};
use crate::raft::{
    MembershipEvent, Raft, ReadState, SoftState, StateRole, INVALID_ID, MAYBE_READY, READ_FAILED,
};
use crate::status::{BasicStatus, Status};
use crate::storage::Storage;
use crate::types::EntryId;
use crate::validate::{self, MAX_TERM_OR_INDEX};

/// The outcome of sending a snapshot, reported by the host with
/// [`RawNode::report_snapshot`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotStatus {
    /// The peer received and applied the snapshot.
    Finish,
    /// Sending the snapshot failed.
    Failure,
}

/// A batch of work for the host: state to persist, messages to send and
/// entries to apply. All fields are public; take what you need, then pass
/// the `Ready` back to [`RawNode::advance`].
///
/// The order matters: persist `snapshot`, `entries` and `hard_state`
/// (fsync when `must_sync`); send `messages` at any time and
/// `persisted_messages` only once the write of this Ready and of every
/// earlier one is durable; apply `committed_entries` in order; then call
/// [`RawNode::advance`]. The crate documentation states the whole contract
/// (what may be sent early, several Readies in flight, torn writes).
#[derive(Debug, Default)]
pub struct Ready {
    number: u64,
    /// The highest committed index handed out for applying by this Ready
    /// and the ones before it: what [`RawNode::advance`] reports applied.
    applying: u64,
    /// The leader and role, only when they changed since the last Ready.
    pub soft_state: Option<SoftState>,
    /// Term, vote and commit, only when they changed since the last Ready.
    pub hard_state: Option<HardState>,
    /// Answers to [`RawNode::read_index`] requests.
    pub read_states: Vec<ReadState>,
    /// Entries to append to stable storage.
    pub entries: Vec<Entry>,
    /// A snapshot to apply to stable storage and to the state machine, as
    /// part of this Ready's write: once the host reports the write durable
    /// (advance, advance_append, on_persist_ready), the node counts the
    /// snapshot applied ([`RawNode::read_local`], `BasicStatus::applied`),
    /// even on a host that applies committed entries asynchronously.
    pub snapshot: Option<Snapshot>,
    /// Entries to apply to the state machine, in order. Conf-change entries
    /// must be passed to [`RawNode::apply_conf_change`], and only once this
    /// Ready's write is durable (a host that applies other entries before
    /// its write lands must hold a configuration change until it does):
    /// configurations take effect when applied, and a node that applied
    /// one before a commit index covering it was durable could restart
    /// with the configuration before it, two changes behind the cluster,
    /// and win an election the cluster's majority knows nothing of. A
    /// Ready that hands out such a change carries the hard state and
    /// [`Ready::must_sync`] to make that commit index durable with it; a
    /// [`LightReady`] (whose commit index is written unsynced) hands one
    /// out only when a durable commit index covers it already.
    pub committed_entries: Vec<Entry>,
    /// Messages that may be sent at once, before or while this Ready is
    /// persisted: those whose safety needs nothing not yet durable (a
    /// leader's appends and heartbeats in a durable term, heartbeat
    /// responses, pre-vote requests, forwarded proposals and reads).
    pub messages: Vec<Message>,
    /// Messages to send only once the writes of this Ready and of every
    /// earlier one are durable: vote requests, vote and append responses,
    /// and every message sent while the node's term or vote was not yet
    /// durable.
    pub persisted_messages: Vec<Message>,
    /// Whether the write of this Ready must be synced to disk: true when it
    /// holds entries, changes the term or vote, or hands out a
    /// configuration change that no durable commit index covers yet (its
    /// hard state then carries one that does).
    pub must_sync: bool,
    /// Membership changes the leader proposed by itself since the last
    /// Ready (automatic promotion, standby swaps), for the host to log;
    /// their entries are among `entries`.
    pub membership_events: Vec<MembershipEvent>,
}

impl Ready {
    /// The sequence number of this Ready (1 for the first of a node).
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Takes every message of this Ready, `messages` first and then
    /// `persisted_messages`, leaving both empty: the one list a synchronous
    /// host sends once the write of this Ready (and of every earlier one)
    /// is durable, as etcd's `Ready.Messages`. Hosts that send `messages`
    /// before or while they persist read the two fields instead.
    ///
    /// ```
    /// # use raftlet::pb::ConfState;
    /// # use raftlet::{Config, MemoryStorage, RawNode};
    /// let storage = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3]))?;
    /// let mut node = RawNode::new(&Config::new(1), storage.clone())?;
    /// node.campaign()?;
    /// let mut rd = node.ready();
    /// // ... persist rd.entries and rd.hard_state ...
    /// for m in rd.take_all_messages() {
    ///     assert_eq!(m.msg_type, raftlet::pb::MessageType::MsgPreVote); // send m to m.to
    /// }
    /// assert!(rd.messages.is_empty() && rd.persisted_messages.is_empty());
    /// node.advance(rd);
    /// # Ok::<(), raftlet::Error>(())
    /// ```
    pub fn take_all_messages(&mut self) -> Vec<Message> {
        let mut all = std::mem::take(&mut self.messages);
        all.append(&mut self.persisted_messages);
        all
    }

    /// Whether the Ready holds nothing to persist, send or apply.
    pub fn is_empty(&self) -> bool {
        self.soft_state.is_none()
            && self.hard_state.is_none()
            && self.read_states.is_empty()
            && self.entries.is_empty()
            && self.snapshot.is_none()
            && self.committed_entries.is_empty()
            && self.messages.is_empty()
            && self.persisted_messages.is_empty()
            && self.membership_events.is_empty()
    }
}

/// Whether peers send messages of type `t` in their own name, with their
/// id in `from` and their term. Forwarded proposals, reads and transfer
/// requests are not: they keep the requester (or transferee) in `from`,
/// which may be the recipient itself, and travel without a term.
pub(crate) fn sent_by_peer(t: MessageType) -> bool {
    matches!(
        t,
        MessageType::MsgApp
            | MessageType::MsgAppResp
            | MessageType::MsgVote
            | MessageType::MsgVoteResp
            | MessageType::MsgPreVote
            | MessageType::MsgPreVoteResp
            | MessageType::MsgSnap
            | MessageType::MsgHeartbeat
            | MessageType::MsgHeartbeatResp
            | MessageType::MsgTimeoutNow
            | MessageType::MsgReadIndexResp
    )
}

/// What a handed-out Ready still owes the state machine once the host
/// reports it persisted. Every Ready leaves one, in order, so a record's
/// Ready number is not kept: the oldest held is
/// `last_number + 1 - records.len()`.
#[derive(Debug)]
struct ReadyRecord {
    /// The node's term when the Ready was handed out.
    term: u64,
    /// The node's vote when the Ready was handed out: with `term`, what is
    /// durable once this Ready is.
    vote: u64,
    /// The last entry of the log when the Ready was handed out, if the
    /// unstable log held entries (index 0, which no entry has, when it held
    /// none): once this Ready (and every earlier one) is durable, the log
    /// is stable up to there, unless the term changed meanwhile (see
    /// [`RawNode::on_persist_ready`]). Not an `Option`, and neither is
    /// `durable`: 16 bytes fewer in every node.
    stable: EntryId,
    /// What this Ready's write makes durable besides its entries, in one
    /// word (see [`Durable`]): the snapshot handed out, or else the commit
    /// index of its hard state when it carries one and must be synced.
    durable: Durable,
    /// Messages to ourselves, delivered once the write is durable (our own
    /// append acknowledgement and vote).
    steps: Vec<Message>,
}

/// A snapshot index or a commit index, told apart by the top bit (no
/// index reaches it: [`crate::validate::MAX_TERM_OR_INDEX`] is 2^63 - 1).
#[derive(Clone, Copy, Debug)]
struct Durable(u64);

impl Durable {
    const SNAPSHOT: u64 = 1 << 63;

    fn snapshot(index: u64) -> Durable {
        debug_assert!(index & Self::SNAPSHOT == 0, "an index above the bound");
        Durable(index | Self::SNAPSHOT)
    }

    fn commit(index: u64) -> Durable {
        debug_assert!(index & Self::SNAPSHOT == 0, "an index above the bound");
        Durable(index & !Self::SNAPSHOT)
    }

    /// The snapshot's index, if it is one, and the commit index it makes
    /// durable (a snapshot's own index for a snapshot).
    fn get(self) -> (Option<u64>, u64) {
        let index = self.0 & !Self::SNAPSHOT;
        ((self.0 & Self::SNAPSHOT != 0).then_some(index), index)
    }
}

/// What reporting a Ready durable made available at once
/// ([`RawNode::advance_light`]): newly committed entries to apply, messages
/// to send, and the commit index to persist.
#[derive(Debug, Default)]
pub struct LightReady {
    commit_index: Option<u64>,
    committed_entries: Vec<Entry>,
    messages: Vec<Message>,
}

impl LightReady {
    /// The new commit index, when it moved since the last Ready: persist it
    /// as the hard state's commit (no sync needed) before state applied
    /// from [`LightReady::committed_entries`] becomes durable.
    pub fn commit_index(&self) -> Option<u64> {
        self.commit_index
    }

    /// Entries to apply, in order, after the Ready's own committed
    /// entries. Conf-change entries go to [`RawNode::apply_conf_change`].
    pub fn committed_entries(&self) -> &[Entry] {
        &self.committed_entries
    }

    /// Takes the entries to apply, leaving none.
    pub fn take_committed_entries(&mut self) -> Vec<Entry> {
        std::mem::take(&mut self.committed_entries)
    }

    /// Messages that may be sent at once.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Takes the messages to send, leaving none.
    pub fn take_messages(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.messages)
    }

    /// Whether it holds nothing to persist, send or apply.
    pub fn is_empty(&self) -> bool {
        self.commit_index.is_none() && self.committed_entries.is_empty() && self.messages.is_empty()
    }
}

/// A node driven by its host: the host calls [`RawNode::tick`], feeds
/// messages with [`RawNode::step`], and processes [`Ready`] batches.
///
/// A `RawNode` is not thread-safe; wrap it in a lock to share it.
// `repr(C)`: laid out as written. `Raft` comes first: its first bytes
// hold all that an idle group's tick and `has_ready` read (see there), so
// that a sweep over many idle groups touches one cache line of each (two
// when the node straddles a line boundary). What the full `has_ready`
// check compares follows it.
#[repr(C)]
pub struct RawNode<S: Storage> {
    raft: Raft<S>,
    /// The leader the last Ready reported (with `raft.prev_role`, the soft
    /// state it reported: see [`RawNode::prev_soft_state`]).
    prev_lead: u64,
    prev_hard_state: HardState,
    /// The term and vote known durable: those of the newest Ready the host
    /// reported persisted (or of the storage the node started from).
    /// Messages sent while the node's term or vote differ from these wait
    /// for the write (they go to `persisted_messages`).
    durable_term: u64,
    durable_vote: u64,
    /// The commit index known durable: that of the newest synced Ready
    /// the host reported persisted (or of the storage the node started
    /// from). A configuration change above it is handed out for applying
    /// only in a Ready that makes a commit index covering it durable (see
    /// [`Ready::must_sync`]).
    synced_commit: u64,
    last_number: u64,
    /// Readies handed out and not yet advanced past persistence, oldest first.
    records: SmallQueue<ReadyRecord>,
    /// Batches of committed entries handed out and not yet applied,
    /// oldest first.
    applying: SmallQueue<ApplyingBatch>,
    /// A leader's emptied Ready vectors, reused by its next Readies; `None`
    /// on every other node (a pointer rather than two vectors inline: an
    /// idle group pays 8 bytes for it, not 48).
    spares: Option<Box<Spares>>,
}

impl<S: Storage> RawNode<S> {
    /// Creates a node, restarting from whatever `store` holds (hard state,
    /// configuration, snapshot and entries).
    ///
    /// # Errors
    /// [`Error::ConfigInvalid`] for an invalid `config`, storage errors, and
    /// [`Error::InvalidState`] when the storage is inconsistent.
    pub fn new(config: &Config, store: S) -> Result<RawNode<S>> {
        let mut raft = Raft::new(config, store)?;
        raft.coalesce_appends = config.coalesce_appends;
        raft.prev_role = raft.state;
        let prev_hard_state = raft.hard_state();
        Ok(RawNode {
            durable_term: raft.term,
            durable_vote: raft.vote,
            synced_commit: prev_hard_state.commit,
            prev_lead: raft.lead,
            raft,
            prev_hard_state,
            last_number: 0,
            records: SmallQueue::default(),
            applying: SmallQueue::default(),
            spares: None,
        })
    }

    /// Initializes an empty node with its first configuration: one
    /// conf-change entry per voter and learner, committed at term 1. The
    /// entries appear in the next Ready (to persist and apply) like any
    /// other (etcd `RawNode.Bootstrap`).
    ///
    /// Everything is checked first: a refused bootstrap leaves the node and
    /// its storage untouched (no entry, no hard state, no Ready), so the
    /// host may retry with corrected arguments.
    ///
    /// # Errors
    /// [`Error::InvalidState`] when there are no voters or the storage is
    /// not empty; [`Error::ConfChangeRefused`] when an id is not a member
    /// id (0, `u64::MAX`, `u64::MAX - 1`), appears twice, or is both a
    /// voter and a learner.
    pub fn bootstrap(&mut self, voters: &[u64], learners: &[u64]) -> Result<()> {
        self.touch();
        if voters.is_empty() {
            return Err(Error::InvalidState(
                "must provide at least one voter to bootstrap".into(),
            ));
        }
        if self.raft.raft_log.store.last_index()? != 0 || self.raft.raft_log.last_index() != 0 {
            return Err(Error::InvalidState(
                "can't bootstrap a nonempty Storage".into(),
            ));
        }
        validate::check_conf_state(&ConfState {
            voters: voters.to_vec(),
            learners: learners.to_vec(),
            ..ConfState::default()
        })?;
        // The hard state is reported in the next Ready even if it equals the
        // empty one, so hosts persist the initial term.
        self.prev_hard_state = HardState::default();
        self.durable_term = 0;
        self.durable_vote = INVALID_ID;
        self.raft.become_follower(1, INVALID_ID);
        let mut ents = Vec::with_capacity(voters.len() + learners.len());
        let changes = voters
            .iter()
            .map(|id| (ConfChangeType::ConfChangeAddNode, *id))
            .chain(
                learners
                    .iter()
                    .map(|id| (ConfChangeType::ConfChangeAddLearnerNode, *id)),
            );
        for (i, (t, id)) in changes.enumerate() {
            let cc = ConfChangeI::V1(ConfChange {
                change_type: t,
                node_id: id,
                ..ConfChange::default()
            });
            let (et, data) = cc.to_entry_parts();
            ents.push(Entry {
                entry_type: et,
                term: 1,
                index: i as u64 + 1,
                data: Some(data),
            });
        }
        self.raft.raft_log.append(&ents);
        // The entries are committed: every node of the initial
        // configuration bootstraps the same way. They are applied here so
        // the node knows its peers at once; the host applies them again
        // from the Ready, which is harmless.
        self.raft.raft_log.committed = ents.len() as u64;
        for e in &ents {
            let cc = ConfChangeI::from_entry(e)?;
            self.raft.apply_conf_change(&cc.as_v2())?;
        }
        Ok(())
    }

    /// Advances the logical clock by one tick. Elections and heartbeats are
    /// measured in ticks.
    #[inline]
    pub fn tick(&mut self) {
        if self.raft.tick() {
            // A tick that acts also retries a failed read of entries to
            // apply (READ_FAILED cleared): one store, as before.
            *self.raft.maybe_ready.get_mut() = MAYBE_READY;
        }
    }

    /// Sets the "maybe ready" bit: called by every entry point that may
    /// change what [`RawNode::has_ready`] answers (all that take `&mut
    /// self`, but for a tick that only counts), so that `has_ready` runs
    /// its full check again.
    #[inline]
    fn touch(&mut self) {
        *self.raft.maybe_ready.get_mut() |= MAYBE_READY;
    }

    /// Makes this node campaign at once (it becomes a (pre-)candidate).
    ///
    /// # Errors
    /// [`Error::InvalidState`] when the node's term or last index has
    /// reached [`crate::MAX_TERM_OR_INDEX`]: a campaign would take the term
    /// (or the new leader's first entry) past it, so the node never
    /// campaigns again (no honest cluster gets there; see
    /// [`crate::validate`]).
    pub fn campaign(&mut self) -> Result<()> {
        self.touch();
        if self.raft.term >= MAX_TERM_OR_INDEX
            || self.raft.raft_log.last_index() >= MAX_TERM_OR_INDEX
        {
            return Err(Error::InvalidState(format!(
                "term {} or last index {} is at the limit {MAX_TERM_OR_INDEX}; cannot campaign",
                self.raft.term,
                self.raft.raft_log.last_index()
            )));
        }
        self.raft
            .step(Message::new(MessageType::MsgHup, INVALID_ID, INVALID_ID))
    }

    /// Proposes that `data` be appended to the log.
    ///
    /// # Errors
    /// [`Error::ProposalDropped`] when there is no leader, forwarding is
    /// disabled, a leader transfer is under way or the uncommitted budget
    /// is exhausted.
    pub fn propose(&mut self, data: impl Into<Bytes>) -> Result<()> {
        self.touch();
        self.raft.wake();
        self.raft.propose_entry(Entry {
            data: Some(data.into()),
            ..Entry::default()
        })
    }

    /// Proposes several entries in one message (one append on the leader).
    ///
    /// # Errors
    /// As [`RawNode::propose`]; an empty batch is [`Error::ProposalDropped`].
    pub fn propose_batch<I, D>(&mut self, batch: I) -> Result<()>
    where
        I: IntoIterator<Item = D>,
        D: Into<Bytes>,
    {
        self.touch();
        let mut m = Message::new(MessageType::MsgProp, self.raft.id, INVALID_ID);
        m.entries = batch
            .into_iter()
            .map(|d| Entry {
                data: Some(d.into()),
                ..Entry::default()
            })
            .collect();
        if m.entries.is_empty() {
            return Err(Error::ProposalDropped);
        }
        self.raft.step(m)
    }

    /// Proposes a configuration change ([`ConfChange`] or
    /// [`crate::pb::ConfChangeV2`]).
    ///
    /// # Errors
    /// As [`RawNode::propose`], plus [`Error::ConfChangeRefused`],
    /// [`Error::PromotionNotReady`] and [`Error::TooManyLearners`] when the
    /// leader refuses the change; nothing is appended then. A change of an
    /// unknown type or transition, or naming a node id that is not a member
    /// id (0, `u64::MAX`, `u64::MAX - 1`), is refused with
    /// [`Error::ConfChangeRefused`] on every node, before it is forwarded
    /// (see [`crate::validate::check_conf_change`]).
    pub fn propose_conf_change(&mut self, cc: impl Into<ConfChangeI>) -> Result<()> {
        self.touch();
        let cc = cc.into();
        validate::check_conf_change(&cc)?;
        let (t, data) = cc.to_entry_parts();
        let mut m = Message::new(MessageType::MsgProp, self.raft.id, INVALID_ID);
        m.entries.push(Entry {
            entry_type: t,
            data: Some(data),
            ..Entry::default()
        });
        self.raft.step(m)
    }

    /// Proposes adding member `id` (with the host's `context`, for example
    /// its address): as a learner when [`Config::learner_first`] is on (the
    /// default), to be promoted once it has caught up (by the host, or by
    /// the leader with [`Config::auto_promote`]); as a voter otherwise.
    ///
    /// A learner added first never changes the quorum: a member that never
    /// answers (a wrong address) can be removed again without the cluster
    /// losing availability.
    ///
    /// # Errors
    /// [`Error::ConfChangeRefused`] when `id` is already a voter or a
    /// learner, and the errors of [`RawNode::propose_conf_change`].
    pub fn add_member(&mut self, id: u64, context: impl Into<Bytes>) -> Result<()> {
        self.touch();
        if self.raft.trk.is_member(id) {
            return Err(Error::ConfChangeRefused(format!(
                "{id} is already a member of the configuration"
            )));
        }
        let change_type = if self.raft.learner_first {
            ConfChangeType::ConfChangeAddLearnerNode
        } else {
            ConfChangeType::ConfChangeAddNode
        };
        self.propose_conf_change(ConfChange {
            change_type,
            node_id: id,
            context: Some(context.into()),
            ..ConfChange::default()
        })
    }

    /// Turns automatic promotion ([`Config::auto_promote`]) on or off at
    /// run time; off, a promotion already proposed still takes effect.
    ///
    /// # Errors
    /// [`Error::ConfigInvalid`] when turning it on without check-quorum.
    pub fn set_auto_promote(&mut self, on: bool) -> Result<()> {
        self.touch();
        if on && !self.raft.check_quorum {
            return Err(Error::ConfigInvalid(
                "auto_promote requires check_quorum to be true".into(),
            ));
        }
        self.raft.membership.auto_promote = on;
        Ok(())
    }

    /// Turns standby promotion ([`Config::standby_promotion`]) on or off at
    /// run time.
    ///
    /// # Errors
    /// [`Error::ConfigInvalid`] when turning it on without check-quorum.
    pub fn set_standby_promotion(&mut self, on: bool) -> Result<()> {
        self.touch();
        if on && !self.raft.check_quorum {
            return Err(Error::ConfigInvalid(
                "standby_promotion requires check_quorum to be true".into(),
            ));
        }
        self.raft.membership.standby_promotion = on;
        Ok(())
    }

    /// A weak (local) read: what this node's state machine may serve at
    /// once, without asking the leader. The host serves the read from its
    /// state applied up to `applied`; `commit` is the highest index this
    /// node knows committed, so `commit - applied` is how far behind the
    /// answer may be even by this node's knowledge (the leader may know
    /// more). For a read that reflects every write acknowledged before it
    /// began, use [`RawNode::read_index`] (on a learner too: the request is
    /// forwarded to the leader) and serve it once applied up to the index
    /// in the [`ReadState`]. `applied` covers a snapshot from the moment
    /// its Ready is reported durable: a host must have applied the snapshot
    /// to its state machine by then (see [`Ready::snapshot`]).
    pub fn read_local(&self) -> LocalRead {
        LocalRead {
            applied: self.raft.raft_log.applied,
            commit: self.raft.raft_log.committed,
            leader: self.raft.lead,
        }
    }

    /// Applies a committed configuration change and returns the new
    /// configuration, which the host should persist with its snapshot.
    ///
    /// A raftlet leader only appends changes that pass
    /// [`crate::validate::check_conf_change`], but an etcd leader appends
    /// whatever it is given, so a committed change may still be one no
    /// node can apply: of an unknown type or transition, naming `u64::MAX`
    /// or `u64::MAX - 1`, or not fitting the configuration (removing the
    /// last voter, changing two voters without joint consensus, ...). Such
    /// a change returns an error and leaves the configuration as it was;
    /// the node keeps working (it applies later entries, campaigns and
    /// votes as before). etcd hosts panic there; a raftlet host should log
    /// the error and treat the entry as a no-op, which every raftlet node
    /// does identically, since they all hold the same configuration when
    /// they apply it. (A change of node 0 is skipped, not refused: etcd
    /// hosts zero the id of a change they decided not to apply.)
    ///
    /// # Errors
    /// [`Error::ConfChangeRefused`] when the change cannot be applied (the
    /// configuration is left unchanged).
    pub fn apply_conf_change(&mut self, cc: &ConfChangeI) -> Result<ConfState> {
        self.touch();
        self.raft.apply_conf_change(&cc.as_v2())
    }

    /// Processes a message received from a peer.
    ///
    /// A peer's read or leader-transfer request that this node cannot
    /// serve (it knows no leader, or refuses the transfer) is dropped and
    /// `Ok` returned, as etcd's `RawNode.Step` does: [`Error::NoLeader`]
    /// and [`Error::TransferRefused`] are for the local callers of
    /// [`RawNode::read_index`] and [`RawNode::transfer_leader`].
    ///
    /// Every refusal happens before anything in the node changes.
    ///
    /// # Errors
    /// [`Error::StepLocalMsg`] for local-only message types, and for peer
    /// messages that claim to come from this node itself or carry no term,
    /// [`Error::InvalidMessage`] for a message of an unknown type, with a
    /// term or index above [`crate::MAX_TERM_OR_INDEX`], or otherwise
    /// malformed (see [`crate::validate::check_message`]),
    /// [`Error::StepPeerNotFound`] for responses from unknown peers, and
    /// [`Error::ProposalDropped`] for a forwarded proposal that is dropped.
    pub fn step(&mut self, m: Message) -> Result<()> {
        // Also retries a failed read of entries to apply.
        *self.raft.maybe_ready.get_mut() = MAYBE_READY;
        if m.msg_type.is_local() {
            return Err(Error::StepLocalMsg);
        }
        // A peer message from ourselves would make a follower take itself
        // as its leader (and forward proposals to itself); one without a
        // term would pass for a local message and skip the term checks.
        if sent_by_peer(m.msg_type) && (m.from == self.raft.id || m.term == 0) {
            return Err(Error::StepLocalMsg);
        }
        validate::check_message(&m)?;
        if m.msg_type.is_response() && !self.raft.trk.is_member(m.from) {
            return Err(Error::StepPeerNotFound);
        }
        let t = m.msg_type;
        let r = match self.raft.step(m) {
            Err(Error::NoLeader) if t == MessageType::MsgReadIndex => Ok(()),
            Err(Error::TransferRefused(_)) if t == MessageType::MsgTransferLeader => Ok(()),
            r => r,
        };
        if self.raft.quiesced {
            // Asleep (perhaps just now): an idle group keeps no spare
            // Ready buffers.
            self.spares = None;
        }
        r
    }

    /// Requests a linearizable read. The answer arrives as a [`ReadState`]
    /// carrying `ctx` in a later Ready; once the host has applied up to its
    /// index, reads issued before this call are linearizable.
    ///
    /// # Errors
    /// [`Error::NoLeader`] when no leader is known to forward the request to.
    pub fn read_index(&mut self, ctx: impl Into<Bytes>) -> Result<()> {
        self.touch();
        let mut m = Message::new(MessageType::MsgReadIndex, INVALID_ID, INVALID_ID);
        // One entry: allocated at its size, not grown to four.
        m.entries = vec![Entry {
            data: Some(ctx.into()),
            ..Entry::default()
        }];
        self.raft.step(m)
    }

    /// Asks the leader to hand leadership to `transferee`.
    ///
    /// # Errors
    /// [`Error::TransferRefused`] when the target is not a voter of the
    /// configuration or no leader is known.
    pub fn transfer_leader(&mut self, transferee: u64) -> Result<()> {
        self.touch();
        self.raft.step(Message::new(
            MessageType::MsgTransferLeader,
            transferee,
            INVALID_ID,
        ))
    }

    /// Makes a follower forget its leader, so that it grants pre-votes at
    /// once instead of waiting out the leader's lease (for example when the
    /// host knows the leader is gone). A no-op on the leader and under
    /// lease-based reads.
    ///
    /// # Errors
    /// Never fails today.
    pub fn forget_leader(&mut self) -> Result<()> {
        self.touch();
        self.raft.step(Message::new(
            MessageType::MsgForgetLeader,
            INVALID_ID,
            INVALID_ID,
        ))
    }

    /// Tells the leader that the last message to `id` may not have arrived.
    pub fn report_unreachable(&mut self, id: u64) {
        self.touch();
        let _ = self
            .raft
            .step(Message::new(MessageType::MsgUnreachable, id, INVALID_ID));
    }

    /// Tells the leader how sending a snapshot to `id` ended.
    pub fn report_snapshot(&mut self, id: u64, status: SnapshotStatus) {
        self.touch();
        let mut m = Message::new(MessageType::MsgSnapStatus, id, INVALID_ID);
        m.reject = status == SnapshotStatus::Failure;
        let _ = self.raft.step(m);
    }

    /// Whether a Ready with something in it is available.
    ///
    /// An idle node answers from one bit: once a full check found nothing,
    /// `has_ready` says no without looking again until an entry point that
    /// may change the answer runs (a tick that only counts is not one).
    #[inline]
    pub fn has_ready(&self) -> bool {
        let bits = self.raft.maybe_ready.load(Ordering::Relaxed);
        if bits & MAYBE_READY == 0 {
            // A clear bit must never hide work: debug builds (and the
            // simulator's sim-assert profile) check it on every call.
            debug_assert!(
                !self.has_ready_full(),
                "has_ready: the maybe-ready bit is clear but a Ready is due \
                 (an entry point did not set it)"
            );
            return false;
        }
        let ready = self.has_ready_full();
        if !ready {
            // (Only `&mut self` methods set bits: no concurrent call can
            // set one between the load and this store.)
            self.raft
                .maybe_ready
                .store(bits & !MAYBE_READY, Ordering::Relaxed);
        }
        ready
    }

    /// The soft state the last Ready reported (or the node started with).
    fn prev_soft_state(&self) -> SoftState {
        SoftState {
            leader_id: self.prev_lead,
            raft_state: self.raft.prev_role,
        }
    }

    /// The full check behind [`RawNode::has_ready`]: whether the state
    /// differs from what the last Ready reported, or anything waits to be
    /// persisted, sent or applied.
    #[inline(never)]
    fn has_ready_full(&self) -> bool {
        let r = &self.raft;
        if r.soft_state() != self.prev_soft_state() {
            return true;
        }
        let hs = r.hard_state();
        if !hs.is_empty() && hs != self.prev_hard_state {
            return true;
        }
        r.raft_log.has_next_unstable_snapshot()
            || r.appends_deferred
            || !r.msgs.is_empty()
            || !r.msgs_after_append.is_empty()
            || r.raft_log.has_next_unstable_ents()
            || (r.maybe_ready.load(Ordering::Relaxed) & READ_FAILED == 0
                && r.raft_log.has_next_committed_ents(true))
            || !r.read_states.is_empty()
            || r.membership_events.is_some()
    }

    /// Takes the next batch of work. Every Ready must be passed back to
    /// [`RawNode::advance`] (or [`RawNode::advance_append`]) once handled.
    pub fn ready(&mut self) -> Ready {
        self.touch();
        self.raft.flush_deferred_appends();
        let term_vote_durable = self.term_vote_durable();
        let r = &mut self.raft;
        self.last_number += 1;
        let number = self.last_number;
        let mut entries = Spares::entries(&mut self.spares);
        entries.extend_from_slice(r.raft_log.next_unstable_ents());
        let mut committed_entries = Spares::entries(&mut self.spares);
        read_committed(r, true, &mut committed_entries);
        let snapshot = r.raft_log.next_unstable_snapshot().cloned();
        let ss = r.soft_state();
        let prev_ss = SoftState {
            leader_id: self.prev_lead,
            raft_state: r.prev_role,
        };
        let soft_state = (ss != prev_ss).then_some(ss);
        let hs = r.hard_state();
        let mut hard_state = (hs != self.prev_hard_state).then_some(hs);
        let mut must_sync = !entries.is_empty()
            || hs.vote != self.prev_hard_state.vote
            || hs.term != self.prev_hard_state.term;
        // Configuration changes take effect when applied. One applied
        // before a commit index covering it is durable would leave a node
        // that, restarted with a lower commit index, campaigns under the
        // configuration before it, two changes behind the cluster's,
        // whose majorities need not overlap (a leader that proposes the
        // next change, such as leaving a joint configuration, right after
        // applying one). So a Ready that hands one out makes the commit
        // durable with it: it carries the hard state and must be synced,
        // and the host applies the change only once the write is durable.
        if first_unsynced_conf_change(&committed_entries, self.synced_commit).is_some() {
            hard_state = Some(hs);
            must_sync = true;
        }
        // Message vectors are not recycled: hosts usually move them out to
        // send, and an idle group should not pin their capacity.
        let mut messages = std::mem::take(&mut r.msgs);
        // Below a handful of messages the growth is cheap; above, the next
        // batch is likely as large (a leader's appends, a follower's
        // acknowledgements) and is reserved at its first message.
        const HINT_MIN: usize = 8;
        const HINT_MAX: usize = 4096;
        let hint = |n: usize| {
            if n >= HINT_MIN {
                n.min(HINT_MAX).next_power_of_two().trailing_zeros() as u8
            } else {
                0
            }
        };
        r.msgs_hint = hint(messages.len());
        r.after_hint = hint(r.msgs_after_append.len());
        let mut persisted_messages = Vec::new();
        if !term_vote_durable {
            // Our term or vote is not durable yet: a crash could take us
            // back to an older term, whose incarnation could then act
            // differently in the terms these messages speak for (lead the
            // same term again with another log). Only messages that need
            // nothing durable leave before the write: pre-vote requests
            // (they change no durable state anywhere), forwarded proposals
            // and reads (they carry no term and claim nothing), and
            // heartbeat responses (they tell a leader that a quorum heard
            // it in its term, which stays true if we later forget the term:
            // we never voted in it durably, and its leader won it with a
            // quorum of durable votes).
            #[cfg(feature = "bug-injection")]
            let vote_early = r.bugs.vote_request_early;
            #[cfg(not(feature = "bug-injection"))]
            let vote_early = false;
            let (early, late): (Vec<Message>, Vec<Message>) = messages.into_iter().partition(|m| {
                matches!(
                    m.msg_type,
                    MessageType::MsgPreVote | MessageType::MsgHeartbeatResp
                ) || m.term == 0
                    || (vote_early && m.msg_type == MessageType::MsgVote)
            });
            messages = early;
            persisted_messages = late;
        }
        let mut steps = Spares::messages(&mut self.spares);
        // A leader keeps the vector's capacity for its next append (its
        // own acknowledgements pass through it on every proposal); a
        // follower lets it go, so an idle group pins no memory.
        let mut after = std::mem::take(&mut r.msgs_after_append);
        if after.len() > 1 {
            persisted_messages.reserve(after.iter().filter(|m| m.to != r.id).count());
        }
        for m in after.drain(..) {
            if m.to == r.id {
                steps.push(m);
            } else {
                persisted_messages.push(m);
            }
        }
        if r.state == StateRole::Leader && after.capacity() <= 64 {
            r.msgs_after_append = after;
        }
        let read_states = std::mem::take(&mut r.read_states);
        let membership_events = r
            .membership_events
            .take()
            .map(|events| *events)
            .unwrap_or_default();
        // As etcd (newStorageAppendRespMsg): attest the whole unstable log,
        // not just this Ready's entries, so that a Ready without entries
        // can still release entries whose own report was ignored below.
        let stable = if r.raft_log.unstable.entries.is_empty() {
            EntryId { term: 0, index: 0 }
        } else {
            r.raft_log.last_entry_id()
        };

        // Accept the Ready: what it hands out is not handed out again.
        self.prev_lead = ss.leader_id;
        r.prev_role = ss.raft_state;
        self.prev_hard_state = hs;
        r.raft_log.accept_unstable();
        #[cfg(feature = "bug-injection")]
        let committed_last = committed_entries
            .last()
            .filter(|_| !r.bugs.reapply_committed);
        #[cfg(not(feature = "bug-injection"))]
        let committed_last = committed_entries.last();
        if committed_last.is_some() {
            accept_applying(r, &mut self.applying, &committed_entries, true);
        }
        #[cfg(feature = "bug-injection")]
        if r.bugs.self_ack_early {
            for m in steps.drain(..) {
                let _ = r.step(m);
            }
        }
        self.records.push_back(ReadyRecord {
            term: r.term,
            vote: r.vote,
            stable,
            durable: match (&snapshot, hard_state) {
                (Some(s), _) => {
                    debug_assert!(s.metadata.index > 0, "a snapshot at index 0 handed out");
                    Durable::snapshot(s.metadata.index)
                }
                (None, Some(h)) if must_sync => Durable::commit(h.commit),
                _ => Durable::commit(0),
            },
            steps,
        });
        let applying = r.raft_log.applying;
        Ready {
            number,
            applying,
            soft_state,
            hard_state,
            read_states,
            entries,
            snapshot,
            committed_entries,
            messages,
            persisted_messages,
            must_sync,
            membership_events,
        }
    }

    /// Reports that a Ready was fully handled: its writes are durable and
    /// its committed entries applied (and those of earlier Readies). The
    /// committed entries of later Readies, if any were taken, are not
    /// reported applied.
    pub fn advance(&mut self, rd: Ready) {
        self.touch();
        let applying = rd.applying;
        self.advance_append(rd);
        self.advance_apply_to(applying);
    }

    /// Reports that a Ready's writes are durable, for hosts that apply
    /// committed entries asynchronously; follow up with
    /// [`RawNode::advance_apply_to`] as entries are applied. Earlier Readies
    /// not yet advanced are taken as durable too.
    pub fn advance_append(&mut self, rd: Ready) {
        self.touch();
        self.on_persist_ready(rd.number);
        self.recycle(rd);
    }

    /// Reports that a Ready's writes are durable, as
    /// [`RawNode::advance_append`], and hands out at once what that made
    /// available, without a full Ready: the entries it committed (a leader
    /// counting its own acknowledgement, a single voter committing its
    /// proposal), the messages that may leave at once, and the new commit
    /// index. A host that handles the light Ready needs one Ready cycle per
    /// proposal where it would otherwise need two (raft-rs's `LightReady`).
    ///
    /// The Ready's own committed entries are not reported applied: apply
    /// them, then the light Ready's, then call [`RawNode::advance_apply`]
    /// (or [`RawNode::advance_apply_light`], which also keeps the light
    /// Ready's vector for the next one, or [`RawNode::advance_apply_to`] as
    /// entries are applied asynchronously).
    ///
    /// The contract: persist [`LightReady::commit_index`] as the hard
    /// state's commit (it need not be synced: the next Ready does not
    /// report it again) before any state applied from the light Ready's
    /// entries becomes durable. A restart whose [`Config::applied`] is
    /// beyond the stored commit index is refused by [`RawNode::new`], as in
    /// etcd raft and raft-rs. A host whose state machine is volatile and
    /// rebuilt from its snapshot at a restart (`applied` = the snapshot's
    /// index) may lose the commit index in a crash, provided it persisted
    /// the commit up to a snapshot's index before taking the snapshot.
    ///
    /// Only entries this node knows to be durable are handed out, and only
    /// when its term and vote are durable are messages; everything else
    /// stays for the next [`RawNode::ready`].
    ///
    /// ```
    /// # use raftlet::pb::ConfState;
    /// # use raftlet::{Config, MemoryStorage, RawNode, Storage};
    /// let storage = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1]))?;
    /// let mut node = RawNode::new(&Config::new(1), storage.clone())?;
    /// node.campaign()?;
    /// while node.has_ready() {
    ///     let rd = node.ready();
    ///     let mut s = storage.wl();
    ///     s.append(&rd.entries)?;
    ///     if let Some(hs) = rd.hard_state { s.set_hard_state(hs); }
    ///     drop(s);
    ///     node.advance(rd);
    /// }
    /// node.propose(&b"x"[..])?;
    /// let rd = node.ready();
    /// storage.wl().append(&rd.entries)?;
    /// // One cycle: the write's acknowledgement commits the entry.
    /// let light = node.advance_light(rd);
    /// if let Some(commit) = light.commit_index() {
    ///     storage.wl().commit_to(commit)?;
    /// }
    /// assert_eq!(light.committed_entries().last().map(|e| e.data()), Some(&b"x"[..]));
    /// node.advance_apply_light(light);
    /// assert!(!node.has_ready());
    /// # Ok::<(), raftlet::Error>(())
    /// ```
    pub fn advance_light(&mut self, rd: Ready) -> LightReady {
        let number = rd.number;
        self.recycle(rd);
        self.on_persist_ready_light(number)
    }

    /// [`RawNode::advance_light`] by number, without handing the Ready
    /// back (as [`RawNode::on_persist_ready`] is to
    /// [`RawNode::advance_append`]): for hosts and bindings that keep the
    /// Ready's contents alive after persisting it.
    pub fn on_persist_ready_light(&mut self, number: u64) -> LightReady {
        self.touch();
        self.on_persist_ready(number);
        let durable = self.term_vote_durable();
        if durable {
            // A leader's appends carrying the new commit index.
            self.raft.flush_deferred_appends();
        }
        let r = &mut self.raft;
        let mut committed_entries = Spares::entries(&mut self.spares);
        read_committed(r, false, &mut committed_entries);
        // A configuration change not covered by a durable commit index
        // waits for a Ready that makes one durable (see `ready`): the
        // commit index reported here is written unsynced.
        if let Some(at) = first_unsynced_conf_change(&committed_entries, self.synced_commit) {
            committed_entries.truncate(at);
        }
        #[cfg(feature = "bug-injection")]
        let accept = !r.bugs.light_skips_applying;
        #[cfg(not(feature = "bug-injection"))]
        let accept = true;
        if accept {
            accept_applying(r, &mut self.applying, &committed_entries, false);
        }
        // The commit index reported is capped at the last entry known to
        // be durable: a follower's commit may already cover entries it
        // received after the Ready was taken, and a stored commit beyond
        // the stored log would refuse a restart. The rest goes out with
        // those entries, in the next Ready. A snapshot not yet durable
        // (handed out or not) replaces the log: the stored entries are no
        // longer the log the commit index speaks of, and its index is not
        // stored yet. Nothing new is reported; the commit goes out in the
        // snapshot's Ready, in the hard state written with it.
        let commit = if r.raft_log.has_next_or_in_progress_snapshot() {
            self.prev_hard_state.commit
        } else {
            r.raft_log.max_appliable_index(false)
        };
        let commit_index = (commit > self.prev_hard_state.commit).then(|| {
            self.prev_hard_state.commit = commit;
            commit
        });
        let messages = if durable {
            std::mem::take(&mut r.msgs)
        } else {
            Vec::new()
        };
        LightReady {
            commit_index,
            committed_entries,
            messages,
        }
    }

    /// Reports every committed entry handed out so far applied, as
    /// [`RawNode::advance_apply`], and keeps the light Ready's emptied
    /// vectors for the next Ready: a steady one-cycle loop
    /// ([`RawNode::advance_light`]) allocates none.
    pub fn advance_apply_light(&mut self, light: LightReady) {
        self.advance_apply();
        if self.keeps_spares() {
            self.keep_spare_entries(light.committed_entries);
        }
    }

    /// Whether the node's term and vote are those its host last reported
    /// durable: only then may messages that speak for them leave before a
    /// write.
    fn term_vote_durable(&self) -> bool {
        self.raft.term == self.durable_term && self.raft.vote == self.durable_vote
    }

    /// Whether the node keeps emptied vectors for its next Ready: only a
    /// leader's Ready loop is hot enough to be worth the memory; followers
    /// (and idle groups, quiesced ones too) keep nothing.
    fn keeps_spares(&self) -> bool {
        self.raft.state == StateRole::Leader && !self.raft.quiesced
    }

    /// Keeps `v`, emptied, for the next Ready, unless it holds nothing
    /// worth keeping or enough are kept already. Very large buffers are let
    /// go so a burst does not pin memory.
    fn keep_spare_entries(&mut self, v: Vec<Entry>) {
        let _ = self.try_keep_spare_entries(v);
    }

    /// [`RawNode::keep_spare_entries`], handing `v` back, emptied, when it
    /// is not kept.
    fn try_keep_spare_entries(&mut self, mut v: Vec<Entry>) -> Option<Vec<Entry>> {
        const KEEP: usize = 4;
        const MAX_CAPACITY: usize = 4096;
        v.clear();
        if v.capacity() > 0 && v.capacity() <= MAX_CAPACITY {
            let spares = self.spares.get_or_insert_with(Box::default);
            if spares.entries.len() < KEEP {
                spares.entries.push(v);
                return None;
            }
        }
        Some(v)
    }

    /// Offers an entry vector of an earlier Ready (its `entries` or
    /// `committed_entries`, or a [`LightReady`]'s) for the next Readies to
    /// fill instead of allocating one: what [`RawNode::advance`] does with
    /// the Ready it is handed, for hosts and bindings that keep a Ready's
    /// contents past its advance. Only a leader that is not quiesced keeps
    /// vectors (a few, none very large), as with `advance`; `v` comes back,
    /// emptied, when the node does not keep it.
    ///
    /// ```
    /// # use raftlet::pb::ConfState;
    /// # use raftlet::{Config, MemoryStorage, RawNode};
    /// let storage = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1]))?;
    /// let mut node = RawNode::new(&Config::new(1), storage.clone())?;
    /// // A follower keeps nothing: the vector comes back.
    /// assert!(node.recycle_entries(Vec::with_capacity(8)).is_some());
    /// node.campaign()?;
    /// while node.has_ready() {
    ///     let rd = node.ready();
    ///     storage.wl().append(&rd.entries)?;
    ///     if let Some(hs) = rd.hard_state {
    ///         storage.wl().set_hard_state(hs);
    ///     }
    ///     node.advance_append(rd);
    /// }
    /// // A leader keeps it for its next Ready.
    /// assert!(node.recycle_entries(Vec::with_capacity(8)).is_none());
    /// # Ok::<(), raftlet::Error>(())
    /// ```
    #[inline]
    pub fn recycle_entries(&mut self, v: Vec<Entry>) -> Option<Vec<Entry>> {
        if !self.keeps_spares() {
            let mut v = v;
            v.clear();
            return Some(v);
        }
        self.try_keep_spare_entries(v)
    }

    /// Keeps the Ready's vectors (emptied) for the next Ready, so a steady
    /// Ready loop does not allocate them again. Very large buffers are let
    /// go so a burst does not pin memory.
    fn recycle(&mut self, rd: Ready) {
        if !self.keeps_spares() {
            self.spares = None;
            return;
        }
        self.keep_spare_entries(rd.entries);
        self.keep_spare_entries(rd.committed_entries);
    }

    /// Reports that the writes of every Ready up to number `number` (see
    /// [`Ready::number`]) are durable, without handing the Ready back; for
    /// hosts (and bindings) that keep the Ready's contents alive after
    /// persisting it. Equivalent to [`RawNode::advance_append`].
    pub fn on_persist_ready(&mut self, number: u64) {
        self.touch();
        let upto = number;
        while self.records.front().is_some() {
            // Every Ready leaves one record, in order: the oldest held is
            // that many Readies behind the last one.
            if self.last_number + 1 - self.records.len() as u64 > upto {
                break;
            }
            let mut rec = self.records.pop_front().expect("front exists");
            self.durable_term = rec.term;
            self.durable_vote = rec.vote;
            // A snapshot's index counts as a durable commit: a node
            // restarted from it starts with that commit.
            let (snapshot_index, commit) = rec.durable.get();
            self.synced_commit = self.synced_commit.max(commit);
            // Our own append acknowledgement and vote count now that they
            // are durable.
            for m in rec.steps.drain(..) {
                self.raft.step_persisted(m);
            }
            if rec.steps.capacity() > 0 && self.raft.state == StateRole::Leader {
                // Only a leader's are kept (see `recycle`).
                let spares = self.spares.get_or_insert_with(Box::default);
                if spares.messages.len() < 2 {
                    spares.messages.push(std::mem::take(&mut rec.steps));
                }
            }
            if let Some(index) = snapshot_index {
                self.raft.raft_log.stable_snap_to(index);
                // Batches handed out before the snapshot are superseded:
                // release their share of the applying budget, or handing
                // out entries could stay paused for good.
                let mut size = 0;
                while let Some(&b) = self.applying.front() {
                    if b.last.get() > index {
                        break;
                    }
                    size += b.size;
                    self.applying.pop_front();
                }
                self.raft.applied_to(index, size);
            }
            // A write handed out in an earlier term may have been
            // overtaken: a newer leader replaced entries it carried, and a
            // later Ready (still being written) may replace them again,
            // possibly with an entry of the same index and term as before
            // (A-B-A). Its report then proves nothing about what storage
            // will hold, so it is ignored (etcd drops a MsgStorageAppendResp
            // of an older term). Within a term no entry is replaced.
            if rec.stable.index > 0 && rec.term == self.raft.term {
                self.raft.raft_log.stable_to(rec.stable);
            }
        }
    }

    /// Reports that every committed entry handed out so far is applied.
    pub fn advance_apply(&mut self) {
        self.touch();
        let applying = self.raft.raft_log.applying;
        self.advance_apply_to(applying);
    }

    /// Reports that committed entries up to `index` are applied. Indexes
    /// beyond what was handed out are capped.
    pub fn advance_apply_to(&mut self, index: u64) {
        self.touch();
        let index = index.min(self.raft.raft_log.applying);
        if index <= self.raft.raft_log.applied {
            return;
        }
        let mut size = 0;
        while let Some(&b) = self.applying.front() {
            if b.last.get() > index {
                break;
            }
            size += b.size;
            self.applying.pop_front();
        }
        self.raft.applied_to(index, size);
    }

    /// Whether reporting every committed entry handed out so far applied
    /// ([`RawNode::advance_apply`]) could give the node a Ready it does not
    /// have now: committed entries wait behind those (the applying budget,
    /// `max_committed_size_per_ready`, held them back), or a leader in a
    /// joint configuration leaves it automatically once it is applied.
    /// When this is false and [`RawNode::has_ready`] is false, the node has
    /// no Ready after `advance_apply` either, so a host (or a binding) that
    /// defers the report to the node's next call need not ask again.
    ///
    /// ```
    /// # use raftlet::pb::ConfState;
    /// # use raftlet::{Config, MemoryStorage, RawNode};
    /// let storage = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1]))?;
    /// let mut node = RawNode::new(&Config::new(1), storage.clone())?;
    /// node.campaign()?;
    /// for proposal in [None, Some(b"x".to_vec())] {
    ///     if let Some(data) = proposal {
    ///         node.propose(data)?;
    ///     }
    ///     while node.has_ready() {
    ///         let rd = node.ready();
    ///         storage.wl().append(&rd.entries)?;
    ///         if let Some(hs) = rd.hard_state {
    ///             storage.wl().set_hard_state(hs);
    ///         }
    ///         node.advance_append(rd);
    ///     }
    /// }
    /// // Everything committed was handed out: applying it wakes nothing.
    /// assert!(!node.apply_may_make_ready());
    /// node.advance_apply();
    /// assert!(!node.has_ready());
    /// # Ok::<(), raftlet::Error>(())
    /// ```
    pub fn apply_may_make_ready(&self) -> bool {
        let r = &self.raft;
        r.raft_log.committed > r.raft_log.applying
            || (r.trk.config.auto_leave && r.state == StateRole::Leader)
    }

    /// The term of the entry at `index` in the node's log (stable or not),
    /// or `None` when the log does not hold it (compacted, beyond the last
    /// index, or unavailable in storage). A host that checks its writes
    /// uses it to tell an entry a later Ready replaced from one it lost.
    pub fn entry_term(&self, index: u64) -> Option<u64> {
        let log = &self.raft.raft_log;
        if index < log.first_index() || index > log.last_index() {
            return None;
        }
        log.term(index).ok()
    }

    /// The node's full status (progress of peers only on the leader).
    pub fn status(&self) -> Status {
        Status::new(&self.raft)
    }

    /// The node's status without configuration and progress (cheap).
    pub fn basic_status(&self) -> BasicStatus {
        BasicStatus::new(&self.raft)
    }

    /// The storage.
    pub fn store(&self) -> &S {
        &self.raft.raft_log.store
    }

    /// The storage, mutably.
    pub fn store_mut(&mut self) -> &mut S {
        self.touch();
        &mut self.raft.raft_log.store
    }

    /// This node's id.
    pub fn id(&self) -> u64 {
        self.raft.id
    }

    /// Whether the node is quiesced ([`Config::quiesce`]): it ignores
    /// [`RawNode::tick`] until a message other than the quiescence
    /// exchange, a proposal, a read, a campaign or a transfer wakes it, or
    /// the host calls [`RawNode::wake`] or [`RawNode::wake_leader_lost`].
    /// A host of many groups need not tick a quiesced group at all.
    pub fn is_quiesced(&self) -> bool {
        self.raft.quiesced
    }

    /// Wakes a quiesced node: it ticks again from where its clocks
    /// stopped (a leader starts a fresh heartbeat interval, then quiesces
    /// again if its group is still idle). A no-op on a node that is awake.
    pub fn wake(&mut self) {
        self.touch();
        self.raft.wake();
    }

    /// Tells a follower that its host has heard nothing from the leader's
    /// node for at least an election timeout (`Config::election_tick`
    /// ticks of this node's clock, counting from the last message or
    /// node-level heartbeat received from that node). The follower wakes
    /// if it sleeps, and reads its election clock as at least the election
    /// timeout, as it would had it ticked all along; it campaigns within
    /// one more election timeout, so the leader's death delays the
    /// election by at most the host's detection delay. Call it for every
    /// follower of that leader, asleep or awake (one woken meanwhile by a
    /// peer's pre-vote had its clock stopped while it slept). Calling it
    /// while the leader's node is heard from is a host bug: under
    /// lease-based reads the follower could then vote inside the leader's
    /// lease. A no-op on a leader or candidate.
    pub fn wake_leader_lost(&mut self) {
        self.touch();
        self.raft.wake_leader_lost();
    }

    /// Advances the election clock of an idle (quiesced) group without
    /// running elections or heartbeats (etcd `TickQuiesced`).
    pub fn tick_quiesced(&mut self) {
        // Only counts: what has_ready answers does not change.
        self.raft.election_elapsed = self.raft.election_elapsed.saturating_add(1);
    }

    #[cfg(any(test, feature = "bug-injection"))]
    #[allow(dead_code, reason = "used by unit tests and the bug-injection build")]
    pub(crate) fn raft(&self) -> &Raft<S> {
        &self.raft
    }

    #[cfg(any(test, feature = "bug-injection"))]
    #[allow(dead_code, reason = "used by unit tests and the bug-injection build")]
    pub(crate) fn raft_mut(&mut self) -> &mut Raft<S> {
        self.touch();
        &mut self.raft
    }

    /// The planted-bug switches (feature `bug-injection`, tests only).
    #[cfg(feature = "bug-injection")]
    pub fn bugs_mut(&mut self) -> &mut crate::raft::Bugs {
        self.touch();
        &mut self.raft.bugs
    }
}

/// Takes `ents`, just handed out for applying, as being applied: the log's
/// applying index and budget (`allow_unstable` as they were read), the
/// node's queue of batches in flight, and the leader's uncommitted budget,
/// which committed entries no longer count against.
fn accept_applying<S: Storage>(
    r: &mut Raft<S>,
    applying: &mut SmallQueue<ApplyingBatch>,
    ents: &[Entry],
    allow_unstable: bool,
) {
    let Some(last) = ents.last() else {
        return;
    };
    let size = ents_size(ents);
    r.raft_log.accept_applying(last.index, size, allow_unstable);
    let last = NonZeroU64::new(last.index).expect("a committed entry has an index above 0");
    applying.push_back(ApplyingBatch { last, size });
    r.reduce_uncommitted_size(payloads_size(ents));
}

/// The position in `ents` of the first configuration change that no
/// durable commit index covers (above `synced_commit`), if any: such a
/// change is handed out only in a Ready that makes one durable.
fn first_unsynced_conf_change(ents: &[Entry], synced_commit: u64) -> Option<usize> {
    ents.iter()
        .position(|e| e.is_conf_change() && e.index > synced_commit)
}

/// A batch of committed entries handed out and not yet applied.
#[derive(Clone, Copy, Debug)]
struct ApplyingBatch {
    /// Its last index (never 0: `NonZeroU64` lets the queue's head hold
    /// `None` in the same 16 bytes).
    last: NonZeroU64,
    /// Its entries' encoded size.
    size: u64,
}

/// A leader's emptied Ready vectors, kept for its next Readies.
#[derive(Debug, Default)]
struct Spares {
    /// Entry vectors (entries to persist, committed entries to apply).
    entries: Vec<Vec<Entry>>,
    /// Vectors of self-addressed messages.
    messages: Vec<Vec<Message>>,
}

impl Spares {
    /// An emptied entry vector kept from an earlier Ready, or a new one.
    fn entries(spares: &mut Option<Box<Spares>>) -> Vec<Entry> {
        spares
            .as_mut()
            .and_then(|s| s.entries.pop())
            .unwrap_or_default()
    }

    /// An emptied message vector kept from an earlier Ready, or a new one.
    fn messages(spares: &mut Option<Box<Spares>>) -> Vec<Message> {
        spares
            .as_mut()
            .and_then(|s| s.messages.pop())
            .unwrap_or_default()
    }
}

/// The answer to [`RawNode::read_local`]: how stale a weak read may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalRead {
    /// The last index the host reported applied: the state a weak read sees.
    pub applied: u64,
    /// The highest index this node knows committed.
    pub commit: u64,
    /// The leader this node knows (0 for none).
    pub leader: u64,
}

/// A FIFO queue that holds its first element inline and allocates only
/// when a second one is queued: most hosts have at most one Ready
/// outstanding, and an idle group should not keep a heap buffer for it.
#[derive(Debug)]
struct SmallQueue<T> {
    head: Option<T>,
    /// The elements after `head`, oldest first; `None` rather than an empty
    /// deque (8 bytes instead of 32 in every node). Invariant: `Some` only
    /// when not empty.
    #[allow(
        clippy::box_collection,
        reason = "the box is the point: a pointer inline instead of an empty deque"
    )]
    rest: Option<Box<VecDeque<T>>>,
}

impl<T> Default for SmallQueue<T> {
    fn default() -> Self {
        SmallQueue {
            head: None,
            rest: None,
        }
    }
}

impl<T> SmallQueue<T> {
    fn push_back(&mut self, v: T) {
        if self.head.is_none() && self.rest.is_none() {
            self.head = Some(v);
        } else {
            self.rest.get_or_insert_with(Default::default).push_back(v);
        }
    }

    fn front(&self) -> Option<&T> {
        self.head
            .as_ref()
            .or_else(|| self.rest.as_ref().and_then(|r| r.front()))
    }

    fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.rest.as_ref().map_or(0, |r| r.len())
    }

    fn pop_front(&mut self) -> Option<T> {
        if let Some(v) = self.head.take() {
            return Some(v);
        }
        let rest = self.rest.as_mut()?;
        let v = rest.pop_front();
        if rest.is_empty() {
            // An idle group keeps no buffer.
            self.rest = None;
        }
        v
    }
}

/// Reads the committed entries to hand out into `out`, unless a read
/// failed since the last message or acting tick. A read the storage could
/// not serve (an I/O error such as EIO: `StorageError::Other`) hands out
/// none, is logged, and sets [`READ_FAILED`]: no Ready reads again, and
/// `has_ready` does not report those entries, until a message or an
/// acting tick clears it (etcd panics here).
///
/// # Panics
/// When the storage says the entries are compacted or not there: the host
/// broke the storage contract (it compacted entries it had not applied,
/// or lost entries it reported durable), a broken invariant that retrying
/// cannot mend, as in etcd. The C ABI and the bindings turn the panic
/// into an error and refuse further calls on the node.
fn read_committed<S: Storage>(r: &mut Raft<S>, allow_unstable: bool, out: &mut Vec<Entry>) {
    if *r.maybe_ready.get_mut() & READ_FAILED != 0 {
        return;
    }
    match r.raft_log.next_committed_ents_into(allow_unstable, out) {
        Ok(()) => {}
        Err(
            e @ Error::Store(crate::StorageError::Compacted | crate::StorageError::Unavailable),
        ) => {
            panic!("unexpected error when getting unapplied entries: {e}")
        }
        Err(e) => {
            *r.maybe_ready.get_mut() |= READ_FAILED;
            read_failed(r.id, &e);
        }
    }
}

#[cold]
fn read_failed(id: u64, e: &Error) {
    rlog!(
        Level::Error,
        id,
        "{id} failed to read committed entries to apply ({e}); applying waits for the next message or acting tick"
    );
}

#[cfg(test)]
mod layout_tests {
    use std::mem::offset_of;

    use super::RawNode;
    use crate::log::RaftLog;
    use crate::log_unstable::Unstable;
    use crate::raft::Raft;
    use crate::storage::MemoryStorage;

    type Node = RawNode<MemoryStorage>;
    type R = Raft<MemoryStorage>;
    type L = RaftLog<MemoryStorage>;

    /// Everything an idle follower's tick and `has_ready` read lies in the
    /// first 32 bytes of the node (see the `repr(C)` comments on `Raft` and
    /// `RawNode`): a field added or moved in front of them shows here, not
    /// only as a slower B4 sweep.
    #[test]
    fn idle_sweep_reads_the_first_bytes_of_the_node() {
        let raft = offset_of!(Node, raft);
        assert_eq!(raft, 0, "Raft's head is the node's head");
        let sweep = [
            raft + offset_of!(R, state) + 1,
            raft + offset_of!(R, quiesced) + 1,
            raft + offset_of!(R, maybe_ready) + 1,
            raft + offset_of!(R, election_elapsed) + 4,
            raft + offset_of!(R, election_timeout) + 4,
            raft + offset_of!(R, randomized_election_timeout) + 4,
        ];
        let end = sweep.into_iter().max().expect("fields listed");
        assert!(end <= 32, "the sweep's fields reach byte {end}");
    }

    /// What the full `has_ready` check reads (a busy group's) lies in the
    /// first five cache lines of `Raft`, and in the few bytes of `RawNode`
    /// just behind it, ahead of the cold part of the node.
    #[test]
    fn full_has_ready_reads_the_head_of_raft() {
        let raft = offset_of!(Node, raft);
        let log = raft + offset_of!(R, raft_log);
        let unstable = log + offset_of!(L, unstable);
        let ends = [
            raft + offset_of!(R, term) + 8,
            raft + offset_of!(R, vote) + 8,
            raft + offset_of!(R, lead) + 8,
            raft + offset_of!(R, state) + 1,
            raft + offset_of!(R, appends_deferred) + 1,
            raft + offset_of!(R, msgs) + 24,
            raft + offset_of!(R, msgs_after_append) + 24,
            raft + offset_of!(R, read_states) + 24,
            raft + offset_of!(R, membership_events) + 8,
            log + offset_of!(L, committed) + 8,
            log + offset_of!(L, applying) + 8,
            log + offset_of!(L, applied) + 8,
            unstable + offset_of!(Unstable, snapshot) + 8,
            unstable + offset_of!(Unstable, entries) + 24,
            unstable + offset_of!(Unstable, offset) + 8,
            unstable + offset_of!(Unstable, offset_in_progress) + 8,
            unstable + offset_of!(Unstable, snapshot_in_progress) + 1,
        ];
        let end = ends.into_iter().max().expect("fields listed");
        assert!(end <= 5 * 64, "the hot fields reach byte {end}");
        // The cold part of Raft is behind them, and the previous states the
        // check compares with follow Raft at once.
        assert!(offset_of!(R, trk) >= end - raft);
        assert_eq!(offset_of!(Node, prev_lead), raft + std::mem::size_of::<R>());
        assert!(offset_of!(Node, records) > offset_of!(Node, prev_hard_state));
    }
}

#[cfg(test)]
mod durable_tests {
    use super::Durable;
    use crate::validate::MAX_TERM_OR_INDEX;

    /// A snapshot index and a commit index share a word and come back
    /// apart, up to the largest index a node accepts.
    #[test]
    fn snapshot_and_commit_indexes_come_back_apart() {
        for i in [0, 1, 7, 1 << 40, MAX_TERM_OR_INDEX] {
            assert_eq!(Durable::commit(i).get(), (None, i));
            if i > 0 {
                assert_eq!(Durable::snapshot(i).get(), (Some(i), i));
            }
        }
    }
}

#[cfg(test)]
mod small_queue_tests {
    use super::SmallQueue;

    /// First in, first out across the inline head and the deque behind it,
    /// whatever the interleaving; the deque is dropped once drained.
    #[test]
    fn fifo_across_head_and_rest() {
        let mut q = SmallQueue::default();
        assert_eq!(q.pop_front(), None::<u32>);
        q.push_back(1);
        assert!(q.rest.is_none());
        q.push_back(2);
        q.push_back(3);
        assert_eq!(q.front(), Some(&1));
        assert_eq!(q.pop_front(), Some(1));
        // The head is empty while the deque is not: new elements queue
        // behind the deque's.
        q.push_back(4);
        assert_eq!(q.front(), Some(&2));
        assert_eq!(q.pop_front(), Some(2));
        assert_eq!(q.pop_front(), Some(3));
        assert_eq!(q.pop_front(), Some(4));
        assert!(q.rest.is_none());
        assert_eq!(q.pop_front(), None);
        q.push_back(5);
        assert!(q.rest.is_none());
        assert_eq!(q.pop_front(), Some(5));
    }
}

#[cfg(test)]
mod maybe_ready_tests {
    use std::collections::VecDeque;

    use super::{RawNode, SnapshotStatus};
    use crate::config::{Config, ReadOnlyOption};
    use crate::pb::{ConfChange, ConfChangeI, ConfChangeType, ConfState, EntryType, Message};
    use crate::raft::SplitMix64;
    use crate::storage::MemoryStorage;

    struct Peer {
        node: RawNode<MemoryStorage>,
        store: MemoryStorage,
        cs: ConfState,
    }

    fn peer(id: u64, seed: u64, quiesce: bool, lease: bool) -> Peer {
        let store = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3]))
            .expect("valid configuration");
        let mut cfg = Config::new(id);
        cfg.election_tick = 10;
        cfg.heartbeat_tick = 3;
        cfg.check_quorum = true;
        cfg.pre_vote = seed % 2 == 0;
        cfg.quiesce = quiesce;
        cfg.coalesce_appends = seed % 3 != 0;
        cfg.max_committed_size_per_ready = 64;
        if lease {
            cfg.read_only_option = ReadOnlyOption::LeaseBased;
        }
        cfg.seed = seed * 10 + id;
        Peer {
            node: RawNode::new(&cfg, store.clone()).expect("node"),
            store,
            cs: ConfState::from_voters(vec![1, 2, 3]),
        }
    }

    /// `has_ready` answers what the full check answers.
    fn check(n: &RawNode<MemoryStorage>, what: &str) {
        assert_eq!(n.has_ready(), n.has_ready_full(), "{what}: a Ready hidden");
    }

    /// Handles one Ready of `p` the way a host does, reporting it back in
    /// one of the three ways the API offers, and checks `has_ready` after
    /// each call; returns its messages.
    fn handle_ready(p: &mut Peer, how: u64) -> Vec<Message> {
        let mut rd = p.node.ready();
        check(&p.node, "ready");
        {
            let mut s = p.store.wl();
            if let Some(snap) = &rd.snapshot {
                s.apply_snapshot(snap.clone()).expect("apply snapshot");
                p.cs = snap.metadata.conf_state.clone();
            }
            s.append(&rd.entries).expect("append");
            if let Some(hs) = rd.hard_state {
                s.set_hard_state(hs);
            }
        }
        for e in &rd.committed_entries {
            if e.entry_type != EntryType::EntryNormal {
                let cc = ConfChangeI::from_entry(e).expect("conf change");
                if let Ok(cs) = p.node.apply_conf_change(&cc) {
                    p.cs = cs;
                }
                check(&p.node, "apply_conf_change");
            }
        }
        let msgs = rd.take_all_messages();
        match how % 3 {
            0 => p.node.advance(rd),
            1 => {
                p.node.advance_append(rd);
                check(&p.node, "advance_append");
                p.node.advance_apply();
            }
            _ => {
                let (n, applying) = (rd.number(), rd.applying);
                p.node.on_persist_ready(n);
                check(&p.node, "on_persist_ready");
                p.node.advance_apply_to(applying);
            }
        }
        check(&p.node, "advance");
        msgs
    }

    /// The "maybe ready" bit never hides a Ready: after every call of every
    /// entry point, on a cluster driven at random (elections, proposals,
    /// conf changes, reads, transfers, snapshots, quiescence), `has_ready`
    /// answers what the full check answers. An entry point that forgets to
    /// set the bit makes this fail (and debug builds panic inside
    /// `has_ready` itself).
    #[test]
    fn maybe_ready_bit_never_hides_a_ready() {
        for seed in 0..40u64 {
            let mut rng = SplitMix64::new(seed);
            let quiesce = seed % 4 != 1;
            let lease = seed % 5 == 2;
            let mut peers: Vec<Peer> = (1..=3).map(|id| peer(id, seed, quiesce, lease)).collect();
            let mut net: VecDeque<Message> = VecDeque::new();
            for step in 0..3000 {
                let i = rng.below(3) as usize;
                let id = i as u64 + 1;
                let op = rng.below(100);
                let p = &mut peers[i];
                match op {
                    0..=17 => p.node.tick(),
                    18..=49 => {
                        // Deliver (or sometimes drop) a message in flight.
                        if let Some(m) = net.pop_front() {
                            if rng.below(10) != 0 {
                                let to = m.to as usize;
                                if (1..=3).contains(&to) {
                                    let _ = peers[to - 1].node.step(m);
                                }
                            }
                        }
                    }
                    50..=64 => {
                        if p.node.has_ready() {
                            let msgs = handle_ready(p, rng.below(3));
                            net.extend(msgs);
                        }
                    }
                    65..=69 => {
                        let _ = p.node.propose(vec![step as u8; 8]);
                    }
                    70 => {
                        let _ = p.node.propose_batch([vec![1u8], vec![2u8, 3]]);
                    }
                    71 => {
                        let _ = p.node.campaign();
                    }
                    72..=73 => {
                        let _ = p.node.read_index(vec![step as u8]);
                    }
                    74 => {
                        let _ = p.node.transfer_leader(rng.below(3) + 1);
                    }
                    75 => {
                        let _ = p.node.forget_leader();
                    }
                    76 => p.node.report_unreachable(rng.below(3) + 1),
                    77 => {
                        let st = if rng.below(2) == 0 {
                            SnapshotStatus::Finish
                        } else {
                            SnapshotStatus::Failure
                        };
                        p.node.report_snapshot(rng.below(3) + 1, st);
                    }
                    78 => p.node.wake(),
                    79 => p.node.wake_leader_lost(),
                    80..=84 => p.node.tick_quiesced(),
                    85 => {
                        let _ = p.node.add_member(4, vec![4u8]);
                    }
                    86 => {
                        let change_type = if rng.below(2) == 0 {
                            ConfChangeType::ConfChangeRemoveNode
                        } else {
                            ConfChangeType::ConfChangeAddLearnerNode
                        };
                        let _ = p.node.propose_conf_change(ConfChange {
                            change_type,
                            node_id: 4,
                            ..ConfChange::default()
                        });
                    }
                    87 => {
                        let _ = p.node.set_auto_promote(rng.below(2) == 0);
                        let _ = p.node.set_standby_promotion(false);
                    }
                    88 => {
                        // The host compacts its log behind what it applied,
                        // so lagging peers get snapshots.
                        let applied = p.node.read_local().applied;
                        let mut s = p.store.wl();
                        if s.create_snapshot(applied, Some(p.cs.clone()), None).is_ok() {
                            let _ = s.compact(applied);
                        }
                    }
                    89 => {
                        // A message from a peer's peer that does not exist,
                        // or a local type: refused, nothing changes.
                        let mut m = Message::new(crate::pb::MessageType::MsgHeartbeatResp, 9, id);
                        m.term = 1;
                        let _ = p.node.step(m);
                    }
                    _ => {
                        let _ = p.node.store_mut();
                    }
                }
                for (j, q) in peers.iter().enumerate() {
                    assert_eq!(
                        q.node.has_ready(),
                        q.node.has_ready_full(),
                        "seed {seed} step {step} op {op} on node {id}: node {} hid a Ready",
                        j + 1
                    );
                }
                while net.len() > 200 {
                    net.pop_front();
                }
            }
            let commit = peers
                .iter()
                .map(|q| q.node.read_local().commit)
                .max()
                .unwrap_or(0);
            // The run did what it is for: elected leaders and committed.
            assert!(commit > 0, "seed {seed}: nothing committed");
        }
    }

    /// The bit does what it is for: an idle follower that found nothing
    /// answers from it, and a tick that only counts leaves it clear.
    #[test]
    fn idle_follower_answers_from_the_bit() {
        let mut p = peer(2, 1, false, false);
        let mut hb = Message::new(crate::pb::MessageType::MsgHeartbeat, 1, 2);
        hb.term = 1;
        p.node.step(hb).expect("heartbeat");
        while p.node.has_ready() {
            handle_ready(&mut p, 0);
        }
        let bit = |p: &Peer| {
            p.node
                .raft
                .maybe_ready
                .load(std::sync::atomic::Ordering::Relaxed)
                & crate::raft::MAYBE_READY
                != 0
        };
        assert!(!bit(&p));
        p.node.tick();
        assert!(!bit(&p), "a counting tick leaves the bit clear");
        assert!(!p.node.has_ready());
        // Past the randomized timeout, the tick campaigns: the bit is set.
        for _ in 0..20 {
            p.node.tick();
        }
        assert!(bit(&p));
        assert!(p.node.has_ready());
    }
}
