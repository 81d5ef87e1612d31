"""Equal top-down mapping, ETDM (design §5; 2023 thesis ch. 8, Def. 4.2.7, thesis §9.3).

`map_pages(key, other)` pairs the nodes of a key page with the nodes of another
page of the same site, one-to-one and top-down: a node can only be paired when
its parent is paired, and only with a child of its parent's partner. Two
children are paired by a greedy sibling assignment over the equality score
(`equality_score`): the highest-scoring remaining pair first, ties to the
lowest index in the key page, then in the other page.

Score convention (`equality_score` and every internal score matrix):
- `NO_MATCH` (-inf): the pair can never match (different tag; text nodes with
  different text under `text_equality`);
- a float s = wc·classes + wp·position + wa·attributes + wch·children for a
  weighted comparison; it matches when s ≥ threshold;
- `certain_floor(params) + s` for a certain match (same non-empty id; or
  classes, attributes and position all 1). The floor is 1 + the sum of the
  weights, so a certain match is ≥ 1.0, outranks every weighted score, and
  matches whatever the threshold; among certain matches the weighted part
  still orders them.
Scores are quantized to 1e-9 (the same IEEE operations in the scalar and the
vectorized code) so that mathematically equal scores tie exactly and the
tie rule, not float noise, decides.

Grouping (design §5.5), two rules (`EtdmParams.grouping`):
- "node", the thesis's and design §5's: every node with more than group_over
  children has them grouped under temporary nodes of at most group_size
  (same tag as the parent, no attributes), in each tree on its own; a
  temporary node is compared with whatever the other tree has in its place,
  real or temporary, and childNodes and positions are those of the grouped
  trees.
- "pair", a product decision beyond design §5 (each restated where it is
  implemented): grouping is decided per pair of mapped parents, whose child
  lists are grouped, both with the same group size, when they would compare
  more than group_over² child pairs (always so when both have more than
  `group_over` children). Virtual nodes are only compared with virtual nodes.
Other decisions beyond design §5:
- Excluded key nodes are removed from the key page (ch. 11, HybEx step vi):
  they take no sibling position and do not count as their parent's children.
- The children of a virtual node are its items; its childNodes is their count.

Nothing here recurses over the DOM: the top-down walk is a breadth-first
sequence of waves of mapped parent pairs, and each wave's pair features are
computed in one vectorized pass.
"""
from __future__ import annotations

import math
import os
import weakref
from bisect import bisect_left
from heapq import heappop, heappush
from itertools import accumulate
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from sitestrip.transforms.page import F_PRE, TEXT, CompactPage, RecentPages
from sitestrip.transforms.tree import children

try:
    # ETDM's walk compiled (transforms/_etdm.c, built by `pip install`); the Python code below
    # is its reference and runs where the extension is missing or for grouping "node".
    from sitestrip.transforms import _etdm as _compiled
    from sitestrip.transforms import _text
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = _text = None

NO_MATCH = float("-inf")
# map_pages: a key node with no partner; and one paired with a temporary
# grouping node of the other page (grouping "node"), which is mapped (it
# counts as an occurrence) but has no node of the page as its partner.
UNMAPPED = -1
VIRTUAL_PARTNER = -2

# Whether map_pages uses the compiled walk when it is built (tests switch it off to run the
# Python paths); SITESTRIP_ETDM=python does the same for a whole process.
_COMPILED = os.environ.get("SITESTRIP_ETDM", "compiled") != "python"
# Groups with at most this many candidate pairs run the greedy assignment in
# plain Python; beyond it a dense numpy matrix is cheaper per step.
_SMALL_PAIRS = 150
# Pair features of one wave are computed in batches of at most this many
# pairs, which bounds the transient memory on pages with huge sibling lists.
_BATCH_PAIRS = 1 << 19
# Waves with at most this many sibling pairs are scored in plain Python.
_SCALAR_WAVE = 64
# Option 4's greedy finishes sequentially once this few candidate pairs remain.
_SEQUENTIAL_TAIL = 256
# ... or after this many vectorized rounds (a chain of conflicts takes one pair per round).
_GREEDY_ROUNDS = 6
# Jaccard of two token sets is computed by comparing all their element pairs
# when the two sets together give at most this many pairs; larger set pairs
# (rare: nodes with dozens of classes) use Python set operations.
_SET_PAIRS = 64


@dataclass(frozen=True)
class EtdmParams:
    w_classes: float = 0.1
    w_position: float = 0.1
    w_attributes: float = 0.5
    w_children: float = 0.3
    threshold: float = 0.7
    position_option: int = 2          # 1..4 as design §5
    text_equality: bool = True        # text nodes match only if their normalized text is equal
    # Two mapped parents whose child lists would compare more than group_over² pairs
    # (e.g. both have more than group_over children) have their children grouped
    # under virtual nodes of at most group_size consecutive children (design §5.5).
    group_over: int = 200
    group_size: int = 100
    grouping: str = "pair"            # "pair" (product) or "node" (thesis §9.3); see the module doc

    def __post_init__(self):
        if self.grouping not in ("pair", "node"):
            raise ValueError(f"grouping must be pair or node, got {self.grouping!r}")
        if self.position_option not in (1, 2, 3, 4):
            raise ValueError(f"position_option must be 1..4, got {self.position_option}")
        if min(self.w_classes, self.w_position, self.w_attributes, self.w_children) < 0:
            raise ValueError("ETDM weights must be non-negative")
        # Grouping must shrink every list it touches, or it would never stop.
        if not 2 <= self.group_size <= self.group_over:
            raise ValueError(f"need 2 <= group_size <= group_over, got {self.group_size}, {self.group_over}")


def certain_floor(params: EtdmParams) -> float:
    """Every certain match scores at least this; no weighted score reaches it."""
    return 1.0 + params.w_classes + params.w_position + params.w_attributes + params.w_children


def is_match(score: float, params: EtdmParams) -> bool:
    return score >= _quantize(params.threshold) or score >= certain_floor(params)


def _quantize(x):
    # floor(x·1e9 + 0.5)/1e9 is the same sequence of IEEE operations in math and numpy,
    # so scalar and vectorized scores agree bit for bit.
    if isinstance(x, np.ndarray):
        return np.floor(x * 1e9 + 0.5) / 1e9
    return math.floor(x * 1e9 + 0.5) / 1e9


def position_score(i: int, ca: int, j: int, cb: int) -> float:
    """Position value of child i of ca siblings against child j of cb siblings (design §5).

    Child i can align with the indices [i, i + (cb − ca)] of the other list when
    cb ≥ ca (counted from the left or from the right), else with [i − (ca − cb), i];
    d is j's distance to that interval and the value is 1 − d/min(ca, cb), clamped
    at 0 (design §5.2 decision). For indices inside both lists d < min(ca, cb), so the
    value lies in (0, 1] and the clamp only guards out-of-range arguments.
    Reproduces Tables 8.1 and 8.3 of the 2023 thesis (Table 8.2 as extracted
    agrees with neither the formula nor Table 8.3 transposed); the function is
    symmetric.
    """
    k = cb - ca
    lo, hi = i + min(k, 0), i + max(k, 0)
    d = max(0, lo - j, j - hi)
    return max(0.0, 1.0 - d / min(ca, cb))


def _positions(i, ca, j, cb):
    """Vectorized position_score (same operations, same values)."""
    k = cb - ca
    lo = i + np.minimum(k, 0)
    hi = i + np.maximum(k, 0)
    d = np.maximum(0, np.maximum(lo - j, j - hi))
    return np.maximum(0.0, 1.0 - d / np.minimum(ca, cb))


def _ratio(x: int, y: int) -> float:
    if x == 0 and y == 0:
        return 1.0
    return min(x, y) / max(x, y)


def _jaccard(sa: frozenset, sb: frozenset) -> float:
    if not sa and not sb:
        return 1.0
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


# ---------------------------------------------------------------- per-page index

class _PageIndex:
    """What ETDM needs from a page beyond its arrays, built once per page, each part when
    first needed.

    The Python paths intern class-token and attribute sets per page: sibling lists repeat
    the same few sets, so Jaccard values are computed per distinct pair of sets instead of
    per pair of nodes. The compiled walk reads every node's own sorted set instead
    (`compiled_side`), which numpy builds without a Python loop over nodes.
    """

    def __init__(self, page: CompactPage):
        ptr, idx = children(page)
        self.ptr = ptr
        self.idx = idx
        self.count = np.diff(ptr)
        self._page = weakref.ref(page)
        self._text = None
        self._compiled = None

    @cached_property
    def _classes(self):
        return _intern_sets(self._page().size, self._page().class_ptr, self._page().class_hash)

    @cached_property
    def _attributes(self):
        return _intern_sets(self._page().size, self._page().attr_ptr, self._page().attr_hash)

    cls_id = property(lambda self: self._classes[0])
    cls_sets = property(lambda self: self._classes[1])
    attr_id = property(lambda self: self._attributes[0])
    attr_sets = property(lambda self: self._attributes[1])

    @cached_property
    def cls_flat(self):
        return _flat_sets(self.cls_sets)

    @cached_property
    def attr_flat(self):
        return _flat_sets(self.attr_sets)

    def texts(self, page: CompactPage):
        """(per-node text id, -1 for elements; text → id): equal ids ⇔ equal text."""
        if self._text is None:
            ids = np.full(page.size, -1, dtype=np.int32)
            table = {}
            nodes = np.flatnonzero(page.tag == TEXT)
            tp, text = page.text_ptr, page.text
            verbatim = ((page.flags[nodes] & F_PRE) != 0).tolist()
            out = []
            for s, e, pre in zip(tp[nodes].tolist(), tp[nodes + 1].tolist(), verbatim):
                t = " ".join(text[s:e].split()) if pre else text[s:e]
                out.append(table.setdefault(t, len(table)))
            ids[nodes] = out
            self._text = (ids, table)
        return self._text

    def compiled_side(self, page: CompactPage) -> tuple:
        """The page as _etdm.map_tree reads it: int64 arrays (children CSR and counts, tag,
        id hashes, each node's class tokens and attributes as sorted sets, each text node's
        span of the compared text) and that text, a str. Built once per page index: the
        sections the page's own arrays give in one compiled pass (_etdm.page_side) where they
        have the page's dtypes, else by `side_reference`."""
        if self._compiled is None:
            side = self._side_compiled(page) if _COMPILED and _compiled is not None else None
            self._compiled = side if side is not None else self.side_reference(page)
        return self._compiled

    def _side_compiled(self, page: CompactPage) -> tuple | None:
        n, idx = page.size, self.idx
        class_hash, attr_hash = page.class_hash, page.attr_hash
        # One buffer for every section: idx, tag, id_hash, class sets (ptr, values), attribute
        # sets (ptr, values), text starts and ends, verbatim text nodes.
        sizes = (idx.size, n, n, n + 1, class_hash.size, n + 1, attr_hash.size, n, n, n)
        out = np.empty(sum(sizes), dtype=np.int64)
        got = _compiled.page_side(idx, page.tag, page.id_hash, page.class_ptr, class_hash, page.attr_ptr,
                                  attr_hash, page.text_ptr, page.flags, TEXT, F_PRE, out)
        if got is None:
            return None
        bounds = list(accumulate(sizes, initial=0))
        idx64, tag, id_hash, cls_ptr, cls_val, attr_ptr, attr_val, start, end, pre = (
            out[a:b] for a, b in zip(bounds, bounds[1:]))
        classes, attributes, verbatim = got
        return self._with_text(page, (np.ascontiguousarray(self.ptr, dtype=np.int64), idx64,
                                      np.ascontiguousarray(self.count, dtype=np.int64), tag, id_hash, cls_ptr,
                                      cls_val[:classes], attr_ptr, attr_val[:attributes]), start, end,
                               pre[:verbatim])

    def side_reference(self, page: CompactPage) -> tuple:
        """compiled_side built with numpy: each section an int64 copy of the page's array."""
        i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)  # noqa: E731
        cls_ptr, cls_val = _node_sets_compiled(page.size, page.class_ptr, page.class_hash)
        attr_ptr, attr_val = _node_sets_compiled(page.size, page.attr_ptr, page.attr_hash)
        start, end = i64(page.text_ptr[:-1]), i64(page.text_ptr[1:])
        pre = np.flatnonzero((page.tag == TEXT) & ((page.flags & F_PRE) != 0))
        return self._with_text(page, (i64(self.ptr), i64(self.idx), i64(self.count), i64(page.tag),
                                      i64(page.id_hash), cls_ptr, cls_val, attr_ptr, attr_val), start, end, pre)

    @staticmethod
    def _with_text(page: CompactPage, arrays: tuple, start: np.ndarray, end: np.ndarray, pre: np.ndarray) -> tuple:
        """The side: `arrays`, each text node's span (`start`, `end`) and the compared text."""
        compared = page.text
        if pre.size:
            # Text equality compares collapsed text (design §1), and verbatim <pre> text is
            # not collapsed in page.text: those nodes' collapsed texts go after it.
            lengths = np.empty(pre.size, dtype=np.int64)
            extra = _text.collapsed_spans(page.text, start[pre], end[pre], lengths)
            start[pre] = len(compared) + np.cumsum(lengths) - lengths
            end[pre] = start[pre] + lengths
            compared = compared + extra
        return arrays + (start, end, compared)


def _node_sets(n: int, ptr: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ptr, values) of every node's values as a set: sorted, without repeats ("a a" is {a})."""
    owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    order = np.lexsort((values, owner))
    owner, vals = owner[order], values[order].astype(np.int64)
    keep = np.ones(vals.size, dtype=bool)
    keep[1:] = (owner[1:] != owner[:-1]) | (vals[1:] != vals[:-1])
    counts = np.bincount(owner[keep], minlength=n)
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64), vals[keep]


def _node_sets_compiled(n: int, ptr: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """_node_sets in transforms/_etdm.c (one pass, each node's few values sorted in place), for
    values whose order int64 keeps (a page's uint32 hashes); _node_sets is the reference."""
    if values.dtype.kind not in "iu" or (values.dtype.kind == "u" and values.dtype.itemsize == 8) \
            or len(ptr) != n + 1:
        return _node_sets(n, ptr, values)
    out_ptr = np.empty(n + 1, dtype=np.int64)
    out = np.empty(values.size, dtype=np.int64)
    k = _compiled.node_sets(np.ascontiguousarray(ptr, dtype=np.int64), np.ascontiguousarray(values, dtype=np.int64),
                            out_ptr, out)
    return out_ptr, out[:k]


def _intern_sets(n: int, ptr: np.ndarray, values: np.ndarray):
    ids = np.zeros(n, dtype=np.int32)
    sets = [frozenset()]
    nodes = np.flatnonzero(np.diff(ptr))
    if nodes.size:
        table = {}
        vals = values.tolist()
        out = []
        for s, e in zip(ptr[nodes].tolist(), ptr[nodes + 1].tolist()):
            fs = frozenset(vals[s:e])
            k = table.get(fs)
            if k is None:
                k = table[fs] = len(sets)
                sets.append(fs)
            out.append(k)
        ids[nodes] = out
    return ids, sets


def _flat_sets(sets: list) -> tuple[np.ndarray, np.ndarray]:
    """(ptr, values) of interned sets: set k is values[ptr[k]:ptr[k + 1]]."""
    sizes = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    values = np.fromiter((v for s in sets for v in s), dtype=np.int64, count=int(ptr[-1]))
    return ptr, values


def _pair_jaccards(x: np.ndarray, y: np.ndarray, flat_a, flat_b, sets_a, sets_b) -> np.ndarray:
    """Jaccard of set x[k] of one page and set y[k] of the other, both non-empty.

    Vectorized because sibling lists of links carry one distinct href set per
    node: a menu of 250 links against another is 62,000 distinct set pairs,
    which a Python loop turned into most of the site step's time. The value
    is the same float as _jaccard's (an exact integer ratio, correctly rounded).
    """
    (pa, va), (pb, vb) = flat_a, flat_b
    la, lb = pa[x + 1] - pa[x], pb[y + 1] - pb[y]
    reps = la * lb
    inter = np.zeros(x.size, dtype=np.int64)
    small = np.flatnonzero(reps <= _SET_PAIRS)
    # Chunks keep the element-pair arrays within _BATCH_PAIRS entries.
    bounds = np.cumsum(reps[small])
    c0 = 0
    while c0 < small.size:
        start = bounds[c0 - 1] if c0 else 0
        c1 = max(c0 + 1, int(np.searchsorted(bounds, start + _BATCH_PAIRS, side="right")))
        ks = small[c0:c1]
        r = reps[ks]
        pid = np.repeat(np.arange(ks.size, dtype=np.int64), r)
        loc = np.arange(pid.size, dtype=np.int64) - (np.cumsum(r) - r)[pid]
        width = lb[ks][pid]
        ea = va[pa[x[ks]][pid] + loc // width]
        eb = vb[pb[y[ks]][pid] + loc % width]
        inter[ks] = np.bincount(pid[ea == eb], minlength=ks.size)
        c0 = c1
    for k in np.flatnonzero(reps > _SET_PAIRS).tolist():
        inter[k] = len(sets_a[int(x[k])] & sets_b[int(y[k])])
    return inter / (la + lb - inter)


# Page indexes are kept for the pages mapped most recently, up to this many nodes in all
# (about 80 bytes a node). A page is mapped again soon after it is first indexed (key pages
# run in URL order, and their candidates are mostly their neighbours): on docsites-dev 50k
# nodes build 2,144 indexes where 150k built 1,902 (about 0.02 CPU s more in all) and hold about 10 MB
# less at a 2,000-page shard (docs/performance.md, "Memory per worker"). Pages are held
# weakly: a page leaves memory with its site shard, and an index never outlives its page.
_INDEX_NODES = 50_000


class _RecentIndexes(RecentPages):
    """The pages whose index is attached (page.RecentPages); the two pages of the mapping
    under way always keep theirs."""

    def __init__(self, max_nodes: int):
        super().__init__(max_nodes, lambda page: page.__dict__.pop("_etdm_index", None), keep=2)

    @property
    def built(self) -> int:
        return self.added

    def get(self, page: CompactPage) -> _PageIndex:
        with self.lock:
            ix = page.__dict__.get("_etdm_index")
            if ix is not None and self.touch(page):
                return ix
        ix = _PageIndex(page)
        with self.lock:
            page.__dict__["_etdm_index"] = ix
            self.add(page)
        return ix


_RECENT = _RecentIndexes(_INDEX_NODES)


def _index(page: CompactPage) -> _PageIndex:
    # Attached to the page the way page.py keeps its wire blob: not a field, so it is
    # neither compared nor pickled.
    return _RECENT.get(page)


# ---------------------------------------------------------------- scalar score

def equality_score(key: CompactPage, a: int, other: CompactPage, b: int, position: float,
                   params: EtdmParams = EtdmParams()) -> float:
    """≜(a, b) of key node a and other node b at the given position value (see module doc).

    childNodes are the pages' own child counts (map_pages uses the counts after
    `exclude` on the key side and, under grouping "node", those of the grouped trees).
    """
    if int(key.tag[a]) != int(other.tag[b]):
        return NO_MATCH
    if int(key.tag[a]) == TEXT and params.text_equality and key.collapsed_text(a) != other.collapsed_text(b):
        return NO_MATCH
    ki, oi = _index(key), _index(other)
    cls = _jaccard(ki.cls_sets[ki.cls_id[a]], oi.cls_sets[oi.cls_id[b]])
    att = _jaccard(ki.attr_sets[ki.attr_id[a]], oi.attr_sets[oi.attr_id[b]])
    ch = _ratio(int(key.child_count[a]), int(other.child_count[b]))
    base = params.w_classes * cls + params.w_attributes * att + params.w_children * ch
    s = _quantize(base + params.w_position * position)
    ida = int(key.id_hash[a])
    if (ida != 0 and ida == int(other.id_hash[b])) or (cls == 1.0 and att == 1.0 and position == 1.0):
        return certain_floor(params) + s
    return s


# ---------------------------------------------------------------- mapping

def map_pages(key: CompactPage, other: CompactPage, params: EtdmParams = EtdmParams(),
              exclude: np.ndarray | None = None, check=None) -> np.ndarray:
    """ETDM of `key` into `other`: for each key node, its partner in `other`, UNMAPPED (-1),
    or VIRTUAL_PARTNER (-2) when it is paired with a temporary grouping node (grouping "node").

    The roots (BODY) are compared like any pair (one child of one, position 1);
    if they do not match nothing maps. `exclude` (bool per key node) removes
    key nodes and their subtrees from the key page before mapping. `check`, when
    given, is called between waves (the compiled walk: once 2^16 pairs have been scored
    since the last call) and may raise to abandon the mapping (the per-page time budget).
    """
    return _Mapper(key, other, params, exclude).run(check)


class _Mapper:
    def __init__(self, key: CompactPage, other: CompactPage, params: EtdmParams, exclude):
        self.key, self.other, self.p = key, other, params
        self.ki, self.oi = _index(key), _index(other)
        self.excluded_root = False
        if exclude is None:
            self.kptr, self.kidx, self.kcount = self.ki.ptr, self.ki.idx, self.ki.count
        else:
            ex = np.asarray(exclude, dtype=bool)
            if ex.shape != (key.size,):
                raise ValueError(f"exclude must be a bool mask of {key.size} key nodes, got shape {ex.shape}")
            self.excluded_root = bool(ex[0])
            # Removing a node from its parent's child list removes its subtree
            # too: the walk never reaches it.
            kidx = self.ki.idx[~ex[self.ki.idx]]
            self.kcount = np.bincount(key.parent[kidx], minlength=key.size).astype(np.int64)
            self.kptr = np.concatenate(([0], np.cumsum(self.kcount)))
            self.kidx = kidx
        self.ocount, self.optr, self.oidx = self.oi.count, self.oi.ptr, self.oi.idx
        self.ktag, self.otag = key.tag, other.tag
        self.wc, self.wp = params.w_classes, params.w_position
        self.wa, self.wch = params.w_attributes, params.w_children
        self.tq = _quantize(params.threshold)
        self.cert = certain_floor(params)
        self.opt = params.position_option
        self.over_pairs = params.group_over * params.group_over
        self.by_node = params.grouping == "node"
        # childNodes in the children ratio: the trees' own counts, or under "node"
        # grouping the counts of the grouped trees (a grouped node's temporary nodes).
        self.kch, self.och = self.kcount, self.ocount
        if self.by_node:
            self.kch, self.och = self._grouped_counts(self.kcount), self._grouped_counts(self.ocount)
        self.jcache: dict = {}
        self.text_trans = None

    def _unit(self, length: int) -> int:
        """Items per temporary node for a list of `length`: group_size, or group_size^k
        when that many temporary nodes would themselves exceed group_over."""
        unit = self.p.group_size
        while -(-length // unit) > self.p.group_over:
            unit *= self.p.group_size
        return unit

    def _entries(self, length: int) -> int:
        """Children a list of `length` has once grouped by node (design §5.5)."""
        if length <= self.p.group_over:
            return length
        return -(-length // self._unit(length))

    def _grouped_counts(self, count: np.ndarray) -> np.ndarray:
        out = count.copy()
        for x in np.flatnonzero(count > self.p.group_over).tolist():
            out[x] = self._entries(int(count[x]))
        return out

    # -- wave loop

    def run(self, check=None) -> np.ndarray:
        result = np.full(self.key.size, -1, dtype=np.int32)
        if self.excluded_root:
            return result
        if _compiled is not None and _COMPILED and not self.by_node:
            self._run_compiled(result, check)
            return result
        one = np.array([1], dtype=np.int64)
        zero = np.array([0], dtype=np.int64)
        # The roots form a sibling group of one against one.
        real = [(zero, zero, one, one)]
        virtual = []
        while real or virtual:
            if check is not None:
                check()
            new_real, new_virtual = [], []
            if real:
                pairs = sum(int(np.dot(ms, ns)) for _, _, ms, ns in real)
                if pairs <= _SCALAR_WAVE:
                    # Narrow waves (deep chains, small subtrees) cost less in plain
                    # Python than in a few dozen numpy calls.
                    a, b = self._scalar_wave(real)
                    result[a] = b
                    self._expand_few(a.tolist(), b.tolist(), new_real, new_virtual)
                else:
                    ks, os_, ms, ns = (np.concatenate(x) for x in zip(*real))
                    a, b = self._real_wave(ks, os_, ms, ns)
                    result[a] = b
                    self._expand_real(a, b, new_real, new_virtual)
            for group in virtual:
                if self.by_node:
                    self._node_group(result, group, new_real, new_virtual)
                else:
                    self._virtual_group(group, new_real, new_virtual)
            real, virtual = new_real, new_virtual
        return result

    def _run_compiled(self, result: np.ndarray, check) -> None:
        """The same walk in transforms/_etdm.c (grouping "pair"; equal results,
        tests/transforms/test_etdm.py)."""
        key_side = self.ki.compiled_side(self.key)
        if self.kidx is not self.ki.idx:
            # Excluded key nodes: the children lists and counts after their removal.
            key_side = (np.ascontiguousarray(self.kptr, dtype=np.int64),
                        np.ascontiguousarray(self.kidx, dtype=np.int64),
                        np.ascontiguousarray(self.kcount, dtype=np.int64)) + key_side[3:]
        p = self.p
        _compiled.map_tree(key_side, self.oi.compiled_side(self.other), result,
                           (self.wc, self.wp, self.wa, self.wch, self.tq, self.cert, self.opt,
                            int(p.text_equality), TEXT, self.over_pairs, p.group_size, p.group_over),
                           check)

    def _expand_real(self, a, b, new_real, new_virtual):
        """Queue the child groups of the mapped real pairs (a, b)."""
        if a.size == 0:
            return
        lk, lo = self.kcount[a], self.ocount[b]
        both = (lk > 0) & (lo > 0)
        if self.by_node:
            big = both & ((lk > self.p.group_over) | (lo > self.p.group_over))
        else:
            big = both & (lk * lo > self.over_pairs)
        small = both & ~big
        if small.any():
            ka, ob, ml, nl = a[small], b[small], lk[small], lo[small]
            new_real.append((self.kidx[_ranges(self.kptr[ka], ml)],
                             self.oidx[_ranges(self.optr[ob], nl)], ml, nl))
        for pa, pb, la, lb in zip(a[big].tolist(), b[big].tolist(), lk[big].tolist(), lo[big].tolist()):
            new_virtual.append((pa, 0, la, pb, 0, lb) if self.by_node else self._chunked(pa, 0, la, pb, 0, lb))

    def _expand_few(self, a, b, new_real, new_virtual):
        """_expand_real for a handful of pairs, without the vectorized set-up."""
        kptr, optr, kcount, ocount = self.kptr, self.optr, self.kcount, self.ocount
        for pa, pb in zip(a, b):
            la, lb = int(kcount[pa]), int(ocount[pb])
            if la == 0 or lb == 0:
                continue
            if self.by_node:
                big = la > self.p.group_over or lb > self.p.group_over
            else:
                big = la * lb > self.over_pairs
            if big:
                new_virtual.append((pa, 0, la, pb, 0, lb) if self.by_node else self._chunked(pa, 0, la, pb, 0, lb))
            else:
                ka, ob = int(kptr[pa]), int(optr[pb])
                new_real.append((self.kidx[ka:ka + la], self.oidx[ob:ob + lb],
                                 np.array([la], dtype=np.int64), np.array([lb], dtype=np.int64)))

    def _scalar_wave(self, segments):
        """The wave's sibling groups scored pair by pair (same values as _batch)."""
        out_a, out_b = [], []
        for ks, os_, ms, ns in segments:
            ks, os_ = ks.tolist(), os_.tolist()
            ko = oo = 0
            for m, n in zip(ms.tolist(), ns.tolist()):
                kids, okids = ks[ko:ko + m], os_[oo:oo + n]
                ko += m
                oo += n
                li, lj, lb, lic, lca = [], [], [], [], []
                for x, a in enumerate(kids):
                    for y, b in enumerate(okids):
                        st = self._static_one(a, b)
                        if st is not None:
                            li.append(x)
                            lj.append(y)
                            lb.append(st[0])
                            lic.append(st[1])
                            lca.append(st[2])
                if not li:
                    continue
                for k in self._solve_lists(li, lj, lb, lic, lca, m, n):
                    out_a.append(kids[li[k]])
                    out_b.append(okids[lj[k]])
        return np.array(out_a, dtype=np.int64), np.array(out_b, dtype=np.int64)

    def _static_one(self, a, b):
        """(base, id match, classes = attributes = 1) of one real pair, or None when it can never match."""
        key, other = self.key, self.other
        if key.tag[a] != other.tag[b]:
            return None
        if self.p.text_equality and key.tag[a] == TEXT and key.collapsed_text(a) != other.collapsed_text(b):
            return None
        ki, oi = self.ki, self.oi
        cls = self._jaccard_one(ki.cls_id[a], oi.cls_id[b], ki.cls_sets, oi.cls_sets, 0)
        att = self._jaccard_one(ki.attr_id[a], oi.attr_id[b], ki.attr_sets, oi.attr_sets, 1)
        base = self.wc * cls + self.wa * att + self.wch * _ratio(int(self.kch[a]), int(self.och[b]))
        ida = int(key.id_hash[a])
        idc = ida != 0 and ida == int(other.id_hash[b])
        ca1 = cls == 1.0 and att == 1.0
        if not (idc or ca1 or _quantize(base + self.wp) >= self.tq):
            return None
        return base, idc, ca1

    def _jaccard_one(self, x, y, sets_a, sets_b, kind):
        x, y = int(x), int(y)
        if x == 0 or y == 0:
            return 1.0 if x == y else 0.0
        c = x * len(sets_b) + y
        v = self.jcache.get((kind, c))
        if v is None:
            v = self.jcache[(kind, c)] = _jaccard(sets_a[x], sets_b[y])
        return v

    def _solve_lists(self, li, lj, lb, lic, lca, m, n):
        """_solve for pairs given as Python lists."""
        if len(li) == 1 or self.opt == 4:
            s0 = [self._score_one(lb[k], lic[k], lca[k], position_score(li[k], m, lj[k], n))
                  for k in range(len(li))]
            order = sorted((k for k in range(len(li)) if s0[k] > NO_MATCH),
                           key=lambda k: (-s0[k], li[k], lj[k]))
            used_r, used_c, taken = set(), set(), []
            for k in order:
                if li[k] not in used_r and lj[k] not in used_c:
                    used_r.add(li[k])
                    used_c.add(lj[k])
                    taken.append(k)
            return taken
        return self._solve_small(li, lj, lb, lic, lca, m, n).tolist()

    def _score_one(self, base, idc, ca1, pos):
        s = _quantize(base + self.wp * pos)
        if idc or (ca1 and pos == 1.0):
            return self.cert + s
        return s if s >= self.tq else NO_MATCH

    def _chunked(self, pa, alo, ahi, pb, blo, bhi):
        """A virtual sibling group: both spans of children cut into the same size of chunks.

        Decision (design §5.5): the thesis groups any node with more than group_over
        children, in each tree on its own, and its virtual nodes take the
        parent's tag. A virtual node against the other page's real children
        then either matches nothing or (div in div) pairs items whose parents
        do not correspond; and a page with 1,000 BODY children would map
        nothing below BODY against a page with 4. Grouping is a runtime
        device, so here it applies when the pair's child lists would compare
        more than group_over² pairs (the largest ungrouped assignment the
        thesis allows, 200 × 200), which covers every pair where both sides
        are over; both sides are cut with the same group size and virtual
        nodes are compared only with virtual nodes, so a mapped node's parent
        is always mapped to its partner's parent.
        Chunks are of group_size items, or of group_size^k when that many
        chunks would themselves exceed group_over (10,000+ children).
        """
        length = max(ahi - alo, bhi - blo)
        unit = self.p.group_size
        while -(-length // unit) > self.p.group_over:
            unit *= self.p.group_size
        ka = np.arange(alo, ahi, unit, dtype=np.int64)
        kb = np.arange(blo, bhi, unit, dtype=np.int64)
        return (pa, ka, np.minimum(ka + unit, ahi), pb, kb, np.minimum(kb + unit, bhi))

    def _virtual_group(self, group, new_real, new_virtual):
        pa, alo, ahi, pb, blo, bhi = group
        m, n = alo.size, blo.size
        i = np.repeat(np.arange(m, dtype=np.int64), n)
        j = np.tile(np.arange(n, dtype=np.int64), m)
        la, lb = (ahi - alo)[i], (bhi - blo)[j]
        # No classes, no attributes, no id on either side: both Jaccards are 1.
        ch = np.minimum(la, lb) / np.maximum(la, lb)
        base = self.wc * 1.0 + self.wa * 1.0 + self.wch * ch
        idc = np.zeros(i.size, dtype=bool)
        ca1 = np.ones(i.size, dtype=bool)
        live = ca1 | (_quantize(base + self.wp) >= self.tq)
        i, j, base, idc, ca1 = i[live], j[live], base[live], idc[live], ca1[live]
        if i.size == 0:
            return
        s0 = self._encode(base, _positions(i, m, j, n), idc, ca1)
        for k in self._solve(i, j, base, idc, ca1, s0, m, n).tolist():
            x, y = int(i[k]), int(j[k])
            a0, a1, b0, b1 = int(alo[x]), int(ahi[x]), int(blo[y]), int(bhi[y])
            if (a1 - a0) * (b1 - b0) > self.over_pairs:
                new_virtual.append(self._chunked(pa, a0, a1, pb, b0, b1))
            else:
                ks = self.kidx[self.kptr[pa] + a0:self.kptr[pa] + a1]
                os_ = self.oidx[self.optr[pb] + b0:self.optr[pb] + b1]
                new_real.append((ks, os_, np.array([a1 - a0]), np.array([b1 - b0])))

    def _side(self, p, lo, hi, kptr, kidx):
        """Entries of the span [lo, hi) of node p's child list, grouped by node (design §5.5):
        (real node per entry or -1, span start, span end) arrays."""
        length = hi - lo
        if length <= self.p.group_over:
            base = int(kptr[p])
            nodes = kidx[base + lo:base + hi].astype(np.int64)
            starts = np.arange(lo, hi, dtype=np.int64)
            return nodes, starts, starts + 1
        starts = np.arange(lo, hi, self._unit(length), dtype=np.int64)
        ends = np.minimum(starts + self._unit(length), hi)
        return np.full(starts.size, -1, dtype=np.int64), starts, ends

    def _node_group(self, result, group, new_real, new_virtual):
        """A sibling group of the grouped trees (grouping "node"): the span [alo, ahi) of key
        node pa's children against the span [blo, bhi) of other node pb's, where at least one
        side has more than group_over entries and so stands as temporary nodes.

        A temporary node has its parent's tag, no id, classes or attributes (both empty:
        Jaccard 1 against a node without any), and its entries as children; it can be paired
        with a real node, and then their children are paired next (the thesis's known cost:
        children of parents that do not correspond).
        """
        pa, alo, ahi, pb, blo, bhi = group
        ka, ks0, ks1 = self._side(pa, alo, ahi, self.kptr, self.kidx)
        ob, os0, os1 = self._side(pb, blo, bhi, self.optr, self.oidx)
        m, n = ka.size, ob.size
        i = np.repeat(np.arange(m, dtype=np.int64), n)
        j = np.tile(np.arange(n, dtype=np.int64), m)
        kreal, oreal = ka[i] >= 0, ob[j] >= 0
        # A temporary node stands for its parent in the tag and text tests (an element).
        a = np.where(kreal, ka[i], pa)
        b = np.where(oreal, ob[j], pb)
        keep = self.ktag[a] == self.otag[b]
        if self.p.text_equality:
            keep &= self._same_text(a, b, keep)
        i, j, a, b, kreal, oreal = i[keep], j[keep], a[keep], b[keep], kreal[keep], oreal[keep]
        if i.size == 0:
            return
        ki, oi = self.ki, self.oi
        cls = self._jaccards(np.where(kreal, ki.cls_id[a], 0), np.where(oreal, oi.cls_id[b], 0),
                             ki.cls_sets, oi.cls_sets, ki.cls_flat, oi.cls_flat)
        att = self._jaccards(np.where(kreal, ki.attr_id[a], 0), np.where(oreal, oi.attr_id[b], 0),
                             ki.attr_sets, oi.attr_sets, ki.attr_flat, oi.attr_flat)
        entries = np.vectorize(self._entries, otypes=[np.int64])
        ck = np.where(kreal, self.kch[a], entries(ks1[i] - ks0[i]) if (~kreal).any() else 0)
        co = np.where(oreal, self.och[b], entries(os1[j] - os0[j]) if (~oreal).any() else 0)
        mx = np.maximum(ck, co)
        ch = np.where(mx == 0, 1.0, np.minimum(ck, co) / np.maximum(mx, 1))
        base = self.wc * cls + self.wa * att + self.wch * ch
        ida = np.where(kreal, self.key.id_hash[a], 0)
        idc = (ida != 0) & (ida == np.where(oreal, self.other.id_hash[b], 0))
        ca1 = (cls == 1.0) & (att == 1.0)
        live = idc | ca1 | (_quantize(base + self.wp) >= self.tq)
        i, j, a, b, kreal, oreal = i[live], j[live], a[live], b[live], kreal[live], oreal[live]
        base, idc, ca1 = base[live], idc[live], ca1[live]
        if i.size == 0:
            return
        s0 = self._encode(base, _positions(i, m, j, n), idc, ca1)
        for k in self._solve(i, j, base, idc, ca1, s0, m, n).tolist():
            x, y = int(i[k]), int(j[k])
            if kreal[k]:
                ax = int(a[k])
                result[ax] = int(b[k]) if oreal[k] else VIRTUAL_PARTNER
                span_a = (ax, 0, int(self.kcount[ax]))
            else:
                span_a = (pa, int(ks0[x]), int(ks1[x]))
            span_b = (int(b[k]), 0, int(self.ocount[int(b[k])])) if oreal[k] else (pb, int(os0[y]), int(os1[y]))
            self._node_spans(span_a, span_b, new_real, new_virtual)

    def _node_spans(self, span_a, span_b, new_real, new_virtual):
        """Queue the pairing of two child spans under "node" grouping."""
        pa, a0, a1 = span_a
        pb, b0, b1 = span_b
        if a1 <= a0 or b1 <= b0:
            return
        if a1 - a0 > self.p.group_over or b1 - b0 > self.p.group_over:
            new_virtual.append((pa, a0, a1, pb, b0, b1))
            return
        ks = self.kidx[self.kptr[pa] + a0:self.kptr[pa] + a1]
        os_ = self.oidx[self.optr[pb] + b0:self.optr[pb] + b1]
        new_real.append((ks, os_, np.array([a1 - a0]), np.array([b1 - b0])))

    # -- one wave of real sibling groups

    def _real_wave(self, ks, os_, ms, ns):
        """Assign every sibling group of the wave; group g pairs the m[g] key children
        in ks with the n[g] other children in os_ (both concatenated in group order)."""
        sizes = ms * ns
        koff = np.cumsum(ms) - ms
        ooff = np.cumsum(ns) - ns
        out_a, out_b = [], []
        g0, total = 0, sizes.size
        bounds = np.cumsum(sizes)
        while g0 < total:
            # Whole groups per batch; one group alone may exceed the budget.
            start = bounds[g0 - 1] if g0 else 0
            g1 = max(g0 + 1, int(np.searchsorted(bounds, start + _BATCH_PAIRS, side="right")))
            a, b = self._batch(ks, os_, ms, ns, koff, ooff, g0, g1)
            out_a.append(a)
            out_b.append(b)
            g0 = g1
        return np.concatenate(out_a), np.concatenate(out_b)

    def _batch(self, ks, os_, ms, ns, koff, ooff, g0, g1):
        m, n = ms[g0:g1], ns[g0:g1]
        sizes = m * n
        gid = np.repeat(np.arange(g1 - g0, dtype=np.int64), sizes)
        loc = np.arange(gid.size, dtype=np.int64) - (np.cumsum(sizes) - sizes)[gid]
        nn = n[gid]
        i = loc // nn
        j = loc - i * nn
        a = ks[koff[g0:g1][gid] + i]
        b = os_[ooff[g0:g1][gid] + j]

        keep = self.ktag[a] == self.otag[b]
        if self.p.text_equality:
            keep &= self._same_text(a, b, keep)
        gid, i, j, a, b = gid[keep], i[keep], j[keep], a[keep], b[keep]
        base, idc, ca1 = self._static(a, b)
        # A pair whose best possible weighted score (position 1) misses the
        # threshold and that can never be certain is out for good.
        live = idc | ca1 | (_quantize(base + self.wp) >= self.tq)
        gid, i, j, a, b = gid[live], i[live], j[live], a[live], b[live]
        base, idc, ca1 = base[live], idc[live], ca1[live]
        empty = np.zeros(0, dtype=np.int64)
        if gid.size == 0:
            return empty, empty
        s0 = self._encode(base, _positions(i, m[gid], j, n[gid]), idc, ca1)

        count = np.bincount(gid, minlength=g1 - g0)
        # A group with one candidate pair: nothing can change its position.
        chosen = [np.flatnonzero((count[gid] == 1) & (s0 > NO_MATCH))]
        # Same-length sibling lists whose diagonal pairs are all certain and
        # where no other pair carries a shared id (the only way off the
        # diagonal to be certain while gaps stay square): the greedy takes the
        # diagonal, whatever the option. This is the common template case.
        diag = i == j
        g_diag = np.bincount(gid, weights=diag & (s0 >= self.cert), minlength=g1 - g0)
        g_odd = np.bincount(gid, weights=idc & ~diag, minlength=g1 - g0)
        square = (count > 1) & (m == n) & (g_diag == m) & (g_odd == 0)
        if square.any():
            chosen.append(np.flatnonzero(square[gid] & diag))
        if self.opt == 4:
            # Positions never change, so all remaining groups of the wave are
            # one greedy pass by score: key and other nodes are unique across
            # groups, and within a group node order is sibling order.
            rest = np.flatnonzero((count[gid] > 1) & ~square[gid])
            chosen.append(rest[_greedy_sorted(s0[rest], a[rest], b[rest])])
            sel = np.concatenate(chosen)
            return a[sel], b[sel]
        multi = np.flatnonzero((count > 1) & ~square)
        if multi.size:
            los = np.searchsorted(gid, multi, side="left").tolist()
            his = np.searchsorted(gid, multi, side="right").tolist()
            for g, lo, hi in zip(multi.tolist(), los, his):
                sel = self._solve(i[lo:hi], j[lo:hi], base[lo:hi], idc[lo:hi], ca1[lo:hi],
                                  s0[lo:hi], int(m[g]), int(n[g]))
                chosen.append(lo + sel)
        sel = np.concatenate(chosen)
        return a[sel], b[sel]

    def _same_text(self, a, b, keep):
        """False for text pairs whose texts differ (Decision, design §5 text_equality)."""
        ok = np.ones(a.size, dtype=bool)
        t = np.flatnonzero(keep & (self.ktag[a] == TEXT))
        if t.size == 0:
            return ok
        kid, _ = self.ki.texts(self.key)
        oid, otable = self.oi.texts(self.other)
        if self.text_trans is None:
            # Other page's text ids translated to the key page's; -2 = not yet
            # looked up, -1 = absent from the key page.
            self.text_trans = np.full(len(otable), -2, dtype=np.int64)
            self.text_strings = list(otable)
        trans = self.text_trans
        ot = oid[b[t]]
        todo = np.unique(ot[trans[ot] == -2])
        if todo.size:
            _, ktable = self.ki.texts(self.key)
            strings = self.text_strings
            trans[todo] = [ktable.get(strings[x], -1) for x in todo.tolist()]
        ok[t] = kid[a[t]] == trans[ot]
        return ok

    def _static(self, a, b):
        """Position-free parts of ≜ for pairs of real nodes: weighted base, id match, classes = attributes = 1."""
        ki, oi = self.ki, self.oi
        cls = self._jaccards(ki.cls_id[a], oi.cls_id[b], ki.cls_sets, oi.cls_sets, ki.cls_flat, oi.cls_flat)
        att = self._jaccards(ki.attr_id[a], oi.attr_id[b], ki.attr_sets, oi.attr_sets, ki.attr_flat, oi.attr_flat)
        ck, co = self.kch[a], self.och[b]
        mx = np.maximum(ck, co)
        ch = np.where(mx == 0, 1.0, np.minimum(ck, co) / np.maximum(mx, 1))
        base = self.wc * cls + self.wa * att + self.wch * ch
        ida = self.key.id_hash[a]
        idc = (ida != 0) & (ida == self.other.id_hash[b])
        ca1 = (cls == 1.0) & (att == 1.0)
        return base, idc, ca1

    def _jaccards(self, ia, ib, sets_a, sets_b, flat_a, flat_b):
        # Set id 0 is the empty set on both pages: both empty → 1, one empty → 0.
        out = ((ia == 0) & (ib == 0)).astype(np.float64)
        both = np.flatnonzero((ia != 0) & (ib != 0))
        if both.size:
            nb = len(sets_b)
            codes, inv = np.unique(ia[both].astype(np.int64) * nb + ib[both], return_inverse=True)
            x, y = np.divmod(codes, nb)
            out[both] = _pair_jaccards(x, y, flat_a, flat_b, sets_a, sets_b)[inv.reshape(-1)]
        return out

    def _encode(self, base, pos, idc, ca1):
        s = _quantize(base + self.wp * pos)
        certain = idc | (ca1 & (pos == 1.0))
        return np.where(certain, self.cert + s, np.where(s >= self.tq, s, NO_MATCH))

    # -- greedy sibling assignment of one group

    def _solve(self, i, j, base, idc, ca1, s0, m, n) -> np.ndarray:
        """Indices of the pairs the greedy assignment takes; pairs come in row-major order."""
        if i.size == 1:
            return np.flatnonzero(s0 > NO_MATCH)
        if m == n:
            # The certain-diagonal shortcut of _batch, for virtual groups.
            diag = i == j
            if int(np.count_nonzero(diag & (s0 >= self.cert))) == m and not (idc & ~diag).any():
                return np.flatnonzero(diag)
        if self.opt == 4:
            return _greedy_sorted(s0, i, j)
        if not (s0 > NO_MATCH).any():
            # Nothing is taken at the start, so no position ever changes.
            return np.zeros(0, dtype=np.int64)
        if i.size <= _SMALL_PAIRS:
            return self._solve_small(i.tolist(), j.tolist(), base.tolist(), idc.tolist(), ca1.tolist(), m, n)
        return self._solve_dense(i, j, base, idc, ca1, m, n)

    def _solve_small(self, li, lj, lb, lic, lca, m, n):
        """Greedy assignment in plain Python; same arithmetic as _solve_dense.

        Options 1 and 2 keep the best pair of every gap in a heap and rescore a
        gap only when a match splits or renumbers it; option 2's crossing pairs
        have a fixed score (position 0) and wait in a second heap. Heap keys are
        (−score, key index, other index): the tie rule of design §5.
        """
        opt, wp, tq, cert = self.opt, self.wp, self.tq, self.cert
        floor = math.floor
        used_r, used_c = [False] * m, [False] * n
        row_pairs = [[] for _ in range(m)]
        for k, x in enumerate(li):
            row_pairs[x].append(k)

        def best_in(r0, r1, c0, c1):
            """Best eligible pair of the gap rows [r0, r1) × cols [c0, c1), positions over its unmatched."""
            rank_c = {}
            sc = 0
            for y in range(c0, c1):
                if not used_c[y]:
                    rank_c[y] = sc
                    sc += 1
            rows = [x for x in range(r0, r1) if not used_r[x]]
            sr = len(rows)
            best = None
            if not sc:
                return best
            span = sc - sr
            shrink, grow = min(span, 0), max(span, 0)
            least = min(sr, sc)
            for rx, x in enumerate(rows):
                lo, hi = rx + shrink, rx + grow
                for k in row_pairs[x]:
                    ry = rank_c.get(lj[k])
                    if ry is None:
                        continue
                    d = lo - ry if lo > ry else (ry - hi if ry > hi else 0)
                    pos = 1.0 - d / least
                    if pos < 0.0:
                        pos = 0.0
                    s = floor((lb[k] + wp * pos) * 1e9 + 0.5) / 1e9
                    if lic[k] or (lca[k] and pos == 1.0):
                        s = cert + s
                    elif s < tq:
                        continue
                    if best is None or s > best[0]:
                        best = (s, x, lj[k], k)
            return best

        taken = []
        if opt == 3:
            # Every match renumbers all the unmatched children: one gap, rescored each time.
            while True:
                best = best_in(0, m, 0, n)
                if best is None:
                    return np.array(taken, dtype=np.int64)
                _, x, y, k = best
                used_r[x] = used_c[y] = True
                taken.append(k)

        anchors_r, anchors_c = [-1, m], [-1, n]
        version = {}          # gap (first row, first col) → version of its heap entry
        gap_heap, cross_heap = [], []

        def rescore(r0, r1, c0, c1):
            v = version[(r0, c0)] = version.get((r0, c0), 0) + 1
            best = best_in(r0, r1, c0, c1)
            if best is not None:
                s, x, y, k = best
                heappush(gap_heap, (-s, x, y, k, r0, c0, v))

        def cross(r0, r1, c0, c1):
            """Pairs of rows [r0, r1) × cols [c0, c1) now cross an anchor: position 0 for good."""
            for x in range(r0, r1):
                if used_r[x]:
                    continue
                for k in row_pairs[x]:
                    y = lj[k]
                    if c0 <= y < c1 and not used_c[y]:
                        s = floor((lb[k] + wp * 0.0) * 1e9 + 0.5) / 1e9
                        if lic[k]:
                            s = cert + s
                        elif s < tq:
                            continue
                        heappush(cross_heap, (-s, x, y, k))

        rescore(0, m, 0, n)
        while True:
            while gap_heap and gap_heap[0][6] != version[(gap_heap[0][4], gap_heap[0][5])]:
                heappop(gap_heap)
            while cross_heap and (used_r[cross_heap[0][1]] or used_c[cross_heap[0][2]]):
                heappop(cross_heap)
            if gap_heap and (not cross_heap or gap_heap[0][:3] <= cross_heap[0][:3]):
                _, x, y, k, _, _, _ = heappop(gap_heap)
                g = bisect_left(anchors_r, x)
                r0, r1, c0, c1 = anchors_r[g - 1] + 1, anchors_r[g], anchors_c[g - 1] + 1, anchors_c[g]
                used_r[x] = used_c[y] = True
                anchors_r.insert(g, x)
                anchors_c.insert(g, y)
                version[(r0, c0)] += 1
                rescore(r0, x, c0, y)
                rescore(x + 1, r1, y + 1, c1)
                if opt == 2:
                    cross(r0, x, y + 1, c1)
                    cross(x + 1, r1, c0, y)
            elif cross_heap:
                _, x, y, k = heappop(cross_heap)
                used_r[x] = used_c[y] = True
                g, h = bisect_left(anchors_r, x), bisect_left(anchors_c, y)
                rescore(anchors_r[g - 1] + 1, anchors_r[g], anchors_c[g - 1] + 1, anchors_c[g])
                rescore(anchors_r[h - 1] + 1, anchors_r[h], anchors_c[h - 1] + 1, anchors_c[h])
            else:
                return np.array(taken, dtype=np.int64)
            taken.append(k)

    def _solve_dense(self, i, j, base, idc, ca1, m, n):
        """Greedy assignment over a dense m×n score matrix.

        After a match only the gap it splits (options 1, 2) or the gaps whose
        unmatched children it renumbers (option 2 crossing match) are rescored;
        option 3 rescores everything. argmax over the row-major matrix returns
        the first maximum: the lowest key index, then the lowest other index.
        """
        opt = self.opt
        B = np.full((m, n), NO_MATCH)
        IDC = np.zeros((m, n), dtype=bool)
        CA1 = np.zeros((m, n), dtype=bool)
        pid = np.full((m, n), -1, dtype=np.int64)
        B[i, j], IDC[i, j], CA1[i, j] = base, idc, ca1
        pid[i, j] = np.arange(i.size)
        S = np.full((m, n), NO_MATCH)
        used_r = np.zeros(m, dtype=bool)
        used_c = np.zeros(n, dtype=bool)

        def fill(r0, r1, c0, c1, inside):
            if r0 >= r1 or c0 >= c1:
                return
            ur, uc = ~used_r[r0:r1], ~used_c[c0:c1]
            sr, sc = int(ur.sum()), int(uc.sum())
            if sr == 0 or sc == 0:
                S[r0:r1, c0:c1] = NO_MATCH
                return
            if inside:
                pos = _positions((np.cumsum(ur) - 1)[:, None], sr, (np.cumsum(uc) - 1)[None, :], sc)
            else:
                pos = 0.0
            blk = self._encode(B[r0:r1, c0:c1], pos, IDC[r0:r1, c0:c1], CA1[r0:r1, c0:c1])
            blk[~ur, :] = NO_MATCH
            blk[:, ~uc] = NO_MATCH
            S[r0:r1, c0:c1] = blk

        fill(0, m, 0, n, True)
        ak, ao = [-1, m], [-1, n]
        taken = []
        while True:
            k = int(S.argmax())
            x, y = divmod(k, n)
            if S[x, y] == NO_MATCH:
                return np.array(taken, dtype=np.int64)
            taken.append(int(pid[x, y]))
            used_r[x] = used_c[y] = True
            S[x, :] = NO_MATCH
            S[:, y] = NO_MATCH
            if opt == 3:
                fill(0, m, 0, n, True)
                continue
            g, h = bisect_left(ak, x), bisect_left(ao, y)
            if g == h:
                r0, r1, c0, c1 = ak[g - 1] + 1, ak[g], ao[g - 1] + 1, ao[g]
                ak.insert(g, x)
                ao.insert(g, y)
                fill(r0, x, c0, y, True)
                fill(x + 1, r1, y + 1, c1, True)
                if opt == 2:
                    fill(r0, x, y + 1, c1, False)
                    fill(x + 1, r1, c0, y, False)
                else:
                    S[r0:x, y + 1:c1] = NO_MATCH
                    S[x + 1:r1, c0:y] = NO_MATCH
            else:
                fill(ak[g - 1] + 1, ak[g], ao[g - 1] + 1, ao[g], True)
                fill(ak[h - 1] + 1, ak[h], ao[h - 1] + 1, ao[h], True)


def _greedy_sorted(s, a, b) -> np.ndarray:
    """Greedy one-to-one pass over fixed scores, by score, then a, then b.

    Vectorized in rounds: a pair that comes first in the order for both its a
    and its b conflicts with nothing earlier, so the sequential pass takes it;
    taking all such pairs at once and dropping the pairs they conflict with
    leaves the same problem on fewer pairs. The rest runs sequentially.
    """
    elig = np.flatnonzero(s > NO_MATCH)
    if elig.size == 0:
        return elig
    order = elig[np.lexsort((b[elig], a[elig], -s[elig]))]
    taken = []
    for _ in range(_GREEDY_ROUNDS):
        if order.size <= _SEQUENTIAL_TAIL:
            break
        oa, ob = a[order], b[order]
        first = np.zeros(order.size, dtype=bool)
        first[np.unique(oa, return_index=True)[1]] = True
        first_b = np.zeros(order.size, dtype=bool)
        first_b[np.unique(ob, return_index=True)[1]] = True
        first &= first_b
        taken.append(order[first])
        order = order[~(np.isin(oa, oa[first]) | np.isin(ob, ob[first]))]
    used_a, used_b, tail = set(), set(), []
    for k, x, y in zip(order.tolist(), a[order].tolist(), b[order].tolist()):
        if x not in used_a and y not in used_b:
            used_a.add(x)
            used_b.add(y)
            tail.append(k)
    taken.append(np.array(tail, dtype=np.int64))
    return np.concatenate(taken)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + l) for each (s, l)."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return offsets + np.arange(total, dtype=np.int64)
