"""SiteBlocks' text counts (transforms/site_step.py): the compiled text_signals and shared_words
(transforms/_site.c) against their numpy references, and each page's own key counts against
the shard's."""
from types import SimpleNamespace

import numpy as np
import pytest

from sitestrip.transforms import tree
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.site_step import (SiteBlocks, _shared_words, _shared_words_python, _signals_python,
                                            _text_signals)

compiled = pytest.mark.skipif(tree._site_compiled is None, reason="transforms/_site.c not built")


def _sorted_distinct(rng, size, high):
    return np.unique(rng.integers(0, high, size)).astype(np.int64)


def test_text_signals_by_hand_both_ways():
    """Own keys 5, 7, 7, 9, 11: candidates [5, 7] and [7, 20]; the shard's distinct keys 5, 7, 9, 30
    shown on 3, 4, 1, 2 pages; one page left out showing 7 and 9; others 4.
    On candidates: 5 → 1/2, 7 → 2/2, 9 → 0, 11 → 0. Site: 5 → (3-1)/4, 7 → (4-1-1)/4,
    9 → (1-1) less one, not below 0 → 0, 11 (not in the shard) → 0."""
    own = np.array([5, 7, 7, 9, 11], dtype=np.int64)
    known = [np.array([5, 7], dtype=np.int64), np.array([7, 20], dtype=np.int64)]
    distinct, counts = np.array([5, 7, 9, 30], dtype=np.int64), np.array([3, 4, 1, 2], dtype=np.int64)
    left_out = [np.array([7, 9], dtype=np.int64)]
    for flag in (True, False):
        if flag and tree._site_compiled is None:
            continue
        on, share = _text_signals(own, known, distinct, counts, left_out, 4, compiled=flag)
        assert on.tolist() == [0.5, 1.0, 1.0, 0.0, 0.0]
        assert share.tolist() == [0.5, 0.5, 0.5, 0.0, 0.0]
        assert on.dtype == share.dtype == np.float64


@compiled
@pytest.mark.parametrize("seed", range(40))
def test_text_signals_compiled_is_the_reference(seed):
    rng = np.random.default_rng(seed)
    high = int(rng.choice([4, 50, 1 << 40]))
    own = rng.integers(0, high, int(rng.integers(0, 60))).astype(np.int64)
    if own.size and seed % 3 == 0:
        own[0] = -1                     # below every key
    known = [_sorted_distinct(rng, int(rng.integers(0, 30)), high) for _ in range(int(rng.integers(0, 4)))]
    distinct = _sorted_distinct(rng, int(rng.integers(0, 80)), high)
    counts = rng.integers(1, 9, distinct.size).astype(np.int64)
    left_out = [_sorted_distinct(rng, int(rng.integers(0, 20)), high) for _ in range(int(rng.integers(0, 3)))]
    others = int(rng.integers(1, 12))
    got = _text_signals(own, known, distinct, counts, left_out, others, compiled=True)
    want = _signals_python(own, known, distinct, counts, left_out, others)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        assert a.tobytes() == b.tobytes()


def test_shared_words_by_hand_both_ways():
    keys = np.array([1, 4, 6, 9], dtype=np.int64)
    words = np.array([2.0, 3.0, 5.0, 7.0])
    theirs = np.array([0, 4, 9, 12], dtype=np.int64)
    for flag in (True, False):
        if flag and tree._site_compiled is None:
            continue
        assert _shared_words(keys, words, theirs, compiled=flag).tolist() == [3.0, 7.0]
        assert _shared_words(keys, words, theirs[:0], compiled=flag).tolist() == []


@compiled
@pytest.mark.parametrize("seed", range(30))
def test_shared_words_compiled_sums_to_the_bit(seed):
    rng = np.random.default_rng(seed)
    keys = _sorted_distinct(rng, int(rng.integers(0, 400)), 600)
    words = rng.random(keys.size) * rng.integers(1, 1000, keys.size)
    theirs = _sorted_distinct(rng, int(rng.integers(0, 400)), 600)
    got = _shared_words(keys, words, theirs, compiled=True)
    want = _shared_words_python(keys, words, theirs)
    assert got.tobytes() == want.tobytes()
    assert float(got.sum()).hex() == float(want.sum()).hex()


def _stub(pages, url):
    return (SimpleNamespace(occurrences=np.zeros(pages[url].size, dtype=np.int64)),
            SimpleNamespace(candidates=tuple(u for u in sorted(pages) if u != url), method="cs", cs_size=2))


def test_a_page_reads_its_site_counts_from_its_own_keys():
    """Three pages share "Menu" and "Footer"; two share "Related"; one shows "Alone". Each page's
    own key counts are the shard's for its keys, and a further capture of a URL (not in the
    counts: looked up among the shard's keys) gets the same signals as its page."""
    def html(*texts):
        return "<body>" + "".join(f"<p>{t}</p>" for t in texts) + "</body>"
    sources = {"a": html("Menu", "Related", "Alone", "Footer"), "b": html("Menu", "Related", "Footer"),
               "c": html("Footer", "Menu", "Menu")}
    pages = {f"http://s.test/{k}": parse_page(v, f"http://s.test/{k}") for k, v in sources.items()}
    site_blocks = SiteBlocks(pages)
    distinct, counts = site_blocks.site_counts()
    count_of = dict(zip(distinct.tolist(), counts.tolist()))
    for url in pages:
        keys, mine = site_blocks._own_counts(url)
        assert keys.tolist() == site_blocks._distinct_keys(url).tolist()
        assert mine.tolist() == [count_of[k] for k in keys.tolist()]
    template, selection = _stub(pages, "http://s.test/a")
    signals = site_blocks.signals("http://s.test/a", template, selection)
    assert signals.text_site_share.tolist() == [1.0, 0.5, 0.0, 1.0]
    capture = ("http://s.test/a", "other.warc.gz", 7)
    site_blocks.add_capture(capture, parse_page(sources["a"], "http://s.test/a"))
    assert site_blocks._own_counts(capture)[0] is distinct
    again = site_blocks.signals(capture, template, selection)
    assert again.text_site_share.tolist() == signals.text_site_share.tolist()
    assert again.text_on_candidates.tolist() == signals.text_on_candidates.tolist()
