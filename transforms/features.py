"""Block features (design §10): seed 002's, their DOM-only substitutes, and the product's
page and site features, one float32 row per block.

Everything is computed per page with vector operations over the compact page
and the blocks (`transforms/blocks.py`), never per node; the block texts' own
columns and text keys in one pass per text in C (`transforms/_features.c`), with
the Python code here as its reference (a few regular expressions and numpy over
the page's code points). The per-node loops where numpy would spend dozens of calls on
small arrays (siblings of the same shape, the owners' class/id hints, nearest marked
ancestors, the block roles' context elements) and the role cues' text scans are compiled
there too, the numpy and regular-expression code here (and tree.nearest_in_mask_doubling) their
reference.

Site features take NaN ("missing") when the page has no other page of its site:
tree models route missing values on their own, so a single-page site is judged
by the page features alone instead of by invented no-site numbers.
"""
from __future__ import annotations

import os
import re
import zlib
from functools import lru_cache
from dataclasses import dataclass

import numpy as np

from sitestrip.transforms.blocks import GROUPS, Blocks, hidden_elements
from sitestrip.transforms.conex_page import ContentFeatures, content_features, standardize
from sitestrip.transforms.page import (F_IN_LINK, HINT_BIT, HINT_NAMES, KNOWN_TAGS, TAG_ID, TEXT, CompactPage,
                                       has_tag, tag_table)
from sitestrip.transforms.page_type import CUE_STRINGS, PAGE_TYPES, SHORT_BLOCK_WORDS, keep_cue_counts
from sitestrip.transforms.tree import elements_below, links_below, nearest_in_mask, subtree_sum, words_below

try:
    # Block texts' character and pattern columns, text keys and per-node loops, compiled
    # (transforms/_features.c, built by `pip install`); _text_columns_python, text_key,
    # _sibling_shapes_python, _structure_python, _owner_hints's numpy loop and the _role_*_python
    # functions are its reference and run where the extension is missing.
    from sitestrip.transforms import _features as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
# Tests switch it off to compare both paths; SITESTRIP_FEATURES=python does so for a process.
_COMPILED = os.environ.get("SITESTRIP_FEATURES", "compiled") != "python"

# Bump when a feature's definition or the column order changes: a model trained on
# another feature set is refused (transforms/model.py).
FEATURE_SET_VERSION = "blocks-v2"

METHODS = ("cs", "partial_cs", "linked", "cluster", "site_sample", "page_only")
_NEAR_LEVELS = 2        # ancestors whose hints count as "near" (seed 002's is_desc_X, local)
_FAR_LEVELS = 8         # ... and as "far"; BODY never counts
_REGION_LEVELS = (1, 2, 3, 4)
_SHAPE_LEVELS = 3
# Sibling tags of the is_sib_* columns, as tables (page.has_tag).
_SIBLING_TAGS = (("is_sib_p", tag_table("p")), ("is_sib_a", tag_table("a")),
                 ("is_sib_input", tag_table("input", "button", "select", "textarea", "form", "label")))
_TEXT_PATTERNS = (
    ("rights", re.compile(r"rights reserved|copyright|©")),
    ("like", re.compile(r"\blike\b|\bfollow\b")),
    ("share", re.compile(r"\bshare\b|\btweet\b|facebook|pinterest|\bemail this\b")),
    ("comment", re.compile(r"\bcomments?\b|\brepl(?:y|ies)\b")),
    ("more", re.compile(r"read more|continue reading|\bmore\b|»|›")),
    ("advert", re.compile(r"advertis|sponsored|\bpromoted\b")),
    ("subscribe", re.compile(r"subscribe|sign up|newsletter|log ?in\b|sign in|cookie")),
    ("byline", re.compile(r"(?m:^)[ \t]*(?:by|posted|published|updated)\b")),
)


# Block roles (docs/algorithms.md "Block roles"): the elements a block sits in that say what it
# is (a figure's caption, a quotation, a table cell, a page header's line, a form's label) ...
_CONTEXT_TAGS = ("figure", "figcaption", "blockquote", "table", "header", "footer", "aside", "form",
                 "address", "dl", "details", "article", "main", "section", "ul", "ol", "button", "label")
# Bit k of a tag's entry: the tag is _CONTEXT_TAGS[k] (one lookup per page for all of them).
_CONTEXT_BITS = np.zeros(len(KNOWN_TAGS) + 1, dtype=np.int64)
for _k, _t in enumerate(_CONTEXT_TAGS):
    _CONTEXT_BITS[TAG_ID[_t]] |= 1 << _k
ROLE_BLOCK_WORDS = 25
_TIME_TABLE, _IMG_TABLE = tag_table("time"), tag_table("img", "picture", "video", "iframe", "figure")
# The same for transforms/_features.c role_nodes: bit 0 <time>, bit 1 an image.
_CONTAINS_BITS = _TIME_TABLE.astype(np.int64) | (_IMG_TABLE.astype(np.int64) << 1)
# ... and how its own line reads: a credit, a dateline, a promo line that sends the reader
# elsewhere, a call to subscribe or share, a reading time. Several languages; each pattern
# anchored where such a line starts, so a sentence that merely mentions "photo" is not one.
# Cues at the start of the line (the block's text) ...
_ROLE_START_CUES = (
    ("credit", r"(?:photo|foto|bild|image|picture|credit|quelle|source|illustration|video)s?\b[^\n]{0,40}?[:/|]|©"),
    ("dateline", r"(?:updated|published|posted|last modified|aktualisiert|veröffentlicht|stand)\b|"
                 r"(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,? |\d{1,2}[./]\d{1,2}[./]\d{2,4}|"
                 r"(?:19|20)\d\d-[01]\d-[0-3]\d|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? "
                 r"\d{1,2},? (?:19|20)\d\d"),
    ("byline", r"(?:by|von|par|por|door|di|written by|text:|autor(?:in)?:|author:)\s+\S"),
    ("promo", r"(?:read more|read also|also read|see also|related|more:|watch|listen|lesen sie (?:auch|mehr)|"
              r"mehr zum thema|auch interessant|weiterlesen|lire aussi|recommended|you may also like|most read|"
              r"most popular|trending|sponsored|anzeige)\b"),
)
# ... and anywhere in it.
_ROLE_ANY_CUES = (
    ("credit", ("getty images", "reuters", r"afp\b", "ap photo", r"dpa\b", "shutterstock", "istock", r"imago\b")),
    ("subscribe", ("newsletter", "subscribe", "sign up", "abonnieren", "follow us", "share (?:this|on)",
                   r"teilen\b", "download (?:the|our) app")),
    ("reading_time", ("min read", "mins read", "minute read", "minutes read", r"min\. read", "minuten lesezeit",
                      "lesezeit", "reading time")),
)
_ROLE_NAMES = ("credit", "dateline", "byline", "promo", "subscribe", "reading_time")
# The first three characters a start cue can have (a digit or © aside): most short lines start
# otherwise and skip the regular expression.
_ROLE_HEADS = frozenset(w[:3] for w in (
    "photo foto bild image picture credit quelle source illustration video updated published posted last "
    "aktualisiert veröffentlicht stand mon tue wed thu fri sat sun jan feb mar apr may jun jul aug sep oct "
    "nov dec by von par por door di written text: autor author read also see related more: watch listen "
    "lesen mehr auch weiterlesen lire recommended you most trending sponsored anzeige").split()) | {"by ", "di "}


def _head_key(head: str, n: int) -> int:
    key = 0
    for ch in head[:n]:
        key = (key << 21) | ord(ch)
    return key


_ROLE_HEAD_KEYS = np.array(sorted(_head_key(h, 3) for h in _ROLE_HEADS if len(h) == 3), dtype=np.int64)
_ROLE_HEAD2_KEYS = np.array(sorted(_head_key(h, 2) for h in _ROLE_HEADS if len(h) == 2), dtype=np.int64)
# transforms/_features.c role_text reads '\n' past a short text's end where the reference reads
# the next characters of the joined page text: the same decision only while no head holds
# '\n' or the padding 0.
assert not any(c in h for h in _ROLE_HEADS for c in "\n\0")
_ROLE_START = re.compile(r"[ \t]*(?:" + "|".join(f"(?P<{name}>{p})" for name, p in _ROLE_START_CUES) + ")")
# Each alternative of the anywhere cues with the literal it starts with: the scan runs only over
# the alternatives whose literal the text holds (a substring test, far cheaper than the scan).
_ROLE_ANY_PARTS = tuple((name, part, re.match(r"[a-z ]+", part).group(0))
                        for name, parts in _ROLE_ANY_CUES for part in parts)

# The groups of the anywhere cues, in _ROLE_ANY_CUES's order: bit k of _features.c role_any's
# result is group k.
_ROLE_ANY_NAMES = tuple(name for name, _ in _ROLE_ANY_CUES)


@lru_cache(maxsize=256)
def _role_any(parts: tuple):
    return re.compile("|".join(f"(?P<{name}>{'|'.join(p for n, p in parts if n == name)})"
                               for name in dict.fromkeys(n for n, _ in parts)))


def _names() -> tuple:
    names = ["words_log", "chars_log", "mean_word_len", "punct_per_word", "sentences",
             "commas_per_word", "digit_share", "ends_with_punct", "upper_start"]
    names += [f"contains_{name}" for name, _ in _TEXT_PATTERNS]
    names += [f"group_{g}" for g in GROUPS] + ["heading_level", "is_instance"]
    names += ["link_char_share", "links_in_owner_log", "is_desc_a", "is_link", "has_children",
              "child_elements_log", "siblings_log", "is_sib_p", "is_sib_a", "is_sib_input",
              "distance_to_root", "doc_dom_depth", "depth_ratio", "text_density_log",
              "owner_words_share", "normalized_top", "normalized_bottom", "is_uppermost",
              "is_bottommost", "block_position", "invisible"]
    names += [f"near_{h}" for h in HINT_NAMES] + [f"far_{h}" for h in HINT_NAMES]
    names += ["prev_words_log", "next_words_log", "prev_link_share", "next_link_share",
              "prev_same_group", "next_same_group"]
    names += [f"region_share_{k}" for k in _REGION_LEVELS]
    names += ["same_shape_siblings_log", "same_shape_max_log", "same_tag_siblings_log"]
    names += ["conex_word", "conex_hyperlink", "conex_children", "conex_position",
              "in_page_conex", "in_menex_menu"]
    names += ["has_site", "site_pages_log", "cs_size", "candidates"] + [f"method_{m}" for m in METHODS]
    names += ["occ_min", "occ_mean", "occ_max", "occ_owner", "template_word_share"]
    names += [f"region_template_{k}" for k in _REGION_LEVELS]
    names += ["text_on_candidates", "text_site_share"]
    names += [f"in_{t}" for t in _CONTEXT_TAGS] + ["contains_time", "contains_img", "hidden_element",
                                                                 "hidden_words_log"]
    names += [f"role_{name}" for name in _ROLE_NAMES] + ["caps_share", "short_line"]
    names += [f"page_type_{t}" for t in PAGE_TYPES]
    return tuple(names)


FEATURE_NAMES = _names()
_COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}
_ROLE_COLUMNS = slice(_COLUMN["role_" + _ROLE_NAMES[0]], _COLUMN["role_" + _ROLE_NAMES[-1]] + 1)
assert [_COLUMN["role_" + name] for name in _ROLE_NAMES] == list(range(_ROLE_COLUMNS.start, _ROLE_COLUMNS.stop))
_ROLE_BIT = {name: 1 << k for k, name in enumerate(_ROLE_NAMES)}
# role_any's bits (group k of _ROLE_ANY_NAMES) as _ROLE_BIT bits, per value of role_any's result.
_ROLE_ANY_BITS = np.array([sum(_ROLE_BIT[name] for k, name in enumerate(_ROLE_ANY_NAMES) if b >> k & 1)
                           for b in range(1 << len(_ROLE_ANY_NAMES))], dtype=np.int64)


def _columns(names) -> slice | list:
    """The columns of `names`, as a slice where they are adjacent and in order: numpy writes a
    slice of columns in one strided pass, a list of them through an index array."""
    at = [_COLUMN[name] for name in names]
    return slice(at[0], at[-1] + 1) if at == list(range(at[0], at[0] + len(at))) else at


_NEAR_COLUMNS = _columns(f"near_{h}" for h in HINT_NAMES)
_PATTERN_COLUMNS = _columns(f"contains_{name}" for name, _ in _TEXT_PATTERNS)
_FAR_COLUMNS = _columns(f"far_{h}" for h in HINT_NAMES)
_CONTEXT_COLUMNS = _columns(f"in_{t}" for t in _CONTEXT_TAGS)
_CONTAINS_COLUMNS = _columns(("contains_time", "contains_img"))
assert [_COLUMN[f"group_{g}"] for g in GROUPS] == list(range(_COLUMN[f"group_{GROUPS[0]}"],
                                                              _COLUMN[f"group_{GROUPS[-1]}"] + 1))
_GROUP_CODES = np.arange(len(GROUPS))
# h1..h6's level per known tag id, 0 for every other tag and (last entry, page.has_tag's
# clipping) for the unknown ones.
_HEADING_LEVEL = np.zeros(len(KNOWN_TAGS) + 1)
_HEADING_LEVEL[[TAG_ID[f"h{level}"] for level in range(1, 7)]] = np.arange(1, 7)


@dataclass
class SiteSignals:
    """What the site says about one key page (design §6, §4): None fields = no site."""
    occurrences: np.ndarray          # per node: candidate pages it maps into (TemEx)
    candidates: int                  # TemEx candidate pages
    method: str
    cs_size: int
    site_pages: int                  # pages of the site shard
    text_on_candidates: np.ndarray   # per block: share of candidate pages showing the same text
    text_site_share: np.ndarray      # per block: share of the site's other pages showing it


def text_key(text: str) -> int:
    """Identity of a block text across pages: case and spacing folded."""
    return zlib.crc32(" ".join(text.lower().split()).encode("utf-8", "surrogatepass"))


def text_keys(texts: list[str]) -> np.ndarray:
    if _compiled is not None and _COMPILED:
        keys = np.empty(len(texts), dtype=np.int64)
        _compiled.text_keys(list(texts), keys)
        return keys
    return np.array([text_key(t) for t in texts], dtype=np.int64)


def _ancestors(page: CompactPage, nodes: np.ndarray, levels: int) -> list:
    """[nodes, their parents, ..., `levels` levels up] (the root stays the root): each level
    one step from the one below, so the region and shape columns share the walk."""
    out = [nodes.astype(np.int64)]
    for _ in range(levels):
        up = page.parent[out[-1]]
        out.append(np.where(up >= 0, up, out[-1]))
    return out


# Every match of every _TEXT_PATTERNS alternative starts with one of these two letters or
# characters, or (byline) at a line start. Python's re tries all the alternatives at every
# position of the page's text; this lookahead turns most positions away with one cheap test
# first, which made the scan 2.4–3.3x faster with the same matches (tests/transforms/test_features.py).
_MATCH_STARTS = r"(?=ri|co|li|fo|sh|tw|fa|pi|em|re|mo|ad|sp|pr|su|si|ne|lo|[©»›]|(?m:^))"
_ALTERNATION = "|".join(f"(?P<{name}>{p.pattern})" for name, p in _TEXT_PATTERNS)
_ANY_PATTERN = re.compile(f"{_MATCH_STARTS}(?:{_ALTERNATION})")
_PUNCT_CHARS = np.array([ord(c) for c in ",;:.!?、，。！？"], dtype=np.uint32)
_END_CHARS = np.array([ord(c) for c in ".!?。！？"], dtype=np.uint32)
_CLOSING_CHARS = np.array([ord(c) for c in ".!?:;。！？\"”'"], dtype=np.uint32)
_SPACE, _DIGIT, _PUNCT, _END = 1, 2, 4, 8
_CHAR_CLASSES = None


def _char_classes() -> np.ndarray:
    """uint8 per code point (all of Unicode, surrogates included): the _SPACE, _PUNCT and
    _END bits, and _DIGIT for the ASCII digits (the only ASCII characters str.isdigit
    accepts). One table lookup per character of a page replaces four membership passes."""
    global _CHAR_CLASSES
    if _CHAR_CLASSES is None:
        table = np.zeros(0x110000, dtype=np.uint8)
        table[[32, 10]] |= _SPACE
        table[ord("0"):ord("9") + 1] |= _DIGIT
        table[_PUNCT_CHARS] |= _PUNCT
        table[_END_CHARS] |= _END
        _CHAR_CLASSES = table
    return _CHAR_CLASSES


def _spread_bits(bits: np.ndarray, x: np.ndarray, columns, count: int) -> None:
    """x[:, columns] = bit k of each row's `bits` for k < count (an integer array per block)."""
    if (_compiled is not None and _COMPILED and isinstance(columns, slice) and x.dtype in (np.float32, np.float64)
            and x.flags.c_contiguous and bits.dtype.itemsize in (4, 8)):
        _compiled.bit_columns(np.ascontiguousarray(bits), x, columns.start, count)
    else:
        x[:, columns] = (bits[:, None] >> np.arange(count, dtype=bits.dtype)) & 1


def _text_columns(texts: list[str], x: np.ndarray) -> None:
    if _compiled is not None and _COMPILED:
        _text_columns_compiled(texts, x)
    else:
        _text_columns_python(texts, x)


# Columns of _compiled.text_columns's counts (transforms/_features.c), per block.
_C_WORDS, _C_PUNCT, _C_SENTENCES, _C_COMMAS, _C_DIGITS, _C_LENGTH, _C_CLOSING, _C_UPPER, _C_PATTERNS = range(9)


def _text_columns_compiled(texts: list[str], x: np.ndarray) -> None:
    """_text_columns_python's columns from the counts _features.c takes in one pass per block
    text, divided the same way (int64 counts over float64 or int64 divisors), so every value is
    the same float."""
    if not texts:
        return
    counts = np.empty((len(texts), _compiled.COLUMNS), dtype=np.int64)
    _compiled.text_columns(list(texts), counts)
    _count_columns(counts, x)


def _text_role_compiled(texts: list[str], words: np.ndarray, x: np.ndarray | None) -> np.ndarray:
    """_text_columns_compiled's columns into `x` (None: not wanted), and int64[blocks, 4] of the
    role columns' text values: role_text's three (ASCII capitals, ASCII letters, a possible
    start cue), and role_any's bits for the blocks of at most ROLE_BLOCK_WORDS words (0 for the
    others). One pass over the texts (_features.c text_role_columns), which counts the page
    type's text cues too: page_type.keep_cue_counts keeps them for these texts and words, so
    that step does not read the texts again."""
    nb = len(texts)
    counts = np.empty((nb, _compiled.COLUMNS), dtype=np.int64)
    roles = np.empty((nb, 4), dtype=np.int64)
    cues = np.empty(len(CUE_STRINGS), dtype=np.int64)
    _compiled.text_role_columns(texts if type(texts) is list else list(texts),
                                np.ascontiguousarray(words, dtype=np.int64), ROLE_BLOCK_WORDS,
                                _ROLE_HEAD_KEYS, _ROLE_HEAD2_KEYS, counts, roles, CUE_STRINGS,
                                SHORT_BLOCK_WORDS, cues)
    keep_cue_counts(texts, words, cues)
    if nb and x is not None:
        _count_columns(counts, x)
    return roles


# _count_columns's columns as _features.c count_columns takes them: the six single columns, then
# the first pattern column.
_COUNT_AT = np.array([_COLUMN[name] for name in ("punct_per_word", "sentences", "commas_per_word",
                                                  "digit_share", "ends_with_punct", "upper_start")]
                     + [_PATTERN_COLUMNS.start], dtype=np.int64)
assert isinstance(_PATTERN_COLUMNS, slice)


def _count_columns(counts: np.ndarray, x: np.ndarray) -> None:
    """The text columns of text_columns's counts. Compiled, one call writes them (a dozen numpy
    calls on strided columns otherwise, the reference below)."""
    if _compiled is not None and _COMPILED and x.flags.c_contiguous and x.dtype in (np.float32, np.float64):
        _compiled.count_columns(np.ascontiguousarray(counts, dtype=np.int64), x, _COUNT_AT, len(_TEXT_PATTERNS))
        return
    col = _COLUMN
    n_words = np.maximum(counts[:, _C_WORDS], 1).astype(np.float64)
    x[:, col["punct_per_word"]] = counts[:, _C_PUNCT] / n_words
    x[:, col["sentences"]] = counts[:, _C_SENTENCES]
    x[:, col["commas_per_word"]] = counts[:, _C_COMMAS] / n_words
    x[:, col["digit_share"]] = counts[:, _C_DIGITS] / np.maximum(counts[:, _C_LENGTH], 1)
    x[:, col["ends_with_punct"]] = counts[:, _C_CLOSING]
    x[:, col["upper_start"]] = counts[:, _C_UPPER]
    _spread_bits(counts[:, _C_PATTERNS], x, _PATTERN_COLUMNS, len(_TEXT_PATTERNS))


def _text_columns_python(texts: list[str], x: np.ndarray) -> None:
    """Character and pattern columns of every block, over the page's block texts joined
    by newlines: numpy over code points and one regex scan per pattern per page, never a
    Python loop per character. Block texts have no leading or trailing whitespace, so each
    block ends right before its newline; a preformatted block's own line breaks count as
    spaces here (transforms/text.py keeps them), and where markup touches a word or comma
    without whitespace there is none in the text ("word,"). The shipped model was trained
    on design §1's single-space texts and scores the same on these (docs/model.md)."""
    if not texts:
        return
    joined = "\n".join(texts)
    if not joined:
        return      # one empty text: every column 0 (its last character below does not exist)
    code = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
    ends = starts + lengths

    def per_block(flags):
        return np.add.reduceat(np.append(flags, False).astype(np.int64), starts)[:len(texts)]

    classes = _char_classes()[code]
    space = (classes & _SPACE) != 0
    after_space = np.concatenate((space[1:], [True]))
    before_space = np.concatenate(([True], space[:-1]))
    # str.split() words: a non-space character after a space or the start.
    n_words = np.maximum(per_block(~space & before_space), 1).astype(np.float64)
    digit = (classes & _DIGIT) != 0
    # str.isdigit beyond ASCII (other scripts' digits, superscripts): decided once per
    # distinct non-ASCII code point of the page, usually a few.
    wide = code >= 128
    if wide.any():
        distinct = np.unique(code[wide])
        digit_points = distinct[[chr(c).isdigit() for c in distinct.tolist()]]
        if digit_points.size:
            digit |= np.isin(code, digit_points)
    digits = per_block(digit)
    col = _COLUMN
    x[:, col["punct_per_word"]] = per_block((classes & _PUNCT) != 0) / n_words
    x[:, col["sentences"]] = per_block(((classes & _END) != 0) & after_space)
    x[:, col["commas_per_word"]] = per_block(code == ord(",")) / n_words
    x[:, col["digit_share"]] = digits / np.maximum(lengths, 1)
    nonempty = lengths > 0
    last = np.where(nonempty, code[np.maximum(ends - 1, 0)], 0)
    x[:, col["ends_with_punct"]] = nonempty & np.isin(last, _CLOSING_CHARS)
    x[:, col["upper_start"]] = [t[:1].isupper() for t in texts]
    lowered = [t.lower() for t in texts]     # per block: lower() may change a text's length
    low_starts = np.concatenate(([0], np.cumsum(np.fromiter((len(t) + 1 for t in lowered), dtype=np.int64,
                                                            count=len(lowered)))[:-1]))
    low = "\n".join(lowered)
    # One scan for all patterns: no two patterns match overlapping text, so the combined
    # alternation finds every (pattern, block) pair the patterns find one by one.
    hits = [(m.start(), m.lastgroup) for m in _ANY_PATTERN.finditer(low)]
    if hits:
        block = np.searchsorted(low_starts, np.array([h[0] for h in hits]), side="right") - 1
        column = np.array([col[f"contains_{h[1]}"] for h in hits])
        x[block, column] = 1.0


def block_features(page: CompactPage, blocks: Blocks, texts: list[str], *,
                   conex_main: np.ndarray, menu_node: int | None,
                   site: SiteSignals | None, conex_features: ContentFeatures | None = None) -> np.ndarray:
    """float32[blocks, len(FEATURE_NAMES)] for one page. `conex_features`: the content
    features page ConEx computed for this page, if it did (the ratios are not computed twice)."""
    nb = blocks.count
    # Compiled, every column is written once from its float64 value and never read back, so
    # the float32 matrix holds what the float64 one rounds to at the end (the reference
    # reads some columns back, so it keeps the float64 matrix).
    compiled = _compiled is not None and _COMPILED
    x = np.zeros((nb, len(FEATURE_NAMES)), dtype=np.float32 if compiled else np.float64)
    if nb == 0:
        return x.astype(np.float32)
    col = _COLUMN
    owner = blocks.owner.astype(np.int64)
    tn = blocks.text_nodes
    starts = blocks.ptr[:-1]
    roles = None
    if compiled:
        roles = _text_role_compiled(texts, blocks.words, x)
    else:
        _text_columns_python(texts, x)
    x[:, col[f"group_{GROUPS[0]}"]:col[f"group_{GROUPS[-1]}"] + 1] = blocks.group[:, None] == _GROUP_CODES
    # The owner element's structure, the block's place in the page and its neighbours.
    if compiled:
        up = _structure_compiled(page, blocks, owner, x)
    else:
        up = _structure_python(page, blocks, owner, x)

    # Class/id hints of the owner and its nearest ancestors (never BODY).
    near, far = _owner_hints(page, owner)
    _spread_bits(near, x, _NEAR_COLUMNS, len(HINT_NAMES))
    _spread_bits(far, x, _FAR_COLUMNS, len(HINT_NAMES))

    # Page ConEx's four ratios (design §3) of the block's nearest non-leaf element, standardized
    # over every non-leaf element (not only ConEx's rated tags: the shipped models were
    # trained so), and the page-level results.
    x[:, col["conex_word"]:col["conex_word"] + 4] = _conex_columns(page, owner, conex_features)
    x[:, col["in_page_conex"]] = conex_main[tn[starts]]
    if menu_node is not None:
        first = tn[starts]
        x[:, col["in_menex_menu"]] = (first > menu_node) & (first < page.end[menu_node])

    _site_columns(page, blocks, owner, site, x, up)
    _role_columns(page, blocks, owner, texts, x, roles)
    # Filled by the page type model (transforms/page_type.py) once the page's row is known.
    x[:, col[f"page_type_{PAGE_TYPES[0]}"]:col[f"page_type_{PAGE_TYPES[-1]}"] + 1] = np.nan
    return x if x.dtype == np.float32 else x.astype(np.float32)


def _conex_columns(page: CompactPage, owner: np.ndarray, conex_features: ContentFeatures | None) -> np.ndarray:
    """float64[blocks, 4]: page ConEx's ratios of each block's nearest rated (non-leaf) element,
    standardized over the rated elements; 0 for a block under none. Compiled, one pass over the
    rated elements (_features.c conex_columns); standardize over their rows otherwise."""
    rated = (page.tag != TEXT) & (page.child_count > 0)
    rated_owner = nearest_in_mask(page, rated)[owner]
    rated_nodes = np.flatnonzero(rated)
    if not rated_nodes.size:
        return np.zeros((owner.size, 4))
    feats = content_features(page, rated, conex_features)
    if _compiled is not None and _COMPILED:
        zs = np.empty((owner.size, 4))
        f64 = np.float64
        _compiled.conex_columns(np.ascontiguousarray(feats.word, dtype=f64),
                                np.ascontiguousarray(feats.hyperlink, dtype=f64),
                                np.ascontiguousarray(feats.children, dtype=f64),
                                np.ascontiguousarray(feats.position, dtype=f64), rated_nodes,
                                np.ascontiguousarray(rated_owner, dtype=np.int64), zs)
        return zs
    # The rated rows of feats.matrix() only, and each block's row found among them.
    z = standardize(np.stack([feats.word[rated_nodes], feats.hyperlink[rated_nodes],
                              feats.children[rated_nodes], feats.position[rated_nodes]], axis=1))
    at = np.searchsorted(rated_nodes, rated_owner)
    return np.where((rated_owner >= 0)[:, None], z[np.minimum(at, rated_nodes.size - 1)], 0.0)


def _role_columns(page: CompactPage, blocks: Blocks, owner: np.ndarray, texts: list[str], x: np.ndarray,
                  roles: np.ndarray | None = None) -> None:
    """The block-role columns: the context elements around the block's first text node, whether
    its owner holds a <time> or an image, whether the markup hides it, and its own line's role
    cues (blocks of at most ROLE_BLOCK_WORDS words: a credit, a dateline or a promo is a short
    line, and scanning only those keeps the cost down). `roles`: _text_role_compiled's text
    values of the blocks, None to take them here."""
    col = _COLUMN
    first = blocks.text_nodes[blocks.ptr[:-1]]
    compiled = _compiled is not None and _COMPILED
    if compiled:
        context = np.empty(first.size, dtype=np.int64)
        contains = np.empty((first.size, 2), dtype=np.int64)
        _compiled.role_nodes(page.parent, page.tag, page.end, _CONTEXT_BITS, _CONTAINS_BITS,
                             np.ascontiguousarray(first, dtype=np.int64), owner, context, contains)
        _spread_bits(context, x, _CONTEXT_COLUMNS, len(_CONTEXT_TAGS))
        x[:, _CONTAINS_COLUMNS] = contains > 0
    else:
        _role_elements_python(page, first, owner, x)
    # Inside an element the markup hides (blocks.hidden_elements). How much that element holds
    # tells a hidden heading or label (a few words) from a collapsed tab, accordion or a wrapper
    # a script toggles (whole sections), which a reader can open.
    hidden = hidden_elements(page)
    if hidden.any():
        nearest = nearest_in_mask(page, hidden)[first]
        x[:, col["hidden_element"]] = nearest >= 0
        x[:, col["hidden_words_log"]] = np.where(nearest >= 0, np.log1p(words_below(page)[np.maximum(nearest, 0)]), 0.0)
    if not texts:
        return
    if compiled and roles is None:
        roles = _text_role_compiled(texts, blocks.words, None)
    short = blocks.words <= ROLE_BLOCK_WORDS
    if compiled:
        upper, letters = roles[:, 0], roles[:, 1]
        # Bit k of a block's entry: its role_* column k (_ROLE_NAMES), the anywhere cues' groups
        # moved to their columns at once; the start cues add theirs below.
        bits = _ROLE_ANY_BITS[roles[:, 3]]
        for i in np.flatnonzero(short & (roles[:, 2] != 0)).tolist():
            m = _ROLE_START.match(texts[i].lower())
            if m:
                bits[i] |= _ROLE_BIT[m.lastgroup]
        _spread_bits(bits, x, _ROLE_COLUMNS, len(_ROLE_NAMES))
    else:
        upper, letters, candidate = _role_text_python(texts)
        rows, columns = [], []
        for i in np.flatnonzero(short & candidate).tolist():
            m = _ROLE_START.match(texts[i].lower())
            if m:
                rows.append(i)
                columns.append(col["role_" + m.lastgroup])
        # Anywhere cues: one scan over the short blocks' text.
        short_ids = np.flatnonzero(short)
        if short_ids.size:
            _role_any_python(texts, short_ids.tolist(), rows, columns)
        if rows:
            x[rows, columns] = 1.0
    x[:, col["caps_share"]] = upper / np.maximum(letters, 1)
    x[:, col["short_line"]] = blocks.words <= 12


def _role_any_python(texts: list[str], short_ids: list, rows: list, columns: list) -> None:
    """The anywhere cues' (block, column) pairs of the blocks `short_ids`: one scan of _role_any
    over their lower-cased texts joined by newlines, the reference of _features.c role_any."""
    lowered = [texts[i].lower() for i in short_ids]
    offsets = np.concatenate(([0], np.cumsum(np.fromiter((len(t) + 1 for t in lowered), dtype=np.int64,
                                                         count=len(lowered)))[:-1]))
    joined = "\n".join(lowered)
    present = tuple((name, part) for name, part, literal in _ROLE_ANY_PARTS if literal in joined)
    for m in (_role_any(present).finditer(joined) if present else ()):
        rows.append(short_ids[int(np.searchsorted(offsets, m.start(), side="right")) - 1])
        columns.append(_COLUMN["role_" + m.lastgroup])


def _role_elements_python(page: CompactPage, first: np.ndarray, owner: np.ndarray, x: np.ndarray) -> None:
    """_role_columns's element columns (in_*, contains_time, contains_img) with numpy: the
    reference of transforms/_features.c role_nodes."""
    col = _COLUMN
    end = page.end.astype(np.int64)
    context = np.take(_CONTEXT_BITS, page.tag, mode="clip")
    for k, name in enumerate(_CONTEXT_TAGS):
        # Subtrees are preorder ranges [s, end[s]): a node lies inside one of these elements iff
        # the furthest end among the elements starting at or before it reaches past it.
        starts = np.flatnonzero(context & (1 << k))
        if starts.size:
            reach = np.maximum.accumulate(end[starts])
            k_before = np.searchsorted(starts, first, side="right") - 1
            x[:, col[f"in_{name}"]] = (k_before >= 0) & (reach[np.maximum(k_before, 0)] > first)
    for name, table in (("contains_time", _TIME_TABLE), ("contains_img", _IMG_TABLE)):
        hits = np.concatenate(([0], np.cumsum(has_tag(page.tag, table))))
        x[:, col[name]] = (hits[end[owner]] - hits[owner]) > 0


def _role_text_python(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ASCII upper-case letters, ASCII letters, could start a role cue) per block text, over
    the page's newline-joined code points: the reference of transforms/_features.c role_text."""
    lengths = np.fromiter((len(t) + 1 for t in texts), dtype=np.int64, count=len(texts))
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    code = np.frombuffer("\n".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    upper = (code >= 65) & (code <= 90)
    letter = upper | ((code >= 97) & (code <= 122))
    per_block = lambda flags: np.add.reduceat(np.append(flags, False).astype(np.int64), starts)[:len(texts)]
    # Start cues: only blocks whose first characters could begin one reach the regular
    # expression (the first three code points, ASCII lower-cased, looked up at once).
    padded = np.concatenate((code + np.where(upper, 32, 0).astype(np.uint32), np.zeros(3, dtype=np.uint32)))
    heads = (padded[starts].astype(np.int64) << 42) | (padded[starts + 1].astype(np.int64) << 21) \
        | padded[starts + 2].astype(np.int64)
    first = padded[starts]
    candidate = (np.isin(heads, _ROLE_HEAD_KEYS) | np.isin(heads >> 21, _ROLE_HEAD2_KEYS)
                 | ((first >= 48) & (first <= 57)) | (first == 0xA9) | (first == 32) | (first == 9))
    return per_block(upper), per_block(letter), candidate


# The columns structure_columns (transforms/_features.c) fills, in its order: S_WORDS_LOG ...
# S_SAME_TAG_SIBLINGS_LOG, then one per sibling table, then one per region level. Those named
# *_log come back as the value to take log1p of.
_STRUCTURE_NAMES = (
    "words_log", "chars_log", "mean_word_len", "heading_level", "is_instance", "link_char_share",
    "links_in_owner_log", "is_desc_a", "is_link", "has_children", "child_elements_log", "siblings_log",
    "distance_to_root", "doc_dom_depth", "depth_ratio", "text_density_log", "owner_words_share",
    "normalized_top", "normalized_bottom", "is_uppermost", "is_bottommost", "block_position", "invisible",
    "prev_words_log", "next_words_log", "prev_link_share", "next_link_share", "prev_same_group",
    "next_same_group", "same_shape_siblings_log", "same_shape_max_log", "same_tag_siblings_log",
) + tuple(name for name, _ in _SIBLING_TAGS) + tuple(f"region_share_{k}" for k in _REGION_LEVELS)
_STRUCTURE_COLUMNS = np.array([_COLUMN[name] for name in _STRUCTURE_NAMES], dtype=np.int64)


def _runs(columns) -> list:
    """[(first column, last column + 1, first index into `columns`)] of each run of adjacent
    columns in `columns`: a matrix of them is written as a few slices, not through an index
    array."""
    runs, start = [], 0
    for k in range(1, len(columns) + 1):
        if k == len(columns) or columns[k] != columns[k - 1] + 1:
            runs.append((int(columns[start]), int(columns[k - 1]) + 1, start))
            start = k
    return runs


_STRUCTURE_RUNS = _runs(_STRUCTURE_COLUMNS)
_STRUCTURE_LOG = np.array([_COLUMN[name] for name in _STRUCTURE_NAMES if name.endswith("_log")], dtype=np.int64)
# The same columns' places in structure_columns's raw matrix, in _STRUCTURE_LOG's order.
_RAW_LOG = np.array([_STRUCTURE_NAMES.index(FEATURE_NAMES[c]) for c in _STRUCTURE_LOG])
_SIBLING_TABLES = np.stack([table for _, table in _SIBLING_TAGS])
_UP_LEVELS = max(max(_REGION_LEVELS), _SHAPE_LEVELS)


def _structure_compiled(page: CompactPage, blocks: Blocks, owner: np.ndarray, x: np.ndarray) -> np.ndarray:
    """_structure_python's columns from transforms/_features.c, one pass over the page's nodes
    and one over its blocks instead of some sixty numpy calls; the logarithms are numpy's,
    taken here over the raw values, so every column is the reference's bit for bit."""
    nb = blocks.count
    raw = np.empty((nb, len(_STRUCTURE_NAMES)))
    up = np.empty((_UP_LEVELS + 1, nb), dtype=np.int64)
    same_shape, same_tag = _sibling_shapes(page)
    i64 = np.int64
    _compiled.structure_columns(
        page.parent, page.tag, page.flags, page.hints, page.depth, page.child_count, page.words,
        page.chars, page.end, links_below(page), elements_below(page), words_below(page),
        same_shape, same_tag, owner, np.ascontiguousarray(blocks.text_nodes, dtype=i64),
        np.ascontiguousarray(blocks.ptr, dtype=i64), np.ascontiguousarray(blocks.words, dtype=i64),
        np.ascontiguousarray(blocks.group, dtype=np.int8), np.ascontiguousarray(blocks.is_instance, dtype=bool),
        _HEADING_LEVEL, _SIBLING_TABLES, (F_IN_LINK, HINT_BIT["hidden"], TAG_ID["a"], TEXT),
        np.array(_REGION_LEVELS, dtype=i64), _SHAPE_LEVELS, raw, up)
    # The logarithms of the raw float64 values, gathered in _STRUCTURE_LOG's order as the
    # reference gathers them from its float64 matrix.
    logs = np.log1p(raw[:, _RAW_LOG])
    if x.flags.c_contiguous and x.dtype in (np.float32, np.float64):
        # Every raw column, then the logarithms over theirs, written in two calls.
        _compiled.put_columns(raw, x, _STRUCTURE_COLUMNS)
        # (the gathered columns come in numpy's own order: their logarithms are taken as the
        # reference takes them and only then made row-major)
        _compiled.put_columns(np.ascontiguousarray(logs), x, _STRUCTURE_LOG)
        return up
    for first, end, at in _STRUCTURE_RUNS:
        x[:, first:end] = raw[:, at:at + end - first]
    x[:, _STRUCTURE_LOG] = logs
    return up


def _structure_python(page: CompactPage, blocks: Blocks, owner: np.ndarray, x: np.ndarray) -> list:
    """The structure, position and neighbour columns (_STRUCTURE_NAMES) of every block, and
    the owners' ancestors (_ancestors, _UP_LEVELS levels): _structure_compiled's reference,
    which returns the same ancestors as the rows of one array."""
    col = _COLUMN
    nb = blocks.count
    tn = blocks.text_nodes
    starts = blocks.ptr[:-1]
    is_text = page.tag == TEXT
    in_link = (page.flags & F_IN_LINK) != 0
    words = blocks.words.astype(np.float64)
    chars = np.add.reduceat(page.chars[tn].astype(np.float64), starts)
    link_chars = np.add.reduceat(np.where(in_link[tn], page.chars[tn], 0).astype(np.float64), starts)
    page_words = float(page.words.sum()) or 1.0

    x[:, col["words_log"]] = np.log1p(words)
    x[:, col["chars_log"]] = np.log1p(chars)
    x[:, col["mean_word_len"]] = chars / np.maximum(words, 1)
    x[:, col["heading_level"]] = np.take(_HEADING_LEVEL, page.tag[owner], mode="clip")
    x[:, col["is_instance"]] = blocks.is_instance

    # Link and structure of the owner element.
    subtree_links = links_below(page)
    element = ~is_text
    subtree_elements = elements_below(page)
    x[:, col["link_char_share"]] = link_chars / np.maximum(chars, 1)
    x[:, col["links_in_owner_log"]] = np.log1p(subtree_links[owner])
    x[:, col["is_desc_a"]] = in_link[owner] | (page.tag[owner] == TAG_ID["a"])
    child_elements = np.bincount(page.parent[1:][element[1:]], minlength=page.size)
    nxt = np.minimum(owner + 1, page.size - 1)
    x[:, col["is_link"]] = (page.child_count[owner] == 1) & (page.tag[nxt] == TAG_ID["a"]) & (nxt > owner)
    x[:, col["has_children"]] = child_elements[owner] > 0
    x[:, col["child_elements_log"]] = np.log1p(child_elements[owner])
    parent = np.maximum(page.parent[owner], 0)
    x[:, col["siblings_log"]] = np.log1p(np.maximum(page.child_count[parent] - 1, 0))
    for name, table in _SIBLING_TAGS:
        hit = has_tag(page.tag, table)
        per_parent = np.bincount(page.parent[1:], weights=hit[1:], minlength=page.size)
        x[:, col[name]] = (per_parent[parent] - hit[owner]) > 0
    depth = page.depth.astype(np.float64)
    doc_depth = float(depth.max()) or 1.0
    x[:, col["distance_to_root"]] = depth[owner]
    x[:, col["doc_dom_depth"]] = doc_depth
    x[:, col["depth_ratio"]] = depth[owner] / doc_depth
    subtree_words = words_below(page)
    x[:, col["text_density_log"]] = np.log1p(subtree_words[owner] / np.maximum(subtree_elements[owner], 1))
    x[:, col["owner_words_share"]] = subtree_words[owner] / page_words
    before = np.concatenate(([0.0], np.cumsum(words)[:-1]))
    x[:, col["normalized_top"]] = before / page_words
    x[:, col["normalized_bottom"]] = (before + words) / page_words
    x[:, col["is_uppermost"]] = x[:, col["normalized_top"]] < 0.03
    x[:, col["is_bottommost"]] = x[:, col["normalized_bottom"]] > 0.97
    x[:, col["block_position"]] = np.arange(nb) / max(nb - 1, 1)
    hidden_el = (page.hints & HINT_BIT["hidden"]) != 0
    # Never BODY, as for the role hints below: a site-wide body class ("overflow-x-hidden",
    # MediaWiki's "mw-hide-empty-elt", 4 of 407 page-wcxb-dev pages) or an anti-flicker
    # display:none that a script lifts made every block of the page invisible.
    hidden_el[0] = False
    if hidden_el.any():     # else no block is under a hidden element (nearest_in_mask: all -1)
        x[:, col["invisible"]] = nearest_in_mask(page, hidden_el)[owner] >= 0

    # Neighbouring blocks.
    link_share = link_chars / np.maximum(chars, 1)
    wlog = np.log1p(words)
    x[1:, col["prev_words_log"]] = wlog[:-1]
    x[:-1, col["next_words_log"]] = wlog[1:]
    x[1:, col["prev_link_share"]] = link_share[:-1]
    x[:-1, col["next_link_share"]] = link_share[1:]
    x[1:, col["prev_same_group"]] = blocks.group[1:] == blocks.group[:-1]
    x[:-1, col["next_same_group"]] = blocks.group[:-1] == blocks.group[1:]

    # Region: how much of the page's prose the block's ancestors hold.
    prose = np.where(is_text & ~in_link, page.words, 0)
    prose_below = subtree_sum(page, prose)
    prose_total = float(prose_below[0]) or 1.0
    up = _ancestors(page, owner, max(max(_REGION_LEVELS), _SHAPE_LEVELS))
    for k in _REGION_LEVELS:
        x[:, col[f"region_share_{k}"]] = prose_below[up[k]] / prose_total

    # Repeated sibling structure (listings: many same-shaped siblings).
    same_shape, same_tag = _sibling_shapes(page)
    x[:, col["same_shape_siblings_log"]] = np.log1p(same_shape[owner])
    best = same_shape[owner].copy()
    for k in range(1, _SHAPE_LEVELS + 1):
        best = np.maximum(best, same_shape[up[k]])
    x[:, col["same_shape_max_log"]] = np.log1p(best)
    x[:, col["same_tag_siblings_log"]] = np.log1p(same_tag[owner])
    return up


def _owner_hints(page: CompactPage, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(near, far) uint32 hint bits per block: its owner's and its ancestors' up to
    _NEAR_LEVELS (_FAR_LEVELS) above, never BODY's."""
    if _compiled is not None and _COMPILED:
        near = np.empty(owner.size, dtype=np.uint32)
        far = np.empty(owner.size, dtype=np.uint32)
        _compiled.owner_hints(page.parent, page.hints, np.ascontiguousarray(owner, dtype=np.int64),
                              _NEAR_LEVELS, _FAR_LEVELS, near, far)
        return near, far
    near = np.zeros(owner.size, dtype=np.uint32)
    far = np.zeros(owner.size, dtype=np.uint32)
    anc = owner.copy()
    for level in range(_FAR_LEVELS + 1):
        bits = np.where(anc > 0, page.hints[anc], 0).astype(np.uint32)
        far |= bits
        if level <= _NEAR_LEVELS:
            near |= bits
        anc = np.maximum(page.parent[anc], 0)
    return near, far


def _sibling_shapes(page: CompactPage) -> tuple[np.ndarray, np.ndarray]:
    """Per node: siblings of the same tag and class set, and siblings of the same tag."""
    if _compiled is not None and _COMPILED:
        same_shape = np.empty(page.size, dtype=np.float64)
        same_tag = np.empty(page.size, dtype=np.float64)
        _compiled.sibling_shapes(page.parent, page.tag, page.class_ptr, page.class_hash, TEXT,
                                 same_shape, same_tag)
        return same_shape, same_tag
    return _sibling_shapes_python(page)


def _sibling_shapes_python(page: CompactPage) -> tuple[np.ndarray, np.ndarray]:
    """_sibling_shapes's reference: (tag, class sum) groups under each parent numbered with
    np.unique."""
    n = page.size
    counts = np.diff(page.class_ptr)
    owner = np.repeat(np.arange(n), counts)
    class_sum = np.bincount(owner, weights=page.class_hash.astype(np.float64), minlength=n)
    parent = page.parent.astype(np.int64)
    tag = page.tag.astype(np.int64)
    # (tag, class sum) pairs numbered through integer keys: np.unique(..., axis=1) sorts
    # rows as structured records, several times slower; any numbering of the pairs groups
    # the same siblings.
    _, class_id = np.unique(class_sum, return_inverse=True)
    class_id = class_id.ravel().astype(np.int64)
    shape_id = tag * (int(class_id.max()) + 1 if n else 1) + class_id
    shape_key = parent * (int(shape_id.max()) + 1 if n else 1) + shape_id
    tag_key = parent * (int(tag.max()) + 1 if n else 1) + tag
    same_shape = _group_size(shape_key) - 1
    same_tag = _group_size(tag_key) - 1
    same_shape[0] = same_tag[0] = 0
    text = page.tag == TEXT
    same_shape[text] = same_tag[text] = 0
    return same_shape.astype(np.float64), same_tag.astype(np.float64)


def _group_size(keys: np.ndarray) -> np.ndarray:
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inverse.ravel()]


_SITE_COLUMNS = slice(_COLUMN["has_site"], _COLUMN["text_site_share"] + 1)
_METHOD_COLUMNS = _columns(f"method_{m}" for m in METHODS)
_REGION_TEMPLATE_COLUMNS = _columns(f"region_template_{k}" for k in _REGION_LEVELS)
# transforms/_features.c site_columns's columns, in its order.
_OCCURRENCE_COLUMNS = _columns(["occ_min", "occ_mean", "occ_max", "occ_owner", "template_word_share"]
                               + [f"region_template_{k}" for k in _REGION_LEVELS])
assert isinstance(_OCCURRENCE_COLUMNS, slice)


def _no_site(x: np.ndarray) -> None:
    """The site columns of a page without another page of its site: missing, but has_site and
    the page_only method."""
    x[:, _SITE_COLUMNS] = np.nan
    x[:, _COLUMN["has_site"]] = 0.0
    x[:, _COLUMN["method_page_only"]] = 1.0


def without_site(features: np.ndarray) -> np.ndarray:
    """A copy of a page's block features as block_features computes them with site=None: only
    the site columns depend on the site, so nothing else is computed again."""
    out = features.copy()
    _no_site(out)
    return out


def _site_columns(page: CompactPage, blocks: Blocks, owner: np.ndarray, site: SiteSignals | None,
                  x: np.ndarray, up) -> None:
    """`up`: the owners' ancestors by level (_ancestors, or _structure_compiled's rows), at
    least max(_REGION_LEVELS) levels."""
    col = _COLUMN
    if site is None:
        _no_site(x)
        return
    x[:, col["has_site"]] = 1.0
    x[:, col["site_pages_log"]] = np.log1p(site.site_pages)
    x[:, col["cs_size"]] = site.cs_size
    x[:, col["candidates"]] = site.candidates
    x[:, _METHOD_COLUMNS] = [site.method == m for m in METHODS]
    occ = site.occurrences.astype(np.float64)
    n_cand = max(site.candidates, 1)
    if _compiled is not None and _COMPILED and isinstance(up, np.ndarray):
        i64 = np.int64
        out = np.empty((blocks.count, 5 + len(_REGION_LEVELS)))
        _compiled.site_columns(occ, page.tag, page.words, page.end, words_below(page),
                               np.ascontiguousarray(blocks.text_nodes, dtype=i64),
                               np.ascontiguousarray(blocks.ptr, dtype=i64), owner,
                               np.ascontiguousarray(blocks.words, dtype=i64),
                               np.ascontiguousarray(up[list(_REGION_LEVELS)]), float(n_cand), out)
        x[:, _OCCURRENCE_COLUMNS] = out
        x[:, col["text_on_candidates"]] = site.text_on_candidates
        x[:, col["text_site_share"]] = site.text_site_share
        return
    tn, starts = blocks.text_nodes, blocks.ptr[:-1]
    occ_text = occ[tn] / n_cand
    x[:, col["occ_min"]] = np.minimum.reduceat(occ_text, starts)
    x[:, col["occ_max"]] = np.maximum.reduceat(occ_text, starts)
    x[:, col["occ_mean"]] = np.add.reduceat(occ_text, starts) / np.diff(blocks.ptr)
    x[:, col["occ_owner"]] = occ[owner] / n_cand
    templ = (occ > 0) & (page.tag == TEXT)
    tw = np.where(templ, page.words, 0)
    x[:, col["template_word_share"]] = np.add.reduceat(tw[tn].astype(np.float64), starts) / np.maximum(blocks.words, 1)
    templ_below = subtree_sum(page, tw)
    subtree_words = words_below(page)
    a = np.stack([up[k] for k in _REGION_LEVELS], axis=1)
    x[:, _REGION_TEMPLATE_COLUMNS] = templ_below[a] / np.maximum(subtree_words[a], 1)
    x[:, col["text_on_candidates"]] = site.text_on_candidates
    x[:, col["text_site_share"]] = site.text_site_share
