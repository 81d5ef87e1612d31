"""The main region stage's features (transforms/region.py), derived by hand on small pages of
blocks: probabilities, words and ancestor containers given directly."""
import math

import numpy as np
import pytest

from sitestrip.transforms.region import (LEVELS, OWN_COLUMNS, REGION_FEATURE_NAMES, owner_ancestors,
                                         region_features)

COL = {name: i for i, name in enumerate(REGION_FEATURE_NAMES)}

# Five blocks: an article of three paragraphs in container 10 (level 1) inside 20 (level 2),
# the first two lines of one paragraph (owner 5, level 0), then two teasers in container 11
# inside 21; every level above is the body (0).
P = np.array([0.9, 0.8, 0.7, 0.4, 0.2])
WORDS = np.array([10, 20, 10, 5, 5])
ANCESTORS = np.array([[5, 10, 20, 0, 0], [5, 10, 20, 0, 0], [6, 10, 20, 0, 0], [7, 11, 21, 0, 0],
                      [8, 11, 21, 0, 0]])


def features():
    own = np.zeros((P.size, len(OWN_COLUMNS)))
    own[:, OWN_COLUMNS.index("words_log")] = np.log1p(WORDS)
    return region_features(P, WORDS, own, ANCESTORS).astype(np.float64)


def column(name):
    return features()[:, COL[name]].tolist()


def test_own_probability_and_neighbours():
    assert column("p") == pytest.approx(P.tolist())
    assert column("p_prev1")[1:] == pytest.approx([0.9, 0.8, 0.7, 0.4])
    assert math.isnan(column("p_prev1")[0])
    assert column("p_next2")[:3] == pytest.approx([0.7, 0.4, 0.2])
    assert all(math.isnan(v) for v in column("p_next2")[3:])


def test_window_means_are_word_weighted():
    # Window of 2 around block 0: blocks 0-2, (0.9*10 + 0.8*20 + 0.7*10) / 40 = 0.8.
    # Around block 4: blocks 2-4, (0.7*10 + 0.4*5 + 0.2*5) / 20 = 0.5.
    got = column("p_window2")
    assert got[0] == pytest.approx(0.8)
    assert got[4] == pytest.approx(0.5)


def test_containers_hold_their_share_of_the_expected_main_words():
    # Expected main words: 9 + 16 + 7 = 32 in container 10, 2 + 1 = 3 in container 11; 35 in all.
    share = column("anc1_main_share")
    assert share[:3] == pytest.approx([32 / 35] * 3)
    assert share[3:] == pytest.approx([3 / 35] * 2)
    assert column("anc1_mean_p")[3] == pytest.approx(3 / 10)
    # Level 0: the owner. The first two blocks are lines of one paragraph: (9 + 16) / 30.
    assert column("anc0_mean_p")[:2] == pytest.approx([25 / 30] * 2)
    assert column("anc0_blocks_log") == pytest.approx([math.log1p(2)] * 2 + [math.log1p(1)] * 3)
    # Level 3 is the body for every block: all expected words, all blocks.
    assert column("anc3_main_share") == pytest.approx([1.0] * 5)
    assert column("anc3_blocks_log") == pytest.approx([math.log1p(5)] * 5)


def test_what_lies_before_and_after():
    assert column("main_before") == pytest.approx([0, 9 / 35, 25 / 35, 32 / 35, 34 / 35])
    assert column("main_after") == pytest.approx([26 / 35, 10 / 35, 3 / 35, 1 / 35, 0])
    # Likely blocks (p >= 0.5): 0, 1, 2. Blocks 3 and 4 come after the last one.
    assert column("after_last_likely") == [0, 0, 0, 1, 1]
    assert column("gap_before_log")[4] == pytest.approx(math.log1p(2))
    assert column("page_likely_share") == pytest.approx([0.6] * 5)
    assert column("page_max_p") == pytest.approx([0.9] * 5)


def test_own_columns_are_passed_through():
    assert column("own_words_log") == pytest.approx(np.log1p(WORDS).tolist())


def test_no_likely_block_and_no_block():
    own = np.zeros((2, len(OWN_COLUMNS)))
    x = region_features(np.array([0.1, 0.2]), np.array([3, 4]), own, np.zeros((2, len(LEVELS)), dtype=int))
    assert x[:, COL["gap_before_log"]].tolist() == pytest.approx([math.log1p(2)] * 2)
    assert x[:, COL["after_last_likely"]].tolist() == [0, 0]
    assert region_features(np.zeros(0), np.zeros(0), np.zeros((0, len(OWN_COLUMNS))),
                           np.zeros((0, len(LEVELS)), dtype=int)).shape == (0, len(REGION_FEATURE_NAMES))


def test_owner_ancestors_stop_at_the_root():
    # 0 body, 1 div, 2 p, 3 text: the p's ancestors are 1, then 0, 0, 0.
    parent = np.array([-1, 0, 1, 2])
    assert owner_ancestors(parent, np.array([2])).tolist() == [[2, 1, 0, 0, 0]]
    assert owner_ancestors(parent, np.array([0])).tolist() == [[0, 0, 0, 0, 0]]


# ---------------------------------------------------------------- compiled columns
# transforms/_features.c region_columns against region._region_features_python.

def _both(p, words, own, ancestors):
    from helpers.compiled import require_built
    from sitestrip.transforms import region as R
    require_built("_features")
    return R._region_features_compiled(p, words, own, ancestors), R._region_features_python(p, words, own, ancestors)


def test_the_hand_built_page_by_both_paths(monkeypatch):
    """The page above: the same float32 matrix bit for bit (NaN where the neighbours run out),
    and by default the reference does not run."""
    from sitestrip.transforms import region as R

    def no_reference(*args):
        raise AssertionError("the reference ran")

    own = np.zeros((P.size, len(OWN_COLUMNS)))
    compiled, reference = _both(P, WORDS, own, ANCESTORS)
    assert compiled.tobytes() == reference.tobytes()
    monkeypatch.setattr(R, "_region_features_python", no_reference)
    assert region_features(P, WORDS, own, ANCESTORS).tobytes() == compiled.tobytes()


@pytest.mark.parametrize("case", ["none_likely", "all_likely", "one_block", "no_words", "edges"])
def test_edge_pages_by_both_paths(case):
    """No likely block (the gaps are the page's length), every block likely, one block, no
    words at all (total 0: the shares are 0), probabilities at the clipping bounds and at
    exactly 0.5."""
    p, words = {"none_likely": ([0.1, 0.2, 0.3], [3, 0, 4]), "all_likely": ([0.9, 0.5, 0.7], [1, 2, 3]),
                "one_block": ([0.6], [7]), "no_words": ([0.0, 0.0], [0, 0]),
                "edges": ([0.0, 1.0, 0.5, 1e-7, 1 - 1e-7], [1, 1, 1, 1, 1])}[case]
    p, words = np.array(p, dtype=np.float64), np.array(words)
    ancestors = np.tile(np.arange(len(LEVELS), dtype=np.int64), (p.size, 1))
    own = np.arange(p.size * len(OWN_COLUMNS), dtype=np.float64).reshape(p.size, len(OWN_COLUMNS))
    compiled, reference = _both(p, words, own, ancestors)
    assert compiled.tobytes() == reference.tobytes()


def test_seeded_pages_by_both_paths():
    """300 seeded pages of 1-400 blocks: random probabilities (a third of them 0, some at 0.5),
    words (some 0) and containers shared by runs of blocks at each level."""
    rng = np.random.default_rng(4)
    for _ in range(300):
        n = int(rng.integers(1, 400))
        p = rng.random(n)
        p[rng.random(n) < 0.3] = 0.0
        p[rng.random(n) < 0.05] = 0.5
        words = rng.integers(0, 60, n)
        words[rng.random(n) < 0.2] = 0
        ancestors = np.stack([np.cumsum(rng.random(n) < 1 / (k + 1)) * 7 + k for k in range(len(LEVELS))], axis=1)
        own = rng.random((n, len(OWN_COLUMNS)))
        compiled, reference = _both(p, words, own, ancestors)
        assert compiled.tobytes() == reference.tobytes()


def test_region_columns_refuses_malformed_arrays():
    from sitestrip.transforms import region as R
    c = R._compiled
    p, w = np.array([0.5, 0.6]), np.array([1.0, 2.0])
    out = np.empty((2, R._OWN_START))
    c.region_columns(p, w, np.zeros((2, len(LEVELS)), np.int64), 1.7, out)      # well formed
    with pytest.raises(ValueError, match="negative"):
        c.region_columns(p, w, np.full((2, len(LEVELS)), -1, np.int64), 1.7, out)
    with pytest.raises(ValueError, match="width"):
        c.region_columns(p, w, np.zeros((2, len(LEVELS)), np.int64), 1.7, np.empty((2, 3)))


def test_owner_ancestors_compiled_and_reference(monkeypatch):
    """_features.c owner_ancestors against the numpy walk on seeded random trees (preorder:
    each node's parent before it), owners anywhere, a page's root among them."""
    from helpers.compiled import require_built
    from sitestrip.transforms import region as R
    require_built("_features")
    rng = np.random.default_rng(4)
    for n in (1, 2, 5, 40, 300):
        parent = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, n)], dtype=np.int32)
        owner = rng.integers(0, n, 50).astype(np.int32)
        got = R.owner_ancestors(parent, owner)
        monkeypatch.setattr(R, "_COMPILED", False)
        ref = R.owner_ancestors(parent, owner)
        monkeypatch.setattr(R, "_COMPILED", True)
        assert got.dtype == ref.dtype and got.tolist() == ref.tolist()
