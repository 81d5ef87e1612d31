"""Watch-mode latency: from a WARC file landing (renamed into the watched folder) to its pages
rows being on disk, p50 and p95 over several files.

    sitestrip-bench watch-latency [--files 12] [--every 3] [--sample PATH]

Starts `sitestrip run --watch` on a temporary folder, lands copies of the sample WARC (59
pages; a copy is a new file name, so it is read as a new file) one every --every seconds,
and polls the pages dataset every 50 ms for the rows whose warc_file is the landed path.
A latency includes the poll interval (--poll-interval, 1 s by default in the product, given
here), the read and the per-site processing of the file's pages, and the write. The first
file also pays for the job's start (the model is loaded before it is read): it is reported
apart and left out of p50/p95.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow.parquet as pq

from sitestrip.pipeline.cli import SAMPLE_WARC



def _percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=12)
    ap.add_argument("--every", type=float, default=3.0, help="seconds between two landings")
    ap.add_argument("--poll-interval", type=float, default=1.0)
    ap.add_argument("--window", type=float, default=10.0)
    ap.add_argument("--sample", default=SAMPLE_WARC)
    args = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="sitestrip-watch-latency-")
    staging, landing, out = (os.path.join(root, d) for d in ("staging", "landing", "out"))
    os.makedirs(staging)
    os.makedirs(landing)
    proc = subprocess.Popen([sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--watch", "--input",
                             os.path.join(landing, "*.warc.gz"), "--output", out, "--quiet",
                             "--idle-timeout", str(args.every + 10), "--poll-interval", str(args.poll_interval),
                             "--window", str(args.window)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    landed: dict[str, float] = {}
    seen: dict[str, float] = {}
    read_parts: set[str] = set()
    pages_dir = os.path.join(out, "pages")
    try:
        next_landing = time.monotonic()
        while len(seen) < args.files:
            now = time.monotonic()
            if len(landed) < args.files and now >= next_landing:
                name = f"copy-{len(landed):03d}.warc.gz"
                staged = os.path.join(staging, name)
                shutil.copyfile(args.sample, staged)
                target = os.path.join(landing, name)
                os.rename(staged, target)
                landed[target] = time.monotonic()
                next_landing = now + args.every
            if os.path.isdir(pages_dir):
                for part in sorted(os.listdir(pages_dir)):
                    if part.startswith("_") or part in read_parts:
                        continue
                    read_parts.add(part)
                    for warc in set(pq.read_table(os.path.join(pages_dir, part), columns=["warc_file"])
                                    .column("warc_file").to_pylist()):
                        seen.setdefault(warc, time.monotonic())
            if proc.poll() is not None:
                raise SystemExit(f"the watch job ended early: {proc.communicate()}")
            time.sleep(0.05)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(root, ignore_errors=True)
    latencies = [seen[path] - landed[path] for path in sorted(landed)]
    first, rest = latencies[0], latencies[1:]
    print(f"files {args.files}, one every {args.every:g} s, poll interval {args.poll_interval:g} s, "
          f"window {args.window:g} s")
    print(f"first file (includes the job's start): {first:.2f} s")
    print(f"landing → rows on disk, files 2..{args.files}: p50 {statistics.median(rest):.2f} s, "
          f"p95 {_percentile(rest, 0.95):.2f} s, max {max(rest):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
