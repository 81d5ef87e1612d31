"""Main content by block classification (design §10): which blocks of a page are main.

Two classifiers read the same blocks and features (`transforms/blocks.py`,
`transforms/features.py`) and a model file (`transforms/model.py`):

- `learned`, the product's model: gradient-boosted trees over page and site
  features; a block is main when its probability reaches the model's
  threshold (chosen by cross-validation grouped by site when it was trained).
- `ceml`, seed 002 as published: seed 002's hard rules first (seed 002 §4.3.3, read as
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
from sitestrip.transforms.model import BlockModel, ModelError, load_model
from sitestrip.transforms.page_type import (PAGE_FEATURE_NAMES, PAGE_FEATURE_SET, PAGE_TYPES, PageTypeModel,
                                            page_type_features, page_type_label)
from sitestrip.transforms.region import (REGION_FEATURE_NAMES, REGION_FEATURE_SET, own_columns,
                                         owner_ancestors, region_features)

MODEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
SHIPPED_MODELS = {"learned": os.path.join(MODEL_DIR, "learned.json.gz"),
                  "ceml": os.path.join(MODEL_DIR, "ceml.json.gz")}
METHODS = ("learned", "ceml", "conex")
_COL = {name: i for i, name in enumerate(FEATURE_NAMES)}
_GROUP_P, _GROUP_DIV, _GROUP_H = GROUPS.index("p"), GROUPS.index("div"), GROUPS.index("h")
_PAGE_TYPE_COLUMNS = slice(_COL[f"page_type_{PAGE_TYPES[0]}"], _COL[f"page_type_{PAGE_TYPES[-1]}"] + 1)


@dataclass(frozen=True)
class MainContentParams:
    # learned | ceml (design §10) | conex (site ConEx §7, page ConEx §3). The dataclass holds the
    # thesis's choice, like every other section; configs/default.yaml selects learned.
    method: str = "conex"
    model: str = ""            # a model file trained by `sitestrip-bench train`; "" = the shipped one
    # learned: each block's probability mixed with its neighbours' (this weight for each of the
    # previous and the next block of the page) before the threshold. Main content is a run of
    # blocks; a lone teaser or a lone caption between them is decided with its context.
    neighbour_weight: float = 0.1
    # Safety net (docs/algorithms.md "Safety nets"): a page where no block is main, or whose
    # template share is at least fallback_template_share, is judged again without its site
    # features, as a single-page site is; the row's notes say so.
    site_fallback: bool = False
    fallback_template_share: float = 0.95
    # A candidate page that is a near duplicate of the key page (at least this share of each
    # page's block words carry a block text the other page shows too) is no template
    # evidence: every block of the key page would map onto it. 0 = keep every candidate.
    near_duplicate_share: float = 0.0


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
    if model.page_type_models:
        if model.page_type_types != PAGE_TYPES:
            raise ModelError(f"{path}: page types {list(model.page_type_types)}, this code has {list(PAGE_TYPES)}")
        for stage in model.page_type_models:
            stage.check_features(PAGE_FEATURE_NAMES, PAGE_FEATURE_SET)
    if model.region is not None:
        model.region.check_features(REGION_FEATURE_NAMES, REGION_FEATURE_SET)
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


def page_type_proba(model: BlockModel, page_features: np.ndarray) -> np.ndarray | None:
    """float64[len(PAGE_TYPES)] of one page, None for a model without the page type stage."""
    if not model.page_type_models:
        return None
    # Built once per loaded model (its ensembles' joined node table), not once per page.
    types = model.__dict__.get("_page_type_model")
    if types is None or types.models is not model.page_type_models:
        types = model._page_type_model = PageTypeModel(model.page_type_models)
    return types.row_proba(page_features)


def region_proba(model: BlockModel, first: np.ndarray, words: np.ndarray, features: np.ndarray,
                 ancestors: np.ndarray) -> np.ndarray:
    """The region stage's probability of each block of one page (transforms/region.py); `first`
    is the first stage's, which counts only for blocks with words."""
    has_words = words > 0
    X = region_features(np.where(has_words, first, 0.0), words, own_columns(features, _COL), ancestors)
    return np.where(has_words, model.region.predict_proba(X), 0.0)


# A hidden element holding at most this many words is a line a reader never sees (a hidden
# heading, a label, a screen-reader note); a larger one is a collapsed tab, an accordion or a
# wrapper a script toggles, which the model judges (page-wcxb-dev's gold counts those as content:
# docs/algorithms.md "Safety nets").
HIDDEN_LINE_WORDS = 25
# numpy's float64 log1p of it, the value the comparison has always used, taken once.
_HIDDEN_LINE_LOG = np.log1p(HIDDEN_LINE_WORDS)
_HIDDEN_ELEMENT, _HIDDEN_WORDS_LOG = _COL["hidden_element"], _COL["hidden_words_log"]


def hidden_blocks(features: np.ndarray) -> np.ndarray:
    """Blocks a reader does not see (docs/algorithms.md "Safety nets"): never main content."""
    return (features[:, _HIDDEN_ELEMENT] > 0) & (features[:, _HIDDEN_WORDS_LOG] <= _HIDDEN_LINE_LOG)


@dataclass
class PageClassification:
    proba: np.ndarray          # content probability per block, as the threshold sees it
    selected: np.ndarray       # bool per block: main content
    threshold: float
    page_type: str | None      # None: the model has no page type stage
    page_type_proba: np.ndarray | None


def classify_page(model: BlockModel, page, url: str, blocks: Blocks, texts: list, features: np.ndarray,
                  params: MainContentParams) -> PageClassification:
    """The page's type, then its main-content blocks (design §10; docs/algorithms.md "Page type",
    "Main region"). `features` gets the page type columns filled in place.

    Hidden lines (`hidden_blocks`: inside an element with the hidden attribute, aria-hidden, an
    inline display:none or visibility:hidden that holds a few words) are never main content: a
    reader does not see them, whatever the gold of a corpus says."""
    types = None
    if blocks.count and model.page_type_models:
        types = page_type_proba(model, page_type_features(page, url, texts, blocks.words, features, _COL))
        features[:, _PAGE_TYPE_COLUMNS] = types
    label = page_type_label(types, blocks.count) if model.page_type_models else None
    if blocks.count == 0:
        return PageClassification(np.zeros(0), np.zeros(0, dtype=bool), model.threshold, label, types)
    if model.kind == "gbdt" and model.region is not None:
        proba = region_proba(model, model.predict_proba(features), blocks.words, features,
                             owner_ancestors(page.parent, blocks.owner))
    else:
        proba = block_proba(model, features, blocks.group, blocks.words, params)
    proba = np.where(hidden_blocks(features), 0.0, proba)
    return PageClassification(proba, proba >= model.threshold, model.threshold, label, types)
