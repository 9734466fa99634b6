"""Compares two training reports: their histories entry by entry (step, loss, and the loss scaler's
scale and skipped where present), final_loss and weights_rel_error (both present or both absent).

Bit for bit by default: two numbers match when they are the same double (the reports write
enough digits to give back the same double; -0.0 is not 0.0). With rtol > 0, the losses,
final_loss and weights_rel_error match within rtol relative; step, scale and skipped stay exact.

Used by regression/same_bits.py, regression/check_file_source.py, faults/resume.py and
multihost/check_two_hosts.py:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    from histories import differences, load_report
"""
import json
import struct
import sys


def load_report(path):
    """The JSON report at path; exits with a message naming the path when it cannot be read."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"cannot read the report {path}: {e}")


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def same(a, b, rtol=0.0):
    """Whether a and b match: numbers as above, anything else (None, bools) by equality."""
    if not (_is_number(a) and _is_number(b)):
        return a == b and type(a) is type(b)
    if rtol == 0:
        return struct.pack("<d", float(a)) == struct.pack("<d", float(b))
    return abs(a - b) <= rtol * max(abs(a), abs(b))


def _entry_differs(got, want, rtol):
    for key in sorted(set(got) | set(want)):
        if key not in got or key not in want or not same(got[key], want[key], rtol if key == "loss" else 0.0):
            return True
    return False


def differences(got, want, got_name, want_name, rtol=0.0):
    """Messages for every way report `got` differs from report `want`: the number of history
    entries; the first differing entry (its index and step, both entries in full, and how many
    more differ); final_loss; weights_rel_error. An empty list when they match. got_name and
    want_name end the messages: "loss 0.5 in A, 0.25 in B"."""
    problems = []
    h1, h2 = got.get("history", []), want.get("history", [])
    if len(h1) != len(h2):
        problems.append(f"{len(h1)} history entries in {got_name}, {len(h2)} in {want_name}")
    differing = [i for i, (e1, e2) in enumerate(zip(h1, h2)) if _entry_differs(e1, e2, rtol)]
    if differing:
        i = differing[0]
        more = f" (and {len(differing) - 1} later entries differ)" if len(differing) > 1 else ""
        problems.append(f"history entry {i} (step {h2[i].get('step')}) differs: {h1[i]!r} in {got_name}, "
                        f"{h2[i]!r} in {want_name}{more}")
    for key in ("final_loss", "weights_rel_error"):
        if (key in got) != (key in want):
            problems.append(f"{key}: {'present' if key in got else 'absent'} in {got_name}, "
                            f"{'present' if key in want else 'absent'} in {want_name}")
        elif key in got and not same(got[key], want[key], rtol):
            problems.append(f"{key}: {got[key]!r} in {got_name}, {want[key]!r} in {want_name}")
    return problems
