#!/usr/bin/env python3
"""How the blocks under a log's tail change the cost of fdatasync.

Appends `count` records of `size` bytes to one file, each followed by
fdatasync, and prints the syncs per second, for three ways of preparing the
file (docs/bench-d1.md, "Profile"):

- falloc: fallocate'd only, as etcd's WAL and raftlet-disk's segments are;
  the blocks are unwritten extents, and the first write into one changes
  the block map, which the sync must write as well;
- ahead:  fallocate'd, and each record that reaches unwritten blocks is
  followed by `--ahead` bytes of zeros, as raftlet-disk writes small
  records (the zeros are written and synced inside the timed loop);
- append: not preallocated; every sync also writes the new file size.

Usage: prealloc_sync.py [--size 9600] [--count 1500] [--pairs 4] [--dir build]
The modes run in turn, `--pairs` times, on the same disk.
"""
import argparse
import os
import statistics
import time


def run(mode, size, count, ahead, directory):
    path = os.path.join(directory, f"prealloc-sync-{mode}.tmp")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    try:
        total = size * count + ahead + (1 << 20)
        if mode != "append":
            os.posix_fallocate(fd, 0, total)
        os.fsync(fd)
        rec = os.urandom(size)
        zeros = bytes(ahead)
        off = zeroed = 0
        start = time.monotonic()
        for _ in range(count):
            if mode == "ahead" and off + size > zeroed:
                os.pwrite(fd, rec + zeros, off)
                zeroed = off + size + ahead
            else:
                os.pwrite(fd, rec, off)
            off += size
            os.fdatasync(fd)
        return count / (time.monotonic() - start)
    finally:
        os.close(fd)
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=9600)
    ap.add_argument("--count", type=int, default=1500)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--ahead", type=int, default=1 << 20)
    ap.add_argument("--dir", default="build")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    modes = ["falloc", "ahead", "append"]
    got = {m: [] for m in modes}
    for i in range(a.pairs):
        for m in modes if i % 2 == 0 else modes[::-1]:
            got[m].append(run(m, a.size, a.count, a.ahead, a.dir))
    for m in modes:
        v = got[m]
        print(f"{m:6} {a.size} B records: median {statistics.median(v):,.0f} syncs/s "
              f"({min(v):,.0f}-{max(v):,.0f})")
    base = got["falloc"]
    ratios = [x / y for x, y in zip(got["ahead"], base)]
    print(f"ahead / falloc, median of the pairs: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
