#!/usr/bin/env bash
# Regenerates the regression references tests/regression/reference/<deck>.json from the current
# build, for the decks named (default: every deck that has a reference).
#   scripts/update_references.sh [DECK ...]      e.g. scripts/update_references.sh dp4 adam
# Only when a change of results is intended (see README, "Regression references"): the new
# files are committed with a message that says why the numbers moved.
set -euo pipefail
cd "$(dirname "$0")/.."
exe=${KPMAP_BUILD:-build/default}/kpmap  # KPMAP_BUILD picks another build tree
[ -x "$exe" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
decks=("$@")
if [ ${#decks[@]} -eq 0 ]; then
  for f in tests/regression/reference/*.json; do decks+=("$(basename "$f" .json)"); done
fi
for deck in "${decks[@]}"; do
  file=inputs/$deck.yaml
  np=$(sed -n 's/^# ranks: \([0-9]\+\).*/\1/p' "$file" | head -n1)
  [ -n "$np" ] || { echo "$file: header lacks '# ranks: N'" >&2; exit 2; }
  out=$(mktemp)
  OMP_NUM_THREADS=1 mpiexec -n "$np" "$exe" "$file" --output "$out" >/dev/null
  python3 - "$out" "tests/regression/reference/$deck.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for key in ("timing", "versions"):
    report.pop(key, None)
json.dump(report, open(sys.argv[2], "w"), indent=2)
open(sys.argv[2], "a").write("\n")
PY
  rm -f "$out"
  echo "updated tests/regression/reference/$deck.json ($np ranks)"
done
