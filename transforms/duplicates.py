"""Duplicate pages (docs/algorithms.md "Duplicates").

An indexer or a corpus builder removes duplicates first: one page under URL variants
(tracking parameters, print views, session ids), a page captured twice, a page whose
content another page of its site repeats with a changed date or an added note. A site
shard holds its pages together, so duplicates within a site are found here, on the main
content each row carries; exact duplicates across sites need only a hash, and are joined
in the Beam graph (pipeline/graph.py).

Per row:
- `content_hash`: 64-bit BLAKE2b of the main text's words, case-folded, in order (so
  whitespace, case and punctuation do not make two copies differ); null when the main
  text has no word.
- `near_signature`: a MinHash (`num_perm` uint32 values) of the set of the main text's
  `shingle_words`-word shingles; two pages' signatures agree in about the share of their
  shingles they share (Jaccard similarity), the measure of near duplicates that web-scale
  corpus pipelines use. Written here in numpy: datasketch's import pulls scipy (0.5-0.8 s
  of a worker's start-up) and hashes each shingle in a Python call.

Within a shard (and with the fingerprints of earlier runs, `--state`):
1. Captures: every capture of a URL but its newest (latest WARC-Date, then the later
   record) is marked a duplicate of the newest, kind `capture`: a recrawl supersedes.
2. The newest captures whose main texts have one content hash, or whose signatures agree
   in at least `near_threshold` of their values (candidate pairs from MinHash LSH, then
   checked on the signatures), are joined into clusters (connected components).
3. A cluster's canonical page is the page its other members name as rel=canonical most
   often, if it is in the cluster; else the shortest normalized URL; then the earliest
   fetch; then the URL and record id, so the choice never depends on input order. Every
   other member is a duplicate of it: kind `exact` (same content hash) or `near`.
A page of an earlier run (a fingerprint of the state) can be a canonical page but gets no
row: the run's pages that duplicate it name it.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

KINDS = ("capture", "exact", "near", "exact_across_sites")
# Signatures hold no randomness (the shingle hashes are the permutation), so signatures of
# any run, worker or state file compare; a different num_perm makes signatures that do not.
# LSH bands: num_perm values in bands of BAND_ROWS; two pages agreeing on a whole band are
# checked. With 4 rows a pair at Jaccard 0.8 shares a band with probability 1 - (1 - 0.8^4)^16
# > 0.999 (64 values), one at 0.3 with 0.12.
BAND_ROWS = 4

_U64 = np.uint64
_P = _U64(0x100000001B3)          # odd: invertible modulo 2^64
_P_INV = _U64(pow(0x100000001B3, -1, 1 << 64))

@dataclass(frozen=True)
class DuplicateParams:
    enabled: bool = False         # off: the thesis marks no duplicates; on in default.yaml
    shingle_words: int = 5        # words per shingle
    num_perm: int = 64            # MinHash values per signature
    near_threshold: float = 0.75  # signature agreement (estimated Jaccard) for a near duplicate
    across_sites: bool = False    # exact duplicates across sites, by content hash (pipeline/graph.py)
    max_fingerprints_per_site: int = 100_000  # --state: fingerprints kept per site, newest first

    def __post_init__(self):
        if self.shingle_words < 1:
            raise ValueError(f"shingle_words must be at least 1, got {self.shingle_words}")
        if not 8 <= self.num_perm <= 1024:
            raise ValueError(f"num_perm must be 8 to 1024, got {self.num_perm}")
        if not 0.5 <= self.near_threshold <= 1.0:
            raise ValueError(f"near_threshold must be 0.5 to 1, got {self.near_threshold}")
        if self.max_fingerprints_per_site < 1:
            raise ValueError(f"max_fingerprints_per_site must be at least 1, got {self.max_fingerprints_per_site}")


# Word characters: ASCII letters, digits and "_", and every byte of a non-ASCII character
# (so words of any script hash as runs of their UTF-8), except the punctuation and spaces
# outside ASCII that join or split words in running text: U+00A0-U+00BF (no-break space,
# guillemets, middle dot, signs), General Punctuation U+2000-U+206F (spaces, dashes, quotes,
# bullets, ellipsis), the trade mark sign, CJK punctuation U+3000-U+303F and the fullwidth
# punctuation of U+FF01-U+FF0F and U+FF1A-U+FF20. transforms/_text.c `word_hashes` does the
# same in one pass; this numpy expression is its reference (tests/test_duplicates.py).
_WORD_BYTE = np.zeros(256, dtype=bool)
for _c in b"abcdefghijklmnopqrstuvwxyz0123456789_":
    _WORD_BYTE[_c] = True
_WORD_BYTE[0x80:] = True
_NOT_WORDS = re.compile("[\u00a0-\u00bf\u2000-\u206f\u2122\u3000-\u303f\uff01-\uff0f\uff1a-\uff20]")
try:
    from sitestrip.transforms import _text as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
_COMPILED = os.environ.get("SITESTRIP_TEXT", "compiled") != "python"
_powers = np.ones(1, dtype=_U64)
_inverse_powers = np.ones(1, dtype=_U64)


def _power_tables(n: int) -> tuple[np.ndarray, np.ndarray]:
    """P^i and P^-i modulo 2^64 for i < n (grown on demand, kept per process)."""
    global _powers, _inverse_powers
    if _powers.size < n:
        size = max(n, 2 * _powers.size)
        with np.errstate(over="ignore"):
            _powers = np.cumprod(np.full(size, _P, dtype=_U64)) * _P_INV
            _inverse_powers = np.cumprod(np.full(size, _P_INV, dtype=_U64)) * _P
    return _powers[:n], _inverse_powers[:n]


def _mix(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer: every input bit reaches every output bit."""
    with np.errstate(over="ignore"):
        h = h ^ (h >> _U64(33))
        h = h * _U64(0xFF51AFD7ED558CCD)
        h = h ^ (h >> _U64(33))
        h = h * _U64(0xC4CEB9FE1A85EC53)
        return h ^ (h >> _U64(33))


def word_hashes(text: str | None, compiled: bool | None = None) -> np.ndarray:
    """uint64 hash of every word of `text`, lower-cased, in order.

    Compiled (transforms/_text.c) unless SITESTRIP_TEXT=python or `compiled` is False; the
    reference is vectorized over the text's UTF-8 bytes: a word's polynomial hash is the
    difference of two prefix sums, scaled back by the inverse power of its start."""
    if not text:
        return np.zeros(0, dtype=_U64)
    if (_COMPILED if compiled is None else compiled) and _compiled is not None:
        # The C lowers each character as it reads it; str.lower maps these two otherwise
        # (U+0130 to two characters, U+03A3 by its neighbours), so a text with either is
        # lowered whole first.
        ascii = text.isascii()
        whole = not ascii and ("\u0130" in text or "\u03a3" in text)
        if whole:
            text = text.lower()
        return np.frombuffer(_compiled.word_hashes_text(text, not (ascii or whole)), dtype=_U64)
    lowered = text if text.isascii() else text.lower()
    data = np.frombuffer(_NOT_WORDS.sub(" ", lowered.lower()).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    inside = _WORD_BYTE[data]
    edges = np.flatnonzero(np.diff(inside.astype(np.int8), prepend=0, append=0))
    starts, ends = edges[0::2], edges[1::2]
    if starts.size == 0:
        return np.zeros(0, dtype=_U64)
    powers, inverse = _power_tables(data.size + 1)
    with np.errstate(over="ignore"):
        prefix = np.concatenate(([_U64(0)], np.cumsum((data.astype(_U64) + _U64(1)) * powers[:data.size], dtype=_U64)))
        return _mix((prefix[ends] - prefix[starts]) * inverse[starts])


def content_hash(words: np.ndarray) -> str | None:
    """BLAKE2b-64 (hex) of the word hashes in order: the same for two texts whose words agree
    once case, spaces and punctuation are set aside."""
    if words.size == 0:
        return None
    # The array's own buffer: the bytes of words.astype("<u8").tobytes(), without two copies.
    return hashlib.blake2b(np.ascontiguousarray(words, dtype="<u8"), digest_size=8).hexdigest()


def shingle_hashes(words: np.ndarray, k: int) -> np.ndarray:
    """uint64 hash of every k-word shingle, in order (one for a text of fewer words)."""
    n = words.size
    if n == 0:
        return np.zeros(0, dtype=_U64)
    k = min(k, n)
    h = np.zeros(n - k + 1, dtype=_U64)
    with np.errstate(over="ignore"):
        for j in range(k):
            h = h * _P + words[j:n - k + 1 + j]
    return _mix(h)


# Densification: an empty bin takes the value of the next filled bin (circularly) moved by
# its distance times this odd constant, so two pages' empty bins agree only when their donors
# agree at the same distance (one-permutation hashing densified by rotation).
_ROTATION = np.uint32(0x9E3779B1)


def minhash(shingles: np.ndarray, num_perm: int) -> np.ndarray:
    """uint32[num_perm]: a one-permutation MinHash of the set of shingles.

    The shingle hashes are already a random permutation of the 64-bit space (_mix): the top
    32 bits pick one of num_perm bins, and a bin's value is the least low 32 bits among its
    shingles; empty bins are filled by rotation (_ROTATION). Two signatures agree in about
    the Jaccard similarity of their shingle sets, as with num_perm independent hash
    functions (Li, Owen and Zhang, NIPS 2012; Shrivastava and Li, ICML 2014), for one sort
    instead of num_perm passes over the shingles."""
    keys = np.sort(shingles)                            # each bin's least key first
    bins = ((keys >> _U64(32)) * _U64(num_perm)) >> _U64(32)
    first = np.searchsorted(bins, np.arange(num_perm, dtype=_U64))
    filled = first < keys.size
    filled[filled] = bins[first[filled]] == np.flatnonzero(filled).astype(_U64)
    filled_at = np.flatnonzero(filled)
    values = (keys[np.minimum(first, keys.size - 1)] & _U64(0xFFFFFFFF)).astype(np.uint32)
    at = np.arange(num_perm)
    donor = filled_at[np.searchsorted(filled_at, at) % filled_at.size]
    distance = ((donor - at) % num_perm).astype(np.uint32)
    with np.errstate(over="ignore"):
        return values[donor] + distance * _ROTATION


def near_signature(words: np.ndarray, params: DuplicateParams, compiled: bool | None = None) -> np.ndarray | None:
    """minhash of the shingle hashes; compiled in one pass over the words (transforms/_text.c,
    no sort: each bin keeps its least hash) unless SITESTRIP_TEXT=python or `compiled` is False."""
    if words.size == 0:
        return None
    if (_COMPILED if compiled is None else compiled) and _compiled is not None:
        raw = _compiled.near_signature(np.ascontiguousarray(words, dtype=_U64), params.shingle_words, params.num_perm)
        return np.frombuffer(raw, dtype=np.uint32).copy()
    return minhash(shingle_hashes(words, params.shingle_words), params.num_perm)


def agreement(a: np.ndarray, b: np.ndarray) -> float:
    """The share of values two signatures agree in: an estimate of their Jaccard similarity."""
    return float(np.count_nonzero(a == b)) / a.size


def signature_bytes(signature: np.ndarray | None) -> bytes | None:
    return None if signature is None else signature.astype("<u4").tobytes()


def signature_from_bytes(raw: bytes | None) -> np.ndarray | None:
    return None if raw is None else np.frombuffer(raw, dtype="<u4").astype(np.uint32)


@dataclass
class Fingerprint:
    """What duplicate detection needs of one page: identity, the canonical URL the page
    names, and its content's hash and signature."""
    url: str                    # as rows name it (WARC-Target-URI)
    url_normalized: str
    record_id: str
    fetch_date: str
    canonical_url: str | None   # rel=canonical / og:url, normalized
    content_hash: str | None
    signature: np.ndarray | None
    warc_file: str = ""
    warc_offset: int = 0
    stored: bool = False        # a page of an earlier run (state): it gets no row


def fingerprint(row: dict, params: DuplicateParams) -> Fingerprint:
    words = word_hashes(row.get("main_text"))
    return Fingerprint(url=row["url"], url_normalized=row["url_normalized"],
                       record_id=row.get("warc_record_id") or "", fetch_date=row.get("fetch_date") or "",
                       canonical_url=row.get("canonical_url"), content_hash=content_hash(words),
                       signature=near_signature(words, params),
                       warc_file=row.get("warc_file") or "", warc_offset=int(row.get("warc_offset") or 0))


@dataclass(frozen=True)
class Duplicate:
    canonical: int   # index of the canonical page in the fingerprints
    kind: str        # capture | exact | near


def _newest_key(fp: Fingerprint):
    # A page of this run over a stored one of the same date (the state keeps what the run saw).
    return fp.fetch_date, not fp.stored, fp.warc_file, fp.warc_offset, fp.record_id


def _canonical_key(fp: Fingerprint, named: int):
    return -named, len(fp.url_normalized), fp.fetch_date, fp.url_normalized, fp.record_id


def _near_pairs(signatures: dict, params: DuplicateParams, compiled: bool | None = None) -> list:
    """Pairs of indexes whose signatures agree in at least near_threshold of their values:
    candidates from LSH (pages that agree on a whole band of BAND_ROWS values), each checked
    on the two signatures. Compiled (transforms/_text.c `near_pairs`: a shard's search is a
    few µs where one np.unique per band took 0.3 ms) unless SITESTRIP_TEXT=python or
    `compiled` is False; the numpy below is its reference."""
    if len(signatures) < 2:
        return []
    order = sorted(signatures)
    matrix = np.stack([signatures[i] for i in order])
    rows = min(BAND_ROWS, params.num_perm)
    if (_COMPILED if compiled is None else compiled) and _compiled is not None:
        matrix = np.ascontiguousarray(matrix, dtype=np.uint32)
        pairs = np.frombuffer(_compiled.near_pairs(matrix, len(order), params.num_perm, rows,
                                                   params.near_threshold * params.num_perm), dtype=np.int64)
        return [(order[p], order[q]) for p, q in pairs.reshape(-1, 2).tolist()]
    candidates = set()
    for start in range(0, params.num_perm - rows + 1, rows):
        band = np.ascontiguousarray(matrix[:, start:start + rows]).view(np.dtype((np.void, 4 * rows))).ravel()
        _, inverse, counts = np.unique(band, return_inverse=True, return_counts=True)
        shared = np.flatnonzero(counts[inverse] > 1)
        groups: dict = {}
        for position, bucket in zip(shared.tolist(), inverse[shared].tolist()):
            groups.setdefault(bucket, []).append(position)
        for members in groups.values():
            candidates.update((p, q) for x, p in enumerate(members) for q in members[x + 1:])
    need = params.near_threshold * params.num_perm
    return sorted((order[p], order[q]) for p, q in candidates
                  if np.count_nonzero(matrix[p] == matrix[q]) >= need)


def find_duplicates(fingerprints: Sequence[Fingerprint], params: DuplicateParams) -> dict:
    """{index of a duplicate: Duplicate(index of its canonical page, kind)} over the pages of
    one site (module docstring); unique and canonical pages are not in it."""
    out: dict = {}
    newest: dict = {}
    for i, fp in enumerate(fingerprints):
        best = newest.get(fp.url_normalized)
        if best is None or _newest_key(fp) > _newest_key(fingerprints[best]):
            newest[fp.url_normalized] = i
    for i, fp in enumerate(fingerprints):
        if newest[fp.url_normalized] != i:
            out[i] = Duplicate(newest[fp.url_normalized], "capture")
    heads = sorted(newest.values())
    parent = {i: i for i in heads}

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(i, j):
        ri, rj = root(i), root(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)

    by_hash: dict = {}
    for i in heads:
        h = fingerprints[i].content_hash
        if h is not None:
            if h in by_hash:
                join(by_hash[h], i)
            else:
                by_hash[h] = i
    signatures = {i: fingerprints[i].signature for i in heads
                  if fingerprints[i].signature is not None and fingerprints[i].signature.size == params.num_perm}
    for i, j in _near_pairs(signatures, params):
        join(i, j)
    clusters: dict = {}
    for i in heads:
        clusters.setdefault(root(i), []).append(i)
    for members in clusters.values():
        if len(members) < 2:
            continue
        urls = {fingerprints[i].url_normalized: i for i in members}
        named: dict = {}
        for i in members:
            target = fingerprints[i].canonical_url
            if target in urls and urls[target] != i:
                named[urls[target]] = named.get(urls[target], 0) + 1
        canonical = min(members, key=lambda i: _canonical_key(fingerprints[i], named.get(i, 0)))
        for i in members:
            if i != canonical:
                same = fingerprints[i].content_hash == fingerprints[canonical].content_hash
                out[i] = Duplicate(canonical, "exact" if same else "near")
    return out


def duplicate_mates(found: dict, fingerprints: Sequence[Fingerprint], first: int) -> dict:
    """{index < `first`: the normalized URLs of the other pages of its exact or near
    duplicate cluster} for the pages that have any (captures of one URL are not mates: the
    site step never compares a capture with its URL's other captures)."""
    clusters: dict = {}
    for i, duplicate in found.items():
        if duplicate.kind in ("exact", "near"):
            clusters.setdefault(duplicate.canonical, {duplicate.canonical}).add(i)
    out = {}
    for members in clusters.values():
        urls = {fingerprints[i].url_normalized for i in members}
        for i in members:
            if i < first:
                others = urls - {fingerprints[i].url_normalized}
                if others:
                    out[i] = frozenset(others)
    return out


def duplicate_columns(fp: Fingerprint, duplicate: Duplicate | None, fingerprints: Sequence[Fingerprint]) -> dict:
    """The pages row's duplicate columns."""
    target = fingerprints[duplicate.canonical] if duplicate is not None else None
    return {"content_hash": fp.content_hash, "near_signature": signature_bytes(fp.signature),
            "duplicate_of": target.url if target is not None else None,
            "duplicate_of_record": target.record_id if target is not None else None,
            "duplicate_kind": duplicate.kind if duplicate is not None else None}


# Exact duplicates across sites (pipeline/graph.py joins them): the pages that are canonical
# or unique within their site are counted per content hash in one combine, which keeps a
# hash's canonical page and its count only (so a hash on a million pages costs what one on
# two does); the rows then meet their hash's canonical page in groups keyed by (hash, salt),
# ACROSS_SALTS of them per hash, so no group holds more than about 1/ACROSS_SALTS of a hot
# hash's rows. Across sites the canonical page is the one with the shortest normalized URL,
# then the earliest fetch (rel=canonical, which names a page, is honoured within a site).
ACROSS_SALTS = 16


def across_sites_eligible(row: dict) -> bool:
    """A row that takes part: it has a content hash and is not already a duplicate."""
    return row.get("content_hash") is not None and row.get("duplicate_of") is None


def across_sites_salt(row: dict) -> int:
    import zlib
    return zlib.crc32(f"{row['url']}\n{row['warc_file']}\n{row['warc_offset']}".encode("utf-8", "surrogatepass")) \
        % ACROSS_SALTS


def across_sites_candidate(row: dict) -> tuple:
    """(the ordering key, the page as a duplicate_of target) of a row for the combine."""
    return ((len(row["url_normalized"]), row.get("fetch_date") or "", row["url_normalized"],
             row.get("warc_record_id") or ""),
            (row["site"], row["url"], row.get("warc_record_id") or ""))


def fewer_across_sites(acc: tuple, other: tuple) -> tuple:
    """The combine's merge: (pages counted, best key, best page)."""
    count = acc[0] + other[0]
    if acc[1] is None or (other[1] is not None and other[1] < acc[1]):
        return count, other[1], other[2]
    return count, acc[1], acc[2]


def mark_across_sites(row: dict, canonical: tuple) -> dict:
    """The row marked a duplicate of `canonical` (site, url, record id), unless it is that page."""
    site, url, record_id = canonical
    if record_id == (row.get("warc_record_id") or "") and url == row["url"]:
        return row
    row = dict(row)
    row["duplicate_of"], row["duplicate_of_record"] = url, record_id
    row["duplicate_kind"] = "exact" if site == row["site"] else "exact_across_sites"
    return row
