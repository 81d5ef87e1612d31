"""Compiled vs reference main_markdown on real pages: the same string, and the time.

Runs the product's site step (bench/sitestrip_bench/core.py `extract_rows`, one process) over each corpus
with transforms/output.py's `page_markdown` wrapped, so that every page's main_markdown is
rendered from exactly the product's inputs (the page, its main-content mask, line starts and
Markdown options) twice: with transforms/_markdown.c and with the Python reference
(markdown.py `_COMPILED` off). Prints per corpus the pages rendered, how many differ (each
differing URL to stderr), and both ways' CPU ms per page (mean and p99, one call each).

    # $CORPORA: a directory of corpus directories, each warc/*.warc.gz + gold.jsonl
    sitestrip-bench compare-markdown $CORPORA/docsites-dev $CORPORA/news-ctf2010-dev

Not part of the test suite (tests/transforms/test_markdown_compiled.py checks the same on hand-built
and generated pages).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from sitestrip_bench.core import extract_rows, load_corpus
from sitestrip.configs import load_config
from sitestrip.transforms import markdown as M
from sitestrip.transforms import output

from sitestrip_bench.profile_sites import warc_files


class Comparing:
    """Stands in for output.page_markdown: renders both ways, keeps the counts and times."""

    def __init__(self):
        self.pages = self.differing = 0
        self.ms = {True: [], False: []}

    def render(self, compiled: bool, *args, **kwargs) -> str:
        saved = M._COMPILED
        M._COMPILED = compiled
        try:
            clock = time.thread_time()
            got = M.page_markdown(*args, **kwargs)
            self.ms[compiled].append((time.thread_time() - clock) * 1e3)
            return got
        finally:
            M._COMPILED = saved

    def __call__(self, page, *args, **kwargs) -> str:
        ref = self.render(False, page, *args, **kwargs)
        got = self.render(True, page, *args, **kwargs)
        self.pages += 1
        if got != ref:
            self.differing += 1
            print(f"  differs: {page.url}", file=sys.stderr)
        return ref


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="+", help="corpus folders (with warc/) or WARC folders")
    parser.add_argument("--config", default=None, help="preset name or file (default: configs/default.yaml)")
    args = parser.parse_args(argv)
    if M._compiled is None:
        sys.exit("sitestrip.transforms._markdown is not built: reinstall with pip install -e .")
    config = load_config(args.config)
    for directory in args.corpora:
        loaded = load_corpus(warc_files(directory), config.read)
        comparing = Comparing()
        saved = output.page_markdown
        output.page_markdown = comparing
        try:
            rows = extract_rows(loaded, config, processes=1)
        finally:
            output.page_markdown = saved
        name = os.path.basename(os.path.normpath(directory))
        line = f"{name}: {len(rows)} rows, main_markdown rendered {comparing.pages}, " \
               f"identical {comparing.pages - comparing.differing}, differing {comparing.differing}"
        for compiled, label in ((True, "compiled"), (False, "reference")):
            ms = np.array(comparing.ms[compiled]) if comparing.ms[compiled] else np.zeros(1)
            line += f"; {label} CPU ms/page mean {ms.mean():.3f} p99 {np.percentile(ms, 99):.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
