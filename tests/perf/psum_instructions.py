#!/usr/bin/env python3
"""psum's cost per call beyond MPI_Allreduce, in instructions: psum_instructions.py BENCH_PSUM [BYTES ...]

Runs bench_psum's paired_self/<bytes> rows (MPI_Allreduce and kpmap::psum through an Axis handle
over the empty tuple, a group of one rank, on the same buffers; docs/collectives.md) under
valgrind's callgrind, one rank, and prints the instructions each executes per call, counted by
callgrind (the calls each makes below it included). Instruction counts do not depend on the load
of the machine, which the timed rows do. Needs valgrind (scripts/setup.sh installs it).
"""
import os
import re
import subprocess
import sys
import tempfile

CALLER = "(anonymous namespace)::paired("
FUNCTIONS = {
    "MPI_Allreduce": re.compile(r"\*\s+\S*:PMPI_Allreduce\b"),
    "psum": re.compile(r"\*\s+\S*:\(anonymous namespace\)::psum_handle\("),
}


def per_call(annotated, pattern):
    """(instructions, calls) of the function matching pattern when called by paired(): the '<'
    line naming paired() in its caller block of callgrind_annotate --tree=caller."""
    lines = annotated.splitlines()
    for i, line in enumerate(lines):
        if pattern.search(line):
            j = i - 1
            while j >= 0 and lines[j].lstrip().split(" ", 1)[0].replace(",", "").isdigit() and "<" in lines[j]:
                if CALLER in lines[j]:
                    cost = int(lines[j].split()[0].replace(",", ""))
                    calls = int(re.search(r"\(([\d,]+)x\)", lines[j]).group(1).replace(",", ""))
                    return cost, calls
                j -= 1
    sys.exit(f"psum_instructions.py: no call from paired() found for {pattern.pattern}")


def measure(bench, size):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "callgrind.out")
        env = dict(os.environ, OMP_NUM_THREADS="1", OMP_PROC_BIND="false")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", bench,
                        f"--benchmark_filter=paired_self/{size}/"], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        annotated = subprocess.run(["callgrind_annotate", "--tree=caller", "--inclusive=yes", out], check=True,
                                   stdout=subprocess.PIPE, universal_newlines=True).stdout
    return {name: per_call(annotated, pattern) for name, pattern in FUNCTIONS.items()}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    bench, sizes = sys.argv[1], sys.argv[2:] or ["8", "1024"]
    print("| size (B) | MPI_Allreduce | kpmap psum (handle) | psum beyond MPI_Allreduce |")
    print("|---:|---:|---:|---:|")
    for size in sizes:
        m = measure(bench, size)
        mpi = m["MPI_Allreduce"][0] / m["MPI_Allreduce"][1]
        psum = m["psum"][0] / m["psum"][1]
        print(f"| {size} | {mpi:.0f} | {psum:.0f} | {psum - mpi:.0f} |")


if __name__ == "__main__":
    main()
