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
        if rd.snapshot is not None:
            storage.apply_snapshot(rd.snapshot)
        storage.append(rd.entries)
        if rd.hard_state is not None:
            storage.set_hard_state(rd.hard_state)
        # send rd.messages, then rd.persisted_messages, to their peers
        for entry in rd.committed_entries:
            ...  # apply entry.data to the state machine
        node.advance(rd)
    assert node.raft_state == "Leader"
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
    InvalidStateError,
    NoLeaderError,
    PromotionNotReadyError,
    ProposalDroppedError,
    RaftError,
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
    Config,
    ConfChange,
    ConfChangeSingle,
    ConfChangeV2,
    ConfState,
    DiskStorage,
    Entry,
    HardState,
    MemoryStorage,
    Message,
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
    "HardState",
    "InvalidStateError",
    "MemoryStorage",
    "Message",
    "MessageType",
    "NoLeaderError",
    "Progress",
    "PromotionNotReadyError",
    "ProposalDroppedError",
    "RaftError",
    "RawNode",
    "ReadOnlyOption",
    "ReadState",
    "Ready",
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
