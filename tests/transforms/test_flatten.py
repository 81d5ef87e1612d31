"""Parse flattening compiled (transforms/_flatten.c) against its reference, page._flatten.

The compiled walk must give the reference's CompactPage field for field on every tree:
generated HTML under the three kinds of ParseRules, trees lxml's parser keeps comments and
processing instructions in, and trees built by hand with the node kinds parsing never makes.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from sitestrip.transforms import meta as M
from sitestrip.transforms import page as P
from sitestrip.transforms.tokens import count_words
from sitestrip.transforms.meta import REL_NOFOLLOW, REL_SPONSORED, REL_UGC
from sitestrip.transforms.page import (F_IN_LINK, F_LINK, F_PRE, F_SPACE_BEFORE, PRODUCT_RULES, SPEC_RULES,
                                       TAG_ID, TEXT, ParseRules, parse_page, parse_tree)
from helpers.compiled import require_built

P_REL = {"nofollow": REL_NOFOLLOW, "ugc": REL_UGC, "sponsored": REL_SPONSORED}

URL = "http://ex.com/dir/page.html"
MIXED_RULES = ParseRules(keep_noscript=False, widget_leaves=True, browser_text=True)
ALL_RULES = [PRODUCT_RULES, SPEC_RULES, MIXED_RULES, ParseRules(widget_leaves=False)]


@pytest.fixture(autouse=True)
def built():
    """Every test here compares transforms/_flatten.c with its reference (or calls it directly)."""
    require_built("_flatten")


def both(body, rules=PRODUCT_RULES, url=URL):
    """(reference page, compiled page or None) of one tree."""
    ref = P._flatten(body, url, "T", url, 123, ("note",), rules)
    return ref, P._flatten_compiled(body, url, "T", url, 123, ("note",), rules)


def assert_same(body, rules=PRODUCT_RULES, url=URL):
    ref, got = both(body, rules, url)
    assert got is not None, "the compiled walk left a parsed tree to the reference"
    assert ref.differing_fields(got) == []
    return got


def assert_same_parse(html, rules=PRODUCT_RULES, url=URL):
    """parse_page both ways (title, base URL and metadata included): the reference flattening
    and node_extras of lxml's elements, and meta's reference reading of the declared metadata."""
    ref = parse_both_ways(html, False, rules, url)
    got = parse_both_ways(html, True, rules, url)
    assert ref.differing_fields(got) == []
    return got


def parse_both_ways(html, compiled, rules=PRODUCT_RULES, url=URL):
    """parse_page with the compiled passes (page.py's and meta.py's switch) on or off."""
    saved = P._COMPILED, M._COMPILED
    try:
        P._COMPILED = M._COMPILED = compiled
        return parse_page(html, url, rules=rules)
    finally:
        P._COMPILED, M._COMPILED = saved


def test_the_compiled_flattening_is_built_and_used_by_default(monkeypatch):
    """`pip install` builds transforms/_flatten.c; without it every page would silently take
    the slower reference. With the reference made to fail, parse_page still flattens.
    By hand: body(0) p(1) "Hi"(2) a(3) "there"(4) "!"(5). "Hi " ends in whitespace, so
    "there" has F_SPACE_BEFORE (and F_IN_LINK); "!" follows "</a>" directly and is not a
    letter or digit, so it has none. Lines: body and p are blocks (+1 at each start), the
    texts share p's line 2. Text is "Hi" + "there" + "!"."""
    assert P._compiled is not None, "sitestrip.transforms._flatten is not built: reinstall with pip"
    assert P._COMPILED

    def no_reference(*args, **kwargs):
        raise AssertionError("the reference ran")

    monkeypatch.setattr(P, "_flatten", no_reference)
    page = parse_page('<body><p class="x">Hi <a href="/a">there</a>!</p></body>', "http://ex.com/")
    assert page.tag.tolist() == [TAG_ID["body"], TAG_ID["p"], TEXT, TAG_ID["a"], TEXT, TEXT]
    assert page.parent.tolist() == [-1, 0, 1, 1, 3, 1]
    assert page.end.tolist() == [6, 6, 3, 5, 5, 6]
    assert page.flags.tolist() == [0, 0, 0, F_LINK, F_SPACE_BEFORE | F_IN_LINK, 0]
    assert page.line.tolist() == [1, 2, 2, 2, 2, 2]
    assert page.text == "Hithere!" and page.text_ptr.tolist() == [0, 0, 0, 2, 2, 7, 8]
    assert page.words.tolist() == [0, 0, 1, 0, 1, 0]
    assert page.link_url == ("http://ex.com/a",) and page.link_node.tolist() == [3]
    assert page.class_ptr.tolist() == [0, 0, 1, 1, 1, 1, 1]


# --- words: tokens.py's pattern, counted in C ---

def test_compiled_word_count_by_hand():
    """"か\u3099" is a kana with its (decomposed) voicing mark: one token; "x" after it starts
    another (a mark continues a token, a letter after a CJK character does not); 中 and 文
    are one each; "a\u0301b" is one (the mark continues it); "_" is no letter, so "c" is
    one; the katakana middle dot is none; "٣²" (digits of other scripts) is one: 7."""
    text = "か\u3099x中文a\u0301b_c ・ ٣²"
    assert P._compiled.count_words(text) == count_words(text) == 7


_WORD_CHARS = st.sampled_from(["a", "Z", "7", " ", "_", "-", "\u0301", "\u0e34", "\u3099", "か", "中", "・",
                               "\u30fb", "한", "\U00020000", "٣", "²", "Ⅻ", "é", "ß", "\u00a0", "\u200d", "ǅ"])


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30),
                 st.lists(_WORD_CHARS, max_size=30).map("".join)))
def test_compiled_word_count_is_count_words(text):
    assert P._compiled.count_words(text) == count_words(text)


# --- quirks, with values derived by hand ---

def test_a_comments_tail_is_nobodys_text():
    """iterwalk yields the comment and _flatten skips it, end event included, so the text
    after a comment is no node: <p>a<!--c-->b<i>i</i>c</p> gives p, "a", i, "i", "c".
    (parse_tree's parser removes comments; this tree comes from one that keeps them.)"""
    root = etree.fromstring("<html><body><p>a<!--c-->b<?pi x?>d<i>i</i>c</p></body></html>",
                            etree.HTMLParser())
    body = root.find("body")
    page = assert_same(body)
    assert [page.node_text(i) for i in range(page.size) if page.tag[i] == TEXT] == ["a", "i", "c"]


def test_adjacent_text_nodes_join_as_lxml_joins_them():
    """Stripping a comment but not its tail leaves the tail's text node next to the text
    before it: two libxml2 text nodes that lxml's .text reads as one string, "a b", one node."""
    root = etree.fromstring("<html><body><p>a<!--c--> b</p></body></html>", etree.HTMLParser())
    p = root.find("body/p")
    etree.strip_elements(p, etree.Comment, with_tail=False)
    assert p.text == "a b" and len(p) == 0
    page = assert_same(root.find("body"))
    assert page.size == 3 and page.node_text(2) == "a b"


def test_cdata_text_and_mixed_case_and_namespaced_tags():
    """A CDATA node is text to lxml. Tags are lower-cased before lookup ("DIV" is div, a
    block); a namespaced tag is "{ns}x", an unknown tag, and a namespaced attribute hashes as
    "{ns}a=v"."""
    body = etree.Element("body")
    div = etree.SubElement(body, "DIV", {"Class": "K", "{http://n.example/}a": "v"})
    div.text = etree.CDATA(" x ")
    ns = etree.SubElement(body, "{http://n.example/}x")
    ns.text = "y"
    page = assert_same(body)
    assert page.tag[1] == TAG_ID["div"] and page.line.tolist()[:2] == [1, 2]
    assert page.tag[3] == P.tag_id("{http://n.example/}x")
    # "Class" is not "class": it is an attribute hash, like the namespaced one, in order
    assert page.attr_hash.tolist() == [P._hash32("Class=K"), P._hash32("{http://n.example/}a=v")]


def test_entity_references_are_left_to_the_reference():
    """An entity reference node (parsing makes none) is not read here: the compiled walk
    returns None and parse_page's caller runs the reference."""
    body = etree.Element("body")
    p = etree.SubElement(body, "p")
    p.text = "a"
    p.append(etree.Entity("amp"))
    ref, got = both(body)
    assert got is None and ref.size == 3


def test_pre_text_is_verbatim_and_its_edges_trimmed():
    """Inside <pre> the first text loses its first line break ("\\n  x" -> "  x"), whitespace-only
    texts (b's tail "\\n", i's text " ") wait and join the next text ("\\n" + " " + "  y\\n"),
    and </pre> trims the last text ("\\n   y\\n" -> "\\n   y"); words and chars count the
    collapsed text."""
    page = assert_same_parse("<body><pre>\n  x<b>b</b>\n<i> </i>  y\n</pre>z</body>")
    texts = [(page.node_text(i), int(page.flags[i]) & F_PRE, int(page.chars[i]))
             for i in range(page.size) if page.tag[i] == TEXT]
    assert texts == [("  x", F_PRE, 1), ("b", F_PRE, 1), ("\n   y", F_PRE, 1), ("z", 0, 1)]


def test_unicode_whitespace_letters_and_digits():
    """\\u3000 and \\u00a0 are whitespace to str.split (collapsed away, and they set
    F_SPACE_BEFORE); "٣" (Arabic-Indic three) is a digit to isalnum, so "x</b><b>٣" is set
    apart; "中文" is two tokens and "é" one (count_words' full pattern)."""
    page = assert_same_parse("<body><p><b>x</b><b>٣</b>\u3000中文\u00a0é</p></body>")
    texts = [(page.node_text(i), int(page.flags[i]), int(page.words[i]))
             for i in range(page.size) if page.tag[i] == TEXT]
    assert texts == [("x", 0, 1), ("٣", F_SPACE_BEFORE, 1), ("中文 é", F_SPACE_BEFORE, 3)]


def test_dropped_and_leaf_elements_and_the_body_tail():
    """A dropped element's tail stays, and a dropped element neither opens nor closes one for
    F_SPACE_BEFORE ("a" then "b" run together); a leaf (img) opens and closes one between
    the word "b" and the word "c", so "c" is set apart; svg's inside is skipped; the body's
    tail is nobody's."""
    root = etree.fromstring("<html><body><p>a<script>s</script>b<img>c<svg><g>t</g></svg></p></body>"
                            "</html>", etree.HTMLParser())
    body = root.find("body")
    body.tail = "after"
    page = assert_same(body)
    texts = [(page.node_text(i), int(page.flags[i])) for i in range(page.size) if page.tag[i] == TEXT]
    assert texts == [("a", 0), ("b", 0), ("c", F_SPACE_BEFORE)]


def test_deep_pages():
    """The parser caps nesting (2048 levels with huge_tree); a tree built by hand does not:
    10,000 levels, far past any recursion limit, flatten the same."""
    depth = 5000
    assert_same_parse("<body>" + "<div>x <a href=y>" * depth + "</a></div>" * depth + "</body>")
    body = node = etree.Element("body")
    for k in range(10_000):
        node = etree.SubElement(node, "pre" if k % 7 == 0 else "div")
        node.text, node.tail = f" level {k}\n", "\n"
    page = assert_same(body)
    assert int(page.depth.max()) == 10_001


# --- generated HTML ---

_TAGS = ["div", "p", "span", "a", "b", "pre", "li", "ul", "br", "hr", "nav", "section", "td",
         "x-card", "fb:like", "MyTag", "DIV", "Pre", "textarea", "listing", "select", "option",
         "script", "style", "noscript", "template", "title", "head", "meta", "img", "svg",
         "iframe", "video", "picture", "canvas", "math", "object", "code", "h2", "table", "tr",
         "a", "sup", "sub", "dt", "caption", "H3", "button", "area", "map", "AREA"]
_WORDS = ["nav", "menu-top", "mainNav", "comment-list", "ad-slot", "post_content", "sidebar",
          "x", "card123", "Navigation", "footer", "language-python", "highlight-js", "headerlink",
          "sr-only", "d-none", "d-md-block", "hidden-xs"]
_ATTR = st.one_of(
    st.tuples(st.just("class"), st.lists(st.sampled_from(_WORDS), max_size=14).map(" ".join)),
    st.tuples(st.just("id"), st.sampled_from(_WORDS + ["", " ", "a1234"])),
    st.tuples(st.just("style"), st.sampled_from(["display:none", "Visibility : HIDDEN", "color:red",
                                                 "diſplay:none"])),
    st.tuples(st.just("role"), st.sampled_from(["navigation", " Navigation ", "nav", "main"])),
    st.tuples(st.sampled_from(["hidden", "aria-hidden"]), st.sampled_from(["", "true", " TRUE ", "false"])),
    st.tuples(st.sampled_from(["href", "src", "srcset", "alt", "data-src", "width", "HREF"]),
              st.sampled_from(["/a", "b.png", "http://other.example/x?y=1#z", "javascript:void(0)", "#",
                               "", " //cdn.example/i.jpg 2x", "1", "mailto:x@y", "../up", "é ü",
                               "#intro", "api.html#x y", "#ü("])),
    st.tuples(st.sampled_from(["data-x", "title", "lang"]), st.text(max_size=5)),
    st.tuples(st.sampled_from(["rel", "REL"]), st.sampled_from(["nofollow", "UGC sponsored", "noopener", "",
                                                                 " nofollow\tugc "])),
)
_TEXT = st.lists(st.sampled_from(
    list("ab Z09 \n\t.,!¶§#") + ["\u00a0", "\u2003", "\u3000", "\u200b", "\x1c", "\x85", "é", "ß", "Ж",
                              "🔗", "Permalink",
                             "中", "日本", "٣", "²", "\u0301", "&amp;", "&nbsp;", "&#x2003;", "&lt;",
                             "<!-- c -->", "<?pi x?>", "<![CDATA[z]]>", "<br>", "</p>", "]]>"]),
    max_size=8).map("".join)


def _element(children):
    def build(tag, attrs, kids, close):
        attr_text = "".join(f' {k}="{v}"' for k, v in attrs)
        return f"<{tag}{attr_text}>" + "".join(kids) + (f"</{tag}>" if close else "")
    return st.builds(build, st.sampled_from(_TAGS), st.lists(_ATTR, max_size=4), children, st.booleans())


_HTML = st.recursive(_TEXT, lambda kids: _element(st.lists(kids, max_size=5)), max_leaves=40)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(_HTML, max_size=4).map("".join), st.sampled_from(ALL_RULES), st.booleans())
def test_generated_pages_flatten_the_same(html, rules, wrapped):
    html = f"<html><head><title>t</title><base href='/base/'></head><body>{html}</body></html>" \
        if wrapped else html
    assert_same_parse(html, rules)
    # the same HTML with its comments and processing instructions kept in the tree
    root = etree.fromstring(html.encode("utf-8", "replace"), etree.HTMLParser(remove_comments=False))
    body = None if root is None else (root if root.tag == "body" else root.find("body"))
    if body is not None:
        assert_same(body, rules)


@pytest.mark.parametrize("rules", [PRODUCT_RULES, SPEC_RULES, MIXED_RULES])
def test_the_soup_of_test_page_flattens_the_same(rules):
    """Every token of tests/transforms/test_page.py's tag soup, alone and all together."""
    from test_page import _SOUP

    for token in _SOUP:
        assert_same_parse(f"x{token}y", rules)
    assert_same_parse("".join(_SOUP), rules)


# --- what the links dataset reads (meta.NodeExtras: areas, rel flags, the alt of links without text) ---

LINKS_HTML = """<html><head><base href="http://ex.com/base/"></head><body>
<nav><a href="/a" rel="nofollow UGC">A</a> <a href="b#top" rel="noopener"><img src="/i.png" alt=" Logo  image "></a></nav>
<map name="m"><area href="/area#x" alt="Area one" rel="sponsored"><area nohref alt="none">
<area href="mailto:x@y" alt="mail"><area href="/bare"></map>
<p>Text <a href="javascript:void(0)" rel="nofollow">js</a> <a href="http://o.org/" rel="ugc">o</a>
<a href="/c"><picture><img alt="pic"></picture></a> <a href="/d"><img alt="icon"> and text</a>
<a href="/e"><img src="/pixel.gif" width="1" alt="tracked"></a></p></body></html>"""


@pytest.mark.parametrize("compiled", [False, True])
def test_link_extras_by_hand(compiled):
    """By hand: body(0) nav(1) a(2) "A"(3) a(4) img(5) map(6) area(7) area(8) area(9) area(10)
    p(11) "Text"(12) a(13) "js"(14) a(15) "o"(16) a(17) picture(18) a(19) img(20) "and
    text"(21) a(22) img(23). The <a> links with an http(s) target are 2, 4, 15, 17, 19, 22
    (13 is javascript:); rel flags: 2 nofollow|ugc (case does not matter), 15 ugc, and the
    area 7 sponsored ("noopener" is no flag; 13 is no link). Areas with an http(s) href: 7
    and 10 (8 has none, 9 is mailto:), 7 with its fragment "x", resolved against <base>. The
    alt of links without text: 4's image (whitespace collapsed), 17's picture's image, 22's
    1x1 pixel too (it is no Markdown image, but it is what the link shows), the area 7's own;
    19 has text, so its icon's alt is not its anchor; the area 10 has no alt."""
    page = parse_both_ways(LINKS_HTML, compiled, url="http://ex.com/dir/page.html")
    side = page.side
    assert page.link_node.tolist() == [2, 4, 15, 17, 19, 22]
    assert page.link_url[:2] == ("http://ex.com/a", "http://ex.com/base/b")
    assert side.area_node.tolist() == [7, 10]
    assert side.area_url == ("http://ex.com/area", "http://ex.com/bare") and side.area_fragment == ("x", "")
    assert side.rel_node.tolist() == [2, 7, 15] and side.rel == (P_REL["nofollow"] | P_REL["ugc"],
                                                                 P_REL["sponsored"], P_REL["ugc"])
    assert side.alt_node.tolist() == [4, 7, 17, 22]
    assert side.alt == ("Logo image", "Area one", "pic", "tracked")
    assert side.fragment_node.tolist() == [4] and side.fragment == ("top",)
    # the algorithms' links are the <a> links as before: no area is an F_LINK node
    assert not (page.flags[side.area_node] & F_LINK).any()


def test_link_extras_flatten_the_same():
    assert_same_parse(LINKS_HTML)
    for rules in ALL_RULES:
        assert_same_parse(LINKS_HTML, rules)
    # Nested links (libxml2 keeps an <a> inside an open <a>): body(0) a(1) "x"(2) div(3) a(4)
    # img(5) img(6) a(7) span(8) img(9) img(10). The image after the inner link 4 belongs to
    # the outer link 1, which has text; link 7 shows its first image with an alt.
    got = assert_same_parse('<body><a href="/o">x<div><a href="/i"><img alt="in"></a><img alt="out"></div></a>'
                            '<a href="/p"><span><img alt=""><img alt="second"></span></a></body>')
    assert got.side.alt_node.tolist() == [4, 7] and got.side.alt == ("in", "second")


def test_link_extras_survive_the_shuffle_and_the_state():
    """A pickled page (Beam's coder) and a stored one (transforms/state.py) keep them; a page
    without any packs its side as before they were kept (b"")."""
    import pickle

    from sitestrip.transforms.state import page_columns, page_from_columns
    page = parse_page(LINKS_HTML, "http://ex.com/dir/page.html")
    back = pickle.loads(pickle.dumps(page))
    assert back.side == page.side and back.side.alt == page.side.alt and back.side.area_url == page.side.area_url
    stored = page_from_columns(*page_columns(page), "test")
    assert stored.side == page.side and stored.side.rel == page.side.rel
    assert parse_page("<body><p>no links</p></body>", "http://ex.com/").side.packed() == b""


# --- class and id hints answered in the walk ---

def _crc(s):
    import zlib
    return zlib.crc32(s.encode())


def test_class_and_id_hints_by_hand():
    """The walk's own _class_info and _id_info, derived by hand. "nav-bar main": nav-bar's
    parts are nav, bar: the part "nav" gives F_NAV_HINT and F_NAV_WORD and the nav role, and
    "main" the main role; hashes sorted. "MainNav" as an id: parts main, nav (nav word, nav and
    main roles, "nav" in the lower-cased value); "x123 " is stripped, a run of 3 digits is
    F_VOLATILE_ID. A class list with a hiding word ("sr-only") has the hidden role unless a
    token shows the element at some screen size (the responsive exception); a value that is
    not ASCII is answered by Python."""
    C = P._compiled
    got = C.class_info("nav-bar  main\t")
    assert got == (tuple(sorted({_crc("nav-bar"), _crc("main")})), P.F_NAV_HINT | P.F_NAV_WORD,
                   P.HINT_BIT["nav"] | P.HINT_BIT["main"])
    assert C.class_info("nav-bar main") == got        # answered again, from the cache
    assert C.class_info("") == ((), 0, 0) and C.class_info(" \x1c ") == ((), 0, 0)
    assert C.class_info("a a") == ((_crc("a"),), 0, 0)
    assert C.class_info("Nav") == ((_crc("Nav"),), P.F_NAV_EXACT | P.F_NAV_HINT | P.F_NAV_WORD, P.HINT_BIT["nav"])
    assert C.class_info("x_ad") == ((_crc("x_ad"),), 0, P.HINT_BIT["ad"])
    assert C.class_info("x_ad_y") == ((_crc("x_ad_y"),), 0, 0)    # "_ad" then a word character
    assert C.class_info("loads") == ((_crc("loads"),), 0, 0) and C.class_info("my-ads")[2] == P.HINT_BIT["ad"]
    hidden = P.HINT_BIT["hidden"]
    assert C.class_info("sr-only")[2] == hidden and C.class_info("menü") is None
    for shown in ("d-none d-md-block", "hidden MD:Flex", "hidden-xs visible-lg", "hide show-for-medium-up",
                  "d-none d-xxl-inline-block", "sr-only sm:not-sr-only", "hidden visible-xs--"):
        assert C.class_info(shown)[2] & hidden == 0, shown
    for still in ("d-none d-md-none", "d-none d-md-", "hidden md:hidden", "hidden visible-xs-", "hidden visible-xxs",
                  "hidden show-for-tiny", "d-none d-md-Block1"):
        assert C.class_info(still)[2] & hidden, still
    for value in ("sr-only", "d-none d-md-block", "d-none d-md-none", "hidden visible-xs-"):
        assert C.class_info(value) == P._class_info(value)
    assert C.id_info("MainNav") == (_crc("MainNav"), P.F_NAV_HINT | P.F_NAV_WORD,
                                    P.HINT_BIT["nav"] | P.HINT_BIT["main"])
    assert C.id_info(" x123 ") == (_crc("x123"), P.F_VOLATILE_ID, 0)
    assert C.id_info(" \t") == (0, 0, 0)
    assert C.id_info("sr-only") == (_crc("sr-only"), 0, P.HINT_BIT["hidden"])
    assert C.id_info("ñav") is None


def test_a_class_list_of_more_than_twelve_tokens_has_no_roles():
    value = " ".join(["sidebar"] * 12 + ["nav"])
    assert P._compiled.class_info(value) == P._class_info(value)
    assert P._compiled.class_info(value)[1:] == (P.F_NAV_EXACT | P.F_NAV_HINT | P.F_NAV_WORD, 0)


_HINT_TABLE_WORDS = sorted(set(P._HINT_EXACT) | {p for p, _ in P._HINT_PREFIX} | P._HIDE_PARTS | P._HIDE_QUALIFIERS
                           | P._SCREEN_READER_PARTS | set(P._SCREEN_READER_RUNS)
                           | {"ad", "adv", "ads", "advert", "adblock", "adbox", "print", "only", "visible", "show",
                              "printonly", "d", "none", "display", "x", "1", "123", "Nav", "MENU", "NavBar",
                              "XMLHttp", "comment", "disqus", "md", "block", "d-md-block", "md:flex", "2xl:grid",
                              "visible-lg", "show-for-", "xlarge", "d-xxl-", "not-sr-only", "inline-block", "xs"})
_HINT_VALUE = st.lists(st.one_of(st.sampled_from(_HINT_TABLE_WORDS),
                                 st.sampled_from(["-", "_", " ", ":", "\t", "\x1c", ".", "1", "A", "Q", "é", "\x85"])),
                       max_size=8).map("".join)


@settings(max_examples=1000, deadline=None)
@given(_HINT_VALUE, st.booleans(), st.integers(1, 14))
def test_class_and_id_hints_are_the_references(value, upper, repeat):
    """On values built from the hint tables' own words, separators, capitals and characters
    that are not ASCII: the walk's answer, where it gives one, is _class_info's and _id_info's;
    it answers every ASCII value."""
    if upper:
        value = value.title()
    value = " ".join([value] * repeat) if repeat > 1 else value
    C = P._compiled
    for _ in range(2):           # computed, then from the cache
        got, ref = C.class_info(value), P._class_info(value)
        if value.isascii():
            assert got == ref
        else:
            assert got is None or got == ref
        got_id = C.id_info(value)
        assert got_id == P._id_info(value) if value.isascii() else got_id is None


def test_absolute_links_are_the_same_on_every_page_and_relative_ones_follow_the_base():
    """The walk keeps resolve_link's answer for an href beginning "http://" or "https://"
    across pages; a relative href is resolved against each page's own base."""
    html = '<body><a href="http://Other.org/a/../b">x</a><a href="c">y</a><a href="https://o.org:443">z</a></body>'
    first = assert_same_parse(html, url="http://ex.com/dir/page.html")
    second = assert_same_parse(html, url="https://ex.net/")
    assert first.link_url == ("http://other.org/b", "http://ex.com/dir/c", "https://o.org/")
    assert second.link_url == ("http://other.org/b", "https://ex.net/c", "https://o.org/")
    assert first.link_node.tolist() == second.link_node.tolist() == [1, 3, 5]


def test_hidden_style_by_hand():
    C = P._compiled
    assert C.hidden_style("color:red; DISPLAY :\t none !important") is True
    assert C.hidden_style("visibility:\x1chidden") is True           # \x1c is whitespace to Python's \s
    assert C.hidden_style("display: block; visibility: visible") is False
    assert C.hidden_style("display-none") is False and C.hidden_style("displaynone") is False
    assert C.hidden_style("diſplay:none") is None                      # not ASCII: Python's case folding


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["display", "DisPlay", "visibility", "VISIBILITY", "none", "NONE", "hidden", "Hidden",
                                 ":", " ", "\t", "\x1c", "\x0b", ";", "d", "v", "x", "ſ", "\u00a0"]),
                max_size=8).map("".join))
def test_hidden_style_is_the_pattern(value):
    got = P._compiled.hidden_style(value)
    if value.isascii():
        assert got is bool(P._HIDDEN_STYLE.search(value))
    else:
        assert got is None


@pytest.mark.parametrize("attrs, hidden", [
    ('style="Display: NONE"', True), ('style="display:block"', False), ('aria-hidden=" TRUE\t"', True),
    ('aria-hidden="false"', False), ('role=" NAVIGATION "', False), ('role="navigationx"', False),
    ('style="diſplay:none"', True),
])
def test_hiding_attributes_flatten_the_same(attrs, hidden):
    """The walk's own tests of style, aria-hidden and role give the reference's flags."""
    page = assert_same_parse(f"<body><div {attrs}>x</div></body>")
    assert bool(page.flags[1] & P.F_HIDDEN) is hidden


def test_node_count_by_hand_and_the_cap():
    """body, p, "a", the comment, the PI, "b", br, "t": 8 nodes, as XPath counts them; the count
    stops once past the limit. parse_page's cap gives the same verdict and message either way."""
    root = etree.fromstring("<body><p>a<!-- c --><?pi x?></p>b<br/>t</body>",
                            etree.HTMLParser(remove_comments=False, remove_pis=False))
    body = root.find("body")
    assert P._compiled.count_nodes(body, 100) == 8 == int(body.xpath("count(descendant-or-self::node())"))
    assert P._compiled.count_nodes(body, 3) == 4
    html = "<body><p>a</p>b</body>"                  # body, p, "a", "b"
    saved = P._COMPILED
    try:
        for compiled in (True, False):
            P._COMPILED = compiled
            assert parse_page(html, URL, max_nodes=4).size == 4
            with pytest.raises(P.TooManyNodes, match="^4 parsed nodes, more than read.max_nodes = 3$"):
                parse_page(html, URL, max_nodes=3)
    finally:
        P._COMPILED = saved


@pytest.mark.parametrize("text", [
    "two  words", "\u00a0snake_case\u00a0x2 ", "a\u2003b\u3000c", "caf\u00e9 au lait", "\u00a0\u2003",
    "x\u0301y z", "\u4e2d\u6587 and 42", "\u0085 next\u2028line", "__ -- 9_9",
])
def test_text_words_and_characters_are_the_references(text):
    """Collapsing and counting a text node's words in one pass gives the reference's text,
    words and characters: ASCII words where whitespace outside ASCII separates them, and the
    full token pattern once a kept character is not ASCII."""
    page = assert_same_parse(f"<body><p>{text}</p><p> {text}<b>{text}</b></p></body>")
    texts = page.tag == TEXT
    assert page.words[texts].tolist() == [count_words(" ".join(t.split())) for t in page.node_texts(texts.nonzero()[0])]
    assert page.words[texts].sum() > 0 or not text.split()


COUNTED = [
    "<body><p>a<!-- c --><?pi x?></p>b<br/>t</body>",
    "<body><script>var x = 1;</script> <div><svg><g><path/></g><text>t</text></svg> tail</div></body>",
    "<body><h2>Title<a href='#t'>\u00b6</a></h2><noscript><p>kept <b>x</b></p></noscript><pre>\n code\n</pre></body>",
    "<body><head><meta name='x' content='y'><title>in body</title></head><style>p{}</style>  \n </body>",
    "<body><select><option>a</option><option>b</option></select><img src='/a.png'><iframe>x</iframe></body>",
    "<body></body>",
]


@pytest.mark.parametrize("html", COUNTED)
@pytest.mark.parametrize("rules", [PRODUCT_RULES, SPEC_RULES])
def test_the_walk_counts_the_nodes_as_count_nodes_does(html, rules):
    """With a limit, the walk reads a body of at most that many nodes (count_nodes' count,
    dropped and leaf subtrees, comments and whitespace included) as it reads it without one,
    and gives up on a body of more; parse_page's cap holds at the count and fails below it."""
    root = etree.fromstring(html, etree.HTMLParser(remove_comments=False, remove_pis=False))
    body = root.find("body")
    count = P._compiled.count_nodes(body, 10 ** 6)
    assert count == int(body.xpath("count(descendant-or-self::node())"))
    within = P._flatten_compiled(body, URL, "T", URL, 123, (), rules, root, [], count)
    assert within is not P._UNCOUNTED and within is not None
    assert within.differing_fields(P._flatten_compiled(body, URL, "T", URL, 123, (), rules, root, [])) == []
    for limit in (count - 1, 0, -1, -(2 ** 62)):
        assert P._flatten_compiled(body, URL, "T", URL, 123, (), rules, root, [], limit) is P._UNCOUNTED
    parsed = parse_tree(html)[1]
    parsed_count = P._compiled.count_nodes(parsed, 10 ** 6)
    assert parse_page(html, URL, max_nodes=parsed_count, rules=rules).differing_fields(
        parse_page(html, URL, rules=rules)) == []
    for cap in (parsed_count - 1, 0, -1):
        with pytest.raises(P.TooManyNodes, match=f"^{parsed_count} parsed nodes"):
            parse_page(html, URL, max_nodes=cap, rules=rules)


# --- what the walk reads for node_extras itself: images, rel flags ---

IMAGES = [
    '<img src="/a.png" alt=" An   image ">', '<img src="/t.gif" width="1">', '<img src="/t.gif" height=" 01PX ">',
    '<img src="/t.gif" width="1 px">', '<img src="/t.gif" width="²">', '<img src="/t.gif" width="0">',
    '<img src="/w.gif" width="100">', '<img src="data:image/gif;base64,R0" data-src="/lazy.jpg">',
    '<img src=" " data-lazy-src="/l2.jpg" data-original="/l3.jpg">', '<img src="mailto:x" data-original="l3.jpg">',
    '<img srcset=" /s1.jpg 1x, /s2.jpg 2x">', '<img srcset=", /s.jpg">', '<img srcset="\u00a0">',
    '<img srcset="é.jpg 2x">', '<img src="/é ü.png" alt="ünï\u00a0cøde  alt">', '<img src="\u00a0">',
    '<img alt="' + "word " * 80 + '">', '<img src="/x.png" alt="' + "w" * 400 + '">', '<img>',
    '<img src="HTTP://Other.org/i.png">', '<img src="http://[::1]/i.png">', '<img src="//cdn.example/i.png">',
    '<picture><source srcset="/s.webp"><span><img src="/p.jpg" alt="in picture"></span></picture>',
    '<picture><source srcset="/s.webp"></picture>', '<picture><img src="/a.jpg"><img src="/b.jpg"></picture>',
    '<a href="/l1"><img src="/i1.png" alt="one"></a>', '<a href="/l2"><img alt=""><img alt=" two "></a>',
    '<a href="/l3" rel="NoFollow ugc"><img src="/i3.png" alt="three"></a>', '<a href="/l4" rel="sponsored\u00a0ugc">x</a>',
    '<a href="/l5" rel="">y</a>', '<a href="mailto:x" rel="nofollow">m</a>', '<a href="/l6" rel=" noopener ">z</a>',
]


@pytest.mark.parametrize("html", IMAGES)
def test_images_and_rel_flags_read_by_the_walk_are_node_extras(html):
    """Each image, picture and link alone, and all of them on one page: what the walk reads
    itself (URLs, pixels, alt texts, rel flags) and what it leaves to node_extras with lxml's
    element give the reference's NodeExtras."""
    assert_same_parse(f"<body><p>{html}</p></body>")
    assert_same_parse(f"<body><a href='/outer'>{html}</a></body>")


def test_all_images_on_one_page_are_node_extras():
    got = assert_same_parse("<html><head><base href='http://ex.com/b/'></head><body>" + "".join(IMAGES) + "</body></html>")
    # "1 px" declares no size (the space stays once "px" is cut); "1", " 01PX " and "0" declare a
    # pixel; "²" is a digit that int() refuses, which costs node_extras the image
    assert got.side.image_src[:3] == ("http://ex.com/a.png", "http://ex.com/t.gif", "http://ex.com/w.gif")


CODE_BLOCKS = [
    '<pre>x = 1</pre>', '<pre class="python">x</pre>', '<pre class="">x</pre>', '<pre><code class="language-rust">x</code></pre>',
    '<pre class="lang-go"><code class="language-c">x</code></pre>', '<pre><code>a</code><code class="lang-js">b</code></pre>',
    '<pre><span class="lang-js">x</span><code class="">y</code></pre>', '<pre><b><code class="lang-js">x</code></b></pre>',
    '<div class="highlight-python notranslate"><div class="highlight"><pre>x</pre></div></div>',
    '<div class="language-ruby"><div><div><div><pre>x</pre></div></div></div></div>',
    '<div class="language-ruby"><div><div><pre>x</pre></div></div></div>', '<pre class="brush: php;">x</pre>',
    '<pre class="source-perl">x</pre>', '<pre class="language-text">x</pre>', '<pre class="ñ lang-é">x</pre>',
    '<pre class="sourceCode haskell">x</pre>', '<pre class="  ">x</pre>', '<pre class="x" class="lang-go">x</pre>',
]


@pytest.mark.parametrize("html", CODE_BLOCKS)
def test_code_languages_read_by_the_walk_are_node_extras(html):
    """A code block's class values, gathered by the walk (its <code> child's, its own, three
    ancestors'), give the language meta.code_language gives of the element."""
    assert_same_parse(f"<body><section>{html}</section></body>")
    assert_same_parse(f"<body>{html}</body>")
    assert_same_parse(f"<html><body>{''.join(CODE_BLOCKS)}</body></html>")


def test_a_code_blocks_class_values_by_hand(monkeypatch):
    html = ('<body><div class="highlight-python"><div class="highlight"><pre>x</pre></div></div>'
                            '<pre class="lang-go"><code class="language-c">y</code></pre><pre>z</pre></body>')
    assert assert_same_parse(html).side.code_lang == ("python", "c")
    # the walk reads them itself: no element reaches meta.code_language
    monkeypatch.setattr(M, "code_language", lambda pre: pytest.fail("read from the element"))
    assert parse_both_ways(html, True).side.code_lang == ("python", "c")
    assert M._classes_language(("highlight", "", "brush: php;")) == "php"
    assert M._classes_language(()) is None


# --- permalink anchors decided in the walk ---

PERMALINKS = [
    '<h2>Title<a class="headerlink" href="#t">¶</a></h2>', '<h2>Title<a href="#t"> Permalink </a></h2>',
    '<h2>Title<a href="#t">PERMALINK</a></h2>', '<h2>Title<a href="#t">permalinK</a></h2>',
    '<h2>Title<a href="#t">perma link</a></h2>', '<h2>Title<a href="#t">permalinks</a></h2>',
    '<h2>Title<a href="#t">\U0001f517</a></h2>', '<h2>Title<a href="#t">§ 1</a></h2>', '<h2>Title<a href="#t">#</a></h2>',
    '<h2>Title<a href="/t">¶</a></h2>', '<h2>Title<a href="#t">Title</a></h2>', '<h2><a href="#t"></a>T</h2>',
    '<p><a class="x headerlink" href="#t">¶</a></p>', '<p><a class="headerlinks" href="#t">¶</a></p>',
    '<p><a class="Headerlink" href="#t">¶</a></p>', '<p><a aria-hidden=" TRUE " href="#t">¶</a></p>',
    '<p><a aria-hidden="false" href="#t">¶</a></p>', '<p><a class="headerlinké" href="#t">¶</a></p>',
    '<p><a class="headerlink\u00a0x" href="#t">¶</a></p>', '<p><a href="#t">¶</a></p>',
    '<h3>T<a href="#t"><span>¶</span><script>x</script><img alt="i">\u200b</a></h3>',
    '<h3>T<a href="#t"><svg><text>permalink</text></svg>¶</a></h3>',
    '<h3>T<a href="#t">' + "<b></b>" * 31 + '¶</a></h3>', '<h3>T<a href="#t">' + "<b></b>" * 33 + '¶</a></h3>',
    '<h3>T<a href="#t"><b>p<i>erma</i></b>link</a></h3>', '<h3>T<a href="#t">٣</a></h3>',
    '<h3>T<button class="copy">\U0001f517</button></h3>', '<p><button>¶</button></p>', '<h3>T<button>Copy</button></h3>',
    '<dt>x<a href="page#t">¶</a></dt>', '<caption>x <a href="#t">¶</a> tail</caption>',
]


@pytest.mark.parametrize("html", PERMALINKS)
def test_permalinks_decided_by_the_walk_are_the_references(html):
    for rules in ALL_RULES:
        assert_same_parse(f"<body>{html}<p>after</p></body>", rules)


# --- the links without text that an image's alt text names ---

LINKED_IMAGES = [
    '<a href="/a"><img alt="one"></a>', '<a href="/a">text<img alt="one"></a>', '<a href="/a"><img alt=" "><img alt="two"></a>',
    '<a href="/a"><span><img alt="deep"></span></a><a href="/b"><img></a>', '<img alt="outside"><a href="/a"></a>',
    '<a href="/a"><a href="/b"><img alt="nested"></a><img alt="after"></a>', '<a href="mailto:x"><img alt="not http"></a>',
    '<a href="/a"><img alt="first"><img alt="second"></a>', '<a href="/a"><picture><img alt="in picture"></picture></a>',
    '<p><a href="/a"><b><img alt="x"></b></a>tail<a href="/c"><img alt="y"></a></p>',
]


@pytest.mark.parametrize("html", LINKED_IMAGES + ["".join(LINKED_IMAGES)])
def test_the_links_an_image_names_are_the_references(html):
    """parse_page's alt texts of links with the compiled passes (image_links among them) and
    with the references."""
    ref = parse_both_ways(f"<body>{html}</body>", False).side
    got = parse_both_ways(f"<body>{html}</body>", True).side
    assert (ref.alt_node.tolist(), ref.alt) == (got.alt_node.tolist(), got.alt)


def test_the_links_an_image_names_by_hand():
    page = parse_page('<body><a href="/a"><img alt="one"><img alt="two"></a><a href="/b">t<img alt="x"></a>'
                      '<a href="/c"><span><img alt=" "><img alt="three"></span></a></body>', URL)
    assert page.side.alt == ("one", "three")


def test_image_links_on_generated_trees():
    """_flatten.c image_links against the numpy reading, on random nestings of links, images and
    text (links nested in links, as libxml2 leaves unclosed ones)."""
    import random
    rng = random.Random(7)
    for _ in range(300):
        parts, open_links = ["<body>"], 0
        for _ in range(rng.randint(1, 30)):
            r = rng.random()
            if r < 0.25:
                parts.append(f'<a href="/l{rng.randint(0, 9)}">')
                open_links += 1
            elif r < 0.4 and open_links:
                parts.append("</a>")
                open_links -= 1
            elif r < 0.7:
                parts.append(f'<img alt="{rng.choice(["", " ", "a", "b c"])}">')
            elif r < 0.8:
                parts.append("word")
            else:
                parts.append(rng.choice(["<span>", "</span>", "<div>", "</div>"]))
        html = "".join(parts) + "</body>"
        page = parse_page(html, URL)
        images = [(i, "alt") for i in range(page.size) if page.tag[i] == P.TAG_ID["img"]]
        if not images:
            continue
        nodes = np.array([i for i, _ in images], dtype=np.int64)
        assert M._image_alts_reference(page, images, nodes) == M._image_alts(page, images), html
