"""main_markdown compiled (transforms/_markdown.c, all of page_markdown in one call) against
its reference, markdown.py's Python code (_Lines, _Structure, _inline_markdown, _Writer).

The compiled rendering must give the reference's Markdown string for string: on hand-built
pages with every construct, on the flanking rules' cases for every ASCII character and some
non-ASCII punctuation and spaces, on page text holding non-BMP characters and lone
surrogates, on link fragments and images as NodeExtras holds them, and on seeded generated
pages; its block contexts and climbs element by element. Every comparison fails when the
extension is not built.
"""
import dataclasses
import html
import random

import numpy as np
import pytest

from sitestrip.transforms import markdown as M
from sitestrip.transforms.markdown import MarkdownOptions, page_markdown
from sitestrip.transforms.page import TEXT, parse_page
from helpers.compiled import require_built, switch_in_fresh_process

URL = "https://docs.example/guide/page.html"
ALL_OPTIONS = [MarkdownOptions(), MarkdownOptions(links=False), MarkdownOptions(images=False)]


@pytest.fixture(autouse=True)
def built():
    """Every test here compares transforms/_markdown.c with its reference (or calls it directly)."""
    require_built("_markdown")


def rendered(page, mask, options=MarkdownOptions(), line_starts=None, compiled=True):
    saved = M._COMPILED
    M._COMPILED = compiled
    try:
        return page_markdown(page, mask, options, line_starts)
    finally:
        M._COMPILED = saved


def assert_same(page, mask=None, options=MarkdownOptions(), line_starts=None):
    mask = page.tag == TEXT if mask is None else mask
    ref = rendered(page, mask, options, line_starts, compiled=False)
    got = rendered(page, mask, options, line_starts, compiled=True)
    assert got == ref
    return got


def page_of(body: str):
    return parse_page(f"<html><body>{body}</body></html>", URL)


def test_the_compiled_rendering_is_built_and_used_by_default(monkeypatch):
    """`pip install` builds transforms/_markdown.c; without it every page would silently take
    the slower reference. With the reference (inline rendering, escapes, contexts, layout)
    made to fail, main_markdown is still written.
    By hand: "there" is strong between spaces (flanking holds): **there**; the link's text
    keeps "a_b" (the underscore is inside a word) and escapes its brackets; the code span holds
    one backtick, so its fence is two, unpadded (neither end is a backtick or a space)."""
    assert M._compiled is not None, "sitestrip.transforms._markdown is not built: reinstall with pip"
    assert M._COMPILED

    def no_reference(*args, **kwargs):
        raise AssertionError("the reference ran")

    monkeypatch.setattr(M, "_inline_markdown", no_reference)
    monkeypatch.setattr(M, "escape_text", no_reference)
    monkeypatch.setattr(M, "escape_line_start", no_reference)
    monkeypatch.setattr(M._Writer, "write", no_reference)
    monkeypatch.setattr(M._Structure, "context", no_reference)
    monkeypatch.setattr(M, "_Lines", no_reference)
    monkeypatch.setattr(M, "_Structure", no_reference)
    page = page_of('<p>Hi <b>there</b>, <a href="/x">a_b [1]</a> and <code>x`y</code>.</p>'
                   '<pre>raw *code*</pre>')
    assert page_markdown(page, page.tag == TEXT) == (
        "Hi **there**, [a_b \\[1\\]](https://docs.example/x) and ``x`y``.\n\n```\nraw *code*\n```")


def test_the_switch_selects_the_reference_for_a_process():
    """SITESTRIP_MARKDOWN=python: the reference for the whole process (the extension stays
    importable, it is just not used)."""
    assert switch_in_fresh_process("markdown", "SITESTRIP_MARKDOWN", "python") == (False, True)


HAND_BUILT = [
    # nesting of links, strong, emphasis and code in every order
    "<p>a <a href='/l'>link <b>bold <i>both <code>code</code></i></b> end</a> z</p>",
    "<p><code>c<a href='/l'>in</a>d</code> <i><b>ib</b></i> <b><a href='/x'>bl</a></b>!</p>",
    "<p><em>em</em><strong>strong</strong><code>`</code><code> </code><code> a </code><code>``x</code></p>",
    "<p>x<em>,</em>y <em>(a)</em>b <b> pad </b> <i></i> <a href='/e'> </a> <a href='" + URL + "'>self</a></p>",
    # images, alone, in links, in code, in a paragraph
    "<figure><a href='/big.png'><img src='/s.png' alt='A [b] *c*'></a><figcaption>cap <img src='/p q.png' "
    "alt='x'> tail</figcaption></figure><p>t <code>c<img src='/c.png' alt='i'>d</code> u</p>",
    # tables: data, with a pipe, with a layout table around, 1×1
    "<table><tr><th>H|1</th><th><b>H2</b></th></tr><tr><td>a</td><td><a href='/t'>l</a></td></tr></table>",
    "<table><tr><td><h2>S</h2><table><tr><td>k</td><td>v</td></tr></table></td></tr></table>"
    "<table><tr><td>one</td></tr></table>",
    # a caption (text outside the cells), rows of different widths, an empty row, a data table
    # inside code (its units written as code), one inside a list item
    "<table><caption>Cap <b>x</b></caption><tr><td>a</td></tr><tr><td>b|</td><td></td><td>d <i>e</i></td></tr>"
    "<tr><td></td></tr><tr><th>f</th><td><div>g</div><div>h</div></td></tr></table>",
    "<pre>code\n<table><tr><td>a</td><td>b</td></tr></table>after</pre>"
    "<ol><li>item<table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table></li></ol>",
    "<table><tr><td></td></tr></table><table><caption>only a caption</caption><tr><td></td><td></td></tr></table>",
    # code blocks with a language and backtick runs; code inside a table
    "<pre class='language-py'>def f():\n    return '```' * 2\n</pre><table><tr><td><pre>x</pre></td><td>y</td></tr>"
    "<tr><td>p</td><td>q</td></tr></table>",
    "<pre>a <b>b</b>\n\n <i>c</i> _d_ \\ </pre>",
    "<pre>a\n   \n&gt; \n \n</pre><ul><li><pre>x\n  \n&gt;&gt;\n</pre></li></ul><blockquote><pre> \n</pre></blockquote>",
    # lists, quotes, headings
    "<ul><li>one <b>1</b></li><li>two<ol><li>x</li><li>y<ul><li>deep</li></ul></li></ol></li></ul>"
    "<blockquote><p>q <em>e</em></p><ul><li>in</li></ul></blockquote><h2>Title #</h2><h3>a <i>b</i> #</h3>",
    # escapes at line starts and inside text
    "<p>1. x</p><p>12) y</p><p># h</p><p>####### seven</p><p>- b</p><p>+</p><p>&gt; q</p><p>===</p>"
    "<p>-- </p><p>~~~x</p><p>1234567890. ten</p><p>\u0661. arabic digit</p>",
    "<p>a*b `c` \\d &lt;e&gt; [f](g) _h_ i_j k_ _l &amp;amp; &amp;#12; &amp;#x; &amp;a1;b &amp;;</p>",
    "<p><a href='/u'>[x](y) ]( _ </a> ](z <a href='/v'>_a_</a>_b <a href='/w'>&amp;#12; &amp;b; &amp;#;</a></p>",
    # hard breaks, line starts inside a page line
    "<p>one<br>two <b>three</b><br><i>four</i></p><div>a<span>b</span></div>",
    # superscripts (a caret item) next to text, links, emphasis, code, images; subscripts;
    # links with fragments, to the page itself and elsewhere
    "<p>2<sup>48</sup> x <sup>2</sup> w<sup><a href='#fn1'>[1]</a></sup> <b>e<sup>x</sup></b> "
    "<code>a<sup>b</sup></code> H<sub>2</sub>O <sup><sup>n</sup></sup><sup></sup>"
    "<img src='/i.png' alt='i'><sup>k</sup></p><pre>m<sup>2</sup></pre><p><sup>lead</sup> tail</p>",
    "<p><a href='#top'>top</a> <a href='#'>self</a> <a href='" + URL + "#a%20b'>there</a> "
    "<a href='/api.html#x(y) z'>api</a></p><h2>T<a class='headerlink' href='#t'>¶</a></h2>",
]


@pytest.mark.parametrize("body", HAND_BUILT)
def test_hand_built_pages_render_as_the_reference(body):
    page = page_of(body)
    for options in ALL_OPTIONS:
        assert_same(page, options=options)
    text = np.flatnonzero(page.tag == TEXT)
    assert_same(page, line_starts=text)
    assert_same(page, mask=(page.tag == TEXT) & (np.arange(page.size) % 3 != 0))


FLANKING_CHARS = [chr(c) for c in range(32, 127)] + [
    "\u00a0", "\u3000", "\u2003", "\u00ab", "\u00bb", "\u2014", "\u00bf", "\u20ac", "\u00b4", "\u3001",
    "\u0301", "\u00e9", "\u4e2d", "\U0001f600", "\U0001d400", "\u2028", "\u200b", "\ufeff"]


@pytest.mark.parametrize("ch", FLANKING_CHARS)
def test_flanking_rules_for_each_character(ch):
    """Each character before, at both inner edges of, and after emphasis and strong (the
    four places _can_wrap reads), and next to a group of the other kind."""
    c = html.escape(ch)
    body = (f"<p>a{c}<em>{c}b{c}</em>{c}d <b>{c}</b> x<i>{c}</i>y {c}<b>e</b><i>{c}f</i>"
            f"<a href='/k'>{c}</a><b>g{c}</b>{c}</p>")
    assert_same(page_of(body))


def with_text(page, text: str):
    """The page with its text replaced by one of the same length (every node's range still
    fits): characters the HTML parser never gives, such as lone surrogates."""
    assert len(text) == len(page.text)
    return dataclasses.replace(page, text=text)


def test_lone_surrogates_and_non_bmp_characters_in_page_text():
    """A lone surrogate is one character of category Cs (neither space nor punctuation), an
    astral character one character: the compiled code reads the text as Python's str."""
    page = page_of("<p>ab <b>cd</b> <i>ef</i>g <code>hi</code> <a href='/j'>kl</a></p>")
    for a, b in [("\ud800", "\udfff"), ("\U0001f600", "\U00010000"), ("\ud83d", "!"), ("_", "\U0010ffff")]:
        chars = list(page.text)
        for k in range(0, len(chars), 2):
            chars[k] = a
        for k in range(1, len(chars), 3):
            chars[k] = b
        got = assert_same(with_text(page, "".join(chars)))
        assert a in got


# --- seeded generated pages ---

ALPHABET = (list("abcXYZ019 _*`\\<>[]()&#;!.,-+=~|") + ["  ", "\n", "1. ", "# ", "&amp;", "&lt;"]
            + ["\u00a0", "\u3000", "\u00bb", "\u2014", "\u00e9", "\U0001f600", "\u0661"])
INLINE = ["b", "strong", "i", "em", "code", "kbd", "a", "span", "cite", "sup", "sub"]
BLOCK = ["p", "div", "h1", "h3", "blockquote", "pre", "ul", "ol", "table", "br", "img", "figure"]


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6))).replace("<", "&lt;").replace(">", "&gt;")


def random_inline(rng: random.Random, depth: int) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.45 or depth > 3:
            parts.append(random_text(rng))
        elif r < 0.55:
            parts.append(f"<img src='/i{rng.randint(0, 3)}.png' alt='{random_text(rng)}'>")
        elif r < 0.6:
            parts.append("<br>")
        else:
            tag = rng.choice(INLINE)
            href = f" href='{rng.choice(['/a', '/b c', URL, '#top', '/p(1)', '/q#x y', URL + '#'])}'" \
                if tag == "a" else ""
            parts.append(f"<{tag}{href}>{random_inline(rng, depth + 1)}</{tag}>")
    return "".join(parts)


def random_block(rng: random.Random, depth: int) -> str:
    tag = rng.choice(BLOCK)
    if depth > 3 or tag in ("p", "h1", "h3", "div"):
        return f"<{tag}>{random_inline(rng, 0)}</{tag}>"
    if tag == "br":
        return "<br>"
    if tag == "img":
        return f"<p><img src='/x.png' alt='{random_text(rng)}'>{random_text(rng)}</p>"
    if tag == "pre":
        return f"<pre class='language-go'>{random_inline(rng, 0)}\n{random_text(rng)}</pre>"
    if tag in ("ul", "ol"):
        items = "".join(f"<li>{random_inline(rng, 0)}{random_block(rng, depth + 1) if rng.random() < 0.3 else ''}</li>"
                        for _ in range(rng.randint(1, 3)))
        return f"<{tag}>{items}</{tag}>"
    if tag == "table":
        rows = "".join("<tr>" + "".join(f"<td>{random_inline(rng, 0)}</td>" for _ in range(rng.randint(1, 3)))
                       + "</tr>" for _ in range(rng.randint(1, 3)))
        return f"<table>{rows}</table>"
    inner = "".join(random_block(rng, depth + 1) for _ in range(rng.randint(1, 3)))
    return f"<{tag}>{inner}<figcaption>{random_inline(rng, 0)}</figcaption></{tag}>" if tag == "figure" \
        else f"<{tag}>{inner}</{tag}>"


def test_generated_pages_render_as_the_reference():
    """400 seeded random pages (nested inline markup over text with every escapable
    character, lists, tables, code, quotes, images), each with a random main-content mask and
    random line starts, under the three option sets."""
    rng = random.Random(12)
    for _ in range(400):
        body = "".join(random_block(rng, 0) for _ in range(rng.randint(1, 5)))
        page = page_of(body)
        text = np.flatnonzero(page.tag == TEXT)
        mask = page.tag == TEXT
        if rng.random() < 0.5:
            mask[text[[rng.random() < 0.3 for _ in text]]] = False
        starts = text[[rng.random() < 0.3 for _ in text]] if rng.random() < 0.5 else None
        assert_same(page, mask, rng.choice(ALL_OPTIONS), starts)


# Characters the parser never leaves in a text node (it turns whitespace at a node's edges
# into separators) or never gives at all: placed by replacing the page's text.
RAW_ALPHABET = list(" \t\n\u00a0\u3000\u2003\u1680\x1c\x85 _*`\\<>[]()&#;!.,-+=~|aZ9") + [
    "\ud800", "\udfff", "\U0001f600", "\u00bb", "\u0661", "\u2028", "\x00", "&#1;", "&a;", "](", "1. ", "## "]


def replaced_text(rng: random.Random, length: int) -> str:
    out = ""
    while len(out) < length:
        out += rng.choice(RAW_ALPHABET)
    return out[:length]


def test_whitespace_at_node_edges_by_hand():
    """Text replaced so that nodes begin or end with whitespace. Code " a " is padded (it
    begins and ends with a space and is not all spaces: CommonMark would strip one each side);
    code "\u3000" is not (not an ASCII space); a link over " " alone is no link (its text is
    blank); emphasis over "\u3000b" cannot open (str.isspace), over "b\u00a0" cannot close."""
    page = page_of("<p>xx<code>xxx</code>y<code>x</code>y<a href='/e'>x</a>z <i>xx</i> <b>xx</b></p>")
    text = "xx" + " a " + "y" + "\u3000" + "y" + " " + "z" + "\u3000b" + "b\u00a0"
    got = assert_same(with_text(page, text))
    assert got == "xx`  a  `y`\u3000`y z \u3000b b\u00a0"


def test_generated_pages_with_replaced_text_render_as_the_reference():
    """300 seeded random pages as above, the text of each replaced character for character by
    whitespace of every kind, escapable characters, surrogates and astral characters."""
    rng = random.Random(1212)
    for _ in range(300):
        body = "".join(random_block(rng, 0) for _ in range(rng.randint(1, 5)))
        page = page_of(body)
        page = with_text(page, replaced_text(rng, len(page.text)))
        text = np.flatnonzero(page.tag == TEXT)
        starts = text[[rng.random() < 0.3 for _ in text]] if rng.random() < 0.5 else None
        assert_same(page, None, rng.choice(ALL_OPTIONS), starts)


LINE_PIECES = ["#", "######", "#######", ">", "-", "+", "=", "~", "~~", "1", "123456789", "1234567890", ".", ")",
               " ", "\t", "\n", "\u00a0", "\u3000", "\u0661", "\u0966", "\uff11", "\u00b2", "x", "*", "\\", "\U0001f600"]


def test_line_start_escapes_as_the_reference():
    """escape_line_start (two regexes: \\s and \\d as re reads them in str patterns, `$` also
    before a final newline) against the compiled line_start on every string of up to three
    pieces, and on 3,000 seeded random ones of up to eight. By hand: "###### x" is a heading
    (six marks), "####### x" is not; "\u0661. x" is a numbered line (\\d is any decimal digit),
    "\u00b2. x" is not (a superscript is no decimal); "-- \\n" is a setext underline."""
    line_start = M._compiled.line_start
    assert line_start("###### x") == "\\###### x" and line_start("####### x") == "####### x"
    assert line_start("\u0661. x") == "\u0661\\. x" and line_start("\u00b2. x") == "\u00b2. x"
    assert line_start("-- \n") == "\\-- \n"
    strings = [""] + [a + b + c for a in LINE_PIECES for b in LINE_PIECES + [""] for c in LINE_PIECES + [""]]
    rng = random.Random(7)
    strings += ["".join(rng.choice(LINE_PIECES) for _ in range(rng.randint(1, 8))) for _ in range(3000)]
    for s in strings:
        assert line_start(s) == M.escape_line_start(s), repr(s)


def test_contexts_of_every_element_as_the_reference():
    """The compiled contexts against _Structure.context for every element (and -1, the
    page's) of the hand-built pages (layout tables among them) and 150 seeded generated ones, each element asked alone and
    all at once (the memo must not change an answer). By hand, on the first page: the text
    in the second cell of the data table has that table and cell; the item inside the quote
    has the quote and the item as its nest, outermost first; h3 gives heading 3."""
    def check(page):
        structure = M._Structure(page, MarkdownOptions())
        elements = np.arange(-1, page.size, dtype=np.int64)
        args = (np.ascontiguousarray(page.parent, dtype=np.int32), np.ascontiguousarray(page.tag, dtype=np.int32),
                np.ascontiguousarray(page.end, dtype=np.int32), M._ROLE_OF, M._INSIDE_OF)
        at_once = M._compiled.contexts(elements, *args)
        for k, e in enumerate(elements.tolist()):
            ref = structure.context(e)
            expected = (ref.heading, ref.pre, ref.cell, ref.table, ref.li, ref.nest)
            assert tuple(column[k] for column in at_once) == expected
            assert tuple(column[0] for column in M._compiled.contexts(np.array([e], dtype=np.int64), *args)) == expected
        return structure, at_once

    page = page_of("<table><tr><td>a</td><td><b>b</b></td></tr></table><blockquote><ul><li>x</li></ul></blockquote>"
                   "<h3>t</h3><pre>p</pre>")
    _, got = check(page)
    text = {page.node_text(i): i for i in np.flatnonzero(page.tag == TEXT).tolist()}
    b, x, t = text["b"] + 1, text["x"] + 1, text["t"] + 1          # + 1: index -1 comes first
    table = int(np.flatnonzero(page.tag == M._TABLE)[0])
    assert got[3][b] == table and got[2][b] == int(page.parent[page.parent[text["b"]]])
    quote, li = int(np.flatnonzero(page.tag == M._QUOTE)[0]), int(np.flatnonzero(page.tag == M._LI)[0])
    assert got[5][x] == (quote, li) and got[4][x] == li and got[0][t] == 3
    for body in HAND_BUILT:
        check(page_of(body))
    rng = random.Random(5)
    for _ in range(150):
        check(page_of("".join(random_block(rng, 0) for _ in range(rng.randint(1, 5)))))


def test_node_extras_read_as_the_reference_reads_them():
    """Links, images and code languages as NodeExtras holds them, in the cases the parser
    never makes: two fragments for one link (both appended), a fragment whose node is no link
    (the next link takes it, as searchsorted places it), images out of document order and one
    twice, a <pre> with two languages (the last wins, as in a dict). By hand: the first link
    keeps both fragments; a fragment past the last link is an IndexError both ways."""
    from sitestrip.transforms.meta import NodeExtras
    page = page_of("<p><a href='/a'>one</a> two <a href='/b'>three</a> <img src='/i.png' alt='i'> "
                   "<img src='/j.png' alt='j'></p><pre class='language-go'>x := 1</pre>")
    a, b = page.link_node.tolist()
    img = np.flatnonzero(page.tag == M._ID["img"]).astype(np.int32)
    pre = np.flatnonzero(page.tag == M._ID["pre"]).astype(np.int32)
    extras = NodeExtras(image_node=img[::-1].copy(),
                        image_src=("https://x.example/2.png", "https://x.example/1 (b).png"),
                        image_alt=("two", "one [1]"), code_node=np.repeat(pre, 2), code_lang=("go", "rust"),
                        fragment_node=np.array([a, a, a + 1], dtype=np.int32), fragment=("f", "g", "h"))
    odd = dataclasses.replace(page, side=extras)
    for options in ALL_OPTIONS:
        assert_same(odd, options=options)
    got = assert_same(odd)
    assert "[one](https://docs.example/a#f#g)" in got and "[three](https://docs.example/b#h)" in got
    assert "```rust\n" in got
    past = dataclasses.replace(page, side=dataclasses.replace(extras, fragment_node=np.array([b + 1], dtype=np.int32),
                                                              fragment=("z",)))
    for compiled in (False, True):
        with pytest.raises(IndexError):
            rendered(past, past.tag == TEXT, compiled=compiled)


def test_a_page_that_is_no_tree_in_order_is_refused():
    """The compiled rendering reads the page's arrays unchecked only after checking that each
    node's parent comes before it and its subtree ends after it, within the page, and that the
    arrays have the page's length."""
    page = page_of("<p>a <b>b</b></p><p>c</p>")
    parent = page.parent.copy()
    parent[3] = 5
    with pytest.raises(ValueError):
        rendered(dataclasses.replace(page, parent=parent), page.tag == TEXT)
    end = page.end.copy()
    end[2] = page.size + 1
    with pytest.raises(ValueError):
        rendered(dataclasses.replace(page, end=end), page.tag == TEXT)
    with pytest.raises(ValueError):
        rendered(dataclasses.replace(page, line=page.line[:-1]), page.tag == TEXT)


def test_a_data_table_inside_code_by_hand():
    """A tree the HTML parser never makes (it closes <pre> before <table>), flattened from
    elements built by hand: the first <pre> starts with code, so the table's units after it
    belong to that code block and are written raw, one line each (the compiled layout hands
    this block back to _Writer.code_block); the second <pre> starts with its table, which is
    written as a table, and "z" after it is a code block of its own."""
    from lxml import etree
    from sitestrip.transforms import page as P
    body = etree.fromstring("<body><pre>code<table><tr><td>a</td><td>b|</td></tr><tr><td>c</td></tr></table>after"
                            "</pre><pre><table><tr><td>x</td><td>y</td></tr></table>z</pre></body>")
    page = P._flatten(body, URL, "T", URL, 123, (), P.PRODUCT_RULES)
    assert assert_same(page) == "```\ncode\na\nb|\nc\nafter\n```\n\n| x | y |\n|---|---|\n\n```\nz\n```"


def test_walks_up_from_nodes_as_the_reference():
    """The compiled climbs (around: container and nearest link, strong, emphasis, code;
    anchors: the structural anchor) against _Structure's numpy climbs, for every node of the
    hand-built pages and 150 seeded generated ones, under links kept and dropped. By hand, on
    <p><a><b>x</b></a></p>: x's container is the <p>, its link the <a>, its strong the <b>,
    no emphasis or code; x's structural anchor is -1 (no heading, list, quote, table or code
    around it)."""
    def both(page, options):
        s = M._Structure(page, options)
        nodes = np.arange(page.size, dtype=np.int64)
        parent, tag = page.parent.astype(np.int32), page.tag.astype(np.int32)
        container, inline = np.empty(page.size, dtype=np.int64), np.full((4, page.size), -1, dtype=np.int64)
        M._compiled.around(nodes, parent, tag, M.BLOCK_LEVEL.view(np.uint8), M._KIND_OF.view(np.uint8),
                           s.linked.view(np.uint8), container, inline)
        anchor = np.empty(page.size, dtype=np.int64)
        M._compiled.anchors(nodes, parent, tag, M._STRUCTURAL.view(np.uint8), anchor)
        ref_container, ref_inline = s.around(nodes)
        assert container.tolist() == ref_container.tolist() and inline.tolist() == ref_inline.tolist()
        assert anchor.tolist() == s.structural_anchor(nodes).tolist()
        return container, inline, anchor

    page = page_of("<p><a href='/l'><b>x</b></a></p>")
    x = int(np.flatnonzero(page.tag == TEXT)[0])
    container, inline, anchor = both(page, MarkdownOptions())
    p_, a_, b_ = (int(np.flatnonzero(page.tag == M._ID[t])[0]) for t in ("p", "a", "b"))
    assert container[x] == p_ and inline[:, x].tolist() == [a_, b_, -1, -1] and anchor[x] == -1
    for body in HAND_BUILT:
        for options in ALL_OPTIONS:
            both(page_of(body), options)
    rng = random.Random(9)
    for _ in range(150):
        both(page_of("".join(random_block(rng, 0) for _ in range(rng.randint(1, 5)))), rng.choice(ALL_OPTIONS))
