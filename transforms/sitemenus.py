"""Site-level menus (SPEC §12, thesis 000 Def. 4.3.1).

A main menu is a node with two or more same-site links that is part of the site
template: it appears on other pages of the site, and "the menu is always contained in
the template" (000 §4.3.4). Page-level MenEx (SPEC §2) judges one page alone, so two
pages of one site get different "menus" (a previous/next bar here, a sidebar there).

Here each page proposes **menu roots**: MenEx's Alg. 1 roots, found among the page's
template nodes (TemEx, SPEC §6) that hold two or more links and whose anchor text is at
least `min_anchor_share` template, each scored by Alg. 2's measure (the mean weight of
its heavy descendants). A root is named by its **menu key**: the hash of its root-to-node
path of tags, ids and class tokens, the same on every page that shows the same block. The
site shard (or each template cluster, `scope: cluster`) takes the key with the largest
summed score over its pages: MenEx's weights as one signal, recurrence over the pages as
the other. Every page that has a node with that key carries that node as its menu; a page
without one keeps its own best root; a page that proposed nothing (no template link
block, or no other page of its site) keeps page-level MenEx (the fallback). Measured
choices: docs/structure.md.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from sitestrip.transforms.clusters import mix64, path_hashes
from sitestrip.transforms.menex import Menu, MenexParams, menu_scores, select_root
from sitestrip.transforms.page import F_IN_LINK, TEXT, CompactPage
from sitestrip.transforms.tree import children, subtree_sum

_CLASS_SALT = np.uint64(0x2545F4914F6CDD1D)


@dataclass(frozen=True)
class SiteMenuParams:
    enabled: bool = False    # off: every page keeps page-level MenEx (the thesis); on in default.yaml
    scope: str = "site"      # where a menu must recur: site (the shard) | cluster (SPEC §11)
    min_anchor_share: float = 0.25  # template share of a menu's anchor text, at least

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
    with np.errstate(over="ignore"):
        label = mix64(page.tag.astype(np.uint64) + np.uint64(1)) ^ mix64(page.id_hash.astype(np.uint64) ^ _CLASS_SALT)
        if page.class_hash.size:
            # xor of the mixed tokens: the order of an element's classes does not matter
            owner = np.repeat(np.arange(n), np.diff(page.class_ptr))
            classes = np.zeros(n, dtype=np.uint64)
            np.bitwise_xor.at(classes, owner, mix64(page.class_hash.astype(np.uint64) + _CLASS_SALT))
            label ^= classes
    return path_hashes(page, label)


def propose_menus(page: CompactPage, template: np.ndarray, params: MenexParams = MenexParams(),
                  min_anchor_share: float = 0.25, keys: np.ndarray | None = None,
                  scores=None) -> MenuProposal:
    """MenEx Alg. 1 roots among the template nodes holding two or more links, with Alg. 2 scores.
    `scores`: menex.menu_scores(page, params), when page-level MenEx computed them already."""
    empty = MenuProposal(np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0))
    if page.size == 0:
        return empty
    f, all_weights = menu_scores(page, params) if scores is None else scores
    # A list of links whose elements map but whose anchors differ page by page (related
    # articles, a listing) is content in the template's skeleton rather than a menu: a block
    # qualifies when at least `min_anchor_share` of its anchor text is template too. (A
    # weight scaled by that share instead was measured worse: docs/structure.md.)
    link_text = (page.tag == TEXT) & ((page.flags & F_IN_LINK) != 0)
    anchor_chars = subtree_sum(page, np.where(link_text, page.chars, 0))
    template_chars = subtree_sum(page, np.where(link_text & template, page.chars, 0))
    eligible = template & (f.hyperlinks >= 2) & (template_chars >= min_anchor_share * anchor_chars)
    weights = np.where(eligible, all_weights, 0.0)
    top = weights.max()
    if top <= 0:
        return empty
    ptr, kids = children(page)
    candidates = np.flatnonzero(weights > params.candidate_threshold * top)
    roots = sorted({select_root(page, weights, ptr, kids, int(c), params.root_threshold) for c in candidates})
    roots = [r for r in roots if eligible[r]]
    if not roots:
        return empty
    heavy = np.flatnonzero(weights > params.menu_threshold * top)
    prefix = np.concatenate(([0.0], np.cumsum(weights[heavy])))
    scores = []
    for r in roots:
        lo, hi = np.searchsorted(heavy, r + 1), np.searchsorted(heavy, page.end[r])
        scores.append((prefix[hi] - prefix[lo]) / (hi - lo) if hi > lo else weights[r])
    nodes = np.array(roots, dtype=np.int64)
    keys = node_keys(page) if keys is None else keys
    return MenuProposal(nodes, keys[nodes], np.array(scores, dtype=np.float64))


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
