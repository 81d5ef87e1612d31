"""design §9 metrics on hand-counted examples."""
import pytest

from sitestrip_bench.metrics import PRF, micro, set_prf, word_prf


def test_word_prf_is_a_multiset_overlap_of_folded_tokens():
    """predicted: the(2) cat sat → 4 tokens; expected: The cat sat on the mat → 6 tokens.
    overlap: the ×2, cat, sat = 4 → P = 4/4, R = 4/6, F1 = 2·1·(2/3)/(5/3) = 0.8."""
    s = word_prf("the the cat sat", "The cat sat on the mat.")
    assert (s.overlap, s.predicted, s.expected) == (4, 4, 6)
    assert s.precision == 1.0 and s.recall == pytest.approx(2 / 3) and s.f1 == pytest.approx(0.8)


def test_empty_cases():
    assert word_prf("", "").f1 == 1.0
    assert word_prf("", "words").f1 == 0.0 and word_prf("words", "").precision == 0.0


def test_set_and_micro():
    a = set_prf(["u1", "u2", "u3"], ["u2", "u3", "u4", "u5"])
    assert (a.overlap, a.predicted, a.expected) == (2, 3, 4)
    total = micro([a, PRF(1, 1, 1)])
    assert (total.precision, total.recall) == (3 / 4, 3 / 5)
