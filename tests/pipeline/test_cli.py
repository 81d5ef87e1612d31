"""The command line as a user meets it: `python run.py` / `python -m sitestrip.pipeline.cli` in a child
process on tiny WARC files built here. Unknown options, failed runs, unusable outputs, the
version, --quiet, Beam's noise, and progress (in a log and on a terminal)."""
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections import Counter
from importlib.metadata import version
from pathlib import Path

import pytest

from sitestrip.pipeline.cli import unknown_options
from sitestrip.pipeline.progress import READ, SITES, ProgressFile, describe, read_totals
from test_runners import DATAFLOW, FLINK, FLINK_LOOPBACK, SPARK
from helpers.warcs import response, write_warc

REPO = Path(__file__).resolve().parents[2]
# The children find sitestrip through its install, as in a user's shell: a PYTHONPATH
# to the checkout would also let a bare `import pipeline` pass.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
SUMMARY_LINES = 10     # finished, input files, records, skipped, pages, errors, template clusters, compact pages,
                       # links (output.links, on in the default preset), output


def page(title, links=("/a.html", "/b.html", "/c.html")):
    menu = "".join(f"<li><a href='{href}'>{href[1:-5]}</a></li>" for href in links)
    return (f"<html><head><title>{title}</title></head><body><ul id=menu>{menu}</ul>"
            f"<div id=content><p>{title} has its own words here.</p></div></body></html>").encode()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Five HTML pages: three of site-a.org, two of other.example (2 sites), one WARC file."""
    d = tmp_path_factory.mktemp("tiny")
    return write_warc(d / "tiny.warc.gz", [
        response("https://site-a.org/a.html", page("Alpha")),
        response("https://site-a.org/b.html", page("Beta")),
        response("https://site-a.org/c.html", page("Gamma")),
        response("https://other.example/x.html", page("Ex", links=("/x.html", "/y.html"))),
        response("https://other.example/y.html", page("Why", links=("/x.html", "/y.html"))),
    ])


def cli(*args, cwd, entry="module"):
    """Run the command line in a child process: (return code, stdout, stderr)."""
    head = [sys.executable, str(REPO / "run.py")] if entry == "run.py" else [sys.executable, "-m", "sitestrip.pipeline.cli"]
    proc = subprocess.run(head + [str(a) for a in args], cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


# ------------------------------------------------------------------ options

@pytest.mark.beam
def test_unknown_options_are_errors_and_never_fall_back_to_the_sample(tmp_path):
    code, out, err = cli("--ouput", "X", "--inptu", "DIR", cwd=tmp_path, entry="run.py")
    assert code == 2 and out == ""
    assert "unknown option --ouput (did you mean --output?)" in err
    assert "unknown option --inptu (did you mean --input?)" in err
    assert not (tmp_path / "X").exists() and not (tmp_path / "out").exists()


@pytest.mark.beam
def test_stray_arguments_and_unknown_flags_with_values_are_errors(tmp_path, tiny):
    code, _, err = cli("run", "--input", tiny, "--output", tmp_path / "o", "--colour=red", "leftover",
                       cwd=tmp_path)
    assert code == 2
    assert "unknown option --colour" in err and "unexpected argument 'leftover'" in err
    assert not (tmp_path / "o").exists()


def test_beams_own_options_pass(tmp_path):
    """Every option docs/runners.md uses is one of Beam's pipeline options: none is rejected."""
    extra = ["--setup_file", "./pyproject.toml", "--extra_package", "dist/sitestrip.whl",
             "--requirements_file=req.txt", "--save_main_session", "--runner", "DirectRunner",
             "--direct_num_workers=2", "--experiments=use_runner_v2", "--experiments", "x"]
    for flags in (DATAFLOW, FLINK, SPARK, FLINK_LOOPBACK, extra):
        assert unknown_options(list(flags)) == [], flags
    assert unknown_options(["--projekt=p", "--runner=DataflowRunner"]) == ["--projekt"]


@pytest.mark.beam
@pytest.mark.slow
def test_a_beam_option_reaches_beam_and_the_run_succeeds(tmp_path, tiny):
    code, out, err = cli("run", "--input", tiny, "--output", tmp_path / "o", "--quiet",
                         "--job_name=sitestrip-test", cwd=tmp_path)
    assert code == 0, err
    assert "pages: 5 " in out


@pytest.mark.slow
def test_version(tmp_path):
    expected = f"sitestrip {version('sitestrip')}"
    for args, entry in ((["--version"], "module"), (["run", "--version"], "module"), (["--version"], "run.py")):
        code, out, err = cli(*args, cwd=tmp_path, entry=entry)
        assert (code, out.strip(), err) == (0, expected, ""), args


# ------------------------------------------------------------------ failed runs

@pytest.mark.beam
@pytest.mark.slow
def test_a_run_that_reads_no_record_fails_with_its_first_errors(tmp_path):
    not_warc = tmp_path / "notes.warc.gz"
    not_warc.write_bytes(b"these are notes, not a WARC file\n")
    code, out, err = cli("run", "--input", not_warc, "--output", tmp_path / "o", "--quiet", cwd=tmp_path)
    assert code == 1
    assert out.startswith("sitestrip: finished") and "errors by stage: read 1" in out
    assert "run failed: no WARC record could be read from the input" in err
    assert re.search(rf"read NotAWarc in {re.escape(str(not_warc))}: \S", err)


@pytest.mark.beam
@pytest.mark.slow
def test_a_manifest_without_prefix_fails_with_a_hint(tmp_path):
    manifest = tmp_path / "warc.paths"
    manifest.write_text("crawl-data/CC/segments/1/warc/one.warc.gz\n")
    code, _, err = cli("run", "--input", manifest, "--output", tmp_path / "o", "--quiet", cwd=tmp_path)
    assert code == 1, err
    assert "read FileNotFoundError in crawl-data/CC/segments/1/warc/one.warc.gz" in err
    assert "give --input-prefix" in err


@pytest.mark.beam
@pytest.mark.slow
def test_html_read_but_no_pages_row_fails(tmp_path):
    """Two HTML 200 records whose target URI is not a URL: both are read (html_200 = 2) and
    both end as errors rows (read, BadUrl); no pages row."""
    warc = write_warc(tmp_path / "bad.warc.gz", [response("not-a-url", page("A")),
                                                 response("also-not-a-url", page("B"))])
    code, out, err = cli("run", "--input", warc, "--output", tmp_path / "o", "--quiet", cwd=tmp_path)
    assert code == 1 and "pages: 0 " in out
    assert "run failed: 2 HTML page(s) were read but no pages row was written" in err
    assert "First errors (2 of 2):" in err
    assert err.count(" read BadUrl in ") == 2


@pytest.mark.beam
@pytest.mark.slow
@pytest.mark.parametrize("layout", ["file", "under_a_file", "dataset_is_a_file"])
def test_an_unusable_output_is_one_line(tmp_path, tiny, layout):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    output = {"file": blocker, "under_a_file": blocker / "out", "dataset_is_a_file": tmp_path / "o"}[layout]
    if layout == "dataset_is_a_file":
        output.mkdir()
        (output / "pages").write_text("not a directory")
    code, out, err = cli("run", "--input", tiny, "--output", output, cwd=tmp_path)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("sitestrip: "), err
    assert "Traceback" not in err


# ------------------------------------------------------------------ quiet, noise

@pytest.mark.beam
@pytest.mark.slow
def test_quiet_prints_the_summary_only_even_with_worker_processes(tmp_path, tiny):
    code, out, err = cli("run", "--input", tiny, "--output", tmp_path / "o", "--quiet", "--workers", "2",
                         cwd=tmp_path)
    assert code == 0
    assert err == ""
    lines = out.splitlines()
    assert len(lines) == SUMMARY_LINES and lines[0].startswith("sitestrip: finished")
    assert "pages: 5 " in out


@pytest.mark.beam
@pytest.mark.slow
def test_no_beam_noise_in_any_command(tmp_path, tiny):
    """Beam's import-time warning ("apitools not found") and its harness's INFO lines are not
    shown; a normal run's stderr holds sitestrip's own lines only."""
    code, _, err = cli("run", "--input", tiny, "--output", tmp_path / "o", "--workers", "2", cwd=tmp_path)
    assert code == 0
    for line in err.splitlines():
        assert re.match(r"\d\d:\d\d:\d\d sitestrip ", line), line
    for args in (["--help"], ["report", "--output", tmp_path / "o", "--out", tmp_path / "r.html"],
                 ["inspect", "--input", tiny, "--url", "https://site-a.org/a.html", "--out", tmp_path / "i.html"]):
        code, _, err = cli(*args, cwd=tmp_path)
        assert code == 0 and err == "", (args, err)


# ------------------------------------------------------------------ progress

@pytest.mark.beam
@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_progress_lines_count_every_page_when_not_on_a_terminal(tmp_path, tiny, workers):
    """stderr is a pipe here: progress comes as log lines. The workers (in-process, or two
    worker processes) report to the main process, whose last line counts every page and site:
    5 pages in 2 sites."""
    code, _, err = cli("run", "--input", tiny, "--output", tmp_path / "o", "--workers", workers,
                       "--progress-every", "0.2", cwd=tmp_path)
    assert code == 0
    # the last line comes when the run ends; earlier ones depend on timing
    last = [line for line in err.splitlines() if " sitestrip per-site: " in line][-1]
    assert "per-site: 5 of 5 pages (100%), 2 sites" in last


def _on_a_terminal(args, cwd):
    """Run with stderr on a pseudo-terminal of 100 columns: (return code, stdout, terminal output)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "sitestrip.pipeline.cli", *map(str, args)], cwd=cwd, env=ENV,
                            stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    screen = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:         # the child closed the terminal
                break
            if not chunk:
                break
            screen += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    out = proc.stdout.read().decode()
    proc.wait(timeout=60)
    return proc.returncode, out, screen.decode("utf-8", "replace")


@pytest.mark.beam
@pytest.mark.slow
def test_progress_bar_on_a_terminal(tmp_path, tiny):
    code, out, screen = _on_a_terminal(["run", "--input", tiny, "--output", tmp_path / "o", "--workers", "2"],
                                       tmp_path)
    assert code == 0 and "pages: 5 " in out
    assert re.search(r"reading: 100%\|[^\r\n]*\| 1/1 \[", screen), screen
    assert re.search(r"sites: 100%\|[^\r\n]*\| 5/5 \[[^\r\n]*page/s, 2 sites\]", screen), screen
    quiet_code, _, quiet_screen = _on_a_terminal(
        ["run", "--input", tiny, "--output", tmp_path / "q", "--quiet"], tmp_path)
    assert quiet_code == 0 and quiet_screen == ""


# ------------------------------------------------------------------ progress, in-process

def test_progress_files_sum_over_workers(tmp_path):
    """Two reporting instances of each phase write their own files; read_totals sums them, and
    a half-written or foreign file is ignored."""
    a, b = ProgressFile(str(tmp_path), READ), ProgressFile(str(tmp_path), READ)
    a.add(files=1, records=10, pages=4)
    b.add(records=3)
    b.add(pages=1)      # within REPORT_SECONDS of the last write: counted, written at flush
    b.flush()
    s = ProgressFile(str(tmp_path), SITES)
    s.add(pages=2, sites=1)
    (tmp_path / "read-broken.json").write_text('{"pages": ')
    (tmp_path / "notes.txt").write_text("x")
    totals = read_totals(str(tmp_path))
    assert totals[READ] == Counter(files=1, records=13, pages=5)
    assert totals[SITES] == Counter(pages=2, sites=1)


def test_progress_lines_by_hand():
    read = Counter(files=3, records=900, pages=400)
    assert describe({READ: read, SITES: Counter()}, 10, None) == \
        "reading: 3 of 10 WARC files, 900 records, 400 HTML pages"
    # 100 of 400 pages in 20 s: 5 pages/s, 300 left → 60 s
    sites = Counter(pages=100, sites=7)
    assert describe({READ: read, SITES: sites}, 10, 20.0) == \
        "per-site: 100 of 400 pages (25%), 7 sites, 5.0 pages/s, ETA 1m00s"
    assert describe({READ: read, SITES: Counter(pages=400, sites=9)}, 10, 50.0) == \
        "per-site: 400 of 400 pages (100%), 9 sites, 8.0 pages/s"
    # under a second of per-site work: no rate yet
    assert describe({READ: read, SITES: sites}, 10, 0.5) == "per-site: 100 of 400 pages (25%), 7 sites"


_BLAS_PROBE = """
import os, sys
if sys.argv[1] == "capped":
    from sitestrip.pipeline.cli import one_blas_thread
    one_blas_thread()
import numpy
from threadpoolctl import threadpool_info
print(os.environ.get("OPENBLAS_NUM_THREADS"), max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
"""


_GC_PROBE = """
import gc, sys
from sitestrip.pipeline.cli import YOUNG_COLLECTION_ALLOCATIONS, collect_young_rarely, _local_runner
from apache_beam.options.pipeline_options import PipelineOptions
if sys.argv[1] != "default":
    gc.set_threshold(*map(int, sys.argv[1].split(",")))
before = gc.get_threshold()
_local_runner(PipelineOptions([]), 1, "WARNING")
after = gc.get_threshold()
collect_young_rarely()
print(*before, *after, *gc.get_threshold(), YOUNG_COLLECTION_ALLOCATIONS)
"""


@pytest.mark.parametrize("preset", ["default", "700,5,20", "50000,10,10"])
def test_a_local_run_collects_the_young_generation_rarely_and_keeps_a_rarer_choice(preset):
    """The local runner raises the collector's youngest threshold to YOUNG_COLLECTION_ALLOCATIONS
    and leaves the older generations' counts; a threshold already above it is kept."""
    out = subprocess.run([sys.executable, "-c", _GC_PROBE, preset], capture_output=True, text=True, check=True)
    *numbers, wanted = map(int, out.stdout.split())
    before, after, again = numbers[:3], numbers[3:6], numbers[6:]
    assert wanted > before[0] or preset == "50000,10,10"
    assert after == again == [max(before[0], wanted), before[1], before[2]]
    if preset == "default":
        assert after[0] == wanted > 700


_GC_BEFORE_BEAM_PROBE = """
import gc, sys
from sitestrip.pipeline import cli, console
seen = []
def stop():
    seen.append((gc.get_threshold()[0], "apache_beam" in sys.modules))
    raise SystemExit(0)
console.import_beam_quietly = stop
try:
    cli.run(["--input", "in", "--output", "out"])
except SystemExit:
    pass
print(*seen[0], cli.YOUNG_COLLECTION_ALLOCATIONS)
"""


def test_sitestrip_run_collects_the_young_generation_rarely_before_beam_is_imported():
    """Beam's imports make objects that all survive: the raised threshold is in place before
    them, where a run used to collect among them at CPython's 700."""
    out = subprocess.run([sys.executable, "-c", _GC_BEFORE_BEAM_PROBE], capture_output=True, text=True, check=True)
    young, beam_imported, wanted = out.stdout.split()
    assert (int(young), beam_imported) == (int(wanted), "False")


@pytest.mark.parametrize("preset", [None, "2"])
def test_the_cli_gives_numpy_one_blas_thread_unless_the_user_chose_a_count(preset):
    """one_blas_thread runs before numpy is imported: numpy's OpenBLAS then has one thread,
    none spinning beside the worker; a count the user set wins (OpenBLAS caps it at the
    machine's cores)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    if preset:
        env["OPENBLAS_NUM_THREADS"] = preset
    out = subprocess.run([sys.executable, "-c", _BLAS_PROBE, "capped"], env=env, capture_output=True, text=True,
                         check=True)
    value, threads = out.stdout.split()
    if preset is None:
        assert (value, int(threads)) == ("1", 1)
    else:
        assert value == preset and 1 <= int(threads) <= min(int(preset), os.cpu_count())
