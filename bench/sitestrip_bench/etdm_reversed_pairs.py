"""Would ETDM(A, B) serve the key page B with candidate A? Counts, for the (key, candidate)
pairs of a run whose reverse is also a pair, how often the inverse of ETDM(B, A) equals
ETDM(A, B) under the run's template_etdm parameters (docs/performance.md, "What is compiled, and why").

    sitestrip-bench etdm-reversed-pairs CORPUS_DIR OUTPUT_DIR [--config NAME|FILE]

CORPUS_DIR holds warc/ (the pages, parsed as the run parses them); OUTPUT_DIR is a
`sitestrip run` output of that corpus (its pages rows give template_candidate_urls).
Not part of the test suite.
"""
from __future__ import annotations

import argparse
import glob
import os

import numpy as np
import pyarrow.parquet as pq

from sitestrip_bench.core import load_corpus
from sitestrip.configs import load_config
from sitestrip.transforms.etdm import UNMAPPED, map_pages


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("output")
    parser.add_argument("--config", default=None)
    args = parser.parse_args(argv)
    config = load_config(args.config)
    loaded = load_corpus(sorted(glob.glob(os.path.join(args.corpus, "warc", "*.warc*"))), config.read)
    pages = {r.url: r.page for records in loaded.records.values() for r in records}
    rows = [r for f in sorted(glob.glob(os.path.join(args.output, "pages", "*.parquet")))
            for r in pq.read_table(f, columns=["url_normalized", "template_candidate_urls"]).to_pylist()]
    mappings = [(r["url_normalized"], u) for r in rows for u in (r["template_candidate_urls"] or [])]
    pairs = set(mappings)
    same = differ = 0
    for a, b in sorted(pairs):
        if a < b and (b, a) in pairs:
            forward = map_pages(pages[a], pages[b], config.template_etdm).astype(np.int64)
            backward = map_pages(pages[b], pages[a], config.template_etdm)
            inverse = np.full(pages[a].size, UNMAPPED, dtype=np.int64)
            mapped = backward >= 0
            inverse[backward[mapped]] = np.flatnonzero(mapped)
            if np.array_equal(inverse, forward):
                same += 1
            else:
                differ += 1
    print(f"{len(mappings)} mappings, {len(pairs)} distinct pairs, {same + differ} pairs mapped both ways: "
          f"inverse identical {same}, different {differ}")


if __name__ == "__main__":
    main()
