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
