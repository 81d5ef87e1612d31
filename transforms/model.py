"""Shipped block-classifier models (design §10): the file format, its validation, prediction.

A model file is one JSON document (gzip-compressed when its name ends in `.gz`),
so loading it never executes code and workers need numpy only: the training
libraries (LightGBM, scikit-learn, XGBoost) stay on the training side
(`bench/sitestrip_bench/train_models.py`), which exports their trees into this format.

    {"format": "sitestrip-block-model", "format_version": 1,
     "kind": "gbdt" | "ceml",
     "model_id": sha256 of the canonical JSON of {kind, feature_set, feature_names,
                 threshold, payload} (what decides a prediction; `trained_on` is
                 description and not covered),
     "feature_set": the feature code's version string,
     "feature_names": [...], "threshold": probability at or above which a block is main,
     "trained_on": {free metadata: corpora, sites, blocks, library and version, params, CV scores},
     "payload": {...}}

Trees are flat arrays over their nodes; node 0 is the root, children have larger
indices than their parent (so a file cannot encode a cycle), a leaf has
left = right = -1. One tree is

    {"feature": [int], "threshold": [float], "left": [int], "right": [int],
     "default_left": [0|1], "value": [float]}

An internal node sends a block left iff its feature value, as float32, is <=
threshold (compared exactly), and a NaN left iff default_left. Leaves carry
feature -1, threshold 0, default_left 0; internal nodes carry value 0, so one
model has one encoding.

- `gbdt` payload `{"base_score": float, "trees": [tree, ...]}`: binary logistic,
  p = sigmoid(base_score + sum of the leaf values reached). Two optional stages ride in the
  same payload (so one model_id covers them):
  `"page_type": {"feature_set": str, "feature_names": [...], "types": [str, ...],
  "ensembles": [{"base_score", "trees"}, ...]}`, one binary ensemble per type over the
  page's features (transforms/page_type.py), whose probabilities fill the block features'
  page-type columns; and `"region": {"feature_set": str, "feature_names": [...],
  "base_score", "trees"}`, the second stage over the first stage's probabilities in context
  (transforms/region.py), whose probability the threshold then applies to.
- `ceml` payload `{"group_names": [str], "trees": [tree, ...]}`: seed 002's one CART
  per instance group, aligned with group_names; a leaf's value is P(main). The
  caller gives each block's group as an index into group_names (`check_groups`
  verifies both sides use the same list). 002's hard rules are the caller's.

Prediction evaluates every (block, tree) pair at once, one numpy step per tree
level: no Python loop over blocks or nodes.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import zlib
from dataclasses import dataclass

import numpy as np

try:
    # The tree walk compiled (transforms/_model.c, built by `pip install`); _evaluate's numpy
    # walk is its reference and runs where the extension is missing.
    from sitestrip.transforms import _model as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
# Tests switch it off to compare both walks; SITESTRIP_MODEL=numpy does so for a process.
_COMPILED = os.environ.get("SITESTRIP_MODEL", "compiled") != "numpy"
# _model.c forest's path: 0 its bitvector pass where the table allows it, with the widest vectors
# the processor has (the same leaves as the walk, _model.c bits_layout), 1 the walk, its
# reference, which SITESTRIP_MODEL=walk selects for a process; SITESTRIP_MODEL=bits (2) the plain C
# pass and SITESTRIP_MODEL=avx2 (4) the AVX2 pass, which a processor with wider vectors would not
# take otherwise (forest refuses them where the processor lacks AVX2 or the table does not fit the
# bitvector layout).
_FOREST_PATH = {"walk": 1, "bits": 2, "avx2": 4}.get(os.environ.get("SITESTRIP_MODEL", ""), 0)

FORMAT = "sitestrip-block-model"
FORMAT_VERSION = 1
KINDS = ("gbdt", "ceml")
TREE_FIELDS = ("default_left", "feature", "left", "right", "threshold", "value")
_TOP_KEYS = {"format", "format_version", "kind", "model_id", "feature_set", "feature_names",
             "threshold", "trained_on", "payload"}
_PAYLOAD_KEYS = {"gbdt": {"base_score", "trees"}, "ceml": {"group_names", "trees"}}
_OPTIONAL_PAYLOAD_KEYS = {"gbdt": {"page_type", "region"}, "ceml": set()}
_GZIP_MAGIC = b"\x1f\x8b"
_SLICE = 256


class ModelError(ValueError):
    """A model file that must not be used, with the reason."""


# ---------------------------------------------------------------- encoding

def _plain(value):
    """json.dumps hook: numpy scalars and arrays as Python numbers and lists."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON-serializable")


def canonical_json(value) -> bytes:
    """Sorted keys, no whitespace, Python's shortest round-trip float repr: the same
    value always gives the same bytes. NaN and infinities are refused (not JSON)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False, default=_plain).encode("ascii")


def compute_model_id(kind, feature_set, feature_names, threshold, payload) -> str:
    covered = {"kind": kind, "feature_set": feature_set, "feature_names": feature_names,
               "threshold": threshold, "payload": payload}
    return hashlib.sha256(canonical_json(covered)).hexdigest()


def model_document(kind: str, payload: dict, feature_names, feature_set: str, threshold: float,
                   trained_on: dict) -> dict:
    """The complete file document, model_id included (numpy values made plain)."""
    try:
        plain = json.loads(canonical_json({"payload": payload, "trained_on": trained_on,
                                           "feature_names": list(feature_names),
                                           "threshold": threshold}))
    except ValueError as e:   # NaN/inf somewhere: JSON cannot carry it
        raise ModelError(f"model not encodable as JSON: {e}") from None
    doc = {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": kind,
           "feature_set": feature_set, "feature_names": plain["feature_names"],
           "threshold": plain["threshold"], "trained_on": plain["trained_on"],
           "payload": plain["payload"]}
    doc["model_id"] = compute_model_id(kind, feature_set, doc["feature_names"], doc["threshold"],
                                       doc["payload"])
    return doc


def encode_model(document: dict, *, compress: bool) -> bytes:
    """File bytes of a document: canonical JSON plus a newline, optionally gzip with
    mtime 0 (a gzip header otherwise carries the time, and the bytes would differ)."""
    data = canonical_json(document) + b"\n"
    return gzip.compress(data, compresslevel=9, mtime=0) if compress else data


# ---------------------------------------------------------------- loading

def load_model(source) -> "BlockModel":
    """A validated model from a path or from the file's bytes; ModelError says what is wrong."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, where = bytes(source), "model bytes"
    else:
        where = os.fspath(source)
        try:
            with open(where, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ModelError(f"{where}: cannot read model file: {e}") from None
    try:
        return _validated(data)
    except ModelError as e:
        raise ModelError(f"{where}: {e}") from None


def _refuse_constant(name):
    raise ModelError(f"not valid JSON: {name} is not a JSON number")


def _validated(data: bytes) -> "BlockModel":
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise ModelError(f"not a readable gzip stream: {e}") from None
    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except UnicodeDecodeError as e:
        raise ModelError(f"not UTF-8 text: {e}") from None
    except json.JSONDecodeError as e:
        raise ModelError(f"not valid JSON (truncated or corrupted?): {e}") from None
    if not isinstance(doc, dict):
        raise ModelError("not a model document: the top level is not a JSON object")
    if doc.get("format") != FORMAT:
        raise ModelError(f"not a model document: format is {doc.get('format')!r}, expected {FORMAT!r}")
    version = doc.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:
        raise ModelError(f"unsupported format_version {version!r}: this reader knows {FORMAT_VERSION}")
    if set(doc) != _TOP_KEYS:
        missing, extra = sorted(_TOP_KEYS - set(doc)), sorted(set(doc) - _TOP_KEYS)
        raise ModelError(f"top-level keys wrong: missing {missing}, unexpected {extra}")
    kind = doc["kind"]
    if kind not in KINDS:
        raise ModelError(f"unknown kind {kind!r}: expected one of {list(KINDS)}")
    recorded = doc["model_id"]
    computed = compute_model_id(kind, doc["feature_set"], doc["feature_names"], doc["threshold"],
                                doc["payload"])
    if recorded != computed:
        raise ModelError(f"model_id {recorded!r} does not match the content's hash {computed!r}: "
                         "the file was altered or corrupted after it was written")
    feature_set = doc["feature_set"]
    if not isinstance(feature_set, str) or not feature_set:
        raise ModelError("feature_set must be a non-empty string")
    names = _names(doc["feature_names"], "feature_names")
    threshold = doc["threshold"]
    if type(threshold) not in (int, float) or not 0.0 <= threshold <= 1.0:
        raise ModelError(f"threshold must be a number in [0, 1], got {threshold!r}")
    if not isinstance(doc["trained_on"], dict):
        raise ModelError("trained_on must be a JSON object")
    payload = doc["payload"]
    if not isinstance(payload, dict) or not (_PAYLOAD_KEYS[kind] <= set(payload) <=
                                             _PAYLOAD_KEYS[kind] | _OPTIONAL_PAYLOAD_KEYS[kind]):
        got = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
        optional = f" (optional: {sorted(_OPTIONAL_PAYLOAD_KEYS[kind])})" if _OPTIONAL_PAYLOAD_KEYS[kind] else ""
        raise ModelError(f"{kind} payload must have exactly the keys "
                         f"{sorted(_PAYLOAD_KEYS[kind])}{optional}, got {got}")
    raw_trees = payload["trees"]
    if not isinstance(raw_trees, list) or not raw_trees:
        raise ModelError("payload.trees must be a non-empty list")
    trees = [_tree(t, len(names), f"payload.trees[{i}]") for i, t in enumerate(raw_trees)]
    if kind == "gbdt":
        base = payload["base_score"]
        if type(base) not in (int, float) or not math.isfinite(base):
            raise ModelError(f"payload.base_score must be a finite number, got {base!r}")
        group_names: tuple = ()
    else:
        base = 0.0
        group_names = _names(payload["group_names"], "payload.group_names")
        if len(group_names) != len(trees):
            raise ModelError(f"payload.group_names has {len(group_names)} names for {len(trees)} trees")
        for i, t in enumerate(trees):
            leaves = t.left < 0
            if np.any((t.value[leaves] < 0) | (t.value[leaves] > 1)):
                raise ModelError(f"payload.trees[{i}]: a ceml leaf value is not a probability in [0, 1]")
    model = BlockModel(kind=kind, model_id=recorded, feature_set=feature_set, feature_names=names,
                       threshold=float(threshold), trained_on=doc["trained_on"],
                       group_names=group_names, base_score=float(base), trees=tuple(trees))
    if "page_type" in payload:
        section = payload["page_type"]
        if not isinstance(section, dict) or set(section) != {"feature_set", "feature_names", "types", "ensembles"}:
            raise ModelError("payload.page_type must have exactly the keys "
                             "['ensembles', 'feature_names', 'feature_set', 'types']")
        types = _names(section["types"], "payload.page_type.types")
        ensembles = section["ensembles"]
        if not isinstance(ensembles, list) or len(ensembles) != len(types):
            raise ModelError(f"payload.page_type.ensembles must be a list of {len(types)} ensembles, one per type")
        model.page_type_types = types
        model.page_type_models = [_stage(dict(e, feature_set=section["feature_set"],
                                              feature_names=section["feature_names"]) if isinstance(e, dict) else e,
                                         f"payload.page_type.ensembles[{i}]") for i, e in enumerate(ensembles)]
    if "region" in payload:
        model.region = _stage(payload["region"], "payload.region")
    return model


def _stage(section, where: str) -> "BlockModel":
    """A binary ensemble of a stage (page type, region) as a BlockModel of its own features."""
    if not isinstance(section, dict) or set(section) != {"feature_set", "feature_names", "base_score", "trees"}:
        raise ModelError(f"{where} must have exactly the keys ['base_score', 'feature_names', 'feature_set', 'trees']")
    if not isinstance(section["feature_set"], str) or not section["feature_set"]:
        raise ModelError(f"{where}.feature_set must be a non-empty string")
    names = _names(section["feature_names"], f"{where}.feature_names")
    base = section["base_score"]
    if type(base) not in (int, float) or not math.isfinite(base):
        raise ModelError(f"{where}.base_score must be a finite number, got {base!r}")
    raw_trees = section["trees"]
    if not isinstance(raw_trees, list) or not raw_trees:
        raise ModelError(f"{where}.trees must be a non-empty list")
    trees = [_tree(t, len(names), f"{where}.trees[{i}]") for i, t in enumerate(raw_trees)]
    return BlockModel(kind="gbdt", model_id="", feature_set=section["feature_set"], feature_names=names,
                      threshold=0.5, trained_on={}, group_names=(), base_score=float(base), trees=tuple(trees))


def _names(value, what: str) -> tuple:
    if not isinstance(value, list) or not value:
        raise ModelError(f"{what} must be a non-empty list of strings")
    if not all(isinstance(v, str) and v for v in value):
        raise ModelError(f"{what} must hold non-empty strings only")
    if len(set(value)) != len(value):
        dup = sorted({v for v in value if value.count(v) > 1})
        raise ModelError(f"{what} repeats {dup}")
    return tuple(value)


@dataclass(frozen=True)
class _Tree:
    feature: np.ndarray       # int64
    threshold: np.ndarray     # float64
    left: np.ndarray          # int64, -1 at leaves
    right: np.ndarray
    default_left: np.ndarray  # bool
    value: np.ndarray         # float64


def _array(raw, kind: str, where: str) -> np.ndarray:
    if not isinstance(raw, list):
        raise ModelError(f"{where} must be a list")
    try:
        arr = np.asarray(raw) if raw else np.zeros(0, dtype=np.int64)
    except (ValueError, OverflowError) as e:
        raise ModelError(f"{where}: {e}") from None
    if arr.ndim != 1:
        raise ModelError(f"{where} must be a flat list of numbers")
    if kind == "int" and arr.dtype.kind not in "iu":
        raise ModelError(f"{where} must hold integers only")
    if kind == "float":
        if arr.dtype.kind not in "iuf":
            raise ModelError(f"{where} must hold numbers only")
        arr = arr.astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise ModelError(f"{where}[{bad[0]}] is not finite")
    return arr.astype(np.int64) if kind == "int" else arr


def _tree(raw, n_features: int, where: str) -> _Tree:
    """Arrays of one tree after checking that they encode a binary tree over known features."""
    if not isinstance(raw, dict) or set(raw) != set(TREE_FIELDS):
        got = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise ModelError(f"{where} must have exactly the fields {list(TREE_FIELDS)}, got {got}")
    kinds = {"feature": "int", "left": "int", "right": "int", "default_left": "int",
             "threshold": "float", "value": "float"}
    arrs = {k: _array(raw[k], kinds[k], f"{where}.{k}") for k in TREE_FIELDS}
    sizes = {k: a.size for k, a in arrs.items()}
    m = sizes["feature"]
    if m == 0 or len(set(sizes.values())) != 1:
        raise ModelError(f"{where}: node arrays must be non-empty and of one length, got {sizes}")
    feature, left, right, dl = arrs["feature"], arrs["left"], arrs["right"], arrs["default_left"]
    threshold, value = arrs["threshold"], arrs["value"]
    idx = np.arange(m)
    leaf = left == -1
    if np.any(leaf != (right == -1)):
        i = np.flatnonzero(leaf != (right == -1))[0]
        raise ModelError(f"{where}: node {i} has one child (left {left[i]}, right {right[i]})")
    inner = ~leaf
    for name, child in (("left", left), ("right", right)):
        bad = np.flatnonzero(inner & ((child <= idx) | (child >= m)))
        if bad.size:
            i = bad[0]
            raise ModelError(f"{where}: node {i} has {name} child {child[i]}, outside ({i}, {m}): "
                             "children must follow their parent (no cycles) and exist")
    parents = np.bincount(np.concatenate((left[inner], right[inner])), minlength=m)
    if parents[0] != 0 or np.any(parents[1:] != 1):
        i = np.flatnonzero(parents[1:] != 1)[0] + 1 if np.any(parents[1:] != 1) else 0
        raise ModelError(f"{where}: node {i} has {parents[i]} parents; every node but the root needs one")
    bad = np.flatnonzero(inner & ((feature < 0) | (feature >= n_features)))
    if bad.size:
        i = bad[0]
        raise ModelError(f"{where}: node {i} splits on feature {feature[i]}, "
                         f"not in [0, {n_features}) (feature_names)")
    if np.any((dl != 0) & (dl != 1)):
        raise ModelError(f"{where}.default_left must hold 0 or 1")
    bad = np.flatnonzero(leaf & ((feature != -1) | (threshold != 0) | (dl != 0)))
    if bad.size:
        raise ModelError(f"{where}: leaf {bad[0]} must carry feature -1, threshold 0, default_left 0")
    bad = np.flatnonzero(inner & (value != 0))
    if bad.size:
        raise ModelError(f"{where}: internal node {bad[0]} must carry value 0")
    return _Tree(feature, threshold, left, right, dl.astype(bool), value)


# ---------------------------------------------------------------- prediction

def _round_down_float32(t: np.ndarray) -> np.ndarray:
    """The largest float32 <= t: for a float32 x, x <= t  <=>  x <= this, so the
    evaluator compares in float32 exactly as the libraries do in float64."""
    with np.errstate(over="ignore"):       # beyond float32's range: inf, stepped down below
        t32 = t.astype(np.float32)
    above = t32.astype(np.float64) > t
    t32[above] = np.nextafter(t32[above], np.float32(-np.inf))
    return t32


def _breadth_first(tree: _Tree) -> tuple[np.ndarray, np.ndarray]:
    """(order, depth): node ids level by level with each node's children adjacent
    (left then right), and every node's depth. One numpy step per level."""
    order, depth = [np.zeros(1, dtype=np.int64)], np.zeros(tree.left.size, dtype=np.int64)
    level, d = order[0], 0
    while level.size:
        inner = level[tree.left[level] >= 0]
        level = np.stack((tree.left[inner], tree.right[inner]), axis=1).ravel()
        d += 1
        depth[level] = d
        if level.size:
            order.append(level)
    return np.concatenate(order), depth


class BlockModel:
    """A loaded, validated model. Build it with `load_model`."""

    def __init__(self, *, kind, model_id, feature_set, feature_names, threshold, trained_on,
                 group_names, base_score, trees):
        self.kind = kind
        self.model_id = model_id
        self.feature_set = feature_set
        self.feature_names = feature_names
        self.threshold = threshold
        self.trained_on = trained_on
        self.group_names = group_names
        self.base_score = base_score
        self.n_trees = len(trees)
        self._compile(trees)
        # The optional stages of a gbdt model (see the module's docstring); set by the loader.
        self.page_type_types: tuple = ()
        self.page_type_models: list = []
        self.region: BlockModel | None = None

    def __repr__(self):
        return (f"BlockModel(kind={self.kind!r}, trees={self.n_trees}, depth={self.max_depth}, "
                f"features={len(self.feature_names)}, feature_set={self.feature_set!r}, "
                f"model_id={self.model_id[:12]}…)")

    def _compile(self, trees) -> None:
        """All trees as one node table in breadth-first order, so a node's right child
        is its left child + 1, with NaN routing folded into the feature index:
        column f of the evaluation matrix is the feature with NaN -> +inf (NaN goes
        right under `x > t`), column F + f the same with NaN -> -inf (NaN goes left).
        A leaf points to itself and never moves (threshold +inf). gbdt trees are
        ordered deepest first so that level d only touches the trees still deeper."""
        n_features = len(self.feature_names)
        layouts = [_breadth_first(t) for t in trees]
        depths = np.asarray([int(depth.max()) for _, depth in layouts])
        tree_order = (np.argsort(-depths, kind="stable") if self.kind == "gbdt"
                      else np.arange(len(trees)))
        feats, thrs, lefts, vals, roots = [], [], [], [], []
        offset = 0
        for ti in tree_order:
            t, (order, _) = trees[ti], layouts[ti]
            new_id = np.empty_like(order)
            new_id[order] = np.arange(order.size)
            inner = t.left[order] >= 0
            left = np.where(inner, new_id[np.maximum(t.left[order], 0)], np.arange(order.size)) + offset
            column = np.where(t.default_left[order], t.feature[order] + n_features, t.feature[order])
            feats.append(np.where(inner, column, 0))
            thrs.append(np.where(inner, _round_down_float32(t.threshold[order]), np.float32(np.inf)))
            lefts.append(left)
            vals.append(t.value[order])
            roots.append(offset)
            offset += order.size
        self._feature = np.concatenate(feats).astype(np.intp)
        self._threshold = np.concatenate(thrs).astype(np.float32)
        self._left = np.concatenate(lefts).astype(np.intp)
        self._value = np.concatenate(vals).astype(np.float64)
        self._roots = np.asarray(roots, dtype=np.intp)
        # The compiled walk reads 8-byte indexes: the same arrays where intp is 64-bit.
        self._feature64 = np.asarray(self._feature, dtype=np.int64)
        self._left64 = np.asarray(self._left, dtype=np.int64)
        self._roots64 = np.asarray(self._roots, dtype=np.int64)
        self._tree_depth = depths[tree_order].astype(np.int64)       # levels per tree, in table order
        self.max_depth = int(depths.max())
        # Rows of the [trees, blocks] node matrix that level d must move: gbdt, the
        # trees deeper than d (a prefix of the deepest-first order); ceml, its one row.
        self._active = [int(np.sum(depths > d)) if self.kind == "gbdt" else 1
                        for d in range(self.max_depth)]

    def check_features(self, names, version: str) -> None:
        """Refuse features computed by a different feature code than the model's."""
        names = tuple(names)
        if version == self.feature_set and names == self.feature_names:
            return
        parts = []
        if version != self.feature_set:
            parts.append(f"model feature_set {self.feature_set!r}, features {version!r}")
        if names != self.feature_names:
            parts.append(f"model has {len(self.feature_names)} features, caller {len(names)}")
            only_model = [n for n in self.feature_names if n not in set(names)]
            only_caller = [n for n in names if n not in set(self.feature_names)]
            if only_model:
                parts.append(f"only in the model: {only_model}")
            if only_caller:
                parts.append(f"only in the caller: {only_caller}")
            if not only_model and not only_caller:
                i = next(i for i, (a, b) in enumerate(zip(self.feature_names, names)) if a != b)
                parts.append(f"same names in another order, first at column {i}: "
                             f"model {self.feature_names[i]!r}, caller {names[i]!r}")
        raise ModelError("feature mismatch: " + "; ".join(parts))

    def check_groups(self, names) -> None:
        """Refuse a caller whose instance-group list differs from a ceml model's."""
        if self.kind != "ceml":
            return
        names = tuple(names)
        if names != self.group_names:
            raise ModelError(f"instance groups differ: model {list(self.group_names)}, "
                             f"caller {list(names)}")

    def predict_proba(self, X, groups=None) -> np.ndarray:
        """P(main) of each block: X is float32[n, F] (other float dtypes are rounded to
        float32 first), NaN allowed, ±inf refused; groups (ceml only) int[n] indices
        into group_names."""
        n_features = len(self.feature_names)
        if (self.kind == "gbdt" and _compiled is not None and _COMPILED and type(X) is np.ndarray
                and X.dtype == np.float32 and X.ndim == 2 and X.shape[1] == n_features
                and X.shape[0] % _SLICE != 1 and X.flags.c_contiguous):
            # Every block in one compiled pass over X as it is: _evaluate's leaf sums of each
            # 256-block slice, block by block the same. A page whose last slice is one block
            # (n % 256 == 1) takes the path below, which sums that block's leaves with numpy.
            sums = np.empty(X.shape[0])
            if _compiled.forest(self._forest(), X, sums, False, _FOREST_PATH):
                self._checked(X, groups)            # raises: infinite features
            return np.exp(-np.logaddexp(0.0, -(self.base_score + sums)))
        X, groups = self._checked(X, groups)
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        n = X.shape[0]
        # Blocks in slices: the [trees, blocks] buffers of 256 blocks stay in cache;
        # 2,000 at once ran 1.5x slower per block (300 trees).
        if n > _SLICE:
            return np.concatenate([
                self._evaluate(X[i:i + _SLICE], None if groups is None else groups[i:i + _SLICE])
                for i in range(0, n, _SLICE)])
        return self._evaluate(X, groups)

    def _checked(self, X, groups):
        """(X as float32, groups) after predict_proba's checks."""
        X = np.asarray(X, dtype=np.float32)
        n_features = len(self.feature_names)
        if X.ndim != 2 or X.shape[1] != n_features:
            raise ValueError(f"features must be [n, {n_features}], got shape {X.shape}")
        n = X.shape[0]
        if self.kind == "ceml":
            if groups is None:
                raise ValueError("a ceml model needs each block's instance group")
            groups = np.asarray(groups)
            if groups.shape != (n,) or (n and groups.dtype.kind not in "iu"):
                raise ValueError(f"groups must be int[{n}], got {groups.dtype}{list(groups.shape)}")
            if n and (groups.min() < 0 or groups.max() >= len(self.group_names)):
                raise ValueError(f"group index outside [0, {len(self.group_names)})")
        inf = np.isinf(X)
        if inf.any():
            cols = sorted({self.feature_names[c] for c in np.flatnonzero(inf.any(axis=0))})
            raise ValueError(f"features are infinite in {cols}")
        return X, groups

    def _evaluate(self, X, groups) -> np.ndarray:
        n = X.shape[0]
        if self.kind == "gbdt" and n > 1 and _compiled is not None and _COMPILED:
            # The leaves' sums per block in C, no [trees, blocks] matrices: the same additions
            # in the same order as numpy's sum over the trees axis below (_model.c leaf_sums).
            sums = np.empty(n)
            _compiled.leaf_sums(_both(X), self._tree_depth, self._feature64, self._threshold, self._left64,
                                self._value, self._roots64, sums)
            return np.exp(-np.logaddexp(0.0, -(self.base_score + sums)))
        rows = self._roots.size if self.kind == "gbdt" else 1
        node = np.empty((rows, n), dtype=np.intp)                  # [trees, blocks] or [1, blocks]
        node[:] = self._roots[:, None] if self.kind == "gbdt" else self._roots[groups]
        if _compiled is not None and _COMPILED:
            # ceml: one row of per-block trees, walked as deep as the deepest of them
            steps = self._tree_depth if self.kind == "gbdt" else np.array([self.max_depth], dtype=np.int64)
            _compiled.leaves(node, _both(X), steps, self._feature64, self._threshold, self._left64)
        else:
            self._walk(X, node)
        if self.kind == "ceml":
            return self._value[node[0]]
        raw = self.base_score + self._value[node].sum(axis=0)
        return np.exp(-np.logaddexp(0.0, -raw))                     # sigmoid without overflow

    def _walk(self, X, node) -> None:
        """Move every start node in `node` ([trees, blocks]) down to its leaf, one level at a
        time for all trees and blocks (the reference of transforms/_model.c)."""
        n = X.shape[0]
        nan = np.isnan(X.T)
        columns = np.concatenate((np.where(nan, np.float32(np.inf), X.T),
                                  np.where(nan, np.float32(-np.inf), X.T))).ravel()
        block = np.arange(n, dtype=np.intp)
        # Preallocated buffers and take(mode="clip") (unbuffered, indices are valid
        # by construction): a fresh [trees, blocks] temporary per step doubled the time.
        index, x = np.empty_like(node), np.empty(node.shape, dtype=np.float32)
        threshold, right = np.empty_like(x), np.empty(node.shape, dtype=bool)
        feature_offset = self._feature * n                           # start of the column in `columns`
        for active in self._active:
            at, ix, xs, th, go = node[:active], index[:active], x[:active], threshold[:active], right[:active]
            np.take(feature_offset, at, out=ix, mode="clip")
            ix += block
            np.take(columns, ix, out=xs, mode="clip")
            np.take(self._threshold, at, out=th, mode="clip")
            np.greater(xs, th, out=go)
            np.take(self._left, at, out=ix, mode="clip")
            np.add(ix, go, out=at)

    def __getstate__(self):
        # The compiled table (a capsule) and the page type set holding one are made again
        # where the model is used next.
        state = dict(self.__dict__)
        state.pop("_forest_table", None)
        state.pop("_page_type_model", None)
        return state

    def _forest(self):
        """The node table as _model.c forest_table checked and copied it, made once per model."""
        table = self.__dict__.get("_forest_table")
        if table is None:
            table = self._forest_table = _compiled.forest_table(
                len(self.feature_names), self._tree_depth, self._feature64, self._threshold, self._left64,
                self._value, self._roots64)
        return table

    def is_main(self, X, groups=None) -> np.ndarray:
        return self.predict_proba(X, groups) >= self.threshold


def _both(X: np.ndarray) -> np.ndarray:
    """_model.c's matrix: X with NaN as +inf, then X with NaN as -inf, side by side. fmin and
    fmax return the other operand for a NaN and x itself against ±inf (X holds no infinity:
    predict_proba refuses them), one pass each into the halves."""
    n, width = X.shape
    both = np.empty((n, 2 * width), dtype=np.float32)
    np.fmin(X, np.float32(np.inf), out=both[:, :width])
    np.fmax(X, np.float32(-np.inf), out=both[:, width:])
    return both


class EnsembleSet:
    """Several gbdt ensembles over the same features (the page type stage's one-vs-rest set):
    predict_proba of each, with every ensemble's trees in one node table so that one compiled
    walk reaches all their leaves. Each ensemble's leaf values are then summed and turned into a
    probability as its own predict_proba does, over rows of the same shape, so the values are
    its own bit for bit."""

    def __init__(self, models: list):
        self.models = list(models)
        first = self.models[0] if self.models else None
        self._joined = bool(self.models) and all(
            m.kind == "gbdt" and m.feature_names == first.feature_names for m in self.models)
        if not self._joined:
            return
        offsets = np.cumsum([0] + [m._left.size for m in self.models])[:-1]
        self._feature64 = np.concatenate([m._feature64 for m in self.models])
        self._threshold = np.concatenate([m._threshold for m in self.models])
        self._left64 = np.concatenate([m._left64 + o for m, o in zip(self.models, offsets)])
        self._value = np.concatenate([m._value for m in self.models])
        self._roots = np.concatenate([m._roots + o for m, o in zip(self.models, offsets)])
        self._tree_depth = np.concatenate([m._tree_depth for m in self.models])
        self._bounds = np.cumsum([0] + [m._roots.size for m in self.models]).tolist()
        self._roots64 = np.asarray(self._roots, dtype=np.int64)
        self._width = len(first.feature_names)
        self._same_size = len({m._roots.size for m in self.models}) == 1
        self._table = None
        self._base_scores = np.array([m.base_score for m in self.models])

    def predict_proba(self, X) -> list:
        """[each model's predict_proba(X)]."""
        if not (self._joined and _compiled is not None and _COMPILED):
            return [m.predict_proba(X) for m in self.models]
        X, _ = self.models[0]._checked(X, None)
        n = X.shape[0]
        if n == 0:
            return [np.zeros(0, dtype=np.float64) for _ in self.models]
        parts = [self._evaluate(X[i:i + _SLICE]) for i in range(0, n, _SLICE)]
        return [parts[0][e] if len(parts) == 1 else np.concatenate([p[e] for p in parts])
                for e in range(len(self.models))]

    def __getstate__(self):
        return dict(self.__dict__, _table=None)          # the capsule is made again where used

    def _forest(self):
        """Every ensemble's trees as one table checked and copied by _model.c forest_table."""
        if self._table is None:
            self._table = _compiled.forest_table(self._width, self._tree_depth, self._feature64, self._threshold,
                                                 self._left64, self._value, self._roots64)
        return self._table

    def stacked(self, X) -> np.ndarray:
        """float64[n, len(models)]: np.stack(self.predict_proba(X), axis=1)."""
        if not (self._joined and self._same_size and _compiled is not None and _COMPILED
                and type(X) is np.ndarray and X.dtype == np.float32 and X.shape == (1, self._width)):
            return np.stack(self.predict_proba(X), axis=1)
        # One row (a page's type): every ensemble's leaf values summed along its own row of a
        # [models, trees] matrix (the same pairwise sum numpy takes over a [trees, 1] slice)
        # and turned into probabilities over one vector: the values of predict_proba's loop.
        values = np.empty(self._roots.size)
        # forest_row walks sixteen trees side by side: one row has no other rows to overlap with.
        if _compiled.forest_row(self._forest(), np.ascontiguousarray(X), values):
            self.models[0]._checked(X, None)        # raises: infinite features
        raw = self._base_scores + values.reshape(len(self.models), -1).sum(axis=1)
        return np.exp(-np.logaddexp(0.0, -raw))[None, :]

    def _evaluate(self, X) -> list:
        # The leaf value each tree reaches per block, self._value[node] of the `leaves` walk.
        values = np.empty((self._roots.size, X.shape[0]))
        _compiled.forest(self._forest(), np.ascontiguousarray(X), values, True, _FOREST_PATH)
        out = []
        for e, m in enumerate(self.models):
            raw = m.base_score + values[self._bounds[e]:self._bounds[e + 1]].sum(axis=0)
            out.append(np.exp(-np.logaddexp(0.0, -raw)))
        return out
