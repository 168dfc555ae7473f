"""RawNode and Ready on one node (and a few two-node situations)."""

from __future__ import annotations

import pytest

import raftlet
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
    HardState,
    InvalidMessageError,
    InvalidStateError,
    MemoryStorage,
    Message,
    MessageType,
    NoLeaderError,
    ProposalDroppedError,
    RawNode,
    Ready,
    ReadyStaleError,
    StateRole,
    StepLocalMessageError,
    StepPeerNotFoundError,
    TransferRefusedError,
)


def drain(node: RawNode, storage: MemoryStorage) -> list[bytes]:
    """The single-node Ready loop; returns the applied payloads."""
    applied = []
    while node.has_ready():
        rd = node.ready()
        if rd.snapshot is not None:
            storage.apply_snapshot(rd.snapshot)
        storage.append(rd.entries)
        if rd.hard_state is not None:
            storage.set_hard_state(rd.hard_state)
        # A single voter has no peers; a learner added later gets messages,
        # which go nowhere here.
        for e in rd.committed_entries:
            if e.entry_type == EntryType.NORMAL and e.data:
                applied.append(e.data)
            elif e.entry_type != EntryType.NORMAL:
                node.apply_conf_change(e.conf_change())
        node.advance(rd)
    return applied


def single() -> tuple[RawNode, MemoryStorage]:
    storage = MemoryStorage(ConfState(voters=[1]))
    return RawNode(Config(1), storage), storage


def leader() -> tuple[RawNode, MemoryStorage]:
    node, storage = single()
    node.campaign()
    drain(node, storage)
    assert node.raft_state == StateRole.LEADER
    return node, storage


def test_new_node_properties_and_repr() -> None:
    node, storage = single()
    assert node.id == 1
    assert (node.term, node.vote, node.commit, node.applied, node.leader_id) == (0, 0, 0, 0, 0)
    assert node.raft_state is StateRole.FOLLOWER and node.raft_state == "Follower"
    assert node.lead_transferee == 0
    assert node.storage is storage
    assert repr(node) == "RawNode(id=1, role=Follower, term=0, commit=0)"


def test_campaign_elects_a_single_voter() -> None:
    node, storage = single()
    node.campaign()
    assert node.has_ready()
    drain(node, storage)
    assert node.raft_state == "Leader" and node.leader_id == 1 and node.term == 1
    assert repr(node) == f"RawNode(id=1, role=Leader, term=1, commit={node.commit})"
    assert storage.hard_state().term == 1


def test_propose_and_apply() -> None:
    node, storage = leader()
    node.propose(b"x=1")
    node.propose(bytearray(b"y=2"))
    node.propose(memoryview(b"z=3"))
    node.propose_batch([b"a", b"b"])
    rd = node.ready()
    assert rd.messages == [] and rd.persisted_messages == []
    storage.append(rd.entries)
    node.advance(rd)
    assert drain(node, storage) == [b"x=1", b"y=2", b"z=3", b"a", b"b"]
    assert node.applied == node.commit == storage.last_index()
    with pytest.raises(ProposalDroppedError):
        node.propose_batch([])
    with pytest.raises(TypeError, match="expected bytes, got str"):
        node.propose("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="iterable of bytes"):
        node.propose_batch(b"ab")  # type: ignore[arg-type]


def test_propose_without_leader_is_dropped() -> None:
    node, _ = single()
    with pytest.raises(ProposalDroppedError) as info:
        node.propose(b"x")
    assert str(info.value) == "raft proposal dropped"
    assert isinstance(info.value, raftlet.RaftError)


def test_ready_contents() -> None:
    node, storage = single()
    node.campaign()
    rd = node.ready()
    assert isinstance(rd, Ready) and rd.number == 1
    assert rd.soft_state is not None and rd.soft_state.raft_state in ("PreCandidate", "Candidate", "Leader")
    # The same objects on every read.
    assert rd.entries is rd.entries
    assert isinstance(rd.read_states, list) and isinstance(rd.must_sync, bool)
    assert rd.snapshot is None
    assert not rd.advanced
    assert repr(rd).startswith("Ready(number=1, ")
    node.advance(rd)
    assert rd.advanced
    drain(node, storage)
    node.propose(b"p")
    rd = node.ready()
    assert [e.data for e in rd.entries] == [b"p"] and rd.must_sync
    assert rd.hard_state is None or isinstance(rd.hard_state, HardState)


def test_ready_advanced_twice_raises_ready_stale() -> None:
    node, storage = leader()
    node.propose(b"x")
    rd = node.ready()
    storage.append(rd.entries)
    node.advance(rd)
    with pytest.raises(ReadyStaleError, match="already advanced"):
        node.advance(rd)
    with pytest.raises(ReadyStaleError):
        node.advance_append(rd)
    # The contents stay readable.
    assert [e.data for e in rd.entries] == [b"x"]


def test_ready_of_another_node_is_refused() -> None:
    a, _ = single()
    b, _ = single()
    a.campaign()
    rd = a.ready()
    with pytest.raises(ValueError, match="another RawNode"):
        b.advance(rd)
    a.advance(rd)


def test_advance_append_and_apply_to() -> None:
    node, storage = leader()
    before = node.applied
    node.propose(b"1")
    node.propose(b"2")
    rd = node.ready()
    storage.append(rd.entries)
    node.advance_append(rd)
    rd = node.ready()
    assert [e.data for e in rd.committed_entries] == [b"1", b"2"]
    node.advance_append(rd)
    first = rd.committed_entries[0].index
    node.advance_apply_to(first)
    assert node.applied == first
    # Beyond what was handed out is capped.
    node.advance_apply_to(10**9)
    assert node.applied == rd.committed_entries[-1].index > before
    node.propose(b"3")
    drain_rd = node.ready()
    storage.append(drain_rd.entries)
    node.advance_append(drain_rd)
    rd = node.ready()
    node.advance_append(rd)
    node.advance_apply()
    assert node.applied == node.commit


def test_step_local_message_raises() -> None:
    node, _ = single()
    for t in (MessageType.MSG_HUP, MessageType.MSG_BEAT, MessageType.MSG_UNREACHABLE,
              MessageType.MSG_SNAP_STATUS, MessageType.MSG_CHECK_QUORUM):
        with pytest.raises(StepLocalMessageError, match="local message"):
            node.step(Message(msg_type=t, from_=1, to=1))


def test_step_response_from_unknown_peer_raises() -> None:
    node, _ = leader()
    with pytest.raises(StepPeerNotFoundError, match="peer not found"):
        node.step(Message(msg_type=MessageType.MSG_APP_RESP, from_=99, to=1, term=node.term))


def test_step_refuses_hostile_values() -> None:
    node, _ = leader()
    term, commit = node.term, node.commit
    for t in (2**64 - 1, 2**63):
        hb = Message(msg_type=MessageType.MSG_HEARTBEAT, from_=2, to=1, term=t)
        with pytest.raises(InvalidMessageError, match="term"):
            node.step(hb)
    ack = Message(msg_type=MessageType.MSG_APP_RESP, from_=2, to=1, term=term, index=2**64 - 1)
    with pytest.raises(InvalidMessageError, match="index"):
        node.step(ack)
    assert isinstance(InvalidMessageError("x"), ValueError)
    assert (node.term, node.commit) == (term, commit) and not node.has_ready()


def test_bad_configurations_and_conf_changes_are_refused() -> None:
    with pytest.raises(ConfChangeRefusedError):
        MemoryStorage(ConfState(voters=[1, 0]))
    storage = MemoryStorage(ConfState(voters=[1]))
    with pytest.raises(ConfChangeRefusedError, match="learner"):
        storage.set_conf_state(ConfState(voters=[1], learners=[1]))
    assert storage.conf_state() == ConfState(voters=[1])
    node, _ = leader()
    with pytest.raises(ConfChangeRefusedError):
        node.propose_conf_change(ConfChange(change_type=ConfChangeType.ADD_NODE, node_id=2**64 - 1))
    assert not node.has_ready()


def test_step_wrong_type() -> None:
    node, _ = single()
    with pytest.raises(TypeError):
        node.step(b"bytes")  # type: ignore[arg-type]


def test_step_drives_a_follower() -> None:
    storage = MemoryStorage(ConfState(voters=[1, 2]))
    node = RawNode(Config(2), storage)
    hb = Message(msg_type=MessageType.MSG_HEARTBEAT, from_=1, to=2, term=1)
    node.step(hb)
    assert node.leader_id == 1 and node.term == 1
    rd = node.ready()
    assert [m.msg_type for m in rd.messages] == [MessageType.MSG_HEARTBEAT_RESP]
    assert rd.messages[0].to == 1
    node.advance(rd)


def test_read_index_without_leader_raises_no_leader() -> None:
    node, _ = single()
    with pytest.raises(NoLeaderError, match="no leader"):
        node.read_index(b"ctx")


def test_read_index_on_single_leader() -> None:
    node, storage = leader()
    node.read_index(b"r1")
    rd = node.ready()
    assert [(r.index, r.request_ctx) for r in rd.read_states] == [(node.commit, b"r1")]
    node.advance(rd)


def test_transfer_leader_errors() -> None:
    node, _ = single()
    with pytest.raises(TransferRefusedError):
        node.transfer_leader(2)
    node, _ = leader()
    with pytest.raises(TransferRefusedError) as info:
        node.transfer_leader(7)
    assert "7" in str(info.value)


def test_forget_leader_report_unreachable_report_snapshot() -> None:
    storage = MemoryStorage(ConfState(voters=[1, 2]))
    follower = RawNode(Config(2), storage)
    follower.step(Message(msg_type=MessageType.MSG_HEARTBEAT, from_=1, to=2, term=1))
    assert follower.leader_id == 1
    follower.forget_leader()
    assert follower.leader_id == 0
    # On a leader these are reports about peers; unknown peers are ignored.
    node, _ = leader()
    node.report_unreachable(2)
    node.report_snapshot(2, True)
    node.report_snapshot(2, False)
    node.forget_leader()
    assert node.raft_state == "Leader"
    with pytest.raises(TypeError):
        node.report_snapshot(2, "yes")  # type: ignore[arg-type]


def test_bootstrap() -> None:
    storage = MemoryStorage()
    node = RawNode(Config(1), storage)
    node.bootstrap([1], learners=[2])
    rd = node.ready()
    assert [e.entry_type for e in rd.entries] == [EntryType.CONF_CHANGE] * 2
    assert rd.hard_state is not None and rd.hard_state.commit == 2
    storage.append(rd.entries)
    storage.set_hard_state(rd.hard_state)
    for e in rd.committed_entries:
        cs = node.apply_conf_change(e.conf_change())
    assert cs == ConfState(voters=[1], learners=[2])
    node.advance(rd)
    with pytest.raises(InvalidStateError, match="nonempty"):
        node.bootstrap([1])
    other = RawNode(Config(1), MemoryStorage())
    with pytest.raises(InvalidStateError, match="at least one voter"):
        other.bootstrap([])
    with pytest.raises(TypeError):
        other.bootstrap("1")  # type: ignore[arg-type]


def test_conf_changes_on_a_single_leader() -> None:
    node, storage = leader()
    node.propose_conf_change(ConfChange(change_type=ConfChangeType.ADD_LEARNER_NODE, node_id=2))
    # A second change while the first is not applied is refused.
    with pytest.raises(ConfChangeRefusedError, match="unapplied conf change"):
        node.propose_conf_change(ConfChange(change_type=ConfChangeType.ADD_NODE, node_id=3))
    drain(node, storage)
    st = node.status()
    assert st.voters == [1] and st.learners == [2]
    # Leaving a joint configuration when not in one is refused.
    with pytest.raises(ConfChangeRefusedError, match="not in joint state"):
        node.propose_conf_change(ConfChangeV2())
    with pytest.raises(TypeError, match="ConfChange or ConfChangeV2"):
        node.propose_conf_change(Entry())  # type: ignore[arg-type]
    with pytest.raises(ConfChangeRefusedError):
        node.apply_conf_change(ConfChangeV2())
    cs = node.apply_conf_change(
        ConfChangeV2(changes=[ConfChangeSingle(change_type=ConfChangeType.ADD_NODE, node_id=3)])
    )
    assert sorted(cs.voters) == [1, 3]


def test_status() -> None:
    node, storage = leader()
    st = node.status()
    assert (st.id, st.term, st.vote, st.leader_id) == (1, 1, 1, 1)
    assert st.raft_state == "Leader" and st.raft_state is StateRole.LEADER
    assert st.commit == node.commit and st.applied == node.applied
    assert st.lead_transferee == 0
    assert st.hard_state == HardState(term=1, vote=1, commit=node.commit)
    assert st.soft_state.leader_id == 1
    assert st.voters == [1] and st.learners == [] and st.voters_outgoing == []
    assert st.learners_next == [] and not st.auto_leave
    assert st.conf_state == ConfState(voters=[1])
    pr = st.progress[1]
    assert pr.matched == node.commit and pr.next == pr.matched + 1
    assert pr.state == "StateReplicate" and pr.recent_active and not pr.is_learner
    assert pr.pending_snapshot == 0 and not pr.msg_app_flow_paused
    assert pr.sent_commit >= 0 and pr.inflight >= 0
    assert repr(pr).startswith("Progress(state=StateReplicate")
    assert '"raftState":"StateLeader"' in st.to_json()
    assert repr(st).startswith("Status(id=1, raft_state=Leader, term=1")
    follower = RawNode(Config(2), MemoryStorage(ConfState(voters=[1, 2])))
    assert follower.status().progress == {}


def test_close() -> None:
    node, _ = single()
    node.close()
    node.close()
    assert repr(node) == "RawNode(<closed>)"
    with pytest.raises(InvalidStateError, match="closed"):
        node.tick()
    with pytest.raises(InvalidStateError):
        node.ready()
    with pytest.raises(InvalidStateError):
        node.step(Message(msg_type=MessageType.MSG_HEARTBEAT, from_=2, to=1, term=1))


def test_restart_from_storage() -> None:
    node, storage = leader()
    node.propose(b"a")
    drain(node, storage)
    commit = node.commit
    node.close()
    again = RawNode(Config(1, applied=commit), storage)
    assert again.term == 1 and again.commit == commit
    again.campaign()
    drain(again, storage)
    assert again.raft_state == "Leader" and again.term == 2


def test_tick_elects_without_campaign() -> None:
    node, storage = single()
    for _ in range(30):
        node.tick()
        drain(node, storage)
    assert node.raft_state == "Leader"


def test_node_from_constructor_errors() -> None:
    with pytest.raises(TypeError):
        RawNode(Config(1), object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        RawNode(None, MemoryStorage())  # type: ignore[arg-type]


def test_panic_inside_the_core_is_a_raft_error_and_poisons_the_node() -> None:
    """A host that compacts committed entries before they were handed out
    breaks the storage contract; the core panics on it. The panic surfaces
    as PanicError (a RaftError, not PyO3's PanicException), and the node
    refuses every later call instead of running on a broken state."""
    node, storage = single()
    node.campaign()
    drain(node, storage)
    node.propose(b"a")
    node.propose(b"b")
    rd = node.ready()
    storage.append(rd.entries)
    if rd.hard_state is not None:
        storage.set_hard_state(rd.hard_state)
    node.advance_append(rd)  # durable: index 2 and 3 commit, not yet handed out
    storage.compact(3)  # index 2 is gone before the host applied it
    with pytest.raises(raftlet.PanicError, match="panic inside the core") as info:
        node.ready()
    assert isinstance(info.value, raftlet.RaftError)
    with pytest.raises(InvalidStateError, match="unusable after a panic"):
        node.status()
    with pytest.raises(InvalidStateError):
        node.propose(b"c")


def test_basic_status_is_the_scalar_part_of_status() -> None:
    node, storage = single()
    b = node.basic_status()
    assert (b.id, b.term, b.raft_state, b.leader_id) == (1, 0, StateRole.FOLLOWER, 0)
    node.campaign()
    drain(node, storage)
    node.propose(b"x")
    drain(node, storage)
    b, st = node.basic_status(), node.status()
    assert isinstance(b, raftlet.BasicStatus)
    assert (b.id, b.term, b.vote, b.commit, b.applied, b.leader_id, b.lead_transferee) == (
        st.id, st.term, st.vote, st.commit, st.applied, st.leader_id, st.lead_transferee,
    ) == (1, 1, 1, 2, 2, 1, 0)
    assert b.raft_state is StateRole.LEADER and b.hard_state == st.hard_state
    assert b.soft_state == st.soft_state and b == node.basic_status()
    assert repr(b).startswith("BasicStatus(id=1, raft_state=Leader, term=1")


def test_all_messages_is_messages_then_persisted_messages() -> None:
    storage = MemoryStorage(ConfState(voters=[1, 2, 3]))
    node = RawNode(Config(1, pre_vote=False), storage)
    node.campaign()
    rd = node.ready()
    everything = rd.all_messages()
    assert everything == rd.messages + rd.persisted_messages
    assert sorted((m.msg_type, m.to) for m in everything) == [
        (MessageType.MSG_VOTE, 2), (MessageType.MSG_VOTE, 3)]
    assert everything is not rd.all_messages() and rd.messages + rd.persisted_messages == everything
    node.advance(rd)


def campaign_ticks(seed: int) -> list[int]:
    """The ticks between the campaigns of a node whose peers never answer
    (pre-vote off, so each campaign raises the term): its timeout draws."""
    storage = MemoryStorage(ConfState(voters=[1, 2, 3]))
    node = RawNode(Config(1, pre_vote=False, check_quorum=False, seed=seed), storage)
    gaps, ticks = [], 0
    while len(gaps) < 8:
        term = node.term
        node.tick()
        ticks += 1
        if node.term != term:
            gaps.append(ticks)
            ticks = 0
    return gaps


def test_seed_zero_draws_from_the_os_and_a_fixed_seed_replays() -> None:
    """Seed 0 (the default) gives every node, and every restart, its own
    timeouts (two 8-draw sequences out of 10 values agree by chance with
    probability 1e-8); a fixed seed replays the same ones."""
    first, restarted = campaign_ticks(0), campaign_ticks(0)
    assert first != restarted
    assert all(10 <= t < 20 for t in first + restarted)
    assert campaign_ticks(7) == campaign_ticks(7)


def test_the_core_builds_only_records_the_logger_keeps() -> None:
    """The core's level follows logging.getLogger("raftlet") (read at node
    creation and at campaign/tick/ready), so records the logger would drop
    are never built in Rust."""
    import logging

    logger = logging.getLogger("raftlet")
    old = logger.level
    try:
        logger.setLevel(logging.WARNING)
        node, storage = single()
        assert raftlet._raftlet._core_log_level() == logging.WARNING
        logger.setLevel(logging.DEBUG)
        node.tick()
        assert raftlet._raftlet._core_log_level() == logging.DEBUG
        logger.setLevel(logging.INFO)
        node.ready()
        assert raftlet._raftlet._core_log_level() == logging.INFO
        logging.disable(logging.CRITICAL)
        node.campaign()
        assert raftlet._raftlet._core_log_level() is None
    finally:
        logging.disable(logging.NOTSET)
        logger.setLevel(old)
