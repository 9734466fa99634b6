#!/usr/bin/env bash
# The README's second command: set up, build, and run the whole test suite (all but label perf).
#   scripts/test.sh [PRESET] [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
shift || true
bash scripts/build.sh "$preset"
echo "[kpmap] ctest --preset $preset -LE perf" >&2
ctest --preset "$preset" -LE perf -j "$(nproc)" "$@"
