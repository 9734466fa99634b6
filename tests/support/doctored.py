"""Feeding a checker doctored reports, for the tests that show a checker can fail
(regression/test_same_bits.py, regression/test_check_deck.py):

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    from doctored import doctored, run_on_reports
"""
import copy
import json
import os
import subprocess
import sys
import tempfile


def doctored(report, change):
    """A deep copy of report with change(copy) applied."""
    report = copy.deepcopy(report)
    change(report)
    return report


def run_on_reports(argv, reports):
    """Writes the reports (a list of (file name, JSON document)) to a temporary folder and runs the
    Python script argv(paths) as ctest runs it; returns (exit code, stdout and stderr)."""
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for name, doc in reports:
            paths.append(os.path.join(d, name))
            with open(paths[-1], "w") as f:
                json.dump(doc, f)
        r = subprocess.run([sys.executable] + argv(paths), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        return r.returncode, r.stdout
