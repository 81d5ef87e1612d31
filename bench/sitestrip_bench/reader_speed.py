"""CPU time of reading WARC files with pipeline.warc alone (no parsing, no Beam).

Reads every `.warc` / `.warc.gz` file of a folder `--rounds` times and prints
the best round: records per second and compressed MB per second, with what was
read (records by kind, HTML payload bytes). The read stage's share of a run is
small (see docs/benchmarks.md, "read"); this isolates it, to compare readers.

    # $CORPORA: a directory of corpus directories, each warc/*.warc.gz + gold.jsonl
    sitestrip-bench reader $CORPORA/docsites-dev/warc
    sitestrip-bench reader DIR --rounds 9

Not part of the test suite.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time
from collections import Counter

from sitestrip.pipeline.page_source import Page, read_pages
from sitestrip.pipeline.warc import open_warc


def read_once(paths: list[str]) -> tuple[float, Counter, int]:
    kinds: Counter = Counter()
    payload = 0
    clock = time.process_time()
    for path in paths:
        with open_warc(path) as stream:
            for item in read_pages(stream, path, parse=False):
                kinds[type(item).__name__] += 1
                if isinstance(item, Page):
                    payload += len(item.response.body)
    return time.process_time() - clock, kinds, payload


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    paths = sorted(glob.glob(os.path.join(args.folder, "*.warc")) + glob.glob(os.path.join(args.folder, "*.warc.gz")))
    if not paths:
        sys.exit(f"no .warc or .warc.gz file in {args.folder}")
    size = sum(os.path.getsize(p) for p in paths)
    rounds = [read_once(paths) for _ in range(args.rounds)]
    best, kinds, payload = min(rounds, key=lambda r: r[0])
    records = sum(kinds.values())
    print(f"{len(paths)} files, {size / 1e6:.1f} MB; {dict(kinds)}; HTML payload {payload / 1e6:.1f} MB")
    print(f"best of {args.rounds}: {best:.3f} s CPU, {records / best:,.0f} records/s, "
          f"{size / 1e6 / best:.1f} MB/s of input")


if __name__ == "__main__":
    main()
