"""Clusters driven purely from Python: elections, replication, partitions,
learners and promotion, leader transfer, ReadIndex, snapshot catch-up."""

from __future__ import annotations

import pytest
from cluster import Cluster

from raftlet import (
    ConfChange,
    ConfChangeSingle,
    ConfChangeTransition,
    ConfChangeType,
    ConfChangeV2,
    ConfState,
    MessageType,
    NoLeaderError,
    PromotionNotReadyError,
    ProposalDroppedError,
    StateRole,
    TooManyLearnersError,
    TransferRefusedError,
)


def add_learner(c: Cluster, leader: int, node_id: int) -> None:
    c[leader].propose_conf_change(ConfChange(change_type=ConfChangeType.ADD_LEARNER_NODE, node_id=node_id))
    c.settle()


def promote(c: Cluster, leader: int, node_id: int) -> None:
    c[leader].propose_conf_change(ConfChange(change_type=ConfChangeType.ADD_NODE, node_id=node_id))
    c.settle()


def test_elect_replicate_partition_reelect() -> None:
    c = Cluster([1, 2, 3])
    first = c.wait_for_leader()
    term = c[first].term
    assert [c[i].raft_state for i in (1, 2, 3)].count(StateRole.LEADER) == 1
    for i in range(10):
        c.propose(first, b"v%d" % i)
    for h in c.hosts.values():
        assert h.applied == [b"v%d" % i for i in range(10)]

    # Partition the leader: check-quorum makes it step down, the others
    # elect a new leader in a higher term.
    c.isolate(first)
    c.tick(40)
    assert c[first].raft_state != StateRole.LEADER
    second = c.wait_for_leader()
    assert second != first
    new_term = c[second].term
    assert new_term > term
    c.propose(second, b"after")

    # Heal: the old leader rejoins as a follower without disrupting the
    # new leader (pre-vote kept its term from running away).
    c.heal()
    c.tick(20)
    assert c.leader() == second and c[second].term == new_term
    assert c[first].raft_state == StateRole.FOLLOWER and c[first].leader_id == second
    assert c.hosts[first].applied == c.hosts[second].applied
    assert c.hosts[first].applied[-1] == b"after"


def test_follower_forwards_proposals_to_the_leader() -> None:
    c = Cluster([1, 2, 3])
    c.elect(1)
    c.propose(2, b"via follower")
    assert all(h.applied == [b"via follower"] for h in c.hosts.values())
    # With forwarding disabled a follower drops proposals.
    d = Cluster([1, 2, 3], disable_proposal_forwarding=True)
    d.elect(1)
    with pytest.raises(ProposalDroppedError):
        d[2].propose(b"x")


def test_messages_round_trip_through_the_wire() -> None:
    c = Cluster([1, 2, 3])
    c[1].campaign()
    rd = c[1].ready()
    types = {m.msg_type for m in rd.messages + rd.persisted_messages}
    assert types <= {MessageType.MSG_PRE_VOTE, MessageType.MSG_VOTE}
    c.hosts[1].storage.append(rd.entries)
    if rd.hard_state is not None:
        c.hosts[1].storage.set_hard_state(rd.hard_state)
    c.deliver(rd.messages + rd.persisted_messages)
    c[1].advance(rd)
    c.settle()
    assert c.leader() == 1


def test_read_index_through_a_follower() -> None:
    c = Cluster([1, 2, 3])
    c.elect(1)
    c.propose(1, b"w")
    c[3].read_index(b"read-1")
    c.settle()
    states = c.hosts[3].read_states
    assert [s.request_ctx for s in states] == [b"read-1"]
    assert states[0].index >= c[1].commit - 1


def test_read_index_while_partitioned_from_the_leader() -> None:
    c = Cluster([1, 2, 3])
    c.elect(1)
    c[3].forget_leader()
    with pytest.raises(NoLeaderError):
        c[3].read_index(b"r")


def test_transfer_leader() -> None:
    c = Cluster([1, 2, 3])
    c.elect(1)
    c.propose(1, b"x")
    c[1].transfer_leader(3)
    c.settle()
    c.tick(3)
    assert c.leader() == 3
    # To a node that is not a member: refused.
    with pytest.raises(TransferRefusedError):
        c[3].transfer_leader(9)


def test_transfer_to_a_learner_is_refused() -> None:
    c = Cluster([1, 2, 3], learners=[4])
    c.elect(1)
    with pytest.raises(TransferRefusedError, match="learner"):
        c[1].transfer_leader(4)


def test_second_learner_is_refused() -> None:
    c = Cluster([1, 2, 3])
    c.elect(1)
    add_learner(c, 1, 4)
    assert c[1].status().learners == [4]
    with pytest.raises(TooManyLearnersError, match="too many learners"):
        c[1].propose_conf_change(ConfChange(change_type=ConfChangeType.ADD_LEARNER_NODE, node_id=5))
    # With room for two, it is accepted.
    d = Cluster([1, 2, 3], max_learners=2)
    d.elect(1)
    add_learner(d, 1, 4)
    add_learner(d, 1, 5)
    assert d[1].status().learners == [4, 5]


def test_lagging_learner_promotion_is_refused_then_accepted() -> None:
    c = Cluster([1, 2, 3], promote_max_lag=10)
    c.elect(1)
    for i in range(50):
        c[1].propose(b"e%d" % i)
    c.settle()
    add_learner(c, 1, 4)
    # The learner joins with the current members in its storage, but has
    # not received anything yet: it lags by the whole log.
    c.start(4, ConfState(voters=[1, 2, 3], learners=[4]))
    with pytest.raises(PromotionNotReadyError) as info:
        c[1].propose_conf_change(ConfChange(change_type=ConfChangeType.ADD_NODE, node_id=4))
    err = info.value
    assert err.id == 4 and err.lag > 10
    assert "not ready to be promoted" in str(err)
    # It catches up through heartbeats and appends.
    c.tick(5)
    assert c.hosts[4].applied == c.hosts[1].applied
    pr = c[1].status().progress[4]
    assert pr.is_learner and pr.matched == c[1].commit
    promote(c, 1, 4)
    st = c[1].status()
    assert st.voters == [1, 2, 3, 4] and st.learners == []
    assert c.hosts[4].conf_state.voters == [1, 2, 3, 4]
    # The new voter counts: with two nodes down, three of four still commit.
    c.isolate(3)
    c.propose(1, b"with four")
    assert c.hosts[4].applied[-1] == b"with four"


def test_learner_that_falls_behind_is_refused_again() -> None:
    c = Cluster([1, 2, 3], learners=[4], promote_max_lag=5)
    c.elect(1)
    c.isolate(4)
    for i in range(20):
        c[1].propose(b"x%d" % i)
    c.settle()
    with pytest.raises(PromotionNotReadyError) as info:
        promote(c, 1, 4)
    assert info.value.lag >= 20
    c.heal()
    c.tick(5)
    promote(c, 1, 4)
    assert 4 in c[1].status().voters


def test_joint_consensus_change() -> None:
    c = Cluster([1, 2, 3], max_learners=2)
    c.elect(1)
    cc = ConfChangeV2(
        changes=[
            ConfChangeSingle(change_type=ConfChangeType.ADD_LEARNER_NODE, node_id=3),
        ],
        transition=ConfChangeTransition.JOINT_EXPLICIT,
    )
    c[1].propose_conf_change(cc)
    c.settle()
    st = c[1].status()
    assert st.voters == [1, 2] and st.voters_outgoing == [1, 2, 3] and st.learners_next == [3]
    c[1].propose_conf_change(ConfChangeV2())
    c.settle()
    st = c[1].status()
    assert st.voters == [1, 2] and st.voters_outgoing == [] and st.learners == [3]


def test_snapshot_catch_up_of_a_new_learner() -> None:
    c = Cluster([1, 2, 3])
    c.elect(1)
    for i in range(30):
        c[1].propose(b"s%d" % i)
    c.settle()
    add_learner(c, 1, 4)
    # Every host snapshots and compacts: the learner can only catch up
    # through a snapshot.
    for h in c.hosts.values():
        h.snapshot_and_compact()
    c.start(4, None)
    c.tick(5)
    learner = c.hosts[4]
    assert learner.applied == c.hosts[1].applied
    assert learner.storage.snapshot().index > 0
    assert learner.conf_state.learners == [4]
    assert c[1].status().progress[4].state == "StateReplicate"
    c.propose(1, b"after snapshot")
    assert learner.applied[-1] == b"after snapshot"


def test_removed_leader_steps_down() -> None:
    c = Cluster([1, 2, 3])
    c.elect(1)
    c[1].propose_conf_change(ConfChange(change_type=ConfChangeType.REMOVE_NODE, node_id=1))
    c.settle()
    assert c[1].raft_state != StateRole.LEADER
    assert c[2].status().voters == [2, 3]
    c.tick(40)
    assert c.leader() in (2, 3)
