"""Text a reader sees: permalink anchors dropped, superscripts and subscripts set apart, link
fragments kept in Markdown only, and the hidden hint of classes a reader on screen does not
see. Every page is flattened by the compiled walk and by its reference, which must agree."""
import numpy as np
import pytest

from sitestrip_bench.output_columns import rendered_words
from sitestrip.transforms import page as P
from sitestrip.transforms.markdown import page_markdown
from sitestrip.transforms.page import (F_RAISED, HINT_BIT, PRODUCT_RULES, SPEC_RULES, TEXT, _flatten,
                                       parse_page, parse_tree)
from sitestrip.transforms.tokens import words
from sitestrip.transforms.tree import text_of
from test_page import check_alignment
from helpers.compiled import require_built

URL = "https://docs.example/guide/page.html"


@pytest.fixture(autouse=True)
def built():
    """Every page here is flattened by transforms/_flatten.c and by its reference."""
    require_built("_flatten")


def page_of(body: str, rules=PRODUCT_RULES):
    """The compiled flattening of `body`, checked against the reference and aligned_nodes."""
    html = f"<html><body>{body}</body></html>"
    page = parse_page(html, URL, rules=rules)
    _, tree, notes = parse_tree(html)
    ref = _flatten(tree, URL, page.title, page.base_url, len(html), notes, rules)
    ref.meta = page.meta
    assert page.differing_fields(ref) == []
    check_alignment(html, URL, rules)
    return page


def text(body: str, rules=PRODUCT_RULES) -> str:
    page = page_of(body, rules)
    return text_of(page, page.tag == TEXT)


def md(body: str) -> str:
    page = page_of(body)
    return page_markdown(page, page.tag == TEXT)


def test_the_compiled_walk_is_the_one_compared():
    assert P._compiled is not None and P._COMPILED


# --- permalink anchors ---

SPHINX = ('<h1>Quickstart<a class="headerlink" href="#quickstart" title="Permalink to this headline">¶</a></h1>'
          '<p>Install it.</p>')


def test_sphinx_headerlink_leaves_heading_text_and_markdown():
    assert text(SPHINX) == "Quickstart\nInstall it."
    assert md(SPHINX) == "# Quickstart\n\nInstall it."
    page = page_of(SPHINX)
    # the anchor is gone as a <script> would be: no node, no link, no word
    assert page.link_node.size == 0 and "¶" not in page.text
    assert int(page.words.sum()) == 3


@pytest.mark.parametrize("body, expected", [
    # Sphinx API entries (dt) and table captions
    ('<dl><dt>click.<b>command</b>(<em>name</em>)<a class="headerlink" href="#click.command">¶</a></dt>'
     '<dd>Makes a command.</dd></dl>', "click.command(name)\nMakes a command."),
    ('<table><caption>Options<a class="headerlink" href="#id3">¶</a></caption><tr><td>x</td></tr></table>',
     "Options\nx"),
    # Sphinx code-block caption: not a title element, named by the headerlink class
    ('<div class="code-block-caption"><span class="caption-text">hello.py</span>'
     '<a class="headerlink" href="#id1" title="Link to this code">¶</a></div>', "hello.py"),
    # GitHub: an aria-hidden icon link before the heading text
    ('<h2><a id="user-content-usage" class="anchor" aria-hidden="true" href="#usage">'
     '<svg class="octicon"><path d="M0"></path></svg></a>Usage</h2>', "Usage"),
    # markdown-it-anchor, AnchorJS, Docusaurus (a zero-width space), a section sign, an emoji
    ('<h2 id="a">Setup <a class="header-anchor" href="#a">#</a></h2>', "Setup"),
    ('<h3>Config<a class="anchorjs-link" aria-label="Anchor" href="#config"> 🔗 </a></h3>', "Config"),
    ('<h2>Install<a href="#install" class="hash-link" title="Direct link to Install">\u200b</a></h2>', "Install"),
    ('<h4><a href="#s2">§</a> Scope</h4>', "Scope"),
    ('<h2>Notes <a href="/p#notes"><span>Permalink</span></a></h2>', "Notes"),
    # a mark link outside a title, marked aria-hidden: a paragraph's anchor icon
    ('<p><a aria-hidden="true" href="#p4">¶</a>Text of the paragraph.</p>', "Text of the paragraph."),
])
def test_permalink_anchors_are_dropped(body, expected):
    assert text(body) == expected


@pytest.mark.parametrize("body, expected", [
    # the whole heading text is its anchor: the text is the heading, kept
    ('<h2 id="x"><a class="header-anchor" href="#x">Title</a></h2>', "Title"),
    # a footnote reference in a heading has a digit
    ('<h2>Results<a href="#fn1">[1]</a></h2>', "Results[1]"),
    # a mark that leads to another page, not to a place
    ('<h2>Next <a href="/next.html">→</a></h2>', "Next →"),
    # a mark link in running text, not marked as an anchor
    ('<p>See <a href="#s">§</a> 4.</p>', "See § 4."),
    # a link text of more than 4 characters without letters is not a mark
    ('<h2>Sum <a href="#t">+-*/=</a></h2>', "Sum +-*/="),
])
def test_other_links_stay(body, expected):
    assert text(body) == expected


def test_the_anchor_tail_and_spacing_are_kept():
    """The tail after a dropped anchor is the title's text; the spacing around it is what the
    HTML has without the anchor ("a" and "b" were not apart in the HTML: they join)."""
    assert text('<h2>Title<a class="headerlink" href="#t">¶</a> continued</h2>') == "Title continued"
    assert text('<h2>a<a href="#t">¶</a>b</h2>') == "ab"


def test_permalinks_are_dropped_under_the_published_rules_too():
    assert text(SPHINX, SPEC_RULES) == "Quickstart\nInstall it."


# --- superscripts and subscripts ---

def test_a_superscript_is_set_apart_in_text_and_a_caret_in_markdown():
    body = "<p>A 2<sup>48</sup> space, a note<sup>[1]</sup>, H<sub>2</sub>O, x <sup>2</sup>.</p>"
    assert text(body) == "A 2 48 space, a note [1], H 2O, x 2."
    out = md(body)
    assert out == "A 2^48 space, a note^[1], H 2O, x ^2."
    assert rendered_words(out) == words(text(body)) == ["A", "2", "48", "space", "a", "note", "1", "H", "2O",
                                                        "x", "2"]


def test_only_the_first_text_of_a_superscript_is_raised():
    page = page_of("<p>e<sup>i<b>pi</b> t</sup>z</p>")
    raised = [page.node_text(i) for i in np.flatnonzero((page.tag == TEXT) & ((page.flags & F_RAISED) != 0))]
    assert raised == ["i"]
    assert text_of(page, page.tag == TEXT) == "e ipi tz"


def test_a_footnote_link_in_a_superscript_keeps_its_fragment_and_the_caret_stays_outside():
    body = '<p>As shown<sup class="reference"><a href="#cite_note-1">[1]</a></sup> before.</p>'
    assert text(body) == "As shown [1] before."
    assert md(body) == "As shown^[\\[1\\]](https://docs.example/guide/page.html#cite_note-1) before."


def test_code_keeps_its_superscripts_verbatim():
    """Inside <pre> the text is the page's, character for character: no space, no caret."""
    body = "<pre>x = 2<sup>8</sup></pre>"
    assert text(body) == "x = 28"
    assert md(body) == "```\nx = 28\n```"


def test_a_superscript_starting_a_line_gets_no_space():
    assert text("<p>a</p><p><sup>*</sup> note</p>") == "a\n* note"
    assert md("<p>a</p><p><sup>1</sup> note</p>") == "a\n\n^1 note"


# --- link fragments ---

def test_fragments_are_in_markdown_links_only():
    body = ('<p>Use <a href="api.html#click.command">command</a>, <a href="#options">options</a>, '
            '<a href="#">top</a>, <a href="/x#a b(c)">odd</a>, <a href="/y#">none</a>.</p>')
    page = page_of(body)
    # link_url names pages: no fragment
    assert page.link_url == ("https://docs.example/guide/api.html", URL, URL, "https://docs.example/x",
                             "https://docs.example/y")
    assert list(page.side.fragment_of().values()) == ["click.command", "options", "a%20b%28c%29"]
    assert page_markdown(page, page.tag == TEXT) == (
        "Use [command](https://docs.example/guide/api.html#click.command), "
        "[options](https://docs.example/guide/page.html#options), top, "
        "[odd](https://docs.example/x#a%20b%28c%29), [none](https://docs.example/y).")


def test_fragments_survive_the_shuffle():
    import pickle
    page = page_of('<p><a href="/a#one">one</a> <img src="/i.png" alt="i"></p>')
    back = pickle.loads(pickle.dumps(page))
    assert back.side == page.side and back.side.fragment == ("one",)
    assert back.side.image_src == ("https://docs.example/i.png",)


# --- the hidden hint ---

@pytest.mark.parametrize("classes, hidden", [
    ("hidden", True), ("is-hidden", True), ("d-none", True), ("invisible", True),
    ("sr-only", True), ("visually-hidden", True), ("visuallyhidden", True), ("screen-reader-text", True),
    ("show-for-sr", True), ("offscreen", True),
    ("print-only", True), ("visible-print-block", True), ("d-none d-print-block", True),
    # responsive: shown at some screen size
    ("d-none d-md-block", False), ("d-md-none", False), ("hidden md:block", False), ("hidden-xs", False),
    ("hidden-sm hidden-md", False), ("hide-on-mobile", False), ("hidden visible-lg-block", False),
    # hidden on paper only, or another property
    ("hidden-print", False), ("d-print-none", False), ("no-print", False), ("overflow-hidden", False),
    ("mw-hide-empty-elt", False),
    ("content", False),
])
def test_hidden_hint_of_class_lists(classes, hidden):
    page = page_of(f'<div class="{classes}">x</div>')
    assert bool(page.hints[1] & HINT_BIT["hidden"]) is hidden


def test_extras_written_before_fragments_were_kept_still_load():
    """A state file's page packed with the five lists of older versions reads with no fragments."""
    import json
    import zlib

    from sitestrip.transforms.meta import NodeExtras
    blob = zlib.compress(json.dumps([[3], ["https://x.org/i.png"], ["alt"], [], []]).encode("utf-8"), 1)
    extras = NodeExtras.unpacked(blob)
    assert extras.image_src == ("https://x.org/i.png",) and extras.fragment == ()
    assert extras.fragment_node.dtype == np.int32 and extras.fragment_node.size == 0


def test_a_copy_link_button_in_a_title_is_dropped_and_other_buttons_stay():
    body = ('<h2 id="why">Why events differ <button class="copy-link" data-link="/p#why">🔗</button></h2>'
            '<p>Text <button>¶</button> and <button>OK</button>.</p><h3>Menu <button>Open</button></h3>')
    assert text(body) == "Why events differ\nText ¶ and OK.\nMenu Open"
