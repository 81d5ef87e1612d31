"""Text of a set of text nodes as a browser shows it: the one joiner behind every text
the product writes (main_text, nontemplate_text, menu texts; design §1 "text of a set of
nodes", refined by `read.browser_text`).

Between two text nodes in document order it puts:

- a newline where a block boundary lies between them (a block element starts or ends,
  `<br>`, `<hr>`: the page's `line` counter moved): one line per block, never a blank
  line between blocks however many boundaries (a `<pre>` keeps the blank lines it has);
- on one line, next to each other in the page: a space iff the HTML had whitespace
  between them (F_SPACE_BEFORE, recorded while flattening), so "word</a>," stays
  "word," and "a <b>b</b>" keeps its space; verbatim text (F_PRE, inside `<pre>`)
  carries its own whitespace and gets nothing;
- a space before the first text of a `<sup>` or `<sub>` (F_RAISED): "2<sup>48</sup>" is
  "2 48", not the number 248 the page does not show, and "word<sup>[1]</sup>" is
  "word [1]". A space, not a `^`: the text columns hold the page's characters only (the
  joined words are the tokens words_page counts, and main_markdown writes the `^`);
- on one line, with text of the page left out between them (a template link cut out of
  a sentence, say): a space, so that the words on either side of the removed ones never
  glue into a word the page does not have; a verbatim text that already begins with
  whitespace gets none.

A page flattened with `browser_text` off marks every text node F_SPACE_BEFORE and keeps
none verbatim, so the same joiner yields design §1's single-space text exactly.

Separators are decided with vector operations over the selected nodes and the final
concatenation is transforms/_text.c's `joined_spans` (built by `pip install`), whose
reference is `pieces` joined; a page's block texts (`run_texts`, many runs at once) are
decided and joined in one pass of `_text.c`'s `run_texts`, whose reference is `separators`
and `joined` (tests/transforms/test_text.py; SITESTRIP_TEXT=python uses the references for a
whole process).
"""
from __future__ import annotations

import os

import numpy as np

from sitestrip.transforms.page import F_PRE, F_RAISED, F_SPACE_BEFORE, TEXT, CompactPage

try:
    from sitestrip.transforms import _text as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
_COMPILED = os.environ.get("SITESTRIP_TEXT", "compiled") != "python"

_SEPARATOR = ("", " ", "\n")
_NONE, _SPACE, _NEWLINE = 0, 1, 2


def separators(page: CompactPage, idx: np.ndarray, gap: np.ndarray | None = None,
               raised: bool = True) -> np.ndarray:
    """int8 code per node of `idx` (text nodes in document order): what goes before it
    (_NONE, _SPACE, _NEWLINE); the first node gets _NONE.

    `gap[k]`: some text node of the page lies between idx[k-1] and idx[k] (None: idx is a
    run of consecutive text nodes, as a subtree's or a block's are). `raised` False: a
    superscript's text gets only what the HTML gives it (Markdown, which writes a `^` there).
    """
    codes = np.zeros(idx.size, dtype=np.int8)
    if idx.size < 2:
        return codes
    nxt = idx[1:]
    flags = page.flags[nxt]
    space = (flags & (F_SPACE_BEFORE | F_RAISED if raised else F_SPACE_BEFORE)) != 0
    if gap is not None:
        cut = gap[1:]
        verbatim = (flags & F_PRE) != 0
        space |= cut & ~verbatim
        for k in np.flatnonzero(cut & verbatim).tolist():
            space[k] = not page.node_text(int(nxt[k]))[:1].isspace()
    newline = page.line[nxt] != page.line[idx[:-1]]
    codes[1:] = np.where(newline, _NEWLINE, np.where(space, _SPACE, _NONE))
    return codes


def pieces(page: CompactPage, idx: np.ndarray, codes: np.ndarray) -> list[str]:
    """Each node's text with its separator in front."""
    ptr, text, sep = page.text_ptr, page.text, _SEPARATOR
    starts, ends = ptr[idx].tolist(), ptr[idx + 1].tolist()
    return [sep[c] + text[s:e] if c else text[s:e] for c, s, e in zip(codes.tolist(), starts, ends)]


def joined(page: CompactPage, idx: np.ndarray, codes: np.ndarray, bounds: list[int]) -> list[str]:
    """Per run r, "".join(pieces(page, idx, codes)[bounds[r]:bounds[r + 1]]): compiled, or
    that expression itself (the reference)."""
    if _compiled is not None and _COMPILED:
        ptr = page.text_ptr
        return _compiled.joined_spans(page.text, ptr[idx].astype(np.int64), ptr[idx + 1].astype(np.int64),
                                      np.ascontiguousarray(codes, dtype=np.int8),
                                      np.minimum(np.asarray(bounds, dtype=np.int64), idx.size))
    parts = pieces(page, idx, codes)
    return ["".join(parts[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def join_text(page: CompactPage, idx: np.ndarray, gap: np.ndarray | None = None) -> str:
    """The text of the text nodes `idx` (document order); see the module docstring."""
    if idx.size == 0:
        return ""
    return joined(page, idx, separators(page, idx, gap), [0, idx.size])[0]


def gaps(page: CompactPage, idx: np.ndarray) -> np.ndarray:
    """Per node of `idx` (text nodes in document order): another text node lies between it
    and the previous one."""
    rank = np.cumsum(page.tag == TEXT)
    out = np.zeros(idx.size, dtype=bool)
    if idx.size > 1:
        out[1:] = np.diff(rank[idx]) > 1
    return out


def run_texts(page: CompactPage, idx: np.ndarray, starts: np.ndarray) -> list[str]:
    """Texts of consecutive runs of the text nodes `idx`, run r being idx[starts[r]:starts[r + 1]]
    (the last up to the end), each a run of consecutive text nodes (a block's, a subtree's):
    each joined as join_text joins it, the separators computed once over `idx`. A run may be
    empty (its text ""); runs may repeat nodes of others (nested subtrees)."""
    if idx.size == 0:
        return [""] * starts.size
    if _compiled is not None and _COMPILED:
        # Separators and joining in one pass (_text.c run_texts): the separators' dozen numpy
        # calls below cost about as much as the joining itself.
        return _compiled.run_texts(np.ascontiguousarray(page.flags, dtype=np.uint16),
                                   np.ascontiguousarray(page.line, dtype=np.int32), page.text,
                                   np.ascontiguousarray(page.text_ptr, dtype=np.int32),
                                   np.ascontiguousarray(idx, dtype=np.int64),
                                   np.ascontiguousarray(starts, dtype=np.int64), F_SPACE_BEFORE | F_RAISED)
    codes = separators(page, idx)
    # A run's separators depend only on neighbours inside it; the pair across two runs is
    # overwritten by the next run's leading _NONE.
    codes[starts[starts < idx.size]] = _NONE
    return joined(page, idx, codes, np.append(starts, idx.size).tolist())
