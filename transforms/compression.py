"""Compression of what the product holds or ships as bytes: Arrow's codecs (pyarrow is a
dependency already, for Parquet), made once per process on first use — a module global, so
a pickled DoFn never carries one.

`pack` is the length-prefixed form the compact page's blob (page.py) and the rows crossing a
shuffle (pipeline/parts.py) use: the raw length in 8 bytes little-endian, then the codec's
output, so unpacking allocates the result once."""
from __future__ import annotations

_CODECS: dict = {}


def codec(name: str):
    got = _CODECS.get(name)
    if got is None:
        import pyarrow as pa
        got = _CODECS[name] = pa.Codec(name)
    return got


def pack(raw: bytes, name: str = "zstd") -> bytes:
    return len(raw).to_bytes(8, "little") + codec(name).compress(raw, asbytes=True)


def unpack(blob: bytes, name: str = "zstd", limit: int | None = None) -> bytes:
    """The raw bytes of `pack`; a declared length over `limit` (or a blob too short to hold
    one) is damage, a ValueError."""
    size = int.from_bytes(blob[:8], "little")
    if len(blob) < 8 or (limit is not None and size > limit):
        raise ValueError(f"packed {name} data of {len(blob)} bytes declares {size} bytes")
    return codec(name).decompress(memoryview(blob)[8:], decompressed_size=size, asbytes=True)


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
