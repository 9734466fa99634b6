#!/usr/bin/env python3
"""kpmap convert-csv against values written here: a CSV of exact binary fractions (with a header
line, CRLF line ends, spaces around cells, and y in column 2 via --y-column) becomes X and y that
h5dump prints back exactly, with the shapes [rows x features] and [rows].

  check_convert_csv.py --dir DIR -- KPMAP"""
import argparse
import os
import re
import subprocess
import sys

ROWS = [[0.5, -1.25, 3.0, 0.125], [-0.0625, 2.5, -7.75, 1024.0], [0.375, 0.0, 6.5, -3.5]]


def dump(path, name):
    out = subprocess.run(["h5dump", "-d", name, "-w", "0", path], stdout=subprocess.PIPE, text=True, check=True).stdout
    dims = [int(d) for d in re.search(r"DATASPACE\s+SIMPLE\s*\{\s*\(([^)]*)\)", out).group(1).split(",")]
    data = re.search(r"DATA\s*\{(.*?)\n\s*\}", out, re.S).group(1)
    values = [float(v) for v in re.sub(r"\(\d+(,\d+)*\):", " ", data).replace(",", " ").split()]
    return dims, values


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    kpmap = [c for c in a.command if c != "--"]
    os.makedirs(a.dir, exist_ok=True)
    csv = os.path.join(a.dir, "table.csv")
    with open(csv, "w", newline="") as f:
        f.write("a, y ,b,c\r\n")
        for row in ROWS:
            f.write(" , ".join(repr(v) for v in row) + "\r\n")
    h5 = os.path.join(a.dir, "table.h5")
    subprocess.run(kpmap + ["convert-csv", csv, "-o", h5, "--y-column", "2"], check=True)
    failures = []
    want_x = [v for row in ROWS for j, v in enumerate(row) if j != 1]
    want_y = [row[1] for row in ROWS]
    for name, want_dims, want in (("X", [3, 3], want_x), ("y", [3], want_y)):
        dims, values = dump(h5, name)
        if dims != want_dims or values != want:
            failures.append(f"{name}: {dims} {values}, expected {want_dims} {want}")
    for f in failures:
        print(f)
    if not failures:
        print("convert-csv: X [3 x 3] and y [3] hold the CSV's values exactly")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
