"""Labelled blocks of gold corpora: what `sitestrip train` learns from and what the
cross-validated benchmark of the block classifiers scores (SPEC §10).

Every page goes through the pipeline's own code path (`extract.analyse_page`
with no model: candidates, TemEx, MenEx, page ConEx, blocks, features), so a
model sees at training time exactly the features the pipeline computes; the
gold main text labels each block by token alignment (`blocks.gold_labels`).
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
from dataclasses import dataclass, field

import numpy as np

from sitestrip.bench.core import load_corpus
from sitestrip.bench.corpora import Corpus
from sitestrip.transforms.blocks import gold_labels
from sitestrip.transforms.extract import SiteBlocks, StageError, analyse_page, site_context
from sitestrip.transforms.features import FEATURE_NAMES
from sitestrip.transforms.tokens import folded_words


@dataclass
class LabelledPage:
    url: str
    site: str          # "corpus/site": the unit of cross-validation folds
    corpus: str
    genre: str
    gold: str
    texts: list        # own text of each block, in order
    gold_words: int


@dataclass
class BlockDataset:
    """One row per block of every gold page; `page` indexes `pages`."""
    X: np.ndarray          # float32[n, len(FEATURE_NAMES)]
    y: np.ndarray          # bool: main (SPEC §10 alignment rule)
    words: np.ndarray      # int64: tokens of the block
    aligned: np.ndarray    # int64: of those, tokens aligned with the gold
    group: np.ndarray      # int8: instance group (blocks.GROUPS)
    page: np.ndarray       # int64: index into pages
    pages: list = field(default_factory=list)

    @property
    def site_of_block(self) -> np.ndarray:
        sites = np.array([p.site for p in self.pages])
        return sites[self.page]

    def subset_pages(self, keep: np.ndarray) -> "BlockDataset":
        """The blocks of the pages whose index is in `keep` (pages renumbered)."""
        keep = np.asarray(sorted(set(int(k) for k in keep)), dtype=np.int64)
        renumber = -np.ones(len(self.pages), dtype=np.int64)
        renumber[keep] = np.arange(keep.size)
        rows = renumber[self.page] >= 0
        return BlockDataset(self.X[rows], self.y[rows], self.words[rows], self.aligned[rows],
                            self.group[rows], renumber[self.page[rows]], [self.pages[k] for k in keep])


def concat(parts: list) -> BlockDataset:
    pages, offset, idx = [], 0, []
    for part in parts:
        idx.append(part.page + offset)
        offset += len(part.pages)
        pages.extend(part.pages)
    cat = lambda name, dtype: (np.concatenate([getattr(p, name) for p in parts]) if parts
                               else np.zeros((0, len(FEATURE_NAMES)) if name == "X" else 0, dtype=dtype))
    return BlockDataset(cat("X", np.float32), cat("y", bool), cat("words", np.int64),
                        cat("aligned", np.int64), cat("group", np.int8),
                        np.concatenate(idx) if idx else np.zeros(0, dtype=np.int64), pages)


_SHARED: dict = {}


def _site_blocks(site: str) -> BlockDataset:
    records, gold, config, corpus = (_SHARED[k] for k in ("records", "gold", "config", "corpus"))
    ordered, pages, links = site_context(site, records[site], config)
    site_blocks = SiteBlocks(pages)
    parts = []
    seen = set()
    for record in ordered:
        g = gold.get(record.url)
        if g is None or record.url in seen:
            continue
        seen.add(record.url)
        try:
            analysis = analyse_page(record, pages, links, config, site_blocks, model=None)
        except StageError:
            continue     # scored as an empty output by the benchmark; nothing to learn from
        own = analysis.blocks
        y, aligned = gold_labels(own.texts, g.main_text)
        page = LabelledPage(url=g.url, site=f"{corpus}/{g.site}", corpus=corpus, genre=g.genre,
                            gold=g.main_text, texts=own.texts, gold_words=len(folded_words(g.main_text)))
        n = own.blocks.count
        parts.append(BlockDataset(analysis.features, y, own.blocks.words.astype(np.int64), aligned,
                                  own.blocks.group.astype(np.int8), np.zeros(n, dtype=np.int64), [page]))
    return concat(parts)


def corpus_blocks(corpus: Corpus, config, processes: int | None = None) -> BlockDataset:
    """Labelled blocks of every gold page of `corpus` (pages without a row are left out)."""
    if config.main_content.method == "conex":
        # The blocks are computed whatever method the preset selects for its runs.
        config = dataclasses.replace(config, main_content=dataclasses.replace(config.main_content,
                                                                              method="learned"))
    loaded = load_corpus(corpus.warc_paths, config.read)     # pages parsed as the run parses them
    gold = {g.url: g for g in corpus.gold}
    _SHARED.update(records=loaded.records, gold=gold, config=config, corpus=corpus.name)
    sites = sorted(loaded.records, key=lambda s: (-len(loaded.records[s]), s))
    processes = processes or os.cpu_count() or 1
    if processes == 1 or len(sites) < 2 or "fork" not in mp.get_all_start_methods():
        parts = [_site_blocks(s) for s in sites]
    else:
        with mp.get_context("fork").Pool(processes) as pool:
            parts = pool.map(_site_blocks, sites, chunksize=1)
    # Site order of the pool is fixed (sorted above), so the dataset is deterministic.
    return concat(parts)
