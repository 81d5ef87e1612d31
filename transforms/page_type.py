"""Page type (docs/algorithms.md "Page type"): what kind of page this is — an article, a
documentation page, a forum thread, a product, a listing, a collection or a service page —
predicted from one row of page features, so the block model can judge a block against the
kind of page it is on (a run of same-shaped reply containers is the content of a forum
thread and the comment tail of an article).

The features are aggregates the block features already hold (word-weighted shares of
block kinds, class/id roles, repetition, links), what the page declares (og:type, JSON-LD
@type, a publication date, an author), the URL's path, a few multilingual text cues
(prices, cart buttons, forum post furniture, dates) and what the site says (template
share). Nothing here walks the DOM beyond one tag count.

The model is a one-vs-rest set of gradient-boosted tree ensembles carried in the block
model's file (`payload.page_type`); `PageTypeModel` turns their raw scores into one
probability per type (each type's logistic probability, normalized to sum to 1).
"""
from __future__ import annotations

import math
import os
import re
from urllib.parse import urlsplit

import numpy as np

from sitestrip.transforms.model import EnsembleSet
from sitestrip.transforms.page import TAG_ID, CompactPage

try:
    # The text cues' counts in one pass over the text (transforms/_features.c count_strings, built
    # by `pip install`); str.count per cue string is the reference and runs where it is missing.
    from sitestrip.transforms import _features as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
try:
    # The tag counts and the weighted columns' matrix in one pass each (transforms/_model.c
    # tag_counts, finite_columns); numpy's bincount and take/astype/nan_to_num are the reference.
    from sitestrip.transforms import _model as _compiled_model
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled_model = None
# The switch of the block features' extension (SITESTRIP_FEATURES=python runs every reference).
_COMPILED = os.environ.get("SITESTRIP_FEATURES", "compiled") != "python"

PAGE_TYPES = ("article", "documentation", "forum", "product", "listing", "collection", "service")
# The column's value for a page without any text block: nothing to judge.
OTHER = "other"
PAGE_FEATURE_SET = "page-type-v1"

# URL path words per family: one feature each, word parts of the path's segments.
_URL_FAMILIES = (
    ("forum", ("forum", "forums", "thread", "threads", "topic", "topics", "t", "discussion", "discussions",
               "community", "questions", "question", "board", "boards", "viewtopic", "showthread", "posts")),
    ("product", ("product", "products", "p", "item", "items", "dp", "shop", "store", "buy", "sku", "artikel",
                 "produkt", "produkte")),
    ("listing", ("category", "categories", "tag", "tags", "c", "collections", "collection", "search", "list",
                 "archive", "archives", "page", "browse", "results", "kategorie", "index")),
    ("docs", ("docs", "doc", "documentation", "api", "reference", "manual", "guide", "guides", "tutorial",
              "tutorials", "wiki", "library", "howto", "handbook", "man", "learn")),
    ("article", ("blog", "news", "article", "articles", "story", "stories", "post", "opinion", "politics",
                 "sport", "sports", "world", "business", "magazin", "nachrichten", "artikel")),
    ("service", ("about", "contact", "services", "service", "pricing", "support", "help", "faq", "terms",
                 "privacy", "careers", "team", "company", "solutions", "kontakt", "leistungen", "impressum")),
)
_URL_WORD = re.compile(r"[a-z]+")
_DATE_PATH = re.compile(r"/(?:19|20)\d\d/(?:[01]?\d)(?:/|$)|/(?:19|20)\d\d-[01]\d-[0-3]\d")
_NUMERIC_SEGMENT = re.compile(r"/\d{3,}(?:[/.\-]|$)|[-_]\d{4,}(?:\.html?)?$")

# Declared types (og:type, JSON-LD @type) per family.
_DECLARED_FAMILIES = (
    ("article", ("article", "newsarticle", "blogposting", "reportagenewsarticle", "analysisnewsarticle",
                 "opinionnewsarticle", "scholarlyarticle", "techarticle", "posting", "liveblogposting")),
    ("product", ("product", "og:product", "productgroup", "offer", "aggregateoffer", "individualproduct",
                 "product.item")),
    ("forum", ("discussionforumposting", "qapage", "question", "answer", "comment", "socialmediaposting")),
    ("listing", ("itemlist", "collectionpage", "searchresultspage", "offercatalog")),
    ("service", ("service", "localbusiness", "organization", "professionalservice", "contactpage",
                 "aboutpage", "faqpage", "corporation", "store")),
    ("docs", ("techarticle", "apireference", "softwaresourcecode", "howto")),
    ("website", ("website", "webpage")),
)

# Text cues: occurrences of these strings in the page's short blocks (at most SHORT_BLOCK_WORDS
# words: the furniture of a page — buttons, labels, bylines, post headers, filters — where the
# cues live), lower-cased. Several languages: the web is not English only. Substring counts
# (str.count, no regular expression) keep the cost a small fraction of a millisecond a page.
SHORT_BLOCK_WORDS = 20
_CUES = (
    ("price", ("$", "€", "£", "¥", " usd", " eur", " gbp", " chf")),
    ("cart", ("add to cart", "add to bag", "add to basket", "wishlist", "warenkorb", "buy now", "in stock",
              "out of stock", "shipping", "lieferzeit", "auf lager", "quantity", "sku", "panier")),
    ("forum", ("reply", "replies", "quote", "joined", "posts:", "member", "registered", "antworten", "zitat",
               "beiträge", "mitglied", "thread", "upvote", "permalink", "reputation")),
    ("date", ("jan ", "feb ", "mar ", "apr ", "may ", "jun ", "jul ", "aug ", "sep ", "oct ", "nov ", "dec ",
              " ago", "januar", "märz", "dezember", " uhr")),
    ("byline", ("by ", "von ", "posted", "written by", "min read", "lesezeit", "author")),
    ("docs", ("parameter", "return", "argument", "function", "method", "class ", "example", "syntax",
              "default", "install")),
    ("service", ("contact us", "get a quote", "get in touch", "our services", "call us", "book ", "appointment",
                 "consultation", "request a", "kontakt", "termin", "angebot", "pricing", "plans", "clients")),
    ("listing", ("sort by", "filter", "showing ", "results", "view all", "load more", "next page", "sortieren",
                 "ergebnisse", "items")),
)
CUE_STRINGS = tuple(s for _, strings in _CUES for s in strings)
_CUE_STARTS = np.cumsum([0] + [len(strings) for _, strings in _CUES][:-1])
# (texts, words, family counts) of the last page whose block features counted its cues
# (keep_cue_counts). _short_cue_counts of those very objects returns the counts: held here,
# they cannot be freed and their identity taken by another list or array, and block texts
# and words are never changed once made.
_KEPT_CUES = None


def keep_cue_counts(texts: list, words: np.ndarray, counts: np.ndarray) -> None:
    """Keeps `counts` (int64 per CUE_STRINGS entry: their occurrences in the lower-cased texts of
    at most SHORT_BLOCK_WORDS words, as count_lowered counts them) as _short_cue_counts's of
    `texts` and `words`."""
    global _KEPT_CUES
    _KEPT_CUES = (texts, words, np.add.reduceat(counts, _CUE_STARTS).tolist())


def _cue_counts(short: str) -> list:
    """Occurrences of each _CUES family's strings in `short` (str.count's, summed per family)."""
    if _compiled is not None and _COMPILED:
        counts = np.empty(len(CUE_STRINGS), dtype=np.int64)
        _compiled.count_strings(short, CUE_STRINGS, counts)
        return [int(v) for v in np.add.reduceat(counts, _CUE_STARTS).tolist()]
    return [sum(short.count(s) for s in strings) for _, strings in _CUES]


def _short_cue_counts(texts: list, words: np.ndarray) -> list:
    """_cue_counts of the page's short blocks' texts, newline-joined and lower-cased."""
    kept = _KEPT_CUES
    if kept is not None and kept[0] is texts and kept[1] is words and _COMPILED:
        return list(kept[2])
    if _compiled is not None and _COMPILED and type(texts) is list:
        # Each text lowered and counted on its own in C, the joined text never built
        # (_features.c count_lowered says why the counts are the same).
        counts = np.empty(len(CUE_STRINGS), dtype=np.int64)
        _compiled.count_lowered(texts, np.flatnonzero(words <= SHORT_BLOCK_WORDS), CUE_STRINGS, counts)
        return np.add.reduceat(counts, _CUE_STARTS).tolist()
    short = "\n".join([t for t, k in zip(texts, (words <= SHORT_BLOCK_WORDS).tolist()) if k]).lower()
    return _cue_counts(short)


# Element counts per page (tag names), log-scaled.
_COUNTED_TAGS = ("article", "time", "form", "input", "img", "table", "pre", "code", "dl", "h1", "h2",
                 "h3", "li", "blockquote", "figure", "button", "select", "iframe", "address")
_COUNTED_IDS = np.array([TAG_ID[t] for t in _COUNTED_TAGS])

# Block-feature columns averaged over the page, each weighted by the block's words.
_WEIGHTED = ("link_char_share", "is_link", "is_desc_a", "digit_share", "sentences", "ends_with_punct",
             "commas_per_word", "same_shape_max_log", "same_shape_siblings_log", "in_page_conex",
             "in_menex_menu", "invisible", "is_sib_input", "normalized_top",
             "group_p", "group_li", "group_h", "group_pre", "group_td", "group_div", "group_figcaption",
             "near_item", "far_item", "near_comment", "far_comment", "far_content", "far_main", "near_meta",
             "far_related", "far_share", "near_caption", "far_code", "far_form", "far_aside", "far_nav",
             "far_footer", "far_title", "template_word_share", "text_site_share", "occ_mean")


def _names() -> tuple:
    names = ["words_log", "blocks_log", "mean_block_words_log", "max_block_words_log", "long_block_share",
             "title_words", "url_depth", "url_date", "url_numeric", "url_query", "url_html",
             "url_trailing_slash"]
    names += [f"url_{name}" for name, _ in _URL_FAMILIES]
    names += [f"declared_{name}" for name, _ in _DECLARED_FAMILIES]
    names += ["declared_published", "declared_author", "declared_description"]
    names += [f"cue_{name}_log" for name, _ in _CUES]
    names += [f"tags_{t}_log" for t in _COUNTED_TAGS]
    names += [f"w_{c}" for c in _WEIGHTED]
    names += ["repeated_word_share", "short_block_share", "region_share_max", "has_site", "site_pages_log"]
    return tuple(names)


PAGE_FEATURE_NAMES = _names()
# Bit k of a path word's entry: the word is one of _URL_FAMILIES[k]'s (one lookup per word of
# the path instead of a set intersection per family).
_URL_WORD_FAMILIES: dict = {}
for _k, (_, _family) in enumerate(_URL_FAMILIES):
    for _word in _family:
        _URL_WORD_FAMILIES[_word] = _URL_WORD_FAMILIES.get(_word, 0) | 1 << _k
# Tag ids past the counted ones share one bin; the threshold of "three or more alike" as
# numpy's float64 log1p, the value the comparison has always used.
_TAG_BINS = int(_COUNTED_IDS.max()) + 2
_THREE_ALIKE = np.log1p(2)
# Per tag id up to the last counted one: its entry of _COUNTED_IDS, -1 for a tag not counted.
_TAG_SLOT = np.full(int(_COUNTED_IDS.max()) + 1, -1, dtype=np.int64)
_TAG_SLOT[_COUNTED_IDS] = np.arange(_COUNTED_IDS.size)
# np.nan_to_num's value of a float32 infinity (site_pages_log's, _finite).
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _url_columns(url: str) -> list:
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = urlsplit("")
    path = parts.path.lower()
    segments = [s for s in path.split("/") if s]
    families = 0
    for word in _URL_WORD.findall(path):
        families |= _URL_WORD_FAMILIES.get(word, 0)
    out = [len(segments), bool(_DATE_PATH.search(path)), bool(_NUMERIC_SEGMENT.search(path)),
           bool(parts.query), path.endswith((".html", ".htm", ".php", ".asp", ".aspx")), path.endswith("/")]
    out += [bool(families >> k & 1) for k in range(len(_URL_FAMILIES))]
    return out


def _declared_columns(page: CompactPage) -> list:
    meta = page.meta or ()
    types = set((meta[5] or "").split()) if len(meta) > 5 else set()
    out = [bool(types.intersection(family)) for _, family in _DECLARED_FAMILIES]
    published, author, description = (meta[3], meta[4], meta[2]) if len(meta) > 4 else (None, None, None)
    return out + [published is not None, author is not None, description is not None]


_WEIGHTED_COLUMNS: dict = {}


def _weighted_columns(column: dict) -> np.ndarray:
    """The _WEIGHTED columns' indices in `column`, looked up once per column table."""
    got = _WEIGHTED_COLUMNS.get(id(column))
    if got is None or got[0] is not column:
        got = _WEIGHTED_COLUMNS[id(column)] = (column, np.array([column[c] for c in _WEIGHTED], dtype=np.intp))
    return got[1]


def page_type_features(page: CompactPage, url: str, texts: list, words: np.ndarray, X: np.ndarray,
                       column: dict) -> np.ndarray:
    """float32[len(PAGE_FEATURE_NAMES)]: one page's features. `texts`, `words`: its blocks' texts
    and words; `X`: its block features (transforms/features.py, `column` their index by name;
    the page-type columns are not read)."""
    w = np.asarray(words, dtype=np.float64)
    total = float(w.sum())
    n = len(texts)
    # The scalar head as a list, the array parts assigned as arrays: each value is the one the
    # list of Python and numpy scalars held, rounded to float32 once at the end as before.
    # Every logarithm of the head in one call (numpy's log1p of one value is its log1p of that
    # value in an array).
    # The words as given: the cue counts block_features kept are those of this very array.
    cues = _short_cue_counts(texts, words if type(words) is np.ndarray else w)
    logs = np.log1p([total, n, total / max(n, 1), float(w.max()) if n else 0.0] + cues)
    head = [*logs[:4].tolist(), float(w[w >= 40].sum()) / total if total else 0.0, len(page.title.split())]
    head += _url_columns(url)
    head += _declared_columns(page)
    head += logs[4:].tolist()
    row = np.zeros(len(PAGE_FEATURE_NAMES))
    i = len(head)
    row[:i] = head
    compiled = _compiled_model is not None and _COMPILED
    if compiled and page.tag.dtype == np.int32:
        tag_counts = np.empty(_COUNTED_IDS.size, dtype=np.int64)
        _compiled_model.tag_counts(np.ascontiguousarray(page.tag), _TAG_SLOT, tag_counts)
    else:
        # Text nodes and unknown tags (ids past the counted ones) fall in entries never read.
        tag_counts = np.bincount(np.minimum(page.tag, _TAG_BINS - 1), minlength=_TAG_BINS)[_COUNTED_IDS]
    row[i:i + _COUNTED_IDS.size] = np.log1p(tag_counts)
    i += _COUNTED_IDS.size
    if n:
        weights = w / total if total else np.zeros(n)
        columns = _weighted_columns(column)
        if compiled and X.dtype == np.float32 and X.flags.c_contiguous:
            values = np.empty((n, columns.size))
            _compiled_model.finite_columns(X, columns, values)
        else:
            values = _without_nan(X.take(columns, axis=1).astype(np.float64))
        row[i:i + len(_WEIGHTED)] = weights @ values
        i += len(_WEIGHTED)
        repeated = X[:, column["same_shape_max_log"]] >= _THREE_ALIKE     # three or more alike
        row[i:] = [float(weights[repeated].sum()), float(weights[w < 8].sum()),
                   float(np.fmax.reduce(X[:, column["region_share_1"]])),     # np.nanmax's reduction
                   float(X[0, column["has_site"]]), _finite(X[0, column["site_pages_log"]])]
    return row.astype(np.float32)


def _without_nan(values: np.ndarray) -> np.ndarray:
    """np.nan_to_num(values, copy=False, nan=0.0) of a float64 array, NaN zeroed by one masked
    copy (the infinities, which block features never hold, left to np.nan_to_num)."""
    np.copyto(values, 0.0, where=np.isnan(values))
    if np.isinf(values).any():
        return np.nan_to_num(values, copy=False, nan=0.0)
    return values


def _finite(value) -> float:
    """float(np.nan_to_num(value)) of one float32 value."""
    value = float(value)
    if math.isfinite(value):
        return value
    return 0.0 if math.isnan(value) else math.copysign(_FLOAT32_MAX, value)


class PageTypeModel:
    """One-vs-rest ensembles (transforms/model.py BlockModel, kind gbdt) over PAGE_FEATURE_NAMES,
    one per PAGE_TYPES entry, in that order."""

    def __init__(self, models: list):
        if len(models) != len(PAGE_TYPES):
            raise ValueError(f"page type model: {len(models)} ensembles for {len(PAGE_TYPES)} types")
        self.models = models
        self._set = EnsembleSet(models)

    def proba(self, features: np.ndarray) -> np.ndarray:
        """float64[pages, len(PAGE_TYPES)], rows summing to 1, for float32[pages, F] features."""
        features = np.atleast_2d(features)
        if features.shape[0] == 0:
            return np.zeros((0, len(PAGE_TYPES)))
        p = self._set.stacked(features)
        return p / np.maximum(p.sum(axis=1, keepdims=True), 1e-12)

    def row_proba(self, row: np.ndarray) -> np.ndarray:
        """proba(row[None, :])[0] of one page's float32[F] features: the same sum over the one
        row's types (a reduction over 7 contiguous values either way) and the same divisions."""
        p = self._set.stacked(row.reshape(1, -1))[0]
        return p / max(p.sum(), 1e-12)


def page_type_label(proba: np.ndarray, blocks: int) -> str:
    """The column's value: the most probable type, `other` for a page without text blocks."""
    if blocks == 0 or proba.size == 0:
        return OTHER
    return PAGE_TYPES[int(np.argmax(proba))]
