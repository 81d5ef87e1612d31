"""Block texts' columns and text keys compiled (transforms/_features.c) against their
reference in transforms/features.py (`_text_columns_python`, `text_key`).

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

from sitestrip.transforms import features as F
from sitestrip.transforms.features import _COLUMN, FEATURE_NAMES, _TEXT_PATTERNS

BUILT = "sitestrip.transforms._features is not built: reinstall with pip install -e ."


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
    assert F._compiled is not None, BUILT
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
    assert F._compiled is not None, BUILT
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


def test_word_boundaries_lowercasing_and_predicates_on_every_code_point():
    """Every code point c first in a text and before a keyword (c + "more": str.isupper and
    str.isdigit of c, the \\b before "more", str.split's whitespace, lowercasings that make
    or break the word) and after one ("like" + c + "\\nby": the \\b after "like", and a
    line start after c for the byline); surrogates included."""
    assert F._compiled is not None, BUILT
    step = 0x8000
    for start in range(0, 0x110000, step):
        chunk = [chr(c) for c in range(start, start + step)]
        assert_same([p for c in chunk for p in (c + "more", "like" + c + "\nby")])


def test_the_crc_table_is_zlibs():
    """Keys of texts whose folded UTF-8 bytes cover every byte value: zlib.crc32's."""
    assert F._compiled is not None, BUILT
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
    assert F._compiled is not None, BUILT
    assert columns([], True)[1].tolist() == columns([], False)[1].tolist() == []
    assert columns([], True)[1].dtype == np.int64
    with pytest.raises(TypeError, match="bytes"):
        F.text_keys([b"x"])
    with pytest.raises(TypeError, match="int"):
        F._text_columns(["a", 3], np.zeros((2, len(FEATURE_NAMES))))
