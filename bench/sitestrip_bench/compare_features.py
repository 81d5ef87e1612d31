"""Compiled vs reference blocks, block texts, text keys and block features on real pages.

For every page of each corpus (read and parsed as the pipeline does, bench/sitestrip_bench/core.py
`load_corpus`), runs the blocks stage twice, once with transforms/_features.c and once with
the Python references (blocks.py's and features.py's, SITESTRIP_FEATURES=python's path):
the page's blocks (page_blocks: ptr, text nodes, owners, groups, instances, words), their
texts (block_texts: text.py's joiner, SITESTRIP_TEXT's switch, the same on both paths; the texts
differ only if the blocks do), their keys (features.text_keys) and the whole float32 feature matrix
(features.block_features, page ConEx's main content and features as the pipeline passes
them) twice: without a site, and with site signals drawn from a generator seeded by the
page's position (occurrences 0..4 per node of 4 candidates, random text shares), so the
site columns are compared too. Arrays are compared with np.array_equal (NaN equal to NaN)
after checking their dtypes, texts as strings. Then prints, per corpus, the pages compared
and those that differ, and the CPU ms per page of the two paths (measured in this one
process).

    # $CORPORA: a directory of corpus directories, each warc/*.warc.gz + gold.jsonl
    sitestrip-bench compare-features $CORPORA/*-dev

Not part of the test suite (tests/transforms/test_features_compiled.py checks the same on hand-built
and generated pages).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from sitestrip_bench.core import load_corpus
from sitestrip.configs import load_config
from sitestrip.transforms import features as F
from sitestrip.transforms import tree as T
from sitestrip.transforms.blocks import block_texts, page_blocks
from sitestrip.transforms.conex_page import main_content_and_features

from sitestrip_bench.profile_sites import warc_files


def site_signals(page, n_blocks: int, seed: int) -> F.SiteSignals:
    rng = np.random.default_rng(seed)
    return F.SiteSignals(occurrences=rng.integers(0, 5, page.size), candidates=4, method="cs", cs_size=3,
                         site_pages=12, text_on_candidates=rng.random(n_blocks),
                         text_site_share=rng.random(n_blocks))


def by_path(page, conex, seed: int, compiled: bool):
    """(blocks, texts, keys, [features without a site, with one], CPU seconds) of one page by
    one path."""
    saved = F._COMPILED, T._COMPILED
    F._COMPILED = T._COMPILED = compiled
    try:
        start = time.process_time()
        blocks = page_blocks(page)
        texts = block_texts(page, blocks)
        keys = F.text_keys(texts)
        conex_main, conex_features = conex
        xs = [F.block_features(page, blocks, texts, conex_main=conex_main, menu_node=None, site=site,
                               conex_features=conex_features)
              for site in (None, site_signals(page, blocks.count, seed))]
        return blocks, texts, keys, xs, time.process_time() - start
    finally:
        F._COMPILED, T._COMPILED = saved


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def compare(directory: str, config) -> str:
    loaded = load_corpus(warc_files(directory), config.read)
    pages = [record.page for records in loaded.records.values() for record in records]
    differing = {"blocks": 0, "texts": 0, "keys": 0, "features": 0}
    seconds = {True: 0.0, False: 0.0}
    for seed, page in enumerate(pages):
        conex = main_content_and_features(page, config.page_conex)
        got = {compiled: by_path(page, conex, seed, compiled) for compiled in (True, False)}
        for compiled, got_path in got.items():
            seconds[compiled] += got_path[-1]
        (blocks, texts, keys, xs, _), (ref_blocks, ref_texts, ref_keys, ref_xs, _) = got[True], got[False]
        checks = {
            "blocks": all(same_array(getattr(blocks, f), getattr(ref_blocks, f))
                          for f in ("ptr", "text_nodes", "owner", "group", "is_instance", "words")),
            "texts": texts == ref_texts,
            "keys": same_array(keys, ref_keys),
            "features": all(x.dtype == np.float32 and same_array(x, r) for x, r in zip(xs, ref_xs)),
        }
        for what, same in checks.items():
            if not same:
                differing[what] += 1
                print(f"  {what} differ: {page.url}", file=sys.stderr)
    n = max(len(pages), 1)
    return (f"{os.path.basename(os.path.normpath(directory))}: {len(pages)} pages compared; differing pages: "
            + ", ".join(f"{what} {count}" for what, count in differing.items())
            + f"; blocks + texts + keys + 2 feature matrices, CPU ms/page: compiled {seconds[True] * 1e3 / n:.3f}, "
            f"reference {seconds[False] * 1e3 / n:.3f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="+", help="corpus folders (with warc/) or WARC folders")
    parser.add_argument("--config", default=None, help="preset name or file (default: configs/default.yaml)")
    args = parser.parse_args(argv)
    if F._compiled is None:
        sys.exit("sitestrip.transforms._features is not built: reinstall with pip install -e .")
    config = load_config(args.config)
    for directory in args.corpora:
        print(compare(directory, config), flush=True)


if __name__ == "__main__":
    main()
