"""ETDM (design §5): position values, the equality score and the top-down mapping.

Expected values are derived by hand in each docstring, with the published
defaults wc = 0.1, wp = 0.1, wa = 0.5, wch = 0.3, t = 0.7 unless a test says
otherwise. Certain matches score certain_floor = 1 + Σw = 2.0 plus their
weighted part.
"""
from collections import deque
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sitestrip.transforms.etdm as etdm
from sitestrip.transforms.etdm import (NO_MATCH, VIRTUAL_PARTNER, EtdmParams, certain_floor, equality_score,
                                       is_match, map_pages, position_score)
from sitestrip.transforms.page import TAG_ID, parse_page
from sitestrip.transforms.template import occurrences
from sitestrip.transforms.tree import children
from helpers.compiled import require_built

URL = "http://ex.com/"


def page(body: str):
    return parse_page(f"<html><body>{body}</body></html>", URL)


def opts(option: int, **kw) -> EtdmParams:
    return EtdmParams(position_option=option, **kw)


@contextmanager
def engine(**knobs):
    """Force one of the module's internal paths (they must all give the same mapping)."""
    if knobs.get("_COMPILED"):
        require_built("_etdm")
    saved = {k: getattr(etdm, k) for k in knobs}
    try:
        for k, v in knobs.items():
            setattr(etdm, k, v)
        yield
    finally:
        for k, v in saved.items():
            setattr(etdm, k, v)


# "compiled" is transforms/_etdm.c (grouping "pair"; "node" always runs in Python); the
# others are the Python paths, which stay the reference implementation.
ENGINES = {
    "compiled": {"_COMPILED": True},
    "python": {"_COMPILED": False},
    "python-small": {"_COMPILED": False, "_SMALL_PAIRS": 10 ** 9, "_SCALAR_WAVE": 0},
    "numpy-dense": {"_COMPILED": False, "_SMALL_PAIRS": 1, "_SCALAR_WAVE": 0},
    "scalar-waves": {"_COMPILED": False, "_SCALAR_WAVE": 10 ** 9},
    "greedy-rounds": {"_COMPILED": False, "_SEQUENTIAL_TAIL": 0, "_GREEDY_ROUNDS": 10 ** 9, "_SCALAR_WAVE": 0},
}


def test_the_compiled_walk_is_built_and_used_by_default():
    """`pip install` builds transforms/_etdm.c; without it every mapping would silently take
    the slower Python path. A key with a shared id maps through it like through Python."""
    assert etdm._compiled is not None, "sitestrip.transforms._etdm is not built: reinstall with pip"
    assert etdm._COMPILED
    key, other = page("<div id=x><p>a</p></div>"), page("<p>b</p><div id=x><p>a</p></div>")
    # body–body certain (same empty sets, children 1 vs 2 → 0.5, position 1... and ca1 → certain);
    # div#x against the second child by id; p, "a" below it.
    assert map_pages(key, other).tolist() == [0, 3, 4, 5]


@pytest.fixture(params=sorted(ENGINES))
def any_engine(request):
    with engine(**ENGINES[request.param]):
        yield request.param


# ---------------------------------------------------------------- position

TABLE_8_1 = [  # rows B0..B4, columns A0..A4; A and B both have 5 children
    [1, 0.8, 0.6, 0.4, 0.2],
    [0.8, 1, 0.8, 0.6, 0.4],
    [0.6, 0.8, 1, 0.8, 0.6],
    [0.4, 0.6, 0.8, 1, 0.8],
    [0.2, 0.4, 0.6, 0.8, 1],
]
TABLE_8_3 = [  # rows B0..B4 (B has 5 children), columns A0..A3 (A has 4)
    [1, 0.75, 0.5, 0.25],
    [1, 1, 0.75, 0.5],
    [0.75, 1, 1, 0.75],
    [0.5, 0.75, 1, 1],
    [0.25, 0.5, 0.75, 1],
]


def test_position_reproduces_table_8_1():
    """Equal counts: the interval of A_i is [i, i], d = |i − j|, value 1 − d/5."""
    for j, row in enumerate(TABLE_8_1):
        for i, expected in enumerate(row):
            assert position_score(i, 5, j, 5) == pytest.approx(expected)


def test_position_reproduces_table_8_3():
    """A has 4, B has 5: A_i aligns with [i, i + 1], value 1 − d/4.
    E.g. A0–B2: d = 1 → 0.75; A1–B0: d = 1 → 0.75; A3–B0: interval [3, 4], d = 3 → 0.25."""
    for j, row in enumerate(TABLE_8_3):
        for i, expected in enumerate(row):
            assert position_score(i, 4, j, 5) == pytest.approx(expected)
            # the relation is symmetric: B against A gives the same table
            assert position_score(j, 5, i, 4) == pytest.approx(expected)


def test_position_is_clamped_at_zero():
    """Out-of-range index: child 9 against a list of 2 aligned to [0, 0]: d = 9, 1 − 9/1 < 0 → 0."""
    assert position_score(9, 1, 0, 2) == 0.0
    assert position_score(0, 1, 0, 1) == 1.0


# ---------------------------------------------------------------- equality score

KEY = page("<div id=main class='a b' title=t><p>one</p><p>two</p></div>"
           "<span class=a>x</span><ul class='a b c'><li>1</li></ul>"
           "<a href=/x title=t>go</a><section data-q=1></section>")
# 0 body 1 div#main 2 p 3 "one" 4 p 5 "two" 6 span 7 "x" 8 ul 9 li 10 "1" 11 a 12 "go" 13 section
OTHER = page("<div id=main class=z><p>one</p></div>"
             "<span class=a>y</span><ul class='a b' title=t><li>1</li><li>2</li></ul>"
             "<a href=/x>go</a><div data-q=1></div><p>two</p>")
# 0 body 1 div#main 2 p 3 "one" 4 span 5 "y" 6 ul 7 li 8 "1" 9 li 10 "2" 11 a 12 "go" 13 div 14 p 15 "two"


def test_page_layout_assumed_by_the_score_tests():
    assert KEY.tag[[1, 6, 8, 11, 13]].tolist() == [TAG_ID[t] for t in ("div", "span", "ul", "a", "section")]
    assert OTHER.tag[[1, 4, 6, 11, 13]].tolist() == [TAG_ID[t] for t in ("div", "span", "ul", "a", "div")]
    assert KEY.node_text(3) == OTHER.node_text(3) == "one"


def test_same_id_is_a_certain_match():
    """div#main vs div#main: classes {a,b} vs {z} → 0; attributes {title=t} vs {} → 0;
    children 2 vs 1 → 0.5; position 0.3 → weighted 0.3·0.5 + 0.1·0.3 = 0.18; certain: 2.0 + 0.18."""
    s = equality_score(KEY, 1, OTHER, 1, 0.3)
    assert s == pytest.approx(2.18)
    assert s >= 1.0 and is_match(s, EtdmParams())


def test_classes_attributes_and_position_all_one_is_certain():
    """span.a vs span.a: classes 1, attributes (none, none) 1, children 1/1 = 1, position 1
    → certain, 2.0 + (0.1 + 0.5 + 0.3 + 0.1) = 3.0. At position 0.8 it is only weighted:
    0.1 + 0.5 + 0.3 + 0.08 = 0.98."""
    assert equality_score(KEY, 6, OTHER, 4, 1.0) == pytest.approx(3.0)
    assert equality_score(KEY, 6, OTHER, 4, 0.8) == pytest.approx(0.98)


def test_weighted_sum_below_threshold():
    """ul.a.b.c vs ul.a.b[title]: classes 2/3, attributes {} vs {title=t} → 0, children 1 vs 2 → 0.5,
    position 0.5: 0.1·2/3 + 0 + 0.3·0.5 + 0.1·0.5 = 0.266667 < 0.7."""
    s = equality_score(KEY, 8, OTHER, 6, 0.5)
    assert s == pytest.approx(0.2666667, abs=1e-6)
    assert not is_match(s, EtdmParams())


def test_attribute_jaccard_reaches_threshold():
    """a[href=/x][title=t] vs a[href=/x]: classes none/none → 1, attributes 1/2, children 1/1,
    position 1: 0.1 + 0.25 + 0.3 + 0.1 = 0.75 ≥ 0.7, not certain (attributes ≠ 1)."""
    s = equality_score(KEY, 11, OTHER, 11, 1.0)
    assert s == pytest.approx(0.75)
    assert is_match(s, EtdmParams()) and s < certain_floor(EtdmParams())


def test_tag_mismatch_never_matches():
    """section[data-q=1] vs div[data-q=1]: everything else equal, different tag → no match."""
    assert equality_score(KEY, 13, OTHER, 13, 1.0) == NO_MATCH
    assert not is_match(NO_MATCH, EtdmParams())


def test_text_equality_on_and_off():
    """"one" vs "one": no classes/attributes (1, 1), no children (1), position 1 → certain 3.0.
    "x" vs "y": with text_equality no match; without it they compare like elements → 3.0 too.
    "two" (key 5) vs "two" (other 15) at position 0.5: 0.1 + 0.5 + 0.3 + 0.05 = 0.95."""
    on, off = EtdmParams(), EtdmParams(text_equality=False)
    assert equality_score(KEY, 3, OTHER, 3, 1.0, on) == pytest.approx(3.0)
    assert equality_score(KEY, 7, OTHER, 5, 1.0, on) == NO_MATCH
    assert equality_score(KEY, 7, OTHER, 5, 1.0, off) == pytest.approx(3.0)
    assert equality_score(KEY, 5, OTHER, 15, 0.5, on) == pytest.approx(0.95)


def test_params_are_validated():
    with pytest.raises(ValueError):
        EtdmParams(position_option=5)
    with pytest.raises(ValueError):
        EtdmParams(group_over=50, group_size=100)
    with pytest.raises(ValueError):
        EtdmParams(w_classes=-0.1)


# ---------------------------------------------------------------- position options

# Items are empty leaves told apart by attributes: same attribute set → 0.9 + 0.1·position
# (certain at position 1); disjoint sets → at most 0.5, never; C = {v=c, w=1} against
# C' = {v=c}: attributes 1/2 → 0.65 + 0.1·position, a match only when position ≥ 0.5.
A, B, C, C2 = "<i data-v=a></i>", "<i data-v=b></i>", "<i data-v=c data-w=1></i>", "<i data-v=c></i>"
OPTION_KEY = page(f"<div id=g1>{A}{B}</div><div id=g2>{A}{C}</div><div id=g3>{A}{B}{C}</div>")
# 0 body 1 #g1 2 A 3 B 4 #g2 5 A 6 C 7 #g3 8 A 9 B 10 C
OPTION_OTHER = page(f"<div id=g1>{B}{A}</div><div id=g2>{C2}{A}</div><div id=g3>{C2}{A}{B}</div>")
# 0 body 1 #g1 2 B 3 A 4 #g2 5 C' 6 A 7 #g3 8 C' 9 A 10 B
COMMON = {0: 0, 1: 1, 2: 3, 4: 4, 5: 6, 7: 7, 8: 9, 9: 10}


@pytest.mark.parametrize("option, extra", [
    # g1 [A B] vs [B A]: A–A and B–B both at position 0.5 → 0.95, tie → A (key index 0) first.
    #   Option 1 forbids B–B (it crosses A–A); 2 allows it at position 0 → 0.9; 3 recomputes over
    #   [B] vs [B] → position 1, certain; 4 keeps 0.95.
    # g2 [A C] vs [C' A]: A–A first (0.95 > C–C' 0.70). C–C' crosses: forbidden (1), position 0
    #   → 0.65 < 0.7 (2); recomputed [C] vs [C'] → 0.75 (3); fixed 0.5 → 0.70 ≥ 0.7 (4).
    # g3 [A B C] vs [C' A B]: A–A and B–B at 1 − 1/3 → 0.966667 (tie → A first); C–C' at 1/3
    #   → 0.683333, not eligible. After A: option 1/2 right gap [B C] vs [B]: B–B position 1, certain;
    #   C–C' crosses A (forbidden / 0.65). Option 3: [B C] vs [C' B]: B–B 0.5 → 0.95 first, then
    #   [C] vs [C'] → 0.75. Option 4: C–C' stays at 0.683333.
    (1, {3: -1, 6: -1, 10: -1}),
    (2, {3: 2, 6: -1, 10: -1}),
    (3, {3: 2, 6: 5, 10: 8}),
    (4, {3: 2, 6: 5, 10: -1}),
])
def test_position_options_give_different_mappings(option, extra, any_engine):
    got = map_pages(OPTION_KEY, OPTION_OTHER, opts(option))
    expected = [-1] * OPTION_KEY.size
    for k, v in {**COMMON, **extra}.items():
        expected[k] = v
    assert got.tolist() == expected


# Option 3 groups where many cells tie: same-class siblings (certain on the diagonal band,
# equal weighted parts elsewhere), one id shared off the diagonal, a sibling whose classes match
# nothing and one that matches only after others are taken. The compiled rescoring scores only the
# cells whose bound at position 1 exceeds the best score of the pass; each group's pairs are the
# reference's, so a cell skipped that could have tied earlier, or won, would show here.
_TIED_BODIES = (
    ("<div>" + '<p class="a"></p>' * 5 + "</div>", "<div>" + '<p class="a"></p>' * 7 + "</div>"),
    ("<div>" + '<p class="a"></p><p class="b"></p>' * 3 + "</div>",
     "<div>" + '<p class="b"></p><p class="a"></p>' * 3 + '<p class="a"></p></div>'),
    ('<ul><li class="x"></li><li class="x" id="k"></li><li class="y"></li><li class="x"></li></ul>',
     '<ul><li class="x" id="k"></li><li class="y"></li><li class="x"></li><li class="x"></li>'
     '<li class="x y"></li></ul>'),
    ("<div>" + '<p class="a b"></p><p class="a"></p><p></p>' * 4 + "</div>",
     "<div>" + '<p class="a"></p><p></p><p class="a b"></p>' * 3 + '<p class="b"></p></div>'),
    ('<div><i class="u v"></i><i class="u"></i><i class="v"></i><i class="u v"></i><i></i></div>',
     '<div><i class="u"></i><i class="v"></i><i class="u v"></i><i></i><i class="u v"></i><i class="u"></i></div>'),
)


@pytest.mark.parametrize("kb, ob", _TIED_BODIES)
@pytest.mark.parametrize("weights", [{}, dict(w_classes=0.3, w_position=0.3, w_attributes=0.1, w_children=0.3,
                                              threshold=0.6)])
def test_option_3_tied_groups_match_the_literal_reference(kb, ob, weights):
    key, other = page(kb), page(ob)
    for a, b in ((key, other), (other, key)):
        params = opts(3, **weights)
        expected = reference_map(a, b, params)
        assert sum(v >= 0 for v in expected) > 3
        for knobs in ENGINES.values():
            with engine(**knobs):
                assert map_pages(a, b, params).tolist() == expected


@pytest.mark.parametrize("option", [1, 2, 3, 4])
@pytest.mark.parametrize("below, mapped", [(4e-10, True), (6e-10, False)])
def test_a_score_within_rounding_of_the_threshold_is_judged_rounded(option, below, mapped, any_engine):
    """Scores are rounded to 1e-9 before the threshold: <i data-v=a> against <i data-v=b>
    (classes 1, attributes 0, children 1, position 1) with wc + wch + wp = 0.7 − `below` scores
    0.7 once rounded when `below` is under half a step, and stays under 0.7 above it. The
    compiled rescoring turns cells far below the threshold away before rounding; these sit
    right at it."""
    params = opts(option, w_classes=0.3, w_attributes=0.3, w_children=0.3, w_position=0.1 - below,
                  threshold=0.7)
    key, other = page("<div><i data-v=a></i><b></b></div>"), page("<div><i data-v=b></i><b></b></div>")
    got = map_pages(key, other, params)
    assert got[:2].tolist() == [0, 1]
    assert bool(got[2] == 2) is mapped


def test_crossing_id_match_renumbers_the_gap_it_lands_in(any_engine):
    """Key [X A N] vs other [N' A]; N and N' share id=n (attributes {} vs {v=q} → 0), X = {v=q, w=1}
    against N' = {v=q} is a partial match (attributes 1/2).
    A–A first: position 1 (3 vs 2, interval [0, 1]) and certain → 3.0; N–N' is certain too
    (id) but at position 0.5: 2.0 + 0.1 + 0.3 + 0.05 = 2.45. Then the left gap holds X vs N'
    (position 1: 0.65 + 0.1 = 0.75) and N–N' crosses A–A.
    Option 1: crossing forbidden → X–N'. Option 2: N–N' at position 0 is still certain, 2.4 >
    0.75 → taken, and X is left without a partner. Option 3: [X N] vs [N'] → N–N' at position 1,
    2.5 → taken. Option 4: order A–A 3.0, N–N' 2.45, X–N' 0.75 (N' already used)."""
    key = page(f"<div><i data-v=q data-w=1></i>{A}<i id=n></i></div>")
    other = page(f"<div><i id=n data-v=q></i>{A}</div>")
    assert map_pages(key, other, opts(1)).tolist() == [0, 1, 2, 3, -1]
    for option in (2, 3, 4):
        assert map_pages(key, other, opts(option)).tolist() == [0, 1, -1, 3, 2]


def test_crossing_match_changes_positions_in_the_other_gap(any_engine):
    """Key [K K A N] vs other [N' D A]. K = i[v=d] with 2 children, D = i[v=d] with 1 (children
    1/2); N, N' identical with id=n.
    Start (4 vs 3, intervals [i − 1, i]): A–A position 1, certain 3.0; N–N' position 1/3, id:
    2.0 + 0.9 + 0.033333 = 2.933333; K1–D position 1: 2.0 + 0.1 + 0.5 + 0.15 + 0.1 = 2.85;
    K0–D position 2/3: 0.816667.
    Option 1: A–A, then left gap [K0 K1] vs [N' D]: K1–D certain 2.85 (N–N' crosses: forbidden).
    Option 2: A–A; crossing N–N' at position 0 is certain, 2.9 > 2.85 → taken; the left gap is
    renumbered to [K0 K1] vs [D]: both at position 1, 2.85 each, tie → K0–D.
    Option 3: after A–A, [K0 K1 N] vs [N' D]: N–N' position 0.5 → 2.95 first; then [K0 K1] vs [D]
    → K0–D. Option 4: A–A 3.0, N–N' 2.933, K1–D 2.85; K0–D (D taken) never.
    Under a mapped K, its first <b> maps to D's only <b>."""
    k_item, d_item = "<i data-v=d><b></b><b></b></i>", "<i data-v=d><b></b></i>"
    n_item = "<i id=n data-v=q></i>"
    key = page(f"<div>{k_item}{k_item}{A}{n_item}</div>")
    # 0 body 1 div 2 K0 3 b 4 b 5 K1 6 b 7 b 8 A 9 N
    other = page(f"<div>{n_item}{d_item}{A}</div>")
    # 0 body 1 div 2 N' 3 D 4 b 5 A
    k1_d = [0, 1, -1, -1, -1, 3, 4, -1, 5]
    k0_d = [0, 1, 3, 4, -1, -1, -1, -1, 5]
    assert map_pages(key, other, opts(1)).tolist() == k1_d + [-1]
    assert map_pages(key, other, opts(2)).tolist() == k0_d + [2]
    assert map_pages(key, other, opts(3)).tolist() == k0_d + [2]
    assert map_pages(key, other, opts(4)).tolist() == k1_d + [2]


def test_shared_id_off_the_diagonal_beats_a_certain_diagonal(any_engine):
    """Key [P Q] vs other [P' Q'], all i[v=a]; P and Q' share id=n. Children: P 1, Q 2, P' 3, Q' 1.
    Diagonal pairs are certain (classes, attributes, position 1): P–P' 2.0 + 0.7 + 0.3·1/3 = 2.8,
    Q–Q' 2.0 + 0.7 + 0.15 = 2.85. The id pair P–Q' at position 0.5 scores 2.0 + 0.9 + 0.05 = 2.95
    and goes first. Q–P' (children 2/3) then crosses it: forbidden (option 1), 0.8 at position 0
    (2), certain 2.9 over [Q] vs [P'] (3), 0.85 at the fixed position 0.5 (4).
    Q's two <b> against P''s three: all certain; the greedy pairs them in order."""
    key = page("<div><i id=n data-v=a><b></b></i><i data-v=a><b></b><b></b></i></div>")
    # 0 body 1 div 2 P 3 b 4 Q 5 b 6 b
    other = page("<div><i data-v=a><b></b><b></b><b></b></i><i id=n data-v=a><b></b></i></div>")
    # 0 body 1 div 2 P' 3 b 4 b 5 b 6 Q' 7 b
    assert map_pages(key, other, opts(1)).tolist() == [0, 1, 6, 7, -1, -1, -1]
    for option in (2, 3, 4):
        assert map_pages(key, other, opts(option)).tolist() == [0, 1, 6, 7, 2, 3, 4]


def test_mapping_is_one_to_one(any_engine):
    """[A A A] vs [A]: every key A aligns with the single A at position 1 (intervals [i−2, i]),
    all certain with equal scores → the lowest key index wins; the others stay unmapped."""
    key, other = page(f"<div>{A}{A}{A}</div>"), page(f"<div>{A}</div>")
    for option in (1, 2, 3, 4):
        assert map_pages(key, other, opts(option)).tolist() == [0, 1, 2, -1, -1]


def test_top_down_unmapped_parent_hides_its_children(any_engine):
    """div[data-a=1] vs div[data-a=2]: attributes 0 → 0.1 + 0 + 0.3 + 0.1 = 0.5 < 0.7, unmapped;
    its identical <p>one</p> is never compared. The following span.k maps (position 1 of 2)."""
    key = page("<div data-a=1><p>one</p></div><span class=k>s</span>")
    other = page("<div data-a=2><p>one</p></div><span class=k>s</span>")
    # 0 body 1 div 2 p 3 "one" 4 span 5 "s"
    assert map_pages(key, other).tolist() == [0, -1, -1, -1, 4, 5]


def test_text_equality_reads_collapsed_pre_text_and_any_string_width(any_engine):
    """Text equality compares design §1's collapsed text: <pre> keeps "  a   b" verbatim in the
    page, and it equals "a b" (body 0, pre 1, text 2 on both pages). "é" is the same text
    on a page stored one byte per character and on one that needs two ("€" elsewhere on
    it), and "ab" differs from "a b". Key: body 0, pre 1, "  a   b" 2, p 3, "é" 4, p 5,
    "ab" 6; other: body 0, pre 1, "a b" 2, p 3, "é" 4, p 5, "a b" 6, p 7, "€" 8."""
    key = page("<pre>  a   b</pre><p>é</p><p>ab</p>")
    other = page("<pre>a b</pre><p>é</p><p>a b</p><p>€</p>")
    assert key.node_text(2) != other.node_text(2) and key.collapsed_text(2) == other.collapsed_text(2)
    every = np.arange(key.size)
    assert key.collapsed_texts(every) == [key.collapsed_text(i) for i in range(key.size)]
    assert max(map(ord, other.text)) > 255 >= max(map(ord, key.text))
    assert map_pages(key, other).tolist() == [0, 1, 2, 3, 4, 5, -1]


def test_roots_that_do_not_match_map_nothing():
    """BODY[data-x=1] vs BODY[data-x=2]: 0.1 + 0 + 0.3·1 + 0.1 = 0.5 < 0.7 → nothing maps."""
    key = parse_page("<body data-x=1><p>same</p></body>", URL)
    other = parse_page("<body data-x=2><p>same</p></body>", URL)
    assert map_pages(key, other).tolist() == [-1, -1, -1]
    assert map_pages(key, key).tolist() == [0, 1, 2]


def test_text_equality_in_mapping():
    """<p>hello</p> vs <p>world</p>: the p's map (certain); the texts only without text_equality."""
    key, other = page("<p>hello</p>"), page("<p>world</p>")
    assert map_pages(key, other).tolist() == [0, 1, -1]
    assert map_pages(key, other, EtdmParams(text_equality=False)).tolist() == [0, 1, 2]


# ---------------------------------------------------------------- exclude

def test_excluded_nodes_are_removed_from_the_key_page(any_engine):
    """Key [C X1 X2] vs other [Y1 Y2 C'] (X, Y distinct attributes, never matching).
    As is, C (0 of 3) vs C' (2 of 3): position 1/3 → 0.65 + 0.0333 < 0.7: unmapped.
    With X1, X2 excluded the key list is [C]: 1 against 3 aligns with [0, 2] → position 1
    → 0.75: C maps. X1's child (a text node) is excluded with it."""
    key = page("<div id=d><i data-v=c data-w=1></i><b data-x=1>t</b><b data-x=2></b></div>")
    # 0 body 1 div 2 C 3 X1 4 "t" 5 X2
    other = page("<div id=d><b data-y=1>t</b><b data-y=2></b><i data-v=c></i></div>")
    # 0 body 1 div 2 Y1 3 "t" 4 Y2 5 C'
    assert map_pages(key, other).tolist() == [0, 1, -1, -1, -1, -1]
    exclude = np.zeros(key.size, dtype=bool)
    exclude[[3, 5]] = True
    assert map_pages(key, other, exclude=exclude).tolist() == [0, 1, 5, -1, -1, -1]


def test_exclude_marks_whole_subtrees_and_the_root():
    """Excluding #a (node 1) removes its p and text too even though only node 1 is marked;
    the footer still maps. Excluding BODY maps nothing."""
    key = page("<div id=a><p>x</p></div><footer>f</footer>")
    # 0 body 1 div 2 p 3 "x" 4 footer 5 "f"
    exclude = np.zeros(key.size, dtype=bool)
    exclude[1] = True
    assert map_pages(key, key, exclude=exclude).tolist() == [0, -1, -1, -1, 4, 5]
    exclude[0] = True
    assert map_pages(key, key, exclude=exclude).tolist() == [-1] * 6
    with pytest.raises(ValueError):
        map_pages(key, key, exclude=np.zeros(3, dtype=bool))


# ---------------------------------------------------------------- grouping (design §5.5)

def _list_page(items):
    return page("<ul>" + "".join(f"<li data-k={k}>item {k}</li>" for k in items) + "</ul>")


def test_grouping_250_children_aligns_items_through_virtual_groups(any_engine):
    """Key ul: items 0..249; other ul: the same without item 5 (249 items). Both have more than
    200 children (250 × 249 > 200² pairs), so both child lists are cut into groups of 100:
    key [0..99] [100..199] [200..249]; other [0..100 minus 5] [101..200] [201..249]. The three virtual pairs are certain (no classes/attributes, position 1
    on the diagonal of 3 vs 3). Within a pair an li only matches the li with the same data-k
    (same attributes → ≥ 0.9; different → ≤ 0.5). So item 5 (removed), 100 (its partner fell
    into the other page's first group) and 200 (second group) stay unmapped; all else maps to
    the same item, and their texts map too."""
    key, other = _list_page(range(250)), _list_page([k for k in range(250) if k != 5])
    got = map_pages(key, other)
    other_pos = {k: n for n, k in enumerate(k for k in range(250) if k != 5)}
    expected = [0, 1]
    for k in range(250):
        if k in (5, 100, 200):
            expected += [-1, -1]
        else:
            li = 2 + 2 * other_pos[k]
            expected += [li, li + 1]
    assert got.tolist() == expected


def test_long_list_against_a_short_one_is_not_grouped(any_engine):
    """Key BODY: div#h, 298 p, footer (300 children); other BODY: div#h, p, footer. 300 × 3 = 900
    pairs ≤ 200², so no grouping (Decision): the lists are aligned as they are. All candidate
    pairs are certain with weighted part 1.0 (key i of 300 against other j of 3 aligns with
    [i − 297, i]): div#h first (lowest index), then the first p against the p, then the footer
    (rank 297 of 298 against 0 of 1: position 1). Texts "H" and "F" map, "k" ≠ "x" does not.
    Grouping the key side alone, as the thesis does, would leave only BODY mapped."""
    key = page("<div id=h>H</div>" + "<p>k</p>" * 298 + "<footer>F</footer>")
    other = page("<div id=h>H</div><p>x</p><footer>F</footer>")
    # key: 0 body 1 div 2 "H" 3 p 4 "k" ... 597 p 598 "k" 599 footer 600 "F"
    expected = [-1] * key.size
    for k, v in {0: 0, 1: 1, 2: 2, 3: 3, 599: 5, 600: 6}.items():
        expected[k] = v
    assert map_pages(key, other).tolist() == expected


def test_group_levels_nest_for_very_long_lists():
    """group_over 4, group_size 2, key items 0..19, other 1..19 (20 × 19 > 4² pairs). Chunks
    of 2 would be 10 > 4, of 4 still 5 > 4, so chunks of 8: key [0..7] [8..15] [16..19], other [1..8] [9..16] [17..19].
    The 8-item chunks (8 × 8 > 4²) split again into pairs: key (0,1)(2,3)(4,5)(6,7) vs other
    (1,2)(3,4)(5,6)(7,8) → only 1, 3, 5, 7 find their item; likewise 9, 11, 13, 15. The last
    chunks (4 × 3 ≤ 4²) are real lists: 17, 18, 19 map."""
    params = EtdmParams(group_over=4, group_size=2)
    key, other = _list_page(range(20)), _list_page(range(1, 20))
    got = map_pages(key, other, params)
    mapped = sorted(k for k in range(20) if got[2 + 2 * k] >= 0)
    assert mapped == [1, 3, 5, 7, 9, 11, 13, 15, 17, 18, 19]
    for k in mapped:
        assert got[2 + 2 * k] == 2 + 2 * (k - 1)
    assert map_pages(key, key, params).tolist() == list(range(key.size))


# Node grouping (the thesis's rule, design §5.5, grouping "node"), at small scale: group_over 4, group_size 2.
FIVE = "<div id=l>" + "".join(f"<div>i{k}</div>" for k in range(5)) + "</div>"
# preorder: 0 body, 1 div#l, then div i_k at 2 + 2k and its text at 3 + 2k (k = 0..4)
WRAPPED = ("<div id=l><div><div>i0</div><div>i1</div></div>"
           "<div><div>i2</div><div>i3</div></div></div>")
# preorder: 0 body, 1 div#l, 2 d0, 3 div i0, 4 "i0", 5 div i1, 6 "i1", 7 d1, 8 div i2, 9 "i2", 10 div i3, 11 "i3"


def _small(grouping):
    return EtdmParams(group_over=4, group_size=2, grouping=grouping)


def test_node_grouping_pairs_temporary_nodes_with_real_ones(any_engine):
    """Key div#l has 5 > 4 children: temporary divs v0 = (i0, i1), v1 = (i2, i3), v2 = (i4), with
    no classes or attributes and 2, 2, 1 children. The other div#l has 2 children d0, d1 (not
    grouped; no classes or attributes, 2 children each). All six pairs are div/div with both
    Jaccards 1, so a pair is certain where its position is 1: 3 vs 2 entries, entry i aligns with
    [i − 1, i], so (v0,d0), (v1,d0), (v1,d1), (v2,d1). Weighted parts 0.1 + 0.5 + 0.3·ch + 0.1:
    1.0 for v0/v1 against d0/d1 (2 vs 2 children), 0.85 for v2 (1 vs 2). Greedy (option 2):
    (v0,d0) first (lowest indices among the 1.0 ties), then in the gap right of it (v1,d1) at
    position 1; v2 is left without a column. Their items then pair as plain lists: i0..i3 map onto
    the other page's i0..i3 with their texts; i4 stays unmapped."""
    key, other = page(FIVE), page(WRAPPED)
    assert map_pages(key, other, _small("node")).tolist() == [0, 1, 3, 4, 5, 6, 8, 9, 10, 11, -1, -1]


def test_pair_grouping_keeps_short_pairs_of_lists_as_they_are(any_engine):
    """The same pages by pairs: 5 × 2 ≤ 4² pairs, so no grouping. Item divs (1 child) against
    d0/d1 (2 children) have Jaccards 1 and are certain at position 1 (5 vs 2: item i aligns with
    [i − 3, i]); all tie at 0.1 + 0.5 + 0.15 + 0.1, so i0–d0 first and then i1–d1, the first
    row of the gap right of it. Texts never meet divs: nothing below maps."""
    key, other = page(FIVE), page(WRAPPED)
    assert map_pages(key, other, _small("pair")).tolist() == [0, 1, 2, -1, 7] + [-1] * 7


def test_a_key_node_paired_with_a_temporary_node_counts_as_mapped(any_engine):
    """The pages swapped: key d0, d1 (2 entries) against the other page's temporary v0, v1, v2.
    (d0,v0) and (d0,v1) tie at certain 1.0 (2 vs 3: entry i aligns with [i, i + 1]); the lowest
    other index wins: d0–v0, then d1–v1 in the gap right of it (1.0 against v1, 0.85 against v2).
    d0 and d1 are mapped with no node of the other page as partner (VIRTUAL_PARTNER); below them
    i0..i3 map onto the other page's items. TemEx counts d0 and d1 as occurrences."""
    key, other = page(WRAPPED), page(FIVE)
    got = map_pages(key, other, _small("node"))
    assert got.tolist() == [0, 1, VIRTUAL_PARTNER, 2, 3, 4, 5, VIRTUAL_PARTNER, 6, 7, 8, 9]
    assert occurrences(key, [other], _small("node")).tolist() == [1] * 12


def test_node_grouping_counts_children_in_the_grouped_tree(any_engine):
    """Site-ConEx weights (0.1/0/0.2/0.7, t 0.9, option 4), group_over 2, group_size 2.
    Key div [b "x", div3 (3 i)], other div [div2 (2 i), b "x"]. div3's 3 children become 2
    temporary nodes, so its childNodes is 2: against div2 the weighted score is
    0.1 + 0.2 + 0.7 · 2/2 = 1.0 ≥ 0.9 (with its own 3 children it would be 0.77: no match). b–b
    scores 1.0 too (position 0.5 is not certain and weighs 0); the tie goes to the lower key
    index, b first, then div3–div2. Below: "x" maps; div3's temporary nodes (tag div) match no
    <i>. Key: 0 body, 1 div, 2 b, 3 "x", 4 div3, 5-7 i; other: 0 body, 1 div, 2 div2, 3-4 i, 5 b, 6 "x"."""
    key = page("<div><b>x</b><div><i></i><i></i><i></i></div></div>")
    other = page("<div><div><i></i><i></i></div><b>x</b></div>")
    params = EtdmParams(w_classes=0.1, w_position=0.0, w_attributes=0.2, w_children=0.7, threshold=0.9,
                        position_option=4, grouping="node", group_over=2, group_size=2)
    assert map_pages(key, other, params).tolist() == [0, 1, 5, 6, 2, -1, -1, -1]


def test_node_grouping_leaves_a_long_list_unmapped_against_a_short_one(any_engine):
    """test_long_list_against_a_short_one_is_not_grouped's pages under the thesis's rule: the key
    BODY's 300 children become three temporary BODY nodes, which match no div, p or footer of the
    other BODY (3 children, not grouped): only BODY maps."""
    key = page("<div id=h>H</div>" + "<p>k</p>" * 298 + "<footer>F</footer>")
    other = page("<div id=h>H</div><p>x</p><footer>F</footer>")
    assert map_pages(key, other, EtdmParams(grouping="node")).tolist() == [0] + [-1] * (key.size - 1)


def test_node_grouping_nests_and_maps_a_long_list_onto_itself():
    """20 items, group_over 4, group_size 2: chunks of 8 (2 and 4 would give more than 4 entries),
    each chunk of 8 regrouped in pairs, each pair a plain list. A page against itself maps every
    node onto itself, as without grouping; against the list without item 0 (19 items: chunks
    [1..8] [9..16] [17..19]) the chunk boundaries drift as in pair grouping: 1, 3, ..., 15 and
    the last chunk 17, 18, 19 map (test_group_levels_nest_for_very_long_lists)."""
    params = _small("node")
    key, other = _list_page(range(20)), _list_page(range(1, 20))
    assert map_pages(key, key, params).tolist() == list(range(key.size))
    got = map_pages(key, other, params)
    assert sorted(k for k in range(20) if got[2 + 2 * k] >= 0) == [1, 3, 5, 7, 9, 11, 13, 15, 17, 18, 19]


def test_ten_thousand_siblings_stay_bounded():
    """10,000 items against the same list without every 50th (9,800 items). Groups of 100:
    key chunk c = items [100c, 100c + 100), other chunk c = its items 100c..100c + 99. The 100
    vs 98 virtual nodes all score certain (position 1 within the band [i − 2, i], children
    100/100) with equal scores, so the greedy pairs chunk c with chunk c for c < 98 and key
    chunks 98, 99 stay unmapped. Inside a chunk pair an item maps to the same item when the
    other chunk holds it; the drift (2 items per chunk) shows the grouping's known cost."""
    items = range(10_000)
    kept = [k for k in items if k % 50]
    key, other = _list_page(items), _list_page(kept)
    got = map_pages(key, other)
    where = {k: n for n, k in enumerate(kept)}
    expected = [0, 1]
    for k in items:
        c = k // 100
        n = where.get(k)
        if c < 98 and n is not None and n // 100 == c:
            expected += [2 + 2 * n, 3 + 2 * n]
        else:
            expected += [-1, -1]
    assert got.tolist() == expected



def test_the_compiled_walk_checks_the_budget_by_work_done_not_by_wave():
    """The budget check (a CPU-clock read through Python) runs between waves once 2^16 pairs
    have been scored since the last one. A chain of 60 nested divs maps in 60 waves of one
    pair each: no check. The 10,000-item list above scores its 98 chunk pairs of 100 × 100
    items (about a million pairs) in one wave, so the wave after it (the items' texts) starts
    with a check; a check that raises stops the mapping with its error."""
    require_built("_etdm")
    calls = []
    deep = page("<div>" * 60 + "x" + "</div>" * 60)
    assert (map_pages(deep, deep, check=lambda: calls.append(1)) >= 0).all()
    assert calls == []
    items = range(10_000)
    key, other = _list_page(items), _list_page([k for k in items if k % 50])
    map_pages(key, other, check=lambda: calls.append(1))
    assert 1 <= len(calls) <= 3

    class Over(Exception):
        pass

    def over():
        raise Over
    with pytest.raises(Over):
        map_pages(key, other, check=over)


# ---------------------------------------------------------------- properties

TAGS = ("div", "span", "section", "b")


def _render(node) -> str:
    if isinstance(node, str):
        return node
    tag, classes, attr, ident, kids = node
    extra = (f" class='{' '.join(classes)}'" if classes else "") + \
            (f" data-a={attr}" if attr else "") + (f" id={ident}" if ident else "")
    return f"<{tag}{extra}>{''.join(_render(k) for k in kids)}</{tag}>"


_leaf = st.sampled_from(["t1", "t2", "t3"])


def _element(kids):
    return st.tuples(st.sampled_from(TAGS), st.lists(st.sampled_from("xyz"), max_size=2, unique=True),
                     st.sampled_from([None, None, "1", "2"]), st.sampled_from([None, None, None, "m"]),
                     kids)


_tree = st.recursive(_leaf | _element(st.just([])), lambda t: _element(st.lists(t, max_size=4)),
                     max_leaves=24)
_body = st.lists(_tree, max_size=5).map(lambda ns: "".join(_render(n) for n in ns))


def reference_map(key, other, params):
    """ETDM written the slow, literal way from design §5, for comparison."""
    kptr, kidx = children(key)
    optr, oidx = children(other)
    result = [-1] * key.size
    if not is_match(equality_score(key, 0, other, 0, 1.0, params), params):
        return result
    result[0] = 0
    queue = deque([(0, 0)])
    while queue:
        a, b = queue.popleft()
        ks = kidx[kptr[a]:kptr[a + 1]].tolist()
        os_ = oidx[optr[b]:optr[b + 1]].tolist()
        score = lambda x, y, pos: equality_score(key, ks[x], other, os_[y], pos, params)  # noqa: E731
        for x, y in _reference_assign(score, len(ks), len(os_), params):
            result[ks[x]] = os_[y]
            queue.append((ks[x], os_[y]))
    return result


def _grouped_entries(tag, items, params):
    """A child list of the grouped tree (design §5.5 as the product reads it): the items themselves when
    at most group_over, else temporary nodes of `unit` consecutive items each, unit = group_size^k
    for the smallest k giving at most group_over of them."""
    if len(items) <= params.group_over:
        return [("node", x) for x in items]
    unit = params.group_size
    while -(-len(items) // unit) > params.group_over:
        unit *= params.group_size
    return [("temp", tag, items[s:s + unit]) for s in range(0, len(items), unit)]


def _entry_children(page, entry, params):
    if entry[0] == "temp":
        return _grouped_entries(entry[1], entry[2], params)
    ptr, idx = children(page)
    x = entry[1]
    return _grouped_entries(int(page.tag[x]), idx[ptr[x]:ptr[x + 1]].tolist(), params)


def _entry_features(page, entry, params):
    """(tag, class tokens, attribute pairs, id, childNodes, text) of a node of the grouped tree."""
    n_children = len(_entry_children(page, entry, params))
    if entry[0] == "temp":
        return entry[1], frozenset(), frozenset(), 0, n_children, None
    x = entry[1]
    return (int(page.tag[x]), frozenset(page.class_hash[page.class_ptr[x]:page.class_ptr[x + 1]].tolist()),
            frozenset(page.attr_hash[page.attr_ptr[x]:page.attr_ptr[x + 1]].tolist()), int(page.id_hash[x]),
            n_children, page.node_text(x) if page.tag[x] == 0 else None)


def _literal_score(fa, fb, pos, params):
    """≜ of design §5 written out on feature tuples."""
    (ta, ca, aa, ia, na, xa), (tb, cb, ab, ib, nb, xb) = fa, fb
    if ta != tb or (ta == 0 and params.text_equality and xa != xb):
        return NO_MATCH

    def jaccard(p, q):
        return 1.0 if not p and not q else (0.0 if not p or not q else len(p & q) / len(p | q))

    cls, att = jaccard(ca, cb), jaccard(aa, ab)
    ch = 1.0 if na == nb == 0 else min(na, nb) / max(na, nb)
    s = etdm._quantize(params.w_classes * cls + params.w_attributes * att + params.w_children * ch
                       + params.w_position * pos)
    if (ia != 0 and ia == ib) or (cls == 1.0 and att == 1.0 and pos == 1.0):
        return certain_floor(params) + s
    return s


def reference_node_map(key, other, params):
    """ETDM of the grouped trees (grouping "node"), the slow literal way: build both trees'
    temporary nodes, map as without grouping, report key nodes paired with temporary nodes
    as VIRTUAL_PARTNER."""
    result = [-1] * key.size
    root = ("node", 0)
    if not is_match(_literal_score(_entry_features(key, root, params), _entry_features(other, root, params),
                                   1.0, params), params):
        return result
    result[0] = 0
    queue = deque([(root, root)])
    while queue:
        a, b = queue.popleft()
        ka, ob = _entry_children(key, a, params), _entry_children(other, b, params)
        fa = [_entry_features(key, e, params) for e in ka]
        fb = [_entry_features(other, e, params) for e in ob]
        score = lambda x, y, pos: _literal_score(fa[x], fb[y], pos, params)  # noqa: E731
        for x, y in _reference_assign(score, len(ka), len(ob), params):
            ex, ey = ka[x], ob[y]
            if ex[0] == "node":
                result[ex[1]] = ey[1] if ey[0] == "node" else VIRTUAL_PARTNER
            queue.append((ex, ey))
    return result


def _reference_assign(score, m, n, params):
    opt = params.position_option
    used_r, used_c, anchors, out = set(), set(), [], []

    def gap(v, side):
        return sum(1 for anchor in anchors if anchor[side] < v)

    def position(x, y):
        if opt == 4:
            return position_score(x, m, y, n)
        if opt == 3 or gap(x, 0) == gap(y, 1):
            g = 0 if opt == 3 else gap(x, 0)
            rows = [r for r in range(m) if r not in used_r and (opt == 3 or gap(r, 0) == g)]
            cols = [c for c in range(n) if c not in used_c and (opt == 3 or gap(c, 1) == g)]
            return position_score(rows.index(x), len(rows), cols.index(y), len(cols))
        return None if opt == 1 else 0.0

    while True:
        best = None
        for x in range(m):
            for y in range(n):
                if x in used_r or y in used_c:
                    continue
                pos = position(x, y)
                if pos is None:
                    continue
                s = score(x, y, pos)
                if is_match(s, params) and (best is None or s > best[0]):
                    best = (s, x, y)
        if best is None:
            return out
        _, x, y = best
        if opt in (1, 2) and gap(x, 0) == gap(y, 1):
            anchors.append((x, y))
        used_r.add(x)
        used_c.add(y)
        out.append((x, y))


def _check_invariants(key, other, got):
    mapped = np.flatnonzero(got >= 0)
    partners = got[mapped]
    assert np.unique(partners).size == partners.size, "one-to-one"
    assert (key.tag[mapped] == other.tag[partners]).all(), "same tag"
    for a, b in zip(mapped.tolist(), partners.tolist()):
        if a == 0:
            assert b == 0
        else:
            assert got[key.parent[a]] == other.parent[b], "top-down"


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(_body, _body, st.sampled_from([1, 2, 3, 4]), st.booleans())
def test_random_trees_match_the_literal_reference(kb, ob, option, text_eq):
    key, other = page(kb), page(ob)
    params = opts(option, text_equality=text_eq)
    expected = reference_map(key, other, params)
    for knobs in ENGINES.values():
        with engine(**knobs):
            got = map_pages(key, other, params)
        assert got.tolist() == expected
    _check_invariants(key, other, got)


_wide_tree = st.recursive(_leaf | _element(st.just([])), lambda t: _element(st.lists(t, max_size=7)),
                         max_leaves=40)
_wide_body = st.lists(_wide_tree, max_size=9).map(lambda ns: "".join(_render(n) for n in ns))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(_wide_body, _wide_body, st.sampled_from([1, 2, 3, 4]), st.booleans(),
       st.sampled_from([(2, 2), (3, 2), (4, 3)]), st.booleans())
def test_node_grouping_is_the_literal_transform_of_both_trees(kb, ob, option, text_eq, group, site_weights):
    """grouping "node" against reference_node_map: the thesis's temporary nodes built literally
    in both trees, then plain ETDM (group_over 2 to 4, so most lists of the random trees group,
    and up to 9 children nest groups; the site-ConEx weights make childNodes decide more)."""
    key, other = page(kb), page(ob)
    weights = dict(w_classes=0.1, w_position=0.0, w_attributes=0.2, w_children=0.7, threshold=0.9) \
        if site_weights else {}
    params = opts(option, text_equality=text_eq, grouping="node", group_over=group[0], group_size=group[1],
                  **weights)
    expected = reference_node_map(key, other, params)
    for knobs in ENGINES.values():
        with engine(**knobs):
            assert map_pages(key, other, params).tolist() == expected
    assert map_pages(key, key, params).tolist() == list(range(key.size))


@settings(max_examples=80, deadline=None)
@given(_body, st.sampled_from([1, 2, 3, 4]), st.data())
def test_random_trees_against_an_edited_copy(kb, option, data):
    """A page against itself maps every node to itself; against a copy with one node dropped
    (and the tree re-parsed) the invariants still hold and match the reference."""
    key = page(kb)
    params = opts(option)
    assert map_pages(key, key, params).tolist() == list(range(key.size))
    if key.size > 1:
        drop = data.draw(st.integers(1, key.size - 1))
        exclude = np.zeros(key.size, dtype=bool)
        exclude[drop] = True
        got = map_pages(key, key, params, exclude=exclude)
        _check_invariants(key, key, got)
        inside = np.zeros(key.size, dtype=bool)
        inside[drop:key.end[drop]] = True
        assert (got[inside] == -1).all()


ITEMS = [A, B, C, C2, "<i></i>", "<i class=x></i>", "<i data-v=a data-w=1></i>",
         "<i data-v=b data-w=2 data-u=3></i>", "<i data-v=b data-w=2></i>", "<i class='x y'></i>",
         "<i id=n data-v=q></i>", "<i id=n></i>", "<i data-v=a><b></b><b></b></i>", "<i data-v=a><b></b></i>"]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(ITEMS), min_size=1, max_size=9),
       st.lists(st.sampled_from(ITEMS), min_size=1, max_size=9),
       st.sampled_from([1, 2, 3, 4]))
def test_flat_sibling_lists_match_the_reference(ks, os_, option):
    """Flat lists exercise the greedy assignment itself: ties, crossings, partial matches
    (attributes 1/2, 2/3, children 1/2), shared ids off the diagonal."""
    key, other = page("<div>" + "".join(ks) + "</div>"), page("<div>" + "".join(os_) + "</div>")
    params = opts(option)
    expected = reference_map(key, other, params)
    for knobs in ENGINES.values():
        with engine(**knobs):
            assert map_pages(key, other, params).tolist() == expected


def test_page_indexes_are_kept_for_the_recent_pages_only():
    """_RecentIndexes with room for 12 nodes: three pages of 5 nodes (body, ul, li, a,
    text) fit two at a time. Indexing a, b, c drops a's index (least recently used) and
    keeps b's and c's; using b again then indexing a drops c's, not b's. An index rebuilt
    after its drop maps as before, and a mapping under a bound that holds only the pages
    of the mapping under way gives the partners it gives with every index kept."""
    a, b, c = (page(f"<ul><li><a href='/{x}'>{x}</a></li></ul>") for x in "abc")
    assert a.size == b.size == c.size == 5
    recent = etdm._RecentIndexes(12)
    for p in (a, b, c):
        recent.get(p)
    assert "_etdm_index" not in a.__dict__
    assert "_etdm_index" in b.__dict__ and "_etdm_index" in c.__dict__
    recent.get(b)
    recent.get(a)
    assert "_etdm_index" not in c.__dict__ and "_etdm_index" in b.__dict__
    assert (recent.built, recent.nodes) == (4, 10)

    key, other = page("<div id=x><p>one</p><p>two</p></div>"), page("<div id=x><p>one</p><p>three</p></div>")
    expected = map_pages(key, other)
    tight = etdm._RecentIndexes(1)
    real = etdm._RECENT
    try:
        etdm._RECENT = tight
        for _ in range(2):
            assert np.array_equal(map_pages(page("<div id=x><p>one</p><p>two</p></div>"),
                                            page("<div id=x><p>one</p><p>three</p></div>")), expected)
    finally:
        etdm._RECENT = real
    assert tight.built == 4 and len(tight.pages) == 2


def test_a_page_index_does_not_keep_its_page_alive():
    """The recent-index list holds pages weakly: once the last reference to a page is gone
    the page is collected, though its entry stays until it is the oldest, and a new page
    that gets the dead page's id is indexed afresh (an id alone never finds an index)."""
    import gc
    import weakref

    recent = etdm._RecentIndexes(1000)
    gone = page("<p>gone</p>")
    recent.get(gone)
    ref = weakref.ref(gone)
    old_id = id(gone)
    del gone
    gc.collect()
    assert ref() is None and old_id in recent.pages
    fresh = page("<p>fresh one</p>")
    recent.pages[id(fresh)] = recent.pages.pop(old_id)   # as if `fresh` had got the dead page's id
    fresh.__dict__["_etdm_index"] = "not this page's"
    ix = recent.get(fresh)
    assert isinstance(ix, etdm._PageIndex) and recent.built == 2
    assert recent.pages[id(fresh)][0]() is fresh


def _collapsed_reference(text, starts, ends):
    """page.py collapsed_texts' expression, the reference of _text.collapsed_spans."""
    return [" ".join(text[a:b].split()) for a, b in zip(starts, ends)]


def test_compiled_collapsed_spans_are_pythons_split_and_join():
    """_text.collapsed_spans (ETDM's compiled side of verbatim texts) collapses each span as
    " ".join(span.split()) does. By hand:
    text "  a \\t b\\u3000\\u3000c  " (12 characters) with spans [0, 12) (all of it: "a b c", U+3000 is
    whitespace to str.split), [3, 5) (" \\t": nothing left, ""), [2, 3) ("a") and [5, 5)
    (empty): "a b c" + "" + "a" + "" = "a b ca", lengths 5, 0, 1, 0. U+200B (zero width space)
    is not whitespace to str.split, so it stays; U+0085 and U+001F are."""
    _text = require_built("_text")
    text = "  a \t b\u3000\u3000c  "
    lengths = np.empty(4, dtype=np.int64)
    got = _text.collapsed_spans(text, np.array([0, 3, 2, 5]), np.array([12, 5, 3, 5]), lengths)
    assert (got, lengths.tolist()) == ("a b ca", [5, 0, 1, 0])
    lengths = np.empty(1, dtype=np.int64)
    assert _text.collapsed_spans("x\u200by\x85z\x1fw", np.array([0]), np.array([7]), lengths) \
        == "x\u200by z w"

    # Every code point that is whitespace to Python, mixed with others of every width, in
    # seeded random spans: the same strings as the Python reference.
    spaces = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    others = ["a", "é", "\u4e2d", "\U0001f600", "\u200b", "-"]
    rng = np.random.default_rng(5)
    for _ in range(200):
        text = "".join(rng.choice(spaces if rng.random() < 0.4 else others) for _ in range(rng.integers(0, 40)))
        k = int(rng.integers(0, 6))
        a = rng.integers(0, len(text) + 1, size=k)
        b = np.minimum(a + rng.integers(0, 12, size=k), len(text))
        lengths = np.empty(k, dtype=np.int64)
        expected = _collapsed_reference(text, a.tolist(), b.tolist())
        got = _text.collapsed_spans(text, a.astype(np.int64), b.astype(np.int64), lengths)
        assert got == "".join(expected)
        assert lengths.tolist() == [len(t) for t in expected]


def test_compiled_collapsed_spans_refuses_spans_outside_the_text():
    _text = require_built("_text")
    lengths = np.empty(1, dtype=np.int64)
    with pytest.raises(ValueError, match="outside the text"):
        _text.collapsed_spans("abc", np.array([2]), np.array([4]), lengths)
    with pytest.raises(ValueError, match="outside the text"):
        _text.collapsed_spans("abc", np.array([2]), np.array([1]), lengths)
    with pytest.raises(ValueError, match="one length"):
        _text.collapsed_spans("abc", np.array([0, 1]), np.array([1, 2]), lengths)


def test_compiled_node_sets_are_the_reference():
    """_etdm.node_sets (the compiled side's class and attribute sets) gives etdm._node_sets's
    arrays: each node's values sorted without repeats. By hand: node 0 has [5, 3, 5], node 1
    nothing, node 2 [7]: ptr [0, 2, 2, 3], values [3, 5, 7]. Then seeded random pages, lists
    short (insertion sort) and long (qsort), few distinct values (repeats) and the whole
    uint32 range."""
    require_built("_etdm")
    ptr, values = np.array([0, 3, 3, 4], dtype=np.int32), np.array([5, 3, 5, 7], dtype=np.uint32)
    got = etdm._node_sets_compiled(3, ptr, values)
    assert [a.tolist() for a in got] == [[0, 2, 2, 3], [3, 5, 7]]
    rng = np.random.default_rng(3)
    for trial in range(1000):
        n = int(rng.integers(0, 30))
        counts = rng.integers(0, 40 if trial % 5 == 0 else 4, n)
        ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
        values = rng.integers(0, 5 if trial % 2 else 2 ** 32, int(ptr[-1])).astype(np.uint32)
        want, got = etdm._node_sets(n, ptr, values), etdm._node_sets_compiled(n, ptr, values)
        for a, b in zip(want, got):
            assert a.dtype == b.dtype and a.tolist() == b.tolist()
    with pytest.raises(ValueError, match="do not fit"):
        etdm._compiled.node_sets(np.array([0, 5]), np.zeros(2, dtype=np.int64), np.empty(2, dtype=np.int64),
                                 np.empty(2, dtype=np.int64))


def _sides_equal(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(
        x == y if isinstance(x, str) else (x.dtype == y.dtype and x.tolist() == y.tolist()) for x, y in zip(a, b))


def test_compiled_page_side_is_the_reference():
    """_etdm.page_side builds the compiled side's sections of a page in one pass: the same
    arrays as side_reference's numpy. By hand: <body><p class="b a b" id="x">one</p>
    <pre>  two  </pre></body> has nodes body, p, "one", pre, "  two  ": p's class set is
    the two hashes of a and b in ascending order (b repeated once), the verbatim text node
    (4) is the one whose span points past page.text, at "two" collapsed. Then random pages:
    repeated and long class lists, uint32 hashes over 2^31, nested verbatim text."""
    require_built("_etdm")
    pg = page('<p class="b a b" id="x">one</p><pre>  two  </pre>')
    ix = etdm._PageIndex(pg)
    got, want = ix._side_compiled(pg), ix.side_reference(pg)
    assert got is not None and _sides_equal(got, want)
    cls_ptr, cls_val = got[5], got[6]
    assert cls_ptr.tolist()[:3] == [0, 0, 2] and cls_val.tolist() == sorted(set(pg.class_hash.tolist()))
    start, end, compared = got[9], got[10], got[11]
    assert compared[start[2]:end[2]] == "one" and compared[start[4]:end[4]] == "two"
    assert start[4] >= len(pg.text)
    rng = np.random.default_rng(11)
    words = ["a", "b", "c", "menu", "item", "x1", "x2"]
    for trial in range(60):
        parts = []
        for _ in range(int(rng.integers(1, 25))):
            cls = " ".join(rng.choice(words, size=int(rng.integers(0, 30 if trial % 4 == 0 else 4))))
            tag = rng.choice(["p", "div", "pre", "span"])
            inner = "  x  <b> y </b>\n z " if tag == "pre" else "t" * int(rng.integers(0, 4))
            parts.append(f'<{tag} class="{cls}" data-k="{rng.integers(0, 3)}">{inner}</{tag}>')
        pg = page("".join(parts))
        ix = etdm._PageIndex(pg)
        assert _sides_equal(ix._side_compiled(pg), ix.side_reference(pg))


def test_compiled_page_side_leaves_other_dtypes_to_numpy():
    """An array not of the page's own dtype (int64 tags here) or arrays that do not fit
    together (a class pointer past its hashes) get None from page_side, and compiled_side
    builds the side with numpy: the same side either way."""
    require_built("_etdm")
    pg = page('<p class="a">one</p>')
    ix = etdm._PageIndex(pg)
    want = ix.side_reference(pg)
    pg.tag = pg.tag.astype(np.int64)
    assert ix._side_compiled(pg) is None
    assert _sides_equal(ix.compiled_side(pg), want)
    n = pg.size
    out = np.empty(64, dtype=np.int64)
    bad_ptr = np.full(n + 1, 5, dtype=np.int32)
    bad_ptr[0] = 0
    assert etdm._compiled.page_side(ix.idx, pg.tag.astype(np.int32), pg.id_hash, bad_ptr, pg.class_hash,
                                    pg.attr_ptr, pg.attr_hash, pg.text_ptr, pg.flags, 0, 1, out) is None
