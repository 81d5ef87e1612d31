"""MenEx (design §2) on hand-built pages, expected values computed by hand."""
import numpy as np
import pytest

from sitestrip.transforms.menex import MenexParams, detect_menu, menu_features, menu_weights, select_menu, select_root
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.tree import children

SMALL = ("<body><ul><li><a href='/a'>Home</a></li><li><a href='/b'>Docs</a></li></ul>"
         "<p>Hello world text</p></body>")


def test_weights_follow_the_formulas():
    """Nodes (preorder): 0 body, 1 ul, 2 li, 3 a, 4 "Home", 5 li, 6 a, 7 "Docs", 8 p, 9 text.

    |N| = 10; chars outside <a>: only "Hello world text" = 16, sqrt(chars(P)) = 4.
    body: amplitude 1-1/2 = .5; links 2, descendants 9 → (2+9)/(2·9) = .6111;
          text 1-16/4 clamped to 0; position 1-0/10 = 1
          w = .3·.5 + .05·.6111 + .25·1 = .430556
    ul:   amplitude .5; link (2+6)/12 = .6667; text 1-0/4 = 1; UL 1; position .9
          w = .15 + .033333 + .1 + .15 + .225 = .658333
    li(2): amplitude 0; 1 link → link 0; text 1; position .8 → w = .1 + .2 = .3
    a(3):  text 1; position .7 → w = .1 + .175 = .275
    li(5): .1 + .25·.5 = .225;  a(6): .1 + .25·.4 = .2
    p(8):  amplitude 0, text 1-16/4 → 0, position .2 → w = .05
    leaves and text nodes are not rated: 0.
    """
    page = parse_page(SMALL, "http://ex.com/")
    w = menu_weights(page)
    expected = [0.430556, 0.658333, 0.3, 0.275, 0, 0.225, 0.2, 0, 0.05, 0]
    assert w == pytest.approx(expected, abs=1e-6)
    f = menu_features(page)
    assert f.link[0] == pytest.approx(11 / 18)
    assert f.text[0] == 0.0 and f.text[1] == 1.0


def test_detect_menu_on_small_page():
    """Only the ul (.658) exceeds .85·.658 = .5596. Alg. 1: its parent body has children
    ul (.658) and p (.05); one of two exceeds .9·.658, not more than half → the root is ul.
    Alg. 2: no descendant of ul exceeds .5596 → the heaviest root, ul."""
    menu = detect_menu(parse_page(SMALL, "http://ex.com/"))
    assert menu.node == 1
    assert menu.links == [("http://ex.com/a", "Home"), ("http://ex.com/b", "Docs")]
    assert menu.text == "Home\nDocs"


def test_no_menu_without_two_links():
    assert detect_menu(parse_page("<body><p>text <a href='/x'>one</a></p></body>", "http://ex.com/")) is None
    assert detect_menu(parse_page("", "http://ex.com/")) is None


def test_representative_tag_weight():
    """A nav element adds .15 to the weight of the same node without it."""
    plain = menu_weights(parse_page("<body><div><a href=/1>1</a><a href=/2>2</a></div></body>", "http://e.com/"))
    nav = menu_weights(parse_page("<body><nav><a href=/1>1</a><a href=/2>2</a></nav></body>", "http://e.com/"))
    assert nav[1] - plain[1] == pytest.approx(0.15)


@pytest.mark.parametrize("rule, marked", [
    ("prefix", {"menu", "main-menu", "navbar"}),
    ("word_part", {"menu", "main-menu"}),
    ("exact", {"menu"}),
])
def test_representative_tag_rule(rule, marked):
    """The same two-link div with class menu, main-menu, navbar or none: the representative
    property (weight .15) goes to the classes the rule marks (see test_page's hint rules)."""
    params = MenexParams(representative=rule)

    def weight(cls):
        return menu_weights(parse_page(f"<body><div class={cls}><a href=/1>1</a><a href=/2>2</a></div></body>",
                                       "http://e.com/"), params)[1]
    plain = weight("plain")
    for cls in ("menu", "main-menu", "navbar"):
        assert weight(cls) - plain == pytest.approx(0.15 if cls in marked else 0.0), cls


CLIMB = ("<body><div><ul><li>a</li></ul><ul><li>b</li></ul><ul><li>c</li></ul></div>"
         "<section><div><ul><li>d</li></ul></div></section><p>x</p></body>")
# preorder: 0 body, 1 div, 2 ul, 3 li, 4 #, 5 ul, 6 li, 7 #, 8 ul, 9 li, 10 #,
#           11 section, 12 div, 13 ul, 14 li, 15 #, 16 p, 17 #


def _weights(assign):
    w = np.zeros(18)
    for node, value in assign.items():
        w[node] = value
    return w


def test_root_selection_climbs_while_more_than_half_are_heavy():
    """Candidate ul(2) weighs 1.0, t = .9 → threshold .9.
    Parent div(1): children 2, 5, 8 weigh 1.0, .95, .5 → 2 of 3 heavy → climb; div has > 1 child → menu = div.
    Parent body: children div(1)=.2, section(11)=.2, p(16)=0 → 0 heavy → stop. Root = div(1)."""
    page = parse_page(CLIMB, "http://ex.com/")
    ptr, kids = children(page)
    w = _weights({2: 1.0, 5: 0.95, 8: 0.5, 1: 0.2, 11: 0.2})
    assert select_root(page, w, ptr, kids, 2, 0.9) == 1


def test_root_selection_passes_single_child_parents_without_moving_the_menu():
    """Candidate ul(13) = 1.0. Parent div(12) has one child, heavy (1 of 1) → climb, but
    the menu stays ul(13). Parent section(11): its only child div(12) weighs .95 > .9 → climb,
    still one child. Parent body: 0 of 3 heavy → stop. Root = ul(13)."""
    page = parse_page(CLIMB, "http://ex.com/")
    ptr, kids = children(page)
    w = _weights({13: 1.0, 12: 0.95})
    assert select_root(page, w, ptr, kids, 13, 0.9) == 13
    # with div(12) light the climb stops at section already: same root
    assert select_root(page, _weights({13: 1.0}), ptr, kids, 13, 0.9) == 13


def test_menu_selection_best_average_of_heavy_descendants():
    """Threshold .5. Root div(1) has heavy descendants 2 (.9), 5 (.6) → average .75;
    root section(11) has 13 (.8) → average .8 → section wins. With 13 at .7 the average .7
    loses to .75 → div. With no heavy descendant anywhere, the heavier root itself wins."""
    page = parse_page(CLIMB, "http://ex.com/")
    assert select_menu(page, _weights({2: .9, 5: .6, 13: .8}), [1, 11], 0.5) == 11
    assert select_menu(page, _weights({2: .9, 5: .6, 13: .7}), [1, 11], 0.5) == 1
    assert select_menu(page, _weights({1: .3, 11: .4}), [1, 11], 0.5) == 11
    # ties go to the first root in document order
    assert select_menu(page, _weights({1: .4, 11: .4}), [1, 11], 0.5) == 1


def test_params_change_the_result():
    """Without the position and UL weights, the body (link ratio .61) is no longer behind the ul."""
    page = parse_page(SMALL, "http://ex.com/")
    params = MenexParams(w_amplitude=0, w_link=1, w_text=0, w_ul=0, w_representative=0, w_position=0)
    w = menu_weights(page, params)
    assert w[1] == pytest.approx(8 / 12) and w[0] == pytest.approx(11 / 18)


def test_scores_given_are_the_scores_used():
    """detect_menu with menu_scores passed in reads them instead of recomputing: SMALL's
    scores with the ul's weight (.658) zeroed make body (.4306) the heaviest node and the
    only candidate over .85·.4306 = .366 (li .3 is not); Alg. 1 stops at the root, so the
    menu is body, not the ul detect_menu finds on its own (test above)."""
    from sitestrip.transforms.menex import menu_scores
    page = parse_page(SMALL, "http://ex.com/")
    features, weights = menu_scores(page)
    assert weights == pytest.approx(menu_weights(page))
    weights = weights.copy()
    weights[1] = 0.0
    assert detect_menu(page, MenexParams(), (features, weights)).node == 0
    assert detect_menu(page).node == 1
