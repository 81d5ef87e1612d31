"""Reading WARC files into classified records: HTML pages, skips and errors.

FastWARC parses the container (plain, per-record gzip or whole-file gzip); the
HTTP entity body is de-chunked and decompressed here, streaming, so that a
record's memory stays bounded by ReadLimits however the payload is encoded.
FastWARC accepts files cut short without complaint, so truncation is detected
here by comparing each record's declared length with the bytes it delivered.
"""

from __future__ import annotations

import codecs
import os
import re
import time
import zlib
from collections import deque
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator, Sequence

from apache_beam.io.filesystem import BeamIOError, CompressionTypes
from apache_beam.io.filesystems import FileSystems
from fastwarc.warc import ArchiveIterator

try:
    import brotli
except ImportError:
    brotli = None

# Bounded brotli output (output_buffer_limit) arrived in brotli 1.2.
_BROTLI_BOUNDED = brotli is not None and hasattr(brotli.Decompressor, "can_accept_more_data")
_DECOMPRESSION_ERRORS = (zlib.error, brotli.error) if brotli is not None else (zlib.error,)

SKIP_REASONS = (
    "warcinfo", "request", "metadata", "resource", "revisit", "conversion", "continuation", "other_type",
    "non_200", "redirect", "non_html", "empty_file",
)

_HTML_TYPES = frozenset(("text/html", "application/xhtml+xml"))
# Types servers send when they do not know better; the payload decides.
_GENERIC_TYPES = frozenset(
    ("", "application/octet-stream", "binary/octet-stream", "text/plain", "application/unknown", "unknown/unknown")
)
_HTML_SIGNATURES = (b"<!doctype html", b"<html", b"<head", b"<body")
_SNIFF_BYTES = 1024
_CHUNK = 64 * 1024
# How far back the end-of-file check can look: records compressing to more are not checked.
_TAIL_BYTES = 1024 * 1024
_CHUNK_SIZE_LINE = re.compile(rb"[0-9A-Fa-f]{1,16}")
_CHARSET_PARAM = re.compile(r""";\s*charset\s*=\s*["']?([^"';,\s]+)""", re.IGNORECASE)
_WARC_SUFFIXES = (".warc", ".warc.gz")
_MANIFEST_NAME = re.compile(r"(^|\.)paths(\.gz)?$")
_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class ReadLimits:
    # Cap on the decoded HTTP entity body; larger pages become PayloadTooLarge errors.
    max_payload_bytes: int = 20 * 1024 * 1024
    # Cap on the nodes of a parsed page: flattening costs ~4 µs of CPU and most of
    # a kB of peak memory per node, so larger pages become TooManyNodes errors
    # rather than seconds to minutes and GBs per page.
    max_nodes: int = 500_000


@dataclass
class HtmlResponse:
    """An HTTP 200 response with an HTML payload, ready to parse."""

    url: str
    warc_file: str
    warc_offset: int
    warc_record_id: str
    fetch_date: str
    content_type: str
    http_charset: str | None
    truncated: str | None
    body: bytes


@dataclass
class Skipped:
    """A record that is not an HTML 200 page; counted, not output."""

    reason: str
    url: str | None
    record_type: str


@dataclass
class ReadError:
    """An HTML-200-candidate record, or a whole file, that could not be read."""

    url: str | None
    warc_file: str
    warc_offset: int | None
    stage: str
    error_class: str
    message: str


class _Undecodable(Exception):
    def __init__(self, error_class: str, message: str):
        super().__init__(message)
        self.error_class = error_class


class _Tap:
    """Pass-through reader that remembers what the WARC parser does not report:
    how far it got, whether it hit the end, how the file began, and whether the
    storage itself failed (as opposed to the bytes being bad)."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream
        self.position = 0
        self.head = b""
        self._tail: deque[bytes] = deque()
        self._tail_bytes = 0
        self.at_eof = False
        self.failure: Exception | None = None

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._stream.read(size)
        except Exception as error:
            self.failure = error
            raise
        if not self.head:
            self.head = data
        self.position += len(data)
        self.at_eof = not data
        self._tail.append(data)
        self._tail_bytes += len(data)
        while self._tail_bytes - len(self._tail[0]) >= _TAIL_BYTES:
            self._tail_bytes -= len(self._tail.popleft())
        return data

    def tail(self) -> tuple[bytes, int]:
        """The last bytes read (at least _TAIL_BYTES when the file is longer), and their offset."""
        return b"".join(self._tail), self.position - self._tail_bytes

    def tell(self) -> int:
        return self.position


def open_warc(path: str) -> BinaryIO:
    # Per-record gzip members must reach the parser as they are, so offsets stay seekable.
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def iter_warc_records(
    stream: BinaryIO, warc_file: str, limits: ReadLimits = ReadLimits()
) -> Iterator[HtmlResponse | Skipped | ReadError]:
    """Classify every record of one WARC stream. Bad data never raises: it becomes
    a ReadError. Failures of the stream itself propagate so the runner can retry."""
    tap = _Tap(stream)
    seen = 0
    offset = last_offset = None
    try:
        for record in ArchiveIterator(tap, parse_http=False, fsspec_args=False):
            seen += 1
            offset, url = record.stream_pos, _target_uri(record)
            if not _header_block_complete(record):
                yield ReadError(None, warc_file, offset, "read", _container_error_class(tap, True),
                                "WARC header block is cut off or lacks a valid Content-Length")
                return
            outcome = _classify(record, url, warc_file, offset, limits)
            record.consume()
            delivered, declared = record.reader.tell(), record.content_length
            if delivered < declared:
                page_url = url if isinstance(outcome, (HtmlResponse, ReadError)) else None
                yield ReadError(page_url, warc_file, offset, "read", "TruncatedFile",
                                f"record ends after {delivered} of {declared} bytes")
                return
            yield outcome
            last_offset, offset = offset, None
    except OSError as error:
        if tap.failure is not None:
            raise
        yield ReadError(None, warc_file, offset, "read", _container_error_class(tap, seen > 0), str(error))
        return
    if seen and _gzip_cut_after(tap, last_offset):
        yield ReadError(None, warc_file, last_offset, "read", "TruncatedFile",
                        "the last gzip member is cut off or followed by a partial one")
    elif not seen:
        if tap.position == 0:
            yield Skipped("empty_file", None, "")
        else:
            yield ReadError(None, warc_file, None, "read", _container_error_class(tap, False),
                            f"no WARC record in {tap.position} bytes")


def _header_block_complete(record) -> bool:
    # A header block cut at the end of the file still parses, but without its
    # Content-Length, or with a length the parser did not take up.
    declared = record.headers.get("Content-Length") or ""
    return declared.strip().isdigit() and int(declared) == record.content_length


def _gzip_cut_after(tap: _Tap, last_offset: int) -> bool:
    """Whether the gzip member holding the last record is cut short, or followed by
    the start of a member too short to yield anything: cuts the parser passes over."""
    tail, tail_start = tap.tail()
    if tap.head[:2] != b"\x1f\x8b" or last_offset < tail_start:
        return False
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    try:
        if not inflater.decompress(tail[last_offset - tail_start:], 5).startswith(b"WARC/"):
            return False  # whole-file gzip: record offsets do not start members
        data = inflater.unconsumed_tail
        while data and not inflater.eof:
            inflater.decompress(data, _CHUNK)
            data = inflater.unconsumed_tail
    except zlib.error:
        return False
    fragment = inflater.unused_data[:2]
    return not inflater.eof or (bool(fragment) and b"\x1f\x8b".startswith(fragment))


def _container_error_class(tap: _Tap, records_seen: bool) -> str:
    if not (records_seen or _starts_like_warc(tap.head)):
        return "NotAWarc"
    return "TruncatedFile" if tap.at_eof else "BadWarcRecord"


def _starts_like_warc(head: bytes) -> bool:
    """Whether a file begins like a WARC, possibly cut off within its first line."""
    if b"\x1f\x8b".startswith(head[:2]):
        try:
            head = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(head, 5)
        except zlib.error:
            return False
    return b"WARC/".startswith(head[:5])


def _target_uri(record) -> str | None:
    uri = record.headers.get("WARC-Target-URI")
    # WARC 1.0 drafts wrote the URI in angle brackets; some writers still do.
    if uri and uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1]
    return uri


def _classify(
    record, url: str | None, warc_file: str, offset: int, limits: ReadLimits
) -> HtmlResponse | Skipped | ReadError:
    record_type = str(record.record_type)
    if record_type != "response":
        reason = record_type if record_type in SKIP_REASONS else "other_type"
        return Skipped(reason, url, record.headers.get("WARC-Type") or "")
    if not record.is_http:
        if not (url or "").startswith(("http:", "https:")):
            return Skipped("non_html", url, "response")
        # Writers that omit the WARC Content-Type still store HTTP for http(s) URIs.
        record.is_http = True
    try:
        record.parse_http(quirks_mode=True)
    except OSError as error:
        return ReadError(url, warc_file, offset, "read", "BadHttpHeaders", str(error))
    http = record.http_headers
    status = http.status_code
    if status is None:
        return ReadError(url, warc_file, offset, "read", "BadHttpHeaders",
                         f"no HTTP status line: {(http.status_line or '')[:80]!r}")
    if status != 200:
        return Skipped("redirect" if 300 <= status < 400 else "non_200", url, "response")
    content_type = http.get("Content-Type") or ""
    mime = re.split(r"[;,]", content_type, maxsplit=1)[0].strip().lower()
    sniff = mime in _GENERIC_TYPES
    if not (sniff or mime in _HTML_TYPES):
        return Skipped("non_html", url, "response")
    try:
        body = _entity_body(record.reader, http, limits.max_payload_bytes, sniff)
    except _Undecodable as error:
        return ReadError(url, warc_file, offset, "decode", error.error_class, str(error))
    except _DECOMPRESSION_ERRORS as error:
        return ReadError(url, warc_file, offset, "decode", "BadContentEncoding", f"{type(error).__name__}: {error}")
    if body is None:
        return Skipped("non_html", url, "response")
    charset = _CHARSET_PARAM.search(content_type)
    return HtmlResponse(
        url=url or "",
        warc_file=warc_file,
        warc_offset=offset,
        warc_record_id=record.headers.get("WARC-Record-ID") or "",
        fetch_date=record.headers.get("WARC-Date") or "",
        content_type="text/html" if sniff else mime,
        http_charset=charset.group(1) if charset else None,
        truncated=record.headers.get("WARC-Truncated"),
        body=body,
    )


def with_read_ms(items: Iterator) -> Iterator[tuple[object, float]]:
    """(item, thread CPU ms spent producing it) for each item of a record iterator: the
    read stage's cost of each page, as the pipeline reports it in timing_ms."""
    while True:
        clock = time.thread_time()
        item = next(items, None)
        if item is None:
            return
        yield item, (time.thread_time() - clock) * 1000.0


def iter_payloads(
    stream: BinaryIO, wanted: Callable[[str], bool], limits: ReadLimits = ReadLimits()
) -> Iterator[tuple[str, str, str | None, bytes]]:
    """(target URI, MIME type, HTTP charset, decoded body) of each HTTP 200 response whose
    target URI `wanted` accepts, whatever its type: resources a view needs besides pages
    (stylesheets). A record or file that cannot be read is passed over, not reported:
    the pipeline's own reading (iter_warc_records) is where failures are accounted for."""
    try:
        for record in ArchiveIterator(stream, parse_http=False, fsspec_args=False):
            url = _target_uri(record)
            if str(record.record_type) != "response" or not url or not wanted(url):
                continue
            record.is_http = True
            try:
                record.parse_http(quirks_mode=True)
                http = record.http_headers
                if http.status_code != 200:
                    continue
                content_type = http.get("Content-Type") or ""
                mime = re.split(r"[;,]", content_type, maxsplit=1)[0].strip().lower()
                body = _entity_body(record.reader, http, limits.max_payload_bytes, False)
            except (OSError, _Undecodable, *_DECOMPRESSION_ERRORS):
                continue
            charset = _CHARSET_PARAM.search(content_type)
            yield url, mime, charset.group(1) if charset else None, body
    except OSError:
        return


def _entity_body(reader, http, limit: int, sniff: bool) -> bytes | None:
    """The decoded entity body, or None when sniffing finds it is not HTML."""
    if "chunked" in (http.get("Transfer-Encoding") or "").lower():
        chunks = _capped(_dechunked(reader), limit)
    else:
        chunks = _capped(_read(reader, limit + 1), limit)
    codings = [c.strip().lower() for c in (http.get("Content-Encoding") or "").split(",")]
    for coding in reversed([c for c in codings if c and c != "identity"]):
        chunks = _capped(_decompressed(chunks, coding), limit)
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if sniff and len(body) >= _SNIFF_BYTES:
            break
    if sniff and not _sniffs_as_html(body):
        return None
    for chunk in chunks:
        body += chunk
    return bytes(body)


def _sniffs_as_html(body: bytes) -> bool:
    head = body[:_SNIFF_BYTES]
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8):]
    return head.lstrip(b" \t\r\n\f").lower().startswith(_HTML_SIGNATURES)


def _capped(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise _Undecodable("PayloadTooLarge", f"entity body exceeds {limit} bytes")
        yield chunk


def _read(reader, budget: int) -> Iterator[bytes]:
    while budget > 0 and (chunk := reader.read(min(_CHUNK, budget))):
        budget -= len(chunk)
        yield chunk


def _chunk_size(line: bytes) -> int | None:
    token = line.split(b";", 1)[0].strip()
    return int(token, 16) if _CHUNK_SIZE_LINE.fullmatch(token) else None


def _dechunked(reader) -> Iterator[bytes]:
    line = reader.readline()
    size = _chunk_size(line)
    if size is None:
        # Some crawlers store the body de-chunked but keep the Transfer-Encoding header.
        yield line
        yield from iter(lambda: reader.read(_CHUNK), b"")
        return
    while size:
        while size:
            piece = reader.read(min(size, _CHUNK))
            if not piece:
                return  # capture cut mid-chunk: keep what arrived, as for any truncated record
            size -= len(piece)
            yield piece
        reader.readline()
        line = reader.readline()
        if not line:
            return
        size = _chunk_size(line)
        if size is None:
            raise _Undecodable("BadChunkedEncoding", f"bad chunk size line {line[:40]!r}")


def _decompressed(chunks: Iterator[bytes], coding: str) -> Iterator[bytes]:
    if coding in ("gzip", "x-gzip"):
        # Accepting a zlib header too costs nothing and rescues mislabelled servers.
        return _inflated(chunks, zlib.MAX_WBITS | 32)
    if coding == "deflate":
        return _inflated(chunks, None)
    if coding == "br" and _BROTLI_BOUNDED:
        return _unbrotlied(chunks)
    raise _Undecodable("UnsupportedContentEncoding", f"Content-Encoding {coding!r} is not supported here")


def _inflated(chunks: Iterator[bytes], wbits: int | None) -> Iterator[bytes]:
    """zlib inflation yielding at most _CHUNK bytes per step, so a bomb is stopped
    by the cap downstream before it can allocate."""
    inflater = zlib.decompressobj(wbits) if wbits else None
    pending = b""
    for chunk in chunks:
        if inflater is None:
            # HTTP "deflate" is zlib-wrapped by the spec but raw in many servers.
            pending += chunk
            if len(pending) < 2:
                continue
            is_zlib = pending[0] & 0x0F == 8 and int.from_bytes(pending[:2], "big") % 31 == 0
            inflater = zlib.decompressobj(zlib.MAX_WBITS if is_zlib else -zlib.MAX_WBITS)
            chunk = pending
        while chunk and not inflater.eof:
            yield inflater.decompress(chunk, _CHUNK)
            chunk = inflater.unconsumed_tail
        if inflater.eof:
            return


def _unbrotlied(chunks: Iterator[bytes]) -> Iterator[bytes]:
    decompressor = brotli.Decompressor()
    for chunk in chunks:
        yield decompressor.process(chunk, output_buffer_limit=_CHUNK)
        while not decompressor.can_accept_more_data():
            yield decompressor.process(b"", output_buffer_limit=_CHUNK)


def expand_inputs(inputs: Sequence[str], input_prefix: str | None = None) -> list[str]:
    """WARC paths named by files, globs, directories and Common Crawl manifests."""
    paths: set[str] = set()
    for item in inputs:
        found = _expand_input(item, input_prefix)
        if not found:
            raise ValueError(f"input {item!r} matched no WARC files")
        paths.update(found)
    return sorted(paths)


def _expand_input(item: str, input_prefix: str | None) -> list[str]:
    if _MANIFEST_NAME.search(item.rstrip("/").rsplit("/", 1)[-1]):
        return [path for manifest in _matched(item) for path in _manifest_entries(manifest, input_prefix)]
    if item.endswith("/") or os.path.isdir(item):
        return _warcs_under(item)
    found = _matched(item)
    if not found and not _GLOB_CHARS.search(item):
        # In object stores a "directory" is only a key prefix and matches no object.
        return _warcs_under(item)
    return found


def _warcs_under(directory: str) -> list[str]:
    return [path for path in _matched(directory.rstrip("/") + "/**") if path.endswith(_WARC_SUFFIXES)]


def _matched(pattern: str) -> list[str]:
    try:
        (result,) = FileSystems.match([pattern])
    except BeamIOError:  # some filesystems report a pattern without matches as an error
        return []
    return [metadata.path for metadata in result.metadata_list]


def _manifest_entries(manifest: str, input_prefix: str | None) -> list[str]:
    with FileSystems.open(manifest) as file:
        entries = file.read().decode("utf-8").splitlines()
    return [_resolve(entry.strip(), input_prefix) for entry in entries if entry.strip()]


def _resolve(path: str, input_prefix: str | None) -> str:
    if not input_prefix or "://" in path or path.startswith("/"):
        return path
    return input_prefix.rstrip("/") + "/" + path.lstrip("/")
