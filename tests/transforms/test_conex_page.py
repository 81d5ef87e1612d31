"""Page-level ConEx (design §3) on hand-built pages, expected values computed by hand."""
import numpy as np
import pytest

from sitestrip.transforms.conex_page import (PageConexParams, c_set, content_features, main_content,
                                             reduce_c_set, remove_link_lists, select_main, word_ratio)
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.tree import text_of

PAGE = ("<body><div id=page>"
        "<div id=nav><a href=/1>One</a><a href=/2>Two</a><a href=/3>Three</a></div>"
        "<div id=main><p>alpha beta gamma delta</p><p>epsilon zeta eta theta iota</p><p>kappa lambda</p></div>"
        "<div id=foot><p>copyright</p></div>"
        "</div></body>")
# preorder (depth): 0 body(0) 1 div#page(1) 2 div#nav(2) 3 a 4 "One" 5 a 6 "Two" 7 a 8 "Three"
# 9 div#main(2) 10 p(3) 11 4w(4) 12 p 13 5w 14 p 15 2w 16 div#foot(2) 17 p(3) 18 "copyright"(4)
RATED = [1, 2, 9, 10, 12, 14, 16, 17]   # body and a are excluded tags; leaves are not rated


def _page():
    return parse_page(PAGE, "http://ex.com/")


def test_features_by_hand():
    """word ratio (text under <a> ignored): #page = (4+5+2+1)/3 = 4; #nav = 0; #main = 11/2 = 5.5;
    p's 4, 5, 2; #foot 1/2; its p 1.  hyperlink ratio: #page and #nav hold 3 links → 1/3, others 1.
    children ratio: #page, #nav, #main have 3 children → 1.  position (maxDepth 4, half 2):
    depth ≤ 2 → depth, else 4 − depth: 1, 2, 2, 1, 1, 1, 2, 1."""
    page = _page()
    rated = np.zeros(page.size, dtype=bool)
    rated[RATED] = True
    f = content_features(page, rated)
    assert f.word[RATED] == pytest.approx([4, 0, 5.5, 4, 5, 2, 0.5, 1])
    assert f.hyperlink[RATED] == pytest.approx([1 / 3, 1 / 3, 1, 1, 1, 1, 1, 1])
    assert f.children[RATED].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    assert f.position[RATED].tolist() == [1, 2, 2, 1, 1, 1, 2, 1]


def test_c_set_is_the_three_farthest_from_the_centroid():
    """Means: word 2.75 (std 2), hyperlink 5/6 (std .288675), children .375 (std .484123),
    position 1.375 (std .484123). Squared z distances:
    #page .390625+3+1.666667+.6 = 5.657; #nav 1.890625+3+1.666667+1.666667 = 8.224;
    #main 1.890625+.333333+1.666667+1.666667 = 5.557; p(10) 1.924; p(12) 2.799; p(14) 1.674;
    #foot 3.866; p(17) 2.299 → c-SET = {#page, #nav, #main}."""
    page = _page()
    rated = np.zeros(page.size, dtype=bool)
    rated[RATED] = True
    cset = c_set(page, np.array(RATED), content_features(page, rated), 3)
    assert cset.tolist() == [1, 2, 9]
    # #page holds 7 text nodes, #nav 3, #main 3: no pair has the same text, nothing dropped
    assert reduce_c_set(page, cset).tolist() == [1, 2, 9]


def test_main_selection_takes_c_set_siblings():
    """textPond: #page 15 words / 11 elements = 1.36; #nav 3/4 = .75; #main 11/4 = 2.75 → #main,
    plus its c-SET sibling #nav (same parent #page). The nav links are not single-<a> wrappers,
    so Alg. 7 keeps them."""
    page = _page()
    assert select_main(page, np.array([1, 2, 9])).tolist() == [2, 9]
    text = text_of(page, main_content(page))
    assert text == ("One Two Three\nalpha beta gamma delta\nepsilon zeta eta theta iota\n"
                    "kappa lambda")


def test_c_set_reduction_drops_descendant_with_same_text():
    page = parse_page("<body><div><div><p>only text</p></div></div><p>x</p></body>", "http://e.com/")
    # 0 body 1 div 2 div 3 p 4 text 5 p 6 text: 1 and 2 hold the same single text node
    assert reduce_c_set(page, np.array([1, 2, 5])).tolist() == [1, 5]


def test_word_ratio_weights_by_distance():
    page = parse_page("<body><div><p>a b c d</p><span><a href=/x>link words</a></span></div></body>",
                      "http://e.com/")
    # div: "a b c d" is 2 edges below → 4/2; link text is under <a> → ignored
    assert word_ratio(page)[1] == pytest.approx(2.0)


def test_link_list_post_process():
    """Alg. 7: li wrappers holding one <a> with < 3 words, with same-tag siblings, go.
    The second link has 3 words but is removed with its group; a lone wrapper stays."""
    page = parse_page("<body><div><p>Some words here</p>"
                      "<ul><li><a href=/x>X</a></li><li><a href=/y>Why not this</a></li></ul>"
                      "<div><a href=/z>Z</a></div></div></body>", "http://e.com/")
    mask = np.ones(page.size, dtype=bool)
    mask[0] = False
    kept = remove_link_lists(page, mask, max_words=3)
    assert text_of(page, kept) == "Some words here\nZ"
    # with max_words 1 no link is short enough: nothing removed
    assert text_of(page, remove_link_lists(page, mask, max_words=1)) == "Some words here\nX\nWhy not this\nZ"


def test_wide_page_rule_takes_all_body_children():
    """BODY has 3 rated-tag children (p) and the deepest rated-tag element is at depth 1 → wide."""
    page = parse_page("<body><p>one</p><p>two <a href=/a>a</a></p><p>three</p></body>", "http://e.com/")
    assert text_of(page, main_content(page)) == "one\ntwo a\nthree"


def test_parameters_change_the_selection():
    """c = 1: the c-SET is the single farthest node, #nav (8.224 above) → the nav text.
    Excluding p as well leaves #page, #nav, #main, #foot rated, and the selection changes."""
    page = _page()
    assert text_of(page, main_content(page, PageConexParams(c=1))) == "One Two Three"
    params = PageConexParams(excluded_tags=PageConexParams().excluded_tags + ("p",))
    assert text_of(page, main_content(page, params)) != text_of(page, main_content(page))


def test_empty_page_has_no_main_content():
    page = parse_page("", "http://e.com/")
    assert not main_content(page).any()
    page = parse_page("<body><img src=a.png></body>", "http://e.com/")
    assert text_of(page, main_content(page)) == ""


def test_excluded_mask_by_table_and_for_tags_only_tag_id_knows():
    """Known excluded tags are looked up in a tag table; a configured name that is no known
    tag ("my-widget", a custom element) still excludes its elements through tag_id. Page
    "<nav><p>a</p></nav><my-widget>b</my-widget>": nodes body 0, nav 1, p 2, "a" 3,
    my-widget 4, "b" 5."""
    from sitestrip.transforms.conex_page import _excluded_mask
    from sitestrip.transforms.page import parse_page
    page = parse_page("<html><body><nav><p>a</p></nav><my-widget>b</my-widget></body></html>", "http://ex.com/")
    assert _excluded_mask(page, ("nav", "body")).tolist() == [True, True, False, False, False, False]
    assert _excluded_mask(page, ("nav", "my-widget")).tolist() == [False, True, False, False, True, False]
    assert _excluded_mask(page, ()).tolist() == [False] * 6


def test_excluded_mask_mixes_table_and_unknown_ids():
    """A list with known and unknown names takes the table for the known ones and the ids
    for the others, on a page with or without an unknown tag; "#text" excludes text nodes.
    Same page as above: body 0, nav 1, p 2, "a" 3, my-widget 4, "b" 5."""
    from sitestrip.transforms.conex_page import _excluded_mask
    from sitestrip.transforms.page import parse_page
    page = parse_page("<html><body><nav><p>a</p></nav><my-widget>b</my-widget></body></html>", "http://ex.com/")
    assert _excluded_mask(page, ("p", "script", "my-widget")).tolist() == [False, False, True, False, True, False]
    assert _excluded_mask(page, ("p", "script")).tolist() == [False, False, True, False, False, False]
    assert _excluded_mask(page, ("#text", "nav")).tolist() == [False, True, False, True, False, True]
    plain = parse_page("<html><body><nav><p>a</p></nav></body></html>", "http://ex.com/")
    assert _excluded_mask(plain, ("p", "my-widget")).tolist() == [False, False, True, False]


def test_link_list_groups_are_per_parent_and_tag():
    """Wrappers group by (parent, tag): the ul's li and p are groups of one each (kept); the
    ol's two li are a group with no short link (3 words each, kept); the div's two spans a
    group with short links (removed). The mask's unselected body is not a wrapper."""
    page = parse_page("<body><ul><li><a href=/a>A</a></li><p><a href=/b>B</a></p></ul>"
                      "<ol><li><a href=/c>C c c</a></li><li><a href=/d>D d d</a></li></ol>"
                      "<div><span><a href=/e>E</a></span><span><a href=/f>F</a></span></div></body>", "http://e.com/")
    mask = np.ones(page.size, dtype=bool)
    mask[0] = False
    kept = remove_link_lists(page, mask, max_words=3)
    texts = {text_of(page, np.arange(page.size) == i): bool(kept[i]) for i in np.flatnonzero(page.tag == 0)}
    assert texts == {"A": True, "B": True, "C c c": True, "D d d": True, "E": False, "F": False}
    assert int((~kept[1:]).sum()) == 6          # each span with its <a> and text


def test_standardize_is_numpys_mean_and_std_bit_for_bit():
    """standardize's direct reductions against x.mean(axis=0) and x.std(axis=0)
    (standardize_reference): the same floats on seeded matrices of every scale, with
    constant columns (zero deviation: 0), 0/1 columns, rounded values, Fortran order and
    one row."""
    from sitestrip.transforms.conex_page import standardize, standardize_reference
    rng = np.random.default_rng(0)
    for t in range(600):
        x = rng.normal(size=(int(rng.integers(1, 300)), 4)) * rng.choice([1.0, 1e-8, 1e8])
        if t % 3 == 0:
            x[:, 2] = rng.integers(0, 2, x.shape[0])
        if t % 7 == 0:
            x[:, 1] = 1.0
        if t % 5 == 0:
            x = np.round(x, 2)
        for m in (x, np.asfortranarray(x)):
            assert standardize(m).tobytes() == standardize_reference(m).tobytes()
    assert standardize(np.array([[1.0, 2.0, 3.0, 4.0]])).tolist() == [[0.0, 0.0, 0.0, 0.0]]


def _conex_by_path(page, params, compiled):
    """(mask, the content features' arrays or None) of main_content_and_features with the
    compiled switch (tree._COMPILED) set to `compiled`."""
    from sitestrip.transforms import conex_page, tree
    saved = tree._COMPILED
    tree._COMPILED = compiled
    page.forget_derived()
    try:
        mask, features = conex_page.main_content_and_features(page, params)
    finally:
        tree._COMPILED = saved
        page.forget_derived()
    arrays = None if features is None else [(a.dtype.str, a.tobytes()) for a in
                                              (features.rated, features.word, features.hyperlink,
                                               features.children, features.position)]
    return (mask.dtype.str, mask.tobytes()), arrays


def _link_list_page(rng):
    """Nested sections, paragraphs, link lists (wrappers of one <a> under one parent, of one
    tag or mixed, short and long anchors), custom elements and repeated identical siblings
    (equal distances from the centroid, so the c-SET's ties decide)."""
    def block(depth):
        kind = rng.random()
        if depth > 4 or kind < 0.25:
            return "<p>" + " ".join("w" * rng.randint(1, 5) for _ in range(rng.randint(1, 9))) + "</p>"
        if kind < 0.45:
            wrap = rng.choice(["li", "li", "span", "div", "my-item"])
            items = "".join(f"<{rng.choice([wrap, wrap, 'p'])}><a href=/{i}>{' '.join(['x'] * rng.randint(1, 4))}"
                            f"</a></{wrap}>" for i in range(rng.randint(1, 5)))
            return f"<{rng.choice(['ul', 'div', 'nav'])}>{items}</>"
        if kind < 0.55:
            same = block(depth + 1)
            return "<div>" + same * rng.randint(2, 4) + "</div>"
        tag = rng.choice(["div", "section", "article", "my-box", "td", "span"])
        return f"<{tag}>" + "".join(block(depth + 1) for _ in range(rng.randint(1, 4))) + f"</{tag}>"
    body = "".join(block(0) for _ in range(rng.randint(1, 5)))
    return parse_page(f"<html><body>{body}</body></html>", "http://e.com/")


def test_compiled_main_content_is_the_reference(monkeypatch):
    """transforms/_features.c page_conex against the numpy steps, on generated pages and
    parameters: c from 0 (empty c-SET) to more than the rated nodes, max_words that make every
    link short or none, excluded lists with custom elements, "#text" and content tags (wide
    pages, pages with nothing rated)."""
    import random

    from helpers.compiled import require_built
    require_built("_features")
    rng = random.Random(7)
    params = [PageConexParams(), PageConexParams(c=0), PageConexParams(c=1, max_words=1),
              PageConexParams(c=40, max_words=10),
              PageConexParams(excluded_tags=PageConexParams().excluded_tags + ("my-box", "my-item", "p")),
              PageConexParams(excluded_tags=("#text", "div", "section", "article", "ul", "li", "nav", "td")),
              PageConexParams(excluded_tags=())]
    from sitestrip.transforms import conex_page
    removals = []
    reference = conex_page.remove_link_lists

    def counted(page, mask, max_words):
        kept = reference(page, mask, max_words)
        removals.append(int((mask & ~kept).sum()))
        return kept
    monkeypatch.setattr(conex_page, "remove_link_lists", counted)
    kinds = set()
    pages = [_link_list_page(rng) for _ in range(150)]
    pages += [_page(), parse_page("<body><p>one</p><p>two</p><p>three</p></body>", "http://e.com/"),
              parse_page("<body>only text</body>", "http://e.com/")]
    for page in pages:
        for p in params:
            got = _conex_by_path(page, p, True)
            assert got == _conex_by_path(page, p, False), (p, page.size)
            kinds.add((got[1] is None, got[0][1].count(1) > 0))
    # nothing rated or wide, and a selection that is not empty, both reached
    assert kinds >= {(True, False), (True, True), (False, True), (False, False)}
    # and link lists removed from selections, by the reference and so by the compiled pass
    assert sum(1 for r in removals if r) >= 100


def test_compiled_main_content_runs_without_the_reference(monkeypatch):
    """The default path: with the numpy steps made to fail, the hand-computed selection
    (#nav and #main, test_main_selection_takes_c_set_siblings) and the hand-computed position
    ratios of the rated nodes (test_features_by_hand) still come out."""
    from helpers.compiled import require_built
    from sitestrip.transforms import conex_page
    require_built("_features")

    def no_reference(*args, **kwargs):
        raise AssertionError("the reference ran")
    for name in ("c_set", "reduce_c_set", "select_main", "remove_link_lists", "wide_page", "_excluded_mask",
                 "content_features"):
        monkeypatch.setattr(conex_page, name, no_reference)
    page = _page()
    mask, features = conex_page.main_content_and_features(page)
    assert text_of(page, mask) == "One Two Three\nalpha beta gamma delta\nepsilon zeta eta theta iota\nkappa lambda"
    assert features.position[RATED].tolist() == [1, 2, 2, 1, 1, 1, 2, 1]
    assert np.flatnonzero(features.rated).tolist() == RATED
