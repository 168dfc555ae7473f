"""raftlet: a Raft consensus library with the behaviour of etcd raft v3.6.

Pre-vote, check-quorum, learners with safe promotion, joint consensus,
ReadIndex, leader transfer and snapshot catch-up, speaking etcd's raftpb
wire format. The library does no I/O and starts no threads: the host drives
a ``RawNode`` and handles each ``Ready`` it hands back::

    import raftlet

    storage = raftlet.MemoryStorage(raftlet.ConfState(voters=[1]))
    node = raftlet.RawNode(raftlet.Config(1), storage)
    node.campaign()
    while node.has_ready():
        rd = node.ready()
        # send rd.messages now: they may leave before the write
        if rd.snapshot is not None:
            storage.apply_snapshot(rd.snapshot)
        storage.append(rd.entries)
        if rd.hard_state is not None:
            storage.set_hard_state(rd.hard_state)
        # send rd.persisted_messages only now that the write is durable
        # (a host that sends everything here uses rd.all_messages())
        for entry in rd.committed_entries:
            ...  # apply entry.data to the state machine
        node.advance(rd)
    assert node.basic_status().raft_state == raftlet.StateRole.LEADER

A panic inside the core raises ``PanicError``, a ``RaftError`` like every
error raftlet raises.
"""

from raftlet._enums import (
    ConfChangeTransition,
    ConfChangeType,
    EntryType,
    MessageType,
    ReadOnlyOption,
    StateRole,
)
from raftlet._errors import (
    CompactedError,
    ConfChangeRefusedError,
    ConfigError,
    DecodeError,
    ForeignReadyError,
    InvalidMessageError,
    InvalidStateError,
    NoLeaderError,
    PanicError,
    PromotionNotReadyError,
    ProposalDroppedError,
    RaftError,
    ReadyNotPersistedError,
    ReadyStaleError,
    SnapshotOutOfDateError,
    SnapshotTemporarilyUnavailableError,
    StepLocalMessageError,
    StepPeerNotFoundError,
    StorageError,
    TooManyLearnersError,
    TransferRefusedError,
    UnavailableError,
)
from raftlet._raftlet import (
    BasicStatus,
    Config,
    ConfChange,
    ConfChangeSingle,
    ConfChangeV2,
    ConfState,
    DiskStorage,
    Entry,
    HardState,
    LearnerStatus,
    LocalRead,
    MembershipEvent,
    MemoryStorage,
    Message,
    NotPromotable,
    Progress,
    RawNode,
    Ready,
    ReadState,
    Snapshot,
    SoftState,
    Status,
    __version__,
)

__all__ = [
    "BasicStatus",
    "CompactedError",
    "ConfChange",
    "ConfChangeRefusedError",
    "ConfChangeSingle",
    "ConfChangeTransition",
    "ConfChangeType",
    "ConfChangeV2",
    "ConfState",
    "Config",
    "ConfigError",
    "DecodeError",
    "DiskStorage",
    "Entry",
    "EntryType",
    "ForeignReadyError",
    "HardState",
    "InvalidMessageError",
    "InvalidStateError",
    "LearnerStatus",
    "LocalRead",
    "MembershipEvent",
    "MemoryStorage",
    "Message",
    "MessageType",
    "NoLeaderError",
    "NotPromotable",
    "PanicError",
    "Progress",
    "PromotionNotReadyError",
    "ProposalDroppedError",
    "RaftError",
    "RawNode",
    "ReadOnlyOption",
    "ReadState",
    "Ready",
    "ReadyNotPersistedError",
    "ReadyStaleError",
    "SnapshotOutOfDateError",
    "SnapshotTemporarilyUnavailableError",
    "Snapshot",
    "SoftState",
    "StateRole",
    "Status",
    "StepLocalMessageError",
    "StepPeerNotFoundError",
    "StorageError",
    "TooManyLearnersError",
    "TransferRefusedError",
    "UnavailableError",
    "__version__",
]
