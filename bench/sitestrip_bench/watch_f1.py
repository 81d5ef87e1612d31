"""Watch mode against one batch run: per corpus, a `--watch` job over an
empty landing folder; the first half of the corpus' WARC files is renamed in, then (once
their rows are on disk) the second half; the job ends by its --idle-timeout. Its pages rows
are scored against the gold (main_text mean word F1) beside a batch run over all files.

    # $CORPORA: a directory of corpus directories, each warc/*.warc.gz + gold.jsonl
    sitestrip-bench watch-f1 --corpus $CORPORA/news-ctf2015-dev [...] --work /tmp/watchf1
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

import pyarrow.dataset as ds

from sitestrip_bench.corpus_format import read_corpus
from sitestrip_bench.scoring import aggregate, score_texts


def _pages(out):
    paths = glob.glob(os.path.join(out, "pages", "*.parquet"))
    if not paths:
        return {}
    return {r["url_normalized"]: r for r in ds.dataset(paths, format="parquet").to_table(
        columns=["url_normalized", "main_text", "candidate_method"]).to_pylist()}


def _land(files, landing):
    for path in files:
        staged = os.path.join(landing, os.path.basename(path) + ".tmp")
        shutil.copy(path, staged)
        os.rename(staged, staged[:-4])


def _wait_rows(out, at_least, timeout=900):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if len(_pages(out)) >= at_least:
                return
        except Exception:  # a part being renamed into place
            pass
        time.sleep(2)
    raise SystemExit(f"{out}: fewer than {at_least} pages rows after {timeout} s")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", action="append", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args(argv)
    report = {}
    for directory in args.corpus:
        corpus = read_corpus(directory, os.path.join(args.work, "corpora"))
        warcs = sorted(glob.glob(os.path.join(directory, "warc", "*.warc*")))
        half = len(warcs) // 2
        base = os.path.join(args.work, corpus.name)
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(f"{base}/landing")
        cli = [sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--quiet"]
        subprocess.run(cli + ["--input", *warcs, "--output", f"{base}/batch"], check=True, capture_output=True)
        batch = _pages(f"{base}/batch")
        first_urls = set(_pages_of(cli, warcs[:half], f"{base}/first-only"))
        job = subprocess.Popen(cli + ["--watch", "--input", f"{base}/landing/*.warc*", "--output", f"{base}/watch",
                                      "--idle-timeout", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _land(warcs[:half], f"{base}/landing")
        _wait_rows(f"{base}/watch", len(first_urls))
        _land(warcs[half:], f"{base}/landing")
        out, err = job.communicate(timeout=3600)
        if job.returncode != 0:
            raise SystemExit(f"watch job failed: {err.decode()[-2000:]}")
        watched = _pages(f"{base}/watch")
        entry = {}
        for name, rows in (("batch", batch), ("watch", watched)):
            texts = {u: r["main_text"] or "" for u, r in rows.items()}
            agg = aggregate([s.words for s in score_texts("sitestrip", corpus.gold, texts)])
            methods = {}
            for r in rows.values():
                methods[r["candidate_method"]] = methods.get(r["candidate_method"], 0) + 1
            entry[name] = {"main_f1": round(agg.mean_f1, 4), "pages": len(rows), "methods": methods}
        report[corpus.name] = entry
        print(corpus.name, json.dumps(entry), flush=True)
    with open(os.path.join(args.work, "watch_f1.json"), "w") as fh:
        json.dump(report, fh, indent=1)


def _pages_of(cli, warcs, out):
    subprocess.run(cli + ["--input", *warcs, "--output", out], check=True, capture_output=True)
    return _pages(out)


if __name__ == "__main__":
    main()
