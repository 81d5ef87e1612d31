"""Command line: `sitestrip run|inspect|report|bench|tune ...` (`python run.py ...` is `sitestrip run ...`)."""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_WARC = os.path.join(REPO_ROOT, "sample", "sitestrip-sample.warc.gz")

RUN_DESCRIPTION = """\
Read WARC files, group HTML pages by site, extract main content, non-template
text and menus, and write three Parquet datasets under --output:
pages/, menus/ and errors/. With no --input, processes the embedded sample
WARC into ./out.

Any option not listed here is passed to Apache Beam (for example
--runner=DataflowRunner --project=... --region=... --temp_location=gs://...).
Without --runner the local FnApiRunner is used."""


def _run_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=RUN_DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", nargs="+", metavar="PATH", default=None,
                   help="WARC files (.warc, .warc.gz), globs, directories (searched recursively "
                        "for *.warc and *.warc.gz) or Common Crawl manifests (warc.paths[.gz]); "
                        "local, gs:// or s3:// (with the matching Beam extra). "
                        "Default: the embedded sample WARC.")
    p.add_argument("--input-prefix", default=None, metavar="PREFIX",
                   help="prefix for relative paths inside a manifest, e.g. s3://commoncrawl/, "
                        "gs://BUCKET/cc/ or a local directory (Beam has no http(s) filesystem: "
                        "copy files from an HTTPS mirror first; see docs/runners.md)")
    p.add_argument("--output", default="out", metavar="DIR",
                   help="output directory (local or a bucket URL); its pages/, menus/ and errors/ "
                        "part files from an earlier run are replaced. Default: ./out")
    p.add_argument("--config", default=None, metavar="NAME|FILE",
                   help="YAML preset: a file path or the name of one in configs/ "
                        "(default: configs/default.yaml). Validated on load.")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="local worker processes for the FnApiRunner (default 1); "
                        "ignored by remote runners, which size their own workers")
    p.add_argument("--quiet", action="store_true", help="no progress lines, only the summary")
    return p


def _counters(result) -> dict:
    from pipeline.graph import NAMESPACE
    out = {}
    for c in result.metrics().query()["counters"]:
        if c.key.metric.namespace == NAMESPACE:
            value = c.committed if c.committed is not None else c.attempted
            out[c.key.metric.name] = out.get(c.key.metric.name, 0) + (value or 0)
    return out


def _group(counters: dict, prefix: str) -> str:
    items = sorted((k[len(prefix):], v) for k, v in counters.items() if k.startswith(prefix) and v)
    return ", ".join(f"{k} {v}" for k, v in items) or "none"


def summary(counters: dict, elapsed: float, output: str) -> str:
    pages = counters.get("pages", 0)
    html = counters.get("html_bytes", 0)
    compact = counters.get("compact_bytes", 0)
    records = sum(v for k, v in counters.items() if k.startswith("records_"))
    lines = [
        f"sitestrip: finished in {elapsed:.1f} s",
        f"  records read by type: {_group(counters, 'records_')} "
        f"({records / elapsed if elapsed else 0:.0f} records/s)",
        f"  skipped: {_group(counters, 'skipped_')}",
        f"  pages: {pages} ({pages / elapsed if elapsed else 0:.1f} pages/s); "
        f"methods: {_group(counters, 'method_')}",
        f"  errors by stage: {_group(counters, 'errors_')}",
    ]
    if counters.get("hot_sites"):
        lines.append(f"  hot sites (over site.max_site_pages): {counters['hot_sites']}, "
                     f"{counters.get('pages_in_hot_sites', 0)} pages in "
                     f"{counters.get('hot_site_shards', 0)} shards")
    if html:
        lines.append(f"  compact pages: {compact / html:.1%} of HTML bytes ({compact:,} / {html:,})")
    lines.append(f"  output: {output}/pages, {output}/menus, {output}/errors")
    return "\n".join(lines)


def run(argv: list[str], prog: str = "sitestrip run") -> int:
    args, beam_args = _run_parser(prog).parse_known_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    # Beam's own INFO lines drown the progress; keep its warnings.
    logging.getLogger("apache_beam").setLevel(logging.WARNING)

    import apache_beam as beam
    from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions

    from configs import ConfigError, load_config
    from pipeline.graph import build_pipeline, clear_outputs
    from pipeline.warc import expand_inputs

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"sitestrip: bad config: {exc}", file=sys.stderr)
        return 2
    inputs = args.input
    if inputs is None:
        if not os.path.exists(SAMPLE_WARC):
            print("sitestrip: no --input given and the embedded sample is not available "
                  f"({SAMPLE_WARC}); install from a checkout with `pip install -e .`", file=sys.stderr)
            return 2
        inputs = [SAMPLE_WARC]
    try:
        paths = expand_inputs(inputs, args.input_prefix)
    except ValueError as exc:
        print(f"sitestrip: {exc}", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("sitestrip: --workers must be 1 or more", file=sys.stderr)
        return 2

    options = PipelineOptions(beam_args)
    runner = None
    if options.get_all_options().get("runner") is None:
        # Pin the in-process runner: Beam's default may try to download Prism.
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner
        runner = FnApiRunner()
        direct = options.view_as(DirectOptions)
        direct.direct_num_workers = args.workers
        direct.direct_running_mode = "multi_processing" if args.workers > 1 else "in_memory"

    logging.getLogger("sitestrip").info("%d WARC file(s) → %s", len(paths), args.output)
    clear_outputs(args.output)
    started = time.monotonic()
    p = beam.Pipeline(runner=runner, options=options)
    build_pipeline(p, paths, args.output, config)
    result = p.run()
    result.wait_until_finish()
    elapsed = time.monotonic() - started
    try:
        counters = _counters(result)
    except Exception:  # some remote runners do not report metrics back
        counters = {}
    print(summary(counters, elapsed, args.output))
    return 0


def _inspect_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Write one self-contained HTML file showing a page of the archive "
        "with its template, main content and menu marked, as sitestrip computes them: the pages of "
        "the page's site are read from the inputs and compared as in a run. No Beam, no network.")
    p.add_argument("--input", nargs="+", metavar="PATH", default=None,
                   help="WARC files, globs, directories or manifests, as for `run` "
                        "(default: the embedded sample WARC)")
    p.add_argument("--input-prefix", default=None, metavar="PREFIX",
                   help="prefix for relative paths inside a manifest")
    p.add_argument("--url", required=True, help="the page to inspect (its URL as archived)")
    p.add_argument("--out", default="inspect.html", metavar="FILE",
                   help="HTML file to write (default: ./inspect.html)")
    p.add_argument("--config", default=None, metavar="NAME|FILE",
                   help="YAML preset, as for `run` (default: configs/default.yaml)")
    return p


def inspect(argv: list[str], prog: str = "sitestrip inspect") -> int:
    args = _inspect_parser(prog).parse_args(argv)
    from configs import ConfigError, load_config
    from pipeline.inspect_view import InspectError, inspect as inspect_page
    from pipeline.warc import expand_inputs

    try:
        config = load_config(args.config)
        paths = expand_inputs(args.input or [SAMPLE_WARC], args.input_prefix)
        page, expl = inspect_page(paths, args.url, config)
    except (ConfigError, ValueError, InspectError) as exc:
        print(f"sitestrip inspect: {exc}", file=sys.stderr)
        return 2
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(page)
    share = expl.template_share
    words = expl.words()
    print(f"sitestrip inspect: {expl.record.url}: method {expl.method}, "
          f"template share {'n/a' if share is None else f'{share:.0%}'}, "
          f"{words['main']} of {words['page']} words main content → {args.out}")
    return 0


def _report_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Summarize a finished run from its Parquet output (pages, methods, "
        "template share, errors, largest sites, menus) as an HTML page with charts and a Markdown "
        "twin next to it (same name, .md).")
    p.add_argument("--output", required=True, metavar="RUN_DIR",
                   help="the --output directory of the run (holding pages/, menus/, errors/)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="HTML file to write (default: RUN_DIR/report.html)")
    p.add_argument("--top", type=int, default=15, metavar="N",
                   help="sites listed in the largest-sites and menus tables (default 15)")
    return p


def report(argv: list[str], prog: str = "sitestrip report") -> int:
    args = _report_parser(prog).parse_args(argv)
    from pipeline.report import ReportError, write_report

    out = args.out or os.path.join(args.output, "report.html")
    try:
        html_path, md_path, summary_ = write_report(args.output, out, top=args.top)
    except ReportError as exc:
        print(f"sitestrip report: {exc}", file=sys.stderr)
        return 2
    print(f"sitestrip report: {summary_['pages']} pages, {summary_['sites']} sites, "
          f"{summary_['errors']} errors → {html_path}, {md_path}")
    return 0


def _bench_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Score sitestrip and peer extractors (trafilatura, resiliparse, readability, "
                    "jusText, boilerpy3; `pip install '.[bench]'`) on gold corpora, with speed, "
                    "and write results.json, report.md and PNG charts to --out.\n\n"
                    "A corpus is a folder in the shared format (warc/*.warc.gz + gold.jsonl) or "
                    "in the TeCo format (a folder per site, the key page labelled with TECO_* "
                    "classes).")
    p.add_argument("--corpus", action="append", required=True, metavar="DIR",
                   help="a corpus folder; repeat for several")
    p.add_argument("--out", required=True, metavar="RESULTS_DIR")
    p.add_argument("--peers", default=None, metavar="NAMES",
                   help="comma-separated peers to run (default: every installed one); 'none' for none")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="worker processes of the product's run (default 1, like the peers)")
    p.add_argument("--config", default=None, metavar="NAME|FILE", help="the product's preset")
    p.add_argument("--peer-timeout", type=float, default=3600, metavar="SECONDS",
                   help="per peer and corpus; pages left when it runs out score as empty")
    p.add_argument("--no-charts", action="store_true", help="Markdown and JSON only")
    p.add_argument("--cv-folds", type=int, default=5, metavar="K",
                   help="folds (grouped by site) of the cross-validated main-content scores of the "
                        "learned and ceml models, and conex in-process; 0 = skip (then the run's own "
                        "main text is the product's column)")
    return p


def bench(argv: list[str], prog: str = "sitestrip bench") -> int:
    args = _bench_parser(prog).parse_args(argv)
    from bench.peers import PEER_NAMES
    from bench.run import run_bench
    peers = None
    if args.peers:
        peers = [] if args.peers == "none" else [p.strip() for p in args.peers.split(",") if p.strip()]
        unknown = [p for p in peers if p not in PEER_NAMES]
        if unknown:
            print(f"sitestrip bench: unknown peer(s) {', '.join(unknown)}; known: {', '.join(PEER_NAMES)}",
                  file=sys.stderr)
            return 2
    try:
        summary = run_bench(args.corpus, args.out, peers=peers, workers=args.workers,
                            config=args.config, peer_timeout=args.peer_timeout,
                            charts=not args.no_charts, cv_folds=args.cv_folds,
                            log=lambda m: print(m, flush=True))
    except ValueError as exc:
        print(f"sitestrip bench: {exc}", file=sys.stderr)
        return 2
    print(f"sitestrip bench: {len(summary['corpora'])} corpora in {summary['seconds']} s → "
          f"{os.path.join(args.out, 'report.md')}")
    return 0


def _tune_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Settle SPEC's open choices: a staged coarse grid over the given "
                               "dev corpora (shared format), cached in --out; writes tune.json and "
                               "tune.md (the comparison table) and prints the winning settings.")
    p.add_argument("--corpus", action="append", required=True, metavar="DIR")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--processes", type=int, default=None, metavar="N",
                   help="worker processes (default: all CPUs)")
    p.add_argument("--stage", action="append", default=None, metavar="NAME",
                   help="run only this stage of the grid, from the shipped defaults (repeatable); "
                        "stages: text_equality, site_conex_variant, template_position_option, "
                        "template_n_votes, template_weights, conex_n, conex_weights, link_blocks")
    return p


def tune(argv: list[str], prog: str = "sitestrip tune") -> int:
    args = _tune_parser(prog).parse_args(argv)
    from bench.corpora import read_shared_corpus
    from bench.tune import markdown_table, run_grid, select_stages
    try:
        corpora = [read_shared_corpus(d) for d in args.corpus]
        stages = select_stages(args.stage)
    except ValueError as exc:
        print(f"sitestrip tune: {exc}", file=sys.stderr)
        return 2
    report = run_grid(corpora, args.out, processes=args.processes, stages=stages,
                      log=lambda m: print(m, flush=True))
    with open(os.path.join(args.out, "tune.md"), "w", encoding="utf-8") as fh:
        fh.write(markdown_table(report))
    changed = {f"{section}.{key}": value for section, values in report["final"].items()
               for key, value in values.items()}
    print("winning settings:")
    for dotted, value in sorted(changed.items()):
        print(f"  {dotted}: {value}")
    return 0


def _train_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Train a block classifier of SPEC §10 on gold corpora, with its "
                               "cross-validated scores (folds grouped by site).")
    parser.add_argument("--corpus", action="append", required=True, metavar="DIR",
                        help="a corpus in the shared format (DIR/warc/*.warc.gz + DIR/gold.jsonl); repeatable")
    parser.add_argument("--out", required=True, metavar="MODEL",
                        help="model file to write (.json or .json.gz); use it with main_content.model")
    parser.add_argument("--method", choices=("learned", "ceml"), default="learned",
                        help="learned: the product's gradient-boosted trees; ceml: seed 002's CARTs")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds, grouped by site")
    parser.add_argument("--config", default=None, metavar="NAME|FILE",
                        help="preset whose candidate and template parameters compute the features")
    parser.add_argument("--processes", type=int, default=None, help="worker processes for the features")
    return parser


def train(argv: list[str], prog: str = "sitestrip train") -> int:
    args = _train_parser(prog).parse_args(argv)
    from bench.blockdata import concat, corpus_blocks
    from bench.corpora import read_shared_corpus
    from bench.train import train as train_model
    from configs import load_config
    if args.folds < 2:
        print(f"{prog}: --folds must be at least 2", file=sys.stderr)
        return 2
    try:
        config = load_config(args.config)
        corpora = [read_shared_corpus(d) for d in args.corpus]
    except (ValueError, OSError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    parts = []
    for corpus in corpora:
        print(f"[{corpus.name}] blocks and features of {len(corpus.gold)} gold pages", flush=True)
        parts.append(corpus_blocks(corpus, config, args.processes))
    data = concat(parts)
    if len({p.site for p in data.pages}) < args.folds:
        print(f"{prog}: {len({p.site for p in data.pages})} sites, fewer than --folds {args.folds}",
              file=sys.stderr)
        return 2
    train_model(data, args.out, args.method, args.folds, params=config.main_content,
                log=lambda m: print(m, flush=True))
    return 0


COMMANDS = {"run": run, "inspect": inspect, "report": report, "bench": bench, "tune": tune,
            "train": train}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="sitestrip",
        description="Site-level template removal and content extraction for WARC archives.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("run", help="run the extraction pipeline (see `sitestrip run --help`)",
                   add_help=False)
    sub.add_parser("inspect", help="one page with its template, main content and menu marked, "
                                   "as a self-contained HTML file", add_help=False)
    sub.add_parser("report", help="HTML and Markdown summary of a finished run", add_help=False)
    sub.add_parser("bench", help="quality and speed against gold corpora and peer extractors",
                   add_help=False)
    sub.add_parser("tune", help="settle the SPEC's open choices on dev corpora (coarse grid)",
                   add_help=False)
    sub.add_parser("train", help="train a block classifier (SPEC §10) on gold corpora", add_help=False)
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if argv else 2
    command = COMMANDS.get(argv[0])
    if command is None:
        parser.error(f"unknown command {argv[0]!r}; available: {', '.join(COMMANDS)}")
        return 2
    return command(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
