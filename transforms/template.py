"""Site-level template detection: TemEx (thesis ch. 9) and HybEx (ch. 11), SPEC §6."""
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
    total = int(key.words[text].sum())
    kept = int(key.words[nontemplate].sum())
    share = (total - kept) / total if total else 0.0
    return TemplateResult(template=template, nontemplate=nontemplate, share=share,
                          occurrences=occ, etdm_ms=etdm_ms)
