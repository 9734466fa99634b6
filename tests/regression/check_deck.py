#!/usr/bin/env python3
"""Runs a deck and compares its JSON report with the stored reference.

check_deck.py --report OUT.json --reference REF.json -- mpiexec -n 2 kpmap deck.yaml --output OUT.json

What is compared, and how closely (tolerances set by precision.compute):
  config, mesh, memory, comm_bytes   exactly (they do not depend on rounding; config without
                                     output.report, the path the report was written to)
  history[].step                     exactly
  history[].loss, final_loss         |a - b| <= rtol * max(|a|, |b|) + atol * history[0].loss
  weights_rel_error                  |a - b| <= rtol * max(|a|, |b|) + atol
timing and versions are not compared (they describe the machine, not the answer).
On failure every mismatch is printed on its own line.
"""
import argparse
import json
import subprocess
import sys

TOLERANCES = {  # precision.compute -> (rtol, atol)
    "fp64": (1e-9, 1e-13),
    "fp32": (2e-4, 1e-6),
    "bf16": (2e-2, 1e-3),
    "fp16": (5e-3, 1e-4),
}
EXACT = ("config", "mesh", "memory", "comm_bytes")


def close(a, b, rtol, atol):
    return abs(a - b) <= rtol * max(abs(a), abs(b)) + atol


def without_report_path(report):
    """The report's own path (--output) is where it was written, not part of the answer."""
    report = json.loads(json.dumps(report))
    report.get("config", {}).get("output", {}).pop("report", None)
    return report


def compare(report, reference):
    problems = []
    report, reference = without_report_path(report), without_report_path(reference)
    for key in EXACT:
        if report.get(key) != reference.get(key):
            problems.append(f"{key}: {json.dumps(report.get(key))}\n   reference: {json.dumps(reference.get(key))}")
    precision = reference.get("config", {}).get("precision", {}).get("compute", "fp32")
    rtol, atol = TOLERANCES[precision]
    hist, ref_hist = report.get("history", []), reference.get("history", [])
    if [h["step"] for h in hist] != [h["step"] for h in ref_hist]:
        problems.append(f"history steps {[h['step'] for h in hist]} != reference {[h['step'] for h in ref_hist]}")
        return problems
    scale = abs(ref_hist[0]["loss"]) if ref_hist else 1.0
    pairs = [(f"history[step {h['step']}].loss", h["loss"], r["loss"]) for h, r in zip(hist, ref_hist)]
    pairs.append(("final_loss", report.get("final_loss"), reference.get("final_loss")))
    for name, a, b in pairs:
        if a is None or b is None or not close(a, b, rtol, atol * scale):
            problems.append(f"{name}: {a!r} vs reference {b!r} (rtol {rtol}, atol {atol * scale:.3g}, {precision})")
    a, b = report.get("weights_rel_error"), reference.get("weights_rel_error")
    if a is None or b is None or not close(a, b, rtol, atol):
        problems.append(f"weights_rel_error: {a!r} vs reference {b!r} (rtol {rtol}, atol {atol})")
    return problems


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--report", required=True)
    p.add_argument("--reference", required=True)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command
    if cmd:
        r = subprocess.run(cmd)
        if r.returncode != 0:
            print(f"FAIL: {' '.join(cmd)} exited {r.returncode}")
            return 1
    with open(a.report) as f:
        report = json.load(f)
    with open(a.reference) as f:
        reference = json.load(f)
    problems = compare(report, reference)
    for problem in problems:
        print("MISMATCH " + problem)
    if problems:
        print(f"FAIL: {len(problems)} mismatch(es) against {a.reference}\n"
              f"If the change of results is intended, regenerate with scripts/update_references.sh (see README).")
        return 1
    print(f"OK: {a.report} matches {a.reference}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
