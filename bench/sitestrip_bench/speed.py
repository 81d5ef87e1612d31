"""`sitestrip-bench speed`: start-up and throughput past start-up, per corpus, against a
peer's extraction alone on the same decoded pages, in one invocation.

Per corpus, every run a child process measured alone (os.wait4: its own user + system CPU;
wall from its start to its exit; peak RSS from VmHWM, measure.py):

1. start-up: `sitestrip run --workers 1` on a WARC file holding one page of the corpus (its
   first HTML 200 response), `--one-page-runs` times; the median run's wall and CPU;
2. the corpus: `sitestrip run --workers 1` on all its WARC files;
3. throughput past start-up: pages / (corpus run − one-page run), once from wall time and
   once from CPU time; on a shared machine the CPU basis is the steadier one;
4. the peer: its extraction calls alone (peers.py's worker, warmed up, one process) on the
   pages the product read, decoded as the product decodes them; reading and decoding the
   WARC are not charged to it. pages / its CPU inside the calls, and / its wall inside them;
5. sitestrip ÷ peer: the two pages-per-second figures' ratio, per basis;
6. CPU ms per page and stage, p50 and p99 (and mean), from the corpus run's `timing_ms`.

With `--repeats R`, steps 2 to 5 are taken R times, the product's run and the peer's one
after the other in each repeat, so that a slower or faster spell of a shared machine falls on
both sides of a ratio rather than on one. The figures reported are those of the median repeat
(by the CPU ratio; the upper one of an even count), with every repeat's figures beside them and
the ratios' range.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass

from sitestrip_bench.corpora import Corpus
from sitestrip_bench.corpus_format import read_corpus
from sitestrip_bench.stages import row_stages, stage_percentiles


def one_page_warc(warc_paths: list[str], path: str) -> str:
    """Write the first HTML 200 response of the WARC files (in their order) to `path`, a gzipped
    WARC file of that one record; returns its URL. ValueError when there is none."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.warcwriter import WARCWriter
    for source in warc_paths:
        with open(source, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                kind = record.http_headers.get_header("Content-Type") or ""
                if record.http_headers.get_statuscode() != "200" or "html" not in kind.lower():
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI")
                with open(path, "wb") as out:
                    WARCWriter(out, gzip=True).write_record(record)
                return url
    raise ValueError(f"no HTML 200 response in {', '.join(warc_paths)}")


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float | None
    pages: int


def _product_run(corpus: Corpus, out_dir: str, config: str | None) -> tuple[Run, list[dict]]:
    from sitestrip_bench.run import run_product
    child, peak, rows, _ = run_product(corpus, out_dir, workers=1, config=config)
    return Run(round(child.wall_seconds, 3), round(child.cpu_seconds, 3), peak and round(peak, 1), len(rows)), rows


def _per_second(pages: int, seconds: float | None) -> float | None:
    return round(pages / seconds, 1) if seconds and seconds > 0 else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def _product_figures(run: Run, start: Run) -> dict:
    past_wall = run.wall_s - start.wall_s
    past_cpu = run.cpu_s - start.cpu_s
    return {"pages": run.pages, "wall_s": run.wall_s, "cpu_s": run.cpu_s, "peak_rss_mb": run.peak_rss_mb,
            "past_startup_wall_s": round(past_wall, 3), "past_startup_cpu_s": round(past_cpu, 3),
            "pages_per_s_wall": _per_second(run.pages, past_wall),
            "pages_per_s_cpu": _per_second(run.pages, past_cpu),
            "cpu_ms_per_page": round(1000 * past_cpu / run.pages, 2) if run.pages else None}


def _peer_figures(peer: str, pages_path: str, out_dir: str, corpus: str, timeout: float) -> dict:
    from sitestrip_bench import peers as peer_mod
    p = peer_mod.run_peer(peer, pages_path, out_dir, timeout=timeout)
    if p.error:
        raise RuntimeError(f"{peer} on {corpus}: {p.error}")
    peer_cpu = p.extract_cpu_seconds
    return {"name": peer, "version": p.version, "pages": p.pages, "failed": p.failed,
            "extract_wall_s": round(p.wall_seconds, 3),
            "extract_cpu_s": None if peer_cpu is None else round(peer_cpu, 3),
            "pages_per_s_wall": _per_second(p.pages, p.wall_seconds),
            "pages_per_s_cpu": _per_second(p.pages, peer_cpu),
            "cpu_ms_per_page": round(1000 * peer_cpu / p.pages, 2) if peer_cpu and p.pages else None}


def median_repeat(repeats: list[dict]) -> int:
    """The index of the repeat whose CPU ratio is the median (the upper one of an even count;
    a repeat without a ratio sorts first); the first one without a peer."""
    if not repeats or repeats[0].get("ratio") is None:
        return 0
    order = sorted(range(len(repeats)), key=lambda k: (repeats[k]["ratio"]["cpu"] is not None,
                                                       repeats[k]["ratio"]["cpu"] or 0.0, k))
    return order[len(order) // 2]


def _ratio_range(repeats: list[dict]) -> dict:
    out = {}
    for basis in ("cpu", "wall"):
        got = [r["ratio"][basis] for r in repeats if r.get("ratio") and r["ratio"][basis] is not None]
        out[basis] = [min(got), max(got)] if got else None
    return out


def measure_corpus(corpus: Corpus, work: str, *, peer: str | None, config: str | None,
                   one_page_runs: int, peer_timeout: float, repeats: int = 1, log=print) -> dict:
    """The numbers of one corpus (the module docstring says how each is taken)."""
    from sitestrip.configs import load_config
    from sitestrip_bench import peers as peer_mod
    from sitestrip_bench.core import load_corpus

    os.makedirs(work, exist_ok=True)
    one_page = os.path.join(work, "one-page.warc.gz")
    url = one_page_warc(corpus.warc_paths, one_page)
    single = Corpus(name=f"{corpus.name}-one-page", warc_paths=[one_page], gold=[])
    starts = []
    for k in range(one_page_runs):
        log(f"[{corpus.name}] one-page run {k + 1}/{one_page_runs} ({url})")
        starts.append(_product_run(single, os.path.join(work, f"one-page-out-{k}"), config)[0])
    start = sorted(starts, key=lambda r: r.cpu_s)[len(starts) // 2]

    pages_path = None
    if peer is not None:
        loaded = load_corpus(corpus.warc_paths, load_config(config).read, keep_html=True)
        pages_path = os.path.join(work, "peer-pages.jsonl")
        count = peer_mod.write_pages(loaded.html.items(), pages_path)
        del loaded
    done, timings = [], []
    for r in range(repeats):
        of = f" (repeat {r + 1}/{repeats})" if repeats > 1 else ""
        suffix = f"-{r + 1}" if r else ""
        log(f"[{corpus.name}] sitestrip run on {len(corpus.warc_paths)} WARC files{of}")
        run, rows = _product_run(corpus, os.path.join(work, "out" + suffix), config)
        timings.append([row.get("timing_ms") or {} for row in rows])
        del rows
        repeat = {"sitestrip": _product_figures(run, start), "peer": None}
        if peer is not None:
            log(f"[{corpus.name}] {peer} on the same {count} decoded pages{of}")
            repeat["peer"] = _peer_figures(peer, pages_path, os.path.join(work, "peer" + suffix), corpus.name,
                                           peer_timeout)
            repeat["ratio"] = {basis: _ratio(repeat["sitestrip"][f"pages_per_s_{basis}"],
                                             repeat["peer"][f"pages_per_s_{basis}"]) for basis in ("cpu", "wall")}
        done.append(repeat)
    chosen = median_repeat(done)
    result = {"corpus": corpus.name, "source": corpus.source,
              "startup": {"runs": [vars(s) for s in starts], "wall_s": start.wall_s, "cpu_s": start.cpu_s,
                          "peak_rss_mb": start.peak_rss_mb},
              "sitestrip": done[chosen]["sitestrip"], "stages_ms": stage_percentiles(timings[chosen]),
              "stages": row_stages(timings[chosen]), "peer": done[chosen]["peer"]}
    if peer is not None:
        result["ratio"] = done[chosen]["ratio"]
    if repeats > 1:
        result["median_repeat"] = chosen + 1
        result["repeats"] = done
        if peer is not None:
            result["ratio_range"] = _ratio_range(done)
    return result


def run_speed(corpus_dirs: list[str], out: str | None, *, peer: str | None = "trafilatura",
              config: str | None = None, one_page_runs: int = 1, peer_timeout: float = 3600,
              repeats: int = 1, log=print) -> dict:
    """Every corpus measured in turn; written to OUT/speed.json and OUT/speed.md when `out` is given."""
    import json
    work = out or tempfile.mkdtemp(prefix="sitestrip-speed-")
    try:
        os.makedirs(work, exist_ok=True)
        corpora = [read_corpus(d, os.path.join(work, "teco")) for d in corpus_dirs]
        started = time.monotonic()
        results = {"peer": peer, "config": config, "one_page_runs": one_page_runs, "repeats": repeats,
                   "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
                   "corpora": [measure_corpus(c, os.path.join(work, c.name), peer=peer, config=config,
                                              one_page_runs=one_page_runs, peer_timeout=peer_timeout,
                                              repeats=repeats, log=log)
                               for c in corpora]}
        results["seconds"] = round(time.monotonic() - started, 1)
        if out:
            with open(os.path.join(out, "speed.json"), "w", encoding="utf-8") as fh:
                json.dump(results, fh, indent=1)
            with open(os.path.join(out, "speed.md"), "w", encoding="utf-8") as fh:
                fh.write(markdown(results) + "\n")
        return results
    finally:
        if out is None:
            shutil.rmtree(work, ignore_errors=True)


def _f(value, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _times(ratio) -> str:
    return "–" if ratio is None else f"{ratio:.2f}×"


def markdown(results: dict) -> str:
    """The throughput table, then CPU ms per page and stage (p50 / p99) per corpus."""
    peer = results.get("peer") or "peer"
    lines = [f"| corpus | pages | one-page run wall / CPU s | corpus run wall / CPU s "
             f"| sitestrip pages/s past start-up, wall / CPU | {peer} pages/s, wall / CPU "
             f"| sitestrip ÷ {peer}, wall / CPU |",
             "|---|---|---|---|---|---|---|"]
    for c in results["corpora"]:
        s, start, p, ratio = c["sitestrip"], c["startup"], c.get("peer"), c.get("ratio") or {}
        peer_cell = "–" if p is None else f"{_f(p['pages_per_s_wall'])} / {_f(p['pages_per_s_cpu'])}"
        lines.append(f"| {c['corpus']} | {s['pages']:,} | {_f(start['wall_s'], 2)} / {_f(start['cpu_s'], 2)} "
                     f"| {_f(s['wall_s'], 2)} / {_f(s['cpu_s'], 2)} "
                     f"| {_f(s['pages_per_s_wall'])} / {_f(s['pages_per_s_cpu'])} | {peer_cell} "
                     f"| {_times(ratio.get('wall'))} / {_times(ratio.get('cpu'))} |")
    repeated = [c for c in results["corpora"] if c.get("ratio_range")]
    if repeated:
        lines += ["", f"sitestrip ÷ {peer} in each repeat, CPU basis (the table shows the median repeat):", "",
                  "| corpus | median repeat | each repeat, wall / CPU | range, CPU |", "|---|---|---|---|"]
        for c in repeated:
            each = ", ".join(f"{_times(r['ratio']['wall'])} / {_times(r['ratio']['cpu'])}" for r in c["repeats"])
            low, high = c["ratio_range"]["cpu"] or (None, None)
            lines.append(f"| {c['corpus']} | {c['median_repeat']} of {len(c['repeats'])} | {each} "
                         f"| {_times(low)} – {_times(high)} |")
    stages = []
    for c in results["corpora"]:
        stages += [s for s in c["stages"] if s not in stages]
    lines += ["", "CPU ms per page and stage (`timing_ms`), p50 / p99:", "",
              "| corpus | " + " | ".join(stages) + " |", "|---|" + "---|" * len(stages)]
    for c in results["corpora"]:
        cells = []
        for stage in stages:
            st = c["stages_ms"].get(stage) or {}
            cells.append("–" if st.get("p50") is None else f"{_f(st['p50'], 2)} / {_f(st['p99'], 2)}")
        lines.append(f"| {c['corpus']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)

