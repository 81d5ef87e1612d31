"""Writing WARC files, with warcio: what the tests, the sample builder (sample/build_sample.py),
the bench (TeCo folders as WARC) and the measurement scripts write.

Records are WARC/1.0, each in its own gzip member (Common Crawl's layout, so every record's
offset is seekable) or, with gzip=False, plain. warcio's gzip members carry mtime 0 and no
file name, so the same records give the same bytes.
"""
from __future__ import annotations

import io
from typing import BinaryIO, Iterable, Mapping

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

HTML_UTF8 = (("Content-Type", "text/html; charset=utf-8"),)


def http_response(status: str = "200 OK", headers: Iterable[tuple[str, str]] = HTML_UTF8) -> StatusAndHeaders:
    """An HTTP/1.1 response head: status ("200 OK") and header fields."""
    return StatusAndHeaders(status, list(headers), protocol="HTTP/1.1")


def http_request(request_line: str, headers: Iterable[tuple[str, str]]) -> StatusAndHeaders:
    """An HTTP request head: request line ("GET / HTTP/1.1") and header fields."""
    return StatusAndHeaders(request_line, list(headers), is_http_request=True)


class WarcWriter:
    """Records appended to a binary stream."""

    def __init__(self, out: BinaryIO, gzip: bool = True):
        self._writer = WARCWriter(out, gzip=gzip, warc_version="1.0")

    def record(self, record_type: str, url: str, payload: bytes = b"", *, http: StatusAndHeaders | None = None,
               warc_headers: Mapping[str, str] | None = None, content_type: str = "") -> None:
        """Any record. `warc_headers` may set WARC-Record-ID and WARC-Date (else a random id
        and the current time); `content_type` is the WARC Content-Type (else warcio's for
        the record type)."""
        self._writer.write_record(self._writer.create_warc_record(
            url, record_type, payload=io.BytesIO(payload), length=len(payload), http_headers=http,
            warc_headers_dict=dict(warc_headers or {}), warc_content_type=content_type))

    def response(self, url: str, body: bytes, *, status: str = "200 OK",
                 headers: Iterable[tuple[str, str]] = HTML_UTF8, warc_headers: Mapping[str, str] | None = None) -> None:
        """An HTTP response record (HTML in UTF-8 unless `headers` say otherwise)."""
        self.record("response", url, body, http=http_response(status, headers), warc_headers=warc_headers)

    def warcinfo(self, filename: str, fields: Mapping[str, str]) -> None:
        self._writer.write_record(self._writer.create_warcinfo_record(filename, dict(fields)))

    def revisit(self, url: str, digest: str, refers_to_uri: str, refers_to_date: str, *,
                http: StatusAndHeaders | None = None, warc_headers: Mapping[str, str] | None = None) -> None:
        """A revisit record (identical-payload-digest profile) of an earlier capture."""
        self._writer.write_record(self._writer.create_revisit_record(
            url, digest, refers_to_uri, refers_to_date, http_headers=http,
            warc_headers_dict=dict(warc_headers or {})))
