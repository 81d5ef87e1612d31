"""Labelled blocks of gold corpora: what `sitestrip-bench train` learns from and what the
cross-validated benchmark of the block classifiers scores (design §10).

Every page goes through the pipeline's own code path (`site_step.analyse_page`
with no model: candidates, TemEx, MenEx, page ConEx, blocks, features), so a
model sees at training time exactly the features the pipeline computes; the
gold main text labels each block by token alignment (`gold_labels`).
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
from dataclasses import dataclass, field
from difflib import SequenceMatcher

import numpy as np

from sitestrip_bench.core import load_corpus
from sitestrip_bench.corpora import Corpus
from sitestrip.transforms.site_step import SiteBlocks, StageError, analyse_page, site_context
from sitestrip.transforms.features import FEATURE_NAMES
from sitestrip.transforms.page_type import PAGE_FEATURE_NAMES, PAGE_TYPES, page_type_features
from sitestrip.transforms.region import LEVELS, owner_ancestors
from sitestrip.transforms.tokens import folded_words


# Labelling rule of web2text (seed 000 §12.4): main iff this share of own tokens aligns.
MAIN_SHARE = 2 / 3


def gold_labels(texts: list[str], gold_text: str, share: float = MAIN_SHARE) -> tuple[np.ndarray, np.ndarray]:
    """(main label per block, aligned tokens per block) from a gold main text.

    The page's token sequence (blocks in order, design §1 tokenizer, case-folded)
    is aligned with the gold's, order preserved and each gold token used once
    (the longest-common-subsequence blocks of difflib, junk heuristics off);
    a block is main iff at least `share` of its tokens align.
    """
    tokens, owner = [], []
    for b, t in enumerate(texts):
        w = folded_words(t)
        tokens.extend(w)
        owner.extend([b] * len(w))
    gold = folded_words(gold_text)
    aligned = np.zeros(len(texts), dtype=np.int64)
    if tokens and gold:
        vocab: dict = {}
        a = [vocab.setdefault(w, len(vocab)) for w in tokens]
        g = [vocab.setdefault(w, len(vocab)) for w in gold]
        hit = np.zeros(len(a), dtype=bool)
        for m in SequenceMatcher(None, a, g, autojunk=False).get_matching_blocks():
            hit[m.a:m.a + m.size] = True
        aligned = np.bincount(np.array(owner, dtype=np.int64), weights=hit, minlength=len(texts)).astype(np.int64)
    own = np.array([len(folded_words(t)) for t in texts], dtype=np.int64)
    labels = (own > 0) & (aligned >= share * own)
    return labels, aligned


@dataclass
class LabelledPage:
    url: str
    site: str          # "corpus/site": the unit of cross-validation folds
    corpus: str
    genre: str
    gold: str
    texts: list        # own text of each block, in order
    gold_words: int

    @property
    def page_type(self) -> str:
        """The gold page type: the corpus's genre, where doc and news corpora name theirs
        by the corpus's kind."""
        return GENRE_PAGE_TYPE.get(self.genre, self.genre)


GENRE_PAGE_TYPE = {"docs": "documentation", "news": "article"}


@dataclass
class BlockDataset:
    """One row per block of every gold page; `page` indexes `pages`."""
    X: np.ndarray          # float32[n, len(FEATURE_NAMES)]
    y: np.ndarray          # bool: main (design §10 alignment rule)
    words: np.ndarray      # int64: tokens of the block
    aligned: np.ndarray    # int64: of those, tokens aligned with the gold
    group: np.ndarray      # int8: instance group (blocks.GROUPS)
    page: np.ndarray       # int64: index into pages
    pages: list = field(default_factory=list)
    ancestors: np.ndarray | None = None   # int64[n, len(region.LEVELS)]: the owner's ancestors' node ids
    page_features: np.ndarray | None = None   # float32[pages, len(PAGE_FEATURE_NAMES)]

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
                            self.group[rows], renumber[self.page[rows]], [self.pages[k] for k in keep],
                            self.ancestors[rows], self.page_features[keep])

    def rows(self, rows: np.ndarray) -> "BlockDataset":
        """The blocks `rows` selects, pages unchanged (for scoring a fold's blocks)."""
        return BlockDataset(self.X[rows], self.y[rows], self.words[rows], self.aligned[rows],
                            self.group[rows], self.page[rows], self.pages, self.ancestors[rows],
                            self.page_features)

    @property
    def page_types(self) -> np.ndarray:
        """Index into PAGE_TYPES of each page's gold type (-1: a type outside the list)."""
        return np.array([PAGE_TYPES.index(p.page_type) if p.page_type in PAGE_TYPES else -1
                         for p in self.pages], dtype=np.int64)


def concat(parts: list) -> BlockDataset:
    pages, offset, idx = [], 0, []
    for part in parts:
        idx.append(part.page + offset)
        offset += len(part.pages)
        pages.extend(part.pages)
    cat = lambda name, dtype: (np.concatenate([getattr(p, name) for p in parts]) if parts
                               else np.zeros((0, len(FEATURE_NAMES)) if name == "X" else 0, dtype=dtype))
    ancestors = np.concatenate([p.ancestors for p in parts]) if parts \
        else np.zeros((0, len(LEVELS)), dtype=np.int64)
    page_features = np.concatenate([p.page_features for p in parts]) if parts \
        else np.zeros((0, len(PAGE_FEATURE_NAMES)), dtype=np.float32)
    return BlockDataset(cat("X", np.float32), cat("y", bool), cat("words", np.int64),
                        cat("aligned", np.int64), cat("group", np.int8),
                        np.concatenate(idx) if idx else np.zeros(0, dtype=np.int64), pages,
                        ancestors, page_features)


_SHARED: dict = {}
_COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}


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
                                  own.blocks.group.astype(np.int8), np.zeros(n, dtype=np.int64), [page],
                                  owner_ancestors(record.page.parent, own.blocks.owner),
                                  page_type_features(record.page, record.url, own.texts, own.blocks.words,
                                                     analysis.features, _COLUMN)[None, :]))
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
