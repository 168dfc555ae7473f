#!/usr/bin/env bash
# Builds and tests the Python package (bindings/python), idempotently:
#   1. a virtualenv in build/venv with pinned maturin, pytest and mypy;
#   2. the abi3 wheel, built by maturin into build/wheels and installed;
#   3. pytest over bindings/python/tests;
#   4. mypy.stubtest of raftlet._raftlet against _raftlet.pyi, and
#      mypy --strict over the example (the stubs must type real code);
#   5. the example, examples/python/story.py.
# With --wheel-only (make wheel) it stops after the wheel and the fresh
# venv (steps 1, 2 and 2b), which is also the venv scripts/check-readme.py
# runs the READMEs' Python blocks in. Installing from source (pip install
# ./bindings/python, maturin as the PEP 517 backend) is what the README of
# bindings/python tells users, and check-readme runs those commands.
# Needs only python3 (with its venv module) and the Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEEL_ONLY=0
case "${1:-}" in
  --wheel-only) WHEEL_ONLY=1 ;;
  "") ;;
  *) echo "usage: $0 [--wheel-only]" >&2; exit 2 ;;
esac

MATURIN_VERSION=1.16.0
PYTEST_VERSION=9.2.0
MYPY_VERSION=2.4.1

VENV=build/venv
WHEELS=build/wheels
PY="$VENV/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1
export MYPY_CACHE_DIR="$PWD/build/mypy-cache"

# 1. The virtualenv (recreated if it is missing or broken).
if ! "$PY" -c 'import sys' >/dev/null 2>&1; then
  rm -rf "$VENV"
  echo "python-test: creating $VENV"
  if ! python3 -m venv "$VENV"; then
    echo "python-test: 'python3 -m venv' failed; install Python's venv module (Debian: python3-venv)" >&2
    exit 1
  fi
fi
"$PY" -m pip install --quiet \
  "maturin==$MATURIN_VERSION" "pytest==$PYTEST_VERSION" "mypy==$MYPY_VERSION"

# 2. The wheel. Old wheels go first so exactly one is installed.
mkdir -p "$WHEELS"
rm -f "$WHEELS"/raftlet-*.whl
"$VENV/bin/maturin" build --release --quiet -m bindings/python/Cargo.toml -o "$WHEELS"
shopt -s nullglob
wheels=("$WHEELS"/raftlet-*.whl)
shopt -u nullglob
if [ "${#wheels[@]}" -ne 1 ]; then
  echo "python-test: expected one wheel in $WHEELS, found ${#wheels[@]}" >&2
  exit 1
fi
"$PY" -m pip install --quiet --force-reinstall --no-deps "${wheels[0]}"

# 2b. The wheel installs into a fresh virtualenv and reports its version.
FRESH=build/venv-fresh
rm -rf "$FRESH"
python3 -m venv "$FRESH"
"$FRESH/bin/python" -m pip install --quiet --no-deps "${wheels[0]}"
want=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
got=$("$FRESH/bin/python" -c "import raftlet; print(raftlet.__version__)")
if [ "$got" != "$want" ]; then
  echo "python-test: fresh venv reports version '$got', Cargo.toml says '$want'" >&2
  exit 1
fi
echo "python-test: fresh venv: import raftlet -> __version__ $got"
if [ "$WHEEL_ONLY" = 1 ]; then
  echo "python-test: wheel ${wheels[0]} (installed in $FRESH)"
  exit 0
fi

# 3. pytest. An empty collection (pytest's exit code 5) is a failure here.
if ! compgen -G "bindings/python/tests/test_*.py" >/dev/null; then
  echo "python-test: no test files in bindings/python/tests" >&2
  exit 1
fi
set +e
"$PY" -m pytest -q -p no:cacheprovider bindings/python/tests
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "python-test: pytest collected no tests" >&2
  exit 1
elif [ "$rc" -ne 0 ]; then
  exit "$rc"
fi

# 4. The stubs against the compiled module, and the example against the stubs.
"$PY" -m mypy.stubtest raftlet._raftlet
"$PY" -m mypy --strict examples/python/story.py examples/python/disk_restart.py
"$PY" -m mypy --strict -m raftlet.frame

# 5. The example (exits non-zero if the story does not unfold as told).
"$PY" examples/python/story.py >/dev/null
"$PY" examples/python/disk_restart.py >/dev/null
echo "python-test: the examples ran (examples/python/story.py, disk_restart.py)"
