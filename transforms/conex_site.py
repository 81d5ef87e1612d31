"""Site-level content extraction: ConEx with ETDM (thesis ch. 10), design §7."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from sitestrip.transforms.etdm import EtdmParams
from sitestrip.transforms.page import MEDIA_TAGS, TEXT, CompactPage
from sitestrip.transforms.template import occurrences
from sitestrip.transforms.tree import mask_roots, subtree_mask, subtree_sum

SITE_CONEX_ETDM = EtdmParams(w_classes=0.1, w_position=0.0, w_attributes=0.2, w_children=0.7,
                             threshold=0.9, position_option=4)


@dataclass(frozen=True)
class SiteConexParams:
    variant: str = "text_aware"   # "published" (occurrences = 0 only) or "text_aware" (design §7 decision)
    branch: str = "words"         # Alg. 13 measure: "nodes" (published: largest parent subtree)
                                  # or "words" (parent whose candidate roots hold the most words)
    merge: str = "content"        # Alg. 15: "always" (published) or "content" (never into a
                                  # parent that holds matched content, i.e. template text)


def content_leaves(key: CompactPage) -> np.ndarray:
    """Leaves that carry content: text nodes and media elements (bool mask)."""
    leaf = key.child_count == 0
    return leaf & ((key.tag == TEXT) | np.isin(key.tag, MEDIA_TAGS))


def candidate_nodes(key: CompactPage, occ: np.ndarray, variant: str) -> np.ndarray:
    """Key-page nodes found in no candidate page (bool mask).

    The text-aware variant also takes a node whose content leaves (text or
    media) are all unmatched: two articles with one layout map element by
    element, so the article body itself always has occurrences > 0, while
    its paragraphs' texts differ.
    """
    candidates = occ == 0
    if variant == "text_aware":
        content = content_leaves(key)
        candidates |= (subtree_sum(key, content) > 0) & (subtree_sum(key, content & (occ > 0)) == 0)
    return candidates


def reduce_candidates(key: CompactPage, candidates: np.ndarray) -> list[int]:
    """Alg. 12: the roots of the candidate subtrees (candidates whose parent is not one)."""
    return mask_roots(key, candidates).tolist()


def main_branch(key: CompactPage, roots: list[int], measure: str = "nodes") -> int:
    """Alg. 13: the parent of a root that heads the main-content branch.

    "nodes" is the published measure, the parent with the largest subtree.
    Measured on the news corpora it picks a site's navigation block whenever
    one differing menu entry makes a root there (menus are large subtrees);
    "words" takes the parent whose candidate roots hold the most words.
    Ties: first in document order.
    """
    score: dict = {}
    for r in roots:
        parent = int(key.parent[r])
        node = parent if parent >= 0 else r
        if measure == "words":
            score[node] = score.get(node, 0) + int(key.words[r:key.end[r]].sum())
        else:
            score[node] = int(key.end[node] - node)
    best, best_score = -1, -1
    for node in sorted(score):
        if score[node] > best_score:
            best, best_score = node, score[node]
    return best


def merge_siblings(key: CompactPage, roots: list[int], blocked: np.ndarray | None = None) -> list[int]:
    """Alg. 15: two or more roots sharing a parent become that parent, until none do.

    `blocked` (bool per node) marks parents that must not absorb their
    children: the "merge" variant passes the parents holding template content.
    """
    current = sorted(set(roots))
    while True:
        parents = key.parent[np.array(current, dtype=np.int64)]
        values, counts = np.unique(parents[parents >= 0], return_counts=True)
        shared = set(values[counts >= 2].tolist())
        if blocked is not None:
            shared = {p for p in shared if not blocked[p]}
        if not shared:
            return current
        merged = sorted({int(p) if int(p) in shared else r for r, p in zip(current, parents.tolist())})
        # A new parent may hold another root deeper down: keep the outermost only.
        current, covered_to = [], -1
        for r in merged:
            if r >= covered_to:
                current.append(r)
                covered_to = int(key.end[r])


def site_main_content(key: CompactPage, others: list, etdm: EtdmParams = SITE_CONEX_ETDM,
                      params: SiteConexParams = SiteConexParams(), check=None) -> tuple[np.ndarray, float]:
    """(main-content node mask, ETDM CPU ms) of the key page against its candidate pages.

    The mask is empty when the page maps entirely onto its candidates.
    """
    start = time.thread_time()
    occ = occurrences(key, others, etdm, check=check)
    etdm_ms = (time.thread_time() - start) * 1000.0
    roots = reduce_candidates(key, candidate_nodes(key, occ, params.variant))
    if len(roots) > 1:
        branch = main_branch(key, roots, params.branch)
        # Alg. 14: keep the roots inside the branch.
        roots = [r for r in roots if branch <= r < key.end[branch]]
        blocked = None
        if params.merge == "content":
            # Merging siblings into their parent is meant to pick up what lies
            # between them (images, spacing), not template text: on flat pages
            # (paragraphs directly under BODY) the parent is the whole page.
            blocked = subtree_sum(key, content_leaves(key) & (occ > 0)) > 0
        roots = merge_siblings(key, roots, blocked)
    return subtree_mask(key, roots), etdm_ms
