"""Launching kpmap: its version, the pre-flight check of a deck, the runs, and one CSV row per run."""
import csv
import datetime
import json
import os
import re
import shlex
import subprocess
import sys
import time

from .machine import load_1min
from .plan import StudyInputError

PHASES = ("total", "compute", "comm", "comm_wait", "comm_in_flight", "optimizer")
STATS = ("avg", "max")

# One row per run. Times are per step: the report's seconds over all steps divided by the steps
# (the first step included), as the average and the maximum over ranks.
COLUMNS = (["study_id", "study", "run", "repeat", "ranks", "mesh", "data", "model", "threads", "backend", "kernel",
            "precision", "samples", "features", "batch", "steps"] +
           [f"{p}_s_per_step_{s}" for p in PHASES for s in STATS] +
           ["comm_bytes_per_step", "comm_calls_per_step", "final_loss", "comm_model_file",
            "predicted_comm_s_per_step", "measured_comm_s_per_step", "wall_s", "hostname", "cpu_model", "cores",
            "load_1min", "timestamp_utc", "kpmap_version", "kokkos_version", "kokkos_kernels_version", "mpi_version",
            "kpmap_binary", "report", "command", "config"])


def kpmap_backend(kpmap):
    """The execution space a kpmap binary runs on, from `kpmap --version` ('... kpmap runs on OpenMP)')."""
    try:
        r = subprocess.run([kpmap, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=60, env=dict(os.environ, OMP_NUM_THREADS="1"))
    except OSError as e:
        raise StudyInputError(f"--kpmap: '{kpmap}' cannot be run ({e.strerror}; allowed: a kpmap executable)") from None
    m = re.search(r"kpmap runs on (\w+)", r.stdout)
    if r.returncode != 0 or not m:
        raise StudyInputError(f"--kpmap: '{kpmap} --version' did not name its execution space (exit {r.returncode}; "
                              f"allowed: a kpmap executable)")
    return m.group(1)


def launch_command(launcher, ranks, kpmap, deck, sets, report):
    cmd = [a.replace("{np}", str(ranks)) for a in shlex.split(launcher)] + [kpmap, deck]
    for s in sets:
        cmd += ["--set", s]
    return cmd + ["--output", report] if report else cmd


def preflight(launcher, kpmap, deck, sets):
    """Validates the deck with these overrides on one rank (mode info, a 1x1 mesh) and returns the
    resolved configuration; kpmap's own message and exit 2 when it rejects them."""
    cmd = launch_command(launcher, 1, kpmap, deck, list(sets) + ["mode=info", "mesh.axes={data: 1, model: 1}"], None)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    if r.returncode != 0:
        raise StudyInputError(f"--deck {deck} with --set {' --set '.join(sets) or '(none)'}: kpmap rejects it "
                              f"(exit {r.returncode}):\n{r.stdout.strip()}")
    text = r.stdout
    start = text.find("resolved configuration:\n")
    if start < 0:
        raise RuntimeError(f"kpmap mode info printed no resolved configuration:\n{text}")
    return json.JSONDecoder().raw_decode(text[start + len("resolved configuration:\n"):].lstrip())[0]


def check_csv(path):
    """A new CSV, or one with exactly these columns (rows are appended)."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise StudyInputError(f"--csv: '{path}': directory {parent} does not exist (allowed: a file in an existing "
                              f"directory)")
    if os.path.exists(path) and os.path.getsize(path) > 0:
        with open(path, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), [])
        if header != COLUMNS:
            raise StudyInputError(f"--csv: '{path}' exists with other columns (allowed: a new file, or a CSV written "
                                  f"by this study script, to which rows are appended)")


def _per_step(value, steps):
    return f"{value / steps:.9g}"


def report_row(report, run, study, study_id, machine, wall_s, kpmap_binary, report_path, command):
    """One CSV row from a train report (the fields of src/kpmap/app/train_mode.cpp)."""
    config = report["config"]
    steps = config["train"]["steps"]
    versions = report["versions"]
    axes = report["mesh"]["axes"]
    row = {"study_id": study_id, "study": study, "run": run.index, "repeat": run.repeat,
           "ranks": report["mesh"]["ranks"], "mesh": f"{axes.get('data', 1)}x{axes.get('model', 1)}",
           "data": axes.get("data", 1), "model": axes.get("model", 1), "threads": run.threads,
           "backend": versions["execution_space"], "kernel": config["train"]["kernel"],
           "precision": config["precision"]["compute"], "samples": config["problem"]["samples"],
           "features": config["problem"]["features"], "batch": config["train"]["batch"], "steps": steps}
    for p in PHASES:
        for s in STATS:
            row[f"{p}_s_per_step_{s}"] = _per_step(report["timing"][p][s], steps)
    row["comm_bytes_per_step"] = f"{report['comm_bytes']['avg']:.9g}"
    row["comm_calls_per_step"] = f"{report['comm_calls']['avg']:.9g}"
    row["final_loss"] = f"{report['final_loss']:.9g}"
    model = report.get("comm_model")
    row["comm_model_file"] = model["file"] if model else ""
    row["predicted_comm_s_per_step"] = f"{model['predicted_s_per_step']:.9g}" if model else ""
    row["measured_comm_s_per_step"] = f"{model['measured_s_per_step']:.9g}" if model else ""
    row["wall_s"] = f"{wall_s:.3f}"
    row.update(machine)
    row["timestamp_utc"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    row["kpmap_version"] = versions["kpmap"]
    row["kokkos_version"] = versions["kokkos"]
    row["kokkos_kernels_version"] = versions["kokkos_kernels"]
    row["mpi_version"] = " ".join(str(versions["mpi"]).split())
    row["kpmap_binary"] = kpmap_binary
    row["report"] = report_path
    row["command"] = shlex.join(command)
    row["config"] = json.dumps(config, separators=(",", ":"))
    return row


def execute(runs, study, study_id, deck, launcher, csv_path, workdir, machine, timeout, out=sys.stdout):
    """Launches every run in order, appending its row to the CSV as soon as it ends. A run that fails
    stops the study (exit 1) with kpmap's output; the rows before it stay in the CSV."""
    os.makedirs(workdir, exist_ok=True)
    new_file = not os.path.exists(csv_path) or os.path.getsize(csv_path) == 0
    with open(csv_path, "a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        if new_file:
            writer.writeheader()
            f.flush()
        for run in runs:
            report_path = os.path.join(workdir, f"{study_id}-{run.index:03d}.json")
            command = launch_command(launcher, run.ranks, run.kpmap, deck, run.sets, report_path)
            env = dict(os.environ, OMP_NUM_THREADS=str(run.threads))
            env.setdefault("OMP_PROC_BIND", "false")
            label = f"{study} np={run.ranks} mesh={run.mesh} threads={run.threads} {run.backend}"
            start = time.monotonic()
            try:
                r = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   timeout=timeout, env=env)
                failure = None if r.returncode == 0 else f"exit {r.returncode}"
                output = r.stdout
            except subprocess.TimeoutExpired as e:
                failure = f"did not end within {timeout} s"
                output = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            wall = time.monotonic() - start
            with open(report_path[:-5] + ".log", "w", encoding="utf-8") as log:
                log.write(shlex.join(command) + "\n" + output)
            if failure:
                print(f"[study] {run.index}/{len(runs)} {label}: FAILED ({failure}) after {wall:.1f} s: "
                      f"{shlex.join(command)}\n{output.strip()}", file=out, flush=True)
                return 1
            with open(report_path, encoding="utf-8") as rf:
                report = json.load(rf)
            host = dict(machine, load_1min=load_1min())  # the load as this run ends
            row = report_row(report, run, study, study_id, host, wall, run.kpmap, report_path, command)
            writer.writerow(row)
            f.flush()
            step_ms = float(row["total_s_per_step_max"]) * 1e3
            comm_ms = float(row["comm_s_per_step_max"]) * 1e3
            print(f"[study] {run.index}/{len(runs)} {label} {row['kernel']} {row['precision']}: {step_ms:.3g} ms/step "
                  f"(comm {comm_ms:.3g}) in {wall:.1f} s", file=out, flush=True)
    return 0
