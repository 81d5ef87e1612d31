"""Vectorized tree queries over a CompactPage (design §1 functions).

Everything here leans on preorder contiguity: subtree(i) = [i, end[i]).
"""
from __future__ import annotations

import os

import numpy as np

from sitestrip.transforms.page import F_IN_LINK, F_LINK, F_PRE, F_RAISED, F_SPACE_BEFORE, TAG_ID, TEXT, CompactPage
from sitestrip.transforms.text import gaps, join_text, joined, run_texts

try:
    # nearest_in_mask's forward pass, compiled with the block loops (transforms/_features.c,
    # built by `pip install`); nearest_in_mask_doubling is the reference and runs where it is missing.
    from sitestrip.transforms import _features as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
try:
    # text_of's selection and separators in one pass (transforms/_site.c text_codes);
    # _text_of_python is the reference.
    from sitestrip.transforms import _site as _site_compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _site_compiled = None
# The block loops' switch (SITESTRIP_FEATURES=python runs the references of tree, blocks and
# features alike); tests set the module flags to compare the paths.
_COMPILED = os.environ.get("SITESTRIP_FEATURES", "compiled") != "python"


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """np.unique(values) of an integer array: its distinct values, sorted. One sort and one
    comparison: on a page's few hundred values np.unique's own machinery costs several sorts."""
    if values.dtype.kind not in "iu":
        return np.unique(values)
    ordered = np.sort(values, axis=None)
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def distinct_inverse(values: np.ndarray, counts: bool = False) -> tuple:
    """np.unique(values, return_inverse=True[, return_counts=True]) of a 1-d integer array, by
    one stable argsort (see sorted_distinct)."""
    if values.dtype.kind not in "iu" or values.ndim != 1:
        return np.unique(values, return_inverse=True, return_counts=counts)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    keep = np.empty(ordered.size, dtype=bool)
    if ordered.size:
        keep[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    inverse = np.empty(ordered.size, dtype=np.intp)
    inverse[order] = np.cumsum(keep) - 1
    if not counts:
        return ordered[keep], inverse
    return ordered[keep], inverse, np.diff(np.append(np.flatnonzero(keep), ordered.size))


def subtree_sum(page: CompactPage, values: np.ndarray) -> np.ndarray:
    """For every node, the sum of `values` over its subtree (itself included)."""
    prefix = np.concatenate(([0], np.cumsum(values, dtype=np.float64 if values.dtype.kind == "f" else np.int64)))
    return prefix[page.end] - prefix[:-1]


# Subtree totals that page ConEx, MenEx, the block features and the main-content mask each
# read: computed once per page (CompactPage.derived), int64 as subtree_sum gives them.
# Compiled, one pass computes them all with conex_page's word ratio (subtree_totals); the
# subtree_sum expressions below are the reference.
def links_below(page: CompactPage) -> np.ndarray:
    """Per node, the links (F_LINK elements) in its subtree."""
    if _totals_compiled():
        return _totals(page)[0]
    return page.derived("links_below", lambda p: subtree_sum(p, (p.flags & F_LINK) != 0))


def words_below(page: CompactPage) -> np.ndarray:
    if _totals_compiled():
        return _totals(page)[1]
    return page.derived("words_below", lambda p: subtree_sum(p, p.words))


def elements_below(page: CompactPage) -> np.ndarray:
    if _totals_compiled():
        return _totals(page)[2]
    return page.derived("elements_below", lambda p: subtree_sum(p, p.tag != TEXT))


def text_nodes_below(page: CompactPage) -> np.ndarray:
    if _totals_compiled():
        return _totals(page)[3]
    return page.derived("text_nodes_below", lambda p: subtree_sum(p, p.tag == TEXT))


def outside_link_chars_below(page: CompactPage) -> np.ndarray:
    """Per node, the characters of the text nodes in its subtree that are in no link (MenEx)."""
    if _totals_compiled():
        return _totals(page)[4]
    return page.derived("outside_link_chars_below", lambda p: subtree_sum(
        p, np.where((p.tag == TEXT) & ((p.flags & F_IN_LINK) == 0), p.chars, 0)))


def word_ratio(page: CompactPage) -> np.ndarray:
    """conex_page.word_ratio, once per page."""
    if _totals_compiled():
        return _totals(page)[5]
    from sitestrip.transforms.conex_page import word_ratio_reference
    return page.derived("word_ratio", word_ratio_reference)


def _totals_compiled() -> bool:
    return _COMPILED and _compiled is not None


def _totals(page: CompactPage) -> tuple:
    return page.derived("subtree_totals", _compute_totals)


def _compute_totals(page: CompactPage) -> tuple:
    n = page.size
    totals = np.empty((5, n), dtype=np.int64)
    ratio = np.empty(n, dtype=np.float64)
    _compiled.subtree_totals(page.parent, page.tag, page.flags, page.words, page.chars,
                             F_LINK, F_IN_LINK, TAG_ID["a"], totals, ratio)
    return (*totals, ratio)


def descendants_count(page: CompactPage) -> np.ndarray:
    return page.end - np.arange(page.size, dtype=np.int32) - 1


def subtree_mask(page: CompactPage, roots) -> np.ndarray:
    """Boolean mask of the union of the subtrees of `roots`."""
    roots = np.asarray(roots, dtype=np.int64)
    if roots.size == 0:
        return np.zeros(page.size, dtype=bool)
    # +1 where a subtree opens, -1 where it ends (bincount: np.add.at's counts, faster)
    diff = np.bincount(roots, minlength=page.size + 1) - np.bincount(page.end[roots], minlength=page.size + 1)
    return np.cumsum(diff[:-1]) > 0


def mask_roots(page: CompactPage, mask: np.ndarray) -> np.ndarray:
    """Indices of the nodes of `mask` whose parent is not in it (the roots of its subtrees)."""
    idx = np.flatnonzero(mask)
    parents = page.parent[idx]
    return idx[(parents < 0) | ~mask[np.maximum(parents, 0)]]


def children(page: CompactPage):
    """Children of every node as CSR arrays (ptr, idx): children of p are idx[ptr[p]:ptr[p+1]],
    in document order. Once per page (CompactPage.derived): four stages read them."""
    return page.derived("children", _children)


def _children(page: CompactPage):
    if _COMPILED and _compiled is not None and page.size > 0 and page.parent[0] < 0:
        ptr = np.empty(page.size + 1, dtype=np.int64)
        order = np.empty(page.size - 1, dtype=np.int32)
        _compiled.children(page.parent, ptr, order)
        return ptr, order
    return _children_reference(page)


def _children_reference(page: CompactPage):
    nonroot = np.arange(1, page.size, dtype=np.int32)
    order = nonroot[np.argsort(page.parent[1:], kind="stable")]
    counts = np.bincount(page.parent[1:], minlength=page.size) if page.size > 1 else np.zeros(page.size, np.int64)
    ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return ptr, order


def text_of(page: CompactPage, mask: np.ndarray | None = None) -> str:
    """Text of the text nodes selected by `mask` (all when None), as a browser shows it
    (transforms/text.py): document order, one line per block, inline runs joined with the
    whitespace the HTML has, preformatted text verbatim."""
    if not (_COMPILED and _site_compiled is not None):
        return _text_of_python(page, mask)
    n = page.size
    idx = np.empty(n, dtype=np.int64)
    codes = np.empty(n, dtype=np.int8)
    k = _site_compiled.text_codes(
        np.ascontiguousarray(page.tag, dtype=np.int32), np.ascontiguousarray(page.flags, dtype=np.uint16),
        np.ascontiguousarray(page.line, dtype=np.int32),
        None if mask is None else np.ascontiguousarray(mask, dtype=bool), page.text,
        np.ascontiguousarray(page.text_ptr, dtype=np.int32), TEXT, F_SPACE_BEFORE | F_RAISED, F_PRE, idx, codes)
    if k == 0:
        return ""
    return joined(page, idx[:k], codes[:k], [0, k])[0]


def _text_of_python(page: CompactPage, mask: np.ndarray | None = None) -> str:
    """text_of with numpy: text.join_text of the selected text nodes, with text.gaps."""
    sel = page.tag == TEXT
    if mask is not None:
        sel &= mask
    idx = np.flatnonzero(sel)
    return join_text(page, idx, gaps(page, idx))


def subtree_text(page: CompactPage, node: int) -> str:
    """Text of subtree(node), as text_of; costs the subtree's size, not the page's."""
    lo, hi = node, int(page.end[node])
    return join_text(page, lo + np.flatnonzero(page.tag[lo:hi] == TEXT))


def subtree_texts(page: CompactPage, nodes: np.ndarray) -> list[str]:
    """[subtree_text(page, n) for n in nodes], with one vector pass over all their text nodes
    (a menu's hundreds of links cost a few numpy calls, not a few per link). Subtrees may
    nest or repeat; the cost is the text nodes of the subtree spanned by `nodes`."""
    nodes = np.asarray(nodes, dtype=np.int64)
    if nodes.size == 0:
        return []
    lo, hi = int(nodes.min()), int(page.end[nodes].max())
    text_nodes = lo + np.flatnonzero(page.tag[lo:hi] == TEXT)
    first = np.searchsorted(text_nodes, nodes)
    counts = np.searchsorted(text_nodes, page.end[nodes]) - first
    if counts.min() == 1 and counts.max() == 1:
        # Every subtree holds one text node (a menu's links, mostly): its text is that node's
        # own, with no separator to decide.
        return page.node_texts(text_nodes[first])
    # Each subtree's text nodes, one run after the other: run r starts at starts[r].
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    idx = text_nodes[np.repeat(first - starts, counts) + np.arange(int(counts.sum()))]
    return run_texts(page, idx, starts)


def words_in(page: CompactPage, mask: np.ndarray | None = None) -> int:
    w = page.words if mask is None else page.words[mask]
    return int(w.sum())


def nearest_in_mask(page: CompactPage, mask: np.ndarray, *, self_included: bool = True) -> np.ndarray:
    """For every node, its nearest ancestor (or itself, with `self_included`) in `mask`; -1 if
    none (int64). Compiled: one forward pass over the preorder parents (a node's answer is
    itself or its parent's, known by then); nearest_in_mask_doubling otherwise."""
    if self_included and _compiled is not None and _COMPILED:
        out = np.empty(page.size, dtype=np.int64)
        _compiled.nearest_in_mask(page.parent, np.ascontiguousarray(mask, dtype=bool), out)
        return out
    return nearest_in_mask_doubling(page, mask, self_included=self_included)


def nearest_in_mask_doubling(page: CompactPage, mask: np.ndarray, *, self_included: bool = True) -> np.ndarray:
    """nearest_in_mask by vector operations, the compiled pass's reference.

    Pointer doubling: each round jumps every unresolved node twice as far up
    its chain of unmarked ancestors, so the cost is O(n log depth) in vector
    operations whatever the depth.
    """
    n = page.size
    idx = np.arange(n, dtype=np.int64)
    up = page.parent.astype(np.int64)
    if self_included:
        up = np.where(mask, idx, up)
    # jump[i]: the next node to look at above i (or i itself once resolved); -1 past the root.
    jump = up.copy()
    while True:
        live = jump >= 0
        unresolved = live.copy()
        unresolved[live] = ~mask[jump[live]]
        if not unresolved.any():
            return jump
        jump[unresolved] = jump[jump[unresolved]]
