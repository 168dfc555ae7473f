#!/usr/bin/env bash
# The linearizability test of examples/kv (tests/jepsen, issue #16).
#
#   scripts/jepsen.sh test   the bounded run of `make test` (make test-jepsen):
#                            gofmt and go vet of tests/jepsen, its unit tests
#                            under the race detector (checker on hand-written
#                            histories, proxies, schedules), the harness
#                            against fakekv (a store linearizable by
#                            construction: 10 s must pass, 10 s with stale
#                            reads must be caught), then two runs against
#                            real kv processes: 60 s of kills, pauses
#                            and partitions that must be linearizable with no
#                            acknowledged write lost, and 40 s with
#                            --unsafe-stale-reads that must be reported NOT
#                            linearizable. About 2.5 minutes.
#   scripts/jepsen.sh full   `make jepsen`: JEPSEN_SCHEDULES schedules (default
#                            20) of JEPSEN_MINUTES minutes (default 5), seeds
#                            from JEPSEN_SEED (default: the clock), membership
#                            changes among the faults (remove a node, wipe it,
#                            add it back with --join), then one
#                            more of at most a minute with stale reads planted,
#                            which must be reported NOT linearizable; writes
#                            docs/jepsen.md. JEPSEN_LABEL labels shortened runs.
#
# Histories, node logs and, for a failing run, porcupine's visualization
# (linearizability.html) go to build/jepsen/. Needs the Rust toolchain (for
# libraftlet.a, which the kv binary links), a C compiler and Go 1.24+ with
# access to the Go module proxy (toxiproxy, porcupine; pinned by go.sum).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-test}
CARGO=${CARGO:-cargo}
export CGO_ENABLED=1

if ! command -v go >/dev/null; then
  echo "jepsen: the Go toolchain (go 1.24 or later) is not installed" >&2
  exit 1
fi
"$CARGO" build --release -p raftlet-ffi
lib="${CARGO_TARGET_DIR:-target}/release/libraftlet.a"
if [ "$(realpath "$lib")" != "$(realpath -m target/release/libraftlet.a)" ]; then
  mkdir -p target/release
  cp "$lib" target/release/libraftlet.a
fi
mkdir -p build/jepsen

case "$mode" in
test)
  unformatted=$(cd tests/jepsen && gofmt -l .)
  if [ -n "$unformatted" ]; then
    echo "jepsen: gofmt would change, in tests/jepsen: $unformatted" >&2
    exit 1
  fi
  (cd tests/jepsen && go vet ./... && go test -race -short -count=1 ./...)
  log=build/jepsen/test.log
  if ! (cd tests/jepsen && go test -count=1 -v -timeout 10m -run 'TestHarnessOnFakeKV|TestBounded' ./... >"../../$log" 2>&1); then
    grep -E 'seed|--- |FAIL|panic' "$log" | tail -n 80
    echo "jepsen: the bounded run failed; full log in $log, histories and node logs in build/jepsen/test/" >&2
    exit 1
  fi
  grep -E '^(--- |ok|PASS)|seed [0-9]+: (checker|convergence|crash|keys)|ops in|ok/s' "$log" | sed 's/^ *//'
  ;;
full)
  args=(-schedules "${JEPSEN_SCHEDULES:-20}" -minutes "${JEPSEN_MINUTES:-5}" -membership -stale-check -report ../../docs/jepsen.md)
  [ -n "${JEPSEN_SEED:-}" ] && args+=(-seed "$JEPSEN_SEED")
  [ -n "${JEPSEN_LABEL:-}" ] && args+=(-label "$JEPSEN_LABEL")
  (cd tests/jepsen && go run . "${args[@]}")
  ;;
*)
  echo "usage: $0 test|full" >&2
  exit 2
  ;;
esac
