"""transforms/_model.c forest's bitvector pass (bits_layout, bits_group, bits_group_avx512,
bits_group_avx2) against its walk: hand-built forests whose leaves are derived by hand, the shipped
models on random rows and rows on their thresholds, the tables the bitvector layout does not take,
and the path forest takes by default on this processor."""
import numpy as np
import pytest

from sitestrip.transforms.model import encode_model, load_model, model_document
from helpers.compiled import require_built

WALK, BITS, BITS_AVX512, BITS_AVX2 = 1, 2, 3, 4
NAMES = ["f0", "f1", "f2"]


def _leaf(value):
    return {"feature": [-1], "threshold": [0.0], "left": [-1], "right": [-1], "default_left": [0],
            "value": [value]}


def _tree(nodes):
    """A tree from (feature, threshold, left, right, default_left, value) per node, leaves as
    (value,)."""
    out = {k: [] for k in ("feature", "threshold", "left", "right", "default_left", "value")}
    for node in nodes:
        f, t, l, r, d, v = node if len(node) == 6 else (-1, 0.0, -1, -1, 0, node[0])
        for k, x in zip(("feature", "threshold", "left", "right", "default_left", "value"), (f, t, l, r, d, v)):
            out[k].append(x)
    return out


def _model(trees, names=NAMES):
    doc = model_document("gbdt", {"base_score": 0.0, "trees": trees}, names, "test-v1", 0.5, {})
    return load_model(encode_model(doc, compress=False))


# Tree A: f0 <= 1 (NaN left) -> 10 | (f1 <= 2 (NaN right) -> 20 | 30).
TREE_A = _tree([(0, 1.0, 1, 2, 1, 0.0), (10.0,), (1, 2.0, 3, 4, 0, 0.0), (20.0,), (30.0,)])
# Tree C, deeper on the left: f1 <= 0 (NaN right) -> (f0 <= -1 (NaN left) -> (f2 <= 5 (NaN right)
# -> 1 | 2) | 3) | 4.
TREE_C = _tree([(1, 0.0, 1, 2, 0, 0.0), (0, -1.0, 3, 4, 1, 0.0), (4.0,), (2, 5.0, 5, 6, 0, 0.0), (3.0,),
                (1.0,), (2.0,)])
ABOVE_ONE = float(np.nextafter(np.float32(1), np.float32(2)))
ABOVE_MINUS_ONE = float(np.nextafter(np.float32(-1), np.float32(0)))
BELOW_MINUS_ONE = float(np.nextafter(np.float32(-1), np.float32(-2)))
# (row, leaf of A, of the one-leaf tree, of C): ties at a threshold go left, NaN the node's way.
HAND = [((1.0, 2.0, 5.0), 10.0, 0.5, 4.0),
        ((ABOVE_ONE, 2.0, 5.0), 20.0, 0.5, 4.0),
        ((2.0, np.nan, np.nan), 30.0, 0.5, 4.0),
        ((np.nan, -1.0, np.nan), 10.0, 0.5, 2.0),
        ((-1.0, 0.0, 5.0), 10.0, 0.5, 1.0),
        ((-0.5, 0.0, 6.0), 10.0, 0.5, 3.0),
        ((ABOVE_MINUS_ONE, 0.0, 4.0), 10.0, 0.5, 3.0),
        ((BELOW_MINUS_ONE, np.nan, 4.0), 10.0, 0.5, 4.0),
        ((BELOW_MINUS_ONE, 0.0, 5.0), 10.0, 0.5, 1.0)]


def _paths(table):
    from sitestrip.transforms import _model
    return _model.forest_paths(table)


def _forest(model, X, per_tree, path):
    from sitestrip.transforms import _model
    out = np.full((model._roots.size, X.shape[0]) if per_tree else X.shape[0], np.nan)
    infinite = _model.forest(model._forest(), np.ascontiguousarray(X), out, per_tree, path)
    return out, infinite


def _chain(leaves):
    """f0 <= 0.5 -> 0 | (f0 <= 1.5 -> 1 | (... -> leaves - 1)): `leaves` leaves, leaves - 1 deep."""
    nodes = []
    for k in range(leaves - 1):
        nodes += [(0, k + 0.5, 2 * k + 1, 2 * k + 2, 0, 0.0), (float(k),)]
    return _tree(nodes + [(float(leaves - 1),)])


def test_hand_built_forest_reaches_the_hand_derived_leaves_on_every_path():
    """Three trees (a one-leaf tree between two of different depths), each row's leaf derived by
    hand above; 9 rows repeated to 37 blocks, so the last group of sixteen lanes is partial: every
    path reaches those leaves (per tree) and the same sums in tree order."""
    require_built("_model")
    model = _model([TREE_A, _leaf(0.5), TREE_C])
    assert {WALK, BITS} <= set(_paths(model._forest()))
    rows = [HAND[k % len(HAND)] for k in range(37)]
    X = np.array([r[0] for r in rows], dtype=np.float32)
    # the table orders trees deepest first (C, A, then the one leaf)
    expected = np.array([[r[3] for r in rows], [r[1] for r in rows], [r[2] for r in rows]])
    for path in _paths(model._forest()):
        leaves, infinite = _forest(model, X, True, path)
        assert infinite == 0
        assert leaves.tolist() == expected.tolist(), path
        sums, _ = _forest(model, X, False, path)
        assert sums.tolist() == ((expected[0] + expected[1]) + expected[2]).tolist(), path


def test_a_tree_of_32_leaves_takes_the_bitvector_pass_and_33_leaves_the_walk():
    """A chain of 32 leaves (31 deep) fills a lane's 32 leaf bits: its first and last leaf and every
    one between are reached on every path. A chain of 33 leaves does not fit one uint32 a lane: the
    table is walked only, and asking forest for the bitvector pass is refused."""
    require_built("_model")
    x = np.arange(-1.0, 34.0, 0.5, dtype=np.float32)
    X = np.stack((x, np.zeros_like(x), np.zeros_like(x)), axis=1)
    fits = _model([_chain(32), _leaf(0.25)])
    expected = np.clip(np.ceil(x - 0.5), 0, 31)
    assert {WALK, BITS} <= set(_paths(fits._forest()))
    for path in _paths(fits._forest()):
        leaves, _ = _forest(fits, X, True, path)
        assert leaves[0].tolist() == expected.tolist(), path
        assert leaves[1].tolist() == [0.25] * x.size
    too_many = _model([_chain(33), _leaf(0.25)])
    assert _paths(too_many._forest()) == (WALK,)
    leaves, _ = _forest(too_many, X, True, WALK)
    assert leaves[0].tolist() == np.clip(np.ceil(x - 0.5), 0, 32).tolist()
    from sitestrip.transforms import _model as compiled
    with pytest.raises(ValueError, match="not available"):
        compiled.forest(too_many._forest(), X, np.empty(x.size), False, BITS)
    # predict_proba's default path falls back to the walk for it
    assert np.isfinite(too_many.predict_proba(X)).all()


def test_tables_the_bitvector_layout_does_not_take_are_walked():
    """forest_table takes a node table whose trees share nodes (two roots at one tree) or whose
    walk stops above a leaf (fewer steps than the tree's depth): the walk's answer is defined
    there, the bitvector pass's is not, so only the walk is offered."""
    from sitestrip.transforms import _model as compiled
    require_built("_model")
    model = _model([TREE_A, TREE_C])
    args = [3, model._tree_depth, model._feature64, model._threshold, model._left64, model._value, model._roots64]
    assert {WALK, BITS} <= set(compiled.forest_paths(compiled.forest_table(*args)))
    shared = list(args)
    shared[1], shared[6] = model._tree_depth[[0, 0]], model._roots64[[0, 0]]
    short = list(args)
    short[1] = model._tree_depth - 1
    for changed in (shared, short):
        table = compiled.forest_table(*changed)
        assert compiled.forest_paths(table) == (WALK,)
        with pytest.raises(ValueError, match="not available"):
            compiled.forest(table, np.zeros((2, 3), np.float32), np.empty(2), False, BITS)
        compiled.forest(table, np.zeros((2, 3), np.float32), np.empty(2), False)
    with pytest.raises(ValueError, match="not available"):
        compiled.forest(compiled.forest_table(*args), np.zeros((2, 3), np.float32), np.empty(2), False, 7)


def _shipped():
    from sitestrip.transforms.classify import SHIPPED_MODELS
    with open(SHIPPED_MODELS["learned"], "rb") as f:
        return load_model(f.read())


def _rows(model, rng, n):
    """Random rows, NaN in a fifth of the cells, then rows sitting on split thresholds and one
    float32 step either side of them."""
    width = len(model.feature_names)
    X = rng.normal(scale=3.0, size=(n, width)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    inner = np.flatnonzero(np.isfinite(model._threshold) & (model._left != np.arange(model._left.size)))
    inner = rng.choice(inner, size=150, replace=False)
    column = model._feature[inner] % width
    on = np.repeat(X[:inner.size], 3, axis=0)
    with np.errstate(over="ignore"):           # a step past the largest float32 is inf, dropped below
        for k, step in enumerate((-np.inf, None, np.inf)):
            t = model._threshold[inner]
            on[np.arange(inner.size) * 3 + k, column] = t if step is None else np.nextafter(t, np.float32(step))
    return np.concatenate((X, on[~np.isinf(on).any(axis=1)]))


@pytest.mark.parametrize("blocks", [1, 5, 16, 17, 333])
def test_shipped_models_reach_the_walks_leaves_on_every_path(blocks):
    """The shipped first stage and region stage: every path the table and the processor allow gives
    the walk's leaf values per tree and its sums bit for bit, for full and partial groups of
    sixteen, and counts the same infinite cells."""
    require_built("_model")
    shipped = _shipped()
    rng = np.random.default_rng(blocks)
    for model in (shipped, shipped.region):
        paths = _paths(model._forest())
        assert {WALK, BITS} <= set(paths)
        X = _rows(model, rng, 500)[rng.permutation(950)[:blocks]]
        X[0, 1] = np.inf
        ref_leaves, ref_infinite = _forest(model, X, True, WALK)
        ref_sums, _ = _forest(model, X, False, WALK)
        assert ref_infinite == 1 and not np.isnan(ref_leaves).any()
        for path in paths:
            leaves, infinite = _forest(model, X, True, path)
            sums, _ = _forest(model, X, False, path)
            assert infinite == ref_infinite
            assert leaves.tobytes() == ref_leaves.tobytes(), path
            assert sums.tobytes() == ref_sums.tobytes(), path


@pytest.mark.parametrize("path, feature", [(BITS_AVX512, "avx512f"), (BITS_AVX2, "avx2")])
def test_the_vector_passes_are_the_plain_bitvector_pass(path, feature):
    """Where the processor has AVX-512F or AVX2 (the pass the product takes there), it against the
    plain C bitvector pass and the walk on a few thousand blocks of the shipped models."""
    require_built("_model")
    shipped = _shipped()
    if path not in _paths(shipped._forest()):
        pytest.skip(f"this processor has no {feature}")
    rng = np.random.default_rng(11)
    for model in (shipped, shipped.region):
        X = _rows(model, rng, 3000)
        got = [_forest(model, X, per_tree, path)[0] for per_tree in (True, False)]
        for reference in (WALK, BITS):
            ref = [_forest(model, X, per_tree, reference)[0] for per_tree in (True, False)]
            assert got[0].tobytes() == ref[0].tobytes() and got[1].tobytes() == ref[1].tobytes()
        # blocks reach many different leaves, so the comparison is not between constants
        assert np.unique(got[1]).size > X.shape[0] // 2


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def test_the_default_path_follows_the_processors_features():
    """forest lists the AVX-512 pass where the processor has AVX-512F and the AVX2 pass where it
    has AVX2 (x86-64 only), and takes AVX-512, else AVX2, else the plain C bitvector pass; a table
    the bitvector layout does not take is walked whatever the processor."""
    from sitestrip.transforms import _model as compiled
    require_built("_model")
    import platform
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        flags = _cpu_flags()
        if flags is None:
            pytest.skip("the processor's features are read from Linux's /proc/cpuinfo")
    elif machine.startswith(("i386", "i686", "x86")):
        pytest.skip("32-bit x86: the vector passes are not built")
    else:
        flags = set()
    shipped = _shipped()
    for model in (shipped, shipped.region):
        paths = set(_paths(model._forest()))
        assert (BITS_AVX512 in paths) == ("avx512f" in flags)
        assert (BITS_AVX2 in paths) == ("avx2" in flags)
        expected = BITS_AVX512 if "avx512f" in flags else BITS_AVX2 if "avx2" in flags else BITS
        assert compiled.forest_auto(model._forest()) == expected
    assert compiled.forest_auto(_model([_chain(33)])._forest()) == WALK


def test_model_switch_selects_a_path(monkeypatch):
    """model.py's _FOREST_PATH: 0 (the default) forest's choice, 1 the walk, which
    SITESTRIP_MODEL=walk selects for a process, 2 the plain C pass (SITESTRIP_MODEL=bits), 4 the
    AVX2 pass (SITESTRIP_MODEL=avx2); they give the same probabilities bit for bit."""
    import os
    import subprocess
    import sys
    from sitestrip.transforms import model as model_module
    require_built("_model")
    assert model_module._FOREST_PATH == 0
    shipped = _shipped()
    X = _rows(shipped, np.random.default_rng(5), 400)
    default = shipped.predict_proba(X)
    monkeypatch.setattr(model_module, "_FOREST_PATH", WALK)
    assert shipped.predict_proba(X).tobytes() == default.tobytes()
    for path in (BITS, BITS_AVX2):
        if path in _paths(shipped._forest()):
            monkeypatch.setattr(model_module, "_FOREST_PATH", path)
            assert shipped.predict_proba(X).tobytes() == default.tobytes(), path
    code = "from sitestrip.transforms import model as m; print(m._FOREST_PATH, m._COMPILED)"
    for value, expected in (("walk", "1 True"), ("bits", "2 True"), ("avx2", "4 True"), ("compiled", "0 True"),
                            ("numpy", "0 False")):
        env = dict(os.environ, SITESTRIP_MODEL=value)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.split() == expected.split(), value
