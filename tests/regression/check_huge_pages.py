#!/usr/bin/env python3
"""Checks the report's data_huge_pages (docs/train.md, docs/performance.md "Huge pages").

check_huge_pages.py DIR -- LAUNCHER... KPMAP DECK

Runs the command twice with 65536 samples of 64 fp32 features (8 MiB of X per rank at np 2) and
2 steps, writing DIR/huge_pages_on.json and DIR/huge_pages_off.json: the first as the
environment is, the second with KPMAP_HUGE_PAGES=0. Every rank's X must have been advised to take
transparent huge pages (data_huge_pages 1 on every rank) where Linux offers them (its mode in
/sys/kernel/mm/transparent_hugepage/enabled is not `never`) and X is in host memory (a host
execution space); otherwise, and with KPMAP_HUGE_PAGES=0, on none. The two runs' histories must be
the same bits: huge pages change where X lives, not what it holds.
"""
import json
import os
import subprocess
import sys

HOST_SPACES = ("OpenMP", "Serial", "Threads")


def offered():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[never]" not in f.read()
    except OSError:
        return False


def run(command, report, env):
    args = command + ["--set", "problem.samples=65536", "--set", "train.batch=4096", "--set", "train.steps=2",
                      "--set", "precision={compute: fp32, params: fp32, comm: fp32}", "--output", report]
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        return json.load(f)


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: check_huge_pages.py DIR -- LAUNCHER... KPMAP DECK")
    out, command = sys.argv[1], sys.argv[3:]
    env = {k: v for k, v in os.environ.items() if k != "KPMAP_HUGE_PAGES"}
    on = run(command, os.path.join(out, "huge_pages_on.json"), env)
    off = run(command, os.path.join(out, "huge_pages_off.json"), dict(env, KPMAP_HUGE_PAGES="0"))
    host = on["versions"]["execution_space"] in HOST_SPACES
    expected = 1.0 if host and offered() else 0.0
    failures = []
    for name, report, want in (("default", on, expected), ("KPMAP_HUGE_PAGES=0", off, 0.0)):
        got = report.get("data_huge_pages")
        if got != {"min": want, "avg": want, "max": want}:
            failures.append(f"{name}: data_huge_pages is {got}, expected {want} on every rank")
    if [h["loss"] for h in on["history"]] != [h["loss"] for h in off["history"]]:
        failures.append("the histories with and without huge pages differ")
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print(f"data_huge_pages: {expected} on every rank by default, 0 with KPMAP_HUGE_PAGES=0; same history")


if __name__ == "__main__":
    main()
