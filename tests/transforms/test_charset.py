"""Decoding HTML bytes to text (transforms.charset)."""
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitestrip.transforms import charset
from sitestrip.transforms.charset import decode_html

FRENCH = "café naïve résumé "


def html(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head>{head}<title>t</title></head><body><p>{body}</p></body></html>"


def test_http_charset_wins_over_meta_and_needs_no_detector():
    body = html(FRENCH, '<meta charset="utf-8">').encode("cp1252")
    with mock.patch.object(charset.charset_normalizer, "from_bytes") as detector:
        text, codec = decode_html(body, "ISO-8859-1")
    detector.assert_not_called()
    assert codec == "cp1252"
    assert FRENCH in text


def test_meta_charset():
    text, codec = decode_html(html(FRENCH, "<meta charset='windows-1252'>").encode("cp1252"), None)
    assert (codec, FRENCH in text) == ("cp1252", True)


def test_meta_http_equiv_content_type():
    head = '<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=koi8-r">'
    text, codec = decode_html(html("Привет, мир", head).encode("koi8-r"), None)
    assert (codec, "Привет, мир" in text) == ("koi8-r", True)


@pytest.mark.parametrize("codec, bom", [("utf-8", b"\xef\xbb\xbf"), ("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_bom_wins_over_declarations(codec, bom):
    body = bom + html(FRENCH, '<meta charset="iso-8859-1">').encode(codec)
    text, used = decode_html(body, "iso-8859-1")
    assert used == codec
    assert text.startswith("<!DOCTYPE html>") and FRENCH in text


def test_undeclared_utf8_is_recognised_without_the_detector():
    with mock.patch.object(charset.charset_normalizer, "from_bytes") as detector:
        text, codec = decode_html(html("Grüße, 世界").encode("utf-8"), None)
    detector.assert_not_called()
    assert (codec, "Grüße, 世界" in text) == ("utf-8", True)


def test_undeclared_utf8_cut_mid_character_stays_utf8():
    body = html("naïve " * 20).encode("utf-8")
    cut = body[: body.index("ï".encode()) + 1]
    text, codec = decode_html(cut, None)
    assert codec == "utf-8" and text.endswith("na")


def test_undeclared_cp1252_falls_to_a_latin_reading():
    body = html(FRENCH * 30).encode("cp1252")
    assert b"caf\xe9 na\xefve r\xe9sum\xe9" in body
    text, codec = decode_html(body, None)
    assert FRENCH in text
    assert "\ufffd" not in text


def test_undeclared_shift_jis_is_found_by_the_detector():
    japanese = "日本語のテキストです。これは文字コードの判定を試すための文書です。"
    text, codec = decode_html(html(japanese * 10).encode("shift_jis"), None)
    assert codec in ("shift_jis", "cp932")
    assert japanese in text


def test_unknown_labels_fall_through_to_the_next_source():
    body = html(FRENCH, '<meta charset="no-such-charset">').encode("utf-8")
    text, codec = decode_html(body, "x-bogus")
    assert (codec, FRENCH in text) == ("utf-8", True)


def test_meta_utf16_without_bom_is_ignored():
    text, codec = decode_html(html(FRENCH, '<meta charset="utf-16">').encode("utf-8"), None)
    assert (codec, FRENCH in text) == ("utf-8", True)


@pytest.mark.parametrize("label", ["utf-7", "base64", "rot13"])
def test_labels_browsers_refuse_are_ignored(label):
    _, codec = decode_html(html("plain").encode("ascii"), label)
    assert codec == "utf-8"


@pytest.mark.parametrize("label, expected", [
    ("US-ASCII", "cp1252"), ("latin1", "cp1252"), ('"utf8"', "utf-8"), ("Shift_JIS", "cp932"), ("gb2312", "gb18030"),
])
def test_labels_map_the_whatwg_way(label, expected):
    assert decode_html(b"<p>x</p>", label)[1] == expected


def test_nul_bytes_are_removed():
    text, _ = decode_html(b"<p>a\x00b</p>\x00", "utf-8")
    assert text == "<p>ab</p>"


def test_binary_garbage_does_not_raise():
    garbage = bytes(range(256)) * 300
    text, codec = decode_html(garbage, None)
    assert isinstance(text, str) and codec
    assert "\x00" not in text


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=3000), label=st.one_of(st.none(), st.text(max_size=20)))
def test_any_bytes_and_label_decode(body, label):
    text, codec = decode_html(body, label)
    assert isinstance(text, str) and isinstance(codec, str) and "\x00" not in text


# What parse_page reads: the payload's bytes where they are the decoded text's UTF-8
# (html_for_parse), the same tree as the text without a decode and re-encode.

_PIECES = [b"a", b"<p>", b" ", b"\x00", b"\x7f", b"\x80", b"\xbf", b"\xc0", b"\xc2", b"\xdf", b"\xe0", b"\xa0",
           b"\x9f", b"\xed", b"\xef", b"\xf0", b"\x90", b"\x8f", b"\xf4", b"\xf5", b"\xff", b"\x1b$B", b"~{",
           "é".encode(), "€".encode(), "𝄞".encode(), b"\xef\xbb\xbf", b"\xff\xfe", b"<meta charset=utf-8>",
           b"<meta charset=iso-8859-1>"]
_LABELS = [None, "utf-8", "iso-8859-1", "windows-1252", "shift_jis", "iso-2022-jp", "hz-gb-2312", "utf-16", "koi8-r"]


def _python_extent(data: bytes):
    """utf8_extent's reference, without its ASCII shortcut and compiled path."""
    with mock.patch.object(charset, "_compiled_extent", None):
        return charset.utf8_extent(data)


def test_compiled_utf8_extent_is_the_incremental_decoders_reading():
    from helpers.compiled import require_built
    extent = require_built("_flatten").utf8_extent
    cases = [b"", b"abc", "naïve".encode(), "naïve".encode()[:3], b"x\xe2\x82", b"x\xe2", b"x\xf0\x9d\x84",
             b"x\xed\xa0", b"x\xed\xa0\x80", b"x\xed\x9f", b"x\xe2\x28", b"x\xf4\x90", b"x\xc0\x80", b"\xff",
             b"a" * 17 + "é".encode() + b"b" * 9]
    for data in cases:
        assert extent(data) == _python_extent(data), data
    assert extent(b"x\xe2\x82") == (1, 1) and extent(b"x\xed\xa0\x80") is None


@pytest.mark.slow
@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=24))
def test_compiled_utf8_extent_on_generated_bytes(pieces):
    from helpers.compiled import require_built
    data = b"".join(pieces)
    assert require_built("_flatten").utf8_extent(data) == _python_extent(data)


def _same_reading(body: bytes, label):
    text, codec = decode_html(body, label)
    doc, codec2, chars = charset.html_for_parse(body, label)
    assert (codec2, chars) == (codec, len(text))
    if isinstance(doc, bytes):
        assert doc == text.encode("utf-8")
    else:
        assert doc == text
    return doc


@pytest.mark.parametrize("body, label, fast", [
    (html(FRENCH).encode("utf-8"), "utf-8", True),
    (html(FRENCH).encode("utf-8"), None, True),
    (b"\xef\xbb\xbf" + html(FRENCH).encode("utf-8"), "iso-8859-1", True),       # the BOM wins
    (html("plain").encode("ascii"), "iso-8859-1", True),                          # ASCII in cp1252
    (html("plain").encode("ascii"), "shift_jis", True),
    (html("plain").encode("ascii"), "iso-2022-jp", False),                        # escapes are ASCII
    (html(FRENCH).encode("cp1252"), "iso-8859-1", False),
    (html(FRENCH).encode("cp1252"), None, False),                                 # the detector's
    (html(FRENCH).encode("utf-8")[:-1] + b"\xc3", "utf-8", False),                # declared: U+FFFD
    (html(FRENCH * 3).encode("utf-8")[:html(FRENCH * 3).encode("utf-8").index(b"\xc3") + 1], None, True),
    (b"<p>a\x00b</p>\x00" + "é".encode(), "utf-8", True),                         # NULs dropped
    (b"<p>a\xed\xa0\x80b</p>", "utf-8", False),                                   # a surrogate
    (b"\xff\xfe" + html(FRENCH).encode("utf-16-le"), None, False),
    (b"", None, True),
])
def test_html_for_parse_reads_what_decode_html_reads(body, label, fast):
    assert isinstance(_same_reading(body, label), bytes) is fast


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=24), st.sampled_from(_LABELS))
def test_html_for_parse_on_generated_bytes(pieces, label):
    _same_reading(b"".join(pieces), label)


@pytest.mark.parametrize("body, label", [
    (html(FRENCH + "\x00 Grüße, 世界 𝄞").encode("utf-8"), "utf-8"),
    (b"\xef\xbb\xbf" + html(FRENCH).encode("utf-8"), None),
    (html("naïve " * 20).encode("utf-8")[:-9], None),           # cut inside a character
    (html("plain").encode("ascii"), "windows-1252"),
    (b"\x00\x00", None),                                        # no tree, no note
    (b"<!--" + "é".encode() + b"\xc2\xa0", "utf-8"),            # no tree: the note counts characters
])
def test_parse_page_from_bytes_is_parse_page_from_text(body, label):
    from sitestrip.transforms.page import parse_page
    text, _ = decode_html(body, label)
    doc, _, chars = charset.html_for_parse(body, label)
    assert isinstance(doc, bytes)
    a, b = parse_page(text, "http://x.test/"), parse_page(doc, "http://x.test/", chars=chars)
    assert a.differing_fields(b) == [] and a.html_bytes == len(text)
    if body.startswith(b"<!--"):
        assert a.notes == (f"parse failed: lxml built no tree from {len(text)} characters",)
    assert parse_page(doc, "http://x.test/").html_bytes == len(text)      # chars found when not given
