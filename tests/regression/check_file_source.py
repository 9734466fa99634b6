#!/usr/bin/env python3
"""Trains the same deck twice, once as it is and once with problem.source replaced, and checks
that the two reports hold the same bits: every history entry, final_loss and weights_rel_error
(both present or both absent; support/histories.py).

  check_file_source.py --source hdf5:FILE --dir DIR [--set K=V ...] -- LAUNCHER... KPMAP DECK

A file that holds exactly the deck's data (kpmap write-synthetic, or kpmap convert-csv of the
deck's CSV) must give the history the deck's own source gives, on any mesh (--set mesh.axes=...)."""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from histories import differences, load_report  # noqa: E402


def run(command, report):
    done = subprocess.run(command + ["--output", report], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        print(done.stdout)
        sys.exit(f"check_file_source.py: exit code {done.returncode} from {' '.join(command)}")
    return load_report(report)


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
    failures = differences(got, want, a.source, "the deck's source")
    if not want.get("history"):
        failures.append("no history entries with the deck's source")
    for f in failures:
        print(f)
    if not failures:
        print(f"same bits in {len(got['history'])} steps, final_loss {got.get('final_loss')!r}, "
              f"weights_rel_error {got.get('weights_rel_error')!r}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
