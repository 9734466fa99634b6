#!/usr/bin/env python3
"""A rank killed with SIGKILL mid-run ends the whole job, with a non-zero exit, within a limit.

kill_rank.py --rank R --within 30 -- mpiexec -n 4 kpmap deck.yaml ...

Starts the command in its own session, waits until the run is past its start (a progress line
on its output), sends SIGKILL to the R-th kpmap process below the launcher (in PID order), then
waits at most --within seconds for the launcher to exit. Fails if it exits 0, if it is still
running then (the job hangs), or if any other rank outlives it.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time


def descendants(root, name):
    """PIDs of the live processes called `name` below `root` in the process tree (hydra's proxy
    starts the ranks in sessions of their own, so the tree, not the session, finds them)."""
    parent, comm = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":
            continue
        pid = int(entry)
        comm[pid] = stat[stat.index("(") + 1:stat.rindex(")")]
        parent[pid] = int(fields[1])
    found = []
    for pid in comm:
        p = pid
        while p in parent and p != root and p > 1:
            p = parent[p]
        if p == root and pid != root and comm[pid] == name:
            found.append(pid)
    return sorted(found)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, default=1, help="which kpmap process to kill (PID order)")
    p.add_argument("--within", type=float, default=30, help="seconds the job may take to end")
    p.add_argument("--started", default=r"^step\s+\d+", help="output line that shows the run is under way")
    p.add_argument("--start-timeout", type=float, default=60)
    p.add_argument("--name", default="kpmap", help="process name of the ranks")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    started = threading.Event()
    lines = []

    def read():
        for line in proc.stdout:
            lines.append(line)
            if re.search(a.started, line):
                started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def fail(message):
        for pid in descendants(proc.pid, a.name):
            os.kill(pid, signal.SIGKILL)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        print("".join(lines), end="")
        print(f"FAIL: {message}")
        return 1

    deadline = time.monotonic() + a.start_timeout
    while not started.wait(0.2):
        if proc.poll() is not None:
            reader.join(timeout=5)
            return fail(f"the job ended (exit {proc.returncode}) before a line matched {a.started!r}")
        if time.monotonic() > deadline:
            return fail(f"no line matching {a.started!r} within {a.start_timeout} s")
    ranks = descendants(proc.pid, a.name)
    if len(ranks) <= a.rank:
        return fail(f"found {len(ranks)} '{a.name}' processes, cannot kill number {a.rank}")
    victim = ranks[a.rank]
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()
    try:
        code = proc.wait(timeout=a.within)
    except subprocess.TimeoutExpired:
        return fail(f"the job was still running {a.within} s after SIGKILL to pid {victim} "
                    f"(ranks {ranks})")
    took = time.monotonic() - killed_at
    reader.join(timeout=5)
    print("".join(lines), end="")
    survivors = [pid for pid in ranks if pid != victim and alive(pid)]
    problems = []
    if code == 0:
        problems.append("the launcher exited 0 after a rank was killed")
    if survivors:
        problems.append(f"kpmap processes {survivors} outlived the launcher")
    print(f"killed pid {victim} ({a.rank} of {len(ranks)} ranks); the launcher exited {code} "
          f"{took:.1f} s later")
    for problem in problems:
        print(f"FAIL: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
