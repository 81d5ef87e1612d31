"""Candidate selection: hyperlink analysis and complete subdigraphs (design §4, thesis 2023 ch. 7).

Given a key page, pick the pages of its site that most likely share its
template: sort the key page's in-site links by link relevance (directory
distance of the URL, Def. 4.2.1/4.2.5) and, inside a relevance tier, by DOM
dispersion (Def. 4.2.4/4.2.6, Alg. 8); then walk them, "loading" each target
from the pages the site step holds, until n of them are pairwise mutually
linked (an n-CS, Alg. 9). What an archive lacks is made up by the design §4
fallback, and every result says how its candidates were chosen.

What a complete subdigraph is here (design §4.3; thesis §7.2.1 and Alg. 9 in
thesis §7.2.3; 2014 thesis Alg. 2 in its §2.2.5): a set of pages that are pairwise
mutually linked. Alg. 9 builds it from `processedLinks`, which are links *of the key
page*, and records connections only among them (`getLinks(webPage) ∩
reachableLinks`, self-links excluded), so the key page is not a member: it
links to every member by construction, and no link back to it is checked.
(Thesis §7.2 says in passing that a linked page without "any mutual link (pointing to
the key page)" is discarded; Alg. 9 does not compute that, and design §4.3 restates
Alg. 9, so the product follows the algorithm.) n counts the candidate pages, the key page
excluded: the Caltech 4-CS of thesis §7.2.3 is four linked pages other than the key
page, Table 7.7 reports 2.00 loads for size 1 ("this value also includes the
load of the key page"), and TemEx votes (v ≤ n, thesis §9.2.4) are cast by the CS
pages. So `cs_size` is the number of CS pages besides the key page, and
method "cs" means n of them.

Nothing here recurses over the DOM or enumerates subsets: DOM distances come
from preorder intervals (an ancestor's subtree is a contiguous index range),
the dispersion order is computed level by level instead of pick by pick, and
the clique search is a depth-bounded branch and bound over at most
`max_loads` pages.
"""
from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import compress
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np

from sitestrip.transforms import tree as tree_module
from sitestrip.transforms.page import CompactPage
from sitestrip.transforms.urls import normalize_url, site_key

try:
    # Alg. 8's dispersion order of a tier in one call (transforms/_features.c dispersion, built by
    # `pip install`); _dispersion is the reference. tree._COMPILED (SITESTRIP_FEATURES) is the switch.
    from sitestrip.transforms import _features as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None

__all__ = [
    "CandidateParams", "CandidateSelection", "SiteLinks", "directory_sequence", "dom_distance",
    "h_distance", "key_page_links", "link_relevance_rank", "select_candidates", "site_links", "site_sample",
    "sort_links",
]


@dataclass(frozen=True)
class CandidateParams:
    n: int = 3            # CS size: 3 for TemEx/HybEx (Table 7.7); the site-level ConEx run uses 4
    max_loads: int = 50   # stop the walk after this many loaded pages (design §4 bound)

    def __post_init__(self):
        if self.n < 1:
            raise ValueError(f"n must be at least 1, got {self.n}")
        if self.max_loads < 0:
            raise ValueError(f"max_loads must not be negative, got {self.max_loads}")


@dataclass
class SiteLinks:
    """What the per-site step knows about the site's pages present in the input.

    `outlinks` maps each page URL (normalized) to the in-site link targets of
    that page; a URL is "in the input" exactly when it is a key here. Treat it
    as read-only once built: the directory index used by the fallback is
    derived from it on first use.
    """
    outlinks: dict[str, frozenset[str]]
    site: str = ""   # site key; "" means: the key page URL's site key
    # The site's template clusters (design §11, transforms/clusters.py), None when not computed.
    clusters: object = field(default=None, compare=False, repr=False)
    # Their candidate fill (clusters.ClusterCandidates), None when short CSs are not filled from them.
    cluster_fill: object = field(default=None, compare=False, repr=False)
    # Per input page URL: (the page, positions in its link_url of key_page_links(page, site)),
    # found once by site_links for every key page's candidate search (int32s: a shard's
    # pages hold hundreds of links each).
    key_links: dict = field(default_factory=dict, compare=False, repr=False)
    _index: dict | None = field(default=None, init=False, repr=False, compare=False)
    _ranked: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def pages_by_directory(self) -> dict[tuple[str, ...], list[str]]:
        """Directory sequence -> URLs of the input pages in it, sorted."""
        if self._index is None:
            index: dict[tuple[str, ...], list[str]] = {}
            for url in sorted(self.outlinks):
                index.setdefault(directory_sequence(url), []).append(url)
            self._index = index
        return self._index


@dataclass
class CandidateSelection:
    method: str               # "cs" | "partial_cs" | "linked" | "cluster" | "site_sample" | "page_only"
    candidates: list[str]     # candidate page URLs, at most n, in the order chosen
    cs_size: int              # pages in the best complete subdigraph, key page not counted
    pages_loaded: int
    # Per candidate, where it came from: "cs" (the complete subdigraph), "linked" (a loaded page
    # the key page links to), "cluster" (the key page's template cluster, design §11), "site".
    sources: list[str] = field(default_factory=list)


# A cluster fill: (pages already chosen, how many wanted) → pages of the key page's template
# cluster, closest first, none of them already chosen (transforms/clusters.py).
ClusterFill = Callable[[set, int], list]


# ---------------------------------------------------------------------------
# Hyperlink distance (Def. 4.2.1)

@lru_cache(maxsize=1 << 14)
def _host_word(hostport: str) -> str:
    # The first word of a link is the site key, not the raw host: www.x.org
    # and x.org are one site (design "Site key"), and a page of one should not
    # look like another domain's page to the other.
    return site_key(f"http://{hostport}/") or hostport


def _host_of_normalized(url: str) -> str:
    start = url.find("//") + 2
    slash = url.find("/", start)
    return url[start:] if slash < 0 else url[start:slash]


def _site_of_normalized(url: str) -> str:
    return _host_word(_host_of_normalized(url))


# Per link of every key page (_tiers): a site's pages link to the same URLs (menus, footers).
@lru_cache(maxsize=1 << 16)
def _directories_of_normalized(url: str) -> tuple[str, ...]:
    start = url.find("//") + 2
    slash = url.find("/", start)
    if slash < 0:
        slash = len(url)
    query = url.find("?", slash)
    path = url[slash:] if query < 0 else url[slash:query]
    # "/a/b/page" -> ["", "a", "b", "page"]: the leading "" and the resource
    # name (or the "" after a final "/") are not directories.
    return (_host_word(url[start:slash]), *path.split("/")[1:-1])


@lru_cache(maxsize=1 << 16)
def directory_sequence(url: str) -> tuple[str, ...]:
    """Host (as site key) first, then the path's directories (design §4 decision).

    The last path segment names a resource and is left out unless the path
    ends in "/"; the query is ignored. A string without a scheme is read the
    way the theses write URLs ("www.bbc.com/news/", "gp/computer-science/"):
    its first word is the host. Unparseable input gives ().
    """
    if not isinstance(url, str):
        return ()
    normalized = normalize_url(url)
    first_word = url.split("/", 1)[0]
    if normalized is None and ":" not in first_word and "@" not in first_word:
        # No scheme, no port, no userinfo: a thesis-style "host/dir/" string,
        # not some other kind of URI ("mailto:x@y").
        normalized = normalize_url("http://" + url)
    if normalized is None:
        return ()
    return _directories_of_normalized(normalized)


def forget_site_urls() -> None:
    """Empty the caches keyed by URLs (directory_sequence and the directories of each key
    page's links): one site's, like urls.forget_site_urls, emptied with them as a shard begins."""
    directory_sequence.cache_clear()
    _directories_of_normalized.cache_clear()


def _h_distance(h: tuple[str, ...], h2: tuple[str, ...]) -> int:
    if h == h2:
        return 0
    if not h or not h2 or h[0] != h2[0]:
        return -len(h)
    shared, limit = 1, min(len(h), len(h2))
    while shared < limit and h[shared] == h2[shared]:
        shared += 1
    if shared == len(h):
        return len(h2) - len(h)
    # Either h extends h2, or the two diverge after the shared prefix: in both
    # cases the distance is minus what h has beyond that prefix.
    return shared - len(h)


def h_distance(h: str, h2: str) -> int:
    """hDistance(h, h2) (Def. 4.2.1 as design §4 states it); not symmetric.

    0 same directory; +k h2 is k directories below h; -k h2 is k directories
    above h, or the two diverge and h has k directories after the shared
    prefix; -|h| when the hosts differ.
    """
    return _h_distance(directory_sequence(h), directory_sequence(h2))


def link_relevance_rank(distance: int) -> tuple[int, int]:
    """Sort key of Def. 4.2.5: 0, +1, +2, ... before -1, -2, ..."""
    return (0, distance) if distance >= 0 else (1, -distance)


# ---------------------------------------------------------------------------
# DOM distance (Def. 4.2.4)

def dom_distance(page: CompactPage, a: int, b: int) -> int:
    """Nodes on the two root paths after their longest common prefix.

    That is the number of edges between a and b: 0 only for the same node.
    """
    a, b = int(a), int(b)
    size = page.size
    if not (0 <= a < size and 0 <= b < size):
        raise IndexError(f"node out of range: {a}, {b} (page has {size} nodes)")
    if a == b:
        return 0
    lo, hi = min(a, b), max(a, b)
    # The common ancestors are the nodes u <= lo whose subtree [u, end[u])
    # also holds hi; the deepest of them has the largest preorder index.
    lca = int(np.flatnonzero(page.end[:lo + 1] > hi)[-1])
    return int(page.depth[a]) + int(page.depth[b]) - 2 * int(page.depth[lca])


class _Tree:
    """Distance queries over one page, shared by all tiers of a sort."""

    _INF = 1 << 40

    def __init__(self, page: CompactPage):
        self.size = page.size
        self.parent = page.parent.astype(np.int64)
        self.end = page.end.astype(np.int64)
        self.depth = page.depth.astype(np.int64)
        self.max_depth = int(self.depth.max()) if self.size else 0
        self._lists = None
        self._parent_list = None
        self._levels = None
        # depth plus a sentinel, so that a reduceat range may end at the last node
        self._depth_ext = np.append(self.depth, 0)

    def lists(self):
        # The sweeps below step through single nodes; Python lists index an
        # order of magnitude faster than numpy scalars.
        if self._lists is None:
            self._lists = (self.parent.tolist(), self.end.tolist(), self.depth.tolist())
        return self._lists

    def levels(self):
        if self._levels is None:
            order = np.argsort(self.depth, kind="stable")
            bounds = np.searchsorted(self.depth[order], np.arange(self.max_depth + 2))
            self._levels = (order, bounds)
        return self._levels

    def ancestors(self, s: int) -> np.ndarray:
        """Root path of s, root first: entry j has depth j."""
        # only the parents as a list: the sweep, which reads all three, seldom runs
        if self._parent_list is None:
            self._parent_list = self._lists[0] if self._lists is not None else self.parent.tolist()
        parent = self._parent_list
        path = []
        while s != -1:
            path.append(s)
            s = parent[s]
        path.reverse()
        return np.array(path, dtype=np.int64)

    def _from_one(self, s: int, targets: np.ndarray) -> np.ndarray:
        anc = self.ancestors(s)
        # anc is sorted by index and its subtrees are nested, so the common
        # ancestors of s and t are a prefix of it: those starting at or before
        # t (first count) whose subtree has not ended by t (second count).
        starts_before = np.searchsorted(anc, targets, side="right")
        ends_after = np.searchsorted(-self.end[anc], -targets, side="left")
        lca_depth = np.minimum(starts_before, ends_after) - 1
        return self.depth[s] + self.depth[targets] - 2 * lca_depth

    def _from_many(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        # Multi-source distance on the tree: for t, the nearest source is
        # min over ancestors u of t of (shallowest source below u) - 2·depth(u),
        # plus depth(t). One pass up the depth levels, one pass down.
        inf = self._INF
        order, bounds = self.levels()
        below = np.full(self.size, inf, dtype=np.int64)
        below[sources] = self.depth[sources]
        for d in range(int(self.depth[sources].max()), 0, -1):
            idx = order[bounds[d]:bounds[d + 1]]
            vals = below[idx]
            live = vals < inf
            if live.any():
                np.minimum.at(below, self.parent[idx[live]], vals[live])
        reach = below - 2 * self.depth
        for d in range(1, int(self.depth[targets].max()) + 1):
            idx = order[bounds[d]:bounds[d + 1]]
            reach[idx] = np.minimum(reach[idx], reach[self.parent[idx]])
        return self.depth[targets] + reach[targets]

    def nearest(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """For each target, the DOM distance to the nearest source."""
        # Rough costs in element operations: per source, its root path plus
        # two binary searches per target; for the multi-source passes, a few
        # sweeps over the page plus a numpy call per depth level.
        per_source = int(self.depth[sources].sum()) * 20 + len(sources) * (4 * len(targets) + 2000)
        whole_tree = 8 * self.size + 4000 * (self.max_depth + 1)
        if per_source <= whole_tree:
            out = self._from_one(int(sources[0]), targets)
            for s in sources[1:].tolist():
                np.minimum(out, self._from_one(s, targets), out=out)
            return out
        return self._from_many(sources, targets)

    def surely_separated(self, level_nodes: np.ndarray, v: int) -> bool:
        """True if every two of `level_nodes` (sorted) are at least v apart.

        Only a sufficient test, but an exact one for the common bulk case (a
        long list of links, one per item). Each node has an "own branch": the
        part of its root path below the deepest ancestor-or-self whose subtree
        holds another of the nodes; two nodes are at least as far apart as
        their own branches are long together. That ancestor is the deeper of
        the lowest common ancestors with the neighbours in document order, and
        for a < b in preorder the LCA's depth is min(depth over (a, b]) - 1.
        """
        if level_nodes.size < 2:
            return True
        if np.any(level_nodes[1:] == level_nodes[:-1]):
            return v <= 0
        lca_depth = np.minimum.reduceat(self._depth_ext, level_nodes + 1)[:-1] - 1
        # Each node's deeper LCA with its neighbours: lca_depth followed, and preceded, by -1.
        padded = np.full(lca_depth.size + 2, -1, dtype=lca_depth.dtype)
        padded[1:-1] = lca_depth
        branch_top = np.maximum(padded[1:], padded[:-1])
        own = self.depth[level_nodes] - branch_top
        shortest = np.partition(own, 1)[:2]
        return int(shortest.sum()) >= v

    # Picks made one at a time (vectorized) before falling back to the sweep.
    _ROUNDS = 16

    def separated(self, nodes: np.ndarray, node_list: list[int], level: np.ndarray,
                  v: int) -> list[int]:
        """Positions of `level` (ascending) kept by the greedy rule at distance v.

        Walking `level` in document order, a position is kept when its DOM
        distance to every position kept before it is at least v. The first
        open position is always kept; a few rounds of "keep it, drop what is
        closer than v" settle the usual case where only a handful survive
        (high v), `surely_separated` the case where all survive (a long link
        list), and a sweep the rest.
        """
        kept: list[int] = []
        rest = level
        for _ in range(self._ROUNDS):
            if rest.size == 0 or self.surely_separated(nodes[rest], v):
                return kept + rest.tolist()
            first = int(rest[0])
            kept.append(first)
            rest = rest[1:]
            if rest.size:
                rest = rest[self._from_one(int(nodes[first]), nodes[rest]) >= v]
        # Every open position comes after the kept ones in document order.
        return self._sweep(node_list, kept + rest.tolist(), v, forced=len(kept))

    def _sweep(self, nodes: list[int], order: list[int], v: int, forced: int) -> list[int]:
        """Like `separated`, one preorder sweep; the first `forced` positions are kept as given.

        The stack holds the root path of the current node; each entry knows
        the shallowest kept node seen inside its subtree, and a running
        minimum of (that depth - 2·own depth) down the stack gives the
        distance to the nearest kept node, as in `_from_many`.
        """
        parent, end, depth = self.lists()
        inf = self._INF
        stack: list[int] = []
        shallowest: list[int] = []
        reach: list[int] = []
        kept = []
        for rank, pos in enumerate(order):
            x = nodes[pos]
            while stack and end[stack[-1]] <= x:
                stack.pop()
                reach.pop()
                closed = shallowest.pop()
                if stack and closed < shallowest[-1]:
                    shallowest[-1] = closed
                    above = reach[-2] if len(reach) > 1 else inf
                    reach[-1] = min(above, closed - 2 * depth[stack[-1]])
            top = stack[-1] if stack else -1
            path = []
            y = x
            while y != top:
                path.append(y)
                y = parent[y]
            carried = reach[-1] if reach else inf
            for y in reversed(path):
                stack.append(y)
                shallowest.append(inf)
                reach.append(carried)
            if rank < forced or depth[x] + reach[-1] >= v:
                kept.append(pos)
                if depth[x] < shallowest[-1]:
                    shallowest[-1] = depth[x]
                    above = reach[-2] if len(reach) > 1 else inf
                    reach[-1] = min(above, -depth[x])
        return kept


def _dispersion(tree: _Tree, nodes: np.ndarray, wanted: np.ndarray | None = None) -> Iterator[int]:
    """Positions of `nodes` (sorted: document order) in Alg. 8's within-tier order.

    Greedy max-min dispersion: first the first node in document order, then
    repeatedly the node whose distance to the nearest node already taken is
    largest, ties by document order. Taking one node at a time costs a pass
    over the tier per pick (quadratic on a page with 100,000 links), so the
    picks are made level by level: with v the current largest distance, every
    node the greedy rule takes next at distance v comes later in document
    order than the previous one (earlier nodes are already below v, and
    distances only shrink), so a single sweep in document order takes all of
    them; then the distances are updated once and v drops.

    With `wanted`, stop once every wanted position has been produced: the
    order of the rest does not matter to the caller.
    """
    m = int(nodes.size)
    if m == 0:
        return
    pending = m if wanted is None else int(np.count_nonzero(wanted))
    if pending == 0:
        return
    taken = np.zeros(m, dtype=bool)
    taken[0] = True
    yield 0
    pending -= 1 if wanted is None or wanted[0] else 0
    if pending == 0:
        return
    node_list = nodes.tolist()
    nearest = tree.nearest(nodes[:1], nodes)
    while True:
        open_nearest = np.where(taken, -1, nearest)
        v = int(open_nearest.max())
        if v < 0:
            return
        level = np.flatnonzero(open_nearest == v)
        kept = tree.separated(nodes, node_list, level, v)
        for pos in kept:
            yield pos
            pending -= 1 if wanted is None or wanted[pos] else 0
            if pending == 0:
                return
        kept_arr = np.array(kept, dtype=np.int64)
        taken[kept_arr] = True
        np.minimum(nearest, tree.nearest(nodes[kept_arr], nodes), out=nearest)


# ---------------------------------------------------------------------------
# Links of the key page and their order (Alg. 8)

def key_page_links(page: CompactPage, site: str) -> list[tuple[str, int]]:
    """(url, node) of the page's links to other pages of `site`, first occurrence each.

    link_url already holds resolved, normalized http(s) URLs without
    fragment, in document order; what is left is the site filter, the self
    link and the duplicates.
    """
    return _links_at(page, _key_link_positions(page, site))


def _key_link_positions(page: CompactPage, site: str) -> np.ndarray:
    """Positions in page.link_url of key_page_links(page, site), ascending."""
    return _key_links(page, site)[0]


def _key_links(page: CompactPage, site: str, compiled: bool | None = None) -> tuple[np.ndarray, set]:
    """(_key_link_positions, the set of their URLs). Compiled (transforms/_site.c `key_links`:
    the distinct URLs, their hosts and the site test in one pass, a host made into a str only
    when the site's name is in it, where a str per distinct URL, a set of them and a Python
    test per URL were a shard's visit of a page's links) unless SITESTRIP_FEATURES=python or
    `compiled` is False; _key_links_python is the reference."""
    if (tree_module._COMPILED if compiled is None else compiled) and tree_module._site_compiled is not None:
        positions, targets = tree_module._site_compiled.key_links(page.link_url, normalize_url(page.url) or page.url,
                                                                  site, _host_word)
        return np.array(positions, dtype=np.int32), targets
    return _key_links_python(page, site)


def _key_links_python(page: CompactPage, site: str) -> tuple[np.ndarray, set]:
    """_key_links with _link_hosts_python and a set of the site's hosts."""
    own = normalize_url(page.url) or page.url
    first, hosts = _link_hosts_python(page.link_url, own)
    # A host whose site key is `site` holds it (a normalized URL's host normalizes to itself;
    # its site key only drops a port and one "www."): the others, a news page's hundreds of
    # hosts of other sites, need no site key, whose first look-up per host normalizes a URL.
    in_site_hosts = {host for host in set(hosts) if site in host and _host_word(host) == site}
    # First positions in order of first occurrence: in document order.
    positions = np.array(list(compress(first, map(in_site_hosts.__contains__, hosts))), dtype=np.int32)
    return positions, set(map(page.link_url.__getitem__, positions.tolist()))


def _link_hosts_python(urls: Sequence[str], own: str) -> tuple[list, list]:
    """(first positions, hosts) of the distinct URLs of `urls` but `own`, in order of first
    occurrence; a host as _site_of_normalized slices it (after the first "//", up to the next
    "/"), found with a dict and a regex."""
    # Each distinct URL's first position, the dict built in C from the links read backwards:
    # a URL's first occurrence is the last one written.
    first = dict(zip(reversed(urls), range(len(urls) - 1, -1, -1)))
    first.pop(own, None)
    distinct = sorted(first, key=first.__getitem__)
    # The host of every distinct URL in one regex pass; a URL without "//" takes the slicing.
    hosts = _AUTHORITY.findall("\n".join(distinct))
    if len(hosts) != len(distinct):
        hosts = [_host_of_normalized(u) for u in distinct]
    return [first[u] for u in distinct], hosts


# Per line of joined URLs (a link URL has no newline: link_url is stored newline-separated).
_AUTHORITY = re.compile(r"^.*?//([^/\n]*)", re.M)


def _links_at(page: CompactPage, positions: np.ndarray) -> list[tuple[str, int]]:
    return list(zip(map(page.link_url.__getitem__, positions.tolist()), page.link_node[positions].tolist()))


def _tiers(page: CompactPage, links: Sequence[tuple[str, int]], of_page: bool = False) -> list[list[tuple[str, int]]]:
    """Links grouped by link relevance w.r.t. the page URL, tiers in Def. 4.2.5 order,
    each tier in document order (node index, then input position). `of_page`: every link
    URL is one of page.link_url (select_candidates's links are)."""
    size = page.size
    reference = directory_sequence(page.url)
    # The page's own link URLs are normalized already; re-normalizing 100,000
    # of them would cost more than sorting them.
    normalized = None if of_page else set(page.link_url)
    # A page's links share few directories (menus, one section's pages): each one's rank is
    # computed once.
    rank_of: dict = {}
    groups: dict[tuple[int, int], list[tuple[int, int, str]]] = {}
    for i, (url, node) in enumerate(links):
        node = int(node)
        if not 0 <= node < size:
            raise ValueError(f"link node {node} outside the page ({size} nodes)")
        dirs = _directories_of_normalized(url) if of_page or url in normalized else directory_sequence(url)
        rank = rank_of.get(dirs)
        if rank is None:
            rank = rank_of[dirs] = link_relevance_rank(_h_distance(reference, dirs))
        group = groups.get(rank)
        if group is None:
            groups[rank] = [(node, i, url)]
        else:
            group.append((node, i, url))
    return [[(url, node) for node, _, url in sorted(groups[rank])] for rank in sorted(groups)]


def sort_links(page: CompactPage, links: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Alg. 8: tiers by link relevance (0, +1, +2, ..., -1, -2, ...), each
    ordered by greedy max-min DOM distance (first: first in document order;
    ties: document order)."""
    tree = _Tree(page)
    out: list[tuple[str, int]] = []
    for tier in _tiers(page, links):
        nodes = np.array([node for _, node in tier], dtype=np.int64)
        out.extend(tier[pos] for pos in _dispersion(tree, nodes))
    return out


def _loadable_in_order(page: CompactPage, links: Sequence[tuple[str, int]],
                       loadable: set[str], of_page: bool = False) -> Iterator[str]:
    """The URLs of `links` that are in `loadable`, in sort_links order, computed lazily.

    Skipping the other links here is what the walk of Alg. 9 does anyway; not
    building the order beyond the last loadable link of a tier is what keeps
    a page with 100,000 links (most of them absent from the input) cheap.
    """
    tree = None
    for tier in _tiers(page, links, of_page):
        # Most tiers of a page with many directories hold no loadable link: skipped before
        # any array is made.
        hits = [url in loadable for url, _ in tier]
        if not any(hits):
            continue
        wanted = np.array(hits, dtype=bool)
        nodes = np.array([node for _, node in tier], dtype=np.int64)
        order, tree = _tier_order(page, nodes, wanted, tree)
        for pos in order:
            if wanted[pos]:
                yield tier[pos][0]


def _tier_order(page: CompactPage, nodes: np.ndarray, wanted: np.ndarray, tree):
    """(the dispersion order of one tier's link `nodes`, the _Tree of `page` or None): compiled
    for a tier of up to _COMPILED_DISPERSION_NODES links, else the level sweeps over `tree`,
    made here at the first tier that needs it and handed back for the page's next tiers."""
    if _dispersion_compiled() and nodes.size <= _COMPILED_DISPERSION_NODES:
        return _dispersion_order(page, nodes, wanted), tree
    if tree is None:
        tree = _Tree(page)
    return _dispersion(tree, nodes, wanted), tree


# A negative distance's sort key: past every positive one (Def. 4.2.5: 0, +1, +2, ..., -1, -2, ...).
_BEHIND = 1 << 40


def _loadable_key_links(page: CompactPage, urls: list, nodes: np.ndarray, loadable: set[str], site: str,
                        compiled: bool | None = None) -> Iterator[str]:
    """_loadable_in_order of the key links at `urls` and `nodes` (of page.link_url and
    page.link_node, distinct, every host word `site`). Compiled for a page of `site` (each link's
    distance from transforms/_site.c `link_ranks`, the tiers one stable sort of arrays: a dict
    look-up and tuples per link were most of a key page's candidate search) unless
    SITESTRIP_FEATURES=python or `compiled` is False; _loadable_in_order is the reference."""
    reference = directory_sequence(page.url)
    if not (urls and reference[:1] == (site,) and tree_module._site_compiled is not None
            and (tree_module._COMPILED if compiled is None else compiled)):
        yield from _loadable_in_order(page, list(zip(urls, nodes.tolist())), loadable, of_page=True)
        return
    size = page.size
    nodes = np.asarray(nodes, dtype=np.int64)
    outside = ((nodes < 0) | (nodes >= size)).nonzero()[0]
    if outside.size:
        raise ValueError(f"link node {int(nodes[outside[0]])} outside the page ({size} nodes)")
    hits = np.fromiter(map(loadable.__contains__, urls), dtype=bool, count=len(urls))
    if not hits.any():
        return
    distance = np.empty(nodes.size, dtype=np.int64)
    tree_module._site_compiled.link_ranks(urls, list(reference[1:]), distance)
    key = np.where(distance >= 0, distance, _BEHIND - distance)
    # Stable: equal (rank, node) keep their input order, as the reference's (node, position) sort.
    order = np.lexsort((nodes, key))
    key, nodes, hits = key[order], nodes[order], hits[order]
    starts = np.concatenate(([0], (key[1:] != key[:-1]).nonzero()[0] + 1))
    bounds = starts.tolist() + [nodes.size]
    tree = None
    # Most tiers of a page with many directories hold no loadable link: skipped unread.
    for t in np.logical_or.reduceat(hits, starts).nonzero()[0].tolist():
        a, b = bounds[t], bounds[t + 1]
        tier, wanted = nodes[a:b], hits[a:b]
        picked, tree = _tier_order(page, tier, wanted, tree)
        for pos in picked:
            if wanted[pos]:
                yield urls[order[a + pos]]


# Tiers up to this many links take the compiled dispersion (every pair's distance measured up
# the tree: quadratic in the tier); a longer one, a page of 100,000 links, the level sweeps above.
_COMPILED_DISPERSION_NODES = 1024


def _dispersion_compiled() -> bool:
    return tree_module._COMPILED and _compiled is not None


def _dispersion_order(page: CompactPage, nodes: np.ndarray, wanted: np.ndarray) -> list[int]:
    """_dispersion(_Tree(page), nodes, wanted) as a list, from transforms/_features.c."""
    out = np.empty(nodes.size, dtype=np.int64)
    k = _compiled.dispersion(np.ascontiguousarray(page.parent, dtype=np.int32),
                             np.ascontiguousarray(page.depth, dtype=np.int32), nodes,
                             np.ascontiguousarray(wanted, dtype=bool), out)
    return out[:k].tolist()


# ---------------------------------------------------------------------------
# Complete subdigraphs (Alg. 9)

def _largest_clique_with(k: int, mutual: list[int], cap: int) -> list[int]:
    """Largest set of walk positions containing k, pairwise mutually linked, at most `cap`.

    `mutual[i]` is a bitmask of the positions mutually linked with i. Every
    other CS was already examined when its last member was loaded, so only
    sets containing the newest position k are new (the thesis's "link ∈ ls").
    Depth-first over increasing positions with the size capped at `cap` and
    branches pruned when they cannot beat the best so far; the first set of
    the final size found is the lexicographically smallest one, i.e. the one
    made of the most relevant links.
    """
    target = cap - 1
    first = mutual[k] & ((1 << k) - 1)
    best: list[int] = []
    if target > 0 and first:
        stack = [([], first)]
        while stack:
            chosen, open_ = stack.pop()
            if len(chosen) > len(best):
                best = chosen
                if len(best) == target:
                    break
            if len(chosen) + open_.bit_count() <= len(best):
                continue
            children = []
            rest = open_
            while rest:
                low = rest & -rest
                v = low.bit_length() - 1
                rest ^= low
                children.append((chosen + [v], open_ & mutual[v] & ~((low << 1) - 1)))
            stack.extend(reversed(children))
    return sorted(best + [k])


def site_sample(site: SiteLinks, site_name: str, key_url: str, exclude: set[str],
                 count: int) -> list[str]:
    """Fallback (b): input pages of the site by link relevance of their URL to
    the key page URL, ties by URL."""
    if count <= 0:
        return []
    index = site.pages_by_directory()
    reference = directory_sequence(key_url)
    ranked = site._ranked.get((site_name, reference))
    if ranked is None:
        # Pages of one directory share a rank, and key pages of one directory
        # share the ranking: rank directories, once per key directory.
        groups: dict[tuple[int, int], list[tuple[str, ...]]] = {}
        for dirs in index:
            if dirs[:1] == (site_name,):
                groups.setdefault(link_relevance_rank(_h_distance(reference, dirs)), []).append(dirs)
        ranked = [groups[rank] for rank in sorted(groups)]
        if len(site._ranked) >= 4096:
            site._ranked.clear()
        site._ranked[(site_name, reference)] = ranked
    out: list[str] = []
    for tier in ranked:
        for url in heapq.merge(*(index[dirs] for dirs in tier)):
            if url == key_url or url in exclude:
                continue
            out.append(url)
            if len(out) == count:
                return out
    return out


def select_candidates(key_url: str, key_page: CompactPage, site: SiteLinks,
                      params: CandidateParams = CandidateParams(),
                      cluster_fill: ClusterFill | None = None) -> CandidateSelection:
    """Alg. 9 on the pages in the input, then the design §4 fallback.

    With a `cluster_fill` (design §11), a key page whose links load no page of the input
    (the site_sample case: pages that do not link to each other) takes pages of its
    template cluster before fallback (b)'s other site pages: method `cluster`. A page with
    linked candidates keeps fallback (a) then (b): filling those from the cluster, before
    or after (a), was measured worse on doc sites, where one template's pages cluster by
    the structure of their content (docs/structure.md).
    """
    n = params.n
    key_url = normalize_url(key_url) or key_url
    site_name = site.site or site_key(key_url) or ""
    # site_links found every input page's links already; a second capture of a URL is
    # another page, and gets its own.
    known = site.key_links.get(key_url)
    positions = known[1] if known is not None and known[0] is key_page and site_name == site.site \
        else _key_link_positions(key_page, site_name)
    urls = list(map(key_page.link_url.__getitem__, positions.tolist()))
    nodes = key_page.link_node[positions]
    if key_url in urls:         # the key links are distinct: one place
        at = urls.index(key_url)
        del urls[at]
        nodes = np.delete(nodes, at)
    linked = set(urls)
    loadable = linked & site.outlinks.keys()

    walked: list[str] = []        # loaded pages, in walk order
    mutual: list[int] = []        # bitmask over walk positions
    best: list[int] = []          # positions of the best CS so far
    if loadable and params.max_loads > 0:
        for url in _loadable_key_links(key_page, urls, nodes, loadable, site_name):
            targets = site.outlinks[url]
            k = len(walked)
            bits = 0
            for i, other in enumerate(walked):
                if other in targets and url in site.outlinks[other]:
                    bits |= 1 << i
                    mutual[i] |= 1 << k
            walked.append(url)
            mutual.append(bits)
            cs = _largest_clique_with(k, mutual, n)
            # Strictly larger only: on a tie the CS found first (built from
            # more relevant links) stays, as in Alg. 9.
            if len(cs) > len(best):
                best = cs
            if len(best) == n or len(walked) >= params.max_loads:
                break

    candidates = [walked[i] for i in best]
    # One loaded page is a "CS" of one: it is a linked page, as the method says.
    sources = ["cs" if len(best) >= 2 else "linked"] * len(candidates)
    chosen = set(candidates)

    def take(urls, source):
        for url in urls:
            if len(candidates) >= n:
                return
            if url not in chosen:
                candidates.append(url)
                sources.append(source)
                chosen.add(url)

    take(walked, "linked")                                                     # fallback (a)
    if cluster_fill is not None and not walked:
        take(cluster_fill(set(chosen), n - len(candidates)), "cluster")
    take(site_sample(site, site_name, key_url, chosen, n - len(candidates)), "site")  # (b)

    cs_size = len(best)
    if cs_size == n:
        method = "cs"
    elif cs_size >= 2:
        method = "partial_cs"
    elif any(url in linked for url in candidates):
        method = "linked"
    elif "cluster" in sources:
        method = "cluster"
    elif candidates:
        method = "site_sample"
    else:
        method = "page_only"
    return CandidateSelection(method=method, candidates=candidates, cs_size=cs_size,
                              pages_loaded=len(walked), sources=sources)


def in_site(url: str, site: str) -> bool:
    """Whether site_links counts the page at normalized `url` as a page of `site`."""
    return directory_sequence(url)[:1] == (site,)


def page_key_links(page: CompactPage, url: str, site: str) -> tuple[np.ndarray, frozenset]:
    """(positions in page.link_url of key_page_links(page, site), the page's outlinks: their
    targets but `url`) of one page of `site` at normalized `url`."""
    positions, targets = _key_links(page, site)
    targets.discard(url)
    return positions, frozenset(targets)


def site_links(pages: Mapping[str, CompactPage], site: str, key_links: Mapping | None = None) -> SiteLinks:
    """SiteLinks of the pages of `site` in `pages` (keyed by normalized URL).

    A page's outlinks are its links as the key page would see them
    (key_page_links): same site, no self link. `key_links` holds page_key_links of each
    page of the site when the caller has computed them already (in one visit per page with
    what else it needs of every page: site_step.shard_links).
    """
    outlinks: dict[str, frozenset[str]] = {}
    positions_of: dict[str, tuple] = {}
    for url in sorted(pages):
        if not in_site(url, site):
            continue
        page = pages[url]
        positions, targets = key_links[url] if key_links is not None else page_key_links(page, url, site)
        positions_of[url] = (page, positions)
        outlinks[url] = targets
    return SiteLinks(outlinks=outlinks, site=site, key_links=positions_of)
