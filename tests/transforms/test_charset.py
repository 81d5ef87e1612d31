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
