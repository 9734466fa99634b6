#!/usr/bin/env python3
"""Bad checkpoints and bad resumes are refused on every rank, and nothing is overwritten.

checkpoint_refusals.py --kpmap EXE --deck DECK --h5dump H5DUMP -- LAUNCHER...

Writes a checkpoint with one rank (train.steps 10), then, with the launcher (e.g. mpiexec -n 4),
resumes from doctored copies and with mismatched decks. Each attempt must exit 2, print its
message exactly once, leave every checkpoint file byte for byte as it was, and write no new one:
  - truncated: the file cut to half its length;
  - corrupted data: one byte of /state/master's values flipped (found in the file through
    h5dump's binary dump of the dataset, so the flip lands in the data, not in free space);
  - corrupted header: one byte flipped in the first 512 bytes (the superblock and root header);
  - not a checkpoint: a text file under a checkpoint name;
  - another run: problem.seed changed; nothing to run: train.steps at the checkpoint's step;
  - a missing path, and a directory with no checkpoint;
  - a new run (no --resume) into a checkpoint.path that already holds checkpoints.
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile


def digest(directory):
    out = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kpmap", required=True)
    p.add_argument("--deck", required=True)
    p.add_argument("--h5dump", required=True)
    p.add_argument("launcher", nargs=argparse.REMAINDER)
    a = p.parse_args()
    launcher = a.launcher[1:] if a.launcher and a.launcher[0] == "--" else a.launcher

    tmp = tempfile.mkdtemp(prefix="kpmap-refusals-")
    good_dir = os.path.join(tmp, "good")
    base = ["--set", "output.report=''"]
    r = subprocess.run([a.kpmap, a.deck, "--set", "train.steps=10", "--set", "checkpoint.path=" + good_dir] + base,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    good = os.path.join(good_dir, "ckpt-00000010.h5")
    if r.returncode != 0 or not os.path.isfile(good):
        print(r.stdout)
        print("FAIL: writing the checkpoint")
        return 1
    data = open(good, "rb").read()

    def doctored(name, content):
        d = os.path.join(tmp, name)
        os.makedirs(d)
        with open(os.path.join(d, "ckpt-00000010.h5"), "wb") as f:
            f.write(content)
        return d

    raw = os.path.join(tmp, "master.bin")
    subprocess.run([a.h5dump, "-d", "/state/master", "-b", "LE", "-o", raw, good], check=True,
                   stdout=subprocess.DEVNULL)
    values = open(raw, "rb").read()
    at = data.find(values)
    if len(values) < 16 or at < 0 or data.find(values, at + 1) >= 0:
        print("FAIL: /state/master's %d bytes are not found exactly once in the file" % len(values))
        return 1
    flipped_data = bytearray(data)
    flipped_data[at + len(values) // 2] ^= 0x10
    flipped_header = bytearray(data)
    flipped_header[300] ^= 0x01

    cases = [  # (name, directory to resume from, extra --set, expected message)
        ("truncated", doctored("truncated", data[:len(data) // 2]), [],
         r"checkpoint .*truncated/ckpt-00000010\.h5: cannot be read \(truncated or corrupted\?\).*refused, and left as it is"),
        ("corrupted data", doctored("data", bytes(flipped_data)), [],
         r"checkpoint .*data/ckpt-00000010\.h5: checksum mismatch \(stored [0-9a-f]{16}, computed [0-9a-f]{16}\): the file is corrupted"),
        ("corrupted header", doctored("header", bytes(flipped_header)), [],
         r"checkpoint .*header/ckpt-00000010\.h5: (cannot be read|not an HDF5 file|checksum mismatch|an HDF5 file, but not a kpmap checkpoint)"),
        ("not a checkpoint", doctored("text", b"step: 10\n" * 100), [],
         r"checkpoint .*text/ckpt-00000010\.h5: not an HDF5 file"),
        ("another run", good_dir, ["problem.seed=7"],
         r"checkpoint .*good/ckpt-00000010\.h5 belongs to another run: problem\.seed: \d+ in the checkpoint, 7 here"),
        ("nothing to run", good_dir, ["train.steps=10"],
         r"checkpoint .*good/ckpt-00000010\.h5 is at step 10, train\.steps is 10: nothing left to run"),
        ("missing path", os.path.join(tmp, "absent"), [],
         r"checkpoint\.resume: '.*absent' does not exist"),
        ("empty directory", os.path.join(tmp, "empty"), [],
         r"checkpoint\.resume: the directory '.*empty' holds no checkpoint"),
    ]
    os.makedirs(os.path.join(tmp, "empty"))
    problems = []

    def attempt(name, cmd, message, watched):
        before = {d: digest(d) for d in watched}
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        hits = [line for line in r.stdout.splitlines() if re.search(message, line)]
        after = {d: digest(d) for d in watched}
        if r.returncode != 2:
            problems.append("%s: exit %d (expected 2)" % (name, r.returncode))
        if len(hits) != 1:
            problems.append("%s: the message %r appears %d times" % (name, message, len(hits)))
        if before != after:
            problems.append("%s: checkpoint files changed: %r -> %r" % (name, before, after))
        print("--- %s: exit %d\n%s" % (name, r.returncode, r.stdout.strip()))

    for name, directory, sets, message in cases:
        cmd = launcher + [a.kpmap, a.deck, "--resume", directory, "--set", "checkpoint.path=" + directory] + base
        for s in sets:
            cmd += ["--set", s]
        watched = [directory] if os.path.isdir(directory) else []
        attempt(name, cmd, message, watched + [good_dir])
    attempt("new run into a checkpoint directory",
            launcher + [a.kpmap, a.deck, "--set", "checkpoint.path=" + good_dir] + base,
            r"checkpoint\.path: '.*good' already holds checkpoints \(the newest: .*ckpt-00000010\.h5\); "
            r"a new run does not overwrite them", [good_dir])
    for problem in problems:
        print("FAIL: " + problem)
    if not problems:
        shutil.rmtree(tmp)
        print("all %d refusals: exit 2, one message, files unchanged" % (len(cases) + 1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
