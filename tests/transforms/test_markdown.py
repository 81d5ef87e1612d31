"""main_markdown (transforms/markdown.py): every construct on a hand-built page, the expected
Markdown written out by hand, and parsed back with a CommonMark parser where the structure is
the point; its words, as a CommonMark reader reads them, equal main_text's
(`rendered_words`)."""
import re

import numpy as np
import pytest
from markdown_it import MarkdownIt

from sitestrip_bench.output_columns import rendered_words
from sitestrip.transforms.markdown import MarkdownOptions, escape_line_start, page_markdown
from sitestrip.transforms.page import TEXT, parse_page
from sitestrip.transforms.tokens import words

URL = "https://docs.example/guide/page.html"
COMMONMARK = MarkdownIt("commonmark").enable("table")


def md(body: str, options: MarkdownOptions = MarkdownOptions(), mask=None) -> str:
    page = parse_page(f"<html><body>{body}</body></html>", URL)
    return page_markdown(page, page.tag == TEXT if mask is None else mask(page), options)


def html_of(markdown: str) -> str:
    return COMMONMARK.render(markdown)


def test_headings_by_level():
    body = "".join(f"<h{k}>Level {k} <em>title</em></h{k}>" for k in range(1, 7))
    assert md(body) == "\n\n".join(f"{'#' * k} Level {k} *title*" for k in range(1, 7))
    assert [f"<h{k}>" in html_of(md(body)) for k in range(1, 7)] == [True] * 6


def test_paragraphs_inline_markup_and_hard_breaks():
    """<b><i>: strong outside em (the fixed nesting order); the code span holds a backtick, so
    its fence is two backticks, padded; the relative link resolves with its fragment; a link to
    a place on the page itself (an in-page anchor) is a link there, one to the page with no
    fragment is text; <br> is a hard break; a second <p> is a new paragraph."""
    body = ('<p>Plain <em>em</em>, <strong>strong</strong>, <b><i>both</i></b>, '
            '<code>a `tick`</code> and <a href="../api.html#x">the API</a>.<br>'
            'Next <a href="#top">line</a> <a href="#">here</a>.</p><p>Second paragraph.</p>')
    assert md(body) == ("Plain *em*, **strong**, ***both***, `` a `tick` `` and "
                        "[the API](https://docs.example/api.html#x).\\\n"
                        "Next [line](https://docs.example/guide/page.html#top) here.\n\nSecond paragraph.")
    html = html_of(md(body))
    # CommonMark reads *** as emphasis around strong: the same two marks on the same words
    assert "<em>em</em>" in html and "<em><strong>both</strong></em>" in html
    assert "<code>a `tick`</code>" in html and "<br />" in html and html.count("<p>") == 2


def test_text_that_looks_like_syntax_is_escaped():
    """Stars, backticks, angle brackets, '](' and edge underscores are escaped; an underscore
    inside a word (snake_case) is not; so are block markers at a line's start."""
    body = ("<p>2 * 3 = 6, `x`, <code>&lt;b&gt;</code>, a &lt;tag&gt;, [a](b), _under_ and snake_case</p>"
            "<p>1. not a list</p><p># not a heading</p><p>- not a bullet</p><p>&gt; not a quote</p>")
    out = md(body)
    assert out.split("\n\n") == [
        "2 \\* 3 = 6, \\`x\\`, `<b>`, a \\<tag>, [a\\](b), \\_under\\_ and snake_case",
        "1\\. not a list", "\\# not a heading", "\\- not a bullet", "\\> not a quote"]
    html = html_of(out)
    for tag in ("<ol>", "<ul>", "<h1>", "<blockquote>", "<em>", "<a "):
        assert tag not in html, tag
    assert escape_line_start("12) x") == "12\\) x" and escape_line_start("---") == "\\---"


def test_nested_lists():
    """Three levels: a ul item holding an ol holding a ul. Item content starts after the marker
    ('- ' is 2 columns, '1. ' is 3), so each level is indented to its parent's content column."""
    body = ("<ul><li>one</li><li>two<ol><li>two.1</li><li>two.2<ul><li>deep</li></ul></li></ol></li>"
            "<li>three</li></ul>")
    assert md(body) == "- one\n- two\n  1. two.1\n  2. two.2\n     - deep\n- three"
    html = html_of(md(body))
    assert re.sub(r"\s", "", html) == ("<ul><li>one</li><li>two<ol><li>two.1</li><li>two.2<ul><li>deep</li>"
                                       "</ul></li></ol></li><li>three</li></ul>")


def test_a_list_item_under_an_item_not_written_is_not_indented():
    """The outer item's own text is not main content: its inner item is written at the left
    margin. Indented under nothing, it would be a paragraph or, at 4 spaces, a code block."""
    body = "<ul><li><span>outer</span><ul><li>inner one</li><li>inner two</li></ul></li></ul>"

    def without_outer(page):
        mask = page.tag == TEXT
        mask[[i for i in np.flatnonzero(mask) if page.node_text(i) == "outer"]] = False
        return mask
    assert md(body, mask=without_outer) == "- inner one\n- inner two"


def test_lists_and_paragraphs_are_apart():
    """A paragraph after a list, an ordered list after a bullet list: a blank line each, so
    neither is read as a continuation of the list."""
    body = "<ul><li>a</li></ul><p>para</p><ul><li>b</li></ul><ol><li>c</li><li>d</li></ol>"
    assert md(body) == "- a\n\npara\n\n- b\n\n1. c\n2. d"


def test_table_with_a_pipe_in_a_cell():
    """Header row first; the pipe in a cell escaped; the empty cell stays a cell; a row of the
    table without any text is left out."""
    body = ("<table><thead><tr><th>Name</th><th>Value</th></tr></thead><tbody>"
            "<tr><td>a|b</td><td><em>1</em></td></tr><tr><td>c</td><td></td></tr>"
            "<tr><td></td><td></td></tr></tbody></table>")
    assert md(body) == "| Name | Value |\n|---|---|\n| a\\|b | *1* |\n| c |  |"
    html = html_of(md(body))
    assert "<th>Name</th>" in html and "<td>a|b</td>" in html and html.count("<tr>") == 3


def test_layout_tables_are_read_through():
    """A table holding a table (or a heading, a list...) lays the page out: its text is
    written as the blocks it holds; the inner table is a data table."""
    body = ("<table><tr><td><h2>Story</h2><p>Text of the story.</p>"
            "<table><tr><td>k</td><td>v</td></tr></table></td></tr></table>")
    assert md(body) == "## Story\n\nText of the story.\n\n| k | v |\n|---|---|"


def test_code_block_keeps_indentation_and_language():
    """<pre> text verbatim (indentation, blank line), the language from Sphinx's wrapper class;
    a backtick run of three inside the code makes the fence four long."""
    body = ('<div class="highlight-python"><div class="highlight"><pre>'
            '<span class="k">def</span> f():\n    if x:\n\n        return "```"\n</pre></div></div>')
    out = md(body)
    assert out == '````python\ndef f():\n    if x:\n\n        return "```"\n````'
    assert '<code class="language-python">def f():\n    if x:\n\n        return &quot;```&quot;\n</code>' in html_of(out)


def test_code_block_inside_a_list_item_is_indented_with_it():
    body = '<ol><li>Run:<pre><code class="language-sh">make\n  test</code></pre></li></ol>'
    out = md(body)
    assert out == "1. Run:\n\n   ```sh\n   make\n     test\n   ```"
    assert '<li>\n<p>Run:</p>\n<pre><code class="language-sh">make\n  test\n</code></pre>' in html_of(out)


def test_block_quote():
    body = "<blockquote><p>Quoted <em>text</em>.</p><p>More.</p></blockquote><p>After.</p>"
    out = md(body)
    assert out == "> Quoted *text*.\n>\n> More.\n\nAfter."
    assert re.sub(r"\s", "", html_of(out)) == ("<blockquote><p>Quoted<em>text</em>.</p><p>More.</p>"
                                               "</blockquote><p>After.</p>")


def test_quotes_and_list_items_nest_in_their_order():
    """A forum thread: list items holding a quote and a byline; a quote holding a list. Each
    line is led by its containers' prefixes outermost first, so the byline stays in its item
    (3 spaces, the width of "1. ") instead of becoming an indented code block."""
    body = ("<ol><li><blockquote><p>Quoted post</p></blockquote><div>#6 Ann, Aug 6</div></li>"
            "<li><blockquote>Second post</blockquote></li></ol>"
            "<blockquote><ul><li>a</li><li>b</li></ul></blockquote>")
    out = md(body)
    assert out == ("1. > Quoted post\n\n   #6 Ann, Aug 6\n\n2. > Second post\n\n"
                   "> - a\n> - b")
    html = re.sub(r"\s", "", html_of(out))
    assert html == ("<ol><li><blockquote><p>Quotedpost</p></blockquote><p>#6Ann,Aug6</p></li>"
                    "<li><blockquote><p>Secondpost</p></blockquote></li></ol>"
                    "<blockquote><ul><li>a</li><li>b</li></ul></blockquote>")


def test_an_item_after_a_loose_item_is_apart():
    """An item with a second paragraph: the next item follows a blank line (a bare newline
    would make "2." part of that paragraph)."""
    body = "<ol><li><b>First</b><p>More about it.</p></li><li><b>Second</b></li></ol>"
    out = md(body)
    assert out == "1. **First**\n\n   More about it.\n\n2. **Second**"
    assert html_of(out).count("<li>") == 2


def test_links_and_images_kept_or_dropped():
    """The figure's image is written (its figure holds main text: the caption); the logo in a
    header without main text is not."""
    body = ('<div class="head"><img src="/logo.png" alt="Logo"></div>'
            '<figure><a href="/big.png"><img src="/small.png" alt="A [small] chart"></a>'
            '<figcaption>Sales by <a href="https://other.example/q">quarter</a></figcaption></figure>')

    def no_logo(page):
        return page.tag == TEXT
    kept = md(body, mask=no_logo)
    assert kept == ("[![A \\[small\\] chart](https://docs.example/small.png)](https://docs.example/big.png)\n\n"
                    "Sales by [quarter](https://other.example/q)")
    assert md(body, MarkdownOptions(links=False)) == "![A \\[small\\] chart](https://docs.example/small.png)\n\nSales by quarter"
    assert md(body, MarkdownOptions(images=False)) == "Sales by [quarter](https://other.example/q)"
    html = html_of(kept)
    assert '<a href="https://docs.example/big.png"><img src="https://docs.example/small.png" alt="A [small] chart"' in html


def test_only_the_selected_nodes_are_written():
    """The mask is the main-content selection: the navigation's text is not in it, and nothing
    of it reaches the Markdown."""
    body = "<nav><a href='/a'>Home</a> <a href='/b'>Docs</a></nav><h1>Title</h1><p>Body text.</p>"

    def main_only(page):
        mask = page.tag == TEXT
        nav = int(np.flatnonzero(page.tag == page.tag[1])[0])      # node 1 is <nav>
        mask[nav:page.end[nav]] = False
        return mask
    assert md(body, mask=main_only) == "# Title\n\nBody text."


def test_markdown_words_are_main_text_words_on_every_construct():
    from sitestrip.transforms.tree import text_of
    body = ("<h1>T</h1><p>a <b>b</b>, <a href='/x'>c</a>.</p><ul><li>d<ol><li>e</li></ol></li></ul>"
            "<table><tr><th>f</th><th>g|h</th></tr><tr><td>1</td><td>2</td></tr></table>"
            "<pre class='language-c'>int i;\n  i++;</pre><blockquote>q</blockquote>"
            "<figure><img src='/i.png' alt='alt words'><figcaption>cap</figcaption></figure><p>1. x</p>")
    page = parse_page(f"<body>{body}</body>", URL)
    mask = page.tag == TEXT
    out = page_markdown(page, mask)
    assert rendered_words(out) == words(text_of(page, mask))
    assert "alt words" in out and "```c" in out


def test_markup_inside_a_word_keeps_the_word():
    """A link or strong text that ends inside a word ("GT350" + "R") is read back as one word;
    brackets in a link's text are escaped so the link stays one link."""
    body = "<p>Shelby <a href='/g'>GT350</a>R, <b>GT</b>350 and <a href='/n'>note [1]</a>.</p>"
    out = md(body)
    assert out == ("Shelby [GT350](https://docs.example/g)R, **GT**350 and "
                   "[note \\[1\\]](https://docs.example/n).")
    assert rendered_words(out) == ["Shelby", "GT350R", "GT350", "and", "note", "1"]
    assert html_of(out).count("<a href") == 2


def test_emphasis_marks_only_where_commonmark_reads_them():
    """`*` cannot close after punctuation (here a code span's backtick) when a letter follows:
    the marks around the code are dropped, or the reader would see stars and lose the word
    "Ax"; emphasis between spaces keeps its marks."""
    body = "<p>the line <em><code>A</code></em>x + <em><code>B</code></em>y is <em>straight</em></p>"
    out = md(body)
    assert out == "the line `A`x + `B`y is *straight*"
    assert rendered_words(out) == ["the", "line", "Ax", "By", "is", "straight"]


def test_main_text_line_starts_inside_a_page_line():
    """A drop cap is its own block: main_text writes "O" and "n Saturday" on two lines, so
    Markdown puts a space between them (line_starts: the blocks' first text nodes); without
    line_starts it follows the page ("On")."""
    page = parse_page("<body><p><span class='dropcap'>O</span>n Saturday we ate.</p></body>", URL)
    text = np.flatnonzero(page.tag == TEXT)
    assert page_markdown(page, page.tag == TEXT, line_starts=text) == "O n Saturday we ate."
    assert page_markdown(page, page.tag == TEXT) == "On Saturday we ate."


def test_empty_selection_is_empty_markdown():
    assert md("<p>x</p>", mask=lambda page: np.zeros(page.size, dtype=bool)) == ""


@pytest.mark.parametrize("depth", [3000])
def test_deep_nesting_without_recursion(depth):
    """3,000 nested lists (lxml caps depth at 2048; whatever it keeps is written) in bounded
    time and no RecursionError."""
    body = "<ul><li>x" * depth + "</li></ul>" * depth
    out = md(body)
    assert out.startswith("- x\n  - x") and out.count("- x") > 100
