"""Block-classifier model files (transforms/model.py) and their training side (bench/sitestrip_bench/train_models.py).

The file format and the evaluator are tested on hand-built trees; each exporter
against its own library's predictions (skipped when the `train` extra is missing).
"""
import copy
import gzip
import json

import numpy as np
import pytest

from sitestrip_bench.train_models import (as_model, choose_threshold, collapse_alphas, fit_ceml, fit_gbdt,
                                 page_word_f1, pruned_answer, write_model, CEML_TREE)
from sitestrip.transforms.model import (ModelError, compute_model_id, encode_model, load_model,
                                        model_document)
from helpers.compiled import require_built

NAMES = ["f0", "f1"]


def _hand_payload():
    """Tree 0: root `f0 <= 0.5` (NaN left) -> leaf +1.0 | node `f1 <= -2.0` (NaN right)
    -> leaf -1.0 | leaf +0.5. Tree 1: one leaf +0.25. base_score -0.5."""
    tree0 = {"feature": [0, -1, 1, -1, -1], "threshold": [0.5, 0.0, -2.0, 0.0, 0.0],
             "left": [1, -1, 3, -1, -1], "right": [2, -1, 4, -1, -1],
             "default_left": [1, 0, 0, 0, 0], "value": [0.0, 1.0, 0.0, -1.0, 0.5]}
    tree1 = {"feature": [-1], "threshold": [0.0], "left": [-1], "right": [-1],
             "default_left": [0], "value": [0.25]}
    return {"base_score": -0.5, "trees": [tree0, tree1]}


def _doc(**overrides):
    doc = model_document("gbdt", _hand_payload(), NAMES, "test-v1", 0.5, {"note": "hand-built"})
    doc.update(overrides)
    return doc


def _rehashed(doc):
    """A document edited on purpose, with its model_id made consistent again, so that
    only the structural checks can refuse it."""
    doc["model_id"] = compute_model_id(doc["kind"], doc["feature_set"], doc["feature_names"],
                                       doc["threshold"], doc["payload"])
    return encode_model(doc, compress=False)


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


# ---------------------------------------------------------------- evaluator

def test_hand_built_gbdt_follows_thresholds_and_nan_directions():
    """raw = -0.5 + tree0 + 0.25:
    [0.5, 0]    : 0.5 <= 0.5 left -> +1.0             -> 0.75
    [NaN, -3]   : NaN at root goes left -> +1.0        -> 0.75
    [0.6, -2.0] : right; -2.0 <= -2.0 left -> -1.0     -> -1.25
    [0.6, NaN]  : right; NaN at node 2 goes right +0.5 -> 0.25
    [0.6, -1.9] : right; -1.9 > -2.0 right -> +0.5     -> 0.25"""
    model = load_model(encode_model(_doc(), compress=False))
    X = np.array([[0.5, 0], [np.nan, -3], [0.6, -2.0], [0.6, np.nan], [0.6, -1.9]], dtype=np.float32)
    expected = _sigmoid(np.array([0.75, 0.75, -1.25, 0.25, 0.25]))
    np.testing.assert_allclose(model.predict_proba(X), expected, rtol=1e-15)
    assert model.is_main(X).tolist() == [True, True, False, True, True]
    assert model.predict_proba(np.zeros((0, 2), dtype=np.float32)).shape == (0,)


def test_threshold_compares_the_float32_value_exactly():
    """The libraries compare a float32 feature, widened to double, with a double
    threshold. float32(0.1) = 0.10000000149... > 0.1 goes right; the float32 just
    below it (0.0999999940...) goes left. A naive float32(threshold) = float32(0.1)
    would send float32(0.1) left."""
    payload = {"base_score": 0.0, "trees": [
        {"feature": [0, -1, -1], "threshold": [0.1, 0.0, 0.0], "left": [1, -1, -1],
         "right": [2, -1, -1], "default_left": [0, 0, 0], "value": [0.0, 1.0, -1.0]}]}
    model = as_model("gbdt", payload, ["x"])
    x = np.array([[np.float32(0.1)], [np.nextafter(np.float32(0.1), np.float32(0))]], dtype=np.float32)
    np.testing.assert_allclose(model.predict_proba(x), _sigmoid(np.array([-1.0, 1.0])))


def test_ceml_uses_each_blocks_group_tree():
    """Group "p": `f0 <= 3` -> P 0.9 | P 0.2; group "li": one leaf P 0.6.
    Blocks (f0, group): (1, p) -> 0.9, (5, p) -> 0.2, (1, li) -> 0.6, (NaN, p) -> NaN goes left 0.9."""
    payload = {"group_names": ["p", "li"], "trees": [
        {"feature": [0, -1, -1], "threshold": [3.0, 0.0, 0.0], "left": [1, -1, -1],
         "right": [2, -1, -1], "default_left": [1, 0, 0], "value": [0.0, 0.9, 0.2]},
        {"feature": [-1], "threshold": [0.0], "left": [-1], "right": [-1], "default_left": [0],
         "value": [0.6]}]}
    model = as_model("ceml", payload, NAMES)
    X = np.array([[1, 0], [5, 0], [1, 0], [np.nan, 0]], dtype=np.float32)
    np.testing.assert_allclose(model.predict_proba(X, np.array([0, 0, 1, 0])), [0.9, 0.2, 0.6, 0.9])
    model.check_groups(["p", "li"])
    with pytest.raises(ModelError, match="instance groups differ"):
        model.check_groups(["li", "p"])
    with pytest.raises(ValueError, match="needs each block's instance group"):
        model.predict_proba(X)
    with pytest.raises(ValueError, match="group index outside"):
        model.predict_proba(X, np.array([0, 0, 2, 0]))


@pytest.mark.parametrize("name", ["learned", "ceml"])
def test_compiled_tree_walk_reaches_the_numpy_walks_leaves(name, monkeypatch):
    """transforms/_model.c against model.py's level-by-level numpy walk (its reference) on the
    shipped models: random blocks with NaN in a fifth of the cells, and blocks sitting exactly
    on split thresholds and one float32 step either side, give the same probabilities bit for
    bit (the same leaves, summed the same way)."""
    from sitestrip.transforms import model as model_module
    from sitestrip.transforms.classify import SHIPPED_MODELS
    require_built("_model")
    with open(SHIPPED_MODELS[name], "rb") as f:
        model = load_model(f.read())
    n_features = len(model.feature_names)
    rng = np.random.default_rng(7)
    X = rng.normal(scale=3.0, size=(700, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    inner = np.flatnonzero(np.isfinite(model._threshold) & (model._left != np.arange(model._left.size)))[:200]
    column = model._feature[inner] % n_features
    on = np.repeat(X[:inner.size], 3, axis=0)
    for k, step in enumerate((-np.inf, None, np.inf)):
        t = model._threshold[inner]
        on[np.arange(inner.size) * 3 + k, column] = t if step is None else np.nextafter(t, np.float32(step))
    X = np.concatenate((X, on[~np.isinf(on).any(axis=1)]))
    groups = rng.integers(0, len(model.group_names), X.shape[0]) if model.kind == "ceml" else None
    compiled = model.predict_proba(X, groups)
    monkeypatch.setattr(model_module, "_COMPILED", False)
    reference = model.predict_proba(X, groups)
    assert compiled.tolist() == reference.tolist()
    # Both sides of the decision are reached, so the comparison is not between two constants.
    assert 0.02 < float(np.mean(compiled >= model.threshold)) < 0.98


def test_bad_feature_matrices_are_refused():
    model = load_model(encode_model(_doc(), compress=False))
    with pytest.raises(ValueError, match=r"\[n, 2\]"):
        model.predict_proba(np.zeros((3, 3), dtype=np.float32))
    with pytest.raises(ValueError, match=r"infinite in \['f1'\]"):
        model.predict_proba(np.array([[0, np.inf]], dtype=np.float32))


# ---------------------------------------------------------------- file validation

def test_round_trip_plain_and_gzip(tmp_path):
    doc = _doc()
    for name, compress in (("m.json", False), ("m.json.gz", True)):
        (tmp_path / name).write_bytes(encode_model(doc, compress=compress))
        model = load_model(tmp_path / name)
        assert model.model_id == doc["model_id"] and model.n_trees == 2 and model.max_depth == 2
        assert model.trained_on == {"note": "hand-built"} and model.threshold == 0.5


def test_one_changed_byte_in_a_threshold_is_refused():
    data = encode_model(_doc(), compress=False)
    assert data.count(b"-2.0") == 1
    with pytest.raises(ModelError, match="does not match the content's hash"):
        load_model(data.replace(b"-2.0", b"-3.0"))


def test_a_changed_model_id_is_refused():
    doc = _doc()
    doc["model_id"] = "0" * 64
    with pytest.raises(ModelError, match="model_id '0000.*does not match"):
        load_model(encode_model(doc, compress=False))


def test_truncated_files_are_refused(tmp_path):
    data = encode_model(_doc(), compress=False)
    with pytest.raises(ModelError, match="not valid JSON"):
        load_model(data[:len(data) // 2])
    path = tmp_path / "cut.json.gz"
    path.write_bytes(gzip.compress(data)[:40])
    with pytest.raises(ModelError, match=r"cut\.json\.gz: not a readable gzip stream"):
        load_model(path)


def test_wrong_format_version_and_format_are_refused():
    with pytest.raises(ModelError, match="unsupported format_version 2"):
        load_model(encode_model(_doc(format_version=2), compress=False))
    with pytest.raises(ModelError, match="format is 'other'"):
        load_model(encode_model(_doc(format="other"), compress=False))
    with pytest.raises(ModelError, match="unknown kind 'forest'"):
        load_model(_rehashed(_doc(kind="forest")))


def test_child_index_out_of_range_is_refused():
    doc = _doc()
    doc["payload"]["trees"][0]["right"][2] = 9
    with pytest.raises(ModelError, match=r"trees\[0\]: node 2 has right child 9, outside \(2, 5\)"):
        load_model(_rehashed(doc))


def test_cycle_is_refused():
    """Node 2's left child pointing back at the root would loop forever."""
    doc = _doc()
    doc["payload"]["trees"][0]["left"][2] = 0
    with pytest.raises(ModelError, match="node 2 has left child 0.*no cycles"):
        load_model(_rehashed(doc))


def test_shared_child_is_refused():
    """Root -> 1, 2; both 1 and 2 -> 3, 4: children follow parents, yet 3 has two parents."""
    doc = _doc()
    t = doc["payload"]["trees"][0]
    t.update(feature=[0, 1, 1, -1, -1], left=[1, 3, 3, -1, -1], right=[2, 4, 4, -1, -1],
             value=[0.0, 0.0, 0.0, -1.0, 0.5], threshold=[0.5, 1.0, -2.0, 0.0, 0.0])
    with pytest.raises(ModelError, match="node 3 has 2 parents"):
        load_model(_rehashed(doc))


@pytest.mark.parametrize("edit, message", [
    (lambda t: t["feature"].__setitem__(0, 2), r"splits on feature 2, not in \[0, 2\)"),
    (lambda t: t["value"].pop(), "of one length"),
    (lambda t: t["left"].__setitem__(2, -1), "node 2 has one child"),
    (lambda t: t["threshold"].__setitem__(0, "0.5"), "numbers only"),
    (lambda t: t["left"].__setitem__(0, 1.0), "integers only"),
    (lambda t: t["value"].__setitem__(0, 0.3), "internal node 0 must carry value 0"),
    (lambda t: t["feature"].__setitem__(1, 0), "leaf 1 must carry feature -1"),
    (lambda t: t["default_left"].__setitem__(0, 2), "0 or 1"),
    (lambda t: t.pop("value"), "exactly the fields"),
])
def test_malformed_trees_are_refused(edit, message):
    doc = _doc()
    edit(doc["payload"]["trees"][0])
    with pytest.raises(ModelError, match=message):
        load_model(_rehashed(doc))


def test_non_finite_numbers_are_refused():
    data = encode_model(_doc(), compress=False).replace(b"-2.0", b"NaN")
    with pytest.raises(ModelError, match="NaN is not a JSON number"):
        load_model(data)
    doc = _doc(threshold=1.5)
    with pytest.raises(ModelError, match=r"threshold must be a number in \[0, 1\]"):
        load_model(_rehashed(doc))
    with pytest.raises(ModelError, match="not encodable"):
        model_document("gbdt", _hand_payload(), NAMES, "v", 0.5, {"cv_f1": float("nan")})


def test_mismatched_features_are_refused():
    model = load_model(encode_model(_doc(), compress=False))
    model.check_features(("f0", "f1"), "test-v1")
    with pytest.raises(ModelError, match="model feature_set 'test-v1', features 'test-v2'"):
        model.check_features(NAMES, "test-v2")
    with pytest.raises(ModelError, match=r"only in the model: \['f1'\]; only in the caller: \['g'\]"):
        model.check_features(["f0", "g"], "test-v1")
    with pytest.raises(ModelError, match="another order, first at column 0: model 'f0', caller 'f1'"):
        model.check_features(["f1", "f0"], "test-v1")


def test_write_model_is_deterministic(tmp_path):
    """Same inputs, same bytes (gzip without a timestamp); trained_on is description:
    it changes the bytes, not the model_id."""
    ids = set()
    for name in ("a.json.gz", "b.json.gz", "a.json", "b.json"):
        ids.add(write_model(tmp_path / name, "gbdt", _hand_payload(), NAMES, "test-v1", 0.5, {"n": 1}))
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert gzip.decompress((tmp_path / "a.json.gz").read_bytes()) == (tmp_path / "a.json").read_bytes()
    ids.add(write_model(tmp_path / "c.json", "gbdt", _hand_payload(), NAMES, "test-v1", 0.5, {"n": 2}))
    assert len(ids) == 1
    assert (tmp_path / "c.json").read_bytes() != (tmp_path / "a.json").read_bytes()
    bad = copy.deepcopy(_hand_payload())
    bad["trees"][0]["left"][0] = 0
    with pytest.raises(ModelError, match="refusing to write an invalid model"):
        write_model(tmp_path / "d.json", "gbdt", bad, NAMES, "test-v1", 0.5, {})
    assert not (tmp_path / "d.json").exists()


# ---------------------------------------------------------------- threshold

def test_choose_threshold_on_two_hand_built_pages():
    """Page A: a1 p .9 main 10 words, a2 p .6 noisy 5 words, a3 p .3 main 5 words (gold 15).
    Page B: b1 p .7 main 4 words, b2 p .4 noisy 6 words (gold 4). F1 = 2·overlap/(predicted+gold).
      t=.20: A 2·15/(20+15)=.857, B 2·4/(10+4)=.571 -> mean .714
      t=.35: A 2·10/(15+15)=.667, B .571            -> .619
      t=.50: A .667, B 2·4/(4+4)=1                   -> .833
      t=.65: A 2·10/(10+15)=.8, B 1                  -> .9   (best)
      t=.80: A .8, B nothing predicted: 0            -> .4
    On the default grid every t in .61..0.70 scores .9 (a2 out, b1 in); the middle
    of that run, (61+70)//2 = 65, is 0.65."""
    proba = [0.9, 0.6, 0.3, 0.7, 0.4]
    label = [1, 0, 1, 1, 0]
    words = [10, 5, 5, 4, 6]
    page = ["A", "A", "A", "B", "B"]
    choice = choose_threshold(proba, label, words, page, grid=[0.2, 0.35, 0.5, 0.65, 0.8])
    np.testing.assert_allclose(choice.curve, [(30 / 35 + 8 / 14) / 2, (20 / 30 + 8 / 14) / 2,
                                              (20 / 30 + 1) / 2, 0.9, 0.4])
    assert choice.threshold == 0.65 and choice.mean_f1 == pytest.approx(0.9)
    default = choose_threshold(proba, label, words, page)
    assert default.threshold == 0.65 and default.mean_f1 == pytest.approx(0.9)
    assert np.flatnonzero(np.isclose(default.curve, 0.9)).tolist() == list(range(61, 71))


def test_page_f1_of_a_page_without_gold_words():
    """One noisy 3-word block at p .5: called main (t <= .5) the page scores 0, else 1 (nothing
    expected, nothing predicted)."""
    f1 = page_word_f1([0.5], [0], [3], [7], [0.4, 0.5, 0.6])
    assert f1.tolist() == [[0.0, 0.0, 1.0]]


# ---------------------------------------------------------------- exporters vs libraries

def _data(seed, n=3000, n_features=8, nan_share=0.1):
    """Ties (integer columns), a NaN-only-at-prediction column (f5 has no NaN in training),
    and a NaN-dependent label so missing-value splits matter."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)).astype(np.float32)
    X[:, 2] = rng.integers(0, 6, n)
    X[:, 3][rng.random(n) < 0.3] = np.nan
    missing = rng.random(X.shape) < nan_share
    missing[:, 5] = False
    X[missing & (np.arange(n_features) != 3)] = np.nan
    z = (np.nan_to_num(X[:, 0]) + np.where(np.isnan(X[:, 3]), 1.5, 0) + 0.4 * X[:, 2]
         - X[:, 5] * np.nan_to_num(X[:, 1]))
    y = (z + rng.normal(size=n) > 1).astype(np.int64)
    return X, y


def _probe(X, payload, seed):
    """Held-out rows plus rows sitting exactly on split thresholds (as float32) and one
    float32 step either side, and NaN in every column, f5 included."""
    rng = np.random.default_rng(seed)
    Xt, _ = _data(seed + 100, n=1500)
    Xt[rng.random(Xt.shape) < 0.1] = np.nan
    feats = np.concatenate([np.asarray(t["feature"]) for t in payload["trees"]])
    thr = np.concatenate([np.asarray(t["threshold"]) for t in payload["trees"]])
    inner = np.flatnonzero(feats >= 0)[:300]
    rows = np.repeat(Xt[:inner.size], 3, axis=0)
    with np.errstate(over="ignore"):
        on = thr[inner].astype(np.float32)
    for k, v in enumerate((np.nextafter(on, np.float32(-np.inf)), on, np.nextafter(on, np.float32(np.inf)))):
        rows[np.arange(inner.size) * 3 + k, feats[inner]] = v
    rows = rows[~np.isinf(rows).any(axis=1)]      # sklearn's +inf split stands for no threshold
    return np.concatenate((Xt, rows))


def test_lightgbm_export_matches_lightgbm():
    lgb = pytest.importorskip("lightgbm")
    X, y = _data(1)
    w = np.random.default_rng(2).integers(1, 20, y.size).astype(float)
    params = {"n_trees": 40, "num_leaves": 15, "min_data_in_leaf": 5, "num_threads": 1}
    fitted = fit_gbdt(X, y, w, params, seed=3, library="lightgbm")
    native = {k: v for k, v in fitted.info["params"].items() if k != "n_trees"}
    booster = lgb.train(native, lgb.Dataset(X, label=y, weight=w, categorical_feature=[]), 40)
    dump = booster.dump_model()
    types, stack = set(), [t["tree_structure"] for t in dump["tree_info"]]
    while stack:
        node = stack.pop()
        if "split_index" in node:
            types.add((node["split_feature"], node["missing_type"]))
            stack += [node["left_child"], node["right_child"]]
    # both of LightGBM's missing-value rules are exercised, f5 (no NaN in training) as "None"
    assert {m for _, m in types} == {"NaN", "None"} and (5, "None") in types
    probe = _probe(X, fitted.payload, 4)
    model = as_model("gbdt", fitted.payload, [f"f{i}" for i in range(X.shape[1])])
    np.testing.assert_allclose(model.predict_proba(probe), booster.predict(probe), rtol=0, atol=1e-12)


def test_lightgbm_zero_as_missing_is_refused():
    lgb = pytest.importorskip("lightgbm")
    from sitestrip_bench.train_models import ExportError, export_lightgbm
    X, y = _data(1, n=500)
    booster = lgb.train({"objective": "binary", "zero_as_missing": True, "verbose": -1},
                        lgb.Dataset(X, label=y), 3)
    with pytest.raises(ExportError, match="zero_as_missing"):
        export_lightgbm(booster, X.shape[1])


@pytest.mark.slow
def test_sklearn_hgb_export_matches_sklearn():
    pytest.importorskip("sklearn")
    from sklearn.ensemble import HistGradientBoostingClassifier
    X, y = _data(5)
    w = np.random.default_rng(6).integers(1, 20, y.size).astype(float)
    fitted = fit_gbdt(X, y, w, {"n_trees": 40, "max_leaf_nodes": 15, "min_samples_leaf": 5},
                      seed=7, library="sklearn")
    native = {k: v for k, v in fitted.info["params"].items() if k not in ("n_trees", "seed")}
    clf = HistGradientBoostingClassifier(**native).fit(X, y, sample_weight=w)
    # a "NaN vs everything" split (threshold +inf in sklearn) is among the exported ones
    assert any(np.isposinf(p.nodes["num_threshold"]).any() for (p,) in clf._predictors)
    probe = _probe(X, fitted.payload, 8)
    model = as_model("gbdt", fitted.payload, [f"f{i}" for i in range(X.shape[1])])
    np.testing.assert_allclose(model.predict_proba(probe), clf.predict_proba(probe)[:, 1],
                               rtol=0, atol=1e-12)


def test_xgboost_export_matches_xgboost():
    xgb = pytest.importorskip("xgboost")
    X, y = _data(9)
    fitted = fit_gbdt(X, y, None, {"n_trees": 40, "max_leaves": 15}, seed=10, library="xgboost")
    native = {k: v for k, v in fitted.info["params"].items() if k != "n_trees"}
    booster = xgb.train(native, xgb.DMatrix(X, label=y), 40)
    probe = _probe(X, fitted.payload, 11)
    model = as_model("gbdt", fitted.payload, [f"f{i}" for i in range(X.shape[1])])
    # XGBoost sums margins in float32: agreement to float32 precision, not to double
    np.testing.assert_allclose(model.predict_proba(probe), booster.predict(xgb.DMatrix(probe)),
                               rtol=0, atol=1e-6)


# ---------------------------------------------------------------- ceml

def test_collapse_alphas_reproduce_sklearn_pruning():
    """The subtree pruned_answer picks for each alpha between two steps of sklearn's own
    pruning path is the tree sklearn grows with that ccp_alpha: same leaf count, same
    probabilities on every training block."""
    pytest.importorskip("sklearn")
    from sklearn.tree import DecisionTreeClassifier
    X, y = _data(12, n=1500)
    w = np.random.default_rng(13).integers(1, 10, y.size).astype(float)
    full = DecisionTreeClassifier(**CEML_TREE, random_state=0).fit(X, y, sample_weight=w)
    steps = np.unique(full.cost_complexity_pruning_path(X, y, sample_weight=w).ccp_alphas)
    assert steps.size > 20
    alphas = np.sqrt(steps[:-1] * steps[1:])
    answer = pruned_answer(full.tree_, collapse_alphas(full.tree_), alphas)
    p_node = full.tree_.value[:, 0, 1] / full.tree_.value[:, 0].sum(axis=1)
    leaf = full.apply(X)
    is_leaf = full.tree_.children_left == -1
    for k, alpha in enumerate(alphas):
        pruned = DecisionTreeClassifier(**CEML_TREE, random_state=0, ccp_alpha=alpha).fit(
            X, y, sample_weight=w)
        assert np.unique(answer[k, is_leaf]).size == pruned.get_n_leaves()
        np.testing.assert_allclose(p_node[answer[k, leaf]], pruned.predict_proba(X)[:, 1], atol=1e-12)


def test_ceml_prunes_noise_to_a_small_tree_and_keeps_signal():
    """Labels independent of the features: site-grouped CV finds no split that
    generalizes and pruning cuts the tree to at most 3 leaves (unpruned: dozens).
    Labels = f0 > 0 with 10% flipped: the split on f0 survives and CV error is near 10%."""
    pytest.importorskip("sklearn")
    from sklearn.tree import DecisionTreeClassifier
    rng = np.random.default_rng(14)
    X = rng.normal(size=(1200, 5)).astype(np.float32)
    sites = np.repeat(np.arange(8), 150)
    group = np.zeros(1200, dtype=np.int64)
    noise = rng.integers(0, 2, 1200)
    unpruned = DecisionTreeClassifier(**CEML_TREE, random_state=0).fit(X, noise).get_n_leaves()
    fitted = fit_ceml(X, noise, None, group, ["p"], sites, seed=0)
    assert unpruned > 40 and fitted.info["groups"]["p"]["leaves"] <= 3
    signal = np.where(rng.random(1200) < 0.1, X[:, 0] <= 0, X[:, 0] > 0).astype(np.int64)
    fitted = fit_ceml(X, signal, None, group, ["p"], sites, seed=0)
    info = fitted.info["groups"]["p"]
    assert info["leaves"] >= 2 and info["cv_error"] < 0.15
    assert fitted.payload["trees"][0]["feature"][0] == 0


def test_ceml_export_matches_sklearn_and_handles_small_groups():
    """Group "p" has a real tree; "pre" has 5 blocks (below min split 20): one leaf with its
    share of main blocks (2/5); "td" has none: one leaf with the whole set's share."""
    pytest.importorskip("sklearn")
    from sklearn.tree import DecisionTreeClassifier
    X, y = _data(15, n=1200)
    sites = np.arange(1200) % 6
    group = np.zeros(1200, dtype=np.int64)
    group[:5] = 1
    y[:5] = [1, 1, 0, 0, 0]
    fitted = fit_ceml(X, y, None, group, ["p", "pre", "td"], sites, seed=0)
    model = as_model("ceml", fitted.payload, [f"f{i}" for i in range(X.shape[1])])
    alpha = fitted.info["groups"]["p"]["ccp_alpha"]
    clf = DecisionTreeClassifier(**CEML_TREE, ccp_alpha=alpha, random_state=0).fit(X[5:], y[5:])
    probe = _probe(X, fitted.payload, 16)
    np.testing.assert_allclose(model.predict_proba(probe, np.zeros(len(probe), dtype=np.int64)),
                               clf.predict_proba(probe)[:, 1], atol=1e-12)
    small = model.predict_proba(X[:2], np.array([1, 2]))
    np.testing.assert_allclose(small, [2 / 5, y.mean()])
    assert fitted.info["groups"]["pre"]["tree"] == "one leaf: below min split"
    assert fitted.info["groups"]["td"]["tree"] == "one leaf: no blocks"


def test_model_file_json_is_canonical():
    """Sorted keys and no whitespace: the file is its own canonical form."""
    data = encode_model(_doc(), compress=False)
    doc = json.loads(data)
    assert data == json.dumps(doc, sort_keys=True, separators=(",", ":")).encode() + b"\n"


@pytest.mark.slow
def test_library_comparison_scores_out_of_fold_pages():
    """Label = f0 > 0 exactly: each library, scored out of fold on held-out sites, puts the
    split near 0 and reaches mean page F1 near 1; a shuffled label cannot be learned and
    stays far below (its F1 is that of calling most words main on pages half main)."""
    pytest.importorskip("lightgbm")
    pytest.importorskip("sklearn")
    from sitestrip_bench.train_models import compare_gbdt_libraries
    rng = np.random.default_rng(17)
    X = rng.normal(size=(1200, 4)).astype(np.float32)
    sites, pages, words = np.arange(1200) // 200, np.arange(1200) // 20, rng.integers(1, 30, 1200)
    params = {"lightgbm": {"n_trees": 20, "num_threads": 1}, "sklearn": {"n_trees": 20}}
    for label, low, high in (((X[:, 0] > 0), 0.97, 1.0), (rng.permutation(X[:, 0] > 0), 0.0, 0.8)):
        rows = compare_gbdt_libraries(X, label.astype(int), None, sites, pages, words,
                                      libraries=("lightgbm", "sklearn"), params=params, n_splits=3)
        assert [r["library"] for r in rows] == ["lightgbm", "sklearn"]
        assert all(low <= r["mean_page_f1"] <= high for r in rows), rows


# ---------------------------------------------------------------- stages

def _stage(names, value):
    return {"feature_set": "stage-v1", "feature_names": names, "base_score": value,
            "trees": [{"feature": [0, -1, -1], "threshold": [0.0, 0.0, 0.0], "left": [1, -1, -1],
                       "right": [2, -1, -1], "default_left": [0, 0, 0], "value": [0.0, -1.0, 1.0]}]}


def _staged_payload():
    payload = _hand_payload()
    types = ["a", "b"]
    payload["page_type"] = {"feature_set": "pt-v1", "feature_names": ["g0"], "types": types,
                            "ensembles": [{"base_score": 0.0, "trees": _stage(["g0"], 0.0)["trees"]},
                                          {"base_score": 1.0, "trees": _stage(["g0"], 0.0)["trees"]}]}
    payload["region"] = _stage(["r0", "r1"], -0.5)
    return payload


def test_a_model_carries_its_page_type_and_region_stages():
    """Each stage is a gbdt of its own features: the region tree sends r0 <= 0 to -1, else +1,
    after base -0.5; the page type ensembles give 0 ± 1 and 1 ± 1."""
    model = load_model(encode_model(model_document("gbdt", _staged_payload(), NAMES, "test-v1", 0.5, {}),
                                    compress=False))
    assert model.page_type_types == ("a", "b")
    assert [m.feature_names for m in model.page_type_models] == [("g0",), ("g0",)]
    assert model.region.feature_names == ("r0", "r1") and model.region.feature_set == "stage-v1"
    p = model.region.predict_proba(np.array([[-1.0, 0.0], [1.0, 0.0]], dtype=np.float32))
    assert p == pytest.approx(_sigmoid(np.array([-1.5, 0.5])))
    raw = [m.predict_proba(np.array([[1.0]], dtype=np.float32))[0] for m in model.page_type_models]
    assert raw == pytest.approx(_sigmoid(np.array([1.0, 2.0])).tolist())
    # The stages are part of what the model_id covers.
    plain = model_document("gbdt", _hand_payload(), NAMES, "test-v1", 0.5, {})
    assert model.model_id != plain["model_id"]


@pytest.mark.parametrize("edit, message", [
    (lambda p: p["region"].pop("feature_set"), "payload.region must have exactly the keys"),
    (lambda p: p["page_type"]["ensembles"].pop(), "one per type"),
    (lambda p: p["region"].update(base_score=float("nan")) or p["region"].update(base_score="x"),
     "payload.region.base_score"),
    (lambda p: p["region"]["trees"][0].update(feature=[5, -1, -1]), "payload.region.trees"),
    (lambda p: p.update(extra=1), "payload must have exactly the keys"),
])
def test_malformed_stages_are_refused(edit, message):
    payload = _staged_payload()
    edit(payload)
    doc = model_document("gbdt", payload, NAMES, "test-v1", 0.5, {})
    with pytest.raises(ModelError, match=message):
        load_model(encode_model(doc, compress=False))


@pytest.mark.parametrize("rows", [0, 1, 3, 257, 600])
def test_ensemble_set_gives_each_ensembles_own_probabilities(rows, monkeypatch):
    """transforms/model.py EnsembleSet (the shipped page type stage's seven ensembles in one
    node table, one compiled walk) against each ensemble's own predict_proba, compiled and
    numpy: the same float64 values bit for bit, on random rows with NaN in a fifth of the
    cells, for no row, one row (a [trees, 1] sum), and counts that leave a slice of one row
    (257) or of 88 (600) past the 256-row slices."""
    from sitestrip.transforms import model as model_module
    from sitestrip.transforms.classify import SHIPPED_MODELS
    from sitestrip.transforms.model import EnsembleSet
    require_built("_model")
    with open(SHIPPED_MODELS["learned"], "rb") as f:
        model = load_model(f.read())
    ensembles = model.page_type_models
    assert len(ensembles) == 7
    rng = np.random.default_rng(rows)
    X = rng.normal(scale=2.0, size=(rows, len(ensembles[0].feature_names))).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    joined = EnsembleSet(ensembles).predict_proba(X)
    own = [m.predict_proba(X) for m in ensembles]
    monkeypatch.setattr(model_module, "_COMPILED", False)
    numpy_walk = [m.predict_proba(X) for m in ensembles]
    assert len(joined) == 7
    for got, ref, walk in zip(joined, own, numpy_walk):
        assert got.dtype == np.float64 and got.shape == (rows,)
        assert got.tobytes() == ref.tobytes() == walk.tobytes()
    if rows > 1:
        assert len({p.tobytes() for p in joined}) == 7      # seven different ensembles, not one seven times


def test_ensemble_set_refuses_what_predict_proba_refuses():
    from sitestrip.transforms.model import EnsembleSet
    model = load_model(encode_model(_doc(), compress=False))
    both = EnsembleSet([model, model])
    with pytest.raises(ValueError, match=r"\[n, 2\]"):
        both.predict_proba(np.zeros((3, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="infinite"):
        both.predict_proba(np.array([[np.inf, 0.0]], dtype=np.float32))
    # The hand-built model twice: each copy's probabilities are the model's own.
    X = np.array([[0.5, 0.0], [np.nan, -3.0], [0.6, -2.0]], dtype=np.float32)
    expected = _sigmoid(np.array([0.75, 0.75, -1.25]))
    for got in both.predict_proba(X):
        assert got.tolist() == pytest.approx(expected.tolist(), abs=1e-12)


@pytest.mark.parametrize("rows", [1, 2, 3, 17, 255, 256, 257, 513])
def test_compiled_leaf_sums_are_numpys_sums(rows, monkeypatch):
    """transforms/_model.c leaf_sums (two rows or more) adds each block's leaf values in tree
    order as numpy's sum over the trees axis of the [trees, blocks] matrix does; one row stays
    with numpy's own sum. The shipped first stage and region stage on random rows, NaN in a
    fifth of the cells, against the numpy walk: the same float64 probabilities bit for bit."""
    from sitestrip.transforms import model as model_module
    from sitestrip.transforms.classify import SHIPPED_MODELS
    require_built("_model")
    with open(SHIPPED_MODELS["learned"], "rb") as f:
        shipped = load_model(f.read())
    for model in (shipped, shipped.region):
        rng = np.random.default_rng(rows)
        X = rng.normal(scale=2.0, size=(rows, len(model.feature_names))).astype(np.float32)
        X[rng.random(X.shape) < 0.2] = np.nan
        compiled = model.predict_proba(X)
        monkeypatch.setattr(model_module, "_COMPILED", False)
        reference = model.predict_proba(X)
        monkeypatch.setattr(model_module, "_COMPILED", True)
        assert compiled.tobytes() == reference.tobytes()


def test_infinite_features_are_refused_on_the_compiled_pass():
    """Two rows or more take _model.c forest, which counts the infinite cells it walks; the
    model refuses them with the same message as the one-row path."""
    require_built("_model")
    model = load_model(encode_model(_doc(), compress=False))
    for rows in (2, 3, 40):
        X = np.zeros((rows, 2), dtype=np.float32)
        X[rows - 1, 0] = -np.inf
        with pytest.raises(ValueError, match=r"infinite in \['f0'\]"):
            model.predict_proba(X)


def test_forest_table_refuses_a_table_that_does_not_fit():
    """_model.c forest_table checks a node table once as `leaves` checks it on every call: a
    feature column outside the NaN-folded row, a child past the table, a root outside it; and
    forest refuses features of another width than the table's."""
    from sitestrip.transforms import _model
    require_built("_model")
    model = load_model(encode_model(_doc(), compress=False))
    args = dict(width=2, steps=model._tree_depth, feature=model._feature64, threshold=model._threshold,
                left=model._left64, value=model._value, roots=model._roots64)

    def table(**changed):
        a = dict(args, **changed)
        return _model.forest_table(a["width"], a["steps"], a["feature"], a["threshold"], a["left"], a["value"],
                                   a["roots"])

    table()
    for changed in (dict(feature=np.full_like(model._feature64, 4)), dict(left=model._left64 + model._left64.size),
                    dict(roots=model._roots64 + model._left64.size), dict(width=0)):
        with pytest.raises(ValueError, match="do not fit"):
            table(**changed)
    out = np.empty(3)
    with pytest.raises(ValueError, match="do not fit"):
        _model.forest(table(), np.zeros((3, 3), dtype=np.float32), out, False)


def test_forest_row_reaches_forests_leaves():
    """_model.c forest_row (one row, LANES trees side by side) against forest's per-tree walk of
    the same row: every tree's leaf value bit for bit, for the shipped page type set (840 trees,
    a last group of 8), first stage (150: of 6) and region stage (120: of 8), on seeded rows with NaN in
    a fifth of the cells and rows all NaN; the count of infinite cells as forest counts it; a row
    or an output of another size refused."""
    from sitestrip.transforms import _model
    from sitestrip.transforms.classify import SHIPPED_MODELS
    from sitestrip.transforms.model import EnsembleSet
    require_built("_model")
    with open(SHIPPED_MODELS["learned"], "rb") as f:
        shipped = load_model(f.read())
    types = EnsembleSet(shipped.page_type_models)
    rng = np.random.default_rng(7)
    region = shipped.region
    for table, trees, width in ((types._forest(), types._roots.size, types._width),
                                (shipped._forest(), shipped._roots.size, len(shipped.feature_names)),
                                (region._forest(), region._roots.size, len(region.feature_names))):
        assert trees % 16 != 0                     # a last group of fewer than 16 trees
        for k in range(30):
            row = rng.normal(scale=2.0, size=(1, width)).astype(np.float32)
            row[rng.random(row.shape) < (1.0 if k == 0 else 0.2)] = np.nan
            got, ref = np.empty(trees), np.empty(trees)
            assert _model.forest_row(table, row, got) == 0
            _model.forest(table, row, ref, True)
            assert got.tobytes() == ref.tobytes()
        row[0, :3] = [np.inf, -np.inf, np.inf]
        assert _model.forest_row(table, row, got) == _model.forest(table, row, ref, True) == 3
        assert got.tobytes() == ref.tobytes()
        for bad_row, bad_out in ((np.zeros((1, width + 1), np.float32), got), (row, np.empty(trees - 1))):
            with pytest.raises(ValueError, match="does not fit"):
                _model.forest_row(table, bad_row, bad_out)
    # The page type set's one-row path (forest_row) against each ensemble's numpy walk.
    row = rng.normal(scale=2.0, size=(1, types._width)).astype(np.float32)
    import sitestrip.transforms.model as model_module
    stacked = types.stacked(row)
    try:
        model_module._COMPILED = False
        reference = np.stack([m.predict_proba(row) for m in types.models], axis=1)
    finally:
        model_module._COMPILED = True
    assert stacked.tobytes() == reference.tobytes()


def test_finite_columns_and_tag_counts_are_numpys():
    """_model.c finite_columns against np.nan_to_num(X.take(columns, axis=1).astype(np.float64))
    (NaN 0, ±inf the largest finite float64s), and tag_counts against np.bincount's entries of the
    counted ids (ids without a slot and past the table not counted); what does not fit refused."""
    from sitestrip.transforms import _model
    require_built("_model")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(37, 12)).astype(np.float32)
    X[rng.random(X.shape) < 0.15] = np.nan
    X[rng.random(X.shape) < 0.05] = np.inf
    X[rng.random(X.shape) < 0.05] = -np.inf
    columns = np.array([11, 0, 3, 3, 7], dtype=np.int64)
    out = np.empty((37, columns.size))
    _model.finite_columns(X, columns, out)
    assert out.tobytes() == np.nan_to_num(X.take(columns, axis=1).astype(np.float64)).tobytes()
    assert np.isinf(X[:, columns]).any() and np.isnan(X[:, columns]).any() and np.isfinite(out).all()
    for bad_columns, bad_out in ((np.array([12], np.int64), np.empty((37, 1))), (columns, np.empty((36, 5)))):
        with pytest.raises(ValueError, match="do not fit"):
            _model.finite_columns(X, bad_columns, bad_out)
    tag = rng.integers(0, 40, size=500).astype(np.int32)
    tag[:5] = 1_000_000
    slot = np.full(20, -1, dtype=np.int64)
    ids = np.array([0, 3, 19, 7])
    slot[ids] = np.arange(ids.size)
    counts = np.full(ids.size, 99, dtype=np.int64)
    _model.tag_counts(tag, slot, counts)
    assert counts.tolist() == np.bincount(tag[tag < 40], minlength=40)[ids].tolist()
    with pytest.raises(ValueError, match="outside"):
        _model.tag_counts(tag, slot, np.empty(3, dtype=np.int64))
