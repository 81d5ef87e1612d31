"""`sitestrip-bench train`: the block classifiers of design §10, trained and cross-validated.

Folds are grouped by site (a site's pages are never split between training and
scoring) and fixed by sorted site names, so a run is deterministic. Per fold:
the model is fitted on the other folds' blocks; its threshold is the one that
maximizes the mean page F1 on the *other* folds' out-of-fold predictions, so a
fold's score uses neither its labels for fitting nor for the threshold. The
shipped model is then fitted on every block, with the threshold that is best
on all out-of-fold predictions.

The `learned` model has three stages (docs/algorithms.md), each trained on what the stage
before it predicts for pages it never saw, as the pipeline will see them:

1. page type: one-vs-rest ensembles over the page features; its out-of-fold probabilities
   fill the block features' page-type columns;
2. blocks: the block ensemble over the block features;
3. region: the second-stage ensemble over the blocks' out-of-fold probabilities in context
   (transforms/region.py); the threshold applies to its probability.

The same folds serve every stage, so a page's final score comes from three models none of
which saw its site.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from sitestrip_bench.blockdata import BlockDataset
from sitestrip_bench.train_models import as_model, choose_threshold, fit_ceml, fit_gbdt, leaf_tree, write_model
from sitestrip.transforms.blocks import GROUPS, render_blocks
from sitestrip.transforms.classify import MainContentParams, block_proba, hard_rule_noise, hidden_blocks
from sitestrip.transforms.features import FEATURE_NAMES, FEATURE_SET_VERSION
from sitestrip_bench.metrics import word_prf
from sitestrip.transforms.page_type import PAGE_FEATURE_NAMES, PAGE_FEATURE_SET, PAGE_TYPES
from sitestrip.transforms.region import (REGION_FEATURE_NAMES, REGION_FEATURE_SET, own_columns,
                                         region_features)

KINDS = {"learned": "gbdt", "ceml": "ceml"}
SEED = 7
# The product model's boosting parameters, settled by site-grouped CV on the dev corpora
# (docs/model.md has the comparison).
GBDT_LIBRARY = "lightgbm"
GBDT_PARAMS = {"num_leaves": 31, "learning_rate": 0.1, "min_data_in_leaf": 50,
               "feature_fraction": 0.8, "bagging_fraction": 0.5, "bagging_freq": 1,
               "max_bin": 63, "n_trees": 150, "num_threads": 2}
# The page type ensembles: a few thousand pages, one row each.
# One thread: on a few thousand rows a second thread only waits.
PAGE_TYPE_PARAMS = {"num_leaves": 15, "learning_rate": 0.08, "min_data_in_leaf": 10,
                    "feature_fraction": 0.7, "bagging_fraction": 0.8, "bagging_freq": 1,
                    "max_bin": 63, "n_trees": 120, "num_threads": 1}
# The region stage: few features, most of them already probabilities.
REGION_PARAMS = {"num_leaves": 31, "learning_rate": 0.1, "min_data_in_leaf": 100,
                 "feature_fraction": 0.8, "bagging_fraction": 0.5, "bagging_freq": 1,
                 "max_bin": 63, "n_trees": 120, "num_threads": 2}
_COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}
_PAGE_TYPE_COLUMNS = [_COLUMN[f"page_type_{t}"] for t in PAGE_TYPES]


def product_labels(data: BlockDataset) -> np.ndarray:
    """The training labels with the product's convention for an article's header and figures
    (docs/algorithms.md "Block roles"), which the corpora's golds disagree on: on article
    pages the headline (an h1: the `title` column holds it), byline, dateline, timestamp and
    reading-time lines, captions and photo credits are not main content."""
    col = _COLUMN
    X = data.X
    article = (data.page_types == PAGE_TYPES.index("article"))[data.page]
    short = X[:, col["short_line"]] > 0
    header_line = short & ((X[:, col["role_byline"]] > 0) | (X[:, col["role_dateline"]] > 0)
                           | (X[:, col["role_reading_time"]] > 0) | (X[:, col["contains_time"]] > 0))
    figure = (X[:, col["in_figcaption"]] > 0) | (X[:, col["group_figcaption"]] > 0) | (X[:, col["role_credit"]] > 0)
    headline = X[:, col["heading_level"]] == 1
    return data.y & ~(article & (header_line | figure | headline))


def block_weights(data: BlockDataset) -> np.ndarray:
    """Long blocks matter more to word F1, with diminishing returns."""
    return np.log1p(data.words.astype(np.float64)) + 0.1


def site_folds(data: BlockDataset, folds: int) -> np.ndarray:
    """Fold of each page: sites in sorted order dealt round-robin by size (largest first),
    so folds are balanced in pages and deterministic."""
    sites = sorted({p.site for p in data.pages})
    size = {s: 0 for s in sites}
    for p in data.pages:
        size[p.site] += 1
    order = sorted(sites, key=lambda s: (-size[s], s))
    load = [0] * folds
    fold_of_site = {}
    for s in order:
        k = min(range(folds), key=lambda i: (load[i], i))
        fold_of_site[s] = k
        load[k] += size[s]
    return np.array([fold_of_site[p.site] for p in data.pages], dtype=np.int64)


def fit(data: BlockDataset, kind: str, seed: int = SEED):
    """The fitted model (payload, info) of `kind` ("gbdt" or "ceml") on every block of `data`
    (the block stage alone)."""
    if kind == "gbdt":
        return fit_gbdt(data.X, data.y, block_weights(data), GBDT_PARAMS, seed, library=GBDT_LIBRARY)
    # Seed 002's trees learn only what its hard rules leave open.
    open_blocks = ~hard_rule_noise(data.X, data.group)
    return fit_ceml(data.X[open_blocks], data.y[open_blocks], block_weights(data)[open_blocks],
                    data.group[open_blocks].astype(np.int64), list(GROUPS),
                    data.site_of_block[open_blocks], seed)


def predict(kind: str, payload: dict, data: BlockDataset, params: MainContentParams) -> np.ndarray:
    """ceml, or a gbdt block stage with neighbour smoothing: what transforms/classify.py's
    block_proba computes for these blocks."""
    model = as_model(kind, payload, FEATURE_NAMES, FEATURE_SET_VERSION)
    return block_proba(model, data.X, data.group, data.words, params, data.page)


def _block_stage(payload: dict, data: BlockDataset) -> np.ndarray:
    """The block stage's probability of each block (0 for blocks without words)."""
    model = as_model("gbdt", payload, FEATURE_NAMES, FEATURE_SET_VERSION)
    return np.where(data.words > 0, model.predict_proba(data.X), 0.0)


# ---------------------------------------------------------------- page type

def page_type_weights(data: BlockDataset) -> np.ndarray:
    """Per page: every type and every site weigh alike in total, as far as square roots allow
    (docs sites hold ~190 pages each, most general-web sites one)."""
    types = data.page_types
    site_size: dict = {}
    for p in data.pages:
        site_size[p.site] = site_size.get(p.site, 0) + 1
    w = np.array([1.0 / np.sqrt(site_size[p.site]) for p in data.pages])
    for t in range(len(PAGE_TYPES)):
        on = types == t
        if on.any():
            w[on] *= 1.0 / w[on].sum()
    return w / w.mean()


def fit_page_type(features: np.ndarray, types: np.ndarray, weights: np.ndarray, seed: int = SEED) -> dict:
    """The model file's page_type section: one binary ensemble per type."""
    ensembles = []
    for t in range(len(PAGE_TYPES)):
        positive = types == t
        if positive.all() or not positive.any():
            # Nothing to separate (a training set of one type, or none of this one): a constant
            # ensemble with the smoothed share of the type's pages as its probability.
            share = (positive.sum() + 0.5) / (positive.size + 1.0)
            ensembles.append({"base_score": float(np.log(share / (1 - share))), "trees": [leaf_tree(0.0)]})
            continue
        fitted = fit_gbdt(features, positive, weights, PAGE_TYPE_PARAMS, seed, library=GBDT_LIBRARY)
        ensembles.append({"base_score": fitted.payload["base_score"], "trees": fitted.payload["trees"]})
    return {"feature_set": PAGE_FEATURE_SET, "feature_names": list(PAGE_FEATURE_NAMES),
            "types": list(PAGE_TYPES), "ensembles": ensembles}


def page_type_proba(section: dict, features: np.ndarray) -> np.ndarray:
    """float64[pages, len(PAGE_TYPES)] of a page_type section, as the pipeline computes them."""
    from sitestrip.transforms.page_type import PageTypeModel
    models = [as_model("gbdt", {"base_score": e["base_score"], "trees": e["trees"]}, PAGE_FEATURE_NAMES,
                       PAGE_FEATURE_SET) for e in section["ensembles"]]
    return PageTypeModel(models).proba(features)


def _with_page_types(data: BlockDataset, proba: np.ndarray) -> BlockDataset:
    """`data` with each block's page-type columns set to its page's probabilities."""
    X = data.X.copy()
    X[:, _PAGE_TYPE_COLUMNS] = proba[data.page].astype(np.float32)
    return dataclasses.replace(data, X=X)


# ---------------------------------------------------------------- region

def region_matrix(data: BlockDataset, first: np.ndarray) -> np.ndarray:
    """The region features of every block, from the block stage's probabilities `first`."""
    out = np.zeros((len(first), len(REGION_FEATURE_NAMES)), dtype=np.float32)
    bounds = np.searchsorted(data.page, np.arange(len(data.pages) + 1), side="left")
    own = own_columns(data.X, _COLUMN)
    for i in range(len(data.pages)):
        a, b = bounds[i], bounds[i + 1]
        if b > a:
            out[a:b] = region_features(first[a:b], data.words[a:b], own[a:b], data.ancestors[a:b])
    return out


def fit_region(R: np.ndarray, data: BlockDataset, seed: int = SEED) -> dict:
    # Leaves of at least 100 blocks on corpora of 10^5-10^6 blocks; a small training set (a
    # user's own corpus, the tests') keeps leaves it can fill.
    params = {**REGION_PARAMS, "min_data_in_leaf": int(min(REGION_PARAMS["min_data_in_leaf"], max(5, len(R) // 500)))}
    fitted = fit_gbdt(R, data.y, block_weights(data), params, seed, library=GBDT_LIBRARY)
    return {"feature_set": REGION_FEATURE_SET, "feature_names": list(REGION_FEATURE_NAMES),
            "base_score": fitted.payload["base_score"], "trees": fitted.payload["trees"]}


def region_proba(section: dict, R: np.ndarray, data: BlockDataset) -> np.ndarray:
    model = as_model("gbdt", {"base_score": section["base_score"], "trees": section["trees"]},
                     REGION_FEATURE_NAMES, REGION_FEATURE_SET)
    return np.where(data.words > 0, model.predict_proba(R), 0.0)


def _threshold(data: BlockDataset, proba: np.ndarray, pages: np.ndarray) -> float:
    rows = np.isin(data.page, pages)
    gold_words = np.array([p.gold_words for p in data.pages], dtype=np.float64)[np.unique(data.page[rows])]
    return choose_threshold(proba[rows], data.y[rows], data.words[rows], data.page[rows],
                            aligned=data.aligned[rows], gold_words=gold_words).threshold


@dataclass
class CrossValidation:
    proba: np.ndarray          # out-of-fold content probability per block
    selected: np.ndarray       # out-of-fold main-content decision per block
    fold: np.ndarray           # fold of each page
    thresholds: list           # threshold applied to each fold
    threshold: float           # best on all out-of-fold predictions (the shipped model's)
    page_type: np.ndarray | None = None    # gbdt: out-of-fold page type probabilities per page
    first: np.ndarray | None = None        # gbdt: out-of-fold block stage probability per block
    data: BlockDataset | None = None       # gbdt: the blocks with out-of-fold page types filled
    unmasked: np.ndarray | None = None     # gbdt: `proba` before hidden blocks are set to 0


def _relabelled(data: BlockDataset) -> BlockDataset:
    return dataclasses.replace(data, y=product_labels(data))


def cross_validate(data: BlockDataset, kind: str, params: MainContentParams, folds: int = 5, seed: int = SEED,
                   log=print, product_convention: bool = True) -> CrossValidation:
    """Out-of-fold predictions of every block. gbdt models learn the product's labels
    (`product_labels`) unless `product_convention` is off; thresholds and scores are always
    taken against the corpora's own gold."""
    fold = site_folds(data, folds)
    block_fold = fold[data.page]
    page_types = first = None
    if kind == "gbdt":
        if product_convention:
            data = _relabelled(data)
        start = time.monotonic()
        page_types = np.zeros((len(data.pages), len(PAGE_TYPES)))
        weights, types = page_type_weights(data), data.page_types
        for k in range(folds):
            train = fold != k
            section = fit_page_type(data.page_features[train], types[train], weights[train], seed)
            page_types[fold == k] = page_type_proba(section, data.page_features[fold == k])
        log(f"  page type: {folds} folds, {time.monotonic() - start:.0f} s")
        data = _with_page_types(data, page_types)
        first = np.zeros(len(data.y))
        for k in range(folds):
            start = time.monotonic()
            test = block_fold == k
            payload = fit(data.subset_pages(np.flatnonzero(fold != k)), kind, seed).payload
            first[test] = _block_stage(payload, data.rows(test))
            log(f"  blocks, fold {k + 1}/{folds}: {int((fold == k).sum())} pages scored, "
                f"{time.monotonic() - start:.0f} s")
        R = region_matrix(data, first)
        proba = np.zeros(len(data.y))
        for k in range(folds):
            train, test = block_fold != k, block_fold == k
            section = fit_region(R[train], data.rows(train), seed)
            proba[test] = region_proba(section, R[test], data.rows(test))
        log("  region: out-of-fold probabilities of every block")
        unmasked = proba
        proba = np.where(hidden_blocks(data.X), 0.0, proba)
    else:
        proba = np.zeros(len(data.y))
        for k in range(folds):
            start = time.monotonic()
            train = data.subset_pages(np.flatnonzero(fold != k))
            test = block_fold == k
            proba[test] = predict(kind, fit(train, kind, seed).payload, data.rows(test), params)
            log(f"  fold {k + 1}/{folds}: {int((fold == k).sum())} pages scored, {time.monotonic() - start:.0f} s")
    selected = np.zeros(len(data.y), dtype=bool)
    thresholds = []
    for k in range(folds):
        t = _threshold(data, proba, np.flatnonzero(fold != k))
        thresholds.append(t)
        selected[block_fold == k] = proba[block_fold == k] >= t
    overall = _threshold(data, proba, np.arange(len(data.pages)))
    return CrossValidation(proba, selected, fold, thresholds, overall, page_types, first,
                           data if kind == "gbdt" else None, unmasked if kind == "gbdt" else None)


def page_type_scores(data: BlockDataset, proba: np.ndarray) -> dict:
    """Accuracy and macro F1 of predicted page types against the gold, over all pages and
    over the pages of each corpus."""
    gold = data.page_types
    pred = np.argmax(proba, axis=1)
    corpora = np.array([p.corpus for p in data.pages])
    out = {}
    for name, rows in [("all", np.ones(len(gold), dtype=bool))] + \
            [(c, corpora == c) for c in sorted(set(corpora.tolist()))]:
        g, q = gold[rows], pred[rows]
        f1s = {}
        for t in sorted(set(g.tolist())):
            tp = float(np.sum((g == t) & (q == t)))
            prec = tp / max(float(np.sum(q == t)), 1.0)
            rec = tp / max(float(np.sum(g == t)), 1.0)
            f1s[PAGE_TYPES[t]] = round(2 * prec * rec / (prec + rec), 4) if prec + rec else 0.0
        out[name] = {"pages": int(rows.sum()), "accuracy": round(float(np.mean(g == q)), 4),
                     "macro_f1": round(float(np.mean(list(f1s.values()))), 4), "f1": f1s}
    return out


def page_texts(data: BlockDataset, selected: np.ndarray) -> dict:
    """url → main_text of the selected blocks (the pipeline's rendering)."""
    starts = np.searchsorted(data.page, np.arange(len(data.pages)), side="left")
    ends = np.searchsorted(data.page, np.arange(len(data.pages)), side="right")
    return {p.url: render_blocks(p.texts, selected[starts[i]:ends[i]]) for i, p in enumerate(data.pages)}


def cv_genre_scores(data: BlockDataset, texts: dict) -> dict:
    """Mean page word P/R/F1 per corpus and genre (page type) of the cross-validated texts."""
    groups: dict = {}
    for p in data.pages:
        groups.setdefault((p.corpus, p.genre), []).append(word_prf(texts[p.url], p.gold))
    out: dict = {}
    for (corpus, genre), s in sorted(groups.items()):
        out.setdefault(corpus, {})[genre] = {
            "pages": len(s), "mean_f1": round(float(np.mean([x.f1 for x in s])), 4),
            "mean_precision": round(float(np.mean([x.precision for x in s])), 4),
            "mean_recall": round(float(np.mean([x.recall for x in s])), 4)}
    return out


def cv_scores(data: BlockDataset, texts: dict) -> dict:
    """Mean page word P/R/F1 per corpus of the cross-validated texts."""
    by_corpus: dict = {}
    for p in data.pages:
        by_corpus.setdefault(p.corpus, []).append(word_prf(texts[p.url], p.gold))
    return {c: {"pages": len(s), "mean_f1": round(float(np.mean([x.f1 for x in s])), 4),
                "mean_precision": round(float(np.mean([x.precision for x in s])), 4),
                "mean_recall": round(float(np.mean([x.recall for x in s])), 4)}
            for c, s in sorted(by_corpus.items())}


def train(data: BlockDataset, out_path: str, method: str = "learned", folds: int = 5,
          seed: int = SEED, params: MainContentParams = MainContentParams(), log=print,
          product_convention: bool = True) -> dict:
    """Cross-validate, fit on everything, write the model file; returns the training report."""
    kind = KINDS[method]
    log(f"{method}: {len(data.pages)} pages, {len(data.y)} blocks, "
        f"{len({p.site for p in data.pages})} sites; {folds}-fold CV grouped by site")
    cv = cross_validate(data, kind, params, folds, seed, log, product_convention)
    texts = page_texts(data, cv.selected)
    scores = cv_scores(data, texts)
    genres = cv_genre_scores(data, texts)
    for corpus, s in scores.items():
        log(f"  CV {corpus}: mean word F1 {s['mean_f1']:.4f} (P {s['mean_precision']:.4f}, "
            f"R {s['mean_recall']:.4f}, {s['pages']} pages)")
    types = None
    if kind == "gbdt":
        types = page_type_scores(data, cv.page_type)
        log(f"  CV page type: accuracy {types['all']['accuracy']:.4f}, macro F1 {types['all']['macro_f1']:.4f}")
        # Every stage on every page; the block stage on the out-of-fold page types and the region
        # stage on the out-of-fold block probabilities, as the pipeline meets unseen pages.
        page_type = fit_page_type(data.page_features, data.page_types, page_type_weights(data), seed)
        fitted = fit(cv.data, kind, seed)
        region = fit_region(region_matrix(cv.data, cv.first), cv.data, seed)
        fitted = fitted._replace(payload={**fitted.payload, "page_type": page_type, "region": region})
    else:
        fitted = fit(data, kind, seed)
    corpora = sorted({p.corpus for p in data.pages})
    trained_on = {"corpora": corpora, "pages": len(data.pages), "blocks": int(len(data.y)),
                  "sites": len({p.site for p in data.pages}), "seed": seed, "folds": folds,
                  "cv_fold_thresholds": [round(t, 4) for t in cv.thresholds],
                  "cv_mean_word_f1": scores,
                  "cv_mean_word_f1_by_genre": genres,
                  "cv_page_type": types,
                  "fit": fitted.info,
                  "stages": ["page_type", "blocks", "region"] if kind == "gbdt" else ["blocks"],
                  "labels": "product convention" if kind == "gbdt" and product_convention else "corpus gold"}
    write_model(out_path, kind, fitted.payload, FEATURE_NAMES, FEATURE_SET_VERSION, cv.threshold, trained_on)
    log(f"wrote {out_path} (threshold {cv.threshold:.3f})")
    return trained_on
