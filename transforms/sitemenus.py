"""Site-level menus (design §12, thesis 000 Def. 4.3.1).

A main menu is a node with two or more same-site links that is part of the site
template: it appears on other pages of the site, and "the menu is always contained in
the template" (000 §4.3.4). Page-level MenEx (design §2) judges one page alone, so two
pages of one site get different "menus" (a previous/next bar here, a sidebar there).

Here each page proposes **menu roots**: MenEx's Alg. 1 roots, found among the page's
template nodes (TemEx, design §6) that hold two or more links and whose anchor text is at
least `min_anchor_share` template, each scored by Alg. 2's measure (the mean weight of
its heavy descendants). A root is named by its **menu key**: the hash of its root-to-node
path of tags, ids and class tokens, the same on every page that shows the same block. The
site shard (or each template cluster, `scope: cluster`) takes the key with the largest
summed score over its pages: MenEx's weights as one signal, recurrence over the pages as
the other. Every page that has a node with that key carries that node as its menu; a page
without one keeps its own best root; a page that proposed nothing (no template link
block, or no other page of its site) keeps page-level MenEx (the fallback), or, with
`own_links`, carries the chosen block when it has one.

With `own_links` the menu row holds the chosen block's own links (own_links below): a
breadcrumb and the page's previous/up/next or related links beside a site-wide navigation
in the same block are left out, while a bar with no such navigation beside it (Texinfo's
node bar) is kept whole. Measured choices: docs/structure.md; the rule: docs/algorithms.md
("Site menus").
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from sitestrip.transforms import tree
from sitestrip.transforms.clusters import mix64, path_hashes, subtree_path_hashes
from sitestrip.transforms.menex import Menu, MenexParams, menu_scores, pick_menus, select_root
from sitestrip.transforms.page import F_IN_LINK, HINT_BIT, TEXT, CompactPage
from sitestrip.transforms.tree import children, subtree_sum, subtree_texts

try:
    # node_keys' labels in one pass (transforms/_features.c menu_labels, built by `pip install`);
    # node_keys_labels is the reference. tree._COMPILED (SITESTRIP_FEATURES) is the switch.
    from sitestrip.transforms import _features as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
try:
    # propose_menus's eligible roots and menu_links's elements in one pass each
    # (transforms/_site.c); _menu_eligible_python and _menu_elements_python are the references.
    from sitestrip.transforms import _site as _site_compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _site_compiled = None

_CLASS_SALT = np.uint64(0x2545F4914F6CDD1D)


@dataclass(frozen=True)
class SiteMenuParams:
    enabled: bool = False    # off: every page keeps page-level MenEx (the thesis); on in default.yaml
    scope: str = "site"      # where a menu must recur: site (the shard) | cluster (design §11)
    min_anchor_share: float = 0.25  # template share of a menu's anchor text, at least
    # The menu row holds the chosen block's own links: parts of it that do not recur over the
    # site (a breadcrumb, the page's previous/up/next bar) beside a site-wide part are left
    # out, and a page that proposed no root carries the chosen block when it has one
    # (own_links below). Off: every link under the chosen root, page-level MenEx on a page
    # that proposed nothing. On in default.yaml.
    own_links: bool = False

    def __post_init__(self):
        if self.scope not in ("cluster", "site"):
            raise ValueError(f"scope must be cluster or site, got {self.scope!r}")
        if not 0.0 <= self.min_anchor_share <= 1.0:
            raise ValueError(f"min_anchor_share must be between 0 and 1, got {self.min_anchor_share}")


@dataclass
class MenuProposal:
    """A page's menu roots among its template nodes: parallel node, key and score arrays."""
    nodes: np.ndarray
    keys: np.ndarray
    scores: np.ndarray


def node_keys(page: CompactPage) -> np.ndarray:
    """uint64 per node: hash of the path of (tag, id, class tokens) from BODY to the node."""
    n = page.size
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    label = _menu_labels(page)
    return path_hashes(page, node_keys_labels(page) if label is None else label)


def _menu_labels(page: CompactPage) -> np.ndarray | None:
    """node_keys' labels of every node in one pass (transforms/_features.c menu_labels; None
    where it does not run, node_keys_labels the reference)."""
    if not (tree._COMPILED and _compiled is not None and page.id_hash.dtype == np.uint32
            and page.class_hash.dtype == np.uint32):
        return None
    label = np.empty(page.size, dtype=np.uint64)
    _compiled.menu_labels(np.ascontiguousarray(page.tag, dtype=np.int32), np.ascontiguousarray(page.id_hash),
                          np.ascontiguousarray(page.class_ptr, dtype=np.int32),
                          np.ascontiguousarray(page.class_hash), label)
    return label


def node_keys_labels(page: CompactPage) -> np.ndarray:
    """node_keys' label of every node: its tag, id and class tokens (in any order)."""
    n = page.size
    with np.errstate(over="ignore"):
        label = mix64(page.tag.astype(np.uint64) + np.uint64(1)) ^ mix64(page.id_hash.astype(np.uint64) ^ _CLASS_SALT)
        if page.class_hash.size:
            # xor of the mixed tokens: the order of an element's classes does not matter
            owner = np.repeat(np.arange(n), np.diff(page.class_ptr))
            classes = np.zeros(n, dtype=np.uint64)
            np.bitwise_xor.at(classes, owner, mix64(page.class_hash.astype(np.uint64) + _CLASS_SALT))
            label ^= classes
    return label


def propose_menus(page: CompactPage, template: np.ndarray, params: MenexParams = MenexParams(),
                  min_anchor_share: float = 0.25, keys: np.ndarray | None = None,
                  scores=None) -> MenuProposal:
    """MenEx Alg. 1 roots among the template nodes holding two or more links, with Alg. 2 scores.
    `scores`: menex.menu_scores(page, params), when page-level MenEx computed them already."""
    if page.size == 0:
        return _no_proposal()
    f, all_weights = menu_scores(page, params) if scores is None else scores
    # A list of links whose elements map but whose anchors differ page by page (related
    # articles, a listing) is content in the template's skeleton rather than a menu: a block
    # qualifies when at least `min_anchor_share` of its anchor text is template too. (A
    # weight scaled by that share instead was measured worse: docs/structure.md.)
    eligible, weights = _menu_eligible(page, template, f.hyperlinks, all_weights, min_anchor_share)
    if tree._COMPILED and _compiled is not None:
        # the roots and their scores in one pass (transforms/_features.c, as detect_menu)
        k, _, roots, scores = pick_menus(page, weights, params)
        keep = eligible[roots[:k]]
        nodes = roots[:k][keep]
        if nodes.size == 0:
            return _no_proposal()
        keys = node_keys(page) if keys is None else keys
        return MenuProposal(nodes, keys[nodes], scores[:k][keep])
    top = weights.max()
    if top <= 0:
        return _no_proposal()
    ptr, kids = children(page)
    candidates = np.flatnonzero(weights > params.candidate_threshold * top)
    nodes = np.array(sorted({select_root(page, weights, ptr, kids, int(c), params.root_threshold)
                             for c in candidates}), dtype=np.int64)
    nodes = nodes[eligible[nodes]]
    if nodes.size == 0:
        return _no_proposal()
    # Alg. 2's measure of each root: the mean weight of its heavy descendants, else its own.
    heavy = np.flatnonzero(weights > params.menu_threshold * top)
    prefix = np.concatenate(([0.0], np.cumsum(weights[heavy])))
    lo, hi = np.searchsorted(heavy, nodes + 1), np.searchsorted(heavy, page.end[nodes])
    mean = (prefix[hi] - prefix[lo]) / np.maximum(hi - lo, 1)
    keys = node_keys(page) if keys is None else keys
    return MenuProposal(nodes, keys[nodes], np.where(hi > lo, mean, weights[nodes]))


def _no_proposal() -> MenuProposal:
    return MenuProposal(np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0))


def _menu_eligible(page: CompactPage, template: np.ndarray, hyperlinks: np.ndarray, weights: np.ndarray,
                   min_anchor_share: float) -> tuple[np.ndarray, np.ndarray]:
    """(eligible, weights): per node, whether it may be a menu root (see propose_menus), and its
    weight where it may, else 0.0. Compiled (transforms/_site.c), else _menu_eligible_python."""
    if not (tree._COMPILED and _site_compiled is not None):
        return _menu_eligible_python(page, template, hyperlinks, weights, min_anchor_share)
    eligible = np.empty(page.size, dtype=bool)
    out = np.empty(page.size, dtype=np.float64)
    _site_compiled.menu_eligible(
        np.ascontiguousarray(page.tag, dtype=np.int32), np.ascontiguousarray(page.flags, dtype=np.uint16),
        np.ascontiguousarray(page.chars, dtype=np.int32), np.ascontiguousarray(page.end, dtype=np.int32),
        np.ascontiguousarray(template, dtype=bool), np.ascontiguousarray(hyperlinks, dtype=np.int64),
        np.ascontiguousarray(weights, dtype=np.float64), TEXT, F_IN_LINK, float(min_anchor_share), eligible, out)
    return eligible, out


def _menu_eligible_python(page: CompactPage, template: np.ndarray, hyperlinks: np.ndarray, weights: np.ndarray,
                          min_anchor_share: float) -> tuple[np.ndarray, np.ndarray]:
    """_menu_eligible with numpy: template elements holding two or more links whose template
    anchor characters are at least `min_anchor_share` of their anchor characters."""
    link_text = (page.tag == TEXT) & ((page.flags & F_IN_LINK) != 0)
    anchor_chars = subtree_sum(page, np.where(link_text, page.chars, 0))
    template_chars = subtree_sum(page, np.where(link_text & template, page.chars, 0))
    eligible = template & (hyperlinks >= 2) & (template_chars >= min_anchor_share * anchor_chars)
    return eligible, np.where(eligible, weights, 0.0)


def choose_menu_keys(proposals: Mapping[str, MenuProposal], group_of: Mapping[str, object]) -> dict:
    """group → the menu key with the largest summed score over the group's pages (a key
    counted once per page, at its best score); ties: the smaller key."""
    totals: dict = defaultdict(lambda: defaultdict(float))
    for url in sorted(proposals):
        proposal = proposals[url]
        best: dict = {}
        for key, score in zip(proposal.keys.tolist(), proposal.scores.tolist()):
            best[key] = max(best.get(key, 0.0), score)
        group = group_of.get(url)
        for key, score in best.items():
            totals[group][key] += score
    return {group: min(scores, key=lambda k: (-scores[k], k)) for group, scores in totals.items()}


def site_menu(page: CompactPage, proposal: MenuProposal, key: int | None,
              keys: np.ndarray | None = None) -> tuple[Menu, int] | None:
    """The page's menu and its node's menu key: its node with the group's key (a proposed
    root, else any template element with that key holding two or more links), else its own
    best-scored root; None when the page proposed nothing. `keys`: the page's node_keys, when
    the caller has them (only a key none of the proposed roots has needs them: the proposal
    carries its roots' keys)."""
    if proposal.nodes.size == 0:
        return None
    if key is not None:
        hit = np.flatnonzero(proposal.keys == np.uint64(key))
        if hit.size:
            return Menu(int(proposal.nodes[hit[0]]), page), int(proposal.keys[hit[0]])
        node = menu_node_by_key(page, key, keys)
        if node is not None:
            return Menu(node, page), int(key)
    best = int(np.argmax(proposal.scores))
    return Menu(int(proposal.nodes[best]), page), int(proposal.keys[best])


def menu_node_by_key(page: CompactPage, key: int, keys: np.ndarray | None = None) -> int | None:
    """The first element of the page whose menu key is `key` and that holds two or more
    links (None when it has none). `keys`: the page's node_keys, when the caller has them."""
    keys = node_keys(page) if keys is None else keys
    hit = np.flatnonzero((keys == np.uint64(key)) & (page.tag != TEXT))
    for node in hit.tolist():
        lo = np.searchsorted(page.link_node, node)
        hi = np.searchsorted(page.link_node, page.end[node])
        if hi - lo >= 2:
            return node
    return None


# --- The menu's own links (design §12, amended: a breadcrumb and the page's own previous/up/next
# or related links are not appended to a global navigation) ------------------------------------

_PAIR_SALT = np.uint64(0x94D049BB133111EB)
_CRUMB = HINT_BIT["breadcrumb"]


@dataclass
class MenuLinks:
    """A page's site menu, read once: its root's `links` [(url, anchor text)] in document
    order, `uid` (per link, an id of its URL: equal URLs, equal ids), and its *parts*: the
    children of its root that hold links, below the elements that hold all of them in one
    child. Per part: `keys`, its path of tags, ids and classes from the root (the same part on
    another page has the same key); `lo`, `hi`, the range of its links; `crumb`, whether its id
    or a class, or those of an element holding all of its links, names a breadcrumb. `inner`:
    the keys of every element of the root's subtree that holds a link, with `inner_lo` and
    `inner_hi`, their ranges of links (what the recurrence of a part's links is counted on)."""
    links: list
    uid: np.ndarray
    keys: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    crumb: np.ndarray
    inner: np.ndarray
    inner_lo: np.ndarray
    inner_hi: np.ndarray

    def can_cut(self) -> bool:
        """Two or more parts, one of them holding two or more links."""
        return self.keys.size >= 2 and bool((self.hi - self.lo >= 2).any())


def _labels(page: CompactPage, nodes: np.ndarray) -> np.ndarray:
    """node_keys' label of `nodes`: tag, id and class tokens (in any order). Compiled, those of
    the whole page in one pass (_menu_labels), else the nodes' own with numpy."""
    every = _menu_labels(page)
    if every is not None:
        return every[nodes]
    with np.errstate(over="ignore"):
        label = mix64(page.tag[nodes].astype(np.uint64) + np.uint64(1)) \
            ^ mix64(page.id_hash[nodes].astype(np.uint64) ^ _CLASS_SALT)
        start, count = page.class_ptr[nodes].astype(np.int64), np.diff(page.class_ptr)[nodes].astype(np.int64)
        total = int(count.sum())
        if total:
            owner = np.repeat(np.arange(nodes.size), count)
            at = np.repeat(start - np.concatenate(([0], np.cumsum(count)[:-1])), count) + np.arange(total)
            classes = np.zeros(nodes.size, dtype=np.uint64)
            np.bitwise_xor.at(classes, owner, mix64(page.class_hash[at].astype(np.uint64) + _CLASS_SALT))
            label ^= classes
    return label


def menu_links(page: CompactPage, root: int, url_ids: dict) -> MenuLinks:
    """The links of the menu rooted at `root` and its parts (see MenuLinks; `url_ids`: URL →
    id, extended with the URLs seen first here)."""
    link_node = page.link_node
    l0, l1 = link_node.searchsorted(np.array((root, page.end[root]), dtype=link_node.dtype)).tolist()
    urls = page.link_url[l0:l1]
    uid = np.fromiter((url_ids.setdefault(u, len(url_ids)) for u in urls), dtype=np.int64, count=len(urls))
    if not urls:        # its <a href> lead nowhere a page is (javascript:, mailto:): no parts
        none = np.zeros(0, dtype=np.int64)
        return MenuLinks([], uid, none.astype(np.uint64), none, none, none.astype(bool),
                         none.astype(np.uint64), none, none)
    nodes, inner_lo, inner_hi, stop, depth, text_node = _menu_elements(page, root, l0, l1)
    if text_node is not None and text_node.min() >= 0:
        # Every link holds one text node (a menu's links, mostly): its text is that node's own
        # (tree.subtree_texts, with no separator to decide).
        texts = page.node_texts(text_node)
    else:
        texts = subtree_texts(page, link_node[l0:l1].astype(np.int64))
    links = list(zip(urls, texts))
    # Keys relative to the root: clusters.path_hashes' ancestor sum, over these elements alone
    # (each one's ancestors up to the root are among them; each one's subtree ends at `stop`).
    inner = _inner_keys(page, nodes, stop, depth)
    # The parts: children of the deepest element holding all the links (the root, or the last
    # one in preorder of those holding the whole range).
    whole = np.flatnonzero((inner_lo == 0) & (inner_hi == len(urls)))
    split = nodes[whole[-1]]
    parts = np.flatnonzero(page.parent[nodes] == split)
    crumb = (page.hints[nodes[parts]] & _CRUMB) != 0
    marked = np.flatnonzero((page.hints[nodes] & _CRUMB) != 0)
    if marked.size and not crumb.all():
        # An element that holds all of a part's links names the part (<nav><ol class=breadcrumb>).
        owner = np.searchsorted(nodes[parts], nodes[marked], side="right") - 1
        ok = owner >= 0
        same = ok & (inner_lo[marked] == inner_lo[parts[np.maximum(owner, 0)]]) \
            & (inner_hi[marked] == inner_hi[parts[np.maximum(owner, 0)]])
        crumb[owner[same]] = True
    return MenuLinks(links, uid, inner[parts], inner_lo[parts], inner_hi[parts], crumb,
                     inner, inner_lo, inner_hi)


def _inner_keys(page: CompactPage, nodes: np.ndarray, stop: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """subtree_path_hashes(stop, depth, _labels(page, nodes)): compiled in one pass over the
    menu's elements (transforms/_site.c menu_keys; _labels labels every node of the page to take
    a menu's few), else that expression."""
    if tree._COMPILED and _site_compiled is not None and page.id_hash.dtype == np.uint32 \
            and page.class_hash.dtype == np.uint32:
        out = np.empty(nodes.size, dtype=np.uint64)
        _site_compiled.menu_keys(np.ascontiguousarray(nodes, dtype=np.int64), np.ascontiguousarray(stop, dtype=np.int64),
                                 np.ascontiguousarray(depth, dtype=np.int64),
                                 np.ascontiguousarray(page.tag, dtype=np.int32), np.ascontiguousarray(page.id_hash),
                                 np.ascontiguousarray(page.class_ptr, dtype=np.int32),
                                 np.ascontiguousarray(page.class_hash), out)
        return out
    return subtree_path_hashes(stop, depth, _labels(page, nodes))


def _menu_elements(page: CompactPage, root: int, l0: int, l1: int) -> tuple:
    """(nodes, first, past, stop, depth, text_node) of the menu rooted at `root`, whose links are
    page.link_node[l0:l1]: the elements of its subtree that hold links (closed under ancestors,
    up to the root), in preorder, with the range [first, past) of the links each holds, the
    number of them before each one's subtree ends, and their depths below the root; and per
    link its one text node (-1: none or more), None where _menu_elements_python runs."""
    if not (tree._COMPILED and _site_compiled is not None):
        return _menu_elements_python(page, root, l0, l1)
    out = np.empty((5, int(page.end[root]) - root), dtype=np.int64)
    text_node = np.empty(l1 - l0, dtype=np.int64)
    k = _site_compiled.menu_elements(
        np.ascontiguousarray(page.link_node, dtype=np.int32), l0, l1, root,
        np.ascontiguousarray(page.end, dtype=np.int32), np.ascontiguousarray(page.tag, dtype=np.int32),
        np.ascontiguousarray(page.depth, dtype=np.int32), TEXT, *out, text_node)
    # Copied out of the subtree-sized buffer: a shard's MenuLinks keep their ranges until its
    # menus' own links are decided, and a menu's root may be the whole page.
    nodes, first, past, stop, depth = out[:, :k].copy()
    return nodes, first, past, stop, depth, text_node


def _menu_elements_python(page: CompactPage, root: int, l0: int, l1: int) -> tuple:
    """_menu_elements with numpy (text_node None): a prefix count of the links in preorder."""
    link_nodes = page.link_node[l0:l1].astype(np.int64)
    lo, hi = root, int(page.end[root])
    prefix = np.zeros(hi - lo + 1, dtype=np.int64)
    prefix[link_nodes - lo + 1] = 1
    prefix = np.cumsum(prefix)
    end = page.end[lo:hi].astype(np.int64) - lo
    first, past = prefix[:-1], prefix[end]
    local = np.flatnonzero((past > first) & (page.tag[lo:hi] != TEXT))
    depth = page.depth[local + lo].astype(np.int64) - int(page.depth[root])
    return local + lo, first[local], past[local], np.searchsorted(local, end[local]), depth, None


def _pair_hash(keys: np.ndarray, uids: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return keys ^ mix64(uids.astype(np.uint64) + _PAIR_SALT)


def _ranges(lo: np.ndarray, hi: np.ndarray) -> tuple:
    """(owner, index) of every position in the ranges [lo, hi), range after range."""
    count = hi - lo
    total = int(count.sum())
    owner = np.repeat(np.arange(count.size), count)
    return owner, np.repeat(lo - np.concatenate(([0], np.cumsum(count)[:-1])), count) + np.arange(total)


def _held(keys: np.ndarray, lo: np.ndarray, hi: np.ndarray, uid: np.ndarray) -> np.ndarray:
    """Pair hashes of (key, URL id) for every link in every range [lo, hi), one per element."""
    owner, at = _ranges(lo, hi)
    return _pair_hash(keys[owner], uid[at])


def own_links(menus: list) -> list:
    """Per menu of one block (one menu key on the `len(menus)` pages of a group): the indexes
    of its own links, or None when all of its links are its own.

    A link is *site-wide* in a part of the menu when the part with that key (its path from the
    menu's root) holds it on more than half of the pages, and a part is site-wide when more
    than half of its distinct links are. Parts that are not (the page's own previous/up/next
    bar, a related list) and parts that name themselves a breadcrumb (its first links, home
    and section, recur) are the menu's *neighbours*. When a menu has neighbours beside a
    site-wide part of two or more distinct links (a global navigation), its own links are
    those of its other parts. A menu with no such part (a Texinfo or DocBook previous/up/next
    bar, a Sphinx related bar: single links in one line or list, some of them changing page by
    page) is kept whole: that bar is the site's navigation. One page alone cuts nothing."""
    n_pages = len(menus)
    out = [None] * n_pages
    candidates = [p for p, m in enumerate(menus) if m.can_cut()] if n_pages >= 2 else []
    if not candidates:
        return out
    # Recurrence, counted for the keys of the candidates' parts only: on each page, every
    # element with one of those keys and the URLs it holds, a page counted once per pair.
    wanted = tree.sorted_distinct(np.concatenate([menus[p].keys for p in candidates]))
    per_page = []
    for m in menus:
        take = np.flatnonzero(np.isin(m.inner, wanted))
        per_page.append(tree.sorted_distinct(_held(m.inner[take], m.inner_lo[take], m.inner_hi[take], m.uid)))
    seen, _, counts = tree.distinct_inverse(np.concatenate(per_page), counts=True)
    for p in candidates:
        m = menus[p]
        owner, at = _ranges(m.lo, m.hi)
        # Each part's distinct links (a URL twice in one part counts once), the site-wide ones
        # among them: every hash of a page is in `seen`.
        first = np.unique(owner * (int(m.uid.max()) + 1) + m.uid[at], return_index=True)[1]
        owner, at = owner[first], at[first]
        sitewide = 2 * counts[np.searchsorted(seen, _pair_hash(m.keys[owner], m.uid[at]))] > n_pages
        distinct = np.bincount(owner, minlength=m.keys.size)
        common = np.bincount(owner, weights=sitewide, minlength=m.keys.size)
        own = (2 * common > distinct) & ~m.crumb
        if own.all() or not (own & (distinct >= 2)).any():
            continue
        out[p] = _ranges(m.lo[own], m.hi[own])[1]          # their links, in document order
    return out
