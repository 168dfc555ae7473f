#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for FUZZ_SECONDS (default 60) each.
#
# Installs cargo-fuzz into build/tools on first use (idempotent) and needs
# the nightly toolchain (cargo +nightly). Corpora accumulate in
# fuzz/corpus/<target> (not committed); crashes land in
# fuzz/artifacts/<target>, and the script fails if any target found one.
# Replay a crash with: cargo +nightly fuzz run --fuzz-dir fuzz <target> <file>
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
TOOLS="$PWD/build/tools"

if [ ! -x "$TOOLS/bin/cargo-fuzz" ]; then
  echo "fuzz: installing cargo-fuzz into $TOOLS"
  cargo install cargo-fuzz --locked --root "$TOOLS"
fi
export PATH="$TOOLS/bin:$PATH"

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz: the nightly toolchain is required (rustup toolchain install nightly)" >&2
  exit 1
fi

targets=$(cargo +nightly fuzz list --fuzz-dir fuzz)
for t in $targets; do
  mkdir -p "fuzz/corpus/$t"
  seeds=()
  [ -d "fuzz/seeds/$t" ] && seeds=("fuzz/seeds/$t")
  echo "fuzz: $t for ${FUZZ_SECONDS}s"
  cargo +nightly fuzz run --fuzz-dir fuzz --release "$t" "fuzz/corpus/$t" "${seeds[@]}" -- \
    -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -print_final_stats=1
done
echo "fuzz: every target ran ${FUZZ_SECONDS}s without a crash"
