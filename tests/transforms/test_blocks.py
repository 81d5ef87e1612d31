"""Blocks of a page (design §10, transforms/blocks.py), and the
nearest-ancestor query they stand on (transforms/tree.py nearest_in_mask).

Hand-built pages whose blocks are derived in the docstrings; property tests against
literal, one-node-at-a-time readings of design §10 on random small trees; deep pages.
"""
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from sitestrip.transforms.blocks import GROUPS, block_texts, instance_mask, page_blocks
from sitestrip.transforms.features import block_features
from sitestrip.transforms.page import BLOCK_TAGS, TEXT, _flatten, parse_page, tag_name
from sitestrip.transforms.tokens import folded_words
from sitestrip.transforms.tree import nearest_in_mask


def blocks_of(html):
    page = parse_page(html, "http://ex.com/")
    blocks = page_blocks(page)
    return page, blocks, block_texts(page, blocks)


def owner_tags(page, blocks):
    return [tag_name(page.tag[o]) for o in blocks.owner.tolist()]


# ---------------------------------------------------------------- instances

def test_instance_rules_of_seed_002():
    """Instances: p, li, h1-h6, figcaption, pre always; div/td/th only with no content
    element (p li h* figcaption pre td th) below and no element more than 2 levels below.

    div "alpha beta": no element below          -> instance, group div
    div holding <p>gamma</p> + "delta"          -> not an instance (a p below); the p is;
                                                   "delta" is orphan text -> the div, group other
    div > span > b > i "deep"                   -> <i> 3 levels down: not an instance; "deep"
                                                   is orphan -> its nearest block-level element,
                                                   the div (span/b/i are inline), group other
    div > span > b "two"                        -> 2 levels: instance, group div
    td "cell", th "head"                        -> instances, group td
    td > ul > li "item"                         -> td not an instance (an li below); li is
    td > div > div > div > span "x"             -> td and the outer div not (span 4 and 3
                                                   levels down); the middle div (span 2 down)
                                                   and the inner div are; the nearest wins
    pre, figcaption, h3                         -> instances, groups pre, figcaption, h"""
    html = ("<body><div>alpha beta</div><div><p>gamma</p>delta</div>"
            "<div><span><b><i>deep</i></b></span></div><div><span><b>two</b></span></div>"
            "<table><tr><td>cell</td><th>head</th><td><ul><li>item</li></ul></td>"
            "<td><div><div><div><span>x</span></div></div></div></td></tr></table>"
            "<pre>code</pre><figcaption>cap</figcaption><h3>sub</h3></body>")
    page, blocks, texts = blocks_of(html)
    assert texts == ["alpha beta", "gamma", "delta", "deep", "two", "cell", "head", "item", "x",
                     "code", "cap", "sub"]
    assert owner_tags(page, blocks) == ["div", "p", "div", "div", "div", "td", "th", "li", "div",
                                        "pre", "figcaption", "h3"]
    assert [GROUPS[g] for g in blocks.group.tolist()] == [
        "div", "p", "other", "other", "div", "td", "td", "li", "div", "pre", "figcaption", "h"]
    assert blocks.is_instance.tolist() == [True, True, False, False, True, True, True, True, True,
                                           True, True, True]
    inst = instance_mask(page)
    names = [(tag_name(page.tag[i]), int(page.depth[i])) for i in np.flatnonzero(inst)]
    # The x chain: td at depth 3, divs at 4, 5, 6, span at 7 -> divs at 5 and 6 only.
    assert names == [("div", 1), ("p", 2), ("div", 1), ("td", 3), ("th", 3), ("li", 5),
                     ("div", 5), ("div", 6), ("pre", 1), ("figcaption", 1), ("h3", 1)]


def test_nested_list_items_own_their_own_text():
    """Outer li: "outer one", then a nested list, then "outer three"; inner li: "inner two".
    Each text node belongs to its nearest li, and the nested <ul> is a block boundary, so
    the outer li's text is two blocks around the inner li's: three blocks, 6 words, no
    word counted twice."""
    page, blocks, texts = blocks_of("<body><ul><li>outer one<ul><li>inner two</li></ul>"
                                    "outer three</li></ul></body>")
    assert texts == ["outer one", "inner two", "outer three"]
    outer, inner = [i for i in range(page.size) if tag_name(page.tag[i]) == "li"]
    assert blocks.owner.tolist() == [outer, inner, outer]
    assert blocks.words.tolist() == [2, 2, 2]
    assert int(blocks.words.sum()) == int(page.words.sum()) == 6


def test_orphan_text_splits_at_br_and_at_classed_inline_elements():
    """A <section> under BODY holds no instance, so its text is orphan text. It is cut
    at the <br> (a line boundary), and a <span class=author> or an <a class=more> carries
    its own class, so its text is its own block (owner: the inline element). A plain
    <span>, <b> or an <a> without class never split a block:
      "top text" | "second" | "By Ann" (span.author) | "after bold tailplain span end"
      | "link" (a.more) | "fin".
    ("tailplain": no whitespace stands between "tail" and the span in the HTML, and text
    running into an inline element is joined as a browser shows it, transforms/text.py.)"""
    page, blocks, texts = blocks_of(
        "<body><section>top text<br>second <span class='author'>By Ann</span> after <b>bold</b>"
        " tail<span>plain span</span> end <a href='/x' class='more'>link</a> fin</section></body>")
    assert texts == ["top text", "second", "By Ann", "after bold tailplain span end", "link", "fin"]
    assert owner_tags(page, blocks) == ["section", "section", "span", "section", "a", "section"]
    assert not blocks.is_instance.any()
    assert [GROUPS[g] for g in blocks.group.tolist()] == ["other"] * 6


def test_an_instance_keeps_a_classed_span_but_is_cut_at_br():
    """Inside an instance the nearest-instance rule wins: the span's class does not make it
    a block; the <br> still cuts the line (design §10 refinement)."""
    page, blocks, texts = blocks_of("<body><p>Story <span class='author'>By Ann</span> text<br>"
                                    "next line</p></body>")
    assert texts == ["Story By Ann text", "next line"]
    assert owner_tags(page, blocks) == ["p", "p"]


def test_text_directly_under_body_belongs_to_body():
    page, blocks, texts = blocks_of("<body>loose words<p>para</p>more loose</body>")
    assert texts == ["loose words", "para", "more loose"]
    assert blocks.owner.tolist()[0] == 0 and blocks.owner.tolist()[2] == 0


def test_a_page_without_text_has_no_blocks():
    page, blocks, texts = blocks_of("<body><div><img src='a.png'></div></body>")
    assert blocks.count == 0 and texts == [] and blocks.ptr.tolist() == [0]


# ---------------------------------------------------------------- property: one block per text node

_CONTENT = {"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "figcaption", "pre", "td", "th"}
_ALWAYS = {"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "figcaption", "pre"}
_HOLDERS = BLOCK_TAGS - {"br", "hr"}
_TAGS = ["div", "div", "p", "li", "ul", "span", "b", "a", "section", "td", "th", "h2", "pre",
         "figcaption", "article", "em", "table", "tr"]
# Without content elements, so that div chains deeper and shallower than 2 levels occur.
_NO_CONTENT_TAGS = ["div", "div", "span", "b", "em", "a", "section"]


@st.composite
def random_html(draw):
    """Random nesting of block, inline and table tags, with words, <br>s and class/id
    attributes, as a flat token stream (the parser repairs whatever is ill-formed)."""
    parts, stack = [], []
    tags = draw(st.sampled_from([_TAGS, _NO_CONTENT_TAGS]))
    for k in range(draw(st.integers(1, 50))):
        action = draw(st.integers(0, 9))
        if action < 3 and len(stack) < 10:
            tag = draw(st.sampled_from(tags))
            attr = draw(st.sampled_from(["", "", "", " class='c'", " id='i'", " class=''"]))
            parts.append(f"<{tag}{attr}>")
            stack.append(tag)
        elif action < 5 and stack:
            parts.append(f"</{stack.pop()}>")
        elif action == 5:
            parts.append("<br>")
        else:
            parts.append(draw(st.sampled_from(["w", "two words", "x y z", " ", "3.5", "a-b"])) + f"{k} ")
    return "<body>" + "".join(parts) + "</body>"


def reference_blocks(page):
    """design §10 read one node at a time: instances by walking each div/td/th's subtree,
    each text node's owner by walking its ancestors, line breaks by looking for a block
    element between two consecutive text nodes. Returns [(owner, [text nodes])]."""
    n = page.size
    names = [tag_name(t) if t != TEXT else "#text" for t in page.tag.tolist()]
    parent = page.parent.tolist()

    def levels_below(i, j):
        d = 0
        while j != i:
            j, d = parent[j], d + 1
        return d

    inst = [False] * n
    for i in range(n):
        if names[i] in _ALWAYS:
            inst[i] = True
        elif names[i] in ("div", "td", "th"):
            below = range(i + 1, int(page.end[i]))
            inst[i] = (not any(names[j] in _CONTENT for j in below)
                       and all(levels_below(i, j) <= 2 for j in below if names[j] != "#text"))
    has_name = [(int(page.id_hash[i]) != 0 or page.class_ptr[i + 1] > page.class_ptr[i]) for i in range(n)]

    def owner(t):
        a = parent[t]
        while a >= 0 and not inst[a]:
            a = parent[a]
        if a >= 0:
            return a
        a = parent[t]
        while a > 0 and not (names[a] in _HOLDERS or has_name[a]):
            a = parent[a]
        return a

    def ancestors(i):
        out = set()
        while parent[i] >= 0:
            i = parent[i]
            out.add(i)
        return out

    def same_line(t1, t2):
        if any(names[k] in BLOCK_TAGS for k in range(t1 + 1, t2)):
            return False
        ended = ancestors(t1) - ancestors(t2)     # elements closed between the two
        return not any(names[k] in BLOCK_TAGS for k in ended)

    out = []
    prev = None
    for t in [i for i in range(n) if names[i] == "#text"]:
        o = owner(t)
        if out and out[-1][0] == o and same_line(prev, t):
            out[-1][1].append(t)
        else:
            out.append((o, [t]))
        prev = t
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_html())
def test_every_text_node_is_in_exactly_one_block(html):
    """Blocks partition the page's text nodes in document order; each block is the
    maximal run of text nodes with the same owner on one line, the owner being the
    nearest instance ancestor, else the nearest block-level or classed element, else
    BODY; no word is lost or counted twice."""
    page = parse_page(html, "http://ex.com/")
    blocks = page_blocks(page)
    text = np.flatnonzero(page.tag == TEXT)
    assert blocks.text_nodes.tolist() == text.tolist()
    assert blocks.ptr[0] == 0 and blocks.ptr[-1] == text.size
    assert np.all(np.diff(blocks.ptr) > 0)
    expected = reference_blocks(page)
    assert [(int(o), blocks.text_nodes[blocks.ptr[b]:blocks.ptr[b + 1]].tolist())
            for b, o in enumerate(blocks.owner.tolist())] == [(o, ts) for o, ts in expected]
    for b in range(blocks.count):
        nodes = blocks.text_nodes[blocks.ptr[b]:blocks.ptr[b + 1]]
        assert blocks.words[b] == page.words[nodes].sum()
    texts = block_texts(page, blocks)
    page_tokens = folded_words(" ".join(page.node_text(i) for i in text.tolist()))
    assert [w for t in texts for w in folded_words(t)] == page_tokens
    assert int(blocks.words.sum()) == int(page.words.sum())
    assert blocks.block_of_text().tolist() == np.repeat(np.arange(blocks.count), np.diff(blocks.ptr)).tolist()
    every = blocks.node_mask(page, np.ones(blocks.count, dtype=bool))
    assert every.tolist() == (page.tag == TEXT).tolist()


# ---------------------------------------------------------------- nearest_in_mask

def naive_nearest(parent, mask, self_included):
    out = []
    for i in range(len(parent)):
        a = i if self_included else parent[i]
        while a >= 0 and not mask[a]:
            a = parent[a]
        out.append(a)
    return out


@st.composite
def random_tree_and_mask(draw):
    """Any rooted tree whose parents come before their children (as in preorder), with
    chains, stars and everything between, and a random mask."""
    n = draw(st.integers(1, 80))
    chainy = draw(st.booleans())
    parent = [-1] + [(i - 1 if chainy and draw(st.integers(0, 4)) else draw(st.integers(0, i - 1)))
                     for i in range(1, n)]
    mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return parent, mask


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(random_tree_and_mask(), st.booleans())
def test_nearest_in_mask_matches_a_parent_walk(tree, self_included):
    parent, mask = tree
    page = SimpleNamespace(size=len(parent), parent=np.array(parent, dtype=np.int32))
    got = nearest_in_mask(page, np.array(mask, dtype=bool), self_included=self_included)
    assert got.tolist() == naive_nearest(parent, mask, self_included)


def test_nearest_in_mask_on_a_chain_of_100000():
    """A chain 0 <- 1 <- ... <- 99,999 marked at every node divisible by 997: the nearest
    marked ancestor-or-self of i is i - i % 997; strictly above, (i - 1) - (i - 1) % 997
    (none for the root)."""
    n = 100_000
    page = SimpleNamespace(size=n, parent=np.arange(-1, n - 1, dtype=np.int32))
    idx = np.arange(n)
    mask = idx % 997 == 0
    assert nearest_in_mask(page, mask).tolist() == (idx - idx % 997).tolist()
    above = nearest_in_mask(page, mask, self_included=False)
    assert above[0] == -1
    assert above[1:].tolist() == ((idx[1:] - 1) - (idx[1:] - 1) % 997).tolist()
    assert (nearest_in_mask(page, np.zeros(n, dtype=bool)) == -1).all()


# ---------------------------------------------------------------- deep pages

def _deep_body(levels):
    """BODY > p "Above the pit" + a chain of `levels` divs; every 1000th div but the innermost
    carries text "level k" (k = 999, 1999, ...), the innermost holds "bottom of the pit " and a span "noted" with tail
    " after". Built with lxml's API, which has no depth cap (the parser stops at 2,048)."""
    body = etree.Element("body")
    etree.SubElement(body, "p").text = "Above the pit"
    node = body
    for k in range(levels):
        node = etree.SubElement(node, "div")
        if k % 1000 == 999 and k < levels - 1:
            node.text = f"level {k}"
    node.text = "bottom of the pit "
    span = etree.SubElement(node, "span")
    span.text, span.tail = "noted", " after"
    return body


def test_blocks_and_features_of_a_page_10000_levels_deep():
    """10,000 nested divs, far past Python's recursion limit. Blocks: the p; each "level k"
    text is orphan (its div holds divs 3+ levels down, so no instance) -> owned by its own
    div (block-level); the innermost div has only a span below -> an instance owning
    "bottom of the pit noted after". Features and labels compute on it."""
    page = _flatten(_deep_body(10_000), "http://ex.com/", "", "http://ex.com/", 0, ())
    assert int(page.depth.max()) == 10_002        # BODY 0, p 1, div k at k + 1, span, text
    blocks = page_blocks(page)
    texts = block_texts(page, blocks)
    assert texts == (["Above the pit"] + [f"level {k}" for k in range(999, 9_999, 1000)]
                     + ["bottom of the pit noted after"])
    owners = blocks.owner.tolist()
    assert [tag_name(page.tag[o]) for o in owners] == ["p"] + ["div"] * 10
    assert [int(page.depth[o]) for o in owners[1:-1]] == [k + 1 for k in range(999, 9_999, 1000)]
    assert int(page.depth[owners[-1]]) == 10_000 and blocks.is_instance.tolist()[-1]
    assert not blocks.is_instance[1:-1].any()
    x = block_features(page, blocks, texts, conex_main=np.zeros(page.size, dtype=bool),
                       menu_node=None, site=None)
    assert x.shape[0] == 11


def test_blocks_of_what_the_parser_returns_for_a_deeper_page():
    """Parsed HTML nested 10,000 deep: libxml2 stops at its depth cap, and whatever it
    returns is partitioned into blocks, every text node once."""
    html = ("<body><p>Above the pit</p>" + "<div>" * 10_000 + "<p>Bottom of the pit</p>"
            + "</div>" * 10_000 + "<p>After</p></body>")
    page = parse_page(html, "http://ex.com/")
    blocks = page_blocks(page)
    assert blocks.text_nodes.tolist() == np.flatnonzero(page.tag == TEXT).tolist()
    texts = block_texts(page, blocks)
    assert texts[0] == "Above the pit"
    assert int(blocks.words.sum()) == int(page.words.sum())


def test_hidden_text_is_a_block_of_its_own_even_inline():
    """An unknown inline <h> with display:none inside a paragraph's line: the paragraph's text
    before and after it, and the hidden text, are three blocks."""
    page = parse_page("<body><p>Visible start <h style='display:none'>hidden words</h> visible end</p></body>",
                      "http://ex.com/")
    blocks = page_blocks(page)
    assert block_texts(page, blocks) == ["Visible start", "hidden words", "visible end"]

