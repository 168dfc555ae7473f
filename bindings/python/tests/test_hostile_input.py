"""Hostile input through the Python binding: typed errors, nothing moved.

Peer messages with terms or indexes past 2**63 - 1, unknown message types,
senders that cannot be members, conf changes of unknown types or reserved
ids, and configurations no node can start from are refused with
``InvalidMessageError`` or ``ConfChangeRefusedError``; the node's term,
log and configuration stay as they were and it keeps working.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from raftlet import (
    Config,
    ConfChange,
    ConfChangeRefusedError,
    ConfChangeSingle,
    ConfChangeType,
    ConfChangeV2,
    ConfState,
    Entry,
    EntryType,
    InvalidMessageError,
    MemoryStorage,
    Message,
    MessageType,
    RawNode,
    Snapshot,
    StateRole,
)

MAX_BOUND = 2**63 - 1
RESERVED = (0, 2**64 - 1, 2**64 - 2)
PEER_TYPES = (
    MessageType.MSG_APP, MessageType.MSG_APP_RESP, MessageType.MSG_VOTE, MessageType.MSG_VOTE_RESP,
    MessageType.MSG_SNAP, MessageType.MSG_HEARTBEAT, MessageType.MSG_HEARTBEAT_RESP,
    MessageType.MSG_TIMEOUT_NOW, MessageType.MSG_READ_INDEX_RESP, MessageType.MSG_PRE_VOTE,
    MessageType.MSG_PRE_VOTE_RESP,
)


def drain(node: RawNode, storage: MemoryStorage) -> list[bytes]:
    applied = []
    while node.has_ready():
        rd = node.ready()
        if rd.snapshot is not None:
            storage.apply_snapshot(rd.snapshot)
        storage.append(rd.entries)
        if rd.hard_state is not None:
            storage.set_hard_state(rd.hard_state)
        applied += [e.data for e in rd.committed_entries if e.entry_type == EntryType.NORMAL and e.data]
        node.advance(rd)
    return applied


def view(node: RawNode, storage: MemoryStorage) -> tuple[object, ...]:
    cs = node.status().conf_state
    return (node.term, node.vote, node.commit, node.applied, node.raft_state, node.leader_id,
            storage.first_index(), storage.last_index(), sorted(cs.voters), sorted(cs.learners),
            node.has_ready())


def refused(node: RawNode, storage: MemoryStorage, exc: type[Exception], call: Callable[[], object]) -> None:
    before = view(node, storage)
    with pytest.raises(exc):
        call()
    assert view(node, storage) == before


@pytest.fixture
def leader() -> tuple[RawNode, MemoryStorage]:
    storage = MemoryStorage(ConfState(voters=[1]))
    node = RawNode(Config(1), storage)
    node.campaign()
    drain(node, storage)
    node.propose(b"x")
    assert drain(node, storage) == [b"x"]
    assert node.raft_state == StateRole.LEADER
    return node, storage


@pytest.fixture
def follower() -> tuple[RawNode, MemoryStorage]:
    storage = MemoryStorage(ConfState(voters=[1, 2, 3]))
    return RawNode(Config(2), storage), storage


def test_step_refuses_terms_and_indexes_past_the_bound(
    leader: tuple[RawNode, MemoryStorage], follower: tuple[RawNode, MemoryStorage]
) -> None:
    ln, ls = leader
    fn, fs = follower
    for t in PEER_TYPES:
        for term in (2**64 - 1, MAX_BOUND + 1):
            refused(ln, ls, InvalidMessageError,
                    lambda: ln.step(Message(msg_type=t, from_=2, to=1, term=term)))
            refused(fn, fs, InvalidMessageError,
                    lambda: fn.step(Message(msg_type=t, from_=3, to=2, term=term)))
    big = 2**64 - 1
    hostile = [
        Message(msg_type=MessageType.MSG_APP, from_=3, to=2, term=1, index=big),
        Message(msg_type=MessageType.MSG_APP, from_=3, to=2, term=1, log_term=big),
        Message(msg_type=MessageType.MSG_APP, from_=3, to=2, term=1, commit=MAX_BOUND + 1),
        Message(msg_type=MessageType.MSG_APP, from_=3, to=2, term=1,
                entries=[Entry(term=1, index=big, data=b"far")]),
        Message(msg_type=MessageType.MSG_APP, from_=3, to=2, term=1, entries=[Entry(term=big, index=1)]),
        Message(msg_type=MessageType.MSG_HEARTBEAT, from_=3, to=2, term=1, commit=big),
        Message(msg_type=MessageType.MSG_SNAP, from_=3, to=2, term=1,
                snapshot=Snapshot(index=big, term=1, conf_state=ConfState(voters=[1, 2, 3]))),
        Message(msg_type=MessageType.MSG_SNAP, from_=3, to=2, term=1,
                snapshot=Snapshot(index=10, term=1, conf_state=ConfState(voters=[1, 0]))),
    ]
    for m in hostile:
        refused(fn, fs, InvalidMessageError, lambda: fn.step(m))
    for resp in (
        Message(msg_type=MessageType.MSG_APP_RESP, from_=2, to=1, term=1, index=big),
        Message(msg_type=MessageType.MSG_APP_RESP, from_=2, to=1, term=1, reject=True, reject_hint=big),
    ):
        refused(ln, ls, InvalidMessageError, lambda: ln.step(resp))
    # The bound itself is accepted.
    fn.step(Message(msg_type=MessageType.MSG_HEARTBEAT, from_=3, to=2, term=MAX_BOUND))
    assert (fn.term, fn.leader_id) == (MAX_BOUND, 3)


def test_step_refuses_unknown_types_and_reserved_senders(
    leader: tuple[RawNode, MemoryStorage], follower: tuple[RawNode, MemoryStorage]
) -> None:
    ln, ls = leader
    fn, fs = follower
    for t in (24, 99, 1000, -1):
        refused(fn, fs, InvalidMessageError, lambda: fn.step(Message(msg_type=t, from_=3, to=2, term=1)))
        refused(ln, ls, InvalidMessageError, lambda: ln.step(Message(msg_type=t, from_=2, to=1, term=1)))
    for sender in RESERVED:
        refused(fn, fs, InvalidMessageError,
                lambda: fn.step(Message(msg_type=MessageType.MSG_VOTE, from_=sender, to=2, term=1)))
        refused(fn, fs, InvalidMessageError,
                lambda: fn.step(Message(msg_type=MessageType.MSG_APP, from_=sender, to=2, term=1)))
        refused(ln, ls, InvalidMessageError,
                lambda: ln.step(Message(msg_type=MessageType.MSG_HEARTBEAT_RESP, from_=sender, to=1, term=1)))
    assert issubclass(InvalidMessageError, ValueError)


def test_propose_conf_change_refuses_unknown_types_and_reserved_ids(
    leader: tuple[RawNode, MemoryStorage], follower: tuple[RawNode, MemoryStorage]
) -> None:
    ln, ls = leader
    fn, fs = follower
    bad: list[ConfChange | ConfChangeV2] = [
        ConfChange(change_type=7, node_id=2),
        ConfChangeV2(transition=3, changes=[ConfChangeSingle(change_type=ConfChangeType.ADD_NODE, node_id=2)]),
        ConfChangeV2(changes=[ConfChangeSingle(change_type=9, node_id=2)]),
    ]
    for node_id in RESERVED:
        bad += [
            ConfChange(change_type=ConfChangeType.ADD_NODE, node_id=node_id),
            ConfChange(change_type=ConfChangeType.ADD_LEARNER_NODE, node_id=node_id),
            ConfChangeV2(changes=[ConfChangeSingle(change_type=ConfChangeType.ADD_NODE, node_id=node_id)]),
        ]
    for cc in bad:
        refused(ln, ls, ConfChangeRefusedError, lambda: ln.propose_conf_change(cc))
        refused(fn, fs, ConfChangeRefusedError, lambda: fn.propose_conf_change(cc))
    assert not ln.has_ready()


def test_storage_refuses_configurations_no_node_can_start_from() -> None:
    storage = MemoryStorage(ConfState(voters=[1]))
    for cs in (
        ConfState(voters=[1, 0]),
        ConfState(voters=[1, 2**64 - 1]),
        ConfState(voters=[1, 2**64 - 2]),
        ConfState(voters=[1, 1]),
        ConfState(voters=[1], learners=[1]),
        ConfState(voters=[1], learners=[0]),
    ):
        with pytest.raises(ConfChangeRefusedError):
            storage.set_conf_state(cs)
        assert storage.conf_state() == ConfState(voters=[1])
        with pytest.raises(ConfChangeRefusedError):
            MemoryStorage(cs)
    node = RawNode(Config(1), storage)
    assert sorted(node.status().conf_state.voters) == [1]
    node.campaign()
    drain(node, storage)
    assert node.raft_state == StateRole.LEADER


def test_bootstrap_refuses_memberships_that_cannot_be() -> None:
    storage = MemoryStorage()
    node = RawNode(Config(1), storage)
    for voters, learners in (
        ([1, 0], []), ([0, 1], []), ([1, 2**64 - 1], []), ([1, 2**64 - 2], []), ([1, 1], []),
        ([1], [1]), ([1], [0]), ([1], [2**64 - 1]),
    ):
        refused(node, storage, ConfChangeRefusedError, lambda: node.bootstrap(voters, learners))
    assert not node.has_ready() and node.term == 0 and storage.last_index() == 0
    node.bootstrap([1])
    assert node.has_ready()
    drain(node, storage)
    node.campaign()
    drain(node, storage)
    node.propose(b"boot")
    assert drain(node, storage) == [b"boot"]


def test_leader_works_after_hostile_input(leader: tuple[RawNode, MemoryStorage]) -> None:
    ln, ls = leader
    term = ln.term
    for m in (Message(msg_type=MessageType.MSG_HEARTBEAT, from_=2, to=1, term=2**64 - 1),
              Message(msg_type=99, from_=2, to=1, term=1)):
        refused(ln, ls, InvalidMessageError, lambda: ln.step(m))
    refused(ln, ls, ConfChangeRefusedError,
            lambda: ln.propose_conf_change(ConfChange(change_type=ConfChangeType.ADD_NODE, node_id=0)))
    ln.propose(b"after")
    assert drain(ln, ls) == [b"after"]
    assert ln.term == term and ln.applied == ln.commit
