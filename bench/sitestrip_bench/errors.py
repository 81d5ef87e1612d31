"""What the main-content model gets wrong, by kind: each page's wrongly kept and missed words
put in classes by the roles of the blocks they sit in (block features, transforms/features.py).

The input is a cross-validated decision per block (bench/sitestrip_bench/train.py `cross_validate`), so the
classes describe errors on sites the model never saw. A page's class is the class of most of
its error words; `losing` restricts the table to pages where a peer did better.

Kept-wrongly classes, first match wins: hidden, caption (figcaption, credit lines, caption
class hints), header line (byline, dateline, timestamp, reading time), headline (an h1),
promo or related (promo lines, related/share class hints, subscribe calls), tail list (a run
of three or more same-shaped siblings after the page's last gold block), comment, template
(navigation hints, the page's MenEx menu, template text), other. Missed classes: dropped page
(nothing kept of a page with gold), post or comment (comment class hints), item card (item
hints or a run of same-shaped siblings), table cell, short line (≤ 12 words), heading, other.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from sitestrip.transforms.features import FEATURE_NAMES

_COL = {name: i for i, name in enumerate(FEATURE_NAMES)}
KEPT_CLASSES = ("hidden", "caption", "header line", "headline", "promo or related", "tail list", "comment",
                "template", "other")
MISSED_CLASSES = ("dropped page", "post or comment", "item card", "table cell", "short line", "heading", "other")


def _on(X: np.ndarray, *names: str) -> np.ndarray:
    return np.any(np.stack([np.nan_to_num(X[:, _COL[n]]) > 0 for n in names]), axis=0)


def kept_class(X: np.ndarray, after_gold: np.ndarray) -> np.ndarray:
    """Index into KEPT_CLASSES of each block, were it kept wrongly."""
    repeated = np.nan_to_num(X[:, _COL["same_shape_max_log"]]) >= np.log1p(2)
    template = np.nan_to_num(X[:, _COL["template_word_share"]]) >= 0.5
    rules = [
        _on(X, "hidden_element"),
        _on(X, "in_figcaption", "group_figcaption", "role_credit", "near_caption"),
        _on(X, "short_line") & _on(X, "role_byline", "role_dateline", "role_reading_time", "contains_time",
                                   "near_meta"),
        X[:, _COL["heading_level"]] == 1,
        _on(X, "role_promo", "far_related", "role_subscribe", "far_share"),
        after_gold & repeated,
        _on(X, "far_comment"),
        _on(X, "far_nav", "in_menex_menu") | template,
    ]
    out = np.full(X.shape[0], len(KEPT_CLASSES) - 1)
    for k in range(len(rules) - 1, -1, -1):
        out = np.where(rules[k], k, out)
    return out


def missed_class(X: np.ndarray) -> np.ndarray:
    """Index into MISSED_CLASSES of each block, were it missed (not "dropped page": per page)."""
    repeated = np.nan_to_num(X[:, _COL["same_shape_max_log"]]) >= np.log1p(2)
    rules = [
        np.zeros(X.shape[0], dtype=bool),
        _on(X, "far_comment"),
        _on(X, "far_item") | repeated,
        _on(X, "group_td"),
        _on(X, "short_line"),
        _on(X, "group_h"),
    ]
    out = np.full(X.shape[0], len(MISSED_CLASSES) - 1)
    for k in range(len(rules) - 1, -1, -1):
        out = np.where(rules[k], k, out)
    return out


def page_errors(data, selected: np.ndarray) -> list[dict]:
    """Per page of `data` (bench.blockdata.BlockDataset): words kept wrongly and missed per
    class, and the page's main class of error ("kept: …" or "missed: …", None without error)."""
    X, y, words, aligned = data.X, data.y, data.words.astype(np.float64), data.aligned.astype(np.float64)
    bounds = np.searchsorted(data.page, np.arange(len(data.pages) + 1), side="left")
    out = []
    for i, page in enumerate(data.pages):
        a, b = bounds[i], bounds[i + 1]
        sel, lab = selected[a:b], y[a:b]
        gold_blocks = np.flatnonzero(lab)
        after = np.arange(b - a) > (gold_blocks[-1] if gold_blocks.size else -1)
        extra = np.where(sel, words[a:b] - aligned[a:b], 0.0)
        missing = np.where(~sel, aligned[a:b], 0.0)
        kept = Counter()
        for k, w in zip(kept_class(X[a:b], after), extra):
            if w > 0:
                kept[KEPT_CLASSES[k]] += w
        missed = Counter()
        if not sel.any() and page.gold_words:
            missed["dropped page"] = float(page.gold_words)
        else:
            for k, w in zip(missed_class(X[a:b]), missing):
                if w > 0:
                    missed[MISSED_CLASSES[k]] += w
        worst = max([(w, f"kept: {c}") for c, w in kept.items()] + [(w, f"missed: {c}") for c, w in missed.items()],
                    default=(0.0, None))
        out.append({"url": page.url, "corpus": page.corpus, "genre": page.genre, "kept": dict(kept),
                    "missed": dict(missed), "main_error": worst[1]})
    return out


def error_table(errors: list[dict], urls=None) -> dict:
    """{main error class: pages} over the pages whose url is in `urls` (all when None)."""
    counts = Counter(e["main_error"] for e in errors if e["main_error"] and (urls is None or e["url"] in urls))
    return dict(counts.most_common())
