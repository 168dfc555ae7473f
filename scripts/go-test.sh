#!/usr/bin/env bash
# Builds and tests the Go package (bindings/go), the interop tests with
# etcd raft (tests/interop), the Go example (examples/go) and the kv
# service (examples/kv):
#   1. the static library, target/release/libraftlet.a, that cgo links
#      under the build tag raftlet_intree (set through GOFLAGS for every
#      step but the last);
#   2. gofmt and go vet over the three modules;
#   3. go test -race over the binding and the interop tests (the seeded
#      mixed-cluster schedules: INTEROP_SEEDS, default 240);
#   4. the binding's unit tests again with GOGC=1, so the garbage
#      collector runs all the time and the cleanups of forgotten handles
#      fire under the calls;
#   5. the example, a 3 raftlet + 2 etcd cluster; the kv service's tests
#      under the race detector (real processes on loopback: the demo's
#      story, a 5-node rolling restart under load), then its demo;
#   6. the way a user builds: the example in a module of its own outside
#      the checkout (a replace directive points at bindings/go), without
#      the tag, against `make install` into a temporary prefix found
#      through pkg-config, linked to libraftlet.so through an rpath.
# Needs the Rust toolchain, a C compiler, and Go 1.24+ with access to the
# Go module proxy (go.etcd.io/raft/v3 and its dependencies, pinned by the
# committed go.sum files).
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
MODULES=(bindings/go tests/interop examples/go examples/kv)
export CGO_ENABLED=1
IN_TREE_TAG=raftlet_intree

if ! command -v go >/dev/null; then
  echo "go-test: the Go toolchain (go 1.24 or later) is not installed" >&2
  exit 1
fi
echo "go-test: $(go version)"
# GOFLAGS in the environment replaces the one of `go env -w`: keep it.
USER_GOFLAGS=$(go env GOFLAGS)
export GOFLAGS="${USER_GOFLAGS:+$USER_GOFLAGS }-tags=$IN_TREE_TAG"

# 1. The static library.
"$CARGO" build --release -p raftlet-ffi
lib="${CARGO_TARGET_DIR:-target}/release/libraftlet.a"
if [ "$(realpath "$lib")" != "$(realpath -m target/release/libraftlet.a)" ]; then
  # With the tag, cgo links ${SRCDIR}/../../target/release/libraftlet.a.
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
(cd examples/kv && go test -race -count=1 ./...)
kvbin=$(mktemp -d)
if ! demo_out=$(cd examples/kv && go build -o "$kvbin/kv" . && go run ./demo -kv "$kvbin/kv" 2>&1); then
  echo "$demo_out"
  rm -rf "$kvbin"
  exit 1
fi
rm -rf "$kvbin"
echo "go-test: the kv demo ran (examples/kv/demo)"

# 6. As a user builds it: an installed raftlet, a module of its own.
export GOFLAGS="$USER_GOFLAGS"
root=$PWD
work=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$work"' EXIT
make --no-print-directory -s install PREFIX="$work/prefix" >/dev/null
mkdir "$work/example"
cp examples/go/main.go "$work/example/"
(
  cd "$work/example"
  export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
  export CGO_LDFLAGS="-Wl,-rpath,$work/prefix/lib"
  go mod init example.com/raftlet-example >/dev/null 2>&1
  go mod edit -replace "github.com/raftlet/raftlet/bindings/go=$root/bindings/go"
  # The binding is written against raftpb v3.6.0 (gogoproto types);
  # without this, tidy would pick the newest etcd raft for the example.
  go mod edit -require=go.etcd.io/raft/v3@v3.6.0
  cp "$root/examples/go/go.sum" .
  go mod tidy >/dev/null 2>&1 || { go mod tidy; exit 1; }
  go build -o example .
  if ! readelf -d example | grep -q 'NEEDED.*libraftlet\.so'; then
    echo "go-test: the pkg-config build did not link libraftlet.so" >&2
    exit 1
  fi
  env -u LD_LIBRARY_PATH ./example >/dev/null
)
echo "go-test: the example built outside the checkout through pkg-config (shared, rpath) and ran"
