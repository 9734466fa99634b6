#!/usr/bin/env python3
"""Trains the same deck twice, once as it is and once with problem.source replaced, and checks
that the two reports hold the same bits: every (step, loss), final_loss and weights_rel_error
(both present or both absent).

  check_file_source.py --source hdf5:FILE --dir DIR [--set K=V ...] -- LAUNCHER... KPMAP DECK

A file that holds exactly the deck's data (kpmap write-synthetic, or kpmap convert-csv of the
deck's CSV) must give the history the deck's own source gives, on any mesh (--set mesh.axes=...)."""
import argparse
import json
import os
import subprocess
import sys


def run(command, report):
    done = subprocess.run(command + ["--output", report], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        print(done.stdout)
        sys.exit(f"check_file_source.py: exit code {done.returncode} from {' '.join(command)}")
    with open(report) as f:
        r = json.load(f)
    return [(h["step"], h["loss"]) for h in r["history"]], r.get("final_loss"), r.get("weights_rel_error")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--set", action="append", default=[])
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    command = [c for c in a.command if c != "--"]
    for s in a.set:
        command += ["--set", s]
    os.makedirs(a.dir, exist_ok=True)
    want = run(command, os.path.join(a.dir, "deck_source.json"))
    got = run(command + ["--set", "problem.source=" + a.source], os.path.join(a.dir, "file_source.json"))
    failures = []
    if len(got[0]) != len(want[0]) or not want[0]:
        failures.append(f"{len(got[0])} history entries with {a.source}, {len(want[0])} with the deck's source")
    for (step, x), (_, y) in zip(got[0], want[0]):
        if x != y:
            failures.append(f"step {step}: loss {x!r} with {a.source}, {y!r} with the deck's source")
    for name, x, y in (("final_loss", got[1], want[1]), ("weights_rel_error", got[2], want[2])):
        if x != y:
            failures.append(f"{name}: {x!r} with {a.source}, {y!r} with the deck's source")
    for f in failures:
        print(f)
    if not failures:
        print(f"same bits in {len(got[0])} steps, final_loss {got[1]!r}, weights_rel_error {got[2]!r}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
