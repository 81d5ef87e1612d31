"""Are two `sitestrip run` outputs the same rows, with the same schema and Parquet metadata?

For each dataset (pages, menus, errors, sites, links) of two output directories: the rows, sorted,
without the wall-clock column `timing_ms`; the Arrow schema with its metadata; the
Parquet schema (physical layout, list element names); the compression codec of every
column chunk. Prints one line per dataset and exits 1 if anything differs.

    sitestrip-bench compare-runs OUT_A OUT_B

Used to check that a change of the graph or of the writer (or another runner) leaves
the output as it was (docs/runners.md, "Dask"). Not part of the test suite.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys

import pyarrow.parquet as pq

DATASETS = ("pages", "menus", "errors", "sites", "links")
IGNORED = {"timing_ms"}


def dataset(out: str, name: str):
    files = sorted(glob.glob(os.path.join(out, name, "part-*.parquet")))
    rows, schemas, parquet_schemas, codecs = [], set(), set(), set()
    for path in files:
        f = pq.ParquetFile(path)
        schemas.add(f.schema_arrow.to_string(show_schema_metadata=True))
        schemas.add(repr(sorted((f.schema_arrow.metadata or {}).items())))
        parquet_schemas.add(str(f.schema).split("\n", 1)[1])  # line 1: the object's id
        for g in range(f.metadata.num_row_groups):
            group = f.metadata.row_group(g)
            codecs.update(group.column(c).compression for c in range(group.num_columns))
        for row in f.read().to_pylist():
            rows.append(repr(sorted((k, v) for k, v in row.items() if k not in IGNORED)))
    return files, sorted(rows), schemas, parquet_schemas, codecs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args(argv)
    same = True
    for name in DATASETS:
        fa, ra, sa, pa_, ca = dataset(args.a, name)
        fb, rb, sb, pb, cb = dataset(args.b, name)
        checks = {"rows": ra == rb, "arrow schema+metadata": sa == sb,
                  "parquet schema": pa_ == pb, "codecs": (ca <= {"ZSTD"}) and (cb <= {"ZSTD"})}
        ok = all(checks.values())
        same &= ok
        print(f"{name}: {len(ra)} vs {len(rb)} rows in {len(fa)} vs {len(fb)} files; "
              + ", ".join(f"{k} {'same' if v else 'DIFFERENT'}" for k, v in checks.items()))
        if ra != rb:
            only_a, only_b = set(ra) - set(rb), set(rb) - set(ra)
            print(f"  {len(only_a)} rows only in A, {len(only_b)} only in B; first of A: "
                  f"{next(iter(sorted(only_a)), '')[:300]}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
