#!/usr/bin/env bash
# Builds the deck fuzzer with clang (libFuzzer + ASan + UBSan) and runs it for a bounded time.
#   tests/fuzz/run_fuzz.sh BUILD_DIR SECONDS
# Inputs: every deck in inputs/ and tests/regression/bad_decks/, tests/fuzz/seeds/ (decks with
# --set overrides, NUL-separated) and tests/fuzz/regressions/ (inputs that once broke the parser,
# run first). The corpus grows in BUILD_DIR/corpus. A finding is saved as BUILD_DIR/crash-* and
# fails the run; reproduce it with BUILD_DIR/fuzz_deck BUILD_DIR/crash-<hash>.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$1
seconds=$2
cxx=${KPMAP_FUZZ_CXX:-clang++}

cmake -S "$here/target" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"
mkdir -p "$build/corpus"
rm -f "$build"/crash-* "$build"/leak-* "$build"/timeout-* "$build"/oom-*
export TMPDIR="$build"
exec "$build/fuzz_deck" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$build/" "$build/corpus" "$here/regressions" "$here/seeds" "$root/inputs" \
  "$root/tests/regression/bad_decks"
