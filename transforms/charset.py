"""Decoding of HTML bytes to text, following the browser's order of evidence."""

from __future__ import annotations

import codecs
import re
from functools import lru_cache

import charset_normalizer

try:
    # Compiled with parse flattening (transforms/_flatten.c); utf8_extent below is its reference.
    from sitestrip.transforms._flatten import utf8_extent as _compiled_extent
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled_extent = None

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
    return _text(body, *_declared(body, http_charset))


def _text(body: bytes, codec: str | None, start: int) -> tuple[str, str]:
    """_decode's text without NUL characters, which no reader of a page wants."""
    text, codec = _decode(body, codec, start)
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text, codec


def html_for_parse(body: bytes, http_charset: str | None) -> tuple[str | bytes, str, int]:
    """What page.parse_page reads of an HTML payload: (document, codec, characters), where
    `codec` is decode_html's and `characters` the length of decode_html's text.

    The document is that text, or, where the text is the payload's bytes read as UTF-8 (a
    payload in UTF-8, or ASCII in a codec that reads ASCII as ASCII, less a byte-order mark,
    its NUL bytes and a character cut off by a truncated capture), those bytes: the very bytes
    page.parse_tree would give lxml by encoding the text, without the decode and re-encode.
    A payload with an invalid byte is decoded, since lxml would read it otherwise:
    decode_html gives one U+FFFD for each maximal invalid sequence, libxml2 one for each of
    its bytes. NULs, which decode_html drops and libxml2 reads as U+FFFD, leave the bytes."""
    codec, start = _declared(body, http_charset)
    data = body[start:] if start else body
    extent = None
    if codec is None:
        # Undeclared: UTF-8 when it reads as UTF-8, an incomplete last character left out.
        extent = utf8_extent(data)
        if extent is not None and extent[1] < len(data):
            data = data[:extent[1]]
    elif codec == "utf-8" or (data.isascii() and _reads_ascii_as_ascii(codec)):
        extent = utf8_extent(data)
        if extent is not None and extent[1] < len(data):
            extent = None            # decoded with errors="replace": a U+FFFD at the end
    if extent is None:
        text, codec = _text(body, codec, start)
        return text, codec, len(text)
    chars = extent[0]
    if b"\x00" in data:
        chars -= data.count(b"\x00")
        data = data.replace(b"\x00", b"")
    return data, codec or "utf-8", chars


def utf8_extent(data: bytes) -> tuple[int, int] | None:
    """How Python's incremental UTF-8 decoder (strict, not final) reads `data`: None where it
    raises, else (characters, bytes) of what it decodes: all of `data` but an incomplete last
    character, which it holds back. Compiled in transforms/_flatten.c without decoding; this
    decodes, as the reference and where the extension is missing."""
    if data.isascii():
        return len(data), len(data)
    if _compiled_extent is not None:
        return _compiled_extent(data)
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(data)
    except UnicodeDecodeError:
        return None
    return len(text), len(data) - len(decoder.getstate()[0])


# Codecs whose escape sequences are ASCII: ASCII bytes are not ASCII text in them.
_STATEFUL_CODECS = ("iso2022", "hz", "utf-7", "utf_7")


@lru_cache(maxsize=256)
def _reads_ascii_as_ascii(codec: str) -> bool:
    """Whether `codec` decodes every ASCII byte string to the same characters."""
    if codec.startswith(_STATEFUL_CODECS):
        return False
    ascii_bytes = bytes(range(128))
    try:
        return ascii_bytes.decode(codec) == ascii_bytes.decode("latin-1")
    except (UnicodeDecodeError, LookupError):
        return False


def _declared(body: bytes, http_charset: str | None) -> tuple[str | None, int]:
    """(codec, offset of the text): a byte-order mark's codec and its length, else the codec
    the HTTP header or a <meta> names and 0, else (None, 0)."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return codec, len(bom)
    return (http_charset and _codec(http_charset)) or _meta_codec(body[:_META_SCAN_BYTES]), 0


def _decode(body: bytes, codec: str | None, start: int) -> tuple[str, str]:
    if codec:
        return (body[start:] if start else body).decode(codec, "replace"), codec
    try:
        # Incremental (non-final) decoding forgives a multi-byte character cut
        # off by a truncated capture, which must not demote a UTF-8 page.
        return codecs.getincrementaldecoder("utf-8")().decode(body), "utf-8"
    except UnicodeDecodeError:
        codec = _detected_codec(body)
        return body.decode(codec, "replace"), codec
