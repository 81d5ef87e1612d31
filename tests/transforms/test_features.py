"""Block features (design §10, transforms/features.py) on hand-built pages.

Every expected value is derived by hand from the page in the test's docstring:
node numbers are preorder indices of the compact page (node 0 = BODY, text
nodes count), blocks are those of transforms/blocks.py (own text of the
nearest instance, else of the nearest block-level or classed element).
"""
import math
from types import SimpleNamespace

import numpy as np
import pytest

from sitestrip.configs import load_config
from sitestrip.transforms.blocks import GROUPS, block_texts, page_blocks
from sitestrip.transforms.site_step import SiteBlocks, analyse_page, build_page_record, site_context
from sitestrip.transforms.features import FEATURE_NAMES, METHODS, SiteSignals, block_features
from sitestrip.transforms.page import HINT_BIT, HINT_NAMES, _role_hints, parse_page
from sitestrip.transforms.tree import subtree_mask

COL = {name: i for i, name in enumerate(FEATURE_NAMES)}
SITE_COLUMNS = FEATURE_NAMES[COL["has_site"]:COL["text_site_share"] + 1]


def features(html, *, site=None, conex_main=None, menu_node=None, url="http://ex.com/"):
    page = parse_page(html, url)
    blocks = page_blocks(page)
    texts = block_texts(page, blocks)
    if conex_main is None:
        conex_main = np.zeros(page.size, dtype=bool)
    x = block_features(page, blocks, texts, conex_main=conex_main, menu_node=menu_node, site=site)
    return page, blocks, texts, x


def col(x, name):
    return x[:, COL[name]].astype(np.float64).tolist()


def log1p(values):
    return [math.log1p(v) for v in values]


# Page (a): text, link and structure columns.
#  0 body
#  1 h1            2 "Main Title"
#  3 p             4 "Read"  5 a  6 "this link"  7 "now"
#  8 p             9 a      10 "Only link"
# 11 div          12 span   13 "plain div text"
# 14 section      15 a.teaser 16 "Teaser text"
# 17 form         18 input  19 p  20 "Search here"  21 a  22 "help"
PAGE_A = ("<body><h1>Main Title</h1>"
          "<p>Read <a href='/x'>this link</a> now</p>"
          "<p><a href='/y'>Only link</a></p>"
          "<div><span>plain div text</span></div>"
          "<section><a class='teaser' href='/t'>Teaser text</a></section>"
          "<form><input name='q'><p>Search here</p><a href='/help'>help</a></form>"
          "</body>")


def test_page_a_has_the_blocks_the_derivation_assumes():
    """B0 h1 (instance), B1 p3, B2 p8, B3 div11 (instance: no content element, span one
    level down), B4 a15 (orphan text under a non-instance section; the classed <a> is
    nearer than the section), B5 p19, B6 form17 ("help": orphan, its <a> has no class,
    the form is block-level). Words 2+4+2+3+2+2+1 = 16."""
    page, blocks, texts, _ = features(PAGE_A)
    assert texts == ["Main Title", "Read this link now", "Only link", "plain div text",
                     "Teaser text", "Search here", "help"]
    assert blocks.owner.tolist() == [1, 3, 8, 11, 15, 19, 17]
    assert blocks.words.tolist() == [2, 4, 2, 3, 2, 2, 1]
    assert int(page.words.sum()) == 16


def test_text_link_and_structure_columns_of_page_a():
    """Per block B0..B6 (see the node list above PAGE_A):

    words_log = log1p(words) = log1p([2, 4, 2, 3, 2, 2, 1]).
    link_char_share = characters inside <a> / characters: B1 "Read"(4) "this link"(9)
      "now"(3) -> 9/16; B2, B4, B6 are all link text -> 1; the rest 0.
    is_desc_a: the owner is an <a> or inside one: only B4 (owner a15).
    is_link: the owner's only child node is an <a>: B2 (p8 -> a9). B4's a15 has a text
      child; the form has three children.
    has_children (child elements): h1 0, p3 1 (a), p8 1 (a), div11 1 (span), a15 0, p19 0,
      form 1.
    siblings_log = log1p(parent's children - 1): BODY has 6 children (h1 p p div section
      form) -> log1p(5) for B0-B3 and B6; a15 is alone in its section -> 0; p19 is one of
      3 in the form -> log1p(2).
    is_sib_p: another <p> under the same parent: BODY holds p3 and p8, so 1 for h1, p3,
      p8, div11, form; 0 for a15 (section) and p19 (the form's only p).
    is_sib_a: only p19's parent (form) has an <a> child -> B5.
    is_sib_input (input, button, select, textarea, form, label): BODY's children include
      the form -> 1 for B0-B3, 0 for the form itself (B6); p19 has the input beside it -> 1;
      a15 0.
    distance_to_root = depth of the owner: 1, 1, 1, 1, 2, 2, 1.
    normalized_top/bottom = words before / 16, (words before + own) / 16 with words
      2, 4, 2, 3, 2, 2, 1: top 0, 2, 6, 8, 11, 13, 15 (/16); bottom 2, 6, 8, 11, 13, 15, 16.
    heading_level: 1 for the h1, else 0.
    group one-hots: h, p, p, div, other, p, other; is_instance 1 1 1 1 0 1 0."""
    _, blocks, _, x = features(PAGE_A)
    assert col(x, "words_log") == pytest.approx(log1p([2, 4, 2, 3, 2, 2, 1]))
    assert col(x, "link_char_share") == pytest.approx([0, 9 / 16, 1, 0, 1, 0, 1])
    assert col(x, "is_desc_a") == [0, 0, 0, 0, 1, 0, 0]
    assert col(x, "is_link") == [0, 0, 1, 0, 0, 0, 0]
    assert col(x, "has_children") == [0, 1, 1, 1, 0, 0, 1]
    assert col(x, "siblings_log") == pytest.approx(log1p([5, 5, 5, 5, 0, 2, 5]))
    assert col(x, "is_sib_p") == [1, 1, 1, 1, 0, 0, 1]
    assert col(x, "is_sib_a") == [0, 0, 0, 0, 0, 1, 0]
    assert col(x, "is_sib_input") == [1, 1, 1, 1, 0, 1, 0]
    assert col(x, "distance_to_root") == [1, 1, 1, 1, 2, 2, 1]
    assert col(x, "normalized_top") == pytest.approx([w / 16 for w in (0, 2, 6, 8, 11, 13, 15)])
    assert col(x, "normalized_bottom") == pytest.approx([w / 16 for w in (2, 6, 8, 11, 13, 15, 16)])
    assert col(x, "heading_level") == [1, 0, 0, 0, 0, 0, 0]
    expected_groups = ["h", "p", "p", "div", "other", "p", "other"]
    for g in GROUPS:
        assert col(x, f"group_{g}") == [float(e == g) for e in expected_groups], g
    assert col(x, "is_instance") == [1, 1, 1, 1, 0, 1, 0]
    assert [GROUPS[g] for g in blocks.group.tolist()] == expected_groups


def test_page_conex_and_menu_membership_are_read_at_the_blocks_first_text_node():
    """in_page_conex = the page-ConEx mask at the block's first text node; in_menex_menu =
    that node lies strictly inside the menu element's subtree. With the ConEx mask =
    subtree of p3 (nodes 3-7) only B1 is in ConEx; with the menu = form17 (nodes 17-22)
    B5 (first node 20) and B6 (first node 22) are in the menu."""
    page = parse_page(PAGE_A, "http://ex.com/")
    conex = subtree_mask(page, [3])
    _, _, _, x = features(PAGE_A, conex_main=conex, menu_node=17)
    assert col(x, "in_page_conex") == [0, 1, 0, 0, 0, 0, 0]
    assert col(x, "in_menex_menu") == [0, 0, 0, 0, 0, 1, 1]
    _, _, _, x = features(PAGE_A, menu_node=8)      # p8's subtree: nodes 8-10, B2 only
    assert col(x, "in_menex_menu") == [0, 0, 1, 0, 0, 0, 0]
    _, _, _, none = features(PAGE_A)
    assert col(none, "in_menex_menu") == [0] * 7


def test_is_link_needs_the_link_to_be_the_only_child():
    """Seed 002's is_link: the block's element has one child node, an <a>. A p that starts
    with a link and goes on in prose is not a link block; nor is a p holding two links."""
    _, _, texts, x = features("<body><p><a href='/a'>Only link</a></p>"
                              "<p><a href='/b'>Lead link</a> then prose</p>"
                              "<p><a href='/c'>one</a><a href='/d'>two</a></p></body>")
    assert texts == ["Only link", "Lead link then prose", "one two"]
    assert col(x, "is_link") == [1, 0, 0]


def test_site_columns_are_missing_without_a_site():
    """A page_only page (no SiteSignals): every site column is NaN ("missing", routed by
    the trees) except has_site = 0 and method_page_only = 1."""
    _, _, _, x = features(PAGE_A)
    for name in SITE_COLUMNS:
        if name == "has_site":
            assert col(x, name) == [0] * 7
        elif name == "method_page_only":
            assert col(x, name) == [1] * 7
        else:
            assert np.isnan(x[:, COL[name]]).all(), name
    page_cols = [COL[n] for n in FEATURE_NAMES[:COL["has_site"]]]
    assert not np.isnan(x[:, page_cols]).any()


def test_site_columns_from_hand_built_signals():
    """SiteSignals by hand on PAGE_A: 4 candidate pages, method cs, CS of 3, 9 site pages.
    TemEx occurrences: text nodes 2 ("Main Title") 4, 6 ("this link") 2, 7 ("now") 1,
    10 ("Only link") 4, the p3 element 3, everything else 0.

    occ per text node / 4 candidates:
      B0 [1]            -> min = mean = max = 1; template words 2/2 = 1
      B1 [0, 1/2, 1/4]  -> min 0, mean 1/4, max 1/2; template words ("this link" 2 +
                           "now" 1) / 4 = 3/4; occ_owner = occ[p3] / 4 = 3/4
      B2 [1]            -> 1, 1, 1; template words 1
      B3..B6            -> 0 everywhere
    region_template_1 (the owner's parent): BODY for B0-B3 and B6 -> template words of
      the page (2 + 3 + 2) / 16 = 7/16; section14 for B4 -> 0; form17 for B5 -> 0.
    text_on_candidates and text_site_share are the signals' per-block arrays."""
    page = parse_page(PAGE_A, "http://ex.com/")
    occ = np.zeros(page.size, dtype=np.int64)
    occ[[2, 6, 7, 10, 3]] = [4, 2, 1, 4, 3]
    on_candidates = np.array([1.0, 0.5, 0.75, 0.0, 0.25, 0.0, 1.0])
    site_share = np.array([1.0, 0.125, 0.5, 0.0, 0.0, 0.25, 1.0])
    signals = SiteSignals(occurrences=occ, candidates=4, method="cs", cs_size=3, site_pages=9,
                          text_on_candidates=on_candidates, text_site_share=site_share)
    _, _, _, x = features(PAGE_A, site=signals)
    assert col(x, "has_site") == [1] * 7
    assert col(x, "site_pages_log") == pytest.approx([math.log1p(9)] * 7)
    assert col(x, "cs_size") == [3] * 7 and col(x, "candidates") == [4] * 7
    for m in METHODS:
        assert col(x, f"method_{m}") == [float(m == "cs")] * 7, m
    assert col(x, "occ_min") == pytest.approx([1, 0, 1, 0, 0, 0, 0])
    assert col(x, "occ_mean") == pytest.approx([1, 0.25, 1, 0, 0, 0, 0])
    assert col(x, "occ_max") == pytest.approx([1, 0.5, 1, 0, 0, 0, 0])
    assert col(x, "occ_owner") == pytest.approx([0, 0.75, 0, 0, 0, 0, 0])
    assert col(x, "template_word_share") == pytest.approx([1, 0.75, 1, 0, 0, 0, 0])
    assert col(x, "region_template_1") == pytest.approx([7 / 16] * 4 + [0, 0, 7 / 16])
    assert col(x, "text_on_candidates") == pytest.approx(on_candidates.tolist())
    assert col(x, "text_site_share") == pytest.approx(site_share.tolist())
    # Every column is known, but the page type's, which the page type model fills.
    page_type = np.arange(COL["page_type_article"], COL["page_type_service"] + 1)
    assert not np.isnan(np.delete(x, page_type, axis=1)).any()


# ---------------------------------------------------------------- class/id hints

def _chain(levels, cls, text):
    """<div class=cls> over `levels - 1` plain divs over <p>text</p>: the classed div is the
    p's `levels`-th ancestor."""
    return f"<div class='{cls}'>" + "<div>" * (levels - 1) + f"<p>{text}</p>" + "</div>" * levels


TWELVE = " ".join(f"c{i}" for i in range(1, 12))          # 11 utility classes
PAGE_HINTS = (
    "<body class='show-comments sidebar main-nav ad-free'>"
    "<div class='site-nav'><ul><li><a href='/a'>Home</a></li></ul></div>"     # B0
    + _chain(3, "outer-comments", "Deep reply")                               # B1
    + "<div class='banner_ad'><p>Buy</p></div>"                              # B2
    "<div class='shadow-add'><p>Not an ad</p></div>"                         # B3
    "<aside><p>Aside text</p></aside>"                                       # B4
    "<p>Plain text</p>"                                                      # B5
    f"<div class='{TWELVE} nav-menu'><p>Twelve classes</p></div>"           # B6
    f"<div class='{TWELVE} c12 nav-menu'><p>Thirteen classes</p></div>"     # B7
    + _chain(8, "related-posts", "Just far")                                  # B8
    + _chain(9, "related-posts", "Too far")                                   # B9
    + "<section id='disqus_thread'><p>Comment body</p></section>"            # B10
    "</body>")


def test_role_hints_near_and_far_and_never_from_body():
    """near_X: X among the hints of the owner and its 2 nearest ancestors; far_X: of the
    owner and its 8 nearest ancestors; BODY never counts. BODY here says comment, aside,
    nav and ad, so a block under BODY alone has no hint at all (B5).

    B0 "Home": li -> ul -> div.site-nav (2nd ancestor): near_nav, far_nav.
    B1 "Deep reply": div.outer-comments is the 3rd ancestor: far_comment, not near.
    B2 "Buy": div.banner_ad (`_ad\\b`, seed 002's regex) 1st ancestor: near_ad.
    B3 "Not an ad": "shadow-add" matches none of seed 002's ad regexes.
    B4: <aside> (the tag's own hint) 1st ancestor: near_aside.
    B5: only BODY above: every near_* and far_* is 0.
    B6: 12 class tokens, the limit: "nav-menu" counts -> near_nav.
    B7: 13 class tokens: utility-class soup, no hint at all.
    B8: div.related-posts is the 8th ancestor: far_related; B9: 9th: nothing.
    B10: id "disqus_thread" has the word part "disqus": near_comment."""
    _, _, texts, x = features(PAGE_HINTS)
    assert texts == ["Home", "Deep reply", "Buy", "Not an ad", "Aside text", "Plain text",
                     "Twelve classes", "Thirteen classes", "Just far", "Too far", "Comment body"]
    near = {h: col(x, f"near_{h}") for h in HINT_NAMES}
    far = {h: col(x, f"far_{h}") for h in HINT_NAMES}

    def hints_of(table, b):
        return {h for h in HINT_NAMES if table[h][b]}

    assert "nav" in hints_of(near, 0) and "nav" in hints_of(far, 0)
    assert "comment" not in hints_of(near, 1) and "comment" in hints_of(far, 1)
    assert "ad" in hints_of(near, 2)
    assert "ad" not in hints_of(far, 3)
    assert "aside" in hints_of(near, 4)
    assert hints_of(near, 5) == set() and hints_of(far, 5) == set()
    assert "nav" in hints_of(near, 6)
    assert hints_of(far, 7) == set()
    assert "related" in hints_of(far, 8) and "related" not in hints_of(near, 8)
    assert hints_of(far, 9) == set()
    assert "comment" in hints_of(near, 10)
    # BODY's own hints are recorded (the flattening does not know it will be ignored) ...
    page = parse_page(PAGE_HINTS, "http://ex.com/")
    for h in ("comment", "aside", "nav", "ad"):
        assert page.hints[0] & HINT_BIT[h], h
    # ... and no block anywhere picked up BODY's comment hint through a far walk.
    assert far["comment"] == [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1]


@pytest.mark.parametrize("token", [
    "ad-slot", "top-ad", "ad_unit", "side_ad", "adv-box", "top-adv", "adv_x", "x_adv",
    "advertisement", "ads", "adsense", "adblock-note", "adbox", "Ad-Slot"])
def test_seed_002_ad_patterns_mark_a_token(token):
    """Seed 002 §3.8.2's regexes, one token per pattern: \\bad-, -ad\\b, \\bad_, _ad\\b,
    \\badv-, -adv\\b, \\badv_, _adv\\b, advert, \\bads, adblock, adbox (case-folded)."""
    assert _role_hints(token) & HINT_BIT["ad"]


@pytest.mark.parametrize("token", ["shadow", "header", "add-to-cart", "badge", "load_more", "reader",
                                   "thread-list", "head-line", "load_ad2"])
def test_words_containing_ad_are_not_ads(token):
    """None of the seed 002 patterns matches: "ad" inside a word is no boundary."""
    assert not _role_hints(token) & HINT_BIT["ad"]


@pytest.mark.parametrize("token,expected", [
    ("site-nav", True), ("mainNav", True), ("navbar", True), ("unavailable", True),
    ("menu_top", True), ("canvas", False), ("main", False)])
def test_nav_is_a_word_part_prefix_or_a_substring_as_published(token, expected):
    """Seed 002 matches "nav" as a substring ("unavailable" included, as published);
    the product adds word parts beginning with nav/menu ("menu_top")."""
    assert bool(_role_hints(token) & HINT_BIT["nav"]) == expected


# ---------------------------------------------------------------- invisible

def test_invisible_blocks():
    """invisible: the owner or an ancestor has the `hidden` attribute, aria-hidden="true",
    or an inline display:none / visibility:hidden (design §10).
    B0 <p hidden>; B1 under aria-hidden="true"; B2 two levels under display: none;
    B3 visibility:hidden -> 1. B4 aria-hidden="false", B5 display:block, B6 plain -> 0."""
    html = ("<body><p hidden>Secret one</p>"
            "<div aria-hidden='true'><p>Secret two</p></div>"
            "<div style='color: red; display : none'><div><p>Secret three</p></div></div>"
            "<p style='visibility:hidden'>Secret four</p>"
            "<div aria-hidden='false'><p>Shown one</p></div>"
            "<p style='display:block'>Shown two</p>"
            "<p>Shown three</p></body>")
    _, _, texts, x = features(html)
    assert [t.split()[0] for t in texts] == ["Secret"] * 4 + ["Shown"] * 3
    assert col(x, "invisible") == [1, 1, 1, 1, 0, 0, 0]


def test_a_hidden_class_on_body_does_not_hide_the_page():
    """Class hints of BODY never count (design §10: a site-wide body class made whole pages
    "comments" and empty). A body class such as "menu-hidden" says that a menu is folded
    away, not that the page is invisible: no block is invisible. The `hidden` attribute
    on an element of the page still is."""
    html = ("<body class='menu-hidden'><p>Visible story text</p>"
            "<div class='hidden'><p>Folded away</p></div></body>")
    _, _, texts, x = features(html)
    assert texts == ["Visible story text", "Folded away"]
    assert col(x, "invisible") == [0, 1]


# ---------------------------------------------------------------- listings

def test_same_shaped_siblings_of_a_listing():
    """Five <li> with the class set {item, card} (in either order) and a sixth with {item}:
    each of the five has 4 siblings of the same tag and classes -> same_shape_siblings_log
    = log1p(4); the sixth has none -> 0. All six have 5 siblings of the same tag ->
    same_tag_siblings_log = log1p(5). The ul above has no sibling, so same_shape_max_log
    (owner and 3 ancestors) is the li's own value. A lone <p> after the list: 0."""
    items = "".join(f"<li class='{c}'><a href='/{i}'>Item {i}</a> $ {i}</li>"
                    for i, c in enumerate(["item card", "card item", "item card", "card  item",
                                           "item card", "item"]))
    html = f"<body><ul class='products'>{items}</ul><p>After the list</p></body>"
    _, _, texts, x = features(html)
    assert len(texts) == 7
    assert col(x, "same_shape_siblings_log") == pytest.approx(log1p([4] * 5 + [0, 0]))
    assert col(x, "same_shape_max_log") == pytest.approx(log1p([4] * 5 + [0, 0]))
    assert col(x, "same_tag_siblings_log") == pytest.approx(log1p([5] * 6 + [0]))


# ---------------------------------------------------------------- through SiteBlocks

def _site_page(n, article, extra=""):
    links = "".join(f"<li><a href='/p{k}.html'>Page {k}</a></li>" for k in (1, 2, 3))
    return (f"<html><head><title>Page {n}</title></head><body>"
            f"<ul class='menu'>{links}</ul>"
            f"<div class='story'><h1>Headline number {n}</h1><p>{article}</p></div>{extra}"
            "<div class='footer'>Copyright Example Corp all rights reserved</div>"
            "</body></html>")


ARTICLES = ["Quiet rivers carry silt toward the delta every spring.",
            "Mountain goats climb the cliffs at dawn to find salt.",
            "Old lighthouses guided ships past the rocky northern cape."]


def _site_records():
    extra = "<p>Latest: the harbour festival opens on Sunday</p>"
    htmls = [_site_page(1, ARTICLES[0], extra), _site_page(2, ARTICLES[1], extra),
             _site_page(3, ARTICLES[2])]
    return [build_page_record(url=f"http://site.test/p{k}.html", body=h.encode(), http_charset="utf-8",
                              warc_file="t.warc", warc_offset=k, warc_record_id=f"<r{k}>",
                              fetch_date="2024-01-01T00:00:00Z", content_type="text/html",
                              truncated=None)
            for k, h in enumerate(htmls, 1)]


def test_text_site_share_through_site_blocks():
    """Three pages of one site; key page p1. text_site_share = pages of the shard other
    than the key page showing the same block text / (3 - 1):
    footer "Copyright Example Corp ..." on all 3 pages -> 2/2 = 1.0; the menu items
    likewise 1.0; "Latest: the harbour festival ..." on p1 and p2 -> 1/2; p1's article
    paragraph and its headline on p1 only -> 0. SiteBlocks counts the shard's pages
    whatever the candidates, so this holds for any candidate selection; has_site = 1
    whenever a candidate was found (checked: TemEx ran)."""
    config = load_config(None)
    ordered, pages, links = site_context("site.test", _site_records(), config)
    site_blocks = SiteBlocks(pages)
    key = ordered[0]
    analysis = analyse_page(key, pages, links, config, site_blocks, model=None)
    assert analysis.candidate_method != "page_only" and analysis.template is not None
    texts = analysis.blocks.texts
    x = analysis.features
    share = dict(zip(texts, col(x, "text_site_share")))
    assert share["Copyright Example Corp all rights reserved"] == 1.0
    assert share["Page 1"] == share["Page 2"] == share["Page 3"] == 1.0
    assert share["Latest: the harbour festival opens on Sunday"] == 0.5
    assert share[ARTICLES[0]] == 0.0
    assert share["Headline number 1"] == 0.0
    assert col(x, "has_site") == [1.0] * len(texts)
    # text_on_candidates: the same text on the candidate pages, as a share of them.
    candidates = list(analysis.for_template.candidates)
    on = dict(zip(texts, col(x, "text_on_candidates")))
    footer_pages = len(candidates)
    assert footer_pages >= 1
    assert on["Copyright Example Corp all rights reserved"] == 1.0
    assert on[ARTICLES[0]] == 0.0


def test_site_counts_count_a_page_once_however_often_it_shows_a_text():
    """A text repeated inside one page is one page's worth in the per-site count: two
    pages each showing "Share this" three times -> counts 2, not 6."""
    html = "<body><p>Share this</p><p>Share this</p><p>Share this</p><p>Own {}</p></body>"
    pages = {f"http://s.test/{k}": parse_page(html.format(k), f"http://s.test/{k}") for k in (1, 2)}
    site_blocks = SiteBlocks(pages)
    keys, counts = site_blocks.site_counts()
    count_of = dict(zip(keys.tolist(), counts.tolist()))
    share_key = int(site_blocks.of("http://s.test/1").keys[0])
    assert count_of[share_key] == 2
    stub_template = SimpleNamespace(occurrences=np.zeros(pages["http://s.test/1"].size, dtype=np.int64))
    stub_selection = SimpleNamespace(candidates=("http://s.test/2",), method="cs", cs_size=2)
    signals = site_blocks.signals("http://s.test/1", stub_template, stub_selection)
    assert signals.text_site_share.tolist() == [1.0, 1.0, 1.0, 0.0]
    assert signals.text_on_candidates.tolist() == [1.0, 1.0, 1.0, 0.0]


def test_text_on_candidates_counts_each_candidate_page_once():
    """Key page k shows "Alpha", "Beta", "Gamma", "Delta". Candidates: c1 shows Alpha twice
    and Beta; c2 shows Alpha and Gamma; c3 shows none of them. So Alpha is on 2 of the 3
    candidates (c1's two copies count once) → 2/3, Beta 1/3, Gamma 1/3, Delta 0. Case and
    spacing are folded ("  BETA "). A fourth candidate whose blocks failed is left out of
    the count and of the divisor."""
    def html(*texts):
        return "<body>" + "".join(f"<p>{t}</p>" for t in texts) + "</body>"
    sources = {"k": html("Alpha", "Beta", "Gamma", "Delta"), "c1": html("Alpha", "alpha", "  BETA "),
               "c2": html("Gamma", "Alpha"), "c3": html("Epsilon")}
    pages = {f"http://s.test/{k}": parse_page(v, f"http://s.test/{k}") for k, v in sources.items()}
    site_blocks = SiteBlocks(pages)
    site_blocks._failed["http://s.test/bad"] = ValueError("its own row says so")
    stub_template = SimpleNamespace(occurrences=np.zeros(pages["http://s.test/k"].size, dtype=np.int64))
    stub_selection = SimpleNamespace(candidates=("http://s.test/c1", "http://s.test/c2", "http://s.test/c3",
                                                 "http://s.test/bad"), method="cs", cs_size=3)
    signals = site_blocks.signals("http://s.test/k", stub_template, stub_selection)
    assert signals.text_on_candidates.tolist() == [2 / 3, 1 / 3, 1 / 3, 0.0]
    none = SimpleNamespace(candidates=(), method="cs", cs_size=0)
    assert site_blocks.signals("http://s.test/k", stub_template, none).text_on_candidates.tolist() == [0.0] * 4


def test_the_match_start_filter_keeps_every_pattern_match():
    """_ANY_PATTERN's leading lookahead only skips positions where no _TEXT_PATTERNS
    alternative can start, so it finds exactly the (start, pattern) hits of the plain
    alternation. Seeded fuzz over texts built from every literal of the patterns (each
    alternative's spelling, at a word start, inside a word, after spaces at a line start)
    and random letters: a prefix missing from the filter loses that literal's hits."""
    import random
    import re

    from sitestrip.transforms.features import _ALTERNATION, _ANY_PATTERN
    plain = re.compile(_ALTERNATION)
    literals = ["rights reserved", "copyright", "©", "like", "follow", "share", "tweet", "facebook",
                "pinterest", "email this", "comment", "comments", "reply", "replies", "read more",
                "continue reading", "more", "»", "›", "advertising", "sponsored", "promoted",
                "subscribe", "sign up", "newsletter", "login", "log in", "sign in", "cookie",
                "by", "posted", "published", "updated"]
    rng = random.Random(12)
    for _ in range(300):
        parts = []
        for _ in range(rng.randint(1, 30)):
            roll = rng.random()
            if roll < 0.5:
                parts.append(rng.choice(literals))
            elif roll < 0.8:
                parts.append("".join(rng.choice("abcdeilmnoprstuy") for _ in range(rng.randint(1, 6))))
            else:
                parts.append(rng.choice(["\n", "\n  ", "\t", ",", "x"]))
        text = "".join(p + rng.choice(["", " ", " ", "\n"]) for p in parts)
        expected = [(m.start(), m.lastgroup) for m in plain.finditer(text)]
        assert [(m.start(), m.lastgroup) for m in _ANY_PATTERN.finditer(text)] == expected
    assert [m.lastgroup for m in _ANY_PATTERN.finditer("  by the editor\ncopyright ©")] == \
        ["byline", "rights", "rights"]


def test_character_columns_count_digits_and_punctuation_of_any_script():
    """Two block texts, derived by hand:
    "a1 ٣²," — 6 characters, words "a1" and "٣²,"; str.isdigit holds for "1", the
    Arabic-Indic three and the superscript two → digit_share 3/6; one comma → punct and
    commas per word 1/2; no sentence end.
    "End！ ok。" — 8 characters, 2 words, no digit; the fullwidth "！" and "。" are
    punctuation (2/2 per word) and both end a sentence: "！" before a space, "。" at the
    end of the text."""
    from sitestrip.transforms.features import _COLUMN, _text_columns
    x = np.zeros((2, len(FEATURE_NAMES)))
    _text_columns(["a1 ٣²,", "End！ ok。"], x)
    col = lambda name: x[:, _COLUMN[name]].tolist()
    assert col("digit_share") == [0.5, 0.0]
    assert col("punct_per_word") == [0.5, 1.0]
    assert col("commas_per_word") == [0.5, 0.0]
    assert col("sentences") == [0.0, 2.0]


def test_conex_ratios_are_read_from_page_conex_when_it_computed_them(monkeypatch):
    """Page ConEx computes the four content ratios of every node (word, hyperlink, children,
    position: functions of the page alone) on its way to the main content; the block
    features read the same ratios, standardized over another rated set. Given ConEx's, they
    are not computed again, and the feature matrix is the same bit for bit. A page ConEx
    decides without them (one BODY child per level: not a wide page here, so it computes
    them; a one-node page: it returns None)."""
    from sitestrip.transforms import conex_page
    html = ("<body><div><h1>Title of the page</h1><p>First paragraph, with some words in it.</p>"
            "<ul><li><a href='/a'>A</a></li><li><a href='/b'>B</a></li><li><a href='/c'>C</a></li></ul>"
            "<p>Second paragraph, a few more words here.</p></div><div>footer text</div></body>")
    page = parse_page(html, "http://ex.com/")
    blocks = page_blocks(page)
    texts = block_texts(page, blocks)
    main, ratios = conex_page.main_content_and_features(page)
    assert ratios is not None and np.array_equal(main, conex_page.main_content(page))
    calls = []
    real = conex_page.word_ratio
    monkeypatch.setattr(conex_page, "word_ratio", lambda p: calls.append(1) or real(p))
    alone = block_features(page, blocks, texts, conex_main=main, menu_node=None, site=None)
    assert len(calls) == 1
    shared = block_features(page, blocks, texts, conex_main=main, menu_node=None, site=None,
                            conex_features=ratios)
    assert len(calls) == 1
    assert alone.dtype == shared.dtype == np.float32 and np.array_equal(alone, shared, equal_nan=True)
    assert conex_page.main_content_and_features(parse_page("", "http://ex.com/"))[1] is None


# Page (r): block roles. Blocks in order:
#  0 "Site"            in <header>
#  1 "By Jane Roe"     byline line, in <article>
#  2 "May 5, 2024"     a <time> inside the p: dateline, contains_time
#  3 "Photo: Getty"    figcaption inside figure: credit
#  4 "Story text ..."  plain paragraph
#  5 "Read more: x"    promo line
#  6 "quoted"          in <blockquote>
#  7 "BREAKING NEWS"   all capitals
PAGE_R = ("<body><header><p>Site</p></header><article><p>By Jane Roe</p><p><time>May 5, 2024</time></p>"
          "<figure><img src='a.jpg'><figcaption>Photo: Getty Images</figcaption></figure>"
          "<p>Story text that says something, with a comma.</p><p>Read more: other story</p>"
          "<blockquote><p>quoted</p></blockquote><p>BREAKING NEWS</p></article></body>")


def test_block_roles_from_context_elements_and_line_cues():
    page, blocks, texts, x = features(PAGE_R)
    assert texts[0] == "Site" and texts[4].startswith("Story") and texts[7] == "BREAKING NEWS"
    assert col(x, "in_header") == [1, 0, 0, 0, 0, 0, 0, 0]
    assert col(x, "in_article") == [0, 1, 1, 1, 1, 1, 1, 1]
    assert col(x, "in_figure") == [0, 0, 0, 1, 0, 0, 0, 0]
    assert col(x, "in_figcaption") == [0, 0, 0, 1, 0, 0, 0, 0]
    assert col(x, "in_blockquote") == [0, 0, 0, 0, 0, 0, 1, 0]
    assert col(x, "contains_time") == [0, 0, 1, 0, 0, 0, 0, 0]
    assert col(x, "role_byline") == [0, 1, 0, 0, 0, 0, 0, 0]
    assert col(x, "role_dateline") == [0, 0, 1, 0, 0, 0, 0, 0]
    assert col(x, "role_credit") == [0, 0, 0, 1, 0, 0, 0, 0]
    assert col(x, "role_promo") == [0, 0, 0, 0, 0, 1, 0, 0]
    # Capitals among ASCII letters: "BREAKING NEWS" 12 of 12, "Site" 1 of 4.
    assert col(x, "caps_share")[7] == 1.0
    assert col(x, "caps_share")[0] == pytest.approx(0.25)
    assert col(x, "short_line") == [1] * 8
    # The page type columns wait for the page type model.
    assert all(math.isnan(v) for v in col(x, "page_type_article"))


def test_role_cues_need_the_line_start():
    """A sentence that mentions a photo or reading more is no credit or promo line."""
    _, _, texts, x = features("<body><p>We took a photo: it shows the river.</p>"
                              "<p>You can read more about it later.</p></body>")
    assert col(x, "role_credit") == [0, 0] and col(x, "role_promo") == [0, 0]


def test_hidden_element_is_what_the_markup_hides_not_a_class_word():
    """Blocks: 0 under hidden, 1 under aria-hidden, 2 under an inline display:none, 3 under a
    screen-reader-only class (the `hidden` hint, whose CSS the page model does not read: it
    counts for `invisible`, not for `hidden_element`), 4 plain. A display:none on BODY (an
    anti-flicker style a script lifts) hides nothing."""
    _, _, texts, x = features("<body style='display:none'><div hidden><p>a</p></div>"
                              "<div aria-hidden='true'><p>b</p></div><h2 style='display: none'>c</h2>"
                              "<div class='visually-hidden'><p>d</p></div><p>e</p></body>")
    assert texts == ["a", "b", "c", "d", "e"]
    assert col(x, "hidden_element") == [1, 1, 1, 0, 0]
    assert col(x, "hidden_words_log") == pytest.approx([math.log1p(1)] * 3 + [0, 0])
    assert col(x, "invisible") == [1, 1, 1, 1, 0]
