"""DiskStorage: a durable storage usable wherever a MemoryStorage is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from raftlet import (
    CompactedError,
    ConfChangeRefusedError,
    Config,
    ConfState,
    DiskStorage,
    Entry,
    EntryType,
    HardState,
    RawNode,
    Snapshot,
    SnapshotOutOfDateError,
    StorageError,
    UnavailableError,
)


def run(storage: DiskStorage, *proposals: bytes) -> list[bytes]:
    """Drives a single-voter node over ``storage``; returns what it applied."""
    node = RawNode(Config(id=1), storage)
    applied: list[bytes] = []

    def drain() -> None:
        while node.has_ready():
            rd = node.ready()
            storage.persist_ready(rd)
            applied.extend(
                e.data for e in rd.committed_entries if e.entry_type == EntryType.NORMAL and e.data
            )
            node.advance(rd)

    drain()
    if proposals:
        node.campaign()
        drain()
        for p in proposals:
            node.propose(p)
        drain()
    node.close()
    return applied


def test_a_node_restarts_with_its_log(tmp_path: Path) -> None:
    with DiskStorage(tmp_path) as s:
        s.set_conf_state(ConfState(voters=[1]))
        assert run(s, b"x=1", b"y=2") == [b"x=1", b"y=2"]
        hs = s.hard_state()
    assert s.closed
    with DiskStorage(str(tmp_path)) as s:
        assert s.hard_state() == hs
        assert s.conf_state() == ConfState(voters=[1])
        assert s.last_index() == 3
        # The node gets the committed entries back and applies them again.
        assert run(s) == [b"x=1", b"y=2"]


def test_the_directory_is_locked_while_open(tmp_path: Path) -> None:
    s = DiskStorage(tmp_path)
    with pytest.raises(StorageError, match="locked"):
        DiskStorage(tmp_path)
    g2 = s.open_group(2)
    assert g2.group == 2 and os.fspath(g2.path) == os.fspath(tmp_path)
    s.close()
    with pytest.raises(StorageError, match="locked"):
        DiskStorage(tmp_path)  # group 2 still holds the store
    g2.close()
    DiskStorage(tmp_path).close()


def test_methods_mirror_memory_storage(tmp_path: Path) -> None:
    with DiskStorage(tmp_path, group=7) as s:
        assert "DiskStorage(" in repr(s) and "group=7" in repr(s)
        s.append([Entry(term=1, index=i, data=b"e%d" % i) for i in range(1, 6)])
        assert [e.data for e in s.entries(2, 4)] == [b"e2", b"e3"]
        assert s.term(5) == 1
        with pytest.raises(UnavailableError):
            s.append([Entry(term=1, index=9, data=b"gap")])
        s.set_hard_state(HardState(term=1, vote=1, commit=5))
        snap = s.create_snapshot(4, ConfState(voters=[1, 2]), b"state")
        assert snap.index == 4
        s.compact(4)
        assert s.first_index() == 5
        with pytest.raises(CompactedError):
            s.entries(3, 5)
        with pytest.raises(SnapshotOutOfDateError):
            s.apply_snapshot(snap)
        assert s.snapshot().data == b"state"
        s.apply_snapshot(Snapshot(data=b"newer", index=10, term=2, conf_state=ConfState(voters=[1])))
        assert (s.first_index(), s.last_index()) == (11, 10)
    with pytest.raises(ValueError, match="closed"):
        s.last_index()
    with DiskStorage(tmp_path, group=7) as s:
        assert s.snapshot().data == b"newer"
        assert s.hard_state().commit == 5


def test_invalid_configurations_are_refused_and_nothing_is_written(tmp_path: Path) -> None:
    with DiskStorage(tmp_path) as s:
        s.set_conf_state(ConfState(voters=[1, 2]))
        s.append([Entry(term=1, index=i) for i in range(1, 4)])
        for bad in (ConfState(voters=[1, 1]), ConfState(voters=[0]), ConfState(voters=[1], learners=[1])):
            with pytest.raises(ConfChangeRefusedError):
                s.set_conf_state(bad)
            with pytest.raises(ConfChangeRefusedError):
                s.apply_snapshot(Snapshot(index=9, term=1, conf_state=bad))
            with pytest.raises(ConfChangeRefusedError):
                s.create_snapshot(2, bad)
        assert s.conf_state().voters == [1, 2]
        assert (s.first_index(), s.last_index()) == (1, 3)
        assert s.snapshot().index == 0
    with DiskStorage(tmp_path) as s:
        assert s.conf_state().voters == [1, 2]
        assert s.snapshot().index == 0


def test_raw_node_refuses_other_storages() -> None:
    with pytest.raises(TypeError, match="MemoryStorage or DiskStorage"):
        RawNode(Config(id=1), object())  # type: ignore[arg-type]


def test_persist_readies_writes_many_groups_with_one_call(tmp_path: Path) -> None:
    """One loop drives three single-voter groups of one store: each round
    persists every node's Ready with one ``persist_readies``, then
    advances each. After a restart every group has its log back."""
    first = DiskStorage(tmp_path)
    storages = [first, first.open_group(2), first.open_group(3)]
    nodes = []
    for s in storages:
        s.set_conf_state(ConfState(voters=[1]))
        nodes.append(RawNode(Config(id=1), s))
    applied: list[list[bytes]] = [[] for _ in nodes]

    def round_() -> None:
        pairs = [(s, n.ready()) for s, n in zip(storages, nodes) if n.has_ready()]
        DiskStorage.persist_readies(pairs)
        for s, rd in pairs:
            i = s.group - 1
            applied[i].extend(
                e.data for e in rd.committed_entries if e.entry_type == EntryType.NORMAL and e.data
            )
            nodes[i].advance(rd)

    for n in nodes:
        n.campaign()
    for _ in range(4):
        round_()
    for i, n in enumerate(nodes):
        n.propose(f"g{i + 1}".encode())
    for _ in range(4):
        round_()
    assert applied == [[b"g1"], [b"g2"], [b"g3"]]

    # Groups of another store are refused, and nothing is written.
    other_dir = tmp_path / "other"
    with DiskStorage(other_dir) as other:
        nodes[0].propose(b"more")
        rd = nodes[0].ready()
        last = storages[0].last_index()
        with pytest.raises(ValueError, match="different stores"):
            DiskStorage.persist_readies([(storages[0], rd), (other, rd)])
        assert storages[0].last_index() == last
        DiskStorage.persist_readies([(storages[0], rd)])
        assert storages[0].last_index() == last + 1
        nodes[0].advance(rd)
    DiskStorage.persist_readies([])

    for n in nodes:
        n.close()
    for s in storages:
        s.close()
    for g in (1, 2, 3):
        with DiskStorage(tmp_path, group=g) as s:
            assert run(s)[:1] == [f"g{g}".encode()]


def test_options_tune_the_store(tmp_path: Path) -> None:
    """4 KiB segments, every record written direct: the log moves past its
    first segment, and the store opens again with the defaults."""
    with pytest.raises(ValueError, match="segment_size"):
        DiskStorage(tmp_path, segment_size=0)
    props = [b"%03d-" % i + b"p" * 300 for i in range(40)]
    with DiskStorage(
        tmp_path, segment_size=4096, rewrite_max_bytes=0, direct_min_bytes=0, read_cache_bytes=0
    ) as s:
        s.set_conf_state(ConfState(voters=[1]))
        assert run(s, *props) == props
    assert (tmp_path / "0000000000000002.log").exists()
    with DiskStorage(tmp_path) as s:
        assert run(s) == props
