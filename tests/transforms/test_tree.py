"""tree.subtree_mask on a hand-built page: nested, repeated and empty sets of roots."""
import numpy as np

from sitestrip.transforms.page import parse_page
from sitestrip.transforms.tree import subtree_mask


def test_subtree_mask_of_nested_repeated_and_no_roots():
    """body 0 > [div 1 > [p 2 > "a" 3, p 4 > "b" 5], ul 6 > li 7 > "c" 8]: the subtree of a
    node is its preorder interval [i, end[i]). div's subtree holds p 2, so roots 1 and 2 give
    nodes 1-5; p 4 twice gives 4-5; li 7 is the last subtree (it ends at the page's end)."""
    page = parse_page("<html><body><div><p>a</p><p>b</p></div><ul><li>c</li></ul></body></html>", "http://e.com/")
    assert page.size == 9
    assert np.flatnonzero(subtree_mask(page, [1, 2])).tolist() == [1, 2, 3, 4, 5]
    assert np.flatnonzero(subtree_mask(page, np.array([4, 4]))).tolist() == [4, 5]
    assert np.flatnonzero(subtree_mask(page, [7, 2])).tolist() == [2, 3, 7, 8]
    assert np.flatnonzero(subtree_mask(page, [0])).tolist() == list(range(9))
    empty = subtree_mask(page, [])
    assert empty.dtype == bool and empty.shape == (9,) and not empty.any()


def test_sorted_distinct_and_distinct_inverse_are_numpys_unique():
    """sorted_distinct and distinct_inverse give np.unique's values, inverse and counts (and
    their dtypes) on seeded integer arrays of every width, with many repeats and none, and on
    empty and one-value arrays; other dtypes go to np.unique itself."""
    from sitestrip.transforms.tree import distinct_inverse, sorted_distinct
    rng = np.random.default_rng(0)
    for t in range(800):
        dtype = (np.int64, np.uint64, np.int32, np.uint32)[t % 4]
        x = rng.integers(0, (3, 50, 2 ** 31)[t % 3], int(rng.integers(0, 200))).astype(dtype)
        want = np.unique(x, return_inverse=True, return_counts=True)
        got = distinct_inverse(x, counts=True)
        for a, b in zip(want, got):
            assert a.dtype == b.dtype and a.tolist() == b.tolist()
        assert [a.tolist() for a in distinct_inverse(x)] == [a.tolist() for a in want[:2]]
        assert sorted_distinct(x).dtype == want[0].dtype and sorted_distinct(x).tolist() == want[0].tolist()
    floats = np.array([2.0, np.nan, 1.0, 2.0])
    assert np.array_equal(sorted_distinct(floats), np.unique(floats), equal_nan=True)


def test_text_of_compiled_is_the_python_reference():
    """tree.text_of from transforms/_site.c text_codes against _text_of_python (text.gaps and
    text.separators) on seeded pages of inline and block elements, <pre> text beginning with
    whitespace or not, superscripts and line breaks, with no mask, an empty one, a full one
    and random ones (text nodes left out between kept ones: the gaps)."""
    import random

    from helpers.compiled import require_built
    from sitestrip.transforms import tree
    from sitestrip.transforms.tree import _text_of_python, text_of
    require_built("_site")
    rng = random.Random(5)
    words = ["a", "b c", " lead", "trail ", "\n  indented", "x\ty", "é", "\u3000wide", ""]

    def fragment(depth):
        out = []
        for _ in range(rng.randrange(1, 4)):
            tag = rng.choice(["p", "span", "b", "pre", "sup", "div", "li", "br", "text"])
            if tag == "text":
                out.append(rng.choice(words) + rng.choice(["", " ", "\n"]))
            elif tag == "br":
                out.append("<br>")
            else:
                inner = fragment(depth + 1) if depth < 4 and rng.random() < 0.6 else rng.choice(words)
                out.append(f"<{tag}>{inner}</{tag}>{rng.choice(['', ' ', chr(10)])}")
        return "".join(out)

    assert tree._COMPILED
    checked = 0
    for _ in range(150):
        page = parse_page(f"<html><body>{fragment(0)}</body></html>", "http://ex.com/")
        masks = [None, np.zeros(page.size, dtype=bool), np.ones(page.size, dtype=bool)]
        masks += [np.array([rng.random() < p for _ in range(page.size)], dtype=bool) for p in (0.3, 0.7, 0.9)]
        for mask in masks:
            assert text_of(page, mask) == _text_of_python(page, mask)
            checked += 1
    assert checked == 900
