"""Nodes shared between threads: calls are serialized, nothing crashes."""

from __future__ import annotations

import threading

from cluster import Cluster

from raftlet import Message, MessageType


def test_concurrent_calls_on_one_node() -> None:
    c = Cluster([1, 2, 3])
    c.elect(1)
    node = c[1]
    errors: list[BaseException] = []
    lock = threading.Lock()

    def proposer() -> None:
        try:
            for i in range(300):
                node.propose(b"t%d" % i)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    def stepper() -> None:
        try:
            for _ in range(300):
                node.step(Message(msg_type=MessageType.MSG_HEARTBEAT_RESP, from_=2, to=1, term=node.term))
                node.status()
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    def driver() -> None:
        try:
            for _ in range(300):
                with lock:
                    c.settle()
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=f) for f in (proposer, proposer, stepper, driver)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    c.settle()
    applied = c.hosts[1].applied
    assert len(applied) == 600
    assert all(h.applied == applied for h in c.hosts.values())
