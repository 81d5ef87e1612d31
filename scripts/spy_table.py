"""Inclusive and self shares per function from a py-spy raw profile of scripts/profile_sites.py.

    py-spy record -r 200 --format raw -o OUT.txt -- python scripts/profile_sites.py --no-profile DIR ...
    python scripts/spy_table.py OUT.txt [TOP]

Counts the samples under bench/core.py `extract_rows` (the per-site step). py-spy samples
wall-clock stacks, and on a machine shared with other processes a thread waiting for a CPU
was mostly preempted on return from its one frequent system call, the thread CPU clock read
by the per-stage timers (extract.py `_ms_since`): those samples are waiting, not work, and
are left out of the shares (their share is printed). Not part of the test suite.
"""
from __future__ import annotations

import collections
import re
import sys

# Leaf frames whose own time is the thread CPU clock read (see the module doc).
WAITING = {"_ms_since", "_Budget.__init__", "_Stage.__enter__"}
FRAME = re.compile(r" \((?:.*/)?([^/]+\.py):\d+\)$")


def main() -> None:
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    own, inclusive = collections.Counter(), collections.Counter()
    total = waiting = 0
    for line in open(path):
        stack, _, count = line.rstrip().rpartition(" ")
        names = [FRAME.sub(r" (\1)", f) for f in stack.split(";")]
        if not any(n.startswith("extract_rows ") for n in names):
            continue
        count = int(count)
        if names[-1].split(" ")[0] in WAITING:
            waiting += count
            continue
        total += count
        own[names[-1]] += count
        below = names[next(i for i, n in enumerate(names) if n.startswith("extract_rows ")) + 1:]
        for name in set(n for n in below if "(core.py)" not in n):
            inclusive[name] += count
    print(f"{total} samples of work, {waiting} waiting ({100 * waiting / max(total + waiting, 1):.0f}%)\n")
    print("| inclusive | function | self | function |\n|---|---|---|---|")
    for (fi, ni), (fs, ns) in zip(inclusive.most_common(top), own.most_common(top)):
        print(f"| {100 * ni / total:.1f}% | `{fi}` | {100 * ns / total:.1f}% | `{fs}` |")


if __name__ == "__main__":
    main()
