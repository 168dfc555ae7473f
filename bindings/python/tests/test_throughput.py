"""100,000 proposals through a 3-node cluster driven from Python."""

from __future__ import annotations

import hashlib

from cluster import Cluster

TOTAL = 100_000
BATCH = 1_000


def test_hundred_thousand_proposals_apply_identically_everywhere() -> None:
    c = Cluster([1, 2, 3])
    c.elect(1)
    leader = c[1]
    for start in range(0, TOTAL, BATCH):
        for i in range(start, start + BATCH):
            leader.propose(b"%08d" % i)
        c.settle()
        # Keep memory flat: every host snapshots and compacts now and then,
        # as a real host would.
        if (start // BATCH) % 20 == 19:
            for h in c.hosts.values():
                h.storage.compact(h.applied_index)
    want = [b"%08d" % i for i in range(TOTAL)]
    digests = set()
    for h in c.hosts.values():
        assert len(h.applied) == TOTAL
        assert h.applied == want
        digests.add(hashlib.sha256(b"".join(h.applied)).hexdigest())
        assert h.node.applied == leader.commit
    assert len(digests) == 1
