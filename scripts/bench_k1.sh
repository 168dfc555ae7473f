#!/usr/bin/env bash
# K1 (issue 16): writes per second and p50/p99 latency of the kv service
# (examples/kv) on loopback, 3 nodes on raftlet's synced disk storage, 1
# and 64 clients (examples/kv/k1). BENCH_K1_ROUNDS rounds (default 3), a
# fresh cluster each; BENCH_K1_SECONDS measured per row (default 10).
# The data directories live under build/bench/k1 (the disk to measure).
# Writes docs/bench-k1.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${BENCH_K1_ROUNDS:-3}
SECS=${BENCH_K1_SECONDS:-10}
CARGO=${CARGO:-cargo}
mkdir -p build/bench/k1
echo "bench-k1: building libraftlet and the kv service" >&2
"$CARGO" build --release --quiet -p raftlet-ffi
(cd examples/kv && go build -tags raftlet_intree -o "$ROOT/build/kv" . && go build -o "$ROOT/build/k1" ./k1)
./build/k1 -kv "$ROOT/build/kv" -dir "$ROOT/build/bench/k1" -rounds "$ROUNDS" -seconds "$SECS" \
  -clients 1,64 -out docs/bench-k1.md
