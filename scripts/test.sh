#!/usr/bin/env bash
# The README's test command: set up, build, and run the test suite.
#   scripts/test.sh                       both stages below (what CI runs)
#   scripts/test.sh PRESET [ctest args]   one preset: build it, ctest --preset PRESET -LE perf [args]
# Stage 1: preset default (OpenMP, Release), every test but label perf.
# Stage 2: preset asan (Serial, AddressSanitizer + UndefinedBehaviorSanitizer), the unit and MPI
#          tests (labels unit, mpi): any sanitizer report fails its test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  bash scripts/test.sh default
  bash scripts/test.sh asan -L 'unit|mpi'
  exit 0
fi
preset=$1
shift
bash scripts/build.sh "$preset"
echo "[kpmap] ctest --preset $preset -LE perf $*" >&2
ctest --preset "$preset" -LE perf -j "$(nproc)" "$@"
