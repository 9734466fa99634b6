#!/usr/bin/env python3
"""Runs a tiny strong-scaling study and its plots with one command, then checks what it made.

check_study.py --kpmap KPMAP --launcher 'mpiexec -n {np}' --workdir DIR

The command: scripts/study.py run strong on inputs/quickstart.yaml made tiny (4096 x 16, batch 256,
5 steps) at 1, 2 and 4 ranks, with --plots. Checked independently of the study code:
- exit 0 and one progress line per run;
- the CSV: exactly the documented columns, one row per rank count (1x1, 2x1, 4x1), the same global
  problem in every row, each time equal to the run's own JSON report over its steps, the
  communication payload of the closed form 4 (features + 3) bytes (fp32 gradient sums of the
  weights and the bias, the loss sum and the row count) in one call per step on more than one rank,
  the machine as /proc/cpuinfo and the host name give it, the versions as `kpmap --version` gives
  them, and the resolved deck as JSON;
- scaling.png, efficiency.png and breakdown.png: a PNG signature, a valid IHDR chunk (CRC), the
  size the decoder reads, and non-trivial content (many colours, ink on a part of the canvas);
  comm_model.png is not drawn (no --model) and the output says so.
"""
import argparse
import csv
import json
import math
import os
import re
import shlex
import shutil
import socket
import struct
import subprocess
import sys
import zlib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RANKS = [1, 2, 4]
SAMPLES, FEATURES, BATCH, STEPS = 4096, 16, 256, 5

# The CSV's columns as docs/performance.md ("Running a study") lists them.
EXPECTED_COLUMNS = (
    "study_id study run repeat ranks mesh data model threads backend kernel precision samples features batch steps "
    "total_s_per_step_avg total_s_per_step_max compute_s_per_step_avg compute_s_per_step_max comm_s_per_step_avg "
    "comm_s_per_step_max comm_wait_s_per_step_avg comm_wait_s_per_step_max comm_in_flight_s_per_step_avg "
    "comm_in_flight_s_per_step_max optimizer_s_per_step_avg "
    "optimizer_s_per_step_max comm_bytes_per_step comm_calls_per_step final_loss comm_model_file "
    "predicted_comm_s_per_step measured_comm_s_per_step wall_s hostname cpu_model cores load_1min timestamp_utc "
    "kpmap_version kokkos_version kokkos_kernels_version mpi_version kpmap_binary report command config").split()

problems = []


def expect(condition, message):
    if not condition:
        problems.append(message)
    return condition


def check_png(path):
    """Signature, IHDR (length, CRC, size), then the decoded pixels: shape and content."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        data = f.read()
    if not expect(data[:8] == b"\x89PNG\r\n\x1a\n", f"{name}: no PNG signature"):
        return
    length, kind = struct.unpack(">I4s", data[8:16])
    body = data[16:16 + length]
    (crc,) = struct.unpack(">I", data[16 + length:20 + length])
    if not expect(kind == b"IHDR" and length == 13, f"{name}: first chunk {kind!r} of {length} bytes, not IHDR"):
        return
    expect(zlib.crc32(kind + body) == crc, f"{name}: IHDR CRC mismatch")
    width, height, depth, colour = struct.unpack(">IIBB", body[:10])
    expect(200 <= width <= 4000 and 200 <= height <= 4000, f"{name}: {width} x {height} pixels")
    expect(data.rstrip(b"\0")[-8:-4] == b"IEND", f"{name}: does not end in IEND")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.image
    pixels = matplotlib.image.imread(path)
    expect(pixels.shape[:2] == (height, width), f"{name}: decoded {pixels.shape}, IHDR says {height} x {width}")
    rgb = pixels[:, :, :3].reshape(-1, 3)
    colours = len({tuple(p) for p in (rgb * 255).round().astype(int).tolist()})
    ink = float((rgb.min(axis=1) < 0.9).mean())  # pixels clearly not white
    spread = float(rgb.std())
    print(f"{name}: {width} x {height}, depth {depth}, colour type {colour}, {colours} colours, "
          f"{ink:.1%} ink, std {spread:.3f}")
    expect(colours >= 32, f"{name}: only {colours} distinct colours (a blank or flat image)")
    expect(0.01 <= ink <= 0.6, f"{name}: {ink:.1%} of the pixels are not white (expected a figure: 1% to 60%)")
    expect(spread > 0.05, f"{name}: pixel standard deviation {spread:.3f}")


def first_cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.MULTILINE)
        return " ".join(m.group(1).split()) if m else ""
    except OSError:
        return ""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kpmap", required=True)
    p.add_argument("--launcher", required=True)
    p.add_argument("--workdir", required=True)
    a = p.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    csv_path = os.path.join(a.workdir, "study.csv")
    plots = os.path.join(a.workdir, "plots")

    command = [sys.executable, os.path.join(REPO, "scripts", "study.py"), "run", "strong",
               "--deck", os.path.join(REPO, "inputs", "quickstart.yaml"), "--ranks", ",".join(map(str, RANKS)),
               "--steps", str(STEPS), "--set", f"problem.samples={SAMPLES}", "--set", f"problem.features={FEATURES}",
               "--set", f"train.batch={BATCH}", "--kpmap", a.kpmap, "--launcher", a.launcher,
               "--csv", csv_path, "--plots", plots]
    print("$ " + shlex.join(command), flush=True)
    r = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    print(r.stdout)
    expect(r.returncode == 0, f"the study exited {r.returncode}")
    for i, n in enumerate(RANKS, 1):
        expect(re.search(rf"^\[study\] {i}/{len(RANKS)} strong np={n} mesh={n}x1 .* ms/step .* in [0-9.]+ s$",
                         r.stdout, re.MULTILINE), f"no progress line for run {i} (np={n})")
    expect("comm_model.png: skipped" in r.stdout, "the output does not say that comm_model.png is skipped")

    version = subprocess.run([a.kpmap, "--version"], stdout=subprocess.PIPE, text=True).stdout
    kpmap_version = re.search(r"^kpmap (\S+)", version, re.MULTILINE).group(1)
    kokkos_version = re.search(r"^Kokkos (\S+)", version, re.MULTILINE).group(1)
    backend = re.search(r"kpmap runs on (\w+)", version).group(1)

    rows = []
    if expect(os.path.isfile(csv_path), f"{csv_path} was not written"):
        with open(csv_path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            expect(reader.fieldnames == EXPECTED_COLUMNS, f"columns {reader.fieldnames}, expected {EXPECTED_COLUMNS}")
            rows = list(reader)
    expect(len(rows) == len(RANKS), f"{len(rows)} rows, expected {len(RANKS)}")
    expect(len({row["study_id"] for row in rows}) == 1, "the rows do not share one study_id")
    for n, row in zip(RANKS, rows):
        where = f"row np={n}"
        fields = {"study": "strong", "ranks": str(n), "mesh": f"{n}x1", "data": str(n), "model": "1", "threads": "1",
                  "backend": backend, "kernel": "fused", "precision": "fp32", "samples": str(SAMPLES),
                  "features": str(FEATURES), "batch": str(BATCH), "steps": str(STEPS), "hostname": socket.gethostname(),
                  "cpu_model": first_cpu_model(), "cores": str(os.cpu_count()), "kpmap_version": kpmap_version,
                  "kokkos_version": kokkos_version, "kpmap_binary": os.path.abspath(a.kpmap),
                  "comm_model_file": "", "predicted_comm_s_per_step": "", "measured_comm_s_per_step": ""}
        for key, value in fields.items():
            expect(row[key] == value, f"{where}: {key} = {row[key]!r}, expected {value!r}")
        expect(row["mpi_version"] != "", f"{where}: no MPI version")
        config = json.loads(row["config"])
        expect(config["mesh"]["axes"] == {"data": n, "model": 1}, f"{where}: config mesh {config['mesh']}")
        expect(config["problem"]["samples"] == SAMPLES and config["problem"]["features"] == FEATURES
               and config["train"]["batch"] == BATCH and config["train"]["steps"] == STEPS,
               f"{where}: config problem/train {config['problem']} {config['train']}")
        with open(row["report"], encoding="utf-8") as f:
            report = json.load(f)
        expect(report["mesh"]["ranks"] == n, f"{where}: the report ran on {report['mesh']['ranks']} ranks")
        for phase in ("total", "compute", "comm", "comm_wait", "comm_in_flight", "optimizer"):
            for stat in ("avg", "max"):
                value = float(row[f"{phase}_s_per_step_{stat}"])
                want = report["timing"][phase][stat] / STEPS
                expect(math.isclose(value, want, rel_tol=1e-6, abs_tol=1e-12),
                       f"{where}: {phase}_s_per_step_{stat} = {value}, report / steps = {want}")
        expect(float(row["total_s_per_step_max"]) > 0, f"{where}: no step time")
        parts = sum(float(row[f"{p}_s_per_step_avg"]) for p in ("compute", "comm", "optimizer"))
        expect(parts <= float(row["total_s_per_step_avg"]) * 1.001 + 1e-7,
               f"{where}: compute + comm + optimizer {parts} exceeds the step {row['total_s_per_step_avg']}")
        bytes_, calls = float(row["comm_bytes_per_step"]), float(row["comm_calls_per_step"])
        want_bytes, want_calls = (4 * (FEATURES + 3), 1) if n > 1 else (0, 0)
        expect(bytes_ == want_bytes and calls == want_calls,
               f"{where}: {bytes_} bytes in {calls} calls per step, expected {want_bytes} in {want_calls}")
        expect(math.isfinite(float(row["final_loss"])), f"{where}: final_loss {row['final_loss']}")
    if len(rows) == len(RANKS):
        losses = [float(row["final_loss"]) for row in rows]
        expect(max(losses) - min(losses) <= 1e-5 * max(losses), f"the same global problem gave losses {losses}")

    for name in ("scaling.png", "efficiency.png", "breakdown.png"):
        path = os.path.join(plots, name)
        if expect(os.path.isfile(path), f"{path} was not written"):
            check_png(path)
    expect(not os.path.exists(os.path.join(plots, "comm_model.png")), "comm_model.png drawn without a model")

    for problem in problems:
        print("FAIL: " + problem)
    print("check_study: OK" if not problems else f"check_study: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
