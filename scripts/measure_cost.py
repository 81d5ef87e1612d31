"""The per-page figures docs/performance.md projects a Common Crawl snapshot from.

    python scripts/measure_cost.py stages RUN_OUTPUT [RUN_OUTPUT ...]
        per-stage CPU ms per page (mean, p50, p90, p99) from the pages rows' `timing_ms`
        of finished `sitestrip run` outputs, and the bytes per page of what crosses the
        shuffles after the per-site step: a pages row packed as the part writer's shuffle
        carries it (pipeline/parts.py `pack_row`) and pickled as the duplicates join
        carries it (the rows that take part, transforms/duplicates.py
        `across_sites_eligible`). Rows are read back from the Parquet files, so a value's
        Python type may differ from the one the run pickled (a list for a tuple); sizes
        are within a few per cent.

    python scripts/measure_cost.py peer CORPUS_DIR [--peer trafilatura]
        a peer's extraction alone on the same decoded pages, in one process, warmed up:
        process CPU seconds and wall seconds of its extract calls (bench/peers.py's
        adapters; reading and decoding the WARC are not counted).

Both print one JSON object per input.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time

import numpy as np
import pyarrow.parquet as pq

STAGES = ("read", "parse", "candidates", "etdm", "template", "page_conex", "menex", "blocks",
          "classify", "markdown", "language", "duplicates", "total")


def stages(run: str) -> dict:
    from sitestrip.pipeline.parts import pack_row
    from sitestrip.transforms.duplicates import across_sites_eligible

    table = pq.read_table(os.path.join(run, "pages"))
    rows = table.to_pylist()
    timing = [row["timing_ms"] or {} for row in rows]
    out: dict = {"run": run, "pages": len(rows), "stages": {}}
    for stage in STAGES:
        values = np.array([t[stage] for t in timing if t.get(stage) is not None], dtype=float)
        if len(values):
            p50, p90, p99 = np.percentile(values, [50, 90, 99])
            out["stages"][stage] = {"mean": round(float(values.mean()), 3), "p50": round(float(p50), 3),
                                    "p90": round(float(p90), 3), "p99": round(float(p99), 3)}
    packed = sum(len(pack_row(row)) for row in rows)
    eligible = [row for row in rows if across_sites_eligible(row)]
    pickled = sum(len(pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL)) for row in eligible)
    with open(os.path.join(run, "_SUCCESS"), encoding="utf-8") as f:
        success = json.load(f)
    parquet = sum(file["bytes"] for file in success["datasets"]["pages"]["files"])
    n = max(1, len(rows))
    out["bytes_per_page"] = {"packed_row": round(packed / n), "pickled_row_duplicates_join": round(pickled / n),
                             "duplicates_join_rows": len(eligible), "pages_parquet": round(parquet / n)}
    return out


def peer(corpus: str, name: str) -> dict:
    import glob

    from sitestrip.bench.core import load_corpus
    from sitestrip.bench.peers import PEERS, _WARMUP_HTML, _silence

    paths = sorted(glob.glob(os.path.join(corpus, "**", "*.warc*"), recursive=True))
    loaded = load_corpus(paths, keep_html=True)
    pages = list(loaded.html.items())
    _silence()
    extract = PEERS[name].load()
    try:
        extract(_WARMUP_HTML, "http://warm.up/")
    except Exception:
        pass
    cpu = wall = 0.0
    for url, html in pages:
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            extract(html, url)
        except Exception:
            pass
        cpu += time.process_time() - c0
        wall += time.perf_counter() - w0
    n = max(1, len(pages))
    return {"corpus": corpus, "peer": name, "pages": len(pages), "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "cpu_ms_per_page": round(1000 * cpu / n, 3), "pages_per_cpu_s": round(n / cpu, 1) if cpu else None}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("stages")
    s.add_argument("runs", nargs="+")
    p = sub.add_parser("peer")
    p.add_argument("corpora", nargs="+")
    p.add_argument("--peer", default="trafilatura")
    args = parser.parse_args(argv)
    if args.command == "stages":
        for run in args.runs:
            print(json.dumps(stages(run)))
    else:
        for corpus in args.corpora:
            print(json.dumps(peer(corpus, args.peer)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
