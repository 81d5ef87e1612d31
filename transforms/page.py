"""The compact page model (design §1, design "Dataflow").

A page is parsed once with lxml and flattened into numpy arrays in preorder;
no per-node Python object survives parsing, so the page is cheap to ship
through a shuffle and every algorithm works on arrays. Node 0 is BODY.

Subtrees are contiguous in preorder: the subtree of node i is the index range
[i, end[i]). Sums over subtrees are therefore differences of prefix sums, and
"is j a descendant of i" is `i < j < end[i]`; nothing needs recursion.
"""
from __future__ import annotations

import operator
import os
import re
import threading
import weakref
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Iterator

import numpy as np
from lxml import etree

from sitestrip.transforms import compression
from sitestrip.transforms.meta import EXTRA_TAGS, NO_EXTRAS, NodeExtras, node_extras, page_metadata
from sitestrip.transforms.status import PARSE_FAILURE
from sitestrip.transforms.tokens import count_words
from sitestrip.transforms.urls import _base_parts, resolve_link

try:
    # Parse flattening compiled (transforms/_flatten.c, built by `pip install`); `_flatten`
    # below is its reference and runs where the extension is missing.
    from sitestrip.transforms import _flatten as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
else:
    from sitestrip.transforms.tokens import _CJK_RANGES, _MARK_RANGES
    _compiled.set_token_ranges(_CJK_RANGES, _MARK_RANGES)

try:
    # libxml2's small blocks in chunks (transforms/_parse_heap.c, built by `pip install`).
    from sitestrip.transforms import _parse_heap
except ImportError:  # pragma: no cover - a source tree used without installing
    _parse_heap = None
_HEAP: list = []          # [whether installed], once use_parse_heap has run in this process
_HEAP_LOCK = threading.Lock()

# Whether parse_page flattens with the compiled walk when it is built (tests switch it off to
# run the reference); SITESTRIP_FLATTEN=python does the same for a whole process.
_COMPILED = os.environ.get("SITESTRIP_FLATTEN", "compiled") != "python"

# Tag vocabulary: ids are stable across pages and runs (ETDM compares tags of
# two pages). Index 0 is the text-node pseudo tag.
TEXT = 0
KNOWN_TAGS = (
    "#text", "body", "a", "abbr", "address", "area", "article", "aside", "audio", "b",
    "bdi", "bdo", "blockquote", "br", "button", "canvas", "caption", "center", "cite",
    "code", "col", "colgroup", "data", "datalist", "dd", "del", "details", "dfn",
    "dialog", "div", "dl", "dt", "em", "embed", "fieldset", "figcaption", "figure",
    "font", "footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "hgroup", "hr", "i", "iframe", "img", "input", "ins", "kbd", "label",
    "legend", "li", "main", "map", "mark", "menu", "meter", "nav", "object", "ol",
    "optgroup", "option", "output", "p", "param", "picture", "pre", "progress", "q",
    "rp", "rt", "ruby", "s", "samp", "search", "section", "select", "small", "source",
    "span", "strong", "sub", "summary", "sup", "svg", "table", "tbody", "td",
    "textarea", "tfoot", "th", "thead", "time", "tr", "track", "tt", "u", "ul", "var",
    "video", "wbr", "math", "big", "strike", "nobr", "marquee", "acronym", "applet",
    "basefont", "dir", "isindex", "listing", "xmp", "plaintext", "head", "html",
    "title", "meta", "link", "base", "noscript",
)
TAG_ID = {name: i for i, name in enumerate(KNOWN_TAGS)}
# Unknown tags (custom elements, "fb:like") get a stable id from a hash, kept
# clear of the known range so they never collide with a real HTML tag.
_UNKNOWN_TAG_BASE = 1 << 16


def tag_id(name: str) -> int:
    known = TAG_ID.get(name)
    if known is not None:
        return known
    return _UNKNOWN_TAG_BASE + _hash32(name) % ((1 << 31) - _UNKNOWN_TAG_BASE)


def tag_name(tid: int) -> str:
    return KNOWN_TAGS[tid] if 0 <= tid < len(KNOWN_TAGS) else "unknown"


def tag_ids(*names: str) -> np.ndarray:
    return np.array([TAG_ID[n] for n in names], dtype=np.int32)


def tag_table(*names: str) -> np.ndarray:
    """Bool per known tag id, True for `names` (known tags, not "#text"), and one False entry
    past them, where has_tag clips every unknown tag's id (those lie past the known ones)."""
    if "#text" in names:
        raise ValueError("tag_table is for element tags")
    table = np.zeros(len(KNOWN_TAGS) + 1, dtype=bool)
    table[[TAG_ID[n] for n in names]] = True
    return table


def has_tag(tags: np.ndarray, table: np.ndarray) -> np.ndarray:
    """np.isin(tags, the table's tag ids) in one lookup: the same mask for any tag array."""
    return np.take(table, tags, mode="clip")


# Dropped with their whole subtree before any algorithm runs (design §1): they
# hold no visible content. Their tail text is kept.
DROPPED_TAGS = frozenset({"script", "style", "template", "head", "title",
                          "meta", "link", "base"})
# Kept as leaves: the element is content, its inside is not text. design §1's
# list, with svg (whose internals design §1 drops).
LEAF_TAGS = frozenset({"svg", "iframe", "img", "video", "audio", "picture", "object", "embed"})
# Product extension (ParseRules.widget_leaves): form widgets, canvas and other
# embedded formats are leaves too. A select's option labels and a textarea's
# prefilled text are controls, not page text; canvas, math and applet hold
# fallback or non-prose markup.
WIDGET_LEAF_TAGS = frozenset({"canvas", "select", "textarea", "math", "applet"})
MEDIA_TAGS = tag_ids("img", "video", "audio", "picture", "object", "embed", "iframe",
                     "svg", "canvas")
# The block-level elements: the one table of them. Each is a block boundary: text before and
# after it is on different text lines (design §1; the `line` counter of CompactPage), which
# the text columns join with a newline. Derived from it: BLOCK_LEVEL (the elements that hold
# lines), design §10's blocks (transforms/blocks.py) and the elements whose link density is
# judged (transforms/link_blocks.py LINK_DENSITY_TAGS, a subset).
BLOCK_TAGS = frozenset({
    "p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "pre", "blockquote",
    "dd", "dt", "dl", "section", "article", "table", "ul", "ol", "br", "hr", "header",
    "footer", "nav", "aside", "main", "form", "fieldset", "figure", "figcaption",
    "address", "details", "summary", "caption", "td", "th", "center", "menu", "dir",
    "legend", "hgroup", "frameset", "body", "option", "textarea", "search", "dialog",
    "listing", "xmp", "plaintext",
})
# Block boundaries that hold no text.
LINE_BREAK_TAGS = frozenset({"br", "hr"})
# The block-level elements that hold text lines, as a tag_table: a block's owner when no
# instance holds its text (transforms/blocks.py) and a Markdown line's container.
BLOCK_LEVEL = tag_table(*sorted(BLOCK_TAGS - LINE_BREAK_TAGS))

# Preformatted elements (HTML's UA style sheet: white-space: pre / pre-wrap): their text
# is kept verbatim, line breaks and indentation included (ParseRules.browser_text).
PRE_TAGS = frozenset({"pre", "listing", "xmp", "plaintext", "textarea"})
# Raised and lowered text (F_RAISED).
RAISED_TAGS = frozenset({"sup", "sub"})
# The elements that title something (a section, a definition, a table, a figure): a link
# inside one whose text is only a mark is the title's permalink anchor (_is_permalink).
TITLE_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6", "dt", "caption", "figcaption"})

# Node flag bits.
F_LINK = 1          # an <a> element with an href
F_IN_LINK = 2       # inside an <a> element (any ancestor), for text and elements
F_NAV_HINT = 4      # MenEx "representative tag", product rule: a word part begins with nav/menu
F_COMMENT_HINT = 8  # id/class names a comment section (transforms/link_blocks.py)
F_NAV_WORD = 16     # ... design §2's rule: a word part is nav/menu (or role="navigation")
F_NAV_EXACT = 32    # ... the thesis's rule: <nav>, or a class token or the id is exactly nav/menu
# Text nodes only (transforms/text.py joins text with them, as a browser lays it out):
F_SPACE_BEFORE = 64  # whitespace separated this text from the text before it in the HTML
F_PRE = 128          # inside a PRE_TAGS element: the node's text is verbatim, not collapsed
# Elements only:
F_VOLATILE_ID = 256  # the id has a run of >= 3 digits (generated per page; design §11 path_ids "stable")
# The element itself says it is not shown: the `hidden` attribute, aria-hidden="true", an inline
# display:none or visibility:hidden (class words only hint at it: the `hidden` role hint).
F_HIDDEN = 1024
# Text nodes only: the first text of a <sup> or <sub> (outside PRE_TAGS). It is set apart from
# the text before it (transforms/text.py), and Markdown writes a superscript's as `^`.
F_RAISED = 512
# Every rule holds for <nav>; each rule's nodes include the stricter rule's.
NAV_RULE_FLAGS = {"prefix": F_NAV_HINT, "word_part": F_NAV_WORD, "exact": F_NAV_EXACT}
F_NAV_ALL = F_NAV_HINT | F_NAV_WORD | F_NAV_EXACT

# Class/id hints of design §10 (seed 002's is_desc_X and the product's additions), one bit
# each in CompactPage.hints. A hint holds when a word part of an id or class token
# (split on '-', '_', camelCase) is one of the words listed, or, for words ending in
# '*', begins with it; the element's own tag can set one too (HINT_OF_TAG).
HINT_WORDS = (
    ("nav", ("nav*", "menu*", "navigation")),
    ("ad", ()),                    # seed 002's regexes, _AD below
    ("comment", ("comment*", "disqus", "reply", "replies", "discussion")),
    ("main", ("main",)),
    ("footer", ("footer", "foot", "bottom", "colophon")),
    ("wrapper", ("wrapper", "wrap", "container")),
    ("aside", ("aside", "sidebar", "side", "rail", "widget*")),
    ("content", ("content", "article", "post", "entry", "story", "text", "body", "prose")),
    ("related", ("related", "recommend*", "popular", "trending", "promo*", "sponsor*", "more",
                 "teaser*", "outbrain", "taboola")),
    ("share", ("share", "sharing", "social", "follow", "tweet", "facebook", "twitter")),
    ("meta", ("byline", "author", "date", "time", "meta", "tags", "tag", "category", "categories",
              "dateline", "published", "timestamp", "info")),
    ("title", ("title", "headline", "heading", "header", "masthead", "banner", "hero")),
    ("breadcrumb", ("breadcrumb*", "crumb*", "crumbs")),
    ("pagination", ("pagination", "pager", "paging", "pages", "prev", "next", "previous")),
    ("caption", ("caption", "credit", "credits", "figcaption")),
    ("item", ("item", "card", "tile", "product", "result", "listing", "list", "grid", "thumb*")),
    ("form", ("newsletter", "subscribe", "signup", "login", "cookie*", "consent", "modal", "popup",
              "search", "form")),
    ("code", ("code", "highlight*", "syntax", "listing", "sourcecode")),
    ("hidden", ()),                # _hides below, and _class_info over a whole class list
)
HINT_NAMES = tuple(name for name, _ in HINT_WORDS)
HINT_BIT = {name: 1 << i for i, name in enumerate(HINT_NAMES)}
_HINT_EXACT: dict = {}
_HINT_PREFIX: list = []
for _name, _words in HINT_WORDS:
    for _w in _words:
        if _w.endswith("*"):
            _HINT_PREFIX.append((_w[:-1], HINT_BIT[_name]))
        else:
            _HINT_EXACT[_w] = _HINT_EXACT.get(_w, 0) | HINT_BIT[_name]
# Seed 002 §3.8.2's advertisement patterns, as published.
_HINT_PREFIXES = tuple(prefix for prefix, _ in _HINT_PREFIX)
_AD = re.compile(r"\bad-|-ad\b|\bad_|_ad\b|\badv-|-adv\b|\badv_|_adv\b|advert|\bads|adblock|adbox")
HINT_OF_TAG = {"nav": "nav", "aside": "aside", "footer": "footer", "main": "main",
               "article": "content", "header": "title", "form": "form", "figcaption": "caption",
               "pre": "code", "code": "code"}
# Class lists longer than this are utility-class soup (Tailwind) or site-wide state
# ("show-comments" on <body>): they say nothing about one element's role.
_MAX_HINT_CLASSES = 12

_CAMEL = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _has_nav_word(value: str) -> bool:
    """True if `value` (an id or class token) has a word part naming a menu.

    Word parts are split on '-', '_' and camelCase. A part counts when it is
    "nav"/"menu" or begins with it ("navigation", "navbar", "menubar"): the
    thesis lists the exact names, design §2 widens to word parts, and the common
    spellings of the same intent are prefixes of the two words.
    """
    return bool(_name_hints(value) & F_NAV_HINT)


def _word_parts(value: str) -> list[str]:
    """The lower-cased word parts of an id or class token: split on '-', '_', whitespace and
    camelCase. _CAMEL matches none of the separators and its lookahead sees a separator as it
    sees the end of a chunk, so one findall over the whole token gives the parts of its
    chunks in order (tests/transforms/test_page.py checks it against splitting first)."""
    return [part.lower() for part in _CAMEL.findall(value)]


def _name_hints(value: str, parts: list[str] | None = None) -> int:
    """F_NAV_* and F_COMMENT_HINT bits of an id or class token, by its word parts
    (see _has_nav_word); a comment section is a part beginning with "comment", or "disqus"."""
    flags = F_NAV_EXACT if value.lower() in ("nav", "menu") else 0
    for low in _word_parts(value) if parts is None else parts:
        if low.startswith(("nav", "menu")):
            flags |= F_NAV_HINT
            if low in ("nav", "menu"):
                flags |= F_NAV_WORD
        elif low.startswith("comment") or low == "disqus":
            flags |= F_COMMENT_HINT
    return flags


# The "hidden" hint of a class or id token: what hides an element from a reader on screen.
# - hiding words: a word part "hidden", "hide" or "invisible" (hidden, is-hidden, u-hide,
#   element-invisible), or the token d-none / display-none (Bootstrap 4+: display:none);
#   not when another part qualifies it by a screen size, device or medium (Bootstrap 3's
#   hidden-xs hides on phones only and hidden-print on paper only, hide-on-mobile) or names
#   another property (overflow-hidden, MediaWiki's mw-hide-empty-elt);
# - screen-reader-only text: a part "sr" or "visually" (sr-only, show-for-sr,
#   visually-hidden), or the token run together: visuallyhidden, screen-reader-text
#   (WordPress), offscreen, assistive-text;
# - print-only text: a part "print" with "only", "visible" or "show" (print-only,
#   visible-print-block, show-for-print), or printonly.
# _class_info then clears the hint of a class list that also shows the element at some
# screen size (d-none d-md-block, hidden md:block): a reader on that screen sees it.
_HIDE_PARTS = frozenset({"hidden", "hide", "invisible"})
_HIDE_QUALIFIERS = frozenset({"xs", "sm", "md", "lg", "xl", "xxl", "mobile", "tablet", "desktop", "phone",
                              "small", "medium", "large", "print", "screen", "portrait", "landscape", "up",
                              "down", "overflow", "empty", "scroll", "scrollbar", "backface"})
_SCREEN_READER_PARTS = frozenset({"sr", "visually"})
_SCREEN_READER_RUNS = ("visuallyhidden", "screenreader", "offscreen", "assistivetext")
_SHOWN_AT_A_SIZE = re.compile(
    r"d-(?:sm|md|lg|xl|xxl)-(?!none$)[a-z-]+"
    r"|(?:sm|md|lg|xl|2xl):(?:block|inline|inline-block|flex|inline-flex|grid|inline-grid|table|table-row"
    r"|table-cell|contents|flow-root|list-item|visible|not-sr-only)"
    r"|visible-(?:xs|sm|md|lg|xl)(?:-[a-z-]+)?|show-for-(?:small|medium|large|xlarge|xxlarge)(?:-[a-z-]+)?")


def _hides(low: str, parts: list[str]) -> bool:
    """Whether an id or class token (lower-cased `low`, its word parts) hides its element from
    a reader on screen (see above)."""
    if low in ("d-none", "display-none"):
        return True
    words = set(parts)
    if words & _HIDE_PARTS and not words & _HIDE_QUALIFIERS:
        return True
    if words & _SCREEN_READER_PARTS:
        return True
    if "print" in words and words & {"only", "visible", "show"}:
        return True
    run = "".join(parts)
    return "printonly" in run or any(r in run for r in _SCREEN_READER_RUNS)


def _role_hints(value: str, parts: list[str] | None = None) -> int:
    """HINT_BIT bits of one id or class token (see HINT_WORDS)."""
    low = value.lower()
    bits = HINT_BIT["ad"] if _AD.search(low) else 0
    if "nav" in low:               # seed 002: substring match for nav, as published
        bits |= HINT_BIT["nav"]
    if parts is None:
        parts = _word_parts(value)
    for part in parts:
        bits |= _HINT_EXACT.get(part, 0)
        if part.startswith(_HINT_PREFIXES):       # one C-level test before the loop
            for prefix, bit in _HINT_PREFIX:
                if part.startswith(prefix):
                    bits |= bit
    if _hides(low, parts):
        bits |= HINT_BIT["hidden"]
    return bits


def _hash32(s: str) -> int:
    # crc32, not hash(): Python's str hash is salted per process and the
    # same page must hash the same on every worker.
    return zlib.crc32(s.encode("utf-8", "replace"))


@dataclass
class CompactPage:
    url: str
    title: str
    base_url: str
    # Per node, preorder; node 0 is BODY.
    parent: np.ndarray       # int32, -1 for the root
    depth: np.ndarray        # int32, root 0
    tag: np.ndarray          # int32 tag id, TEXT for text nodes
    end: np.ndarray          # int32, one past the last node of the subtree
    child_count: np.ndarray  # int32, element + text children
    flags: np.ndarray        # uint16, F_* bits
    hints: np.ndarray        # uint32, HINT_BIT bits of the element's own tag, id and classes
    # int32, block-boundary counter in preorder: text nodes with equal values are one text
    # line (a run of text with no block boundary between; design §1), the unit of
    # nontemplate_text's lines and the line cut of design §10's blocks.
    line: np.ndarray
    id_hash: np.ndarray      # uint32, crc32 of the id attribute, 0 when absent
    class_ptr: np.ndarray    # int32[n+1] into class_hash (ragged: tokens of node i)
    class_hash: np.ndarray   # uint32
    attr_ptr: np.ndarray     # int32[n+1] into attr_hash
    attr_hash: np.ndarray    # uint32, crc32 of "name=value" for attributes other than id/class
    text_ptr: np.ndarray     # int32[n+1] into `text`; empty range for elements
    text: str                # all text nodes concatenated: whitespace-collapsed, F_PRE nodes verbatim
    words: np.ndarray        # int32, tokens per text node
    chars: np.ndarray        # int32, characters per text node, whitespace-collapsed (F_PRE too)
    link_node: np.ndarray    # int32, node index of each <a href> with an http(s) target
    link_url: tuple          # normalized absolute URL of each link, parallel to link_node
    html_bytes: int = 0
    notes: tuple = field(default_factory=tuple)
    # What the output columns need from the raw document (transforms/meta.py): the page's
    # declared metadata (meta.COLUMNS order, empty = none), and per node the images' URL and
    # alt text and the code blocks' language, and for the links dataset the <area> links, the
    # links' rel flags and the alt text of links without text (sparse, parallel to their node
    # arrays: meta.NodeExtras).
    meta: tuple = ()
    side: NodeExtras = field(default_factory=lambda: NO_EXTRAS)

    @property
    def size(self) -> int:
        return int(self.parent.shape[0])

    def node_text(self, i: int) -> str:
        return self.text[self.text_ptr[i]:self.text_ptr[i + 1]]

    def node_texts(self, nodes: np.ndarray) -> list[str]:
        """[node_text(i) for i in nodes], without a method call per node."""
        text, ptr = self.text, self.text_ptr
        return [text[a:b] for a, b in zip(ptr[nodes].tolist(), ptr[nodes + 1].tolist())]

    def collapsed_text(self, i: int) -> str:
        """The node's text whitespace-collapsed, as design §1 defines it: what algorithms compare
        (ETDM's text equality), so verbatim F_PRE text maps as it did collapsed."""
        s = self.text[self.text_ptr[i]:self.text_ptr[i + 1]]
        return " ".join(s.split()) if self.flags[i] & F_PRE else s

    def collapsed_texts(self, nodes: np.ndarray) -> list[str]:
        """[collapsed_text(i) for i in nodes], without a method call per node."""
        text, ptr = self.text, self.text_ptr
        return [" ".join(text[a:b].split()) if pre else text[a:b]
                for a, b, pre in zip(ptr[nodes].tolist(), ptr[nodes + 1].tolist(),
                                     ((self.flags[nodes] & F_PRE) != 0).tolist())]

    def differing_fields(self, other: "CompactPage") -> list[str]:
        """Names of the fields whose values differ from `other`'s, arrays compared with their
        dtypes and other values with their types (the compiled and Python flattenings must
        agree to the type: tests/transforms/test_flatten.py, sitestrip-bench compare-flatten)."""
        out = []
        for name in self.__dataclass_fields__:
            x, y = getattr(self, name), getattr(other, name)
            if isinstance(x, np.ndarray):
                same = isinstance(y, np.ndarray) and x.dtype == y.dtype and np.array_equal(x, y)
            else:
                same = type(x) is type(y) and x == y
            if not same:
                out.append(name)
        return out

    def nbytes(self) -> int:
        """In-memory size of the arrays and strings, for reports."""
        self._unpack()
        arrays = sum(v.nbytes for v in vars(self).values() if isinstance(v, np.ndarray))
        return arrays + len(self.text.encode("utf-8")) + sum(len(u) for u in self.link_url) \
            + len(self.url) + len(self.title)

    def wire_bytes(self) -> int:
        """Size of the page as it crosses a shuffle (see __getstate__)."""
        return len(self._packed()) + len(self.url) + len(self.title) + len(self.base_url) \
            + len(self.side.packed()) + sum(len(v) for v in self.meta if v)

    # Pickling (what Beam's coder uses for the shuffle) sends only what cannot
    # be derived, delta-encoded so that zstd's fastest levels shrink it to a
    # fraction of the HTML: child counts, character counts and text pointers
    # are rebuilt on arrival (a collapsed character count differs from the
    # stored text's length only for verbatim F_PRE text, sent apart).
    #
    # Unpickling keeps the blob and rebuilds the node arrays and the text only when
    # one of them is first read (__getattr__). Beam's local runner unpickles every
    # value of a group-by-key into its in-memory table and pickles it again to hand
    # the groups on: unpacked there, the whole input's node arrays were held at once
    # (docsites-dev: 1.9 M nodes, 130 MB, against 18 MB of blobs), twice per run
    # (the shard join and the group by shard), and decompressed twice for nothing.
    def _packed(self) -> bytes:
        blob = self.__dict__.get("_blob")
        if blob is None:
            blob = _pack_blob(self._raw())
            self.__dict__["_blob"] = blob
            self.__dict__["_blob_v"] = _BLOB_VERSION
        return blob

    def _raw(self) -> bytes:
        """The blob's content before compression (_rebuild_arrays reads it back): a header of
        seven int64 counts, then the arrays, delta-encoded where that makes them compress,
        the text and the link URLs. Laid out in one compiled pass (transforms/_blob.c) where
        the arrays have the item sizes the layout has; `_raw_reference` is its reference."""
        text = self.text.encode("utf-8", "surrogatepass")
        links = "\n".join(self.link_url).encode("utf-8", "surrogatepass")
        arrays = (self.parent, self.end, self.depth, self.tag, self.flags, self.hints, self.line, self.id_hash,
                  self.class_ptr, self.class_hash, self.attr_ptr, self.attr_hash, self.text_ptr, self.words,
                  self.chars, self.link_node)
        if _BLOB_COMPILED and _blob is not None:
            if tuple(map(_DTYPE_OF, arrays)) == _BLOB_DTYPES:
                # The parsed page's own dtypes: _blob.raw checks the rest of _blob_layout (one
                # dimension, contiguous, the node count's lengths) and refuses what fails it.
                try:
                    return _blob.raw(*arrays, text, links, TEXT, F_PRE)
                except (TypeError, ValueError, BufferError):
                    pass
            if _blob_layout(arrays, self.size):
                return _blob.raw(*arrays, text, links, TEXT, F_PRE)
        return self._raw_reference(text, links)

    def _raw_reference(self, text: bytes, links: bytes) -> bytes:
        """_raw with numpy (`text`, `links`: the page's text and its joined link URLs as UTF-8).
        The arrays go into the join through the buffer protocol, never copied to bytes of their
        own."""
        n = self.size
        order = np.arange(n, dtype=np.int32)
        is_text = self.tag == TEXT
        is_pre = is_text & ((self.flags & F_PRE) != 0)
        text_parts = (_steps(self.text_ptr)[is_text], self.words[is_text], self.chars[is_pre])
        header = np.array([n, text_parts[0].size, self.class_hash.size, self.attr_hash.size,
                           self.link_node.size, len(text), text_parts[2].size], dtype=np.int64)
        parts = (
            header, order - self.parent, self.end - order, self.depth, self.tag, self.flags, self.hints,
            _steps(self.line, first=True), self.id_hash, _steps(self.class_ptr), self.class_hash,
            _steps(self.attr_ptr), self.attr_hash, *text_parts, self.link_node,
        )
        return b"".join([np.ascontiguousarray(a) for a in parts] + [text, links])

    def __getstate__(self):
        blob = self._packed()
        return {"v": self.__dict__["_blob_v"], "url": self.url, "title": self.title, "base_url": self.base_url,
                "html_bytes": self.html_bytes, "notes": self.notes, "blob": blob,
                "meta": self.meta, "side": self.side.packed()}

    def __setstate__(self, state):
        self.__dict__.update(
            url=state["url"], title=state["title"], base_url=state["base_url"],
            html_bytes=state["html_bytes"], notes=state["notes"], _blob=state["blob"],
            _blob_v=state.get("v", 3),
            meta=state.get("meta", ()), side=NodeExtras.unpacked(state.get("side", b"")))

    def __getattr__(self, name):
        # Only reached for names not in the instance dict: a packed array field of a page
        # not unpacked yet (see __setstate__) or unpacked and dropped since (UNPACKED);
        # anything else is a plain missing attribute.
        if name in _PACKED_FIELDS and "_blob" in self.__dict__:
            with UNPACKED.lock:
                self._unpack()
                if name in self.__dict__:
                    return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _unpack(self) -> None:
        """Rebuild the node arrays and the text from the blob, once while they are kept."""
        if "parent" in self.__dict__:
            return
        with UNPACKED.lock:
            if "parent" not in self.__dict__:
                self._rebuild_arrays()
                UNPACKED.add(self)

    def _drop_unpacked(self) -> None:
        """Forget the node arrays rebuilt from the blob (they are rebuilt, equal, when next
        read). `parent` goes first: its absence is what sends a read to _unpack."""
        if "_blob" in self.__dict__:
            self.__dict__.pop("parent", None)
            for name in _PACKED_FIELDS:
                self.__dict__.pop(name, None)
            self.__dict__.pop("_derived", None)

    def derived(self, name: str, compute):
        """compute(self), once per page while its node arrays are held: for the per-node
        arrays that several stages read (a subtree's links, words, elements; the children
        lists), which each computed for itself. Read-only, so that no caller can change
        what the next one reads. Pages are never changed in place, so a value cannot go
        stale; it goes with the unpacked arrays (_drop_unpacked) or with forget_derived."""
        cache = self.__dict__.get("_derived")
        if cache is None:
            cache = self.__dict__["_derived"] = {}
        value = cache.get(name)
        if value is None:
            value = compute(self)
            for array in (value if isinstance(value, tuple) else (value,)):
                array.setflags(write=False)
            cache[name] = value
        return value

    def forget_derived(self) -> None:
        self.__dict__.pop("_derived", None)

    def _rebuild_arrays(self) -> None:
        raw = _unpack_blob(self.__dict__["_blob"], self.__dict__["_blob_v"])
        if _BLOB_COMPILED and _blob is not None:
            arrays, pos = _arrays_compiled(raw)
        else:
            arrays, pos = _arrays_reference(raw)
        n_text_bytes = int(np.frombuffer(raw, dtype=np.int64, count=7)[5])
        view = memoryview(raw)
        text = str(view[pos:pos + n_text_bytes], "utf-8", "surrogatepass")
        links = str(view[pos + n_text_bytes:], "utf-8", "surrogatepass")
        parent = arrays.pop("parent")
        arrays.update(text=text, link_url=tuple(links.split("\n")) if arrays["link_node"].size else ())
        # `parent` last: its presence says the page is unpacked (__getattr__, _unpack).
        self.__dict__.update(arrays, parent=parent)


def _arrays_reference(raw: bytes) -> tuple[dict, int]:
    """The node arrays of a blob's content (CompactPage._raw) with numpy, and the offset of the
    text after them: the reference of `_arrays_compiled`."""
    n, n_text, n_class, n_attr, n_link, n_text_bytes, n_pre = \
        np.frombuffer(raw, dtype=np.int64, count=7).tolist()
    pos = _HEADER_BYTES

    def take(count, dtype):
        # A copy: an array of its own, aligned and writable as the parsed page's are.
        nonlocal pos
        arr = np.frombuffer(raw, dtype=dtype, count=count, offset=pos).copy()
        pos += arr.nbytes
        return arr

    i32, u32 = np.int32, np.uint32
    order = np.arange(n, dtype=i32)
    parent = order - take(n, i32)
    end = order + take(n, i32)
    depth, tag, flags, hints = take(n, i32), take(n, i32), take(n, np.uint16), take(n, u32)
    line = np.cumsum(take(n, i32), dtype=i32)
    id_hash = take(n, u32)
    class_ptr = _offsets(take(n, i32))
    class_hash = take(n_class, u32)
    attr_ptr = _offsets(take(n, i32))
    attr_hash = take(n_attr, u32)
    is_text = tag == TEXT
    lengths = np.zeros(n, dtype=i32)
    lengths[is_text] = take(n_text, i32)
    words = np.zeros(n, dtype=i32)
    words[is_text] = take(n_text, i32)
    chars = lengths.copy()
    chars[is_text & ((flags & F_PRE) != 0)] = take(n_pre, i32)
    link_node = take(n_link, i32)
    child_count = np.bincount(parent[1:], minlength=n).astype(i32) if n > 1 else np.zeros(n, i32)
    return dict(parent=parent, depth=depth, tag=tag, end=end, child_count=child_count, flags=flags,
                hints=hints, line=line, id_hash=id_hash, class_ptr=class_ptr, class_hash=class_hash,
                attr_ptr=attr_ptr, attr_hash=attr_hash, text_ptr=_offsets(lengths), words=words,
                chars=chars, link_node=link_node), pos


def _arrays_compiled(raw: bytes) -> tuple[dict, int]:
    """_arrays_reference in one pass (transforms/_blob.c): the arrays allocated here at the
    header's sizes and filled there."""
    n, _n_text, n_class, n_attr, n_link = np.frombuffer(raw, dtype=np.int64, count=5).tolist()
    if min(n, n_class, n_attr, n_link) < 0 or max(n, n_class, n_attr, n_link) > len(raw):
        raise ValueError(f"compact page blob of {len(raw)} bytes declares {n} nodes")
    empty = np.empty
    i32, u32 = np.int32, np.uint32
    arrays = dict(parent=empty(n, i32), end=empty(n, i32), depth=empty(n, i32), tag=empty(n, i32),
                  flags=empty(n, np.uint16), hints=empty(n, u32), line=empty(n, i32), id_hash=empty(n, u32),
                  class_ptr=empty(n + 1, i32), class_hash=empty(n_class, u32), attr_ptr=empty(n + 1, i32),
                  attr_hash=empty(n_attr, u32), text_ptr=empty(n + 1, i32), words=empty(n, i32),
                  chars=empty(n, i32), link_node=empty(n_link, i32), child_count=empty(n, i32))
    pos = _blob.rebuild(raw, *arrays.values(), TEXT, F_PRE)
    return arrays, pos


def _steps(values: np.ndarray, first: bool = False) -> np.ndarray:
    """int32 differences of consecutive values: np.diff(values), or with `first`
    np.diff(values, prepend=0), without np.diff's general-case work."""
    values = values.astype(np.int32, copy=False)
    if first:
        out = np.empty(values.size, dtype=np.int32)
        out[:1] = values[:1]
        np.subtract(values[1:], values[:-1], out=out[1:])
        return out
    return values[1:] - values[:-1] if values.size else np.zeros(0, dtype=np.int32)


def _offsets(counts: np.ndarray) -> np.ndarray:
    """int32 [0, cumulative sums of counts...]: a ragged array's pointers from its counts."""
    out = np.empty(counts.size + 1, dtype=np.int32)
    out[0] = 0
    np.cumsum(counts, dtype=np.int32, out=out[1:])
    return out


class RecentPages:
    """Pages holding something they can rebuild (here the node arrays unpacked from their
    blob, in etdm.py an ETDM index), least recently used first, with their node total: past
    `max_nodes`, the oldest pages but the `keep` most recent `drop` it.

    Pages are held weakly: a dead page's entry goes when it is the oldest, and entries count
    at least one node each, so there are never more than max_nodes of them. `added` counts
    the pages registered (rebuilds included; the tests read it)."""

    def __init__(self, max_nodes: int, drop, keep: int = 1):
        self.max_nodes, self.drop, self.keep = max_nodes, drop, keep
        self.pages: OrderedDict = OrderedDict()     # id(page) → (weak reference, nodes counted)
        self.nodes = 0
        self.added = 0
        # Reentrant: a read of a dropped page field unpacks under it (CompactPage.__getattr__).
        self.lock = threading.RLock()

    def add(self, page: "CompactPage") -> None:
        """`page` has just made what it holds: it is the most recent; older pages past the
        bound drop theirs."""
        key = id(page)
        with self.lock:
            self.added += 1
            entry = self.pages.pop(key, None)
            if entry is not None:
                self.nodes -= entry[1]
            counted = max(page.size, 1)
            self.pages[key] = (weakref.ref(page), counted)
            self.nodes += counted
            while self.nodes > self.max_nodes and len(self.pages) > self.keep:
                _, (ref, counted) = self.pages.popitem(last=False)
                self.nodes -= counted
                old = ref()
                if old is not None:
                    self.drop(old)

    def touch(self, page: "CompactPage") -> bool:
        """Make `page` the most recent; False when it is not registered (an id is only this
        page's while the entry's page is alive and is this page)."""
        key = id(page)
        with self.lock:
            entry = self.pages.get(key)
            if entry is None or entry[0]() is not page:
                return False
            self.pages.move_to_end(key)
            return True


# The pages whose node arrays were rebuilt from their blob. A site shard arrives packed and
# every loop over all of its pages (its links, clusters, blocks, site menus) unpacks each
# page: kept, every page's arrays were held at once until the shard ended (docs.python.org
# in docsites-dev: 200 pages, 670k nodes, 46 MB of arrays and text). Pages read while a key
# page is analysed are few (it and its candidates), so the bound costs a page rebuilt now
# and then. Pages that never had a blob (parsed in this process) are not registered. On
# docsites-dev 200k nodes rebuild 2,212 pages (300k: 2,119; 150k: 2,739; 100k: 3,600) and
# hold about 15 MB less than 300k at a 2,000-page shard (docs/performance.md, "Memory per worker").
UNPACKED = RecentPages(200_000, lambda page: page._drop_unpacked())


try:
    # The blob's content laid out and rebuilt in one pass (transforms/_blob.c, built by `pip
    # install`); CompactPage._raw_reference and _arrays_reference run where it is missing.
    from sitestrip.transforms import _blob
except ImportError:  # pragma: no cover - a source tree used without installing
    _blob = None

# Whether the compiled blob layout runs when it is built (tests switch it off to run the
# reference); SITESTRIP_BLOB=python does the same for a whole process.
_BLOB_COMPILED = os.environ.get("SITESTRIP_BLOB", "compiled") != "python"
# The item size of each array of CompactPage._raw's layout, in its argument order.
_BLOB_ITEMSIZES = (4, 4, 4, 4, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4)
# The dtypes of those arrays in a parsed or rebuilt page, which fit the layout wherever the
# arrays are contiguous and of the node count's lengths.
_BLOB_DTYPES = tuple(np.dtype(t) for t in ("int32", "int32", "int32", "int32", "uint16", "uint32", "int32",
                                           "uint32", "int32", "uint32", "int32", "uint32", "int32", "int32",
                                           "int32", "int32"))
_DTYPE_OF = operator.attrgetter("dtype")


def _blob_layout(arrays: tuple, n: int) -> bool:
    """Whether `arrays` (CompactPage._raw's order) fit the compiled layout: integers of the
    item sizes it writes (`parent` and `end` int32, which the reference subtracts from int32
    node numbers), C-contiguous and of the node count's lengths. Anything else is laid out by
    the reference, as it always was."""
    for array, size in zip(arrays, _BLOB_ITEMSIZES):
        if array.itemsize != size or array.dtype.kind not in "iu" or array.ndim != 1 \
                or not array.flags.c_contiguous:
            return False
    if arrays[0].dtype != np.int32 or arrays[1].dtype != np.int32:
        return False
    return all(array.size == n for array in arrays[:8] + arrays[13:15]) \
        and arrays[8].size == arrays[10].size == arrays[12].size == n + 1


# The blob's format, the "v" of a pickled page: 3, zlib's level 1 of the packed arrays (what
# state files written before version 4 hold, still read); 4, the arrays' length in 8 bytes
# little-endian, then zstd at Arrow's default level (compression.pack: Arrow's codec's frames):
# on docsites-dev's 1,881 pages (115 MB packed) zlib took 0.57 CPU s to compress and 0.27 s to
# inflate, to 18.8 MB; zstd 0.21 s and 0.13 s, to 17.9 MB; 5, version 4 with each section of
# the arrays at the narrowest width of 1, 2 or 4 bytes its values need (`_narrow`): most are
# small counts and differences, so the same pages give zstd 71 MB where they gave 113, and
# pack (narrowing included) in 0.14 CPU s instead of 0.17 and unpack (widening included) in
# 0.056 s instead of 0.069, to 15.7 MB instead of 17.5. Versions 3 and 4 are still read
# (_unpack_blob).
_BLOB_VERSION = 5
_MAX_PACKED = 1 << 31          # the node arrays are int32-indexed: a larger length is damage
_HEADER_BYTES = 56             # seven int64 counts
_SECTIONS = 16                 # the arrays' sections after them, one width byte each in version 5


def _pack_blob(raw: bytes) -> bytes:
    """The version-5 blob of a blob content (CompactPage._raw's layout)."""
    return compression.pack(_narrow(raw), "zstd")


def _unpack_blob(blob: bytes, version: int) -> bytes:
    """The blob content (CompactPage._raw's layout) of a blob of `version`."""
    if version == 3:
        return zlib.decompress(blob)
    if version == 4:
        return compression.unpack(blob, "zstd", limit=_MAX_PACKED)
    if version != _BLOB_VERSION:
        raise ValueError(f"unknown compact page version {version!r}")
    return _widen(compression.unpack(blob, "zstd", limit=_MAX_PACKED))


def _narrow(raw: bytes) -> bytes:
    """Version 5's content from version 4's: transforms/_blob.c where built, else the reference."""
    if _BLOB_COMPILED and _blob is not None:
        return _blob.narrow(raw)
    return _narrow_reference(raw)


def _widen(narrowed: bytes) -> bytes:
    if _BLOB_COMPILED and _blob is not None:
        return _blob.widen(narrowed)
    return _widen_reference(narrowed)


def _sections(raw: bytes, head: int) -> list[tuple[int, int]]:
    """(items, item size) of each section of a blob content's arrays, from its header's counts
    (n, text nodes, class hashes, attribute hashes, links, text bytes, verbatim text nodes);
    ValueError where a count is negative or past the content's `head`-byte header and length."""
    if len(raw) < head:
        raise ValueError("compact page blob shorter than its header")
    counts = np.frombuffer(raw, dtype=np.int64, count=7).tolist()
    if min(counts) < 0 or max(counts) > len(raw):
        raise ValueError("compact page blob shorter than its counts")
    n, n_text, n_class, n_attr, n_link, _, n_pre = counts
    items = (n, n, n, n, n, n, n, n, n, n_class, n, n_attr, n_text, n_text, n_pre, n_link)
    return [(count, 2 if k == 4 else 4) for k, count in enumerate(items)]


def _narrow_reference(raw: bytes) -> bytes:
    """Each section of a version-4 content (`_sections`) at the narrowest width of 1, 2 or 4
    bytes that holds every item's unsigned value, its low bytes little-endian (flags, 2-byte
    items, at 1 or 2): the header, one width byte per section, the sections, the text and
    link URLs as they were."""
    sections = _sections(raw, _HEADER_BYTES)
    if sum(count * size for count, size in sections) > len(raw) - _HEADER_BYTES:
        raise ValueError("compact page blob shorter than its counts")
    pos, widths, parts = _HEADER_BYTES, [], []
    for count, size in sections:
        values = np.frombuffer(raw, dtype=np.uint32 if size == 4 else np.uint16, count=count, offset=pos)
        pos += count * size
        top = int(np.bitwise_or.reduce(values)) if count else 0
        width = 1 if top < 0x100 else 2 if top < 0x10000 else 4
        widths.append(width)
        parts.append(values.tobytes() if width == size else values.astype(f"<u{width}").tobytes())
    return b"".join([raw[:_HEADER_BYTES], bytes(widths), *parts, raw[pos:]])


def _widen_reference(narrowed: bytes) -> bytes:
    """_narrow_reference's input from its output: each item zero-extended to its section's size."""
    sections = _sections(narrowed, _HEADER_BYTES + _SECTIONS)
    widths = narrowed[_HEADER_BYTES:_HEADER_BYTES + _SECTIONS]
    for k, ((count, size), width) in enumerate(zip(sections, widths)):
        if width not in (1, 2, 4) or width > size:
            raise ValueError(f"compact page blob: section {k} has width {width}")
    if sum(count * width for (count, _), width in zip(sections, widths)) > len(narrowed) - _HEADER_BYTES - _SECTIONS:
        raise ValueError("compact page blob shorter than its counts")
    pos, parts = _HEADER_BYTES + _SECTIONS, []
    for (count, size), width in zip(sections, widths):
        values = np.frombuffer(narrowed, dtype=f"<u{width}" if width < size else
                               (np.uint32 if size == 4 else np.uint16), count=count, offset=pos)
        pos += count * width
        parts.append(values.astype(np.uint32 if size == 4 else np.uint16).tobytes())
    return b"".join([narrowed[:_HEADER_BYTES], *parts, narrowed[pos:]])


# The fields a pickled page carries in its blob, rebuilt by CompactPage._unpack.
_PACKED_FIELDS = frozenset({
    "parent", "depth", "tag", "end", "child_count", "flags", "hints", "line", "id_hash", "class_ptr",
    "class_hash", "attr_ptr", "attr_hash", "text_ptr", "text", "words", "chars", "link_node", "link_url"})


def use_parse_heap() -> bool:
    """Whether libxml2 takes its small blocks from transforms/_parse_heap.c's chunks, installed
    in this process at the first call: a page's tree is built in the order the flattening
    reads it and freed for a count a block, where glibc's malloc split and merged free memory
    block by block (docs/performance.md, "What is compiled"). SITESTRIP_PARSE_HEAP=libc, a
    missing extension or a range that cannot be reserved leave libxml2 its own allocator.
    The trees and pages are the same either way."""
    if _HEAP:
        return _HEAP[0]
    with _HEAP_LOCK:
        if not _HEAP:
            installed = False
            if _parse_heap is not None and os.environ.get("SITESTRIP_PARSE_HEAP", "chunks") != "libc":
                installed = bool(_parse_heap.install(etree.__file__))
            _HEAP.append(installed)
    return _HEAP[0]


def _new_parser() -> etree.HTMLParser:
    use_parse_heap()
    # huge_tree lifts libxml2's 256-level depth cap to 2048 and its text-node
    # size cap; no_network keeps the parser from ever fetching anything.
    return etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True,
                            huge_tree=True, no_network=True, collect_ids=False,
                            default_doctype=False)


_PARSERS = threading.local()


def _parser() -> etree.HTMLParser:
    """This thread's parser. One per thread, kept: an lxml parser reads one document at a time,
    and making one costs more than a small page's parse (its error log is the last document's:
    lxml empties it when a parse begins)."""
    parser = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = _new_parser()
    return parser


def _collapse(s: str | None) -> str:
    if not s:
        return ""
    return " ".join(s.split())


def parse_tree(html: str | bytes) -> tuple:
    """(lxml root or None, BODY element or None, notes) of decoded HTML, as parse_page sees it:
    a str, or its UTF-8 encoding (charset.html_for_parse), which gives the same tree.

    Shared with views that re-parse a page (pipeline/inspect_view.py) so that
    their tree is the very tree the compact page was flattened from.
    """
    parser = _parser()
    notes = []
    try:
        root = etree.fromstring(html if isinstance(html, bytes) else html.encode("utf-8", "replace"), parser)
    except etree.XMLSyntaxError:
        root = None
    if any("Excessive depth" in e.message for e in parser.error_log):
        notes.append("parser depth limit: nodes nested deeper than 2048 were dropped")
    if root is None:
        text = html.decode("utf-8", "replace") if isinstance(html, bytes) else html
        if text.strip():
            # e.g. an unclosed "<!--" at the start swallows the page: the row says so.
            why = f" ({parser.error_log[0].message.strip()[:200]})" if parser.error_log else ""
            notes.append(f"{PARSE_FAILURE}lxml built no tree from {len(text)} characters{why}")
    body = None
    if root is not None:
        # iterchildren(tag) is what find(tag) runs (lxml's ElementPath), without the path machinery
        body = root if root.tag == "body" else next(root.iterchildren("body"), None)
    return root, body, tuple(notes)


def _href_of(el):
    return el.get("href")


@dataclass(frozen=True)
class ParseRules:
    """What flattening drops and keeps where the product departs from design §1
    (configs: `read.keep_noscript`, `read.widget_leaves`, `read.browser_text`; all off in
    published.yaml).

    keep_noscript: design §1 drops <noscript> with its subtree. An archived page
    is read without running its scripts, so what <noscript> holds is what such
    a reader shows: Discourse forums, for one, serve every post inside
    <noscript> to a browser's user agent, and dropping it left 15 of 407
    page-wcxb-dev pages with no text at all (docs/benchmarks.md).
    widget_leaves: WIDGET_LEAF_TAGS are leaves, like design §1's media elements.
    browser_text: text nodes record what a browser needs to lay their text out
    (transforms/text.py): whether whitespace preceded them in the HTML
    (F_SPACE_BEFORE), so "word</a>," joins as "word," where design §1's single
    spaces give "word ,"; and text inside PRE_TAGS is kept verbatim (F_PRE),
    so code keeps its line breaks and indentation. Off, every text node is
    collapsed and marked as preceded by whitespace: design §1's text exactly.
    Nodes, words and character counts are the same either way.
    """
    keep_noscript: bool = True
    widget_leaves: bool = True
    browser_text: bool = True

    @property
    def dropped(self) -> frozenset:
        return DROPPED_TAGS if self.keep_noscript else DROPPED_TAGS | {"noscript"}

    @property
    def leaves(self) -> frozenset:
        return LEAF_TAGS | WIDGET_LEAF_TAGS if self.widget_leaves else LEAF_TAGS


PRODUCT_RULES = ParseRules()
SPEC_RULES = ParseRules(keep_noscript=False, widget_leaves=False, browser_text=False)


class TooManyNodes(ValueError):
    """A page with more nodes than the configured cap (read.max_nodes)."""


def _check_node_count(body, max_nodes: int) -> None:
    """TooManyNodes where the body has more than `max_nodes` nodes, as XPath counts them."""
    if _compiled is not None and _COMPILED and 0 <= _compiled.count_nodes(body, max_nodes) <= max_nodes:
        return
    # Counted by libxml2's XPath in C (~0.1 µs per node), whitespace and
    # dropped subtrees included: an upper bound of what flattening keeps. The compiled
    # count (a few ns per node, never below XPath's) settles the pages under the cap.
    count = int(body.xpath("count(descendant-or-self::node())"))
    if count > max_nodes:
        raise TooManyNodes(f"{count} parsed nodes, more than read.max_nodes = {max_nodes}")


def parse_page(html: str | bytes, url: str, max_nodes: int | None = None,
               rules: ParseRules = PRODUCT_RULES, chars: int | None = None) -> CompactPage:
    """Parse decoded HTML into a CompactPage. Never recurses; bounded by lxml's depth cap.

    `html` is the decoded text or its UTF-8 encoding (charset.html_for_parse), `chars` the
    text's length (html_bytes) when it is given as bytes; the page is the same either way.
    With `max_nodes`, a body of more nodes raises TooManyNodes before the
    flattening, which is where a huge page's time and memory would go.
    """
    if chars is None:
        chars = len(html.decode("utf-8", "replace") if isinstance(html, bytes) else html)
    root, body, notes = parse_tree(html)
    title, base_url = "", url
    if root is not None:
        # find("head"), find("title") and find("base[@href]"), as lxml's ElementPath runs them
        head = next(root.iterchildren("head"), None)
        if head is not None:
            t = next(head.iterchildren("title"), None)
            if t is not None:
                title = _collapse(t.text)
            href = next((h for h in map(_href_of, head.iterchildren("base")) if h is not None), None)
            if href is not None:
                base_url = resolve_link(url, href) or url
    page = None
    declared = []
    compiled = _compiled is not None and _COMPILED and body is not None
    if compiled:
        # The walk counts the nodes as it reads them: a page within the cap needs no count of
        # its own (on docsites-dev the separate pass cost a tenth of the walk).
        page = _flatten_compiled(body, url, title, base_url, chars, notes, rules, root, declared, max_nodes)
    if page is None or page is _UNCOUNTED:
        if max_nodes is not None and body is not None:
            _check_node_count(body, max_nodes)
        if page is _UNCOUNTED:
            page = _flatten_compiled(body, url, title, base_url, chars, notes, rules, root, declared)
    if page is None:
        page = _flatten(body, url, title, base_url, chars, notes, rules)
    page.meta = page_metadata(root, base_url, declared[0] if declared else None).as_tuple()
    return page


@lru_cache(maxsize=1 << 16)
def _class_info(value: str) -> tuple:
    """(sorted token hashes, F_*_HINT bits, HINT_BIT bits) of a class attribute; classes
    repeat across a site."""
    tokens = value.split()
    flags = roles = 0
    for c in tokens:
        flags |= _name_hints(c)
        if len(tokens) <= _MAX_HINT_CLASSES:
            roles |= _role_hints(c)
    if roles & _HIDDEN_BIT and any(_SHOWN_AT_A_SIZE.fullmatch(c.lower()) for c in tokens):
        roles &= ~_HIDDEN_BIT       # responsive: hidden on some screens, shown on others
    return tuple(sorted({_hash32(c) for c in tokens})), flags, roles


_DIGIT_RUN = re.compile(r"[0-9]{3}")
_HIDDEN_BIT = HINT_BIT["hidden"]


@lru_cache(maxsize=1 << 16)
def _id_info(value: str) -> tuple:
    value = value.strip()
    if not value:
        return 0, 0, 0
    parts = _word_parts(value)
    bits = _name_hints(value, parts) | (F_VOLATILE_ID if _DIGIT_RUN.search(value) else 0)
    return (_hash32(value) or 1), bits, _role_hints(value, parts)


_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)

if _compiled is not None:
    # The compiled walk answers _class_info and _id_info itself for ASCII values, from these
    # tables (tests/transforms/test_flatten.py compares the two on generated values).
    _compiled.set_hint_tables(
        sorted(_HINT_EXACT.items()), _HINT_PREFIX, sorted(_HIDE_PARTS), sorted(_HIDE_QUALIFIERS),
        sorted(_SCREEN_READER_PARTS), _SCREEN_READER_RUNS,
        (F_NAV_EXACT, F_NAV_HINT, F_NAV_WORD, F_COMMENT_HINT, F_VOLATILE_ID, HINT_BIT["ad"], HINT_BIT["nav"],
         HINT_BIT["hidden"], _MAX_HINT_CLASSES))

# The elements that may be permalink anchors (_is_permalink).
_ANCHOR_TAGS = frozenset({"a", "button"})
# The longest text a permalink anchor may have ("permalink"); past it the lookahead stops.
_PERMALINK_MAX = 9


def _is_permalink(el, in_title: bool, rules: "ParseRules") -> bool:
    """Whether the <a> or <button> element `el` is a permalink anchor, which flattening drops
    with its subtree as it drops a <script> (its tail is kept), so that no text column, count
    or Markdown link has it. An <a> is one when

    - its href holds a "#" (it points at a place in a page), and
    - it lies inside a title (an ancestor in TITLE_TAGS: `in_title`), or is marked as an
      anchor outside one: the class token "headerlink" (Sphinx puts those in code-block and
      toctree captions too) or aria-hidden="true" (an icon link screen readers skip), and
    - its text, what flattening would keep of it with the whitespace removed, is empty, or
      at most 4 characters none of them a letter or digit (¶, §, #, 🔗, ⚓, a zero-width
      space), or the word "permalink" in any case;

    a <button> is one when it lies inside a title and its text is such a mark (a "copy link"
    button: <button class="copy-link" data-link="…#x">🔗</button>).

    The text test decides, never a class or title alone: some sites wrap a heading's whole
    text in its anchor (<h2><a class="header-anchor" href="#x">Title</a></h2>), and that
    text is the heading. The caller asks for <a> and <button> elements only; the compiled
    walk asks for the links with an href that lie in a title or carry a class or an
    aria-hidden attribute and for the buttons in a title, a superset of what this returns
    True for."""
    if el.tag.lower() == "button":
        if not in_title:
            return False
    else:
        href = el.get("href")
        if href is None or "#" not in href:
            return False
        if not in_title and "headerlink" not in (el.get("class") or "").split() \
                and (el.get("aria-hidden") or "").strip().lower() != "true":
            return False
    dropped, leaves = rules.dropped, rules.leaves
    pieces = [el.text] if el.text else []
    size = 0
    walker = etree.iterwalk(el, events=("start", "end"))
    for event, sub in walker:
        if sub is el or not isinstance(sub.tag, str):
            continue
        if event == "start":
            name = sub.tag.lower()
            if name in dropped or name in leaves:
                walker.skip_subtree()
            elif sub.text:
                pieces.append(sub.text)
        elif sub.tail:
            pieces.append(sub.tail)
        size += 1
        if size > 64:      # a mark is an element or two, not a subtree to read through
            return False
    text = "".join("".join(pieces).split())
    if len(text) > _PERMALINK_MAX:
        return False
    return text.lower() == "permalink" or (len(text) <= 4 and not any(c.isalnum() for c in text))
_HINT_OF_TAG = {name: HINT_BIT[h] for name, h in HINT_OF_TAG.items()}


def _flatten(body, url: str, title: str, base_url: str, html_len: int, notes: tuple,
             rules: ParseRules = PRODUCT_RULES) -> CompactPage:
    # Per node (dense): parent, depth, tag, end, flags, line. Per text node:
    # text, words. Attributes are sparse (node, value) pairs. One loop over
    # lxml's start/end events; locals are bound because this is the hottest
    # Python loop of the product. parse_page runs transforms/_flatten.c instead when it
    # is built; this stays its reference (tests/transforms/test_flatten.py): change the two together.
    parent, depth, tag, end, flags, line, hints = [], [], [], [], [], [], []
    text_node, texts, text_words, text_chars = [], [], [], []
    id_node, id_value = [], []
    class_node, class_hash = [], []
    attr_node, attr_hash = [], []
    link_node, link_url = [], []
    extra = []               # (node, element) of EXTRA_TAGS and of <a> links with a rel, read after the walk
    fragment_hrefs = []      # (node, href) of the links whose href holds a "#"
    stack = []
    in_link = 0
    in_title = 0             # open TITLE_TAGS elements
    raise_pending = False    # a <sup>/<sub> opened and no text node since (F_RAISED)
    anchor = None            # the permalink anchor just skipped, whose end event comes next
    line_no = 0
    tag_of = TAG_ID.get
    block, leaf, dropped = BLOCK_TAGS, rules.leaves, rules.dropped
    hidden_bit, tag_hint = HINT_BIT["hidden"], _HINT_OF_TAG
    words_of = count_words
    browser = rules.browser_text
    pre_tags = PRE_TAGS if browser else frozenset()
    # Layout state between text nodes (browser_text): whether whitespace was seen since
    # the last text node, whether an element ended and whether one started since then
    # (see F_SPACE_BEFORE in add_text), whether the last text ended in a letter or digit,
    # and inside a preformatted element the whitespace-only runs not yet given to a text
    # node (they are not nodes, design §1, but a browser shows them).
    space_pending = closed_since = opened_since = word_end = False
    pre_depth = 0
    pre_first_text = 0       # index into `texts` of the outermost PRE element's first text
    pre_pending = []         # pieces, not one string: appending to a string is quadratic

    def add_text(raw, p):
        nonlocal space_pending, closed_since, opened_since, word_end, pre_pending, raise_pending
        if pre_depth:
            if raw.isspace():
                pre_pending.append(raw)
                return
            if pre_pending:
                pre_pending.append(raw)
                s = "".join(pre_pending)
                pre_pending = []
            else:
                s = raw
            if len(texts) == pre_first_text:
                # A browser drops the newline right after <pre>; blank lines at the edges
                # of a code block are no text either (the last text is trimmed at </pre>).
                lead = len(s) - len(s.lstrip())
                s = s[s.rfind("\n", 0, lead) + 1:]
            collapsed = " ".join(s.split())
            flag = F_PRE
        else:
            s = collapsed = " ".join(raw.split())
            if not s:
                space_pending = True
                return
            # Without whitespace in the HTML a browser runs the texts together ("x<b>y</b>z"
            # is "xyz", "word</a>," is "word,"). Not so where one element ends and another
            # begins between a letter or digit and the next ("<a>One</a><a>Two</a>",
            # minified spans, an icon <img> between): pages set those apart with CSS. In
            # page-wcxb-dev's annotated gold such words are separated 1,459 times and run
            # together 111 times (the docs corpora's gold joins the HTML's text without
            # CSS, so it runs them together by construction): they get a space rather
            # than make a word the page never shows.
            apart = closed_since and opened_since and word_end and s[0].isalnum()
            flag = F_SPACE_BEFORE if space_pending or raw[0].isspace() or apart or not browser else 0
            space_pending = raw[-1].isspace()
            word_end = s[-1].isalnum()
        closed_since = opened_since = False
        if raise_pending:
            if not pre_depth:
                flag |= F_RAISED
            raise_pending = False
        i = len(parent)
        parent.append(p)
        depth.append(len(stack))
        tag.append(TEXT)
        end.append(i + 1)
        flags.append(flag | F_IN_LINK if in_link else flag)
        hints.append(0)
        line.append(line_no)
        text_node.append(i)
        texts.append(s)
        text_words.append(words_of(collapsed))
        text_chars.append(len(collapsed))

    if body is None:
        parent.append(-1), depth.append(0), tag.append(TAG_ID["body"]), end.append(1)
        flags.append(0), line.append(0), hints.append(0)
    else:
        walker = etree.iterwalk(body, events=("start", "end"))
        skip = walker.skip_subtree
        for event, el in walker:
            name = el.tag
            if not isinstance(name, str):
                continue
            name = name.lower()
            if event == "start":
                if name in dropped and el is not body:
                    skip()
                    continue
                if name in _ANCHOR_TAGS and _is_permalink(el, in_title > 0, rules):
                    skip()
                    anchor = el
                    continue
                i = len(parent)
                flag = F_IN_LINK if in_link else 0
                role = tag_hint.get(name, 0)
                attrib = el.attrib
                if attrib:
                    href = rel = None
                    for k, v in attrib.items():
                        if k == "class":
                            hashes, bits, roles = _class_info(v)
                            class_node.extend([i] * len(hashes))
                            class_hash.extend(hashes)
                            flag |= bits
                            role |= roles
                        elif k == "id":
                            h, bits, roles = _id_info(v)
                            if h:
                                id_node.append(i)
                                id_value.append(h)
                            flag |= bits
                            role |= roles
                        else:
                            attr_node.append(i)
                            attr_hash.append(_hash32(f"{k}={v}"))
                            if k == "href":
                                href = v
                            elif k == "rel":
                                rel = v
                            elif k == "role" and v.strip().lower() == "navigation":
                                flag |= F_NAV_HINT | F_NAV_WORD
                                role |= HINT_BIT["nav"]
                            elif k == "hidden" or (k == "aria-hidden" and v.strip().lower() == "true") \
                                    or (k == "style" and _HIDDEN_STYLE.search(v)):
                                role |= hidden_bit
                                flag |= F_HIDDEN
                    if name == "a" and href is not None:
                        flag |= F_LINK
                        target = resolve_link(base_url, href)
                        if target is not None:
                            link_node.append(i)
                            link_url.append(target)
                            if "#" in href:
                                fragment_hrefs.append((i, href))
                            if rel is not None:
                                extra.append((i, el))       # its rel flags (meta.node_extras)
                if name == "nav":
                    flag |= F_NAV_ALL
                if name in EXTRA_TAGS:
                    extra.append((i, el))
                opened_since = True
                if name in block:
                    line_no += 1
                tid = tag_of(name)
                parent.append(stack[-1] if stack else -1)
                depth.append(len(stack))
                tag.append(tag_id(name) if tid is None else tid)
                end.append(i + 1)
                flags.append(flag)
                hints.append(role)
                line.append(line_no)
                stack.append(i)
                if name == "a":
                    in_link += 1
                if name in TITLE_TAGS:
                    in_title += 1
                if name in leaf:
                    # The element is content, its inside is not: no child
                    # events follow, the "end" event closes it as usual.
                    skip()
                    continue
                if name in pre_tags:
                    if not pre_depth:
                        pre_first_text, pre_pending = len(texts), []
                    pre_depth += 1
                if name in RAISED_TAGS:
                    raise_pending = True
                if el.text:
                    add_text(el.text, i)
            else:
                if (name in dropped and el is not body) or el is anchor:
                    anchor = None
                    if el.tail:
                        add_text(el.tail, stack[-1])
                    continue
                i = stack.pop()
                end[i] = len(parent)
                closed_since = True
                if name == "a":
                    in_link -= 1
                if name in TITLE_TAGS:
                    in_title -= 1
                if name in RAISED_TAGS:
                    raise_pending = False
                if name in pre_tags and name not in leaf:
                    pre_depth -= 1
                    if not pre_depth:
                        if len(texts) > pre_first_text:
                            texts[-1] = texts[-1].rstrip()
                        pre_pending = []
                        space_pending = True
                if name in block:
                    line_no += 1
                if el.tail and el is not body:
                    add_text(el.tail, stack[-1])

    n = len(parent)
    i32, u32 = np.int32, np.uint32
    parent_arr = np.array(parent, dtype=i32)
    text_idx = np.array(text_node, dtype=np.int64)
    chars = np.zeros(n, dtype=i32)
    chars[text_idx] = text_chars
    lengths = np.zeros(n, dtype=i32)
    lengths[text_idx] = [len(t) for t in texts]
    words = np.zeros(n, dtype=i32)
    words[text_idx] = text_words
    id_hash = np.zeros(n, dtype=u32)
    id_hash[np.array(id_node, dtype=np.int64)] = id_value

    def ragged_ptr(owner):
        counts = np.bincount(np.array(owner, dtype=np.int64), minlength=n)
        return np.concatenate(([0], np.cumsum(counts))).astype(i32)

    page = CompactPage(
        url=url, title=title, base_url=base_url,
        parent=parent_arr, depth=np.array(depth, dtype=i32),
        tag=np.array(tag, dtype=i32), end=np.array(end, dtype=i32),
        child_count=(np.bincount(parent_arr[1:], minlength=n) if n > 1 else np.zeros(n)).astype(i32),
        flags=np.array(flags, dtype=np.uint16), hints=np.array(hints, dtype=u32),
        line=np.array(line, dtype=i32), id_hash=id_hash,
        class_ptr=ragged_ptr(class_node), class_hash=np.array(class_hash, dtype=u32),
        attr_ptr=ragged_ptr(attr_node), attr_hash=np.array(attr_hash, dtype=u32),
        text_ptr=np.concatenate(([0], np.cumsum(lengths))).astype(i32), text="".join(texts),
        words=words, chars=chars,
        link_node=np.array(link_node, dtype=i32), link_url=tuple(link_url),
        html_bytes=html_len, notes=notes,
    )
    page.side = node_extras(extra, base_url, fragment_hrefs, page)
    return page


# Tag property bits of _tag_props, as transforms/_flatten.c reads them.
_T_DROP, _T_LEAF, _T_BLOCK, _T_PRE, _T_EXTRA, _T_A, _T_NAV, _T_TITLE, _T_RAISED, _T_BUTTON = \
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512


def _tag_props(name: str, rules: ParseRules) -> tuple:
    """(tag id, _T_* bits, HINT_BIT bits of the tag) of an element named `name` (lxml's tag,
    case kept), as _flatten reads them; the compiled walk asks once per distinct name per page."""
    name = name.lower()
    bits = ((_T_DROP if name in rules.dropped else 0) | (_T_LEAF if name in rules.leaves else 0)
            | (_T_BLOCK if name in BLOCK_TAGS else 0) | (_T_PRE if name in PRE_TAGS else 0)
            | (_T_EXTRA if name in EXTRA_TAGS else 0) | (_T_A if name == "a" else 0)
            | (_T_NAV if name == "nav" else 0) | (_T_TITLE if name in TITLE_TAGS else 0)
            | (_T_RAISED if name in RAISED_TAGS else 0) | (_T_BUTTON if name == "button" else 0))
    return tag_id(name), bits, _HINT_OF_TAG.get(name, 0)


_TAG_PROPS: dict = {}


def _tag_props_of(rules: ParseRules):
    """_tag_props for one ParseRules, cached by name (names repeat across pages)."""
    props = _TAG_PROPS.get(rules)
    if props is None:
        props = _TAG_PROPS[rules] = lru_cache(maxsize=1 << 12)(partial(_tag_props, rules=rules))
    return props


# What _flatten_compiled gives for a body that may have more nodes than its limit.
_UNCOUNTED = object()
_WALK_CONSTS = (F_LINK, F_IN_LINK, F_NAV_HINT, F_NAV_WORD, F_NAV_ALL, F_SPACE_BEFORE, F_PRE, F_RAISED, F_HIDDEN,
                HINT_BIT["nav"], HINT_BIT["hidden"])
_PERMALINK_OF: dict = {}


def _permalink_of(rules: ParseRules):
    got = _PERMALINK_OF.get(rules)
    if got is None:
        got = _PERMALINK_OF[rules] = lambda el, in_title: _is_permalink(el, in_title, rules)
    return got


# (rules, (_tag_props_of(rules), _permalink_of(rules))) of the last parse: a frozen ParseRules
# hashes all its fields on every dict lookup, and a run parses every page with the same rules.
_LAST_RULES: tuple = (None, None)


def _walk_callables(rules: ParseRules) -> tuple:
    global _LAST_RULES
    last_rules, got = _LAST_RULES
    if last_rules is not rules:
        got = (_tag_props_of(rules), _permalink_of(rules))
        _LAST_RULES = (rules, got)
    return got


def _flatten_compiled(body, url: str, title: str, base_url: str, html_len: int, notes: tuple,
                      rules: ParseRules = PRODUCT_RULES, root=None, declared: list | None = None,
                      limit: int | None = None):
    """`_flatten`'s CompactPage from transforms/_flatten.c, or None where the compiled walk
    leaves the page to the reference (a tree it does not read exactly as lxml does).

    With the document's `root` (the body lies under it), the walk also gathers what
    meta.page_metadata reads of the document (meta._declared_elements), which it appends to
    `declared`: one pass over the body for both. With a `limit`, _UNCOUNTED where the
    body may have more nodes than that (count_nodes' count, which is never below XPath's)."""
    tag_props, permalink = _walk_callables(rules)
    if limit is None:
        out = _compiled.walk(body, base_url, _base_parts(base_url), tag_props, _class_info, _id_info,
                             resolve_link, count_words, _HIDDEN_STYLE.search, permalink,
                             rules.browser_text, _WALK_CONSTS, root)
    else:
        out = _compiled.walk(body, base_url, _base_parts(base_url), tag_props, _class_info, _id_info,
                             resolve_link, count_words, _HIDDEN_STYLE.search, permalink,
                             rules.browser_text, _WALK_CONSTS, root, limit)
        if out is False:
            return _UNCOUNTED
    if out is None:
        return None
    (parent, depth, tag, end, child_count, flags, hints, line, id_hash, class_ptr, class_hash,
     attr_ptr, attr_hash, text_ptr, text, words, chars, link_node, link_url, extra, fragment_node, fragments,
     gathered) = out
    if declared is not None:
        declared.append(gathered)

    # The walk hands over bytearrays: their arrays are writable, as the reference's are, and
    # an empty one gives an empty array of the dtype.
    arr = np.frombuffer
    i32, u32 = np.int32, np.uint32
    page = CompactPage(
        url=url, title=title, base_url=base_url,
        parent=arr(parent, i32), depth=arr(depth, i32), tag=arr(tag, i32), end=arr(end, i32),
        child_count=arr(child_count, i32), flags=arr(flags, np.uint16), hints=arr(hints, u32),
        line=arr(line, i32), id_hash=arr(id_hash, u32),
        class_ptr=arr(class_ptr, i32), class_hash=arr(class_hash, u32),
        attr_ptr=arr(attr_ptr, i32), attr_hash=arr(attr_hash, u32),
        text_ptr=arr(text_ptr, i32), text=text, words=arr(words, i32), chars=arr(chars, i32),
        link_node=arr(link_node, i32), link_url=tuple(link_url),
        html_bytes=html_len, notes=notes,
    )
    page.side = node_extras(extra, base_url, page=page, fragments=(arr(fragment_node, i32), fragments))
    return page


def aligned_nodes(body, rules: ParseRules = PRODUCT_RULES) -> Iterator[tuple[int, object, str]]:
    """(node index, lxml element, kind) for every node `_flatten(body, ..., rules)` creates, in its order.

    kind "element": the node is the element itself; "text": the node is the
    element's .text; "tail": the node is the element's .tail. This is how a
    view puts compact-page results back onto the HTML: it must follow
    `_flatten`'s walk step for step (same events, same dropped and leaf
    rules, same whitespace-only text skipping), so change the two together;
    tests/transforms/test_page.py checks them against each other. Collect the items
    before changing the tree: lxml's walker must not see its tree move.
    """
    if body is None:
        yield 0, None, "element"
        return
    i = 0
    in_title = 0
    walker = etree.iterwalk(body, events=("start", "end"))
    skip = walker.skip_subtree
    dropped, leaf = rules.dropped, rules.leaves
    for event, el in walker:
        name = el.tag
        if not isinstance(name, str):
            continue
        name = name.lower()
        if event == "start":
            if name in dropped and el is not body:
                skip()
                continue
            if name in _ANCHOR_TAGS and _is_permalink(el, in_title > 0, rules):
                skip()
                continue
            if name in TITLE_TAGS:
                in_title += 1
            yield i, el, "element"
            i += 1
            if name in leaf:
                skip()
            elif el.text and el.text.split():
                yield i, el, "text"
                i += 1
        else:
            if name in TITLE_TAGS:
                in_title -= 1
            if el is not body and el.tail and el.tail.split():
                yield i, el, "tail"
                i += 1
