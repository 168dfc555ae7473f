"""The exceptions of raftlet (DESIGN §5).

Every error the library raises is a ``RaftError``; the messages are the
core's (etcd's wording). ``ConfigError``, ``DecodeError`` and
``InvalidMessageError`` are also ``ValueError``s. Wrong argument types
raise ``TypeError`` and bad argument values ``ValueError``, as everywhere
in Python.
"""

from __future__ import annotations

__all__ = [
    "CompactedError",
    "ConfChangeRefusedError",
    "ConfigError",
    "DecodeError",
    "ForeignReadyError",
    "InvalidMessageError",
    "InvalidStateError",
    "NoLeaderError",
    "PanicError",
    "PromotionNotReadyError",
    "ProposalDroppedError",
    "RaftError",
    "ReadyNotPersistedError",
    "ReadyStaleError",
    "SnapshotOutOfDateError",
    "SnapshotTemporarilyUnavailableError",
    "StepLocalMessageError",
    "StepPeerNotFoundError",
    "StorageError",
    "TooManyLearnersError",
    "TransferRefusedError",
    "UnavailableError",
]


class RaftError(Exception):
    """Base class of every raftlet error."""


class ProposalDroppedError(RaftError):
    """A proposal was not accepted: no leader is known, forwarding is
    disabled, a leader transfer is under way or the uncommitted budget is
    exhausted (etcd ``ErrProposalDropped``)."""


class StepLocalMessageError(RaftError):
    """A local-only message type was passed to ``RawNode.step`` (etcd
    ``ErrStepLocalMsg``)."""


class StepPeerNotFoundError(RaftError):
    """A response came from a peer that is not in the configuration (etcd
    ``ErrStepPeerNotFound``)."""


class StorageError(RaftError):
    """The storage failed."""


class CompactedError(StorageError):
    """The requested index was compacted away (etcd ``ErrCompacted``)."""


class UnavailableError(StorageError):
    """The requested index is past the last entry (etcd ``ErrUnavailable``)."""


class SnapshotOutOfDateError(StorageError):
    """The snapshot is not newer than the one held (etcd ``ErrSnapOutOfDate``)."""


class SnapshotTemporarilyUnavailableError(StorageError):
    """The snapshot is being prepared; ask again later (etcd
    ``ErrSnapshotTemporarilyUnavailable``)."""


class ConfigError(RaftError, ValueError):
    """The configuration is invalid; the message names the field."""


class DecodeError(RaftError, ValueError):
    """Bytes could not be decoded as raftpb."""


class InvalidMessageError(RaftError, ValueError):
    """A message from the network was refused before it was stepped: its
    type is unknown, a term or index in it is above 2**63 - 1, or a peer
    message comes from an id that cannot be a member. Nothing in the node
    changed."""


class ConfChangeRefusedError(RaftError):
    """A configuration change was refused; the message says why."""


class PromotionNotReadyError(RaftError):
    """Promoting a learner was refused because it is not caught up.

    Attributes:
        id: The learner.
        lag: How far its match index is behind the leader's last index.
        pending_snapshot: Whether the leader is sending it a snapshot.
        recent_active: Whether the leader heard from it recently.
    """

    def __init__(
        self,
        message: str,
        *,
        id: int = 0,
        lag: int = 0,
        pending_snapshot: bool = False,
        recent_active: bool = False,
    ) -> None:
        super().__init__(message)
        self.id = id
        self.lag = lag
        self.pending_snapshot = pending_snapshot
        self.recent_active = recent_active


class TooManyLearnersError(RaftError):
    """Adding a learner would exceed ``Config.max_learners``."""


class TransferRefusedError(RaftError):
    """A leader transfer was refused; the message says why."""


class NoLeaderError(RaftError):
    """The operation needs a leader and none is known."""


class ReadyStaleError(RaftError):
    """The ``Ready`` was already advanced, or a later ``Ready`` of its node
    was (Readies are advanced in the order they were taken). Nothing was
    acknowledged."""


class ForeignReadyError(RaftError, ValueError):
    """The ``Ready`` was handed out by another ``RawNode``. Nothing was
    acknowledged."""


class ReadyNotPersistedError(RaftError):
    """The ``Ready`` cannot be advanced: the storage lacks its entries or
    snapshot (or those of an earlier ``Ready`` it would cover). Persist
    them first; nothing was acknowledged."""


class PanicError(RaftError):
    """raftlet panicked inside its core: a broken internal invariant, or a
    host that broke the storage contract (for example compacting entries
    that were committed but not yet handed out to apply). The message is
    the panic's. The node is unusable afterwards (every call raises
    ``InvalidStateError``): restart it from its storage."""


class InvalidStateError(RaftError):
    """The operation is not valid in the node's state (bootstrapping a
    non-empty storage, using a closed node)."""
