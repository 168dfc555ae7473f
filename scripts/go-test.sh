#!/usr/bin/env bash
# Builds and tests the Go package (bindings/go), the interop tests with
# etcd raft (tests/interop) and the Go example (examples/go):
#   1. the static library, target/release/libraftlet.a, that cgo links;
#   2. gofmt and go vet over the three modules;
#   3. go test -race over the binding and the interop tests (the seeded
#      mixed-cluster schedules: INTEROP_SEEDS, default 240);
#   4. the binding's unit tests again with GOGC=1, so the garbage
#      collector runs all the time and the cleanups of forgotten handles
#      fire under the calls;
#   5. the example, a 3 raftlet + 2 etcd cluster.
# Needs the Rust toolchain, a C compiler, and Go 1.24+ with access to the
# Go module proxy (go.etcd.io/raft/v3 and its dependencies, pinned by the
# committed go.sum files).
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
MODULES=(bindings/go tests/interop examples/go)
export CGO_ENABLED=1

if ! command -v go >/dev/null; then
  echo "go-test: the Go toolchain (go 1.24 or later) is not installed" >&2
  exit 1
fi
echo "go-test: $(go version)"

# 1. The static library.
"$CARGO" build --release -p raftlet-ffi
lib="${CARGO_TARGET_DIR:-target}/release/libraftlet.a"
if [ "$(realpath "$lib")" != "$(realpath -m target/release/libraftlet.a)" ]; then
  # cgo links ${SRCDIR}/../../target/release/libraftlet.a.
  mkdir -p target/release
  cp "$lib" target/release/libraftlet.a
fi

# 2. Format and vet.
for m in "${MODULES[@]}"; do
  unformatted=$(cd "$m" && gofmt -l .)
  if [ -n "$unformatted" ]; then
    echo "go-test: gofmt would change, in $m: $unformatted" >&2
    exit 1
  fi
  (cd "$m" && go vet ./...)
done
echo "go-test: gofmt and go vet clean"

# 3. The binding's tests and the interop tests under the race detector.
(cd bindings/go && go test -race -count=1 ./...)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! (cd tests/interop && go test -race -count=1 -v ./... >"$log" 2>&1); then
  tail -n 80 "$log"
  exit 1
fi
grep -E '^(--- |ok|PASS|FAIL)|schedules, ' "$log" | grep -v '^    --- PASS' | sed 's/^ *//'

# 4. The binding's unit tests with the collector always running.
(cd bindings/go && GOGC=1 go test -count=1 ./...)

# 5. The example.
(cd examples/go && go run . >/dev/null)
echo "go-test: the example ran (examples/go)"
