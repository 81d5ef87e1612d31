"""What a scheduler relies on: a run publishes its output only when it has finished, `_SUCCESS`
describes exactly a complete run, and a refused, failed or interrupted re-run leaves the previous
output (and --state) byte for byte as it was. Runs are child processes of the command line, the
interrupted ones stopped by a real SIGINT/SIGTERM while their pipeline reads an input."""
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sitestrip.pipeline import publish
from sitestrip.pipeline.cli import allowed, _allowance
from sitestrip.pipeline.state_store import CURRENT
from helpers.fifos import opened_by_the_run
from helpers.warcs import response, write_warc
from helpers.files import snapshot

REPO = Path(__file__).resolve().parents[2]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
DATASETS = ("pages", "menus", "errors", "sites", "links")     # links: output.links, on by default


def page(title, links=("/a.html", "/b.html", "/c.html")):
    menu = "".join(f"<li><a href='{href}'>{href[1:-5]}</a></li>" for href in links)
    return (f"<html><head><title>{title}</title></head><body><ul id=menu>{menu}</ul>"
            f"<div id=content><p>{title} has its own words here.</p></div></body></html>").encode()


def cli(*args, cwd):
    proc = subprocess.run([sys.executable, "-m", "sitestrip.pipeline.cli", *map(str, args)], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr




@pytest.fixture(scope="module")
def warcs(tmp_path_factory):
    d = tmp_path_factory.mktemp("warcs")
    one = write_warc(d / "one.warc.gz", [
        response("https://site-a.org/a.html", page("Alpha")),
        response("https://site-a.org/b.html", page("Beta")),
        response("https://site-a.org/c.html", page("Gamma")),
    ])
    two = write_warc(d / "two.warc.gz", [
        response("https://other.example/x.html", page("Ex", links=("/x.html", "/y.html"))),
        response("https://other.example/y.html", page("Why", links=("/x.html", "/y.html"))),
    ])
    return Path(one), Path(two)


@pytest.fixture(scope="module")
def complete(tmp_path_factory, warcs):
    """A complete run with --state over both files, kept pristine: tests copy it."""
    d = tmp_path_factory.mktemp("complete")
    code, out, err = cli("run", "--input", *warcs, "--output", d / "out", "--state", d / "state", "--quiet",
                         "--part-files", "3", cwd=d)
    assert code == 0, err
    return d / "out", d / "state"


@pytest.fixture
def rerun(tmp_path, complete):
    """A copy of the complete output and state, and their snapshots."""
    out, state = tmp_path / "out", tmp_path / "state"
    shutil.copytree(complete[0], out)
    shutil.copytree(complete[1], state)
    return out, state, snapshot(out), snapshot(state)


# ------------------------------------------------------------------ _SUCCESS

@pytest.mark.beam
@pytest.mark.slow
def test_success_names_every_file_with_its_rows_and_describes_the_run(complete, warcs):
    out, state = complete
    marker = json.loads((out / "_SUCCESS").read_text())
    on_disk = sorted(str(p.relative_to(out)) for p in out.glob("*/*.parquet"))
    listed = sorted(f["path"] for d in marker["datasets"].values() for f in d["files"])
    assert listed == on_disk
    for name in DATASETS:
        entry = marker["datasets"][name]
        for f in entry["files"]:
            assert f["rows"] == pq.ParquetFile(out / f["path"]).metadata.num_rows
        assert entry["rows"] == sum(f["rows"] for f in entry["files"])
    assert marker["datasets"]["pages"]["rows"] == 5
    assert marker["counts"]["pages"] == 5 and marker["counts"]["errors_by_stage"] == {}
    assert marker["inputs"]["files"] == 2 and marker["inputs"]["read"] == 2
    assert marker["inputs"]["digest"] == publish.inputs_digest([str(w) for w in warcs])
    meta = pq.read_schema(out / marker["datasets"]["pages"]["files"][0]["path"]).metadata
    assert marker["model_id"] == meta[b"sitestrip.model_id"].decode()
    assert marker["schema_version"] == meta[b"sitestrip.schema_version"].decode()
    assert marker["config"]["digest"].startswith("sha256:")
    assert marker["state"]["version"] == (state / CURRENT).read_text().strip()
    assert not [p for p in out.iterdir() if p.name.startswith(publish.STAGING_PREFIX)]


@pytest.mark.beam
def test_only_part_0_of_an_empty_dataset_is_written(complete):
    """Three parts: a dataset with rows in fewer parts has only those files (part 0 always)."""
    out, _ = complete
    errors = sorted(p.name for p in (out / "errors").iterdir())
    assert errors == ["part-00000-of-00003.parquet"]
    assert pq.ParquetFile(out / "errors" / errors[0]).metadata.num_rows == 0


@pytest.mark.beam
@pytest.mark.slow
def test_a_first_run_that_fails_leaves_no_output_and_no_success(tmp_path):
    notes = tmp_path / "notes.warc.gz"
    notes.write_bytes(b"not a WARC at all\n")
    code, out, err = cli("run", "--input", notes, "--output", tmp_path / "o", "--quiet", cwd=tmp_path)
    assert code == 1 and "nothing was published" in err
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == []


# ------------------------------------------------------------------ refused and failed re-runs

def _refusals(tmp_path, out, state):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    return {
        "runner": (["--runner", "FooRunner"], "unknown --runner FooRunner"),
        "config": (["--config", "publishd"], "did you mean published?"),
        "state_is_output": (["--state", out], "is the --output directory"),
        "state_in_output": (["--state", out / "st"], "is inside --output"),
        "state_is_a_file": (["--state", blocker], "is a file, not a directory"),
        "state_under_a_file": (["--state", blocker / "s"], "cannot write to --state"),
        "missing_input": (["--input", tmp_path / "nothing-here.warc.gz"], "matched no WARC files"),
    }


@pytest.mark.beam
@pytest.mark.slow
@pytest.mark.parametrize("case", ["runner", "config", "state_is_output", "state_in_output", "state_is_a_file",
                                  "state_under_a_file", "missing_input"])
def test_a_refused_rerun_is_one_line_exit_2_and_changes_nothing(tmp_path, rerun, warcs, case):
    out, state, before_out, before_state = rerun
    extra, expected = _refusals(tmp_path, out, state)[case]
    args = ["run", "--output", out, "--quiet"]
    if case != "missing_input":
        args += ["--input", *warcs]
    if not case.startswith("state"):
        args += ["--state", state]
    code, stdout, err = cli(*args, *extra, cwd=tmp_path)
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("sitestrip: ") and expected in err, err
    assert snapshot(out) == before_out and snapshot(state) == before_state


@pytest.mark.beam
def test_a_state_pointing_at_another_runs_output_is_refused(tmp_path, rerun, warcs):
    out, state, before_out, _ = rerun
    other = tmp_path / "other"
    shutil.copytree(out, other)
    code, _, err = cli("run", "--input", *warcs, "--output", tmp_path / "new", "--state", other, cwd=tmp_path)
    assert code == 2 and "holds a run's output" in err and len(err.strip().splitlines()) == 1
    assert snapshot(other) == before_out


@pytest.mark.beam
@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_state_is_refused_before_the_run(tmp_path, rerun, warcs):
    out, state, before_out, before_state = rerun
    state.chmod(0o555)
    try:
        code, _, err = cli("run", "--input", *warcs, "--output", out, "--state", state, cwd=tmp_path)
    finally:
        state.chmod(0o755)
    assert code == 2 and "cannot write to --state" in err and len(err.strip().splitlines()) == 1
    assert snapshot(out) == before_out and snapshot(state) == before_state


@pytest.mark.beam
@pytest.mark.slow
@pytest.mark.parametrize("content", [b"these are notes, not a WARC file\n", b""])
def test_a_failed_rerun_keeps_the_previous_output(tmp_path, rerun, content):
    """Nothing readable (not a WARC; an empty file): exit 1, nothing published."""
    out, state, before_out, before_state = rerun
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(content)
    code, _, err = cli("run", "--input", bad, "--output", out, "--state", state, "--quiet", cwd=tmp_path)
    assert code == 1 and f"{out} is unchanged" in err and str(bad) in err
    assert snapshot(out) == before_out and snapshot(state) == before_state


# ------------------------------------------------------------------ signals

@pytest.mark.beam
@pytest.mark.slow
@pytest.mark.parametrize("signame,workers", [("SIGTERM", 1), ("SIGINT", 1), ("SIGTERM", 2), ("SIGINT", 2)])
def test_a_signal_stops_the_run_and_keeps_the_previous_output_and_state(tmp_path, rerun, warcs, signame,
                                                                       workers):
    """The input is a FIFO: once the test's open for writing returns, a worker of the running
    pipeline has opened it, and the signal reaches a run in the middle of its work."""
    out, state, before_out, before_state = rerun
    fifo = tmp_path / "landing.warc.gz"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--input", fifo, *warcs,
                             "--output", str(out), "--state", str(state), "--workers", str(workers)],
                            cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with opened_by_the_run(fifo, proc) as fh:
        fh.write(b"WARC/1.0\r\n")
        fh.flush()
        children = _children(proc.pid)
        proc.send_signal(getattr(signal, signame))
        stdout, err = proc.communicate(timeout=120)
    sig = getattr(signal, signame)
    assert proc.returncode == 128 + sig
    assert err.strip().splitlines()[-1] == "sitestrip: interrupted; previous output kept"
    assert "Traceback" not in err and "Exception" not in err
    assert "sitestrip: finished" not in stdout
    assert snapshot(out) == before_out and snapshot(state) == before_state
    for pid in children:
        assert not _alive(pid), f"child process {pid} outlived the run"




def _children(pid):
    from sitestrip.pipeline.signals import descendants
    return descendants(pid)


def _alive(pid):
    from sitestrip.pipeline.signals import _running
    return _running(pid)


# ------------------------------------------------------------------ every input counts

@pytest.mark.beam
@pytest.mark.slow
def test_repeated_input_flags_add_up(tmp_path, warcs):
    runs = {}
    for name, args in {"flags": ["--input", warcs[0], "--input", warcs[1]], "list": ["--input", *warcs]}.items():
        code, stdout, err = cli("run", *args, "--output", tmp_path / name, "--quiet", cwd=tmp_path)
        assert code == 0, err
        assert "input files: 2, read 2" in stdout and "pages: 5 " in stdout
        runs[name] = json.loads((tmp_path / name / "_SUCCESS").read_text())
    assert runs["flags"]["inputs"] == runs["list"]["inputs"]
    assert runs["flags"]["datasets"] == runs["list"]["datasets"]


# ------------------------------------------------------------------ unread inputs

@pytest.mark.beam
@pytest.mark.slow
def test_an_empty_or_missing_input_is_published_then_exit_1_naming_it(tmp_path, warcs):
    empty = tmp_path / "empty.warc.gz"
    empty.write_bytes(b"")
    manifest = tmp_path / "warc.paths"
    manifest.write_text(f"{warcs[0]}\n{tmp_path / 'gone.warc.gz'}\n")
    out = tmp_path / "o"
    code, stdout, err = cli("run", "--input", manifest, empty, warcs[1], "--output", out, "--quiet", cwd=tmp_path)
    assert code == 1
    assert "input files: 4, read 2, not read 2" in stdout
    assert "2 of 4 input file(s) could not be read" in err
    assert f"{empty}: EmptyFile" in err and f"{tmp_path / 'gone.warc.gz'}: FileNotFoundError" in err
    marker = json.loads((out / "_SUCCESS").read_text())
    assert marker["inputs"]["files"] == 4 and marker["inputs"]["read"] == 2
    assert sorted(u["file"] for u in marker["inputs"]["not_read"]) == sorted(
        [str(empty), str(tmp_path / "gone.warc.gz")])
    assert marker["datasets"]["pages"]["rows"] == 5


@pytest.mark.beam
@pytest.mark.slow
@pytest.mark.parametrize("allowance,code", [("2", 0), ("1", 1), ("50%", 0), ("49%", 1)])
def test_allow_missing_inputs(tmp_path, warcs, allowance, code):
    empty = tmp_path / "empty.warc.gz"
    empty.write_bytes(b"")
    missing = tmp_path / "warc.paths"
    missing.write_text(f"{tmp_path / 'gone.warc.gz'}\n")
    got, _, err = cli("run", "--input", missing, empty, *warcs, "--output", tmp_path / "o", "--quiet",
                      "--allow-missing-inputs", allowance, cwd=tmp_path)
    assert got == code, err
    assert (tmp_path / "o" / "_SUCCESS").exists()


def test_allowance_parsing():
    assert _allowance("3") == ("count", 3) and _allowance("0.5%") == ("percent", 0.5)
    for bad in ("-1", "x", "101%", "1.5"):
        with pytest.raises(Exception):
            _allowance(bad)
    assert allowed(("count", 0), 0, 10) and not allowed(("count", 0), 1, 10)
    assert allowed(("percent", 10.0), 1, 10) and not allowed(("percent", 9.9), 1, 10)


# ------------------------------------------------------------------ the commit itself

def _stage(root: Path, rows_by_dataset: dict) -> Path:
    import pyarrow as pa
    for name, rows in rows_by_dataset.items():
        (root / name).mkdir(parents=True)
        pq.write_table(pa.table({"x": list(range(rows))}), root / name / "part-00000-of-00001.parquet")
    return root


def _marker(staging: Path) -> dict:
    files = publish.dataset_files(str(staging))
    return {"datasets": {n: {"rows": sum(f["rows"] for f in fs), "files": fs} for n, fs in files.items()}}


@pytest.mark.parametrize("swap", ["exchange", "two_renames", "object_store"])
def test_commit_replaces_the_datasets_and_writes_success_last(tmp_path, monkeypatch, swap):
    out = tmp_path / "out"
    old = _stage(out, {n: 2 for n in DATASETS})
    (old / "pages" / "part-00000-of-00002.parquet").write_bytes(b"an older run's second part")
    (out / "report.html").write_text("about the old run")
    (out / "_SUCCESS").write_text("{}")
    staging = _stage(out / (publish.STAGING_PREFIX + "x"), {n: 3 for n in DATASETS})
    if swap == "two_renames":
        monkeypatch.setattr(publish, "exchange", lambda a, b: False)
    publish.commit(str(staging), str(out), _marker(staging), local=swap != "object_store")
    assert sorted(p.name for p in out.iterdir()) == ["_SUCCESS", *sorted(DATASETS)]
    for name in DATASETS:
        assert [p.name for p in (out / name).iterdir()] == ["part-00000-of-00001.parquet"]
        assert pq.read_table(out / name / "part-00000-of-00001.parquet").num_rows == 3
    marker = publish.read_success(str(out))
    assert marker["datasets"]["pages"]["rows"] == 3
    assert publish.committed_files(str(out), "pages") == [str(out / "pages" / "part-00000-of-00001.parquet")]


def test_commit_into_a_new_output(tmp_path):
    out = tmp_path / "out"
    staging = _stage(out / (publish.STAGING_PREFIX + "x"), {n: 1 for n in DATASETS})
    publish.commit(str(staging), str(out), _marker(staging))
    assert sorted(p.name for p in out.iterdir()) == ["_SUCCESS", *sorted(DATASETS)]


@pytest.mark.parametrize("swap", ["exchange", "two_renames", "object_store"])
def test_a_run_without_the_links_dataset_removes_the_previous_ones(tmp_path, monkeypatch, swap):
    """The links dataset is optional (output.links): a run that did not write it publishes the
    other four, its _SUCCESS does not list it, and the previous run's links files go, so the
    output never holds links of another run. The four others stay required."""
    out = tmp_path / "out"
    _stage(out, {n: 2 for n in DATASETS})
    (out / "_SUCCESS").write_text("{}")
    staging = _stage(out / (publish.STAGING_PREFIX + "x"), {n: 3 for n in DATASETS if n != "links"})
    if swap == "two_renames":
        monkeypatch.setattr(publish, "exchange", lambda a, b: False)
    marker = _marker(staging)
    assert sorted(marker["datasets"]) == sorted(n for n in DATASETS if n != "links")
    publish.commit(str(staging), str(out), marker, local=swap != "object_store")
    assert not list(out.glob("links/*.parquet"))
    if swap != "object_store":
        assert sorted(p.name for p in out.iterdir()) == ["_SUCCESS", *sorted(n for n in DATASETS if n != "links")]
    assert "links" not in publish.read_success(str(out))["datasets"]
    staging = _stage(out / (publish.STAGING_PREFIX + "y"), {"pages": 1, "errors": 1, "sites": 1, "links": 1})
    with pytest.raises(publish.PublishError, match="menus"):
        publish.commit(str(staging), str(out), _marker(staging))


@pytest.mark.beam
@pytest.mark.slow
def test_the_links_dataset_is_published_with_the_run_and_goes_when_turned_off(tmp_path, rerun, warcs):
    """A run with the default config publishes links/ beside the other datasets, listed in
    _SUCCESS with its rows (the five pages' menu links: 3 + 3 + 3 + 2 + 2); a re-run with
    output.links false into the same output publishes the four others and no links/."""
    out, state, _, _ = rerun
    marker = json.loads((out / "_SUCCESS").read_text())
    assert marker["datasets"]["links"]["rows"] == 13
    assert sum(pq.ParquetFile(out / f["path"]).metadata.num_rows for f in marker["datasets"]["links"]["files"]) == 13
    off = tmp_path / "off.yaml"
    off.write_text("output:\n  links: false\n")
    code, stdout, err = cli("run", "--input", *warcs, "--output", out, "--config", off, "--quiet", cwd=tmp_path)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["_SUCCESS", *sorted(n for n in DATASETS if n != "links")]
    assert "links" not in json.loads((out / "_SUCCESS").read_text())["datasets"]
    assert "/links" not in stdout and "links:" not in stdout


def test_no_success_reads_as_no_complete_run(tmp_path):
    assert publish.read_success(str(tmp_path)) is None
    with pytest.raises(FileNotFoundError):
        publish.committed_files(str(tmp_path), "pages")
    (tmp_path / "_SUCCESS").write_text("not json")
    with pytest.raises(ValueError):
        publish.read_success(str(tmp_path))


@pytest.mark.beam
@pytest.mark.slow
def test_a_staging_directory_left_by_a_killed_run_goes_with_the_next_run(tmp_path, warcs):
    out = tmp_path / "o"
    left = out / (publish.STAGING_PREFIX + "killed") / "pages"
    left.mkdir(parents=True)
    (left / "part-00000-of-00001.parquet").write_bytes(b"half")
    code, _, err = cli("run", "--input", *warcs, "--output", out, "--quiet", cwd=tmp_path)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["_SUCCESS", *sorted(DATASETS)]


@pytest.mark.beam
@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_a_damaged_stored_page_fails_the_rerun_in_one_line_and_changes_nothing(tmp_path, rerun, warcs, workers):
    """Found by a worker mid-run: exit 1, one line naming the state file and the page (no
    traceback from Beam or its worker processes), output and state byte for byte as before."""
    from sitestrip.pipeline.state_store import state_files
    from helpers.warcs import damage_first_stored_page
    out, state, before_out, _ = rerun
    assert any([damage_first_stored_page(path) for path in state_files(str(state))])
    before_state = snapshot(state)
    code, stdout, err = cli("run", "--input", *warcs, "--output", out, "--state", state, "--quiet",
                            "--workers", workers, cwd=tmp_path)
    assert code == 1 and stdout == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("sitestrip: bad --state: ") and "damaged stored page" in err and "[while" not in err
    assert snapshot(out) == before_out and snapshot(state) == before_state


@pytest.mark.beam
@pytest.mark.slow
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_before_the_pipeline_starts_is_one_line_too(tmp_path, rerun, signame):
    """The input is a manifest that is a FIFO: the run is still listing its inputs (no
    pipeline, no staging yet) when the signal arrives."""
    out, state, before_out, before_state = rerun
    manifest = tmp_path / "warc.paths"
    os.mkfifo(manifest)
    proc = subprocess.Popen([sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--input", manifest,
                             "--output", str(out), "--state", str(state)],
                            cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with opened_by_the_run(manifest, proc):
        proc.send_signal(getattr(signal, signame))
        stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + getattr(signal, signame)
    assert err == "sitestrip: interrupted; previous output kept\n" and stdout == ""
    assert snapshot(out) == before_out and snapshot(state) == before_state
