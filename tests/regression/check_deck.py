#!/usr/bin/env python3
"""Runs a deck and compares its JSON report with the stored reference.

check_deck.py --report OUT.json --reference REF.json -- mpiexec -n 2 kpmap deck.yaml --output OUT.json
(without a command it only compares the two files)

Exactly compared (they do not depend on rounding):
  config (without output.report, the path the report was written to), mesh, memory, comm_bytes;
  history[].step, and history[].skipped and history[].scale wherever the reference has them
  (a dynamic loss scaler's decisions); a null loss (a skipped step) must be null in both.

Numbers, with the tolerances of the loosest of precision.compute/.params/.comm (a 16-bit comm
type loosens an fp32 run to that type's row of TOLERANCES). eps is that type's machine epsilon,
L the largest loss of the reference history. A loss a (report) matches b (reference) when
  |a - b| <= rtol * max(|a|, |b|) + eps**2 * L                           (relative), or
  b < sqrt(eps) * L and a > 0 and |log10(a) - log10(b)| <= ltol          (log space).
Why: the residuals x.w - y carry a rounding error of about eps times their size at the start,
so a mean squared residual cannot resolve below about eps**2 * L (fp32 from 7.5 bottoms out near
1e-13); that is the only absolute floor. Far below L the relative error grows like
eps * sqrt(L / loss), so there the order of magnitude is compared instead of the digits: within
ltol (a factor of about 3 in fp64 and fp32, 5 in 16 bits), never a factor of 8. Thus in fp64
from 1, 2e-13 against a reference of 1e-13 matches, while a run that stalls at 5e-6 against a
reference that reaches 1e-13 fails, in fp64 and in fp32 alike.
  history[].loss, final_loss   that rule, both ways
  weights_rel_error            no worse than the reference by that rule with L = 1 (it is
                               already relative); any smaller value passes
timing and versions are not compared (they describe the machine, not the answer).
On failure every mismatch is printed on its own line.
"""
import argparse
import json
import math
import subprocess
import sys

TOLERANCES = {  # precision -> (machine epsilon, rtol, ltol = allowed |log10(a / b)|)
    "fp64": (2.0**-52, 1e-9, 0.5),
    "fp32": (2.0**-23, 2e-4, 0.5),
    "fp16": (2.0**-10, 5e-3, 0.7),
    "bf16": (2.0**-7, 2e-2, 0.7),
}
EXACT = ("config", "mesh", "memory", "comm_bytes")
HISTORY_EXACT = ("skipped", "scale")  # compared only where the reference has them


def matches(a, b, tol, L, upper_only=False):
    """Whether a (report) matches b (reference) by the docstring's rule; nulls match only nulls."""
    if a is None or b is None:
        return a is None and b is None
    eps, rtol, ltol = tol
    if upper_only and a <= b:
        return True
    if abs(a - b) <= rtol * max(abs(a), abs(b)) + eps * eps * L:  # False for NaN
        return True
    return 0 < b < math.sqrt(eps) * L and 0 < a < math.inf and abs(math.log10(a / b)) <= ltol


def without_report_path(report):
    """The report's own path (--output) is where it was written, not part of the answer."""
    report = json.loads(json.dumps(report))
    report.get("config", {}).get("output", {}).pop("report", None)
    return report


def precision_of(config):
    """The loosest precision the numbers went through: compute, params and comm (when present)."""
    given = config.get("precision", {})
    names = [given.get(k) for k in ("compute", "params", "comm") if given.get(k)] or ["fp32"]
    unknown = [n for n in names if n not in TOLERANCES]
    if unknown:
        raise ValueError(f"precision {unknown[0]!r} has no tolerances (TOLERANCES in check_deck.py)")
    return max(names, key=lambda n: TOLERANCES[n][0])


def compare(report, reference):
    problems = []
    report, reference = without_report_path(report), without_report_path(reference)
    for key in EXACT:
        if report.get(key) != reference.get(key):
            problems.append(f"{key}: {json.dumps(report.get(key))}\n   reference: {json.dumps(reference.get(key))}")
    try:
        precision = precision_of(reference.get("config", {}))
    except ValueError as e:
        return problems + [str(e)]
    tol = TOLERANCES[precision]
    hist, ref_hist = report.get("history", []), reference.get("history", [])
    if [h.get("step") for h in hist] != [h.get("step") for h in ref_hist]:
        problems.append(f"history steps {[h.get('step') for h in hist]} != reference {[h.get('step') for h in ref_hist]}")
        return problems
    L = max([abs(r["loss"]) for r in ref_hist if r.get("loss") is not None], default=0.0)
    rule = f"rtol {tol[1]}, floor {tol[0] ** 2 * L:.3g}, ltol {tol[2]} below {math.sqrt(tol[0]) * L:.3g}, {precision}"
    for h, r in zip(hist, ref_hist):
        for key in HISTORY_EXACT:
            if key in r and (key not in h or h[key] != r[key]):
                problems.append(f"history[step {r['step']}].{key}: {h.get(key, 'absent')!r} vs reference {r[key]!r}")
        if not matches(h.get("loss"), r.get("loss"), tol, L):
            problems.append(f"history[step {r['step']}].loss: {h.get('loss')!r} vs reference {r.get('loss')!r} ({rule})")
    a, b = report.get("final_loss"), reference.get("final_loss")
    if not matches(a, b, tol, L):
        problems.append(f"final_loss: {a!r} vs reference {b!r} ({rule})")
    a, b = report.get("weights_rel_error"), reference.get("weights_rel_error")
    if not matches(a, b, tol, 1.0, upper_only=True):
        problems.append(f"weights_rel_error: {a!r} vs reference {b!r} (no worse than it: rtol {tol[1]}, "
                        f"floor {tol[0] ** 2:.3g}, ltol {tol[2]} below {math.sqrt(tol[0]):.3g}, {precision})")
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
