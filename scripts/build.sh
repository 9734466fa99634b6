#!/usr/bin/env bash
# Sets up what is missing (scripts/setup.sh), configures and builds kpmap with a CMake preset.
#   scripts/build.sh [PRESET]     PRESET: default (OpenMP, Release) | debug | asan
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
bash scripts/setup.sh
echo "[kpmap] configuring and building (preset $preset) in build/$preset" >&2
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
