"""`sitestrip-bench bench`: quality and speed of the product and of peer extractors, per corpus.

For every corpus:
1. the product runs end to end as users run it (`sitestrip run` in a child
   process, FnApiRunner) on the corpus' WARC files; its wall time, CPU time and
   peak RSS are the child's own (os.wait4);
2. the same WARC files are read in-process once more, to hand every peer the
   same decoded HTML of the same gold pages, to time the two per-page costs the
   pipeline's rows do not carry (the shuffle coder, "group"; the Parquet
   writer, "write") and to size compact pages against HTML;
3. each installed peer runs in its own child process on those pages;
4. every output is scored by bench/sitestrip_bench/scoring.py against the gold, and the links dataset's
   regions, cost and size by bench/sitestrip_bench/links.py.
Results land in RESULTS_DIR as results.json, report.md and PNG charts.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np

from sitestrip_bench.core import load_corpus
from sitestrip_bench.measure import ChildRun, run_child, tail
from sitestrip_bench.corpora import Corpus
from sitestrip_bench.corpus_format import read_corpus
from sitestrip_bench.errors import error_table
from sitestrip_bench.links import links_bench
from sitestrip_bench.stages import STAGES, percentiles
from sitestrip_bench.scoring import (PageScore, aggregate, group_scores, menu_sites, score_menus, score_texts,
                                     worst_pages)
from sitestrip.transforms.urls import normalize_url

PRODUCT = "sitestrip"


def run_product(corpus: Corpus, out_dir: str, *, workers: int = 1, config: str | None = None,
                timeout: float | None = None) -> tuple[ChildRun, float, list[dict], int]:
    """`sitestrip run` on the corpus in a child process → (its run, its peak RSS in MB,
    pages rows, errors rows)."""
    import pyarrow.dataset as ds
    os.makedirs(out_dir, exist_ok=True)
    peak_file = os.path.join(out_dir, "peak_rss_mb.txt")
    stderr_path = os.path.join(out_dir, "stderr.txt")
    argv = [sys.executable, "-m", "sitestrip_bench.measure", peak_file, "sitestrip.pipeline.cli", "run",
            "--input", *corpus.warc_paths, "--output", out_dir, "--quiet", "--workers", str(workers)]
    if config:
        argv += ["--config", config]
    child = run_child(argv, stderr_path, timeout=timeout)
    if child.timed_out or child.returncode != 0:
        raise RuntimeError(f"sitestrip run failed on {corpus.name} (exit {child.returncode}"
                           f"{', timed out' if child.timed_out else ''}):\n{tail(stderr_path, 30)}")
    try:
        with open(peak_file, encoding="ascii") as fh:
            peak = float(fh.read().strip())
    except (OSError, ValueError):
        peak = child.ru_maxrss_mb  # off Linux: ru_maxrss, which may include this process's own peak
    columns = ["url", "url_normalized", "main_text", "nontemplate_text", "menu_links", "candidate_method", "template_share",
               "timing_ms", "html_bytes", "words_page"]
    rows = ds.dataset(os.path.join(out_dir, "pages"), format="parquet").to_table(
        columns=columns).to_pylist()
    errors_dir = os.path.join(out_dir, "errors")
    errors = ds.dataset(errors_dir, format="parquet").count_rows() if os.path.isdir(errors_dir) else 0
    return child, peak, rows, errors


def coder_and_writer_costs(loaded, rows: list[dict]) -> dict:
    """Per-page CPU of the two pipeline steps that no row times.

    group: a page record through the shuffle coder (Beam pickles it on one side
    and unpickles it on the other). write: the pages rows turned into Arrow and
    written as zstd Parquet, as the pipeline's sink does, divided per page.
    """
    group_ms, wire, compact_mem = [], 0, 0
    for records in loaded.records.values():
        for record in records:
            clock = time.thread_time()
            pickle.loads(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
            group_ms.append((time.thread_time() - clock) * 1000.0)
            wire += record.page.wire_bytes()
            compact_mem += record.page.nbytes()
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sitestrip.schemas.tables import PAGES
    slim = [{k: r.get(k) for k in ("url", "main_text", "nontemplate_text", "candidate_method")} for r in rows]
    schema = pa.schema([PAGES.field(k) for k in ("url", "main_text", "nontemplate_text", "candidate_method")])
    clock = time.thread_time()
    table = pa.Table.from_pylist(slim, schema=schema)
    pq.write_table(table, io.BytesIO(), compression="zstd")
    write_ms = (time.thread_time() - clock) * 1000.0 / max(len(rows), 1)
    return {"group_ms": group_ms, "write_ms_per_page": write_ms, "wire_bytes": wire,
            "compact_memory_bytes": compact_mem, "html_bytes": loaded.html_bytes}


@dataclass
class CorpusResult:
    name: str
    kind: str
    pages_gold: int
    genres: list
    product: dict = field(default_factory=dict)
    peers: dict = field(default_factory=dict)
    quality: dict = field(default_factory=dict)      # by system: corpus / genre / site aggregates
    menus: dict = field(default_factory=dict)
    menu_sites: dict = field(default_factory=dict)    # per site, mean over sites, the weakest site
    nodes: dict = field(default_factory=dict)        # TeCo only
    worst: list = field(default_factory=list)
    methods: dict = field(default_factory=dict)
    template_shares: list = field(default_factory=list)
    links: dict = field(default_factory=dict)        # the links dataset (bench/sitestrip_bench/links.py); {} without it


# Gold pages are keyed by normalized URL (bench/sitestrip_bench/corpora.py), rows join them by theirs.
def _texts(rows, field_name):
    return {r["url_normalized"]: r[field_name] or "" for r in rows}


def _menus(rows):
    return {r["url_normalized"]: tuple(normalize_url(m["url"]) or m["url"] for m in (r["menu_links"] or ()))
            for r in rows}


def bench_corpus(corpus: Corpus, out_dir: str, *, peers, workers: int = 1, config: str | None = None,
                 peer_timeout: float = 3600, log=print) -> tuple[CorpusResult, list[PageScore]]:
    from sitestrip_bench import peers as peer_mod
    from sitestrip.configs import load_config

    work = os.path.join(out_dir, "runs", corpus.name)
    os.makedirs(work, exist_ok=True)
    result = CorpusResult(corpus.name, corpus.kind, len(corpus.gold), corpus.genres)

    product_config = load_config(config)
    log(f"[{corpus.name}] sitestrip run ({len(corpus.warc_paths)} WARC files, {workers} worker(s))")
    usage, peak_mb, rows, errors = run_product(corpus, os.path.join(work, PRODUCT), workers=workers,
                                      config=config)
    gold_urls = {g.url for g in corpus.gold}
    log(f"[{corpus.name}] {len(rows)} pages in {usage.wall_seconds:.1f} s; reading again for peers")
    loaded = load_corpus(corpus.warc_paths, product_config.read, keep_html=True,
                         wanted=gold_urls.__contains__)
    costs = coder_and_writer_costs(loaded, rows)
    timing = {stage: [(r["timing_ms"] or {}).get(stage) for r in rows] for stage in STAGES
              if stage not in ("group", "write")}
    timing["group"] = costs["group_ms"]
    stage_stats = {stage: percentiles(timing[stage]) for stage in STAGES if stage != "write"}
    stage_stats["write"] = {"pages": len(rows), "p50": None, "p99": None,
                            "mean": round(costs["write_ms_per_page"], 3),
                            "total_s": round(costs["write_ms_per_page"] * len(rows) / 1000, 3)}
    total = [(r["timing_ms"] or {}).get("total") for r in rows]
    result.product = {
        "pages": len(rows), "errors": errors, "wall_seconds": round(usage.wall_seconds, 2),
        "cpu_seconds": round(usage.cpu_seconds, 2), "max_rss_mb": round(peak_mb, 1),
        "pages_per_second": round(len(rows) / usage.wall_seconds, 2) if usage.wall_seconds else None,
        "workers": workers, "stages_ms": stage_stats, "page_total_ms": percentiles(total),
        "html_bytes": costs["html_bytes"], "compact_wire_bytes": costs["wire_bytes"],
        "compact_memory_bytes": costs["compact_memory_bytes"],
    }
    result.methods = dict(Counter(r["candidate_method"] for r in rows))
    result.template_shares = [r["template_share"] for r in rows if r["template_share"] is not None]
    links = links_bench(corpus, os.path.join(work, PRODUCT), rows, loaded.html, product_config.read.parse_rules())
    if links is not None:
        result.links = links
        log(f"[{corpus.name}] links: {links['links']} rows, {links['links_bytes_per_page']} bytes/page")

    # With a block model trained on these very corpora, the run's own main text is in-sample:
    # it is kept apart, and the product's column comes from cross-validation (bench/sitestrip_bench/crossval.py).
    run_system = PRODUCT if product_config.main_content.method == "conex" else f"{PRODUCT}:run"
    scores = score_texts(run_system, corpus.gold, _texts(rows, "main_text"))
    scores += score_texts(f"{PRODUCT}:nontemplate", corpus.gold, _texts(rows, "nontemplate_text"))
    if corpus.kind == "teco":
        # Only TeCo gold has a non-template text (score_texts passes over gold without it).
        scores += score_texts(f"{PRODUCT}:nontemplate_vs_teco_nontemplate", corpus.gold,
                              _texts(rows, "nontemplate_text"), field="nontemplate_text")
    menu_scores = score_menus(PRODUCT, corpus.gold, _menus(rows))
    if menu_scores:
        result.menus = group_scores(menu_scores, "corpus", menu=True)[(PRODUCT, corpus.name)].as_dict()
        result.menu_sites = menu_sites(menu_scores)

    # Peers: the same gold pages, decoded the same way, in the same run.
    pages_path = os.path.join(work, "pages.jsonl")
    peer_mod.write_pages(((g.url, loaded.html.get(g.url, "")) for g in corpus.gold), pages_path)
    for name in peers:
        log(f"[{corpus.name}] peer {name}")
        run = peer_mod.run_peer(name, pages_path, work, timeout=peer_timeout)
        info = {"version": run.version, "pages": run.pages, "failed": run.failed,
                "timed_out": run.timed_out, "error": run.error,
                "wall_seconds": round(run.wall_seconds, 2), "cpu_seconds": round(run.cpu_seconds, 2),
                "max_rss_mb": round(run.max_rss_mb, 1),
                "pages_per_second": round(run.pages / run.wall_seconds, 2) if run.wall_seconds else None,
                "page_ms": percentiles(list(run.page_ms.values()))}
        result.peers[name] = info
        if run.error and not run.texts:
            continue
        scores += score_texts(name, corpus.gold, run.texts)

    for by in ("corpus", "genre", "site"):
        for (system, key), agg in group_scores(scores, by).items():
            label = key if isinstance(key, str) else key[1]
            result.quality.setdefault(system, {}).setdefault(by, {})[label] = agg.as_dict()

    if corpus.kind == "teco":
        from sitestrip_bench.teco import teco_node_metrics
        node_rows = teco_node_metrics(corpus, product_config)
        for part in ("main", "template", "menu"):
            prfs = [r[part] for r in node_rows if r.get(part) is not None]
            if prfs:
                result.nodes[part] = aggregate(prfs).as_dict()

    product_scores = [s for s in scores if s.system == run_system]
    gold_by_url = {g.url: g for g in corpus.gold}
    rows_by_url = {r["url_normalized"]: r for r in rows}
    for s in worst_pages(product_scores, 10):
        row = rows_by_url.get(s.url) or {}
        result.worst.append({"url": s.url, "site": s.site, "f1": round(s.words.f1, 4),
                             "precision": round(s.words.precision, 4), "recall": round(s.words.recall, 4),
                             "candidate_method": row.get("candidate_method"), "gold": gold_by_url[s.url].main_text,
                             "output": row.get("main_text") or ""})
    return result, scores


def run_bench(corpus_dirs: list[str], out_dir: str, *, peers=None, workers: int = 1,
              config: str | None = None, peer_timeout: float = 3600, charts: bool = True,
              cv_folds: int = 5, log=print) -> dict:
    from sitestrip_bench import peers as peer_mod
    from sitestrip_bench.report import write_report

    os.makedirs(out_dir, exist_ok=True)
    work = os.path.join(out_dir, "runs")
    from sitestrip.configs import load_config
    rules = load_config(config).read.parse_rules()
    corpora = [read_corpus(d, work, rules) for d in corpus_dirs]
    wanted = list(peer_mod.PEER_NAMES) if peers is None else list(peers)
    installed = peer_mod.available_peers(wanted) if wanted else {}
    missing = [p for p in wanted if p not in installed]
    if missing:
        log(f"peers not installed (pip install '.[bench]'): {', '.join(missing)}")
    started = time.monotonic()
    results, all_scores = [], []
    for corpus in corpora:
        result, scores = bench_corpus(corpus, out_dir, peers=list(installed), workers=workers,
                                      config=config, peer_timeout=peer_timeout, log=log)
        results.append(result)
        all_scores += scores
    cv_details = {"product_column": "the run's own output"}
    page_errors = None
    if cv_folds:
        from sitestrip_bench.crossval import cross_validated_scores
        from sitestrip.configs import load_config
        cv_scores, details = cross_validated_scores(corpora, load_config(config), cv_folds, log=log)
        page_errors = details.get("learned", {}).pop("page_errors", None)
        cv_details.update(details)
        if details.get("learned", {}).get("system") == PRODUCT:
            cv_details["product_column"] = "cross-validated main_content.method"
        all_scores += cv_scores
        for result, corpus in zip(results, corpora):
            mine = [s for s in cv_scores if s.corpus == corpus.name]
            for by in ("corpus", "genre", "site"):
                for (system, key), agg in group_scores(mine, by).items():
                    label = key if isinstance(key, str) else key[1]
                    result.quality.setdefault(system, {}).setdefault(by, {})[label] = agg.as_dict()
    for result in results:
        if PRODUCT not in result.quality and f"{PRODUCT}:run" in result.quality:
            # No cross-validation (off, or too few sites to fold): the run is the product's
            # column, and results.json says so.
            result.quality[PRODUCT] = result.quality[f"{PRODUCT}:run"]
            cv_details["product_column"] = "the run's own output (in-sample if its model saw these corpora)"
    losing = losing_pages(all_scores)
    summary = {
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "seconds": round(time.monotonic() - started, 1),
        "machine": _machine(),
        "config": config or "default",
        "peers": installed, "peers_missing": missing,
        "corpora": [asdict(r) for r in results],
        "cross_validation": cv_details,
        "overall": {f"{system}": agg.as_dict()
                    for (system, _), agg in group_scores(all_scores, "all").items()},
        "losing_pages": {corpus: len(urls) for corpus, urls in sorted(losing.items())},
    }
    if page_errors is not None:
        summary["error_classes"] = {corpus: error_table(page_errors, set(urls))
                                    for corpus, urls in sorted(losing.items())}
    with open(os.path.join(out_dir, "results.json"), "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=1, ensure_ascii=False)
    # Every page's score by every system, for per-page comparisons (which pages a peer wins).
    with open(os.path.join(out_dir, "page_scores.jsonl"), "w", encoding="utf-8") as fh:
        for s in all_scores:
            fh.write(json.dumps({"system": s.system, "corpus": s.corpus, "genre": s.genre, "url": s.url,
                                 "precision": round(s.words.precision, 4), "recall": round(s.words.recall, 4),
                                 "f1": round(s.words.f1, 4)}, ensure_ascii=False) + "\n")
    write_report(summary, out_dir, charts=charts)
    return summary


def losing_pages(scores, margin: float = 0.01) -> dict:
    """{corpus: urls} of the pages where the best peer's F1 beats the product's by more than
    `margin` (the product's column: cross-validated where it was)."""
    from sitestrip_bench.peers import PEER_NAMES
    best: dict = {}
    mine: dict = {}
    for s in scores:
        if s.system == PRODUCT:
            mine[(s.corpus, s.url)] = s.words.f1
        elif s.system in PEER_NAMES:
            best[(s.corpus, s.url)] = max(best.get((s.corpus, s.url), 0.0), s.words.f1)
    out: dict = {}
    for key, f1 in mine.items():
        if key in best and best[key] > f1 + margin:
            out.setdefault(key[0], []).append(key[1])
    return out


def _machine() -> dict:
    import platform
    info = {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info
