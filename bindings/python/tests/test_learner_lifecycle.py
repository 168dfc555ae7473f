"""The learner lifecycle through Python: learner-first membership,
automatic promotion, standby learners and read-only learners."""

from __future__ import annotations

import json

import pytest

import raftlet
from raftlet import ConfState, Config

from cluster import Cluster


def test_config_learner_fields_defaults_and_round_trip() -> None:
    c = Config(1)
    assert c.learner_first is True
    assert c.auto_promote is False
    assert c.promote_min_active_rounds == 3
    assert c.standby_promotion is False
    assert c.standby_dead_rounds == 3
    assert c.learner_forwards_proposals is True
    # Keyword arguments reach the core: a Config built with them differs.
    d = Config(
        1,
        learner_first=False,
        auto_promote=True,
        promote_min_active_rounds=5,
        standby_promotion=True,
        standby_dead_rounds=4,
        learner_forwards_proposals=False,
    )
    assert (d.learner_first, d.auto_promote, d.standby_promotion) == (False, True, True)
    assert (d.promote_min_active_rounds, d.standby_dead_rounds) == (5, 4)
    assert d.learner_forwards_proposals is False
    assert d != c
    d.validate()
    assert "auto_promote=True" in repr(d) and "standby_dead_rounds=4" in repr(d)
    c.auto_promote = True
    c.promote_min_active_rounds = 7
    assert c.auto_promote and c.promote_min_active_rounds == 7


def test_config_learner_fields_validation() -> None:
    with pytest.raises(raftlet.ConfigError, match="auto_promote"):
        Config(1, check_quorum=False, auto_promote=True).validate()
    with pytest.raises(raftlet.ConfigError, match="standby_promotion"):
        Config(1, check_quorum=False, standby_promotion=True).validate()
    with pytest.raises(raftlet.ConfigError, match="promote_min_active_rounds"):
        Config(1, promote_min_active_rounds=0).validate()
    with pytest.raises(raftlet.ConfigError, match="standby_dead_rounds"):
        Config(1, standby_dead_rounds=1).validate()
    with pytest.raises(ValueError):
        Config(1, promote_min_active_rounds=2**32)
    with pytest.raises(ValueError):
        Config(1, standby_dead_rounds=-1)
    with pytest.raises(TypeError):
        Config(1, standby_dead_rounds="3")  # type: ignore[arg-type]


def test_run_time_switches_need_check_quorum() -> None:
    node = raftlet.RawNode(
        Config(1, check_quorum=False), raftlet.MemoryStorage(ConfState(voters=[1]))
    )
    with pytest.raises(raftlet.ConfigError):
        node.set_auto_promote(True)
    with pytest.raises(raftlet.ConfigError):
        node.set_standby_promotion(True)
    node.set_auto_promote(False)
    node.set_standby_promotion(False)


def test_add_member_is_learner_first_and_auto_promoted_once() -> None:
    c = Cluster([1], auto_promote=True, promote_min_active_rounds=2)
    c.elect(1)
    c.propose(1, b"x=1")
    with pytest.raises(raftlet.ConfChangeRefusedError):
        c[1].add_member(1)
    c[1].set_auto_promote(False)
    c[1].add_member(2, context=b"10.0.0.2:7000")
    c.settle()
    st = c[1].status()
    assert st.voters == [1] and st.learners == [2]
    with pytest.raises(raftlet.ConfChangeRefusedError):
        c[1].add_member(2)
    # Not started yet: the leader reports why it cannot promote it.
    (ls,) = st.learner_status
    assert ls.id == 2 and ls.lag > 0 and not ls.promotable
    assert isinstance(ls.not_promotable, raftlet.NotPromotable)
    assert ls.not_promotable.reason in ("Lagging", "NotActiveLongEnough")
    assert str(ls.not_promotable)
    # It joins and catches up; with auto_promote off it stays a learner.
    c.start(2, ConfState(voters=[1], learners=[2]))
    c.tick(60)
    st = c[1].status()
    assert st.voters == [1] and st.learners == [2]
    (ls,) = st.learner_status
    assert ls.lag == 0 and ls.recent_active and ls.active_rounds >= 2
    assert ls.state == "StateReplicate"
    assert ls.not_promotable is None and ls.promotable
    assert c.hosts[1].events == []
    # On again: promoted exactly once, reported in a Ready.
    c[1].set_auto_promote(True)
    c.tick(40)
    events = c.hosts[1].events
    assert len(events) == 1
    (e,) = events
    assert isinstance(e, raftlet.MembershipEvent)
    assert e.kind == "PromotionProposed"
    assert (e.id, e.promoted, e.demoted) == (2, 2, 0)
    assert 0 < e.index <= c.hosts[1].applied_index
    assert "PromotionProposed" in repr(e)
    st = c[1].status()
    assert st.voters == [1, 2] and st.learners == [] and st.learner_status == []
    assert c[1].raft_state == "Leader"


def test_not_promotable_numbers_when_not_active_long_enough() -> None:
    c = Cluster([1], auto_promote=True, promote_min_active_rounds=1000)
    c.elect(1)
    c[1].add_member(2)
    c.settle()
    c.start(2, ConfState(voters=[1], learners=[2]))
    c.tick(40)
    (ls,) = c[1].status().learner_status
    np = ls.not_promotable
    assert np is not None and np.reason == "NotActiveLongEnough"
    assert np.needed == 1000 and np.active_rounds is not None and 2 <= np.active_rounds < 1000
    assert np.lag is None and np.max_lag is None
    assert c.hosts[1].events == []


def test_standby_replaces_a_dead_voter() -> None:
    c = Cluster([1, 2, 3], learners=[4], standby_promotion=True, standby_dead_rounds=2,
                promote_min_active_rounds=2)
    c.elect(1)
    c.propose(1, b"a")
    c.tick(30)
    assert c.hosts[1].events == []
    c.isolate(3)
    for _ in range(300):
        c.tick()
        assert c[1].raft_state == "Leader"
        if c.hosts[1].events:
            break
    c.tick(30)
    (e,) = c.hosts[1].events
    assert e.kind == "StandbySwapProposed"
    assert (e.id, e.promoted, e.demoted) == (4, 4, 3)
    st = c[1].status()
    assert st.voters == [1, 2, 4] and st.learners == [3]
    (ls,) = st.learner_status
    assert ls.id == 3 and not ls.recent_active and not ls.promotable


def test_read_only_learner_weak_and_strong_reads() -> None:
    c = Cluster([1, 2], learners=[3], learner_forwards_proposals=False)
    c.elect(1)
    c.propose(1, b"k=v")
    c.tick(3)
    learner = c.hosts[3]
    # Weak: served from the learner's applied state, which it reports.
    lr = learner.node.read_local()
    assert isinstance(lr, raftlet.LocalRead)
    assert lr.applied == learner.applied_index and lr.applied > 0
    assert lr.commit >= lr.applied and lr.leader == 1
    assert "LocalRead(" in repr(lr)
    # Writes are refused on this learner.
    with pytest.raises(raftlet.ProposalDroppedError):
        learner.node.propose(b"w")
    # Strong: ReadIndex through the leader, then wait for apply.
    c.propose(1, b"k=w")
    learner.node.read_index(b"r1")
    c.settle()
    (rs,) = learner.read_states
    assert rs.request_ctx == b"r1"
    assert learner.applied_index >= rs.index
    assert learner.applied[-1] == b"k=w"


def test_status_json_keeps_learner_ids() -> None:
    c = Cluster([1], learners=[2])
    c.elect(1)
    c.tick(25)
    # The JSON of the core keeps its shape (learners' ids).
    j = json.loads(c[1].status().to_json())
    assert j["learners"] == ["2"]
