"""The main-content quality gate: a small gold set of hand-written pages, scored with the
product's word F1 against floors (tests/quality/test_quality_gate.py asserts them in CI).

Every page under pages/ was written for this gate (no text of a real site or corpus). The
gold is marked in the HTML itself with a `data-gold` attribute, the way TeCo labels its key
pages: an element carrying `data-gold` (or `data-gold="yes"`) is main content with all it
holds, except descendants marked `data-gold="no"`; `data-gold="headline"` marks the page's
headline, which is main content only when HEADLINE_IN_MAIN says so. The attributes are
removed before the pages are written to a WARC, so the product never sees them.

pages.json lists the pages: `url`, `type` (one of TYPES), and the file `dir/file` under pages/.
A file that is a whole document is served as it is; a fragment goes into `{{content}}` of its
dir's layout.html (the site's template), with `title` in `{{title}}`.

    python tests/quality/gate.py                  # scores per page, per type, overall, floors
    python tests/quality/gate.py --diff URL       # gold vs main_text of one page
    python tests/quality/gate.py --write-floors   # floors = scores - margin (never lowered
                                                  # unless --allow-lower)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass

import lxml.html

HERE = os.path.dirname(os.path.abspath(__file__))
PAGES_DIR = os.path.join(HERE, "pages")
MANIFEST = os.path.join(HERE, "pages.json")
FLOORS = os.path.join(HERE, "floors.json")
TYPES = ("article", "documentation", "forum", "product", "listing", "collection", "service")

# The gold convention (docs/development.md "Quality gate"): the headline repeats `title` and is left out of
# main_text; the standfirst and headings inside the content are in. One switch, so the
# convention can be changed in one place (then regenerate the floors).
HEADLINE_IN_MAIN = False

BLOCK_TAGS = frozenset("""address article aside blockquote body br dd details div dl dt figcaption
    figure footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section summary table
    tbody td tfoot th thead tr ul""".split())
NEWLINE_IN_PRE = "\x1e"
_MARKER = re.compile(r'\s+data-gold(="[^"]*")?')


@dataclass(frozen=True)
class GoldPage:
    url: str
    site: str
    page_type: str
    html: str          # as served: markers removed
    gold: str          # main_text by the convention above, one line per block
    multi_page: bool   # its site has other pages in the set (the template comparison runs)


def _manifest() -> list[dict]:
    with open(MANIFEST, encoding="utf-8") as f:
        return json.load(f)["pages"]


def _assemble(entry: dict) -> str:
    """The page's HTML with its markers: a fragment is put into its site's layout.html (the
    shared template: header, menu, sidebar, footer), a whole document is taken as it is."""
    with open(os.path.join(PAGES_DIR, entry["dir"], entry["file"]), encoding="utf-8") as f:
        source = f.read()
    if source.lstrip().lower().startswith("<!doctype"):
        return source
    with open(os.path.join(PAGES_DIR, entry["dir"], "layout.html"), encoding="utf-8") as f:
        layout = f.read()
    return layout.replace("{{title}}", entry["title"]).replace("{{content}}", source)


def gold_text(marked_html: str, headline_in_main: bool = HEADLINE_IN_MAIN) -> str:
    """The text of the marked elements, a line break at every block boundary. Deliberately not
    the product's text joiner (transforms/text.py): the gold must not inherit its choices."""
    root = lxml.html.document_fromstring(marked_html)
    lines, current = [], []

    def flush():
        # A line break inside <pre> stands for itself (NEWLINE_IN_PRE); elsewhere it is a space.
        for part in "".join(current).split(NEWLINE_IN_PRE):
            line = " ".join(part.split())
            if line:
                lines.append(line)
        current.clear()

    def text(s: str, pre: bool) -> str:
        return s.replace("\n", NEWLINE_IN_PRE) if pre else s

    def walk(el, gold: bool, pre: bool = False):
        if not isinstance(el.tag, str):        # comments, processing instructions
            return
        if el.tag in ("script", "style", "template", "noscript"):
            return
        mark = el.get("data-gold")
        if mark is not None:
            gold = {"no": False, "headline": headline_in_main}.get(mark, True)
        block = el.tag in BLOCK_TAGS
        pre = pre or el.tag == "pre"
        if block:
            flush()
        if gold and el.text:
            current.append(text(el.text, pre))
        for child in el:
            walk(child, gold, pre)
            if gold and child.tail:
                current.append(text(child.tail, pre))
        if block:
            flush()

    body = root.find("body")
    walk(body if body is not None else root, False)
    flush()
    return "\n".join(lines)


def load_gold() -> list[GoldPage]:
    entries = _manifest()
    hosts = [re.match(r"https?://([^/]+)", e["url"]).group(1) for e in entries]
    pages = []
    for entry, host in zip(entries, hosts):
        marked = _assemble(entry)
        pages.append(GoldPage(url=entry["url"], site=host, page_type=entry["type"],
                              html=_MARKER.sub("", marked), gold=gold_text(marked),
                              multi_page=hosts.count(host) > 1))
    return pages


def write_gold_warc(path: str, pages: list[GoldPage]) -> str:
    sys.path.insert(0, os.path.dirname(HERE))          # tests/helpers/warcs.py
    from helpers.warcs import response, write_warc
    return write_warc(path, [response(p.url, p.html.encode("utf-8")) for p in pages])


def extract(pages: list[GoldPage], config=None, workdir: str | None = None) -> dict:
    """url → pages row, through the per-site function the pipeline's ProcessSite step calls."""
    from sitestrip_bench.core import extract_rows, load_corpus
    from sitestrip.configs import load_config
    config = config or load_config()
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        warc = write_gold_warc(os.path.join(tmp, "gold.warc.gz"), pages)
        loaded = load_corpus([warc], config.read)
        return {row["url"]: row for row in extract_rows(loaded, config, processes=1)}


@dataclass(frozen=True)
class Scores:
    pages: dict        # url → (page type, PRF)
    types: dict        # page type → mean F1 of its pages
    overall: float     # mean F1 over all pages


def score(pages: list[GoldPage], rows: dict) -> Scores:
    from sitestrip_bench.metrics import word_prf
    per_page = {p.url: (p.page_type, word_prf((rows.get(p.url) or {}).get("main_text") or "", p.gold))
                for p in pages}
    by_type = defaultdict(list)
    for page_type, prf in per_page.values():
        by_type[page_type].append(prf.f1)
    types = {t: sum(v) / len(v) for t, v in sorted(by_type.items())}
    overall = sum(prf.f1 for _, prf in per_page.values()) / len(per_page)
    return Scores(per_page, types, overall)


def read_floors() -> dict:
    with open(FLOORS, encoding="utf-8") as f:
        return json.load(f)


def below_floors(scores: Scores, floors: dict) -> list[str]:
    """What is under its floor, as readable lines; empty when the gate passes."""
    failures = [f"{t}: {scores.types.get(t, 0.0):.4f} < floor {floor:.4f}"
                for t, floor in floors["types"].items() if scores.types.get(t, 0.0) < floor]
    if scores.overall < floors["overall"]:
        failures.append(f"overall: {scores.overall:.4f} < floor {floors['overall']:.4f}")
    return failures


def _floor(value: float, margin: float) -> float:
    return max(0.0, math.floor((value - margin) * 1000) / 1000)


def new_floors(scores: Scores, old: dict | None, margin: float, allow_lower: bool) -> dict:
    types = {t: _floor(v, margin) for t, v in scores.types.items()}
    overall = _floor(scores.overall, margin)
    if old and not allow_lower:
        types = {t: max(v, old["types"].get(t, 0.0)) for t, v in types.items()}
        overall = max(overall, old["overall"])
    return {"margin": margin, "headline_in_main": HEADLINE_IN_MAIN, "types": types, "overall": overall,
            "measured": {"types": {t: round(v, 4) for t, v in scores.types.items()},
                         "overall": round(scores.overall, 4)}}


def report(pages: list[GoldPage], rows: dict, scores: Scores, floors: dict | None) -> str:
    out = [f"{'type':<13} {'P':>6} {'R':>6} {'F1':>6}  {'method':<10} url"]
    for p in sorted(pages, key=lambda p: (p.page_type, p.url)):
        prf = scores.pages[p.url][1]
        method = (rows.get(p.url) or {}).get("candidate_method") or "-"
        out.append(f"{p.page_type:<13} {prf.precision:6.3f} {prf.recall:6.3f} {prf.f1:6.3f}  {method:<10} {p.url}")
    out.append("")
    out.append(f"{'type':<13} {'pages':>5} {'mean F1':>8} {'floor':>7}")
    counts = defaultdict(int)
    for p in pages:
        counts[p.page_type] += 1
    for t, v in scores.types.items():
        floor = (floors or {}).get("types", {}).get(t)
        out.append(f"{t:<13} {counts[t]:>5} {v:8.4f} {floor if floor is not None else '-':>7}")
    overall_floor = (floors or {}).get("overall", "-")
    out.append(f"{'overall':<13} {len(pages):>5} {scores.overall:8.4f} {overall_floor:>7}")
    return "\n".join(out)


def diff(page: GoldPage, row: dict) -> str:
    """Gold lines the product missed (-) and main_text lines that are not gold (+)."""
    got = [line.strip() for line in ((row or {}).get("main_text") or "").splitlines() if line.strip()]
    want = page.gold.splitlines()
    squash = lambda s: "".join(s.split())
    got_keys, want_keys = {squash(x) for x in got}, {squash(x) for x in want}
    lines = [f"- {x}" for x in want if squash(x) not in got_keys]
    lines += [f"+ {x}" for x in got if squash(x) not in want_keys]
    return "\n".join(lines) or "(same lines)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--diff", metavar="URL", action="append", default=[],
                        help="print gold vs main_text of this page (repeatable; 'all' for every page)")
    parser.add_argument("--gold", metavar="URL", help="print the gold main_text of this page and exit")
    parser.add_argument("--write-floors", action="store_true", help="rewrite floors.json from the scores")
    parser.add_argument("--margin", type=float, default=0.02, help="floor = score - margin (default 0.02)")
    parser.add_argument("--allow-lower", action="store_true", help="let --write-floors lower a floor")
    parser.add_argument("--config", help="a preset name or file (default: the default preset)")
    args = parser.parse_args(argv)

    pages = load_gold()
    if args.gold:
        print(next(p.gold for p in pages if p.url == args.gold))
        return 0
    from sitestrip.configs import load_config
    rows = extract(pages, load_config(args.config))
    scores = score(pages, rows)
    floors = read_floors() if os.path.exists(FLOORS) else None
    print(report(pages, rows, scores, floors))
    for url in args.diff:
        for p in pages:
            if url in ("all", p.url):
                print(f"\n=== {p.url} ({p.page_type}, F1 {scores.pages[p.url][1].f1:.3f})")
                print(diff(p, rows.get(p.url)))
    if args.write_floors:
        written = new_floors(scores, floors, args.margin, args.allow_lower)
        with open(FLOORS, "w", encoding="utf-8") as f:
            json.dump(written, f, indent=2)
            f.write("\n")
        print(f"\nwrote {FLOORS}")
        return 0
    failures = below_floors(scores, floors) if floors else []
    for line in failures:
        print(f"BELOW FLOOR {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
