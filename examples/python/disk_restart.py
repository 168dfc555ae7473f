"""A node whose log is on disk: it commits two entries, everything is
closed (as when the process stops), and the reopened storage gives the
node its log back. Exits non-zero if it does not."""

import sys
import tempfile

import raftlet


def run(storage: raftlet.DiskStorage, *proposals: bytes) -> list[bytes]:
    """Runs a single-voter node over storage; returns what it applied."""
    node = raftlet.RawNode(raftlet.Config(id=1), storage)
    applied: list[bytes] = []

    def drain() -> None:
        while node.has_ready():
            rd = node.ready()
            storage.persist_ready(rd)  # durable before advance
            applied.extend(e.data for e in rd.committed_entries if e.data)
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


with tempfile.TemporaryDirectory() as d:
    with raftlet.DiskStorage(d) as s:
        s.set_conf_state(raftlet.ConfState(voters=[1]))
        before = run(s, b"x=1", b"y=2")
    with raftlet.DiskStorage(d) as s:  # restart
        after = run(s)
print("first run:", before, "after restart:", after)
sys.exit(0 if before == after == [b"x=1", b"y=2"] else 1)
