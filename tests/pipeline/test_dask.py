"""sitestrip on Beam's DaskRunner against a local dask.distributed cluster.

The fixture starts a scheduler and two worker processes on 127.0.0.1 (free ports,
no dashboard), and stops them; every wait has a timeout, so a cluster that does
not come up fails the test instead of hanging it. Each run goes through the CLI
in a subprocess with a timeout, as a user would start it: once on the in-process
FnApiRunner, once on the cluster, on the same hand-built input (`corpus`), and
the two outputs must hold the same rows.
"""
import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from helpers.fifos import opened_by_the_run
from helpers.warcs import HTML_UTF8, response, write_warc

# The module fixtures run the CLI on the cluster; every test here reads their outputs.
pytestmark = [pytest.mark.dask, pytest.mark.beam,
              pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                 reason="needs apache-beam[dask] (the test extra installs it)")]

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 90      # seconds for the scheduler and both workers to register
RUN_TIMEOUT = 600       # seconds for one sitestrip run on the cluster
ENV = dict(os.environ, PYTHONPATH=str(REPO))
DATASETS = ("pages", "menus", "errors")

HOT = "https://hot.example"
# The hot site's directories: a holds 2 pages, b and c 4 each (10 pages).
HOT_DIRECTORIES = {"a": 2, "b": 4, "c": 4}
MAX_SITE_PAGES = 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(procs):
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """tcp://127.0.0.1:PORT of a scheduler with two single-threaded worker processes."""
    from distributed import Client
    logs = tmp_path_factory.mktemp("dask-logs")
    address = f"tcp://127.0.0.1:{_free_port()}"
    common = ["--dashboard-address", "127.0.0.1:0"]
    procs = []
    try:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", address.rsplit(":", 1)[1], "--no-show", *common],
            stdout=subprocess.DEVNULL, stderr=open(logs / "scheduler.log", "wb"), env=ENV, cwd=logs))
        for n in (1, 2):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1",
                 "--nthreads", "1", "--nworkers", "1", "--name", f"worker-{n}", *common],
                stdout=subprocess.DEVNULL, stderr=open(logs / f"worker-{n}.log", "wb"), env=ENV, cwd=logs))
        with Client(address, timeout=START_TIMEOUT) as client:
            client.wait_for_workers(2, timeout=START_TIMEOUT)
            workers = client.scheduler_info()["workers"]
            assert len(workers) == 2 and all(w.startswith("tcp://127.0.0.1:") for w in workers)
        yield address
    finally:
        _stop(procs)


def _page(title, links, text):
    menu = "".join(f"<li><a href='{href}'>{label}</a></li>" for href, label in links)
    return (f"<html><head><title>{title}</title></head><body><ul id=menu>{menu}</ul>"
            f"<div id=content><h1>{title}</h1><p>{text}</p><p>{text} More words on {title}.</p></div>"
            f"<div id=footer>Footer of the site</div></body></html>").encode()


def _site(base, paths):
    """Pages that all carry one menu linking every page of the site."""
    links = [(f"{base}{path}", f"Page {path}") for path in paths]
    return [response(f"{base}{path}", _page(f"Title {path}", links, f"Text of {path} " * 5))
            for path in paths]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Three WARC files (three Dask partitions over two workers): a hot site of 10 pages in
    /a/ (2), /b/ (4) and /c/ (4), two small sites of 3 and 2 pages, one record whose target
    URI is not a URL (an errors row: read, BadUrl), and a preset with site.max_site_pages 4.

    The hot site's shards, by transforms/shards.py: 10 pages > 4, so it is split; the even
    share is ceil(10 / ceil(10 / 4)) = 4; each directory is within the limit, so it is one
    unit, and the units are packed in order: a (2); b would make 6 > 4, so a new shard; c
    likewise. Three shards, one per directory."""
    root = tmp_path_factory.mktemp("dask-corpus")
    hot = _site(HOT, [f"/{d}/p{i}.html" for d, n in HOT_DIRECTORIES.items() for i in range(n)])
    one = _site("https://one.example", ["/x.html", "/y.html", "/z.html"])
    two = _site("https://two.example", ["/u.html", "/v.html"])
    bad = response("not-a-url", _page("Bad", [], "Not a URL"), headers=HTML_UTF8)
    records = hot + one + two + [bad]
    files = [write_warc(root / f"part-{k}.warc.gz", records[k::3]) for k in range(3)]
    preset = root / "hot.yaml"
    preset.write_text(f"site:\n  max_site_pages: {MAX_SITE_PAGES}\n")
    return files, str(preset)


def _run(files, output, *extra):
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--input", *files,
                           "--output", str(output), "--quiet", *extra],
                          env=ENV, capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, time.monotonic() - started


@pytest.fixture(scope="module")
def outputs(dask_cluster, corpus, tmp_path_factory):
    """(FnApiRunner output, DaskRunner output) of the corpus with the hot-site preset."""
    files, preset = corpus
    root = tmp_path_factory.mktemp("dask-runs")
    _run(files, root / "fn", "--config", preset)
    proc, _ = _run(files, root / "dask", "--config", preset, "--runner=DaskRunner",
                   f"--dask_client_address={dask_cluster}")
    return root / "fn", root / "dask", proc.stdout, proc.stderr


def _rows(output, name):
    """A dataset's rows as sorted reprs, without the wall-clock timing column."""
    table = ds.dataset(str(Path(output) / name), format="parquet").to_table()
    rows = [{k: v for k, v in row.items() if k != "timing_ms"} for row in table.to_pylist()]
    return sorted(repr(sorted(row.items())) for row in rows)


def test_the_cli_runs_on_the_cluster_and_writes_the_same_parts(outputs):
    """`--runner=DaskRunner` (Beam 2.77 resolves only the full module path) and
    `--dask_client_address` pass the CLI's unknown-option check and reach the cluster.
    Three input files → three parts per dataset (only part 0 is written when empty), named
    as on the FnApiRunner; menus and errors have no timing column, so their files are the
    same bytes on both runners (rows sorted within a part, pipeline/parts.py)."""
    fn, dask, summary, err = outputs
    # The DaskRunner reports no counters: the summary says so and counts the written rows.
    assert "this runner reports no counters" in summary
    assert "rows written: pages 15, menus 3, errors 1, sites " in summary
    assert "input files: 3, read 3" in summary
    assert f"{dask}/sites" in summary
    assert err == "", err[-2000:]       # --quiet: no distributed.* log lines
    for name in DATASETS:
        names = sorted(p.name for p in (dask / name).iterdir())
        assert names[0] == "part-00000-of-00003.parquet" and all(n.endswith("-of-00003.parquet")
                                                                  for n in names), name
        assert sorted(p.name for p in (fn / name).iterdir()) == names, name
    for name in ("menus", "errors"):
        for part in (dask / name).iterdir():
            assert part.read_bytes() == (fn / name / part.name).read_bytes(), part


def test_rows_on_dask_equal_the_fnapi_runners(outputs):
    """The same pages, menus and errors rows on the cluster as on the FnApiRunner: 15 pages
    rows (10 + 3 + 2) and the one errors row, each once (a repeated row would show here)."""
    fn, dask, _, _ = outputs
    for name in DATASETS:
        assert _rows(dask, name) == _rows(fn, name), name
    assert len(_rows(fn, "pages")) == 15
    errors = ds.dataset(str(dask / "errors"), format="parquet").to_table().to_pylist()
    assert [(e["url"], e["stage"], e["error_class"]) for e in errors] == [("not-a-url", "read", "BadUrl")]


def test_the_hot_site_is_split_on_both_runners(outputs):
    """Candidates are searched within a shard. /a/ is a shard of its own (2 pages, see
    `corpus`), so each /a/ page's only candidate is the other /a/ page, and one page is no
    complete subdigraph of template_n = 2: method `linked`. With the whole site in one shard
    (no preset), the menu that links all 10 pages gives each /a/ page a subdigraph of the
    other /a/ page and /b/p0.html (`cs`), which this test would refuse."""
    fn, dask, _, _ = outputs
    for output in (fn, dask):
        pages = ds.dataset(str(output / "pages"), format="parquet").to_table().to_pylist()
        in_a = {row["url"]: row for row in pages if row["url"].startswith(f"{HOT}/a/")}
        assert sorted(in_a) == [f"{HOT}/a/p0.html", f"{HOT}/a/p1.html"]
        for url, row in in_a.items():
            other = ({f"{HOT}/a/p0.html", f"{HOT}/a/p1.html"} - {url}).pop()
            assert (row["candidate_method"], row["candidate_urls"], row["template_candidate_urls"]) == (
                "linked", [other], [other]), url


def test_the_cli_reads_one_warc_file_per_dask_partition():
    """Beam's Reshuffle is a no-op on Dask and later steps keep the first step's partitions,
    so the CLI asks for one WARC file per partition unless the user chose a partitioning."""
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.dask.dask_runner import DaskOptions

    from sitestrip.pipeline.cli import _one_file_per_dask_partition
    for flags, expected in ((["--runner=DaskRunner"], (None, 1)),
                            (["--runner=DaskRunner", "--dask_npartitions=4"], (4, None)),
                            (["--runner=DaskRunner", "--dask_partition_size=3"], (None, 3))):
        options = PipelineOptions(flags)
        _one_file_per_dask_partition(options, "DaskRunner")
        dask = options.view_as(DaskOptions)
        assert (dask.npartitions, dask.partition_size) == expected, flags
    options = PipelineOptions([])
    _one_file_per_dask_partition(options, None)
    assert options.view_as(DaskOptions).partition_size is None


def test_sigterm_stops_a_dask_run_and_its_local_cluster(tmp_path, corpus):
    """Without --dask_client_address Beam starts a LocalCluster in child processes: SIGTERM ends
    the run with 143 and one line, the cluster's processes stopped, the previous output kept.
    The signal is sent once a cluster worker has opened the FIFO input (mid-run)."""
    import hashlib
    import signal

    from sitestrip.pipeline.signals import descendants
    files, preset = corpus
    out = tmp_path / "out"
    _run(files, out)
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.rglob("*") if p.is_file()}
    fifo = tmp_path / "landing.warc.gz"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--input", str(fifo), *files,
                             "--output", str(out), "--quiet", "--runner=DaskRunner"],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    with opened_by_the_run(fifo, proc) as fh:
        fh.write(b"WARC/1.0\r\n")
        fh.flush()
        children = descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
        stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-2000:]
    assert err == "sitestrip: interrupted; previous output kept\n" and stdout == ""
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.rglob("*") if p.is_file()} == before
    assert children
    from sitestrip.pipeline.signals import _running
    assert not [pid for pid in children if _running(pid)]
