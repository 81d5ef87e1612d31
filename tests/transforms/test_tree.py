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
