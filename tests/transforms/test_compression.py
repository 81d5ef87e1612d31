"""transforms/compression.py: `pack` makes the frames Arrow's zstd codec made (the compact
page's blob is stored in state files as they are), and `unpack` reads them, or refuses damage
as Arrow's codec did."""
import os
import random
import threading

import pyarrow as pa
import pytest

from sitestrip.transforms import compression
from sitestrip.transforms.compression import PackedTexts, pack, unpack
from sitestrip.transforms.page import _narrow, _pack_blob, _unpack_blob, parse_page


def _arrow_pack(raw: bytes, name: str = "zstd") -> bytes:
    """`pack` as it was made with Arrow's codec: the reference."""
    return len(raw).to_bytes(8, "little") + pa.Codec(name).compress(raw, asbytes=True)


def _with_content_size_field(frame: bytes, fill: int) -> bytes:
    """`frame` with every byte of its header's content size field set to `fill`."""
    descriptor = frame[4]
    at = 5 + (0 if descriptor & 0x20 else 1) + (0, 1, 2, 4)[descriptor & 3]
    size = {0: 1 if descriptor & 0x20 else 0, 1: 2, 2: 4, 3: 8}[descriptor >> 6]
    assert size
    return frame[:at] + bytes([fill]) * size + frame[at + size:]


def _inputs():
    rng = random.Random(7)
    words = [bytes(rng.choice(b"abcdefghij ") for _ in range(rng.randint(1, 9))) for _ in range(300)]
    text = b" ".join(rng.choice(words) for _ in range(120_000))          # ~600 KB: several blocks
    html = ("<body>" + "".join(f"<div class='c{i % 7}'><p>line {i} caf\u00e9 \u2014 text</p></div>"
                               for i in range(400)) + "</body>")
    return [b"", b"x", b"abc" * 10, os.urandom(5000), text, text[:131_072], text[:131_073],
            bytes(range(256)) * 1000, parse_page(html, "http://ex.com/")._raw()]


@pytest.mark.parametrize("index", range(9))
def test_zstd_frames_are_arrows_and_read_back(index):
    raw = _inputs()[index]
    packed = pack(raw)
    assert packed == _arrow_pack(raw)
    assert unpack(packed) == raw
    assert unpack(_arrow_pack(raw)) == raw


def test_lz4_is_arrows_codec():
    raw = b"some row " * 1000
    assert pack(raw, "lz4") == _arrow_pack(raw, "lz4")
    assert unpack(pack(raw, "lz4"), "lz4") == raw


def test_a_page_blob_is_arrows_frame():
    page = parse_page("<body><p>one</p><a href='/x'>two</a><pre>  three </pre></body>", "http://ex.com/")
    blob = page.__getstate__()["blob"]
    assert blob == _arrow_pack(_narrow(page._raw()))
    assert _unpack_blob(blob, 5) == page._raw() == _unpack_blob(_pack_blob(page._raw()), 5)
    assert _unpack_blob(_arrow_pack(page._raw()), 4) == page._raw()


def test_damaged_zstd_data_raises_what_arrow_raised():
    raw = b"hello world " * 500
    packed = pack(raw)
    frame = packed[8:]
    damaged = [
        packed[:8] + b"not zstd data",                          # no frame
        packed[:-3],                                            # cut short
        packed + b"xx",                                         # data after the frame
        packed[:8] + frame[:6] + b"\xff" * 4 + frame[10:],      # inside the frame
        (len(raw) + 1).to_bytes(8, "little") + frame,           # declared length is not the frame's
        packed[:8] + _with_content_size_field(frame, 0xFF),      # the frame's header says more
    ]
    for blob in damaged:
        size = int.from_bytes(blob[:8], "little")
        with pytest.raises(OSError) as arrow:
            pa.Codec("zstd").decompress(memoryview(blob)[8:], decompressed_size=size, asbytes=True)
        with pytest.raises(OSError) as ours:
            unpack(blob, limit=1 << 41)
        assert str(ours.value) == str(arrow.value)


def test_a_length_over_the_limit_or_no_length_is_a_value_error():
    with pytest.raises(ValueError, match="declares"):
        unpack(b"not zstd data", limit=1 << 31)
    with pytest.raises(ValueError, match="declares"):
        unpack(b"short")
    with pytest.raises(ValueError, match="declares"):
        _unpack_blob((1 << 32).to_bytes(8, "little") + pack(b"x")[8:], 4)


def test_an_empty_frame_is_read_by_arrows_codec():
    assert unpack(pack(b"")) == b""
    with pytest.raises(OSError):
        unpack(b"\0" * 8 + b"not zstd data")


def test_packed_texts_round_trip():
    texts = {"main_text": "caf\u00e9 \ud800 lone", "main_markdown": "", "nontemplate_text": "x" * 10_000}
    packed = PackedTexts.of(texts)
    assert packed.blob == _arrow_pack("".join(texts.values()).encode("utf-8", "surrogatepass"))
    assert packed.texts() == texts


def test_each_thread_packs_with_its_own_contexts():
    raws = _inputs()
    expected = [_arrow_pack(raw) for raw in raws]
    got, contexts = {}, set()

    def work(k):
        contexts.add(id(compression._ZSTD.compressor))
        for _ in range(5):
            out = [pack(raw) for raw in raws]
            assert [unpack(p) for p in out] == raws
        got[k] = out

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[k] == expected for k in range(4))
    assert len(contexts) == 4
