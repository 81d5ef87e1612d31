"""Command line: `sitestrip run|inspect|report ...` (`python run.py ...` is `sitestrip run ...`);
the evaluation's commands are `sitestrip-bench`'s (bench/)."""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import weakref

from sitestrip.pipeline.heap import bound_c_heap

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_WARC = os.path.join(REPO_ROOT, "sample", "sitestrip-sample.warc.gz")

RUN_DESCRIPTION = """\
Read WARC files, group HTML pages by site, extract main content, non-template
text and menus, and write four Parquet datasets under --output:
pages/, menus/, errors/ and sites/ (template clusters). With no --input, processes the embedded sample
WARC into ./out.

Other options must be Apache Beam's own pipeline options (for example
--runner=DataflowRunner --project=... --region=... --temp_location=gs://...);
anything else is an error. Without --runner the local FnApiRunner is used.

The run writes into a staging directory inside --output and publishes it only
when it has finished: a failed, refused or interrupted run leaves the previous
output as it was. _SUCCESS (JSON) is written last and describes the run.

Exit status: 0 when the run published its output; 1 when it read no record at
all, or read HTML pages but wrote no pages row (nothing published; the first
errors are printed), or when more input files than --allow-missing-inputs were
missing, empty or unreadable (published, the files named); 2 for a usage error
(unknown option or runner, bad config, an input that matches nothing, unusable
--output or --state), before any work; 130/143 when stopped by SIGINT/SIGTERM
(nothing published)."""

# Exit statuses of `run`.
OK, FAILED_RUN, USAGE = 0, 1, 2
FIRST_ERRORS = 5
# Runner names offered in "did you mean" (Beam also takes a class's full module path).
KNOWN_RUNNERS = ("DirectRunner", "DataflowRunner", "FlinkRunner", "SparkRunner", "PortableRunner",
                 "PrismRunner", "DaskRunner", "InteractiveRunner")


def _allowance(text: str) -> tuple[str, float]:
    """--allow-missing-inputs: ("count", N) or ("percent", P)."""
    raw = text.strip()
    try:
        if raw.endswith("%"):
            value = float(raw[:-1])
            if 0 <= value <= 100:
                return "percent", value
        else:
            value = int(raw)
            if value >= 0:
                return "count", value
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"expected a count (e.g. 3) or a percentage (e.g. 0.5%), got {text!r}")


def allowed(allowance: tuple[str, float], unread: int, inputs: int) -> bool:
    kind, value = allowance
    if kind == "count":
        return unread <= value
    return unread * 100 <= value * inputs


def version() -> str:
    """The installed distribution's version; from pyproject.toml in a checkout that is not installed."""
    from importlib.metadata import PackageNotFoundError, version as dist_version
    try:
        return dist_version("sitestrip")
    except PackageNotFoundError:
        import re
        try:
            with open(os.path.join(REPO_ROOT, "pyproject.toml"), encoding="utf-8") as fh:
                found = re.search(r'^version\s*=\s*"([^"]+)"', fh.read(), re.MULTILINE)
        except OSError:
            found = None
        return found.group(1) if found else "unknown"


def _version_action(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action="version", version=f"sitestrip {version()}",
                        help="print the version and exit")


def _run_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=RUN_DESCRIPTION, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", nargs="+", action="extend", metavar="PATH", default=None,
                   help="WARC files (.warc, .warc.gz), globs, directories (searched recursively "
                        "for *.warc and *.warc.gz) or Common Crawl manifests (warc.paths[.gz]); "
                        "local, gs:// or s3:// (with the matching Beam extra). "
                        "`--input A B` and `--input A --input B` are the same. "
                        "Default: the embedded sample WARC.")
    p.add_argument("--input-prefix", default=None, metavar="PREFIX",
                   help="prefix for relative paths inside a manifest, e.g. s3://commoncrawl/, "
                        "gs://BUCKET/cc/ or a local directory (Beam has no http(s) filesystem: "
                        "copy files from an HTTPS mirror first; see docs/runners.md)")
    p.add_argument("--output", default="out", metavar="DIR",
                   help="output directory (local or a bucket URL). The run writes into a staging "
                        "directory inside it and replaces an earlier run's pages/, menus/, errors/ "
                        "and sites/ only when it has finished; _SUCCESS is written last. Default: ./out")
    p.add_argument("--config", default=None, metavar="NAME|FILE",
                   help="YAML preset: a file path or the name of one in configs/ "
                        "(default: configs/default.yaml; `published` for the published "
                        "algorithm). Validated on load.")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="local worker processes for the FnApiRunner (default 1); "
                        "ignored by remote runners, which size their own workers")
    p.add_argument("--part-files", type=int, default=None, metavar="N",
                   help="Parquet part files per dataset (pages, menus, errors, sites); default: one per "
                        "input WARC file. A part's rows are held in memory while it is written.")
    p.add_argument("--state", default=None, metavar="DIR",
                   help="per-site state of incremental runs (local or a bucket URL): stored pages "
                        "of earlier runs are candidate pages for this run's pages, and the state is "
                        "updated at the end (a new version; a failed run leaves the old one)")
    p.add_argument("--allow-missing-inputs", default="0", metavar="N|P%", type=_allowance,
                   help="how many input files (a count, or a percentage of the inputs) may be missing, "
                        "empty or unreadable before the run exits 1 (default 0); the rows of the other "
                        "files are published either way")
    p.add_argument("--watch", action="store_true",
                   help="watch mode: a streaming job that keeps matching the --input glob and reads each "
                        "WARC file once, when it lands (write it elsewhere and rename it into place); rows "
                        "are written in windows while it runs (docs/runners.md, \"Watch mode\")")
    p.add_argument("--idle-timeout", type=float, default=None, metavar="SECONDS",
                   help="with --watch: end the job after this long without a new file (default: run "
                        "until stopped)")
    p.add_argument("--window", type=float, default=None, metavar="SECONDS",
                   help="with --watch: rows are written per fixed window of this many seconds of "
                        "their file's landing (default 10)")
    p.add_argument("--poll-interval", type=float, default=None, metavar="SECONDS",
                   help="with --watch: how often the glob is matched (default 1)")
    p.add_argument("--checkpoint-interval", type=float, default=None, metavar="SECONDS",
                   help="with --watch and --state: how often the sites' state is written back as a new "
                        "state version, when a site has changed (default 300); it is also written when "
                        "the job stops")
    p.add_argument("--quiet", action="store_true",
                   help="print the summary only: no progress, no log lines (worker processes "
                        "included); errors still go to stderr")
    p.add_argument("--progress-every", type=float, default=30.0, metavar="SECONDS",
                   help="when stderr is not a terminal, log a progress line this often "
                        "(default 30); on a terminal a progress bar is drawn instead")
    _version_action(p)
    return p


DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"


def _register_dask_options(args: list[str]) -> None:
    """Beam knows the DaskRunner's options (--dask_client_address, ...) only once its
    module is imported, and that imports dask.distributed (a second of start-up), so
    only a command line that mentions Dask pays for it."""
    if any("dask" in arg.lower() for arg in args):
        try:
            import apache_beam.runners.dask.dask_runner  # noqa: F401  registers DaskOptions
        except ImportError:
            pass  # the options stay unknown; Beam's error for the runner says what to install


def _runner_for(name: str | None):
    """A runner instance for the names Beam's own lookup misses, else None (Beam resolves
    the name). Beam 2.77 finds --runner=DaskRunner only under its full module path."""
    if name is not None and name.lower() in ("dask", "daskrunner"):
        import importlib
        module, cls = DASK_RUNNER.rsplit(".", 1)
        try:
            return getattr(importlib.import_module(module), cls)()
        except ImportError as exc:
            raise SystemExit(f"sitestrip: the DaskRunner needs dask and distributed: "
                             f"pip install 'apache-beam[dask]==2.77.*' ({exc})")
    return None


def _one_file_per_dask_partition(options, runner_name: str | None) -> None:
    """On the DaskRunner, one WARC file per Dask partition unless --dask_npartitions or
    --dask_partition_size says otherwise. Beam's Reshuffle is a no-op there, and every
    later step keeps the partitions of the first one, so Beam's default (up to 128
    elements in one partition) would read all files, and process all sites, in one task."""
    if runner_name is None or "dask" not in runner_name.lower():
        return
    from apache_beam.runners.dask.dask_runner import DaskOptions
    dask = options.view_as(DaskOptions)
    if dask.npartitions is None and dask.partition_size is None:
        dask.partition_size = 1


def _beam_option_names() -> list[str]:
    return [name for action in _beam_parser()._actions for name in action.option_strings]


def _beam_parser():
    """The argument parser Beam itself builds from every PipelineOptions class it knows."""
    from apache_beam.options.pipeline_options import PipelineOptions
    captured = []
    PipelineOptions([]).get_all_options(add_extra_args_fn=captured.append)
    return captured[0]


def unknown_options(args: list[str]) -> list[str]:
    """The arguments in `args` (what sitestrip's own parser left) that Beam's pipeline
    options do not parse either: option names, or stray values not after one."""
    parser = _beam_parser()
    _, unknown = parser.parse_known_args(args)
    out = []
    for i, arg in enumerate(unknown):
        if arg.startswith("-"):
            out.append(arg.split("=", 1)[0])
        elif not (i and unknown[i - 1].startswith("-") and "=" not in unknown[i - 1]):
            out.append(arg)
    return out


def _reject_unknown(parser: argparse.ArgumentParser, unknown: list[str]) -> None:
    import difflib
    ours = [name for action in parser._actions for name in action.option_strings if name.startswith("--")]
    known = ours + _beam_option_names()
    parts = []
    for arg in unknown:
        if not arg.startswith("-"):
            parts.append(f"unexpected argument {arg!r}")
            continue
        close = difflib.get_close_matches(arg, ours, n=1) or difflib.get_close_matches(arg, known, n=1)
        parts.append(f"unknown option {arg}" + (f" (did you mean {close[0]}?)" if close else ""))
    parser.error("; ".join(parts) + ". Options other than those listed by --help must be "
                 "Apache Beam pipeline options.")


def _counters(result) -> dict:
    from sitestrip.pipeline.graph import NAMESPACE
    out = {}
    for c in result.metrics().query()["counters"]:
        if c.key.metric.namespace == NAMESPACE:
            value = c.committed if c.committed is not None else c.attempted
            out[c.key.metric.name] = out.get(c.key.metric.name, 0) + (value or 0)
    return out


def _group(counters: dict, prefix: str) -> str:
    items = sorted((k[len(prefix):], v) for k, v in counters.items() if k.startswith(prefix) and v)
    return ", ".join(f"{k} {v}" for k, v in items) or "none"


def _output_line(output: str, links: bool) -> str:
    names = ("pages", "menus", "errors", "sites") + (("links",) if links else ())
    return "  output: " + ", ".join(f"{output}/{name}" for name in names)


def summary(counters: dict, elapsed: float, output: str | None, state: str | None = None,
            inputs: tuple[int, int] | None = None, links: bool = False) -> str:
    """The run's summary from its counters; `links`: the run writes the links dataset."""
    pages = counters.get("pages", 0)
    html = counters.get("html_bytes", 0)
    compact = counters.get("compact_bytes", 0)
    records = sum(v for k, v in counters.items() if k.startswith("records_"))
    lines = [
        f"sitestrip: finished in {elapsed:.1f} s",
        *([_inputs_line(inputs)] if inputs else []),
        f"  records read by type: {_group(counters, 'records_')} "
        f"({records / elapsed if elapsed else 0:.0f} records/s)",
        f"  skipped: {_group(counters, 'skipped_')}",
        f"  pages: {pages} ({pages / elapsed if elapsed else 0:.1f} pages/s); "
        f"candidate methods: {_group(counters, 'candidate_method_')}",
        f"  errors by stage: {_group(counters, 'errors_')}",
    ]
    if counters.get("hot_sites"):
        lines.append(f"  hot sites (over site.max_site_pages): {counters['hot_sites']}, "
                     f"{counters.get('pages_in_hot_sites', 0)} pages in "
                     f"{counters.get('hot_site_shards', 0)} shards")
    if counters.get("partitions", 0) > 1:
        lines.append(f"  partitions: {counters['partitions']} (the sites processed one partition at a time, "
                     f"within run.memory_budget_mb)")
    if counters.get("template_clusters"):
        lines.append(f"  template clusters: {counters['template_clusters']}")
    if html:
        lines.append(f"  compact pages: {compact / html:.1%} of HTML bytes ({compact:,} / {html:,})")
    if links:
        lines.append(f"  links: {counters.get('link_rows', 0)} rows")
    if output is not None:
        lines.append(_output_line(output, links))
    if state and output is not None:
        lines.append(f"  state: {counters.get('state_pages', 0)} stored pages, "
                     f"{counters.get('state_bytes', 0) / 1e6:.1f} MB in {state}")
    return "\n".join(lines)


def _inputs_line(inputs: tuple[int, int]) -> str:
    given, read = inputs
    return f"  input files: {given}, read {read}" + (f", not read {given - read}" if given - read else "")


def summary_without_counters(rows: dict, elapsed: float, output: str,
                             inputs: tuple[int, int] | None = None) -> str:
    """The summary of a run whose runner reports no counters: the rows its files hold."""
    return "\n".join([
        f"sitestrip: finished in {elapsed:.1f} s (this runner reports no counters: "
        f"no record, skip or method counts)",
        *([_inputs_line(inputs)] if inputs else []),
        "  rows written: " + ", ".join(f"{name} {n}" for name, n in rows.items()),
        _output_line(output, "links" in rows),
    ])


def written_rows(output: str) -> dict:
    """Rows per dataset in a run's part files, from the Parquet footers alone."""
    import pyarrow.parquet as pq
    from apache_beam.io.filesystems import FileSystems

    from sitestrip.pipeline.graph import dataset_prefix
    from sitestrip.schemas import DATASETS, OPTIONAL_DATASETS
    rows = {}
    for name in DATASETS:
        found = [meta for match in FileSystems.match([dataset_prefix(output, name) + "-*"])
                 for meta in match.metadata_list]
        if not found and name in OPTIONAL_DATASETS:
            continue            # not written by this run (output.links off)
        rows[name] = 0
        for meta in found:
            with FileSystems.open(meta.path) as fh:
                rows[name] += pq.ParquetFile(fh).metadata.num_rows
    return rows


def failure(counters: dict) -> str | None:
    """Why a finished run counts as failed, or None: it read no record at all, or it read
    HTML pages and wrote no pages row. Without metrics (some remote runners) nothing is judged."""
    if not counters:
        return None
    records = sum(v for k, v in counters.items() if k.startswith("records_"))
    if records == 0:
        return "no WARC record could be read from the input"
    html, pages = counters.get("html_200", 0), counters.get("pages", 0)
    if html and not pages:
        return f"{html} HTML page(s) were read but no pages row was written"
    return None


def _errors_columns(fh):
    """What the summary reads of an errors part file. One file's reader, not pq.read_table,
    which imports pyarrow.dataset and pyarrow.compute (0.05-0.07 CPU s of every run, which
    reads these files at its end) to read a dataset of files. No Arrow worker threads: the
    process exits right after, and a pool started with Beam's gRPC threads alive aborted the
    interpreter at exit now and then ("terminate called without an active exception"); a
    run's errors are few."""
    import pyarrow.parquet as pq
    return pq.ParquetFile(fh).read(columns=["url", "warc_file", "warc_offset", "stage", "error_class", "message"],
                                   use_threads=False)


def first_errors(output: str, limit: int = FIRST_ERRORS) -> tuple[list[dict], int]:
    """(up to `limit` errors rows in (file, offset) order, number of rows) of a run's output."""
    from apache_beam.io.filesystems import FileSystems

    from sitestrip.pipeline.graph import dataset_prefix
    rows, total = [], 0
    pattern = dataset_prefix(output, "errors") + "-*"
    for match in FileSystems.match([pattern]):
        for meta in match.metadata_list:
            with FileSystems.open(meta.path) as fh:
                table = _errors_columns(fh)
            total += table.num_rows
            rows.extend(table.to_pylist())
    rows.sort(key=lambda r: (r["warc_file"] or "", r["warc_offset"] or -1, r["url"] or ""))
    return rows[:limit], total


def _looks_like_manifest(item: str) -> bool:
    from sitestrip.pipeline.warc import is_manifest
    return is_manifest(item)


def _report_failure(reason: str, errors_root: str, args) -> None:
    """The reason a run failed and its first errors (read from `errors_root`, the run's staging)."""
    try:
        rows, total = first_errors(errors_root)
    except Exception as exc:  # the errors dataset itself could not be read
        rows, total = [], 0
        print(f"sitestrip: (cannot read the run's errors: {exc})", file=sys.stderr)
    lines = [f"sitestrip: run failed: {reason}; nothing was published, {args.output} is unchanged."]
    if rows:
        lines.append(f"First errors ({len(rows)} of {total}):")
        for r in rows:
            where = r["warc_file"] + (f" @{r['warc_offset']}" if r["warc_offset"] is not None else "")
            url = f" {r['url']}" if r["url"] else ""
            lines.append(f"  {r['stage']} {r['error_class']} in {where}{url}: {r['message']}")
    if args.input_prefix is None and any(_looks_like_manifest(i) for i in (args.input or [])):
        lines.append("hint: the paths in a warc.paths manifest are relative; give --input-prefix "
                     "(e.g. s3://commoncrawl/ or the directory holding crawl-data/)")
    print("\n".join(lines), file=sys.stderr)


def unread_inputs(errors_root: str) -> list[dict]:
    """The input files a run could not read at all (missing, empty, unreadable, not a WARC):
    the errors rows of stage read about a whole file, as {"file", "error_class", "message"}."""
    from apache_beam.io.filesystems import FileSystems

    from sitestrip.pipeline.graph import dataset_prefix
    out = []
    for match in FileSystems.match([dataset_prefix(errors_root, "errors") + "-*"]):
        for meta in match.metadata_list:
            with FileSystems.open(meta.path) as fh:
                table = _errors_columns(fh)
            for r in table.to_pylist():
                if r["stage"] == "read" and r["warc_offset"] is None and r["url"] is None:
                    out.append({"file": r["warc_file"], "error_class": r["error_class"],
                                "message": r["message"]})
    return sorted(out, key=lambda r: r["file"] or "")


def _output_ready(output: str) -> bool:
    """--output usable (watch mode: cleared of an earlier run's part files); else the reason on stderr."""
    from sitestrip.pipeline.graph import clear_outputs
    problem = check_output(output)
    if problem is None:
        try:
            clear_outputs(output)
        except Exception as exc:  # a bucket that does not exist, no permission, ...
            problem = f"cannot use --output {output}: {exc}"
    if problem:
        print(f"sitestrip: {problem}", file=sys.stderr)
        return False
    return True


def check_output(output: str) -> str | None:
    """Why `output` cannot take a run's datasets, or None. Local paths are created and probed;
    bucket URLs are left to the filesystem. Dataset directories are not created here: an empty
    one would read as an empty dataset until the run publishes."""
    if "://" in output:
        return None
    from sitestrip.schemas import DATASETS
    if os.path.exists(output) and not os.path.isdir(output):
        return f"--output {output} is a file, not a directory"
    for name in DATASETS:
        directory = os.path.join(output, name)
        if os.path.exists(directory) and not os.path.isdir(directory):
            return f"--output {output}: {directory} is a file, not a directory"
    problem = _probe_directory(output)
    return f"cannot write to --output {output}: {problem}" if problem else None


def _probe_directory(directory: str) -> str | None:
    """Create `directory` if needed and write and remove a file in it; the reason it fails, or None."""
    try:
        os.makedirs(directory, exist_ok=True)
        probe = os.path.join(directory, f".sitestrip-probe-{os.getpid()}")
        with open(probe, "wb"):
            pass
        os.remove(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _same_or_inside(inner: str, outer: str) -> bool:
    if "://" in inner or "://" in outer:
        a, b = inner.rstrip("/"), outer.rstrip("/")
    else:
        a, b = os.path.realpath(inner), os.path.realpath(outer)
    return a == b or a.startswith(b.rstrip("/") + "/")


def check_state(state: str, output: str) -> str | None:
    """Why `state` cannot be a run's --state, or None: checked before any work, since the state is
    only written at the very end of a run."""
    from sitestrip.pipeline.publish import SUCCESS
    from sitestrip.schemas import DATASETS
    if _same_or_inside(state, output):
        return (f"--state {state} is inside --output {output}" if not _same_or_inside(output, state)
                else f"--state {state} is the --output directory") + \
            ": keep the state apart from the output (a run replaces its output's contents)"
    if "://" in state:
        return None
    if os.path.exists(state) and not os.path.isdir(state):
        return f"--state {state} is a file, not a directory"
    if os.path.isdir(state) and not os.path.exists(os.path.join(state, "CURRENT")) and (
            os.path.exists(os.path.join(state, SUCCESS))
            or any(os.path.isdir(os.path.join(state, name)) for name in DATASETS)):
        return f"--state {state} holds a run's output (pages/, _SUCCESS), not a state directory"
    problem = _probe_directory(state)
    return f"cannot write to --state {state}: {problem}" if problem else None


def _local_runner(options, workers: int, worker_level: str):
    """The in-process FnApiRunner (Beam's default runner may try to download Prism), with
    `workers` worker processes started as `python -m sitestrip.pipeline.worker` (pipeline/worker.py).

    Beam's construction-time type check is off (as `--no_pipeline_type_check` sets it): it
    checks and infers the type hints of every transform as the graph is built, ~0.2-0.3
    CPU s of every local run's start-up, for a graph that is the same in every run; the
    test suite builds that graph with the check on (tests/pipeline/test_pipeline.py). Without
    inferred types Beam uses its generic coders, which pages and rows crossing the
    shuffles pickled use anyway (docs/performance.md, "Start-up and throughput past start-up")."""
    import shlex

    from apache_beam.options.pipeline_options import DirectOptions, TypeOptions
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.transforms.environments import SubprocessSDKEnvironment
    options.view_as(TypeOptions).pipeline_type_check = False
    cache_dofn_specs()
    cache_function_arguments()
    cache_option_views()
    sample_states_briefly()
    collect_young_rarely()
    direct = options.view_as(DirectOptions)
    direct.direct_num_workers = workers
    if workers == 1:
        direct.direct_running_mode = "in_memory"
        return FnApiRunner()
    # No running mode: "multi_processing" would replace this environment by Beam's own
    # worker command, and "in_memory" with several workers only warns.
    direct.direct_running_mode = None
    command = f"{shlex.quote(sys.executable)} -m sitestrip.pipeline.worker {worker_level}"
    return FnApiRunner(default_environment=SubprocessSDKEnvironment.from_command_string(command))


def _replace_once(owner, name: str, wrap) -> None:
    """`owner.name` replaced by `wrap(original)`, once per process (a replacement is marked);
    a Beam without it is left as it is."""
    original = getattr(owner, name, None)
    if original is None or getattr(original, "sitestrip_cached", False):
        return
    replacement = wrap(original)
    replacement.sitestrip_cached = True
    setattr(owner, name, replacement)


def cache_dofn_specs() -> None:
    """Beam's state and timer specs of a DoFn (`userstate.get_dofn_specs`: every method's
    signature inspected), computed once per DoFn object instead of at each of the five or
    so places that ask for them as a graph is built, translated and run: 0.5 ms a call, 190
    calls for a local run's two pipelines, 0.07 CPU s of its start-up, and again for each
    partition (pipeline/partitions.py). A DoFn's methods do not change once it is in a graph.
    Once per process; a Beam without the function is left as it is."""
    from apache_beam.transforms import userstate

    def cached(compute):
        specs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

        def get_dofn_specs(dofn):
            try:
                got = specs.get(dofn)
            except TypeError:           # a DoFn neither hashable nor weakly referenceable
                return compute(dofn)
            if got is None:
                got = specs[dofn] = compute(dofn)
            return set(got[0]), set(got[1])
        return get_dofn_specs

    _replace_once(userstate, "get_dofn_specs", cached)


def cache_function_arguments() -> None:
    """Beam's arguments and defaults of a function or method (`core.get_function_args_defaults`:
    inspect.signature) and its check of a DoFn's source, computed once per function instead
    of each time a graph is built,
    translated and run: a DoFn method's are asked for whenever its DoFn is wrapped, and a
    local run builds and runs a graph per partition (pipeline/partitions.py) from DoFn objects
    of its own, about 1,500 calls a partition. Keyed by the function itself (a bound method
    by its function: a signature does not depend on the instance), other callables are
    inspected as before; each caller gets lists of its own. Once per process; a Beam without
    the function is left as it is."""
    import inspect

    from apache_beam.transforms import core

    def cached_arguments(compute):
        known: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

        def get_function_args_defaults(f):
            if inspect.ismethod(f):
                function, bound = f.__func__, True
            elif inspect.isfunction(f):
                function, bound = f, False
            else:
                return compute(f)
            per_function = known.get(function)
            if per_function is None:
                per_function = known[function] = {}
            got = per_function.get(bound)
            if got is None:
                got = per_function[bound] = compute(f)
            return list(got[0]), list(got[1])
        return get_function_args_defaults

    # The same for the check of a DoFn's process method for both `yield` and `return` (a warning
    # only), which reads and tokenizes the method's source at every ParDo.
    def cached_check(check):
        checked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

        def check_fn_use_yield_and_return(fn):
            function = fn.__func__ if inspect.ismethod(fn) else fn if inspect.isfunction(fn) else None
            if function is None:
                return check(fn)
            got = checked.get(function)
            if got is None:
                got = checked[function] = check(fn)
            return got
        return check_fn_use_yield_and_return

    _replace_once(core, "get_function_args_defaults", cached_arguments)
    _replace_once(core, "_check_fn_use_yield_and_return", cached_check)


def cache_option_views() -> None:
    """One view of a PipelineOptions object per options class (`PipelineOptions.view_as`),
    where Beam made a new one at each call: its constructor builds an argument parser of every
    option of the class and parses the flags again, and building, translating and running a
    graph asks about 100 times, about a third of a partition's fixed cost in a local run
    (pipeline/partitions.py). A view holds no value of its own: every view of an object reads
    and writes that object's options, so one view serves every caller. Once per process."""
    from apache_beam.options.pipeline_options import PipelineOptions

    def cached(make):
        views: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

        def view_as(self, cls):
            try:
                per_options = views.get(self)
            except TypeError:           # an options object neither hashable nor weakly referenceable
                return make(self, cls)
            if per_options is None:
                per_options = views[self] = {}
            got = per_options.get(cls)
            # A view of flags that changed since is made again.
            if got is None or got[0] is not self._flags:
                got = per_options[cls] = (self._flags, make(self, cls))
            return got[1]
        return view_as

    _replace_once(PipelineOptions, "view_as", cached)


# How often Beam's state sampler wakes in a local run's bundles (sample_states_briefly).
STATE_SAMPLING_MS = 10


def sample_states_briefly() -> None:
    """Beam's state sampler wakes every 10 ms instead of every 200 in this process's bundles.

    The sampler is a thread per bundle that sleeps between samples of which step is running
    (Beam's msec counters, which the product does not read), and a bundle ends only when
    that thread has woken and seen the end: up to a full period of idle wall time per bundle,
    spent by every partition of a local run. On docsites-dev (16 bundles, 1 worker) the ends
    waited 0.40-0.59 s in all, about 4 % of the run's wall time; at 10 ms, 0.05 s. Each wake
    takes a lock and adds two numbers, without the GIL. The local runner and its worker
    processes (pipeline/worker.py) call this; other runners keep Beam's period. Once per
    process; a Beam without the sampler is left as it is."""
    from apache_beam.runners.worker import statesampler

    def briefly(sampler):
        class StateSampler(sampler):
            def __init__(self, prefix, counter_factory, sampling_period_ms=STATE_SAMPLING_MS):
                super().__init__(prefix, counter_factory, sampling_period_ms)
        StateSampler.__doc__ = sampler.__doc__
        return StateSampler

    _replace_once(statesampler, "StateSampler", briefly)


YOUNG_COLLECTION_ALLOCATIONS = 10_000


def collect_young_rarely() -> None:
    """The cyclic collector's youngest generation is collected after 10,000 net allocations of
    container objects instead of CPython's 700; the older generations keep their counts.

    A page's analysis makes tens of thousands of short-lived tuples, lists and dicts, freed
    by reference counting, almost none of them in cycles, and every young collection walks
    whatever has been allocated since the last one: docsites-dev (1 worker) ran 453 young,
    39 middle and 5 full collections in 0.17 CPU s; with this, 25, 1 and 3 in 0.07 s. `sitestrip
    run` calls it before Beam's imports, whose objects all survive the collections made
    among them (a one-page run, 10 alternated pairs: 0.99 → 0.94 CPU s), and the local
    runner and its worker processes (pipeline/worker.py) call it too; gc.collect() after each
    partition (pipeline/partitions.py) still frees a partition's cycles at once. A threshold
    already above it is kept."""
    import gc
    young, middle, old = gc.get_threshold()
    if young < YOUNG_COLLECTION_ALLOCATIONS:
        gc.set_threshold(YOUNG_COLLECTION_ALLOCATIONS, middle, old)


def run(argv: list[str], prog: str = "sitestrip run") -> int:
    from sitestrip.pipeline.signals import Guard
    # Until the run has a staging directory (its own handler then takes over) a signal has
    # nothing to undo, but Beam's imports and the input listing take seconds: one line too.
    with Guard(lambda: None):
        return _run_command(argv, prog)


def _run_command(argv: list[str], prog: str) -> int:
    use_system_allocator_for_arrow()      # `python run.py` comes here without main()
    one_blas_thread()
    bound_c_heap()
    collect_young_rarely()
    from sitestrip.pipeline.console import import_beam_quietly, run_logging
    import_beam_quietly()
    parser = _run_parser(prog)
    args, rest = parser.parse_known_args(argv)
    # Before any PipelineOptions exists: its constructor calls logging.basicConfig().
    with run_logging(logging.ERROR if args.quiet else logging.INFO,
                     logging.ERROR if args.quiet else logging.WARNING):
        if args.quiet:
            # dask.distributed logs through handlers of its own, set from its config when it is
            # imported (here, and in the processes of a LocalCluster, which inherit this).
            os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")
            # The worker processes of a LocalCluster import Beam when their first task arrives;
            # the preload imports it first, without its import-time warnings (pipeline/worker.py).
            os.environ.setdefault("DASK_DISTRIBUTED__WORKER__PRELOAD", '["sitestrip.pipeline.worker"]')
        _register_dask_options(rest)
        unknown = unknown_options(rest)
        if unknown:
            _reject_unknown(parser, unknown)      # exits 2
        if args.workers < 1:
            parser.error("--workers must be 1 or more")
        if args.part_files is not None and args.part_files < 1:
            parser.error("--part-files must be 1 or more")
        if args.progress_every <= 0:
            parser.error("--progress-every must be greater than 0")
        if args.watch:
            _check_watch_args(parser, args)
            return _run_watch(args, rest)
        for name in WATCH_OPTIONS:
            if getattr(args, name) is not None:
                parser.error(f"--{name.replace('_', '-')} applies to --watch only")
        return _run(args, rest, sys.stderr.isatty())


WATCH_OPTIONS = ("idle_timeout", "window", "poll_interval", "checkpoint_interval")


def _check_watch_args(parser: argparse.ArgumentParser, args) -> None:
    if not args.input or len(args.input) != 1 or args.input_prefix is not None:
        parser.error("--watch needs --input with one glob of the files to watch, e.g. 'landing/*.warc.gz'")
    if args.workers != 1:
        parser.error("--watch runs one local worker (a site's state is in one place); leave --workers out")
    if args.checkpoint_interval is not None and args.state is None:
        parser.error("--checkpoint-interval needs --state (the state it writes back)")
    for name in WATCH_OPTIONS:
        value = getattr(args, name)
        if value is not None and not value > 0:
            parser.error(f"--{name.replace('_', '-')} must be greater than 0")


def _run_watch(args, beam_args: list[str]) -> int:
    """Watch mode (pipeline/watch.py): the local FnApiRunner unless --runner names another."""
    import threading
    import uuid

    import apache_beam as beam
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

    from sitestrip.pipeline import publish
    from sitestrip.pipeline.signals import Guard
    from sitestrip.pipeline.state_store import state_files
    from sitestrip.pipeline.watch import (WATCH_DATASETS, build_watch_pipeline, checkpoint_state, watch_schemas,
                                          write_empty_parts)
    from sitestrip.transforms.state import StateError

    config = _run_config(args)
    if config is None:
        return USAGE
    if args.state is not None:
        problem = check_state(args.state, args.output)
        if problem:
            print(f"sitestrip: {problem}", file=sys.stderr)
            return USAGE
    try:
        seed_files = state_files(args.state) if args.state else []
    except StateError as exc:
        print(f"sitestrip: bad --state: {exc}", file=sys.stderr)
        return USAGE
    if not _output_ready(args.output):
        return USAGE
    options = PipelineOptions(beam_args)
    # An unbounded source: Dataflow and Flink need streaming mode; the FnApiRunner ignores it.
    options.view_as(StandardOptions).streaming = True
    runner_name = options.get_all_options().get("runner")
    if runner_name is None:
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner
        runner = FnApiRunner()
    else:
        runner, problem = _make_runner(runner_name, options, args, False)
        if problem:
            print(f"sitestrip: {problem}", file=sys.stderr)
            return USAGE
    pattern = args.input[0]
    log = logging.getLogger("sitestrip")
    log.info("watching %s → %s%s", pattern, args.output,
             f" (ends after {args.idle_timeout:g} s without a new file)" if args.idle_timeout else "")
    started = time.monotonic()
    working = None if args.state is None else FileSystems.join(args.state, f"_watch-{uuid.uuid4().hex[:12]}")
    lock, stop = threading.Lock(), threading.Event()
    saved, signature = [], [None]

    def save_state():
        with lock:
            version, signature[0] = checkpoint_state(args.state, working, seed_files, signature[0])
        if version:
            saved.append(version)
            log.info("state written back: %s", version)

    def checkpoints():
        while not stop.wait(args.checkpoint_interval or 300.0):
            try:
                save_state()
            except Exception as exc:  # the next checkpoint, or the final one, tries again
                log.warning("state checkpoint failed: %s", exc)

    def on_signal():
        if working is not None:
            try:
                save_state()
            finally:
                publish.remove_tree(working)

    parts = args.part_files or 1
    write_empty_parts(args.output, watch_schemas(config), parts, time.time())
    p = beam.Pipeline(runner=runner, options=options)
    build_watch_pipeline(p, pattern, args.output, config, state_dir=args.state,
                         idle_timeout=args.idle_timeout,
                         poll_interval=args.poll_interval if args.poll_interval is not None else 1.0,
                         window_seconds=args.window if args.window is not None else 10.0,
                         part_files=parts, working_dir=working, stored_files=seed_files)
    thread = None
    if working is not None:
        thread = threading.Thread(target=checkpoints, name="state-checkpoints", daemon=True)
        thread.start()
    message = "sitestrip: watch stopped; the rows written so far are kept" + (
        f", the state written back to {args.state}" if args.state else "")
    with Guard(on_signal, message) as guard:
        try:
            p.run().wait_until_finish()
        except Exception as exc:
            # A damaged stored page, found when its site first lands, ends the job (as in a batch
            # run); the state is not written back from a job that failed.
            stop.set()
            if working is not None:
                publish.remove_tree(working)
            if "StateError" not in f"{type(exc).__name__} {exc}":
                raise
            message = _state_error_line(exc)
            print(f"sitestrip: bad --state: {message}", file=sys.stderr)
            return FAILED_RUN
        stop.set()
        if thread is not None:
            thread.join()
        if working is not None:
            with guard.committing():
                save_state()
                publish.remove_tree(working)
    elapsed = time.monotonic() - started
    # From the files, not the counters: the FnApiRunner chains every bundle's metrics lazily,
    # one level per bundle, and a watch job polls in a bundle per --poll-interval, so querying
    # them after a long job exceeds Python's recursion limit (fn_runner.py, RunnerResult.metrics).
    rows = written_rows(args.output)
    lines = [
        f"sitestrip: watch ended after {elapsed:.1f} s",
        "  rows written: " + ", ".join(f"{name} {rows[name]}" for name in WATCH_DATASETS),
        "  output: " + ", ".join(f"{args.output}/{name}" for name in WATCH_DATASETS),
    ]
    if args.state:
        lines.append(f"  state: {saved[-1] if saved else 'unchanged (no site processed)'} in {args.state}")
    print("\n".join(lines), flush=True)
    return OK


def _state_error_line(exc: Exception) -> str:
    """The StateError's own message out of the runner's wrapping of it (Beam adds the step)."""
    import re
    line = str(exc).split("StateError: ")[-1].splitlines()[0]
    return re.sub(r" \[while running '[^']*'\]", "", line)


def _run_config(args):
    """The run's preset (--config), or None after saying on stderr why it is refused."""
    from sitestrip.configs import ConfigError, load_config

    try:
        return load_config(args.config)
    except ConfigError as exc:
        print(f"sitestrip: bad config: {_config_hint(args.config) or exc}", file=sys.stderr)
        return None


def _config_hint(name: str | None) -> str | None:
    """For a --config that is neither a file nor a preset's name: the presets, and the closest one."""
    import difflib
    import glob

    from sitestrip.configs import CONFIG_DIR
    if name is None or os.path.exists(name) or os.sep in name or name.endswith((".yaml", ".yml")):
        return None
    presets = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(CONFIG_DIR, "*.yaml")))
    close = difflib.get_close_matches(name, presets, n=1)
    return (f"no preset or file named {name!r}" + (f" (did you mean {close[0]}?)" if close else "")
            + f"; presets: {', '.join(presets)}, or give a YAML file's path")


def _make_runner(runner_name: str | None, options, args, terminal: bool):
    """The runner of a batch run, or a usage error's message: an unknown --runner is refused
    here, before any work, not by Beam once the graph is built."""
    import difflib

    from apache_beam.runners.runner import create_runner
    if runner_name is None:
        return _local_runner(options, args.workers,
                             "ERROR" if args.quiet else "WARNING" if terminal else "INFO"), None
    runner = _runner_for(runner_name)
    if runner is not None:
        return runner, None
    try:
        return create_runner(runner_name), None
    except (ValueError, ImportError, AttributeError, TypeError) as exc:
        close = difflib.get_close_matches(runner_name, KNOWN_RUNNERS, n=1, cutoff=0.7)
        if isinstance(exc, ImportError):
            return None, f"--runner {runner_name}: cannot load it ({exc})"
        return None, (f"unknown --runner {runner_name}" + (f" (did you mean {close[0]}?)" if close else "")
                      + f"; Beam's runners: {', '.join(KNOWN_RUNNERS)}, or a runner class's full module path")


def _counts(counters: dict | None) -> dict | None:
    """The counts `_SUCCESS` records, from the run's counters (None: the runner reports none)."""
    if not counters:
        return None

    def group(prefix):
        return {k[len(prefix):]: v for k, v in sorted(counters.items()) if k.startswith(prefix) and v}
    return {"records": sum(group("records_").values()), "records_by_type": group("records_"),
            "skipped": group("skipped_"), "pages": counters.get("pages", 0),
            "html_200": counters.get("html_200", 0), "candidate_methods": group("candidate_method_"),
            "errors_by_stage": group("errors_")}


def _run(args, beam_args: list[str], terminal: bool) -> int:
    import shutil
    import tempfile
    import uuid
    from datetime import datetime, timezone

    import apache_beam as beam
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    from sitestrip.pipeline import publish
    from sitestrip.pipeline.graph import build_pipeline
    from sitestrip.pipeline.partitions import can_partition
    from sitestrip.pipeline.progress import ProgressMonitor
    from sitestrip.pipeline.signals import Guard
    from sitestrip.pipeline.state_store import current_version, next_version, write_current
    from sitestrip.pipeline.warc import expand_inputs
    from sitestrip.schemas import SCHEMA_VERSION
    from sitestrip.transforms.state import StateError

    def usage(message: str) -> int:
        print(f"sitestrip: {message}", file=sys.stderr)
        return USAGE

    options = PipelineOptions(beam_args)
    runner_name = options.get_all_options().get("runner")
    local = runner_name is None
    config = _run_config(args)
    if config is None:
        return USAGE
    inputs = args.input
    if inputs is None:
        if not os.path.exists(SAMPLE_WARC):
            return usage("no --input given and the embedded sample is not available "
                         f"({SAMPLE_WARC}); install from a checkout with `pip install -e .`")
        inputs = [SAMPLE_WARC]
    try:
        paths = expand_inputs(inputs, args.input_prefix)
    except ValueError as exc:
        return usage(str(exc))
    problem = check_output(args.output)
    if problem is None and args.state is not None:
        problem = check_state(args.state, args.output)
    if problem:
        return usage(problem)
    state_version = None
    if args.state is not None:
        try:
            state_version = next_version(current_version(args.state))
        except StateError as exc:
            return usage(f"bad --state: {exc}")
    _one_file_per_dask_partition(options, runner_name)
    runner, problem = _make_runner(runner_name, options, args, terminal)
    if problem:
        return usage(problem)

    run_id = uuid.uuid4().hex[:12]
    staging = publish.staging_dir(args.output, run_id)
    progress_dir = tempfile.mkdtemp(prefix="sitestrip-progress-") if local and not args.quiet else None
    # A local run holds one partition of the sites at a time (pipeline/partitions.py); with
    # --state, whose stored pages are read and written back per site over the whole input,
    # it runs the one graph, and so with a step that joins rows across all sites.
    partitioned = local and args.state is None and config.run.partitions and can_partition(config)
    if local and args.state is None and config.run.partitions and not partitioned:
        logging.getLogger("sitestrip").warning(
            "duplicates.across_sites is on: the run is one graph over the whole input, not partitions "
            "within run.memory_budget_mb, so its memory grows with the input")
    spill_dir = tempfile.mkdtemp(prefix="sitestrip-spill-") if partitioned else None
    mode = "bar" if terminal else "log"
    published = False

    def abandon():
        """What a run that does not publish leaves behind: nothing."""
        publish.remove_tree(staging)
        if state_version is not None and not published:
            publish.remove_tree(FileSystems.join(args.state, state_version))
        if progress_dir is not None:
            shutil.rmtree(progress_dir, ignore_errors=True)
        if spill_dir is not None:
            shutil.rmtree(spill_dir, ignore_errors=True)

    def run_graph(p):
        """Run `p`, or without it the partitions of a local run; the run's counters (None: the
        runner reports none)."""
        if p is None:
            from sitestrip.pipeline.partitions import run_partitioned
            level = "ERROR" if args.quiet else "WARNING" if terminal else "INFO"
            done = run_partitioned(
                lambda: beam.Pipeline(runner=_local_runner(options, args.workers, level), options=options),
                _counters, paths, staging, config, spill_dir, progress_dir, args.part_files, args.workers)
            shutil.rmtree(spill_dir, ignore_errors=True)
            return done.counters
        result = p.run()
        result.wait_until_finish()
        try:
            return _counters(result)
        except Exception:  # some remote runners (Dask) do not report metrics back
            return None

    logging.getLogger("sitestrip").info("%d WARC file(s) → %s", len(paths), args.output)
    started = time.monotonic()
    with Guard(abandon) as guard:
        try:
            p = None
            if spill_dir is None:
                p = beam.Pipeline(runner=runner, options=options)
                try:
                    build_pipeline(p, paths, staging, config, progress_dir, args.part_files, args.state,
                                   state_version=state_version)
                except StateError as exc:
                    return usage(f"bad --state: {exc}")
            try:
                if progress_dir is None:
                    counters = run_graph(p)
                else:
                    with _progress_display(mode), ProgressMonitor(progress_dir, len(paths), mode,
                                                                  args.progress_every):
                        counters = run_graph(p)
            except Exception as exc:
                # A damaged stored page found by a worker fails the run before the state switches.
                if "StateError" not in f"{type(exc).__name__} {exc}":
                    raise
                message = _state_error_line(exc)
                print(f"sitestrip: bad --state: {message}; the state in {args.state} and the output "
                      f"in {args.output} are unchanged", file=sys.stderr)
                return FAILED_RUN
            elapsed = time.monotonic() - started
            reason = failure(counters) if counters is not None else None
            unread = [] if reason else unread_inputs(staging)
            read = (len(paths), len(paths) - len(unread))
            if counters is None:
                print(summary_without_counters(written_rows(staging), elapsed, args.output, read), flush=True)
            else:
                # A failed run publishes nothing: no output line.
                print(summary(counters, elapsed, None if reason else args.output, args.state,
                              None if reason else read, links=config.output.links), flush=True)
            if reason:
                _report_failure(reason, staging, args)
                return FAILED_RUN
            files = publish.dataset_files(staging)
            marker = publish.success_marker(
                version=version(), schema_version=SCHEMA_VERSION, run_id=run_id,
                finished=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                config_name=args.config or "default", config_digest_=publish.config_digest(config),
                inputs=paths, unread=unread, counts=_counts(counters), files=files,
                pages_meta=publish.pages_metadata(staging, files),
                state=None if args.state is None else {"dir": args.state, "version": state_version})
            guard.hold()
            try:
                publish.commit(staging, args.output, marker)
                if args.state is not None:
                    write_current(args.state, state_version)
            except Exception as exc:
                print(f"sitestrip: cannot publish the output in {args.output}: {exc}", file=sys.stderr)
                return FAILED_RUN
            published = True
            for stale in publish.stale_staging(args.output):
                publish.remove_tree(stale)
            if unread and not allowed(args.allow_missing_inputs, len(unread), len(paths)):
                _report_unread(unread, len(paths))
                return FAILED_RUN
            return OK
        finally:
            if not published:
                abandon()
            elif progress_dir is not None:
                shutil.rmtree(progress_dir, ignore_errors=True)


def _report_unread(unread: list[dict], inputs: int) -> None:
    shown = FIRST_ERRORS * 4
    lines = [f"sitestrip: {len(unread)} of {inputs} input file(s) could not be read "
             f"(the rows of the others are published; --allow-missing-inputs to accept):"]
    lines += [f"  {u['file']}: {u['error_class']}: {u['message']}" for u in unread[:shown]]
    if len(unread) > shown:
        lines.append(f"  ... and {len(unread) - shown} more (errors/, stage read)")
    print("\n".join(lines), file=sys.stderr)


def _progress_display(mode: str):
    """Log lines go around the progress bar instead of through it."""
    import contextlib
    if mode != "bar":
        return contextlib.nullcontext()
    from tqdm.contrib.logging import logging_redirect_tqdm
    return logging_redirect_tqdm()


def _inspect_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Write one self-contained HTML file showing a page of the archive "
        "with its template, main content and menu marked, as sitestrip computes them: the pages of "
        "the page's site are read from the inputs and compared as in a run. No Beam, no network.")
    p.add_argument("--input", nargs="+", action="extend", metavar="PATH", default=None,
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
    from sitestrip.configs import ConfigError, load_config
    from sitestrip.pipeline.inspect_view import InspectError, inspect as inspect_page
    from sitestrip.pipeline.warc import expand_inputs

    if args.input is None and not os.path.exists(SAMPLE_WARC):
        # An installed wheel has no sample/ (it ships with a checkout).
        print(f"sitestrip inspect: no --input given and the embedded sample is not installed "
              f"({SAMPLE_WARC}); give the WARC files with --input", file=sys.stderr)
        return 2
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
    print(f"sitestrip inspect: {expl.record.url}: candidate method {expl.candidate_method}, "
          f"template share {'n/a' if share is None else f'{share:.0%}'}, "
          f"{words['main']} of {words['page']} words main content → {args.out}")
    return 0


def _files_unlike_marker(output: str, marker: dict) -> str | None:
    """How the datasets' part files differ from the ones `_SUCCESS` lists, or None (an output
    copied half-way, or files added or removed by hand after the run)."""
    from sitestrip.pipeline.publish import dataset_files
    listed = {f["path"]: f["rows"] for d in marker["datasets"].values() for f in d["files"]}
    found = {f["path"]: f["rows"] for files in dataset_files(output).values() for f in files}
    missing, extra = sorted(set(listed) - set(found)), sorted(set(found) - set(listed))
    other = sorted(p for p in set(listed) & set(found) if listed[p] != found[p])
    parts = [f"{label} {', '.join(paths[:3])}" + (" ..." if len(paths) > 3 else "")
             for label, paths in (("missing", missing), ("not listed", extra), ("other row counts", other))
             if paths]
    return "; ".join(parts) or None


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
    p.add_argument("--allow-incomplete", action="store_true",
                   help="report on an output without _SUCCESS (a watch job's, or a run that did not "
                        "finish) instead of refusing it; the report then says so at its top")
    return p


def report(argv: list[str], prog: str = "sitestrip report") -> int:
    args = _report_parser(prog).parse_args(argv)
    from sitestrip.pipeline.run_report import ReportError, write_report

    from sitestrip.pipeline.publish import SUCCESS, read_success

    out = args.out or os.path.join(args.output, "report.html")
    warning = None
    try:
        marker = read_success(args.output)
    except (ValueError, OSError) as exc:
        print(f"sitestrip report: {exc}", file=sys.stderr)
        return 2
    if marker is None and ("://" in args.output or os.path.isdir(os.path.join(args.output, "pages"))):
        warning = (f"{args.output} has no {SUCCESS}: it is not one complete run (a run that was stopped or "
                   f"failed before publishing, a watch job's output, or an older sitestrip's), so its "
                   f"files may be partial")
    elif marker is not None:
        mismatch = _files_unlike_marker(args.output, marker)
        if mismatch:
            warning = f"{args.output}'s files are not those its {SUCCESS} lists ({mismatch})"
    if warning and not args.allow_incomplete:
        print(f"sitestrip report: {warning}; --allow-incomplete to report on them anyway", file=sys.stderr)
        return 2
    if warning:
        print(f"sitestrip report: WARNING: {warning}", file=sys.stderr)
    try:
        html_path, md_path, summary_ = write_report(args.output, out, top=args.top, warning=warning)
    except ReportError as exc:
        print(f"sitestrip report: {exc}", file=sys.stderr)
        return 2
    print(f"sitestrip report: {summary_['pages']} pages, {summary_['sites']} sites, "
          f"{summary_['errors']} errors → {html_path}, {md_path}")
    return 0


COMMANDS = {"run": run, "inspect": inspect, "report": report}
# Commands of the evaluation, which is a distribution of its own (bench/, `sitestrip-bench`).
BENCH_COMMANDS = {"bench": "bench", "tune": "tune", "train": "train", "bench-duplicates": "duplicates"}


def use_system_allocator_for_arrow() -> None:
    """Arrow's C++ side (the Parquet writer, its sorts and encoders) allocates from the C
    heap instead of its own allocator (mimalloc in pyarrow's wheels), unless the user chose a
    pool.

    The part writer runs after the per-site step has freed most of what it allocated; from
    the C heap Arrow reuses those pages, from mimalloc it maps new ones beside them. Peak RSS
    on docsites-dev, 1 worker: 551 → 487 MB, CPU the same (docs/performance.md, "Memory per worker").
    Arrow reads the variable once, when pyarrow is imported, so this runs before Beam imports
    it. `pa.set_memory_pool(pa.system_memory_pool())` at the same point was measured too and
    changed nothing (552 MB)."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


# What caps numpy's BLAS threads; one the user set is left alone (one_blas_thread).
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")


def one_blas_thread() -> None:
    """numpy's OpenBLAS runs one thread, unless the user set its count.

    By default OpenBLAS starts a thread per core when numpy is imported, and after each call
    big enough to share (a page type's block-weighted feature sums are a matrix-vector product)
    those threads spin waiting for the next: CPU that does no work, on every core, in every
    worker, while a worker is one process per core by design. A `sitestrip run` of
    news-ctf2015-dev on 2 cores spent 2.7 % of its CPU samples in `blas_thread_server`. The
    product's matrix products are small, and a product split over threads is summed in the
    same order, so results do not change. OpenBLAS reads the variable when it is loaded, so
    this runs before numpy is imported (run() and main() call it first); the local workers of
    --workers N inherit it."""
    if not any(name in os.environ for name in BLAS_THREADS):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def main(argv: list[str] | None = None) -> int:
    import faulthandler
    # A crash in native code (lxml, Arrow, gRPC) prints the Python stack, not just a signal
    # (when stderr is a real file: not under a test's captured stderr).
    try:
        faulthandler.enable()
    except (AttributeError, ValueError, OSError):   # io.UnsupportedOperation is an OSError
        pass
    use_system_allocator_for_arrow()
    one_blas_thread()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:
        return run(argv[1:])        # it imports Beam itself, under its signal handler
    if argv[:1] and argv[0] in BENCH_COMMANDS:
        print(f"sitestrip {argv[0]}: the evaluation is the sitestrip-bench distribution "
              f"(pip install -e ./bench in a checkout): sitestrip-bench {BENCH_COMMANDS[argv[0]]} ...",
              file=sys.stderr)
        return 2
    from sitestrip.pipeline.console import import_beam_quietly
    import_beam_quietly()
    parser = argparse.ArgumentParser(
        prog="sitestrip",
        description="Site-level template removal and content extraction for WARC archives.")
    _version_action(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("run", help="run the extraction pipeline (see `sitestrip run --help`)",
                   add_help=False)
    sub.add_parser("inspect", help="one page with its template, main content and menu marked, "
                                   "as a self-contained HTML file", add_help=False)
    sub.add_parser("report", help="HTML and Markdown summary of a finished run", add_help=False)
    if argv and argv[0] == "--version":
        print(f"sitestrip {version()}")
        return 0
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
