"""The links dataset on a gold corpus: region accuracy, cost and size (docs/output.md "Links",
docs/algorithms.md "Link regions").

Region accuracy is measured two ways.

- **Against the gold columns** (every corpus directory with gold.jsonl): a link of a
  gold page whose target is one of the page's gold `menu_links` should be `menu` or
  `template`; a link whose anchor text stands in the page's gold `main_text` (its folded
  words a contiguous run of the gold's: bench/scoring's tokenizer) should be `main`. The
  gold names menu targets and main words, not links, so both sets hold links they should
  not: a link in the main content to a page the menu also links to, a table of contents
  beside the main content whose entries are the page's own headings. The counts say which
  links are such: `self` (the target is the page itself: an in-page link, what a table of
  contents holds) and, for menu targets, `anchor_in_main`.
- **Against the corpus' selectors** (docsites' manifest.json: the main-content, excluded and
  menu selectors the gold was cut with): every link of a gold page gets its gold region from
  the HTML, the link in the first element the menu selector matches (`menu`) or inside a
  main-content element and no excluded one (`main`): the share of each marked so.

Cost: the CPU milliseconds per page of the pages rows' `links` stage (the page's links made
in the per-site step) and of making the rows from them as the Beam graph does (the target
join's set_present and the writer's columns, timed here on the same pages); size: the
Parquet bytes of the links dataset per pages row.
"""
from __future__ import annotations

import glob
import importlib.util
import json
import os
import time
from collections import Counter, defaultdict

import numpy as np

from sitestrip_bench.corpora import Corpus
from sitestrip.transforms.tokens import folded_words

MENU_OK = ("menu", "template")
_NO_URLS: frozenset = frozenset()


def _share(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def _words_in(anchor: str, gold_words: str) -> bool:
    words = folded_words(anchor)
    return bool(words) and f" {' '.join(words)} " in gold_words


def gold_column_scores(corpus: Corpus, rows_by_page: dict) -> dict:
    """The two measures against the gold columns (module docstring), per corpus and
    per site: `accuracy` over every link of the set, `accuracy_clean` over those that are not
    ambiguous (menu: not an in-page link and an anchor not in the gold main text; main: not
    an in-page link)."""
    total = {"menu": Counter(), "main": Counter()}
    sites: dict = defaultdict(lambda: {"menu": Counter(), "main": Counter()})
    for gold in corpus.gold:
        links = rows_by_page.get(gold.url)
        if not links:
            continue
        menu = set(gold.menu_links or ())
        gold_words = f" {' '.join(folded_words(gold.main_text))} "
        for row in links:
            own = row["target_url"] == gold.url
            in_main = _words_in(row["anchor_text"], gold_words)
            if row["target_url"] in menu:
                kind, ok, clean = "menu", row["region"] in MENU_OK, not own and not in_main
            elif in_main:
                kind, ok, clean = "main", row["region"] == "main", not own
            else:
                continue
            for c in (total[kind], sites[gold.site][kind]):
                c["links"] += 1
                c["ok"] += ok
                c["clean"] += clean
                c["clean_ok"] += clean and ok
    return {**{kind: _measure(c) for kind, c in total.items()},
            "sites": {site: {kind: _measure(c) for kind, c in kinds.items()} for site, kinds in sorted(sites.items())}}


def _measure(c: Counter) -> dict:
    return {"links": c["links"], "accuracy": _share(c["ok"], c["links"]),
            "clean_links": c["clean"], "accuracy_clean": _share(c["clean_ok"], c["clean"])}


def _manifest_sites(corpus: Corpus) -> dict:
    """{site: its selectors} of the corpus' manifest, for the sites whose selectors name a main
    or a menu region: a corpus whose gold comes from elsewhere lists its sites with every
    selector null (the news corpora), and such a site has no selector regions to score."""
    path = os.path.join(corpus.source or "", "manifest.json")
    if not corpus.source or not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        sites = json.load(fh).get("sites") or {}
    return {name: info["selectors"] for name, info in sites.items() if isinstance(info, dict)
            and isinstance(info.get("selectors"), dict)
            and (info["selectors"].get("main") or info["selectors"].get("menu"))}


_COMPILED_SELECTORS: dict = {}


def _select(root, selector: str) -> list:
    """The elements `selector` matches (CSS, or XPath after "xpath:"), document order."""
    if selector.startswith("xpath:"):
        return [e for e in root.xpath(selector[len("xpath:"):]) if hasattr(e, "tag")]
    compiled = _COMPILED_SELECTORS.get(selector)
    if compiled is None:
        from lxml.cssselect import CSSSelector
        compiled = _COMPILED_SELECTORS[selector] = CSSSelector(selector)
    return compiled(root)


def _subtrees(elements) -> set:
    out = set()
    for element in elements:
        out.update(element.iter())
    return out


def page_link_elements(html: str, url: str, rules):
    """(the compact page, its lxml root, the element of each of its links in the links
    dataset's order: `<a>` links and `<area>` links by node)."""
    from sitestrip.transforms.page import aligned_nodes, parse_page, parse_tree
    root, body, _ = parse_tree(html)
    page = parse_page(html, url, rules=rules)
    nodes = np.sort(np.concatenate((page.link_node, page.side.area_node)), kind="stable").tolist()
    wanted = set(nodes)
    element_of = {i: el for i, el, kind in aligned_nodes(body, rules) if kind == "element" and i in wanted}
    return page, root, [element_of.get(i) for i in nodes]


def selector_scores(corpus: Corpus, rows_by_page: dict, html_by_url: dict, rules) -> dict | None:
    """Region accuracy against the regions the corpus' selectors cut (module docstring), and
    the CPU of making the rows (set_present and columns) per page, timed on the same pages; None when
    the corpus has no selectors (or lxml's cssselect is missing)."""
    selectors = _manifest_sites(corpus)
    if not selectors:
        return None
    if importlib.util.find_spec("cssselect") is None:     # lxml.cssselect's; readability-lxml's too
        return None
    from sitestrip.transforms.outlinks import page_links
    gold_of: dict = defaultdict(Counter)
    sites: dict = defaultdict(lambda: defaultdict(Counter))
    unmatched = pages = 0
    rows_ms = []
    for gold in corpus.gold:
        rows, html, chosen = rows_by_page.get(gold.url), html_by_url.get(gold.url), selectors.get(gold.site)
        if not rows or html is None or chosen is None:
            continue
        page, root, elements = page_link_elements(html, gold.url, rules)
        if len(elements) != len(rows):
            unmatched += 1
            continue
        pages += 1
        held = page_links(page, None, None, None, source_url=gold.url, row_url=gold.url, site=rows[0]["site"],
                          warc_file="", warc_offset=0)
        held.seal()
        clock = time.thread_time()
        held.set_present(_NO_URLS)       # what the target join and the writer do (pipeline/graph.py)
        held.columns()
        rows_ms.append((time.thread_time() - clock) * 1000.0)
        menu_match = _select(root, chosen["menu"])[:1] if chosen.get("menu") else []
        in_menu = _subtrees(menu_match)
        in_main = _subtrees(m for s in chosen.get("main") or () for m in _select(root, s))
        in_main -= _subtrees(m for s in chosen.get("exclude") or () for m in _select(root, s))
        for row, element in zip(sorted(rows, key=lambda r: r["position"]), elements):
            expected = "menu" if element in in_menu else "main" if element in in_main else "other"
            for c in (gold_of, sites[gold.site]):
                c[expected][row["region"]] += 1
    return {"pages": pages, "pages_not_matched": unmatched,
            "rows_ms_per_page": _stats(rows_ms),
            **_selector_measures(gold_of),
            "sites": {site: _selector_measures(c) for site, c in sorted(sites.items())}}


def _selector_measures(by_gold: dict) -> dict:
    """menu: gold menu links marked menu or template; main: gold main links marked main;
    main_precision: links marked main that the selectors put in the main content."""
    menu, main = by_gold.get("menu", Counter()), by_gold.get("main", Counter())
    marked_main = sum(c.get("main", 0) for c in by_gold.values())
    return {"menu_links": sum(menu.values()), "menu": _share(sum(menu[r] for r in MENU_OK), sum(menu.values())),
            "menu_exact": _share(menu.get("menu", 0), sum(menu.values())),
            "main_links": sum(main.values()), "main": _share(main.get("main", 0), sum(main.values())),
            "main_precision": _share(main.get("main", 0), marked_main),
            "regions_by_gold": {g: dict(c) for g, c in sorted(by_gold.items())}}


def _stats(values) -> dict:
    values = np.asarray([v for v in values if v is not None], dtype=float)
    if not values.size:
        return {"pages": 0, "mean": None, "p50": None, "p99": None}
    return {"pages": int(values.size), "mean": round(float(values.mean()), 4),
            "p50": round(float(np.percentile(values, 50)), 4), "p99": round(float(np.percentile(values, 99)), 4)}


def links_bench(corpus: Corpus, run_dir: str, pages_rows: list, html_by_url: dict, rules) -> dict | None:
    """Everything above for one corpus, from a `sitestrip run` output directory (`run_dir`),
    its pages rows (with timing_ms) and the gold pages' decoded HTML; None when the run wrote
    no links dataset (output.links off)."""
    files = sorted(glob.glob(os.path.join(run_dir, "links", "part-*.parquet")))
    if not files:
        return None
    import pyarrow.parquet as pq
    gold_urls = {g.url for g in corpus.gold}
    rows_by_page: dict = defaultdict(list)
    link_rows = 0
    regions: Counter = Counter()
    for path in files:
        table = pq.read_table(path, columns=["source_url", "site", "position", "target_url", "anchor_text", "region"])
        link_rows += table.num_rows
        for row in table.to_pylist():
            regions[row["region"]] += 1
            if row["source_url"] in gold_urls:
                rows_by_page[row["source_url"]].append(row)
    pages = len(pages_rows)
    links_bytes = sum(os.path.getsize(p) for p in files)
    pages_bytes = sum(os.path.getsize(p) for p in glob.glob(os.path.join(run_dir, "pages", "part-*.parquet")))
    stage = [(r.get("timing_ms") or {}).get("links") for r in pages_rows]
    out = {"pages": pages, "links": link_rows, "links_per_page": round(link_rows / pages, 2) if pages else None,
           "regions": dict(regions),
           "links_bytes": links_bytes, "links_bytes_per_page": round(links_bytes / pages, 1) if pages else None,
           "pages_bytes_per_page": round(pages_bytes / pages, 1) if pages else None,
           "stage_ms_per_page": _stats(stage),
           "gold_columns": gold_column_scores(corpus, rows_by_page)}
    selectors = selector_scores(corpus, rows_by_page, html_by_url, rules)
    if selectors is not None:
        out["selectors"] = selectors
        made, rows_ms = out["stage_ms_per_page"]["mean"], selectors["rows_ms_per_page"]["mean"]
        out["cost_ms_per_page"] = round(made + rows_ms, 4) if made is not None and rows_ms is not None else None
    return out
