"""Page-level menu detection: MenEx (design §2, thesis ch. 5)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sitestrip.transforms import tree
from sitestrip.transforms.page import NAV_RULE_FLAGS, TAG_ID, TEXT, CompactPage
from sitestrip.transforms.tree import (children, descendants_count, links_below, outside_link_chars_below,
                                      subtree_text, subtree_texts)

try:
    # menu_scores's per-node arithmetic, compiled with the block loops (transforms/_features.c);
    # tree._COMPILED (SITESTRIP_FEATURES) is the switch.
    from sitestrip.transforms import _features as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None


@dataclass(frozen=True)
class MenexParams:
    w_amplitude: float = 0.30
    w_link: float = 0.05
    w_text: float = 0.10
    w_ul: float = 0.15
    w_representative: float = 0.15
    w_position: float = 0.25
    candidate_threshold: float = 0.85   # candidates: weight > this · max weight
    root_threshold: float = 0.90        # Alg. 1 t
    menu_threshold: float = 0.85        # Alg. 2, relative to the max weight (design §2 decision)
    # Representative tag (transforms/page.py F_NAV_*): "exact" (the thesis: <nav>, a class
    # or the id nav/menu), "word_part" (design §2) or "prefix" (the product: a word part
    # beginning with nav/menu, e.g. "navbar", "navigation").
    representative: str = "prefix"


class Menu:
    """A page's menu: its node (preorder index), and what the rows read of it, from the page
    when first asked: `links`, [(absolute url, anchor text)] in document order, and `text`.
    Every page's menu node is a block feature, but a page whose menu the site-level menus
    (design §12) replace never needs its page-level menu's links."""
    __slots__ = ("node", "_page", "_links", "_text")

    def __init__(self, node: int, page: CompactPage):
        self.node, self._page, self._links, self._text = node, page, None, None

    @property
    def links(self) -> list:
        if self._links is None:
            self._links = links_in(self._page, self.node)
        return self._links

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = subtree_text(self._page, self.node)
        return self._text

    def __repr__(self) -> str:
        return f"Menu(node={self.node})"


@dataclass
class MenuFeatures:
    """The six properties of Def. 5.2.1 for every node (0 where not rated)."""
    rated: np.ndarray
    amplitude: np.ndarray
    link: np.ndarray
    text: np.ndarray
    ul: np.ndarray
    representative: np.ndarray
    position: np.ndarray
    hyperlinks: np.ndarray     # <a href> count in the subtree


def menu_features(page: CompactPage, representative: str = "prefix") -> MenuFeatures:
    n = page.size
    idx = np.arange(n, dtype=np.float64)
    rated = (page.tag != TEXT) & (page.child_count > 0)
    cc = np.where(rated, page.child_count, 1).astype(np.float64)
    amplitude = np.where(rated, 1.0 - 1.0 / cc, 0.0)

    hyperlinks = links_below(page)
    desc = np.maximum(descendants_count(page), 1).astype(np.float64)
    link = np.where(rated & (hyperlinks >= 2), (hyperlinks + desc) / (2.0 * desc), 0.0)

    chars = outside_link_chars_below(page)
    total = float(chars[0]) if n else 0.0
    if total > 0:
        text = np.clip(1.0 - chars / np.sqrt(total), 0.0, 1.0)
    else:
        text = np.ones(n)
    text = np.where(rated, text, 0.0)

    ul = (rated & (page.tag == TAG_ID["ul"])).astype(np.float64)
    representative = (rated & ((page.flags & NAV_RULE_FLAGS[representative]) != 0)).astype(np.float64)
    position = np.where(rated, 1.0 - idx / max(n, 1), 0.0)
    return MenuFeatures(rated, amplitude, link, text, ul, representative, position, hyperlinks)


def menu_weights(page: CompactPage, params: MenexParams = MenexParams(),
                 features: MenuFeatures | None = None) -> np.ndarray:
    """Weight of every node; 0 for nodes that are not rated (leaves, text). `features`:
    menu_features(page, params.representative), when the caller has them already."""
    f = menu_features(page, params.representative) if features is None else features
    w = (params.w_amplitude * f.amplitude + params.w_link * f.link + params.w_text * f.text
         + params.w_ul * f.ul + params.w_representative * f.representative
         + params.w_position * f.position)
    return np.where(f.rated, w, 0.0)


def select_root(page: CompactPage, weights: np.ndarray, ptr, kids, candidate: int, t: float) -> int:
    """Alg. 1: climb while more than half of the parent's children weigh > t · candidate weight."""
    menu_node = current = candidate
    base = weights[candidate] * t
    while page.parent[current] >= 0:
        parent = int(page.parent[current])
        siblings = kids[ptr[parent]:ptr[parent + 1]]
        heavy = int(np.count_nonzero(weights[siblings] > base))
        if 2 * heavy <= siblings.size:
            break
        current = parent
        if siblings.size > 1:
            menu_node = parent
    return menu_node


def select_menu(page: CompactPage, weights: np.ndarray, roots: list[int], threshold: float) -> int:
    """Alg. 2 as design §2 decides: best average weight of heavy descendants; else the heaviest root."""
    heavy = np.flatnonzero(weights > threshold)
    heavy_prefix = np.concatenate(([0.0], np.cumsum(weights[heavy])))
    nodes = np.asarray(roots, dtype=np.int64)            # roots are in document order
    lo = np.searchsorted(heavy, nodes + 1)
    hi = np.searchsorted(heavy, page.end[nodes])
    has = hi > lo
    if has.any():
        avg = np.full(nodes.size, -np.inf)
        avg[has] = (heavy_prefix[hi[has]] - heavy_prefix[lo[has]]) / (hi[has] - lo[has])
        # the first root of the best average (a later one must beat it)
        return int(nodes[int(np.argmax(avg))])
    return max(roots, key=lambda r: (weights[r], -r))


def menu_scores(page: CompactPage, params: MenexParams = MenexParams()) -> tuple[MenuFeatures, np.ndarray]:
    """(features, weights) of every node: what detect_menu and the site-menu proposal
    (transforms/sitemenus.py) both start from, computed once per page. Compiled, one pass
    (transforms/_features.c); menu_features and menu_weights are the reference."""
    if tree._COMPILED and _compiled is not None:
        return _menu_scores_compiled(page, params)
    f = menu_features(page, params.representative)
    return f, menu_weights(page, params, f)


def _menu_scores_compiled(page: CompactPage, params: MenexParams) -> tuple[MenuFeatures, np.ndarray]:
    n = page.size
    hyperlinks = links_below(page)
    rated = np.empty(n, dtype=bool)
    out = np.empty((7, n), dtype=np.float64)
    w = np.array([params.w_amplitude, params.w_link, params.w_text, params.w_ul, params.w_representative,
                  params.w_position], dtype=np.float64)
    _compiled.menu_scores(page.tag, page.child_count, page.flags, page.end, hyperlinks,
                          outside_link_chars_below(page), TAG_ID["ul"], NAV_RULE_FLAGS[params.representative],
                          w, rated, out)
    amplitude, link, text, ul, representative, position, weights = out
    return MenuFeatures(rated, amplitude, link, text, ul, representative, position, hyperlinks), weights


def detect_menu(page: CompactPage, params: MenexParams = MenexParams(),
                scores: tuple[MenuFeatures, np.ndarray] | None = None) -> Menu | None:
    """The page's main menu, or None when no node holds two or more links. `scores`:
    menu_scores(page, params), when the caller has them already."""
    if page.size == 0:
        return None
    # The link count of a subtree does not depend on the representative-tag rule.
    f, weights = menu_scores(page, params) if scores is None else scores
    if f.hyperlinks[0] < 2:
        return None
    if tree._COMPILED and _compiled is not None:
        k, node, _, _ = pick_menus(page, weights, params)
        return Menu(node, page) if k else None
    top = weights.max()
    if top <= 0:
        return None
    candidates = np.flatnonzero(weights > params.candidate_threshold * top)
    ptr, kids = children(page)
    roots = sorted({select_root(page, weights, ptr, kids, int(c), params.root_threshold) for c in candidates})
    node = select_menu(page, weights, roots, params.menu_threshold * top)
    return Menu(node, page)


def pick_menus(page: CompactPage, weights: np.ndarray, params: MenexParams) -> tuple:
    """(k, node, roots, scores) from transforms/_features.c menu_pick: Alg. 1's roots of the
    candidates of `weights`, distinct in document order (roots[:k]), Alg. 2's score of each
    (scores[:k]: the mean weight of its heavy descendants, else its own weight) and
    select_menu's node; k = 0 when no weight is above 0. Compiled only (detect_menu and
    sitemenus.propose_menus take select_root and select_menu otherwise)."""
    ptr, kids = children(page)
    n = page.size
    roots = np.empty(n, dtype=np.int64)
    scores = np.empty(n, dtype=np.float64)
    k, node = _compiled.menu_pick(page.parent, ptr, kids, page.end, np.ascontiguousarray(weights, dtype=np.float64),
                                  params.candidate_threshold, params.root_threshold, params.menu_threshold,
                                  roots, scores)
    return k, node, roots, scores


def links_in(page: CompactPage, node: int) -> list:
    """(url, anchor text) of the links in subtree(node), document order."""
    lo = int(np.searchsorted(page.link_node, node))
    hi = int(np.searchsorted(page.link_node, page.end[node]))
    return list(zip(page.link_url[lo:hi], subtree_texts(page, page.link_node[lo:hi])))
