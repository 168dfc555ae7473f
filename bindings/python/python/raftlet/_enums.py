"""The enums of raftlet.

Every enum follows the same three rules:

- its members are UPPER_SNAKE Python constants (``MessageType.MSG_APP``,
  ``StateRole.LEADER``, ``ReadOnlyOption.SAFE``);
- etcd's Go names are aliases of the same members (``MessageType.MsgApp``,
  ``StateRole.StateLeader``, ``ReadOnlyOption.ReadOnlySafe``), so code
  ported from etcd keeps its spelling;
- ``str()``, ``format()`` and ``etcd_name`` give etcd's name, as etcd's
  ``String()`` prints it (``"MsgApp"``, ``"StateLeader"``).

``MessageType``, ``EntryType``, ``ConfChangeType`` and
``ConfChangeTransition`` are ``IntEnum``s whose values are etcd's raftpb
numbers. raftpb enums are open: a number without a name (for example from a
newer peer) becomes a pseudo-member that keeps its number, so decoding and
re-encoding never loses it.

``StateRole`` and ``ReadOnlyOption`` are ``str`` enums whose values are
raftlet's names, so ``status.raft_state == "Leader"`` holds; looking one up
by etcd's name works too (``StateRole("StateLeader")``).
"""

from __future__ import annotations

import enum
from typing import Any, Optional

__all__ = [
    "ConfChangeTransition",
    "ConfChangeType",
    "EntryType",
    "MessageType",
    "ReadOnlyOption",
    "StateRole",
]

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1

# etcd's name of each value, by enum class (filled in below).
_ETCD_NAMES: dict[type, dict[Any, str]] = {}


class _RaftpbEnum(enum.IntEnum):
    """Base of the raftpb enums: open (unnamed numbers are kept) and
    printed with etcd's names."""

    @classmethod
    def _missing_(cls, value: object) -> Optional[Any]:
        if isinstance(value, int) and not isinstance(value, bool) and _INT32_MIN <= value <= _INT32_MAX:
            # A pseudo-member for a number without a name (proto2 enums
            # are open in Go, and raftlet keeps such numbers).
            member = int.__new__(cls, value)
            member._name_ = None  # type: ignore[assignment]
            member._value_ = value
            return member
        return None

    @property
    def etcd_name(self) -> str:
        """etcd's name of the value (``"MsgApp"``), or the number as text."""
        return _ETCD_NAMES.get(type(self), {}).get(int(self), str(int(self)))

    def __str__(self) -> str:
        return self.etcd_name

    def __repr__(self) -> str:
        if self._name_ is None:
            return f"<{type(self).__name__}: {int(self)}>"
        return f"<{type(self).__name__}.{self._name_}: {int(self)}>"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class MessageType(_RaftpbEnum):
    """The kind of a ``Message`` (raftpb ``MessageType``)."""

    MSG_HUP = 0
    MSG_BEAT = 1
    MSG_PROP = 2
    MSG_APP = 3
    MSG_APP_RESP = 4
    MSG_VOTE = 5
    MSG_VOTE_RESP = 6
    MSG_SNAP = 7
    MSG_HEARTBEAT = 8
    MSG_HEARTBEAT_RESP = 9
    MSG_UNREACHABLE = 10
    MSG_SNAP_STATUS = 11
    MSG_CHECK_QUORUM = 12
    MSG_TRANSFER_LEADER = 13
    MSG_TIMEOUT_NOW = 14
    MSG_READ_INDEX = 15
    MSG_READ_INDEX_RESP = 16
    MSG_PRE_VOTE = 17
    MSG_PRE_VOTE_RESP = 18
    MSG_STORAGE_APPEND = 19
    MSG_STORAGE_APPEND_RESP = 20
    MSG_STORAGE_APPLY = 21
    MSG_STORAGE_APPLY_RESP = 22
    MSG_FORGET_LEADER = 23

    # etcd's names, as aliases.
    MsgHup = 0
    MsgBeat = 1
    MsgProp = 2
    MsgApp = 3
    MsgAppResp = 4
    MsgVote = 5
    MsgVoteResp = 6
    MsgSnap = 7
    MsgHeartbeat = 8
    MsgHeartbeatResp = 9
    MsgUnreachable = 10
    MsgSnapStatus = 11
    MsgCheckQuorum = 12
    MsgTransferLeader = 13
    MsgTimeoutNow = 14
    MsgReadIndex = 15
    MsgReadIndexResp = 16
    MsgPreVote = 17
    MsgPreVoteResp = 18
    MsgStorageAppend = 19
    MsgStorageAppendResp = 20
    MsgStorageApply = 21
    MsgStorageApplyResp = 22
    MsgForgetLeader = 23


class EntryType(_RaftpbEnum):
    """The kind of a log ``Entry`` (raftpb ``EntryType``)."""

    NORMAL = 0
    CONF_CHANGE = 1
    CONF_CHANGE_V2 = 2

    EntryNormal = 0
    EntryConfChange = 1
    EntryConfChangeV2 = 2


class ConfChangeType(_RaftpbEnum):
    """The kind of a single membership change (raftpb ``ConfChangeType``)."""

    ADD_NODE = 0
    REMOVE_NODE = 1
    UPDATE_NODE = 2
    ADD_LEARNER_NODE = 3

    ConfChangeAddNode = 0
    ConfChangeRemoveNode = 1
    ConfChangeUpdateNode = 2
    ConfChangeAddLearnerNode = 3


class ConfChangeTransition(_RaftpbEnum):
    """How a ``ConfChangeV2`` uses joint consensus (raftpb
    ``ConfChangeTransition``)."""

    AUTO = 0
    JOINT_IMPLICIT = 1
    JOINT_EXPLICIT = 2

    ConfChangeTransitionAuto = 0
    ConfChangeTransitionJointImplicit = 1
    ConfChangeTransitionJointExplicit = 2


for _cls in (MessageType, EntryType, ConfChangeType, ConfChangeTransition):
    # The etcd spelling is the alias that is not UPPER_SNAKE.
    _ETCD_NAMES[_cls] = {int(m): name for name, m in _cls.__members__.items() if not name.isupper()}


class _StrEnum(str, enum.Enum):
    """A ``str`` enum whose value is raftlet's name and whose ``str()`` and
    ``format()`` are etcd's name (the alias that is not UPPER_SNAKE)."""

    @classmethod
    def _missing_(cls, value: object) -> Optional[Any]:
        # Lookup by etcd's name: StateRole("StateLeader") is LEADER.
        if isinstance(value, str):
            member = cls.__members__.get(value)
            if member is not None and not value.isupper():
                return member
        return None

    @property
    def etcd_name(self) -> str:
        """etcd's name of the value (``"StateLeader"``, ``"ReadOnlySafe"``)."""
        return _ETCD_NAMES[type(self)][self.value]

    def __str__(self) -> str:
        return self.etcd_name

    def __format__(self, spec: str) -> str:
        return format(self.etcd_name, spec)


class StateRole(_StrEnum):
    """The role of a node (etcd ``StateType``). A ``str``:
    ``status.raft_state == "Leader"``; ``str()`` gives ``"StateLeader"``."""

    FOLLOWER = "Follower"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    PRE_CANDIDATE = "PreCandidate"

    # etcd's names, as aliases.
    StateFollower = "Follower"
    StateCandidate = "Candidate"
    StateLeader = "Leader"
    StatePreCandidate = "PreCandidate"


class ReadOnlyOption(_StrEnum):
    """How linearizable reads are served (``Config.read_only_option``;
    etcd ``ReadOnlyOption``). A ``str``: ``option == "Safe"``."""

    SAFE = "Safe"
    """The leader confirms its leadership with a heartbeat round first."""
    LEASE_BASED = "LeaseBased"
    """The leader answers from its lease (requires ``check_quorum``)."""

    # etcd's names, as aliases.
    ReadOnlySafe = "Safe"
    ReadOnlyLeaseBased = "LeaseBased"


for _scls in (StateRole, ReadOnlyOption):
    _ETCD_NAMES[_scls] = {m.value: name for name, m in _scls.__members__.items() if not name.isupper()}
