"""Site structure on the dev corpora: template clusters (design §11) per path_ids variant,
and the candidate-method mix and site menus of a configuration.

    # $CORPORA: a directory of corpus directories, each warc/*.warc.gz + gold.jsonl
    python -m sitestrip_bench.structure --corpus $CORPORA/docsites-dev [...] \
        [--config NAME] [--rows] --out docs/bench/structure.json

Clusters are computed per site exactly as the pipeline does (one shard per site: no dev
site exceeds site.max_site_pages). With --rows the pipeline's own per-site step runs
(bench/sitestrip_bench/core.py) and the report adds the method mix and menu link F1 per site.
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from dataclasses import replace

import numpy as np

from sitestrip_bench.core import extract_rows, load_corpus
from sitestrip_bench.corpus_format import read_corpus
from sitestrip_bench.scoring import aggregate, as_pages, score_texts, set_prf
from sitestrip.configs import load_config
from sitestrip.transforms.clusters import PATH_IDS, cluster_signatures, page_signature
from sitestrip.transforms.urls import normalize_url


def cluster_report(loaded, params) -> dict:
    """Per site: pages, clusters, singletons, share of pages in the largest cluster, ms."""
    out = {}
    for site, records in sorted(loaded.records.items()):
        pages = {}
        for r in sorted(records, key=lambda r: r.url):
            pages.setdefault(r.url, r.page)
        start = time.perf_counter()
        signatures = {u: page_signature(p, params.path_ids) for u, p in pages.items()}
        clusters = cluster_signatures(site, signatures, params)
        ms = (time.perf_counter() - start) * 1000
        sizes = Counter(clusters.cluster_of.values())
        out[site] = {"pages": len(pages), "clusters": len(clusters.representatives),
                     "singletons": sum(1 for s in sizes.values() if s == 1),
                     "largest_share": max(sizes.values()) / len(pages),
                     "ms_per_page": ms / len(pages)}
    return out


def rows_report(corpus, loaded, config) -> dict:
    rows = extract_rows(loaded, config)
    gold = {g.url: g for g in corpus.gold}
    by_site = defaultdict(lambda: {"methods": Counter(), "menu_f1": []})
    for row in rows:
        g = gold.get(row["url_normalized"])
        site = g.site if g else row["site"]
        entry = by_site[site]
        entry["methods"][row["candidate_method"]] += 1
        if g is not None and g.menu_links:
            got = tuple(normalize_url(m["url"]) or m["url"] for m in row["menu_links"] or ())
            entry["menu_f1"].append(set_prf(as_pages(got), as_pages(g.menu_links)).f1)
    out = {}
    for site, entry in sorted(by_site.items()):
        f1 = entry["menu_f1"]
        out[site] = {"methods": dict(entry["methods"]),
                     "menu_f1": float(np.mean(f1)) if f1 else None, "menu_pages": len(f1)}
    with_menus = [v["menu_f1"] for v in out.values() if v["menu_f1"] is not None]
    f1 = {}
    for column in ("main_text", "nontemplate_text"):
        texts = {r["url_normalized"]: r[column] or "" for r in rows}
        f1[column] = round(aggregate([s.words for s in score_texts("sitestrip", corpus.gold, texts)]).mean_f1, 4)
    return {"sites": out, "word_f1": f1, "menu_f1_mean_over_sites": float(np.mean(with_menus)) if with_menus else None,
            "methods": dict(sum((Counter(v["methods"]) for v in out.values()), Counter()))}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", required=True)
    ap.add_argument("--config", default=None)
    ap.add_argument("--rows", action="store_true", help="also run the per-site step: methods, menus")
    ap.add_argument("--threshold", type=float, default=None)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    config = load_config(args.config)
    params = config.clusters if args.threshold is None else replace(config.clusters, threshold=args.threshold)
    report = {}
    for directory in args.corpus:
        corpus = read_corpus(directory, "/tmp/sitestrip-structure")
        loaded = load_corpus(corpus.warc_paths, config.read)
        entry = {"clusters": {mode: cluster_report(loaded, replace(params, path_ids=mode)) for mode in PATH_IDS}}
        for mode, sites in entry["clusters"].items():
            print(f"{corpus.name} path_ids={mode}: " + ", ".join(
                f"{s} {v['clusters']}/{v['pages']}" for s, v in sites.items() if v["pages"] > 1))
        if args.rows:
            entry["rows"] = rows_report(corpus, loaded, config)
            print(f"{corpus.name} methods {entry['rows']['methods']} menu F1 (mean over sites) "
                  f"{entry['rows']['menu_f1_mean_over_sites']} word F1 {entry['rows']['word_f1']}")
        report[corpus.name] = entry
    with open(args.out, "w") as fh:
        json.dump(report, fh, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
