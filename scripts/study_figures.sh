#!/usr/bin/env bash
# The figures of docs/performance.md, "Running a study": one CSV and its PNGs.
#   [KPMAP=path/to/kpmap] scripts/study_figures.sh [OUT_DIR]   (defaults build/default/kpmap, docs/figures)
# 1. strong scaling of inputs/quickstart.yaml made larger (262144 x 64 fp32, batch 16384, 40 steps)
#    on 1, 2 and 4 ranks with every rank on `data`, and on 2 and 4 ranks with a model axis of 2;
# 2. a backend sweep of the same problem on 1 rank: OpenMP at 1 and 2 threads (build/default) and
#    the Serial backend (build/serial, when built: cmake --preset serial && cmake --build build/serial
#    --target kpmap_driver), both gradient kernels, fp32 and bf16.
# Each configuration runs 3 times, interleaved; the figures take the median.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/figures}
py=python3
"$py" -c "import matplotlib" 2>/dev/null || py=/usr/bin/python3  # Debian's python3-matplotlib
mkdir -p "$out"
csv=$out/study.csv
rm -f "$csv"
work=build/study-figures
problem=(--deck inputs/quickstart.yaml --steps 40 --repeat 3 --set problem.samples=262144
  --set problem.features=64 --set train.batch=16384 --set output.every=1000 --csv "$csv" --workdir "$work")
kpmap=${KPMAP:-build/default/kpmap}
kpmaps=(--kpmap "$kpmap")
[ -x build/serial/kpmap ] && kpmaps+=(--kpmap build/serial/kpmap)
"$py" scripts/study.py run strong "${problem[@]}" --ranks 1,2,4 --mesh '*x1' --kpmap "$kpmap"
"$py" scripts/study.py run strong "${problem[@]}" --ranks 2,4 --mesh '*x2' --kpmap "$kpmap"
"$py" scripts/study.py run backend "${problem[@]}" --ranks 1 --threads 1,2 "${kpmaps[@]}"
"$py" scripts/study.py plot "$csv" --out "$out"
