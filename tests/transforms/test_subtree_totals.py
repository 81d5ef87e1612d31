"""The per-page subtree totals and word ratio compiled (transforms/_features.c
`subtree_totals`) against their references (tree.py's subtree_sum expressions,
conex_page.word_ratio_reference), MenEx's scores (`menu_scores` against menex.menu_features
and menu_weights), and MenEx and page ConEx on either path.

Integer totals must be equal, the word ratio equal bit for bit: the compiled pass sums
each node's words/distance in the order np.bincount does. Every test here fails when the
extension was not built.
"""
import random

import numpy as np
import pytest

from sitestrip.transforms import tree as T
from sitestrip.transforms.conex_page import main_content_and_features, word_ratio_reference
from sitestrip.transforms.menex import detect_menu, menu_scores
from sitestrip.transforms.page import parse_page
from helpers.compiled import require_built

TOTALS = (T.links_below, T.words_below, T.elements_below, T.text_nodes_below, T.outside_link_chars_below,
          T.word_ratio)


@pytest.fixture(autouse=True)
def built():
    require_built("_features")


def by_path(page, compiled, read):
    """read(page) with tree.py's compiled switch set to `compiled`, on a fresh copy of the
    page's derived arrays (each path computes its own)."""
    saved = T._COMPILED
    T._COMPILED = compiled
    page.forget_derived()
    try:
        return read(page)
    finally:
        T._COMPILED = saved
        page.forget_derived()


def test_totals_of_a_hand_built_page_on_both_paths():
    """body 0 > div 1 > [p 2 > ["one two " 3, a 4 > "three" 5], a 6 > span 7 > "four five" 8].
    Links: a 4 and a 6. Words: 2, 1, 2 at nodes 3, 5, 8. Characters outside links: only node 3
    (7, "one two" as the page holds it); 5 and 8 are inside links.
    Word ratio: node 3 counts (parent p), node 5 does not (parent a), node 8 counts (parent
    span, inside a link but not a link's own text): 3 gives p 2/1, div 2/2, body 2/3; 8 gives
    span 2/1, a 6 2/2, div 2/3, body 2/4 -- each node's share per distance added in order."""
    page = parse_page("<html><body><div><p>one two <a href=x>three</a></p><a href=y><span>four five</span>"
                      "</a></div></body></html>", "http://e.com/")
    expected = (
        [2, 2, 1, 0, 1, 0, 1, 0, 0],
        [5, 5, 3, 2, 1, 1, 2, 2, 2],
        [6, 5, 2, 0, 1, 0, 2, 1, 0],
        [3, 3, 2, 1, 1, 1, 1, 1, 1],
        [7, 7, 7, 7, 0, 0, 0, 0, 0],
        [2 / 3 + 2 / 4, 2 / 2 + 2 / 3, 2.0, 0.0, 0.0, 0.0, 1.0, 2.0, 0.0],
    )
    for compiled in (True, False):
        got = by_path(page, compiled, lambda p: [f(p) for f in TOTALS])
        for name, array, want in zip([f.__name__ for f in TOTALS], got, expected):
            assert array.tolist() == want, (compiled, name)
        assert all(a.dtype == np.int64 for a in got[:5]) and got[5].dtype == np.float64


def random_page(rng: random.Random):
    """A page of nested elements, links (some around elements), text of 0 to 4 words."""
    def element(depth):
        if depth > 7 or rng.random() < 0.3:
            return " ".join("w" * rng.randint(1, 4) for _ in range(rng.randint(0, 4))) or " "
        tag = rng.choice(["div", "p", "span", "ul", "li", "a", "nav", "b", "section"])
        attrs = " href='/x'" if tag == "a" and rng.random() < 0.8 else ""
        attrs += rng.choice(["", "", " class='navbar'", " id='menu'", " class='main-nav x'"])
        inner = "".join(element(depth + 1) for _ in range(rng.randint(0, 4)))
        return f"<{tag}{attrs}>{inner}</{tag}>"
    body = "".join(element(0) for _ in range(rng.randint(1, 6)))
    return parse_page(f"<html><body>{body}</body></html>", "http://e.com/")


def test_compiled_totals_are_the_references_on_generated_pages():
    rng = random.Random(11)
    for _ in range(150):
        page = random_page(rng)
        got = by_path(page, True, lambda p: [f(p) for f in TOTALS])
        ref = by_path(page, False, lambda p: [f(p) for f in TOTALS])
        for f, a, b in zip(TOTALS, got, ref):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), f.__name__
        assert got[5].tobytes() == word_ratio_reference(page).tobytes()


def test_menex_and_page_conex_the_same_on_both_paths():
    """The stages that read the totals give the same arrays and nodes either way."""
    rng = random.Random(5)
    for _ in range(60):
        page = random_page(rng)

        def stages(p):
            f, w = menu_scores(p)
            menu = detect_menu(p, scores=(f, w))
            mask, features = main_content_and_features(p)
            arrays = [f.link, f.text, f.hyperlinks, w, mask]
            if features is not None:
                arrays.append(features.matrix())
            return [a.tobytes() for a in arrays], (menu.node if menu else None)
        assert by_path(page, True, stages) == by_path(page, False, stages)


def test_compiled_menu_scores_are_the_reference_bit_for_bit():
    """Every feature array and the weights, for each representative-tag rule and for weights
    that are not the defaults; a page with no text outside links (text ratio 1 everywhere)."""
    from sitestrip.transforms.menex import MenexParams
    rng = random.Random(3)
    pages = [random_page(rng) for _ in range(80)]
    pages.append(parse_page("<html><body><ul><li><a href=/a>a</a></li><li><a href=/b>b</a></li></ul></body></html>",
                            "http://e.com/"))
    params = [MenexParams(representative=r) for r in ("prefix", "word_part", "exact")]
    params.append(MenexParams(w_amplitude=0.1, w_link=0.7, w_text=0.3, w_ul=0.01, w_representative=0.9, w_position=0.33))
    fields = ("rated", "amplitude", "link", "text", "ul", "representative", "position", "hyperlinks")
    for page in pages:
        for p in params:
            def read(pg):
                f, w = menu_scores(pg, p)
                return [(getattr(f, k).dtype.str, getattr(f, k).tobytes()) for k in fields] + [w.tobytes()]
            got, ref = by_path(page, True, read), by_path(page, False, read)
            for name, a, b in zip(fields + ("weights",), got, ref):
                assert a == b, name


def test_compiled_children_are_the_stable_argsort():
    """body 0 > [div 1 > [p 2 > ["a" 3, b 4 > "c" 5], "x" 6], ul 7 > li 8 > "y" 9] by hand, then
    generated pages against the reference."""
    page = parse_page("<html><body><div><p>a<b>c</b></p>x</div><ul><li>y</li></ul></body></html>", "http://e.com/")
    ptr, idx = T._children(page)
    assert ptr.tolist() == [0, 2, 4, 6, 6, 7, 7, 7, 8, 9, 9]
    assert idx.tolist() == [1, 7, 2, 6, 3, 4, 5, 8, 9]
    rng = random.Random(2)
    for page in [page, parse_page("<html><body></body></html>", "http://e.com/")] + \
            [random_page(rng) for _ in range(60)]:
        got, ref = T._children(page), T._children_reference(page)
        for a, b in zip(got, ref):
            assert a.dtype == b.dtype and a.tolist() == b.tolist()


def test_compiled_menu_pick_is_select_root_and_select_menu():
    """Alg. 1's climb from every candidate and Alg. 2's scores and choice of generated pages, with
    weights drawn from a few values so that siblings are often heavy (some equal to a bound: not
    heavy) and roots tie, against menex.select_root and select_menu and the scores
    sitemenus.propose_menus takes (the heavy descendants' mean, else the root's own weight)."""
    from sitestrip.transforms import _features
    from sitestrip.transforms.menex import MenexParams, select_menu, select_root
    rng = random.Random(9)
    fallbacks = chosen = 0
    for _ in range(120):
        page = random_page(rng)
        ptr, kids = T._children_reference(page)
        weights = np.array([rng.choice([0.0, 0.45, 0.5, 0.85, 0.9, 1.0]) for _ in range(page.size)])
        for p in (MenexParams(), MenexParams(candidate_threshold=0.4, root_threshold=0.5, menu_threshold=0.95)):
            roots, scores = np.empty(page.size, dtype=np.int64), np.empty(page.size)
            k, node = _features.menu_pick(page.parent, ptr, kids, page.end, weights, p.candidate_threshold,
                                          p.root_threshold, p.menu_threshold, roots, scores)
            top = weights.max()
            if top <= 0:
                assert (k, node) == (0, -1)
                continue
            candidates = np.flatnonzero(weights > p.candidate_threshold * top)
            want = sorted({select_root(page, weights, ptr, kids, int(c), p.root_threshold) for c in candidates})
            assert roots[:k].tolist() == want
            assert node == select_menu(page, weights, want, p.menu_threshold * top)
            heavy = np.flatnonzero(weights > p.menu_threshold * top)
            prefix = np.concatenate(([0.0], np.cumsum(weights[heavy])))
            lo, hi = np.searchsorted(heavy, roots[:k] + 1), np.searchsorted(heavy, page.end[roots[:k]])
            mean = (prefix[hi] - prefix[lo]) / np.maximum(hi - lo, 1)
            assert scores[:k].tobytes() == np.where(hi > lo, mean, weights[roots[:k]]).tobytes()
            fallbacks += not (hi > lo).any()
            chosen += 1
    assert chosen >= 150 and fallbacks >= 5     # both of select_menu's rules reached
    with pytest.raises(ValueError, match="preorder"):
        n = 3
        _features.menu_pick(np.array([-1, 2, 0], dtype=np.int32), np.array([0, 1, 2, 2]),
                            np.array([1, 2], dtype=np.int32), np.array([3, 3, 3], dtype=np.int32), np.ones(n),
                            0.85, 0.9, 0.85, np.empty(n, np.int64), np.empty(n))


def test_compiled_passes_refuse_a_parent_after_its_child():
    from sitestrip.transforms import _features
    n = 3
    parent = np.array([-1, 2, 0], dtype=np.int32)
    zeros = np.zeros(n, dtype=np.int32)
    with pytest.raises(ValueError, match="preorder"):
        _features.subtree_totals(parent, zeros, np.zeros(n, np.uint16), zeros, zeros, 1, 2, 2,
                                 np.empty((5, n), np.int64), np.empty(n))
    with pytest.raises(ValueError, match="preorder"):
        _features.children(parent, np.empty(n + 1, np.int64), np.empty(n - 1, np.int32))
    with pytest.raises(ValueError):
        _features.subtree_totals(parent, zeros, np.zeros(n, np.uint16), zeros, zeros, 1, 2, 2,
                                 np.empty((4, n), np.int64), np.empty(n))
