#!/usr/bin/env python3
"""Runs a command and checks how it ends: exit code, output, and that it ends in time.

expect.py --exit 2 --once 'bad.yaml:3:' --contains 'mesh.axes' --timeout 30 -- mpiexec -n 4 kpmap bad.yaml

--once RE      RE matches exactly one line of stdout+stderr (a message printed once, not per rank)
--contains RE  RE matches somewhere in stdout+stderr (repeatable)
--absent RE    RE matches nowhere (repeatable)
"""
import argparse
import re
import subprocess
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--exit", type=int, default=0)
    p.add_argument("--once", action="append", default=[])
    p.add_argument("--contains", action="append", default=[])
    p.add_argument("--absent", action="append", default=[])
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=a.timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        print(out)
        print(f"FAIL: did not end within {a.timeout} s: {' '.join(cmd)}")
        return 1
    print(r.stdout, end="")
    problems = []
    if r.returncode != a.exit:
        problems.append(f"exit code {r.returncode}, expected {a.exit}")
    lines = r.stdout.splitlines()
    for pattern in a.once:
        n = sum(1 for line in lines if re.search(pattern, line))
        if n != 1:
            problems.append(f"/{pattern}/ matched {n} lines, expected exactly 1")
    for pattern in a.contains:
        if not re.search(pattern, r.stdout, re.MULTILINE):
            problems.append(f"/{pattern}/ not found in the output")
    for pattern in a.absent:
        if re.search(pattern, r.stdout, re.MULTILINE):
            problems.append(f"/{pattern}/ found in the output, expected absent")
    for problem in problems:
        print("FAIL: " + problem)
    if not problems:
        print("expect: OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
