"""Small WARC files for tests, written with the product's writer (pipeline/warc_writer.py, on
warcio); the product's tests read no corpus from outside the repository."""
import gzip

from sitestrip.pipeline.warc_writer import HTML_UTF8, WarcWriter, http_response

PAGE = b"<!DOCTYPE html><html><head><title>t</title></head><body><p>Hello</p></body></html>"
HTML_UTF8 = list(HTML_UTF8)


def response(url, body=PAGE, status="200 OK", headers=HTML_UTF8, warc_headers=None):
    return ("response", url, body, http_response(status, headers), warc_headers)


def write_warc(path, records, gzip_records=True):
    """Writes (type, url, payload, http headers, extra WARC headers) tuples."""
    with open(path, "wb") as out:
        writer = WarcWriter(out, gzip=gzip_records)
        for record_type, url, payload, http_headers, warc_headers in records:
            if record_type == "warcinfo":
                writer.warcinfo(url, {"software": "test"})
            elif record_type == "revisit":
                writer.revisit(url, "sha1:AAAA", url, "2024-01-01T00:00:00Z", http=http_headers)
            else:
                warc_headers = dict(warc_headers or {})
                content_type = warc_headers.pop("Content-Type", "" if http_headers else "application/octet-stream")
                writer.record(record_type, url, payload, http=http_headers, warc_headers=warc_headers,
                              content_type=content_type)
    return str(path)


HTTP_OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"


def raw_record(url, body=b"", http=HTTP_OK, content_length=None, fields=b"", record_type="response"):
    """A WARC/1.0 record written byte by byte, for what warcio refuses to write: a Content-Length
    that lies ("missing": none), extra header lines, any HTTP head."""
    block = http + body
    length = str(len(block)) if content_length is None else content_length
    head = (f"WARC/1.0\r\nWARC-Type: {record_type}\r\nWARC-Record-ID: <urn:uuid:{url}>\r\n"
            f"WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Target-URI: {url}\r\n"
            "Content-Type: application/http; msgtype=response\r\n").encode("utf-8")
    head += fields
    if length != "missing":
        head += f"Content-Length: {length}\r\n".encode("utf-8")
    return head + b"\r\n" + block + b"\r\n\r\n"


def gzip_members(records):
    """One gzip member per record (Common Crawl's layout): the file's bytes and the members' offsets."""
    members = [gzip.compress(r, mtime=0) for r in records]
    return b"".join(members), [sum(map(len, members[:k])) for k in range(len(members))]


def plain_records(records):
    """Records one after the other, uncompressed: the file's bytes and the records' offsets."""
    return b"".join(records), [sum(map(len, records[:k])) for k in range(len(records))]


def flip_bytes(data, start, count=8):
    """`count` bytes of `data` from `start` on, inverted."""
    return data[:start] + bytes(b ^ 0xFF for b in data[start:start + count]) + data[start + count:]


def damage_first_stored_page(path):
    """Cut the first stored page's packed bytes in a --state Parquet file, which stays
    readable Parquet (transforms/state.py must refuse the page, naming file and URL)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pq.read_table(path)
    blobs = table.column("page_blob").to_pylist()
    first = next((k for k, blob in enumerate(blobs) if blob is not None), None)   # fingerprint rows have none
    if first is None:
        return False            # a part of fingerprints only: nothing to damage
    blobs[first] = blobs[first][:10]
    table = table.set_column(table.schema.get_field_index("page_blob"), "page_blob",
                             pa.array(blobs, type=pa.binary()))
    pq.write_table(table, path)
    return True
