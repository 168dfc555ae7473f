"""The seed story, driven from Python.

Three voters elect a leader and replicate; a learner joins, and its
promotion is refused while it lags (PromotionNotReadyError); it catches up
and is promoted; the leader is then isolated and steps down (check-quorum),
the others elect a new leader, and the old leader rejoins without
disrupting it (pre-vote).

Every node is a raftlet RawNode over a MemoryStorage; this script is the
host: it runs each node's Ready loop, carries messages between nodes as
raftpb bytes, and keeps the clock. It prints a timeline and exits non-zero
if any step does not happen as described.

Run it with the package installed: ``python examples/python/story.py``.
"""

from __future__ import annotations

import sys
from typing import Optional

import raftlet
from raftlet import (
    Config,
    ConfChange,
    ConfChangeType,
    ConfState,
    EntryType,
    MemoryStorage,
    Message,
    RawNode,
    StateRole,
)


class StoryError(Exception):
    """A step of the story did not happen as described."""


def check(ok: bool, what: str) -> None:
    if not ok:
        raise StoryError(what)


class Host:
    """One node: the library's RawNode plus the host's state machine."""

    def __init__(self, node_id: int, conf_state: ConfState) -> None:
        self.id = node_id
        # The storage starts with the configuration the node joins with.
        self.storage = MemoryStorage(conf_state)
        self.node = RawNode(Config(node_id, promote_max_lag=5), self.storage)
        self.applied: list[str] = []


class Cluster:
    def __init__(self, voters: list[int]) -> None:
        self.hosts = {i: Host(i, ConfState(voters=voters)) for i in voters}
        self.isolated: set[int] = set()
        self.now = 0

    def log(self, text: str) -> None:
        print(f"[tick {self.now:>3}] {text}")

    def node(self, node_id: int) -> RawNode:
        return self.hosts[node_id].node

    def handle_ready(self, host: Host) -> list[Message]:
        rd = host.node.ready()
        if rd.soft_state is not None:
            lead = rd.soft_state.leader_id or "nobody"
            self.log(f"node {host.id}: now {rd.soft_state.raft_state}, leader {lead}")
        # 1. Persist the snapshot, the entries and the hard state.
        if rd.snapshot is not None:
            host.storage.apply_snapshot(rd.snapshot)
        host.storage.append(rd.entries)
        if rd.hard_state is not None:
            host.storage.set_hard_state(rd.hard_state)
        # 2. Send: messages at once, persisted_messages after the write.
        out = rd.messages + rd.persisted_messages
        # 3. Apply the committed entries; conf changes go to the node.
        for entry in rd.committed_entries:
            if entry.entry_type == EntryType.NORMAL:
                if entry.data:
                    host.applied.append(entry.data.decode())
            else:
                cs = host.node.apply_conf_change(entry.conf_change())
                if host.id == self.leader():
                    self.log(f"configuration now voters={cs.voters} learners={cs.learners}")
        # 4. Advance.
        host.node.advance(rd)
        return out

    def settle(self) -> None:
        """Runs the Ready loops until no message is in flight."""
        while True:
            mailbox: list[Message] = []
            for host in list(self.hosts.values()):
                while host.node.has_ready():
                    mailbox.extend(self.handle_ready(host))
            if not mailbox:
                return
            for m in mailbox:
                if m.from_ in self.isolated or m.to in self.isolated or m.to not in self.hosts:
                    continue
                # What a transport does: raftpb bytes on the wire.
                wire = m.encode()
                try:
                    self.hosts[m.to].node.step(Message.decode(wire))
                except raftlet.StepPeerNotFoundError:
                    pass

    def tick(self, n: int = 1) -> None:
        for _ in range(n):
            self.now += 1
            for host in self.hosts.values():
                host.node.tick()
            self.settle()

    def leader(self) -> Optional[int]:
        for i, host in self.hosts.items():
            if i not in self.isolated and host.node.raft_state == StateRole.LEADER:
                return i
        return None

    def wait_for_leader(self, max_ticks: int = 100) -> int:
        for _ in range(max_ticks):
            lead = self.leader()
            if lead is not None:
                return lead
            self.tick()
        raise StoryError(f"no leader after {max_ticks} ticks")

    def propose(self, leader: int, values: list[str]) -> None:
        for v in values:
            self.node(leader).propose(v.encode())
        self.settle()


def run() -> None:
    c = Cluster([1, 2, 3])
    c.log("three voters start as followers; the first election timeout elects a leader")
    leader = c.wait_for_leader()
    term = c.node(leader).term
    c.log(f"node {leader} leads in term {term}")

    c.propose(leader, [f"x={i}" for i in range(10)])
    check(all(len(h.applied) == 10 for h in c.hosts.values()), "all voters applied 10 entries")
    c.log("10 entries replicated and applied on every voter")

    # A learner joins: the leader adds it, then the host starts node 4 with
    # a storage that already lists the current voters and itself as learner.
    c.node(leader).propose_conf_change(ConfChange(change_type=ConfChangeType.ADD_LEARNER_NODE, node_id=4))
    c.settle()
    c.hosts[4] = Host(4, ConfState(voters=[1, 2, 3], learners=[4]))
    c.log("node 4 starts as a learner with an empty log")

    # It has received nothing yet: promoting it now would add a voter that
    # cannot help commit. The leader refuses.
    try:
        c.node(leader).propose_conf_change(ConfChange(change_type=ConfChangeType.ADD_NODE, node_id=4))
    except raftlet.PromotionNotReadyError as e:
        c.log(f"promotion of node 4 refused: lag {e.lag}, recently active {e.recent_active}")
    else:
        raise StoryError("the promotion of a lagging learner was accepted")

    # Heartbeats reach the learner; the leader finds its log and catches it up.
    for _ in range(20):
        c.tick()
        if c.hosts[4].applied == c.hosts[leader].applied:
            break
    check(c.hosts[4].applied == c.hosts[leader].applied, "the learner caught up")
    progress = c.node(leader).status().progress[4]
    c.log(f"learner 4 caught up: match {progress.matched}, {len(c.hosts[4].applied)} entries applied")

    c.node(leader).propose_conf_change(ConfChange(change_type=ConfChangeType.ADD_NODE, node_id=4))
    c.settle()
    status = c.node(leader).status()
    check(status.voters == [1, 2, 3, 4] and status.learners == [], "node 4 is a voter")
    c.log("node 4 promoted: four voters")

    c.propose(leader, ["y=1"])

    # The leader is cut off. Check-quorum makes it step down; the others
    # (three of four, a quorum) elect a new leader in a higher term.
    old = leader
    c.isolated.add(old)
    c.log(f"node {old} is isolated from the others")
    for _ in range(50):
        c.tick()
        if c.node(old).raft_state != StateRole.LEADER and c.leader() is not None:
            break
    check(c.node(old).raft_state != StateRole.LEADER, "the isolated leader stepped down")
    c.log(f"node {old} stepped down: it no longer hears from a quorum")
    new = c.wait_for_leader()
    new_term = c.node(new).term
    check(new != old and new_term > term, "a new leader in a higher term")
    c.log(f"node {new} leads in term {new_term}")
    c.propose(new, ["z=1"])

    # The old leader comes back: pre-vote kept its term from running away,
    # so it rejoins as a follower and the new leader is undisturbed.
    c.isolated.clear()
    c.log(f"node {old} rejoins")
    c.tick(10)
    check(c.leader() == new and c.node(new).term == new_term, "the new leader was not disrupted")
    check(c.node(old).raft_state == StateRole.FOLLOWER, "the old leader follows")
    check(
        all(h.applied == c.hosts[new].applied for h in c.hosts.values()),
        "every node applied the same entries",
    )
    c.log(f"node {old} follows node {new}; all four nodes applied {len(c.hosts[new].applied)} entries")


def main() -> int:
    try:
        run()
    except (StoryError, raftlet.RaftError) as e:
        print(f"story failed: {e}", file=sys.stderr)
        return 1
    print("story complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
