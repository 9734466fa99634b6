"""Scaling and backend studies of kpmap's trainer: runs, one CSV, PNG figures (scripts/study.py)."""
