"""What each product extension of configs/default.yaml is worth, one switch at a time.

From default.yaml, every switch that configs/published.yaml sets otherwise is put
to its published value alone, and the product is scored in-process (bench/sitestrip_bench/core.py,
the code `sitestrip-bench tune` uses) on the given corpora in the shared format: main_text
and nontemplate_text word F1 (mean of per-page F1, and micro) per corpus, and
menu-link F1 where the gold has menus. Parse switches (read.*) re-read the corpora.
Prints a Markdown table; docs/configuration.md quotes it.

    # $CORPORA: a directory of corpus directories, each warc/*.warc.gz + gold.jsonl
    sitestrip-bench switches --corpus $CORPORA/docsites-dev \\
        --corpus $CORPORA/news-ctf2015-dev ... [--processes 2]

Not part of the test suite: each variant maps every page of every corpus (minutes).
"""
from __future__ import annotations

import argparse
import sys
import time

from sitestrip.pipeline.console import import_beam_quietly  # noqa: E402

import_beam_quietly()

from sitestrip_bench.core import extract_rows, load_corpus  # noqa: E402
from sitestrip_bench.corpora import read_shared_corpus  # noqa: E402
from sitestrip_bench.scoring import aggregate, score_menus, score_texts  # noqa: E402
from sitestrip_bench.tune import apply_overrides, default_config_dict  # noqa: E402
from sitestrip.configs import config_from_dict, load_config  # noqa: E402
from sitestrip.transforms.urls import normalize_url  # noqa: E402

PUBLISHED = load_config("published")
VARIANTS = (
    ("default.yaml", {}),
    ("read.keep_noscript: false", {"read.keep_noscript": False}),
    ("read.widget_leaves: false", {"read.widget_leaves": False}),
    ("read.browser_text: false", {"read.browser_text": False}),
    ("template.block_granularity: false", {"template.block_granularity": False}),
    ("menex.representative: word_part (design §2)", {"menex.representative": "word_part"}),
    ("menex.representative: exact (thesis)", {"menex.representative": "exact"}),
    ("page_conex.excluded_tags up to h5", {"page_conex.excluded_tags": list(PUBLISHED.page_conex.excluded_tags)}),
    ("ETDM grouping: node (200 TemEx, 300 site ConEx)",
     {"template_etdm.grouping": "node", "site_conex_etdm.grouping": "node", "site_conex_etdm.group_over": 300}),
    ("site_menus.own_links: false", {"site_menus.own_links": False}),
)


def score(corpus, rows) -> dict:
    main = {r["url"]: r["main_text"] for r in rows}
    nontemplate = {r["url"]: r["nontemplate_text"] for r in rows}
    menus = {r["url"]: tuple(normalize_url(m["url"]) or m["url"] for m in (r["menu_links"] or ())) for r in rows}
    out = {"main": aggregate([s.words for s in score_texts("p", corpus.gold, main)]),
           "nontemplate": aggregate([s.words for s in score_texts("p", corpus.gold, nontemplate)])}
    menu_scores = score_menus("p", corpus.gold, menus)
    out["menu"] = aggregate([s.menu for s in menu_scores]) if menu_scores else None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", required=True, metavar="DIR")
    ap.add_argument("--processes", type=int, default=None)
    args = ap.parse_args(argv)
    corpora = [read_shared_corpus(d) for d in args.corpus]
    base = default_config_dict()
    loaded_by_rules: dict = {}
    print("| variant | " + " | ".join(c.name for c in corpora) + " | mean main / nontemplate | menu F1 |")
    print("|---|" + "---|" * len(corpora) + "---|---|")
    for label, overrides in VARIANTS:
        config = config_from_dict(apply_overrides(base, overrides))
        rules = config.read.parse_rules()
        if rules not in loaded_by_rules:
            loaded_by_rules[rules] = {c.name: load_corpus(c.warc_paths, config.read) for c in corpora}
        started = time.monotonic()
        cells, mains, nontemplates, menus = [], [], [], []
        for corpus in corpora:
            s = score(corpus, extract_rows(loaded_by_rules[rules][corpus.name], config, args.processes))
            mains.append(s["main"].mean_f1)
            nontemplates.append(s["nontemplate"].mean_f1)
            cells.append(f"{s['main'].mean_f1:.3f} / {s['nontemplate'].mean_f1:.3f}")
            if s["menu"] is not None:
                menus.append(f"{corpus.name} {s['menu'].mean_f1:.3f}")
        print(f"| {label} | " + " | ".join(cells) +
              f" | {sum(mains) / len(mains):.4f} / {sum(nontemplates) / len(nontemplates):.4f} | "
              f"{', '.join(menus) or '–'} |", flush=True)
        print(f"  ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
