"""MemoryStorage: every method and the storage errors it raises."""

from __future__ import annotations

import pytest

from raftlet import (
    CompactedError,
    ConfState,
    Entry,
    HardState,
    MemoryStorage,
    RaftError,
    Snapshot,
    SnapshotOutOfDateError,
    SnapshotTemporarilyUnavailableError,
    StorageError,
    UnavailableError,
)


def entries(first: int, terms: list[int]) -> list[Entry]:
    return [Entry(term=t, index=first + i, data=b"e%d" % (first + i)) for i, t in enumerate(terms)]


def storage_with(first: int, terms: list[int]) -> MemoryStorage:
    s = MemoryStorage(ConfState(voters=[1, 2, 3]))
    s.append(entries(first, terms))
    return s


def test_empty_storage() -> None:
    s = MemoryStorage()
    assert (s.first_index(), s.last_index()) == (1, 0)
    assert s.hard_state() == HardState()
    assert s.conf_state() == ConfState()
    assert s.snapshot().is_empty()
    assert s.term(0) == 0
    assert repr(s) == "MemoryStorage(first_index=1, last_index=0, term=0, commit=0, snapshot_index=0)"


def test_conf_state_setter() -> None:
    s = MemoryStorage(ConfState(voters=[1]))
    assert s.conf_state() == ConfState(voters=[1])
    s.set_conf_state(ConfState(voters=[1, 2], learners=[3]))
    assert s.conf_state().learners == [3]


def test_append_entries_term() -> None:
    s = storage_with(1, [1, 1, 2])
    assert (s.first_index(), s.last_index()) == (1, 3)
    assert [e.index for e in s.entries(1, 4)] == [1, 2, 3]
    assert s.entries(2, 3)[0].data == b"e2"
    assert s.term(3) == 2
    # A size limit still returns at least one entry.
    assert len(s.entries(1, 4, max_size=0)) == 1
    # Appending from an existing index replaces the tail.
    s.append(entries(3, [3, 3]))
    assert [e.term for e in s.entries(1, 5)] == [1, 1, 3, 3]
    # Any iterable of entries works.
    s.append(iter(entries(5, [3])))
    assert s.last_index() == 5


def test_append_with_a_gap_raises_unavailable() -> None:
    s = storage_with(1, [1, 1])
    with pytest.raises(UnavailableError):
        s.append(entries(5, [1]))
    assert s.last_index() == 2


def test_append_wrong_types() -> None:
    s = MemoryStorage()
    with pytest.raises(TypeError, match="Entry objects, got bytes at position 0"):
        s.append([b"x"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="iterable of Entry"):
        s.append(Entry())  # type: ignore[arg-type]


def test_hard_state_and_commit_to() -> None:
    s = storage_with(1, [1, 1, 1])
    s.set_hard_state(HardState(term=1, vote=2, commit=1))
    s.commit_to(3)
    assert s.hard_state() == HardState(term=1, vote=2, commit=3)
    with pytest.raises(UnavailableError):
        s.commit_to(4)


def test_compact() -> None:
    s = storage_with(1, [1, 2, 3, 4])
    s.compact(3)
    assert (s.first_index(), s.last_index()) == (4, 4)
    # The term of the compacted-to entry is kept for log matching.
    assert s.term(3) == 3
    with pytest.raises(CompactedError):
        s.term(2)
    with pytest.raises(CompactedError):
        s.entries(3, 5)
    with pytest.raises(UnavailableError):
        s.term(5)
    # Compacting again at or below the compacted index, or past the end.
    with pytest.raises(CompactedError):
        s.compact(3)
    with pytest.raises(UnavailableError):
        s.compact(9)


def test_entries_errors() -> None:
    s = storage_with(1, [1, 1, 1])
    with pytest.raises(UnavailableError):
        s.entries(2, 9)
    # An inverted range is a storage error of no particular kind.
    with pytest.raises(StorageError) as info:
        s.entries(3, 2)
    assert type(info.value) is StorageError
    assert isinstance(info.value, RaftError)


def test_create_snapshot_and_apply_snapshot() -> None:
    s = storage_with(1, [1, 1, 2, 2])
    # Only what the storage holds committed: above that the entry stored
    # may be an older one that a Ready in flight replaces.
    s.set_hard_state(HardState(term=2, vote=1, commit=2))
    with pytest.raises(UnavailableError, match="commit index"):
        s.create_snapshot(3)
    assert s.snapshot().index == 0
    s.set_hard_state(HardState(term=2, vote=1, commit=4))
    snap = s.create_snapshot(3, ConfState(voters=[1, 2]), b"state@3")
    assert (snap.index, snap.term, snap.data) == (3, 2, b"state@3")
    assert snap.conf_state == ConfState(voters=[1, 2])
    assert s.snapshot() == snap
    # Creating does not compact.
    assert s.first_index() == 1
    with pytest.raises(SnapshotOutOfDateError):
        s.create_snapshot(2)
    with pytest.raises(UnavailableError):
        s.create_snapshot(9)
    # A fresh storage takes the snapshot whole.
    t = MemoryStorage()
    t.apply_snapshot(snap)
    assert (t.first_index(), t.last_index(), t.term(3)) == (4, 3, 2)
    assert t.conf_state() == ConfState(voters=[1, 2])
    with pytest.raises(SnapshotOutOfDateError):
        t.apply_snapshot(Snapshot(index=2, term=1))


def test_create_snapshot_of_a_compacted_entry() -> None:
    s = storage_with(1, [1, 1, 1, 1, 1])
    s.set_hard_state(HardState(term=1, vote=1, commit=5))
    s.create_snapshot(2)
    s.compact(4)
    with pytest.raises(CompactedError):
        s.create_snapshot(3)


def test_snapshot_temporarily_unavailable() -> None:
    s = storage_with(1, [1])
    s.trigger_snap_unavailable()
    with pytest.raises(SnapshotTemporarilyUnavailableError) as info:
        s.snapshot()
    assert isinstance(info.value, StorageError)
    assert "temporarily unavailable" in str(info.value)
    # Only once.
    s.snapshot()


def test_repr_counts() -> None:
    s = storage_with(1, [1, 1, 1])
    s.set_hard_state(HardState(term=1, commit=2))
    assert repr(s) == "MemoryStorage(first_index=1, last_index=3, term=1, commit=2, snapshot_index=0)"
