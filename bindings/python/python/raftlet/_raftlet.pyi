"""Typed stubs of the native module ``raftlet._raftlet``.

Import the names from ``raftlet``; this module is private.
"""

import os
from collections.abc import Iterable
from typing import ClassVar, Final, Optional, Union, final

from typing_extensions import Self, TypeAlias

from raftlet._enums import (
    ConfChangeTransition,
    ConfChangeType,
    EntryType,
    MessageType,
    ReadOnlyOption,
    StateRole,
)

__all__ = [
    "BasicStatus",
    "ConfChange",
    "ConfChangeSingle",
    "ConfChangeV2",
    "ConfState",
    "Config",
    "DiskStorage",
    "Entry",
    "HardState",
    "LearnerStatus",
    "LocalRead",
    "MembershipEvent",
    "MemoryStorage",
    "Message",
    "NotPromotable",
    "Progress",
    "RawNode",
    "ReadState",
    "Ready",
    "Snapshot",
    "SoftState",
    "Status",
    "__version__",
]

_BytesLike: TypeAlias = Union[bytes, bytearray, memoryview]

__version__: Final[str]

@final
class Config:
    """The parameters of one Raft node.

    Every argument has the core's default (etcd raft v3.6 with pre-vote and
    check-quorum on). Construction does not validate; ``validate()`` does,
    and so does ``RawNode``.

    Args:
        id: This node's id; must not be zero.
        election_tick: Ticks without a leader before a follower campaigns;
            the timeout is drawn from ``[election_tick, 2 * election_tick)``.
            Must exceed ``heartbeat_tick``.
        heartbeat_tick: Ticks between the leader's heartbeats.
        applied: The last index applied before a restart.
        max_size_per_msg: The most bytes of entries in one append message.
        max_committed_size_per_ready: The most bytes of committed entries in
            one Ready (0: ``max_size_per_msg``).
        max_uncommitted_entries_size: The most bytes of uncommitted payload
            the leader accepts (0: unlimited).
        max_inflight_msgs: The most append messages in flight to one peer.
        max_inflight_bytes: The most bytes in flight to one peer (0: unlimited).
        check_quorum: Whether the leader steps down without a quorum's
            recent contact.
        pre_vote: Whether candidates run a pre-vote round first.
        read_only_option: How reads are served (``"Safe"`` or ``"LeaseBased"``).
        disable_proposal_forwarding: Whether followers drop proposals
            instead of forwarding them to the leader.
        disable_conf_change_validation: Whether the propose-time checks of
            configuration changes are skipped.
        step_down_on_removal: Whether a leader removed from the
            configuration steps down.
        promote_max_lag: How many entries behind the leader's last index a
            learner may be when promoted.
        max_learners: The most learners the configuration may hold.
        seed: The election-timeout RNG seed: 0 (the default) draws one from
            the OS each time a node is created, so restarts do not repeat
            their timeouts; any other value makes them reproducible.
        coalesce_appends: Whether the leader coalesces the appends of
            proposals made between two Readies into one message per peer.
        learner_first: Whether ``RawNode.add_member`` adds new members as
            learners (a member that never answers never changes the quorum).
        auto_promote: Whether the leader promotes a caught-up, active
            learner by itself (needs ``check_quorum``).
        promote_min_active_rounds: Consecutive check-quorum rounds a
            learner must have answered in before it is promoted (at least 1).
        standby_promotion: Whether the leader replaces a failed voter by a
            caught-up learner in one joint change (needs ``check_quorum``).
        standby_dead_rounds: Consecutive silent check-quorum rounds after
            which a voter counts as failed (at least 2).
        learner_forwards_proposals: Whether a learner forwards proposals to
            the leader or refuses them with ``ProposalDroppedError``.

    Raises:
        TypeError: An argument has the wrong type.
        ValueError: An integer is negative or too large.
    """

    def __new__(
        cls,
        id: int = ...,
        *,
        election_tick: int = ...,
        heartbeat_tick: int = ...,
        applied: int = ...,
        max_size_per_msg: int = ...,
        max_committed_size_per_ready: int = ...,
        max_uncommitted_entries_size: int = ...,
        max_inflight_msgs: int = ...,
        max_inflight_bytes: int = ...,
        check_quorum: bool = ...,
        pre_vote: bool = ...,
        read_only_option: Union[ReadOnlyOption, str] = ...,
        disable_proposal_forwarding: bool = ...,
        disable_conf_change_validation: bool = ...,
        step_down_on_removal: bool = ...,
        promote_max_lag: int = ...,
        max_learners: int = ...,
        seed: int = ...,
        coalesce_appends: bool = ...,
        learner_first: bool = ...,
        auto_promote: bool = ...,
        promote_min_active_rounds: int = ...,
        standby_promotion: bool = ...,
        standby_dead_rounds: int = ...,
        learner_forwards_proposals: bool = ...,
    ) -> Self: ...
    def validate(self) -> None:
        """Checks every field and combination.

        Raises:
            ConfigError: A field or combination is invalid (the message
                names the field). ``ConfigError`` is also a ``ValueError``.
        """
    id: int
    election_tick: int
    heartbeat_tick: int
    applied: int
    max_size_per_msg: int
    max_committed_size_per_ready: int
    max_uncommitted_entries_size: int
    max_inflight_msgs: int
    max_inflight_bytes: int
    check_quorum: bool
    pre_vote: bool
    @property
    def read_only_option(self) -> ReadOnlyOption:
        """How reads are served (``ReadOnlyOption.SAFE`` or ``LEASE_BASED``)."""
    @read_only_option.setter
    def read_only_option(self, value: Union[ReadOnlyOption, str]) -> None: ...
    disable_proposal_forwarding: bool
    disable_conf_change_validation: bool
    step_down_on_removal: bool
    promote_max_lag: int
    max_learners: int
    seed: int
    coalesce_appends: bool
    learner_first: bool
    auto_promote: bool
    promote_min_active_rounds: int
    standby_promotion: bool
    standby_dead_rounds: int
    learner_forwards_proposals: bool
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class MemoryStorage:
    """An in-memory log, snapshot and hard state (etcd ``MemoryStorage``).

    The host writes to it after handling each ``Ready``; the ``RawNode``
    built on it reads from the same storage (it holds another handle on
    it, not a copy).

    Args:
        conf_state: The configuration a node started on this storage
            begins with: the initial members of a new cluster, or the
            current members (with itself as a learner) for a node that
            joins. Without it the node starts with an empty configuration
            (for ``RawNode.bootstrap`` or a snapshot).

    Raises:
        ConfChangeRefusedError: ``conf_state`` is not a configuration a node
            can start from (see ``set_conf_state``).
    """

    def __new__(cls, conf_state: "ConfState | None" = None) -> Self: ...
    def append(self, entries: Iterable[Entry]) -> None:
        """Appends consecutive entries (from ``Ready.entries``).

        Entries already compacted are skipped; existing entries from the
        index of the first new one on are replaced.

        Args:
            entries: The entries, in index order.

        Raises:
            UnavailableError: The entries would leave a gap after the last
                one, or are not consecutive (nothing is changed then).
            TypeError: An item is not an ``Entry``.
        """
    def set_hard_state(self, hard_state: HardState) -> None:
        """Saves the hard state (from ``Ready.hard_state``).

        Args:
            hard_state: The term, vote and commit index to save.
        """
    def hard_state(self) -> HardState:
        """Returns the saved hard state."""
    def commit_to(self, index: int) -> None:
        """Sets the commit index of the saved hard state.

        Args:
            index: The new commit index.

        Raises:
            UnavailableError: ``index`` is past the last entry.
        """
    def conf_state(self) -> ConfState:
        """Returns the configuration a node restarting from this storage begins with."""
    def set_conf_state(self, conf_state: ConfState) -> None:
        """Sets the configuration a node started on this storage begins with.

        Args:
            conf_state: The configuration.

        Raises:
            ConfChangeRefusedError: It names 0, 2**64 - 1 or 2**64 - 2,
                names an id twice, has a voter that is also a learner, or is
                otherwise not a configuration membership changes can
                produce; the configuration held is kept.
        """
    def apply_snapshot(self, snapshot: Snapshot) -> None:
        """Replaces the whole contents with a snapshot (from ``Ready.snapshot``).

        The log becomes empty and starts right after the snapshot; the hard
        state is left alone.

        Args:
            snapshot: The snapshot.

        Raises:
            SnapshotOutOfDateError: It is not newer than the snapshot held.
            ConfChangeRefusedError: Its configuration is invalid (as for
                ``set_conf_state``).
        """
    def create_snapshot(
        self, index: int, conf_state: "ConfState | None" = None, data: "_BytesLike | None" = None
    ) -> Snapshot:
        """Records a snapshot of the state machine at ``index`` and returns it.

        The log is not compacted: call ``compact`` for that. ``index`` must
        be applied and covered by the commit index the storage holds
        (``UnavailableError`` otherwise): a host that applies entries
        before their ``Ready`` is persisted snapshots them once it is (the
        storage may still hold an older entry there, whose term the
        snapshot would record).

        Args:
            index: The last applied index the snapshot covers.
            conf_state: The configuration at ``index``; ``None`` keeps the
                one held.
            data: The serialized state machine.

        Raises:
            SnapshotOutOfDateError: ``index`` is not past the current snapshot.
            UnavailableError: ``index`` is past the last entry.
            CompactedError: The entry at ``index`` was compacted away.
            ConfChangeRefusedError: ``conf_state`` is invalid (as for
                ``set_conf_state``).
        """
    def compact(self, compact_index: int) -> None:
        """Discards the entries before ``compact_index``.

        Do not compact past what the state machine applied.

        Args:
            compact_index: The index that becomes the first one kept (as the
                placeholder that remembers its term).

        Raises:
            CompactedError: ``compact_index`` is not past the last compacted index.
            UnavailableError: ``compact_index`` is past the last entry.
        """
    def snapshot(self) -> Snapshot:
        """Returns the most recent snapshot.

        Raises:
            SnapshotTemporarilyUnavailableError: Once after
                ``trigger_snap_unavailable()``.
        """
    def entries(self, low: int, high: int, max_size: "int | None" = None) -> list[Entry]:
        """Returns the entries with indexes in ``[low, high)``.

        Args:
            low: The first index.
            high: One past the last index.
            max_size: The most bytes of entries to return (``None``: no
                limit); at least one entry is returned.

        Raises:
            CompactedError: ``low`` was compacted away.
            UnavailableError: Part of the range is not in the log.
        """
    def term(self, index: int) -> int:
        """Returns the term of the entry at ``index``.

        Args:
            index: An index in ``[first_index() - 1, last_index()]``.

        Raises:
            CompactedError: ``index`` is below that range.
            UnavailableError: ``index`` is above it.
        """
    def first_index(self) -> int:
        """Returns the index of the first readable entry (``last_index() + 1`` when the log is empty)."""
    def last_index(self) -> int:
        """Returns the index of the last entry (the snapshot's when the log is empty)."""
    def trigger_snap_unavailable(self) -> None:
        """Makes the next ``snapshot()`` call, and only that one, raise
        ``SnapshotTemporarilyUnavailableError`` (for tests)."""

@final
class DiskStorage:
    """A durable log, snapshot and hard state on disk.

    One group of a crash-safe store in a directory (created if needed),
    used like a ``MemoryStorage`` (pass it to ``RawNode``, then
    ``persist_ready`` after each ``Ready``), except that every write is
    durable when the call returns (but ``compact``: a compaction lost in a
    crash only keeps entries the snapshot covers) and a node created over
    it after a restart gets its log back. The stored commit index never
    goes back: a hard state whose commit is below the stored one keeps the
    stored commit. A context manager: ``with
    DiskStorage(path) as storage:`` closes it at the end. The directory is
    locked while the store is open (by this object, by ``open_group``
    ones, or by a node over one of them).

    Args:
        path: The store's directory.
        group: The group's id in the store.
        segment_size: The size a log segment is preallocated to (``None``:
            64 MiB); the log moves to a new segment when a record would not
            fit. Must not be 0.
        rewrite_max_bytes: At each segment switch, live entries that keep
            the oldest segment alive are rewritten while they total at most
            this many bytes (``None``: 16 MiB).
        direct_min_bytes: Records of at least this many bytes are written
            past the page cache (``O_DIRECT``) where the filesystem takes
            it (``None``: 1 MiB; ``2**64 - 1``: never).
        read_cache_bytes: The bytes of the newest records kept in memory, so
            that reading their entries back reads no file (``None``:
            64 MiB; 0: none).

    Raises:
        StorageError: The directory is locked by another open store, a
            record in the middle of the log is corrupt (the message names
            the file and offset), a snapshot file is missing or damaged, or
            the filesystem failed.
        ValueError: ``segment_size`` is 0.
    """

    def __new__(
        cls,
        path: "str | os.PathLike[str]",
        group: int = 1,
        *,
        segment_size: Optional[int] = None,
        rewrite_max_bytes: Optional[int] = None,
        direct_min_bytes: Optional[int] = None,
        read_cache_bytes: Optional[int] = None,
    ) -> Self: ...
    def open_group(self, group: int) -> DiskStorage:
        """Returns another group of the same store (one log, one lock).

        Args:
            group: The group's id.
        """
    def persist_ready(self, ready: Ready) -> None:
        """Persists a Ready's snapshot, entries and hard state, as one record.

        Synced if ``ready.must_sync``. Then send ``ready.persisted_messages``
        and call ``advance``.

        Args:
            ready: The Ready of the node over this storage.

        Raises:
            UnavailableError: Its entries would leave a gap.
            StorageError: The filesystem failed (after a failed sync the
                store takes no more writes: reopen it).
        """
    @staticmethod
    def persist_readies(pairs: Iterable[tuple[DiskStorage, Ready]]) -> None:
        """Persists the Readies of many groups of one store with ONE sync.

        Group commit: for each ``(storage, ready)`` pair, what
        ``storage.persist_ready(ready)`` would write, all in one record,
        synced once if any ready ``must_sync``. A host of many groups takes
        every node's Ready, persists them with one call, then sends and
        advances each. Nothing is written if any pair does not fit its
        group's log.

        Args:
            pairs: Each group's storage (groups of one store, from
                ``DiskStorage`` and ``open_group``) with its node's Ready.

        Raises:
            ValueError: The storages are groups of different stores, or one
                is closed.
            UnavailableError: Entries would leave a gap in their group.
            StorageError: The filesystem failed (after a failed sync the
                store takes no more writes: reopen it).
        """
    def append(self, entries: Iterable[Entry]) -> None:
        """Appends consecutive entries, durably.

        Args:
            entries: The entries, in index order.

        Raises:
            UnavailableError: The entries would leave a gap after the last one.
        """
    def set_hard_state(self, hard_state: HardState) -> None:
        """Saves the hard state, durably. The stored commit index never goes
        back: a lower commit keeps the stored one.

        Args:
            hard_state: The term, vote and commit index to save.
        """
    def hard_state(self) -> HardState:
        """Returns the saved hard state."""
    def conf_state(self) -> ConfState:
        """Returns the configuration a node restarting from this storage begins with."""
    def set_conf_state(self, conf_state: ConfState) -> None:
        """Sets the configuration a node started on this storage begins with, durably.

        Args:
            conf_state: The configuration.

        Raises:
            ConfChangeRefusedError: One ``MemoryStorage.set_conf_state``
                refuses; the configuration held is kept.
        """
    def apply_snapshot(self, snapshot: Snapshot) -> None:
        """Replaces the log with a snapshot (from ``Ready.snapshot``), durably.

        Args:
            snapshot: The snapshot.

        Raises:
            SnapshotOutOfDateError: It is not newer than the snapshot held.
            ConfChangeRefusedError: Its configuration is invalid (as for
                ``set_conf_state``).
        """
    def create_snapshot(
        self, index: int, conf_state: "ConfState | None" = None, data: "_BytesLike | None" = None
    ) -> Snapshot:
        """Records a snapshot of the state machine at ``index`` and returns it, durably.

        ``index`` must be applied and covered by the commit index the
        storage holds (``UnavailableError`` otherwise; see
        ``MemoryStorage.create_snapshot``).

        Args:
            index: The applied index the snapshot covers.
            conf_state: The configuration at ``index`` (``None`` keeps the one held).
            data: The serialized state machine.

        Raises:
            SnapshotOutOfDateError: ``index`` is not past the current snapshot.
            UnavailableError: ``index`` is past the last entry.
            CompactedError: The entry at ``index`` was compacted away.
            ConfChangeRefusedError: ``conf_state`` is invalid (as for
                ``set_conf_state``).
        """
    def compact(self, compact_index: int) -> None:
        """Discards the entries before ``compact_index``.

        Args:
            compact_index: The new compaction point.

        Raises:
            CompactedError: It is not past the last compacted index.
            UnavailableError: It is past the last entry.
        """
    def snapshot(self) -> Snapshot:
        """Returns the most recent snapshot (read from its file)."""
    def entries(self, low: int, high: int, max_size: "int | None" = None) -> list[Entry]:
        """Returns the entries in ``[low, high)``, at most ``max_size`` bytes but at least one.

        Args:
            low: The first index.
            high: One past the last index.
            max_size: The byte limit (``None``: no limit).

        Raises:
            CompactedError: ``low`` was compacted away.
            UnavailableError: Part of the range is not in the log.
        """
    def term(self, index: int) -> int:
        """Returns the term of the entry at ``index``.

        Args:
            index: The entry's index.
        """
    def first_index(self) -> int:
        """Returns the index of the first entry that can be read."""
    def last_index(self) -> int:
        """Returns the index of the last entry."""
    @property
    def path(self) -> str:
        """The store's directory."""
    @property
    def group(self) -> int:
        """The group's id in the store."""
    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
    def close(self) -> None:
        """Releases this handle; later calls raise ``ValueError``. Idempotent.

        The store and its directory lock go away with its last handle:
        close the nodes created over it too.
        """
    def __enter__(self) -> Self: ...
    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool: ...

@final
class RawNode:
    """A Raft node driven by its host (etcd ``RawNode``).

    The host calls ``tick()`` on a timer, feeds peer messages to
    ``step()``, proposes with ``propose()`` and, whenever ``has_ready()``
    is true, handles a ``Ready``: persist its snapshot, entries and hard
    state, send its messages (``persisted_messages`` only after the
    write), apply its committed entries, then ``advance(ready)``.

    A node may be shared between threads: calls are serialized by a lock,
    and ``step()`` and ``ready()`` release the GIL.

    A panic inside the core raises ``PanicError`` (a ``RaftError``); the
    node is unusable afterwards (``InvalidStateError``). Log records go to
    ``logging.getLogger("raftlet")``; the core builds only the records that
    logger keeps, reading its level when a node is created and at every
    ``campaign()``, ``tick()`` and ``ready()``.

    Args:
        config: The node's configuration.
        storage: The storage the node restarts from and reads its log from
            (a ``MemoryStorage`` or a ``DiskStorage``).

    Raises:
        ConfigError: The configuration is invalid.
    """

    def __new__(cls, config: Config, storage: "MemoryStorage | DiskStorage") -> Self: ...
    def bootstrap(self, voters: Iterable[int], learners: Iterable[int] = ()) -> None:
        """Initializes an empty node with its first configuration.

        One committed conf-change entry per voter and learner is appended;
        the next Ready hands them out to persist and apply. Everything is
        checked first: a refused bootstrap changes nothing, so a corrected
        call may follow.

        Args:
            voters: The initial voters.
            learners: The initial learners.

        Raises:
            InvalidStateError: There are no voters or the storage is not empty.
            ConfChangeRefusedError: An id is 0, 2**64 - 1 or 2**64 - 2,
                appears twice, or is both a voter and a learner.
        """
    def tick(self) -> None:
        """Advances the logical clock by one tick (and reads the level of
        ``logging.getLogger("raftlet")``)."""
    def campaign(self) -> None:
        """Makes this node campaign at once (pre-vote first when enabled).

        Raises:
            InvalidStateError: The node's term or last index is at the
                limit 2**63 - 1 (it can never campaign again).
        """
    def propose(self, data: _BytesLike) -> None:
        """Proposes that ``data`` be appended to the log.

        Args:
            data: The payload.

        Raises:
            ProposalDroppedError: No leader is known, forwarding is
                disabled, a leader transfer is under way or the uncommitted
                budget is exhausted.
            TypeError: ``data`` is not bytes-like.
        """
    def propose_batch(self, batch: Iterable[_BytesLike]) -> None:
        """Proposes several payloads in one message (one append on the leader).

        Args:
            batch: The payloads.

        Raises:
            ProposalDroppedError: As for ``propose``, and for an empty batch.
        """
    def propose_conf_change(self, cc: "ConfChange | ConfChangeV2") -> None:
        """Proposes a configuration change.

        Args:
            cc: The change.

        Raises:
            ProposalDroppedError: As for ``propose``.
            ConfChangeRefusedError: The leader refused the change, or (on
                every node) the change has an unknown type or transition or
                names node 0, 2**64 - 1 or 2**64 - 2.
            PromotionNotReadyError: The learner to promote lags.
            TooManyLearnersError: The change would exceed ``max_learners``.
            TypeError: ``cc`` is not a ``ConfChange`` or ``ConfChangeV2``.
        """
    def apply_conf_change(self, cc: "ConfChange | ConfChangeV2") -> ConfState:
        """Applies a committed configuration change.

        Call it for each conf-change entry in ``Ready.committed_entries``
        (see ``Entry.conf_change()``).

        Args:
            cc: The change.

        Returns:
            The new configuration, to save with the next snapshot.

        Raises:
            ConfChangeRefusedError: The change is not valid for the current
                configuration; it is left unchanged and the node keeps
                working. A raftlet leader never commits such a change, but
                an etcd leader may: log it and treat the entry as a no-op,
                as every raftlet node does.
        """
    def step(self, message: Message) -> None:
        """Processes a message received from a peer (the GIL is released).

        Args:
            message: The message.

        Raises:
            StepLocalMessageError: The message type is local-only.
            InvalidMessageError: The message type is unknown, a term or
                index in it is above 2**63 - 1, or it comes from an id that
                cannot be a member; nothing in the node changed.
            StepPeerNotFoundError: A response came from an unknown peer.
        """
    def read_index(self, ctx: _BytesLike) -> None:
        """Requests a linearizable read.

        The answer arrives as a ``ReadState`` carrying ``ctx`` in a later Ready.

        Args:
            ctx: A context that identifies the request.

        Raises:
            NoLeaderError: No leader is known.
        """
    def add_member(self, id: int, context: _BytesLike = b"") -> None:
        """Proposes adding member ``id``: as a learner when
        ``Config.learner_first`` is on (the default), as a voter otherwise.

        A learner added first never changes the quorum, so a member that
        never answers can be removed again without losing availability.

        Args:
            id: The new member.
            context: The host's context, for example the member's address.

        Raises:
            ConfChangeRefusedError: ``id`` is already a member or cannot be one.
            TooManyLearnersError: The configuration holds ``max_learners``.
            ProposalDroppedError: No leader to take the proposal.
        """
    def set_auto_promote(self, on: bool) -> None:
        """Turns automatic promotion on or off at run time.

        Raises:
            ConfigError: Turning it on without check-quorum.
        """
    def set_standby_promotion(self, on: bool) -> None:
        """Turns standby promotion on or off at run time.

        Raises:
            ConfigError: Turning it on without check-quorum.
        """
    def read_local(self) -> LocalRead:
        """A weak read: what this node may serve at once, and how stale.

        For a read that sees every write acknowledged before it began, use
        ``read_index`` (a learner forwards it) and serve it once applied up
        to the ``ReadState``'s index.
        """
    def transfer_leader(self, transferee: int) -> None:
        """Asks the leader to hand leadership to ``transferee``.

        Args:
            transferee: The voter to become leader.

        Raises:
            TransferRefusedError: The target is not a voter or no leader is known.
        """
    def forget_leader(self) -> None:
        """Makes a follower forget its leader (a no-op on the leader)."""
    def report_unreachable(self, id: int) -> None:
        """Tells the leader that the last message to ``id`` may not have arrived.

        Args:
            id: The peer.
        """
    def report_snapshot(self, id: int, ok: bool) -> None:
        """Tells the leader how sending a snapshot to ``id`` ended.

        Args:
            id: The peer.
            ok: True if the peer applied the snapshot, False if sending failed.
        """
    def has_ready(self) -> bool:
        """Returns whether a Ready with something in it is available."""
    def ready(self) -> Ready:
        """Takes the next batch of work (the GIL is released while it is built).

        Several Readies may be in flight, but they are advanced in the
        order they were taken, each once: advancing one covers the earlier
        ones, which can no longer be advanced. A host that runs the Ready
        loop from several threads must keep that order itself.

        Returns:
            The Ready; hand it back with ``advance`` once handled.
        """
    def advance(self, ready: Ready) -> None:
        """Reports that a Ready was fully handled (persisted and applied).

        Its committed entries and those of earlier Readies are reported
        applied, not those of later Readies already taken. Earlier Readies
        not advanced yet are covered by it. Nothing changes on an error.

        Args:
            ready: A Ready of this node.

        Raises:
            ReadyStaleError: The Ready, or a later one, was already advanced.
            ForeignReadyError: The Ready comes from another node (also a
                ValueError).
            ReadyNotPersistedError: The storage lacks the Ready's entries or
                snapshot (or those of an earlier Ready it would cover).
        """
    def advance_append(self, ready: Ready) -> None:
        """Reports that a Ready's writes are durable (asynchronous apply).

        Follow up with ``advance_apply_to`` as entries are applied.
        Earlier Readies are covered, as by ``advance``.

        Args:
            ready: A Ready of this node.

        Raises:
            ReadyStaleError: The Ready, or a later one, was already advanced.
            ForeignReadyError: The Ready comes from another node (also a
                ValueError).
            ReadyNotPersistedError: The storage lacks the Ready's entries or
                snapshot (or those of an earlier Ready it would cover).
        """
    def advance_apply_to(self, index: int) -> None:
        """Reports that committed entries up to ``index`` are applied.

        Args:
            index: The last applied index (capped at what was handed out).
        """
    def advance_apply(self) -> None:
        """Reports that every committed entry handed out so far is applied."""
    def status(self) -> Status:
        """Returns the node's full status (peers' progress only on the leader)."""
    def basic_status(self) -> BasicStatus:
        """Returns the cheap part of the status (etcd ``BasicStatus``).

        Id, hard and soft state, applied index and lead transferee, read in
        one call under the node's lock, without the configuration or the
        peers' progress.
        """
    def close(self) -> None:
        """Drops the node now; later calls raise ``InvalidStateError``. Idempotent."""
    @property
    def storage(self) -> "MemoryStorage | DiskStorage":
        """The storage passed to the constructor."""
    @property
    def id(self) -> int:
        """This node's id."""
    @property
    def term(self) -> int:
        """The current term."""
    @property
    def vote(self) -> int:
        """Whom this node voted for in the current term (0 for nobody)."""
    @property
    def commit(self) -> int:
        """The commit index."""
    @property
    def applied(self) -> int:
        """The last index the host reported applied."""
    @property
    def leader_id(self) -> int:
        """The known leader (0 for none)."""
    @property
    def raft_state(self) -> StateRole:
        """This node's role."""
    @property
    def lead_transferee(self) -> int:
        """The target of a leader transfer under way (0 for none)."""

@final
class Ready:
    """A batch of work handed out by ``RawNode.ready()``.

    Handle it in order: persist ``snapshot``, ``entries`` and ``hard_state``
    (sync when ``must_sync``); send ``messages`` at any time and
    ``persisted_messages`` only after the write; apply
    ``committed_entries`` in order (a configuration change only once the
    write is durable: ``must_sync`` is set for a Ready that hands one out
    before a durable commit index covers it); then
    ``RawNode.advance(ready)``. A
    Ready can be advanced once; its contents stay readable afterwards.

    The contract: ``messages`` need nothing that is not yet durable (a
    leader's appends and heartbeats in a durable term, heartbeat responses,
    pre-vote requests, forwarded proposals and reads) and may leave before
    or while the Ready is written. ``persisted_messages`` (vote requests,
    vote and append responses, anything sent while the node's term or vote
    was not yet durable) may leave only once the writes of this Ready and of
    every earlier one are durable. Several Readies may be in flight if their
    writes become durable in order and each is advanced once durable, in
    order. A crash may tear a Ready's write (keep a prefix of snapshot,
    entries, hard state); the node restarts safely from it.
    """

    @property
    def number(self) -> int:
        """The sequence number of this Ready (1 for a node's first)."""
    @property
    def soft_state(self) -> "SoftState | None":
        """Leader and role, only when they changed since the last Ready."""
    @property
    def hard_state(self) -> "HardState | None":
        """Term, vote and commit to persist, only when they changed."""
    @property
    def read_states(self) -> list[ReadState]:
        """Answers to ``read_index`` requests."""
    @property
    def entries(self) -> list[Entry]:
        """Entries to append to stable storage."""
    @property
    def snapshot(self) -> "Snapshot | None":
        """A snapshot to apply to stable storage and the state machine."""
    @property
    def committed_entries(self) -> list[Entry]:
        """Entries to apply to the state machine, in order."""
    @property
    def messages(self) -> list[Message]:
        """Messages that may be sent at once, even before the write."""
    @property
    def persisted_messages(self) -> list[Message]:
        """Messages to send only once the writes of this Ready and of every
        earlier one are durable (vote requests, vote and append responses)."""
    @property
    def membership_events(self) -> list[MembershipEvent]:
        """Membership changes the leader proposed by itself since the
        previous Ready (automatic and standby promotions), for the host's log."""
    def all_messages(self) -> list[Message]:
        """Returns every message in one new list, ``messages`` first, then
        ``persisted_messages``: what a synchronous host sends once the write
        of this Ready is durable (etcd's ``Ready.Messages``)."""
    @property
    def must_sync(self) -> bool:
        """Whether the write of this Ready must be synced to disk."""
    @property
    def advanced(self) -> bool:
        """Whether this Ready was already advanced."""

@final
class Entry:
    """One log entry (raftpb ``Entry``).

    Args:
        term: The term in which the entry was proposed.
        index: The entry's position in the log.
        data: The payload; ``None`` (absent) is encoded differently from
            empty bytes.
        entry_type: What ``data`` holds.
    """

    def __new__(
        cls,
        *,
        term: int = ...,
        index: int = ...,
        data: "_BytesLike | None" = None,
        entry_type: "EntryType | int" = ...,
    ) -> Self: ...
    @property
    def entry_type(self) -> EntryType:
        """What ``data`` holds."""
    @entry_type.setter
    def entry_type(self, value: "EntryType | int") -> None: ...
    term: int
    index: int
    @property
    def data(self) -> bytes:
        """The payload (empty when absent)."""
    @data.setter
    def data(self, value: "_BytesLike | None") -> None: ...
    def conf_change(self) -> "ConfChange | ConfChangeV2":
        """Decodes the configuration change a conf-change entry carries.

        Returns:
            A ``ConfChange`` for ``EntryType.CONF_CHANGE``, a
            ``ConfChangeV2`` for ``EntryType.CONF_CHANGE_V2``.

        Raises:
            DecodeError: The entry is a normal one or its payload is malformed.
        """
    def encode(self) -> bytes:
        """Returns the raftpb encoding, as etcd v3.6 writes it."""
    @staticmethod
    def decode(data: _BytesLike) -> Entry:
        """Decodes raftpb bytes.

        Args:
            data: The encoding.

        Raises:
            DecodeError: The bytes are malformed.
        """
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class HardState:
    """The state a node persists before it sends messages (raftpb ``HardState``).

    Args:
        term: The current term.
        vote: Whom the node voted for in ``term`` (0 for nobody).
        commit: The highest index known to be committed.
    """

    def __new__(cls, *, term: int = ..., vote: int = ..., commit: int = ...) -> Self: ...
    term: int
    vote: int
    commit: int
    def is_empty(self) -> bool:
        """Returns whether every field is zero."""
    def encode(self) -> bytes:
        """Returns the raftpb encoding, as etcd v3.6 writes it."""
    @staticmethod
    def decode(data: _BytesLike) -> HardState:
        """Decodes raftpb bytes.

        Args:
            data: The encoding.

        Raises:
            DecodeError: The bytes are malformed.
        """
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class SoftState:
    """Who leads and this node's role; in a Ready only when it changed.

    Args:
        leader_id: The known leader (0 for none).
        raft_state: The node's role.
    """

    def __new__(cls, *, leader_id: int = ..., raft_state: "StateRole | str" = ...) -> Self: ...
    @property
    def leader_id(self) -> int:
        """The known leader (0 for none)."""
    @property
    def raft_state(self) -> StateRole:
        """This node's role."""
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class ConfState:
    """A cluster configuration (raftpb ``ConfState``).

    Args:
        voters: The voters of the incoming configuration.
        learners: The learners.
        voters_outgoing: The voters of the outgoing configuration (only
            during a joint change).
        learners_next: Outgoing voters that become learners when the joint
            configuration is left.
        auto_leave: Whether the joint configuration is left automatically.
    """

    def __new__(
        cls,
        *,
        voters: Iterable[int] = ...,
        learners: Iterable[int] = ...,
        voters_outgoing: Iterable[int] = ...,
        learners_next: Iterable[int] = ...,
        auto_leave: bool = ...,
    ) -> Self: ...
    @property
    def voters(self) -> list[int]:
        """The voters of the incoming configuration."""
    @voters.setter
    def voters(self, value: Iterable[int]) -> None: ...
    @property
    def learners(self) -> list[int]:
        """The learners."""
    @learners.setter
    def learners(self, value: Iterable[int]) -> None: ...
    @property
    def voters_outgoing(self) -> list[int]:
        """The voters of the outgoing configuration."""
    @voters_outgoing.setter
    def voters_outgoing(self, value: Iterable[int]) -> None: ...
    @property
    def learners_next(self) -> list[int]:
        """Outgoing voters that become learners when the joint configuration is left."""
    @learners_next.setter
    def learners_next(self, value: Iterable[int]) -> None: ...
    auto_leave: bool
    def equivalent(self, other: ConfState) -> bool:
        """Returns whether ``other`` is the same configuration up to the order of the ids.

        Args:
            other: The configuration to compare with.
        """
    def encode(self) -> bytes:
        """Returns the raftpb encoding, as etcd v3.6 writes it."""
    @staticmethod
    def decode(data: _BytesLike) -> ConfState:
        """Decodes raftpb bytes.

        Args:
            data: The encoding.

        Raises:
            DecodeError: The bytes are malformed.
        """
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class Snapshot:
    """A state-machine snapshot (raftpb ``Snapshot``, metadata flattened).

    Args:
        data: The serialized state machine.
        index: The last log index the snapshot covers.
        term: The term of the entry at ``index``.
        conf_state: The configuration at ``index``.
    """

    def __new__(
        cls,
        *,
        data: "_BytesLike | None" = None,
        index: int = ...,
        term: int = ...,
        conf_state: "ConfState | None" = None,
    ) -> Self: ...
    @property
    def data(self) -> bytes:
        """The serialized state machine (empty when absent)."""
    @data.setter
    def data(self, value: "_BytesLike | None") -> None: ...
    index: int
    term: int
    @property
    def conf_state(self) -> ConfState:
        """The configuration at ``index`` (a copy: assign to change it)."""
    @conf_state.setter
    def conf_state(self, value: ConfState) -> None: ...
    def is_empty(self) -> bool:
        """Returns whether this is the empty snapshot (index 0)."""
    def encode(self) -> bytes:
        """Returns the raftpb encoding, as etcd v3.6 writes it."""
    @staticmethod
    def decode(data: _BytesLike) -> Snapshot:
        """Decodes raftpb bytes.

        Args:
            data: The encoding.

        Raises:
            DecodeError: The bytes are malformed.
        """
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class Message:
    """A Raft message (raftpb ``Message``).

    The sender is ``from_`` (``from`` is a Python keyword). Reading
    ``entries`` or ``responses`` gives a new list of copies: assign the
    attribute to change it.

    Args:
        msg_type: What kind of message this is.
        to: The recipient.
        from_: The sender.
        term: The sender's term (0 for local messages).
        log_term: The term of the entry at ``index``, or a hint.
        index: An index whose meaning depends on the type.
        entries: The entries carried.
        commit: The sender's commit index.
        snapshot: The snapshot of a ``MSG_SNAP``.
        reject: Whether a response rejects the request.
        reject_hint: The rejecting follower's hint.
        context: Opaque context.
        vote: Carried for etcd interop.
        responses: Carried for etcd interop.
    """

    def __new__(
        cls,
        *,
        msg_type: "MessageType | int" = ...,
        to: int = ...,
        from_: int = ...,
        term: int = ...,
        log_term: int = ...,
        index: int = ...,
        entries: Iterable[Entry] = ...,
        commit: int = ...,
        snapshot: "Snapshot | None" = None,
        reject: bool = ...,
        reject_hint: int = ...,
        context: "_BytesLike | None" = None,
        vote: int = ...,
        responses: Iterable[Message] = ...,
    ) -> Self: ...
    @property
    def msg_type(self) -> MessageType:
        """What kind of message this is."""
    @msg_type.setter
    def msg_type(self, value: "MessageType | int") -> None: ...
    to: int
    from_: int
    term: int
    log_term: int
    index: int
    @property
    def entries(self) -> list[Entry]:
        """The entries carried (a new list of copies)."""
    @entries.setter
    def entries(self, value: Iterable[Entry]) -> None: ...
    commit: int
    @property
    def snapshot(self) -> "Snapshot | None":
        """The snapshot of a ``MSG_SNAP`` (a copy), or ``None``."""
    @snapshot.setter
    def snapshot(self, value: "Snapshot | None") -> None: ...
    reject: bool
    reject_hint: int
    @property
    def context(self) -> bytes:
        """Opaque context (empty when absent)."""
    @context.setter
    def context(self, value: "_BytesLike | None") -> None: ...
    vote: int
    @property
    def responses(self) -> list[Message]:
        """Carried for etcd interop (a new list of copies)."""
    @responses.setter
    def responses(self, value: Iterable[Message]) -> None: ...
    def encode(self) -> bytes:
        """Returns the raftpb encoding, as etcd v3.6 writes it: what a transport sends."""
    @staticmethod
    def decode(data: _BytesLike) -> Message:
        """Decodes raftpb bytes.

        Args:
            data: The encoding.

        Raises:
            DecodeError: The bytes are malformed.
        """
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class ConfChange:
    """A single-member configuration change (raftpb ``ConfChange``).

    Args:
        change_type: What to do with ``node_id``.
        node_id: The member concerned.
        context: Opaque host data (for example the new member's address).
        id: Unused by raft; carried for compatibility.
    """

    def __new__(
        cls,
        *,
        change_type: "ConfChangeType | int" = ...,
        node_id: int = ...,
        context: "_BytesLike | None" = None,
        id: int = ...,
    ) -> Self: ...
    @property
    def change_type(self) -> ConfChangeType:
        """What to do with ``node_id``."""
    @change_type.setter
    def change_type(self, value: "ConfChangeType | int") -> None: ...
    node_id: int
    @property
    def context(self) -> bytes:
        """Opaque host data (empty when absent)."""
    @context.setter
    def context(self, value: "_BytesLike | None") -> None: ...
    id: int
    def as_v2(self) -> ConfChangeV2:
        """Returns this change as a ``ConfChangeV2``."""
    def encode(self) -> bytes:
        """Returns the raftpb encoding, as etcd v3.6 writes it."""
    @staticmethod
    def decode(data: _BytesLike) -> ConfChange:
        """Decodes raftpb bytes.

        Args:
            data: The encoding.

        Raises:
            DecodeError: The bytes are malformed.
        """
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class ConfChangeSingle:
    """One change within a ``ConfChangeV2`` (raftpb ``ConfChangeSingle``).

    Args:
        change_type: What to do with ``node_id``.
        node_id: The member concerned.
    """

    def __new__(cls, *, change_type: "ConfChangeType | int" = ..., node_id: int = ...) -> Self: ...
    @property
    def change_type(self) -> ConfChangeType:
        """What to do with ``node_id``."""
    @change_type.setter
    def change_type(self, value: "ConfChangeType | int") -> None: ...
    node_id: int
    def encode(self) -> bytes:
        """Returns the raftpb encoding, as etcd v3.6 writes it."""
    @staticmethod
    def decode(data: _BytesLike) -> ConfChangeSingle:
        """Decodes raftpb bytes.

        Args:
            data: The encoding.

        Raises:
            DecodeError: The bytes are malformed.
        """
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class ConfChangeV2:
    """A change of several members at once, possibly through joint consensus.

    raftpb ``ConfChangeV2``; an empty one leaves a joint configuration.

    Args:
        changes: The changes, applied in order.
        transition: How joint consensus is used.
        context: Opaque host data.
    """

    def __new__(
        cls,
        *,
        changes: Iterable[ConfChangeSingle] = ...,
        transition: "ConfChangeTransition | int" = ...,
        context: "_BytesLike | None" = None,
    ) -> Self: ...
    @property
    def transition(self) -> ConfChangeTransition:
        """How joint consensus is used."""
    @transition.setter
    def transition(self, value: "ConfChangeTransition | int") -> None: ...
    @property
    def changes(self) -> list[ConfChangeSingle]:
        """The changes (a new list of copies)."""
    @changes.setter
    def changes(self, value: Iterable[ConfChangeSingle]) -> None: ...
    @property
    def context(self) -> bytes:
        """Opaque host data (empty when absent)."""
    @context.setter
    def context(self, value: "_BytesLike | None") -> None: ...
    def enter_joint(self) -> tuple[bool, bool]:
        """Returns ``(auto_leave, uses_joint)``.

        ``uses_joint`` tells whether the change goes through a joint
        configuration and ``auto_leave`` whether that is left automatically.
        """
    def leave_joint(self) -> bool:
        """Returns whether this is the empty change that leaves a joint configuration."""
    def encode(self) -> bytes:
        """Returns the raftpb encoding, as etcd v3.6 writes it."""
    @staticmethod
    def decode(data: _BytesLike) -> ConfChangeV2:
        """Decodes raftpb bytes.

        Args:
            data: The encoding.

        Raises:
            DecodeError: The bytes are malformed.
        """
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class ReadState:
    """The answer to a ``read_index`` request.

    Once the host has applied up to ``index``, a read carrying
    ``request_ctx`` is linearizable.

    Args:
        index: The commit index when the read was confirmed.
        request_ctx: The context passed to ``read_index``.
    """

    def __new__(cls, *, index: int = ..., request_ctx: "_BytesLike | None" = ...) -> Self: ...
    @property
    def index(self) -> int:
        """The commit index when the read was confirmed."""
    @property
    def request_ctx(self) -> bytes:
        """The context passed to ``read_index``."""
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class Progress:
    """The leader's view of one peer's log (etcd ``tracker.Progress``)."""

    @property
    def matched(self) -> int:
        """The highest index known to match the leader's log."""
    @property
    def next(self) -> int:
        """The index of the next entry to send."""
    @property
    def state(self) -> str:
        """``"StateProbe"``, ``"StateReplicate"`` or ``"StateSnapshot"``."""
    @property
    def pending_snapshot(self) -> int:
        """In ``StateSnapshot``, the index of the snapshot being sent (else 0)."""
    @property
    def recent_active(self) -> bool:
        """Whether the leader heard from the peer recently."""
    @property
    def msg_app_flow_paused(self) -> bool:
        """Whether appends to the peer are throttled."""
    @property
    def is_learner(self) -> bool:
        """Whether the peer is a learner."""
    @property
    def sent_commit(self) -> int:
        """The highest commit index sent to the peer."""
    @property
    def inflight(self) -> int:
        """The number of append messages in flight to the peer."""

@final
class BasicStatus:
    """The cheap part of a node's state, taken by ``RawNode.basic_status()``
    (etcd ``BasicStatus``)."""

    @property
    def id(self) -> int:
        """The node's id."""
    @property
    def term(self) -> int:
        """The current term."""
    @property
    def vote(self) -> int:
        """Whom the node voted for in this term (0 for nobody)."""
    @property
    def commit(self) -> int:
        """The commit index."""
    @property
    def leader_id(self) -> int:
        """The known leader (0 for none)."""
    @property
    def raft_state(self) -> StateRole:
        """The node's role (a ``str``: ``raft_state == "Leader"``)."""
    @property
    def applied(self) -> int:
        """The last index the host reported applied."""
    @property
    def lead_transferee(self) -> int:
        """The target of a leader transfer under way (0 for none)."""
    @property
    def hard_state(self) -> HardState:
        """Term, vote and commit."""
    @property
    def soft_state(self) -> SoftState:
        """Leader and role."""
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class Status:
    """A snapshot of a node's state, taken by ``RawNode.status()``."""

    @property
    def id(self) -> int:
        """The node's id."""
    @property
    def term(self) -> int:
        """The current term."""
    @property
    def vote(self) -> int:
        """Whom the node voted for in this term (0 for nobody)."""
    @property
    def commit(self) -> int:
        """The commit index."""
    @property
    def leader_id(self) -> int:
        """The known leader (0 for none)."""
    @property
    def raft_state(self) -> StateRole:
        """The node's role (a ``str``: ``status.raft_state == "Leader"``)."""
    @property
    def applied(self) -> int:
        """The last index the host reported applied."""
    @property
    def lead_transferee(self) -> int:
        """The target of a leader transfer under way (0 for none)."""
    @property
    def hard_state(self) -> HardState:
        """Term, vote and commit."""
    @property
    def soft_state(self) -> SoftState:
        """Leader and role."""
    @property
    def voters(self) -> list[int]:
        """The voters (of the incoming configuration), sorted."""
    @property
    def voters_outgoing(self) -> list[int]:
        """The voters of the outgoing configuration (only during a joint change)."""
    @property
    def learners(self) -> list[int]:
        """The learners, sorted."""
    @property
    def learners_next(self) -> list[int]:
        """Voters that become learners when the joint configuration is left."""
    @property
    def auto_leave(self) -> bool:
        """Whether the joint configuration is left automatically."""
    @property
    def conf_state(self) -> ConfState:
        """The configuration as a ``ConfState``."""
    @property
    def progress(self) -> dict[int, Progress]:
        """Every peer's progress by id; empty unless this node leads."""
    @property
    def learner_status(self) -> list[LearnerStatus]:
        """Every learner as the leader sees it, by id; empty unless this node leads."""
    def to_json(self) -> str:
        """Returns the status as JSON in the shape of etcd's ``Status.MarshalJSON``."""

@final
class MembershipEvent:
    """A membership change the leader proposed by itself, for the host's log."""

    @property
    def kind(self) -> str:
        """``"PromotionProposed"`` or ``"StandbySwapProposed"``."""
    @property
    def id(self) -> int:
        """The learner being promoted (the same as ``promoted``)."""
    @property
    def promoted(self) -> int:
        """The learner becoming a voter."""
    @property
    def demoted(self) -> int:
        """The voter becoming a learner (0 for a plain promotion)."""
    @property
    def index(self) -> int:
        """The index of the conf-change entry the leader appended."""
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class NotPromotable:
    """Why a learner cannot be promoted now."""

    @property
    def reason(self) -> str:
        """``"Lagging"``, ``"InSnapshot"``, ``"NotActiveLongEnough"``,
        ``"ConfChangePending"`` or ``"TransferInProgress"``."""
    @property
    def lag(self) -> Optional[int]:
        """For ``"Lagging"``: entries behind the leader's last index."""
    @property
    def max_lag(self) -> Optional[int]:
        """For ``"Lagging"``: the threshold ``promote_max_lag``."""
    @property
    def active_rounds(self) -> Optional[int]:
        """For ``"NotActiveLongEnough"``: consecutive rounds it answered in."""
    @property
    def needed(self) -> Optional[int]:
        """For ``"NotActiveLongEnough"``: the rounds required."""
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class LearnerStatus:
    """A learner as the leader sees it (``Status.learner_status``)."""

    @property
    def id(self) -> int:
        """The learner's id."""
    @property
    def lag(self) -> int:
        """Entries behind the leader's last index."""
    @property
    def recent_active(self) -> bool:
        """Whether it answered in the current check-quorum round."""
    @property
    def active_rounds(self) -> int:
        """Consecutive check-quorum rounds it answered in."""
    @property
    def state(self) -> str:
        """``"StateProbe"``, ``"StateReplicate"`` or ``"StateSnapshot"``."""
    @property
    def not_promotable(self) -> Optional[NotPromotable]:
        """``None`` when it could be promoted now, else why not."""
    @property
    def promotable(self) -> bool:
        """Whether it could be promoted now."""

@final
class LocalRead:
    """The answer to ``RawNode.read_local()``."""

    @property
    def applied(self) -> int:
        """The applied index: the state a weak read sees."""
    @property
    def commit(self) -> int:
        """The highest index this node knows committed."""
    @property
    def leader(self) -> int:
        """The leader this node knows (0 for none)."""
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]
