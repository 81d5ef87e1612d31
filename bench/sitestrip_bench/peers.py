"""Peer page-level extractors, run the way their users run them, one subprocess each.

The benchmark scores our product and these peers on the same pages with the same
scorer. Each peer runs in its own worker process (`python -m sitestrip_bench.peers NAME
PAGES_JSONL OUT_JSONL`) so that its CPU time and peak memory are its own (read
from os.wait4's rusage), and so that a peer that crashes the interpreter or hangs
costs its own pages, never the benchmark.

Adapters keep each library's defaults except where the brief of the benchmark
says otherwise; `Peer.settings` says exactly what is called, for the report.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from sitestrip_bench.measure import peak_rss_mb, run_child, tail

PEER_NAMES = ("trafilatura", "trafilatura_precision", "resiliparse", "readability", "justext", "boilerpy3")

Extractor = Callable[[str, str], str]


class PeerUnavailable(Exception):
    """The peer's library cannot be imported here."""


@dataclass(frozen=True)
class Peer:
    name: str
    package: str            # distribution name, for the version shown in the report
    settings: str           # what is called, for the report
    module: str = ""        # import name; importing it is what "installed" means for load()
    factory: Callable[[], Extractor] | None = field(default=None, compare=False, repr=False)

    def version(self) -> str | None:
        if not self.package:
            # Test hooks live in this file and have no distribution of their own.
            return "test"
        try:
            return importlib.metadata.version(self.package)
        except importlib.metadata.PackageNotFoundError:
            return None

    def load(self) -> Extractor:
        try:
            if self.module:
                importlib.import_module(self.module)
            return self.factory()
        except ImportError as exc:
            raise PeerUnavailable(f"{self.name}: cannot import {self.module or self.package}: {exc}") from exc


# ---------------------------------------------------------------------------
# Adapters. Each factory imports lazily and does its one-off set-up (stoplists,
# extractor objects) before returning, so the per-page call is just the call.

def _trafilatura(favor_precision: bool) -> Callable[[], Extractor]:
    def factory() -> Extractor:
        import trafilatura

        def extract(html: str, url: str) -> str:
            text = trafilatura.extract(html, url=url, include_comments=False, include_tables=True,
                                       favor_precision=favor_precision)
            return text or ""
        return extract
    return factory


def _resiliparse() -> Extractor:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    def extract(html: str, url: str) -> str:
        return extract_plain_text(HTMLTree.parse(html), main_content=True)
    return extract


# Tags after whose start and end the text of readability's fragment breaks a line,
# so that its paragraphs come out one a line like the other peers' blocks.
_BLOCK_TAGS = frozenset((
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "div", "dl", "dt", "figcaption",
    "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav",
    "ol", "p", "pre", "section", "table", "tbody", "tfoot", "thead", "tr", "ul",
))
_CELL_TAGS = frozenset(("td", "th"))
_SKIP_TEXT_TAGS = frozenset(("script", "style", "noscript", "template"))
_SPACES = re.compile(r"\s+")


def fragment_text(fragment: str) -> str:
    """Plain text of an HTML fragment, one line per block."""
    import lxml.html

    if not fragment or not fragment.strip():
        return ""
    return element_text(lxml.html.fromstring(fragment))


def element_text(root) -> str:
    """Plain text under an lxml element, one line per block. Walks with an explicit
    stack rather than recursing: a tree deeper than Python's recursion limit must
    come out as text, not as a RecursionError."""
    pieces: list[str] = []
    # (element, entering): True on the way down, False once its children are done.
    stack = [(root, True)]
    skipping = 0
    while stack:
        el, entering = stack.pop()
        tag = el.tag if isinstance(el.tag, str) else ""   # comments and PIs: only their tail is text
        if entering:
            if tag in _SKIP_TEXT_TAGS:
                skipping += 1
            pieces.append(_boundary(tag))
            if tag and not skipping and el.text:
                pieces.append(_SPACES.sub(" ", el.text))
            stack.append((el, False))
            stack.extend((child, True) for child in reversed(el))
        else:
            if tag in _SKIP_TEXT_TAGS:
                skipping -= 1
            pieces.append(_boundary(tag))
            # The root's tail lies outside the fragment.
            if el is not root and not skipping and el.tail:
                pieces.append(_SPACES.sub(" ", el.tail))
    # Adjacent chunks each keep their own edge spaces; collapse them per line.
    lines = (" ".join(line.split()) for line in "".join(pieces).split("\n"))
    return "\n".join(line for line in lines if line)


def _boundary(tag: str) -> str:
    if tag in _BLOCK_TAGS:
        return "\n"
    return " " if tag in _CELL_TAGS else ""


def _readability() -> Extractor:
    from readability import Document

    def extract(html: str, url: str) -> str:
        return fragment_text(Document(html).summary(html_partial=True))
    return extract


def _justext() -> Extractor:
    import justext

    # jusText classifies by stop-word density against one language's list, and
    # with the English list it keeps next to nothing of a non-English page. Runs
    # over mixed-language crawls use the union of all its lists instead; built
    # once per worker, not per page.
    stoplist = frozenset().union(*(justext.get_stoplist(lang) for lang in justext.get_stoplists()))

    def extract(html: str, url: str) -> str:
        return "\n".join(p.text for p in justext.justext(html, stoplist) if not p.is_boilerplate)
    return extract


def _boilerpy3() -> Extractor:
    from boilerpy3 import extractors

    extractor = extractors.ArticleExtractor()

    def extract(html: str, url: str) -> str:
        # Raises on pages it finds no content in; the worker records that as a failure.
        return extractor.get_content(html)
    return extract


PEERS: dict[str, Peer] = {
    "trafilatura": Peer(
        "trafilatura", "trafilatura",
        "extract(html, url=url, include_comments=False, include_tables=True)",
        "trafilatura", _trafilatura(False)),
    "trafilatura_precision": Peer(
        "trafilatura_precision", "trafilatura",
        "extract(html, url=url, include_comments=False, include_tables=True, favor_precision=True)",
        "trafilatura", _trafilatura(True)),
    "resiliparse": Peer(
        "resiliparse", "resiliparse",
        "extract_plain_text(HTMLTree.parse(html), main_content=True)",
        "resiliparse", _resiliparse),
    "readability": Peer(
        "readability", "readability-lxml",
        "Document(html).summary(html_partial=True), fragment to text with lxml (one line per block)",
        "readability", _readability),
    "justext": Peer(
        "justext", "jusText",
        "justext(html, all-language stoplist (union of get_stoplists())), default thresholds, non-boilerplate paragraphs",
        "justext", _justext),
    "boilerpy3": Peer(
        "boilerpy3", "boilerpy3",
        "ArticleExtractor().get_content(html)",
        "boilerpy3", _boilerpy3),
}


# ---------------------------------------------------------------------------
# Test hooks: reachable only by names starting with "_", so the benchmark's
# peer list never includes them. They exist because the worker is a separate
# process, which a test cannot monkeypatch.

def _sleeper() -> Extractor:
    def extract(html: str, url: str) -> str:
        time.sleep(10)
        return html
    return extract


def _crasher() -> Extractor:
    def extract(html: str, url: str) -> str:
        if "RAISE" in html:
            raise ValueError("asked to raise")
        if "EXIT" in html:
            os._exit(3)
        return html
    return extract


_TEST_PEERS: dict[str, Peer] = {
    "_sleep": Peer("_sleep", "", "sleeps 10 s per page (test hook)", "", _sleeper),
    "_crash": Peer("_crash", "", "raises on RAISE, exits the process on EXIT (test hook)", "", _crasher),
}


def _lookup(name: str) -> Peer | None:
    return (_TEST_PEERS if name.startswith("_") else PEERS).get(name)


def available_peers(names: Iterable[str] | None = None) -> dict[str, str]:
    """name → installed version, for the peers among `names` that are installed."""
    found = {}
    for name in PEER_NAMES if names is None else names:
        peer = _lookup(name)
        version = peer.version() if peer else None
        if version is not None:
            found[name] = version
    return found


# ---------------------------------------------------------------------------
# Runner

@dataclass
class PeerRun:
    name: str
    version: str | None
    pages: int = 0                 # pages attempted
    failed: int = 0                # pages the extractor raised on, or never reached (crash, timeout)
    timed_out: bool = False
    cpu_seconds: float = 0.0       # user+sys of the worker, import and page reading included
    wall_seconds: float = 0.0      # time inside the extractor calls only
    extract_cpu_seconds: float | None = None   # the worker's CPU inside the extractor calls only
    max_rss_mb: float = 0.0        # the worker's peak resident memory (see bench.measure)
    texts: dict[str, str] = field(default_factory=dict)
    page_ms: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def pages_per_second(self) -> float | None:
        return self.pages / self.wall_seconds if self.wall_seconds > 0 else None


def write_pages(pages: Iterable[tuple[str, str]], path: str) -> int:
    """Write (url, decoded HTML) pairs as the worker's JSONL input; returns the count."""
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for url, html in pages:
            # ensure_ascii: lone surrogates from lenient decoding survive the round trip.
            out.write(json.dumps({"url": url, "html": html}))
            out.write("\n")
            count += 1
    return count


def _iter_pages(path: str):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                page = json.loads(line)
                yield page["url"], page["html"]


_STDERR_LINES = 10


def run_peer(name: str, pages_path: str, out_dir: str, timeout: float = 3600) -> PeerRun:
    """Run one peer over the pages of `pages_path` (written by write_pages) in a worker process."""
    peer = _lookup(name)
    if peer is None:
        return PeerRun(name, None, error="unknown peer")
    version = peer.version()
    if version is None:
        return PeerRun(name, None, error="not installed")

    urls = [url for url, _ in _iter_pages(pages_path)]
    os.makedirs(out_dir, exist_ok=True)
    out_path = os.path.join(out_dir, f"{name}.jsonl")
    err_path = os.path.join(out_dir, f"{name}.stderr")
    if os.path.exists(out_path):
        os.remove(out_path)   # a stale result must not pass for this run's

    cmd = [sys.executable, "-m", "sitestrip_bench.peers", name, os.path.abspath(pages_path), os.path.abspath(out_path)]
    child = run_child(cmd, err_path, timeout=timeout)

    run = PeerRun(name, version, pages=len(urls), timed_out=child.timed_out,
                  cpu_seconds=child.cpu_seconds)
    summary = None
    errors = 0
    peak = None
    try:
        with open(out_path, encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue   # the line being written when the worker died
                if row.get("rss_mb") is not None:
                    peak = max(peak or 0.0, row["rss_mb"])
                if "summary" in row:
                    summary = row["summary"]
                    continue
                run.texts[row["url"]] = row["text"] or ""
                run.page_ms[row["url"]] = row["ms"]
                if row.get("error"):
                    errors += 1
    except OSError:
        pass
    # The worker's own reports when it could make them; else the (inflated) rusage figure.
    run.max_rss_mb = peak if peak is not None else child.ru_maxrss_mb
    missing = [url for url in urls if url not in run.texts]
    for url in missing:
        run.texts[url] = ""
    run.failed = errors + len(missing)
    if summary is not None:
        run.wall_seconds = summary["wall_seconds"]
        run.extract_cpu_seconds = summary.get("cpu_seconds")
    else:
        # No summary: the pages that did finish are all the timing there is.
        run.wall_seconds = sum(run.page_ms.values()) / 1000
    if child.timed_out:
        run.error = f"timed out after {child.wall_seconds:.1f} s"
    elif child.returncode != 0 or summary is None:
        last = tail(err_path, _STDERR_LINES)
        run.error = f"worker exited with code {child.returncode}" + (f": {last}" if last else "")
    return run


# ---------------------------------------------------------------------------
# Worker

WARMUP_HTML = (
    "<html><head><title>Warm-up</title></head><body><nav><a href='/'>Home</a></nav>"
    "<article><h1>Warm-up page</h1><p>This short paragraph exists so that the extractor "
    "initialises itself before the first timed page, and it has enough ordinary words "
    "in it for every extractor to treat it as text worth keeping.</p></article></body></html>"
)


def silence() -> None:
    import logging
    import warnings

    # Peers log per page (trafilatura heavily); the I/O would be timed as extraction.
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: python -m sitestrip_bench.peers NAME PAGES_JSONL OUT_JSONL", file=sys.stderr)
        return 2
    name, pages_path, out_path = args
    peer = _lookup(name)
    if peer is None:
        print(f"unknown peer {name!r}", file=sys.stderr)
        return 2
    silence()
    extract = peer.load()
    try:
        extract(WARMUP_HTML, "http://warm.up/")
    except Exception:
        pass   # some peers reject a page this small; initialisation has happened either way
    wall = cpu = 0.0
    with open(out_path, "w", encoding="utf-8") as out:
        # Pages are streamed, not loaded up front, so the corpus does not count
        # towards the peer's peak memory; the timing covers the calls alone.
        for url, html in _iter_pages(pages_path):
            error = None
            c0, t0 = time.process_time(), time.perf_counter()
            try:
                text = extract(html, url) or ""
            except Exception as exc:
                text = ""
                error = f"{type(exc).__name__}: {exc}"[:500]
            dt = time.perf_counter() - t0
            wall += dt
            cpu += time.process_time() - c0
            # Per page, so a run cut short still tells how much memory it had reached.
            out.write(json.dumps({"url": url, "text": text, "ms": dt * 1000, "error": error,
                                  "rss_mb": peak_rss_mb()}))
            out.write("\n")
            out.flush()
        out.write(json.dumps({"summary": {"wall_seconds": wall, "cpu_seconds": cpu}, "rss_mb": peak_rss_mb()}))
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
