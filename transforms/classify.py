"""Main content by block classification (SPEC §10): which blocks of a page are main.

Two classifiers read the same blocks and features (`transforms/blocks.py`,
`transforms/features.py`) and a model file (`transforms/model.py`):

- `learned`, the product's model: gradient-boosted trees over page and site
  features; a block is main when its probability reaches the model's
  threshold (chosen by cross-validation grouped by site when it was trained).
- `ceml`, seed 002 as published: seed 002's hard rules first (§4.3.3, read as
  OR), then one CART per instance group.

The model is loaded once per process (`load_main_content_model` caches by
path), so a Beam worker reads it once however many sites it processes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from sitestrip.transforms.blocks import GROUPS, Blocks
from sitestrip.transforms.features import FEATURE_NAMES, FEATURE_SET_VERSION
from sitestrip.transforms.model import BlockModel, load_model

MODEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
SHIPPED_MODELS = {"learned": os.path.join(MODEL_DIR, "learned.json.gz"),
                  "ceml": os.path.join(MODEL_DIR, "ceml.json.gz")}
METHODS = ("learned", "ceml", "conex")
_COL = {name: i for i, name in enumerate(FEATURE_NAMES)}
_GROUP_P, _GROUP_DIV, _GROUP_H = GROUPS.index("p"), GROUPS.index("div"), GROUPS.index("h")


@dataclass(frozen=True)
class MainContentParams:
    # learned | ceml (SPEC §10) | conex (site ConEx §7, page ConEx §3). The dataclass holds the
    # thesis's choice, like every other section; configs/default.yaml selects learned.
    method: str = "conex"
    model: str = ""            # a model file trained by `sitestrip train`; "" = the shipped one
    # learned: each block's probability mixed with its neighbours' (this weight for each of the
    # previous and the next block of the page) before the threshold. Main content is a run of
    # blocks; a lone teaser or a lone caption between them is decided with its context.
    neighbour_weight: float = 0.1


def model_path(params: MainContentParams) -> str:
    return params.model or SHIPPED_MODELS[params.method]


def load_main_content_model(params: MainContentParams) -> BlockModel | None:
    """The model `params` asks for (None for conex), loaded once per process and checked
    against the feature set this code computes."""
    if params.method == "conex":
        return None
    return _load_checked(model_path(params), params.method)


@lru_cache(maxsize=8)
def _load_checked(path: str, method: str) -> BlockModel:
    model = load_model(path)
    wanted = "gbdt" if method == "learned" else "ceml"
    if model.kind != wanted:
        raise ValueError(f"{path}: a {model.kind} model, but main_content.method {method} needs a {wanted} model")
    model.check_features(FEATURE_NAMES, FEATURE_SET_VERSION)
    return model


def hard_rule_noise(features: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Seed 002 §4.3.3, read as OR: blocks that are noise whatever the trees say.

    p, div and heading blocks inside a link, a navigation or an advertisement
    element, or that are one link; td/th blocks inside navigation; empty and
    invisible blocks.
    """
    f = features
    col = _COL
    in_link = (f[:, col["is_desc_a"]] > 0) | (f[:, col["is_link"]] > 0)
    nav = f[:, col["far_nav"]] > 0
    ad = f[:, col["far_ad"]] > 0
    textual = (group == _GROUP_P) | (group == _GROUP_DIV) | (group == _GROUP_H)
    cell = group == GROUPS.index("td")
    empty = f[:, col["words_log"]] <= 0
    invisible = f[:, col["invisible"]] > 0
    return (textual & (in_link | nav | ad)) | (cell & nav) | empty | invisible


def smooth_neighbours(proba: np.ndarray, weight: float, page: np.ndarray | None = None) -> np.ndarray:
    """(1 − 2w)·p + w·p(previous block) + w·p(next block); a page's first and last blocks
    count themselves for the missing neighbour. `page` (page id per block) keeps
    neighbours within a page when several pages are stacked."""
    if weight == 0 or proba.size == 0:
        return proba
    prev = np.concatenate((proba[:1], proba[:-1]))
    nxt = np.concatenate((proba[1:], proba[-1:]))
    if page is not None:
        prev = np.where(np.concatenate(([False], page[1:] == page[:-1])), prev, proba)
        nxt = np.where(np.concatenate((page[:-1] == page[1:], [False])), nxt, proba)
    return (1 - 2 * weight) * proba + weight * prev + weight * nxt


def block_proba(model: BlockModel, features: np.ndarray, group: np.ndarray, words: np.ndarray,
                params: MainContentParams, page: np.ndarray | None = None) -> np.ndarray:
    """Content probability of each block as the threshold sees it (one page, or pages
    stacked with `page` ids): ceml after seed 002's hard rules, learned after neighbour
    smoothing; blocks without words are never content."""
    proba = model.predict_proba(features, group.astype(np.int64))
    if model.kind == "ceml":
        proba = np.where(hard_rule_noise(features, group), 0.0, proba)
    else:
        proba = smooth_neighbours(np.where(words > 0, proba, 0.0), params.neighbour_weight, page)
    return np.where(words > 0, proba, 0.0)


def classify_blocks(model: BlockModel, blocks: Blocks, features: np.ndarray,
                    params: MainContentParams) -> tuple[np.ndarray, np.ndarray, float]:
    """(content probability per block, main blocks, threshold) of one page."""
    if blocks.count == 0:
        return np.zeros(0), np.zeros(0, dtype=bool), model.threshold
    proba = block_proba(model, features, blocks.group, blocks.words, params)
    return proba, proba >= model.threshold, model.threshold
