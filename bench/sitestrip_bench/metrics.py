"""Evaluation metrics (design §9): bag-of-words and set precision/recall/F1."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sitestrip.transforms.tokens import folded_words


@dataclass(frozen=True)
class PRF:
    overlap: int      # matched items (multiset intersection for words)
    predicted: int
    expected: int

    @property
    def precision(self) -> float:
        # Nothing predicted and nothing expected is a perfect answer.
        return self.overlap / self.predicted if self.predicted else float(self.expected == 0)

    @property
    def recall(self) -> float:
        return self.overlap / self.expected if self.expected else float(self.predicted == 0)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def word_prf(predicted: str, expected: str) -> PRF:
    """Multiset overlap of case-folded tokens (the product's tokenizer)."""
    got, want = Counter(folded_words(predicted or "")), Counter(folded_words(expected or ""))
    return PRF(sum((got & want).values()), sum(got.values()), sum(want.values()))


def set_prf(predicted, expected) -> PRF:
    got, want = set(predicted), set(expected)
    return PRF(len(got & want), len(got), len(want))


def micro(scores) -> PRF:
    """Totals over many pages: one PRF of the summed counts."""
    scores = list(scores)
    return PRF(sum(s.overlap for s in scores), sum(s.predicted for s in scores),
               sum(s.expected for s in scores))
