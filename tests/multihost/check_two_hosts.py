#!/usr/bin/env python3
"""Checks a run across two hosts against the same run on one host:
check_two_hosts.py ONE_HOST.json TWO_HOSTS.json TX_A TX_B

- the same mesh, and the same history, final_loss and weights_rel_error, bit for bit
  (support/histories.py). On 2 ranks every reduction is one addition a + b per
  element, and IEEE addition is commutative, so the transport and MPI's algorithm cannot change a
  bit;
- the collectives crossed the link: each end sent (TX_A, TX_B: its transmit counter over the run)
  at least the bytes a rank hands to collectives per step (comm_bytes.min) times the steps. Shared
  memory between the ranks would leave only the launcher's control traffic, a few kB.
Exit 0 when all hold, 1 otherwise, printing each failure."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from histories import differences, load_report  # noqa: E402


def main(one_path, two_path, tx_a, tx_b):
    one, two = load_report(one_path), load_report(two_path)
    failures = []
    if one["mesh"] != two["mesh"] or two["mesh"]["ranks"] != 2:
        failures.append(f"meshes differ or are not 2 ranks: {one['mesh']} vs {two['mesh']}")
    failures += differences(two, one, "the two-host run", "the one-host run")
    payload = int(two["comm_bytes"]["min"] * two["config"]["train"]["steps"])
    for end, sent in (("rank 0's end", tx_a), ("rank 1's end", tx_b)):
        print(f"veth, {end}: {sent} bytes sent; collective payload {payload} bytes")
        if sent < payload:
            failures.append(f"veth, {end}: {sent} bytes sent, less than the collectives' {payload}: "
                            "the ranks did not communicate over the link")
    for f in failures:
        print(f)
    if not failures:
        print(f"two hosts: the same {len(two['history'])} losses, final_loss and weights_rel_error as one host")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
