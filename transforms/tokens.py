"""Word tokenizer shared by the algorithms and the evaluation (design §1).

A token is a maximal run of letters and digits; each CJK ideograph, kana or
hangul syllable is a token of its own (those scripts do not separate words
with spaces, so a run of them would otherwise count as one huge "word").
Combining marks continue a token: Indic and Thai vowel signs are marks, and
splitting on them would cut every word of those scripts into pieces; after a
CJK character they keep decomposed kana (か + U+3099) one token, as its
precomposed form (が) is. Only letters and digits start a token, inside the
CJK blocks too: the katakana middle dot separates words, it is not one.
"""
from __future__ import annotations

import json
import os
import re
import sys
import unicodedata

# Ranges whose characters are one token each.
_CJK_RANGES = (
    (0x3040, 0x30FF),    # hiragana, katakana
    (0x31F0, 0x31FF),    # katakana phonetic extensions
    (0x3400, 0x4DBF),    # CJK extension A
    (0x4E00, 0x9FFF),    # CJK unified ideographs
    (0xAC00, 0xD7AF),    # hangul syllables
    (0xF900, 0xFAFF),    # CJK compatibility ideographs
    (0xFF66, 0xFF9F),    # half-width katakana
    (0x1AFF0, 0x1B16F),  # kana extended-A/B, kana supplement (hentaigana), small kana
    (0x20000, 0x2FA1F),  # CJK extensions B..F and I, compatibility supplement
    (0x30000, 0x323AF),  # CJK extensions G, H
)


def _char_class(ranges) -> str:
    return "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        for lo, hi in ranges)


def _mark_ranges():
    """Code point ranges of Unicode category M* (combining marks), from this Python's
    unicodedata: a scan of every code point (~0.1 s)."""
    ranges, start, prev = [], None, None
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp))[0] == "M":
            if start is None:
                start = cp
            elif cp != prev + 1:
                ranges.append((start, prev))
                start = cp
            prev = cp
    if start is not None:
        ranges.append((start, prev))
    return ranges


def _known_mark_ranges():
    """The ranges of this Unicode version from transforms/unicode_marks.json (written by
    `sitestrip-bench unicode-marks` with each Python's own unicodedata; tests/transforms/test_tokens.py
    compares the entry with _mark_ranges()), else computed: every process start would
    otherwise pay the scan, every run and every Beam worker."""
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "unicode_marks.json")) as f:
            known = json.load(f).get(unicodedata.unidata_version)
    except (OSError, ValueError):
        known = None
    return [tuple(r) for r in known] if known else _mark_ranges()


_MARK_RANGES = tuple(_known_mark_ranges())
_CJK = _char_class(_CJK_RANGES)
_MARKS = _char_class(_MARK_RANGES)
# A token starts with a letter/digit that is not CJK and continues with
# letters/digits (not CJK) or combining marks; a CJK letter stands alone but
# for the marks that follow it. The blocks also hold punctuation (・, ゠) and
# unassigned code points, hence the letter/digit lookahead on the CJK branch.
# transforms/_flatten.c counts the same tokens with these ranges (tests/transforms/test_flatten.py).
_TOKEN = re.compile(rf"(?=[^\W_])[{_CJK}][{_MARKS}]*"
                    rf"|(?:(?![{_CJK}])[^\W_])(?:(?![{_CJK}])[^\W_]|[{_MARKS}])*")
# ASCII text has neither CJK nor marks, and the plain pattern scans it ~4x
# faster than the full one (str.isascii is O(1) on CPython's compact strings).
_TOKEN_ASCII = re.compile(r"[A-Za-z0-9]+")


def _pattern(text: str) -> re.Pattern:
    return _TOKEN_ASCII if text.isascii() else _TOKEN


def words(text: str) -> list[str]:
    """Tokens of `text` in order, case preserved."""
    return _pattern(text).findall(text)


def count_words(text: str) -> int:
    """Number of tokens of `text` (cheaper than len(words(text)) for long text)."""
    return len(_pattern(text).findall(text))


def folded_words(text: str) -> list[str]:
    """Case-folded tokens, as the evaluation compares them (design §9).

    Tokens are folded one by one rather than the text as a whole: folding
    can turn a non-word character into a letter (U+0345, a combining mark,
    folds to ι), which would add a token that `words` does not have.
    """
    return [token.casefold() for token in words(text)]
