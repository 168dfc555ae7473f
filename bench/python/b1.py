"""B2 (Python): B1 driven from Python through raftlet's package, and the
same workload on PySyncObj (3 in-process nodes) for comparison.

raftlet: three RawNodes over MemoryStorage in one process; each round the
leader gets 256 ``propose`` calls (B1) or one ``propose_batch`` of 256
(B1batch) of SIZE bytes, then Ready loops run on all nodes until the round
is applied everywhere; messages travel as raftpb bytes (``encode`` /
``Message.decode``), as in every harness.

PySyncObj: three SyncObj nodes in one process (autoTick off, ticked by this
loop), talking over TCP on 127.0.0.1 as it always does; each round the
leader gets 256 calls of a @replicated method with a SIZE-byte argument,
then the nodes are ticked until the round is applied everywhere.

Prints one JSON line per run. Figures come from process CPU time
(``time.process_time``), wall time alongside.

Usage: python b1.py raftlet|raftlet-batch|pysyncobj [total] [size]
"""

from __future__ import annotations

import json
import sys
import time


def peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_raftlet(total: int, size: int, batch: bool) -> dict[str, float]:
    from raftlet import Config, ConfState, EntryType, MemoryStorage, Message, RawNode, StateRole

    ids = [1, 2, 3]
    storages = {i: MemoryStorage(ConfState(voters=ids)) for i in ids}
    nodes = {i: RawNode(Config(i), storages[i]) for i in ids}
    applied = {i: 0 for i in ids}
    applied_index = {i: 0 for i in ids}
    msgs = 0

    def pump() -> None:
        nonlocal msgs
        while True:
            out: list[tuple[int, bytes]] = []
            worked = False
            for i in ids:
                node = nodes[i]
                if not node.has_ready():
                    continue
                worked = True
                rd = node.ready()
                st = storages[i]
                if rd.snapshot is not None:
                    st.apply_snapshot(rd.snapshot)
                st.append(rd.entries)
                if rd.hard_state is not None:
                    st.set_hard_state(rd.hard_state)
                for m in rd.messages:
                    out.append((m.to, m.encode()))
                for m in rd.persisted_messages:
                    out.append((m.to, m.encode()))
                for e in rd.committed_entries:
                    if e.entry_type == EntryType.NORMAL and e.data:
                        applied[i] += 1
                    applied_index[i] = e.index
                node.advance(rd)
            if not out:
                if not worked:
                    return
                continue
            msgs += len(out)
            for to, wire in out:
                nodes[to].step(Message.decode(wire))

    nodes[1].campaign()
    pump()
    assert nodes[1].raft_state == StateRole.LEADER, "node 1 did not win its election"
    payload = b"\x5a" * size
    rounds = total // 256
    every = min(100_000, (256 << 20) // size)
    nxt = every
    m0 = msgs
    c0, w0 = time.process_time(), time.perf_counter()
    leader = nodes[1]
    for r in range(rounds):
        if batch:
            leader.propose_batch([payload] * 256)
        else:
            for _ in range(256):
                leader.propose(payload)
        pump()
        if (r + 1) * 256 >= nxt:
            for i in ids:
                storages[i].compact(applied_index[i])
            nxt += every
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    n = rounds * 256
    for i in ids:
        assert applied[i] == n, f"node {i} applied {applied[i]} of {n}"
    return {
        "entries_per_s": n / cpu,
        "entries_per_s_wall": n / wall,
        "mb_per_s": n * size / cpu / 1e6,
        "msgs_per_entry": (msgs - m0) / n,
        "peak_rss_mib": peak_rss_mib(),
        "cpu_secs": cpu,
        "wall_secs": wall,
    }


def run_pysyncobj(total: int, size: int) -> dict[str, float]:
    import socket

    from pysyncobj import SyncObj, SyncObjConf, replicated

    class Sink(SyncObj):  # type: ignore[misc]
        def __init__(self, addr: str, partners: list[str], conf: SyncObjConf) -> None:
            super().__init__(addr, partners, conf)
            self.applied = 0

        @replicated  # type: ignore[misc]
        def put(self, data: bytes) -> None:
            self.applied += 1

    def free_port() -> int:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        return int(port)

    addrs = [f"127.0.0.1:{free_port()}" for _ in range(3)]
    conf = SyncObjConf(autoTick=False, appendEntriesUseBatch=True)
    nodes = [Sink(a, [b for b in addrs if b != a], conf) for a in addrs]

    def tick_all() -> None:
        for n in nodes:
            n.doTick(0.0)

    deadline = time.time() + 30
    leader = None
    while leader is None:
        if time.time() > deadline:
            raise RuntimeError("PySyncObj elected no leader in 30 s")
        tick_all()
        for n in nodes:
            if n._isLeader():
                leader = n
    # Let the followers learn the leader (and the leader commit its term).
    warm = time.time() + 1.0
    while time.time() < warm:
        tick_all()
    payload = b"\x5a" * size
    rounds = total // 256
    c0, w0 = time.process_time(), time.perf_counter()
    target = 0
    for _ in range(rounds):
        for _ in range(256):
            leader.put(payload)
        target += 256
        spins = 0
        while min(n.applied for n in nodes) < target:
            tick_all()
            spins += 1
            if spins > 1_000_000:
                raise RuntimeError("PySyncObj did not apply the round")
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    n = rounds * 256
    for node in nodes:
        node.destroy()
    return {
        "entries_per_s": n / cpu,
        "entries_per_s_wall": n / wall,
        "mb_per_s": n * size / cpu / 1e6,
        "peak_rss_mib": peak_rss_mib(),
        "cpu_secs": cpu,
        "wall_secs": wall,
    }


def main() -> None:
    which = sys.argv[1]
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    if which == "raftlet":
        metrics = run_raftlet(total, size, batch=False)
        impl, workload = "raftlet-py", "b1"
    elif which == "raftlet-batch":
        metrics = run_raftlet(total, size, batch=True)
        impl, workload = "raftlet-py", "b1batch"
    elif which == "pysyncobj":
        metrics = run_pysyncobj(total, size)
        impl, workload = "pysyncobj", "b1"
    else:
        raise SystemExit(f"unknown implementation {which}")
    print(
        json.dumps(
            {
                "workload": workload,
                "impl": impl,
                "params": {"total": str(total), "size": str(size)},
                "metrics": {k: round(v, 4) for k, v in metrics.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
