"""Training side of the block classifiers (design §10): fit, export, choose the threshold.

The product's workers only read model files (`transforms.model`, numpy only).
This module fits them with the training libraries, imported lazily so nothing
else in `bench` needs them (`pip install -e '.[train]'`), and exports each
library's trees into the shipped format:

- `fit_gbdt` — the `learned` model: LightGBM, scikit-learn HistGradientBoosting
  or XGBoost; `compare_gbdt_libraries` scores them on the same site-grouped
  folds through the shipped evaluator, so the choice is made by measurement.
- `fit_ceml` — seed 002's classifier: one entropy CART per instance group with
  rpart's defaults, cost-complexity pruned with alpha chosen by cross-validation
  grouped by site.
- `choose_threshold` — the threshold that maximizes mean per-page word F1.
- `write_model` — a model file with deterministic bytes.

Every exporter refuses what the shipped format cannot express exactly
(categorical splits, LightGBM's zero-as-missing, linear trees, averaged forests).
"""
from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from collections import deque
from typing import Callable, NamedTuple

import numpy as np

from sitestrip.transforms.model import (BlockModel, ModelError, encode_model, load_model,
                                        model_document)

GBDT_LIBRARIES = ("lightgbm", "sklearn", "xgboost")

# Comparable settings across libraries: 300 trees of up to 31 leaves, step 0.05,
# at least 20 blocks per leaf. `n_trees` is the common key; the rest is native.
DEFAULT_GBDT_PARAMS = {
    "lightgbm": {"n_trees": 300, "learning_rate": 0.05, "num_leaves": 31, "min_data_in_leaf": 20,
                 "max_bin": 255, "force_row_wise": True},
    "sklearn": {"n_trees": 300, "learning_rate": 0.05, "max_leaf_nodes": 31, "min_samples_leaf": 20,
                "max_bins": 255, "early_stopping": False},
    "xgboost": {"n_trees": 300, "learning_rate": 0.05, "max_leaves": 31, "max_depth": 0,
                "grow_policy": "lossguide", "tree_method": "hist", "max_bin": 256,
                "min_child_weight": 1.0},
}

# rpart's defaults (seed 002): minsplit 20, minbucket 7 (= round(20/3)), maxdepth 30.
CEML_TREE = {"criterion": "entropy", "min_samples_split": 20, "min_samples_leaf": 7, "max_depth": 30}


class Fitted(NamedTuple):
    payload: dict    # the model file's payload
    info: dict       # what went into it, for the file's trained_on


class ExportError(ValueError):
    """A trained model the shipped format cannot reproduce exactly."""


# ---------------------------------------------------------------- tree arrays

def tree_arrays(left, right, feature, threshold, default_left, value, is_leaf) -> dict:
    """One tree in the file's canonical form from a library's node arrays (any node
    numbering, root 0): breadth-first order, leaves with feature -1, threshold 0,
    default_left 0, internal nodes with value 0. Unreachable nodes are dropped."""
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    is_leaf = np.asarray(is_leaf, dtype=bool)
    order, level = [], np.zeros(1, dtype=np.int64)
    while level.size:
        order.append(level)
        if sum(o.size for o in order) > is_leaf.size:
            raise ExportError("the library's tree arrays contain a cycle")
        inner = level[~is_leaf[level]]
        level = np.stack((left[inner], right[inner]), axis=1).ravel()
    order = np.concatenate(order)
    new_id = np.full(is_leaf.size, -1, dtype=np.int64)
    new_id[order] = np.arange(order.size)
    leaf = is_leaf[order]
    feature = np.asarray(feature, dtype=np.int64)[order]
    threshold = np.asarray(threshold, dtype=np.float64)[order]
    default_left = np.asarray(default_left, dtype=bool)[order]
    value = np.asarray(value, dtype=np.float64)[order]
    if not np.all(np.isfinite(threshold[~leaf])):
        raise ExportError("a split threshold is not finite")
    return {
        "feature": np.where(leaf, -1, feature).tolist(),
        "threshold": np.where(leaf, 0.0, threshold).tolist(),
        "left": np.where(leaf, -1, new_id[np.where(leaf, 0, left[order])]).tolist(),
        "right": np.where(leaf, -1, new_id[np.where(leaf, 0, right[order])]).tolist(),
        "default_left": np.where(leaf, False, default_left).astype(int).tolist(),
        "value": np.where(leaf, value, 0.0).tolist(),
    }


# ---------------------------------------------------------------- exporters

def _finite(threshold) -> np.ndarray:
    """sklearn's "missing vs everything" split has threshold +inf (every finite value
    goes left). The largest double routes every finite float32 the same way; only
    +inf itself would differ, and the shipped evaluator refuses infinite features."""
    threshold = np.asarray(threshold, dtype=np.float64)
    return np.where(np.isposinf(threshold), np.finfo(np.float64).max, threshold)


def export_lightgbm(booster, n_features: int) -> dict:
    """gbdt payload from a LightGBM binary Booster, via `dump_model()`.

    LightGBM's numerical split (tree.h NumericalDecision): missing_type NaN sends
    NaN to the default side; missing_type None first turns NaN into 0.0, so NaN
    goes wherever 0 goes; missing_type Zero (zero_as_missing) also routes zeros to
    the default side, which one `<=` cannot express and is refused. The
    boost-from-average bias is already inside the first tree's leaves; a
    `sigmoid:s` objective scales the raw score, folded into the leaf values."""
    dump = booster.dump_model()
    objective = str(dump.get("objective", ""))
    if not objective.startswith("binary"):
        raise ExportError(f"LightGBM objective {objective!r} is not binary")
    scale = 1.0
    for part in objective.split()[1:]:
        if part.startswith("sigmoid:"):
            scale = float(part.split(":", 1)[1])
    if dump.get("num_tree_per_iteration", 1) != 1 or dump.get("num_class", 1) != 1:
        raise ExportError("LightGBM model has more than one tree per iteration")
    if dump.get("average_output"):
        raise ExportError("LightGBM random-forest mode (average_output) is not supported")
    if dump.get("max_feature_idx", -1) + 1 != n_features:
        raise ExportError(f"LightGBM model has {dump.get('max_feature_idx', -1) + 1} features, "
                          f"expected {n_features}")
    trees = []
    for info in dump["tree_info"]:
        if info.get("num_cat", 0):
            raise ExportError(f"tree {info['tree_index']} has categorical splits")
        nodes = [info["tree_structure"]]
        left, right, feature, threshold, default_left, value, is_leaf = [], [], [], [], [], [], []
        queue = deque([0])
        while queue:
            node = nodes[queue.popleft()]
            if "leaf_features" in node or "leaf_coeff" in node:
                raise ExportError("linear trees are not supported")
            if "split_index" not in node:
                left.append(0), right.append(0), feature.append(0), threshold.append(0.0)
                default_left.append(False), value.append(node["leaf_value"] * scale)
                is_leaf.append(True)
                continue
            if node["decision_type"] != "<=":
                raise ExportError(f"categorical split ({node['decision_type']!r}) is not supported")
            t = float(node["threshold"])
            missing = node["missing_type"]
            if missing == "NaN":
                nan_left = bool(node["default_left"])
            elif missing == "None":
                nan_left = 0.0 <= t
            else:
                raise ExportError(f"missing_type {missing!r} (zero_as_missing) is not supported")
            for child in (node["left_child"], node["right_child"]):
                nodes.append(child)
                queue.append(len(nodes) - 1)
            left.append(len(nodes) - 2), right.append(len(nodes) - 1)
            feature.append(node["split_feature"]), threshold.append(t)
            default_left.append(nan_left), value.append(0.0), is_leaf.append(False)
        trees.append(tree_arrays(left, right, feature, threshold, default_left, value, is_leaf))
    return {"base_score": 0.0, "trees": trees}


def export_sklearn_hgb(clf) -> dict:
    """gbdt payload from a fitted binary HistGradientBoostingClassifier.

    Its predictors' `nodes` hold num_threshold (x <= t goes left), missing_go_to_left
    and shrunk leaf values; the raw score starts from `_baseline_prediction`."""
    if len(clf.classes_) != 2 or clf.n_trees_per_iteration_ != 1:
        raise ExportError("only binary HistGradientBoostingClassifier models are supported")
    if getattr(clf, "_preprocessor", None) is not None or (
            getattr(clf, "is_categorical_", None) is not None and np.any(clf.is_categorical_)):
        raise ExportError("categorical features are not supported")
    trees = []
    for (predictor,) in clf._predictors:
        nodes = predictor.nodes
        if np.any(nodes["is_categorical"]):
            raise ExportError("categorical splits are not supported")
        trees.append(tree_arrays(nodes["left"], nodes["right"], nodes["feature_idx"],
                                 _finite(nodes["num_threshold"]),
                                 nodes["missing_go_to_left"], nodes["value"], nodes["is_leaf"]))
    base = np.asarray(clf._baseline_prediction, dtype=np.float64).ravel()
    return {"base_score": float(base[0]), "trees": trees}


def export_xgboost(booster, n_features: int) -> dict:
    """gbdt payload from an XGBoost binary:logistic Booster, via its JSON model.

    XGBoost compares float32 values `x < t` (left); for float32 x that is
    `x <= the float32 just below t`, which is what the file stores. base_score is
    a probability; its logit starts the raw score."""
    model = json.loads(booster.save_raw("json"))["learner"]
    objective = model["objective"]["name"]
    if objective != "binary:logistic":
        raise ExportError(f"XGBoost objective {objective!r} is not binary:logistic")
    booster_kind = model["gradient_booster"]["name"]
    if booster_kind != "gbtree":
        raise ExportError(f"XGBoost booster {booster_kind!r} is not supported (gbtree only)")
    params = model["learner_model_param"]
    if int(params.get("num_feature", n_features)) != n_features:
        raise ExportError(f"XGBoost model has {params['num_feature']} features, expected {n_features}")
    base_text = str(params["base_score"]).strip("[]")
    if "," in base_text:
        raise ExportError("XGBoost model has a vector base_score")
    base = float(base_text)
    trees = []
    for tree in model["gradient_booster"]["model"]["trees"]:
        if any(tree.get("split_type", [])) or tree.get("categories"):
            raise ExportError("categorical splits are not supported")
        left = np.asarray(tree["left_children"], dtype=np.int64)
        is_leaf = left == -1
        cond = np.asarray(tree["split_conditions"], dtype=np.float32)
        below = np.nextafter(cond, np.float32(-np.inf)).astype(np.float64)
        trees.append(tree_arrays(left, tree["right_children"], tree["split_indices"],
                                 np.where(is_leaf, 0.0, below), tree["default_left"],
                                 np.where(is_leaf, cond.astype(np.float64), 0.0), is_leaf))
    return {"base_score": math.log(base / (1.0 - base)), "trees": trees}


def export_decision_tree(clf) -> dict:
    """One ceml tree from a fitted sklearn DecisionTreeClassifier: leaf value = P(class 1).
    sklearn compares float32 features `x <= t` (left); NaN follows missing_go_to_left."""
    t = clf.tree_
    classes = list(clf.classes_)
    fractions = t.value[:, 0, :] / t.value[:, 0, :].sum(axis=1, keepdims=True)
    p_main = fractions[:, classes.index(1)] if 1 in classes else np.zeros(t.node_count)
    is_leaf = t.children_left == -1
    return tree_arrays(t.children_left, t.children_right, t.feature, _finite(t.threshold),
                       t.missing_go_to_left, p_main, is_leaf)


def leaf_tree(p_main: float) -> dict:
    """A tree that is one leaf: every block of its group gets p_main."""
    return {"feature": [-1], "threshold": [0.0], "left": [-1], "right": [-1],
            "default_left": [0], "value": [float(p_main)]}


# ---------------------------------------------------------------- fitting: gbdt

def _library_version(library: str) -> str:
    import importlib
    return importlib.import_module({"sklearn": "sklearn"}.get(library, library)).__version__


def fit_gbdt(X, y, w=None, params: dict | None = None, seed: int = 0,
             library: str = "lightgbm") -> Fitted:
    """A binary tree ensemble on float32 features X, labels y (1 = main), block
    weights w, exported to the gbdt payload. `params` override
    DEFAULT_GBDT_PARAMS[library] (`n_trees` plus the library's own names); the
    settings that the format needs (binary objective, no categorical features,
    no zero-as-missing) and the seed are forced."""
    if library not in GBDT_LIBRARIES:
        raise ValueError(f"library must be one of {GBDT_LIBRARIES}, got {library!r}")
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y).astype(np.int64)
    w = None if w is None else np.asarray(w, dtype=np.float64)
    merged = {**DEFAULT_GBDT_PARAMS[library], **(params or {})}
    n_trees = int(merged.pop("n_trees"))
    if library == "lightgbm":
        import lightgbm as lgb
        native = {**merged, "objective": "binary", "seed": seed, "deterministic": True,
                  "verbose": -1, "zero_as_missing": False, "linear_tree": False}
        booster = lgb.train(native, lgb.Dataset(X, label=y, weight=w, categorical_feature=[]),
                            num_boost_round=n_trees)
        payload = export_lightgbm(booster, X.shape[1])
    elif library == "sklearn":
        from sklearn.ensemble import HistGradientBoostingClassifier
        native = {**merged, "max_iter": n_trees, "random_state": seed, "categorical_features": None}
        clf = HistGradientBoostingClassifier(**native).fit(X, y, sample_weight=w)
        payload = export_sklearn_hgb(clf)
    else:
        import xgboost as xgb
        native = {**merged, "objective": "binary:logistic", "seed": seed, "verbosity": 0}
        booster = xgb.train(native, xgb.DMatrix(X, label=y, weight=w), num_boost_round=n_trees)
        payload = export_xgboost(booster, X.shape[1])
    info = {"library": library, "version": _library_version(library), "seed": seed,
            "params": {"n_trees": n_trees, **{k: v for k, v in native.items()
                                              if k not in ("verbose", "verbosity")}},
            "trees": len(payload["trees"])}
    return Fitted(payload, info)


# ---------------------------------------------------------------- fitting: ceml

def collapse_alphas(tree) -> np.ndarray:
    """For each node of a fitted sklearn tree, the smallest ccp_alpha at which
    sklearn's minimal cost-complexity pruning turns it into a leaf: 0 for leaves,
    +inf for nodes only ever removed with an ancestor.

    sklearn (_tree.pyx `_cost_complexity_prune`) repeatedly collapses the internal
    node of least (R(t) - R(T_t)) / (leaves(T_t) - 1), R = weighted impurity share,
    and stops at the first such alpha above ccp_alpha. The steps' alphas need not
    rise, so a node is collapsed for ccp_alpha >= the running maximum at its step."""
    cl, cr = tree.children_left, tree.children_right
    n = tree.node_count
    leaf = cl == -1
    inner = np.flatnonzero(~leaf)
    parent = np.full(n, -1, dtype=np.int64)
    parent[cl[inner]] = inner
    parent[cr[inner]] = inner
    weight = tree.weighted_n_node_samples
    r_node = weight * tree.impurity / weight[0]
    level, levels = np.zeros(1, dtype=np.int64), []
    while level.size:
        levels.append(level)
        level = level[~leaf[level]]
        level = np.concatenate((cl[level], cr[level]))
    r_branch = np.where(leaf, r_node, 0.0)
    n_leaves = np.zeros(n, dtype=np.int64)
    for level in reversed(levels):        # children before parents: subtree sums
        inner_level = level[~leaf[level]]
        for child in (cl[inner_level], cr[inner_level]):
            r_branch[inner_level] += r_branch[child]
            n_leaves[inner_level] += np.where(leaf[child], 1, n_leaves[child])
    alpha = np.where(leaf, 0.0, np.inf)
    candidate = ~leaf
    running = 0.0
    while candidate[0]:
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.where(candidate, (r_node - r_branch) / (n_leaves - 1), np.inf)
        i = int(np.argmin(g))
        running = max(running, float(g[i]))
        alpha[i] = running
        stack = [i]
        while stack:                          # its subtree leaves the candidates
            j = stack.pop()
            if candidate[j]:
                candidate[j] = False
                stack.extend((cl[j], cr[j]))
        pruned, diff = n_leaves[i] - 1, r_node[i] - r_branch[i]
        r_branch[i], n_leaves[i] = r_node[i], 0
        j = parent[i]
        while j >= 0:
            n_leaves[j] -= pruned
            r_branch[j] += diff
            j = parent[j]
    return alpha


def pruned_answer(tree, alpha: np.ndarray, ccp_alphas: np.ndarray) -> np.ndarray:
    """[len(ccp_alphas), nodes]: the node whose value answers for each original node
    in the tree pruned at each ccp_alpha (its highest collapsed ancestor-or-self)."""
    cl, cr = tree.children_left, tree.children_right
    ccp_alphas = np.asarray(ccp_alphas, dtype=np.float64)[:, None]
    answer = np.full((ccp_alphas.shape[0], tree.node_count), -1, dtype=np.int64)
    answer[:, 0] = np.where(alpha[0] <= ccp_alphas[:, 0], 0, -1)
    level = np.zeros(1, dtype=np.int64)
    while level.size:
        level = level[cl[level] != -1]
        for child in (cl[level], cr[level]):
            above = answer[:, level]
            answer[:, child] = np.where(above >= 0, above, np.where(alpha[child] <= ccp_alphas, child, -1))
        level = np.concatenate((cl[level], cr[level]))
    return answer


def _p_main(clf) -> np.ndarray:
    """P(class 1) at every node of a fitted DecisionTreeClassifier."""
    v = clf.tree_.value[:, 0, :]
    v = v / v.sum(axis=1, keepdims=True)
    classes = list(clf.classes_)
    return v[:, classes.index(1)] if 1 in classes else np.zeros(v.shape[0])


def choose_ccp_alpha(X, y, w, sites, *, seed: int = 0, n_splits: int = 5,
                     max_candidates: int = 256) -> dict:
    """rpart's pruning by cross-validation, on sklearn's cost-complexity path and
    site-grouped folds: candidates are the geometric means of consecutive alphas of
    the path on all data (each stands for one subtree, as rpart's cp table does);
    the winner has the least weighted held-out misclassification error (P(main)
    >= 0.5 predicts main), ties going to the larger alpha (the smaller tree).
    Each fold's tree is grown once and pruned for all candidates at once."""
    from sklearn.model_selection import GroupKFold
    from sklearn.tree import DecisionTreeClassifier
    path = DecisionTreeClassifier(**CEML_TREE, random_state=seed).cost_complexity_pruning_path(
        X, y, sample_weight=w)
    steps = np.unique(np.maximum.accumulate(np.maximum(path.ccp_alphas, 0.0)))
    candidates = np.concatenate((np.sqrt(steps[:-1] * steps[1:]), steps[-1:]))
    if candidates.size > max_candidates:
        candidates = candidates[np.unique(np.linspace(0, candidates.size - 1, max_candidates).round()
                                          .astype(int))]
    errors = np.zeros(candidates.size)
    folds = GroupKFold(n_splits=min(n_splits, np.unique(sites).size))
    for train, test in folds.split(X, y, groups=sites):
        clf = DecisionTreeClassifier(**CEML_TREE, random_state=seed).fit(
            X[train], y[train], sample_weight=w[train])
        answer = pruned_answer(clf.tree_, collapse_alphas(clf.tree_), candidates)
        p = _p_main(clf)[answer[:, clf.apply(X[test])]]         # [candidates, test blocks]
        errors += ((p >= 0.5) != (y[test] == 1)) @ w[test]
    best = np.flatnonzero(errors == errors.min())[-1]
    return {"ccp_alpha": float(candidates[best]), "cv_error": float(errors[best] / w.sum()),
            "cv_error_unpruned": float(errors[0] / w.sum()), "candidates": int(candidates.size)}


def fit_ceml(X, y, w, group, group_names, sites, seed: int = 0, n_splits: int = 5) -> Fitted:
    """Seed 002's classifier: per instance group, an entropy CART with rpart's
    defaults pruned at the cross-validated ccp_alpha, exported to the ceml payload.

    A group without blocks, with one class, or below rpart's min split gets one
    leaf (its weighted share of main blocks; the whole set's for an empty group).
    A group whose blocks come from one site cannot be cross-validated by site and
    also gets one leaf: an unpruned tree would be fitted to that site alone."""
    from sklearn.tree import DecisionTreeClassifier
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y).astype(np.int64)
    w = np.ones(y.size) if w is None else np.asarray(w, dtype=np.float64)
    group, sites = np.asarray(group), np.asarray(sites)
    prior = float(w @ y / w.sum()) if w.sum() else 0.0
    trees, groups_info = [], {}
    for code, name in enumerate(group_names):
        idx = np.flatnonzero(group == code)
        Xg, yg, wg, sg = X[idx], y[idx], w[idx], sites[idx]
        share = float(wg @ yg / wg.sum()) if idx.size and wg.sum() else prior
        info = {"blocks": int(idx.size), "sites": int(np.unique(sg).size), "main_share": share}
        if idx.size < CEML_TREE["min_samples_split"] or np.unique(yg).size < 2 or info["sites"] < 2:
            info["tree"] = "one leaf: " + ("no blocks" if not idx.size else
                                           "one class" if np.unique(yg).size < 2 else
                                           "below min split" if idx.size < CEML_TREE["min_samples_split"]
                                           else "one site, no site-grouped CV")
            trees.append(leaf_tree(share))
        else:
            pruning = choose_ccp_alpha(Xg, yg, wg, sg, seed=seed, n_splits=n_splits)
            clf = DecisionTreeClassifier(**CEML_TREE, ccp_alpha=pruning["ccp_alpha"],
                                         random_state=seed).fit(Xg, yg, sample_weight=wg)
            trees.append(export_decision_tree(clf))
            info.update(pruning, leaves=int(clf.get_n_leaves()), depth=int(clf.get_depth()))
        groups_info[name] = info
    import sklearn
    return Fitted({"group_names": list(group_names), "trees": trees},
                  {"library": "sklearn", "version": sklearn.__version__, "seed": seed,
                   "tree": CEML_TREE, "cv": f"GroupKFold by site, {n_splits} folds",
                   "groups": groups_info})


# ---------------------------------------------------------------- threshold

class ThresholdChoice(NamedTuple):
    threshold: float
    mean_f1: float
    grid: np.ndarray       # thresholds tried
    curve: np.ndarray      # mean per-page word F1 at each


def page_word_f1(proba, label, words, page, grid, aligned=None, gold_words=None) -> np.ndarray:
    """[pages, thresholds] word F1 of each page when blocks with proba >= t are main.

    Per page: predicted = words of blocks called main, gold = words of gold-main
    blocks, overlap = words of blocks both; F1 = 2·overlap / (predicted + gold),
    and 1 when a page has neither (design §9's convention, transforms.metrics.PRF)."""
    proba = np.asarray(proba, dtype=np.float64)
    label = np.asarray(label).astype(bool)
    words = np.asarray(words, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    if np.any(np.diff(grid) <= 0):
        raise ValueError("grid must be strictly increasing")
    _, page_index = np.unique(np.asarray(page), return_inverse=True)
    n_pages = int(page_index.max()) + 1 if page_index.size else 0
    # block i is main at thresholds grid[:passes[i]]: count it at column passes[i];
    # a reverse cumulative sum then holds at column k+1 the blocks main at grid[k].
    passes = np.searchsorted(grid, proba, side="right")
    predicted = np.zeros((n_pages, grid.size + 1))
    overlap = np.zeros((n_pages, grid.size + 1))
    np.add.at(predicted, (page_index, passes), words)
    # With `aligned` (tokens of each block aligned with the gold) and `gold_words` (per page,
    # in order of the sorted page ids) the overlap and the gold are the page's own token
    # counts, closer to design §9's word F1 than whole-block labels.
    hit = words * label if aligned is None else np.asarray(aligned, dtype=np.float64)
    np.add.at(overlap, (page_index, passes), hit)
    predicted = np.cumsum(predicted[:, ::-1], axis=1)[:, ::-1][:, 1:]
    overlap = np.cumsum(overlap[:, ::-1], axis=1)[:, ::-1][:, 1:]
    gold = (np.bincount(page_index, weights=words * label, minlength=n_pages)[:, None] if gold_words is None
            else np.asarray(gold_words, dtype=np.float64)[:, None])
    total = predicted + gold
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 2 * overlap / total, 1.0)


def choose_threshold(proba, label, words, page, grid=None, aligned=None, gold_words=None) -> ThresholdChoice:
    """The threshold maximizing the mean over pages of word-weighted F1 (blocks with
    proba >= threshold are main). Among equal maxima, the middle of the first run
    of consecutive maximal grid points: the value farthest from the probabilities
    that bound that run. Default grid: 0.00, 0.01, ..., 1.00."""
    grid = np.round(np.linspace(0.0, 1.0, 101), 2) if grid is None else np.asarray(grid, dtype=np.float64)
    if not len(proba):
        raise ValueError("no blocks")
    curve = page_word_f1(proba, label, words, page, grid, aligned, gold_words).mean(axis=0)
    best = np.flatnonzero(curve == curve.max())
    run_end = best[0]
    while run_end + 1 < grid.size and curve[run_end + 1] == curve.max():
        run_end += 1
    pick = (best[0] + run_end) // 2
    return ThresholdChoice(float(grid[pick]), float(curve[pick]), grid, curve)


# ---------------------------------------------------------------- model files

def as_model(kind: str, payload: dict, feature_names, feature_set: str = "unversioned",
             threshold: float = 0.5, trained_on: dict | None = None) -> BlockModel:
    """The BlockModel a payload becomes, through the same encoding and validation as a file."""
    doc = model_document(kind, payload, feature_names, feature_set, threshold, trained_on or {})
    return load_model(encode_model(doc, compress=False))


def write_model(path, kind: str, payload: dict, feature_names, feature_set: str,
                threshold: float, trained_on: dict) -> str:
    """Write a model file (gzip when the name ends in .gz) and return its model_id.
    The same inputs give the same bytes; the file is validated by loading it back
    before it replaces anything at `path`."""
    path = os.fspath(path)
    doc = model_document(kind, payload, feature_names, feature_set, threshold, trained_on)
    data = encode_model(doc, compress=path.endswith(".gz"))
    try:
        load_model(data)
    except ModelError as e:
        raise ModelError(f"refusing to write an invalid model to {path}: {e}") from None
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".model-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return doc["model_id"]


# ---------------------------------------------------------------- comparison

def site_cv_proba(fit: Callable[..., Fitted], kind: str, X, y, w, sites, *, group=None,
                  feature_names=None, n_splits: int = 5) -> np.ndarray:
    """Out-of-fold P(main) of every block, folds grouped by site, predicted by the
    shipped evaluator from each fold's exported model. fit(X, y, w) -> Fitted
    (with group= as well for ceml)."""
    from sklearn.model_selection import GroupKFold
    X = np.asarray(X, dtype=np.float32)
    names = list(feature_names or (f"f{i}" for i in range(X.shape[1])))
    out = np.empty(X.shape[0])
    w = np.ones(X.shape[0]) if w is None else np.asarray(w, dtype=np.float64)
    for train, test in GroupKFold(n_splits=n_splits).split(X, y, groups=sites):
        extra = {} if group is None else {"group": group[train]}
        fitted = fit(X[train], y[train], w[train], **extra)
        model = as_model(kind, fitted.payload, names)
        out[test] = model.predict_proba(X[test], None if group is None else group[test])
    return out


def compare_gbdt_libraries(X, y, w, sites, pages, words, *, libraries=GBDT_LIBRARIES,
                           params: dict | None = None, seed: int = 0, n_splits: int = 5) -> list[dict]:
    """Each library on the same site-grouped folds: mean page word F1 at its best
    threshold (out-of-fold), log loss, fit time for all folds, and the shipped
    evaluator's µs per block and gzip size of a model fitted on all data."""
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y).astype(np.int64)
    rows = []
    for library in libraries:
        def fit(Xt, yt, wt, library=library):
            return fit_gbdt(Xt, yt, wt, (params or {}).get(library), seed, library)
        start = time.perf_counter()
        oof = site_cv_proba(fit, "gbdt", X, y, w, sites, n_splits=n_splits)
        fit_s = time.perf_counter() - start
        choice = choose_threshold(oof, y, words, pages)
        p = np.clip(oof, 1e-15, 1 - 1e-15)
        weights = np.ones(y.size) if w is None else np.asarray(w, dtype=np.float64)
        log_loss = float(-(weights @ (y * np.log(p) + (1 - y) * np.log(1 - p))) / weights.sum())
        full = fit(X, y, w)
        names = [f"f{i}" for i in range(X.shape[1])]
        model = as_model("gbdt", full.payload, names)
        size = len(encode_model(model_document("gbdt", full.payload, names, "x", 0.5, {}),
                                compress=True))
        rows.append({"library": library, "version": full.info["version"],
                     "mean_page_f1": round(choice.mean_f1, 4), "threshold": choice.threshold,
                     "log_loss": round(log_loss, 4), "cv_fit_seconds": round(fit_s, 1),
                     "predict_us_per_block": round(predict_us_per_block(model, X[:2000]), 2),
                     "model_gz_bytes": size})
    return rows


def predict_us_per_block(model: BlockModel, X, *, batch: int = 500, repeats: int = 5) -> float:
    """Best-of-`repeats` time of predict_proba over X in batches of `batch` blocks."""
    X = np.asarray(X, dtype=np.float32)
    groups = np.zeros(X.shape[0], dtype=np.int64) if model.kind == "ceml" else None
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(0, X.shape[0], batch):
            model.predict_proba(X[i:i + batch], None if groups is None else groups[i:i + batch])
        best = min(best, time.perf_counter() - start)
    return best / X.shape[0] * 1e6


def _synthetic(n: int, n_features: int, seed: int):
    """Tabular data with interactions, ties (integer counts) and NaNs, for speed runs."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)).astype(np.float32)
    X[:, ::3] = np.round(np.abs(X[:, ::3]) * 5)
    X[rng.random(X.shape) < 0.05] = np.nan
    z = np.nan_to_num(X[:, 0] - X[:, 1] * X[:, 2] + np.sin(X[:, 3]) + 0.5 * X[:, 4] ** 2)
    y = (z + rng.normal(size=n) > 1).astype(np.int64)
    return X, y


def main(argv=None) -> int:
    """python -m sitestrip_bench.train_models speed            # evaluator cost on a 300-tree model
       python -m sitestrip_bench.train_models compare DATA.npz  # the libraries on real blocks
    DATA.npz holds X (float32[n, F]), y, sites, pages, words and optionally w."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["speed"]:
        X, y = _synthetic(20000, 60, 0)
        for library in ("lightgbm", "sklearn"):
            fitted = fit_gbdt(X, y, None, {"n_trees": 300}, 0, library)
            names = [f"f{i}" for i in range(60)]
            doc = model_document("gbdt", fitted.payload, names, "synthetic", 0.5, fitted.info)
            model = as_model("gbdt", fitted.payload, names)
            print(f"{library}: {model!r}; file {len(encode_model(doc, compress=False))} bytes, "
                  f"gzip {len(encode_model(doc, compress=True))} bytes; "
                  f"{predict_us_per_block(model, X[:5000]):.2f} µs/block in batches of 500")
        return 0
    if len(argv) == 2 and argv[0] == "compare":
        data = np.load(argv[1])
        rows = compare_gbdt_libraries(data["X"], data["y"], data["w"] if "w" in data else None,
                                      data["sites"], data["pages"], data["words"])
        for row in rows:
            print(json.dumps(row))
        return 0
    print(main.__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
