"""Cross-validated quality of the product's main-content methods, for `sitestrip-bench bench`.

The shipped block models were trained on the dev corpora, so scoring the
benchmark's end-to-end run on those corpora would be in-sample. Here every
page's main text comes from a model that never saw its site: `learned` and
`ceml` are trained fold by fold (folds grouped by site over all the benched
corpora, bench/sitestrip_bench/train.py) and `conex` (site and page ConEx, no model) runs
in-process on the same pages.
"""
from __future__ import annotations

import dataclasses

from sitestrip_bench.blockdata import concat, corpus_blocks
from sitestrip_bench.core import extract_rows, load_corpus
from sitestrip_bench.scoring import PageScore, score_texts
from sitestrip_bench.errors import page_errors
from sitestrip_bench.train import KINDS, cross_validate, page_texts, page_type_scores

PRODUCT = "sitestrip"
# System names in the results: the product column is the cross-validated default method.
SYSTEMS = {"learned": PRODUCT, "ceml": f"{PRODUCT}:ceml", "conex": f"{PRODUCT}:conex"}


def cross_validated_scores(corpora, config, folds: int = 5, processes: int | None = None,
                           log=print) -> tuple[list[PageScore], dict]:
    """(page scores of every method, per method the CV details) over all `corpora` at once."""
    parts = []
    for corpus in corpora:
        log(f"[{corpus.name}] blocks and features for cross-validation")
        parts.append(corpus_blocks(corpus, config, processes))
    data = concat(parts)
    scores, details = [], {}
    sites = len({p.site for p in data.pages})
    if sites >= folds:
        for method, kind in KINDS.items():
            log(f"{method}: {folds}-fold cross-validation grouped by site ({sites} sites)")
            cv = cross_validate(data, kind, config.main_content, folds, log=log)
            texts = page_texts(data, cv.selected)
            details[method] = {"folds": folds, "fold_thresholds": [round(t, 4) for t in cv.thresholds]}
            if kind == "gbdt":
                details[method]["page_type"] = page_type_scores(data, cv.page_type)
                details[method]["page_errors"] = page_errors(cv.data, cv.selected)
            # A conex preset's own run is the product's column; learned is then shown beside it.
            system = SYSTEMS[method] if not (method == "learned" and config.main_content.method == "conex") \
                else f"{PRODUCT}:learned"
            details[method]["system"] = system
            for corpus in corpora:
                scores += score_texts(system, corpus.gold, texts)
    else:
        log(f"cross-validation skipped: {sites} sites, fewer than {folds} folds")
    conex = dataclasses.replace(config, main_content=dataclasses.replace(config.main_content, method="conex"))
    for corpus in corpora if config.main_content.method != "conex" else ():
        log(f"[{corpus.name}] conex in-process")
        loaded = load_corpus(corpus.warc_paths, config.read)
        rows = extract_rows(loaded, conex, processes)
        texts = {r["url_normalized"]: r["main_text"] or "" for r in rows}
        scores += score_texts(SYSTEMS["conex"], corpus.gold, texts)
    return scores, details
