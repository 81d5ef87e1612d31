"""Template clusters and stored representatives (design §11, seed 003 ch. 7).

A page's **signature** is the set of its root-to-leaf element paths (from BODY,
text nodes left out), an element labelled `tag#id` when it has an id (per
`path_ids`), else `tag`. Two pages share a template when their signatures share
most paths: `sim(A, B) = |A ∩ B| / max(|A|, |B|)` (Gottron's common-paths measure,
the decision for the garbled "match/2" of Alg. 4).

**Leader clustering** (Alg. 3): pages in URL order; each joins the most similar
representative with `sim > threshold` (ties: the earliest representative), or
becomes a representative itself. Representatives never change, so a page's cluster
depends only on the pages before it in URL order: the same input gives the same
clusters, and a stored set of representatives can take new pages later (the state
of incremental and streaming runs). At most `max_representatives` per site: past
that bound a page that matches nothing joins its best match and is flagged
`overflow`, so the cost per page stays bounded by the bound, never by the site.

Cost: a page is compared with the representatives only, all at once, as one
incidence-matrix product over the site's path vocabulary (numpy), never pairwise
over the site's pages.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from itertools import compress
from typing import Mapping, Sequence

import numpy as np

from sitestrip.transforms import tree
from sitestrip.transforms.candidates import SiteLinks, site_sample
from sitestrip.transforms.page import F_VOLATILE_ID, TEXT, CompactPage

try:
    # The path hashes' running sum in one pass (transforms/_features.c path_hashes, built by
    # `pip install`); path_hashes_reference runs where it is missing. tree._COMPILED
    # (SITESTRIP_FEATURES) is the switch.
    from sitestrip.transforms import _features as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
try:
    # page_signature's leaf elements in one pass (transforms/_site.c leaf_elements);
    # _leaf_elements_python is the reference.
    from sitestrip.transforms import _site as _site_compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _site_compiled = None

PATH_IDS = ("all", "stable", "none")
FILL_ORDERS = ("url", "closest", "farthest")

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_BASE = np.uint64(0x9E3779B97F4A7C15)   # odd: its powers are distinct modulo 2**64
_ID_SALT = np.uint64(0xD6E8FEB86659FD93)


@dataclass(frozen=True)
class ClusterParams:
    enabled: bool = True
    threshold: float = 0.7          # sim must exceed this (published)
    path_ids: str = "all"           # all | stable | none (published: all)
    max_representatives: int = 256  # per site (design §11 decision)
    # design §11 use (a): a short CS is filled from the key page's cluster (method "cluster");
    # off here and in configs/published.yaml (design §4's fallback), on in configs/default.yaml.
    fill_candidates: bool = False
    pool: int = 32                  # cluster pages compared with the key page per fill
    # Which of the cluster's pages first: url (link relevance of the URL, then URL, as the
    # site fallback), closest or farthest (signature similarity to the key page, among `pool`).
    fill_order: str = "url"

    def __post_init__(self):
        if not 0.0 <= self.threshold < 1.0:
            raise ValueError(f"threshold must be in [0, 1), got {self.threshold}")
        if self.path_ids not in PATH_IDS:
            raise ValueError(f"path_ids must be one of {', '.join(PATH_IDS)}, got {self.path_ids!r}")
        if self.max_representatives < 1:
            raise ValueError(f"max_representatives must be at least 1, got {self.max_representatives}")
        if self.pool < 1:
            raise ValueError(f"pool must be at least 1, got {self.pool}")
        if self.fill_order not in FILL_ORDERS:
            raise ValueError(f"fill_order must be one of {', '.join(FILL_ORDERS)}, got {self.fill_order!r}")


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: spreads every input bit over the output (wrapping uint64)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def node_labels(page: CompactPage, path_ids: str = "all") -> np.ndarray:
    """uint64 label of every node: its tag, with its id per `path_ids` (in one pass in
    transforms/_features.c; node_labels_reference the reference)."""
    if tree._COMPILED and _compiled is not None and page.id_hash.dtype == np.uint32 \
            and page.flags.dtype == np.uint16:
        out = np.empty(page.size, dtype=np.uint64)
        _compiled.cluster_labels(np.ascontiguousarray(page.tag, dtype=np.int32), np.ascontiguousarray(page.id_hash),
                                 np.ascontiguousarray(page.flags), F_VOLATILE_ID, PATH_IDS.index(path_ids), out)
        return out
    return node_labels_reference(page, path_ids)


def node_labels_reference(page: CompactPage, path_ids: str = "all") -> np.ndarray:
    """node_labels with numpy."""
    tag = page.tag.astype(np.uint64)
    ids = page.id_hash.astype(np.uint64)
    if path_ids == "none":
        ids = np.zeros_like(ids)
    elif path_ids == "stable":
        ids = np.where((page.flags & F_VOLATILE_ID) != 0, np.uint64(0), ids)
    with np.errstate(over="ignore"):
        return mix64(tag + np.uint64(1)) ^ np.where(ids != 0, mix64(ids ^ _ID_SALT), np.uint64(0))


def path_hashes(page: CompactPage, labels: np.ndarray) -> np.ndarray:
    """uint64 per node: a hash of the labels on its path from BODY (itself included); see
    path_hashes_reference."""
    return subtree_path_hashes(page.end, page.depth, labels)


def subtree_path_hashes(end: np.ndarray, depth: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """path_hashes of nodes in preorder given by their subtrees' ends and their depths (a page's,
    or a subtree's elements among themselves: sitemenus.menu_links), in one pass in
    transforms/_features.c; subtree_path_hashes_reference the reference."""
    if tree._COMPILED and _compiled is not None:
        out = np.empty(len(labels), dtype=np.uint64)
        _compiled.path_hashes(np.ascontiguousarray(end, dtype=np.int32), np.ascontiguousarray(depth, dtype=np.int32),
                              np.ascontiguousarray(labels, dtype=np.uint64), out)
        return out
    return subtree_path_hashes_reference(end, depth, labels)


def path_hashes_reference(page: CompactPage, labels: np.ndarray) -> np.ndarray:
    """path_hashes with numpy (subtree_path_hashes_reference of the page's arrays)."""
    return subtree_path_hashes_reference(page.end, page.depth, labels)


def subtree_path_hashes_reference(end: np.ndarray, depth: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """A hash of the labels on each node's path from the first node (itself included).

    The hash is Σ label(a)·B^depth(a) over the node and its ancestors (mod 2**64), mixed
    with the depth: an ancestor sum. In preorder a node's subtree is [a, end[a]), so adding
    each term at a and taking it back at end[a] leaves, in the running sum at i, exactly the
    terms of i's ancestors and i: one cumulative sum, never recursing (pages can be 100,000
    deep). Sums mod 2**64 do not depend on their order, so this is the same hash as summing
    up each root path (tests/transforms/test_clusters.py checks it against that walk)."""
    n = len(labels)
    depth = np.asarray(depth).astype(np.int64)
    with np.errstate(over="ignore"):
        powers = np.cumprod(np.full(int(depth.max()) + 1 if n else 1, _BASE, dtype=np.uint64))
        term = labels * powers[depth]
        running = np.zeros(n + 1, dtype=np.uint64)
        running[:n] = term
        np.add.at(running, np.asarray(end).astype(np.int64), np.uint64(0) - term)
        acc = np.cumsum(running[:n], dtype=np.uint64)
        return mix64(acc ^ (depth.astype(np.uint64) * _BASE))


def page_signature(page: CompactPage, path_ids: str = "all") -> np.ndarray:
    """Sorted distinct uint64 hashes of the page's root-to-leaf element paths. Compiled
    (transforms/_site.c `signature`: labels, path hashes, leaves and their sort in one call,
    where the four numpy-fed passes cost a shard's visit of each page as much as its links)
    unless SITESTRIP_FEATURES=python; page_signature_reference is the reference."""
    if page.size == 0:
        return np.zeros(0, dtype=np.uint64)
    if tree._COMPILED and _site_compiled is not None and page.id_hash.dtype == np.uint32 \
            and page.flags.dtype == np.uint16:
        out = np.empty(page.size, dtype=np.uint64)
        k = _site_compiled.signature(
            np.ascontiguousarray(page.tag, dtype=np.int32), np.ascontiguousarray(page.id_hash),
            np.ascontiguousarray(page.flags), np.ascontiguousarray(page.parent, dtype=np.int32),
            np.ascontiguousarray(page.end, dtype=np.int32), np.ascontiguousarray(page.depth, dtype=np.int32),
            TEXT, F_VOLATILE_ID, PATH_IDS.index(path_ids), out)
        return out[:k].copy()
    return page_signature_reference(page, path_ids)


def page_signature_reference(page: CompactPage, path_ids: str = "all") -> np.ndarray:
    """page_signature from node_labels, path_hashes and _leaf_elements."""
    if page.size == 0:
        return np.zeros(0, dtype=np.uint64)
    return tree.sorted_distinct(path_hashes(page, node_labels(page, path_ids))[_leaf_elements(page)])


def _leaf_elements(page: CompactPage) -> np.ndarray:
    """The elements of the page without an element child, in document order (int64)."""
    if not (tree._COMPILED and _site_compiled is not None):
        return _leaf_elements_python(page)
    out = np.empty(page.size, dtype=np.int64)
    k = _site_compiled.leaf_elements(np.ascontiguousarray(page.tag, dtype=np.int32),
                                     np.ascontiguousarray(page.parent, dtype=np.int32), TEXT, out)
    return out[:k]


def _leaf_elements_python(page: CompactPage) -> np.ndarray:
    """_leaf_elements with numpy."""
    element = page.tag != TEXT
    parent = page.parent.astype(np.int64)
    has_element_child = np.zeros(page.size, dtype=bool)
    has_element_child[parent[element & (parent >= 0)]] = True
    return np.flatnonzero(element & ~has_element_child)


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Common-paths similarity of two signatures (sorted distinct arrays)."""
    larger = max(a.size, b.size)
    if larger == 0:
        return 1.0
    return np.intersect1d(a, b, assume_unique=True).size / larger


def cluster_id(site: str, representative_url: str) -> str:
    """Stable id of a cluster: its site and the URL of its representative."""
    return hashlib.sha1(f"{site}\n{representative_url}".encode("utf-8")).hexdigest()[:16]


@dataclass
class SiteClusters:
    """The leader clustering of one site's pages (one site shard)."""
    site: str
    representatives: list[str]               # cluster number → representative URL
    cluster_of: dict[str, int]               # page URL → cluster number
    similarity: dict[str, float]             # page URL → sim to its representative (1.0 for it)
    overflow: set[str] = field(default_factory=set)
    signatures: dict = field(default_factory=dict, repr=False)   # page URL → signature
    _by_cluster: dict | None = field(default=None, init=False, repr=False, compare=False)

    def id_of(self, url: str) -> str:
        return cluster_id(self.site, self.representatives[self.cluster_of[url]])

    def members(self, number: int) -> list[str]:
        """The pages of cluster `number`, URL order (one index, built on first use)."""
        if self._by_cluster is None:
            index: dict[int, list[str]] = {}
            for u in sorted(self.cluster_of):
                index.setdefault(self.cluster_of[u], []).append(u)
            self._by_cluster = index
        return self._by_cluster.get(number, [])

    def closest_members(self, number: int) -> list[str]:
        """The cluster's pages other than its representative, most similar to it first (ties: URL)."""
        representative = self.representatives[number]
        return sorted((u for u in self.members(number) if u != representative),
                      key=lambda u: (-self.similarity[u], u))

    def cluster_pages(self, url: str) -> list[str]:
        """The other pages of `url`'s cluster, URL order."""
        own = self.cluster_of.get(url)
        if own is None:
            return []
        return [u for u in self.members(own) if u != url]


class _Representatives:
    """Representative signatures as rows of a boolean incidence matrix over the path
    vocabulary, so one page is compared with all of them in one product."""

    def __init__(self, vocabulary: np.ndarray, capacity: int):
        self.vocabulary = vocabulary
        self.matrix = np.zeros((capacity, vocabulary.size), dtype=bool)
        self.sizes = np.zeros(capacity, dtype=np.int64)
        self.count = 0

    def columns(self, signature: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.vocabulary, signature)

    def similarities(self, columns: np.ndarray) -> np.ndarray:
        k = self.count
        if k == 0:
            return np.zeros(0)
        common = self.matrix[:k, columns].sum(axis=1)
        larger = np.maximum(self.sizes[:k], columns.size)
        return np.where(larger > 0, common / np.maximum(larger, 1), 1.0)

    def add(self, columns: np.ndarray) -> None:
        self.matrix[self.count, columns] = True
        self.sizes[self.count] = columns.size
        self.count += 1


def cluster_signatures(site: str, signatures: Mapping[str, np.ndarray],
                       params: ClusterParams = ClusterParams(), seeds: Sequence[str] = ()) -> SiteClusters:
    """Alg. 3 over the pages' signatures, pages in URL order.

    `seeds` are stored representatives (design §11 use (b): the state of incremental runs):
    they are representatives first, in their order, and keep their clusters; the other
    pages follow in URL order. Compiled (transforms/_site.c leader_clusters: a merge of two
    sorted signatures per representative, where a shard of a few pages spent more on the
    incidence matrix's vocabulary and numpy calls than on comparing) unless
    SITESTRIP_FEATURES=python; _leader_python is the reference."""
    seeds = [u for u in dict.fromkeys(seeds) if u in signatures]
    urls = seeds + sorted(set(signatures) - set(seeds))
    result = SiteClusters(site=site, representatives=[], cluster_of={}, similarity={},
                          signatures=dict(signatures))
    arrays = [signatures[u] for u in urls]
    if tree._COMPILED and _site_compiled is not None and all(a.dtype == np.uint64 for a in arrays):
        n = len(urls)
        number, share, overflow = np.empty(n, dtype=np.int64), np.empty(n), np.empty(n, dtype=bool)
        count = _site_compiled.leader_clusters([np.ascontiguousarray(a) for a in arrays], float(params.threshold),
                                               params.max_representatives, number, share, overflow)
        if count >= 0:      # else a signature is not sorted and distinct: the reference counts it
            result.cluster_of = dict(zip(urls, number.tolist()))
            result.similarity = dict(zip(urls, share.tolist()))
            result.overflow = set(compress(urls, overflow.tolist()))
            # A cluster's representative is its first page: the page that opened it.
            first = {k: url for url, k in reversed(result.cluster_of.items())}
            result.representatives = [first[k] for k in range(count)]
            return result
    return _leader_python(result, urls, params)


def _leader_python(result: SiteClusters, urls: list, params: ClusterParams) -> SiteClusters:
    """cluster_signatures' clustering of `urls` (in order) into `result`, with numpy."""
    signatures = result.signatures
    vocabulary = tree.sorted_distinct(np.concatenate([signatures[u] for u in urls])) if urls \
        else np.zeros(0, dtype=np.uint64)
    reps = _Representatives(vocabulary, min(params.max_representatives, max(len(urls), 1)))
    for url in urls:
        columns = reps.columns(signatures[url])
        sims = reps.similarities(columns)
        best = int(np.argmax(sims)) if sims.size else -1   # argmax: the earliest on ties
        if best >= 0 and sims[best] > params.threshold:
            result.cluster_of[url], result.similarity[url] = best, float(sims[best])
        elif reps.count < params.max_representatives:
            result.cluster_of[url], result.similarity[url] = reps.count, 1.0
            result.representatives.append(url)
            reps.add(columns)
        else:
            result.cluster_of[url], result.similarity[url] = best, float(sims[best])
            result.overflow.add(url)
    return result


def cluster_pages(site: str, pages: Mapping[str, CompactPage],
                  params: ClusterParams = ClusterParams(), seeds: Sequence[str] = ()) -> SiteClusters:
    """Signatures and leader clustering of one site shard's pages (keyed by normalized URL),
    `seeds` (stored representatives) first."""
    return cluster_signatures(site, {url: page_signature(page, params.path_ids)
                                     for url, page in pages.items()}, params, seeds)


def by_similarity(clusters: SiteClusters, url: str, ranked: Sequence[str], pool: int = 32,
                  farthest: bool = False) -> list[str]:
    """`ranked` (the cluster's other pages, link relevance of their URL then URL) with its
    first `pool` reordered by signature similarity to `url`: most similar first, or least
    similar with `farthest`. A key page costs `pool` signature intersections whatever the
    cluster's size. Ties keep the `ranked` order."""
    own = clusters.signatures.get(url)
    head = list(ranked[:pool])
    if own is None or len(head) < 2:
        return head + list(ranked[pool:])
    sims = [similarity(own, clusters.signatures[u]) for u in head]
    sign = 1 if farthest else -1
    order = sorted(range(len(head)), key=lambda i: (sign * sims[i], i))
    return [head[i] for i in order] + list(ranked[pool:])


class ClusterCandidates:
    """The cluster fill of design §4/§11 for the key pages of one site shard.

    A key page's fill is its cluster's other pages ranked as the site fallback ranks
    site pages (link relevance of the URL, then URL), with `order` closest/farthest the
    first `pool` of them reordered by signature similarity. Each cluster keeps its own
    directory index, so ranking costs the cluster's size, not the site's.
    """

    def __init__(self, clusters: SiteClusters, pool: int = 32, order: str = "url"):
        self.clusters, self.pool, self.order = clusters, pool, order
        self._links: dict[int, SiteLinks] = {}

    def _cluster_links(self, number: int) -> SiteLinks:
        got = self._links.get(number)
        if got is None:
            outlinks = {u: frozenset() for u in self.clusters.members(number)}
            got = self._links[number] = SiteLinks(outlinks=outlinks, site=self.clusters.site)
        return got

    def fill_for(self, key_url: str):
        """The ClusterFill of `key_url` (transforms/candidates.py), or None outside any cluster."""
        number = self.clusters.cluster_of.get(key_url)
        if number is None:
            return None

        def fill(chosen: set, count: int) -> list:
            links = self._cluster_links(number)
            if self.order == "url":
                return site_sample(links, self.clusters.site, key_url, chosen, count)
            ranked = site_sample(links, self.clusters.site, key_url, chosen, max(count, self.pool))
            return by_similarity(self.clusters, key_url, ranked, self.pool, self.order == "farthest")[:count]
        return fill


def cluster_rows(clusters: SiteClusters, shard: int, page_rows: Sequence[dict], examples: int = 8,
                 run_urls: set | None = None) -> list[dict]:
    """One `sites` row per cluster of a shard (schemas SITES), from the shard's pages rows.

    A cluster's menu is the menu (pages row `menu_signature`) most of its pages carry
    (ties: the smaller signature). With `run_urls`, clusters count the run's pages only
    (stored pages of earlier runs are candidates, not pages of this run), and a cluster
    without any is left out."""
    by_url = {}
    for row in page_rows:
        by_url.setdefault(row["url_normalized"], row)
    out = []
    for number, representative in enumerate(clusters.representatives):
        members = clusters.members(number)
        if run_urls is not None:
            members = [u for u in members if u in run_urls]
            if not members:
                continue
        shown = set(members)
        closest = [u for u in clusters.closest_members(number) if u in shown][:max(examples - 1, 0)]
        shares = np.array([by_url[u]["template_share"] for u in members
                           if u in by_url and by_url[u].get("template_share") is not None], dtype=np.float64)
        menus: dict = {}
        for u in members:
            sig = (by_url.get(u) or {}).get("menu_signature")
            if sig:
                menus[sig] = menus.get(sig, 0) + 1
        menu = min(menus, key=lambda k: (-menus[k], k)) if menus else None

        def stat(fn):
            return float(fn(shares)) if shares.size else None
        out.append({
            "site": clusters.site, "shard": shard, "template_cluster": cluster_id(clusters.site, representative),
            "representative_url": representative, "example_urls": [representative] + closest,
            "pages": len(members), "overflow_pages": sum(1 for u in members if u in clusters.overflow),
            "mean_similarity": float(np.mean([clusters.similarity[u] for u in members])),
            "template_share_mean": stat(np.mean), "template_share_p50": stat(np.median),
            "template_share_min": stat(np.min), "template_share_max": stat(np.max),
            "menu_signature": menu, "menu_pages": menus.get(menu) if menu else None,
        })
    return out
