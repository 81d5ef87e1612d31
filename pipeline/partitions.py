"""Local runs bounded by memory: the input spilled to disk by site, then its sites processed
one partition after another.

Beam's local runner (the FnApiRunner) runs a graph one fused step after the other and keeps
each step's whole output in memory until the next step has read it; a group-by-key's input is
held as Python objects while it is grouped (docs/performance.md, "Memory per worker"). One graph over
the whole input therefore holds every compact page and every row of the run at some point,
and a local run's peak memory grows with its input. Other runners spill their shuffles and
run the graph as it is. A local run (no --runner; no --state, run.partitions true, no
duplicates.across_sites: pipeline/cli.py) runs in three steps instead:

1. **Spill.** One pipeline reads the WARC files as every run does (graph.read_warcs: the same
   records, counters, errors rows and progress) and appends each compact page to one of
   BUCKETS files chosen by a stable hash of its site (crc32), so that a site lies in one
   bucket. A page is written as it crosses the shuffles of the one graph (pipeline/wire.py:
   one pickle of the record, its compact page's node arrays as their compressed blob),
   after a head the plan reads (its site and cell, as JSON), so it is packed once and
   unpacked once; the spill's own format before it (the fields as JSON beside the pickle
   the count needed) took 0.1 CPU s more on docsites-dev's pages. Every writer also writes
   an index: per site its bucket, pages and bytes; and the 16-byte digests of its pages'
   URLs (SpilledUrls). The read's errors rows go to files of their own. The spill directory
   is local (TMPDIR) and removed when the run ends. A run of one local worker reads its
   files in one bundle, without the reshuffle that spreads them over workers.
2. **Plan** (`read_index`, `plan_partitions`). From the indexes the main process finds the sites over
   site.max_site_pages, counts their pages per cell (transforms/shards.py) from the heads of
   their buckets' files and makes their shard plans from the whole input's counts: the plans
   graph.shard_sites makes in one graph, so every page is in the shard it would be in
   there. It packs the buckets, and the hot sites' shards one by one, into the fewest
   partitions whose spilled bytes stay within `partition_bytes(run.memory_budget_mb, ...)`,
   from the budget less the run's fixed cost, most of which its largest site shard sets.
3. **Partitions.** For each partition, graph.build_pipeline's graph from its per-site step
   on (`partition_source`): the partition's site shards are spread over the workers as the
   places of their pages in the spill, and each shard is read from there by the worker that
   processes it, so the runner never holds a partition's pages; its rows wait in the spill
   too, packed, for their part's writer (graph.build_pipeline's `row_spill`), so the runner
   holds their places, not the rows, and they are removed once the partition is written. A
   page's links get target_in_input as they leave its shard, from the digests of every
   spilled page's URL (SpilledUrls: a spilled page is a pages row of the run unless its
   site's step failed it), where the one graph joins the links with its pages rows. It writes
   its datasets' parts into the run's staging directory under names of its own
   (`pages/part-p00001-00000-of-00003.parquet`; a run of one partition writes the files of
   the one graph, `pages/part-00000-of-00003.parquet`). The first partition also writes the
   read's errors rows. The command line publishes the staging directory once, after the
   last partition, as for any run; the counters are the sum of the pipelines'.

The rows are those of one graph over the whole input: a shard's rows depend only on its
pages, and a shard has the same pages. Three things cross shards, and are made whole after
the last partition (`finish`): the menus rows of a hot site whose shards went to different
partitions (one row per site and menu: the partitions' rows are merged as CountMenus merges
them); the links rows' target_in_input, which asks whether a target URL has a pages row
anywhere in the run, when some spilled page has none (then set again from the staged pages
rows of every partition: `fill_link_targets`); and the part files (a dataset's empty files
are removed but one, so a dataset still has a file and a schema). Exact duplicates across sites
(duplicates.across_sites) join every pages row of the run inside the graph, so a run with
them on is not partitioned (`can_partition`).
"""
from __future__ import annotations

import gc
import hashlib
import heapq
import json
import logging
import math
import os
import shutil
import struct
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Callable, Iterator

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from sitestrip.pipeline.graph import MAIN, NAMESPACE, build_pipeline, dataset_prefix, read_warcs
from sitestrip.pipeline.wire import pack_record
from sitestrip.transforms.site_step import PageRecord
from sitestrip.transforms import tree
from sitestrip.transforms.shards import ShardPlan, page_cell, plan_shards

log = logging.getLogger("sitestrip")

# Files a spill writer spreads the sites over; the partitions are made of whole buckets (and of
# hot sites' shards), so this bounds how evenly they can be filled: 1/256 of the input each.
BUCKETS = 256
# How a partition's size follows from run.memory_budget_mb (docs/performance.md, "Memory
# per worker"), 1 worker: peak RSS = the run's fixed cost + HELD_PER_SPILLED_BYTE x a
# partition's spilled bytes. The fixed cost is what a run holds whatever its partitions: the
# interpreter, Beam, the models and a part being written (BASE_MB: a one-page run peaked at
# 177-179 MB when these were set), and the working set of its largest site shard,
# SHARD_MB_PER_PAGE a page (one synthetic site of 2,000 pages, one shard, peaked at 327-328
# MB: 150 MB over a one-page run; with the heap settings of pipeline/heap.py and the
# version-5 blob, 294-300 MB, so the plan keeps a margin).
# The plan knows the largest shard before it packs the partitions (`largest_shard`): a run of
# small sites has room for larger partitions, and so runs fewer of them (each costs a
# pipeline's start, about 0.1 CPU s with 1 worker), while a run with 2,000-page shards plans
# as before, with a fixed cost of 340 MB. The partition adds what the runner holds of it (the
# places of its pages and rows, its menus and link targets) and what the C heap keeps:
# measured with the rows in the spill at about 0.9 bytes per spilled byte (20,000 pages peak
# at 326 MB in partitions of 8.4 MB and 342 MB in partitions of 27.3 MB), planned at 2.5, so
# partitions stay small, where the peak of a run of small sites stays near that of its
# largest shard. The plan aims at BUDGET_SHARE of the budget: the same run's peak moves by up
# to a tenth with the machine's state (the heap's retention).
BASE_MB = 190
SHARD_MB_PER_PAGE = 0.075
HELD_PER_SPILLED_BYTE = 2.5
BUDGET_SHARE = 0.9
MIB = 1 << 20

_LENGTH = struct.Struct("<I")


def fixed_mb(largest_shard_pages: int) -> float:
    """What a run holds whatever its partitions, with a largest site shard of that many pages."""
    return BASE_MB + SHARD_MB_PER_PAGE * largest_shard_pages


def partition_bytes(memory_budget_mb: int, largest_shard_pages: int) -> int:
    """The spilled bytes of one partition that a run of `memory_budget_mb` plans for, given its
    largest site shard; 0 when the budget does not cover the fixed cost (then every bucket is a
    partition of its own)."""
    room = memory_budget_mb * BUDGET_SHARE - fixed_mb(largest_shard_pages)
    return max(0, int(room * MIB / HELD_PER_SPILLED_BYTE))


def bucket_of(site: str) -> int:
    return zlib.crc32(site.encode("utf-8", "surrogatepass")) % BUCKETS


# ------------------------------------------------------------------ the spill files

def _frame(*parts: bytes) -> bytes:
    return b"".join(_LENGTH.pack(len(part)) + part for part in parts)


def _head(record: PageRecord) -> bytes:
    """What the plan reads of a spilled page: [site, directory, slot] as ASCII JSON (which keeps
    a lone surrogate as an escape and reads it back)."""
    directory, slot = page_cell(record.url)
    return json.dumps([record.site, directory, slot], ensure_ascii=True).encode("ascii")


def encode_page(record: PageRecord, packed: bytes | None = None) -> bytes:
    """One spilled page: its head (`_head`), then the record as it crosses the shuffles
    (wire.pack_record, or `packed`, that of `record`); each after its length (4 bytes,
    little-endian)."""
    return _frame(_head(record), pack_record(record) if packed is None else packed)


def _length(fh, at_frame_start: bool = False) -> int | None:
    """The length before a part of a frame; None at the end of the file between two frames."""
    size = fh.read(4)
    if not size and at_frame_start:
        return None
    if len(size) < 4:
        raise ValueError(f"{fh.name}: spill file cut short")
    return _LENGTH.unpack(size)[0]


def _part(fh, n: int) -> bytes:
    data = fh.read(n)
    if len(data) < n:
        raise ValueError(f"{fh.name}: spill file cut short")
    return data


def _site_and_cell(head: bytes) -> tuple[str, tuple[str, int]]:
    # The site and the cell lead the head: a page of another partition is told apart by them.
    site, directory, slot = json.loads(head)[:3]
    return site, (directory, slot)


def iter_frames(fh) -> Iterator[tuple[str, tuple[str, int], bytes]]:
    """(site, cell, packed record) of every page in a spill file, in order."""
    while True:
        n = _length(fh, at_frame_start=True)
        if n is None:
            return
        head = _part(fh, n)
        packed = _part(fh, _length(fh))
        yield (*_site_and_cell(head), packed)


def iter_heads(fh) -> Iterator[tuple[int, str, tuple[str, int]]]:
    """(offset, site, cell) of every page in a spill file, its record skipped."""
    size = os.fstat(fh.fileno()).st_size
    while True:
        offset = fh.tell()
        n = _length(fh, at_frame_start=True)
        if n is None:
            return
        head = _part(fh, n)
        fh.seek(_length(fh), os.SEEK_CUR)
        if fh.tell() > size:
            raise ValueError(f"{fh.name}: spill file cut short")
        yield (offset, *_site_and_cell(head))


def read_frame(fh, offset: int) -> bytes:
    """The packed record of the page at `offset`."""
    fh.seek(offset)
    _part(fh, _length(fh))
    return _part(fh, _length(fh))


def url_digests(urls, compiled: bool | None = None) -> bytes:
    """16-byte BLAKE2b digests of `urls` (strings), concatenated. Compiled (transforms/_site.c
    `url_digests`, hashlib's bytes without a Python object and call per URL) unless
    SITESTRIP_FEATURES=python or `compiled` is False; hashlib is the reference."""
    if (tree._COMPILED if compiled is None else compiled) and tree._site_compiled is not None:
        return tree._site_compiled.url_digests(urls if type(urls) is list else list(urls))
    return b"".join(hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=16).digest() for url in urls)


def distinct_digests(pieces: list) -> np.ndarray:
    """Arrays of digests (numpy "S16") as one sorted array of the distinct ones: a set that
    `digests_in` looks up."""
    return np.unique(np.concatenate(pieces)) if pieces else np.empty(0, dtype="S16")


def digests_in(digests: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Whether each of `wanted` is in `digests` (distinct_digests'): a boolean per digest."""
    if not len(digests):
        return np.zeros(len(wanted), dtype=bool)
    return digests[np.minimum(np.searchsorted(digests, wanted), len(digests) - 1)] == wanted


class SpillWriter:
    """The spill of one bundle: pages appended to their bucket's file, errors rows to an errors
    file, the digests of the pages' URLs to a file of their own (SpilledUrls), and on close the
    index that lists them (a bundle without an index wrote nothing the plan reads).

    A bucket's pages wait in a buffer of up to FLUSH_BYTES, which is then appended to its file
    and the file closed again: 256 files held open would pass the limit of open files of some
    systems (macOS starts shells with 256), and the buffers stay within 256 × FLUSH_BYTES."""

    FLUSH_BYTES = 32 * 1024

    def __init__(self, directory: str):
        self.directory, self.token = directory, uuid.uuid4().hex[:16]
        self.buffers: dict[int, bytearray] = {}
        self.errors = None
        self.urls = bytearray()
        self.sites: dict[str, list] = {}          # site → [bucket, pages, bytes]

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def _bucket_file(self, bucket: int) -> str:
        return f"b{bucket:04d}-{self.token}.pages"

    def _flush(self, bucket: int) -> None:
        with open(self._path(self._bucket_file(bucket)), "ab") as fh:
            fh.write(self.buffers[bucket])
        self.buffers[bucket] = bytearray()

    def add_page(self, record: PageRecord, packed: bytes | None = None) -> None:
        """Spill `record` (`packed`: its wire.pack_record, when the caller has it)."""
        data = encode_page(record, packed)
        bucket = bucket_of(record.site)
        buffer = self.buffers.get(bucket)
        if buffer is None:
            buffer = self.buffers[bucket] = bytearray()
        buffer += data
        if len(buffer) >= self.FLUSH_BYTES:
            self._flush(bucket)
        self.urls += url_digests((record.url,))
        entry = self.sites.get(record.site)
        if entry is None:
            entry = self.sites[record.site] = [bucket, 0, 0]
        entry[1] += 1
        entry[2] += len(data)

    def add_error(self, row: dict) -> None:
        if self.errors is None:
            self.errors = open(self._path(f"errors-{self.token}.jsonl"), "w", encoding="ascii")
        self.errors.write(json.dumps(row, ensure_ascii=True) + "\n")

    def close(self) -> None:
        for bucket, buffer in self.buffers.items():
            if buffer:
                self._flush(bucket)
        if self.errors is not None:
            self.errors.close()
        urls = None
        if self.urls:
            urls = f"urls-{self.token}.bin"
            with open(self._path(urls), "wb") as fh:
                fh.write(self.urls)
        index = {"pages": {str(b): self._bucket_file(b) for b in sorted(self.buffers)},
                 "errors": os.path.basename(self.errors.name) if self.errors is not None else None,
                 "urls": urls, "sites": self.sites}
        temp = self._path(f"_index-{self.token}.json")
        with open(temp, "w", encoding="ascii") as fh:
            json.dump(index, fh, ensure_ascii=True)
        os.replace(temp, self._path(f"index-{self.token}.json"))
        self.buffers, self.errors, self.urls, self.sites = {}, None, bytearray(), {}


class SpillPages(beam.DoFn):
    """The read's (MAIN, (site, record)) and (ERRORS, row) outputs → the spill directory."""

    def __init__(self, directory: str):
        self.directory = directory
        self.writer = None
        self.compact_bytes = Metrics.counter(NAMESPACE, "compact_bytes")

    def start_bundle(self):
        self.writer = SpillWriter(self.directory)

    def process(self, item):
        kind, value = item
        if kind == MAIN:
            record = value[1]
            # A page is spilled as the one graph's shard join packs it (graph._by_cell), so the
            # summary's compact-pages line is the same in partitions.
            packed = pack_record(record)
            self.compact_bytes.inc(len(packed))
            self.writer.add_page(record, packed)
        else:
            self.writer.add_error(value)

    def finish_bundle(self):
        self.writer.close()


def spill_pipeline(p: beam.Pipeline, warc_paths: list[str], directory: str, config,
                   progress_dir: str | None = None, spread: bool = True) -> None:
    """Add to `p` the read of `warc_paths` into the spill `directory` (SpillPages); `spread`
    False for a runner of one worker (graph.read_warcs)."""
    _ = read_warcs(p, warc_paths, config, progress_dir, spread) | "Spill" >> beam.ParDo(SpillPages(directory))


# ------------------------------------------------------------------ the plan

@dataclass
class SpillIndex:
    """What the spill holds, from its writers' indexes."""
    sites: dict[str, list]                       # site → [bucket, pages, bytes]
    page_files: dict[int, list[str]]             # bucket → its files
    error_files: list[str]
    cells: dict[str, dict] = field(default_factory=dict)   # hot sites only: cell → pages
    url_files: list[str] = field(default_factory=list)     # the digests of the pages' URLs

    @property
    def pages(self) -> int:
        return sum(entry[1] for entry in self.sites.values())

    @property
    def bytes(self) -> int:
        return sum(entry[2] for entry in self.sites.values())


def read_index(directory: str, max_site_pages: int) -> SpillIndex:
    """The spill's sites and files, from its writers' indexes, and the pages per cell of the
    sites over `max_site_pages`, counted from the heads of their buckets' pages (so that no
    count per cell is ever held but a hot site's)."""
    sites: dict[str, list] = {}
    page_files: dict[int, list[str]] = {}
    error_files: list[str] = []
    url_files: list[str] = []
    for name in sorted(n for n in os.listdir(directory) if n.startswith("index-") and n.endswith(".json")):
        with open(os.path.join(directory, name), encoding="ascii") as fh:
            index = json.load(fh)
        for bucket, file_name in index["pages"].items():
            page_files.setdefault(int(bucket), []).append(os.path.join(directory, file_name))
        if index["errors"]:
            error_files.append(os.path.join(directory, index["errors"]))
        if index.get("urls"):
            url_files.append(os.path.join(directory, index["urls"]))
        for site, (bucket, pages, size) in index["sites"].items():
            entry = sites.setdefault(site, [bucket, 0, 0])
            entry[1] += pages
            entry[2] += size
    page_files = {b: sorted(files) for b, files in page_files.items()}
    cells: dict[str, dict] = {site: {} for site, entry in sites.items() if entry[1] > max_site_pages}
    for bucket in sorted({sites[site][0] for site in cells}):
        for path in page_files[bucket]:
            with open(path, "rb") as fh:
                for _offset, site, cell in iter_heads(fh):
                    counts = cells.get(site)
                    if counts is not None:
                        counts[cell] = counts.get(cell, 0) + 1
    return SpillIndex(sites, page_files, sorted(error_files), cells, sorted(url_files))


class SpilledUrls:
    """The URLs of a run's spilled pages, as the sorted, distinct 16-byte BLAKE2b digests in
    one file (`write`): which of a page's link targets are pages of the run, for
    graph.build_pipeline's `link_targets`. A spilled page is a pages row unless its site's step
    made it an errors row, which `run_partitioned` checks after the last partition; where one
    did, the staged links files are set again from the pages rows (`fill_link_targets`).

    Loaded once per process where first asked (16 bytes a page: 1.6 MB for 100,000 pages);
    a pickled SpilledUrls carries its path only. A digest is 128 bits: a target counted present
    by a collision with a page's URL would need two distinct URLs with one BLAKE2b-128 digest."""

    NAME = "pages-urls.bin"

    def __init__(self, path: str):
        self.path = path
        self._digests = None

    @classmethod
    def write(cls, index: SpillIndex, directory: str) -> "SpilledUrls":
        found = []
        for path in index.url_files:
            with open(path, "rb") as fh:
                found.append(np.frombuffer(fh.read(), dtype="S16"))
        digests = distinct_digests(found)
        path = os.path.join(directory, cls.NAME)
        with open(path, "wb") as fh:
            fh.write(digests.tobytes())
        return cls(path)

    def __getstate__(self):
        return {"path": self.path}

    def __setstate__(self, state):
        self.path, self._digests = state["path"], None

    def _loaded(self) -> np.ndarray:
        if self._digests is None:
            with open(self.path, "rb") as fh:
                self._digests = np.frombuffer(fh.read(), dtype="S16")
        return self._digests

    def contains(self, urls: list[str]) -> np.ndarray:
        """Per URL of `urls`: it is a spilled page's URL (a boolean array)."""
        digests = self._loaded()
        if not urls or not len(digests):
            return np.zeros(len(urls), dtype=bool)
        return digests_in(digests, np.frombuffer(url_digests(urls), dtype="S16"))


@dataclass(frozen=True)
class PartitionPlan:
    """Which partition every spilled page is processed in, and in which shard of its site."""
    partitions: int
    bucket_partition: tuple[int, ...]            # a bucket's sites, hot sites aside
    hot: dict                                    # site → ShardPlan, every site over max_site_pages
    shard_partition: dict                        # (hot site, shard) → partition
    pages: tuple[int, ...]                       # per partition
    bytes: tuple[int, ...]
    page_files: dict                             # bucket → its spill files
    error_files: tuple[str, ...]

    def shard_of(self, site: str, cell) -> int:
        plan = self.hot.get(site)
        return 0 if plan is None else plan.shard_of_cell(cell)

    def partition_of(self, site: str, shard: int, bucket: int) -> int:
        if site in self.hot:
            return self.shard_partition[(site, shard)]
        return self.bucket_partition[bucket]

    def inputs(self, partition: int) -> list[tuple[str, str, int]]:
        """(kind, path, bucket) of the spill files partition `partition` reads: its buckets', the
        buckets' of its hot-site shards, and (partition 0) the errors files."""
        buckets = {b for b, p in enumerate(self.bucket_partition) if p == partition}
        buckets |= {bucket_of(site) for (site, _), p in self.shard_partition.items() if p == partition}
        out = [("pages", path, b) for b in sorted(buckets) for path in self.page_files.get(b, ())]
        if partition == 0:
            out += [("errors", path, -1) for path in self.error_files]
        return out

    def split_sites(self) -> set[str]:
        """Hot sites whose shards are in more than one partition."""
        seen: dict[str, set] = {}
        for (site, _), p in self.shard_partition.items():
            seen.setdefault(site, set()).add(p)
        return {site for site, parts in seen.items() if len(parts) > 1}


def _pack(items: list[tuple[int, tuple, int]], partitions: int) -> tuple[list[int], dict]:
    """Largest first onto the lightest partition (ties: the lowest number): loads, item → partition."""
    loads = [0] * partitions
    heap = [(0, k) for k in range(partitions)]
    where = {}
    for size, key, _pages in sorted(items, key=lambda item: (-item[0], item[1])):
        load, k = heapq.heappop(heap)
        where[key] = k
        loads[k] = load + size
        heapq.heappush(heap, (loads[k], k))
    return loads, where


def hot_site_plans(index: SpillIndex, max_site_pages: int) -> dict:
    """The shard plan of every site over `max_site_pages`, as graph.shard_sites plans them,
    from the whole input's cells."""
    return {site: plan_shards(site, sorted(cells.items()), max_site_pages) for site, cells in index.cells.items()}


def largest_shard(index: SpillIndex, hot: dict) -> int:
    """The pages of the run's largest site shard: a site's pages, or a hot site's largest shard."""
    return max((max(hot[site].sizes) if site in hot else pages for site, (_, pages, _) in index.sites.items()),
               default=0)


def plan_partitions(index: SpillIndex, max_site_pages: int, capacity: int, hot: dict | None = None) -> PartitionPlan:
    """The fewest partitions (by packing largest first) whose spilled bytes are each within
    `capacity`, or that hold one item each when an item alone is larger. Items: a bucket's
    sites at or under `max_site_pages`, and each shard of the larger sites (`hot`:
    hot_site_plans', made here when not given)."""
    hot = hot_site_plans(index, max_site_pages) if hot is None else hot
    bucket_bytes, bucket_pages = [0] * BUCKETS, [0] * BUCKETS
    items = []
    for site, (bucket, pages, size) in index.sites.items():
        plan = hot.get(site)
        if plan is None:
            bucket_bytes[bucket] += size
            bucket_pages[bucket] += pages
            continue
        for shard, shard_pages in enumerate(plan.sizes):
            # A shard's bytes as its share of the site's pages: the index counts bytes per site.
            items.append((size * shard_pages // max(1, pages), ("shard", site, shard), shard_pages))
    items += [(bucket_bytes[b], ("bucket", b), bucket_pages[b]) for b in range(BUCKETS) if bucket_pages[b]]
    total = sum(size for size, _, _ in items)
    partitions = max(1, math.ceil(total / capacity)) if capacity else max(1, len(items))
    while True:
        loads, where = _pack(items, partitions)
        counts = [0] * partitions
        for k in where.values():
            counts[k] += 1
        if partitions >= len(items) or all(load <= capacity or counts[k] == 1 for k, load in enumerate(loads)):
            break
        partitions += 1
    pages = [0] * partitions
    for _size, key, item_pages in items:
        pages[where[key]] += item_pages
    return PartitionPlan(
        partitions=partitions,
        bucket_partition=tuple(where.get(("bucket", b), 0) for b in range(BUCKETS)),
        hot=hot,
        shard_partition={(key[1], key[2]): k for key, k in where.items() if key[0] == "shard"},
        pages=tuple(pages), bytes=tuple(loads),
        page_files=index.page_files, error_files=tuple(index.error_files))


# ------------------------------------------------------------------ a partition's pipeline

def shard_files(plan: PartitionPlan, partition: int) -> list[tuple[tuple[str, int], list[tuple[str, list[int]]]]]:
    """The site shards of a partition, each with its pages' places in the spill: ((site, shard),
    [(file, [offset, ...]), ...]), in (site, shard) order. From the pages' heads alone."""
    shards: dict[tuple[str, int], dict[str, list[int]]] = {}
    for kind, path, bucket in plan.inputs(partition):
        if kind != "pages":
            continue
        with open(path, "rb") as fh:
            for offset, site, cell in iter_heads(fh):
                shard = plan.shard_of(site, cell)
                if plan.partition_of(site, shard, bucket) == partition:
                    shards.setdefault((site, shard), {}).setdefault(path, []).append(offset)
    return [(key, sorted(files.items())) for key, files in sorted(shards.items())]


class ShardRecords:
    """A shard's packed records in the spill, read as they are iterated (`files`: [(spill file,
    [offset, ...]), ...]): what ProcessSite gets for a shard of a partition, and unpacks
    (wire.unpacked_records) one record after the other.

    The runner estimates the size of a step's first outputs by encoding them: as PageRecords
    every page of a partition's first shards was pickled again, and as a list of the packed
    records they would be held beside the pages made from them while the shard is
    processed. This pickles as its places."""

    def __init__(self, files: list):
        self.files = files

    def __iter__(self) -> Iterator[bytes]:
        for path, offsets in self.files:
            with open(path, "rb") as fh:
                for offset in offsets:
                    yield read_frame(fh, offset)

    def __len__(self) -> int:
        return sum(len(offsets) for _, offsets in self.files)


def read_shard(element):
    """((site, shard), places in the spill) → ((site, shard), its records as ShardRecords), as
    the group by shard of the one graph hands them to ProcessSite, which unpacks them."""
    key, files = element
    return key, ShardRecords(files)


def read_errors(path: str):
    """The errors rows of the read in a spill's errors file (counted when the read made them)."""
    with open(path, encoding="ascii") as fh:
        for line in fh:
            yield json.loads(line)


def partition_source(partition: int, plan: PartitionPlan, spread: bool = True):
    """build_pipeline's `source` for one partition: its site shards, each read from the spill
    by the worker that processes it, so that a partition's pages are never all in memory (the
    runner's group by shard would hold them, decoded and encoded again); only the places of
    the pages cross the shuffle that spreads the shards over the workers (`spread`; a runner
    of one worker has nothing to spread them over). The read's errors rows, from partition 0
    alone (None elsewhere: no step for nothing)."""
    shards = shard_files(plan, partition)
    errors = [path for kind, path, _ in plan.inputs(partition) if kind == "errors"]

    def source(p):
        grouped = p | "Shards" >> beam.Create(shards, reshuffle=False)
        if spread:
            grouped = grouped | "SpreadShards" >> beam.Reshuffle()
        grouped = grouped | "ReadShard" >> beam.Map(read_shard)
        error_rows = None
        if errors:
            error_rows = (p
                          | "ErrorFiles" >> beam.Create(errors, reshuffle=False)
                          | "ReadErrors" >> beam.FlatMap(read_errors))
        return grouped, error_rows
    return source


def part_name(plan: PartitionPlan, partition: int) -> str:
    """The part files' names of a partition; a run of one partition names them as the one
    graph does, so its files are the files of a run without partitions."""
    return "part" if plan.partitions == 1 else f"part-p{partition:05d}"


def partition_parts(part_files: int, plan: PartitionPlan, partition: int) -> int:
    """Part files of one partition: its share, by pages, of the run's `part_files`."""
    pages = sum(plan.pages)
    if not pages:
        return 1
    return max(1, math.ceil(part_files * plan.pages[partition] / pages))


def can_partition(config) -> bool:
    """Whether a local run of `config` can run in partitions (run.partitions asks for them).
    Exact duplicates across sites (duplicates.across_sites, off by default) join every pages
    row of the run by content hash inside the graph, which a partition's graph cannot: such a
    run is one graph."""
    return not (config.duplicates.enabled and config.duplicates.across_sites)


@dataclass
class PartitionedRun:
    """What run_partitioned did, for the summary."""
    counters: dict
    plan: PartitionPlan


def run_partitioned(new_pipeline: Callable[[], beam.Pipeline], counters_of: Callable, warc_paths: list[str],
                    staging: str, config, spill_dir: str, progress_dir: str | None = None,
                    part_files: int | None = None, workers: int = 1) -> PartitionedRun:
    """Spill into `spill_dir`, plan, run every partition into `staging`, then `finish`; the
    counters summed over the pipelines, with the hot sites' counts (which graph.shard_sites
    counts in one graph). `workers`: the local runner's, over which files and shards are
    spread when more than one. The caller removes `spill_dir` and, when this raises, `staging`
    (pipeline/cli.py does both, whatever the run's end)."""
    if not can_partition(config):
        raise ValueError("a run with duplicates.across_sites compares pages rows across all sites: "
                         "it runs as one graph, not in partitions")
    spread = workers > 1
    # What the process holds before the first pipeline (the interpreter's, Beam's and the
    # product's modules, the config) lives as long as the run: out of the cyclic collector's
    # reach, so that the collection after each partition walks only what the run made since
    # (docsites-dev's three: 0.22 → 0.015 CPU s). Given back to the collector at the end.
    gc.freeze()
    try:
        return _run_partitioned(new_pipeline, counters_of, warc_paths, staging, config, spill_dir, progress_dir,
                                part_files, spread)
    finally:
        gc.unfreeze()


def _run_partitioned(new_pipeline, counters_of, warc_paths, staging, config, spill_dir, progress_dir, part_files,
                     spread) -> PartitionedRun:
    p = new_pipeline()
    spill_pipeline(p, warc_paths, spill_dir, config, progress_dir, spread)
    result = p.run()
    result.wait_until_finish()
    counters = dict(counters_of(result))
    del p, result
    index = read_index(spill_dir, config.site.max_site_pages)
    hot = hot_site_plans(index, config.site.max_site_pages)
    largest = largest_shard(index, hot)
    capacity = partition_bytes(config.run.memory_budget_mb, largest)
    plan = plan_partitions(index, config.site.max_site_pages, capacity, hot)
    urls = SpilledUrls.write(index, spill_dir) if config.output.links else False
    del index
    for site, shards in sorted(plan.hot.items()):
        pages = sum(shards.sizes)
        counters["hot_sites"] = counters.get("hot_sites", 0) + 1
        counters["hot_site_shards"] = counters.get("hot_site_shards", 0) + shards.shards
        counters["pages_in_hot_sites"] = counters.get("pages_in_hot_sites", 0) + pages
        log.info("hot site %s: %d pages in %d shards (largest %d)", site, pages, shards.shards, max(shards.sizes))
    log.info("%d pages (%.1f MB spilled) in %d partition(s) of at most %.1f MB each (run.memory_budget_mb %d, "
             "largest site shard %d pages%s)", sum(plan.pages), sum(plan.bytes) / 1e6, plan.partitions,
             capacity / 1e6, config.run.memory_budget_mb, largest, "" if capacity else ", under the run's fixed cost")
    parts = part_files if part_files is not None else max(1, len(warc_paths))
    for k in range(plan.partitions):
        if plan.partitions > 1:
            log.info("partition %d of %d: %d pages, %.1f MB", k + 1, plan.partitions, plan.pages[k],
                     plan.bytes[k] / 1e6)
        p = new_pipeline()
        rows = os.path.join(spill_dir, "rows")
        os.makedirs(rows, exist_ok=True)
        build_pipeline(p, warc_paths, staging, config, progress_dir, partition_parts(parts, plan, k),
                       source=partition_source(k, plan, spread), part_name=part_name(plan, k),
                       link_targets=urls, row_spill=rows)
        result = p.run()
        result.wait_until_finish()
        shutil.rmtree(rows, ignore_errors=True)
        for name, value in counters_of(result).items():
            counters[name] = counters.get(name, 0) + value
        del p, result
        # The partition's objects go now, not at some later collection, so the next one starts
        # from the memory the run had before it.
        gc.collect()
    finish(staging, plan, links=config.output.links and staged_rows(staging, "pages") != sum(plan.pages))
    counters["partitions"] = plan.partitions
    return PartitionedRun(counters, plan)


# ------------------------------------------------------------------ after the last partition

def finish(staging: str, plan: PartitionPlan, links: bool = False) -> None:
    """What crosses partitions: the menus rows of hot sites split over partitions merged into
    one row per (site, menu); with `links`, every links row's target_in_input set again from
    the pages rows of all partitions (`fill_link_targets`: run_partitioned asks for it when
    some spilled page has no pages row, which the partitions' SpilledUrls counted present);
    with several partitions, every dataset's empty part files removed but its first (a run of
    one partition keeps the one graph's files: part 0 whether empty or not, and the parts with
    rows)."""
    split = plan.split_sites()
    if split:
        merge_menus(staging, split)
    if links:
        fill_link_targets(staging)
    if plan.partitions > 1:
        drop_empty_parts(staging)


def _dataset_files(staging: str, name: str) -> list[str]:
    pattern = dataset_prefix(staging, name) + "-*.parquet"
    return sorted(m.path for r in FileSystems.match([pattern]) for m in r.metadata_list)


def merge_menus(staging: str, sites: set[str]) -> None:
    """The menus rows of `sites` (each site's shards were in several partitions, each of which
    counted its own pages) as one row per (site, menu_signature): pages summed, the smallest
    example URL with its links (graph.CountMenus). They are taken out of the files they are in
    and written as one part file of their own."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from sitestrip.pipeline.graph import CountMenus
    from sitestrip.pipeline.parts import PART_KEYS, part_path, sorted_table, write_table
    from sitestrip.schemas import DATASETS

    schema = DATASETS["menus"]
    combine = CountMenus()
    merged: dict = {}
    wanted = pa.array(sorted(sites), pa.string())
    for path in _dataset_files(staging, "menus"):
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            table = pq.read_table(fh)
        mask = pc.is_in(table["site"], value_set=wanted)
        if not pc.any(mask).as_py():
            continue
        for row in table.filter(mask).to_pylist():
            key = (row["site"], row["menu_signature"])
            merged[key] = combine.merge_accumulators(
                [merged.get(key, combine.create_accumulator()), (row["pages"], row["example_url"], row["menu_links"])])
        write_table(table.filter(pc.invert(mask)), path)
    rows = [{"site": site, "menu_signature": signature, "menu_links": links, "pages": count, "example_url": url}
            for (site, signature), (count, url, links) in merged.items()]
    prefix = dataset_prefix(staging, "menus", "part-merged")
    write_table(sorted_table(rows, schema, PART_KEYS["menus"]), part_path(prefix, 0, 1))


def _url_digests(urls) -> np.ndarray:
    """16-byte BLAKE2b digests of `urls` (strings), one numpy bytes value each."""
    return np.frombuffer(url_digests(urls), dtype="S16")


def staged_rows(staging: str, name: str) -> int:
    """The rows of a dataset's staged part files, from their footers."""
    import pyarrow.parquet as pq

    total = 0
    for path in _dataset_files(staging, name):
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            total += pq.ParquetFile(fh).metadata.num_rows
    return total


def page_url_digests(staging: str) -> np.ndarray:
    """The digests of every staged pages row's url_normalized, sorted and distinct: the set a
    link target is looked up in. 16 bytes a pages row, whatever the rows' size (1.6 MB for
    100,000 pages), where the URLs themselves would take several times that as Python strings."""
    import pyarrow.parquet as pq

    found = []
    for path in _dataset_files(staging, "pages"):
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            for batch in pq.ParquetFile(fh).iter_batches(columns=["url_normalized"]):
                found.append(_url_digests(url for url in batch.column(0).to_pylist() if url is not None))
    return distinct_digests(found)


def fill_link_targets(staging: str) -> None:
    """Set target_in_input in every staged links part file: whether the link's target_url is
    the url_normalized of a pages row of any partition, as the one graph's target join sets it
    (graph.join_link_targets) over the whole run. The partitions' graphs set it from the
    spilled pages (SpilledUrls), which is this unless some spilled page has no pages row.

    A file is rewritten one row group at a time, each as a row group of its own, so its
    layout is what the partition wrote and the pass holds one row group and the digests. A
    digest is 128 bits: a target counted present by a collision with a page's URL would need
    two distinct URLs with one BLAKE2b-128 digest."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sitestrip.pipeline.parts import temporary_path, writer_options

    present = page_url_digests(staging)
    for path in _dataset_files(staging, "links"):
        temp = temporary_path(path)
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as source:
            parquet = pq.ParquetFile(source)
            schema = parquet.schema_arrow
            column = schema.get_field_index("target_in_input")
            with FileSystems.create(temp, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
                with pq.ParquetWriter(fh, schema, **writer_options(schema)) as writer:
                    for group in range(parquet.num_row_groups):
                        table = parquet.read_row_group(group)
                        found = digests_in(present, _url_digests(table.column("target_url").to_pylist()))
                        table = table.set_column(column, schema.field(column), pa.array(found, pa.bool_()))
                        writer.write_table(table, row_group_size=table.num_rows)
        FileSystems.rename([temp], [path])


def drop_empty_parts(staging: str) -> None:
    """Every dataset keeps its first part file and those with rows: each partition writes its
    part 0 even when empty (parts.WriteParts), which K partitions would leave K times."""
    import pyarrow.parquet as pq

    from sitestrip.schemas import DATASETS
    for name in DATASETS:
        files = _dataset_files(staging, name)
        empty = []
        for path in files:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
                if pq.ParquetFile(fh).metadata.num_rows == 0:
                    empty.append(path)
        if len(empty) == len(files):
            empty = empty[1:]
        if empty:
            FileSystems.delete(empty)
