#!/usr/bin/env python3
"""Checks the report of a run that stopped at a non-finite loss or gradient.

check_stopped.py REPORT.json [--step K] [--rank R] [--checkpoints DIR]

The report must name the stop (stopped.reason, .step, .rank), hold the history of steps
1 .. step - 1 with a finite number for every loss (no nulls) and, when that history is not
empty, final_loss equal to its last loss. --step / --rank: the values stopped must have.
--checkpoints: a run with checkpoint.every 1; its newest checkpoint must be that of the last good
step (step - 1), none of the stopped step, and no temporary file left.
"""
import argparse
import json
import math
import os
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("report")
    p.add_argument("--step", type=int)
    p.add_argument("--rank", type=int)
    p.add_argument("--checkpoints")
    a = p.parse_args()
    report = json.load(open(a.report))
    problems = []
    stop = report.get("stopped")
    if not stop:
        print(f"FAIL: {a.report} has no 'stopped'")
        return 1
    if stop.get("reason") != "non-finite loss or gradient":
        problems.append(f"stopped.reason {stop.get('reason')!r}")
    if a.checkpoints:
        names = sorted(os.listdir(a.checkpoints))
        steps = [int(n[5:13]) for n in names if n.startswith("ckpt-") and n.endswith(".h5")]
        if not steps or max(steps) != stop.get("step", 0) - 1 or len(steps) != len(names):
            problems.append(f"checkpoints {names}: expected the newest at step {stop.get('step', 0) - 1} and nothing else")
    if a.step is not None and stop.get("step") != a.step:
        problems.append(f"stopped.step {stop.get('step')}, expected {a.step}")
    if a.rank is not None and stop.get("rank") != a.rank:
        problems.append(f"stopped.rank {stop.get('rank')}, expected {a.rank}")
    history = report.get("history", [])
    if [h.get("step") for h in history] != list(range(1, stop.get("step", 0))):
        problems.append(f"history steps {[h.get('step') for h in history]} are not 1 .. {stop.get('step', 0) - 1}")
    for h in history:
        loss = h.get("loss")
        if not isinstance(loss, (int, float)) or not math.isfinite(loss):
            problems.append(f"history[step {h.get('step')}].loss is {loss!r}")
    if history and report.get("final_loss") != history[-1].get("loss"):
        problems.append(f"final_loss {report.get('final_loss')!r} is not the last loss {history[-1].get('loss')!r}")
    if not history and "final_loss" in report:
        problems.append("final_loss present without a history")
    for problem in problems:
        print("FAIL: " + problem)
    if not problems:
        print(f"OK: stopped at step {stop['step']}, rank {stop['rank']}, {len(history)} finite losses before")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
