#!/usr/bin/env python3
"""Scaling and backend studies of kpmap's trainer: scripts/study.py run KIND ... | plot CSV --out DIR.

The same as `python3 -m kpmap_study` with scripts/ on PYTHONPATH; see kpmap_study/cli.py and
docs/performance.md, "Running a study".
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kpmap_study.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
