#!/usr/bin/env python3
"""Bad study parameters: exit 2, one message naming the parameter, the value and what is allowed,
and no run.

bad_params.py --case NAME --kpmap KPMAP --launcher 'mpiexec -n {np}' --workdir DIR

The launcher is wrapped by a logger (launch_log.py), so the check "no run" is that kpmap was never
launched in mode train: the only launches allowed are the one-rank `mode=info` checks of the deck.
The CSV and the study's work directory must not exist afterwards (or, for an existing CSV, be
unchanged).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DECK = os.path.join(REPO, "inputs", "quickstart.yaml")

# name: (arguments after `run`, the message's regex). {dir} is the case's work directory.
CASES = {
    "empty_ranks": (["strong", "--ranks", ""],
                    r"--ranks: '' is empty \(allowed: a comma-separated list of integers >= 1, e\.g\. 1,2,4\)"),
    "zero_ranks": (["strong", "--ranks", "0,2"], r"--ranks: 0 in '0,2' is out of range \(allowed: integers >= 1\)"),
    "ranks_not_integer": (["weak", "--ranks", "1,two"], r"--ranks: 'two' in '1,two' is not an integer"),
    "mesh_cannot_use_ranks": (["strong", "--ranks", "3", "--mesh", "2x2"],
                              r"--ranks: 3 cannot run on --mesh 2x2 \(allowed rank counts for that mesh: 4 "),
    "inferred_mesh_cannot_use_ranks": (["strong", "--ranks", "1,2,4", "--mesh", "*x2"],
                                       r"--ranks: 1 cannot run on --mesh \*x2 \(allowed rank counts for that mesh: "
                                       r"multiples of 2\)"),
    "bad_mesh": (["strong", "--mesh", "2by2"], r"--mesh: '2by2' is not a mesh \(allowed: DxM"),
    "model_axis_gt_features": (["strong", "--ranks", "4", "--mesh", "1x*", "--set", "problem.features=2"],
                               r"--mesh: 1x\* on 4 ranks has a model axis of 4, more than problem.features 2 "
                               r"\(allowed: a model size of 1 to 2\)"),
    "unknown_kind": (["strng"], r"kind: 'strng' is not allowed \(allowed: strong \| weak \| backend\)"),
    "missing_deck": (["strong", "--deck", "{dir}/nope.yaml"],
                     r"--deck: '.*nope\.yaml' does not exist or is not a file \(allowed: an existing, readable file\)"),
    "missing_model": (["strong", "--model", "{dir}/nope.json"],
                      r"--model: '.*nope\.json' does not exist or is not a file \(allowed: an existing, readable "
                      r"file\)"),
    "missing_kpmap": (["strong", "--kpmap", "{dir}/no-kpmap"], r"--kpmap: '.*no-kpmap' does not exist"),
    "unknown_kernel": (["backend", "--kernels", "fused,gemv"],
                       r"--kernels: 'gemv' is not allowed \(allowed: fused \| kokkos_kernels \| team\)"),
    "unknown_precision": (["backend", "--precisions", "fp32,fp8"],
                          r"--precisions: 'fp8' is not allowed \(allowed: fp64 \| fp32 \| bf16 \| fp16\)"),
    "set_owned_by_study": (["strong", "--set", "mesh.axes={data: 2}"],
                           r"--set: 'mesh.axes' is set by the study itself"),
    "deck_rejected_by_kpmap": (["strong", "--set", "train.stepz=3"],
                               r"--deck .*quickstart\.yaml with --set .*train\.stepz=3.*: kpmap rejects it \(exit 2\):"),
    "csv_other_columns": (["strong"], r"--csv: '.*study\.csv' exists with other columns"),
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True, choices=sorted(CASES))
    p.add_argument("--kpmap", required=True)
    p.add_argument("--launcher", required=True)
    p.add_argument("--workdir", required=True)
    a = p.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    args, message = CASES[a.case]
    args = [x.replace("{dir}", a.workdir) for x in args]
    csv_path = os.path.join(a.workdir, "study.csv")
    existing = "a,b\n1,2\n" if a.case == "csv_other_columns" else None
    if existing:
        with open(csv_path, "w", encoding="utf-8") as f:
            f.write(existing)
    log = os.path.join(a.workdir, "launches.log")
    launcher = f"{sys.executable} {os.path.join(os.path.dirname(os.path.abspath(__file__)), 'launch_log.py')} " \
               f"{log} {a.launcher}"
    defaults = {"--deck": DECK, "--kpmap": a.kpmap}
    command = [sys.executable, os.path.join(REPO, "scripts", "study.py"), "run"] + args
    for option, value in defaults.items():
        if option not in args:
            command += [option, value]
    command += ["--launcher", launcher, "--csv", csv_path, "--steps", "2"]
    print("$ " + " ".join(command), flush=True)
    r = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    print(r.stdout + r.stderr)
    problems = []
    if r.returncode != 2:
        problems.append(f"exit code {r.returncode}, expected 2")
    first = r.stderr.splitlines()[0] if r.stderr else ""
    if not re.match(r"study\.py: error: " + message, first):
        problems.append(f"the message's first line {first!r} does not match /study.py: error: {message}/")
    if r.stderr.count("study.py: error:") != 1:
        problems.append("not exactly one error message")
    if a.case == "deck_rejected_by_kpmap" and "train.stepz: unknown key; did you mean 'steps'?" not in r.stderr:
        problems.append("kpmap's own message is not passed on")
    if "[study]" in r.stdout:
        problems.append("the study started (a progress line was printed)")
    launches = open(log, encoding="utf-8").read().splitlines() if os.path.exists(log) else []
    runs = [line for line in launches if "mode=info" not in line]
    if runs:
        problems.append(f"kpmap was launched to train: {runs}")
    if existing:
        if open(csv_path, encoding="utf-8").read() != existing:
            problems.append("the existing CSV was changed")
    elif os.path.exists(csv_path):
        problems.append("the CSV was created")
    if os.path.exists(os.path.join(a.workdir, "study.runs")):
        problems.append("the work directory was created")
    for problem in problems:
        print("FAIL: " + problem)
    print(f"bad_params {a.case}: OK ({len(launches)} mode-info checks)" if not problems else "bad_params: FAILED")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
