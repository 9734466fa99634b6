#!/usr/bin/env python3
"""A run stopped part-way and resumed from its checkpoint has the history of a run never stopped.

resume.py --kpmap EXE --mpiexec MPIEXEC [--np-flag -n] --deck DECK --how HOW --at K
          [--np-a 2] [--np-b 4] [--set KEY=VALUE ...] [--set-b KEY=VALUE ...] [--rtol 0]

1. The interrupted run (np-a ranks, --set, checkpoint.path in a fresh directory,
   checkpoint.every --every) is stopped as HOW says:
     steps        train.steps = K: it ends normally with a checkpoint at step K;
     sigterm      SIGTERM to every rank (as a batch system sends it) once the progress line shows
                  step K or later: exit 0, a report that says "interrupted" and its checkpoint;
     usr1         the same with SIGUSR1, sent to the launcher (which forwards it);
     max_seconds  train.max_seconds = K seconds: exit 0 and a checkpoint, as for a signal;
     kill         SIGKILL to one rank once step K is shown: the job ends non-zero, and the newest
                  checkpoint (checkpoint.every apart) is where it continues;
     io           KPMAP_TEST_FAULT=io:K:0: rank 0's write of step K's checkpoint fails part-way:
                  the job ends through MPI_Abort with the message once, leaves no file of step K
                  (nor a temporary one), and continues from step K - every.
2. The resumed run (np-b ranks, --set then --set-b, --resume DIR) runs to step S = the
   checkpoint's step + --more, and the reference run (np-a ranks, --set, no checkpoint) to S.
3. Their histories must match entry by entry: bit for bit with --rtol 0, else the losses within
   rtol relative; final_loss and weights_rel_error likewise (support/histories.py). The resumed
   report must say where it resumed from.
"""
import argparse
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from histories import differences, load_report  # noqa: E402
from kill_rank import descendants  # noqa: E402

LONG = 10**9  # train.steps of a run that is stopped by a signal, a time limit or SIGKILL


def run(cmd, timeout=300, env=None):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, env=env)
    return r.returncode, r.stdout


def interrupted_run(cmd, how, at, name):
    """Starts cmd, waits for a progress line at step >= at, signals it; returns (code, output)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines, reached = [], threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            m = re.match(r"\s*step\s+(\d+)/", line)
            if m and int(m.group(1)) >= at:
                reached.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if not reached.wait(120):
        proc.kill()
        raise SystemExit("FAIL: the run never reached step %d:\n%s" % (at, "".join(lines)))
    ranks = descendants(proc.pid, name)
    if how == "sigterm":
        for pid in ranks:
            os.kill(pid, signal.SIGTERM)
    elif how == "usr1":
        os.kill(proc.pid, signal.SIGUSR1)
    elif how == "kill":
        os.kill(ranks[-1], signal.SIGKILL)
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise SystemExit("FAIL: the run did not end within 60 s of the %s:\n%s" % (how, "".join(lines)))
    reader.join(timeout=5)
    return code, "".join(lines)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kpmap", required=True)
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--np-flag", default="-n")
    p.add_argument("--deck", required=True)
    p.add_argument("--how", choices=["steps", "sigterm", "usr1", "max_seconds", "kill", "io"], required=True)
    p.add_argument("--at", type=float, required=True)
    p.add_argument("--every", type=int, default=5)
    p.add_argument("--more", type=int, default=20, help="steps the resumed run makes after the checkpoint")
    p.add_argument("--np-a", type=int, default=1)
    p.add_argument("--np-b", type=int, default=None)
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--set-b", action="append", default=[])
    p.add_argument("--rtol", type=float, default=0.0)
    a = p.parse_args()
    np_b = a.np_b or a.np_a

    def command(np, sets, extra):
        cmd = [a.mpiexec, a.np_flag, str(np), a.kpmap, a.deck]
        for s in sets + extra:
            cmd += ["--set", s]
        return cmd

    tmp = tempfile.mkdtemp(prefix="kpmap-resume-")
    ckpt = os.path.join(tmp, "ckpt")
    first = os.path.join(tmp, "first.json")
    extra = ["checkpoint.path=" + ckpt, "checkpoint.every=%d" % a.every, "output.report=" + first]
    if a.how == "steps":
        code, out = run(command(a.np_a, a.set, extra + ["train.steps=%d" % a.at]))
        expect_code = 0
    elif a.how == "max_seconds":
        code, out = run(command(a.np_a, a.set, extra + ["train.steps=%d" % LONG, "output.every=1000",
                                                         "train.max_seconds=%g" % a.at]))
        expect_code = 0
    elif a.how == "io":
        env = dict(os.environ, KPMAP_TEST_FAULT="io:%d:0" % a.at)
        code, out = run(command(a.np_a, a.set, extra + ["train.steps=%d" % (a.at + a.more)]), timeout=120, env=env)
        expect_code = None
        message = r"kpmap: error: rank 0: test fault: an I/O error while writing .*\.ckpt-%08d\.h5\.tmp" % a.at
        if code == 0 or len(re.findall(message, out)) != 1:
            print(out, end="")
            raise SystemExit("FAIL: expected a non-zero exit and %r once (exit %d)" % (message, code))
    else:
        cmd = command(a.np_a, a.set, extra + ["train.steps=%d" % LONG, "output.every=1"])
        code, out = interrupted_run(cmd, a.how, int(a.at), os.path.basename(a.kpmap))
        expect_code = None if a.how == "kill" else 0
    print(out, end="")
    problems = []
    if expect_code is not None and code != expect_code:
        raise SystemExit("FAIL: the interrupted run exited %d (expected %d)" % (code, expect_code))
    if a.how == "kill" and code == 0:
        raise SystemExit("FAIL: the killed run exited 0")
    if a.how == "io" and not sorted(glob.glob(os.path.join(ckpt, "ckpt-*.h5")))[-1].endswith(
            "ckpt-%08d.h5" % (a.at - a.every)):
        raise SystemExit("FAIL: after the failed write of step %d the newest checkpoint is not step %d's: %s"
                         % (a.at, a.at - a.every, os.listdir(ckpt)))
    files = sorted(glob.glob(os.path.join(ckpt, "ckpt-*.h5")))
    if not files:
        raise SystemExit("FAIL: no checkpoint in " + ckpt)
    # SIGKILL can land while rank 0 writes: its temporary file may stay (never read; the next
    # write of that step replaces it). Anything else stopping leaves none.
    if a.how != "kill" and glob.glob(os.path.join(ckpt, ".*")):
        problems.append("a temporary checkpoint file was left behind")
    step = int(re.search(r"ckpt-(\d+)\.h5$", files[-1]).group(1))
    if a.how in ("sigterm", "usr1", "max_seconds"):
        report = load_report(first)
        stop = report.get("interrupted")
        want = {"sigterm": "SIGTERM", "usr1": "SIGUSR1", "max_seconds": "train.max_seconds"}[a.how]
        if not stop or stop["reason"] != want or stop["step"] != step or stop["checkpoint"] != files[-1]:
            problems.append("the report's 'interrupted' is %r (expected reason %s, step %d, checkpoint %s)"
                            % (stop, want, step, files[-1]))
        if "kpmap: stopped by %s after step %d" % (want, step) not in out:
            problems.append("no 'stopped by %s after step %d' line" % (want, step))
    total = step + a.more
    print("checkpoint %s at step %d; comparing %d steps" % (files[-1], step, total))

    resumed_json, reference_json = os.path.join(tmp, "resumed.json"), os.path.join(tmp, "reference.json")
    code, out = run(command(np_b, a.set + a.set_b, ["train.steps=%d" % total, "output.report=" + resumed_json,
                                                    "checkpoint.path=" + ckpt, "checkpoint.resume=" + ckpt]))
    print(out, end="")
    if code != 0:
        raise SystemExit("FAIL: the resumed run exited %d" % code)
    code, out = run(command(a.np_a, a.set, ["train.steps=%d" % total, "output.report=" + reference_json]))
    if code != 0:
        print(out, end="")
        raise SystemExit("FAIL: the reference run exited %d" % code)
    resumed, reference = load_report(resumed_json), load_report(reference_json)
    if resumed.get("resumed_from") != {"checkpoint": files[-1], "step": step}:
        problems.append("resumed_from is %r" % resumed.get("resumed_from"))
    problems += differences(resumed, reference, "the resumed run", "the uninterrupted run", a.rtol)
    for problem in problems:
        print("FAIL: " + problem)
    if not problems:
        how = "bit for bit equal to" if a.rtol == 0 else "within %g of" % a.rtol
        print("resumed at step %d on %d ranks: %d entries %s the uninterrupted run's"
              % (step, np_b, len(reference["history"]), how))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
