"""Incremental runs against one batch run: per corpus, the WARC files
split in halves; run 1 reads the first half with a fresh --state, run 2 the second half
with that state; their pages rows together are scored against the gold (main_text mean
word F1) beside one batch run over all files. Also the state's size.

    # $CORPORA: a directory of corpus directories, each warc/*.warc.gz + gold.jsonl
    sitestrip-bench incremental --corpus $CORPORA/docsites-dev [...] --work /tmp/inc
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

import pyarrow.dataset as ds

from sitestrip_bench.corpus_format import read_corpus
from sitestrip_bench.scoring import aggregate, score_texts


CONFIG: list = []


def _run(warcs, out, state=None):
    argv = [sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--quiet", "--output", out, *CONFIG,
            "--input", *warcs]
    if state:
        argv += ["--state", state]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def _texts(*outs):
    texts, methods = {}, {}
    for out in outs:
        for row in ds.dataset(os.path.join(out, "pages"), format="parquet").to_table(
                columns=["url_normalized", "main_text", "candidate_method"]).to_pylist():
            texts[row["url_normalized"]] = row["main_text"] or ""
            methods[row["candidate_method"]] = methods.get(row["candidate_method"], 0) + 1
    return texts, methods


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", action="append", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--config", default=None, help="a preset for every run (e.g. other state bounds)")
    args = ap.parse_args(argv)
    if args.config:
        CONFIG[:] = ["--config", args.config]
    report = {}
    for directory in args.corpus:
        corpus = read_corpus(directory, os.path.join(args.work, "corpora"))
        warcs = sorted(glob.glob(os.path.join(directory, "warc", "*.warc*")))
        if len(warcs) < 2:
            print(f"{corpus.name}: one WARC file, nothing to split")
            continue
        half = len(warcs) // 2
        base = os.path.join(args.work, corpus.name)
        shutil.rmtree(base, ignore_errors=True)
        _run(warcs, f"{base}/batch")
        _run(warcs[:half], f"{base}/inc1", f"{base}/state")
        summary = _run(warcs[half:], f"{base}/inc2", f"{base}/state")
        state_line = next((line.strip() for line in summary.splitlines() if line.strip().startswith("state:")), "")
        entry = {}
        for name, outs in (("batch", [f"{base}/batch"]), ("incremental", [f"{base}/inc1", f"{base}/inc2"])):
            texts, methods = _texts(*outs)
            agg = aggregate([s.words for s in score_texts("sitestrip", corpus.gold, texts)])
            entry[name] = {"main_f1": round(agg.mean_f1, 4), "pages": agg.pages, "methods": methods}
        second, methods2 = _texts(f"{base}/inc2")
        entry["second_half_methods"] = methods2
        entry["state"] = state_line
        report[corpus.name] = entry
        print(corpus.name, json.dumps(entry), flush=True)
    with open(os.path.join(args.work, "incremental.json"), "w") as fh:
        json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
