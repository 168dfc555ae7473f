#!/usr/bin/env bash
# What a C user does with `make install`: install into a fresh prefix, copy
# examples/c/cluster.c into a directory outside the checkout, and build it
# there through pkg-config, the two ways README.md shows:
#   shared  `pkg-config --cflags --libs`, the loader finding libraftlet.so
#           through the rpath (LD_LIBRARY_PATH is cleared for the run);
#   static  `pkg-config --static --libs` between -Wl,-Bstatic and
#           -Wl,-Bdynamic: libraftlet.a goes into the program, the system
#           libraries stay shared.
# Each binary is checked to need (or not need) libraftlet.so, then run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
CC=${CC:-cc}
STRICT=(-std=c11 -Wall -Wextra -Wpedantic -Werror)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
make --no-print-directory -s install PREFIX="$prefix" >/dev/null
for f in lib/libraftlet.a lib/libraftlet.so include/raftlet.h lib/pkgconfig/raftlet.pc; do
  [ -e "$prefix/$f" ] || { echo "install-test: make install did not install $f" >&2; exit 1; }
done
mkdir "$work/user"
cp examples/c/cluster.c "$work/user/"
cd "$work/user"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
unset LD_LIBRARY_PATH

libdir=$(pkg-config --variable=libdir raftlet)
[ "$libdir" = "$prefix/lib" ] || { echo "install-test: raftlet.pc says libdir $libdir" >&2; exit 1; }
# shellcheck disable=SC2046 # pkg-config output is a list of flags
"$CC" "${STRICT[@]}" cluster.c -o cluster-shared $(pkg-config --cflags --libs raftlet) -Wl,-rpath,"$libdir"
# shellcheck disable=SC2046
"$CC" "${STRICT[@]}" cluster.c -o cluster-static $(pkg-config --cflags raftlet) \
  -Wl,-Bstatic $(pkg-config --static --libs raftlet) -Wl,-Bdynamic

needs() { readelf -d "$1" | grep -q "NEEDED.*\[libraftlet\.so\]"; }
needs cluster-shared || { echo "install-test: cluster-shared does not load libraftlet.so" >&2; exit 1; }
if needs cluster-static; then
  echo "install-test: cluster-static still loads libraftlet.so" >&2
  exit 1
fi
./cluster-shared >/dev/null
# The static binary runs with the shared library out of reach.
mv "$prefix/lib/libraftlet.so" "$work/hidden.so"
./cluster-static >/dev/null
mv "$work/hidden.so" "$prefix/lib/libraftlet.so"
cd "$root"
echo "install-test: examples/c/cluster.c built outside the tree through pkg-config, shared (rpath) and static, and ran"
