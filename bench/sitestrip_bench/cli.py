"""`sitestrip-bench COMMAND ...`: sitestrip's evaluation and measurements, a distribution of
their own (bench/pyproject.toml) that the product neither ships nor imports.

`bench`, `speed`, `tune`, `train` and `duplicates` are parsed here; every other command is a
module of this package with a `main(argv)` of its own (TOOLS), imported only when it runs.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

PROG = "sitestrip-bench"


def _bench_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Score sitestrip and peer extractors (trafilatura, resiliparse, readability, "
                    "jusText, boilerpy3) on gold corpora, with speed, and write results.json, "
                    "report.md and PNG charts to --out.\n\n"
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


def _peer_names(text: str | None, prog: str) -> list[str] | None:
    """--peers: None for every installed peer; raises ValueError on an unknown name."""
    from sitestrip_bench.peers import PEER_NAMES
    if not text:
        return None
    peers = [] if text == "none" else [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in peers if p not in PEER_NAMES]
    if unknown:
        raise ValueError(f"unknown peer(s) {', '.join(unknown)}; known: {', '.join(PEER_NAMES)}")
    return peers


def bench(argv: list[str], prog: str = f"{PROG} bench") -> int:
    args = _bench_parser(prog).parse_args(argv)
    from sitestrip_bench.run import run_bench
    try:
        peers = _peer_names(args.peers, prog)
        summary = run_bench(args.corpus, args.out, peers=peers, workers=args.workers,
                            config=args.config, peer_timeout=args.peer_timeout,
                            charts=not args.no_charts, cv_folds=args.cv_folds,
                            log=lambda m: print(m, flush=True))
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    print(f"{prog}: {len(summary['corpora'])} corpora in {summary['seconds']} s → "
          f"{os.path.join(args.out, 'report.md')}")
    return 0


def _speed_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Start-up and throughput past start-up, per corpus, against a peer's extraction "
                    "alone on the same decoded pages, in one invocation (speed.py says how each "
                    "number is taken). Prints a Markdown table; --out also writes speed.json and "
                    "speed.md.")
    p.add_argument("--corpus", action="append", required=True, metavar="DIR",
                   help="a corpus folder (shared or TeCo format); repeat for several")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="keep the runs' outputs here and write speed.json and speed.md "
                        "(default: a temporary folder, removed)")
    p.add_argument("--peer", default="trafilatura", metavar="NAME",
                   help="the peer whose extraction is the basis (default trafilatura); 'none' for none")
    p.add_argument("--config", default=None, metavar="NAME|FILE", help="the product's preset")
    p.add_argument("--one-page-runs", type=int, default=1, metavar="N",
                   help="one-page runs per corpus; start-up is their median (default 1)")
    p.add_argument("--repeats", type=int, default=1, metavar="R",
                   help="corpus runs per corpus, each followed by the peer's run; the median "
                        "repeat by the CPU ratio is reported, with every repeat's ratios (default 1)")
    p.add_argument("--peer-timeout", type=float, default=3600, metavar="SECONDS")
    return p


def speed(argv: list[str], prog: str = f"{PROG} speed") -> int:
    args = _speed_parser(prog).parse_args(argv)
    from sitestrip_bench.speed import markdown, run_speed
    try:
        peer = None if args.peer == "none" else args.peer
        if peer is not None:
            _peer_names(peer, prog)
        if args.one_page_runs < 1:
            raise ValueError("--one-page-runs must be at least 1")
        if args.repeats < 1:
            raise ValueError("--repeats must be at least 1")
        results = run_speed(args.corpus, args.out, peer=peer, config=args.config,
                            one_page_runs=args.one_page_runs, peer_timeout=args.peer_timeout,
                            repeats=args.repeats,
                            log=lambda m: print(m, file=sys.stderr, flush=True))
    except (ValueError, RuntimeError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    print(markdown(results))
    return 0


def _tune_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Settle the open parameter choices: a staged coarse grid over the given "
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


def tune(argv: list[str], prog: str = f"{PROG} tune") -> int:
    args = _tune_parser(prog).parse_args(argv)
    from sitestrip_bench.corpora import read_shared_corpus
    from sitestrip_bench.tune import markdown_table, run_grid, select_stages
    try:
        corpora = [read_shared_corpus(d) for d in args.corpus]
        stages = select_stages(args.stage)
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
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
        prog=prog, description="Train a block classifier of design §10 on gold corpora, with its "
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
    parser.add_argument("--labels", choices=("product", "gold"), default="product",
                        help="learned: product = the corpora's gold with the product's convention for an "
                             "article's headline, bylines, datelines and captions (docs/algorithms.md); "
                             "gold = each corpus's gold as it is")
    return parser


# The `train` extra's libraries (bench/pyproject.toml), by import name.
TRAIN_LIBRARIES = ("lightgbm", "sklearn")


def missing_train_libraries() -> list[str]:
    import importlib.util
    return [name for name in TRAIN_LIBRARIES if importlib.util.find_spec(name) is None]


def train(argv: list[str], prog: str = f"{PROG} train") -> int:
    args = _train_parser(prog).parse_args(argv)
    if args.folds < 2:
        print(f"{prog}: --folds must be at least 2", file=sys.stderr)
        return 2
    missing = missing_train_libraries()
    if missing:
        print(f"{prog}: needs the train extra (LightGBM, scikit-learn), missing {', '.join(missing)}: "
              f"pip install 'sitestrip-bench[train]' (in a checkout: pip install -e './bench[train]')",
              file=sys.stderr)
        return 2
    from sitestrip.configs import load_config
    from sitestrip_bench.blockdata import concat, corpus_blocks
    from sitestrip_bench.corpora import read_shared_corpus
    from sitestrip_bench.train import train as train_model
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
                log=lambda m: print(m, flush=True), product_convention=args.labels == "product")
    return 0


def duplicates(argv: list[str], prog: str = f"{PROG} duplicates") -> int:
    from sitestrip_bench.duplicates import main as duplicates_main
    return duplicates_main(argv)


# name → (help, handler); handler is a function here or the module whose main(argv) runs.
COMMANDS: dict[str, tuple[str, object]] = {
    "bench": ("quality and speed against gold corpora and peer extractors", bench),
    "speed": ("start-up and throughput past start-up against a peer's extraction, CPU per stage", speed),
    "tune": ("settle open parameter choices on dev corpora (coarse grid)", tune),
    "train": ("train a block classifier (design §10) on gold corpora", train),
    "duplicates": ("duplicate detection on dev corpora with injected duplicates", duplicates),
    "cost": ("per-stage CPU and shuffle bytes per page of finished run outputs", "cost"),
    "scaling": ("how sitestrip scales: site size, page size, workers, memory", "scaling"),
    "hot-sites": ("peak memory and wall of one large site, with and without sharding", "hot_sites"),
    "reader": ("CPU time of reading WARC files alone", "reader_speed"),
    "profile": ("cProfile of the per-site step over whole corpora", "profile_sites"),
    "steps": ("thread CPU of a run's steps and of named functions inside the per-site step", "steps"),
    "spy-table": ("inclusive and self shares from a py-spy raw profile of `profile`", "spy_table"),
    "compare-runs": ("whether two run outputs hold the same rows, schema and Parquet metadata", "compare_runs"),
    "compare-features": ("compiled vs reference blocks and block features on real pages", "compare_features"),
    "compare-flatten": ("compiled vs reference parse flattening on real pages", "compare_flatten"),
    "compare-markdown": ("compiled vs reference main_markdown on real pages", "compare_markdown"),
    "etdm-reversed-pairs": ("how often ETDM(B, A) inverted equals ETDM(A, B) in a run", "etdm_reversed_pairs"),
    "switches": ("what each product extension is worth, one switch at a time", "switches"),
    "incremental": ("incremental runs (--state) against one batch run", "incremental"),
    "watch-f1": ("a --watch job against one batch run", "watch_f1"),
    "watch-latency": ("watch mode: from a file landing to its rows on disk", "watch_latency"),
    "structure": ("URL-structure clusters of the dev corpora", "structure"),
    "output-columns": ("the output columns' quality: language, Markdown, words", "output_columns"),
    "language": ("language identifiers compared on labelled pages", "language"),
    "train-models": ("the model exporters' evaluator speed and the GBDT libraries compared", "train_models"),
    "unicode-marks": ("write transforms/unicode_marks.json of the checkout", "unicode_marks"),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="sitestrip's evaluation: quality and speed against gold corpora and "
                               "peer extractors, training, tuning and measurements.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, _) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser()
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if argv else 2
    entry = COMMANDS.get(argv[0])
    if entry is None:
        parser.error(f"unknown command {argv[0]!r}; available: {', '.join(COMMANDS)}")
    # Most commands reach Beam through the product; its import-time warnings are noise here.
    from sitestrip.pipeline.console import import_beam_quietly
    import_beam_quietly()
    handler = entry[1]
    if isinstance(handler, str):
        module = importlib.import_module(f"sitestrip_bench.{handler}")
        # The module's own parser names the command as it is typed.
        sys.argv = [f"{PROG} {argv[0]}", *argv[1:]]
        return module.main(argv[1:]) or 0
    return handler(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
