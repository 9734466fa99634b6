#!/usr/bin/env python3
"""Checks that a training deck's run shows what its header promises about the loss.

check_convergence.py DECK.yaml REPORT.json [DECK.yaml REPORT.json ...]

A deck promises convergence with a header line
    # converges: below X
and its report must then show
  - the final loss below X and at most 1/20 of the first loss (well below it);
  - no rise on the way: every loss above X is at most 2x the lowest loss before it (a loss that
    has settled at or below X may fluctuate there: mini-batches differ);
  - the last 5 losses not rising: none above 2x the lowest loss before the last 5, unless at or
    below X.
A training deck (mode train) without the line fails: every training deck says what it shows.
"""
import json
import re
import sys


def promise(deck):
    text = open(deck).read()
    training = not re.search(r"^mode:\s*(collectives|bench|info)\b", text, re.MULTILINE)
    m = re.search(r"^# converges: below ([0-9.eE+-]+)\s*$", text, re.MULTILINE)
    return training, float(m.group(1)) if m else None


def problems(deck, report_path):
    training, below = promise(deck)
    if not training:
        return []
    if below is None:
        return [f"{deck}: a training deck without '# converges: below X' in its header"]
    report = json.load(open(report_path))
    losses = [h["loss"] for h in report["history"]]
    out = []
    if any(not isinstance(x, (int, float)) for x in losses):
        return [f"{deck}: the history holds a non-numeric loss"]
    first, final = losses[0], losses[-1]
    if not final < below:
        out.append(f"{deck}: final loss {final:.4g} is not below {below:g} (its header's promise)")
    if not final <= first / 20:
        out.append(f"{deck}: final loss {final:.4g} is not well below the first, {first:.4g} (at most 1/20)")
    for i in range(1, len(losses)):
        lowest = min(losses[:i])
        if losses[i] > below and losses[i] > 2 * lowest:
            out.append(f"{deck}: step {i + 1}: loss {losses[i]:.4g} rose above 2x the lowest before it, {lowest:.4g}")
    before = min(losses[:-5]) if len(losses) > 5 else losses[0]
    for i, x in enumerate(losses[-5:]):
        if x > below and x > 2 * before:
            out.append(f"{deck}: the last 5 losses rise: {x:.4g} against {before:.4g} before them")
    return out


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        print(__doc__)
        return 2
    found = []
    for deck, report in zip(args[::2], args[1::2]):
        found += problems(deck, report)
    for p in found:
        print("FAIL: " + p)
    if not found:
        print(f"OK: {len(args) // 2} decks show what their headers promise")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
