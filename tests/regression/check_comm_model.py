#!/usr/bin/env python3
"""Checks the outputs of the communication-model chain (docs/bench.md, docs/train.md).

check_comm_model.py csv BENCH.json BENCH.csv
    The CSV has a header of the report's row fields (with the baseline's) and one line per
    report row with the same collective, dtype, axis, bytes and times; baseline times are > 0.
check_comm_model.py train TRAIN.json MODEL.json COLLECTIVE,AXIS,DTYPE,BYTES,CALLS ...
    The train report's comm_model lists exactly the given collectives (the step's, worked out by
    hand from the deck), each predicted as calls * (alpha + beta * bytes) from the model file,
    their sum as predicted_s_per_step (> 0), and measured_s_per_step as the mean over ranks of
    timing.comm + timing.comm_in_flight per step.
"""
import csv
import json
import math
import sys

HEADER = ["collective", "dtype", "axis", "ranks", "bytes", "count", "time_us", "algbw_gbs", "busbw_gbs",
          "wrong", "baseline_time_us", "baseline_busbw_gbs", "overhead"]


def close(a, b, rtol=1e-9):
    return abs(a - b) <= rtol * max(abs(a), abs(b))


def check_csv(report_path, csv_path):
    rows = json.load(open(report_path))["bench"]
    with open(csv_path, newline="") as f:
        lines = list(csv.reader(f))
    errors = []
    if lines[0] != HEADER:
        errors.append(f"header {lines[0]} != {HEADER}")
    if len(lines) != len(rows) + 1:
        errors.append(f"{len(lines) - 1} CSV rows for {len(rows)} report rows")
    for i, (line, row) in enumerate(zip(lines[1:], rows)):
        got = dict(zip(HEADER, line))
        for key in ("collective", "dtype", "axis"):
            if got[key] != row[key]:
                errors.append(f"row {i}: {key} {got[key]!r} != {row[key]!r}")
        if int(got["bytes"]) != row["bytes"] or float(got["time_us"]) != row["time_us"]:
            errors.append(f"row {i}: bytes or time differ from the report")
        if not float(got["baseline_time_us"]) > 0 or not float(got["baseline_time_us"]) == row["baseline_time_us"]:
            errors.append(f"row {i}: baseline_time_us {got['baseline_time_us']} (want > 0, as in the report)")
    return errors


def check_train(report_path, model_path, expected):
    report = json.load(open(report_path))
    model = json.load(open(model_path))
    entries = {(e["collective"], e["axis"], e["dtype"]): e for e in model["entries"]}
    errors = []
    cm = report.get("comm_model")
    if cm is None:
        return ["the report has no comm_model"]
    got = [(c["collective"], c["axis"], c["dtype"], c["bytes"], c["calls_per_step"]) for c in cm["collectives"]]
    want = []
    for e in expected:
        collective, axis, dtype, nbytes, calls = e.split(",")
        want.append((collective, axis, dtype, int(nbytes), float(calls)))
    if got != want:
        errors.append(f"collectives {got} != {want}")
    total = 0.0
    for c in cm["collectives"]:
        e = entries[(c["collective"], c["axis"], c["dtype"])]
        predicted = c["calls_per_step"] * (e["alpha_s"] + e["beta_s_per_byte"] * c["bytes"])
        total += predicted
        if not close(c["predicted_s_per_step"], predicted):
            errors.append(f"{c['collective']}: predicted {c['predicted_s_per_step']} != {predicted}")
    if not (cm["predicted_s_per_step"] > 0 and close(cm["predicted_s_per_step"], total)):
        errors.append(f"predicted_s_per_step {cm['predicted_s_per_step']} (want > 0 and the sum {total})")
    t = report["timing"]
    steps = report["config"]["train"]["steps"]
    measured = (t["comm"]["avg"] + t["comm_in_flight"]["avg"]) / steps
    if not (cm["measured_s_per_step"] > 0 and close(cm["measured_s_per_step"], measured)):
        errors.append(f"measured_s_per_step {cm['measured_s_per_step']} != {measured}")
    if cm["file"] != report["config"]["comm"]["model"]:
        errors.append(f"file {cm['file']} != comm.model {report['config']['comm']['model']}")
    print(f"predicted {cm['predicted_s_per_step']:.3e} s/step, measured {cm['measured_s_per_step']:.3e} s/step")
    return errors


def main():
    what = sys.argv[1]
    errors = check_csv(*sys.argv[2:4]) if what == "csv" else check_train(sys.argv[2], sys.argv[3], sys.argv[4:])
    for e in errors:
        print(e)
    print("FAILED" if errors else "OK")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
