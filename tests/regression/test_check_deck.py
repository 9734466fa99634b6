#!/usr/bin/env python3
"""check_deck.py catches a regression: it is fed reports doctored from the stored references
(and two made-up histories for the rules the references do not reach) and must pass or fail
each as stated. Prints one line per case and 'N passed, M failed'; exits 1 on any failure."""
import copy
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_deck.py")
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from doctored import doctored, run_on_reports  # noqa: E402


def load(name):
    with open(os.path.join(HERE, "reference", name)) as f:
        return json.load(f)


def run_checker(report, reference):
    """check_deck.py --report --reference (no command), as ctest runs it; returns (rc, output)."""
    return run_on_reports(lambda paths: [CHECKER, "--report", paths[0], "--reference", paths[1]],
                          [("report.json", report), ("reference.json", reference)])


def made_up(precision, losses):
    """A report with only what compare() reads, for histories no stored deck produces."""
    return {"config": {"precision": precision}, "history": [{"step": i, "loss": x} for i, x in enumerate(losses)],
            "final_loss": losses[-1], "weights_rel_error": 1e-6}


def stall(report, value=5e-6):
    """Every loss after the reference first drops below value stays at value (and final_loss)."""
    first = next(i for i, h in enumerate(report["history"]) if h["loss"] < value)
    for h in report["history"][first:]:
        h["loss"] = value
    report["final_loss"] = value


def with_scaler(reference):
    """quickstart as a dynamic loss scaler would report it: scale everywhere, step 3 skipped."""
    ref = copy.deepcopy(reference)
    for h in ref["history"]:
        h["scale"], h["skipped"] = 65536.0, False
    ref["history"][3].update(loss=None, skipped=True)
    for h in ref["history"][4:]:
        h["scale"] = 32768.0
    return ref


def main():
    quick = load("quickstart.json")  # fp32, falls from 7.5 to 1.6e-13
    scaled = with_scaler(quick)
    fp64 = made_up({"compute": "fp64"}, [10.0 ** -k for k in range(14)])  # 1 down to 1e-13
    fp32 = made_up({"compute": "fp32", "comm": "fp32"}, [1.0, 0.5, 0.25])
    bf16_comm = made_up({"compute": "fp32", "comm": "bf16"}, [1.0, 0.5, 0.25])

    def set_at(doc, i, **fields):
        return doctored(doc, lambda r: r["history"][i].update(fields))

    cases = [  # (name, report, reference, should pass)
        *[(f"{os.path.basename(p)} against itself", json.load(open(p)), json.load(open(p)), True)
          for p in sorted(glob.glob(os.path.join(HERE, "reference", "*.json")))],
        ("quickstart: loss stalls at 5e-6", doctored(quick, stall), quick, False),
        ("quickstart: weights_rel_error 8x worse",
         doctored(quick, lambda r: r.update(weights_rel_error=8 * r["weights_rel_error"])), quick, False),
        ("quickstart: weights_rel_error 8x better",
         doctored(quick, lambda r: r.update(weights_rel_error=r["weights_rel_error"] / 8)), quick, True),
        ("quickstart: final_loss 8x worse", doctored(quick, lambda r: r.update(final_loss=8 * r["final_loss"])),
         quick, False),
        ("quickstart: tail loss 2x (rounding noise)",
         doctored(quick, lambda r: r["history"][-1].update(loss=2 * r["history"][-1]["loss"])), quick, True),
        ("quickstart: first loss 1e-3 off", set_at(quick, 0, loss=quick["history"][0]["loss"] * 1.001), quick, False),
        ("quickstart: loss NaN", set_at(quick, 5, loss=float("nan")), quick, False),
        ("scaler: against itself", scaled, scaled, True),
        ("scaler: skipped flipped", set_at(scaled, 7, skipped=True), scaled, False),
        ("scaler: scale differs", set_at(scaled, 7, scale=16384.0), scaled, False),
        ("scaler: scale missing", doctored(scaled, lambda r: r["history"][7].pop("scale")), scaled, False),
        ("scaler: skipped step has a loss", set_at(scaled, 3, loss=quick["history"][3]["loss"]), scaled, False),
        ("scaler: loss null in a step not skipped", set_at(scaled, 8, loss=None), scaled, False),
        ("fp64: 2e-13 against 1e-13", set_at(fp64, 13, loss=2e-13), fp64, True),
        ("fp64: stalls at 5e-6",
         doctored(fp64, lambda r: [h.update(loss=5e-6) for h in r["history"][6:]]), fp64, False),
        ("fp64: 1e-6 off at loss 0.1", set_at(fp64, 1, loss=0.1 * (1 + 1e-6)), fp64, False),
        ("fp32: 1% off at loss 0.5", set_at(fp32, 1, loss=0.505), fp32, False),
        ("fp32 with bf16 comm: 1% off at loss 0.5", set_at(bf16_comm, 1, loss=0.505), bf16_comm, True),
        ("unknown precision", made_up({"compute": "fp8"}, [1.0]), made_up({"compute": "fp8"}, [1.0]), False),
    ]
    failed = 0
    for name, report, reference, should_pass in cases:
        rc, out = run_checker(report, reference)
        ok = (rc == 0) == should_pass and rc in (0, 1)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: check_deck.py exited {rc}, expected {0 if should_pass else 1}")
        if not ok:
            print("     " + out.strip().replace("\n", "\n     "))
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
