"""The per-page figures docs/performance.md projects a Common Crawl snapshot from.

    sitestrip-bench cost RUN_OUTPUT [RUN_OUTPUT ...]
        per-stage CPU ms per page (mean, p50, p90, p99) from the pages rows' `timing_ms`
        of finished `sitestrip run` outputs, and the bytes per page of what crosses the
        shuffles after the per-site step: a pages row packed as the part writer's shuffle
        carries it (its long texts packed together, transforms/site_step.py `held_row`, then
        pipeline/parts.py `pack_row`) and pickled as the duplicates join
        carries it (the rows that take part, transforms/duplicates.py
        `across_sites_eligible`). Rows are read back from the Parquet files, so a value's
        Python type may differ from the one the run pickled (a list for a tuple); sizes
        are within a few per cent.

A peer's extraction on the same pages, and throughput past start-up: `sitestrip-bench speed`.

Prints one JSON object per input.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import sys

import numpy as np
import pyarrow.parquet as pq

from sitestrip_bench.stages import row_stages


def stages(run: str) -> dict:
    from sitestrip.pipeline.parts import pack_row
    from sitestrip.transforms.duplicates import across_sites_eligible
    from sitestrip.transforms.site_step import held_row

    table = pq.read_table(os.path.join(run, "pages"))
    rows = table.to_pylist()
    timing = [row["timing_ms"] or {} for row in rows]
    out: dict = {"run": run, "pages": len(rows), "stages": {}}
    for stage in row_stages(timing):
        values = np.array([t[stage] for t in timing if t.get(stage) is not None], dtype=float)
        if len(values):
            p50, p90, p99 = np.percentile(values, [50, 90, 99])
            out["stages"][stage] = {"mean": round(float(values.mean()), 3), "p50": round(float(p50), 3),
                                    "p90": round(float(p90), 3), "p99": round(float(p99), 3)}
    packed = sum(len(pack_row(held_row(dict(row)))) for row in rows)
    eligible = [row for row in rows if across_sites_eligible(row)]
    pickled = sum(len(pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL)) for row in eligible)
    with open(os.path.join(run, "_SUCCESS"), encoding="utf-8") as f:
        success = json.load(f)
    parquet = sum(file["bytes"] for file in success["datasets"]["pages"]["files"])
    n = max(1, len(rows))
    out["bytes_per_page"] = {"packed_row": round(packed / n), "pickled_row_duplicates_join": round(pickled / n),
                             "duplicates_join_rows": len(eligible), "pages_parquet": round(parquet / n)}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="sitestrip-bench cost", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="RUN_OUTPUT")
    args = parser.parse_args(argv)
    for run in args.runs:
        print(json.dumps(stages(run)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
