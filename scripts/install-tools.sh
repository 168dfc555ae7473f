#!/usr/bin/env bash
# Installs the pinned build tools the project needs, idempotently, into
# build/tools (cargo install --root). A fresh machine has only the
# toolchains; everything else comes from here.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD/build/tools"
CBINDGEN_VERSION=0.29.4

# System packages the C checks use; the machine image normally has them.
missing=()
command -v valgrind >/dev/null || missing+=(valgrind)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v c++ >/dev/null || missing+=(g++)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} with apt-get"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${missing[@]}"
fi

want() { # name version
  [ -x "$ROOT/bin/$1" ] && "$ROOT/bin/$1" --version 2>/dev/null | grep -q "$2"
}

if ! want cbindgen "$CBINDGEN_VERSION"; then
  echo "installing cbindgen $CBINDGEN_VERSION into build/tools"
  cargo install --quiet --locked --root "$ROOT" cbindgen --version "$CBINDGEN_VERSION"
fi
