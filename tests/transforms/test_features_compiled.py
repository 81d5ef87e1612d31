"""Block texts' columns and text keys compiled (transforms/_features.c) against their
reference in transforms/features.py (`_text_columns_python`, `text_key`); and the blocks,
block texts and whole feature matrix with the per-node loops compiled against blocks.py's
and features.py's references.

The compiled path must give the same float64 columns bit for bit and the same keys on
every text: hand-built texts aimed at each column and each pattern's edges, every code
point of Unicode for the per-character predicates, and seeded generated texts. Every test
here fails when the extension was not built, so an install that silently fell back to the
reference is caught.
"""
import random
import re
import zlib

import numpy as np
import pytest

from sitestrip.transforms import blocks as B
from sitestrip.transforms import features as F
from sitestrip.transforms import page_type as PT
from sitestrip.transforms import tree as T
from sitestrip.transforms.conex_page import main_content
from sitestrip.transforms.features import _COLUMN, FEATURE_NAMES, _TEXT_PATTERNS
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.tree import (elements_below, links_below, nearest_in_mask, nearest_in_mask_doubling,
                                      words_below)
from helpers.compiled import require_built


@pytest.fixture(autouse=True)
def built():
    """Every test here compares transforms/_features.c with its reference (or calls it directly)."""
    require_built("_features")


# The text columns come first in FEATURE_NAMES; the matrices here stop after them.
WIDTH = _COLUMN[f"contains_{_TEXT_PATTERNS[-1][0]}"] + 1


def columns(texts, compiled):
    """(float64 columns up to the text columns' last, int64 text keys) of `texts` by one path."""
    saved = F._COMPILED
    F._COMPILED = compiled
    try:
        x = np.zeros((len(texts), WIDTH))
        F._text_columns(texts, x)
        return x, F.text_keys(texts)
    finally:
        F._COMPILED = saved


def assert_same(texts):
    got_x, got_keys = columns(texts, True)
    ref_x, ref_keys = columns(texts, False)
    for b in np.flatnonzero((got_x != ref_x).any(axis=1))[:5].tolist():
        differing = [FEATURE_NAMES[j] for j in np.flatnonzero(got_x[b] != ref_x[b])]
        assert not differing, (texts[b], differing)
    assert got_x.tobytes() == ref_x.tobytes()
    assert got_keys.dtype == ref_keys.dtype == np.int64
    for b in np.flatnonzero(got_keys != ref_keys)[:5].tolist():
        assert got_keys[b] == ref_keys[b], texts[b]
    assert got_keys.tolist() == ref_keys.tolist()
    return got_x


def test_the_compiled_text_columns_are_built_and_used_by_default(monkeypatch):
    """With the reference made to fail, the columns and keys still come out, as derived by hand.
    "Posted by Ann, 2 days ago." — 26 characters; words Posted|by|Ann,|2|days|ago. = 6;
    punctuation "," and "." → 2/6; one comma → 1/6; one sentence end ("." at the end); one
    digit → 1/26; ends with "."; starts upper case. Lowered, "posted" opens the line and is
    followed by a space → byline; "by" later is not at a line start, nothing else matches.
    "Read more »" — 11 characters, 3 words, no punctuation from the lists, "»" does not
    close a sentence; "read more" (more) and, after it, "»" (more again) → contains_more.
    "" — every count 0, nothing matches.
    Keys: crc32 of the lowered, single-spaced UTF-8 texts."""
    assert F._COMPILED

    def no_reference(*args, **kwargs):
        raise AssertionError("the reference ran")

    monkeypatch.setattr(F, "_text_columns_python", no_reference)
    monkeypatch.setattr(F, "text_key", no_reference)
    texts = ["Posted by Ann, 2 days ago.", "Read more »", ""]
    x = np.zeros((3, len(FEATURE_NAMES)))
    F._text_columns(texts, x)
    col = lambda name: x[:, _COLUMN[name]].tolist()
    assert col("punct_per_word") == [2 / 6, 0.0, 0.0]
    assert col("commas_per_word") == [1 / 6, 0.0, 0.0]
    assert col("sentences") == [1.0, 0.0, 0.0]
    assert col("digit_share") == [1 / 26, 0.0, 0.0]
    assert col("ends_with_punct") == [1.0, 0.0, 0.0]
    assert col("upper_start") == [1.0, 1.0, 0.0]
    found = {name: col(f"contains_{name}") for name, _ in _TEXT_PATTERNS}
    assert {name: v for name, v in found.items() if any(v)} == \
        {"byline": [1.0, 0.0, 0.0], "more": [0.0, 1.0, 0.0]}
    assert F.text_keys(texts).tolist() == [zlib.crc32(b"posted by ann, 2 days ago."),
                                           zlib.crc32("read more »".encode()), zlib.crc32(b"")]


# Each pattern's alternatives at, inside and across word edges (letters, digits, "_" and
# non-ASCII letters are word characters for re's \b), lowercasings that make or break a
# match, the byline at line starts after newlines, blanks and tabs, and the character
# columns' own cases.
EDGE_TEXTS = [
    # like / follow
    "like", "Like it", "likes", "unlike", "alike", "_like", "like_", "like2", "2like", "é like",
    "likeé", "liKE", "li\u212Ae", "follow us", "followers", "unfollow",
    # share
    "share", "Shared", "reshare", "share!", "tweet", "Tweets", "facebook", "myFacebookPage",
    "pinterest", "Email this", "email thisx", "email  this", "emailthis", "ſhare",
    # comment / reply
    "comment", "Comments", "commentsx", "commentary", "comment_s", "reply", "Replies", "replyies",
    "repl", "replied", "no-reply",
    # more
    "Read more", "bread more", "Continue reading…", "more", "moreover", "Learn More»", "a»b", "›",
    "more_", "›more", "read  more",
    # advert
    "Advertisement", "sponsored", "Promoted", "unpromoted", "promotedx",
    # subscribe
    "Subscribe", "Sign up", "signup", "Newsletter", "login", "Log in", "log  in", "login2", "logins",
    "log inx", "blog in", "Sign in", "cookies", "COOKIE",
    # rights
    "© 2024", "All Rights Reserved", "copyrights", "rights  reserved",
    # byline: line starts
    "by Ann", "  by Ann", "\tby", " \t by x", "x\nby Ann", "x\n  posted", "x \nupdated today",
    "byline", "x by", "Published: May", "UPDATED", "\nby", "by\n", "BY ANN", "x\n\tpublished_",
    "x\n by2", "posted\npublished", "promoted by",
    # scan order: one match hides another that overlaps it
    "read more comments", "copyright ©", "sign in login", "by share", "comment reply",
    "commentsreply", "log in by",
    # character columns
    "End！ ok。", "a1 ٣²,", "a,b", "Hello.World", "Yes?", "Quote”", "It's'", "a;", "ends:",
    "1. 2. 3.", "x . y", "Ⅻ ²³ ١٢٣ ０９", "ＡＢＣ", "𝐀bc", "ǅx", "ΣΑΣ ΟΔΟΣ.", "İstanbul like",
    # surrogates, empty and blank texts, other whitespace for the keys
    "\ud800", "a\udfffb", "\ud83d\ude00 like", "", " ", "\n", "A\u00a0B", "a\u2003b", "a\x1cb",
    "a\x85b", "  lead  trail  ", "\u3000", "a\tb\x0bc\x0cd\re",
    # preformatted
    "line one\nby Bob\n\tposted later\n  code();", "x\n\nmore", "def f():\n    return 1\n",
]


def test_edge_texts_give_the_same_columns_and_keys():
    x = assert_same(EDGE_TEXTS)
    # The comparison is not between two empty matrices: every pattern column and every
    # character column is set on some edge text.
    for name in ["punct_per_word", "sentences", "commas_per_word", "digit_share", "ends_with_punct",
                 "upper_start"] + [f"contains_{p}" for p, _ in _TEXT_PATTERNS]:
        assert x[:, _COLUMN[name]].any(), name


def test_edge_texts_one_per_page():
    """A text alone gives what it gives among others (the reference scans the page's texts
    joined; the compiled path each text alone)."""
    for text in EDGE_TEXTS:
        assert_same([text])


@pytest.mark.slow
def test_word_boundaries_lowercasing_and_predicates_on_every_code_point():
    """Every code point c first in a text and before a keyword (c + "more": str.isupper and
    str.isdigit of c, the \\b before "more", str.split's whitespace, lowercasings that make
    or break the word) and after one ("like" + c + "\\nby": the \\b after "like", and a
    line start after c for the byline); surrogates included."""
    step = 0x8000
    for start in range(0, 0x110000, step):
        chunk = [chr(c) for c in range(start, start + step)]
        assert_same([p for c in chunk for p in (c + "more", "like" + c + "\nby")])


def test_the_crc_table_is_zlibs():
    """Keys of texts whose folded UTF-8 bytes cover every byte value: zlib.crc32's."""
    texts = ["".join(chr(c) for c in range(start, start + 64)) for start in range(0, 0x800, 64)]
    expected = [zlib.crc32(" ".join(t.lower().split()).encode("utf-8", "surrogatepass")) for t in texts]
    assert F.text_keys(texts).tolist() == expected


_PIECES = ["rights reserved", "copyright", "©", "like", "follow", "share", "tweet", "facebook",
           "pinterest", "email this", "comment", "comments", "reply", "replies", "read more",
           "continue reading", "more", "»", "›", "advertising", "sponsored", "promoted",
           "subscribe", "sign up", "newsletter", "login", "log in", "sign in", "cookie",
           "by", "posted", "published", "updated", "Share", "MORE", "By", "\u212Aike", "İ", "Σ",
           "é", "ß", "_", "٣", "²", "7", "。", "！", "，", ".", ",", "?", "\"", "”", "'",
           "\ud800", "\udc00", "😀", "\u00a0", "\u2003", "\x85", "Ⅻ", "ǅ"]
_GLUE = ["", "", " ", " ", "  ", "\n", "\n  ", "\t", "\n\t", ",", "x", "_", "é", "1"]


def test_seeded_generated_texts():
    """300 seeded pages of up to 40 texts built from the patterns' spellings, upper and
    mixed case, non-ASCII letters, digits, punctuation, surrogates and whitespace."""
    rng = random.Random(2024)
    for _ in range(300):
        texts = []
        for _ in range(rng.randint(1, 40)):
            parts = [rng.choice(_PIECES) if rng.random() < 0.6 else
                     "".join(rng.choice("abcdeilmnoprstuyBRS") for _ in range(rng.randint(1, 6)))
                     for _ in range(rng.randint(0, 12))]
            texts.append("".join(p + rng.choice(_GLUE) for p in parts))
        assert_same(texts)


def test_the_reference_regex_is_what_the_compiled_scan_follows():
    """The pattern table of _features.c mirrors _TEXT_PATTERNS: a change to a pattern here
    without the C side fails this (the spellings are those _features.c matches)."""
    assert [(name, p.pattern) for name, p in _TEXT_PATTERNS] == [
        ("rights", r"rights reserved|copyright|©"),
        ("like", r"\blike\b|\bfollow\b"),
        ("share", r"\bshare\b|\btweet\b|facebook|pinterest|\bemail this\b"),
        ("comment", r"\bcomments?\b|\brepl(?:y|ies)\b"),
        ("more", r"read more|continue reading|\bmore\b|»|›"),
        ("advert", r"advertis|sponsored|\bpromoted\b"),
        ("subscribe", r"subscribe|sign up|newsletter|log ?in\b|sign in|cookie"),
        ("byline", r"(?m:^)[ \t]*(?:by|posted|published|updated)\b"),
    ]
    assert all(isinstance(p, re.Pattern) for _, p in _TEXT_PATTERNS)


def test_text_keys_of_no_texts_and_non_str_texts():
    """No texts: an empty int64 array by both paths. A text that is not a str is refused
    (block texts are always str; the error names the type)."""
    assert columns([], True)[1].tolist() == columns([], False)[1].tolist() == []
    assert columns([], True)[1].dtype == np.int64
    with pytest.raises(TypeError, match="bytes"):
        F.text_keys([b"x"])
    with pytest.raises(TypeError, match="int"):
        F._text_columns(["a", 3], np.zeros((2, len(FEATURE_NAMES))))


# ---------------------------------------------------------------- blocks and the whole matrix
#
# page_blocks and block_features with their per-node loops compiled (_features.c:
# nearest_in_mask, sibling_shapes, owner_hints) against blocks.py's and features.py's
# references (tree.nearest_in_mask_doubling, the numpy code), the module switches set together as
# SITESTRIP_FEATURES=python sets them; the block texts and keys of both paths compared too.

def page_by_path(page, compiled, site_seed=None, candidates=4):
    """(blocks, texts, keys, float32 features) of one page by one path; with `site_seed`, site
    signals drawn from a generator of that seed (so the site columns are compared too)."""
    saved = F._COMPILED, T._COMPILED, B._COMPILED
    F._COMPILED = T._COMPILED = B._COMPILED = compiled
    try:
        blocks = B.page_blocks(page)
        texts = B.block_texts(page, blocks)
        site = None
        if site_seed is not None:
            rng = np.random.default_rng(site_seed)
            site = F.SiteSignals(occurrences=rng.integers(0, candidates + 1, page.size), candidates=candidates, method="cs",
                                 cs_size=3, site_pages=9, text_on_candidates=rng.random(blocks.count),
                                 text_site_share=rng.random(blocks.count))
        conex_main = main_content(page)
        x = F.block_features(page, blocks, texts, conex_main=conex_main, menu_node=None, site=site)
        return blocks, texts, F.text_keys(texts), x
    finally:
        F._COMPILED, T._COMPILED, B._COMPILED = saved


def assert_same_page(page, site_seed=None, candidates=4):
    blocks, texts, keys, x = page_by_path(page, True, site_seed, candidates)
    ref_blocks, ref_texts, ref_keys, ref_x = page_by_path(page, False, site_seed, candidates)
    for field in ("ptr", "text_nodes", "owner", "group", "is_instance", "words"):
        got, ref = getattr(blocks, field), getattr(ref_blocks, field)
        assert got.dtype == ref.dtype and got.tolist() == ref.tolist(), field
    assert texts == ref_texts
    assert keys.tolist() == ref_keys.tolist()
    assert x.dtype == ref_x.dtype == np.float32 and x.shape == ref_x.shape
    differing = sorted({FEATURE_NAMES[j] for j in np.flatnonzero(
        ((x != ref_x) & ~(np.isnan(x) & np.isnan(ref_x))).any(axis=0))})
    assert not differing
    assert np.array_equal(x, ref_x, equal_nan=True)
    return blocks, texts, x


_SHAPES_PAGE = ("<ul class='nav'><li class='item'>Home</li><li class='item'>About <b>us</b></li>"
                "<li>Blog</li></ul><div class='wrap'><p>One.</p><p>Two<br>three</p></div>")


def test_the_compiled_blocks_loops_are_built_and_used_by_default(monkeypatch):
    """With every reference the compiled path replaces made to fail, the page still gets its
    blocks, texts and features, as derived by hand:
    - Blocks (one per li, p, and line of the second p): "Home", "About us" ("us" in a <b>
      after "About " on one line: a space), "Blog", "One.", "Two", "three" (the <br> is a
      line break inside the p, design §10's cut).
    - same_shape_siblings_log: each li.item has one sibling of its tag and class set (the
      other li.item), the plain li none; each p of the div one (the other p) -> log1p(1),
      log1p(1), 0, log1p(1) x 3. same_tag_siblings_log: every li has two same-tag siblings,
      every p one -> log1p(2) x 3, log1p(1) x 3.
    - near/far_nav: the ul's class "nav" is one level above each li's text owner (near) and
      not an ancestor of the div's blocks; near_wrapper for the p blocks (class "wrap",
      their parent); near_item for the li.item blocks only (their own class).
    - invisible: no hidden element -> 0 everywhere.
    - The structure columns (compiled structure_columns): block_position b / 5; the same
      group as the block before (li li li p p p); is_sib_p for the blocks of the two p's
      under the div, not the li's; has_children where the owner holds an element (the li
      with its <b>, the p with its <br>); siblings_log log1p(2) under the ul's three li,
      log1p(1) under the div's two p."""
    assert F._COMPILED and T._COMPILED

    def no_reference(*args, **kwargs):
        raise AssertionError("the reference ran")

    monkeypatch.setattr(F, "_sibling_shapes_python", no_reference)
    monkeypatch.setattr(T, "nearest_in_mask_doubling", no_reference)
    monkeypatch.setattr(F, "_structure_python", no_reference)
    page = parse_page(f"<html><body>{_SHAPES_PAGE}</body></html>", "http://ex.com/")
    blocks = B.page_blocks(page)
    texts = B.block_texts(page, blocks)
    assert texts == ["Home", "About us", "Blog", "One.", "Two", "three"]
    x = F.block_features(page, blocks, texts, conex_main=np.zeros(page.size, dtype=bool), menu_node=None,
                         site=None)
    col = lambda name: x[:, _COLUMN[name]].tolist()
    one, two = float(np.float32(np.log1p(1))), float(np.float32(np.log1p(2)))
    assert col("same_shape_siblings_log") == [one, one, 0.0, one, one, one]
    assert col("same_tag_siblings_log") == [two, two, two, one, one, one]
    assert col("near_nav") == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert col("near_wrapper") == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    assert col("near_item") == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert col("invisible") == [0.0] * 6
    assert col("block_position") == [float(np.float32(b / 5)) for b in range(6)]
    assert col("prev_same_group") == [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    assert col("next_same_group") == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    assert col("is_sib_p") == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    assert col("has_children") == [0.0, 1.0, 0.0, 0.0, 1.0, 1.0]
    assert col("siblings_log") == [two, two, two, one, one, one]


def test_the_shapes_page_by_both_paths():
    page = parse_page(f"<html><body>{_SHAPES_PAGE}</body></html>", "http://ex.com/")
    assert_same_page(page)
    assert_same_page(page, site_seed=1)


def test_sibling_shapes_group_by_class_set_not_class_order():
    """Class sums: "a b" and "b a" hold the same hashes, so the two divs are one shape
    (same_shape 1 each); "a" alone is another (0). Hidden: the span under the hidden div is
    invisible, BODY's own "hidden" class never counts (features.py)."""
    page = parse_page("<html><body class='hidden'><div class='a b'>x</div><div class='b a'>y</div>"
                      "<div class='a'>z</div><div class='hidden'><span>w</span></div></body></html>",
                      "http://ex.com/")
    _, texts, x = assert_same_page(page)
    assert texts == ["x", "y", "z", "w"]
    assert x[:, _COLUMN["same_shape_siblings_log"]].tolist() == [float(np.float32(np.log1p(1)))] * 2 + [0.0, 0.0]
    assert x[:, _COLUMN["invisible"]].tolist() == [0.0, 0.0, 0.0, 1.0]


def test_nearest_in_mask_compiled_is_the_pointer_doubling_one():
    """On a chain and a bushy tree, with masks none, all, root only and seeded random."""
    rng = random.Random(7)
    for body in ["<div>" * 30 + "t" + "</div>" * 30,
                 "".join(f"<p><b>x{k}</b><i>y</i></p><ul><li>z</li></ul>" for k in range(40))]:
        page = parse_page(f"<html><body>{body}</body></html>", "http://ex.com/")
        masks = [np.zeros(page.size, bool), np.ones(page.size, bool), np.arange(page.size) == 0]
        masks += [np.array([rng.random() < p for _ in range(page.size)]) for p in (0.1, 0.5)]
        for mask in masks:
            got = nearest_in_mask(page, mask)
            assert got.dtype == np.int64
            assert got.tolist() == nearest_in_mask_doubling(page, mask).tolist()


def test_compiled_loops_refuse_malformed_arrays():
    """A parent after its child (not preorder), a mask of another length and an owner outside
    the page are errors, not reads out of bounds."""
    c = F._compiled
    with pytest.raises(ValueError, match="preorder"):
        c.nearest_in_mask(np.array([-1, 2, 0], np.int32), np.zeros(3, bool), np.empty(3, np.int64))
    with pytest.raises(ValueError, match="length"):
        c.nearest_in_mask(np.array([-1, 0], np.int32), np.zeros(3, bool), np.empty(3, np.int64))
    page = parse_page("<html><body><p>a <b>b</b></p></body></html>", "http://ex.com/")
    with pytest.raises(ValueError, match="not a node"):
        c.owner_hints(page.parent, page.hints, np.array([page.size], np.int64), 2, 8,
                      np.empty(1, np.uint32), np.empty(1, np.uint32))
    blocks = B.page_blocks(page)

    def structure(owner, parent=page.parent):
        nb = owner.size
        c.structure_columns(
            parent, page.tag, page.flags, page.hints, page.depth, page.child_count, page.words,
            page.chars, page.end, links_below(page), elements_below(page), words_below(page),
            np.zeros(page.size), np.zeros(page.size), owner, blocks.text_nodes.astype(np.int64),
            blocks.ptr.astype(np.int64)[:nb + 1], blocks.words.astype(np.int64)[:nb], blocks.group[:nb],
            blocks.is_instance[:nb], F._HEADING_LEVEL, F._SIBLING_TABLES, (F.F_IN_LINK, 2, 1, 0),
            np.array([1, 2], np.int64), 3, np.empty((nb, len(F._STRUCTURE_NAMES) - 2)),
            np.empty((4, nb), np.int64))

    structure(blocks.owner.astype(np.int64))                    # well formed: accepted
    with pytest.raises(ValueError, match="does not fit the page"):
        structure(np.array([page.size], np.int64))
    with pytest.raises(ValueError, match="preorder"):
        structure(blocks.owner.astype(np.int64), parent=page.parent[::-1].copy())


_GEN_TAGS = ["div", "div", "p", "li", "ul", "span", "b", "a", "h2", "td", "table", "tr", "pre", "section",
             "nav", "footer", "figcaption", "em"]
_GEN_CLASSES = ["", "", "", " class='item'", " class='item card'", " class='card item'", " class='nav-menu'",
                " class='hidden'", " id='main'", " class='wrap'", " class='share'", " class=''"]
_GEN_WORDS = ["Home", "read more", "Posted by Ann.", "x", "two words", "  ", "3.5", "a-b", "© 2024", "é ß",
              "\u00a0", "😀 like", "Σ", "line\nbreak"]


def generated_page(rng):
    """A random page of up to 80 tokens: nested block, inline, list, table and pre tags
    with repeated class sets, words, <br>s and links (the parser repairs what is ill-formed)."""
    parts, stack = [], []
    for _ in range(rng.randint(1, 80)):
        action = rng.randint(0, 9)
        if action < 3 and len(stack) < 12:
            tag = rng.choice(_GEN_TAGS)
            href = " href='/x'" if tag == "a" else ""
            parts.append(f"<{tag}{rng.choice(_GEN_CLASSES)}{href}>")
            stack.append(tag)
        elif action < 5 and stack:
            parts.append(f"</{stack.pop()}>")
        elif action == 5:
            parts.append("<br>")
        else:
            parts.append(rng.choice(_GEN_WORDS) + rng.choice(["", " ", "\n"]))
    return parse_page("<html><body>" + "".join(parts) + "</body></html>", "http://ex.com/")


@pytest.mark.slow
def test_seeded_generated_pages_by_both_paths():
    """300 seeded random pages, each without a site and with seeded site signals."""
    rng = random.Random(12)
    compared = 0
    for k in range(300):
        page = generated_page(rng)
        blocks, _, _ = assert_same_page(page)
        assert_same_page(page, site_seed=k)
        compared += blocks.count
    assert compared > 1000          # the pages have blocks to compare, not only empty matrices


def test_a_page_without_text_by_both_paths():
    """No text node: no blocks, an empty matrix, by both paths."""
    page = parse_page("<html><body><img src='a.png'><div></div></body></html>", "http://ex.com/")
    blocks, texts, x = assert_same_page(page)
    assert blocks.count == 0 and texts == [] and x.shape == (0, len(FEATURE_NAMES))


# ---------------------------------------------------------------- block-role columns
# transforms/_features.c role_nodes and role_text against _role_elements_python and
# _role_text_python.

_ROLE_PAGE = ("<figure><img src='a.png'><figcaption>Photo: Reuters / Ann</figcaption></figure>"
              "<blockquote><p>By Ann Smith</p></blockquote>"
              "<table><tr><td>Updated <time>12.03.2024</time></td><td>by</td></tr></table>"
              "<header><ul><li>Home</li><li>5 min read</li></ul></header>"
              "<p>ABC def <b>GHI</b></p><section><p>x</p><p>Di</p></section>")


def test_the_compiled_role_columns_are_built_and_used_by_default(monkeypatch):
    """With both role references made to fail, the columns come out as derived by hand. Blocks:
    "Photo: Reuters / Ann" (figcaption under figure), "By Ann Smith" (p under blockquote),
    "Updated 12.03.2024" (td, whose <time> it owns, in the table), "by" (td), "Home",
    "5 min read" (li under ul under header), "ABC def GHI" (p), "x", "Di" (p under section).
    - in_figure/in_figcaption for the caption only, in_blockquote for "By Ann Smith",
      in_table for both cells, in_header and in_ul for the two li, in_section for the last two.
    - contains_time: the first cell holds <time>; contains_img: no owner holds the img (the
      figcaption is the caption's owner, the img is its sibling) -> 0 everywhere.
    - role cues: "photo: reuters" starts with a credit and holds "reuters" (credit);
      "by ann smith" a byline; "updated" a dateline; "by" alone no byline (nothing follows);
      "5 min read" starts with a digit and holds "min read" (reading_time).
    - caps_share: ASCII capitals over ASCII letters: "Photo: Reuters / Ann" 3/15, "By Ann
      Smith" 3/10, "Updated 12.03.2024" 1/7, "by" 0/2, "Home" 1/4, "5 min read" 0/6,
      "ABC def GHI" 6/9, "x" 0/1, "Di" 1/2."""
    assert F._COMPILED

    def no_reference(*args, **kwargs):
        raise AssertionError("the reference ran")

    monkeypatch.setattr(F, "_role_elements_python", no_reference)
    monkeypatch.setattr(F, "_role_text_python", no_reference)
    page = parse_page(f"<html><body>{_ROLE_PAGE}</body></html>", "http://ex.com/")
    blocks = B.page_blocks(page)
    texts = B.block_texts(page, blocks)
    assert texts == ["Photo: Reuters / Ann", "By Ann Smith", "Updated 12.03.2024", "by", "Home", "5 min read",
                     "ABC def GHI", "x", "Di"]
    x = F.block_features(page, blocks, texts, conex_main=np.zeros(page.size, dtype=bool), menu_node=None,
                         site=None)
    col = lambda name: x[:, _COLUMN[name]].tolist()
    assert col("in_figure") == col("in_figcaption") == [1.0] + [0.0] * 8
    assert col("in_blockquote") == [0.0, 1.0] + [0.0] * 7
    assert col("in_table") == [0.0, 0.0, 1.0, 1.0] + [0.0] * 5
    assert col("in_header") == col("in_ul") == [0.0] * 4 + [1.0, 1.0] + [0.0] * 3
    assert col("in_section") == [0.0] * 7 + [1.0, 1.0]
    assert col("contains_time") == [0.0, 0.0, 1.0] + [0.0] * 6
    assert col("contains_img") == [0.0] * 9
    assert col("role_credit") == [1.0] + [0.0] * 8
    assert col("role_byline") == [0.0, 1.0] + [0.0] * 7
    assert col("role_dateline") == [0.0, 0.0, 1.0] + [0.0] * 6
    assert col("role_reading_time") == [0.0] * 5 + [1.0] + [0.0] * 3
    assert col("caps_share") == [float(np.float32(v)) for v in (3 / 15, 3 / 10, 1 / 7, 0, 1 / 4, 0, 6 / 9, 0, 1 / 2)]


def test_the_role_page_by_both_paths():
    page = parse_page(f"<html><body>{_ROLE_PAGE}</body></html>", "http://ex.com/")
    assert_same_page(page)
    assert_same_page(page, site_seed=3)


def test_role_text_heads_of_short_and_empty_texts():
    """The reference reads a short text's head on into the next texts of the joined page text;
    the compiled one reads '\\n' there. Texts of 0-3 characters next to texts that would
    complete a head ("b" + "y ..." never joins into "by "), digits, ©, a tab and a space first,
    upper-case heads ("PHOTO", "By"), a non-ASCII head, all give the same three values."""
    texts = ["", "b", "y x", "by", "by ", "By Ann", "di", "Di x", "pho", "PHOTO: x", "ph", "oto", "1", "©",
             "\tby x", " x", "ÉTÉ", "é", "mon, 3", "x", "", "b"]
    c = F._compiled
    got = np.empty((len(texts), 3), np.int64)
    c.role_text(texts, F._ROLE_HEAD_KEYS, F._ROLE_HEAD2_KEYS, got)
    upper, letters, candidate = F._role_text_python(texts)
    assert got[:, 0].tolist() == upper.tolist()
    assert got[:, 1].tolist() == letters.tolist()
    assert (got[:, 2] != 0).tolist() == candidate.tolist()
    # By hand: "b" is no head, "by"/"by "/"By Ann"/"di"/"Di x"/"pho"/"PHOTO: x" are, "1", "©",
    # "\tby x", " x" start as a cue may; "mon, 3" is a weekday head.
    assert candidate.tolist() == [False, False, False, True, True, True, True, True, True, True, False, False,
                                  True, True, True, True, False, False, True, False, False, False]


def test_seeded_role_texts_by_both_paths():
    """2,000 seeded texts of 0-6 characters drawn from head letters, digits, spaces, tabs,
    upper case and non-ASCII, one page of them."""
    rng = random.Random(5)
    alphabet = "bydiphotmonUPDATEBY 1©\t\né€ßΣ:"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(2000)]
    got = np.empty((len(texts), 3), np.int64)
    F._compiled.role_text(texts, F._ROLE_HEAD_KEYS, F._ROLE_HEAD2_KEYS, got)
    upper, letters, candidate = F._role_text_python(texts)
    assert got[:, 0].tolist() == upper.tolist() and got[:, 1].tolist() == letters.tolist()
    assert (got[:, 2] != 0).tolist() == candidate.tolist()
    assert 0 < int(candidate.sum()) < len(texts)


_ROLE_GEN_TAGS = ["figure", "figcaption", "blockquote", "table", "td", "header", "footer", "aside", "form",
                  "address", "dl", "dd", "details", "article", "main", "section", "ul", "ol", "li", "button",
                  "label", "time", "img", "picture", "video", "iframe", "p", "div", "span", "custom-tag"]


@pytest.mark.slow
def test_seeded_role_pages_by_both_paths():
    """200 seeded random pages nesting every context tag, <time> and the image tags (and an
    unknown tag) around role-like lines."""
    rng = random.Random(21)
    lines = ["By Ann", "Photo: AFP", "Updated 3 May 2020", "5 min read", "Subscribe to our newsletter",
             "Read more", "x", "© 2024 Foo", "Mon, 4 Jan", "plain words here", ""]
    compared = 0
    for k in range(200):
        parts, stack = [], []
        for _ in range(rng.randint(1, 60)):
            action = rng.randint(0, 6)
            if action < 3 and len(stack) < 10:
                tag = rng.choice(_ROLE_GEN_TAGS)
                parts.append(f"<{tag}>")
                stack.append(tag)
            elif action < 5 and stack:
                parts.append(f"</{stack.pop()}>")
            else:
                parts.append(rng.choice(lines))
        page = parse_page("<html><body>" + "".join(parts) + "</body></html>", "http://ex.com/")
        blocks, _, _ = assert_same_page(page)
        compared += blocks.count
    assert compared > 500


def test_role_nodes_refuses_malformed_arrays():
    c = F._compiled
    page = parse_page("<html><body><p>a <b>b</b></p></body></html>", "http://ex.com/")
    out, contains = np.empty(1, np.int64), np.empty((1, 2), np.int64)
    args = (page.parent, page.tag, page.end, F._CONTEXT_BITS, F._CONTAINS_BITS)
    c.role_nodes(*args, np.array([2], np.int64), np.array([1], np.int64), out, contains)   # accepted
    with pytest.raises(ValueError, match="outside the page"):
        c.role_nodes(*args, np.array([page.size], np.int64), np.array([1], np.int64), out, contains)
    with pytest.raises(ValueError, match="preorder"):
        c.role_nodes(page.parent[::-1].copy(), *args[1:], np.array([2], np.int64), np.array([1], np.int64),
                     out, contains)


def _role_any_both(texts):
    ids = list(range(len(texts)))
    rows, columns = [], []
    F._role_any_python(texts, ids, rows, columns)
    reference = {(r, F.FEATURE_NAMES[c]) for r, c in zip(rows, columns)}
    bits = np.empty(len(ids), np.int64)
    F._compiled.role_any(texts, np.array(ids, np.int64), bits)
    compiled = {(r, "role_" + name) for r in ids for k, name in enumerate(F._ROLE_ANY_NAMES) if bits[r] >> k & 1}
    return compiled, reference


def test_role_any_cues_by_hand():
    """By hand: "Photo: Getty Images" a credit; "AFP" at the end of a text a credit (\\b at the
    end), "afpx" and "afp_x" none (a word character follows), "afp." one; "Share this" and
    "share on" subscribe, "share it" none; "5 minutes read" and "3 min. read" reading times;
    "Newsletter: 4 min read" both groups; "İmago" lower-cases to "i̇mago" (two code points,
    no cue); "" none."""
    texts = ["Photo: Getty Images", "AFP", "afpx", "afp_x", "afp.", "Share this", "share on", "share it",
             "5 minutes read", "3 min. read", "Newsletter: 4 min read", "İmago", ""]
    compiled, reference = _role_any_both(texts)
    assert compiled == reference
    assert reference == {(0, "role_credit"), (1, "role_credit"), (4, "role_credit"), (5, "role_subscribe"),
                         (6, "role_subscribe"), (8, "role_reading_time"), (9, "role_reading_time"),
                         (10, "role_subscribe"), (10, "role_reading_time")}


def test_role_any_cues_at_texts_ends_and_beside_wider_characters():
    """A cue's first two characters decide where the compiled scan tries the cues: cues cut
    short at a text's end ("d", "dp", "sign u") are none, whole ones at either end are found,
    and a wider character next to a cue is no cue character ("ésubscribe", "share thisé" are
    cues; "teilené" is none, é being a word character after the \\b)."""
    texts = ["d", "dp", "dpa", "x dpa", "sign u", "sign up", "ésubscribe", "share thisé", "teilené", "teilen",
             "é", "éé", "a", "ap", "ap photo", "read: lesezeit", "mins rea", "Ünewsletter"]
    compiled, reference = _role_any_both(texts)
    assert compiled == reference
    assert reference == {(2, "role_credit"), (3, "role_credit"), (5, "role_subscribe"), (6, "role_subscribe"),
                         (7, "role_subscribe"), (9, "role_subscribe"), (14, "role_credit"),
                         (15, "role_reading_time"), (17, "role_subscribe")}


def test_role_any_cues_on_seeded_texts():
    """3,000 seeded texts built from every cue's pieces, prefixes and word characters around
    them, upper case and non-ASCII: the compiled scan finds the reference regex's groups."""
    rng = random.Random(8)
    pieces = [part.replace("(?:", "").replace(")", "").replace("\\b", "").replace("\\.", ".")
              for _, parts in F._ROLE_ANY_CUES for part in parts]
    pieces = [q for p in pieces for q in (p.split("|") if "|" in p else [p])]
    pieces += ["share ", "this", "on", "the", "our", "app", "download ", "min", "s", " ", "_", "x", "1", ".",
               "\n", "É", "İ", "ß", "GETTY", "Reuters", "AFP", "min read"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) for _ in range(3000)]
    compiled, reference = _role_any_both(texts)
    assert compiled == reference
    assert len({name for _, name in reference}) == 3


# ---------------------------------------------------------------- blocks
# transforms/_features.c page_blocks against blocks._page_blocks_python.

_BLOCK_PAGES = [
    "<div>alpha beta</div><div><p>gamma</p>delta</div><div><span><b><i>deep</i></b></span></div>"
    "<table><tr><td>cell</td><td><ul><li>item</li></ul></td><td><div><div><div><span>x</span></div></div>"
    "</div></td></tr></table><pre>code</pre><figcaption>cap</figcaption><h3>sub</h3><unknown-tag>u</unknown-tag>",
    "<section>top text<br>second <span class='author'>By Ann</span> after <b>bold</b> tail<span>plain</span>"
    " end <a href='/x' class='more'>link</a> fin</section>",
    "loose words<p>para</p>more loose<span id='x'>named</span>",
    "<p>Seen <span style='display:none'>hidden</span> seen again <b hidden>gone</b><br>next</p>"
    "<div aria-hidden='true'><p>a</p><p>b</p></div>",
]


@pytest.mark.parametrize("body", _BLOCK_PAGES)
def test_hand_built_blocks_by_both_paths(body):
    """Instances and their limits, orphan text and its holders (block-level, classed or named
    inline elements, BODY), <br> cuts and hidden text, unknown tags: the same blocks, texts,
    keys and features by both paths."""
    page = parse_page(f"<html><body>{body}</body></html>", "http://ex.com/")
    blocks, texts, _ = assert_same_page(page)
    assert blocks.count >= 3 and texts


def test_the_compiled_page_blocks_is_used_by_default(monkeypatch):
    """With the reference made to fail, a page still gets its blocks: "Seen", the hidden span's
    "hidden" (a block of its own though inline), "seen again", the hidden <b>'s "gone", "next"
    after the <br>; then "a" and "b" (each p its own block under the hidden div)."""
    assert B._COMPILED

    def no_reference(*args, **kwargs):
        raise AssertionError("the reference ran")

    monkeypatch.setattr(B, "_page_blocks_python", no_reference)
    page = parse_page(f"<html><body>{_BLOCK_PAGES[3]}</body></html>", "http://ex.com/")
    blocks = B.page_blocks(page)
    assert B.block_texts(page, blocks) == ["Seen", "hidden", "seen again", "gone", "next", "a", "b"]
    assert blocks.words.tolist() == [1, 1, 2, 1, 1, 1, 1]
    assert blocks.ptr.dtype == blocks.text_nodes.dtype == blocks.words.dtype == np.int64
    assert blocks.owner.dtype == np.int32 and blocks.group.dtype == np.int8 and blocks.is_instance.dtype == bool


def test_page_blocks_refuses_malformed_arrays():
    page = parse_page("<html><body><p>a <b>b</b></p></body></html>", "http://ex.com/")
    n = page.size

    def call(parent=page.parent, end=page.end):
        return F._compiled.page_blocks(
            parent, page.tag, end, page.line.astype(np.int32), page.words.astype(np.int32),
            page.flags.astype(np.uint16), page.id_hash.astype(np.uint32), page.class_ptr.astype(np.int32),
            B._BLOCK_TAG_BITS, B.F_HIDDEN, np.empty(n, np.int64), np.empty(n + 1, np.int64),
            np.empty(n, np.int32), np.empty(n, np.int8), np.empty(n, bool), np.empty(n, np.int64))

    assert call() == (2, 1)                           # "a ", "b": two text nodes, one block
    with pytest.raises(ValueError, match="preorder"):
        call(parent=page.parent[::-1].copy())
    with pytest.raises(ValueError, match="preorder"):
        call(end=np.full(n, n + 1, np.int32))
    with pytest.raises(ValueError, match="length"):
        call(parent=page.parent[:-1].copy())


@pytest.mark.parametrize("runs", [1, 2, 7, 8, 9, 15, 16, 17, 127, 128, 129, 300, 1031])
def test_site_columns_of_long_blocks_by_both_paths(runs):
    """_features.c site_columns against _site_columns's numpy: one paragraph of `runs` inline
    runs (one block of `runs` text nodes, on either side of numpy's pairwise-sum thresholds of
    8 and 128 values), a list beside it, and occurrences over several candidates that make each
    text node's share a fraction, so occ_mean's sum depends on the order it is taken in."""
    require_built("_features")
    body = "<p>" + "".join(f"<b>w{i}</b> x{i} " if i % 3 else f"<i>y{i}</i>" for i in range(runs)) + "</p>"
    page = parse_page(f"<html><body><ul><li>Home</li><li>About</li></ul>{body}</body></html>", "http://ex.com/")
    blocks = B.page_blocks(page)
    assert int(np.diff(blocks.ptr).max()) >= runs
    for seed in range(3):
        assert_same_page(page, site_seed=seed, candidates=7)


@pytest.mark.parametrize("runs", [9, 17, 129, 300, 1031])
def test_site_columns_in_float64_by_both_paths(runs, monkeypatch):
    """The same page's site columns before the float32 rounding: occ_mean's sum in
    _features.c is np.add.reduceat's to the last bit (sevenths of candidates add differently in
    another order)."""
    require_built("_features")
    body = "<p>" + "".join(f"<b>w{i}</b> x{i} " for i in range(runs)) + "</p>"
    page = parse_page(f"<html><body><ul><li>Home</li></ul>{body}</body></html>", "http://ex.com/")
    blocks = B.page_blocks(page)
    owner = blocks.owner.astype(np.int64)
    up = F._ancestors(page, owner, F._UP_LEVELS)
    rng = np.random.default_rng(runs)
    site = F.SiteSignals(occurrences=rng.integers(0, 8, page.size), candidates=7, method="cs", cs_size=3,
                         site_pages=9, text_on_candidates=rng.random(blocks.count),
                         text_site_share=rng.random(blocks.count))
    got = np.zeros((blocks.count, len(FEATURE_NAMES)))
    F._site_columns(page, blocks, owner, site, got, np.array(up))
    monkeypatch.setattr(F, "_COMPILED", False)
    ref = np.zeros_like(got)
    F._site_columns(page, blocks, owner, site, ref, up)
    assert got.tobytes() == ref.tobytes()


@pytest.mark.parametrize("seed", range(6))
def test_conex_columns_in_float64_by_both_paths(seed, monkeypatch):
    """_features.c conex_columns against standardize over the rated elements' rows, before the
    float32 rounding: the same means, deviations and quotients to the last bit, on seeded
    generated pages and on a page whose blocks sit under no rated element but BODY."""
    require_built("_features")
    rng = random.Random(seed)
    pages = [generated_page(rng) for _ in range(5)]
    pages.append(parse_page("<html><body>one<b>two</b></body></html>", "http://ex.com/"))
    for page in pages:
        owner = B.page_blocks(page).owner.astype(np.int64)
        got = F._conex_columns(page, owner, None)
        monkeypatch.setattr(F, "_COMPILED", False)
        ref = F._conex_columns(page, owner, None)
        monkeypatch.setattr(F, "_COMPILED", True)
        assert got.shape == ref.shape == (owner.size, 4)
        assert got.tobytes() == ref.tobytes()


def test_spread_bits_by_both_paths(monkeypatch):
    """_features.c bit_columns against numpy's shifts, for uint32 hint bits and int64 context
    bits, into a slice of columns in the middle of a matrix that holds other values."""
    require_built("_features")
    rng = np.random.default_rng(9)
    for bits in (rng.integers(0, 1 << 31, 40).astype(np.uint32), rng.integers(0, 1 << 40, 40),
                 np.zeros(0, dtype=np.int64)):
        for columns, count in ((slice(3, 22), 19), (slice(0, 8), 8), (slice(30, 48), 18)):
            got = rng.random((bits.size, 50))
            ref = got.copy()
            F._spread_bits(bits, got, columns, count)
            monkeypatch.setattr(F, "_COMPILED", False)
            F._spread_bits(bits, ref, columns, count)
            monkeypatch.setattr(F, "_COMPILED", True)
            assert got.tobytes() == ref.tobytes()


def test_count_columns_by_both_paths(monkeypatch):
    """_features.c count_columns against _count_columns's numpy: hand-built counts with no words
    and no characters (divisors of 1), ratios float32 rounds (1/3, 2/7), counts past float32's
    exact integers, every pattern bit and none, into float32 and float64 matrices that hold other
    values in the columns not written."""
    n = F._compiled.COLUMNS
    rows = [[0] * n, [3, 1, 2, 1, 1, 3, 1, 1, 0], [7, 2, 0, 0, 2, 7, 0, 1, (1 << len(_TEXT_PATTERNS)) - 1],
            [1, 5, 1, 4, 0, 0, 1, 0, 0b10100101], [(1 << 25) + 1, (1 << 26) + 3, (1 << 24) + 1, 9, 3, (1 << 27) + 5,
                                                   0, 1, 1]]
    rng = np.random.default_rng(4)
    counts = np.array(rows + rng.integers(0, 400, (30, n)).tolist(), dtype=np.int64)
    counts[5:, F._C_PATTERNS] %= 1 << len(_TEXT_PATTERNS)
    for dtype in (np.float32, np.float64):
        got = rng.random((counts.shape[0], len(FEATURE_NAMES))).astype(dtype)
        ref = got.copy()
        F._count_columns(counts, got)
        monkeypatch.setattr(F, "_COMPILED", False)
        F._count_columns(counts, ref)
        monkeypatch.setattr(F, "_COMPILED", True)
        assert got.tobytes() == ref.tobytes()
        assert got[1, _COLUMN["punct_per_word"]] == dtype(1 / 3)
        assert got[0, _COLUMN["digit_share"]] == 0 and got[2, _COLUMN["contains_byline"]] == 1
        assert got[4, _COLUMN["sentences"]] == dtype((1 << 24) + 1)
    with pytest.raises(ValueError):
        F._compiled.count_columns(counts[:, :-1].copy(), np.zeros((counts.shape[0], len(FEATURE_NAMES))),
                                  F._COUNT_AT, len(_TEXT_PATTERNS))
    with pytest.raises(ValueError):
        F._compiled.count_columns(counts, np.zeros((counts.shape[0], 12)), F._COUNT_AT, len(_TEXT_PATTERNS))


def test_put_columns_is_numpys_assignment():
    """_features.c put_columns against x[:, at] = src: float64 values float32 rounds (thirds,
    values past float32's range, a NaN, signed zeros), columns in any order, into float32 and
    float64 matrices whose other columns keep their values; a malformed call is refused."""
    rng = np.random.default_rng(11)
    src = rng.random((25, 6)) / 3.0
    src[0] = [1 / 3, 1e39, -1e39, np.nan, -0.0, 2.0 ** -140]
    at = np.array([7, 0, 31, 12, 13, 2], dtype=np.int64)
    for dtype in (np.float32, np.float64):
        got = rng.random((25, 40)).astype(dtype)
        ref = got.copy()
        F._compiled.put_columns(src, got, at)
        with np.errstate(over="ignore"):
            ref[:, at] = src
        assert got.tobytes() == ref.tobytes()
        assert got[0, 7] == dtype(1 / 3) and np.isnan(got[0, 12]) and np.signbit(got[0, 13])
    F._compiled.put_columns(np.zeros((0, 6)), np.zeros((0, 40), dtype=np.float32), at)
    for bad_src, bad_x, bad_at in ((src[1:].astype(np.float32), got[1:], at), (src, got, at[:5]),
                                   (src, np.zeros((25, 30)), at), (src[:, :5], got, at[:5] - 8)):
        with pytest.raises((ValueError, BufferError)):
            F._compiled.put_columns(bad_src, bad_x, bad_at)


def test_structure_columns_are_written_as_the_runs_write_them(monkeypatch):
    """_structure_compiled's two put_columns calls and its reference assignments (a matrix that
    is not row-major takes those) give the same matrix on a page."""
    page = parse_page("<html><body><div class=a><p>One two three.</p><p>Four <a href=/x>five</a></p></div>"
                      "<ul><li>six</li><li>seven eight</li></ul><h2>Nine</h2></body></html>", "http://e.com/")
    blocks = B.page_blocks(page)
    owner = blocks.owner.astype(np.int64)
    got = np.zeros((blocks.count, len(FEATURE_NAMES)), dtype=np.float32)
    ref = np.asfortranarray(np.zeros_like(got))
    F._structure_compiled(page, blocks, owner, got)
    F._structure_compiled(page, blocks, owner, ref)
    assert blocks.count > 3 and got[:, _COLUMN["words_log"]].any()
    assert got.tobytes() == np.ascontiguousarray(ref).tobytes()


def test_ascii_texts_counted_over_their_lowered_copy():
    """An ASCII text's counts are taken over its lowered copy (_features.c text_columns): upper
    case at the start and inside, every ASCII punctuation and digit, texts that end in a
    capital, and a str subclass (counted the other way) give the reference's columns."""

    class Text(str):
        pass

    texts = ["ABC. Def, 12! GHI?", "Z", "a", "", " X", "Copyright 2024 ACME. All Rights Reserved",
             "BY JOHN SMITH\nPOSTED: Monday", "!\"#$%&'()*+,-./0123456789:;<=>?@[\\]^_`{|}~",
             "Read More »", Text("Read More, Sign UP."), "MORE", "Like. Follow!"]
    x = assert_same(texts)
    assert x[0, _COLUMN["upper_start"]] == 1 and x[2, _COLUMN["upper_start"]] == 0
    assert x[4, _COLUMN["upper_start"]] == 0


# ---------------------------------------------------------------- the block texts in one pass
# _features.c text_role_columns against text_columns, role_text and role_any (each compared with
# its reference above) and against the references themselves.

def _one_pass(texts, words, strings=PT.CUE_STRINGS):
    """text_role_columns's (counts, roles, cue counts) of `texts` with block words `words`."""
    counts = np.empty((len(texts), F._compiled.COLUMNS), np.int64)
    roles = np.empty((len(texts), 4), np.int64)
    cues = np.empty(len(strings), np.int64)
    F._compiled.text_role_columns(texts, np.asarray(words, np.int64), F.ROLE_BLOCK_WORDS, F._ROLE_HEAD_KEYS,
                                  F._ROLE_HEAD2_KEYS, counts, roles, strings, PT.SHORT_BLOCK_WORDS, cues)
    return counts, roles, cues


def assert_one_pass_same(texts, words):
    c = F._compiled
    counts, roles, cues = _one_pass(texts, words)
    ref_counts = np.empty_like(counts)
    c.text_columns(texts, ref_counts)
    assert counts.tolist() == ref_counts.tolist()
    # The page type's cues: count_lowered's over the short blocks, and the reference's str.count.
    ref_cues = np.empty_like(cues)
    c.count_lowered(texts, np.flatnonzero(np.asarray(words) <= PT.SHORT_BLOCK_WORDS), PT.CUE_STRINGS, ref_cues)
    assert cues.tolist() == ref_cues.tolist()
    short_text = "\n".join(t for t, k in zip(texts, words) if k <= PT.SHORT_BLOCK_WORDS).lower()
    assert cues.tolist() == [short_text.count(q) for q in PT.CUE_STRINGS]
    upper, letters, candidate = F._role_text_python(texts)
    assert roles[:, 0].tolist() == upper.tolist() and roles[:, 1].tolist() == letters.tolist()
    assert (roles[:, 2] != 0).tolist() == candidate.tolist()
    short = [b for b in range(len(texts)) if words[b] <= F.ROLE_BLOCK_WORDS]
    rows, columns = [], []
    if short:
        F._role_any_python(texts, short, rows, columns)
    reference = {(r, F.FEATURE_NAMES[k]) for r, k in zip(rows, columns)}
    assert {(b, "role_" + name) for b in range(len(texts)) for k, name in enumerate(F._ROLE_ANY_NAMES)
            if roles[b, 3] >> k & 1} == reference
    assert all(roles[b, 3] == 0 for b in range(len(texts)) if b not in short)
    # The float columns as block_features writes them, against the reference's.
    got, ref = np.zeros((len(texts), WIDTH)), np.zeros((len(texts), WIDTH))
    F._text_role_compiled(texts, np.asarray(words), got)
    F._text_columns_python(texts, ref)
    assert got.tobytes() == ref.tobytes()
    return counts, roles, cues


def test_one_pass_by_hand():
    """"By Ann, 5 min read." (ASCII, a block of 6 words): words By|Ann,|5|min|read. = 5;
    punctuation "," and "." = 2; one comma; one sentence end; one digit; 19 characters; ends
    with "."; upper first. Capitals B, A of 12 ASCII letters; its head "by " may start a cue;
    "min read" a reading time (bit 2). The same text as a block of 30 words: no anywhere cue
    looked for. "Ünewsletter Getty Images" (not ASCII: str.lower called, 3 words): capitals G, I
    of 21 ASCII letters (Ü is none), no head, "newsletter" (subscribe, bit 1) and "getty images"
    (credit, bit 0). "": all 0. The page type's cues, over the blocks of at most 20 words: "by "
    and "min read" (both bylines) in the first text only."""
    texts = ["By Ann, 5 min read.", "By Ann, 5 min read.", "Ünewsletter Getty Images", ""]
    counts, roles, cues = assert_one_pass_same(texts, [6, 30, 3, 0])
    assert {PT.CUE_STRINGS[j]: int(v) for j, v in enumerate(cues) if v} == {"by ": 1, "min read": 1}
    assert counts[0, :8].tolist() == [5, 2, 1, 1, 1, 19, 1, 1]
    assert counts[2, 0] == 3 and counts[3].tolist() == [0] * F._compiled.COLUMNS
    assert roles.tolist() == [[2, 12, 1, 0b100], [2, 12, 1, 0], [2, 21, 0, 0b011], [0, 0, 0, 0]]


def test_one_pass_on_edge_and_seeded_texts():
    """The text columns' edge texts and seeded pages, and the role cues' seeded texts, with block
    words on both sides of ROLE_BLOCK_WORDS."""
    rng = random.Random(31)
    assert_one_pass_same(EDGE_TEXTS, [rng.choice([0, 1, 25, 26, 400]) for _ in EDGE_TEXTS])
    for _ in range(100):
        texts = ["".join(rng.choice(_PIECES) + rng.choice(_GLUE) for _ in range(rng.randint(0, 10)))
                 for _ in range(rng.randint(1, 30))]
        assert_one_pass_same(texts, [rng.randint(0, 40) for _ in texts])
    pieces = [p for _, parts in F._ROLE_ANY_CUES for part in parts for p in part.replace("(?:", "").replace(
        ")", "").replace("\\b", "").replace("\\.", ".").split("|")] + ["By ", "Photo: ", "5 ", "x", " ", "É"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 5))) for _ in range(2000)]
    _, roles, _ = assert_one_pass_same(texts, [rng.randint(0, 30) for _ in texts])
    assert {int(b) for b in roles[:, 3]} >= {0, 1, 2, 4}


def test_one_pass_is_what_block_features_uses(monkeypatch):
    """block_features reads its texts once: with the separate passes made to fail, the matrix
    is still the reference's."""
    page = parse_page(f"<html><body>{_ROLE_PAGE}</body></html>", "http://ex.com/")
    expected = page_by_path(page, False)[3]

    def no_pass(*args, **kwargs):
        raise AssertionError("a separate text pass ran")

    for name in ("text_columns", "role_text", "role_any"):
        monkeypatch.setattr(F._compiled, name, no_pass)
    got = page_by_path(page, True)[3]
    assert got.any() and np.array_equal(got, expected, equal_nan=True)


def test_block_features_leave_the_page_types_cue_counts(monkeypatch):
    """The page type reads the cue counts block_features's pass took, for those very texts and
    words: with count_lowered made to fail they come out as the reference counts them; for an
    equal list that is another object (or other words) they are counted again."""
    page = parse_page(f"<html><body>{_ROLE_PAGE}<p>Posted by Ann: $5, sku 7</p></body></html>", "http://ex.com/")
    blocks = B.page_blocks(page)
    texts = B.block_texts(page, blocks)
    F.block_features(page, blocks, texts, conex_main=np.zeros(page.size, dtype=bool), menu_node=None, site=None)
    short = "\n".join(t for t, k in zip(texts, blocks.words) if k <= PT.SHORT_BLOCK_WORDS).lower()
    expected = PT._cue_counts(short)
    assert expected[0] > 0 and expected[4] > 0      # prices and bylines
    saved = F._compiled.count_lowered

    def no_count(*args):
        raise AssertionError("counted again")

    monkeypatch.setattr(F._compiled, "count_lowered", no_count)
    assert PT._short_cue_counts(texts, blocks.words) == expected
    with pytest.raises(AssertionError, match="counted again"):
        PT._short_cue_counts(list(texts), blocks.words)
    with pytest.raises(AssertionError, match="counted again"):
        PT._short_cue_counts(texts, blocks.words.copy())
    monkeypatch.setattr(F._compiled, "count_lowered", saved)
    assert PT._short_cue_counts(list(texts), blocks.words) == expected


def test_role_columns_take_the_text_values_themselves_when_not_given():
    """_role_columns called without block_features's text values makes them: the role columns
    come out as in the whole matrix, credit, byline, dateline and reading time among them."""
    page = parse_page(f"<html><body>{_ROLE_PAGE}</body></html>", "http://ex.com/")
    blocks = B.page_blocks(page)
    texts = B.block_texts(page, blocks)
    whole = F.block_features(page, blocks, texts, conex_main=np.zeros(page.size, dtype=bool), menu_node=None,
                             site=None)
    alone = np.zeros((blocks.count, len(FEATURE_NAMES)), dtype=np.float32)
    F._role_columns(page, blocks, blocks.owner.astype(np.int64), texts, alone)
    role = [_COLUMN["role_" + name] for name in F._ROLE_NAMES] + [_COLUMN["caps_share"], _COLUMN["short_line"]]
    assert alone[:, role].tolist() == whole[:, role].tolist()
    assert alone[:, role[:6]].sum(axis=0).tolist() == [1, 1, 1, 0, 0, 1]


def test_one_pass_refuses_what_is_not_block_texts():
    with pytest.raises(TypeError, match="int"):
        _one_pass(["a", 3], [1, 1])
    with pytest.raises(ValueError, match="words"):
        _one_pass(["a", "b"], [1])
    with pytest.raises(ValueError, match="newline"):
        _one_pass(["a"], [1], ("a\nb",))
