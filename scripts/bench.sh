#!/usr/bin/env bash
# make bench: raftlet side by side with raft-rs, etcd raft and PySyncObj
# (DESIGN §8), end to end on a fresh machine:
#   1. release builds: the bench crate (raftlet + raft-rs) twice, once per
#      raft-rs codec (prost; rust-protobuf, raft-rs's default), libraftlet.a,
#      the C program, the Go benchmarks (etcd raft v3.6 + the Go binding),
#      the Python package (maturin) and PySyncObj in build/venv;
#   2. BENCH_ROUNDS rounds (default 5) of every row, each in its own
#      process, alternating which implementation goes first;
#   3. instruction counts under callgrind (B1, B3: repeatable figures);
#   4. docs/bench.md and docs/bench.svg from the results
#      (scripts/bench_report.py).
# Results land in build/bench/results.jsonl (one JSON object per run).
# Figures come from process CPU time: the machines are shared.
# Needs: the Rust toolchain, a C compiler, Go 1.24+, python3 with venv;
# valgrind is optional (the profile section is skipped without it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
START=$(date +%s)

ROUNDS=${BENCH_ROUNDS:-5}
OUT=build/bench
RESULTS=$OUT/results.jsonl
CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
export CGO_ENABLED=1
mkdir -p "$OUT"
: > "$RESULTS"
: > "$OUT/commands.txt"

log() { echo "bench: $*" >&2; }

# raft-rs's prost codec generates its code with protoc at build time. Use
# the system one if any, else the protoc that protobuf-build ships.
if [ -z "${PROTOC:-}" ] && ! command -v protoc >/dev/null; then
  "$CARGO" fetch --manifest-path bench/Cargo.toml >/dev/null 2>&1 || true
  reg=${CARGO_HOME:-$HOME/.cargo}/registry/src
  PROTOC=$(ls "$reg"/*/protobuf-build-0.14.*/bin/protoc-linux-x86_64 2>/dev/null | head -1 || true)
  [ -n "$PROTOC" ] && chmod +x "$PROTOC" && export PROTOC
fi

# ---------------------------------------------------------------- builds
log "building (release)"
# raft-rs's two codecs cannot share one build (cargo unifies raft-proto's
# features): the rust-protobuf build first, kept aside, then the prost one.
"$CARGO" build --release --quiet --manifest-path bench/Cargo.toml --target-dir "$TARGET" \
  --no-default-features --features rr-protobuf
cp "$TARGET/release/raftlet-bench" "$OUT/raftlet-bench-protobuf"
RBP=$OUT/raftlet-bench-protobuf
"$CARGO" build --release --quiet --manifest-path bench/Cargo.toml --target-dir "$TARGET"
RB=$TARGET/release/raftlet-bench
"$CARGO" build --release --quiet -p raftlet-ffi
if [ "$(realpath "$TARGET/release/libraftlet.a")" != "$(realpath -m target/release/libraftlet.a)" ]; then
  mkdir -p target/release && cp "$TARGET/release/libraftlet.a" target/release/libraftlet.a
fi
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -Iinclude bench/c/b1.c target/release/libraftlet.a \
  -lpthread -ldl -lm -o "$OUT/b1_c"
# B3 and B5 through the C ABI, for instruction counts of the boundary.
for h in abi_b3 abi_b5; do
  ${CC:-cc} -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -Iinclude bench/c/$h.c \
    target/release/libraftlet.a -lpthread -ldl -lm -o "$OUT/$h"
done
# -a: relink against the library just built. The go command reused a
# cached link made against an older libraftlet.a here (same Go sources, a
# rebuilt library), which measured the old library's heap.
(cd bench/go && go test -a -tags raftlet_intree -c -o "$ROOT/$OUT/gobench" .)
GB=$OUT/gobench

PY=""
VENV=build/venv
if python3 -c 'import venv' 2>/dev/null; then
  if ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
    rm -rf "$VENV" && python3 -m venv "$VENV"
  fi
  if "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check maturin==1.16.0 pysyncobj==0.3.17 &&
     mkdir -p build/wheels && rm -f build/wheels/raftlet-*.whl &&
     "$VENV/bin/maturin" build --release --quiet -m bindings/python/Cargo.toml -o build/wheels &&
     "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps build/wheels/raftlet-*.whl; then
    PY=$VENV/bin/python
  else
    log "the Python package could not be built: Python rows are left out"
  fi
fi
BUILD_END=$(date +%s)
log "builds took $((BUILD_END - START)) s"

# ------------------------------------------------------------------ runs
# run ROUND CMD...: runs one benchmark process and appends its JSON line.
run() {
  local round=$1; shift
  echo "$*" >> "$OUT/commands.txt"
  local line
  if ! line=$("$@" 2>"$OUT/last.err"); then
    log "FAILED: $*"; cat "$OUT/last.err" >&2; return 1
  fi
  echo "$line" | grep '^{' | sed "s/^{/{\"round\":$round,/" >> "$RESULTS"
}
# go ROUND BENCH BENCHTIME: one Go benchmark, its output turned into JSON.
gorun() {
  local round=$1 bench=$2 n=$3
  local cmd=("$GB" -test.run '^$' -test.bench "$bench" -test.benchtime "$n" -test.benchmem)
  echo "${cmd[*]}" >> "$OUT/commands.txt"
  "${cmd[@]}" 2>"$OUT/last.err" | python3 scripts/bench_report.py --go2json "$round" >> "$RESULTS"
}

# Each row: the implementations in the order of odd rounds (even rounds
# reverse it), so that no implementation always runs first.
row() {
  local round=$1; shift
  local -a cmds=("$@")
  if (( round % 2 == 0 )); then
    local -a rev=()
    for ((i=${#cmds[@]}-1; i>=0; i--)); do rev+=("${cmds[i]}"); done
    cmds=("${rev[@]}")
  fi
  for c in "${cmds[@]}"; do eval "$c"; done
}

SIZES=(128 1024 16384)
declare -A TOTAL=([128]=500000 [1024]=200000 [16384]=30000)
declare -A GOX=([128]=1953x [1024]=781x [16384]=117x)
B7_ROUNDS=100
if [ -n "${BENCH_QUICK:-}" ]; then  # a smoke test of the script, not for figures
  B7_ROUNDS=5
  TOTAL=([128]=25600 [1024]=25600 [16384]=2560)
  GOX=([128]=100x [1024]=100x [16384]=10x)
fi

# The Rust rows: raftlet (coalesced appends, its default), raftlet with
# coalesce_appends = false (one append per proposal, as the peers), raftlet
# with copy-free decoding (a separate row: the others copy payloads out of
# the receive buffer), and raft-rs with each of its codecs.
for ((r=1; r<=ROUNDS; r++)); do
  log "round $r of $ROUNDS"
  for s in "${SIZES[@]}"; do
    for one in 0 1; do
      gb=B1; [ $one = 1 ] && gb=B1batch
      row $r "run $r $RB b1 raftlet total=${TOTAL[$s]} size=$s one=$one" \
             "run $r $RB b1 raftlet-nocoalesce total=${TOTAL[$s]} size=$s one=$one" \
             "run $r $RB b1 raftlet-zerocopy total=${TOTAL[$s]} size=$s one=$one" \
             "run $r $RB b1 raft-rs total=${TOTAL[$s]} size=$s one=$one" \
             "run $r $RBP b1 raft-rs total=${TOTAL[$s]} size=$s one=$one" \
             "gorun $r 'BenchmarkB1\$/^$gb\$/^impl=etcd\$/^size=$s\$' ${GOX[$s]}" \
             "gorun $r 'BenchmarkB1\$/^$gb\$/^impl=raftlet-go\$/^size=$s\$' ${GOX[$s]}" \
             "gorun $r 'BenchmarkB1\$/^$gb\$/^impl=raftlet-go-view\$/^size=$s\$' ${GOX[$s]}"
    done
  done
  # B2: the bindings, against native raftlet and the peers above.
  row $r "run $r $OUT/b1_c ${TOTAL[128]} 128"
  # (The Go binding's B1 rows run beside etcd raft's, above.)
  if [ -n "$PY" ]; then
    row $r "run $r $PY bench/python/b1.py raftlet 102400 128" \
           "run $r $PY bench/python/b1.py raftlet-batch 102400 128" \
           "run $r $PY bench/python/b1.py pysyncobj 5120 128"
  fi
  row $r "run $r $RB b3 raftlet ops=200000" "run $r $RB b3 raft-rs ops=200000" \
         "run $r $RBP b3 raft-rs ops=200000" \
         "gorun $r 'BenchmarkB3\$/^impl=etcd\$' 200000x" \
         "gorun $r 'BenchmarkB3\$/^impl=raftlet-go\$' 200000x" \
         "gorun $r 'BenchmarkB3\$/^impl=raftlet-go-view\$' 200000x"
  row $r "run $r $RB b4 raftlet" "run $r $RB b4 raft-rs" "run $r $RBP b4 raft-rs" \
         "gorun $r 'BenchmarkB4\$/^impl=etcd\$' 20x" \
         "gorun $r 'BenchmarkB4\$/^impl=raftlet-go\$' 20x" \
         "gorun $r 'BenchmarkB4\$/^impl=raftlet-go-view\$' 20x"
  # B5 runs 100,000 rounds of one read and 2,500 of 64 (about half a
  # second each): at 20,000 and 500 (a tenth of a second) every
  # implementation's figure moved up to 2x between rounds.
  row $r "run $r $RB b5 raftlet rounds=100000 per=1" "run $r $RB b5 raft-rs rounds=100000 per=1" \
         "run $r $RBP b5 raft-rs rounds=100000 per=1" \
         "gorun $r 'BenchmarkB5\$/^impl=etcd\$/^per=1\$' 100000x" \
         "gorun $r 'BenchmarkB5\$/^impl=raftlet-go\$/^per=1\$' 100000x" \
         "gorun $r 'BenchmarkB5\$/^impl=raftlet-go-view\$/^per=1\$' 100000x"
  row $r "run $r $RB b5 raftlet rounds=2500 per=64" "run $r $RB b5 raft-rs rounds=2500 per=64" \
         "run $r $RBP b5 raft-rs rounds=2500 per=64" \
         "gorun $r 'BenchmarkB5\$/^impl=etcd\$/^per=64\$' 2500x" \
         "gorun $r 'BenchmarkB5\$/^impl=raftlet-go\$/^per=64\$' 2500x" \
         "gorun $r 'BenchmarkB5\$/^impl=raftlet-go-view\$/^per=64\$' 2500x"
  row $r "run $r $RB b6 raftlet" "run $r $RB b6 raft-rs" "run $r $RBP b6 raft-rs"
  # B7: 10,000 groups, 1 % active; raftlet with quiescence against the peers
  # (and itself) without it.
  row $r "run $r $RB b7 raftlet rounds=${B7_ROUNDS}" "run $r $RB b7 raftlet-noquiesce rounds=${B7_ROUNDS}" \
         "run $r $RB b7 raft-rs rounds=${B7_ROUNDS}" \
         "gorun $r 'BenchmarkB7\$/^impl=etcd\$' ${B7_ROUNDS}x"
  row $r "run $r $RB c1 raftlet" "run $r $RB c1 raft-rs" "run $r $RBP c1 raft-rs"
  row $r "run $r $RB c1 raftlet zerocopy=1" "run $r $RB c1 raft-rs zerocopy=1" \
         "run $r $RBP c1 raft-rs zerocopy=1"
done
RUNS_END=$(date +%s)

# ------------------------------------------------------ callgrind profile
PROFILE=$OUT/profile
mkdir -p "$PROFILE"
"$RB" sizes > "$PROFILE/sizes.json"
# profile NAME CMD...: CMD under callgrind; its output, log and the self and
# inclusive annotations land in $PROFILE/NAME.*.
profile() {
  local name=$1
  shift
  echo "valgrind --tool=callgrind $*" >> "$OUT/commands.txt"
  valgrind --tool=callgrind --callgrind-out-file="$PROFILE/$name.out" "$@" \
    > "$PROFILE/$name.json" 2> "$PROFILE/$name.log"
  callgrind_annotate --auto=no --inclusive=no "$PROFILE/$name.out" > "$PROFILE/$name.self.txt" 2>/dev/null || true
  callgrind_annotate --auto=no --inclusive=yes "$PROFILE/$name.out" > "$PROFILE/$name.incl.txt" 2>/dev/null || true
}
if command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
  log "callgrind (instruction counts)"
  for spec in "b3 raftlet ops=20000" "b3 raft-rs ops=20000" \
              "b1 raftlet total=51200" "b1 raft-rs total=51200" \
              "b1 raftlet-nocoalesce total=51200" \
              "b1 raftlet total=51200 one=1" "b1 raft-rs total=51200 one=1"; do
    set -- $spec
    for bin in "$RB" "$RBP"; do
      # raftlet's rows once (from the prost build), raft-rs's with each codec.
      [ "$2" != raft-rs ] && [ "$bin" = "$RBP" ] && continue
      name=$1-$2
      [ "${4:-}" = one=1 ] && name=b1batch-$2
      [ "$2" = raft-rs ] && { [ "$bin" = "$RB" ] && name=$name-prost || name=$name-protobuf; }
      profile "$name" "$bin" $spec
    done
  done
  # The C ABI's B3 and B5 (what the Go view API calls, without Go).
  for h in abi_b3 abi_b5; do
    profile "${h//_/-}" "$OUT/$h" 20000
  done
else
  log "valgrind not installed: the profile section is skipped"
fi
END=$(date +%s)

python3 scripts/bench_report.py "$RESULTS" \
  --commands "$OUT/commands.txt" --profile "$PROFILE" --rounds "$ROUNDS" \
  --seconds "$((END - START))" --build-seconds "$((BUILD_END - START))" \
  --run-seconds "$((RUNS_END - BUILD_END))" --profile-seconds "$((END - RUNS_END))" \
  --md docs/bench.md --svg docs/bench.svg
log "done in $((END - START)) s: docs/bench.md, docs/bench.svg, $RESULTS"
