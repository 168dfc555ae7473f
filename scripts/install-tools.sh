#!/usr/bin/env bash
# Installs the pinned build tools the project needs, idempotently, into
# build/tools (cargo install --root). A fresh machine has only the
# toolchains; everything else comes from here.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD/build/tools"
CBINDGEN_VERSION=0.29.4

want() { # name version
  [ -x "$ROOT/bin/$1" ] && "$ROOT/bin/$1" --version 2>/dev/null | grep -q "$2"
}

if ! want cbindgen "$CBINDGEN_VERSION"; then
  echo "installing cbindgen $CBINDGEN_VERSION into build/tools"
  cargo install --quiet --locked --root "$ROOT" cbindgen --version "$CBINDGEN_VERSION"
fi
