#!/usr/bin/env bash
# D1 (issue 15): synced log writes per second, raftlet-disk side by side with
# raft-engine, redb, fjall (bench/d1, Rust) and etcd's WAL (bench/d1/go), on
# the same disk in the same run. Rows: 1 and 1,000 groups, batches of 1, 64
# and 1,024 entries of 128 B. raftlet-disk, raft-engine, redb and fjall
# commit all groups of a round with one sync; etcd's WAL is one WAL per
# group, synced per group, as an etcd-style host runs it.
# BENCH_D1_ROUNDS rounds (default 7) alternate the order of the
# implementations; each run stops after BENCH_D1_SECONDS (default 1).
# raw-fsync is the disk's ceiling: the same bytes appended to one file
# (written with zeros beforehand; rounds of 1 MiB or more with O_DIRECT, as
# raftlet-disk writes them) and fdatasync'ed, with no format at all.
# disk-only is raw-fsync with the round encoded before its clock starts:
# the disk's time alone for those bytes, which bounds every log.
# Writes build/bench/d1.jsonl and docs/bench-d1.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${BENCH_D1_ROUNDS:-7}
SECS=${BENCH_D1_SECONDS:-1}
OUT=build/bench
RESULTS=$OUT/d1.jsonl
DATA=${BENCH_D1_DIR:-$ROOT/build/bench/d1-data}
CARGO=${CARGO:-cargo}
mkdir -p "$OUT" "$DATA"
: > "$RESULTS"
log() { echo "bench-d1: $*" >&2; }

log "building (release)"
"$CARGO" build --release --quiet --manifest-path bench/d1/Cargo.toml --target-dir "$ROOT/target/bench-d1"
RB=$ROOT/target/bench-d1/release/raftlet-bench-d1
(cd bench/d1/go && go build -o "$ROOT/$OUT/d1wal" .)
GW=$ROOT/$OUT/d1wal
# D2 links the Go binding against this checkout's static library.
"$CARGO" build --release --quiet -p raftlet-ffi
# -a: the static library changes under an unchanged Go package.
(cd bench/d1/go && go build -a -tags raftlet_intree -o "$ROOT/$OUT/d2" ./d2)
G2=$ROOT/$OUT/d2

run() {
  local d=$DATA/run
  rm -rf "$d"
  local line
  if ! line=$("$@" 2>"$OUT/d1-last.err"); then
    log "FAILED: $*"; cat "$OUT/d1-last.err" >&2; rm -rf "$d"; return 1
  fi
  rm -rf "$d"
  echo "$line" | grep '^{' | sed "s/^{/{\"round\":$r,/" >> "$RESULTS"
}

for ((r=1; r<=ROUNDS; r++)); do
  log "round $r of $ROUNDS"
  for g in 1 1000; do
    # etcd preallocates a 64 MiB segment per WAL (its default), and its file
    # pipeline preallocates the next one: for 1,000 WALs that is 128 GB of
    # fallocate, more than the disk holds, so they get 8 MiB. No WAL of the
    # 1,000 fills 8 MiB within a run (a run saves a few MB per WAL at most),
    # so the size changes what is reserved before the clock starts, not a
    # Save or its sync.
    seg=$((64 << 20)); [ "$g" = 1000 ] && seg=$((8 << 20))
    for b in 1 64 1024; do
      # raftlet-disk and etcd's WAL run next to each other in every round
      # (the order turns round each round), so that their ratio is taken
      # from runs seconds apart on this shared disk.
      cmds=("$RB raftlet-disk groups=$g batch=$b max_seconds=$SECS dir=$DATA/run"
            "$GW -groups $g -batch $b -segment $seg -max-seconds $SECS -dir $DATA/run"
            "$RB raw-fsync groups=$g batch=$b max_seconds=$SECS dir=$DATA/run"
            "$RB disk-only groups=$g batch=$b max_seconds=$SECS dir=$DATA/run"
            "$RB raft-engine groups=$g batch=$b max_seconds=$SECS dir=$DATA/run"
            "$RB redb groups=$g batch=$b max_seconds=$SECS dir=$DATA/run"
            "$RB fjall groups=$g batch=$b max_seconds=$SECS dir=$DATA/run")
      if (( r % 2 == 0 )); then
        rev=(); for ((i=${#cmds[@]}-1; i>=0; i--)); do rev+=("${cmds[i]}"); done; cmds=("${rev[@]}")
      fi
      for c in "${cmds[@]}"; do
        # shellcheck disable=SC2086
        run $c
      done
    done
  done
done
# One group: the disk's latency swings within seconds, more than the
# difference between two logs that each make one write and one sync a round.
# BENCH_D1_PAIRS (default 21) short runs of raftlet-disk and etcd's WAL,
# taking turns to go first, give a ratio per pair, seconds or less apart.
PAIRS=${BENCH_D1_PAIRS:-21}
# turns OUT R A B: runs commands A and B (A first in odd rounds R, B first
# in even ones), their results going to OUT.
turns() {
  local out=$1 r=$2 c
  local order=("$3" "$4")
  (( r % 2 )) || order=("$4" "$3")
  for c in "${order[@]}"; do
    # shellcheck disable=SC2086
    RESULTS=$out run $c
  done
}
PAIRED=$OUT/d1-pairs.jsonl
: > "$PAIRED"
log "1 group: $PAIRS short pairs of raftlet-disk and etcd's WAL"
for b in 1 64 1024; do
  n=400; [ "$b" = 1024 ] && n=150
  for ((r=1; r<=PAIRS; r++)); do
    turns "$PAIRED" "$r" \
      "$RB raftlet-disk groups=1 batch=$b rounds=$n max_seconds=100 dir=$DATA/run" \
      "$GW -groups 1 -batch $b -rounds $n -max-seconds 100 -dir $DATA/run"
  done
done
# D2: a Go host of many single-voter groups with durable logs, raftlet's
# Go binding (one AppendReadyViews per pass over the groups) against etcd
# raft with one etcd WAL per group. BENCH_D2_ROUNDS (default 3) rounds,
# taking turns to go first.
D2ROUNDS=${BENCH_D2_ROUNDS:-3}
D2=$OUT/d2.jsonl
: > "$D2"
log "D2: Go hosts, $D2ROUNDS rounds"
for ((r=1; r<=D2ROUNDS; r++)); do
  for g in 1 1000; do
    seg=$((64 << 20)); [ "$g" = 1000 ] && seg=$((8 << 20))
    for b in 1 64 1024; do
      turns "$D2" "$r" \
        "$G2 -impl raftlet-go -groups $g -batch $b -max-seconds $SECS -dir $DATA/run" \
        "$G2 -impl etcd-raft-wal -groups $g -batch $b -segment $seg -max-seconds $SECS -dir $DATA/run"
    done
  done
done
python3 scripts/bench_d1_report.py "$RESULTS" --rounds "$ROUNDS" --seconds "$SECS" \
  --pairs "$PAIRED" --d2 "$D2" --findings bench/d1/FINDINGS.md > docs/bench-d1.md
log "done: docs/bench-d1.md, $RESULTS"
