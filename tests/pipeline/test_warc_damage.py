"""Damaged WARC files (pipeline.warc): each damaged part is one ReadError with its offset,
reading resumes at the next record, and no bytes make the reader raise.

The files are written here byte by byte (not with warcio) so that the damage is exactly
what a test says: a flipped byte, a length that lies, a member that ends early.
"""
import gzip
import io
import random
import zlib

import pytest

from sitestrip.configs import ReadLimits
from sitestrip.pipeline.warc import HtmlResponse, ReadError, iter_payloads, iter_warc_records
from helpers.warcs import HTTP_OK, flip_bytes, gzip_members, plain_records, raw_record


def page(i: int, words: int = 40) -> bytes:
    # Varied words, so that a member is several kB and a flip in its middle lies past
    # the WARC header block at its start. No line breaks: a length that lands inside
    # the body never lands on a CR or LF by chance.
    rng = random.Random(i)
    text = " ".join(f"w{rng.randrange(10 ** 6)}" for _ in range(words))
    return f"<html><head><title>Page {i}</title></head><body><p>{text}</p></body></html>".encode()


def pages(n: int, words: int = 40) -> list[bytes]:
    return [raw_record(f"http://ex.com/{i}", page(i, words)) for i in range(n)]


LAYOUTS = {"gzip": gzip_members, "plain": plain_records}


def read(data: bytes) -> list:
    return list(iter_warc_records(io.BytesIO(data), "w.warc"))


def rows(outcomes) -> list[tuple]:
    """What each outcome says: ("page", url, offset) or (error class, url, offset)."""
    out = []
    for o in outcomes:
        if isinstance(o, HtmlResponse):
            out.append(("page", o.url, o.warc_offset))
        elif isinstance(o, ReadError):
            out.append((o.error_class, o.url, o.warc_offset))
        else:
            out.append(("skip", o.url, o.reason))
    return out


def url(i: int) -> str:
    return f"http://ex.com/{i}"


# --- a damaged gzip member -----------------------------------------------------------

def test_a_damaged_member_costs_its_record_only():
    """Eight bytes flipped in the middle of member 2 of 5 (the measured case). Members
    inflate independently: 0, 1, 3 and 4 are intact, so they are pages at their own
    offsets; member 2 fails its data or CRC check, and is one BadGzipMember row at its
    offset, naming its record (its WARC header block inflates before the damage)."""
    data, offsets = gzip_members(pages(5, words=600))
    damaged = flip_bytes(data, (offsets[2] + offsets[3]) // 2)
    assert rows(read(damaged)) == [
        ("page", url(0), offsets[0]), ("page", url(1), offsets[1]),
        ("BadGzipMember", url(2), offsets[2]),
        ("page", url(3), offsets[3]), ("page", url(4), offsets[4])]


def test_bytes_that_are_not_a_member_between_members():
    """Junk between members 1 and 2 is one BadWarcRecord row at the junk's offset, and
    reading resumes at member 2 (the next one inflating to a WARC record)."""
    records = pages(3)
    data, offsets = gzip_members(records[:2])
    junk = b"\x00garbage, not gzip\n" * 3
    rest, _ = gzip_members(records[2:])
    assert rows(read(data + junk + rest)) == [
        ("page", url(0), 0), ("page", url(1), offsets[1]),
        ("BadWarcRecord", None, len(data)), ("page", url(2), len(data) + len(junk))]


def test_a_member_that_is_not_a_record():
    """A well-formed member holding text that is no WARC record: one row at its offset."""
    records = pages(2)
    stray = gzip.compress(b"just some text\r\n" * 4, mtime=0)
    first = gzip.compress(records[0], mtime=0)
    data = first + stray + gzip.compress(records[1], mtime=0)
    assert rows(read(data)) == [("page", url(0), 0), ("BadWarcRecord", None, len(first)),
                                ("page", url(1), len(first) + len(stray))]


def test_a_record_cut_inside_its_member_is_told_from_the_next_one():
    """Member 1 holds its record minus the last 100 bytes (a writer that stopped early): the
    member ends before the record's Content-Length, the next member starts a record, so
    record 1 is TruncatedRecord and record 2 is read (a reader that ignores members would
    take record 2's bytes as the rest of record 1)."""
    records = pages(3)
    members = [gzip.compress(records[0]), gzip.compress(records[1][:-100]), gzip.compress(records[2])]
    data = b"".join(members)
    assert rows(read(data)) == [
        ("page", url(0), 0), ("TruncatedRecord", url(1), len(members[0])),
        ("page", url(2), len(members[0]) + len(members[1]))]


def test_a_record_in_several_members_is_read_whole():
    """A plain WARC gzipped in 300-byte blocks (members that do not start records, as
    block-gzip tools write them): every record is read whole; a record's offset is the
    member its first byte is in, so seeking there and inflating on reaches it."""
    records = pages(4)
    plain, starts = plain_records(records)
    members = [gzip.compress(plain[k:k + 300], mtime=0) for k in range(0, len(plain), 300)]
    member_offsets = [sum(map(len, members[:k])) for k in range(len(members))]
    outcomes = read(b"".join(members))
    assert [(o.url, o.body) for o in outcomes] == [(url(i), page(i)) for i in range(4)]
    assert [o.warc_offset for o in outcomes] == [member_offsets[s // 300] for s in starts]


# --- a record whose header block is unusable -----------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("length", ["\u00b2", "9" * 5000, "-5", "12abc", "\u0663", "", "missing"])
def test_an_unusable_content_length_costs_its_record_only(layout, length):
    """Content-Length "²" passes str.isdigit() and "٣" is a decimal digit to int(); 5,000
    digits exceed int()'s limit; the others are no length at all. Each is one
    BadWarcRecord row at the record's offset, and the next record is read: in gzip,
    the next member; in plain WARC, the next line starting "WARC/1."."""
    records = pages(3)
    records[1] = raw_record(url(1), page(1), content_length=length)
    data, offsets = LAYOUTS[layout](records)
    assert rows(read(data)) == [("page", url(0), 0), ("BadWarcRecord", None, offsets[1]),
                                ("page", url(2), offsets[2])]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_absurd_header_blocks_cost_their_record_only(layout):
    """2,000 WARC header fields, and a header block with no end within 1 MiB: BadWarcRecord."""
    many = b"".join(b"X-Field-%d: v\r\n" % k for k in range(2000))
    endless = b"X-Long: " + b"a" * (1 << 20) + b"\r\n"
    records = pages(3)
    records[1] = raw_record(url(1), page(1), fields=many)
    records.insert(2, raw_record(url(9), page(9), fields=endless))
    data, offsets = LAYOUTS[layout](records)
    assert rows(read(data)) == [("page", url(0), 0), ("BadWarcRecord", None, offsets[1]),
                                ("BadWarcRecord", None, offsets[2]), ("page", url(2), offsets[3])]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_bad_http_heads_are_errors_of_their_page(layout):
    """A status "²00" is no status; 20,000 header lines is damage: BadHttpHeaders, with the
    URL, and the record's framing is sound, so the next record follows."""
    lines = b"".join(b"X-H: %d\r\n" % k for k in range(20_000))
    records = [raw_record(url(0), page(0), http=b"HTTP/1.1 \xc2\xb200 OK\r\nContent-Type: text/html\r\n\r\n"),
               raw_record(url(1), page(1), http=b"HTTP/1.1 200 OK\r\n" + lines + b"\r\n"),
               raw_record(url(2), page(2), http=b"HTTP/1.1 200\r\ncontent-type:text/html\r\n\r\n")]
    data, offsets = LAYOUTS[layout](records)
    assert rows(read(data)) == [("BadHttpHeaders", url(0), 0), ("BadHttpHeaders", url(1), offsets[1]),
                                ("page", url(2), offsets[2])]


@pytest.mark.parametrize("change", [40, -40, 10 ** 6])
def test_a_plain_record_whose_length_lies(change):
    """Plain WARC has no members to bound a record: a Content-Length 40 too long ends
    inside record 2's header block, 40 too short inside record 1's own body, 10^6 too long
    past the end of the file. What follows the content is then neither the CRLF CRLF
    that ends a record nor a record: record 1 is BadWarcRecord, and reading resumes at the
    next "WARC/1." line after its start, record 2."""
    records = pages(4)
    true_length = len(HTTP_OK) + len(page(1))
    records[1] = raw_record(url(1), page(1), content_length=str(true_length + change))
    data, offsets = plain_records(records)
    content_end = records[1].index(b"\r\n\r\n") + 4 + true_length + change
    if change < len(data):
        assert data[offsets[1] + content_end:][:1] not in (b"\r", b"\n")
    assert rows(read(data)) == [("page", url(0), 0), ("BadWarcRecord", url(1), offsets[1]),
                                ("page", url(2), offsets[2]), ("page", url(3), offsets[3])]


def test_plain_junk_between_records():
    records = pages(2)
    junk = b"stray line\r\n"
    data = records[0] + junk + records[1]
    assert rows(read(data)) == [("page", url(0), 0), ("BadWarcRecord", None, len(records[0])),
                                ("page", url(1), len(records[0]) + len(junk))]


def test_whole_file_gzip_resumes_at_the_next_record_line():
    """One member holding every record: a bad length resyncs on the member's text. All
    offsets are the member's, 0."""
    records = pages(3)
    records[1] = raw_record(url(1), page(1), content_length="\u00b2")
    assert rows(read(gzip.compress(b"".join(records)))) == [
        ("page", url(0), 0), ("BadWarcRecord", None, 0), ("page", url(2), 0)]


def test_a_cut_at_the_end_is_truncation_but_a_cut_before_more_records_is_damage():
    """Plain WARC whose last record is cut: TruncatedFile, the end. A record whose length
    runs to the end of the file while records follow it is damage (see above)."""
    data, offsets = plain_records(pages(3))
    assert rows(read(data[:-50])) == [("page", url(0), 0), ("page", url(1), offsets[1]),
                                      ("TruncatedFile", url(2), offsets[2])]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_cut_in_the_first_bytes_of_a_record_reads_nothing_twice(layout):
    """The file cut 1 to 40 bytes into record 2 (its gzip header, or its first line and
    header block): records 0 and 1, then one TruncatedFile at record 2's offset; the
    search for more records after the cut finds none and never goes back to 0 and 1."""
    data, offsets = LAYOUTS[layout](pages(3))
    for cut in range(1, 41):
        assert rows(read(data[:offsets[2] + cut])) == [
            ("page", url(0), 0), ("page", url(1), offsets[1]), ("TruncatedFile", None, offsets[2])], cut


# --- payloads that are cut short -------------------------------------------------------

def chunked(body: bytes, size: int = 7, last: bool = True) -> bytes:
    parts = [b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size]) for i in range(0, len(body), size)]
    return b"".join(parts) + (b"0\r\n\r\n" if last else b"")


def raw_deflate(data: bytes) -> bytes:
    deflater = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return deflater.compress(data) + deflater.flush()


def encoded(coding: str, body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: %s\r\n\r\n%s" % (
        coding.encode(), body)


def test_a_cut_payload_is_kept_and_named():
    """Each body is cut short in its own encoding; the reader keeps what decodes and says
    how the body is cut. The complete ones (last two) carry no note."""
    html = page(0)
    cut = "payload cut: "
    cases = [
        # a 50-byte chunk, then 20 bytes of the next one
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n32\r\n" + html[:50]
         + b"\r\n%x\r\n" % len(html[50:]) + html[50:70], html[:70], cut + "chunked body ends inside a chunk"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(html, last=False),
         html, cut + "chunked body ends without its last (empty) chunk"),
        (encoded("gzip", gzip.compress(html)[:-8]), html, cut + "gzip data ends before its end marker"),
        (encoded("deflate", zlib.compress(html)[:-4]), html, cut + "deflate data ends before its end marker"),
        (encoded("deflate", raw_deflate(html)[:len(raw_deflate(html)) // 2]), None,
         cut + "deflate data ends before its end marker"),
        (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5000\r\n\r\n" + html, html,
         cut + f"body ends after {len(html)} of 5000 bytes (HTTP Content-Length)"),
        (encoded("gzip", gzip.compress(html)), html, None),
        (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(html),
         html, None),
    ]
    data = b"".join(gzip.compress(raw_record(url(k), http=http)) for k, (http, _, _) in enumerate(cases))
    outcomes = read(data)
    assert [type(o) for o in outcomes] == [HtmlResponse] * len(cases)
    for outcome, (_, body, note) in zip(outcomes, cases):
        assert outcome.notes == ((note,) if note else ()), outcome.url
        if body is not None:
            assert outcome.body == body, outcome.url
    half = outcomes[4].body
    assert 0 < len(half) < len(html) and html.startswith(half)


def test_chunked_framing_never_reaches_the_body():
    """Trailer fields after the last chunk, a last chunk without its closing CRLF, and a body
    cut right after a chunk's data (before its CRLF): the body is the chunks' data and nothing
    else (a reader that falls back to unchunked reading there keeps "0", the trailers or the
    size line as text), and only the cut one is named."""
    html = page(0)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
    whole = chunked(html, size=50)
    cases = [
        (whole[:-2] + b"X-Checksum: abc\r\n\r\n", None),
        (whole[:-2], None),
        (whole[:whole.rindex(b"\r\n0\r\n")], "payload cut: chunked body ends without its last (empty) chunk"),
    ]
    data = b"".join(gzip.compress(raw_record(url(k), http=head + body)) for k, (body, _) in enumerate(cases))
    outcomes = read(data)
    assert [(o.body, o.notes) for o in outcomes] == [(html, (note,) if note else ()) for _, note in cases]


def test_a_bomb_in_one_chunk_is_stopped_at_the_cap():
    """A gzip bomb sent as one chunk: decoding stops at the payload cap, within a bounded
    amount of memory (warcio's own gzip decompressor inflates each 16 kB block whole, a
    thousandfold, and its chunked reader each chunk whole: 200 MB here)."""
    import tracemalloc
    bomb = gzip.compress(b"<html>" + b" " * 200_000_000, compresslevel=9)
    http = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(bomb) + bomb + b"\r\n0\r\n\r\n")
    data = gzip.compress(raw_record(url(0), http=http), compresslevel=1)
    limit = 1_000_000
    tracemalloc.start()
    try:
        (error,) = list(iter_warc_records(io.BytesIO(data), "w.warc", ReadLimits(max_payload_bytes=limit)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (error.stage, error.error_class) == ("decode", "PayloadTooLarge")
    assert peak < 4 * limit + len(data)


def test_a_cut_brotli_payload_is_named():
    brotli = pytest.importorskip("brotli")
    html = page(0)
    data = gzip.compress(raw_record(url(0), http=encoded("br", brotli.compress(html)[:-3])))
    (outcome,) = read(data)
    assert outcome.notes == ("payload cut: br data ends before its end marker",)
    assert html.startswith(outcome.body)


def test_stylesheets_are_found_past_damage():
    """iter_payloads (the inspect view's stylesheets) reads through the same resync."""
    css = raw_record("http://ex.com/a.css", b"p{color:red}", http=b"HTTP/1.1 200 OK\r\nContent-Type: text/css\r\n\r\n")
    data, offsets = gzip_members(pages(2, words=600) + [css])
    damaged = flip_bytes(data, (offsets[1] + offsets[2]) // 2)
    found = list(iter_payloads(io.BytesIO(damaged), lambda u: u.endswith(".css")))
    assert found == [("http://ex.com/a.css", "text/css", None, b"p{color:red}")]


# --- fuzz ---------------------------------------------------------------------------

def _mutation(rng: random.Random, data: bytes, donor: bytes):
    """(kind, damaged bytes, offset of the first changed byte) of one random kind of damage."""
    kind = rng.choice(("flip", "flips", "truncate", "splice", "delete", "duplicate"))
    at = rng.randrange(len(data))
    if kind == "flip":
        return kind, data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:], at
    if kind == "flips":
        damaged = bytearray(data)
        spots = sorted(rng.randrange(at, len(data)) for _ in range(rng.randint(2, 12)))
        for spot in spots:
            damaged[spot] ^= rng.randrange(1, 256)
        return kind, bytes(damaged), spots[0]
    if kind == "truncate":
        return kind, data[:at], at
    if kind == "splice":      # bytes of another WARC (or of this one) pasted in
        start = rng.randrange(len(donor))
        return kind, data[:at] + donor[start:start + rng.randint(1, 3000)] + data[at:], at
    if kind == "delete":
        return kind, data[:at] + data[at + rng.randint(1, 2000):], at
    start = rng.randrange(len(data))       # duplicate: a stretch of the file repeated
    return kind, data[:at] + data[start:start + rng.randint(1, 3000)] + data[at:], at


def _length_digits(data: bytes, offsets: list[int], k: int) -> range:
    """Where record k's WARC Content-Length value is, in a plain file."""
    start = data.index(b"Content-Length: ", offsets[k]) + len(b"Content-Length: ")
    return range(start, data.index(b"\r\n", start))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_fuzz_damaged_files_never_raise_and_keep_what_precedes_the_damage(layout):
    """Seeded mutations of files built here (bit flips, truncations, splices of another
    WARC, deletions, repeated stretches), a bounded number of them. For each: the read
    completes; every record whose bytes (its member, in gzip) all lie before the first
    changed byte is its page, unchanged, at its offset; no record comes out twice; the
    offsets never go back (reading only moves forward)."""
    rng = random.Random(20240613)
    records = pages(6, words=30) + [raw_record("http://ex.com/x.css", b"p{}",
                                           http=b"HTTP/1.1 200 OK\r\nContent-Type: text/css\r\n\r\n")]
    records[2] = raw_record(url(2), page(2, 30),
                        http=b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n"
                        + chunked(gzip.compress(page(2, 30)), 50))
    data, offsets = LAYOUTS[layout](records)
    ends = offsets[1:] + [len(data)]
    donor, _ = LAYOUTS["plain" if layout == "gzip" else "gzip"](pages(3, words=20))
    for _ in range(400):
        kind, damaged, first = _mutation(rng, data, rng.choice((donor, data)))
        outcomes = read(damaged)
        got = {(o.url, o.warc_offset): o for o in outcomes if isinstance(o, HtmlResponse)}
        hit = max(k for k in range(len(offsets)) if offsets[k] <= first)
        for i in range(6):
            # One flipped bit costs its own record and no other: in gzip its member bounds
            # it; in plain WARC a length that lies ends where no record end is (test above),
            # unless by chance on a CR or LF: only a flipped length may cost more.
            resynced = kind == "flip" and i > hit and (layout == "gzip" or first not in _length_digits(data, offsets, hit))
            if ends[i] <= first or resynced:
                assert got.get((url(i), offsets[i])) is not None, (kind, i, first)
                assert got[(url(i), offsets[i])].body == page(i, 30)
        pages_out = [(o.url, o.warc_offset, o.body) for o in outcomes if isinstance(o, HtmlResponse)]
        assert len(pages_out) == len(set(pages_out))
        placed = [o.warc_offset for o in outcomes if getattr(o, "warc_offset", None) is not None]
        assert placed == sorted(placed)


def test_arbitrary_prefixes_and_noise_never_raise():
    """Random bytes, alone and in front of a valid file: the reader completes, and finds
    the records after the noise."""
    rng = random.Random(7)
    data, _ = gzip_members(pages(2))
    for _ in range(200):
        noise = rng.randbytes(rng.randrange(1, 3000))
        outcomes = read(noise + data)
        assert [o.url for o in outcomes if isinstance(o, HtmlResponse)][-2:] == [url(0), url(1)]
        alone = read(noise)
        assert alone and all(type(o) is ReadError and o.stage == "read" for o in alone), alone
