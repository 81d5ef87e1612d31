"""A corpus folder in either format, told apart by what it holds: the shared format
(corpora.py) or TeCo's (teco.py)."""
from __future__ import annotations

import os

from sitestrip_bench.corpora import Corpus, is_shared_corpus, read_shared_corpus
from sitestrip_bench.teco import is_teco, read_teco


def read_corpus(directory: str, work_dir: str, rules=None) -> Corpus:
    """Either format, told apart by what the folder holds; TeCo is converted under work_dir, its
    gold nodes numbered as pages parsed under `rules` (transforms.page.ParseRules) number them."""
    if not os.path.isdir(directory):
        raise ValueError(f"{directory}: not a directory")
    if is_shared_corpus(directory):
        return read_shared_corpus(directory)
    if is_teco(directory):
        return read_teco(directory, work_dir, rules)
    raise ValueError(f"{directory}: neither a shared corpus (gold.jsonl + warc/) nor a TeCo "
                     "folder (HTML pages with TECO_mainContent / TECO_notTemplate labels)")
