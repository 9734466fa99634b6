#!/usr/bin/env python3
"""Checks that training reports hold the same bits: same_bits.py REPORT.json REPORT.json ...

Every report must say "reproducible": true and have the same history (step and loss of every
entry), final_loss and weights_rel_error as the first, compared exactly (the JSON numbers are
written with enough digits to give back the same double). Exit 0 when all match, 1 otherwise,
printing each mismatch."""
import json
import sys


def fingerprint(report):
    return ([(h["step"], h["loss"]) for h in report["history"]], report["final_loss"], report.get("weights_rel_error"))


def main(paths):
    if len(paths) < 2:
        print("same_bits.py: give at least two reports", file=sys.stderr)
        return 2
    reports = {p: json.load(open(p)) for p in paths}
    failures = []
    first = paths[0]
    for path, report in reports.items():
        if report.get("reproducible") is not True:
            failures.append(f"{path}: not a reproducible run")
    want = fingerprint(reports[first])
    for path in paths[1:]:
        got = fingerprint(reports[path])
        for (step, a), (_, b) in zip(got[0], want[0]):
            if a != b:
                failures.append(f"{path}: step {step} loss {a!r} != {b!r} in {first}")
        if len(got[0]) != len(want[0]):
            failures.append(f"{path}: {len(got[0])} history entries, {first} has {len(want[0])}")
        for name, a, b in (("final_loss", got[1], want[1]), ("weights_rel_error", got[2], want[2])):
            if a != b:
                failures.append(f"{path}: {name} {a!r} != {b!r} in {first}")
    for f in failures:
        print(f)
    if not failures:
        print(f"same bits in {len(paths)} reports")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
