#!/usr/bin/env bash
# Builds a fuzzer with clang (libFuzzer + ASan + UBSan) and runs it for a bounded time.
#   tests/fuzz/run_fuzz.sh BUILD_DIR SECONDS [deck|csv]
# deck (the default): every deck in inputs/ and tests/regression/bad_decks/, tests/fuzz/seeds/
# (decks with --set overrides, NUL-separated) and tests/fuzz/regressions/ (inputs that once broke
# the parser, run first). csv: the CSV reader, seeded with inputs/data/, tests/fuzz/csv_seeds/ and
# tests/regression/bad_data/. The corpus grows in BUILD_DIR/corpus. A finding is saved as
# BUILD_DIR/crash-* and fails the run; reproduce it with BUILD_DIR/fuzz_TARGET BUILD_DIR/crash-<hash>.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$1
seconds=$2
target=${3:-deck}
cxx=${KPMAP_FUZZ_CXX:-clang++}
case $target in
  deck) inputs=("$here/regressions" "$here/seeds" "$root/inputs" "$root/tests/regression/bad_decks") ;;
  csv) inputs=("$here/csv_seeds" "$root/inputs/data" "$root/tests/regression/bad_data") ;;
  *) echo "run_fuzz.sh: unknown target '$target' (allowed: deck, csv)" >&2; exit 2 ;;
esac

cmake -S "$here/target" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target "fuzz_$target"
mkdir -p "$build/corpus"
rm -f "$build"/crash-* "$build"/leak-* "$build"/timeout-* "$build"/oom-*
export TMPDIR="$build"
exec "$build/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$build/" "$build/corpus" "${inputs[@]}"
