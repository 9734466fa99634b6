#!/usr/bin/env python3
"""launch_log.py LOG COMMAND...: appends COMMAND to LOG (one line), then runs it and exits with its code.
The study tests' launcher wrapper: it shows which kpmap launches a study made."""
import os
import shlex
import sys

with open(sys.argv[1], "a", encoding="utf-8") as log:
    log.write(shlex.join(sys.argv[2:]) + "\n")
os.execvp(sys.argv[2], sys.argv[2:])
