"""Inclusive and self shares per function from a py-spy raw profile of sitestrip-bench profile.

    py-spy record -r 200 --format raw -o OUT.txt -- sitestrip-bench profile --no-profile DIR ...
    sitestrip-bench spy-table OUT.txt [TOP]

Counts the samples under bench/sitestrip_bench/core.py `extract_rows` (the per-site step). py-spy samples
wall-clock stacks, and on a machine shared with other processes a thread waiting for a CPU
was mostly preempted on return from its one frequent system call, the thread CPU clock read
by the per-stage timers (site_step.py `_ms_since`): those samples are waiting, not work, and
are left out of the shares (their share is printed). Not part of the test suite.
"""
from __future__ import annotations

import collections
import re
import sys

# Leaf frames whose own time is the thread CPU clock read (see the module doc).
WAITING = {"_ms_since", "_Budget.__init__", "_Stage.__enter__"}
FRAME = re.compile(r" \((?:.*/)?([^/]+\.py):\d+\)$")


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: sitestrip-bench spy-table OUT.txt [TOP]", file=sys.stderr)
        return 2
    path = args[0]
    top = int(args[1]) if len(args) > 1 else 25
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
    return 0


if __name__ == "__main__":
    main()
