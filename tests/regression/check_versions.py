#!/usr/bin/env python3
"""Checks a report's versions against what `kpmap --version` prints on the same machine.

check_versions.py REPORT.json -- KPMAP [ARGS...]

versions.host_isa (the fused kernel's host loops: avx2, avx512, baseline or build target) must be
the value of the `Host kernels:` line of `KPMAP --version`.
"""
import json
import subprocess
import sys


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: check_versions.py REPORT.json -- KPMAP [ARGS...]")
    versions = json.load(open(sys.argv[1])).get("versions", {})
    out = subprocess.run(sys.argv[3:] + ["--version"], capture_output=True, text=True, check=True).stdout
    printed = [line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Host kernels:")]
    if len(printed) != 1:
        sys.exit(f"FAIL: `--version` prints {len(printed)} 'Host kernels:' lines:\n{out}")
    if versions.get("host_isa") != printed[0]:
        sys.exit(f"FAIL: {sys.argv[1]}: versions.host_isa is {versions.get('host_isa')!r}, "
                 f"`--version` prints 'Host kernels: {printed[0]}'")
    print(f"versions.host_isa: {printed[0]}, as `--version` prints")


if __name__ == "__main__":
    main()
