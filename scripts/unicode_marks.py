"""Write transforms/unicode_marks.json: the combining-mark ranges of each Unicode version.

transforms/tokens.py needs the code point ranges of Unicode category M* for its token
pattern; scanning all 1.1 M code points with unicodedata costs ~0.1 s at every process
start (every run and every Beam worker). The table holds the ranges per Unicode version,
computed by each Python's own unicodedata; tokens.py takes the running version's entry and
computes the ranges itself for a version the table lacks. A test compares the entry with
the live computation.

    python scripts/unicode_marks.py python3.10 python3.11 python3.12 python3.13
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "transforms", "unicode_marks.json")
# Runs in each interpreter: no import of the project (its versions may lack our dependencies).
PROBE = """
import json, sys, unicodedata
ranges, start, prev = [], None, None
for cp in range(sys.maxunicode + 1):
    if unicodedata.category(chr(cp))[0] == "M":
        if start is None:
            start = cp
        elif cp != prev + 1:
            ranges.append((start, prev))
            start = cp
        prev = cp
if start is not None:
    ranges.append((start, prev))
print(json.dumps([unicodedata.unidata_version, ranges]))
"""


def main() -> None:
    table = {}
    if os.path.exists(OUT):
        with open(OUT) as f:
            table = json.load(f)
    for python in sys.argv[1:] or [sys.executable]:
        version, ranges = json.loads(subprocess.run([python, "-c", PROBE], check=True, capture_output=True,
                                                    text=True).stdout)
        table[version] = ranges
        print(f"{python}: Unicode {version}, {len(ranges)} ranges")
    with open(OUT, "w") as f:
        json.dump(dict(sorted(table.items())), f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
