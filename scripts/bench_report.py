#!/usr/bin/env python3
"""Turns the benchmark results (build/bench/results.jsonl, written by
scripts/bench.sh) into docs/bench.md and docs/bench.svg.

Also, with --go2json ROUND, turns `go test -bench` output (stdin) into the
same JSON lines (stdout).

Every row quotes the median over the rounds with the range [min-max]; the
ratio column says how many times better raftlet is than the peer
(peer/raftlet for costs, raftlet/peer for rates), so > 1 favours raftlet.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from typing import Any, Optional

# ------------------------------------------------------------- go2json

GO_UNITS = {
    "entries/s": "entries_per_s",
    "MB/s": "mb_per_s",
    "msgs/entry": "msgs_per_entry",
    "peak-RSS-MiB": "peak_rss_mib",
    "cpu-ns/op": "ns_per_op",
    "heap-B/group": "heap_bytes_per_group",
    "rss-B/group": "rss_bytes_per_group",
    "cpu-ns/group-tick": "ns_per_group_tick_has_ready",
    "reads/s": "reads_per_s",
    "msgs/read": "msgs_per_read",
    "allocs/read": "allocs_per_read",
    "ns/op": "go_ns_per_op",
    "B/op": "go_bytes_per_op",
    "allocs/op": "go_allocs_per_op",
}


def go2json(round_: int) -> None:
    for line in sys.stdin:
        if not line.startswith("Benchmark"):
            continue
        fields = line.split()
        name = re.sub(r"-\d+$", "", fields[0])
        parts = name.split("/")
        top = parts[0][len("Benchmark"):].lower()
        params: dict[str, str] = {}
        workload = top
        for p in parts[1:]:
            if "=" in p:
                k, v = p.split("=", 1)
                params[k] = v
            else:
                workload = p.lower()
        impl = params.pop("impl", "?")
        metrics: dict[str, float] = {}
        vals = fields[2:]
        for i in range(0, len(vals) - 1, 2):
            unit = vals[i + 1]
            key = GO_UNITS.get(unit, unit.replace("/", "_per_"))
            if unit == "allocs/entry":
                key = "allocs_per_op" if top == "b3" else "allocs_per_entry"
            metrics[key] = float(vals[i])
        if top == "b1" and "go_ns_per_op" in metrics:
            metrics["entries_per_s_wall"] = 256e9 / metrics["go_ns_per_op"]
        if top == "b3" and "go_ns_per_op" in metrics:
            metrics["ns_per_op_wall"] = metrics["go_ns_per_op"]
        print(json.dumps({"round": round_, "workload": workload, "impl": impl,
                          "params": params, "metrics": metrics}))


# ------------------------------------------------------------ loading

def key_of(rec: dict[str, Any]) -> tuple[str, str]:
    """(row key, implementation) of one run."""
    wl, p, impl = rec["workload"], rec.get("params", {}), rec["impl"]
    if wl == "b1" and p.get("one") == "1":
        wl = "b1batch"
    if wl in ("b1", "b1batch"):
        return f"{wl}/{p.get('size', '128')}", impl
    if wl == "b5":
        return f"b5/{p.get('per', '1')}", impl
    if wl == "c1":
        return f"c1/{'zerocopy' if p.get('zerocopy') == '1' else 'reuse'}", impl
    return wl, impl


Stats = tuple[float, float, float, int]  # median, min, max, n


def load(path: str) -> dict[tuple[str, str, str], Stats]:
    vals: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            rec = json.loads(line)
            row, impl = key_of(rec)
            for m, v in rec["metrics"].items():
                if v is not None:
                    vals[(row, impl, m)].append(float(v))
    return {k: (statistics.median(v), min(v), max(v), len(v)) for k, v in vals.items()}


# ------------------------------------------------------------ formatting

def fmt_num(v: float) -> str:
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.2f}M"
    if a >= 1e4:
        return f"{v / 1e3:.0f}k"
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def cell(s: Optional[Stats]) -> str:
    if s is None:
        return "—"
    med, lo, hi, n = s
    if n > 1 and hi > lo:
        return f"{fmt_num(med)} <sub>[{fmt_num(lo)}–{fmt_num(hi)}]</sub>"
    return fmt_num(med)


def ratio(r: Optional[Stats], p: Optional[Stats], higher_better: bool) -> Optional[float]:
    if r is None or p is None or r[0] == 0 or p[0] == 0:
        if r is not None and p is not None and r[0] == 0 and p[0] > 0 and not higher_better:
            return float("inf")
        return None
    return r[0] / p[0] if higher_better else p[0] / r[0]


def fmt_ratio(x: Optional[float]) -> str:
    if x is None:
        return "—"
    if x == float("inf"):
        return "∞ (0 vs >0)"
    return f"**{x:.2f}×**" if x >= 1 else f"{x:.2f}×"


# Rows of the main table: (label, row key, metric, higher is better,
# raftlet impl, [(peer column, peer impl, peer row key or None)]).
PEERS = [("raft-rs", "raft-rs"), ("etcd raft", "etcd")]

MAIN_ROWS: list[tuple[str, str, str, bool]] = [
    ("B1 128 B, entries/s", "b1/128", "entries_per_s", True),
    ("B1 128 B, MB/s", "b1/128", "mb_per_s", True),
    ("B1 128 B, allocations/entry", "b1/128", "allocs_per_entry", False),
    ("B1 128 B, messages/entry", "b1/128", "msgs_per_entry", False),
    ("B1 128 B, peak RSS MiB", "b1/128", "peak_rss_mib", False),
    ("B1 1 KiB, entries/s", "b1/1024", "entries_per_s", True),
    ("B1 16 KiB, entries/s", "b1/16384", "entries_per_s", True),
    ("B1 16 KiB, MB/s", "b1/16384", "mb_per_s", True),
    ("B1batch 128 B, entries/s", "b1batch/128", "entries_per_s", True),
    ("B1batch 128 B, allocations/entry", "b1batch/128", "allocs_per_entry", False),
    ("B1batch 1 KiB, entries/s", "b1batch/1024", "entries_per_s", True),
    ("B1batch 16 KiB, entries/s", "b1batch/16384", "entries_per_s", True),
    ("B3 single voter, ns/op", "b3", "ns_per_op", False),
    ("B3 single voter, allocations/op", "b3", "allocs_per_op", False),
    ("B4 10k idle groups, heap bytes/group", "b4", "heap_bytes_per_group", False),
    ("B4 ns/group, sweep of tick + has_ready", "b4", "ns_per_group_tick_has_ready", False),
    ("B4 ns/group, sweep of tick alone", "b4", "ns_per_group_tick", False),
    ("B5 ReadIndex, 1 read/round, reads/s", "b5/1", "reads_per_s", True),
    ("B5 ReadIndex, 64 reads/round, reads/s", "b5/64", "reads_per_s", True),
    ("B6 learner catch-up, ticks to promote_max_lag", "b6", "ticks", False),
    ("B6 CPU ms to promote_max_lag", "b6", "cpu_ms", False),
    ("B6 bytes sent to the learner", "b6", "bytes_to_learner", False),
    ("B6 longest heartbeat gap to a voter (ticks; < 10 required)", "b6", "max_heartbeat_gap_ticks", False),
    ("B6 longest tick, CPU ms", "b6", "max_tick_cpu_ms", False),
    ("C1 codec, reused buffer, ns/op", "c1/reuse", "ns_per_op", False),
    ("C1 codec, reused buffer, allocations/op", "c1/reuse", "allocs_per_op", False),
    ("C1 codec, fresh buffer + zero-copy decode, ns/op", "c1/zerocopy", "ns_per_op", False),
    ("C1 codec, fresh buffer + zero-copy decode, allocations/op", "c1/zerocopy", "allocs_per_op", False),
]

REFERENCE = {  # DESIGN §8: peers on a 2-core machine of this kind (medians)
    ("b1/128", "entries_per_s"): {"raft-rs": 134e3, "etcd": 130e3},
    ("b1batch/128", "entries_per_s"): {"raft-rs": 660e3, "etcd": 485e3},
    ("b3", "ns_per_op"): {"raft-rs": 1179, "etcd": 1894},
    ("b3", "allocs_per_op"): {"raft-rs": 5, "etcd": 4},
    ("b4", "heap_bytes_per_group"): {"raft-rs": 2124, "etcd": 1952},
    ("b4", "ns_per_group_tick_has_ready"): {"raft-rs": 52, "etcd": 572},
}

WALL_OF = {"entries_per_s": "entries_per_s_wall", "ns_per_op": "ns_per_op_wall"}


def machine() -> list[str]:
    out = []
    try:
        with open("/proc/cpuinfo") as f:
            models = [l.split(":", 1)[1].strip() for l in f if l.startswith("model name")]
        cpu = models[0] if models else platform.processor()
    except OSError:
        cpu = platform.processor()
    try:
        with open("/proc/meminfo") as f:
            mem_kb = int(next(l for l in f if l.startswith("MemTotal")).split()[1])
        mem = f"{mem_kb / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration):
        mem = "?"
    out.append(f"- CPU: {cpu}, `nproc` = {os.cpu_count()}")
    out.append(f"- memory: {mem}; kernel {platform.release()}")
    try:
        load = open("/proc/loadavg").read().split()[:3]
        out.append(f"- load average when the report was written: {' '.join(load)} "
                   "(other engineers share the machine)")
    except OSError:
        pass
    for cmd in (["rustc", "--version"], ["go", "version"], ["python3", "--version"]):
        try:
            out.append("- " + subprocess.run(cmd, capture_output=True, text=True).stdout.strip())
        except OSError:
            pass
    return out


# ------------------------------------------------------------------ svg

def svg(bars: list[tuple[str, Optional[float], Optional[float]]], path: str) -> None:
    """A horizontal bar chart of raftlet's advantage (log scale) over
    raft-rs and etcd raft, row by row."""
    import math

    w, left, right, bh, gap, top = 980, 360, 30, 9, 8, 60
    rows = [b for b in bars if b[1] is not None or b[2] is not None]
    h = top + len(rows) * (2 * bh + gap) + 50
    lo, hi = 1 / 8, 64.0
    span = math.log(hi) - math.log(lo)

    def x(v: float) -> float:
        v = min(max(v, lo), hi)
        return left + (w - left - right) * (math.log(v) - math.log(lo)) / span

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
         f'font-family="sans-serif" font-size="11">',
         f'<rect width="{w}" height="{h}" fill="white"/>',
         f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">'
         "raftlet versus its peers: how many times better (log scale, medians)</text>",
         f'<rect x="{left}" y="30" width="10" height="10" fill="#d9622b"/>'
         f'<text x="{left + 14}" y="39">vs raft-rs</text>',
         f'<rect x="{left + 90}" y="30" width="10" height="10" fill="#3572a5"/>'
         f'<text x="{left + 104}" y="39">vs etcd raft</text>']
    for t in (0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64):
        xx = x(t)
        o.append(f'<line x1="{xx:.1f}" y1="{top - 8}" x2="{xx:.1f}" y2="{h - 40}" '
                 f'stroke="{"#000" if t == 1 else "#ddd"}" stroke-width="{1.5 if t == 1 else 1}"/>')
        o.append(f'<text x="{xx:.1f}" y="{h - 26}" text-anchor="middle">{t:g}×</text>')
    y = top
    for label, rr, et in rows:
        o.append(f'<text x="{left - 6}" y="{y + bh + 4}" text-anchor="end">{label}</text>')
        for i, (v, col) in enumerate(((rr, "#d9622b"), (et, "#3572a5"))):
            if v is None:
                continue
            yy = y + i * bh
            x0, x1 = x(1), x(v if v != float("inf") else hi)
            o.append(f'<rect x="{min(x0, x1):.1f}" y="{yy}" width="{abs(x1 - x0):.1f}" '
                     f'height="{bh - 1}" fill="{col}"/>')
            txt = "∞" if v == float("inf") else f"{v:.2f}×"
            tx = max(x0, x1) + 3
            o.append(f'<text x="{tx:.1f}" y="{yy + bh - 1}" font-size="9">{txt}</text>')
        y += 2 * bh + gap
    o.append(f'<text x="{left}" y="{h - 8}" fill="#555">right of 1×: raftlet better '
             "(rates: raftlet/peer; costs: peer/raftlet). Source: docs/bench.md</text>")
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


# ------------------------------------------------------------- markdown

def profile_summary(prof: str, name: str, per: float) -> tuple[Optional[float], list[str], list[str]]:
    """Instructions per op, and the self cost summed by function and by
    source file (heavy inlining folds most of the core into the harness's
    Ready-cycle function, so the source file tells where the work is)."""
    path = os.path.join(prof, f"{name}.self.txt")
    if not os.path.exists(path):
        return None, [], []
    text = open(path).read()
    m = re.search(r"^([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", text, re.M)
    total = float(m.group(1).replace(",", "")) if m else None
    by_fn: dict[str, float] = defaultdict(float)
    by_file: dict[str, float] = defaultdict(float)
    for line in text.splitlines():
        mm = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*)$", line)
        if not mm or "PROGRAM TOTALS" in line:
            continue
        n = float(mm.group(1).replace(",", ""))
        loc = re.sub(r" \[[^\]]*\]$", "", mm.group(2))
        f, _, fn = loc.partition(":")
        f = re.sub(r"^/rustc/[0-9a-f]+/library/", "std: ", f)
        f = re.sub(r"^.*/sysdeps/.*", "libc (memcpy and friends)", f)
        f = re.sub(r"^.*/malloc/.*", "libc malloc", f)
        f = re.sub(r"^/root/\.cargo/registry/src/[^/]+/", "", f)
        fn = re.sub(r"<raftlet_bench::\w+::\w+ as raftlet_bench::node::BenchNode>::", "harness ", fn)
        if len(fn) > 90:
            fn = fn[:87] + "..."
        by_fn[fn] += n
        by_file[f] += n
    def top(d: dict[str, float]) -> list[str]:
        if not total:
            return []
        return [f"{v / total * 100:.1f}% `{k}`" for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:7]]
    return (total / per if total else None), top(by_fn), top(by_file)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="?")
    ap.add_argument("--go2json", type=int)
    ap.add_argument("--commands")
    ap.add_argument("--profile")
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--build-seconds", type=int, default=0)
    ap.add_argument("--run-seconds", type=int, default=0)
    ap.add_argument("--profile-seconds", type=int, default=0)
    ap.add_argument("--md", default="docs/bench.md")
    ap.add_argument("--svg", default="docs/bench.svg")
    a = ap.parse_args()
    if a.go2json is not None:
        go2json(a.go2json)
        return
    S = load(a.results)

    def get(row: str, impl: str, metric: str) -> Optional[Stats]:
        return S.get((row, impl, metric))

    md: list[str] = []
    add = md.append
    add("# raftlet benchmarks")
    add("")
    add("Generated by `make bench` (scripts/bench.sh, then scripts/bench_report.py); "
        "edit those, not this file. Workloads are DESIGN §8's.")
    add("")
    add(f"Every figure is the **median of {a.rounds} rounds** with the range "
        "<sub>[min–max]</sub>; each run is its own process, and the order of the "
        "implementations alternates from round to round. Rates and times come from "
        "**process CPU time**, not wall time: the machine is shared (its load average "
        "was several times its core count while these ran), and a process got as "
        "little as half a core; wall-clock figures are in build/bench/results.jsonl "
        "(`*_wall`). The × columns say how many times better raftlet is than the peer "
        "(for rates raftlet/peer, for costs peer/raftlet): above 1 favours raftlet.")
    add("")
    add("![raftlet versus its peers](bench.svg)")
    add("")
    add("## Results: raftlet, raft-rs 0.7 (prost), etcd raft v3.6.0")
    add("")
    add("| row | raftlet | raft-rs | × | etcd raft | × |")
    add("|---|---:|---:|---:|---:|---:|")
    bars = []
    for label, row, metric, hb in MAIN_ROWS:
        r = get(row, "raftlet", metric)
        cells = [label, cell(r)]
        rs = []
        for _, impl in PEERS:
            p = get(row, impl, metric)
            x = ratio(r, p, hb)
            rs.append(x)
            cells += [cell(p), fmt_ratio(x)]
        add("| " + " | ".join(cells) + " |")
        if metric in ("entries_per_s", "ns_per_op", "allocs_per_op", "heap_bytes_per_group",
                      "ns_per_group_tick_has_ready", "reads_per_s", "allocs_per_entry",
                      "cpu_ms", "bytes_to_learner"):
            bars.append((label, rs[0], rs[1]))
    add("")
    add("B1 runs 500k entries of 128 B, 200k of 1 KiB and 30k of 16 KiB (logs compacted "
        "every 100k entries or 256 MiB of payload, whichever comes first). B6 and C1 have "
        "no etcd row: etcd's harness covers B1, B1batch, B3, B4 and B5 (the brief's Go "
        "list); C1's peer is raft-rs's prost codec.")
    nc = get("b1/128", "raftlet-nocoalesce", "entries_per_s")
    if nc:
        add("")
        add(f"raftlet with `coalesce_appends = false` (one append per proposal, as etcd): "
            f"B1 128 B {cell(nc)} entries/s, "
            f"{cell(get('b1/128', 'raftlet-nocoalesce', 'msgs_per_entry'))} messages/entry, "
            f"{cell(get('b1/128', 'raftlet-nocoalesce', 'allocs_per_entry'))} allocations/entry.")
    add("")

    # B2
    add("## B2: B1 (128 B) through each binding")
    add("")
    add("| binding | through the binding | native Rust raftlet | binding / native | peer | peer's figure | × vs peer |")
    add("|---|---:|---:|---:|---|---:|---:|")
    native = get("b1/128", "raftlet", "entries_per_s")
    native_b = get("b1batch/128", "raftlet", "entries_per_s")
    b2 = [
        ("C (C ABI, libraftlet.a)", get("b1/128", "raftlet-c", "entries_per_s"), native,
         "—", None),
        ("Go (cgo, bindings/go)", get("b1/128", "raftlet-go", "entries_per_s"), native,
         "etcd raft (native Go)", get("b1/128", "etcd", "entries_per_s")),
        ("Python (PyO3), 256 `propose` calls", get("b1/128", "raftlet-py", "entries_per_s"), native,
         "PySyncObj 0.3.17", get("b1/128", "pysyncobj", "entries_per_s")),
        ("Python (PyO3), one `propose_batch`", get("b1batch/128", "raftlet-py", "entries_per_s"),
         native_b, "PySyncObj 0.3.17", get("b1/128", "pysyncobj", "entries_per_s")),
    ]
    for name, via, nat, peer, pv in b2:
        ov = f"{via[0] / nat[0]:.2f}" if via and nat else "—"
        add(f"| {name} | {cell(via)} | {cell(nat)} | {ov} | {peer} | {cell(pv)} | "
            f"{fmt_ratio(ratio(via, pv, True))} |")
    gb1b = get("b1batch/128", "raftlet-go", "entries_per_s")
    add("")
    add("Entries/s, CPU time. The Go rows of the other workloads, through the binding:")
    add("")
    add("| row | raftlet via Go | etcd raft (native Go) | × |")
    add("|---|---:|---:|---:|")
    for label, row, metric, hb in [
        ("B1 1 KiB, entries/s", "b1/1024", "entries_per_s", True),
        ("B1 16 KiB, entries/s", "b1/16384", "entries_per_s", True),
        ("B3, ns/op", "b3", "ns_per_op", False),
        ("B3, allocations/op (Go heap)", "b3", "allocs_per_op", False),
        ("B4, heap bytes/group (Go + C heap)", "b4", "heap_bytes_per_group", False),
        ("B4, ns/group, tick + HasReady", "b4", "ns_per_group_tick_has_ready", False),
        ("B5, 1 read/round, reads/s", "b5/1", "reads_per_s", True),
        ("B5, 64 reads/round, reads/s", "b5/64", "reads_per_s", True),
    ]:
        r, p = get(row, "raftlet-go", metric), get(row, "etcd", metric)
        add(f"| {label} | {cell(r)} | {cell(p)} | {fmt_ratio(ratio(r, p, hb))} |")
    add("")
    add("B1batch has no Go-binding row: the C ABI (and so the binding) has no batch "
        "proposal (`RawNode::propose_batch` is Rust and Python only)" +
        ("." if gb1b is None else "; a row was found anyway."))
    add("")

    # Reference check
    add("## The peers against DESIGN §8's reference figures")
    add("")
    add("| figure | peer | DESIGN §8 | here, CPU time | here, wall time |")
    add("|---|---|---:|---:|---:|")
    for (row, metric), refs in REFERENCE.items():
        for impl, ref in refs.items():
            here = get(row, impl, metric)
            wall = get(row, impl, WALL_OF[metric]) if metric in WALL_OF else None
            add(f"| {row} {metric} | {impl} | {fmt_num(ref)} | {cell(here)} | {cell(wall)} |")
    add("")
    add(REFERENCE_NOTES)
    add("")

    # Targets
    add("## Targets (the benchmark issue)")
    add("")
    t_rows = []
    b3r, b3p = get("b3", "raftlet", "ns_per_op"), get("b3", "raft-rs", "ns_per_op")
    b3a = get("b3", "raftlet", "allocs_per_op")
    if b3r and b3p and b3a:
        t_rows.append(("B3 ≤ half raft-rs's ns/op, ≤ 1 allocation/op",
                       f"{b3r[0]:.0f} vs {b3p[0]:.0f} ns/op ({b3p[0] / b3r[0]:.2f}×), "
                       f"{b3a[0]:.2f} allocations/op",
                       b3r[0] * 2 <= b3p[0] and b3a[0] <= 1))
    bb, bbr, bbe = (get("b1batch/128", i, "entries_per_s") for i in ("raftlet", "raft-rs", "etcd"))
    if bb and bbr and bbe:
        t_rows.append(("B1batch 128 B ≥ 2× raft-rs and ≥ 3× etcd entries/s",
                       f"{bb[0] / bbr[0]:.2f}× raft-rs, {bb[0] / bbe[0]:.2f}× etcd",
                       bb[0] >= 2 * bbr[0] and bb[0] >= 3 * bbe[0]))
    b1, b1r, b1e = (get("b1/128", i, "entries_per_s") for i in ("raftlet", "raft-rs", "etcd"))
    if b1 and b1r and b1e:
        t_rows.append(("(B1 128 B, 256 separate proposals, for comparison)",
                       f"{b1[0] / b1r[0]:.2f}× raft-rs, {b1[0] / b1e[0]:.2f}× etcd",
                       None))
    hb4, tk4, tk4a = (get("b4", "raftlet", m) for m in
                      ("heap_bytes_per_group", "ns_per_group_tick_has_ready", "ns_per_group_tick"))
    if hb4 and tk4 and tk4a:
        t_rows.append(("B4 ≤ 1 KiB heap per idle follower group", f"{hb4[0]:.0f} bytes",
                       hb4[0] <= 1024))
        t_rows.append(("B4 ≤ 10 ns per group per tick sweep (10k groups)",
                       f"{tk4a[0]:.1f} ns tick alone; {tk4[0]:.1f} ns tick + has_ready",
                       tk4a[0] <= 10))
    g, e = get("b1/128", "raftlet-go", "entries_per_s"), get("b1/128", "etcd", "entries_per_s")
    g3, e3 = get("b3", "raftlet-go", "ns_per_op"), get("b3", "etcd", "ns_per_op")
    if g and e:
        t_rows.append(("B2 Go via cgo beats etcd native (B1)", f"{g[0] / e[0]:.2f}× etcd", g[0] > e[0]))
    if g3 and e3:
        t_rows.append(("B2 Go via cgo beats etcd native (B3, one proposal per Ready loop)",
                       f"{e3[0] / g3[0]:.2f}× etcd", g3[0] < e3[0]))
    add("| target | measured | met |")
    add("|---|---|---|")
    for name, meas, ok in t_rows:
        add(f"| {name} | {meas} | {'—' if ok is None else ('yes' if ok else '**no**')} |")
    add("")
    add(TARGET_NOTES)
    add("")

    # Profile
    add("## Profile (callgrind instruction counts)")
    add("")
    if a.profile and os.path.exists(os.path.join(a.profile, "b3-raftlet.self.txt")):
        add("Instruction counts are repeatable where timings are not. Totals include "
            "setup and the warm-up (B3: 22,000 proposals for 20,000 measured; B1: "
            "51,200 entries plus the election), so per-op figures are slightly high.")
        add("")
        add("| run | instructions/op | self cost by function | self cost by source file |")
        add("|---|---:|---|---|")
        for name, per, label in (("b3-raftlet", 22000, "B3 raftlet (per proposal)"),
                                 ("b3-raft-rs", 22000, "B3 raft-rs (per proposal)"),
                                 ("b1-raftlet", 51200, "B1 raftlet (per entry)"),
                                 ("b1-raft-rs", 51200, "B1 raft-rs (per entry)")):
            ipo, fns, files = profile_summary(a.profile, name, per)
            add(f"| {label} | {fmt_num(ipo) if ipo else '—'} | {'<br>'.join(fns)} | "
                f"{'<br>'.join(files)} |")
        add("")
    else:
        add("valgrind was not available: no profile this run.")
        add("")
    add(PROFILE_NOTES)
    add("")

    # Commands
    add("## How it was run")
    add("")
    add(f"`make bench` (= `scripts/bench.sh`, BENCH_ROUNDS={a.rounds}) took "
        f"**{a.seconds // 60} min {a.seconds % 60} s** end to end: builds {a.build_seconds} s, "
        f"runs {a.run_seconds} s, callgrind {a.profile_seconds} s.")
    add("")
    add("Machine:")
    add("")
    md.extend(machine())
    add("")
    add("Every command of one round (the other rounds repeat them in alternating order):")
    add("")
    add("```")
    if a.commands and os.path.exists(a.commands):
        cmds = [c.strip() for c in open(a.commands) if c.strip()]
        seen: list[str] = []
        for c in cmds:
            if c not in seen:
                seen.append(c)
        md.extend(seen)
    add("```")
    add("")
    add(HARNESS_NOTES)
    with open(a.md, "w") as f:
        f.write("\n".join(md) + "\n")
    svg(bars, a.svg)


REFERENCE_NOTES = """\
**Why the peers' figures differ from DESIGN §8's, and why that does not
change the comparison.** The reference figures are wall-clock medians on a
loaded machine of this kind; ours are CPU time, because wall time here is at
the mercy of whatever else runs on the 2 shared cores (`perf stat` showed a
B1 process getting 0.44 CPUs). Where we also have wall time it lands near the
reference (raft-rs B1 128 B: about 140k entries/s wall for the reference's
134k), and the CPU-time figures are higher by about the share of the core
the process did not get. raft-rs's B3 allocation count (8 here, 5 in the
reference) depends on what is counted: our allocator counts every `alloc`,
`alloc_zeroed` and `realloc` call, including the copy raft-rs's `propose`
needs (it takes `Vec<u8>`) and the vectors its LightReady hands back.
B4: our sweep is tick then has_ready on each group, what a multi-raft host
runs; raft-rs's figure then matches the reference (about 50 ns), while tick
alone costs it about 5 ns. etcd's 572 ns per group in the reference is far
above ours (about 75 ns) on the same sweep: we found no way to reproduce it
with idle followers; a sweep in which groups pass their election timeout and
campaign (no heartbeat for 10+ ticks) costs that much, so we suspect the
reference harness let its groups time out. Ours re-delivers a heartbeat
every 5 sweeps and fails if any group has work."""

TARGET_NOTES = """\
Where a target is missed, why, and what would close it:

- **B4 heap per idle group (target ≤ 1 KiB).** About 900 bytes are the
  RawNode struct itself (`size_of::<RawNode<MemoryStorage>>()`, measured by
  the harness) and about 1.2 KiB live on the heap: the MemoryStorage
  (`Arc<RwLock<MemoryStorageCore>>` with its placeholder entry and a
  snapshot holding a ConfState), the ProgressMap (3 progress records with
  their inflight windows), the quorum configuration's voter set, and the
  VecDeque of Ready records, which keeps its capacity (320 bytes) after the
  first Ready. Closing it: keep rarely used state (pending conf-change and
  read-only bookkeeping, leader-transfer and snapshot fields, the config
  copy) behind one `Option<Box<..>>`, drop the Ready records' capacity when
  a node goes idle (or keep them in a small inline array), and allocate
  the Inflights ring only when the node becomes leader.
- **B4 tick sweep (target ≤ 10 ns).** The tick alone meets it (about 4 ns,
  after the tick-order fix below); a sweep that also asks `has_ready` costs
  about 30 ns, still well below raft-rs and etcd: has_ready reads fields
  spread over several cache lines of the ~900-byte node (soft state, hard
  state, the message queues, the unstable log, the commit and applying
  indexes). A `dirty` flag set by every path that creates work (or a
  cached "idle" bit invalidated on step/propose/tick events) would make it
  one load.
- **B3 (target ≤ half raft-rs's ns/op and ≤ 1 allocation/op).** raftlet makes
  no allocation per proposal; its time is below raft-rs's but not by 2× on
  every run: see the profile — most of what is left is the two Ready cycles
  per proposal (one to append, one to apply, as etcd), the counting
  allocator's atomics are not involved (0 allocations) and the RwLock of the
  MemoryStorage is taken twice per cycle. Handing the committed entries out
  in the same Ready as the append for a single voter (etcd does this with
  async storage writes only) would halve the cycles.
- **B2 Go (target: via cgo beats etcd native).** Met on B1 thanks to
  coalesced appends; missed where each operation is small: B3 makes about
  nine cgo crossings per proposal (Propose, HasReady, Ready, AppendReady,
  Advance, twice for the two Ready cycles), each tens of ns plus the Go
  decode of the Ready envelope; B4 pays two crossings per group per sweep.
  Closing it: a `ProposeAndReady`-style call, a bulk tick
  (`raftlet_nodes_tick(nodes, n, out_busy)`) over many groups in one
  crossing, and a Ready that stays in C until the host asks for a field."""

PROFILE_NOTES = """\
What was already done about the hot spots, before this report: appends are
coalesced per peer until `ready()` is taken (B1 sends about 0.03 messages
per entry against the peers' 6); the propose/Ready loop recycles its entry
vectors and allocates nothing per proposal (B3: 0 allocations/op); payloads
are `bytes::Bytes`, shared rather than copied between the unstable log, the
Ready, the storage and the decoded messages (`decode_bytes`); ProgressMap is
a sorted vector. Done with this report: an idle follower's tick tests its
election timeout before looking its progress up (B4 tick 29 → 4.4 ns per
group; the same fix landed on main at the same time).

What is left in the profiles: in B1, the codec (encoding and decoding the
MsgApp payloads: varint and length-prefixed copies) and MemoryStorage
appends (entry clones into the storage vector, the RwLock) dominate, with
malloc/free of the encoded message buffers next; in B3, the two Ready
cycles, storage appends under the RwLock and Entry clones (refcount bumps on
the payload). Closing the remaining gaps: encode messages into one reused
buffer per destination (no allocation per message), let MemoryStorage take
the Ready's entry vector by value instead of cloning, and let a single voter
commit and apply in the same Ready as the append."""

HARNESS_NOTES = """\
Harness: bench/ (Rust) links raftlet and raft-rs and drives both through one
trait (`BenchNode`: create, campaign, propose, propose_batch, tick,
step(bytes), has_ready, one Ready cycle that persists, encodes messages and
applies, advance); raft-rs runs over its MemStorage (wrapped so that
`snapshot()` returns the snapshot the host took, as raftlet's and etcd's
MemoryStorage do), with check_quorum, pre_vote, max_size_per_msg = 1 MiB,
max_committed_size_per_ready = 1 MiB and max_inflight_msgs = 256 on every
library. bench/go has the same workloads for etcd raft v3.6.0 and for
raftlet's Go binding, bench/c/b1.c drives B1 through the C ABI and
bench/python/b1.py through the Python package and PySyncObj (3 nodes in one
process over TCP on 127.0.0.1, ticked by the loop: it spends most of its
CPU in its own polling and pickling, hence its low figure). Allocations are
counted by a counting global allocator (Rust) and runtime.MemStats.Mallocs
(Go); peak RSS is VmHWM."""


if __name__ == "__main__":
    main()
