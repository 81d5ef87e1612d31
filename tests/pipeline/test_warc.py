"""Reading WARC files into classified records (pipeline.warc), on WARCs built here."""
import gzip
import io
import tracemalloc
import uuid
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from helpers.warcs import HTML_UTF8, PAGE, gzip_members, raw_record, response, write_warc
from sitestrip.configs import ReadLimits
from sitestrip.pipeline.warc_writer import http_request, http_response
from sitestrip.pipeline.warc import (
    HtmlResponse,
    ReadError,
    Skipped,
    expand_inputs,
    iter_warc_records,
    open_warc,
)

def read_all(path, **limits):
    with open_warc(str(path)) as stream:
        return list(iter_warc_records(stream, str(path), ReadLimits(**limits)))


def warcio_url_at(path, offset):
    with open(path, "rb") as stream:
        stream.seek(offset)
        return next(iter(ArchiveIterator(stream))).rec_headers.get_header("WARC-Target-URI")


def chunked(body, size=7):
    parts = [b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size]) for i in range(0, len(body), size)]
    return b"".join(parts) + b"0\r\n\r\n"


@pytest.mark.parametrize("gzip_records", [True, False])
def test_html_page_becomes_html_response_with_a_seekable_offset(tmp_path, gzip_records):
    path = write_warc(tmp_path / "a.warc", [
        ("warcinfo", "a.warc", b"", None, None),
        response("http://ex.com/one"),
        response("http://ex.com/two", body=PAGE.replace(b"Hello", b"Second")),
    ], gzip_records)
    skipped, first, second = read_all(path)
    assert skipped == Skipped("warcinfo", None, "warcinfo")
    assert isinstance(first, HtmlResponse) and isinstance(second, HtmlResponse)
    assert (second.url, second.content_type, second.http_charset, second.truncated) == (
        "http://ex.com/two", "text/html", "utf-8", None)
    assert second.body == PAGE.replace(b"Hello", b"Second")
    assert second.warc_file == path
    assert second.warc_record_id.startswith("<urn:uuid:") and second.fetch_date.startswith("20")
    for page in (first, second):
        assert warcio_url_at(path, page.warc_offset) == page.url


def test_records_that_are_not_html_200_pages_are_skipped_with_their_reason(tmp_path):
    path = write_warc(tmp_path / "s.warc.gz", [
        response("http://ex.com/a.css", body=b"p{}", headers=[("Content-Type", "text/css")]),
        response("http://ex.com/logo.png", body=b"\x89PNG", headers=[("Content-Type", "image/png")]),
        response("http://ex.com/missing", status="404 Not Found"),
        response("http://ex.com/old", status="301 Moved Permanently", headers=[("Location", "/new")]),
        ("revisit", "http://ex.com/again", b"", http_response("200 OK", HTML_UTF8), None),
        ("request", "http://ex.com/", b"",
         http_request("GET / HTTP/1.1", [("Host", "ex.com")]), None),
        ("metadata", "http://ex.com/", b"via: x\r\n", None, None),
        ("resource", "http://ex.com/file.html", PAGE, None, None),
    ])
    reasons = [(o.reason, o.url, o.record_type) for o in read_all(path)]
    assert reasons == [
        ("non_html", "http://ex.com/a.css", "response"),
        ("non_html", "http://ex.com/logo.png", "response"),
        ("non_200", "http://ex.com/missing", "response"),
        ("redirect", "http://ex.com/old", "response"),
        ("revisit", "http://ex.com/again", "revisit"),
        ("request", "http://ex.com/", "request"),
        ("metadata", "http://ex.com/", "metadata"),
        ("resource", "http://ex.com/file.html", "resource"),
    ]


def test_html_is_sniffed_when_the_content_type_is_missing_or_generic(tmp_path):
    path = write_warc(tmp_path / "sniff.warc.gz", [
        response("http://ex.com/bare", body=b"\xef\xbb\xbf \n<HTML><body>x</body></HTML>", headers=[]),
        response("http://ex.com/octet", body=b"<!doctype html><p>y",
                 headers=[("Content-Type", "application/octet-stream")]),
        response("http://ex.com/notes.txt", body=b"just text", headers=[("Content-Type", "text/plain")]),
        response("http://ex.com/blob", body=bytes(range(256)) * 20, headers=[]),
        response("http://ex.com/xhtml", headers=[("Content-Type", "Application/XHTML+XML;charset=UTF-8")]),
    ])
    bare, octet, text, blob, xhtml = read_all(path)
    assert (bare.content_type, bare.http_charset) == ("text/html", None)
    assert bare.body.endswith(b"</HTML>")
    assert octet.content_type == "text/html"
    assert text == Skipped("non_html", "http://ex.com/notes.txt", "response")
    assert blob == Skipped("non_html", "http://ex.com/blob", "response")
    assert (xhtml.content_type, xhtml.http_charset) == ("application/xhtml+xml", "UTF-8")


def test_chunked_and_content_encoded_bodies_are_decoded(tmp_path):
    deflater = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw_deflate = deflater.compress(PAGE) + deflater.flush()
    path = write_warc(tmp_path / "enc.warc.gz", [
        response("http://ex.com/gz-chunked", body=chunked(gzip.compress(PAGE)),
                 headers=HTML_UTF8 + [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")]),
        response("http://ex.com/zlib", body=zlib.compress(PAGE), headers=HTML_UTF8 + [("Content-Encoding", "deflate")]),
        response("http://ex.com/raw-deflate", body=raw_deflate, headers=HTML_UTF8 + [("Content-Encoding", "deflate")]),
        # stored de-chunked by the crawler, header kept
        response("http://ex.com/dechunked", body=PAGE, headers=HTML_UTF8 + [("Transfer-Encoding", "chunked")]),
    ])
    pages = read_all(path)
    assert [type(p) for p in pages] == [HtmlResponse] * 4
    assert all(p.body == PAGE for p in pages)


def test_brotli_body_is_decoded(tmp_path):
    brotli = pytest.importorskip("brotli")
    path = write_warc(tmp_path / "br.warc.gz", [
        response("http://ex.com/br", body=brotli.compress(PAGE), headers=HTML_UTF8 + [("Content-Encoding", "br")]),
    ])
    (page,) = read_all(path)
    assert page.body == PAGE


def test_undecodable_body_is_a_decode_error_and_reading_goes_on(tmp_path):
    path = write_warc(tmp_path / "bad.warc.gz", [
        response("http://ex.com/bad-gzip", body=b"\x00\x01 this is not gzip",
                 headers=HTML_UTF8 + [("Content-Encoding", "gzip")]),
        response("http://ex.com/zstd", body=b"whatever", headers=HTML_UTF8 + [("Content-Encoding", "compress")]),
        response("http://ex.com/ok"),
    ])
    bad, unsupported, ok = read_all(path)
    assert isinstance(bad, ReadError)
    assert (bad.url, bad.stage, bad.error_class) == ("http://ex.com/bad-gzip", "decode", "BadContentEncoding")
    assert warcio_url_at(path, bad.warc_offset) == bad.url
    assert (unsupported.stage, unsupported.error_class) == ("decode", "UnsupportedContentEncoding")
    assert isinstance(ok, HtmlResponse)


def raw_response(url, block):
    """A response record written byte by byte, for HTTP that warcio refuses to write."""
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid4()}>\r\n"
            f"WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Target-URI: {url}\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(block)}\r\n\r\n")
    return head.encode() + block + b"\r\n\r\n"


def test_unparseable_http_headers_are_a_read_error_with_the_url(tmp_path):
    path = tmp_path / "http.warc"
    path.write_bytes(raw_response("http://ex.com/garbled", b"NOT HTTP AT ALL\r\n\r\n<html>")
                     + raw_response("http://ex.com/ok", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + PAGE))
    garbled, ok = read_all(path)
    assert (garbled.url, garbled.stage, garbled.error_class) == ("http://ex.com/garbled", "read", "BadHttpHeaders")
    assert isinstance(ok, HtmlResponse)


def test_payload_above_the_limit_is_an_error(tmp_path):
    path = write_warc(tmp_path / "big.warc.gz", [
        response("http://ex.com/big", body=b"<html>" + b"x" * 5000),
        response("http://ex.com/small"),
    ])
    big, small = read_all(path, max_payload_bytes=1000)
    assert (big.url, big.error_class) == ("http://ex.com/big", "PayloadTooLarge")
    assert isinstance(small, HtmlResponse)


def test_decompression_bomb_is_stopped_without_inflating_it(tmp_path):
    bomb = gzip.compress(b"<html>" + b" " * 200_000_000, compresslevel=9)
    path = write_warc(tmp_path / "bomb.warc.gz", [
        response("http://ex.com/bomb", body=bomb, headers=HTML_UTF8 + [("Content-Encoding", "gzip")]),
    ])
    limit = 1_000_000
    tracemalloc.start()
    try:
        (error,) = read_all(path, max_payload_bytes=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.error_class == "PayloadTooLarge"
    assert peak < 4 * limit


@pytest.mark.parametrize("gzip_records", [True, False])
def test_file_cut_mid_record_yields_what_precedes_then_a_truncation_error(tmp_path, gzip_records):
    pages = [response(f"http://ex.com/{i}", body=PAGE + bytes(range(256)) * 40) for i in range(3)]
    full = write_warc(tmp_path / "full.warc", pages, gzip_records)
    third = read_all(full)[2].warc_offset
    data = open(full, "rb").read()
    cut = tmp_path / "cut.warc"
    cut.write_bytes(data[:(third + len(data)) // 2])
    first, second, error = read_all(cut)
    assert [first.url, second.url] == ["http://ex.com/0", "http://ex.com/1"]
    assert isinstance(error, ReadError)
    assert (error.url, error.stage, error.error_class) == ("http://ex.com/2", "read", "TruncatedFile")


@pytest.mark.parametrize("gzip_records", [True, False])
def test_warc_truncated_header_is_kept(tmp_path, gzip_records):
    path = write_warc(tmp_path / "t.warc", [
        response("http://ex.com/long", body=PAGE[:40], warc_headers={"WARC-Truncated": "length"}),
    ], gzip_records)
    (page,) = read_all(path)
    assert (page.truncated, page.body) == ("length", PAGE[:40])


def test_whole_file_gzip_is_read(tmp_path):
    plain = write_warc(tmp_path / "plain.warc", [response(f"http://ex.com/{i}") for i in range(3)], False)
    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(gzip.compress(open(plain, "rb").read()))
    assert [p.url for p in read_all(whole)] == ["http://ex.com/0", "http://ex.com/1", "http://ex.com/2"]


@pytest.mark.parametrize("content", [b"just some text\n" * 50, gzip.compress(b"{\"json\": true}\n" * 50),
                                     bytes(range(256)) * 8])
def test_not_a_warc_is_one_file_level_error(tmp_path, content):
    path = tmp_path / "x.warc.gz"
    path.write_bytes(content)
    (error,) = read_all(path)
    assert isinstance(error, ReadError)
    assert (error.url, error.warc_offset, error.stage, error.error_class) == (None, None, "read", "NotAWarc")


def test_empty_file_is_skipped(tmp_path):
    path = tmp_path / "empty.warc.gz"
    path.write_bytes(b"")
    assert read_all(path) == [Skipped("empty_file", None, "")]


def test_angle_bracketed_target_uri_is_unwrapped(tmp_path):
    path = write_warc(tmp_path / "u.warc", [response("<http://ex.com/bracketed>")], gzip_records=False)
    (page,) = read_all(path)
    assert page.url == "http://ex.com/bracketed"


@pytest.fixture(scope="module")
def three_record_warc(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cuts")
    path = write_warc(directory / "three.warc.gz", [
        response(f"http://ex.com/{i}", body=PAGE * (i + 1)) for i in range(3)])
    return open(path, "rb").read(), [page.warc_offset for page in read_all(path)]


@settings(max_examples=150, deadline=None)
@given(fraction=st.floats(0, 1, exclude_max=True))
def test_any_cut_of_a_gzip_warc_is_reported_and_keeps_the_records_before_it(three_record_warc, fraction):
    data, member_starts = three_record_warc
    cut = int(len(data) * fraction)
    outcomes = list(iter_warc_records(io.BytesIO(data[:cut]), "cut.warc.gz"))
    complete = sum(end <= cut for end in member_starts[1:] + [len(data)])
    pages = [o for o in outcomes if isinstance(o, HtmlResponse)]
    assert [p.url for p in pages] == [f"http://ex.com/{i}" for i in range(len(pages))]
    if cut == 0:
        assert outcomes == [Skipped("empty_file", None, "")]
    elif cut in member_starts:
        assert len(pages) == len(outcomes) == complete
    else:
        assert outcomes[-1].error_class == "TruncatedFile"
        assert len(pages) >= complete


# Noise alone, and noise behind a WARC record's first line or a gzip member's magic, so that
# header parsing and inflation meet it too.
_noise = st.one_of(st.binary(max_size=2000), st.binary(max_size=2000).map(lambda b: b"WARC/1.0\r\n" + b),
                   st.binary(max_size=2000).map(lambda b: b"\x1f\x8b\x08" + b))
_DAMAGE = {"NotAWarc", "BadWarcRecord", "BadGzipMember", "TruncatedRecord", "TruncatedFile"}


@settings(max_examples=200, deadline=None)
@given(data=_noise)
def test_arbitrary_bytes_never_raise(data):
    """Bytes that hold no record are no page and no skip: an empty file is one
    Skipped("empty_file"), anything else read errors of the damage classes, each placed in
    the file (after the one before), or one NotAWarc for the whole file."""
    outcomes = list(iter_warc_records(io.BytesIO(data), "noise"))
    if not data:
        assert outcomes == [Skipped("empty_file", None, "")]
        return
    assert outcomes and all(type(o) is ReadError for o in outcomes), outcomes
    assert {(o.warc_file, o.stage, o.url) for o in outcomes} == {("noise", "read", None)}
    assert {o.error_class for o in outcomes} <= _DAMAGE and all(o.message for o in outcomes)
    if outcomes[0].warc_offset is None:
        assert [o.error_class for o in outcomes] == ["NotAWarc"]
    else:
        offsets = [o.warc_offset for o in outcomes]
        assert None not in offsets and offsets == sorted(set(offsets)) and offsets[-1] < len(data)


def make_tree(root):
    for name in ["a.warc.gz", "b.warc", "notes.txt", "sub/c.warc.gz", "sub/deeper/d.warc"]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")
    return root


def test_expand_inputs_directory_is_searched_recursively_for_warcs(tmp_path):
    root = make_tree(tmp_path / "crawl")
    assert expand_inputs([str(root)]) == [
        str(root / "a.warc.gz"), str(root / "b.warc"), str(root / "sub/c.warc.gz"), str(root / "sub/deeper/d.warc")]


def test_expand_inputs_globs_and_files_are_deduplicated_and_sorted(tmp_path):
    root = make_tree(tmp_path / "crawl")
    found = expand_inputs([str(root / "sub/c.warc.gz"), str(root / "*.warc*"), str(root / "a.warc.gz")])
    assert found == [str(root / "a.warc.gz"), str(root / "b.warc"), str(root / "sub/c.warc.gz")]


@pytest.mark.parametrize("manifest_name", ["warc.paths", "warc.paths.gz", "CC-MAIN-2024-10.paths"])
def test_expand_inputs_manifest_resolves_relative_paths_against_the_prefix(tmp_path, manifest_name):
    make_tree(tmp_path / "bucket" / "crawl")
    listing = b"crawl/a.warc.gz\n\n  crawl/sub/c.warc.gz  \n/elsewhere/x.warc.gz\ncrawl/a.warc.gz\n"
    manifest = tmp_path / manifest_name
    manifest.write_bytes(gzip.compress(listing) if manifest_name.endswith(".gz") else listing)
    prefix = str(tmp_path / "bucket") + "/"
    assert expand_inputs([str(manifest)], input_prefix=prefix) == [
        "/elsewhere/x.warc.gz", prefix + "crawl/a.warc.gz", prefix + "crawl/sub/c.warc.gz"]


@pytest.mark.parametrize("missing", ["nothing-here.warc.gz", "*.nope", "no-dir/", "warc.paths"])
def test_expand_inputs_input_matching_nothing_is_a_value_error(tmp_path, missing):
    make_tree(tmp_path / "crawl")
    with pytest.raises(ValueError, match="nothing-here|nope|no-dir|warc.paths"):
        expand_inputs([str(tmp_path / "crawl"), str(tmp_path / missing)])


def test_a_failing_stream_propagates_so_the_runner_can_retry(tmp_path):
    path = write_warc(tmp_path / "ok.warc.gz", [response(f"http://ex.com/{i}") for i in range(3)])

    class DroppedConnection(io.BytesIO):
        def read(self, size=-1):
            if self.tell() > 0:
                raise ConnectionResetError("storage went away")
            return super().read(min(size, 100))

    with pytest.raises(ConnectionResetError):
        list(iter_warc_records(DroppedConnection(open(path, "rb").read()), path))


# Header blocks: _header_fields against warcio's parser (_warcio_fields), the reference.
HEADER_BLOCKS = [
    "WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 12\r\n\r\n",
    "WARC/1.0\nWARC-Type: response\nContent-Length: 12\n",                      # bare LF, no blank line
    "WARC/1.0\r\nWARC-Type: response",                                         # no line end at all
    "WARC/1.0",                                                                 # the first line only
    "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nset-cookie:c=3\r\n\r\n",
    "HTTP/1.1 200 OK\r\nX-Long: one\r\n two\r\n\tthree\r\nNext: n\r\n\r\n",     # folded lines
    "HTTP/1.1 200 OK\r\nno colon here\r\n folded onto nothing\r\nKept: k\r\n\r\n",
    "HTTP/1.1 200 OK\r\nName \t: spaced\r\n:empty name\r\nA: b: c\r\nEmpty:\r\nEmptier:   \r\n",
    "HTTP/1.1 200 OK\r\nEmpty:\r\n   then folded\r\n",
    "HTTP/1.1 200 OK\r\nA: 1\r\n   \r\nB: after a blank-looking line\r\n",       # whitespace ends the block
    "  \r\nA: 1\r\n",                                                           # a blank first line
    "HTTP/1.1 200 OK\r\nA:\x0b\x0c value\x1c\x1d\x1e\x1f\x85\xa0\r\nB: \u2028x\u2028\r\n\x0bC: c\r\n",
    "HTTP/1.1 200 OK\r\nCaf\u00e9: cr\u00e8me\r\nK\u212a: kelvin\r\nkk: ascii\r\n",
    "HTTP/1.1 200 OK\r\r\nA: 1\r\n\r\nB: body, not a field\r\n",
]


@pytest.mark.parametrize("text", HEADER_BLOCKS)
def test_header_fields_are_warcios(text):
    from sitestrip.pipeline.warc import _header_fields, _warcio_fields
    assert _header_fields(text) == _warcio_fields(text)


def test_header_fields_fold_join_and_stop_as_warcio_does():
    from sitestrip.pipeline.warc import _header_fields
    assert _header_fields(HEADER_BLOCKS[4]) == {"set-cookie": "a=1, b=2, c=3"}
    assert _header_fields(HEADER_BLOCKS[5]) == {"x-long": "one two\tthree", "next": "n"}
    assert _header_fields(HEADER_BLOCKS[6]) == {"kept": "k"}
    assert _header_fields(HEADER_BLOCKS[7]) == {"name": "spaced", "": "empty name", "a": "b: c",
                                                "empty": "", "emptier": ""}
    assert _header_fields(HEADER_BLOCKS[8]) == {"empty": "   then folded"}
    assert _header_fields(HEADER_BLOCKS[9]) == {"a": "1"}
    assert _header_fields(HEADER_BLOCKS[10]) == {}
    assert _header_fields(HEADER_BLOCKS[3]) == {}


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["WARC/1.0", "HTTP/1.1 200 OK", "A", "b", ":", " ", "\t", "\r", "\n", "\r\n",
                                 "\x0b", "\x85", "\u2028", "\u00e9", "K\u212a", "Set-Cookie", "x: y"]),
                max_size=40))
def test_header_fields_are_warcios_on_any_block(pieces):
    from sitestrip.pipeline.warc import _header_fields, _warcio_fields
    text = "".join(pieces)
    if text:                   # callers never parse an empty block (warcio raises EOFError for it)
        assert _header_fields(text) == _warcio_fields(text)


def test_headers_read_by_warcio_give_the_same_records(tmp_path, monkeypatch):
    from sitestrip.pipeline import warc
    path = write_warc(tmp_path / "h.warc.gz", [
        response("http://ex.com/a", headers=HTML_UTF8 + [("X-Folded", "a\r\n b")]),
        response("http://ex.com/b", status="301 Moved Permanently", headers=[("Location", "/c")]),
        response("http://ex.com/c", headers=[("Content-Type", "text/html"), ("Content-Type", "charset=latin-1")]),
    ])
    ours = read_all(path)
    monkeypatch.setattr(warc, "_header_fields", warc._warcio_fields)
    assert read_all(path) == ours
    assert [type(item).__name__ for item in ours] == ["HtmlResponse", "Skipped", "HtmlResponse"]


@pytest.mark.parametrize("body, http_length, limit", [
    (PAGE, None, 10_000),                                # whole
    (b"<html>" + b"y" * 200_000, None, 1_000_000),       # in several read pieces
    (PAGE, 5000, 10_000),                                # shorter than its HTTP Content-Length
    (b"<html>" + b"x" * 5000, None, 1000),               # over the payload cap
    (b"<html>" + b"x" * 994, None, 1000),                # at the cap exactly
])
def test_a_declared_html_body_reads_as_a_sniffed_one(tmp_path, body, http_length, limit):
    # A declared HTML type without a Content-Encoding takes the joined body; a generic type is
    # sniffed and streams through the decoding readers. Both give the same bytes, notes and errors.
    def record(url, content_type):
        fields = f"Content-Type: {content_type}\r\n"
        if http_length is not None:
            fields += f"Content-Length: {http_length}\r\n"
        return raw_record(url, body, http=f"HTTP/1.1 200 OK\r\n{fields}\r\n".encode())
    data, _ = gzip_members([record("http://ex.com/declared", "text/html"),
                            record("http://ex.com/sniffed", "application/octet-stream")])
    declared, sniffed = iter_warc_records(io.BytesIO(data), "w.warc.gz", ReadLimits(max_payload_bytes=limit))
    assert type(declared) is type(sniffed)
    if isinstance(declared, HtmlResponse):
        assert declared.body == sniffed.body == body
        assert declared.notes == sniffed.notes
        assert bool(declared.notes) == (http_length is not None)
        assert declared.content_type == sniffed.content_type == "text/html"
    else:
        assert (declared.error_class, declared.message) == (sniffed.error_class, sniffed.message)
        assert declared.error_class == "PayloadTooLarge"
