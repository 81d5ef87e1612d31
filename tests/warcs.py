"""Small WARC files for tests, written with warcio (the product's tests never read ../shared)."""
import io

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

PAGE = b"<!DOCTYPE html><html><head><title>t</title></head><body><p>Hello</p></body></html>"
HTML_UTF8 = [("Content-Type", "text/html; charset=utf-8")]


def response(url, body=PAGE, status="200 OK", headers=HTML_UTF8, warc_headers=None):
    return ("response", url, body, StatusAndHeaders(status, list(headers), protocol="HTTP/1.1"), warc_headers)


def write_warc(path, records, gzip_records=True):
    """Writes (type, url, payload, http headers, extra WARC headers) tuples with warcio."""
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=gzip_records)
        for record_type, url, payload, http_headers, warc_headers in records:
            if record_type == "warcinfo":
                record = writer.create_warcinfo_record(url, {"software": "test"})
            elif record_type == "revisit":
                record = writer.create_revisit_record(
                    url, "sha1:AAAA", url, "2024-01-01T00:00:00Z", http_headers=http_headers)
            else:
                warc_headers = dict(warc_headers or {})
                content_type = warc_headers.pop("Content-Type", None if http_headers else "application/octet-stream")
                record = writer.create_warc_record(
                    url, record_type, payload=io.BytesIO(payload), length=len(payload),
                    http_headers=http_headers, warc_headers_dict=warc_headers, warc_content_type=content_type)
            writer.write_record(record)
    return str(path)
