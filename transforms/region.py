"""The main region (docs/algorithms.md "Main region"): a second model that decides each block
in its context, over the first model's probabilities (stacking).

The block model (transforms/classify.py) scores each block from its own features. Main
content is not a set of independent blocks: it is one region of the page, in one container,
contiguous in reading order, and what follows its end — a run of same-shaped teasers, a
"most read" list — is not content however well written each item is. This stage sees, for
every block, the first model's probabilities around it: its neighbours' (one to three blocks
away), word-weighted means over windows of blocks, the share of the page's expected main
words that each of its four nearest ancestor containers holds and their mean probability,
how much expected main content lies before and after it, how far the nearest likely-main
block is; plus a few of the block's own columns (words, links, repetition, roles, page
type). Its trees are trained on out-of-fold first-stage probabilities (bench/sitestrip_bench/train.py), so
they learn how the first model errs on sites it never saw.
"""
from __future__ import annotations

import os

import numpy as np

try:
    # The columns but the own ones in one pass (transforms/_features.c region_columns, built by
    # `pip install`); _region_features_python is the reference and runs where it is missing.
    from sitestrip.transforms import _features as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
# The block features' switch (SITESTRIP_FEATURES=python runs every reference).
_COMPILED = os.environ.get("SITESTRIP_FEATURES", "compiled") != "python"

REGION_FEATURE_SET = "region-v2"
LEVELS = (0, 1, 2, 3, 4)
_WINDOWS = (2, 5, 15)
_OFFSETS = (1, 2, 3)
# Block columns the region model reads as they are (transforms/features.py names).
OWN_COLUMNS = ("words_log", "link_char_share", "is_link", "same_shape_max_log", "same_shape_siblings_log",
               "group_p", "group_li", "group_h", "group_td", "group_div", "invisible", "has_site",
               "template_word_share", "text_site_share", "text_on_candidates", "far_related", "far_comment",
               "far_item", "near_meta", "near_caption", "in_figure", "in_aside", "in_footer", "in_header",
               "in_article", "in_main", "role_credit", "role_dateline", "role_byline", "role_promo",
               "role_subscribe", "short_line", "normalized_top", "page_type_article",
               "page_type_documentation", "page_type_forum", "page_type_product", "page_type_listing",
               "page_type_collection", "page_type_service")


def _names() -> tuple:
    names = ["p", "logit"]
    names += [f"p_prev{k}" for k in _OFFSETS] + [f"p_next{k}" for k in _OFFSETS]
    names += [f"p_window{w}" for w in _WINDOWS]
    for k in LEVELS:
        names += [f"anc{k}_mean_p", f"anc{k}_main_share", f"anc{k}_blocks_log"]
    names += ["main_before", "main_after", "gap_before_log", "gap_after_log", "after_last_likely",
              "before_first_likely", "page_max_p", "page_main_words_log", "page_likely_share"]
    names += [f"own_{c}" for c in OWN_COLUMNS]
    return tuple(names)


REGION_FEATURE_NAMES = _names()
_RCOL = {name: i for i, name in enumerate(REGION_FEATURE_NAMES)}
_OWN_START = _RCOL[f"own_{OWN_COLUMNS[0]}"]
# The columns region_columns leaves raw for numpy's log1p here (counts and gaps).
_LOG1P = np.array([_RCOL[f"anc{k}_blocks_log"] for k in LEVELS] + [_RCOL["gap_before_log"], _RCOL["gap_after_log"]])


def _shifted(p: np.ndarray, k: int) -> np.ndarray:
    """p of the block k places later (k > 0) or earlier (k < 0); NaN past the page's ends."""
    out = np.full(p.size, np.nan)
    if k > 0 and k < p.size:
        out[:-k] = p[k:]
    elif k < 0 and -k < p.size:
        out[-k:] = p[:k]
    return out


def region_features(p: np.ndarray, words: np.ndarray, own: np.ndarray, ancestors: np.ndarray) -> np.ndarray:
    """float32[blocks, len(REGION_FEATURE_NAMES)] of one page.

    p: first-stage probability per block (blocks without words count 0); words: per block;
    own: float[blocks, len(OWN_COLUMNS)] (the block's own columns); ancestors: int[blocks,
    len(LEVELS)], the node id of the block owner's ancestor at each level (any ids that are
    equal exactly when the container is the same, none negative)."""
    if _compiled is not None and _COMPILED and p.size:
        return _region_features_compiled(p, words, own, ancestors)
    return _region_features_python(p, words, own, ancestors)


def _region_features_compiled(p: np.ndarray, words: np.ndarray, own: np.ndarray,
                              ancestors: np.ndarray) -> np.ndarray:
    """_region_features_python's matrix: the arithmetic in transforms/_features.c, the
    logarithms numpy's here over contiguous arrays as the reference takes them, and the total
    numpy's pairwise sum as the reference sums it, so every value is the same float."""
    p = np.ascontiguousarray(p, dtype=np.float64)
    w = np.ascontiguousarray(words, dtype=np.float64)
    total = float((p * w).sum())
    n = p.size
    # float32 as the reference's float64 matrix rounds to at its end: each value is rounded once
    # either way.
    out = np.empty((n, len(REGION_FEATURE_NAMES)), dtype=np.float32)
    raw = np.empty((n, _OWN_START))
    _compiled.region_columns(p, w, np.ascontiguousarray(ancestors, dtype=np.int64), total, raw)
    raw[:, 1] = np.log(np.ascontiguousarray(raw[:, 1]))
    # The gathered [blocks, 7] copy is contiguous, as the reference's columns are.
    raw[:, _LOG1P] = np.log1p(raw[:, _LOG1P])
    raw[:, _RCOL["page_main_words_log"]] = np.log1p(total)
    out[:, :_OWN_START] = raw
    out[:, _OWN_START:] = own
    return out


def _region_features_python(p: np.ndarray, words: np.ndarray, own: np.ndarray, ancestors: np.ndarray) -> np.ndarray:
    """region_features with numpy: the reference of transforms/_features.c region_columns."""
    n = p.size
    out = np.zeros((n, len(REGION_FEATURE_NAMES)))
    if n == 0:
        return out.astype(np.float32)
    p = np.asarray(p, dtype=np.float64)
    w = np.asarray(words, dtype=np.float64)
    out[:, 0] = p
    clipped = np.clip(p, 1e-6, 1 - 1e-6)
    out[:, 1] = np.log(clipped / (1 - clipped))
    i = 2
    for k in _OFFSETS:
        out[:, i] = _shifted(p, -k)
        i += 1
    for k in _OFFSETS:
        out[:, i] = _shifted(p, k)
        i += 1
    # Word-weighted mean probability of the blocks within w places (the block included).
    pw = np.concatenate(([0.0], np.cumsum(p * w)))
    cw = np.concatenate(([0.0], np.cumsum(w)))
    idx = np.arange(n)
    for win in _WINDOWS:
        lo, hi = np.maximum(idx - win, 0), np.minimum(idx + win + 1, n)
        out[:, i] = (pw[hi] - pw[lo]) / np.maximum(cw[hi] - cw[lo], 1.0)
        i += 1
    expected = p * w
    total = float(expected.sum())
    for k in range(len(LEVELS)):
        # Containers are node ids: sums per container by bincount over the ids themselves.
        group = np.asarray(ancestors[:, k], dtype=np.int64)
        g_exp = np.bincount(group, weights=expected)[group]
        g_words = np.bincount(group, weights=w)[group]
        out[:, i] = g_exp / np.maximum(g_words, 1.0)
        out[:, i + 1] = g_exp / total if total > 0 else 0.0
        out[:, i + 2] = np.log1p(np.bincount(group)[group])
        i += 3
    before = np.concatenate(([0.0], np.cumsum(expected)[:-1]))
    after = total - before - expected
    out[:, i] = before / total if total > 0 else 0.0
    out[:, i + 1] = after / total if total > 0 else 0.0
    likely = np.flatnonzero(p >= 0.5)
    if likely.size:
        prev_likely = np.searchsorted(likely, idx, side="left") - 1       # last likely block before
        next_likely = np.searchsorted(likely, idx, side="right")          # first likely block after
        gap_before = np.where(prev_likely >= 0, idx - likely[np.maximum(prev_likely, 0)], n)
        gap_after = np.where(next_likely < likely.size, likely[np.minimum(next_likely, likely.size - 1)] - idx, n)
        out[:, i + 2] = np.log1p(gap_before)
        out[:, i + 3] = np.log1p(gap_after)
        out[:, i + 4] = idx > likely[-1]
        out[:, i + 5] = idx < likely[0]
    else:
        out[:, i + 2] = out[:, i + 3] = np.log1p(n)
    out[:, i + 6] = p.max()
    out[:, i + 7] = np.log1p(total)
    out[:, i + 8] = likely.size / n
    i += 9
    out[:, i:] = own
    return out.astype(np.float32)


_OWN_INDEX: dict = {}


def own_columns(X: np.ndarray, column: dict) -> np.ndarray:
    """X's OWN_COLUMNS (`column`: X's index by name, its indices looked up once per table)."""
    got = _OWN_INDEX.get(id(column))
    if got is None or got[0] is not column:
        got = _OWN_INDEX[id(column)] = (column, np.array([column[c] for c in OWN_COLUMNS], dtype=np.intp))
    return X.take(got[1], axis=1)


def owner_ancestors(parent: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """int64[blocks, len(LEVELS)]: each level's ancestor of the owners, level 0 the owner itself
    (the root stays the root)."""
    out = np.empty((owner.size, len(LEVELS)), dtype=np.int64)
    if _compiled is not None and _COMPILED and LEVELS == tuple(range(len(LEVELS))):
        _compiled.owner_ancestors(np.ascontiguousarray(parent, dtype=np.int32),
                                  np.ascontiguousarray(owner, dtype=np.int64), out)
        return out
    at = owner.astype(np.int64)
    out[:, 0] = at
    for k in range(max(LEVELS)):
        up = parent[at]
        at = np.where(up >= 0, up, at)
        if k + 1 in LEVELS:
            out[:, LEVELS.index(k + 1)] = at
    return out
