"""Page-level content extraction: ConEx (design §3, thesis ch. 6)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from sitestrip.transforms import tree
from sitestrip.transforms.page import KNOWN_TAGS, TAG_ID, TEXT, CompactPage, has_tag, tag_id, tag_table
from sitestrip.transforms.tree import (children, distinct_inverse, elements_below, links_below, sorted_distinct,
                                      subtree_mask, text_nodes_below, word_ratio, words_below)

try:
    # main_content_and_features's steps in one call, compiled with the block loops
    # (transforms/_features.c page_conex); tree._COMPILED (SITESTRIP_FEATURES) is the switch, and
    # the numpy functions below are the reference.
    from sitestrip.transforms import _features as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None

# Tags that are never rated (thesis §6.2.2 ii plus design §3's inline additions).
# One list, configurable through PageConexParams.
DEFAULT_EXCLUDED_TAGS = (
    "a", "body", "br", "em", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr",
    "iframe", "nav", "span", "script", "footer", "form", "button", "label", "select",
    "option", "strong", "b", "i", "small", "code",
)


@dataclass(frozen=True)
class PageConexParams:
    c: int = 3                 # size of the c-SET
    max_words: int = 3         # Alg. 7 mw
    excluded_tags: tuple = DEFAULT_EXCLUDED_TAGS


@dataclass
class ContentFeatures:
    """The four ratios of Def. 6.2.1 for every node (meaningful where rated)."""
    rated: np.ndarray
    word: np.ndarray
    hyperlink: np.ndarray
    children: np.ndarray
    position: np.ndarray

    def matrix(self) -> np.ndarray:
        return np.stack([self.word, self.hyperlink, self.children, self.position], axis=1)


def _excluded_mask(page: CompactPage, excluded_tags) -> np.ndarray:
    table, unknown = _excluded_table(tuple(excluded_tags))
    mask = has_tag(page.tag, table)
    # Unknown tags' ids lie past the table (has_tag clips them to its False entry); only a
    # page holding one needs the search among the unknown excluded ids ("script", which the
    # parse drops, is one of them in the default list).
    if unknown.size and page.size and int(page.tag.max()) >= len(KNOWN_TAGS):
        mask |= np.isin(page.tag, unknown)
    return mask


@lru_cache(maxsize=64)
def _excluded_table(excluded_tags: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(the tag table of the known tags of `excluded_tags`, the ids of the others, which only
    tag_id knows): one lookup per node instead of np.isin's sort."""
    table = tag_table(*(t for t in excluded_tags if t in TAG_ID and t != "#text"))
    table[TAG_ID["#text"]] = "#text" in excluded_tags
    unknown = sorted({tag_id(t) for t in excluded_tags if t not in TAG_ID})
    return table, np.array(unknown, dtype=np.int32)


def word_ratio_reference(page: CompactPage) -> np.ndarray:
    """Σ over text leaves k below n, whose parent is not <a>, of words(k)/distance(k, n).

    Walks up from all text leaves one level per step, so the cost is the sum
    of the leaves' depths in vector operations and the loop count is the
    page depth: no recursion, no per-node Python work. The reference of the compiled
    pass (tree.word_ratio, which the stages call).
    """
    n = page.size
    out = np.zeros(n)
    leaves = np.flatnonzero(page.tag == TEXT)
    if leaves.size:
        parents = page.parent[leaves]
        keep = (page.tag[parents] != TAG_ID["a"]) & (page.words[leaves] > 0)
        leaves = leaves[keep]
    words = page.words[leaves].astype(np.float64)
    current = page.parent[leaves]
    distance = 1
    while current.size:
        out += np.bincount(current, weights=words / distance, minlength=n)
        current = page.parent[current]
        alive = current >= 0
        current, words = current[alive], words[alive]
        distance += 1
    return out


def content_features(page: CompactPage, rated: np.ndarray, known: ContentFeatures | None = None) -> ContentFeatures:
    """The four ratios of every node, marked `rated`. `known`: the page's ratios computed
    already (for another rated set: they are functions of the page alone)."""
    if known is not None:
        return ContentFeatures(rated, known.word, known.hyperlink, known.children, known.position)
    links = links_below(page)
    hyperlink = np.where(links == 0, 1.0, 1.0 / np.maximum(links, 1))
    kids = (page.child_count > 2).astype(np.float64)
    max_depth = float(page.depth.max()) if page.size else 0.0
    depth = page.depth.astype(np.float64)
    position = np.where(depth <= max_depth / 2.0, depth, max_depth - depth)
    return ContentFeatures(rated, word_ratio(page), hyperlink, kids, position)


def standardize(x: np.ndarray) -> np.ndarray:
    """Column z-scores; a column with zero deviation becomes 0."""
    if x.dtype != np.float64 or x.ndim != 2 or x.shape[0] == 0:
        return standardize_reference(x)
    # x.mean(axis=0) and x.std(axis=0) as numpy's _mean and _var compute them (the same
    # reductions and divisions, so the same floats), without their Python wrappers, and with
    # the deviations from the mean taken once for the variance and the z-scores.
    m = x.shape[0]
    mean = np.add.reduce(x, axis=0) / m
    deviation = x - mean
    std = np.sqrt(np.add.reduce(np.square(deviation), axis=0) / m)
    safe = np.where(std > 0, std, 1.0)
    return np.where(std > 0, deviation / safe, 0.0)


def standardize_reference(x: np.ndarray) -> np.ndarray:
    """standardize with numpy's mean and std."""
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    safe = np.where(std > 0, std, 1.0)
    return np.where(std > 0, (x - mean) / safe, 0.0)


def c_set(page: CompactPage, rated_idx: np.ndarray, features: ContentFeatures, c: int) -> np.ndarray:
    """The c rated nodes farthest from the centroid of the standardized features."""
    # features.matrix()[rated_idx], without stacking the columns of the unrated nodes
    z = standardize(np.stack([features.word[rated_idx], features.hyperlink[rated_idx],
                              features.children[rated_idx], features.position[rated_idx]], axis=1))
    # The centroid of z-scores is the origin.
    dist = np.sqrt((z * z).sum(axis=1))
    order = np.lexsort((rated_idx, -dist))     # farthest first, ties by document order
    return np.sort(rated_idx[order[:c]])


def reduce_c_set(page: CompactPage, cset: np.ndarray) -> np.ndarray:
    """Alg. 5: drop a node when a c-SET ancestor has exactly the same text nodes."""
    text_nodes = text_nodes_below(page)
    keep = []
    for d in cset:
        same = any(a < d < page.end[a] and text_nodes[a] == text_nodes[d] for a in cset)
        if not same:
            keep.append(d)
    return np.array(keep, dtype=np.int64)


def select_main(page: CompactPage, cset: np.ndarray) -> np.ndarray:
    """Alg. 6: the highest textPond node(s) plus their c-SET siblings."""
    if cset.size == 0:
        return cset
    words = words_below(page)[cset].astype(np.float64)
    elements = elements_below(page)[cset].astype(np.float64)
    pond = words / np.maximum(elements, 1.0)
    best = cset[pond == pond.max()]
    best_parents = set(page.parent[best].tolist())
    siblings = [x for x in cset if page.parent[x] in best_parents]
    return sorted_distinct(np.concatenate([best, np.array(siblings, dtype=cset.dtype)]))


def remove_link_lists(page: CompactPage, mask: np.ndarray, max_words: int) -> np.ndarray:
    """Alg. 7: drop groups of same-tag wrappers that each hold a single short <a>."""
    a_tag = TAG_ID["a"]
    # Wrappers: nodes in the selection whose only child is an <a> (the node after it in
    # preorder). Few nodes have one child: the other tests run on those alone.
    wrappers = np.flatnonzero(mask & (page.child_count == 1))
    wrappers = wrappers[page.tag[wrappers] != TEXT]
    wrappers = wrappers[page.tag[np.minimum(wrappers + 1, page.size - 1)] == a_tag]
    mask = mask.copy()
    if wrappers.size < 2:
        return mask
    short = words_below(page)[wrappers + 1] < max_words
    # Group wrappers by (grandparent, tag): a group with a short link and at least two
    # members is a link list. Tag ids are below 2**31, so the key is one per pair.
    keys = page.parent[wrappers].astype(np.int64) * (1 << 32) + page.tag[wrappers]
    _, group, members = distinct_inverse(keys, counts=True)
    group = group.ravel()
    any_short = np.bincount(group, weights=short, minlength=members.size) > 0
    removed = wrappers[(members >= 2)[group] & any_short[group]]
    if removed.size:
        mask &= ~subtree_mask(page, removed)
    return mask


def wide_page(page: CompactPage, excluded: np.ndarray) -> bool:
    """Thesis §6.2.2 iii (design §3, wide page): BODY has at least as many rated-tag children
    as the page is deep."""
    ptr, kids = children(page)
    body_kids = kids[ptr[0]:ptr[1]]
    elements = body_kids[(page.tag[body_kids] != TEXT) & ~excluded[body_kids]]
    counted = (page.tag != TEXT) & ~excluded
    counted[0] = False
    depth = int(page.depth[counted].max()) if counted.any() else 0
    return elements.size > 0 and elements.size >= depth


def main_content(page: CompactPage, params: PageConexParams = PageConexParams()) -> np.ndarray:
    """Boolean node mask of the page's main content."""
    return main_content_and_features(page, params)[0]


def main_content_and_features(page: CompactPage, params: PageConexParams = PageConexParams()
                              ) -> tuple[np.ndarray, ContentFeatures | None]:
    """(main_content's mask, the content features it computed on the way, None when it
    decided without them): the block classifier reads the same ratios (transforms/features.py)."""
    if page.size <= 1:
        return np.zeros(page.size, dtype=bool), None
    if tree._COMPILED and _compiled is not None:
        return _main_content_compiled(page, params)
    excluded = _excluded_mask(page, params.excluded_tags)
    if wide_page(page, excluded):
        mask = np.ones(page.size, dtype=bool)
        mask[0] = False
        return mask, None
    rated = (page.tag != TEXT) & (page.child_count > 0) & ~excluded
    rated_idx = np.flatnonzero(rated)
    if rated_idx.size == 0:
        return np.zeros(page.size, dtype=bool), None
    features = content_features(page, rated)
    cset = reduce_c_set(page, c_set(page, rated_idx, features, params.c))
    roots = select_main(page, cset)
    mask = subtree_mask(page, roots)
    return remove_link_lists(page, mask, params.max_words), features


def _main_content_compiled(page: CompactPage, params: PageConexParams) -> tuple[np.ndarray, ContentFeatures | None]:
    """main_content_and_features of a page of two or more nodes from transforms/_features.c
    page_conex: the excluded tags, the wide-page rule, the content features, the c-SET and
    its reduction, select_main and remove_link_lists in one call on the page's arrays."""
    n = page.size
    table, unknown = _excluded_table(tuple(params.excluded_tags))
    mask = np.empty(n, dtype=bool)
    rated = np.empty(n, dtype=bool)
    hyperlink, kids, position = np.empty(n), np.empty(n), np.empty(n)
    i32 = np.int32
    found = _compiled.page_conex(
        np.ascontiguousarray(page.parent, dtype=i32), np.ascontiguousarray(page.tag, dtype=i32),
        np.ascontiguousarray(page.child_count, dtype=i32), np.ascontiguousarray(page.depth, dtype=i32),
        np.ascontiguousarray(page.end, dtype=i32), table, unknown, word_ratio(page), links_below(page),
        words_below(page), elements_below(page), text_nodes_below(page), TEXT, TAG_ID["a"], params.c,
        params.max_words, mask, rated, hyperlink, kids, position)
    if found < 2:
        return mask, None
    return mask, ContentFeatures(rated, word_ratio(page), hyperlink, kids, position)
