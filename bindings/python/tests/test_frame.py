"""Frames (raftlet.frame): the Rust core's and the Go package's format, a
refusal of everything that is not a frame, and groups that commit over
frames."""

from __future__ import annotations

import doctest
import pathlib
import random

import pytest

import raftlet
import raftlet.frame
from raftlet import ConfState, Config, EntryType, MemoryStorage, Message, MessageType, RawNode, StateRole
from raftlet.frame import FrameBuilder, decode_frame

VECTOR = pathlib.Path(__file__).resolve().parents[3] / "raft-core" / "testdata" / "frame-v1.hex"


def vector_builder() -> FrameBuilder:
    # The frame raft-core/src/multi/frame.rs's vector_frame builds.
    b = FrameBuilder(7)
    b.push(1, Message(msg_type=MessageType.MSG_HEARTBEAT, from_=7, to=3, term=5, commit=12))
    b.push(
        42,
        Message(
            msg_type=MessageType.MSG_APP,
            from_=7,
            to=3,
            term=5,
            log_term=5,
            index=6,
            commit=6,
            entries=[raftlet.Entry(term=5, index=7, data=b"frame")],
        ),
    )
    b.push(1 << 40, Message(msg_type=MessageType.MSG_VOTE, from_=7, to=4, term=9, log_term=5, index=7))
    return b


def test_the_shared_vector_is_this_encoding() -> None:
    want = bytes.fromhex(VECTOR.read_text().strip())
    assert vector_builder().finish() == want
    sender, items = decode_frame(want)
    assert sender == 7
    assert [g for g, _ in items] == [1, 42, 1 << 40]
    assert Message.decode(items[1][1]).entries[0].data == b"frame"


def test_the_module_example_runs() -> None:
    failed, tried = doctest.testmod(raftlet.frame)
    assert tried > 0 and failed == 0


def test_an_empty_frame_is_a_heartbeat() -> None:
    b = FrameBuilder(9)
    assert len(b) == 0
    assert decode_frame(b.finish()) == (9, [])


def test_what_is_not_a_frame_is_refused() -> None:
    good = vector_builder().finish()
    for n in range(len(good)):
        with pytest.raises(raftlet.DecodeError):
            decode_frame(good[:n])
    with pytest.raises(raftlet.DecodeError):
        decode_frame(good + b"\0")
    for at, value in [(0, ord("X")), (3, 2), (12, 2), (12, 4), (raftlet.frame.HEADER_LEN + 8, 0xFF)]:
        bad = bytearray(good)
        bad[at] = value
        with pytest.raises(raftlet.DecodeError):
            decode_frame(bytes(bad))
    rng = random.Random(5)
    for _ in range(2000):
        junk = bytearray(good)
        for _ in range(rng.randrange(1, 4)):
            junk[rng.randrange(len(junk))] = rng.randrange(256)
        try:
            sender, items = decode_frame(bytes(junk))
        except raftlet.DecodeError:
            continue
        re = FrameBuilder(sender)
        for g, m in items:
            re.push(g, m)
        assert re.finish() == bytes(junk)
    with pytest.raises(ValueError):
        FrameBuilder(-1)
    with pytest.raises(ValueError):
        FrameBuilder(1).push(1 << 64, b"")


def test_groups_commit_over_frames() -> None:
    nodes, groups = (1, 2, 3), (1, 2, 3, 4)
    hosts = {
        n: {g: (RawNode(Config(n), s), s) for g in groups for s in [MemoryStorage(ConfState(voters=list(nodes)))]}
        for n in nodes
    }
    applied: dict[tuple[int, int], list[bytes]] = {(n, g): [] for n in nodes for g in groups}
    frames = messages = 0

    def settle() -> None:
        nonlocal frames, messages
        for _ in range(1000):
            moved = False
            for n in nodes:
                out: dict[int, FrameBuilder] = {}
                for g in groups:
                    node, storage = hosts[n][g]
                    if not node.has_ready():
                        continue
                    rd = node.ready()
                    storage.append(rd.entries)
                    if rd.hard_state is not None:
                        storage.set_hard_state(rd.hard_state)
                    for m in rd.all_messages():
                        out.setdefault(m.to, FrameBuilder(n)).push(g, m)
                    for e in rd.committed_entries:
                        if e.entry_type == EntryType.NORMAL and e.data:
                            applied[(n, g)].append(e.data)
                    node.advance(rd)
                for to, b in out.items():
                    sender, items = decode_frame(b.finish())
                    assert sender == n
                    frames += 1
                    messages += len(items)
                    for g, data in items:
                        hosts[to][g][0].step(Message.decode(data))
                    moved = True
            if not moved:
                return
        raise AssertionError("the groups did not settle")

    for g in groups:
        hosts[(g - 1) % 3 + 1][g][0].campaign()
    settle()
    for g in groups:
        lead = hosts[(g - 1) % 3 + 1][g][0]
        assert lead.basic_status().raft_state == StateRole.LEADER
        for i in range(3):
            lead.propose(f"g{g}-{i}".encode())
    settle()
    for n in nodes:
        for g in groups:
            assert applied[(n, g)] == [f"g{g}-{i}".encode() for i in range(3)]
    assert messages > frames > 0
