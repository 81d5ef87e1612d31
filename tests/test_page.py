"""The compact page model (SPEC §1) and text rendering."""
import numpy as np

from transforms.page import F_IN_LINK, F_LINK, F_NAV_HINT, TAG_ID, TEXT, _has_nav_word, parse_page, tag_name
from transforms.tokens import count_words, folded_words, words
from transforms.tree import children, subtree_mask, subtree_sum, subtree_text, text_of


def tags(page):
    return [tag_name(t) for t in page.tag]


def test_preorder_arrays_of_a_small_page():
    page = parse_page(
        "<html><head><title> A  title </title></head><body>"
        "<div class='x y'><p>one <b>two</b> three</p></div>  <p>four</p></body></html>",
        "http://ex.com/")
    assert tags(page) == ["body", "div", "p", "#text", "b", "#text", "#text", "p", "#text"]
    assert page.parent.tolist() == [-1, 0, 1, 2, 2, 4, 2, 0, 7]
    assert page.depth.tolist() == [0, 1, 2, 3, 3, 4, 3, 1, 2]
    assert page.end.tolist() == [9, 7, 7, 4, 6, 6, 7, 9, 9]
    assert page.child_count.tolist() == [2, 1, 3, 0, 1, 0, 0, 1, 0]
    assert [page.node_text(i) for i in (3, 5, 6, 8)] == ["one", "two", "three", "four"]
    assert page.title == "A title"
    # two class tokens on the div, none elsewhere
    assert np.diff(page.class_ptr).tolist() == [0, 2, 0, 0, 0, 0, 0, 0, 0]


def test_dropped_elements_keep_their_tail_and_media_are_leaves():
    page = parse_page(
        "<body><p>a<script>var x = 1;</script>b<style>p{}</style><!-- c -->d"
        "<noscript>no</noscript><template><p>t</p></template></p>"
        "<svg><g><text>inside</text></g></svg><img src=x.png><p>   </p></body>",
        "http://ex.com/")
    assert text_of(page) == "a b d"
    assert tags(page) == ["body", "p", "#text", "#text", "#text", "svg", "img", "p"]
    assert page.child_count[5] == 0  # svg internals dropped


def test_text_rendering_breaks_lines_at_blocks_only():
    page = parse_page("<body><div>Intro <a href='/x'>link</a> end<p>Para <i>one</i></p>tail<br>after</div></body>",
                      "http://ex.com/")
    assert text_of(page) == "Intro link end\nPara one\ntail\nafter"
    p = tags(page).index("p")
    assert subtree_text(page, p) == "Para one"


def test_links_resolved_against_base_and_flags():
    page = parse_page(
        "<html><head><base href='http://ex.com/docs/'></head><body>"
        "<a href='a.html#frag'>A</a><a href='mailto:x@y'>M</a><a>no href</a>"
        "<a href='../b.html'>B</a></body></html>", "http://ex.com/other/page.html")
    assert page.link_url == ("http://ex.com/docs/a.html", "http://ex.com/b.html")
    a_nodes = np.flatnonzero(page.tag == TAG_ID["a"])
    assert [(page.flags[a] & F_LINK) != 0 for a in a_nodes] == [True, True, False, True]
    texts = np.flatnonzero(page.tag == TEXT)
    assert all(page.flags[t] & F_IN_LINK for t in texts)


def test_navigation_hints():
    page = parse_page("<body><nav><a href=/>x</a></nav><div id='main-menu'>m</div>"
                      "<div role='navigation'>r</div><div class='sidebar canvas'>s</div></body>",
                      "http://ex.com/")
    elements = [i for i in range(page.size) if page.tag[i] != TEXT][1:]
    hints = [bool(page.flags[i] & F_NAV_HINT) for i in elements]
    assert hints == [True, False, True, True, False]  # nav, a, #main-menu, role, .canvas
    assert _has_nav_word("mainMenu") and _has_nav_word("top_nav") and _has_nav_word("navigation")
    assert not _has_nav_word("canvas") and not _has_nav_word("unavailable")


def test_deep_nesting_parses_without_recursion():
    depth = 100_000
    html = "<html><body>" + "<div>" * depth + "deep" + "</div>" * depth + "</body></html>"
    page = parse_page(html, "http://ex.com/")
    assert page.size > 1000
    assert page.depth.max() >= 1000
    assert any("depth" in n for n in page.notes)
    # tree queries work on it without recursion
    assert subtree_sum(page, np.ones(page.size, dtype=np.int64))[0] == page.size
    ptr, kids = children(page)
    assert ptr[-1] == page.size - 1


def test_empty_and_bodyless_documents():
    for html in ("", "   ", "<html><head><title>t</title></head></html>",
                 "<frameset><frame src=a></frameset>", "\x00\x01binary\xff"):
        page = parse_page(html, "http://ex.com/")
        assert page.size >= 1 and page.tag[0] == TAG_ID["body"]


def test_subtree_mask_union():
    page = parse_page("<body><div><p>a</p></div><p>b</p></body>", "http://ex.com/")
    m = subtree_mask(page, [1])
    assert m.tolist() == [False, True, True, True, False, False]


def test_tokenizer_decisions():
    assert words("Hello, world_2 3.14") == ["Hello", "world", "2", "3", "14"]
    # each CJK ideograph / kana / hangul syllable is one token
    assert words("日本語テキスト") == list("日本語テキスト")
    assert words("한국어 ok") == ["한", "국", "어", "ok"]
    # combining marks stay inside the word (Devanagari vowel signs, decomposed accents)
    assert words("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert words("cafe\u0301 x") == ["cafe\u0301", "x"]
    assert count_words("a b  c\n d") == 4
    assert folded_words("Straße ÉTÉ") == ["strasse", "été"]


def test_pickled_page_round_trips_and_is_smaller_than_html():
    import pickle

    html = ("<html><head><title>T</title></head><body><nav class='menu top'><ul>"
            + "".join(f"<li><a href='/p{i}.html' data-x='{i}'>Page {i}</a></li>" for i in range(40))
            + "</ul></nav><div id=main>" + "<p>Some words of text, repeated.</p>" * 60
            + "<p>caf\u00e9 \u65e5\u672c \x00</p></div></body></html>")
    page = parse_page(html, "http://ex.com/")
    back = pickle.loads(pickle.dumps(page))
    for name, value in vars(page).items():
        if name.startswith("_"):
            continue
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, getattr(back, name)), name
            assert value.dtype == getattr(back, name).dtype, name
        else:
            assert value == getattr(back, name), name
    assert text_of(back) == text_of(page)
    assert page.wire_bytes() < len(html) / 2
