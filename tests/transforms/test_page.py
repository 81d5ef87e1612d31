"""The compact page model (design §1) and text rendering."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitestrip.transforms.page import (F_IN_LINK, F_LINK, F_PRE, F_NAV_EXACT, F_NAV_HINT, F_NAV_WORD, PRODUCT_RULES, SPEC_RULES,
                                       TAG_ID, TEXT, ParseRules, _has_nav_word, parse_page, tag_name)
from sitestrip.transforms.tree import text_of
from sitestrip.transforms.tokens import count_words, folded_words, words
from sitestrip.transforms.tree import children, subtree_mask, subtree_sum, subtree_text, text_of


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
    # <noscript> is what a reader without scripts (an archive's) shows: kept. Each tail is
    # its own text node; no whitespace stands between them in the HTML, so a browser shows
    # one run "abdno" (transforms/text.py).
    assert [page.node_text(i) for i in np.flatnonzero(page.tag == TEXT)] == ["a", "b", "d", "no"]
    assert text_of(page) == "abdno"
    assert tags(page) == ["body", "p", "#text", "#text", "#text", "noscript", "#text", "svg", "img", "p"]
    assert page.child_count[7] == 0  # svg internals dropped


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


def test_navigation_hint_rules():
    """Which elements each MenEx representative-tag rule marks (transforms/page.py F_NAV_*):
    exact (the thesis) = <nav>, a class token or the id equal to nav/menu; word_part (design §2)
    adds word parts equal to nav/menu and role=navigation; prefix (product) adds parts that
    begin with nav/menu."""
    page = parse_page("<body><nav>n</nav><div class='x menu'>a</div><div id=Nav>b</div>"
                      "<div class=main-menu>c</div><div id=topNav>d</div><div role=navigation>e</div>"
                      "<div class=navbar>f</div><div id=navigation>g</div><div class=canvas>h</div></body>",
                      "http://ex.com/")
    elements = [i for i in range(page.size) if page.tag[i] != TEXT][1:]

    def marked(bit):
        return [bool(page.flags[i] & bit) for i in elements]
    #                          nav   .menu #Nav  main-menu topNav role  navbar navigation canvas
    assert marked(F_NAV_EXACT) == [True, True, True, False, False, False, False, False, False]
    assert marked(F_NAV_WORD) == [True, True, True, True, True, True, False, False, False]
    assert marked(F_NAV_HINT) == [True, True, True, True, True, True, True, True, False]


def test_noscript_and_widget_rules():
    """PRODUCT_RULES keep <noscript> content as text and make select/textarea/canvas/math
    leaves; SPEC_RULES (design §1) drop <noscript> with its subtree and read the widgets' insides
    as ordinary nodes. The page's text, by hand, for each."""
    html = ("<body><p>Intro</p><noscript><p>Enable scripts to see the posts</p></noscript>"
            "<form><select><option>Red</option><option>Blue</option></select>"
            "<textarea>Your comment</textarea></form><canvas>Chart fallback</canvas>"
            "<math><mi>x</mi></math><p>End</p></body>")
    product = parse_page(html, "http://ex.com/")
    spec = parse_page(html, "http://ex.com/", rules=SPEC_RULES)
    everything = lambda p: text_of(p, p.tag == TEXT)  # noqa: E731
    assert everything(product) == "Intro\nEnable scripts to see the posts\nEnd"
    assert everything(spec) == "Intro\nRed\nBlue\nYour comment\nChart fallback x\nEnd"
    for name in ("select", "textarea", "canvas", "math"):
        assert product.child_count[list(product.tag).index(TAG_ID[name])] == 0
        assert spec.child_count[list(spec.tag).index(TAG_ID[name])] > 0
    assert TAG_ID["noscript"] in product.tag and TAG_ID["noscript"] not in spec.tag
    assert ParseRules(keep_noscript=False).dropped == SPEC_RULES.dropped
    assert ParseRules(widget_leaves=False).leaves == SPEC_RULES.leaves


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


def test_the_blob_layout_is_the_stored_one():
    """A blob's content (version 4's, which version 5 narrows; state files hold both): the
    seven int64 counts, the delta-encoded arrays in their order, the UTF-8 text, the link URLs
    joined by newlines, spelled out here with np.diff as the layout was first written."""
    from sitestrip.transforms.page import TEXT, _pack_blob, _unpack_blob

    page = parse_page("<body><pre>  x\n  y</pre><div class='a b' id=m data-k=v><p>caf\u00e9 <a href='/x'>t</a>"
                      "<a href='http://o.test/'>u</a></p></div></body>", "http://ex.com/")
    n = page.size
    order = np.arange(n, dtype=np.int32)
    is_text = page.tag == TEXT
    is_pre = is_text & ((page.flags & F_PRE) != 0)
    text = page.text.encode("utf-8")
    parts = (order - page.parent, page.end - order, page.depth, page.tag, page.flags, page.hints,
             np.diff(page.line, prepend=0).astype(np.int32), page.id_hash,
             np.diff(page.class_ptr).astype(np.int32), page.class_hash,
             np.diff(page.attr_ptr).astype(np.int32), page.attr_hash,
             np.diff(page.text_ptr)[is_text].astype(np.int32), page.words[is_text], page.chars[is_pre], page.link_node)
    header = np.array([n, is_text.sum(), page.class_hash.size, page.attr_hash.size, page.link_node.size, len(text),
                       is_pre.sum()], dtype=np.int64)
    expected = b"".join([header.tobytes()] + [a.tobytes() for a in parts]
                        + [text, "\n".join(page.link_url).encode("utf-8")])
    assert is_pre.any() and page.class_hash.size == 2 and page.link_node.size == 2
    assert page._raw() == expected
    state = page.__getstate__()
    assert state["v"] == 5 and _unpack_blob(state["blob"], 5) == expected
    stored = type(page).__new__(type(page))
    stored.__setstate__({**state, "blob": _pack_blob(expected)})
    assert stored.differing_fields(page) == []


def test_an_unpickled_page_rebuilds_its_arrays_on_first_read_only():
    """Beam's local runner unpickles every value of a group-by-key into memory and pickles it
    again to pass the groups on. Unpickled, a page holds its scalar fields and the packed blob,
    not its node arrays, and pickling it again gives the very bytes it came from without
    rebuilding them. The first read of one array field (`tag`, through tags()) rebuilds all of
    them, equal to the parsed page's: tags [body, div, p, #text, a, #text], one link."""
    import pickle

    page = parse_page("<body><div class=a><p>one <a href='/x'>two</a></p></div></body>", "http://ex.com/")
    data = pickle.dumps(page)
    back = pickle.loads(data)
    assert not {"parent", "tag", "text", "link_url"} & set(vars(back))
    assert (back.url, back.title, back.html_bytes) == (page.url, page.title, page.html_bytes)
    assert pickle.dumps(back) == data
    assert "parent" not in vars(back)
    assert tags(back) == ["body", "div", "p", "#text", "a", "#text"] == tags(page)
    assert {"parent", "text", "link_url", "child_count", "text_ptr"} <= set(vars(back))
    assert back.parent.tolist() == page.parent.tolist() == [-1, 0, 1, 2, 2, 4]
    assert back.link_url == page.link_url == ("http://ex.com/x",)
    assert text_of(back) == text_of(page) and back.nbytes() == page.nbytes()


def test_a_damaged_blob_fails_where_an_array_is_first_read():
    """Unpickling no longer decompresses, so a damaged blob is found at the first array read;
    a name that is no field stays a plain AttributeError."""
    import pickle
    import zlib

    import pytest

    page = parse_page("<body><p>one</p></body>", "http://ex.com/")
    state = page.__getstate__()
    assert state["v"] == 5

    def damaged(**change):
        out = type(page).__new__(type(page))
        out.__setstate__({**state, **change})
        return out

    assert damaged(blob=b"not zstd data").url == "http://ex.com/"
    # "not zstd" read as a little-endian length is far above 2**31: refused before inflating
    with pytest.raises(ValueError, match="declares"):
        damaged(blob=b"not zstd data").parent
    with pytest.raises(OSError):                     # pyarrow's zstd: not a zstd frame
        damaged(blob=state["blob"][:8] + b"not zstd data").parent
    with pytest.raises(zlib.error):                  # a version-3 (zlib) blob, damaged
        damaged(blob=b"not zlib data", v=3).parent
    with pytest.raises(ValueError, match="unknown compact page version"):
        damaged(v=9).parent
    with pytest.raises(AttributeError, match="no_such_field"):
        pickle.loads(pickle.dumps(page)).no_such_field


def _reads_back_as_stored(version: int, blob_of) -> None:
    """A page whose blob is `blob_of(its blob content)` under `version` reads back with every
    field equal, and pickles again as that version with its blob as it came (a state file
    rewritten by a later run keeps pages it did not touch readable)."""
    import pickle

    from sitestrip.transforms.page import _unpack_blob

    page = parse_page("<body><div class=a><p>one <b>two</b></p><pre> x\n  y</pre>"
                      "<a href=/z>z</a></div></body>", "http://ex.com/")
    state = page.__getstate__()
    content = _unpack_blob(state["blob"], 5)
    assert content == page._raw()
    old_blob = blob_of(content)
    old = type(page).__new__(type(page))
    old.__setstate__({**state, "v": version, "blob": old_blob})
    assert old.differing_fields(page) == []
    again = old.__getstate__()
    assert again["v"] == version and again["blob"] == old_blob
    assert pickle.loads(pickle.dumps(old)).differing_fields(page) == []


def test_a_version_3_page_as_older_state_files_hold_it_still_unpacks():
    """Before version 4 a page's blob was zlib (level 1) of the same packed arrays."""
    import zlib

    _reads_back_as_stored(3, lambda content: zlib.compress(content, 1))


def test_a_version_4_page_as_older_state_files_hold_it_still_unpacks():
    """Version 4 was zstd of the arrays at their full widths."""
    from sitestrip.transforms import compression

    _reads_back_as_stored(4, lambda content: compression.pack(content, "zstd"))


# --- aligned_nodes: the walk that maps compact nodes back onto the lxml tree ---

def check_alignment(html, url="http://ex.com/", rules=PRODUCT_RULES):
    """Every compact node has exactly one aligned lxml item, with the same tag, text and parent."""
    from sitestrip.transforms.page import aligned_nodes, parse_tree, tag_id

    page = parse_page(html, url, rules=rules)
    _, body, _ = parse_tree(html)
    items = list(aligned_nodes(body, rules))
    assert [i for i, _, _ in items] == list(range(page.size))
    index_of = {}
    for i, el, kind in items:
        if kind == "element":
            if el is None:              # no BODY: the compact page is BODY alone
                assert page.size == 1
                continue
            assert page.tag[i] == tag_id(el.tag.lower()), i
            index_of[el] = i
            assert page.parent[i] == (index_of[el.getparent()] if i else -1), i
        else:
            assert page.tag[i] == TEXT, i
            raw = el.text if kind == "text" else el.tail
            # Verbatim (preformatted) text differs from the raw text only in whitespace.
            assert " ".join(page.node_text(i).split()) == " ".join(raw.split()), i
            assert page.flags[i] & F_PRE or page.node_text(i) == " ".join(raw.split()), i
            owner = el if kind == "text" else el.getparent()
            assert page.parent[i] == index_of[owner], i
    return page, items


def test_aligned_nodes_follow_dropped_leaf_and_whitespace_rules():
    page, items = check_alignment(
        "<body><P>a<script>x</script>b<style>p{}</style><!-- c -->d <noscript>no</noscript>"
        "<template><p>t</p></template></P>  <svg><g><text>in</text></g></svg>tail"
        "<img src=x.png> <p>   </p><TITLE>t</TITLE>after title<my-el>custom</my-el></body>")
    kinds = [(k, el.tag) for _, el, k in items]
    assert kinds[:5] == [("element", "body"), ("element", "p"), ("text", "p"), ("tail", "script"),
                         ("tail", "style")]
    assert ("element", "svg") in kinds and ("tail", "svg") in kinds and ("tail", "title") in kinds
    assert not any(tag in ("g", "text", "script", "style", "template", "title")
                   for k, tag in kinds if k == "element")
    assert ("element", "noscript") in kinds and ("text", "noscript") in kinds
    # design §1 as published: <noscript> goes with its subtree, its tail stays
    page, items = check_alignment("<body><p>a<noscript>no <b>js</b></noscript>tail</p></body>",
                                  rules=SPEC_RULES)
    assert [(k, el.tag) for _, el, k in items] == [("element", "body"), ("element", "p"), ("text", "p"),
                                                  ("tail", "noscript")]


def test_aligned_nodes_on_deep_and_bodyless_pages():
    depth = 5000
    check_alignment("<body>" + "<div>x" * depth + "</div>" * depth + "</body>")
    for html in ("", "<html><head><title>t</title></head></html>", "<frameset><frame src=a></frameset>"):
        page, items = check_alignment(html)
        assert len(items) == page.size


_SOUP = ["<p>", "</p>", "<div class='a b'>", "</div>", "<b>", "</b>", "<a href='/x'>", "</a>",
         "<ul>", "<li>", "</ul>", "<table>", "<tr>", "<td>", "</table>", "<br>", "<hr>",
         "<script>var a = '</p>';</script>", "<style>p{}</style>", "<noscript><p>n</p></noscript>",
         "<template>t</template>", "<title>t</title>", "<meta name=x>", "<link rel=x>", "<base href=/>",
         "<head>", "<img src=i.png>", "<svg><circle/>s</svg>", "<iframe>f</iframe>", "<select><option>o",
         "</select>", "<textarea>t</textarea>", "<!-- c -->", "<?pi x?>", "<FONT>", "</FONT>", "<x-y>",
         "</x-y>", "<fb:like>", "&amp;", "&nbsp;", " ", "\n\t", "\u00a0", "<body>", "</body>", "<html>",
         "<pre>\n x </pre>", "<math><mi>m</mi></math>", "<object><param name=a></object>",
         "<h2>", "</h2>", "<dt>", "<a href='#x'>¶</a>", "<a class=headerlink href=#y>#</a>",
         "<a aria-hidden=true href='/p#z'><svg></svg></a>", "<sup>", "</sup>", "¶", "<button>#</button>"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_SOUP), st.text(max_size=6)), max_size=40),
       st.sampled_from([PRODUCT_RULES, SPEC_RULES, ParseRules(keep_noscript=False),
                        ParseRules(widget_leaves=False)]))
def test_aligned_nodes_match_the_compact_page_on_tag_soup(tokens, rules):
    check_alignment("".join(tokens), rules=rules)


def test_aligned_nodes_match_the_compact_page_on_the_sample():
    from sitestrip.pipeline.cli import SAMPLE_WARC
    from sitestrip.pipeline.page_source import Page, read_pages
    from sitestrip.pipeline.warc import open_warc
    from sitestrip.transforms.charset import decode_html

    checked = 0
    with open_warc(SAMPLE_WARC) as stream:
        for item in read_pages(stream, SAMPLE_WARC, parse=False):
            if isinstance(item, Page):
                html, _ = decode_html(item.response.body, item.response.http_charset)
                check_alignment(html, item.response.url)
                check_alignment(html, item.response.url, SPEC_RULES)
                checked += 1
    assert checked >= 50


def test_has_tag_is_isin_over_known_unknown_and_text_ids():
    """has_tag(tags, tag_table(names)) is np.isin(tags, tag_ids(names)). By hand, for
    tag_table("p", "div") over [#text, p, div, a, an unknown custom element's hashed id, p]:
    True at p and div only; the unknown id lies past the known ones and reads the table's
    last (False) entry. A table of "#text" is refused: text nodes are not element tags."""
    from sitestrip.transforms.page import has_tag, tag_id, tag_table
    tags = np.array([TEXT, TAG_ID["p"], TAG_ID["div"], TAG_ID["a"], tag_id("fb:like"), TAG_ID["p"]],
                    dtype=np.int32)
    assert tag_id("fb:like") > len(TAG_ID)
    got = has_tag(tags, tag_table("p", "div"))
    assert got.tolist() == [False, True, True, False, False, True]
    assert got.tolist() == np.isin(tags, [TAG_ID["p"], TAG_ID["div"]]).tolist()
    assert has_tag(tags[:0], tag_table("p")).tolist() == []
    with pytest.raises(ValueError, match="element tags"):
        tag_table("#text", "p")


def _name_hints_by_chunks(value):
    """page._name_hints as first written: split on separators, then camelCase per chunk."""
    import re

    from sitestrip.transforms.page import _CAMEL, F_COMMENT_HINT, F_NAV_EXACT, F_NAV_HINT, F_NAV_WORD
    flags = F_NAV_EXACT if value.lower() in ("nav", "menu") else 0
    for chunk in re.split(r"[-_\s]+", value):
        for part in _CAMEL.findall(chunk):
            low = part.lower()
            if low.startswith("nav") or low.startswith("menu"):
                flags |= F_NAV_HINT
                if low in ("nav", "menu"):
                    flags |= F_NAV_WORD
            elif low.startswith("comment") or low == "disqus":
                flags |= F_COMMENT_HINT
    return flags


def _role_hints_by_chunks(value):
    import re

    from sitestrip.transforms.page import _AD, _CAMEL, _HINT_EXACT, _HINT_PREFIX, HINT_BIT
    low = value.lower()
    bits = HINT_BIT["ad"] if _AD.search(low) else 0
    if "nav" in low:
        bits |= HINT_BIT["nav"]
    for chunk in re.split(r"[-_\s]+", value):
        for part in _CAMEL.findall(chunk):
            part = part.lower()
            bits |= _HINT_EXACT.get(part, 0)
            for prefix, bit in _HINT_PREFIX:
                if part.startswith(prefix):
                    bits |= bit
    return bits


def test_id_and_class_hints_split_once_as_when_split_by_chunks():
    """The word parts come from one camelCase findall over the whole token (page._word_parts)
    instead of a findall per separator-split chunk: the same hints for hand-picked tokens
    (camelCase runs, acronyms before a word, separators of every kind, digits, non-ASCII) and
    for seeded random tokens built from hint words, their pieces and separators."""
    import random

    from sitestrip.transforms.page import _HINT_EXACT, _HINT_PREFIX, _name_hints, _role_hints
    tokens = ["mainNav", "NAVBar", "site-header__menu", "comment_list", "disqus_thread", "ad-slot",
              "HTMLContent", "x\u00a0nav", "nav\u2003menu", "sidebarAD", "footer2Links", "é-nav", "", "--", "a_b-c d"]
    words = list(_HINT_EXACT) + [p for p, _ in _HINT_PREFIX] + ["nav", "Menu", "COMMENT", "x", "Ad", "2", "é"]
    rng = random.Random(9)
    for _ in range(3000):
        tokens.append("".join(rng.choice([rng.choice(words), rng.choice(words).title(), rng.choice(words).upper(),
                                          rng.choice(["-", "_", " ", "--", "\t", ".", ""])])
                              for _ in range(rng.randrange(1, 6))))
    for token in tokens:
        assert _name_hints(token) == _name_hints_by_chunks(token), token
        assert _role_hints(token) == _role_hints_by_chunks(token), token


def _unpickled(html: str, url: str = "http://ex.com/"):
    import pickle
    return pickle.loads(pickle.dumps(parse_page(html, url)))


def test_unpacked_pages_past_the_bound_drop_their_arrays_least_recent_first(monkeypatch):
    """Three unpickled pages of 5 nodes each (`<p>w</p><p>y</p>`: body, p, #text, p, #text)
    and a bound of 10 nodes: after reading a, b and c the pages unpacked hold 15 > 10 nodes,
    so a (the oldest) is dropped and b, c stay. Reading a again rebuilds equal arrays and
    drops b (now the oldest); a page touched before the next read is kept over an older one."""
    from sitestrip.transforms import page as page_mod

    bound = page_mod.RecentPages(10, page_mod.UNPACKED.drop)
    monkeypatch.setattr(page_mod, "UNPACKED", bound)
    a, b, c = (_unpickled(f"<body><p>{w}</p><p>y</p></body>", f"http://ex.com/{w}") for w in "abc")
    first_tags = a.tag.copy()
    assert a.size == 5 and "parent" in vars(a)
    b.tag, c.tag
    assert "parent" not in vars(a) and "tag" not in vars(a) and "text" not in vars(a)
    assert "parent" in vars(b) and "parent" in vars(c)
    assert bound.nodes == 10 and bound.added == 3
    assert np.array_equal(a.tag, first_tags) and a.node_text(2) == "a"
    assert "parent" not in vars(b) and "parent" in vars(c) and bound.added == 4
    bound.touch(c)                      # c is now more recent than a
    b.parent
    assert "parent" in vars(c) and "parent" not in vars(a)


def test_pages_parsed_here_are_never_dropped(monkeypatch):
    """A page that never came from a blob holds arrays nothing can rebuild: it is not counted,
    even once pickled (its blob is then made, its arrays stay its own)."""
    import pickle

    from sitestrip.transforms import page as page_mod

    bound = page_mod.RecentPages(1, page_mod.UNPACKED.drop)
    monkeypatch.setattr(page_mod, "UNPACKED", bound)
    parsed_here = parse_page("<body><p>one</p><p>two</p></body>", "http://ex.com/")
    pickle.dumps(parsed_here)
    other = _unpickled("<body><p>three</p></body>")
    other.tag
    assert bound.added == 1 and "parent" in vars(parsed_here)
    assert text_of(parsed_here) == "one\ntwo"


def test_a_dropped_page_pickles_to_the_same_bytes(monkeypatch):
    """Dropping keeps the blob: the page pickles to the bytes it came from, unpacked or not."""
    import pickle

    from sitestrip.transforms import page as page_mod

    monkeypatch.setattr(page_mod, "UNPACKED", page_mod.RecentPages(1, page_mod.UNPACKED.drop))
    data = pickle.dumps(parse_page("<body><div><p>one <a href='/x'>two</a></p></div></body>", "http://ex.com/"))
    page = pickle.loads(data)
    page.tag
    _unpickled("<body><p>other</p></body>").tag      # drops `page`
    assert "parent" not in vars(page)
    assert pickle.dumps(page) == data
    assert page.link_url == ("http://ex.com/x",)


def test_subtree_totals_by_hand_computed_once_and_read_only():
    """`<body><div><p>one two <a href=/x>three</a></p></div><a href=/y>four</a></body>`:
    body 0, div 1, p 2, #text 3 ("one two"), a 4, #text 5 ("three"), a 6, #text 7 ("four").
    Links (F_LINK elements) below: body 2, div 1, p 1, a(4) 1, a(6) 1; words below: body 4,
    div 3, p 3; elements below: body 5, div 3, p 2; text nodes below: body 3, div 2."""
    from sitestrip.transforms.tree import elements_below, links_below, text_nodes_below, words_below

    page = parse_page("<body><div><p>one two <a href='/x'>three</a></p></div><a href='/y'>four</a></body>",
                      "http://ex.com/")
    assert tags(page) == ["body", "div", "p", "#text", "a", "#text", "a", "#text"]
    assert links_below(page).tolist() == [2, 1, 1, 0, 1, 0, 1, 0]
    assert words_below(page).tolist() == [4, 3, 3, 2, 1, 1, 1, 1]
    assert elements_below(page).tolist() == [5, 3, 2, 0, 1, 0, 1, 0]
    assert text_nodes_below(page).tolist() == [3, 2, 2, 1, 1, 1, 1, 1]
    for total, values in ((links_below, (page.flags & F_LINK) != 0), (words_below, page.words)):
        assert np.array_equal(total(page), subtree_sum(page, values))
        assert total(page) is total(page)            # computed once
        with pytest.raises(ValueError):               # no caller can change what the next reads
            total(page)[0] = 0
    ptr, kids = children(page)
    assert children(page)[0] is ptr and kids[ptr[0]:ptr[1]].tolist() == [1, 6]
    before = links_below(page)
    page.forget_derived()
    again = links_below(page)          # computed anew, and nothing else with it
    assert again is not before and again.tolist() == before.tolist()
    # compiled, one pass gives every subtree total at once (tree._totals); else each its own
    from sitestrip.transforms import tree
    one_pass = tree._COMPILED and tree._compiled is not None
    assert set(vars(page)["_derived"]) == ({"subtree_totals"} if one_pass else {"links_below"})


def test_subtree_totals_go_with_the_unpacked_arrays(monkeypatch):
    """A page from a blob whose arrays are dropped (UNPACKED's bound) drops its derived
    totals too, and computes equal ones from the rebuilt arrays."""
    from sitestrip.transforms import page as page_mod
    from sitestrip.transforms.tree import words_below

    bound = page_mod.RecentPages(3, page_mod.UNPACKED.drop)
    monkeypatch.setattr(page_mod, "UNPACKED", bound)
    a = _unpickled("<body><p>one two</p><p>three</p></body>")
    first = words_below(a)
    assert first.tolist() == [3, 2, 2, 1, 1]
    _unpickled("<body><p>x</p><p>y</p></body>").tag      # 5 + 5 nodes > 3: a is dropped
    assert "_derived" not in vars(a) and "parent" not in vars(a)
    again = words_below(a)
    assert again is not first and again.tolist() == first.tolist()
