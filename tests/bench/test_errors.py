"""The error classes of bench/sitestrip_bench/errors.py on a hand-made page of five blocks."""
import numpy as np

from sitestrip_bench.blockdata import BlockDataset, LabelledPage
from sitestrip_bench.errors import error_table, page_errors
from sitestrip.transforms.features import FEATURE_NAMES

COL = {name: i for i, name in enumerate(FEATURE_NAMES)}


def _page(url, n):
    return LabelledPage(url=url, site="c/s", corpus="c", genre="article", gold="", texts=[""] * n, gold_words=30)


def test_kept_and_missed_words_by_class():
    """Blocks: 0 a caption kept wrongly (5 words), 1 body kept (10, all aligned), 2 a forum post
    missed (10), 3 a byline kept wrongly (3, short), 4 a hidden line kept (2). The main error
    is the missed post (10 words)."""
    X = np.zeros((5, len(FEATURE_NAMES)), dtype=np.float32)
    X[0, COL["in_figcaption"]] = 1
    X[2, COL["far_comment"]] = 1
    X[3, COL["role_byline"]] = X[3, COL["short_line"]] = 1
    X[4, COL["hidden_element"]] = 1
    words = np.array([5, 10, 10, 3, 2])
    y = np.array([False, True, True, False, False])
    data = BlockDataset(X, y, words, np.where(y, words, 0), np.zeros(5, np.int8), np.zeros(5, np.int64),
                        [_page("u", 5)])
    selected = np.array([True, True, False, True, True])
    (e,) = page_errors(data, selected)
    assert e["kept"] == {"caption": 5, "header line": 3, "hidden": 2}
    assert e["missed"] == {"post or comment": 10}
    assert e["main_error"] == "missed: post or comment"
    assert error_table([e]) == {"missed: post or comment": 1}
    assert error_table([e], urls=set()) == {}


def test_a_page_with_nothing_kept_is_a_dropped_page():
    X = np.zeros((2, len(FEATURE_NAMES)), dtype=np.float32)
    data = BlockDataset(X, np.array([True, False]), np.array([4, 4]), np.array([4, 0]), np.zeros(2, np.int8),
                        np.zeros(2, np.int64), [_page("v", 2)])
    (e,) = page_errors(data, np.array([False, False]))
    assert e["missed"] == {"dropped page": 30.0} and e["main_error"] == "missed: dropped page"
