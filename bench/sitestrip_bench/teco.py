"""The TeCo benchmark suite (thesis ch. 13) as a corpus, and its DOM-node metrics (design §9).

A TeCo benchmark is a `wget -r -l 2 --convert-links -E` download of one site:
a folder named after the key page's host, the pages stored under their URL
paths, links rewritten to relative local paths. The key page carries the gold
as HTML classes: `TECO_mainContent` (main content), `TECO_notTemplate` and its
numbered variants (`TECO_notTemplate2`, ...: not template) and `TECO_mainMenu`
(the main menu); older versions use the same names without `TECO_`. A label
covers the labelled node's whole subtree.

`read_teco` turns a folder of benchmarks into one WARC file plus gold pages,
so TeCo goes through the very pipeline the corpus directories go through. The
labels are removed from the pages put in the WARC: the product and the peers
must not see the gold, and a key page whose classes differ from its siblings'
would be compared unfairly with them. They are removed by editing the class
attribute text, not by reserialising a DOM, so that the key page the product
parses has exactly the nodes the gold masks are computed on (this is checked
for every key page).
"""
from __future__ import annotations

import os
import re
import uuid
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import urljoin, quote

import numpy as np

from sitestrip_bench.corpora import Corpus, GoldPage
from sitestrip.transforms.charset import decode_html
from sitestrip_bench.metrics import PRF
from sitestrip.transforms.page import PRODUCT_RULES, ParseRules, parse_page
from sitestrip.transforms.tree import subtree_mask, text_of
from sitestrip.transforms.urls import normalize_url, site_key

# wget -E gives every text/html page one of these; older TeCo versions were
# downloaded without -E and have extensionless pages ("forum.1", "Uploading_a_project"),
# which are recognised by their first bytes instead.
HTML_SUFFIXES = (".html", ".htm", ".shtml", ".xhtml")
# Page requisites (-p) that are never pages: not worth opening to sniff.
_ASSET_SUFFIXES = frozenset((
    ".css", ".js", ".mjs", ".json", ".xml", ".rss", ".atom", ".txt", ".csv", ".map",
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".ico", ".bmp", ".tif", ".tiff", ".avif",
    ".woff", ".woff2", ".ttf", ".otf", ".eot", ".swf", ".flv", ".mp3", ".mp4", ".webm",
    ".ogg", ".wav", ".avi", ".mov", ".pdf", ".zip", ".gz", ".tgz", ".rar", ".7z", ".exe",
    ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx",
))
_HTML_SIGNATURES = (b"<!doctype html", b"<html", b"<head", b"<body")
_SNIFF_BYTES = 1024

# The suite's zip files (Institutions, Media, Forum(s), Personal, Companies):
# a folder of benchmarks carrying one of these names is a category.
KNOWN_CATEGORIES = frozenset(("institutions", "media", "forum", "forums", "personal", "companies"))
DEFAULT_CATEGORY = "teco"

# Gold kinds of a label token, after the scheme prefix ("TECO_" or nothing).
KINDS = ("main", "nontemplate", "menu")

# A class attribute and its value. The name must follow whitespace, a quote
# (`id="a"class="b"` parses) or "/"; "data-class" and "myclass" do not match.
_CLASS_ATTR = re.compile(
    r"""(?<=[\s"'/])(?i:class)\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<uq>[^\s"'=<>`]+))""")
# Cheap byte-level test before a file is decoded and searched for real labels.
_MAYBE_LABEL = re.compile(rb"(?i)teco_|nottemplate")
_HOST_LIKE = re.compile(r"^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::\d+)?$")
# Characters kept raw in a converted path: RFC 3986 pchar minus "%" ("?" and
# "#" in a file name are part of the name, not a query or fragment).
_PATH_SAFE = "/!$&'()*+,;=:@~"


def _label_kind(token: str, scheme: str) -> str | None:
    """"main" / "nontemplate" / "menu", "other" (a TECO_ token of no known kind), or None."""
    low = token.lower()
    if scheme == "teco":
        if not low.startswith("teco_"):
            return None
        low = low[5:]
    if low == "maincontent":
        return "main"
    if low.startswith("nottemplate"):
        return "nontemplate"
    if low == "mainmenu":
        return "menu"
    # Whatever else TECO_ marks is benchmark markup too, never the site's own.
    return "other" if scheme == "teco" else None


def _attr_value(m: re.Match) -> tuple[str, str]:
    """(value, group name) of a _CLASS_ATTR match."""
    for group in ("dq", "sq", "uq"):
        value = m.group(group)
        if value is not None:
            return value, group
    raise AssertionError("unreachable")


def label_tokens(html: str, scheme: str = "teco") -> dict[str, set]:
    """The distinct label tokens of each kind found in the class attributes of `html`."""
    found = {kind: set() for kind in KINDS}
    for m in _CLASS_ATTR.finditer(html):
        for token in _attr_value(m)[0].split():
            kind = _label_kind(token, scheme)
            if kind in found:
                found[kind].add(token)
    return found


def strip_labels(html: str, scheme: str = "teco") -> tuple[str, dict[str, set]]:
    """(`html` without label tokens in its class attributes, the label tokens found by kind).

    The other tokens of an attribute stay, in their order; an attribute left
    empty is dropped, so a labelled element parses like its unlabelled twin.
    `scheme` "teco" removes every `TECO_*` token, "bare" the unprefixed names.
    """
    found = {kind: set() for kind in KINDS}

    def fix(m: re.Match) -> str:
        value, group = _attr_value(m)
        tokens = value.split()
        kept = []
        for token in tokens:
            kind = _label_kind(token, scheme)
            if kind is None:
                kept.append(token)
            elif kind in found:
                found[kind].add(token)
        if len(kept) == len(tokens):
            return m.group(0)
        if not kept:
            return ""
        start, end = m.span(group)
        return html[m.start():start] + " ".join(kept) + html[end:m.end()]

    return _CLASS_ATTR.sub(fix, html), found


# ---------------------------------------------------------------------------
# Finding the benchmarks


def _is_html_file(path: str) -> bool:
    low = path.lower()
    if low.endswith(HTML_SUFFIXES):
        return True
    if os.path.splitext(low)[1] in _ASSET_SUFFIXES:
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES).lower()
    except OSError:
        return False
    return any(sig in head for sig in _HTML_SIGNATURES)


def _html_files(folder: str) -> list[str]:
    """Paths relative to `folder` of its HTML files, in a stable order."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and _is_html_file(path):
                out.append(os.path.relpath(path, folder))
    return sorted(out)


def _subdirs(folder: str) -> list[str]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if os.path.isdir(os.path.join(folder, n))]


def _is_benchmark(folder: str) -> bool:
    """Whether `folder` is a site download rather than a folder of benchmarks or of categories.

    A site download holds pages at its top (a category never does) or is named
    like a host; a host-like folder whose own subfolders are host-like is a
    container that happens to have a dot in its name ("teco-5.0").
    """
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and _is_html_file(path):
            return True
    if _HOST_LIKE.match(os.path.basename(folder)):
        return not any(_HOST_LIKE.match(os.path.basename(d)) for d in _subdirs(folder))
    return False


def _category_of(name: str) -> str | None:
    return name if name.lower() in KNOWN_CATEGORIES else None


def _benchmark_folders(root: str) -> list[tuple[str, str]]:
    """(benchmark folder, category) for the three layouts `root` may have."""
    if _is_benchmark(root):
        return [(root, _category_of(os.path.basename(os.path.dirname(root))) or DEFAULT_CATEGORY)]
    out = []
    for child in _subdirs(root):
        if _is_benchmark(child):
            out.append((child, _category_of(os.path.basename(root)) or DEFAULT_CATEGORY))
        else:
            # A category folder: everything in it is a benchmark, whatever its name.
            out.extend((grandchild, os.path.basename(child)) for grandchild in _subdirs(child))
    return out


def _read_html(path: str) -> str:
    with open(path, "rb") as fh:
        html, _ = decode_html(fh.read(), None)
    # Round-trip once so the text parsed for the gold is the text the WARC holds.
    return html.encode("utf-8", "replace").decode("utf-8")


def _file_labels(path: str) -> dict[str, dict[str, int]]:
    """{scheme: {kind: distinct tokens}} of one file, schemes without labels left out."""
    with open(path, "rb") as fh:
        data = fh.read()
    if _MAYBE_LABEL.search(data) is None:
        return {}
    html, _ = decode_html(data, None)
    out = {}
    for scheme in ("teco", "bare"):
        counts = {k: len(v) for k, v in label_tokens(html, scheme).items() if v}
        if counts:
            out[scheme] = counts
    return out


@dataclass
class _Benchmark:
    folder: str
    category: str
    scheme: str                       # "teco" or "bare": which class names are labels
    html_files: list                  # relative paths
    key_pages: list                   # relative paths, most labelled first
    notes: list = field(default_factory=list)


def _is_key(labels: dict, scheme: str) -> bool:
    counts = labels.get(scheme)
    if not counts:
        return False
    # Sites use "mainContent" and "mainMenu" as class names of their own;
    # "notTemplate" only the old labels did.
    return scheme == "teco" or "nontemplate" in counts


def _survey(root: str) -> tuple[list[_Benchmark], list[str]]:
    root = os.path.abspath(root).rstrip(os.sep) or os.sep
    benchmarks, notes = [], []
    for folder, category in _benchmark_folders(root):
        files = _html_files(folder)
        labels = {rel: _file_labels(os.path.join(folder, rel)) for rel in files}
        scheme = "teco" if any(_is_key(v, "teco") for v in labels.values()) else "bare"
        keys = [rel for rel in files if _is_key(labels[rel], scheme)]
        name = os.path.relpath(folder, root) if folder != root else os.path.basename(folder)
        if not keys:
            notes.append(f"{name}: skipped, no page with TeCo labels among {len(files)} HTML files")
            continue
        weight = {rel: sum(labels[rel][scheme].values()) for rel in keys}
        keys.sort(key=lambda rel: (-weight[rel], rel))
        bench = _Benchmark(folder, category, scheme, files, keys)
        if scheme == "bare":
            bench.notes.append(f"{name}: unprefixed (pre-TECO_) labels")
        if len(keys) > 1:
            # The suite has two benchmarks of one host (users.dsic.upv.es, ids 95
            # and 111): several labelled pages in one folder are all key pages.
            bench.notes.append(f"{name}: {len(keys)} labelled pages, all taken as key pages: "
                               + ", ".join(keys))
        benchmarks.append(bench)
    return benchmarks, notes


def is_teco(directory: str) -> bool:
    """Whether some HTML file under `directory` carries TeCo labels in a class attribute."""
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if not (os.path.isfile(path) and _is_html_file(path)):
                continue
            try:
                labels = _file_labels(path)
            except OSError:
                continue
            if _is_key(labels, "teco") or _is_key(labels, "bare"):
                return True
    return False


def find_benchmarks(root: str) -> list[tuple[str, str, str]]:
    """(benchmark folder, key page file, category) of every key page under `root`.

    `root` is one benchmark folder, a folder of benchmark folders, or a folder
    of category folders of benchmark folders. Folders without a labelled page
    are left out (read_teco notes them).
    """
    benchmarks, _ = _survey(root)
    return [(b.folder, os.path.join(b.folder, rel), b.category)
            for b in benchmarks for rel in b.key_pages]


# ---------------------------------------------------------------------------
# Conversion


def _host(folder_name: str) -> str:
    """The URL host of a benchmark: its folder name, made valid if it is not one."""
    if normalize_url(f"http://{folder_name}/"):
        return folder_name
    cleaned = re.sub(r"[^a-z0-9.-]+", "-", folder_name.lower()).strip("-.")
    return cleaned or "teco-benchmark"


def page_url(host: str, rel_path: str) -> str | None:
    """Normalized URL of a file of a wget download: what its converted links resolve to."""
    path = os.fsencode(rel_path.replace(os.sep, "/"))
    return normalize_url(f"http://{host}/" + quote(path, safe=_PATH_SAFE))


def class_token_hash(token: str) -> int:
    """The hash a parsed page stores for a class token (CompactPage.class_hash): crc32 of its
    UTF-8 bytes. tests/bench/test_teco.py finds labelled nodes through it, so a parser that
    hashed otherwise would fail there."""
    return zlib.crc32(token.encode("utf-8", "replace"))


def _label_masks(page, found: dict) -> dict:
    """{kind: node mask or None} of the subtrees of the nodes carrying a label of that kind."""
    owner = np.repeat(np.arange(page.size, dtype=np.int64), np.diff(page.class_ptr))
    out = {}
    for kind in KINDS:
        tokens = found.get(kind) or ()
        if not tokens:
            out[kind] = None
            continue
        hashes = np.array(sorted({class_token_hash(t) for t in tokens}), dtype=np.uint32)
        roots = np.unique(owner[np.isin(page.class_hash, hashes)])
        out[kind] = subtree_mask(page, roots) if roots.size else None
    return out


def _same_structure(a, b) -> bool:
    return (a.size == b.size and np.array_equal(a.tag, b.tag) and np.array_equal(a.end, b.end)
            and np.array_equal(a.parent, b.parent))


def _gold_page(labelled: str, stripped: str, found: dict, url: str, site: str, corpus: str,
               genre: str, rules: ParseRules = PRODUCT_RULES) -> tuple[GoldPage | None, list]:
    notes = []
    page = parse_page(labelled, url, rules=rules)
    seen = parse_page(stripped, url, rules=rules)
    if not _same_structure(page, seen):
        return None, [f"{url}: skipped, removing the labels changed the parsed page "
                      f"({page.size} nodes labelled, {seen.size} stripped)"]
    masks = _label_masks(page, found)
    empty = np.zeros(page.size, dtype=bool)
    main = masks["main"] if masks["main"] is not None else empty
    nontemplate = masks["nontemplate"] if masks["nontemplate"] is not None else empty
    menu = masks["menu"]
    for kind in ("main", "nontemplate"):
        if masks[kind] is None:
            notes.append(f"{url}: no node labelled {kind}")
    menu_links = None
    if menu is not None:
        inside = page.link_node[menu[page.link_node]] if page.link_node.size else page.link_node
        index = {int(n): u for n, u in zip(page.link_node.tolist(), page.link_url)}
        menu_links = tuple(dict.fromkeys(index[int(n)] for n in inside))
    gold = GoldPage(
        url=url, site=site, corpus=corpus, genre=genre,
        # The product's renderer on the page the product sees: gold and output
        # differ only in which nodes they select.
        main_text=text_of(seen, main), nontemplate_text=text_of(seen, nontemplate),
        menu_links=menu_links,
        nodes={"main": main, "nontemplate": nontemplate, "template": ~nontemplate, "menu": menu,
               # Subtree ends of the key page: a predicted menu node becomes a node set.
               "end": page.end.copy()})
    return gold, notes


def _warc_date(path: str) -> str:
    stamp = datetime.fromtimestamp(os.stat(path).st_mtime, tz=timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


_HREF = re.compile(r"""(?i)(?<![\w-])(href\s*=\s*)("[^"]*"|'[^']*'|[^\s>"']+)""")
_ABSOLUTE = re.compile(r"(?i)^\s*(?:[a-z][a-z0-9+.-]*:|#|//)")


def absolute_links(html: str, url: str) -> str:
    """Every relative href made absolute against the page's URL.

    wget's --convert-links rewrote the site's links relative to each file, so
    the same menu link reads `about.html` on one page and `../about.html` one
    folder down. The live site served one value (absolute or root-relative) on
    every page, and ETDM compares attribute values; restoring absolute links
    gives the archive back what the site served. Node structure is unchanged.
    """
    def fix(m: re.Match) -> str:
        raw = m.group(2)
        mark = raw[0] if raw[0] in "\"'" else '"'
        value = raw[1:-1] if raw[0] in "\"'" else raw
        if not value.strip() or _ABSOLUTE.match(value):
            return m.group(0)
        return m.group(1) + mark + urljoin(url, value.strip()) + mark
    return _HREF.sub(fix, html)


def read_teco(root: str, work_dir: str, rules: ParseRules | None = None) -> Corpus:
    """Convert the TeCo benchmarks under `root` into `work_dir/teco-<name>.warc.gz` plus gold.

    Gold node masks index the key pages as parsed under `rules` (default: the product's), which
    must be the run's `read` rules for DOM-node metrics to compare like with like."""
    from sitestrip.pipeline.warc_writer import WarcWriter

    root = os.path.abspath(root).rstrip(os.sep) or os.sep
    name = "teco-" + (os.path.basename(root) or "root")
    benchmarks, notes = _survey(root)
    if not benchmarks:
        raise ValueError(f"{root}: no TeCo benchmark (no HTML page with TECO_ labels)"
                         + (": " + "; ".join(notes) if notes else ""))
    os.makedirs(work_dir, exist_ok=True)
    warc_path = os.path.join(work_dir, name + ".warc.gz")
    partial = warc_path + ".partial"
    gold: list[GoldPage] = []
    hosts: dict[str, str] = {}
    with open(partial, "wb") as out:
        writer = WarcWriter(out)
        writer.warcinfo(os.path.basename(warc_path), {
            "software": "sitestrip-bench (teco.py)",
            "description": f"TeCo benchmarks converted from {root}, labels removed",
        })
        for bench in benchmarks:
            folder_name = os.path.basename(bench.folder)
            host = _host(folder_name)
            if host != folder_name:
                bench.notes.append(f"{folder_name}: not a host name, served as {host}")
            if host in hosts:
                notes.append(f"{bench.folder}: skipped, host {host} already taken by {hosts[host]}")
                continue
            hosts[host] = bench.folder
            notes.extend(bench.notes)
            keys = set(bench.key_pages)
            for rel in bench.html_files:
                path = os.path.join(bench.folder, rel)
                url = page_url(host, rel)
                if url is None:
                    notes.append(f"{path}: skipped, no URL for this file name")
                    continue
                html = absolute_links(_read_html(path), url)
                stripped, found = strip_labels(html, bench.scheme)
                body = stripped.encode("utf-8")
                writer.response(url, body, headers=[("Content-Type", "text/html; charset=utf-8"),
                                                    ("Content-Length", str(len(body)))],
                                warc_headers={
                                    # Stable ids and dates: converting twice gives the same rows.
                                    "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>",
                                    "WARC-Date": _warc_date(path)})
                if rel in keys:
                    page, page_notes = _gold_page(html, stripped, found, url, folder_name, name,
                                                  bench.category, rules or PRODUCT_RULES)
                    notes.extend(page_notes)
                    if page is not None:
                        if bench.scheme == "teco" and "TECO_" in stripped:
                            notes.append(f"{url}: 'TECO_' left outside class attributes")
                        gold.append(page)
    os.replace(partial, warc_path)
    if not gold:
        raise ValueError(f"{root}: no usable TeCo key page" + (": " + "; ".join(notes) if notes else ""))
    return Corpus(name=name, warc_paths=[warc_path], gold=gold, kind="teco", source=root, notes=notes)


# ---------------------------------------------------------------------------
# DOM-node metrics


def _mask_prf(predicted: np.ndarray, expected: np.ndarray) -> PRF:
    predicted, expected = np.asarray(predicted, dtype=bool), np.asarray(expected, dtype=bool)
    if predicted.shape != expected.shape:
        raise ValueError(f"node masks of different pages: {predicted.shape} vs {expected.shape}")
    return PRF(int(np.count_nonzero(predicted & expected)), int(np.count_nonzero(predicted)),
               int(np.count_nonzero(expected)))


def node_scores(gold: GoldPage, analysis) -> dict:
    """Node-set P/R/F1 (design §9 "DOM nodes") of a PageAnalysis against a TeCo key page.

    "main": main-content nodes. "template": template nodes, None when the
    product ran page-only (it then claims no template). "menu": the subtree of
    the detected menu node, None when the gold has no menu label; a gold menu
    the product missed scores 0 predicted nodes rather than being left out.
    """
    nodes = gold.nodes
    if nodes is None:
        raise ValueError(f"{gold.url}: gold page without node labels (not a TeCo page)")
    out = {"main": _mask_prf(analysis.main, nodes["main"]), "template": None, "menu": None}
    if getattr(analysis, "template", None) is not None:
        out["template"] = _mask_prf(analysis.template.template, nodes["template"])
    if nodes.get("menu") is not None:
        predicted = np.zeros(nodes["menu"].shape, dtype=bool)
        menu = getattr(analysis, "menu", None)
        if menu is not None:
            end = nodes["end"]
            predicted[menu.node:int(end[menu.node])] = True
        out["menu"] = _mask_prf(predicted, nodes["menu"])
    return out


def teco_node_metrics(corpus: Corpus, config) -> list[dict]:
    """One row per labelled key page: the product's node scores, its site analysed as
    the pipeline analyses it (same candidates, same site shard)."""
    from sitestrip_bench.core import load_corpus
    from sitestrip.transforms.classify import load_main_content_model
    from sitestrip.transforms.site_step import SiteBlocks, StageError, analyse_page, site_context
    from sitestrip.transforms.shards import shard_urls

    golds = [g for g in corpus.gold if g.nodes is not None]
    loaded = load_corpus(corpus.warc_paths, config.read, sites={site_key(g.url) for g in golds})
    by_site, failed = loaded.records, loaded.failures

    model = load_main_content_model(config.main_content)
    rows = []
    for g in golds:
        row = {"url": g.url, "site": g.site, "genre": g.genre, "candidate_method": None,
               "main": None, "template": None, "menu": None, "error": None}
        rows.append(row)
        site = site_key(g.url)
        records = by_site.get(site, [])
        if len(records) > config.site.max_site_pages:
            shard = shard_urls(site, [r.url for r in records], config.site.max_site_pages)
            records = [r for r in records if shard[r.url] == shard.get(g.url)]
        ordered, pages, links = site_context(site, records, config)
        record = next((r for r in ordered if r.url == g.url), None)
        if record is None:
            row["error"] = failed.get(g.url, "key page not in the corpus WARC")
            continue
        try:
            analysis = analyse_page(record, pages, links, config,
                                    SiteBlocks(pages) if model is not None else None, model)
        except StageError as exc:
            row["error"] = str(exc)
            continue
        row["candidate_method"] = analysis.candidate_method
        row.update(node_scores(g, analysis))
    return rows
