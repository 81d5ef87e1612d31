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
TOKENS = os.path.join(os.path.dirname(HERE), "transforms", "tokens.py")
# Runs tokens.py's own _mark_ranges in each interpreter: the file needs only the standard
# library, so it runs in a Python without the project's dependencies.
PROBE = """
import json, runpy, sys, unicodedata
print(json.dumps([unicodedata.unidata_version, runpy.run_path(sys.argv[1])["_mark_ranges"]()]))
"""


def main() -> None:
    table = {}
    if os.path.exists(OUT):
        with open(OUT) as f:
            table = json.load(f)
    for python in sys.argv[1:] or [sys.executable]:
        version, ranges = json.loads(subprocess.run([python, "-c", PROBE, TOKENS], check=True, capture_output=True,
                                                    text=True).stdout)
        table[version] = ranges
        print(f"{python}: Unicode {version}, {len(ranges)} ranges")
    with open(OUT, "w") as f:
        json.dump(dict(sorted(table.items())), f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
