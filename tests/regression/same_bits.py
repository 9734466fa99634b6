#!/usr/bin/env python3
"""Checks that training reports hold the same bits: same_bits.py REPORT.json REPORT.json ...

Every report must say "reproducible": true and have the same history, final_loss and
weights_rel_error as the first, bit for bit (support/histories.py). Exit 0 when all match, 1
otherwise, printing each mismatch."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from histories import differences, load_report  # noqa: E402


def main(paths):
    if len(paths) < 2:
        print("same_bits.py: give at least two reports", file=sys.stderr)
        return 2
    reports = {p: load_report(p) for p in paths}
    failures = []
    first = paths[0]
    for path, report in reports.items():
        if report.get("reproducible") is not True:
            failures.append(f"{path}: not a reproducible run")
    for path in paths[1:]:
        failures += [f"{path}: {d}" for d in differences(reports[path], reports[first], path, first)]
    for f in failures:
        print(f)
    if not failures:
        print(f"same bits in {len(paths)} reports")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
