"""Where the per-site step spends its time: cProfile of `process_site` over whole corpora.

Reads and parses each corpus once (bench/sitestrip_bench/core.py `load_corpus`, not profiled), then runs
`extract_rows` in this process (processes=1) under cProfile and prints, per corpus:
the process CPU seconds of the site step, pages per CPU second, per-stage CPU ms p50/p99
from the rows' `timing_ms`, and the top functions by cumulative and by self time.

    # $CORPORA: a directory of corpus directories, each warc/*.warc.gz + gold.jsonl
    sitestrip-bench profile $CORPORA/docsites-dev $CORPORA/news-ctf2015-dev
    sitestrip-bench profile --no-profile DIR ...        # CPU time only (cProfile adds ~2x)
    sitestrip-bench profile --rows OUT.jsonl DIR ...    # also the rows, to diff two commits
    sitestrip-bench profile --stats /tmp/p DIR ...       # and pstats files, for callers/callees

Numbers are CPU time (time.process_time, thread_time in the rows), not wall time, so that a
machine shared with other processes perturbs them less. Not part of the test suite.
"""
from __future__ import annotations

import argparse
import cProfile
import glob
import io
import json
import os
import pstats
import time

import numpy as np

from sitestrip_bench.core import extract_rows, load_corpus
from sitestrip.configs import load_config
from sitestrip.schemas.tables import TIMING_STAGES as STAGES


def warc_files(directory: str) -> list[str]:
    root = os.path.join(directory, "warc") if os.path.isdir(os.path.join(directory, "warc")) else directory
    return sorted(glob.glob(os.path.join(root, "**", "*.warc*"), recursive=True))


def stage_table(rows: list[dict]) -> list[str]:
    lines = ["| stage | pages | p50 ms | p99 ms | mean ms |", "|---|---|---|---|---|"]
    for stage in STAGES:
        values = np.array([r["timing_ms"][stage] for r in rows
                           if r.get("timing_ms") and r["timing_ms"].get(stage) is not None])
        if values.size:
            lines.append(f"| {stage} | {values.size} | {np.percentile(values, 50):.2f} | "
                         f"{np.percentile(values, 99):.1f} | {values.mean():.2f} |")
    return lines


def stable(row: dict) -> str:
    return json.dumps({k: v for k, v in row.items() if k != "timing_ms"}, sort_keys=True, default=str)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpora", nargs="+", help="corpus folders (with warc/) or WARC folders")
    parser.add_argument("--config", default=None, help="preset name or file (default: configs/default.yaml)")
    parser.add_argument("--top", type=int, default=25, help="functions listed per ordering")
    parser.add_argument("--no-profile", action="store_true", help="time without cProfile")
    parser.add_argument("--rows", help="write every pages row without timing_ms, sorted, to this file")
    parser.add_argument("--stats", help="also dump each corpus's cProfile stats to STATS.<corpus>.prof")
    args = parser.parse_args(argv)
    config = load_config(args.config)
    all_rows = []
    for directory in args.corpora:
        loaded = load_corpus(warc_files(directory), config.read)
        pages = sum(len(r) for r in loaded.records.values())
        profiler = None if args.no_profile else cProfile.Profile(time.process_time)
        start = time.process_time()
        if profiler is not None:
            profiler.enable()
        rows = extract_rows(loaded, config, processes=1)
        if profiler is not None:
            profiler.disable()
        cpu = time.process_time() - start
        name = os.path.basename(os.path.normpath(directory))
        print(f"\n## {name}: {pages} pages, {len(rows)} rows, site step {cpu:.2f} CPU s "
              f"({pages / cpu:.1f} pages per CPU s){' under cProfile' if profiler else ''}\n")
        print("\n".join(stage_table(rows)))
        if profiler is not None:
            for order in ("cumulative", "tottime"):
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(order).print_stats(args.top)
                body = out.getvalue()
                print(f"\nTop {args.top} by {order}:\n")
                print(body[body.index("   ncalls"):].rstrip())
            if args.stats:
                profiler.dump_stats(f"{args.stats}.{name}.prof")
        all_rows.extend(rows)
    if args.rows:
        with open(args.rows, "w") as out:
            out.write("\n".join(sorted(stable(r) for r in all_rows)) + "\n")


if __name__ == "__main__":
    main()
