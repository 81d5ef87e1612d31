"""Text as a browser shows it (transforms/text.py): one joiner behind text_of, subtree_text,
block texts and menu link texts. Expected strings are derived by hand from the HTML."""
import pickle

import numpy as np
import pytest

from sitestrip.transforms.blocks import block_texts, page_blocks, render_blocks
from sitestrip.transforms.etdm import UNMAPPED, EtdmParams, map_pages
from sitestrip.transforms.menex import links_in
from sitestrip.transforms.page import F_PRE, F_SPACE_BEFORE, SPEC_RULES, TAG_ID, TEXT, parse_page, tag_name
from sitestrip.transforms.tokens import count_words
from sitestrip.transforms.tree import subtree_text, text_of
from helpers.compiled import require_built


def page_of(body, rules=None):
    html = f"<html><body>{body}</body></html>"
    return parse_page(html, "http://ex.com/") if rules is None else parse_page(html, "http://ex.com/", rules=rules)


def texts_everywhere(page):
    """The page's text three ways: text_of, BODY's subtree_text, and its blocks rendered as
    main_text renders them (all blocks selected)."""
    blocks = page_blocks(page)
    own = block_texts(page, blocks)
    return text_of(page), subtree_text(page, 0), render_blocks(own, np.ones(blocks.count, dtype=bool))


def test_no_space_before_punctuation_the_html_does_not_have():
    """"a <a>b</a>, c": "a " ends in whitespace (b gets a space before it); ", c" starts
    right after </a>, with no whitespace → "a b, c". design §1's single spaces gave "a b , c"."""
    page = page_of("<p>a <a href='/b'>b</a>, c</p>")
    assert texts_everywhere(page) == ("a b, c",) * 3
    assert text_of(page_of("<p>a <a href='/b'>b</a>, c</p>", SPEC_RULES)) == "a b , c"


def test_markup_inside_a_word_does_not_split_it():
    """"x<b>y</b>z": no whitespace anywhere, and the text runs into and out of <b> (no element
    ends where another begins) → one word "xyz", as a browser shows it; one token."""
    page = page_of("<p>x<b>y</b>z</p>")
    assert texts_everywhere(page) == ("xyz",) * 3
    assert count_words(text_of(page)) == 1
    # the page still counts its text nodes' tokens (design §1 words are per node)
    assert int(page.words.sum()) == 3


def test_whitespace_between_elements_is_kept_as_one_space():
    """"a <b>b</b>" keeps its space (trailing whitespace of "a "); "<b>one</b> <i>two</i>"
    has a whitespace-only text between the elements (not a node, design §1) → "one two";
    "&nbsp;" is whitespace to a browser's line layout too."""
    assert text_of(page_of("<p>a <b>b</b></p>")) == "a b"
    assert text_of(page_of("<p><b>one</b> <i>two</i></p>")) == "one two"
    assert text_of(page_of("<p><b>one</b>&nbsp;<i>two</i></p>")) == "one two"
    assert text_of(page_of("<p>(<a href='/x'>link</a>)</p>")) == "(link)"


def test_words_in_adjacent_elements_are_set_apart():
    """"<a>One</a><a>Two</a>": one element ends and another begins between two letters, which
    pages set apart with CSS → "One Two" (not the word "OneTwo"). Same for an <img> between
    two words. Punctuation there is not set apart: "<a>One</a><span>,</span>" → "One,"."""
    assert text_of(page_of("<p><a href='/1'>One</a><a href='/2'>Two</a></p>")) == "One Two"
    assert text_of(page_of("<p>left<img src='i.png'>right</p>")) == "left right"
    assert text_of(page_of("<p><a href='/1'>One</a><span>,</span> then</p>")) == "One, then"


def test_pre_keeps_line_breaks_and_indentation_verbatim():
    """The newline right after <pre> is dropped (as a browser does) and the trailing newline
    before </pre> too; inside, the indentation, the blank line and the whitespace-only runs
    between highlighted spans ("\\n\\n" between "return" spans is not a text node) are kept.
    The paragraphs around are one line each."""
    html = ("<p>Before:</p><pre>\n<span class=k>def</span> f(x):\n    <span class=k>if</span> x:\n\n"
            "        <span class=k>return</span>  1\n</pre><p>After.</p>")
    page = page_of(html)
    code = "def f(x):\n    if x:\n\n        return  1"
    assert texts_everywhere(page) == (f"Before:\n{code}\nAfter.",) * 3
    pre = list(page.tag).index(TAG_ID["pre"])
    assert subtree_text(page, pre) == code
    inside = [i for i in np.flatnonzero(page.tag == TEXT) if pre < i < page.end[pre]]
    assert all(page.flags[i] & F_PRE for i in inside)
    # Tokens and character counts are those of each node's collapsed text: "def", "f(x):",
    # "if", "x:", "return", "1" → 7 tokens (def f x if x return 1), 3+5+2+2+6+1 = 19 characters.
    assert int(page.words[inside].sum()) == 7
    assert page.chars[inside].tolist() == [3, 5, 2, 2, 6, 1]
    # design §1's text: collapsed, single spaces
    assert text_of(page_of(html, SPEC_RULES)) == "Before:\ndef f(x): if x: return 1\nAfter."
    # Two whitespace-only runs in a row (the tails of <b> and of the empty <i>) both go in
    # front of the next text: "a", then "\n" + "\n" + "b".
    assert text_of(page_of("<pre><b>a</b>\n<i></i>\n<b>b</b></pre>")) == "a\n\nb"


def test_br_is_a_line_break_and_a_block_one_line():
    """<br> is a line boundary: "one<br>two <br> three" → three lines; consecutive <br>s
    give one line break (one line per block, no blank lines). Nested blocks are lines of
    their own and the text after them goes on a new line."""
    assert text_of(page_of("<p>one<br>two <br> three<br><br>four</p>")) == "one\ntwo\nthree\nfour"
    page = page_of("<div>outer <b>start</b><div>inner, <a href='/x'>link</a>.</div>outer end</div>")
    assert texts_everywhere(page) == ("outer start\ninner, link.\nouter end",) * 3


def test_text_with_nodes_left_out_never_glues_words():
    """text_of over a mask that leaves out "b" of "a<i>b</i>c" (no whitespace anywhere):
    the words on either side get a space ("a c"), not the new word "ac"."""
    page = page_of("<p>a<i>b</i>c</p>")
    text = np.flatnonzero(page.tag == TEXT)
    mask = np.zeros(page.size, dtype=bool)
    mask[text[[0, 2]]] = True
    assert text_of(page) == "abc"
    assert text_of(page, mask) == "a c"


def test_menu_link_texts_use_the_same_joiner():
    """A link's text "Getting <b>start</b>ed" → "Getting started" (MenEx link texts)."""
    page = page_of("<ul><li><a href='/start'>Getting <b>start</b>ed</a></li>"
                   "<li><a href='/faq'>FAQ</a>, more</li></ul>")
    assert links_in(page, 0) == [("http://ex.com/start", "Getting started"), ("http://ex.com/faq", "FAQ")]


def test_spacing_flags_and_spec_rules():
    """F_SPACE_BEFORE of "a ", "b", ", c" in "a <a>b</a>, c": the first has nothing before it,
    "b" follows whitespace, ", c" does not. Under SPEC_RULES every text node has the flag and
    none is F_PRE: the joiner then gives design §1's single spaces."""
    text = lambda p: np.flatnonzero(p.tag == TEXT)  # noqa: E731
    page = page_of("<p>a <a href='/b'>b</a>, c</p>")
    assert [bool(page.flags[i] & F_SPACE_BEFORE) for i in text(page)] == [False, True, False]
    spec = page_of("<p>a <a href='/b'>b</a>, c</p><pre> x\n y</pre>", SPEC_RULES)
    assert all(spec.flags[i] & F_SPACE_BEFORE and not spec.flags[i] & F_PRE for i in text(spec))
    assert text_of(spec) == "a b , c\nx y"


def test_verbatim_text_survives_pickling_with_collapsed_counts():
    """The shuffle's encoding rebuilds text pointers from the stored text and keeps the
    collapsed character counts of verbatim text apart: "  x  =  1" stores 9 characters and
    counts 5 ("x = 1")."""
    page = page_of("<pre>\n  x  =  1\n</pre><p>a <b>b</b>, c</p>")
    back = pickle.loads(pickle.dumps(page))
    pre_text = int(np.flatnonzero(page.tag == TEXT)[0])
    assert back.node_text(pre_text) == "  x  =  1" and back.chars[pre_text] == 5
    assert np.array_equal(back.chars, page.chars) and np.array_equal(back.text_ptr, page.text_ptr)
    assert text_of(back) == text_of(page) == "  x  =  1\na b, c"


def test_etdm_compares_verbatim_text_collapsed():
    """Two pages whose code differs only in indentation ("    return" vs "  return"): with
    text equality, ETDM maps the code's text nodes as it did when text was collapsed."""
    key = page_of("<pre><b>if</b> x:\n    <b>return</b> 1</pre>")
    other = page_of("<pre><b>if</b> x:\n  <b>return</b> 1</pre>")
    assert (key.node_text(4), other.node_text(4)) == (" x:\n    ", " x:\n  ")   # b's tails
    mapping = map_pages(key, other, EtdmParams())
    text = np.flatnonzero(key.tag == TEXT)
    assert (mapping[text] != UNMAPPED).all()
    assert [tag_name(t) for t in key.tag] == ["body", "pre", "b", "#text", "#text", "b", "#text", "#text"]


@pytest.mark.parametrize("body", ["", "<p>   </p>", "<pre>\n\n</pre>", "<pre></pre><p>x</p>"])
def test_empty_and_whitespace_only_text(body):
    """Whitespace-only text is no node (design §1), in <pre> too: nothing to join."""
    page = page_of(body)
    assert text_of(page) == ("x" if "x" in body else "")


def test_subtree_texts_of_many_nodes_at_once():
    """subtree_texts: one vector pass, the same strings as subtree_text per node, for nested
    subtrees (the <p> and the <a> inside it), a repeated node, a subtree without text (<img>)
    and the page's BODY. By hand: <a> → "Getting started" ("start" runs into "ed"), first
    <p> → "Read the Getting started guide", second <p> → "x y" (the image stands between two
    texts that have whitespace around it), BODY → the two paragraphs, one line each."""
    from sitestrip.transforms.tree import subtree_texts
    page = page_of("<p>Read the <a href='/s'>Getting <b>start</b>ed</a> guide</p><p>x <img src='i.png'> y</p>")
    p1, p2 = np.flatnonzero(page.tag == TAG_ID["p"])
    a = int(np.flatnonzero(page.tag == TAG_ID["a"])[0])
    img = int(np.flatnonzero(page.tag == TAG_ID["img"])[0])
    nodes = np.array([a, p1, img, a, p2, 0])
    assert subtree_texts(page, nodes) == ["Getting started", "Read the Getting started guide", "",
                                         "Getting started", "x y", "Read the Getting started guide\nx y"]
    assert subtree_texts(page, nodes) == [subtree_text(page, int(n)) for n in nodes]
    assert subtree_texts(page, np.array([img])) == [""]
    assert subtree_texts(page, np.array([p1, img])) == ["Read the Getting started guide", ""]
    assert subtree_texts(page, np.zeros(0, dtype=np.int64)) == []


def test_subtree_texts_agree_with_subtree_text_on_generated_pages():
    """Random nestings of inline and block elements, verbatim <pre> text and whitespace
    (seeded, bounded): every node's subtree text, all nodes at once and in random subsets,
    equals subtree_text's one at a time."""
    from sitestrip.transforms.tree import subtree_texts
    rng = np.random.default_rng(7)
    words = ["alpha", "beta", " gamma ", "δέλτα", ",", "\n", "  "]
    tags = ["p", "div", "a href='/x'", "b", "span", "li", "pre", "br"]
    for _ in range(40):
        html, open_ = [], []
        for _ in range(int(rng.integers(5, 40))):
            r = rng.random()
            if r < 0.35 and len(open_) < 8:
                t = tags[int(rng.integers(len(tags)))]
                if t == "br":
                    html.append("<br>")
                else:
                    html.append(f"<{t}>")
                    open_.append(t.split()[0])
            elif r < 0.55 and open_:
                html.append(f"</{open_.pop()}>")
            else:
                html.append(words[int(rng.integers(len(words)))])
        page = page_of("".join(html) + "".join(f"</{t}>" for t in reversed(open_)))
        every = np.arange(page.size)
        assert subtree_texts(page, every) == [subtree_text(page, int(n)) for n in every]
        subset = rng.choice(every, size=min(page.size, 7), replace=True)
        assert subtree_texts(page, subset) == [subtree_text(page, int(n)) for n in subset]


# The concatenation compiled (transforms/_text.c joined_spans) against its reference.

def test_the_compiled_joiner_is_built_and_used_by_default():
    import sitestrip.transforms.text as T
    assert T._compiled is not None, "sitestrip.transforms._text is not built: reinstall with pip install -e ."
    assert T._COMPILED


def both_ways(fn, *args):
    import sitestrip.transforms.text as T
    require_built("_text")
    saved = T._COMPILED
    try:
        T._COMPILED = False
        ref = fn(*args)
        T._COMPILED = True
        got = fn(*args)
    finally:
        T._COMPILED = saved
    return ref, got


def test_joined_spans_by_hand():
    """Text "ab\\U0001F600cd", spans [0,2) "ab", [2,3) the emoji, [3,5) "cd", codes none,
    space, newline; runs [0,3) and [1,1) and [2,3): "ab" + " \\U0001F600" + "\\ncd", "" (an empty
    run), "\\ncd". A run [2, 1) (end before start) is "" too, as a Python slice is."""
    _text = require_built("_text")
    starts, ends = np.array([0, 2, 3]), np.array([2, 3, 5])
    codes = np.array([0, 1, 2], dtype=np.int8)
    assert _text.joined_spans("ab\U0001F600cd", starts, ends, codes, np.array([0, 3])) == ["ab \U0001F600\ncd"]
    assert _text.joined_spans("ab\U0001F600cd", starts, ends, codes, np.array([0, 1, 1, 3])) == [
        "ab", "", " \U0001F600\ncd"]
    assert _text.joined_spans("ab\U0001F600cd", starts, ends, codes, np.array([2, 1])) == [""]
    assert _text.joined_spans("ab", np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                              np.zeros(0, dtype=np.int8), np.array([0])) == []
    # a lone surrogate in the page text comes out as Python's slice gives it
    assert _text.joined_spans("a\udc80b", np.array([0]), np.array([3]), np.zeros(1, dtype=np.int8),
                              np.array([0, 1])) == ["a\udc80b"]


def test_joined_spans_refuses_what_is_not_a_span():
    _text = require_built("_text")
    one = np.zeros(1, dtype=np.int8)
    with pytest.raises(ValueError, match="outside the text"):
        _text.joined_spans("abc", np.array([1]), np.array([4]), one, np.array([0, 1]))
    with pytest.raises(ValueError, match="outside"):
        _text.joined_spans("abc", np.array([1]), np.array([2]), one, np.array([0, 2]))
    with pytest.raises(ValueError, match="not 0, 1 or 2"):
        _text.joined_spans("abc", np.array([1]), np.array([2]), np.array([3], dtype=np.int8), np.array([0, 1]))
    with pytest.raises(ValueError, match="one length"):
        _text.joined_spans("abc", np.array([1, 2]), np.array([2]), one, np.array([0, 1]))


def test_compiled_and_reference_texts_agree_on_generated_pages():
    """text_of, subtree_text of every element, block texts and run_texts, compiled and
    reference, on seeded random pages mixing blocks, inline elements, <br>, <pre> with its
    whitespace, non-BMP text and whitespace-only text."""
    import random

    from sitestrip.transforms.text import gaps, join_text, run_texts
    from sitestrip.transforms.tree import subtree_texts
    rng = random.Random(11)
    words = ["a", "bb", " c ", "d\u00e9", "\U0001F600", "  ", "x\ny", "\t"]
    tags = ["div", "p", "span", "b", "a", "pre", "li", "td"]

    def fragment(depth):
        out = []
        for _ in range(rng.randrange(1, 4)):
            r = rng.random()
            if depth < 4 and r < 0.5:
                t = rng.choice(tags)
                out.append(f"<{t}>{fragment(depth + 1)}</{t}>")
            elif r < 0.6:
                out.append("<br>")
            else:
                out.append(rng.choice(words))
        return "".join(out)

    for _ in range(150):
        page = page_of(fragment(0))
        idx = np.flatnonzero(page.tag == TEXT)
        elements = np.flatnonzero(page.tag != TEXT)
        blocks = page_blocks(page)
        pick = np.array(sorted(rng.sample(idx.tolist(), k=min(len(idx), rng.randrange(0, 6)))), dtype=np.int64)
        ref, got = both_ways(lambda: (texts_everywhere(page), subtree_texts(page, elements),
                                      block_texts(page, blocks), join_text(page, pick, gaps(page, pick)),
                                      run_texts(page, idx, np.array([0, idx.size // 2, idx.size]))))
        assert got == ref


def test_run_texts_compiled_agrees_on_runs_of_every_shape():
    """_text.c run_texts against separators and joined: runs that are empty, repeated, start
    past the nodes, overlap (a later start inside an earlier run resets its separator), with
    newlines, spaces, <sup> and non-BMP text; and its refusal of nodes and spans outside the page."""
    from sitestrip.transforms import _text
    from sitestrip.transforms.text import run_texts
    page = page_of("<p>one <b>two</b>three</p><div>x<sup>2</sup> \U0001F600 <i>y</i></div><pre> a\n b</pre>z")
    idx = np.flatnonzero(page.tag == TEXT).astype(np.int64)
    m = idx.size
    assert m >= 8
    shapes = [[0], [0, m], [0, 2, 2, 5], [3, 1, 4], [0, m + 3, m + 9], [m], [1, 2, 3, 4, 5, 6, 7],
              [0, 5, 3, m - 1], [2, 2, 2]]
    for starts in shapes:
        starts = np.array(starts, dtype=np.int64)
        ref, got = both_ways(run_texts, page, idx, starts)
        assert got == ref
        assert len(got) == starts.size
    ref, got = both_ways(run_texts, page, idx, np.array([0, 3], dtype=np.int64))
    assert got == ref == ["one twothree", "x 2 \U0001F600 y\n a\n b\nz"]
    args = (page.flags, page.line, page.text, page.text_ptr)
    with pytest.raises(ValueError, match="outside the page"):
        _text.run_texts(*args, np.array([0, page.size], dtype=np.int64), np.array([0], dtype=np.int64), 1)
    with pytest.raises(ValueError, match="negative"):
        _text.run_texts(*args, idx, np.array([0, -1], dtype=np.int64), 1)
    short = page.text_ptr.copy()
    short[-1] = len(page.text) + 5
    with pytest.raises(ValueError, match="text_ptr"):
        _text.run_texts(page.flags, page.line, page.text, short, idx, np.array([0], dtype=np.int64), 1)
