"""An in-process cluster of raftlet nodes driven purely from Python.

Each host runs the Ready loop the way DESIGN §2 describes it: persist the
snapshot, entries and hard state to its MemoryStorage, send the messages
(raftpb-encoded and decoded on delivery, as a real transport would), apply
the committed entries (conf changes through ``apply_conf_change``) and
advance. The network can isolate nodes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Optional

import raftlet
from raftlet import (
    Config,
    ConfState,
    EntryType,
    MemoryStorage,
    Message,
    MessageType,
    RawNode,
    StateRole,
)


def encode_state(applied: list[bytes]) -> bytes:
    """The host's state machine as snapshot data."""
    return json.dumps([p.hex() for p in applied]).encode()


def decode_state(data: bytes) -> list[bytes]:
    """The inverse of ``encode_state``."""
    return [bytes.fromhex(p) for p in json.loads(data.decode())] if data else []


class Host:
    """One node: the library's RawNode plus the host's state machine."""

    def __init__(self, node_id: int, conf_state: Optional[ConfState], **config: Any) -> None:
        self.id = node_id
        self.storage = MemoryStorage(conf_state)
        self.node = RawNode(Config(node_id, **config), self.storage)
        self.applied: list[bytes] = []
        self.applied_index = 0
        self.conf_state = conf_state if conf_state is not None else ConfState()
        self.read_states: list[raftlet.ReadState] = []
        self.roles: list[str] = []
        self.events: list[raftlet.MembershipEvent] = []

    def handle_ready(self) -> list[Message]:
        """Runs one Ready cycle and returns the messages to send."""
        rd = self.node.ready()
        if rd.soft_state is not None:
            self.roles.append(str(rd.soft_state.raft_state))
        # 1. Persist.
        if rd.snapshot is not None:
            self.storage.apply_snapshot(rd.snapshot)
            self.applied = decode_state(rd.snapshot.data)
            self.applied_index = rd.snapshot.index
            self.conf_state = rd.snapshot.conf_state
        self.storage.append(rd.entries)
        if rd.hard_state is not None:
            self.storage.set_hard_state(rd.hard_state)
        # 2. Send (persisted messages after the write, which is done).
        out = rd.messages + rd.persisted_messages
        # 3. Apply.
        for e in rd.committed_entries:
            if e.entry_type == EntryType.NORMAL:
                if e.data:
                    self.applied.append(e.data)
            else:
                self.conf_state = self.node.apply_conf_change(e.conf_change())
            self.applied_index = e.index
        self.read_states.extend(rd.read_states)
        self.events.extend(rd.membership_events)
        # 4. Advance.
        self.node.advance(rd)
        return out

    def snapshot_and_compact(self) -> None:
        """Snapshots the state machine at the applied index and compacts the log."""
        self.storage.create_snapshot(
            self.applied_index, self.conf_state, encode_state(self.applied)
        )
        self.storage.compact(self.applied_index)


class Cluster:
    """Nodes in one process, a network that can isolate nodes, a clock."""

    def __init__(
        self,
        ids: Iterable[int],
        *,
        learners: Iterable[int] = (),
        wire: bool = True,
        **config: Any,
    ) -> None:
        ids = list(ids)
        learners = list(learners)
        self.config = config
        self.wire = wire
        self.hosts: dict[int, Host] = {}
        for i in ids + learners:
            cs = ConfState(voters=ids, learners=learners)
            self.hosts[i] = Host(i, cs, **config)
        self.isolated: set[int] = set()
        self.now = 0
        self.delivered = 0

    def __getitem__(self, node_id: int) -> RawNode:
        return self.hosts[node_id].node

    def start(self, node_id: int, conf_state: Optional[ConfState], **config: Any) -> Host:
        """Starts a new node (for example a learner that joins)."""
        cfg = dict(self.config)
        cfg.update(config)
        host = Host(node_id, conf_state, **cfg)
        self.hosts[node_id] = host
        return host

    def deliver(self, msgs: list[Message]) -> None:
        for m in msgs:
            if m.from_ in self.isolated or m.to in self.isolated:
                continue
            host = self.hosts.get(m.to)
            if host is None:
                continue
            if self.wire:
                m = Message.decode(m.encode())
            try:
                host.node.step(m)
            except raftlet.StepPeerNotFoundError:
                pass
            self.delivered += 1
            if m.msg_type == MessageType.MSG_SNAP:
                sender = self.hosts.get(m.from_)
                if sender is not None:
                    sender.node.report_snapshot(m.to, True)

    def settle(self, max_rounds: int = 10_000) -> None:
        """Runs Ready loops and delivers messages until nothing moves."""
        for _ in range(max_rounds):
            msgs: list[Message] = []
            for host in self.hosts.values():
                while host.node.has_ready():
                    msgs.extend(host.handle_ready())
            if not msgs:
                return
            self.deliver(msgs)
        raise AssertionError("the cluster did not settle")

    def tick(self, n: int = 1) -> None:
        for _ in range(n):
            self.now += 1
            for host in self.hosts.values():
                host.node.tick()
            self.settle()

    def leader(self) -> Optional[int]:
        """The leader among the nodes that are not isolated, if any."""
        for i, host in self.hosts.items():
            if i not in self.isolated and host.node.raft_state == StateRole.LEADER:
                return i
        return None

    def wait_for_leader(self, max_ticks: int = 200) -> int:
        for _ in range(max_ticks):
            lead = self.leader()
            if lead is not None:
                return lead
            self.tick()
        lead = self.leader()
        assert lead is not None, "no leader elected"
        return lead

    def elect(self, node_id: int) -> None:
        """Makes ``node_id`` campaign and settles."""
        self.hosts[node_id].node.campaign()
        self.settle()
        assert self.hosts[node_id].node.raft_state == "Leader"

    def propose(self, node_id: int, data: bytes) -> None:
        self.hosts[node_id].node.propose(data)
        self.settle()

    def isolate(self, node_id: int) -> None:
        self.isolated.add(node_id)

    def heal(self) -> None:
        self.isolated.clear()
