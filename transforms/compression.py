"""Compression of what the product holds or ships as bytes. zstd through the `zstandard`
package, with one compressor and one decompressor per thread reused from call to call; any
other codec (lz4) through Arrow's (pyarrow is a dependency already, for Parquet), made once
per process on first use. Both live in module globals, so a pickled DoFn never carries one.

Not Arrow's zstd codec, which makes the same frames: it creates and frees a zstd context on
every call, and the blobs and packed texts are many and small (a docsites-dev run packs 3,792
frames of 48 KB on average and unpacks 4,093). Over that run (1 worker, cProfile) `pack` took
0.43 s where Arrow's took 0.48, `unpack` 0.25 where 0.29 (lz4's calls included, unchanged).
The frames are byte for byte Arrow's (the same zstd, 1.5.7, at Arrow's default level, 1, with
the content size in the header): the compact page's blob is stored in state files, and
tests/transforms/test_compression.py holds the two equal.

`pack` is the length-prefixed form the compact page's blob (page.py) and the rows crossing a
shuffle (pipeline/parts.py) use: the raw length in 8 bytes little-endian, then the codec's
output, so unpacking allocates the result once."""
from __future__ import annotations

import threading

import zstandard

_CODECS: dict = {}
# zstd's level for `pack`: Arrow's default (pa.Codec.default_compression_level("zstd")), the
# level every stored blob was compressed at.
ZSTD_LEVEL = 1


def codec(name: str):
    got = _CODECS.get(name)
    if got is None:
        import pyarrow as pa
        got = _CODECS[name] = pa.Codec(name)
    return got


class _Zstd(threading.local):
    """This thread's zstd contexts: a context is not safe to share between threads. Once used
    they hold about 1.4 MB (the compressor's, for level 1's window) and 0.1 MB."""

    def __init__(self):
        self.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


_ZSTD = _Zstd()


def pack(raw: bytes, name: str = "zstd") -> bytes:
    if name == "zstd":
        return len(raw).to_bytes(8, "little") + _ZSTD.compressor.compress(raw)
    return len(raw).to_bytes(8, "little") + codec(name).compress(raw, asbytes=True)


def unpack(blob: bytes, name: str = "zstd", limit: int | None = None) -> bytes:
    """The raw bytes of `pack`; a declared length over `limit` (or a blob too short to hold
    one) is damage, a ValueError. Damaged zstd data raises what Arrow's codec raises (an
    OSError naming zstd's error), as it always did."""
    size = int.from_bytes(blob[:8], "little")
    if len(blob) < 8 or (limit is not None and size > limit):
        raise ValueError(f"packed {name} data of {len(blob)} bytes declares {size} bytes")
    data = memoryview(blob)[8:]
    if name == "zstd" and size:
        try:
            # The frame's own length checked first: the decompressor allocates what the
            # frame header declares, which in a damaged frame may be anything.
            if zstandard.frame_content_size(data) == size:
                raw = _ZSTD.decompressor.decompress(data, allow_extra_data=False)
                if len(raw) == size:
                    return raw
        except zstandard.ZstdError:
            pass
        # Not one frame of `size` bytes (damage, or frames `pack` never makes): Arrow's codec
        # reads it, or refuses it with the error it always gave.
    return codec(name).decompress(data, decompressed_size=size, asbytes=True)


# The key under which a row carries its long texts packed together (PackedTexts): the row
# keeps its text columns, None, until the texts are unpacked (transforms/site_step.py holds a
# shard's rows so; pipeline/parts.py's writer turns them into Arrow columns as they are).
PACKED_TEXTS = "_packed_texts"


class PackedTexts:
    """Named texts packed together: their UTF-8 (lone surrogates kept, "surrogatepass")
    concatenated and compressed as one frame (`pack`, zstd), with each one's byte length.

    One frame, not one per text: a row's main text, its Markdown and its non-template text
    share most of their lines, which one frame finds (docsites-dev's rows: 10.9 MB for the
    three together against 22.1 MB for each apart, in half the CPU time)."""

    __slots__ = ("names", "lengths", "blob")

    def __init__(self, names: tuple, lengths: tuple, blob: bytes):
        self.names, self.lengths, self.blob = names, lengths, blob

    @classmethod
    def of(cls, texts: dict) -> "PackedTexts":
        encoded = [text.encode("utf-8", "surrogatepass") for text in texts.values()]
        return cls(tuple(texts), tuple(len(data) for data in encoded), pack(b"".join(encoded), "zstd"))

    def __reduce__(self):
        return PackedTexts, (self.names, self.lengths, self.blob)

    def utf8(self) -> list:
        """Each text's UTF-8 bytes (memoryviews of one buffer), in `names` order."""
        raw = memoryview(unpack(self.blob, "zstd"))
        if sum(self.lengths) != len(raw):
            raise ValueError(f"packed texts of {len(raw)} bytes declare {sum(self.lengths)}")
        out, at = [], 0
        for length in self.lengths:
            out.append(raw[at:at + length])
            at += length
        return out

    def texts(self) -> dict:
        return {name: str(data, "utf-8", "surrogatepass") for name, data in zip(self.names, self.utf8())}
