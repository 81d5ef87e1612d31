"""The two inflaters of gzip members (pipeline.warc): isal, which takes a member only when
it inflates whole, and zlib, which reads every other member. Whichever reads a file, the
outcomes are the same objects, errors with zlib's messages included.

The files are built here byte by byte; members are made larger than the reader's input
block (16 kB) so that damage lands in any block of a member, where isal and zlib notice
it at different points.
"""
import gzip
import io
import random
import zlib

import pytest

from sitestrip.pipeline import warc
from sitestrip.pipeline.warc import HtmlResponse, ReadError, iter_warc_records
from helpers.warcs import flip_bytes, gzip_members, plain_records, raw_record

pytestmark = pytest.mark.skipif(warc.isal_zlib is None, reason="isal is not installed")


def page(i: int, words: int) -> bytes:
    rng = random.Random(i)
    text = " ".join(f"w{rng.randrange(10 ** 6)}" for _ in range(words))
    return f"<html><head><title>Page {i}</title></head><body><p>{text}</p></body></html>".encode()


def records(n: int, words: int = 6000) -> list[bytes]:
    return [raw_record(f"http://ex.com/{i}", page(i, words)) for i in range(n)]


def read_with(data: bytes, isal: bool) -> list:
    saved = warc._ISAL
    warc._ISAL = isal
    try:
        return list(iter_warc_records(io.BytesIO(data), "w.warc.gz"))
    finally:
        warc._ISAL = saved


def same_both_ways(data: bytes) -> list:
    by_zlib = read_with(data, False)
    assert read_with(data, True) == by_zlib
    return by_zlib


@pytest.fixture
def whole_members(monkeypatch):
    """How many members isal inflated whole, so a test can tell it was not all zlib."""
    taken = []
    inflate_whole = warc._Container._inflate_whole

    def counting(box):
        data = inflate_whole(box)
        taken.append(data is not None)
        return data

    monkeypatch.setattr(warc._Container, "_inflate_whole", counting)
    return taken


def test_intact_members_are_inflated_by_isal_to_the_same_records(whole_members):
    data, offsets = gzip_members(records(4))
    assert len(data) > 4 * 16 * 1024
    outcomes = same_both_ways(data)
    assert [(o.url, o.warc_offset) for o in outcomes] == [(f"http://ex.com/{i}", offsets[i]) for i in range(4)]
    assert whole_members and all(whole_members)


def test_records_across_members_and_members_holding_many_records():
    """Block-gzip (members that do not start records) and whole-file gzip (one member)."""
    plain, _ = plain_records(records(3, words=400))
    blocks = b"".join(gzip.compress(plain[k:k + 300], mtime=0) for k in range(0, len(plain), 300))
    assert len(same_both_ways(blocks)) == 3
    assert len(same_both_ways(gzip.compress(plain, mtime=0))) == 3


def test_a_damaged_member_is_zlib_error_row(whole_members):
    data, offsets = gzip_members(records(3))
    damaged = flip_bytes(data, offsets[1] + 20_000)
    outcomes = same_both_ways(damaged)
    errors = [o for o in outcomes if isinstance(o, ReadError)]
    assert [(e.stage, e.error_class, e.warc_offset) for e in errors] == [("read", "BadGzipMember", offsets[1])]
    assert "Error -3 while decompressing data" in errors[0].message
    assert whole_members.count(False) == 1       # the damaged member, read again by zlib


@pytest.mark.parametrize("flags", [0x02, 0x20, 0x80])
def test_header_flags_only_zlib_checks_leave_the_member_to_zlib(flags):
    """FHCRC and the reserved bits: zlib refuses them (a header CRC mismatch, unknown
    flags), isal would not say so."""
    data, offsets = gzip_members(records(3, words=40))
    member = data[offsets[1]:offsets[2]]
    member = member[:3] + bytes([member[3] | flags]) + member[4:]
    outcomes = same_both_ways(data[:offsets[1]] + member + data[offsets[2]:])
    assert [o.error_class for o in outcomes if isinstance(o, ReadError)] == ["BadGzipMember"]


def test_a_member_over_the_limit_and_a_cut_member_are_read_by_zlib(monkeypatch):
    data, offsets = gzip_members(records(3))
    monkeypatch.setattr(warc, "_WHOLE_LIMIT", 5000)
    assert len(same_both_ways(data)) == 3
    monkeypatch.undo()
    for cut in (offsets[2] + 10, offsets[2] + 20_000, len(data) - 3):
        outcomes = same_both_ways(data[:cut])
        assert isinstance(outcomes[-1], ReadError)


def test_random_damage_reads_the_same_both_ways():
    """Flipped bits, overwritten runs, cuts and deletions anywhere in a file of large
    members, the gzip trailers and headers included: the same outcomes, message for message."""
    rng = random.Random(20261127)
    data, offsets = gzip_members(records(4))
    for _ in range(150):
        at = rng.randrange(len(data))
        kind = rng.choice(("flip", "run", "cut", "delete", "trailer"))
        if kind == "flip":
            damaged = data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:]
        elif kind == "run":
            damaged = data[:at] + bytes(rng.randrange(1, 64)) + data[at + 64:]
        elif kind == "cut":
            damaged = data[:at]
        elif kind == "delete":
            damaged = data[:at] + data[at + rng.randint(1, 300):]
        else:                                # a CRC or length byte of a member's trailer
            end = (offsets[1:] + [len(data)])[rng.randrange(4)]
            spot = end - rng.randint(1, 8)
            damaged = data[:spot] + bytes([data[spot] ^ 0xFF]) + data[spot + 1:]
        same_both_ways(damaged)


def test_a_bomb_member_is_stopped_the_same_way():
    bomb = raw_record("http://ex.com/bomb", b"<html>" + b" " * (20 << 20))
    data = gzip.compress(bomb, mtime=0) + gzip.compress(records(1, words=40)[0], mtime=0)
    outcomes = same_both_ways(data)
    assert any(isinstance(o, HtmlResponse) and o.url == "http://ex.com/0" for o in outcomes)
