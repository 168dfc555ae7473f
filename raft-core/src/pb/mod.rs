//! Wire types: the raftpb schema of etcd raft, field for field.
//!
//! The message names, field numbers and enum values are those of etcd's
//! `raft.proto`, so raftlet and etcd raft nodes can exchange bytes. Enums are
//! *open* (as proto2 enums are in Go): a number without a name is kept and
//! re-encoded unchanged, which is why they are newtypes over `i32` with one
//! associated constant per named value, spelled as in etcd.
//!
//! Bytes fields tell "absent" from "present but empty" apart (`Option<Bytes>`):
//! etcd v3.6 writes nothing for a nil field and a zero-length field for an
//! empty one, and raftlet must re-encode what it received byte for byte.
//!
//! The codec lives in [`codec`]; see [`Encode`] and [`Decode`].

use bytes::Bytes;

pub mod codec;

pub use codec::{Decode, DecodeError, Encode, ENTRY_HEAD_MAX};

macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $value:expr ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub i32);

        #[allow(non_upper_case_globals, reason = "constants keep etcd raftpb's spelling")]
        impl $name {
            $( $(#[$vmeta])* pub const $variant: $name = $name($value); )+

            /// The etcd name of this value, or `None` for a number without a name.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some(stringify!($variant)), )+
                    _ => None,
                }
            }

            /// The value whose etcd name is `name`.
            pub fn from_name(name: &str) -> Option<$name> {
                match name {
                    $( stringify!($variant) => Some($name($value)), )+
                    _ => None,
                }
            }

            /// Every named value, in numeric order.
            pub const ALL: &'static [$name] = &[$( $name($value) ),+];
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}", self.0),
                }
            }
        }
    };
}

open_enum! {
    /// The kind of a log entry (raftpb `EntryType`).
    EntryType {
        /// An ordinary proposal.
        EntryNormal = 0,
        /// A [`ConfChange`] (v1) in `data`.
        EntryConfChange = 1,
        /// A [`ConfChangeV2`] in `data`.
        EntryConfChangeV2 = 2,
    }
}

open_enum! {
    /// The kind of a [`Message`] (raftpb `MessageType`).
    MessageType {
        /// Local: start an election.
        MsgHup = 0,
        /// Local: the leader should send heartbeats.
        MsgBeat = 1,
        /// A proposal (local, or forwarded to the leader).
        MsgProp = 2,
        /// Append entries.
        MsgApp = 3,
        /// Response to [`MessageType::MsgApp`].
        MsgAppResp = 4,
        /// Request a vote.
        MsgVote = 5,
        /// Response to [`MessageType::MsgVote`].
        MsgVoteResp = 6,
        /// Install a snapshot.
        MsgSnap = 7,
        /// Leader heartbeat.
        MsgHeartbeat = 8,
        /// Response to [`MessageType::MsgHeartbeat`].
        MsgHeartbeatResp = 9,
        /// Local: a peer could not be reached.
        MsgUnreachable = 10,
        /// Local: outcome of a snapshot send.
        MsgSnapStatus = 11,
        /// Local: the leader should check that a quorum is active.
        MsgCheckQuorum = 12,
        /// Ask the leader to transfer leadership.
        MsgTransferLeader = 13,
        /// Tell the transfer target to campaign at once.
        MsgTimeoutNow = 14,
        /// A linearizable read request.
        MsgReadIndex = 15,
        /// Response to [`MessageType::MsgReadIndex`].
        MsgReadIndexResp = 16,
        /// Request a pre-vote.
        MsgPreVote = 17,
        /// Response to [`MessageType::MsgPreVote`].
        MsgPreVoteResp = 18,
        /// etcd's asynchronous storage append (not used by raftlet; decoded for interop).
        MsgStorageAppend = 19,
        /// etcd's asynchronous storage append response.
        MsgStorageAppendResp = 20,
        /// etcd's asynchronous storage apply.
        MsgStorageApply = 21,
        /// etcd's asynchronous storage apply response.
        MsgStorageApplyResp = 22,
        /// Local: the follower should forget its leader.
        MsgForgetLeader = 23,
    }
}

open_enum! {
    /// The kind of a single configuration change (raftpb `ConfChangeType`).
    ConfChangeType {
        /// Add a voter (or promote a learner).
        ConfChangeAddNode = 0,
        /// Remove a member.
        ConfChangeRemoveNode = 1,
        /// Update a member's context; no membership change.
        ConfChangeUpdateNode = 2,
        /// Add a learner (or demote a voter).
        ConfChangeAddLearnerNode = 3,
    }
}

open_enum! {
    /// How a [`ConfChangeV2`] uses joint consensus (raftpb `ConfChangeTransition`).
    ConfChangeTransition {
        /// Joint consensus only when needed, left automatically.
        ConfChangeTransitionAuto = 0,
        /// Joint consensus, left automatically.
        ConfChangeTransitionJointImplicit = 1,
        /// Joint consensus, left by an explicit empty [`ConfChangeV2`].
        ConfChangeTransitionJointExplicit = 2,
    }
}

impl MessageType {
    /// Whether this type is only ever generated locally and must not arrive
    /// from the network (etcd `IsLocalMsg`).
    pub fn is_local(self) -> bool {
        matches!(
            self,
            MessageType::MsgHup
                | MessageType::MsgBeat
                | MessageType::MsgUnreachable
                | MessageType::MsgSnapStatus
                | MessageType::MsgCheckQuorum
                | MessageType::MsgStorageAppend
                | MessageType::MsgStorageAppendResp
                | MessageType::MsgStorageApply
                | MessageType::MsgStorageApplyResp
        )
    }

    /// Whether this type is a response to another message (etcd `IsResponseMsg`).
    pub fn is_response(self) -> bool {
        matches!(
            self,
            MessageType::MsgAppResp
                | MessageType::MsgVoteResp
                | MessageType::MsgHeartbeatResp
                | MessageType::MsgUnreachable
                | MessageType::MsgReadIndexResp
                | MessageType::MsgPreVoteResp
                | MessageType::MsgStorageAppendResp
                | MessageType::MsgStorageApplyResp
        )
    }

    /// The response type for a vote request type (etcd `voteRespMsgType`).
    ///
    /// Returns `None` for types that are not vote requests.
    pub fn vote_response(self) -> Option<MessageType> {
        match self {
            MessageType::MsgVote => Some(MessageType::MsgVoteResp),
            MessageType::MsgPreVote => Some(MessageType::MsgPreVoteResp),
            _ => None,
        }
    }
}

/// One log entry (raftpb `Entry`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// What `data` holds.
    pub entry_type: EntryType,
    /// The term in which the entry was proposed.
    pub term: u64,
    /// The entry's position in the log.
    pub index: u64,
    /// The payload; `None` is etcd's nil (written as nothing on the wire).
    pub data: Option<Bytes>,
}

impl Entry {
    /// A normal entry with the given term, index and payload.
    pub fn new(term: u64, index: u64, data: impl Into<Bytes>) -> Entry {
        Entry {
            entry_type: EntryType::EntryNormal,
            term,
            index,
            data: Some(data.into()),
        }
    }

    /// The payload as a slice (empty when absent).
    pub fn data(&self) -> &[u8] {
        self.data.as_deref().unwrap_or(&[])
    }

    /// The payload size that counts against the uncommitted-size budget
    /// (etcd `payloadSize`): the length of `data`.
    pub fn payload_size(&self) -> u64 {
        self.data().len() as u64
    }

    /// Whether the entry carries a configuration change (`EntryConfChange`
    /// or `EntryConfChangeV2`).
    ///
    /// ```
    /// use raftlet::pb::{Entry, EntryType};
    /// assert!(!Entry::new(1, 1, &b"x"[..]).is_conf_change());
    /// let e = Entry { entry_type: EntryType::EntryConfChangeV2, ..Entry::default() };
    /// assert!(e.is_conf_change());
    /// ```
    pub fn is_conf_change(&self) -> bool {
        self.entry_type == EntryType::EntryConfChange
            || self.entry_type == EntryType::EntryConfChangeV2
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::describe::describe_entry(self))
    }
}

/// The state that must be persisted before messages are sent (raftpb `HardState`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct HardState {
    /// The current term.
    pub term: u64,
    /// Whom this node voted for in `term` (0 for nobody).
    pub vote: u64,
    /// The highest index known to be committed.
    pub commit: u64,
}

impl HardState {
    /// Whether every field is zero (etcd `IsEmptyHardState`).
    pub fn is_empty(&self) -> bool {
        *self == HardState::default()
    }
}

/// A cluster configuration (raftpb `ConfState`).
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct ConfState {
    /// The voters of the incoming configuration.
    pub voters: Vec<u64>,
    /// The learners.
    pub learners: Vec<u64>,
    /// The voters of the outgoing configuration (non-empty only in a joint configuration).
    pub voters_outgoing: Vec<u64>,
    /// Voters of the outgoing configuration that become learners when the
    /// joint configuration is left.
    pub learners_next: Vec<u64>,
    /// Whether the joint configuration is left automatically.
    pub auto_leave: bool,
}

impl ConfState {
    /// A configuration of the given voters and no learners.
    pub fn from_voters(voters: impl Into<Vec<u64>>) -> ConfState {
        ConfState {
            voters: voters.into(),
            ..ConfState::default()
        }
    }

    /// Whether two configurations are the same up to the order of their ids
    /// (etcd `ConfState.Equivalent`). Returns a description of the first
    /// difference otherwise.
    pub fn equivalent(&self, other: &ConfState) -> Result<(), String> {
        fn sorted(v: &[u64]) -> Vec<u64> {
            let mut v = v.to_vec();
            v.sort_unstable();
            v
        }
        let pairs = [
            ("voters", &self.voters, &other.voters),
            ("learners", &self.learners, &other.learners),
            (
                "voters_outgoing",
                &self.voters_outgoing,
                &other.voters_outgoing,
            ),
            ("learners_next", &self.learners_next, &other.learners_next),
        ];
        for (name, a, b) in pairs {
            if sorted(a) != sorted(b) {
                return Err(format!("{name}: {a:?} != {b:?}"));
            }
        }
        if self.auto_leave != other.auto_leave {
            return Err(format!(
                "auto_leave: {} != {}",
                self.auto_leave, other.auto_leave
            ));
        }
        Ok(())
    }
}

/// Where a snapshot sits in the log and the configuration at that point
/// (raftpb `SnapshotMetadata`).
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct SnapshotMetadata {
    /// The configuration at `index`.
    pub conf_state: ConfState,
    /// The last index the snapshot covers.
    pub index: u64,
    /// The term of the entry at `index`.
    pub term: u64,
}

/// A state-machine snapshot (raftpb `Snapshot`).
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct Snapshot {
    /// The host's serialized state machine; `None` is etcd's nil.
    pub data: Option<Bytes>,
    /// Where the snapshot sits in the log.
    pub metadata: SnapshotMetadata,
}

impl Snapshot {
    /// Whether this is the empty snapshot (index 0; etcd `IsEmptySnap`).
    pub fn is_empty(&self) -> bool {
        self.metadata.index == 0
    }

    /// The snapshot data as a slice (empty when absent).
    pub fn data(&self) -> &[u8] {
        self.data.as_deref().unwrap_or(&[])
    }
}

/// A Raft message (raftpb `Message`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Message {
    /// What kind of message this is.
    pub msg_type: MessageType,
    /// The recipient.
    pub to: u64,
    /// The sender.
    pub from: u64,
    /// The sender's term (0 for local messages).
    pub term: u64,
    /// The term of the entry at `index` (appends), or the candidate's last
    /// term (votes), or a hint term (rejections).
    pub log_term: u64,
    /// An index whose meaning depends on the type.
    pub index: u64,
    /// Entries carried by appends and proposals.
    pub entries: Vec<Entry>,
    /// The sender's commit index.
    pub commit: u64,
    /// The snapshot of a `MsgSnap`; `None` when absent. Boxed (etcd's is a
    /// pointer too): messages are moved often and most carry none.
    pub snapshot: Option<Box<Snapshot>>,
    /// Whether a response rejects the request.
    pub reject: bool,
    /// The rejecting follower's hint for the leader's next probe.
    pub reject_hint: u64,
    /// Opaque context (read requests, heartbeats, campaign types); `None` is nil.
    pub context: Option<Bytes>,
    /// Used by etcd's asynchronous storage messages; carried for interop.
    pub vote: u64,
    /// Used by etcd's asynchronous storage messages; carried for interop.
    pub responses: Vec<Message>,
}

impl Message {
    /// A message of the given type between two peers, every other field zero.
    pub fn new(msg_type: MessageType, from: u64, to: u64) -> Message {
        Message {
            msg_type,
            from,
            to,
            ..Message::default()
        }
    }

    /// The context as a slice (empty when absent).
    pub fn context(&self) -> &[u8] {
        self.context.as_deref().unwrap_or(&[])
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::describe::describe_message(self))
    }
}

/// A configuration change of the first version (raftpb `ConfChange`).
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct ConfChange {
    /// Unused by raft; carried for compatibility.
    pub id: u64,
    /// What to do with `node_id`.
    pub change_type: ConfChangeType,
    /// The member concerned.
    pub node_id: u64,
    /// Opaque host data (for example the new member's address); `None` is nil.
    pub context: Option<Bytes>,
}

/// One change within a [`ConfChangeV2`] (raftpb `ConfChangeSingle`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct ConfChangeSingle {
    /// What to do with `node_id`.
    pub change_type: ConfChangeType,
    /// The member concerned.
    pub node_id: u64,
}

impl ConfChangeSingle {
    /// A single change of the given type for `node_id`.
    pub fn new(change_type: ConfChangeType, node_id: u64) -> ConfChangeSingle {
        ConfChangeSingle {
            change_type,
            node_id,
        }
    }
}

/// A configuration change of several members at once, possibly through joint
/// consensus (raftpb `ConfChangeV2`). An empty one leaves a joint configuration.
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct ConfChangeV2 {
    /// How joint consensus is used.
    pub transition: ConfChangeTransition,
    /// The changes, applied in order.
    pub changes: Vec<ConfChangeSingle>,
    /// Opaque host data; `None` is nil.
    pub context: Option<Bytes>,
}

impl ConfChange {
    /// This change as a [`ConfChangeV2`] (etcd `ConfChange.AsV2`).
    pub fn as_v2(&self) -> ConfChangeV2 {
        ConfChangeV2 {
            transition: ConfChangeTransition::ConfChangeTransitionAuto,
            changes: vec![ConfChangeSingle::new(self.change_type, self.node_id)],
            context: self.context.clone(),
        }
    }
}

impl ConfChangeV2 {
    /// Whether this change uses joint consensus and, if so, whether the joint
    /// configuration is left automatically (etcd `EnterJoint`).
    ///
    /// Returns `(auto_leave, uses_joint)`.
    pub fn enter_joint(&self) -> (bool, bool) {
        // Joint consensus is needed unless the change is a single change
        // under the automatic transition.
        if self.transition != ConfChangeTransition::ConfChangeTransitionAuto
            || self.changes.len() > 1
        {
            let auto_leave = match self.transition {
                ConfChangeTransition::ConfChangeTransitionAuto
                | ConfChangeTransition::ConfChangeTransitionJointImplicit => true,
                ConfChangeTransition::ConfChangeTransitionJointExplicit => false,
                // etcd panics on an unknown transition. raftlet refuses one
                // at propose and apply time (crate::validate); a direct
                // caller gets explicit (nothing leaves joint by itself).
                _ => false,
            };
            return (auto_leave, true);
        }
        (false, false)
    }

    /// Whether this is the empty change that leaves a joint configuration
    /// (etcd `LeaveJoint`). The context is ignored: a leave-joint change
    /// may carry one.
    pub fn leave_joint(&self) -> bool {
        self.transition == ConfChangeTransition::ConfChangeTransitionAuto && self.changes.is_empty()
    }
}

/// A configuration change of either version, as carried by a conf-change entry.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ConfChangeI {
    /// A first-version change (entry type `EntryConfChange`).
    V1(ConfChange),
    /// A second-version change (entry type `EntryConfChangeV2`).
    V2(ConfChangeV2),
}

impl ConfChangeI {
    /// The change as a [`ConfChangeV2`].
    pub fn as_v2(&self) -> ConfChangeV2 {
        match self {
            ConfChangeI::V1(cc) => cc.as_v2(),
            ConfChangeI::V2(cc) => cc.clone(),
        }
    }

    /// The change as a [`ConfChange`] if it is one.
    pub fn as_v1(&self) -> Option<&ConfChange> {
        match self {
            ConfChangeI::V1(cc) => Some(cc),
            ConfChangeI::V2(_) => None,
        }
    }

    /// The entry type and encoded payload of a log entry carrying this change
    /// (etcd `MarshalConfChange`).
    pub fn to_entry_parts(&self) -> (EntryType, Bytes) {
        match self {
            ConfChangeI::V1(cc) => (EntryType::EntryConfChange, Bytes::from(cc.encode_to_vec())),
            ConfChangeI::V2(cc) => (
                EntryType::EntryConfChangeV2,
                Bytes::from(cc.encode_to_vec()),
            ),
        }
    }

    /// Decodes the conf change carried by an entry of type
    /// `EntryConfChange` or `EntryConfChangeV2`.
    ///
    /// # Errors
    /// [`DecodeError`] when the payload is malformed or the entry is not a
    /// conf-change entry.
    pub fn from_entry(e: &Entry) -> Result<ConfChangeI, DecodeError> {
        match e.entry_type {
            EntryType::EntryConfChange => Ok(ConfChangeI::V1(ConfChange::decode(e.data())?)),
            EntryType::EntryConfChangeV2 => Ok(ConfChangeI::V2(ConfChangeV2::decode(e.data())?)),
            _ => Err(DecodeError::new("entry does not carry a conf change")),
        }
    }
}

impl From<ConfChange> for ConfChangeI {
    fn from(cc: ConfChange) -> Self {
        ConfChangeI::V1(cc)
    }
}

impl From<ConfChangeV2> for ConfChangeI {
    fn from(cc: ConfChangeV2) -> Self {
        ConfChangeI::V2(cc)
    }
}
