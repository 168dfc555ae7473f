"""The wire types: construction, attributes, equality, repr, encode/decode."""

from __future__ import annotations

import pytest

import raftlet
from raftlet import (
    ConfChange,
    ConfChangeSingle,
    ConfChangeTransition,
    ConfChangeType,
    ConfChangeV2,
    ConfState,
    DecodeError,
    Entry,
    EntryType,
    HardState,
    Message,
    MessageType,
    ReadState,
    Snapshot,
    SoftState,
    StateRole,
)


def test_entry_defaults_and_attributes() -> None:
    e = Entry()
    assert (e.term, e.index, e.data, e.entry_type) == (0, 0, b"", EntryType.NORMAL)
    e = Entry(term=2, index=7, data=b"x=1", entry_type=EntryType.CONF_CHANGE)
    assert (e.term, e.index, e.data) == (2, 7, b"x=1")
    assert e.entry_type is EntryType.CONF_CHANGE
    e.term, e.index, e.data, e.entry_type = 3, 8, bytearray(b"y"), 2
    assert (e.term, e.index, e.data, e.entry_type) == (3, 8, b"y", EntryType.CONF_CHANGE_V2)
    e.data = memoryview(b"mv")
    assert e.data == b"mv"


def test_entry_absent_and_empty_data_encode_differently() -> None:
    # etcd v3.6 writes nothing for nil data and `22 00` for empty data.
    absent = Entry(term=1, index=1)
    empty = Entry(term=1, index=1, data=b"")
    assert absent.data == empty.data == b""
    assert absent.encode() == bytes([0x08, 0x00, 0x10, 0x01, 0x18, 0x01])
    assert empty.encode() == absent.encode() + b"\x22\x00"
    assert absent != empty
    empty.data = None
    assert empty == absent


def test_entry_round_trip_and_describe() -> None:
    e = Entry(term=5, index=9, data=b"hello")
    d = Entry.decode(e.encode())
    assert d == e and d is not e
    assert str(e) == '5/9 EntryNormal "hello"'
    assert repr(e) == "Entry(term=5, index=9, entry_type=EntryType.EntryNormal, data=b'hello')"
    assert "<100 bytes>" in repr(Entry(data=b"x" * 100))


def test_entry_conf_change() -> None:
    cc = ConfChange(change_type=ConfChangeType.ADD_LEARNER_NODE, node_id=4)
    e = Entry(term=1, index=3, entry_type=EntryType.CONF_CHANGE, data=cc.encode())
    got = e.conf_change()
    assert isinstance(got, ConfChange) and got == cc
    v2 = ConfChangeV2(changes=[ConfChangeSingle(change_type=ConfChangeType.ADD_NODE, node_id=5)])
    e2 = Entry(entry_type=EntryType.CONF_CHANGE_V2, data=v2.encode())
    assert e2.conf_change() == v2
    with pytest.raises(DecodeError):
        Entry(data=b"x").conf_change()
    with pytest.raises(DecodeError):
        Entry(entry_type=EntryType.CONF_CHANGE, data=b"\xff").conf_change()


def test_hard_state() -> None:
    hs = HardState(term=3, vote=2, commit=10)
    assert (hs.term, hs.vote, hs.commit) == (3, 2, 10)
    assert not hs.is_empty() and HardState().is_empty()
    hs.commit = 11
    assert HardState.decode(hs.encode()) == hs
    # Non-nullable scalars are always written, even when zero.
    assert HardState().encode() == bytes([0x08, 0x00, 0x10, 0x00, 0x18, 0x00])
    assert repr(hs) == "HardState(term=3, vote=2, commit=11)"


def test_conf_state() -> None:
    cs = ConfState(voters=[1, 2, 3], learners=(4,))
    assert cs.voters == [1, 2, 3] and cs.learners == [4]
    assert cs.voters_outgoing == [] and cs.learners_next == [] and not cs.auto_leave
    cs.voters_outgoing = [1, 2]
    cs.learners_next = [3]
    cs.auto_leave = True
    assert ConfState.decode(cs.encode()) == cs
    assert ConfState(voters=[3, 2, 1]).equivalent(ConfState(voters=[1, 2, 3]))
    assert not ConfState(voters=[1]).equivalent(ConfState(voters=[2]))
    assert ConfState(voters=[3, 2, 1]) != ConfState(voters=[1, 2, 3])
    assert repr(ConfState(voters=[1], learners=[2])) == "ConfState(voters=[1], learners=[2])"
    assert "auto_leave=True" in repr(cs)
    # Lists read from attributes are copies.
    cs.voters.append(9)
    assert 9 not in cs.voters
    cs.learners = range(5, 7)
    assert cs.learners == [5, 6]


def test_snapshot() -> None:
    cs = ConfState(voters=[1, 2])
    s = Snapshot(data=b"state", index=10, term=2, conf_state=cs)
    assert (s.data, s.index, s.term, s.conf_state) == (b"state", 10, 2, cs)
    assert not s.is_empty() and Snapshot().is_empty()
    s.index, s.term, s.data = 11, 3, b"s2"
    s.conf_state = ConfState(voters=[1, 2, 3])
    assert Snapshot.decode(s.encode()) == s
    assert s.conf_state.voters == [1, 2, 3]
    assert repr(s).startswith("Snapshot(index=11, term=3, conf_state=ConfState(voters=[1, 2, 3]")
    s.data = None
    assert s.data == b""


def test_message_round_trip_every_field() -> None:
    snap = Snapshot(data=b"d", index=5, term=1, conf_state=ConfState(voters=[1, 2, 3]))
    m = Message(
        msg_type=MessageType.MSG_SNAP,
        to=2,
        from_=1,
        term=3,
        log_term=2,
        index=5,
        entries=[Entry(term=2, index=6, data=b"a"), Entry(term=3, index=7)],
        commit=5,
        snapshot=snap,
        reject=True,
        reject_hint=4,
        context=b"ctx",
        vote=1,
        responses=[Message(msg_type=MessageType.MSG_APP_RESP, to=1, from_=2)],
    )
    d = Message.decode(m.encode())
    assert d == m
    assert d.msg_type is MessageType.MSG_SNAP
    assert (d.to, d.from_, d.term, d.log_term, d.index, d.commit) == (2, 1, 3, 2, 5, 5)
    assert [e.index for e in d.entries] == [6, 7]
    assert d.snapshot == snap
    assert d.reject and d.reject_hint == 4 and d.context == b"ctx" and d.vote == 1
    assert d.responses[0].msg_type == MessageType.MsgAppResp


def test_message_setters_and_copies() -> None:
    m = Message()
    assert m.msg_type is MessageType.MSG_HUP and m.snapshot is None and m.entries == []
    m.msg_type = MessageType.MSG_APP
    m.to, m.from_, m.term, m.log_term, m.index, m.commit = 2, 1, 4, 3, 9, 8
    m.reject, m.reject_hint, m.vote = True, 7, 1
    m.context = b"c"
    m.entries = [Entry(index=10)]
    m.snapshot = Snapshot(index=3)
    m.responses = [Message(to=5)]
    # Reading a list gives a copy: appending to it changes nothing.
    m.entries.append(Entry(index=11))
    assert [e.index for e in m.entries] == [10]
    assert m.snapshot is not None and m.snapshot.index == 3
    m.snapshot = None
    m.context = None
    assert m.snapshot is None and m.context == b""
    assert m.responses[0].to == 5
    assert "MsgApp" in repr(m) and "entries=<1 entries>" in repr(m)
    assert str(m).startswith("1->2 MsgApp Term:4 Log:3/9")


def test_message_encoding_is_etcds() -> None:
    # Hand-derived from the raftpb schema: type 1, to 2, from 3, term 4,
    # logTerm 5, index 6, commit 8, reject 10, rejectHint 11, vote 13.
    m = Message(msg_type=MessageType.MSG_HEARTBEAT, to=2, from_=1, term=3, commit=4)
    assert m.encode() == bytes.fromhex("0808100218012003280030004004500058006800")


def test_unknown_enum_numbers_are_kept() -> None:
    m = Message(msg_type=99)
    d = Message.decode(m.encode())
    assert int(d.msg_type) == 99 and isinstance(d.msg_type, MessageType)
    assert str(d.msg_type) == "99"
    assert d.encode() == m.encode()


def test_conf_change_v1() -> None:
    cc = ConfChange(change_type=ConfChangeType.REMOVE_NODE, node_id=3, context=b"addr", id=7)
    assert cc.change_type is ConfChangeType.REMOVE_NODE
    assert (cc.node_id, cc.context, cc.id) == (3, b"addr", 7)
    cc.change_type, cc.node_id, cc.id = ConfChangeType.UPDATE_NODE, 4, 8
    cc.context = None
    assert ConfChange.decode(cc.encode()) == cc
    v2 = cc.as_v2()
    assert v2.transition is ConfChangeTransition.AUTO
    assert [(c.change_type, c.node_id) for c in v2.changes] == [(ConfChangeType.UPDATE_NODE, 4)]
    assert repr(cc) == "ConfChange(change_type=ConfChangeType.ConfChangeUpdateNode, node_id=4, context=None)"


def test_conf_change_v2() -> None:
    single = ConfChangeSingle(change_type=ConfChangeType.ADD_NODE, node_id=4)
    assert ConfChangeSingle.decode(single.encode()) == single
    single.change_type, single.node_id = ConfChangeType.ADD_LEARNER_NODE, 5
    assert "ConfChangeAddLearnerNode" in repr(single)
    cc = ConfChangeV2(
        changes=[single, ConfChangeSingle(node_id=6)],
        transition=ConfChangeTransition.JOINT_EXPLICIT,
        context=b"ctx",
    )
    assert cc.transition is ConfChangeTransition.JOINT_EXPLICIT and cc.context == b"ctx"
    assert cc.enter_joint() == (False, True)
    assert not cc.leave_joint() and ConfChangeV2().leave_joint()
    assert ConfChangeV2.decode(cc.encode()) == cc
    cc.transition = ConfChangeTransition.JOINT_IMPLICIT
    cc.changes = [ConfChangeSingle(node_id=1)]
    cc.context = None
    assert cc.enter_joint() == (True, True)
    assert ConfChangeV2(changes=[ConfChangeSingle(node_id=1)]).enter_joint() == (False, False)
    assert repr(cc).startswith("ConfChangeV2(changes=[ConfChangeSingle(")


def test_soft_state_and_read_state() -> None:
    ss = SoftState(leader_id=2, raft_state="Leader")
    assert ss.leader_id == 2 and ss.raft_state is StateRole.LEADER
    assert SoftState() == SoftState(leader_id=0, raft_state=StateRole.FOLLOWER)
    assert repr(ss) == "SoftState(leader_id=2, raft_state=Leader)"
    with pytest.raises(ValueError, match="expected one of"):
        SoftState(raft_state="Boss")
    with pytest.raises(TypeError):
        SoftState(raft_state=3)  # type: ignore[arg-type]
    rs = ReadState(index=5, request_ctx=b"r1")
    assert (rs.index, rs.request_ctx) == (5, b"r1")
    assert ReadState() == ReadState(index=0, request_ctx=b"")
    assert repr(rs) == "ReadState(index=5, request_ctx=b'r1')"
    with pytest.raises(AttributeError):
        ss.leader_id = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    "cls",
    [Message, Entry, ConfChange, ConfChangeV2, HardState, ConfState, Snapshot, ConfChangeSingle],
)
def test_decode_garbage_raises_decode_error(cls: type) -> None:
    for garbage in (b"\xff", b"\x08", b"\x0a\x05ab", b"\x0f", b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"):
        with pytest.raises(DecodeError) as info:
            cls.decode(garbage)
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, raftlet.RaftError)
        assert "decode error" in str(info.value)


def test_decode_accepts_bytes_like_and_rejects_str() -> None:
    data = HardState(term=1).encode()
    assert HardState.decode(bytearray(data)) == HardState.decode(memoryview(data))
    with pytest.raises(TypeError, match="expected bytes, got str"):
        HardState.decode("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bytes-like"):
        HardState.decode(12)  # type: ignore[arg-type]


def test_wrong_types_and_values() -> None:
    with pytest.raises(TypeError, match="expected an int, got str"):
        Entry(term="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-negative integer"):
        Entry(term=-1)
    with pytest.raises(ValueError, match="non-negative integer"):
        HardState(commit=2**64)
    with pytest.raises(ValueError, match="32-bit"):
        Entry(entry_type=2**40)
    with pytest.raises(TypeError, match="enum member or int"):
        Message(msg_type="MsgApp")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Entry objects, got int at position 1"):
        Message(entries=[Entry(), 5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="iterable of Entry"):
        Message(entries=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="node ids"):
        ConfState(voters="123")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ConfState(voters=[1, -2])
    with pytest.raises(TypeError):
        Snapshot(conf_state=[1, 2])  # type: ignore[arg-type]
    e = Entry()
    with pytest.raises(TypeError):
        e.data = "text"  # type: ignore[assignment]
    with pytest.raises(AttributeError):
        del e.term


def test_unhashable_mutable_types() -> None:
    with pytest.raises(TypeError):
        hash(Entry())
    assert Entry() != 5


def test_enums() -> None:
    assert MessageType.MSG_APP == 3 and MessageType.MsgApp is MessageType.MSG_APP
    assert str(MessageType.MSG_APP) == "MsgApp" and f"{MessageType.MSG_APP}" == "MsgApp"
    assert MessageType.MSG_FORGET_LEADER == 23 and len(MessageType) == 24
    assert [int(t) for t in EntryType] == [0, 1, 2]
    assert str(EntryType.CONF_CHANGE_V2) == "EntryConfChangeV2"
    assert str(ConfChangeType.ADD_LEARNER_NODE) == "ConfChangeAddLearnerNode"
    assert str(ConfChangeTransition.JOINT_EXPLICIT) == "ConfChangeTransitionJointExplicit"
    assert StateRole.LEADER == "Leader" and str(StateRole.PRE_CANDIDATE) == "StatePreCandidate"
    assert StateRole.LEADER.etcd_name == "StateLeader"
    assert raftlet.ReadOnlyOption.LEASE_BASED == "LeaseBased"
    unknown = MessageType(40)
    assert unknown == 40 and unknown.name is None and repr(unknown) == "<MessageType: 40>"
    with pytest.raises(ValueError):
        MessageType("MsgApp")
    assert MessageType.MSG_APP.etcd_name == "MsgApp"


ALL_ENUMS = [MessageType, EntryType, ConfChangeType, ConfChangeTransition, StateRole, raftlet.ReadOnlyOption]


@pytest.mark.parametrize("cls", ALL_ENUMS, ids=lambda c: c.__name__)
def test_every_enum_has_both_spellings_and_prints_etcds(cls: type) -> None:
    """The same rules for every enum: an UPPER_SNAKE member, etcd's name as
    an alias of it, and str()/format()/etcd_name giving etcd's name."""
    members = list(cls)  # canonical members only, aliases excluded
    assert members
    aliases = {name: m for name, m in cls.__members__.items() if not name.isupper()}
    assert sorted(m.name for m in aliases.values()) == sorted(m.name for m in members)
    for m in members:
        assert m.name.isupper(), m.name
        (etcd,) = [name for name, a in aliases.items() if a is m]
        assert getattr(cls, etcd) is m and getattr(cls, m.name) is m
        assert str(m) == f"{m}" == m.etcd_name == etcd
        assert f"{m:>20}" == etcd.rjust(20)


def test_str_enums_keep_their_values_and_accept_etcd_names() -> None:
    assert StateRole.StateLeader is StateRole.LEADER and StateRole.LEADER == "Leader"
    assert str(StateRole.LEADER) == "StateLeader" and str(StateRole.FOLLOWER) == "StateFollower"
    assert StateRole("Leader") is StateRole("StateLeader") is StateRole.LEADER
    with pytest.raises(ValueError):
        StateRole("LEADER")
    ro = raftlet.ReadOnlyOption
    assert ro.ReadOnlyLeaseBased is ro.LEASE_BASED and ro.LEASE_BASED == "LeaseBased"
    assert str(ro.SAFE) == "ReadOnlySafe" and ro("ReadOnlySafe") is ro.SAFE
    # The constructors take etcd's names too.
    assert SoftState(raft_state="StateLeader").raft_state is StateRole.LEADER
    assert raftlet.Config(1, read_only_option="ReadOnlyLeaseBased").read_only_option is ro.LEASE_BASED
    with pytest.raises(ValueError):
        SoftState(raft_state="Boss")
