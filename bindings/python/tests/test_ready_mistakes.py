"""Host mistakes with Readies raise typed errors and move nothing.

Readies advanced twice, out of order, before they are persisted, or on
another node are refused; the node's term, vote, commit, log and
configuration stay as they were, and a correct Ready loop goes on.
"""

from __future__ import annotations

import threading

import pytest

from raftlet import (
    Config,
    ConfState,
    EntryType,
    ForeignReadyError,
    MemoryStorage,
    Message,
    MessageType,
    RaftError,
    RawNode,
    Ready,
    ReadyNotPersistedError,
    ReadyStaleError,
    Snapshot,
    StateRole,
)


def persist(storage: MemoryStorage, rd: Ready) -> None:
    if rd.snapshot is not None:
        storage.apply_snapshot(rd.snapshot)
    storage.append(rd.entries)
    if rd.hard_state is not None:
        storage.set_hard_state(rd.hard_state)


def drain(node: RawNode, storage: MemoryStorage) -> list[bytes]:
    applied = []
    while node.has_ready():
        rd = node.ready()
        persist(storage, rd)
        applied += [e.data for e in rd.committed_entries if e.entry_type == EntryType.NORMAL and e.data]
        node.advance(rd)
    return applied


def leader() -> tuple[RawNode, MemoryStorage]:
    storage = MemoryStorage(ConfState(voters=[1]))
    node = RawNode(Config(1), storage)
    node.campaign()
    drain(node, storage)
    assert node.raft_state == StateRole.LEADER
    return node, storage


def view(node: RawNode, storage: MemoryStorage) -> tuple[object, ...]:
    """What a refused call must not move."""
    st = node.status()
    cs = st.conf_state
    return (node.term, node.vote, node.commit, node.applied, node.raft_state,
            storage.first_index(), storage.last_index(), storage.hard_state().commit,
            sorted(cs.voters), sorted(cs.learners))


def still_works(node: RawNode, storage: MemoryStorage, data: bytes) -> None:
    term = node.term
    node.propose(data)
    assert drain(node, storage) == [data]
    assert node.term == term and node.raft_state == StateRole.LEADER and node.applied == node.commit


def test_advance_out_of_order_and_twice() -> None:
    node, storage = leader()
    node.propose(b"a")
    rd1 = node.ready()
    node.propose(b"b")
    rd2 = node.ready()
    assert len(rd1.entries) == len(rd2.entries) == 1
    assert not rd1.committed_entries and not rd2.committed_entries
    before = view(node, storage)

    # Neither is persisted yet: the node would read back missing entries.
    with pytest.raises(ReadyNotPersistedError, match="not in the storage"):
        node.advance(rd2)
    with pytest.raises(ReadyNotPersistedError):
        node.advance_append(rd1)
    assert view(node, storage) == before
    assert not rd1.advanced and not rd2.advanced

    persist(storage, rd1)
    persist(storage, rd2)
    node.advance_append(rd2)
    after = view(node, storage)
    assert node.commit == storage.last_index()
    # Ready 1 is covered by ready 2.
    with pytest.raises(ReadyStaleError, match="order"):
        node.advance(rd1)
    with pytest.raises(ReadyStaleError):
        node.advance_append(rd1)
    # Ready 2 twice.
    with pytest.raises(ReadyStaleError, match="already advanced"):
        node.advance(rd2)
    assert view(node, storage) == after
    assert [e.data for e in rd1.entries] == [b"a"]  # still readable
    assert drain(node, storage) == [b"a", b"b"]
    still_works(node, storage, b"after")


def test_ready_of_another_node() -> None:
    node, storage = leader()
    other, other_storage = leader()
    other.propose(b"x")
    rd = other.ready()
    before = view(node, storage)
    with pytest.raises(ForeignReadyError, match="another RawNode") as info:
        node.advance(rd)
    assert isinstance(info.value, ValueError) and isinstance(info.value, RaftError)
    with pytest.raises(ForeignReadyError):
        node.advance_append(rd)
    assert view(node, storage) == before and not rd.advanced
    persist(other_storage, rd)
    other.advance(rd)
    assert drain(other, other_storage) == [b"x"]
    still_works(node, storage, b"mine")
    still_works(other, other_storage, b"theirs")


def test_snapshot_advanced_before_it_is_persisted() -> None:
    storage = MemoryStorage(ConfState(voters=[1, 2]))
    node = RawNode(Config(1), storage)
    snap = Snapshot(index=10, term=2, data=b"s", conf_state=ConfState(voters=[1, 2]))
    node.step(Message(msg_type=MessageType.MSG_SNAP, to=1, from_=2, term=2, snapshot=snap))
    rd = node.ready()
    assert rd.snapshot is not None and rd.snapshot.index == 10
    before = view(node, storage)
    with pytest.raises(ReadyNotPersistedError, match="snapshot"):
        node.advance(rd)
    assert view(node, storage) == before
    persist(storage, rd)
    node.advance(rd)
    assert (node.term, node.commit, node.leader_id) == (2, 10, 2)
    node.step(Message(msg_type=MessageType.MSG_HEARTBEAT, to=1, from_=2, term=2, commit=10))
    rd = node.ready()
    assert [(m.msg_type, m.to) for m in rd.messages] == [(MessageType.MSG_HEARTBEAT_RESP, 2)]
    persist(storage, rd)
    node.advance(rd)


def test_two_threads_advancing_one_ready() -> None:
    node, storage = leader()
    for i in range(100):
        node.propose(b"r%d" % i)
        rd = node.ready()
        persist(storage, rd)
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def advance() -> None:
            barrier.wait()
            try:
                node.advance(rd)
                outcomes.append("ok")
            except ReadyStaleError:
                outcomes.append("stale")

        threads = [threading.Thread(target=advance) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["ok", "stale"]
    drain(node, storage)
    assert node.commit == node.applied == storage.last_index()
    still_works(node, storage, b"end")
