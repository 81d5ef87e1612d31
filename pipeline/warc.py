"""Reading WARC files into classified records: HTML pages, skips and errors.

Header blocks are read here as warcio's StatusAndHeadersParser reads them (`_header_fields`),
and warcio decodes the entity body (gzip, deflate, br) through its BufferedReader. What it
does not do is done here:

- The container: a `.warc.gz` is a sequence of gzip members; Common Crawl writes one
  member per record. Members are inflated one at a time (isal when installed, else
  zlib; see `_Container._inflate_whole`), so a record's
  offset is its member's offset, and a record cut short inside its member is told
  apart from the next record, which starts the next member. (warcio's ArchiveIterator
  reads on across members and stops at the first damage.)
- After a damaged member, a record whose WARC header is unusable or whose length
  lies, or bytes where no record starts, one ReadError with the offset is yielded
  and reading resumes at the next gzip member that inflates to a WARC record (in
  plain WARC, or in a member holding many records, at the next line that starts
  with `WARC/1.`); see `_Container.resync`. A file gzipped whole is one member:
  damaged data there loses the rest of the file.
- Bytes of any kind never raise: lengths are ASCII digits or the record is bad,
  header blocks and header counts are bounded before warcio parses them (it reads
  lines without bound). Only failures of the stream itself (storage, network)
  propagate, so that the runner can retry the file.
- The entity body is de-chunked here (`_dechunked` says why not by warcio) and
  decoded with bounded decompressors (`_Decoder`), streaming, so that a record's
  memory stays bounded by ReadLimits however the payload is encoded; a body cut
  short (in its chunks, its compressed stream or against its declared length) is
  kept and named in HtmlResponse.notes.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator, Sequence

from apache_beam.io.filesystem import BeamIOError, CompressionTypes
from apache_beam.io.filesystems import FileSystems
from warcio.bufferedreaders import BufferedReader
from warcio.statusandheaders import StatusAndHeadersParser

from sitestrip.configs import ReadLimits
from sitestrip.transforms.status import PAYLOAD_CUT

try:
    import brotli
except ImportError:
    brotli = None

try:
    from isal import isal_zlib
except ImportError:
    isal_zlib = None

# isal inflates a member in about half zlib's CPU time. Its errors are not zlib's (other
# messages, other points of detection) and it accepts headers zlib refuses, so it only
# ever inflates a member whole: any failure, cut or excess and zlib reads the member
# from its first byte as if isal had never run. Tests switch it off to compare both
# paths; SITESTRIP_INFLATE=zlib does so for a process.
_ISAL = isal_zlib is not None and os.environ.get("SITESTRIP_INFLATE", "isal") != "zlib"

# Bounded brotli output (output_buffer_limit) arrived in brotli 1.2.
_BROTLI_BOUNDED = brotli is not None and hasattr(brotli.Decompressor, "can_accept_more_data")
_DECOMPRESSION_ERRORS = (zlib.error, brotli.error) if brotli is not None else (zlib.error,)
_CODINGS = frozenset(("gzip", "x-gzip", "deflate", "br"))

SKIP_REASONS = (
    "warcinfo", "request", "metadata", "resource", "revisit", "conversion", "continuation", "other_type",
    "non_200", "redirect", "non_html", "empty_file",
)
_RECORD_TYPES = frozenset(("warcinfo", "response", "resource", "request", "metadata", "revisit",
                           "conversion", "continuation"))

_HTML_TYPES = frozenset(("text/html", "application/xhtml+xml"))
# Types servers send when they do not know better; the payload decides.
_GENERIC_TYPES = frozenset(
    ("", "application/octet-stream", "binary/octet-stream", "text/plain", "application/unknown", "unknown/unknown")
)
_HTML_SIGNATURES = (b"<!doctype html", b"<html", b"<head", b"<body")
_SNIFF_BYTES = 1024
_CHUNK = 64 * 1024
_CHUNK_SIZE_LINE = re.compile(rb"[0-9A-Fa-f]{1,16}")
_CHARSET_PARAM = re.compile(r""";\s*charset\s*=\s*["']?([^"';,\s]+)""", re.IGNORECASE)
_WARC_SUFFIXES = (".warc", ".warc.gz")
_MANIFEST_NAME = re.compile(r"(^|\.)paths(\.gz)?$")
_GLOB_CHARS = re.compile(r"[*?\[]")

# Container reading. Blocks: bytes read from the stream at a time, compressed bytes
# handed to zlib at a time, decompressed bytes asked of zlib at a time.
_RAW_BLOCK = 1 << 20
_IN_BLOCK = 16 * 1024
_OUT_BLOCK = 256 * 1024
# Raw bytes kept behind the read position so that a rescan after damage can start
# at the damaged member's first byte; a longer member is rescanned from its last _RETAIN bytes.
_RETAIN = 8 << 20
# A member inflating to more than this is left to zlib, which reads it in bounded steps.
_WHOLE_LIMIT = 8 << 20
# FLG bits zlib checks and isal does not: FHCRC (isal reports a mismatch as a data
# checksum error) and the reserved bits (isal ignores them).
_ZLIB_ONLY_FLAGS = 0xE2
_GZIP_MAGIC = b"\x1f\x8b"
_MEMBER_START = b"\x1f\x8b\x08"       # magic + deflate, the only method gzip defines
_RECORD_START = b"WARC/"
_SYNC_LINE = b"WARC/1."               # what resync accepts as the start of a record
_BLANKS = re.compile(rb"[\r\n]*")
# Header blocks: WARC headers are a dozen short lines, HTTP headers rarely pass a
# few kB; a block or a field count beyond these is damage, not data.
_MAX_HEAD_BYTES = 1 << 20
_MAX_WARC_FIELDS = 1000
_MAX_HTTP_FIELDS = 10_000
_MAX_LINE = 64 * 1024
_CONTENT_LENGTH = re.compile(r"[0-9]{1,15}")      # ASCII digits only: "²".isdigit() is True
_VERSION_LINE = re.compile(r"WARC/[0-9]")
_STATUS_LINE = re.compile(r"\s*HTTP/[0-9]+(?:\.[0-9]+)?[ \t]+([0-9]{3})(?:[ \t]|$)", re.IGNORECASE)


@dataclass
class HtmlResponse:
    """An HTTP 200 response with an HTML payload, ready to parse."""

    url: str                        # WARC-Target-URI as written
    warc_file: str
    warc_offset: int
    warc_record_id: str
    fetch_date: str
    content_type: str
    http_charset: str | None
    truncated: str | None
    body: bytes
    notes: tuple[str, ...] = ()     # how the body is incomplete (transforms.status.PAYLOAD_CUT notes)


@dataclass
class Skipped:
    """A record that is not an HTML 200 page; counted, not output."""

    reason: str
    url: str | None
    record_type: str


@dataclass
class ReadError:
    """An HTML-200-candidate record, a damaged part of a file, or a whole file, that could not be read."""

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


class _BadMember(Exception):
    """A gzip member of the container that zlib cannot inflate."""


def open_warc(path: str) -> BinaryIO:
    # Per-record gzip members must reach the reader as they are, so offsets stay seekable.
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


class _Raw:
    """The file's bytes as read so far, from `base` on; reads ahead in blocks."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream
        self.buf = bytearray()
        self.base = 0
        self.eof = False

    @property
    def end(self) -> int:
        return self.base + len(self.buf)

    def fill(self, upto: int) -> None:
        while self.end < upto and not self.eof:
            data = self._stream.read(_RAW_BLOCK)   # a failing stream raises: the runner retries
            if data:
                self.buf += data
            else:
                self.eof = True

    def get(self, start: int, stop: int) -> bytes:
        if stop > self.base + len(self.buf):
            self.fill(stop)
        with memoryview(self.buf) as view:     # one copy, and no export left behind
            return bytes(view[start - self.base:stop - self.base])

    def drop_before(self, offset: int) -> None:
        """Lets bytes before `offset` go; they are freed a block at a time, not per record."""
        if offset - self.base >= _RAW_BLOCK:
            del self.buf[:offset - self.base]
            self.base = offset


class _Container:
    """The decompressed bytes of a WARC file, one segment at a time.

    A segment is a gzip member or, for plain WARC, the rest of the file. Reading
    stays within the current segment unless a record goes on into the next
    member (a member that does not itself begin with a record: files gzipped in
    blocks, not per record). Records are taken from `out[i:]`.
    """

    def __init__(self, stream: BinaryIO):
        self.raw = _Raw(stream)
        self._open(0)

    def _open(self, start: int, keep: bytes = b"") -> None:
        raw = self.raw
        raw.drop_before(start)
        magic = raw.get(start, start + 2)
        # A lone 0x1f at the very end is a member cut within its magic.
        self.gzip = magic == _GZIP_MAGIC or (magic == _GZIP_MAGIC[:1] and raw.eof and raw.end == start + 1)
        self.inflater = zlib.decompressobj(zlib.MAX_WBITS | 16) if self.gzip else None
        self.seg_start = start
        self.feed = start            # raw offset of the next byte for the inflater
        self.pending = b""           # bytes zlib has not consumed yet (output was capped)
        self.ended = False           # no more bytes in this segment
        self.cut = False             # ... because the file ended inside the member
        self.member_end: int | None = None
        self.out = keep
        self.i = 0
        self.out_base = 0            # segment-relative offset of out[0] (plain: raw offset - seg_start)

    def _retain(self) -> None:
        if self.feed - self.raw.base > _RETAIN:
            self.raw.drop_before(self.feed - _RETAIN)

    def _inflate(self, size: int) -> bytes:
        """Up to `size` more bytes of the segment; b"" once it has ended."""
        if self.ended:
            return b""
        if self.inflater is None:
            data = self.raw.get(self.feed, self.feed + size)
            if not data:
                self.ended = True
            self.feed += len(data)
            self._retain()
            return data
        if _ISAL and self.feed == self.seg_start:
            data = self._inflate_whole()
            if data is not None:
                return data
        inflater = self.inflater
        while True:
            try:
                if self.pending:
                    data = inflater.decompress(self.pending, size)
                else:
                    raw = self.raw
                    stop = self.feed + _IN_BLOCK
                    if stop > raw.end:
                        raw.fill(stop)
                    first, last = self.feed - raw.base, min(stop, raw.end) - raw.base
                    if first >= last:
                        self.ended = self.cut = True
                        return b""
                    self.feed += last - first
                    # zlib copies what it leaves over, so no view outlives the call.
                    with memoryview(raw.buf) as view, view[first:last] as piece:
                        data = inflater.decompress(piece, size)
                    self._retain()
            except zlib.error as error:
                raise _BadMember(str(error)) from None
            if inflater.eof:
                # What follows the member is in unused_data (unconsumed_tail may repeat it).
                self.ended = True
                self.member_end = self.feed - len(inflater.unused_data)
                self.pending = b""
                return data
            self.pending = inflater.unconsumed_tail
            if data:
                return data

    def _inflate_whole(self) -> bytes | None:
        """The whole member inflated by isal, or None (nothing consumed) for zlib to read it.

        Only a member that isal inflates to its end, checksum and length included, is
        taken: zlib inflates such a member to the same bytes without an error, so which
        one read it changes nothing downstream. (The one exception would be a member whose
        deflate stream zlib refuses, an invalid code table, that isal still inflates to the
        right checksum: a compressor's fault that neither the dev corpora nor a fuzz of
        their members produced.) Anything else (damage, a cut, a member
        over _WHOLE_LIMIT) is read by zlib from the start, so that its error, its message
        and the bytes delivered before it are zlib's."""
        raw = self.raw
        start = self.seg_start
        head = raw.get(start, start + 4)
        if len(head) < 4 or head[2] != 8 or head[3] & _ZLIB_ONLY_FLAGS:
            return None
        inflater = isal_zlib.decompressobj(isal_zlib.MAX_WBITS | 16)
        feed, room, parts = start, _WHOLE_LIMIT, []
        try:
            while room > 0:              # max_length 0 would mean no limit
                stop = feed + _IN_BLOCK
                if stop > raw.end:
                    raw.fill(stop)
                first, last = feed - raw.base, min(stop, raw.end) - raw.base
                if first >= last:
                    return None
                feed += last - first
                with memoryview(raw.buf) as view, view[first:last] as piece:
                    data = inflater.decompress(piece, room)
                room -= len(data)
                parts.append(data)
                if inflater.eof:
                    break
                if inflater.unconsumed_tail:
                    return None
            else:
                return None
        except isal_zlib.error:
            return None
        self.feed = feed
        self.ended = True
        self.member_end = feed - len(inflater.unused_data)
        self._retain()
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def want(self, n: int, cross: bool = False) -> int:
        """Bytes available in out[i:], after inflating until there are `n` or the segment
        (with `cross`, the record's run of members) ends."""
        avail = len(self.out) - self.i
        while avail < n:
            more = self._inflate(max(n - avail, _OUT_BLOCK))
            if not more:
                if self.ended and cross and self._continues():
                    continue
                break
            if self.i:
                self.out_base += self.i
                self.out = self.out[self.i:] + more
                self.i = 0
            else:
                self.out += more
            avail = len(self.out) - self.i
        return avail

    def _member_head(self, start: int, size: int = len(_SYNC_LINE)) -> bytes | None:
        """The first bytes a gzip member at raw offset `start` inflates to; None if it is none."""
        data = self.raw.get(start, start + _IN_BLOCK)
        if not data.startswith(_MEMBER_START):
            return None
        try:
            return zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(data, size)
        except zlib.error:
            return None

    def _continues(self) -> bool:
        """Whether the record being read goes on in the next member: one that is well formed
        and does not begin a record itself. Then that member becomes the segment."""
        if self.inflater is None or self.cut:
            return False
        head = self._member_head(self.member_end)
        if head is None or head.startswith(_RECORD_START):
            return False
        self._open(self.member_end, keep=self.out[self.i:])
        return True

    @property
    def at_file_end(self) -> bool:
        """Whether the segment ended because the file did (a cut), not at a member's end."""
        return self.cut or (self.inflater is None and self.ended)

    def position(self) -> int:
        """The offset rows report for a record starting at out[i]: its member's offset in
        gzip, its own offset in plain WARC."""
        return self.seg_start if self.gzip else self.seg_start + self.out_base + self.i

    def begin_record(self) -> tuple[str, int | None]:
        """Moves to where the next record should start, past blank lines and member ends:
        ("record", offset), ("eof", None), ("cut", offset: the file ends inside a member
        or a record's first line), or ("junk", offset: bytes that do not start a record)."""
        while True:
            avail = self.want(len(_RECORD_START))
            if avail:
                blank_end = _BLANKS.match(self.out, self.i).end()
                if blank_end > self.i:
                    self.i = blank_end
                    continue
            else:
                if not self.ended:
                    continue
                if self.cut:
                    return "cut", self.seg_start
                if self.member_end is None or not self._has_bytes_at(self.member_end):
                    return "eof", None
                self._open(self.member_end)
                continue
            offset = self.position()
            if not self.gzip:
                self.raw.drop_before(offset)
            start = self.out[self.i:self.i + len(_RECORD_START)]
            if start == _RECORD_START:
                return "record", offset
            if avail < len(_RECORD_START) and self.at_file_end and _RECORD_START.startswith(start):
                return "cut", offset
            return "junk", offset

    def salvage_head(self) -> bytes | None:
        """The WARC header block at the start of the current member, inflated again in small
        steps to get what precedes the damage: it names the record a damaged member held."""
        if self.raw.base > self.seg_start:     # a member longer than _RETAIN: its start is gone
            return None
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        data = self.raw.get(self.seg_start, min(self.seg_start + _MAX_HEAD_BYTES, self.raw.end))
        out = b""
        try:
            while data and len(out) < _MAX_HEAD_BYTES and not inflater.eof:
                out += inflater.decompress(data, 512)
                data = inflater.unconsumed_tail
                end = _head_end(out, 0, len(out))
                if end != -1:
                    return out[:end]
        except zlib.error:
            pass
        end = _head_end(out, 0, len(out))
        return out[:end] if end != -1 else None

    def ends_record(self) -> bool:
        """Whether what follows a record's content can be its end: the segment's end, a line
        break (the CRLF CRLF that closes a record) or the next record. Anything else means
        the declared length is wrong."""
        avail = self.want(len(_RECORD_START))
        return not avail or self.out[self.i] in b"\r\n" or \
            self.out.startswith(_RECORD_START, self.i)

    def _has_bytes_at(self, offset: int) -> bool:
        if self.raw.end <= offset:
            self.raw.fill(offset + 1)
        return self.raw.end > offset

    @property
    def record_in_member(self) -> bool:
        """Whether out[i] is inside a gzip member rather than at its start (whole-file gzip)."""
        return self.gzip and self.out_base + self.i > 0

    def take_head(self, limit: int, cross: bool) -> tuple[bytes, bool]:
        """(bytes up to and including the first empty line, True), or (what there is, False)
        when the segment ends first or `limit` bytes hold no empty line. Consumes what it returns."""
        scanned = 0                  # bytes of out[i:] searched already
        while True:
            avail = len(self.out) - self.i
            stop = self.i + min(avail, limit)
            end = _head_end(self.out, self.i + max(0, scanned - 2), stop)
            if end == -1 and avail < limit and self.want(avail + 1, cross) > avail:
                scanned = avail
                continue
            complete = end != -1
            end = end if complete else stop
            head, self.i = self.out[self.i:end], end
            return head, complete

    def resync(self, damaged_at: int, in_member: bool) -> int | None:
        """After damage at `damaged_at` (a member or plain-record offset): on to the next
        record start, whose offset it returns (None: none follows). One member per record:
        the next member that inflates to a WARC record, so a damaged member costs that
        record only. Records sharing a member (whole-file gzip): the next line in it that
        starts with `WARC/1.`. Plain WARC: the next such line, or the next such member."""
        if in_member:
            return self._scan_lines()
        return self._scan_raw(damaged_at + 1)

    def _scan_lines(self) -> int | None:
        while True:
            found = self.out.find(b"\n" + _SYNC_LINE, self.i)
            if found != -1:
                self.i = found + 1
                return self.position()
            # "\nWARC/1." may straddle what is inflated so far.
            self.i = max(self.i, len(self.out) - len(_SYNC_LINE))
            kept = len(self.out) - self.i
            try:
                if self.want(kept + 1) > kept:
                    continue
            except _BadMember:
                return self._scan_raw(self.seg_start + 1)
            if self.cut or self.member_end is None:
                self.i = len(self.out)
                return None
            return self._scan_raw(self.member_end)

    def _scan_raw(self, start: int) -> int | None:
        """Opens the segment at the first raw offset ≥ `start` (or the earliest byte still
        kept) where a gzip member inflating to `WARC/1.` or a plain `WARC/1.` line begins;
        at the end of the file if there is none."""
        raw = self.raw
        pos = max(start, raw.base)
        while True:
            raw.fill(pos + _RAW_BLOCK)
            found = self._sync_point(pos)
            if found is not None or raw.eof:
                self._open(raw.end if found is None else found)
                return found
            # A pattern may straddle the block end; the byte before a line start is kept for its "\n".
            pos = max(pos, raw.end - len(_SYNC_LINE))
            raw.drop_before(pos - 1)

    def _sync_point(self, pos: int) -> int | None:
        raw = self.raw
        member = raw.buf.find(_MEMBER_START, pos - raw.base)
        while member != -1:
            head = self._member_head(raw.base + member)
            if head is not None and head.startswith(_SYNC_LINE):
                break
            member = raw.buf.find(_MEMBER_START, member + 1)
        line = raw.buf.find(_SYNC_LINE, pos - raw.base)
        while line != -1 and not (raw.base + line == 0 or (line > 0 and raw.buf[line - 1] == 0x0A)):
            line = raw.buf.find(_SYNC_LINE, line + 1)
        found = [raw.base + k for k in (member, line) if k != -1]
        return min(found) if found else None


def _head_end(buf: bytes, start: int, stop: int) -> int:
    """Offset just past the first empty line (CRLF or bare LF) in buf[start:stop], or -1."""
    crlf = buf.find(b"\n\r\n", start, stop)
    # Bare-LF writers are rare: look for one only before the CRLF found, not through a body.
    lf = buf.find(b"\n\n", start, stop if crlf == -1 else crlf + 2)
    if lf != -1:
        return lf + 2
    return crlf + 3 if crlf != -1 else -1


class _Content:
    """A record's content block, bounded by its Content-Length: what the classifier reads."""

    def __init__(self, box: _Container, length: int):
        self._box = box
        self.length = self.left = length

    def tell(self) -> int:
        return self.length - self.left

    def read(self, size: int) -> bytes:
        size = min(size, self.left)
        box = self._box
        if size <= 0 or not box.want(1, cross=True):
            return b""
        data = box.out[box.i:box.i + size]
        box.i += len(data)
        self.left -= len(data)
        return data

    def readline(self, limit: int = _MAX_LINE) -> bytes:
        """A line with its newline, or the first `limit` bytes of a longer one."""
        limit = min(limit, self.left)
        box = self._box
        scanned = 0
        while True:
            avail = len(box.out) - box.i
            stop = box.i + min(avail, limit)
            newline = box.out.find(b"\n", box.i + scanned, stop)
            if newline == -1 and avail < limit and box.want(avail + 1, cross=True) > avail:
                scanned = avail
                continue
            stop = newline + 1 if newline != -1 else stop
            line, box.i = box.out[box.i:stop], stop
            self.left -= len(line)
            return line

    def read_head(self) -> tuple[bytes, bool]:
        """The HTTP header block (see _Container.take_head), within this content."""
        head, complete = self._box.take_head(min(self.left, _MAX_HEAD_BYTES), cross=True)
        self.left -= len(head)
        return head, complete or self.left == 0

    def skip_rest(self) -> None:
        box = self._box
        while self.left:
            avail = box.want(min(self.left, _OUT_BLOCK), cross=True)
            if not avail:
                return
            taken = min(avail, self.left)
            box.i += taken
            self.left -= taken


@dataclass
class _WarcHead:
    fields: dict                   # _header_fields of the header block
    content_length: int

    def get(self, name: str) -> str | None:
        return self.fields.get(name.lower())

    @property
    def record_type(self) -> str:
        """The WARC-Type, lower-cased if it is one WARC defines, "other" otherwise ("" if absent)."""
        value = (self.get("WARC-Type") or "").strip().lower()
        return value if value in _RECORD_TYPES or not value else "other"

    @property
    def target_uri(self) -> str | None:
        uri = (self.get("WARC-Target-URI") or "").strip()
        # WARC 1.0 drafts wrote the URI in angle brackets; some writers still do. (warcio's
        # record loader unwraps them too, but also rewrites spaces: `url` is the URI as written.)
        if uri.startswith("<") and uri.endswith(">"):
            uri = uri[1:-1]
        return uri or None

    @property
    def is_http(self) -> bool:
        return (self.get("Content-Type") or "").strip().lower().startswith("application/http")


class _BadHead(Exception):
    pass


# Header blocks (name: value lines, folded lines) are read as warcio's StatusAndHeadersParser
# reads them, unverified: its check of the first line knows four WARC versions by name and
# refuses a version line with a flipped byte after "WARC/1.", which costs a record that reads
# well otherwise. The blocks are cut and counted first, because it reads lines without bound.
# `_header_fields` gives its fields in one pass over the block's lines, without its stream,
# its per-line decoding and its header object (a third of the read step's CPU besides
# inflating); `_warcio_fields` is the reference, which SITESTRIP_HEADERS=warcio takes for a
# process and tests/pipeline/test_warc.py compares with it.
_HEAD = StatusAndHeadersParser([], verify=False)


def _warcio_fields(text: str) -> dict:
    """_header_fields through warcio's parser."""
    fields: dict = {}
    for name, value in _HEAD.parse(io.BytesIO(text.encode("utf-8"))).headers:
        key = name.lower()
        got = fields.get(key)
        fields[key] = value if got is None else got + ", " + value
    return fields


def _header_fields(text: str) -> dict:
    """The fields of a header block (a first line, then fields) decoded as `text`, non-empty:
    {lower-cased name: value}, a repeated field's values joined with ", " (RFC 9110 §5.3), where
    warcio's get_header gives the first one only. Lines end at LF; each is stripped of trailing
    whitespace as warcio strips it (str.rstrip: Unicode whitespace too), the fields end at the
    first blank one, a line starting with a space or tab continues the field before it, and a
    line without a colon is no field (nor are its continuations)."""
    lines = text.split("\n")
    count = len(lines)
    fields: dict = {}
    if count < 2 or not lines[0].rstrip():
        return fields
    i = 1
    line = lines[1].rstrip()
    while line:
        name, colon, value = line.partition(":")
        if colon:
            value = value.lstrip()
        i += 1
        following = lines[i].rstrip() if i < count else ""
        while following and following[0] in " \t":
            value += following
            i += 1
            following = lines[i].rstrip() if i < count else ""
        if colon:
            key = name.rstrip(" \t").lower()
            got = fields.get(key)
            fields[key] = value if got is None else got + ", " + value
        line = following
    return fields


if os.environ.get("SITESTRIP_HEADERS") == "warcio":
    _header_fields = _warcio_fields     # noqa: F811


def _parse_warc_head(block: bytes) -> _WarcHead:
    """The fields of a WARC header block (version line first). Raises _BadHead."""
    if block.count(b"\n") > _MAX_WARC_FIELDS + 2:
        raise _BadHead(f"WARC header block has more than {_MAX_WARC_FIELDS} lines")
    # UTF-8 with undecodable bytes replaced (warcio would read such a line as latin-1).
    text = block.decode("utf-8", "replace")
    if not _VERSION_LINE.match(text):
        raise _BadHead(f"not a WARC version line: {text.partition(chr(10))[0][:40]!r}")
    fields = _header_fields(text)
    declared = fields.get("content-length")
    if declared is None:
        raise _BadHead("WARC header block lacks Content-Length")
    declared = declared.strip()
    # warcio's int() takes "٣" as 3 and gives up on 5,000 digits; only ASCII digits are a length.
    if not _CONTENT_LENGTH.fullmatch(declared):
        raise _BadHead(f"WARC Content-Length is not a byte count: {declared[:40]!r}")
    return _WarcHead(fields, int(declared))


@dataclass
class _HttpHead:
    status: int | None
    status_line: str
    fields: dict                   # _header_fields of the header block

    def get(self, name: str) -> str | None:
        return self.fields.get(name.lower())


def _parse_http_head(block: bytes) -> _HttpHead:
    """Status and fields of an HTTP response header block. Raises _BadHead for an absurd one."""
    if block.count(b"\n") > _MAX_HTTP_FIELDS + 2:
        raise _BadHead(f"HTTP header block has more than {_MAX_HTTP_FIELDS} lines")
    block = block.lstrip(b"\r\n")
    # The status line is taken as any first line; a status is checked here.
    status_line = block.partition(b"\n")[0].rstrip(b"\r").decode("latin-1")
    status = _STATUS_LINE.match(status_line)
    # HTTP field values are octets: latin-1 keeps each one a character (warcio tries UTF-8 first).
    fields = _header_fields(block.decode("latin-1")) if block else {}
    return _HttpHead(int(status.group(1)) if status else None, status_line, fields)


Classifier = Callable[[_WarcHead, _Content, int], object]


def _read_container(stream: BinaryIO, warc_file: str, classify: Classifier) -> Iterator:
    """`classify(head, content, offset)` of every record, in file order, or a ReadError for
    each damaged part: a record cut short, a member that does not inflate, a header block
    that is unusable, a record that does not end where its length says, bytes between
    records. Reading resumes after each (_Container.resync) and stops where the file ends."""
    box = _Container(stream)
    records = errors = 0
    while True:
        try:
            kind, offset = box.begin_record()
        except _BadMember as error:
            errors += 1
            head = None if box.record_in_member else _salvaged_head(box)
            yield _bad_member(box, _url_if_page(head, None) if head else None, warc_file, box.seg_start, error)
            continue
        if kind == "eof":
            if not (records or errors):
                if box.raw.end == 0:
                    yield Skipped("empty_file", None, "")
                else:
                    yield ReadError(None, warc_file, None, "read", "NotAWarc",
                                    f"no WARC record in {box.raw.end} bytes")
            return
        if kind == "cut":
            error, file_ends = _ends_early(box, None, warc_file, offset, offset,
                                           "the file ends inside a gzip member or a record's first line")
            errors += 1
            yield error
            if file_ends:
                return
            continue
        if kind == "junk":
            resumed = _resync(box, offset, box.record_in_member)
            errors += 1
            if resumed is None and not (records or errors > 1) and offset == 0:
                yield ReadError(None, warc_file, None, "read", "NotAWarc",
                                "the file does not begin with a WARC record and holds none")
                return
            yield ReadError(None, warc_file, offset, "read", "BadWarcRecord",
                            f"bytes that do not start a WARC record; {_resumes(resumed)}")
            continue
        records += 1
        item, file_ends = _read_record(box, offset, warc_file, classify)
        if isinstance(item, ReadError) and item.stage == "read":
            errors += 1
        if item is not None:
            yield item
        if file_ends:
            return


def _resync(box: _Container, damaged_at: int, in_member: bool) -> int | None:
    try:
        return box.resync(damaged_at, in_member)
    except _BadMember:               # met while skipping the rest of a member
        return box.resync(box.seg_start, in_member=False)


def _resumes(offset: int | None) -> str:
    return "no record follows" if offset is None else f"reading resumes at offset {offset}"


def _bad_member(box: _Container, url: str | None, warc_file: str, offset: int, error: Exception) -> ReadError:
    member = box.seg_start
    resumed = _resync(box, member, in_member=False)
    where = "" if member == offset else f" at offset {member}"
    return ReadError(url, warc_file, offset, "read", "BadGzipMember",
                     f"gzip member{where} does not inflate ({error}); {_resumes(resumed)}")


def _read_record(box: _Container, offset: int, warc_file: str, classify: Classifier):
    """(the record's outcome or its ReadError, whether the file ends here)."""
    in_member = box.record_in_member
    head = outcome = None
    try:
        block, complete = box.take_head(_MAX_HEAD_BYTES, cross=True)
        if not complete:
            if len(block) >= _MAX_HEAD_BYTES:
                resumed = _resync(box, offset, in_member)
                return ReadError(None, warc_file, offset, "read", "BadWarcRecord",
                                 f"WARC header block longer than {_MAX_HEAD_BYTES} bytes; {_resumes(resumed)}"), False
            return _ends_early(box, None, warc_file, offset, offset, "the WARC header block is cut off")
        try:
            head = _parse_warc_head(block)
        except _BadHead as error:
            resumed = _resync(box, offset, in_member)
            return ReadError(None, warc_file, offset, "read", "BadWarcRecord", f"{error}; {_resumes(resumed)}"), False
        content = _Content(box, head.content_length)
        outcome = classify(head, content, offset)
        content.skip_rest()
        if content.left:
            return _ends_early(box, _url_if_page(head, outcome), warc_file, offset, offset,
                               f"record ends after {content.tell()} of {head.content_length} bytes")
        if not box.ends_record():
            resumed = _resync(box, offset, in_member)
            return ReadError(_url_if_page(head, outcome), warc_file, offset, "read", "BadWarcRecord",
                             f"the record does not end where its Content-Length ({head.content_length}) says; "
                             f"{_resumes(resumed)}"), False
    except _BadMember as error:
        if head is None and not in_member:
            head = _salvaged_head(box)
        return _bad_member(box, _url_if_page(head, outcome) if head else None, warc_file, offset, error), False
    return outcome, False


def _salvaged_head(box: _Container) -> _WarcHead | None:
    block = box.salvage_head()
    try:
        return _parse_warc_head(block) if block else None
    except _BadHead:
        return None


def _url_if_page(head: _WarcHead, outcome) -> str | None:
    """The target URI for the error row of a damaged record that was, or may have been, an
    HTML 200 page; None for other records (their damage is not a lost page)."""
    if outcome is None:
        return head.target_uri if head.record_type == "response" else None
    return head.target_uri if isinstance(outcome, (HtmlResponse, ReadError)) else None


def _ends_early(box: _Container, url: str | None, warc_file: str, offset: int, plain_from: int,
                message: str):
    """A record that ends before its length: (its ReadError, whether reading stops).

    At a member's end, with the next record in the next member: TruncatedRecord, and
    reading goes on. At the file's end: TruncatedFile and the end, unless a record
    starts further on (then the length, or the member, was damage: reading resumes there)."""
    if not box.at_file_end:
        return ReadError(url, warc_file, offset, "read", "TruncatedRecord",
                         message + "; its gzip member ends there"), False
    gzip = box.gzip
    resumed = _resync(box, box.seg_start if gzip else plain_from, in_member=False)
    if resumed is None:
        return ReadError(url, warc_file, offset, "read", "TruncatedFile", message), True
    return ReadError(url, warc_file, offset, "read", "BadGzipMember" if gzip else "BadWarcRecord",
                     f"{message}, yet a record starts at offset {resumed}: reading resumes there"), False


def iter_warc_records(
    stream: BinaryIO, warc_file: str, limits: ReadLimits = ReadLimits()
) -> Iterator[HtmlResponse | Skipped | ReadError]:
    """Classify every record of one WARC stream. Bad data never raises: it becomes
    a ReadError. Failures of the stream itself propagate so the runner can retry."""

    def classify(head: _WarcHead, content: _Content, offset: int):
        return _classify(head, content, warc_file, offset, limits)

    return _read_container(stream, warc_file, classify)


def _classify(
    head: _WarcHead, content: _Content, warc_file: str, offset: int, limits: ReadLimits
) -> HtmlResponse | Skipped | ReadError:
    record_type, url = head.record_type, head.target_uri
    if record_type != "response":
        reason = record_type if record_type in SKIP_REASONS else "other_type"
        return Skipped(reason, url, record_type)
    # Writers that omit the WARC Content-Type still store HTTP for http(s) URIs.
    if not head.is_http and not (url or "").startswith(("http:", "https:")):
        return Skipped("non_html", url, "response")
    try:
        http = _http_head(content)
    except _BadHead as error:
        return ReadError(url, warc_file, offset, "read", "BadHttpHeaders", str(error))
    status = http.status
    if status is None:
        return ReadError(url, warc_file, offset, "read", "BadHttpHeaders",
                         f"no HTTP status line: {http.status_line[:80]!r}")
    if status != 200:
        return Skipped("redirect" if 300 <= status < 400 else "non_200", url, "response")
    content_type = http.get("Content-Type") or ""
    mime = re.split(r"[;,]", content_type, maxsplit=1)[0].strip().lower()
    sniff = mime in _GENERIC_TYPES
    if not (sniff or mime in _HTML_TYPES):
        return Skipped("non_html", url, "response")
    truncated = head.get("warc-truncated")
    cuts: list[str] = []
    try:
        body = _entity_body(content, http, limits.max_payload_bytes, sniff, cuts)
    except _Undecodable as error:
        return ReadError(url, warc_file, offset, "decode", error.error_class, str(error))
    if body is None:
        return Skipped("non_html", url, "response")
    charset = _CHARSET_PARAM.search(content_type)
    return HtmlResponse(
        url=url or "",
        warc_file=warc_file,
        warc_offset=offset,
        warc_record_id=head.get("warc-record-id") or "",
        fetch_date=head.get("warc-date") or "",
        content_type="text/html" if sniff else mime,
        http_charset=charset.group(1) if charset else None,
        truncated=truncated.strip() if truncated else None,
        body=body,
        notes=tuple(cuts),
    )


def _http_head(content: _Content) -> _HttpHead:
    block, complete = content.read_head()
    if not complete:
        raise _BadHead(f"HTTP header block longer than {_MAX_HEAD_BYTES} bytes")
    return _parse_http_head(block)


def iter_payloads(
    stream: BinaryIO, wanted: Callable[[str], bool], limits: ReadLimits = ReadLimits()
) -> Iterator[tuple[str, str, str | None, bytes]]:
    """(target URI, MIME type, HTTP charset, decoded body) of each HTTP 200 response whose
    target URI `wanted` accepts, whatever its type: resources a view needs besides pages
    (stylesheets). A record or file that cannot be read is passed over, not reported:
    the pipeline's own reading (iter_warc_records) is where failures are accounted for."""

    def classify(head: _WarcHead, content: _Content, offset: int):
        url = head.target_uri
        if head.record_type != "response" or not url or not wanted(url):
            return None
        try:
            http = _http_head(content)
            if http.status != 200:
                return None
            content_type = http.get("Content-Type") or ""
            mime = re.split(r"[;,]", content_type, maxsplit=1)[0].strip().lower()
            body = _entity_body(content, http, limits.max_payload_bytes, False, [])
        except (_BadHead, _Undecodable):
            return None
        charset = _CHARSET_PARAM.search(content_type)
        return url, mime, charset.group(1) if charset else None, body

    for item in _read_container(stream, "", classify):
        if isinstance(item, tuple):
            yield item


def _entity_body(reader: _Content, http: _HttpHead, limit: int, sniff: bool, cuts: list[str]) -> bytes | None:
    """The decoded entity body, or None when sniffing finds it is not HTML. How the body
    is incomplete, if it is, goes to `cuts` as PAYLOAD_CUT notes. Raises _Undecodable.

    The stored bytes are de-chunked here and decoded by warcio's BufferedReader, one per
    Content-Encoding (stacked ones in reverse order), each with a _Decoder."""
    codings = [c.strip().lower() for c in (http.get("Content-Encoding") or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    for coding in codings:
        if coding not in _CODINGS or (coding == "br" and not _BROTLI_BOUNDED):
            raise _Undecodable("UnsupportedContentEncoding", f"Content-Encoding {coding!r} is not supported here")
    if "chunked" in (http.get("Transfer-Encoding") or "").lower():
        stored = _dechunked(reader, cuts)
    else:
        stored = _read(reader, limit + 1, _declared_length(http), cuts)
    if not codings and not sniff:
        # The stored bytes are the body: joined once, where the decoding streams below copy
        # each piece into a buffer and the buffer into the body (most pages: WARC writers
        # store bodies decoded, and a declared HTML type is not sniffed).
        return b"".join(_capped(stored, limit))
    stream = _Pieces(_capped(stored, limit))
    decoders = []
    for coding in reversed(codings):
        stream = _Decoding(stream, _Decoder(coding, limit))
        decoders.append(stream.decoder)
    body = bytearray()
    if sniff:
        while len(body) < _SNIFF_BYTES and (piece := stream.read(_SNIFF_BYTES - len(body))):
            body += piece
        if not _sniffs_as_html(body):
            _check(decoders, limit)
            return None
    while piece := stream.read(_CHUNK):
        body += piece
        if len(body) > limit:
            break
    _check(decoders, limit)
    if len(body) > limit:
        raise _Undecodable("PayloadTooLarge", f"entity body exceeds {limit} bytes")
    cuts.extend(f"{PAYLOAD_CUT}{d.coding} data ends before its end marker" for d in decoders if d.cut)
    return bytes(body)


def _check(decoders: list[_Decoder], limit: int) -> None:
    for decoder in decoders:
        if decoder.error is not None:
            error = decoder.error
            raise _Undecodable("BadContentEncoding", f"{type(error).__name__}: {error}")
        if decoder.over:
            raise _Undecodable("PayloadTooLarge", f"entity body exceeds {limit} bytes")


def _declared_length(http: _HttpHead) -> int | None:
    value = (http.get("Content-Length") or "").strip()
    return int(value) if _CONTENT_LENGTH.fullmatch(value) else None


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


def _read(reader: _Content, budget: int, declared: int | None, cuts: list[str]) -> Iterator[bytes]:
    """The body as stored; shorter than the HTTP Content-Length, it is cut."""
    got = 0
    while budget > 0 and (chunk := reader.read(min(_CHUNK, budget))):
        budget -= len(chunk)
        got += len(chunk)
        yield chunk
    if declared is not None and got < declared:
        cuts.append(f"{PAYLOAD_CUT}body ends after {got} of {declared} bytes (HTTP Content-Length)")


def _chunk_size(line: bytes) -> int | None:
    token = line.split(b";", 1)[0].strip()
    return int(token, 16) if _CHUNK_SIZE_LINE.fullmatch(token) else None


def _dechunked(reader: _Content, cuts: list[str]) -> Iterator[bytes]:
    """The chunked body, de-chunked as it streams.

    Not warcio's ChunkedDataReader: it reads each chunk whole into memory (a chunk may
    declare 2 GiB), and when the framing fails after the first chunk (a body cut at a
    chunk's end or inside a size line, a last chunk without its CRLF, trailer fields,
    a bad size line) it reads the rest as unchunked, so the size line or the trailers
    end up in the page's text, and it tells no cut body from a whole one."""
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
                cuts.append(f"{PAYLOAD_CUT}chunked body ends inside a chunk")
                return
            size -= len(piece)
            yield piece
        reader.readline()
        line = reader.readline()
        if not line:
            cuts.append(f"{PAYLOAD_CUT}chunked body ends without its last (empty) chunk")
            return
        size = _chunk_size(line)
        if size is None:
            raise _Undecodable("BadChunkedEncoding", f"bad chunk size line {line[:40]!r}")


class _Pieces:
    """read(size) over an iterator of byte strings: the stream a _Decoding reads."""

    def __init__(self, pieces: Iterator[bytes]):
        self._pieces = pieces
        self._rest = b""

    def read(self, size: int = -1) -> bytes:
        while not self._rest:
            piece = next(self._pieces, None)
            if piece is None:
                return b""
            self._rest = piece
        if size < 0 or size >= len(self._rest):
            data, self._rest = self._rest, b""
        else:
            data, self._rest = self._rest[:size], self._rest[size:]
        return data


class _Decoding(BufferedReader):
    """warcio's decoding reader for one Content-Encoding, driving `decoder`."""

    def __init__(self, stream, decoder: _Decoder):
        self.decoder = decoder
        # warcio makes its decompressor from this table, by the decomp_type's name.
        self.DECOMPRESSORS = {decoder.coding: lambda: decoder}
        super().__init__(stream, decomp_type=decoder.coding)


class _Decoder:
    """A decompressor as warcio's BufferedReader uses one (decompress, unused_data, flush),
    where warcio's own do not fit hostile bodies:

    - output is bounded: at most the payload cap plus one byte in all, so a bomb stops at
      the cap (warcio inflates each 16 kB block, or each chunk, whole: a thousandfold);
    - a failure is kept for the caller (BadContentEncoding), where warcio passes the
      bytes on undecoded (on the first block) or prints the error and drops them;
    - gzip also takes a zlib header, deflate is zlib-wrapped or raw (the first two bytes
      tell), x-gzip is gzip;
    - brotli is read with the brotli package's API (warcio's "br" expects brotlipy's and
      fails with brotli 1.2: no Decompressor.unused_data, no decompress());
    - whether the data ended before its end marker (`cut`).

    Once finished or stopped, unused_data is not empty, which is how warcio's reader
    tells the end of a member: it reads no further."""

    def __init__(self, coding: str, limit: int):
        self.coding = coding
        self.room = limit + 1
        self.error: Exception | None = None
        self.over = False
        self.fed = False
        self._head = b""
        if coding in ("gzip", "x-gzip"):
            # Accepting a zlib header too costs nothing and rescues mislabelled servers.
            self._engine = zlib.decompressobj(zlib.MAX_WBITS | 32)
        elif coding == "br":
            self._engine = brotli.Decompressor()
        else:
            self._engine = None              # deflate: made when two bytes are in

    @property
    def finished(self) -> bool:
        engine = self._engine
        if engine is None or self.error is not None:     # a failed brotli decoder raises if asked
            return False
        return engine.is_finished() if self.coding == "br" else engine.eof

    @property
    def cut(self) -> bool:
        # An empty gzip body lacks even its header; empty deflate and br bodies pass.
        return not self.finished and (self.fed or self.coding in ("gzip", "x-gzip"))

    @property
    def unused_data(self) -> bytes:
        return b"\0" if self.error is not None or self.over or self.finished else b""

    def flush(self) -> bytes:
        return b""

    def decompress(self, data: bytes) -> bytes:
        if self.unused_data:
            return b""
        self.fed = True
        try:
            out = self._decompress(data)
        except _DECOMPRESSION_ERRORS as error:
            self.error = error
            return b""
        self.room -= len(out)
        self.over = self.room <= 0
        return out

    def _decompress(self, data: bytes) -> bytes:
        if self.coding == "br":
            return self._engine.process(data, output_buffer_limit=self.room)
        if self._engine is None:
            # HTTP "deflate" is zlib-wrapped by the spec but raw in many servers.
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return b""
            is_zlib = data[0] & 0x0F == 8 and int.from_bytes(data[:2], "big") % 31 == 0
            self._engine = zlib.decompressobj(zlib.MAX_WBITS if is_zlib else -zlib.MAX_WBITS)
        return self._engine.decompress(data, self.room)


def expand_inputs(inputs: Sequence[str], input_prefix: str | None = None) -> list[str]:
    """WARC paths named by files, globs, directories and Common Crawl manifests."""
    paths: set[str] = set()
    for item in inputs:
        found = _expand_input(item, input_prefix)
        if not found:
            raise ValueError(f"input {item!r} matched no WARC files")
        paths.update(found)
    return sorted(paths)


def is_manifest(item: str) -> bool:
    """True for a Common Crawl manifest name (warc.paths, warc.paths.gz)."""
    return bool(_MANIFEST_NAME.search(item.rstrip("/").rsplit("/", 1)[-1]))


def _expand_input(item: str, input_prefix: str | None) -> list[str]:
    if is_manifest(item):
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
