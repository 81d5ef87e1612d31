"""Site-level template detection: TemEx (thesis ch. 9) and HybEx (ch. 11), design §6."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from sitestrip.transforms.conex_page import PageConexParams, main_content
from sitestrip.transforms.etdm import UNMAPPED, EtdmParams, map_pages
from sitestrip.transforms.page import TAG_ID, TEXT, CompactPage
from sitestrip.transforms.tree import subtree_mask


@dataclass(frozen=True)
class TemplateParams:
    method: str = "temex"     # "temex" or "hybex"
    votes: int = 2            # v: a node is template when mapped into at least v candidates
    # Product extension (configs: template.block_granularity; off in published.yaml): a text
    # line is template or not as a whole (line_nontemplate).
    block_granularity: bool = True


def occurrences(key: CompactPage, others: list, params: EtdmParams,
                exclude: np.ndarray | None = None, check=None) -> np.ndarray:
    """Per key-page node, the number of candidate pages it is mapped into (Alg. 11).

    Each mapping is top-down, so a node's count never exceeds its parent's.
    `check`, when given, is called between steps of the mappings and may raise
    to stop a page that ran out of time.
    """
    counts = np.zeros(key.size, dtype=np.int32)
    for other in others:
        counts += map_pages(key, other, params, exclude, check=check) != UNMAPPED
    return counts


@dataclass
class TemplateResult:
    template: np.ndarray       # bool mask over key-page nodes
    nontemplate: np.ndarray    # bool mask of the text nodes that remain
    share: float               # template words / page words
    occurrences: np.ndarray
    etdm_ms: float = 0.0       # CPU time spent mapping trees


def detect_template(key: CompactPage, others: list, etdm: EtdmParams, params: TemplateParams,
                    page_conex: PageConexParams, check=None) -> TemplateResult:
    """TemEx, or HybEx (page-level ConEx first, its main content kept out of the mapping)."""
    exclude = None
    if params.method == "hybex":
        exclude = main_content(key, page_conex)
    start = time.thread_time()
    occ = occurrences(key, others, etdm, exclude, check)
    etdm_ms = (time.thread_time() - start) * 1000.0
    template = occ >= params.votes
    # Text inside a template link is template even when the link text itself
    # differs between pages (e.g. a "current page" entry of a menu).
    template_links = np.flatnonzero(template & (key.tag == TAG_ID["a"]))
    in_template_link = subtree_mask(key, template_links)
    text = key.tag == TEXT
    nontemplate = text & ~template & ~in_template_link
    if params.block_granularity:
        nontemplate = line_nontemplate(key, nontemplate)
    total = int(key.words[text].sum())
    kept = int(key.words[nontemplate].sum())
    share = (total - kept) / total if total else 0.0
    return TemplateResult(template=template, nontemplate=nontemplate, share=share,
                          occurrences=occ, etdm_ms=etdm_ms)


def line_nontemplate(page: CompactPage, nontemplate: np.ndarray) -> np.ndarray:
    """The text nodes of every text line that holds non-template text of its own.

    design §6 judges each text node alone, so a sentence whose inline links also appear on
    the candidate pages ("implements a <a>small</a>, <a>fast</a>, ... SQL database engine"
    on sqlite.org, the links mapped because their text is equal) loses its links and reads
    "implements a , , SQL database engine". A reader sees the sentence as one unit: here a
    text line is template or not as a whole.

    The unit is the text line: a run of text nodes with no block boundary between them (the
    page's `line` counter, design §1): the text of its nearest block-level element, cut at `<br>` and at
    nested block elements. Nested blocks are therefore judged on their own, inline
    elements never split a unit, and a `div` of `<br>`-separated lines (a copyright line
    above a "last updated" line) is judged line by line. It is also exactly one line of
    nontemplate_text (transforms/text.py), so every output line is kept whole or dropped
    whole. design §10's blocks (transforms/blocks.py) are not used: they make an inline
    element with its own class or id a block of its own (Sphinx's
    `<a class="reference">` in prose would stay template, the very case above) and give
    the own text of a `div` that holds paragraphs to the `li` around it (seed 002's
    nearest instance), so the two would not be judged on their own.
    """
    text = np.flatnonzero(page.tag == TEXT)
    if text.size == 0:
        return nontemplate
    line = page.line[text]
    unit = np.concatenate(([0], np.cumsum(line[1:] != line[:-1])))
    keep = np.bincount(unit, weights=nontemplate[text]) > 0
    out = nontemplate.copy()
    out[text] = keep[unit]
    return out
