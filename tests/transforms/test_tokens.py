"""The tokenizer's combining-mark ranges (transforms/tokens.py, design §1)."""
import json
import os
import unicodedata

from sitestrip.transforms import tokens


def test_the_shipped_mark_ranges_are_this_pythons_unicode():
    """transforms/unicode_marks.json holds the M* ranges per Unicode version so that a process
    start does not scan 1.1 M code points; the entry for the running version must be what
    the scan gives (a stale or mistyped entry would change word counts), and it is there
    for the Pythons the project supports (3.10–3.13: Unicode 13.0.0–15.1.0)."""
    path = os.path.join(os.path.dirname(tokens.__file__), "unicode_marks.json")
    with open(path) as f:
        table = json.load(f)
    assert {"13.0.0", "14.0.0", "15.0.0", "15.1.0"} <= set(table)
    assert [tuple(r) for r in table[unicodedata.unidata_version]] == tokens._mark_ranges()
    assert list(tokens._MARK_RANGES) == tokens._mark_ranges()


def test_a_unicode_version_the_table_lacks_is_scanned(monkeypatch):
    """Unknown version: the ranges come from the scan. U+0301 (combining acute) is a mark,
    "a" and U+00E9 (precomposed é) are not; "e\\u0301" is one token, as "é" is."""
    monkeypatch.setattr(tokens.unicodedata, "unidata_version", "0.0.0")
    ranges = tokens._known_mark_ranges()
    assert ranges == tokens._mark_ranges()
    assert any(lo <= 0x301 <= hi for lo, hi in ranges)
    assert not any(lo <= c <= hi for lo, hi in ranges for c in (ord("a"), 0xE9))
    assert tokens.words("cafe\u0301 au lait") == ["cafe\u0301", "au", "lait"]
    assert tokens.count_words("caf\u00e9 au lait") == 3
