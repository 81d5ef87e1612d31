"""Language of a page's main text (the `language` and `language_score` columns).

py3langid (BSD-3-Clause; numpy only; its naive-Bayes model over byte n-grams ships inside
the wheel, 4.6 MB, read with numpy without unpickling anything, nothing is downloaded) was
chosen by measurement against six other identifiers: accuracy on texts of known language
from 20 characters up, CPU time per page and install size (`sitestrip.bench.language`,
docs/benchmarks.md "Language identification").

The identifier reads a bounded prefix of the text, cut at a word boundary: its cost is
linear in the characters read, and past a few hundred characters of prose its answer no
longer changes (the measurement above), so a 100,000-word page costs what a short one does.
"""
from __future__ import annotations

import threading

# Characters of main_text the identifier reads (output.language_chars).
DEFAULT_LANGUAGE_CHARS = 1000
# The model's labels for "no language" (digits, symbols, markup): no `language` at all.
_NO_LANGUAGE = frozenset({"zxx", "und"})

_identifier = None
_lock = threading.Lock()


def _model():
    """The identifier, loaded once per process (about 0.5 s and 60 MB) at its first use."""
    global _identifier
    if _identifier is None:
        with _lock:
            if _identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier
                _identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return _identifier


def text_prefix(text: str, chars: int) -> str:
    """At most `chars` characters of `text`, cut at a word boundary when there is one."""
    if len(text) <= chars:
        return text
    cut = text.rfind(" ", 0, chars + 1)
    cut = max(cut, text.rfind("\n", 0, chars + 1))
    return text[:cut] if cut > chars // 2 else text[:chars]


def identify_language(text: str, chars: int = DEFAULT_LANGUAGE_CHARS) -> tuple[str | None, float | None]:
    """(language code, probability) of a text: ISO 639-1 where the language has a two-letter
    code, else the model's ISO 639-3 code (e.g. `yue`); (None, None) for a text without a
    letter, or one the model calls no language at all."""
    sample = text_prefix(text, chars)
    if not any(ch.isalpha() for ch in sample):
        return None, None
    code, probability = _model().classify(sample)
    if code in _NO_LANGUAGE:
        return None, None
    return code, float(probability)
