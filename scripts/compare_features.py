"""Compiled vs reference block text columns and text keys on real pages: the same matrices.

For every page of each corpus (read and parsed as the pipeline does, bench/core.py
`load_corpus`), computes the page's blocks and block texts once, then the text keys
(features.text_keys) and the whole block feature matrix (features.block_features, page
ConEx's main content as the pipeline passes it, no site) with transforms/_features.c and
with features.py's Python reference, and compares them: the float32 matrices with
np.array_equal (NaN equal to NaN), the keys exactly. The site columns that read text keys
(text_on_candidates, text_site_share) are functions of the keys, so equal keys give equal
site columns. Then prints, per corpus, the pages compared and those that differ, and the
CPU ms per page of the two paths (keys + matrix, measured in this one process).

    python scripts/compare_features.py ../shared/corpora/*-dev

Not part of the test suite (tests/test_features_compiled.py checks the same on hand-built
and generated texts).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from sitestrip.bench.core import load_corpus
from sitestrip.configs import load_config
from sitestrip.transforms import features as F
from sitestrip.transforms.blocks import block_texts, page_blocks
from sitestrip.transforms.conex_page import main_content

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_sites import warc_files  # noqa: E402


def by_path(page, blocks, texts, conex_main, compiled: bool):
    """(float32 features, int64 keys, CPU seconds) of one page by one path."""
    saved = F._COMPILED
    F._COMPILED = compiled
    try:
        start = time.process_time()
        keys = F.text_keys(texts)
        x = F.block_features(page, blocks, texts, conex_main=conex_main, menu_node=None, site=None)
        return x, keys, time.process_time() - start
    finally:
        F._COMPILED = saved


def compare(directory: str, config) -> str:
    loaded = load_corpus(warc_files(directory), config.read)
    pages = [record.page for records in loaded.records.values() for record in records]
    differing = 0
    seconds = {True: 0.0, False: 0.0}
    for page in pages:
        blocks = page_blocks(page)
        texts = block_texts(page, blocks)
        conex_main = main_content(page, config.page_conex)
        got = {compiled: by_path(page, blocks, texts, conex_main, compiled) for compiled in (True, False)}
        for compiled, (_, _, spent) in got.items():
            seconds[compiled] += spent
        (x, keys, _), (ref_x, ref_keys, _) = got[True], got[False]
        same = x.dtype == ref_x.dtype == np.float32 and np.array_equal(x, ref_x, equal_nan=True) \
            and keys.dtype == ref_keys.dtype and np.array_equal(keys, ref_keys)
        if not same:
            differing += 1
            print(f"  differs: {page.url}", file=sys.stderr)
    n = max(len(pages), 1)
    return (f"{os.path.basename(os.path.normpath(directory))}: {len(pages)} pages compared, "
            f"{len(pages) - differing} identical (feature matrix and text keys), {differing} differing; "
            f"keys + features CPU ms/page: compiled {seconds[True] * 1e3 / n:.3f}, "
            f"reference {seconds[False] * 1e3 / n:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="+", help="corpus folders (with warc/) or WARC folders")
    parser.add_argument("--config", default=None, help="preset name or file (default: configs/default.yaml)")
    args = parser.parse_args()
    if F._compiled is None:
        sys.exit("sitestrip.transforms._features is not built: reinstall with pip install -e .")
    config = load_config(args.config)
    for directory in args.corpora:
        print(compare(directory, config), flush=True)


if __name__ == "__main__":
    main()
