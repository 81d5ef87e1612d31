"""Compiled vs reference parse flattening on real pages: the same CompactPage, and the time.

For every HTML page of the WARC files under each folder, parses once and flattens twice,
with transforms/_flatten.c and with page._flatten (the reference), under the product's
rules, design §1's rules and a mix (noscript dropped, widget leaves, browser text), and
compares every field (every array with its dtype, the text, link URLs, node extras, notes,
title, base URL). Then times parse_page per page both ways, alternating rounds in this one
process (CPU time: the machine is shared), and prints the median round of each.

    # $CORPORA: a directory of corpus directories, each warc/*.warc.gz + gold.jsonl
    sitestrip-bench compare-flatten $CORPORA/news-ctf2015-dev/warc
    sitestrip-bench compare-flatten DIR... --rounds 7 --no-compare

Not part of the test suite (tests/transforms/test_flatten.py checks the same on generated HTML).
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import time


from sitestrip.pipeline.page_source import Page, read_pages
from sitestrip.pipeline.warc import open_warc
from sitestrip.transforms import meta as M
from sitestrip.transforms import page as P
from sitestrip.transforms.charset import decode_html

RULES = {
    "product": P.PRODUCT_RULES,
    "spec": P.SPEC_RULES,
    "mixed": P.ParseRules(keep_noscript=False, widget_leaves=True, browser_text=True),
}


def pages_of(folder: str) -> list[tuple[str, str]]:
    pages = []
    for path in sorted(glob.glob(os.path.join(folder, "*.warc*"))):
        with open_warc(path) as stream:
            for item in read_pages(stream, path, parse=False):
                if isinstance(item, Page):
                    pages.append((item.response.url, decode_html(item.response.body, item.response.http_charset)[0]))
    return pages


def flattened(html: str, url: str, rules: P.ParseRules, compiled: bool) -> P.CompactPage:
    """parse_page with the compiled passes or their references: page.py's flattening and
    meta.py's reading of the declared metadata (one switch, SITESTRIP_FLATTEN, for both)."""
    saved = P._COMPILED, M._COMPILED
    P._COMPILED = M._COMPILED = compiled
    try:
        return P.parse_page(html, url, rules=rules)
    finally:
        P._COMPILED, M._COMPILED = saved


def compare(pages) -> tuple[int, int, int]:
    """(pages × rules compared, differing, left to the reference by the compiled walk)."""
    compared = differing = fell_back = 0
    for url, html in pages:
        _, body, _ = P.parse_tree(html)
        for rules_name, rules in RULES.items():
            ref = flattened(html, url, rules, compiled=False)
            got = flattened(html, url, rules, compiled=True)
            if body is not None and P._flatten_compiled(body, url, ref.title, ref.base_url, len(html),
                                                        ref.notes, rules) is None:
                fell_back += 1
            compared += 1
            fields = ref.differing_fields(got)
            if fields:
                differing += 1
                print(f"  differs: {url} ({rules_name}): {', '.join(fields)}", file=sys.stderr)
    return compared, differing, fell_back


def time_rounds(pages, rounds: int) -> dict:
    """Median CPU ms per page of parse_page (product rules), compiled and reference alternating."""
    per_round = {True: [], False: []}
    for _ in range(rounds):
        for compiled in (True, False):
            clock = time.process_time()
            for url, html in pages:
                flattened(html, url, P.PRODUCT_RULES, compiled)
            per_round[compiled].append((time.process_time() - clock) * 1e3 / max(len(pages), 1))
    return {("compiled" if k else "reference"): statistics.median(v) for k, v in per_round.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-compare", action="store_true")
    parser.add_argument("--no-time", action="store_true")
    args = parser.parse_args(argv)
    if P._compiled is None:
        sys.exit("sitestrip.transforms._flatten is not built: reinstall with pip install -e .")
    for folder in args.folders:
        pages = pages_of(folder)
        line = f"{folder}: {len(pages)} pages"
        if not args.no_compare:
            compared, differing, fell_back = compare(pages)
            line += f"; compared {compared} (pages × 3 rule sets), differing {differing}, " \
                    f"left to the reference {fell_back}"
        if not args.no_time:
            ms = time_rounds(pages, args.rounds)
            line += f"; parse_page CPU ms/page: compiled {ms['compiled']:.3f}, " \
                    f"reference {ms['reference']:.3f} (median of {args.rounds} rounds)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
