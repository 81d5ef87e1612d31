"""`sitestrip train`: the block classifiers of SPEC §10, trained and cross-validated.

Folds are grouped by site (a site's pages are never split between training and
scoring) and fixed by sorted site names, so a run is deterministic. Per fold:
the model is fitted on the other folds' blocks; its threshold is the one that
maximizes the mean page F1 on the *other* folds' out-of-fold predictions, so a
fold's score uses neither its labels for fitting nor for the threshold. The
shipped model is then fitted on every block, with the threshold that is best
on all out-of-fold predictions.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from sitestrip.bench.blockdata import BlockDataset
from sitestrip.bench.train_models import as_model, choose_threshold, fit_ceml, fit_gbdt, write_model
from sitestrip.transforms.blocks import GROUPS, render_blocks
from sitestrip.transforms.classify import MainContentParams, block_proba, hard_rule_noise
from sitestrip.transforms.features import FEATURE_NAMES, FEATURE_SET_VERSION
from sitestrip.transforms.metrics import word_prf

KINDS = {"learned": "gbdt", "ceml": "ceml"}
SEED = 7
# The product model's boosting parameters, settled by site-grouped CV on the dev corpora
# (docs/model.md has the comparison).
GBDT_LIBRARY = "lightgbm"
GBDT_PARAMS = {"num_leaves": 31, "learning_rate": 0.1, "min_data_in_leaf": 50,
               "feature_fraction": 0.8, "bagging_fraction": 0.5, "bagging_freq": 1,
               "max_bin": 63, "n_trees": 150, "num_threads": 2}


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
    """The fitted model (payload, info) of `kind` ("gbdt" or "ceml") on every block of `data`."""
    if kind == "gbdt":
        return fit_gbdt(data.X, data.y, block_weights(data), GBDT_PARAMS, seed, library=GBDT_LIBRARY)
    # Seed 002's trees learn only what its hard rules leave open.
    open_blocks = ~hard_rule_noise(data.X, data.group)
    return fit_ceml(data.X[open_blocks], data.y[open_blocks], block_weights(data)[open_blocks],
                    data.group[open_blocks].astype(np.int64), list(GROUPS),
                    data.site_of_block[open_blocks], seed)


def predict(kind: str, payload: dict, data: BlockDataset, params: MainContentParams) -> np.ndarray:
    """What the pipeline's classify step computes for these blocks (transforms/classify.py)."""
    model = as_model(kind, payload, FEATURE_NAMES, FEATURE_SET_VERSION)
    return block_proba(model, data.X, data.group, data.words, params, data.page)


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


def cross_validate(data: BlockDataset, kind: str, params: MainContentParams, folds: int = 5, seed: int = SEED,
                   log=print) -> CrossValidation:
    fold = site_folds(data, folds)
    block_fold = fold[data.page]
    proba = np.zeros(len(data.y))
    for k in range(folds):
        start = time.monotonic()
        train = data.subset_pages(np.flatnonzero(fold != k))
        test = block_fold == k
        proba[test] = predict(kind, fit(train, kind, seed).payload, _rows(data, test), params)
        log(f"  fold {k + 1}/{folds}: {int((fold == k).sum())} pages scored, {time.monotonic() - start:.0f} s")
    selected = np.zeros(len(data.y), dtype=bool)
    thresholds = []
    for k in range(folds):
        t = _threshold(data, proba, np.flatnonzero(fold != k))
        thresholds.append(t)
        selected[block_fold == k] = proba[block_fold == k] >= t
    overall = _threshold(data, proba, np.arange(len(data.pages)))
    return CrossValidation(proba, selected, fold, thresholds, overall)


def _rows(data: BlockDataset, rows: np.ndarray) -> BlockDataset:
    return BlockDataset(data.X[rows], data.y[rows], data.words[rows], data.aligned[rows],
                        data.group[rows], data.page[rows], data.pages)


def page_texts(data: BlockDataset, selected: np.ndarray) -> dict:
    """url → main_text of the selected blocks (the pipeline's rendering)."""
    starts = np.searchsorted(data.page, np.arange(len(data.pages)), side="left")
    ends = np.searchsorted(data.page, np.arange(len(data.pages)), side="right")
    return {p.url: render_blocks(p.texts, selected[starts[i]:ends[i]]) for i, p in enumerate(data.pages)}


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
          seed: int = SEED, params: MainContentParams = MainContentParams(), log=print) -> dict:
    """Cross-validate, fit on everything, write the model file; returns the training report."""
    kind = KINDS[method]
    log(f"{method}: {len(data.pages)} pages, {len(data.y)} blocks, "
        f"{len({p.site for p in data.pages})} sites; {folds}-fold CV grouped by site")
    cv = cross_validate(data, kind, params, folds, seed, log)
    scores = cv_scores(data, page_texts(data, cv.selected))
    for corpus, s in scores.items():
        log(f"  CV {corpus}: mean word F1 {s['mean_f1']:.4f} (P {s['mean_precision']:.4f}, "
            f"R {s['mean_recall']:.4f}, {s['pages']} pages)")
    fitted = fit(data, kind, seed)
    corpora = sorted({p.corpus for p in data.pages})
    trained_on = {"corpora": corpora, "pages": len(data.pages), "blocks": int(len(data.y)),
                  "sites": len({p.site for p in data.pages}), "seed": seed, "folds": folds,
                  "cv_fold_thresholds": [round(t, 4) for t in cv.thresholds],
                  "cv_mean_word_f1": scores,
                  "fit": fitted.info,
                  "neighbour_weight": params.neighbour_weight if kind == "gbdt" else None}
    write_model(out_path, kind, fitted.payload, FEATURE_NAMES, FEATURE_SET_VERSION, cv.threshold, trained_on)
    log(f"wrote {out_path} (threshold {cv.threshold:.3f})")
    return trained_on
