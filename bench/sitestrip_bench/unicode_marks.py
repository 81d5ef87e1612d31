"""Write transforms/unicode_marks.json: the combining-mark ranges of each Unicode version.

transforms/tokens.py needs the code point ranges of Unicode category M* for its token
pattern; scanning all 1.1 M code points with unicodedata costs ~0.1 s at every process
start (every run and every Beam worker). The table holds the ranges per Unicode version,
computed by each Python's own unicodedata; tokens.py takes the running version's entry and
computes the ranges itself for a version the table lacks. A test compares the entry with
the live computation.

    sitestrip-bench unicode-marks python3.10 python3.11 python3.12 python3.13
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

# The checkout's transforms/ (bench/sitestrip_bench/ is two levels below the checkout): the
# table is a source file of the product, written where it is versioned.
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(CHECKOUT, "transforms", "unicode_marks.json")
TOKENS = os.path.join(CHECKOUT, "transforms", "tokens.py")
# Runs tokens.py's own _mark_ranges in each interpreter: the file needs only the standard
# library, so it runs in a Python without the project's dependencies.
PROBE = """
import json, runpy, sys, unicodedata
print(json.dumps([unicodedata.unidata_version, runpy.run_path(sys.argv[1])["_mark_ranges"]()]))
"""


def main(argv=None) -> int:
    table = {}
    if os.path.exists(OUT):
        with open(OUT) as f:
            table = json.load(f)
    for python in (sys.argv[1:] if argv is None else argv) or [sys.executable]:
        version, ranges = json.loads(subprocess.run([python, "-c", PROBE, TOKENS], check=True, capture_output=True,
                                                    text=True).stdout)
        table[version] = ranges
        print(f"{python}: Unicode {version}, {len(ranges)} ranges")
    with open(OUT, "w") as f:
        json.dump(dict(sorted(table.items())), f, separators=(",", ":"))
        f.write("\n")
    return 0


if __name__ == "__main__":
    main()
