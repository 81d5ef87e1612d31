"""Hot sites: splitting a site with too many pages into shards (design "Hot sites").

The per-site step holds all pages of its shard in memory and searches
candidates among them, so a shard must never hold more than `max_site_pages`
pages. A site at or under the limit is one shard, shard 0. A larger site is
split by this rule, which depends only on the page URLs and their counts, never
on the order in which pages arrive:

1. Every page gets a *cell*: (first directory below the host, hash slot).
   The directory is the second word of `directory_sequence` ("" for pages at
   the root of the host); the slot is the top `SLOT_BITS` bits of
   zlib.crc32(url), a hash that is the same in every process and Python
   version (Python's hash() of a str is salted per process).
2. The cells are put in sorted order: directories alphabetically, then slots.
   A directory with at most `max_site_pages` pages is one indivisible unit; a
   larger directory contributes its slots as units, so only it is cut, by hash.
3. Units are packed greedily, in that order, into consecutive shards: a new
   shard starts when the next unit would push the current one over the limit,
   or when the current one has reached the site's even share
   ceil(pages / ceil(pages / limit)), which avoids a last shard of a few pages.

So pages of one first-level directory stay together unless that directory
alone is over the limit (candidates come from the same directory first,
design §4), and small directories share shards. The plan is a short list of cut
points, one per shard, cheap to hand to every worker.

What the rule cannot split: all captures of one URL are in one slot (a URL
must be looked up as its first capture), and a single slot over the limit
stays whole. With 1,024 slots that takes a directory of about a million pages
at the default limit, or more than `max_site_pages` captures of one URL.
"""
from __future__ import annotations

import zlib
from bisect import bisect_right
from dataclasses import dataclass
from typing import Iterable

from sitestrip.transforms.candidates import directory_sequence

SLOT_BITS = 10

Cell = tuple[str, int]          # (first-level directory, hash slot)


def url_slot(url: str) -> int:
    """The hash slot of a page URL: stable across processes, runs and machines."""
    return zlib.crc32(url.encode("utf-8", "surrogatepass")) >> (32 - SLOT_BITS)


def first_directory(url: str) -> str:
    """The directory right below the host ("" for a page at the root or an unparseable URL)."""
    dirs = directory_sequence(url)
    return dirs[1] if len(dirs) > 1 else ""


def page_cell(url: str) -> Cell:
    return first_directory(url), url_slot(url)


@dataclass(frozen=True)
class ShardPlan:
    """How one hot site is split: shard i holds the cells from cuts[i] up to cuts[i + 1]."""
    site: str
    cuts: tuple[Cell, ...]      # first cell of every shard after shard 0, ascending
    sizes: tuple[int, ...]      # pages per shard, as counted when the plan was made

    @property
    def shards(self) -> int:
        return len(self.sizes)

    def shard_of(self, url: str) -> int:
        return self.shard_of_cell(page_cell(url))

    def shard_of_cell(self, cell: Cell) -> int:
        """The shard of every page in `cell`: a plan cuts between cells, never inside one."""
        return bisect_right(self.cuts, cell)


def plan_shards(site: str, cell_counts: Iterable[tuple[Cell, int]], max_site_pages: int) -> ShardPlan:
    """The shard plan of a site from its pages counted per cell (the rule in the module doc)."""
    if max_site_pages < 1:
        raise ValueError(f"max_site_pages must be at least 1, got {max_site_pages}")
    by_directory: dict[str, list[tuple[int, int]]] = {}
    for (directory, slot), count in cell_counts:
        if count > 0:
            by_directory.setdefault(directory, []).append((slot, count))
    total = sum(count for slots in by_directory.values() for _, count in slots)
    if total <= max_site_pages:
        return ShardPlan(site=site, cuts=(), sizes=(total,))
    even_share = -(-total // -(-total // max_site_pages))

    units: list[tuple[Cell, int]] = []
    for directory in sorted(by_directory):
        slots = sorted(by_directory[directory])
        size = sum(count for _, count in slots)
        if size <= max_site_pages:
            # Slot 0 sorts before every page of the directory, so the cut takes it whole.
            units.append(((directory, 0), size))
        else:
            units.extend(((directory, slot), count) for slot, count in slots)

    cuts: list[Cell] = []
    sizes: list[int] = [0]
    for cell, count in units:
        current = sizes[-1]
        if current and (current + count > max_site_pages or current >= even_share):
            cuts.append(cell)
            sizes.append(0)
        sizes[-1] += count
    return ShardPlan(site=site, cuts=tuple(cuts), sizes=tuple(sizes))


def shard_urls(site: str, urls: Iterable[str], max_site_pages: int) -> dict[str, int]:
    """Shard of every URL of one site, all at once: what the pipeline computes in passes.

    For tests and for tools that hold a site's URL list; one entry per distinct
    URL, while `urls` may repeat a URL once per capture.
    """
    urls = list(urls)
    counts: dict[Cell, int] = {}
    for url in urls:
        cell = page_cell(url)
        counts[cell] = counts.get(cell, 0) + 1
    plan = plan_shards(site, counts.items(), max_site_pages)
    return {url: plan.shard_of(url) for url in urls}
