"""main_markdown and language through the product on the dev corpora: CPU ms per page of the
two stages and of both together (mean, p50, p90, p99), language accuracy on the pages whose
language is known (labels and how they are known: sitestrip_bench.language), and how many
rows' main_markdown, as a CommonMark reader reads it, has other words than their main_text
(should be none; needs markdown-it-py, in the bench and test extras).

    # $CORPORA: a directory of corpus directories, each warc/*.warc.gz + gold.jsonl
    .venv/bin/python -m sitestrip_bench.output_columns --corpus $CORPORA/docsites-dev ... \
        [--processes 2] [--out results.json]

Rows come from `process_site`, the function the pipeline's per-site step calls, with the
default preset (docs/benchmarks.md "Markdown and language").
"""
from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from html import unescape

import numpy as np

from sitestrip_bench.core import extract_rows, load_corpus
from sitestrip_bench.corpora import read_shared_corpus
from sitestrip_bench.language import corpus_pages
from sitestrip.configs import load_config
from sitestrip.transforms.language import identify_language
from sitestrip.transforms.tokens import words

_TAG = re.compile(r"<[^>]*>")
_PARSER = None


def rendered_words(markdown: str) -> list[str]:
    """The words (design §1 tokens) a CommonMark reader is shown of a Markdown text: rendered to
    HTML by markdown-it-py (CommonMark with pipe tables), tags dropped, entities decoded. Link
    targets, image alt texts, code languages and list numbers are attributes or list structure,
    not text; blocks are apart by the line breaks the renderer writes between them."""
    global _PARSER
    if _PARSER is None:
        from markdown_it import MarkdownIt
        _PARSER = MarkdownIt("commonmark").enable("table")
    return words(unescape(_TAG.sub("", _PARSER.render(markdown))))


def prefix_lengths(rows, label: dict, lengths) -> dict:
    """Per prefix length: language accuracy on the labelled rows' main_text, and CPU ms per row
    of identify_language alone, rows one after another in this process."""
    import time
    texts = [(row["main_text"], label.get(row["url_normalized"])) for row in rows if row["main_text"]]
    identify_language("warm up")
    out = {}
    for chars in lengths:
        start = time.thread_time()
        got = [identify_language(text, chars)[0] for text, _ in texts]
        ms = (time.thread_time() - start) * 1000 / max(len(texts), 1)
        known = [(g, lang) for g, (_, lang) in zip(got, texts) if lang is not None]
        out[chars] = {"accuracy": round(sum(g == lang for g, lang in known) / len(known), 4) if known else None,
                      "ms_per_page": round(ms, 3)}
    return out


def measure_corpus(directory: str, config, processes: int | None, lengths=(200, 500, 1000, 2000)) -> dict:
    corpus = read_shared_corpus(directory)
    known, _ = corpus_pages(directory)
    label = {p.url: p.lang for p in known}
    rows = extract_rows(load_corpus(corpus.warc_paths, config.read), config, processes)
    ms = defaultdict(list)
    hits = Counter()
    wrong = []
    differ = []
    for row in rows:
        for stage in ("markdown", "language"):
            if row["timing_ms"].get(stage) is not None:
                ms[stage].append(row["timing_ms"][stage])
        ms["both"].append((row["timing_ms"].get("markdown") or 0) + (row["timing_ms"].get("language") or 0))
        if row["main_markdown"] is not None and rendered_words(row["main_markdown"]) != words(row["main_text"]):
            differ.append(row["url"])
        lang = label.get(row["url_normalized"])
        if lang is not None and row["main_text"]:
            hits["known"] += 1
            if row["language"] == lang:
                hits["right"] += 1
            else:
                wrong.append((row["url"], lang, row["language"], row["main_text"][:80]))
        hits[f"html_lang={row['html_lang'] is not None}"] += 1
        for column in ("canonical_url", "description", "published_date", "author"):
            hits[f"{column} declared"] += row[column] is not None
    return {
        "pages": len(rows),
        "ms": {k: {"mean": round(float(np.mean(v)), 3), **{f"p{q}": round(float(np.percentile(v, q)), 3)
                                                           for q in (50, 90, 99)}}
               for k, v in ms.items() if v},
        "language_known_pages": hits["known"],
        "language_accuracy": round(hits["right"] / hits["known"], 4) if hits["known"] else None,
        "language_wrong": wrong[:20],
        "markdown_words_differ": differ[:20], "markdown_words_differ_count": len(differ),
        "declared": {k: v for k, v in hits.items() if k not in ("known", "right")},
        "language_by_prefix": prefix_lengths(rows, label, lengths),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", required=True)
    ap.add_argument("--processes", type=int, default=None)
    ap.add_argument("--config", default=None)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    config = load_config(args.config)
    results = {}
    for directory in args.corpus:
        name = directory.rstrip("/").rsplit("/", 1)[-1]
        results[name] = r = measure_corpus(directory, config, args.processes)
        acc = "-" if r["language_accuracy"] is None else f"{r['language_accuracy']:.4f} of {r['language_known_pages']}"
        stages = "; ".join(f"{stage} mean {r['ms'][stage]['mean']} ms p90 {r['ms'][stage]['p90']}"
                           for stage in ("markdown", "language", "both"))
        print(f"{name}: {r['pages']} pages; {stages}; language accuracy {acc}; "
              f"markdown words differ on {r['markdown_words_differ_count']}; by prefix "
              f"{r['language_by_prefix']}", flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
