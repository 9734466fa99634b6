#!/usr/bin/env python3
"""The bitwise comparison of two reports (support/histories.py, used by same_bits.py,
check_file_source.py, faults/resume.py and multihost/check_two_hosts.py) catches a difference: same_bits.py is fed the stored
reproducible reference and copies of it doctored in one place (a loss one ulp off, a missing
entry, final_loss or weights_rel_error one ulp off or absent, a flipped skipped flag) and must
pass or fail each as stated, a failure naming the entry that differs; the relative tolerance
faults/resume.py uses across meshes is checked on the module directly. Prints one line per case
and 'N passed, M failed'; exits 1 on any failure."""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SAME_BITS = os.path.join(HERE, "same_bits.py")
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from doctored import doctored, run_on_reports  # noqa: E402
from histories import differences  # noqa: E402


def run_same_bits(first, second):
    """same_bits.py FIRST SECOND, as ctest runs it; returns (rc, output)."""
    return run_on_reports(lambda paths: [SAME_BITS] + paths, [("first.json", first), ("second.json", second)])


def ulp_up(x):
    return math.nextafter(x, math.inf)


def main():
    with open(os.path.join(HERE, "reference", "reproducible.json")) as f:
        ref = json.load(f)
    last = len(ref["history"]) - 1
    step17 = ref["history"][16]["step"]
    scaled = doctored(ref, lambda r: [h.update(scale=65536.0, skipped=False) for h in r["history"]])

    def set_loss(i, value):
        return lambda r: r["history"][i].update(loss=value)

    cases = [  # (name, report, should pass, a line of the output holds this; " .* ": anything between)
        ("against itself", ref, True, "same bits in 2 reports"),
        ("entry 16's loss one ulp up", doctored(ref, set_loss(16, ulp_up(ref["history"][16]["loss"]))), False,
         f"history entry 16 (step {step17}) differs"),
        ("the first loss one ulp down",
         doctored(ref, set_loss(0, math.nextafter(ref["history"][0]["loss"], 0.0))), False,
         "history entry 0 (step 1) differs"),
        ("the last loss one ulp up", doctored(ref, set_loss(last, ulp_up(ref["history"][last]["loss"]))), False,
         f"history entry {last} (step {ref['history'][last]['step']}) differs"),
        ("two losses changed: the first named, the other counted",
         doctored(ref, lambda r: [set_loss(i, ulp_up(r["history"][i]["loss"]))(r) for i in (5, 9)]), False,
         "history entry 5 (step 6) differs: .* (and 1 later entries differ)"),
        ("the last entry missing", doctored(ref, lambda r: r["history"].pop()), False,
         f"{last} history entries in"),
        ("a step number changed", doctored(ref, lambda r: r["history"][3].update(step=99)), False,
         "history entry 3 (step 4) differs"),
        ("final_loss one ulp up", doctored(ref, lambda r: r.update(final_loss=ulp_up(r["final_loss"]))), False,
         "final_loss: "),
        ("weights_rel_error one ulp up",
         doctored(ref, lambda r: r.update(weights_rel_error=ulp_up(r["weights_rel_error"]))), False,
         "weights_rel_error: "),
        ("weights_rel_error absent", doctored(ref, lambda r: r.pop("weights_rel_error")), False,
         "weights_rel_error: absent in"),
        ("scaler: against itself", scaled, True, "same bits in 2 reports"),
        ("scaler: skipped flipped", doctored(scaled, lambda r: r["history"][7].update(skipped=True)), False,
         "history entry 7 (step 8) differs"),
        ("not a reproducible run", doctored(ref, lambda r: r.update(reproducible=False)), False,
         "not a reproducible run"),
    ]
    failed = 0
    for name, report, should_pass, line in cases:
        first = scaled if name.startswith("scaler") else ref
        rc, out = run_same_bits(first, report)
        ok = (rc == 0) == should_pass and rc in (0, 1) and any(_matches(line, l) for l in out.splitlines())
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: same_bits.py exited {rc}, expected {0 if should_pass else 1}"
              f", output with '{line}'")
        if not ok:
            print("     " + out.strip().replace("\n", "\n     "))

    # faults/resume.py across meshes: losses within rtol relative, final_loss and
    # weights_rel_error likewise; step, scale and skipped exact.
    near = doctored(scaled, lambda r: r["history"][4].update(loss=r["history"][4]["loss"] * (1 + 1e-13)))
    far = doctored(scaled, lambda r: r["history"][4].update(loss=r["history"][4]["loss"] * (1 + 1e-11)))
    scale = doctored(scaled, lambda r: r["history"][4].update(scale=32768.0))
    for name, report, rtol, should_pass in [
        ("rtol 1e-12: a loss 1e-13 off", near, 1e-12, True),
        ("rtol 0: a loss 1e-13 off", near, 0.0, False),
        ("rtol 1e-12: a loss 1e-11 off", far, 1e-12, False),
        ("rtol 1e-12: a scale differs", scale, 1e-12, False),
    ]:
        found = differences(report, scaled, "A", "B", rtol)
        ok = (not found) == should_pass and (should_pass or "history entry 4 (step 5) differs" in found[0])
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {found or 'no differences'}")
    total = len(cases) + 4
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed else 0


def _matches(want, line):
    """want's pieces (split at '.*') appear in line in order."""
    at = 0
    for piece in want.split(" .* "):
        at = line.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return True


if __name__ == "__main__":
    sys.exit(main())
