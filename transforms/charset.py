"""Decoding of HTML bytes to text, following the browser's order of evidence."""

from __future__ import annotations

import codecs
import re
from functools import lru_cache

import charset_normalizer

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Where WHATWG decodes a label differently from Python's codec of the same name,
# pages are written for the browser, so the browser's reading wins.
_WHATWG_LABELS = {
    **dict.fromkeys(
        ("ascii", "us-ascii", "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1",
         "l1", "cp819", "ibm819", "csisolatin1", "iso-ir-100", "x-cp1252", "windows-1252"),
        "cp1252",
    ),
    **dict.fromkeys(("iso-8859-9", "iso8859-9", "latin5", "l5"), "cp1254"),
    **dict.fromkeys(("tis-620", "iso-8859-11"), "cp874"),
    **dict.fromkeys(("gb2312", "gbk", "x-gbk", "chinese", "csgb2312", "gb_2312-80"), "gb18030"),
    **dict.fromkeys(("euc-kr", "ks_c_5601-1987", "korean", "windows-949"), "cp949"),
    **dict.fromkeys(("shift_jis", "shift-jis", "sjis", "x-sjis", "ms_kanji", "windows-31j", "ms932"), "cp932"),
    **dict.fromkeys(("big5", "big5-hkscs", "x-x-big5", "cn-big5"), "big5hkscs"),
    **dict.fromkeys(("utf8", "unicode-1-1-utf-8"), "utf-8"),
    **dict.fromkeys(("utf-16", "utf-16le", "unicode"), "utf-16-le"),
    "iso-8859-8-i": "iso8859-8",
}

# Codecs Python knows but browsers refuse (UTF-7 enables script injection) or
# that are not character encodings of documents at all.
_REFUSED_CODECS = frozenset(
    ("utf-7", "utf-32", "utf-32-le", "utf-32-be", "undefined", "unicode-escape",
     "raw-unicode-escape", "idna", "punycode")
)

_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([-\w.:+]+)""", re.IGNORECASE)
_META_SCAN_BYTES = 4096
_DETECTOR_BYTES = 64 * 1024
_FALLBACK = "cp1252"


@lru_cache(maxsize=256)
def _codec(label: str) -> str | None:
    """Python codec name for a charset label, or None when the label is unusable."""
    label = label.strip().strip("\"'").lower()
    try:
        info = codecs.lookup(_WHATWG_LABELS.get(label, label))
    except (LookupError, ValueError):  # ValueError: a label with a NUL in it
        return None
    if info.name in _REFUSED_CODECS or not getattr(info, "_is_text_encoding", True):
        return None
    return info.name


def _meta_codec(head: bytes) -> str | None:
    for match in _META_CHARSET.finditer(head):
        codec = _codec(match.group(1).decode("ascii", "replace"))
        # A meta tag readable as ASCII cannot truthfully declare UTF-16.
        if codec and not codec.startswith("utf-16"):
            return codec
    return None


def _detected_codec(body: bytes) -> str:
    matches = charset_normalizer.from_bytes(body[:_DETECTOR_BYTES])
    best = matches.best()
    if best is None:
        return _FALLBACK
    # Statistics cannot tell the Western code pages apart on short or repetitive
    # text; when windows-1252 reads as cleanly as the winner, the web's prior wins.
    if any(_codec(match.encoding) == _FALLBACK and match.chaos <= best.chaos for match in matches):
        return _FALLBACK
    return _codec(best.encoding) or _FALLBACK


def decode_html(body: bytes, http_charset: str | None) -> tuple[str, str]:
    """Decode an HTML payload; returns (text, Python codec name used)."""
    text, codec = _decode(body, http_charset)
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text, codec


def _decode(body: bytes, http_charset: str | None) -> tuple[str, str]:
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return body[len(bom):].decode(codec, "replace"), codec
    codec = (http_charset and _codec(http_charset)) or _meta_codec(body[:_META_SCAN_BYTES])
    if codec:
        return body.decode(codec, "replace"), codec
    try:
        # Incremental (non-final) decoding forgives a multi-byte character cut
        # off by a truncated capture, which must not demote a UTF-8 page.
        return codecs.getincrementaldecoder("utf-8")().decode(body), "utf-8"
    except UnicodeDecodeError:
        codec = _detected_codec(body)
        return body.decode(codec, "replace"), codec
