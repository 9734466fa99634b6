"""scripts/study.py: scaling and backend studies of kpmap's trainer, and their figures.

  study.py run KIND --deck DECK --csv FILE [options]   KIND: strong | weak | backend
  study.py plot CSV --out DIR

Exit codes: 0 success, 1 a run failed (the rows before it stay in the CSV), 2 bad study
parameters (the message names the parameter, the value and what is allowed; nothing has run).
docs/performance.md, "Running a study".
"""
import argparse
import os
import shutil
import sys
import time

from . import machine, plan, plot, runner
from .plan import StudyInputError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Per kind: (ranks, threads, kernels, precisions); None = the deck's own value.
DEFAULTS = {"strong": ("1,2,4", "1", None, None), "weak": ("1,2,4", "1", None, None),
            "backend": ("1", "1,2", "fused,kokkos_kernels", "fp32,bf16")}


def parser():
    p = argparse.ArgumentParser(prog="study.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Exit codes: 0 success, 1 a run failed, 2 bad study parameters.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a study, appending one CSV row per run")
    r.add_argument("kind", help="strong (the deck's global problem on every rank count) | weak (the deck's "
                   "samples and batch per data rank) | backend (executables, threads, kernels, precisions)")
    r.add_argument("--deck", required=True, help="kpmap train deck (inputs/*.yaml)")
    r.add_argument("--csv", required=True, help="CSV to append to (created with a header when new)")
    r.add_argument("--ranks", help="rank counts, e.g. 1,2,4 (strong/weak default 1,2,4; backend 1)")
    r.add_argument("--mesh", default="*x1", help="data x model meshes, e.g. '*x1,*x2' or 2x2; '*' (or -1) is "
                   "the rank count divided by the other size (default '*x1': every rank on data)")
    r.add_argument("--threads", help="OMP_NUM_THREADS values (default 1; backend 1,2); a Serial kpmap runs at 1")
    r.add_argument("--kernels", help="train.kernel values: fused,kokkos_kernels,team (default: the deck's; backend fused,kokkos_kernels)")
    r.add_argument("--precisions", help="precision.compute values: fp64,fp32,bf16,fp16 (default: the deck's; "
                   "backend fp32,bf16)")
    r.add_argument("--kpmap", action="append", help="kpmap executable (repeatable: one per backend build; "
                   "default build/default/kpmap, else kpmap on PATH)")
    r.add_argument("--launcher", default="mpiexec -n {np}", help="launch command, {np} = the rank count "
                   "(default 'mpiexec -n {np}'; e.g. 'srun -n {np}')")
    r.add_argument("--steps", type=str, help="train.steps of every run (default: the deck's)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a deck override for every run "
                   "(repeatable)")
    r.add_argument("--model", help="communication model file, passed as --set comm.model=FILE")
    r.add_argument("--repeat", default="1", help="runs of each configuration, interleaved (default 1)")
    r.add_argument("--workdir", help="where reports and logs go (default: CSV name + .runs/)")
    r.add_argument("--timeout", default="600", help="seconds per run (default 600)")
    r.add_argument("--plots", metavar="DIR", help="after the study, draw the CSV's figures into DIR")
    q = sub.add_parser("plot", help="draw PNG figures from a study CSV")
    q.add_argument("csv")
    q.add_argument("--out", required=True, metavar="DIR")
    return p


def default_kpmap():
    built = os.path.join(REPO, "build", "default", "kpmap")
    if os.access(built, os.X_OK):
        return built
    found = shutil.which("kpmap")
    if found:
        return found
    raise StudyInputError(f"--kpmap: not given, and neither {built} nor kpmap on PATH exists (allowed: a kpmap "
                          "executable; build one with scripts/build.sh)")


def prepare(a):
    """Checks every parameter and returns the runs; nothing is launched but kpmap --version and
    one-rank mode-info checks of the deck."""
    kind = plan.check_kind(a.kind)
    deck = os.path.abspath(plan.check_file("--deck", a.deck))
    model = os.path.abspath(plan.check_file("--model", a.model)) if a.model is not None else None
    d_ranks, d_threads, d_kernels, d_precisions = DEFAULTS[kind]
    ranks = plan.parse_int_list("--ranks", a.ranks if a.ranks is not None else d_ranks)
    meshes = plan.parse_meshes(a.mesh)
    plan.check_mesh_fits(ranks, meshes)
    threads = plan.parse_int_list("--threads", a.threads if a.threads is not None else d_threads)
    kernels = a.kernels if a.kernels is not None else d_kernels
    kernels = plan.parse_choice_list("--kernels", kernels, plan.KERNELS) if kernels is not None else [""]
    precisions = a.precisions if a.precisions is not None else d_precisions
    precisions = plan.parse_choice_list("--precisions", precisions, plan.PRECISIONS) if precisions is not None else [""]
    steps = plan.parse_int("--steps", a.steps) if a.steps is not None else None
    repeat = plan.parse_int("--repeat", a.repeat)
    timeout = plan.parse_int("--timeout", a.timeout)
    sets = plan.check_sets(a.set)
    runner.check_csv(a.csv)
    if "{np}" not in a.launcher:
        raise StudyInputError(f"--launcher: '{a.launcher}' has no {{np}} (allowed: a command with {{np}} where the "
                              "rank count goes, e.g. 'mpiexec -n {np}')")
    if a.plots is not None:
        plot.require_matplotlib()
    kpmaps = []
    for path in a.kpmap or [default_kpmap()]:
        path = os.path.abspath(plan.check_file("--kpmap", path))
        kpmaps.append((path, runner.kpmap_backend(path)))

    base = ["mode=train"] + list(sets)
    if steps is not None:
        base.append(f"train.steps={steps}")
    if model is not None:
        base.append(f"comm.model={model}")
    resolved = None
    seen = set()
    for path, _ in kpmaps:
        for kernel in kernels:
            for precision in precisions:
                extra = ([f"train.kernel={kernel}"] if kernel else []) + (
                    [f"precision.compute={precision}"] if precision else [])
                if (path, tuple(extra)) in seen:
                    continue
                seen.add((path, tuple(extra)))
                resolved = runner.preflight(a.launcher, path, deck, base + extra)
    if "problem" not in resolved:
        raise StudyInputError(f"--deck: '{a.deck}' has no problem section (allowed: a train deck)")
    features = resolved["problem"]["features"]
    for mesh in meshes:
        for n in ranks:
            model_size = mesh.resolve(n)[1]
            if model_size > features:
                raise StudyInputError(f"--mesh: {mesh} on {n} ranks has a model axis of {model_size}, more than "
                                      f"problem.features {features} (allowed: a model size of 1 to {features})")
    weak_rows = (resolved["problem"]["samples"], resolved["train"]["batch"]) if kind == "weak" else None
    return kind, deck, plan.plan_runs(kind, kpmaps, ranks, meshes, threads, kernels, precisions, repeat, base,
                                      weak_rows), timeout


def main(argv=None):
    a = parser().parse_args(argv)
    try:
        if a.command == "plot":
            plot.plot(a.csv, a.out)
            return 0
        kind, deck, runs, timeout = prepare(a)
        study_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{os.getpid()}"
        workdir = os.path.abspath(a.workdir or os.path.splitext(a.csv)[0] + ".runs")
        host = machine.machine()
        print(f"[study] {study_id}: {kind}, {len(runs)} runs of {a.deck} on {host['hostname']} "
              f"({host['cpu_model']}, {host['cores']} cores, load {host['load_1min']}) -> {a.csv}", flush=True)
        code = runner.execute(runs, kind, study_id, deck, a.launcher, a.csv, workdir, host, timeout)
        if code == 0 and a.plots is not None:
            plot.plot(a.csv, a.plots)
        return code
    except StudyInputError as e:
        print(f"study.py: error: {e}", file=sys.stderr, flush=True)
        return 2
