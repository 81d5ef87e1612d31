"""Why a page's row says what it says: per-node labels of one key page.

The labels come from the very code path that computes the pages row
(`site_step.analyse_page`), so a view built on them shows what the pipeline
kept and removed, not a re-derivation of it. Beam-free and IO-free: the
inspect command (pipeline/inspect_view.py) reads the WARCs and renders.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from sitestrip.transforms.candidates import CandidateSelection, key_page_links
from sitestrip.transforms.classify import load_main_content_model
from sitestrip.transforms.site_step import PageAnalysis, PageRecord, SiteBlocks, analyse_page, site_context
from sitestrip.transforms.menex import Menu
from sitestrip.transforms.page import TEXT, CompactPage
from sitestrip.transforms.tree import subtree_mask, subtree_sum, text_of, words_in


@dataclass
class Explanation:
    record: PageRecord
    analysis: PageAnalysis
    site_pages: int               # distinct URLs of the site in the input
    template: np.ndarray          # bool per node: template (page_only: the MenEx menu, as in the row)
    nontemplate: np.ndarray       # bool per text node: the row's nontemplate_text
    main: np.ndarray              # bool per node: the row's main_text
    menu_mask: np.ndarray         # bool per node: subtree of the menu node
    occurrences: np.ndarray | None  # TemEx/HybEx: candidate pages each node maps into; None for page_only
    linked: frozenset             # in-site URLs the key page links to
    main_content_method: str = "conex"  # learned | ceml | conex (config main_content.method)
    model_id: str | None = None   # the block model that decided the main content (None for conex)

    @property
    def page(self) -> CompactPage:
        return self.record.page

    @property
    def candidate_method(self) -> str:
        return self.analysis.candidate_method

    @property
    def menu(self) -> Menu | None:
        return self.analysis.menu

    @property
    def template_selection(self) -> CandidateSelection | None:
        return self.analysis.for_template

    @property
    def conex_selection(self) -> CandidateSelection | None:
        return self.analysis.for_conex

    @property
    def template_share(self) -> float | None:
        return self.analysis.template.share if self.analysis.template is not None else None

    @property
    def removed(self) -> np.ndarray:
        """Nodes the non-template view leaves out: template nodes and the text they hold.

        Text inside a template link is template although the text node itself
        may not map (TemplateResult.nontemplate), so it is counted here too.
        """
        return self.template | ((self.page.tag == TEXT) & ~self.nontemplate)

    def kept_in(self, mode: str) -> np.ndarray:
        """Nodes a view mode shows: "template", "main" or "nontemplate"; every node otherwise."""
        if mode == "template":
            keep = self.removed
        elif mode == "main":
            keep = self.main
        elif mode == "nontemplate":
            keep = ~self.removed
        else:
            return np.ones(self.page.size, dtype=bool)
        # An element stays as a container when anything kept is inside it.
        return subtree_sum(self.page, keep.astype(np.int32)) > 0

    def words(self) -> dict:
        page = self.page
        return {"page": words_in(page), "main": words_in(page, self.main),
                "nontemplate": words_in(page, self.nontemplate)}

    @property
    def block_proba(self) -> np.ndarray | None:
        """Content probability of each block as the threshold saw it; None for conex."""
        return self.analysis.proba

    @property
    def block_selected(self) -> np.ndarray | None:
        return self.analysis.selected

    @property
    def threshold(self) -> float | None:
        return self.analysis.threshold

    def node_blocks(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(first, last) block of each node's text, -1 for a node holding no text; None for conex.

        A text node is in one block (first = last). An element's text nodes are
        consecutive in document order and blocks are runs of consecutive text
        nodes, so an element's blocks are the range from its first text node's
        block to its last one's; first = last means the element lies in one block
        (an `<a>` inside a paragraph, or the paragraph).
        """
        if self.analysis.proba is None or self.analysis.blocks is None:
            return None
        page, blocks = self.page, self.analysis.blocks.blocks
        none = np.full(page.size, -1, dtype=np.int64)
        text = blocks.text_nodes                 # every text node, document order
        if text.size == 0:
            return none, none.copy()
        block = blocks.block_of_text()
        lo = np.searchsorted(text, np.arange(page.size))                # first text node at or after the node
        hi = np.searchsorted(text, page.end.astype(np.int64)) - 1       # last text node inside its subtree
        has_text = hi >= lo
        first = np.where(has_text, block[np.minimum(lo, text.size - 1)], none)
        last = np.where(has_text, block[np.maximum(hi, 0)], none)
        return first, last

    def texts(self) -> dict:
        return {"main": text_of(self.page, self.main), "nontemplate": text_of(self.page, self.nontemplate)}


def explain_page(key: PageRecord, site_records: Iterable[PageRecord], config) -> Explanation:
    """Per-node labels of `key` among its site's records (the key included or not), as the pipeline computes them."""
    records = list(site_records)
    if not any(r is key for r in records):
        records.append(key)
    _, pages, links = site_context(key.site, records, config)
    model = load_main_content_model(config.main_content)
    site_blocks = SiteBlocks(pages) if model is not None else None
    analysis = analyse_page(key, pages, links, config, site_blocks, model)
    page = key.page
    text = page.tag == TEXT
    menu_mask = subtree_mask(page, [analysis.menu.node]) if analysis.menu else np.zeros(page.size, dtype=bool)
    if analysis.template is not None:
        template, nontemplate = analysis.template.template, analysis.template.nontemplate
        occurrences = analysis.template.occurrences
    else:
        # Page-level rows drop the menu from nontemplate_text: at page level the menu is the template.
        template, nontemplate, occurrences = menu_mask, text & ~menu_mask, None
    linked = frozenset(url for url, _ in key_page_links(page, key.site))
    return Explanation(record=key, analysis=analysis, site_pages=len(pages), template=template,
                       nontemplate=nontemplate, main=analysis.main, menu_mask=menu_mask,
                       occurrences=occurrences, linked=linked,
                       main_content_method=config.main_content.method,
                       model_id=model.model_id if model is not None else None)
