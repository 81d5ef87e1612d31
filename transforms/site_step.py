"""From a fetched HTML record to output rows: the pure per-page and per-site steps.

`build_page_record` runs before the shuffle (decode, parse, site key);
`process_site` runs on one site shard after it. Both are plain functions of
their inputs so the Beam layer only moves data and counts.
"""
from __future__ import annotations

import dataclasses
import hashlib
import time
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import Iterable, Iterator, Sequence

import numpy as np

from sitestrip.transforms import compression
from sitestrip.transforms.blocks import Blocks, block_texts, page_blocks, render_blocks
from sitestrip.transforms.candidates import forget_site_urls as forget_directories
from sitestrip.transforms.candidates import CandidateSelection, in_site, page_key_links, select_candidates, site_links
from sitestrip.transforms.charset import html_for_parse
from sitestrip.transforms.conex_page import main_content, main_content_and_features
from sitestrip.transforms.classify import classify_page, load_main_content_model
from sitestrip.transforms.clusters import ClusterCandidates, cluster_pages, cluster_rows, cluster_signatures, page_signature
from sitestrip.transforms.conex_site import site_main_content
from sitestrip.transforms.duplicates import duplicate_columns, duplicate_mates, find_duplicates, fingerprint
from sitestrip.transforms.features import SiteSignals, block_features, text_keys, without_site
from sitestrip.transforms.link_blocks import drop_link_blocks
from sitestrip.transforms.menex import Menu, MenexParams, detect_menu, menu_scores
from sitestrip.transforms.outlinks import page_links
from sitestrip.transforms.output import OutputParams, declared_columns, main_language, main_markdown
from sitestrip.transforms.page_type import PAGE_TYPES
from sitestrip.transforms.sitemenus import (MenuProposal, choose_menu_keys, menu_links, menu_node_by_key,
                                            own_links, propose_menus, site_menu)
from sitestrip.transforms.page import PRODUCT_RULES, UNPACKED, CompactPage, ParseRules, parse_page
from sitestrip.transforms.state import StateParams, StoredFingerprint, StoredPage, shard_state
from sitestrip.transforms.status import WARC_TRUNCATED, page_status
from sitestrip.transforms.template import TemplateResult, detect_template
from sitestrip.transforms import tree as tree_module
from sitestrip.transforms.tree import (distinct_inverse, subtree_mask, subtree_sum, text_nodes_below, text_of,
                                      words_in)
from sitestrip.transforms.urls import forget_site_urls, normalize_url, site_key


class StageError(Exception):
    """A page that failed in a named stage; it becomes one errors row."""

    def __init__(self, stage: str, error_class: str, message: str):
        super().__init__(f"{stage}: {error_class}: {message}")
        self.stage, self.error_class, self.message = stage, error_class, message


@dataclass
class PageRecord:
    """What crosses the shuffle for one HTML 200 record: provenance + compact page."""
    url: str                 # normalized: site keys, link matching, candidate URLs
    site: str
    warc_file: str
    warc_offset: int
    warc_record_id: str
    fetch_date: str
    content_type: str
    charset: str
    truncated: str | None
    page: CompactPage
    timing_ms: dict = field(default_factory=dict)
    target_uri: str | None = None   # WARC-Target-URI as written (None: not read from a WARC)


def _ms_since(start: float) -> float:
    return (time.thread_time() - start) * 1000.0


def build_page_record(*, url: str, body: bytes, http_charset: str | None, warc_file: str,
                      warc_offset: int, warc_record_id: str, fetch_date: str,
                      content_type: str, truncated: str | None, read_ms: float = 0.0,
                      max_nodes: int | None = None, notes: tuple = (),
                      rules: ParseRules = PRODUCT_RULES) -> PageRecord:
    """Decode and parse one HTML response (`url`: its WARC-Target-URI; `notes`: how its
    payload is incomplete; `rules`: the parse rules of the `read` config). Raises StageError
    naming the failing stage."""
    normalized = normalize_url(url)
    site = site_key(normalized) if normalized else None
    if not normalized or not site:
        raise StageError("read", "BadUrl", f"not an absolute http(s) URL: {url[:200]!r}")
    start = time.thread_time()
    try:
        # The payload's own bytes where they are its decoded text's UTF-8 (charset.html_for_parse).
        html, charset, chars = html_for_parse(body, http_charset)
        page = parse_page(html, normalized, max_nodes, rules, chars)
    except Exception as exc:  # lxml and codec failures vary; each ends as one errors row
        raise StageError("parse", type(exc).__name__, str(exc)[:500]) from exc
    page.notes = tuple(notes) + page.notes
    return PageRecord(url=normalized, site=site, warc_file=warc_file, warc_offset=warc_offset,
                      warc_record_id=warc_record_id, fetch_date=fetch_date,
                      content_type=content_type, charset=charset, truncated=truncated, page=page,
                      timing_ms={"read": read_ms, "parse": _ms_since(start)}, target_uri=url)


def record_from_response(response, *, max_nodes: int | None = None, read_ms: float = 0.0,
                         rules: ParseRules = PRODUCT_RULES) -> PageRecord:
    """build_page_record for a fetched response (pipeline.warc.HtmlResponse or alike)."""
    return build_page_record(
        url=response.url, body=response.body, http_charset=response.http_charset,
        warc_file=response.warc_file, warc_offset=response.warc_offset,
        warc_record_id=response.warc_record_id, fetch_date=response.fetch_date,
        content_type=response.content_type, truncated=response.truncated,
        read_ms=read_ms, max_nodes=max_nodes, notes=response.notes, rules=rules)


def menu_signature(links) -> str:
    """Stable id of a menu: its link URLs in order, hosts reduced to site keys.

    Anchor text is left out (it may be localized), and so is "www.": the
    menu of www.example.com/a and of example.com/b is one menu of one site.
    """
    keyed = []
    # A link URL is normalized (CompactPage.link_url), so its site key is its host's: taken once
    # per host, not once per URL (each a URL normalized, a menu of a page-level row 30 of them).
    key_of: dict = {}
    for url, _ in links:
        scheme, _, rest = url.partition("://")
        host, slash, path = rest.partition("/")
        key = key_of.get((scheme, host))
        if key is None:
            key = key_of[scheme, host] = site_key(f"{scheme}://{host}/") or host
        keyed.append(f"{scheme}://{key}{slash}{path}")
    return hashlib.sha1("\n".join(keyed).encode("utf-8")).hexdigest()[:16]


class _Budget:
    """The CPU time one page's site-level work may take (site.page_budget_ms).

    Cooperative: checked when a stage ends and between the waves of a tree mapping
    (once 2^16 pairs have been scored since the last check), never by a signal or a thread,
    which a Beam worker does not own. A page
    over budget stops at the next check and becomes one errors row; the rest of
    its site goes on.
    """

    def __init__(self, limit_ms: float | None, spent_ms: float = 0.0):
        """`spent_ms`: the page's CPU already spent elsewhere (its own blocks, SiteBlocks)."""
        self.limit_ms = limit_ms
        self.start = time.thread_time() - spent_ms / 1000.0

    def check(self, stage: str, now: float | None = None) -> None:
        """`now`: time.thread_time() when the caller has just read it."""
        if self.limit_ms is None:
            return
        spent = ((time.thread_time() if now is None else now) - self.start) * 1000.0
        if spent > self.limit_ms:
            raise StageError(stage, "TimeBudgetExceeded",
                             f"{spent:.0f} ms of CPU time, over site.page_budget_ms = {self.limit_ms:g}")


def _no_check() -> None:
    """A stage's budget check when it has no budget."""


class _Stage:
    """Times a stage (CPU ms into `timing`) and turns its failure into a StageError.

    With a budget, `with _Stage(...) as check` gives the stage's own budget check
    for its inner loops, and the budget is checked again when the stage ends.
    """

    def __init__(self, timing: dict, name: str, budget: _Budget | None = None):
        self.timing, self.name, self.budget = timing, name, budget

    def __enter__(self):
        self.start = time.thread_time()
        # Called between the waves of a tree mapping: the budget's own check, not a method around it.
        return _no_check if self.budget is None else partial(self.budget.check, self.name)

    def __exit__(self, kind, exc, tb):
        now = time.thread_time()
        self.timing[self.name] = self.timing.get(self.name, 0.0) + (now - self.start) * 1000.0
        if exc is not None and not isinstance(exc, StageError) and isinstance(exc, Exception):
            raise StageError(self.name, type(exc).__name__, str(exc)[:500]) from exc
        if exc is None and self.budget is not None:
            self.budget.check(self.name, now)
        return False


def _menu(record: PageRecord, menex: MenexParams, timing: dict, budget: _Budget | None = None):
    """(page-level menu, the MenEx scores it came from, which the site-menu proposal reuses)."""
    with _Stage(timing, "menex", budget):
        scores = menu_scores(record.page, menex)
        return detect_menu(record.page, menex, scores), scores


def _menu_columns(row: dict, menu) -> None:
    """The row's menu columns from its page-level menu (MenEx)."""
    row["menu_links"] = [{"url": u, "text": t} for u, t in menu.links] if menu else []
    row["menu_signature"] = menu_signature(menu.links) if menu and menu.links else None


def _finish(record: PageRecord, timing: dict, menu, menu_columns: bool = True, **columns) -> dict:
    """The row; `menu_columns` False leaves the menu columns to the caller (process_site,
    which knows them only once the site-level menus are chosen)."""
    page = record.page
    row = _provenance(record)
    row.update(columns)
    if menu_columns:
        _menu_columns(row, menu)
    row["words_page"] = words_in(page)
    row["notes"] = list(page.notes) + row.get("notes", []) \
        + ([WARC_TRUNCATED + record.truncated] if record.truncated else [])
    row["status"] = page_status(row["notes"], row["words_page"])
    # "etdm" is the tree-mapping part of "template" and "site_conex": not added twice.
    timing["total"] = sum(v for k, v in timing.items() if v is not None and k not in ("etdm", "total"))
    row["timing_ms"] = timing
    return row


@dataclass
class PageBlocks:
    """A page's blocks (design §10), their own texts and their text identities."""
    blocks: Blocks
    texts: list
    keys: np.ndarray


class SiteBlocks:
    """Blocks of every page of a site shard, computed once per page and shared by every key
    page that compares with it, and how many of the shard's pages show each block text.

    `prepare` computes them all up front, each page's timed for that page (`own_ms`): the
    first key page needs every page's block texts (site_counts), and charging them all to
    it made its CPU time and its time budget grow with the shard (3 s for 2,000 pages of
    1.5 ms). A page whose blocks fail keeps its exception for its own row; the site counts
    are taken over the other pages."""

    def __init__(self, pages: dict):
        self.pages = pages
        self._blocks: dict = {}
        self._failed: dict = {}
        self._site_counts = None
        self._distinct_pages = 0
        self._page_counts: dict = {}
        self._distinct: dict = {}
        self._prepared = False
        self.own_ms: dict = {}
        self.captures: dict = {}

    def add_capture(self, key: tuple, page: CompactPage) -> None:
        """A capture of a URL whose other capture stands for it in `pages` (capture_key): its
        own blocks, for its own row; it is no candidate and not in the site counts."""
        self.captures[key] = page
        self.prepare_page(key)

    def of(self, url) -> PageBlocks:
        got = self._blocks.get(url)
        if got is None:
            failed = self._failed.get(url)
            if failed is not None:
                raise failed
            try:
                got = self._blocks[url] = _own_blocks(self.captures[url] if type(url) is tuple else self.pages[url])
            except Exception as exc:
                self._failed[url] = exc
                raise
        return got

    def prepare(self) -> "SiteBlocks":
        if self._prepared:
            return self
        self._prepared = True
        for url in sorted(self.pages):
            self.prepare_page(url)
        return self

    def prepare_page(self, url: str) -> None:
        """One page's part of `prepare` (shard_links does it in its visit of the page)."""
        if url not in self._blocks and url not in self._failed and url not in self.own_ms:
            start = time.thread_time()
            try:
                self.of(url)
            except Exception:
                pass            # raised again in that page's own blocks stage
            self.own_ms[url] = _ms_since(start)

    def site_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted distinct text keys, pages of the shard showing each).

        Pages that show exactly the same block texts (one page under two URLs: tracking
        parameters, session ids, a print view of the same blocks) count as one page, so a
        copy never makes its original's text look repeated across the site."""
        if self._site_counts is None:
            self.prepare()
            distinct: dict = {}
            of_url = {}         # page → its key set's place in per_page
            for url in sorted(self.pages):
                if url not in self._failed:
                    keys = self._distinct_keys(url)
                    of_url[url] = distinct.setdefault(keys.tobytes(), (len(distinct), keys))[0]
            per_page = [keys for _, keys in distinct.values()]
            self._distinct_pages = len(per_page)
            keys = np.concatenate(per_page) if per_page else np.zeros(0, dtype=np.int64)
            values, inverse, counts = distinct_inverse(keys, counts=True)
            self._site_counts = values, counts
            # Each page's own distinct keys with their site counts: a key page looks its texts up
            # among its own few keys, not among the shard's (thousands: a cache miss a step).
            shown = counts[inverse]
            bounds = np.cumsum([0] + [k.size for k in per_page]).tolist()
            self._page_counts = {url: shown[bounds[k]:bounds[k + 1]] for url, k in of_url.items()}
        return self._site_counts

    def _own_counts(self, url) -> tuple[np.ndarray, np.ndarray]:
        """(sorted keys, their site counts) to look `url`'s block texts up in: its own distinct
        keys when the site counts hold them, else the shard's (a further capture)."""
        distinct, counts = self.site_counts()
        mine = self._page_counts.get(url) if type(url) is str else None
        return (distinct, counts) if mine is None else (self._distinct_keys(url), mine)

    def forget(self, url: str) -> None:
        """Drop the page's own blocks and texts once its row is made: later key pages read
        only its distinct text keys, kept. (Held for the whole shard, every page's block texts
        were 20 MB of docs.python.org's 200 pages in docsites-dev.) A second capture of the
        URL computes them again."""
        if type(url) is tuple:       # a further capture: nothing compares with it
            for held in (self._blocks, self._distinct, self.captures, self._failed):
                held.pop(url, None)
            return
        if url in self._blocks:
            self._distinct_keys(url)
            del self._blocks[url]

    def _distinct_keys(self, url: str) -> np.ndarray:
        return self._keys_and_words(url)[0]

    def _keys_and_words(self, url: str) -> tuple:
        """(the page's distinct block text keys, sorted; the words of its blocks with each;
        their total, a float)."""
        got = self._distinct.get(url)
        if got is None:
            own = self.of(url)
            keys, inverse = distinct_inverse(own.keys)
            words = np.bincount(inverse.ravel(), weights=own.blocks.words, minlength=keys.size)
            got = self._distinct[url] = (keys, words, float(words.sum()))
        return got

    def shared_word_share(self, url: str, other: str) -> float:
        """The share of `url`'s block words whose block text `other` shows too."""
        keys, words, total = self._keys_and_words(url)
        if total == 0:
            return 0.0
        theirs = self._distinct_keys(other)
        if theirs.size == 0:
            return 0.0
        return float(_shared_words(keys, words, theirs).sum()) / total

    def near_duplicates(self, url: str, candidates, share: float) -> list:
        """The candidates that are near duplicates of `url`: each shows at least `share` of the
        other's block words (both ways, so a page that merely contains the other is not one)."""
        out = []
        for other in candidates:
            if other in self._failed or url in self._failed:
                continue
            if self.shared_word_share(url, other) >= share and self.shared_word_share(other, url) >= share:
                out.append(other)
        return out

    def signals(self, url, template: TemplateResult, selection: CandidateSelection,
                exclude: frozenset = frozenset()) -> SiteSignals:
        """The site signals of a key page's blocks; the pages in `exclude` (its duplicates,
        process_site) are left out of the site's counts as if the shard did not hold them."""
        own = self.of(url).keys
        candidates = list(selection.candidates)
        # A candidate whose blocks failed (its own row says so) shows nothing known.
        known = [self._distinct_keys(other) for other in candidates if other not in self._failed]
        distinct, counts = self._own_counts(url)
        left_out = self._left_out(url, exclude)
        others = max(self._distinct_pages - 1 - len(left_out), 1)
        on_candidates, site_share = _text_signals(own, known, distinct, counts, left_out, others)
        return SiteSignals(occurrences=template.occurrences, candidates=len(candidates),
                           method=selection.method, cs_size=int(selection.cs_size or 0),
                           site_pages=len(self.pages),
                           text_on_candidates=on_candidates, text_site_share=site_share)


    def _left_out(self, url, exclude) -> list:
        """The distinct key sets the site counts hold for the pages in `exclude`: each once,
        and none that is the key page's own (copies count once, site_counts)."""
        if not exclude:
            return []
        seen = {self._distinct_keys(url).tobytes()}
        out = []
        for other in sorted(exclude):
            if other in self.pages and other not in self._failed:
                keys = self._distinct_keys(other)
                if keys.tobytes() not in seen:
                    seen.add(keys.tobytes())
                    out.append(keys)
        return out


def _text_signals(own: np.ndarray, known: list, distinct: np.ndarray, counts: np.ndarray, left_out: list,
                  others: int, compiled: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(text_on_candidates, text_site_share) of SiteBlocks.signals: per own block key, the
    share of the `known` candidates' distinct key arrays holding it, and its count among the
    shard's distinct pages (`distinct`, `counts`) less the `left_out` ones', one less (the page
    itself) over `others`. Compiled (transforms/_site.c `text_signals`: a dozen numpy calls on
    a few hundred keys were most of its cost) unless SITESTRIP_FEATURES=python or `compiled`
    is False; _signals_python is the reference."""
    if (tree_module._COMPILED if compiled is None else compiled) and tree_module._site_compiled is not None:
        on_candidates, site_share = np.empty(own.size), np.empty(own.size)
        tree_module._site_compiled.text_signals(
            np.ascontiguousarray(own, dtype=np.int64), [np.ascontiguousarray(k, dtype=np.int64) for k in known],
            np.ascontiguousarray(distinct, dtype=np.int64), np.ascontiguousarray(counts, dtype=np.int64),
            [np.ascontiguousarray(k, dtype=np.int64) for k in left_out], len(known), others,
            on_candidates, site_share)
        return on_candidates, site_share
    return _signals_python(own, known, distinct, counts, left_out, others)


def _signals_python(own: np.ndarray, known: list, distinct: np.ndarray, counts: np.ndarray, left_out: list,
                    others: int) -> tuple[np.ndarray, np.ndarray]:
    """_text_signals with numpy: each candidate's distinct keys once in one sorted pool,
    counted by two binary searches (one np.isin per candidate did the same)."""
    pool = np.sort(np.concatenate(known)) if known else np.zeros(0, dtype=np.int64)
    on_candidates = (np.searchsorted(pool, own, "right") - np.searchsorted(pool, own, "left")).astype(np.float64)
    shown = np.zeros(own.size)
    if distinct.size:
        where = np.minimum(np.searchsorted(distinct, own), distinct.size - 1)
        shown = np.where(distinct[where] == own, counts[where], 0)
    if left_out:
        pool = np.sort(np.concatenate(left_out))
        shown = np.maximum(shown - (np.searchsorted(pool, own, "right") - np.searchsorted(pool, own, "left")), 0)
    return on_candidates / max(len(known), 1), np.maximum(shown - 1, 0) / others


def _shared_words(keys: np.ndarray, words: np.ndarray, theirs: np.ndarray,
                  compiled: bool | None = None) -> np.ndarray:
    """The `words` of the `keys` that `theirs` holds, in order (both key arrays sorted and
    distinct: np.unique). Compiled (transforms/_site.c `shared_words`) unless
    SITESTRIP_FEATURES=python or `compiled` is False; _shared_words_python is the reference.
    Either way the caller sums a contiguous copy of the same values in the same order, so the
    sums are equal to the bit."""
    if (tree_module._COMPILED if compiled is None else compiled) and tree_module._site_compiled is not None:
        out = np.empty(keys.size)
        k = tree_module._site_compiled.shared_words(np.ascontiguousarray(keys, dtype=np.int64),
                                                    np.ascontiguousarray(words, dtype=np.float64),
                                                    np.ascontiguousarray(theirs, dtype=np.int64), out)
        return out[:k]
    return _shared_words_python(keys, words, theirs)


def _shared_words_python(keys: np.ndarray, words: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """_shared_words with numpy: a binary search finds the shared keys, the mask np.isin gives."""
    if theirs.size == 0:
        return words[:0]
    at = np.minimum(np.searchsorted(theirs, keys), theirs.size - 1)
    return words[theirs[at] == keys]


@dataclass
class PageAnalysis:
    """The per-node results a pages row is made of; transforms/explain.py shows them."""
    candidate_method: str
    main: np.ndarray                                # main-content node mask
    menu: Menu | None
    timing: dict
    template: TemplateResult | None = None          # None for page_only
    for_template: CandidateSelection | None = None  # None when no candidate search ran
    for_conex: CandidateSelection | None = None
    # Block classification (main_content.method learned | ceml), else None.
    blocks: PageBlocks | None = None
    features: np.ndarray | None = None              # float32[blocks, features]
    proba: np.ndarray | None = None                 # content probability per block
    selected: np.ndarray | None = None              # bool per block: main content
    threshold: float | None = None
    # Site-level menus (design §12): this page's menu roots among its template nodes.
    menu_proposal: MenuProposal | None = None
    page_type: str | None = None                    # the page type model's (learned), else None
    page_type_score: float | None = None
    notes: list = field(default_factory=list)       # what the row's notes add (safety nets)


def site_context(site: str, records: Iterable[PageRecord], config=None, stored: Sequence[StoredPage] = ()):
    """(records in (url, file, offset) order, first capture per URL, SiteLinks or None for one page).

    With a `config` whose clusters are enabled, the SiteLinks carry the shard's template
    clusters (design §11), which the candidate search fills from and the rows report.
    `stored` pages (the state of earlier runs, transforms/state.py) join the pages as
    candidates (a page of the run wins over a stored copy of its URL), and the stored
    representatives seed the clustering."""
    ordered, pages = shard_pages(records, stored)
    return ordered, pages, shard_links(site, pages, config, stored)


def capture_order(record: PageRecord) -> tuple:
    """Later is newer: WARC-Date, then the record's place in the input."""
    return record.fetch_date or "", record.warc_file, record.warc_offset, record.warc_record_id or ""


def shard_pages(records: Iterable[PageRecord], stored: Sequence[StoredPage] = ()) -> tuple[list, dict]:
    """(records in (url, file, offset) order, the newest capture per URL then stored pages by
    URL): a URL captured twice is one page of the site's link graph and a candidate once, as
    its newest capture; every capture is still a key page of its own (capture_key)."""
    ordered = sorted(records, key=lambda r: (r.url, r.warc_file, r.warc_offset))
    newest: dict = {}
    for record in ordered:
        if record.url not in newest or capture_order(record) > capture_order(newest[record.url]):
            newest[record.url] = record
    pages: dict = {}
    for record in ordered:
        if newest[record.url] is record:
            pages[record.url] = record.page
    for page in sorted(stored, key=lambda s: s.url):
        pages.setdefault(page.url, page.page)
    return ordered, pages


def shard_links(site: str, pages: dict, config=None, stored: Sequence[StoredPage] = (),
                site_blocks: SiteBlocks | None = None):
    """site_context's SiteLinks (None for one page); with `site_blocks`, every page's blocks
    too (SiteBlocks.prepare).

    What the shard needs of all of its pages (links, cluster signatures, blocks) is taken in
    one visit per page: the shard's pages are unpacked from their blobs when read and only a
    bounded number kept so (page.UNPACKED), so a loop per need unpacked most pages once per
    loop. The results do not depend on the order of the visits."""
    many = len(pages) > 1
    clustered = many and config is not None and config.clusters.enabled
    key_links, signatures = {}, {}
    # Backwards: the key pages are analysed forwards next, and start on the pages still unpacked.
    for url in sorted(pages, reverse=True):
        page = pages[url]
        if many and in_site(url, site):
            key_links[url] = page_key_links(page, url, site)
        if clustered:
            signatures[url] = page_signature(page, config.clusters.path_ids)
        if site_blocks is not None:
            site_blocks.prepare_page(url)
    if site_blocks is not None:
        site_blocks.prepare()          # marks it prepared; every page is done
    if not many:
        return None
    links = site_links(pages, site, key_links)
    if clustered:
        seeds = [s.url for s in sorted(stored, key=lambda s: s.url) if s.representative]
        links.clusters = cluster_signatures(site, {url: signatures[url] for url in pages}, config.clusters, seeds)
        if config.clusters.fill_candidates:
            links.cluster_fill = ClusterCandidates(links.clusters, config.clusters.pool,
                                                  config.clusters.fill_order)
    return links


def _select(record: PageRecord, page: CompactPage, links, params) -> CandidateSelection:
    if links.cluster_fill is None:
        return select_candidates(record.url, page, links, params)
    return select_candidates(record.url, page, links, params, links.cluster_fill.fill_for(record.url))


def capture_key(record: PageRecord, pages: dict):
    """How the shard's per-page structures name this record: its URL when it is the capture
    that stands for the URL in `pages`, else (url, WARC file, offset), so that a further
    capture is analysed with its own arrays, never with those of the URL's other capture."""
    return record.url if pages.get(record.url) is record.page else (record.url, record.warc_file, record.warc_offset)


def analyse_page(record: PageRecord, pages: dict, links, config, site_blocks: SiteBlocks | None = None,
                 model=None, duplicates: frozenset = frozenset()) -> PageAnalysis:
    """Candidates, TemEx/HybEx, main content and MenEx of one key page (design §4–§8, §10).

    With no other page of the site (`links` None) or no comparison page found,
    the page-level methods run instead (`page_only`). Main content comes from
    `main_content.method`: the block classifier (`learned`, `ceml`; design §10)
    with `model`, or site/page ConEx (`conex`). A block method with `model`
    None computes the blocks and their features but selects nothing (training).
    """
    page = record.page
    key = capture_key(record, pages)
    blocks_wanted = config.main_content.method != "conex"
    own_ms = 0.0
    if blocks_wanted:
        # Every page's blocks, before this page's budget starts; this page's own blocks,
        # computed with the shard's, are its work: in its row and its budget.
        site_blocks = (site_blocks or SiteBlocks(pages)).prepare()
        if type(key) is tuple:
            site_blocks.add_capture(key, page)
        own_ms = site_blocks.own_ms.get(key, 0.0)
    # Read at length from here on: the last of the shard's unpacked pages to be dropped.
    UNPACKED.touch(page)
    budget = _Budget(config.site.page_budget_ms, spent_ms=own_ms)
    timing = dict(record.timing_ms)
    dropped = []           # near-duplicate candidates left out of the template vote
    if links is not None:
        with _Stage(timing, "candidates", budget):
            for_template = _select(record, page, links, config.candidates.for_template())
            for_conex = None if blocks_wanted else \
                _select(record, page, links, config.candidates.for_conex())
            if blocks_wanted and for_template.candidates:
                if config.main_content.near_duplicate_share > 0:
                    dropped = site_blocks.near_duplicates(key, for_template.candidates,
                                                          config.main_content.near_duplicate_share)
                dropped += [url for url in for_template.candidates if url in duplicates and url not in dropped]
                if dropped:
                    for_template = _without(for_template, dropped)
        if for_template.method != "page_only":
            with _Stage(timing, "template", budget) as check:
                template = detect_template(page, [pages[u] for u in for_template.candidates],
                                           config.template_etdm, config.template, config.page_conex,
                                           check=check)
            timing["etdm"] = template.etdm_ms
            menu, menu_scores_of_page = _menu(record, config.menex, timing, budget)
            analysis = PageAnalysis(candidate_method=for_template.method, main=np.zeros(page.size, dtype=bool),
                                    menu=menu, timing=timing, template=template,
                                    for_template=for_template, for_conex=for_conex or for_template,
                                    notes=_dropped_notes(dropped))
            if config.site_menus.enabled:
                with _Stage(timing, "menex", budget):
                    analysis.menu_proposal = propose_menus(page, template.template, config.menex,
                                                           config.site_menus.min_anchor_share,
                                                           scores=menu_scores_of_page)
            if blocks_wanted:
                with _Stage(timing, "blocks", budget):
                    timing["blocks"] = own_ms
                    signals = site_blocks.signals(key, template, for_template, duplicates)
                _classify(record, analysis, site_blocks.of(key), signals, config, model, budget)
                return analysis
            with _Stage(timing, "site_conex", budget) as check:
                main, conex_etdm_ms = site_main_content(page, [pages[u] for u in for_conex.candidates],
                                                        config.site_conex_etdm, config.site_conex,
                                                        check=check)
            analysis.main = drop_link_blocks(page, main, config.link_blocks)
            analysis.candidate_method = for_conex.method
            timing["etdm"] += conex_etdm_ms
            return analysis
    # The row reports only the stages that produced it: a fruitless search is not timed.
    timing = dict(record.timing_ms)
    menu, _ = _menu(record, config.menex, timing, budget)
    analysis = PageAnalysis(candidate_method="page_only", main=np.zeros(page.size, dtype=bool), menu=menu,
                            timing=timing, notes=_dropped_notes(dropped))
    if blocks_wanted:
        with _Stage(timing, "blocks", budget):
            timing["blocks"] = own_ms
            own = site_blocks.of(key) if key in site_blocks.pages or key in site_blocks.captures \
                else _own_blocks(page)
        _classify(record, analysis, own, None, config, model, budget)
        return analysis
    with _Stage(timing, "page_conex", budget):
        analysis.main = drop_link_blocks(page, main_content(page, config.page_conex), config.link_blocks)
    return analysis


def _dropped_notes(dropped: list) -> list:
    return [f"near-duplicate candidate pages left out: {len(dropped)}"] if dropped else []


def _without(selection: CandidateSelection, dropped: list) -> CandidateSelection:
    """The selection less the `dropped` candidates; page_only when none is left."""
    dropped = set(dropped)
    keep = [i for i, url in enumerate(selection.candidates) if url not in dropped]
    if not keep:
        return CandidateSelection("page_only", [], 0, selection.pages_loaded, [])
    sources = [selection.sources[i] for i in keep] if selection.sources else []
    return dataclasses.replace(selection, candidates=[selection.candidates[i] for i in keep], sources=sources)


def _own_blocks(page: CompactPage) -> PageBlocks:
    blocks = page_blocks(page)
    texts = block_texts(page, blocks)
    return PageBlocks(blocks, texts, text_keys(texts))


def _classify(record: PageRecord, analysis: PageAnalysis, own: PageBlocks, signals, config, model,
              budget: _Budget) -> None:
    """Block features and, with a model, the page type and main-content blocks of one page
    (design §10, docs/algorithms.md)."""
    page = record.page
    with _Stage(analysis.timing, "page_conex", budget):
        conex_main, conex_features = main_content_and_features(page, config.page_conex)
    menu_node = analysis.menu.node if analysis.menu else None
    with _Stage(analysis.timing, "blocks", budget):
        analysis.blocks = own
        analysis.features = block_features(
            page, own.blocks, own.texts, conex_main=conex_main, menu_node=menu_node, site=signals,
            conex_features=conex_features)
    if model is None:
        return
    with _Stage(analysis.timing, "classify", budget):
        result = classify_page(model, page, record.url, own.blocks, own.texts, analysis.features,
                               config.main_content)
        fallback = _site_fallback(analysis, result, signals, config)
        if fallback:
            # The site's signals said everything is template or nothing is content: the page is
            # judged as a page of its own, as a single-page site is.
            features = without_site(analysis.features)
            alone = classify_page(model, page, record.url, own.blocks, own.texts, features, config.main_content)
            if alone.selected.any():
                analysis.features, result = features, alone
                analysis.notes.append(f"main content judged without site features: {fallback}")
        analysis.proba, analysis.selected, analysis.threshold = result.proba, result.selected, result.threshold
        analysis.page_type = result.page_type
        if result.page_type_proba is not None and result.page_type in PAGE_TYPES:
            analysis.page_type_score = float(result.page_type_proba[PAGE_TYPES.index(result.page_type)])
        # The main-content node set: the selected blocks' text nodes, and every element whose
        # text is all in them (what a node-level view or metric compares).
        text_main = own.blocks.node_mask(page, result.selected)
        text_total = text_nodes_below(page)
        analysis.main = text_main | ((text_total > 0) & (subtree_sum(page, text_main) == text_total))


def _site_fallback(analysis: PageAnalysis, result, signals, config) -> str | None:
    """Why the page should be judged without its site (None: it should not): no block of a
    page with text was classified main, or the template covers nearly all of the page (two
    near-identical pages make each other's content template)."""
    if signals is None or not config.main_content.site_fallback or result.proba.size == 0:
        return None
    if not result.selected.any():
        return "no block classified as main content with them"
    share = analysis.template.share if analysis.template is not None else None
    if share is not None and share >= config.main_content.fallback_template_share:
        return f"template share {share:.2f}"
    return None


def _main_columns(page: CompactPage, analysis: PageAnalysis, output: OutputParams) -> dict:
    line_starts = None
    if analysis.selected is not None:
        own = analysis.blocks
        main = {"main_text": render_blocks(own.texts, analysis.selected),
                "words_main": int(own.blocks.words[analysis.selected].sum())}
        line_starts = own.blocks.first_node()
    else:
        main = {"main_text": text_of(page, analysis.main), "words_main": words_in(page, analysis.main)}
    main["page_type"], main["page_type_score"] = analysis.page_type, analysis.page_type_score
    # From the same node set as main_text, lines where it has lines (transforms/output.py).
    with _Stage(analysis.timing, "markdown"):
        main["main_markdown"] = main_markdown(page, analysis.main, output, line_starts)
    with _Stage(analysis.timing, "language"):
        main["language"], main["language_score"] = main_language(main["main_text"], output)
    return main


def _template_cluster(record: PageRecord, links) -> str | None:
    clusters = links.clusters if links is not None else None
    return clusters.id_of(record.url) if clusters is not None and record.url in clusters.cluster_of else None


def _page_only_row(record: PageRecord, analysis: PageAnalysis, output: OutputParams,
                   cluster: str | None = None, menu_columns: bool = True) -> dict:
    page = record.page
    menu, timing = analysis.menu, analysis.timing
    menu_mask = subtree_mask(page, [menu.node]) if menu else np.zeros(page.size, dtype=bool)
    return _finish(record, timing, menu, menu_columns, **_main_columns(page, analysis, output),
                   nontemplate_text=text_of(page, ~menu_mask),
                   candidate_method="page_only", candidate_urls=None, candidate_sources=None, cs_size=None,
                   pages_loaded=None, template_share=None, template_candidate_urls=None,
                   template_cluster=cluster, notes=list(analysis.notes))


def _site_row(record: PageRecord, links, analysis: PageAnalysis, output: OutputParams,
              menu_columns: bool = True) -> dict:
    page = record.page
    cluster = _template_cluster(record, links)
    if analysis.candidate_method == "page_only":
        return _page_only_row(record, analysis, output, cluster, menu_columns)
    menu, timing, template = analysis.menu, analysis.timing, analysis.template
    for_template, for_conex = analysis.for_template, analysis.for_conex
    main = _main_columns(page, analysis, output)
    notes = list(analysis.notes) + ([] if main["main_text"] else
                                    ["no main content: the page maps entirely onto its candidate pages"
                                     if analysis.selected is None else
                                     "no main content: no block classified as main content"])
    return _finish(record, timing, menu, menu_columns, **main,
                   nontemplate_text=text_of(page, template.nontemplate),
                   candidate_method=for_conex.method, candidate_urls=for_conex.candidates,
                   candidate_sources=for_conex.sources, cs_size=for_conex.cs_size, pages_loaded=for_conex.pages_loaded,
                   template_share=template.share,
                   template_candidate_urls=for_template.candidates, template_cluster=cluster,
                   notes=notes)


def _row_url(record: PageRecord) -> str:
    """The URL rows name a page by: its WARC-Target-URI, which joins back to the archive and
    its index; the normalized URL for a record made without one (tests, tools)."""
    return record.url if record.target_uri is None else record.target_uri


def _provenance(record: PageRecord) -> dict:
    return {
        "url": _row_url(record),
        "url_normalized": record.url, "site": record.site, "warc_file": record.warc_file,
        "warc_offset": record.warc_offset, "warc_record_id": record.warc_record_id,
        "fetch_date": record.fetch_date, "content_type": record.content_type,
        "charset": record.charset, "truncated": record.truncated, "title": record.page.title,
        "html_bytes": record.page.html_bytes, **declared_columns(record.page),
    }


def error_row(*, url, warc_file, warc_offset, stage, error_class, message) -> dict:
    return {"url": url, "warc_file": warc_file, "warc_offset": warc_offset, "stage": stage,
            "error_class": error_class, "message": message}


def process_site(site: str, records: Iterable[PageRecord], config, model=None,
                 shard: int = 0, stored: Sequence[StoredPage] = (),
                 state: StateParams | None = None, packed_texts: bool = False) -> Iterator[tuple[str, dict]]:
    """Rows for one site shard: ("pages", row) or ("errors", row), one per record, each pages
    row followed, with output.links, by ("links", PageLinks): its links (transforms/outlinks.py);
    then one ("sites", row) per template cluster of the shard (design §11) when clusters are
    enabled, and with `state` bounds, ("state", StoredPage) for the shard's new state.

    Records are handled in (url, file, offset) order so output never depends
    on shuffle order. A URL captured twice is looked up as its first capture.
    A failure stays with its page; the rest of the site goes on. `stored` pages of
    earlier runs are candidates only: rows are written for `records` alone. With
    `packed_texts`, a pages row comes with its long texts still packed as the shard held them
    (compression.PACKED_TEXTS; those columns None), for a writer that unpacks them itself
    (pipeline/parts.py).
    """
    # The URL caches hold the previous shard's URLs, which this one does not share: a worker
    # then holds one shard's entries, not a long run's full caches.
    forget_site_urls()
    forget_directories()
    records = list(records)
    stored_fingerprints = [s for s in stored if isinstance(s, StoredFingerprint)]
    stored = [s for s in stored if not isinstance(s, StoredFingerprint)]
    ordered, pages = shard_pages(records, stored)
    from_state = {s.url for s in stored} - {r.url for r in records}
    site_blocks = None
    if config.main_content.method != "conex":
        site_blocks = SiteBlocks(pages)
        model = model if model is not None else load_main_content_model(config.main_content)
    links = shard_links(site, pages, config, stored, site_blocks)
    # Per row, its page-level menu while its menu columns wait for the site-level menus
    # (which replace them on most pages of a site: their links are then never read). A lone
    # page (`links` None) is analysed page-only by the same calls.
    page_rows, page_menus, row_pages, row_records, proposals = [], [], [], [], {}
    duplicates = config.duplicates if config.duplicates.enabled else None
    fingerprints = []
    page_outlinks = [] if config.output.links else None    # per row: its links (transforms/outlinks.py)
    # The links to the shard's pages are marked as each page's links are made, from their URLs
    # before they are packed; the shard's pages rows are at these URLs unless a page fails.
    record_urls = frozenset(r.url for r in records) if page_outlinks is not None else None

    def analysed(record, left_out=frozenset()):
        key = capture_key(record, pages)
        analysis = analyse_page(record, pages, links, config, site_blocks, model, left_out)
        held_links = _page_outlinks(record, analysis, record_urls) if page_outlinks is not None else None
        row = _site_row(record, links, analysis, config.output, menu_columns=False)
        fp = None
        if duplicates is not None:
            with _Stage(row["timing_ms"], "duplicates"):
                fp = fingerprint(row, duplicates)
            row["timing_ms"]["total"] += row["timing_ms"]["duplicates"]
        if site_blocks is not None:
            site_blocks.forget(key)
        # Its subtree totals served its own stages; as a candidate it needs none of them.
        record.page.forget_derived()
        if analysis.menu_proposal is not None:
            proposals[key] = analysis.menu_proposal
        return held_row(row), analysis.menu, (key, record.page), fp, held_links

    for record in ordered:
        try:
            row, menu, key_page, fp, held_links = analysed(record)
            page_rows.append(row)
            page_menus.append(menu)
            row_pages.append(key_page)
            row_records.append(record)
            fingerprints.append(fp)
            if page_outlinks is not None:
                page_outlinks.append(held_links)
        except StageError as exc:
            yield "errors", error_row(url=_row_url(record), warc_file=record.warc_file,
                                      warc_offset=record.warc_offset, stage=exc.stage,
                                      error_class=exc.error_class, message=exc.message)
        except Exception as exc:  # outside any named stage (row assembly): still one row, never a crash
            yield "errors", error_row(url=_row_url(record), warc_file=record.warc_file,
                                      warc_offset=record.warc_offset, stage="site",
                                      error_class=type(exc).__name__, message=str(exc)[:500])
    # The shard's duplicates and the CPU ms they took, while no page is judged again (which
    # changes its fingerprint): _mark_duplicates' own search would find the same.
    found = None
    if duplicates is not None and site_blocks is not None and links is not None:
        # A page with duplicates in the shard is judged again with them left out of its
        # candidates and of the site's counts: a copy shows all of its text, which made that
        # text look like the site's (docs/algorithms.md "Duplicates").
        earlier = [s.fingerprint for s in stored_fingerprints]
        start = time.thread_time()
        found = find_duplicates(fingerprints + earlier, duplicates), _ms_since(start)
        for k, left_out in duplicate_mates(found[0], fingerprints + earlier, len(fingerprints)).items():
            left_out = frozenset(url for url in left_out if url in pages)
            if not left_out:
                continue
            try:
                row, menu, key_page, fp, held_links = analysed(row_records[k], left_out)
            except Exception:       # judged once already: that row stands
                continue
            if page_outlinks is not None:
                page_outlinks[k] = held_links
            row["notes"] = row["notes"] + [f"judged again with its duplicates left out of the site: {len(left_out)}"]
            # The first judgement is CPU the duplicates cost this page.
            first = page_rows[k]["timing_ms"]["total"]
            row["timing_ms"]["duplicates"] += first
            row["timing_ms"]["total"] += first
            page_rows[k], page_menus[k], row_pages[k], fingerprints[k] = row, menu, key_page, fp
            found = None
    on_menu = None if page_outlinks is None else partial(_site_menu_outlinks, page_rows, page_outlinks)
    replaced = _apply_site_menus(page_rows, row_pages, links, proposals, config, on_menu) if proposals else set()
    for k, (row, menu) in enumerate(zip(page_rows, page_menus)):
        if k not in replaced:
            _menu_columns(row, menu)
    if duplicates is not None:
        _mark_duplicates(page_rows, fingerprints, duplicates, [s.fingerprint for s in stored_fingerprints], found)
    # The shard's pages rows: a link to one of them is a link to a page of the input, known
    # here (the target join looks up the others: pipeline/graph.py).
    shard_urls = {row["url_normalized"] for row in page_rows} if page_outlinks is not None else None
    marked = shard_urls == record_urls
    for k, row in enumerate(page_rows):
        if state is not None:      # a run with --state: [] while its state holds nothing yet
            row["state_candidate_urls"] = [u for u in row["candidate_urls"] or () if u in from_state]
        if page_outlinks is not None:
            start = time.thread_time()
            page_outlinks[k].seal()
            if not marked:
                page_outlinks[k].set_local(shard_urls)
            _add_links_ms(row["timing_ms"], _ms_since(start))
        yield "pages", dict(row) if packed_texts else _released_row(row)
        if page_outlinks is not None:
            # One ("links", PageLinks) per pages row: its links, whose rows are made once the
            # run's URLs are known (pipeline/graph.py joins the targets; PageLinks.rows in one
            # process).
            yield "links", page_outlinks[k]
            # Not held here: set_local may keep its target URLs decoded until targets() reads them,
            # which a consumer that never calls it would otherwise leave held to the shard's end.
            page_outlinks[k] = None
    clusters = links.clusters if links is not None else None
    if clusters is not None:
        for row in cluster_rows(clusters, shard, page_rows,
                                run_urls={r.url for r in records} if stored else None):
            yield "sites", row
    if state is not None and pages:
        if clusters is None:       # one page: its own cluster, so a later run finds it
            clusters = cluster_pages(site, pages, config.clusters)
        for page in shard_state(site, clusters, pages, [r.url for r in records], stored, state):
            yield "state", page
        # The site's fingerprints: this run's pages and those of earlier runs (the site's step
        # merges the shards' copies and keeps the newest, transforms/state.py).
        for fp in fingerprints:
            yield "state", StoredFingerprint(site, dataclasses.replace(fp, stored=True))
        for stored_fp in stored_fingerprints:
            yield "state", stored_fp


# A shard's rows wait for its site menus (design §12) until its last page is analysed. Their
# long texts (main text, its Markdown, the non-template text: 98% of a row's bytes) wait packed
# together (compression.PackedTexts: their UTF-8 as one zstd frame, under the row's
# compression.PACKED_TEXTS, the columns None meanwhile). docsites-dev's rows hold 116 MB of
# str, 69 MB of UTF-8: 10.9 MB so, packed in 0.15 CPU s and unpacked in 0.06 s, where LZ4 per
# text held 31.6 MB for 0.13 s and 0.03 s and zstd per text 22.1 MB for 0.26 s and 0.12 s
# (the three texts share most of their lines, which one frame finds). Held as str they made a
# shard's memory grow with its pages times their text. The rows leave packed for a caller
# that writes them (`process_site(packed_texts=True)`: the graph, whose writer unpacks them
# straight into Arrow columns, pipeline/parts.py), so they are packed once on their way to the
# Parquet files; otherwise the yielded copy is whole again. The held row (cluster_rows reads
# it after) is not.
_HELD_TEXTS = ("main_text", "main_markdown", "nontemplate_text")


def held_row(row: dict) -> dict:
    """`row` with its long texts packed together, as a shard holds it and the graph's write
    shuffle carries it (the columns None, compression.PACKED_TEXTS set)."""
    texts = {name: row[name] for name in _HELD_TEXTS if isinstance(row.get(name), str)}
    if texts:
        for name in texts:
            row[name] = None
        row[compression.PACKED_TEXTS] = compression.PackedTexts.of(texts)
    return row


def _released_row(row: dict) -> dict:
    out = dict(row)
    packed = out.pop(compression.PACKED_TEXTS, None)
    if packed is not None:
        out.update(packed.texts())
    return out


def _mark_duplicates(page_rows: list, fingerprints: list, params, earlier: Sequence = (),
                     found: tuple | None = None) -> None:
    """The duplicate columns of a shard's rows (transforms/duplicates.py), with the
    fingerprints of earlier runs (`earlier`, --state) as pages they can duplicate; its
    clustering time is shared out over the rows. `found`: (find_duplicates of these
    fingerprints and `earlier`, the CPU ms it took) when the caller has it already."""
    start = time.thread_time()
    every = list(fingerprints) + list(earlier)
    if found is None:
        found = find_duplicates(every, params), 0.0
    found, spent = found
    share = (_ms_since(start) + spent) / max(len(page_rows), 1)
    for k, (row, fp) in enumerate(zip(page_rows, fingerprints)):
        row.update(duplicate_columns(fp, found.get(k), every))
        timing = row["timing_ms"]
        timing["duplicates"] += share
        timing["total"] += share


def _apply_site_menus(page_rows: list, row_pages: list, links, proposals: dict, config, on_menu=None) -> set:
    """design §12: each cluster's (or the shard's) menu key, then every page's menu from it.

    `row_pages` holds each row's (capture key, page); `proposals` is keyed by capture key,
    and only the capture that stands for its URL votes (capture_key). Rows whose page
    proposed no template menu keep page-level MenEx (with `own_links`, unless
    the page has its group's block; and then the menu rows hold each block's own links,
    sitemenus.own_links). Returns the indexes (in page_rows) of the rows whose menu columns
    it set. `on_menu(k, page, menu)`: told each such row's menu while its page is unpacked (the
    links dataset's menu region)."""
    own = config.site_menus.own_links
    voting = {key: proposal for key, proposal in proposals.items() if type(key) is str}
    if config.site_menus.scope == "cluster" and links.clusters is not None:
        group_of = links.clusters.cluster_of
    else:
        group_of = {row["url_normalized"]: 0 for row in page_rows} if own else {url: 0 for url in voting}
    chosen = choose_menu_keys(voting, group_of)
    replaced = set()
    # With `own_links`, each menu is read with the tree of its link-holding elements, and the
    # pages that carry one block (group, key) decide together which of its links are its own.
    by_block: dict = defaultdict(list)
    url_ids: dict = {}
    # Backwards: the pages analysed last are the ones still unpacked (page.UNPACKED).
    for k, row in reversed(list(enumerate(page_rows))):
        url = row["url_normalized"]
        capture, page = row_pages[k]
        proposal = proposals.get(capture)
        group = group_of.get(url)
        if proposal is None or proposal.nodes.size == 0:
            # A page that proposed no template menu keeps page-level MenEx; with `own_links`,
            # unless it has the block chosen for its group (its page-level menu may be a larger
            # block around it, its neighbours included).
            key = chosen.get(group) if own else None
            node = menu_node_by_key(page, key) if key is not None else None
            if node is None:
                continue
            menu = Menu(node, page)
        else:
            # The proposal carries its roots' menu keys, so a page's node keys (a hash per
            # node) are computed again only for a chosen key none of its roots has.
            menu, key = site_menu(page, proposal, chosen.get(group))
        replaced.add(k)
        if own:
            read = menu_links(page, menu.node, url_ids)
            by_block[(group, key)].append((k, read))
            items = read.links
        else:
            items = menu.links
        row["menu_links"] = [{"url": u, "text": t} for u, t in items]
        # A site menu is named by its block, not its links: a previous/next bar is one menu.
        row["menu_signature"] = f"{row['site']}:{key:016x}"
        if on_menu is not None:
            on_menu(k, page, menu)
    for members in by_block.values():
        for (k, read), kept in zip(members, own_links([read for _, read in members])):
            if kept is not None:
                page_rows[k]["menu_links"] = [{"url": read.links[i][0], "text": read.links[i][1]}
                                              for i in kept.tolist()]
    return replaced


def _page_outlinks(record: PageRecord, analysis: PageAnalysis, local_urls=None):
    """The page's links for the links dataset (transforms/outlinks.py), its menu region from
    its page-level menu until a site menu replaces it, the links to `local_urls` (the shard's
    pages) marked; timed as the row's "links" stage."""
    template = analysis.template.template if analysis.template is not None else None
    with _Stage(analysis.timing, "links"):
        return page_links(record.page, analysis.main, template, analysis.menu.node if analysis.menu else None,
                          source_url=record.url, row_url=_row_url(record), site=record.site,
                          warc_file=record.warc_file, warc_offset=record.warc_offset, local_urls=local_urls)


def _site_menu_outlinks(page_rows: list, page_outlinks: list, k: int, page: CompactPage, menu) -> None:
    """_apply_site_menus' on_menu: row k's links in its site menu are its menu links."""
    start = time.thread_time()
    page_outlinks[k].set_menu(page, menu.node)
    _add_links_ms(page_rows[k]["timing_ms"], _ms_since(start))


def _add_links_ms(timing: dict, spent: float) -> None:
    """CPU of the links dataset spent on a row after its stages were summed."""
    timing["links"] = (timing.get("links") or 0.0) + spent
    timing["total"] = (timing.get("total") or 0.0) + spent
