#!/usr/bin/env bash
# The README's first command: set up, build, and run inputs/quickstart.yaml on 2 ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh default
echo "[kpmap] mpiexec -n 2 build/default/kpmap inputs/quickstart.yaml" >&2
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_PROC_BIND=${OMP_PROC_BIND:-false} mpiexec -n 2 build/default/kpmap inputs/quickstart.yaml "$@"
