"""Watch mode (`sitestrip run --watch`, pipeline/watch.py): files moved into a folder while the
job runs are read once each, a site's stored pages carry over from file to file in Beam user
state (and from --state), rows are written while the job runs, and --idle-timeout ends it."""
import os
import re
import subprocess
import sys
import time
from collections import Counter

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from apache_beam.utils.timestamp import Timestamp

from sitestrip.pipeline.cli import main
from sitestrip.pipeline.state_store import state_files
from sitestrip.pipeline.watch import IdleFor, window_part_path
from helpers.warcs import damage_first_stored_page, response, write_warc

NAMES = ("alpha", "beta", "gamma", "delta")
# Bounds of the loops below: a hung job fails the test instead of hanging it.
JOB_LIMIT_S = 240
ROWS_LIMIT_S = 120


def _page(name, site="site.test"):
    """Four pages of one site, each linking the other three (a menu): mutually linked."""
    menu = "".join(f"<li><a href='/{n}.html'>{n.title()}</a></li>" for n in NAMES if n != name)
    return (f"<html><head><title>{name} of {site}</title></head><body><div id=top><ul id=menu>{menu}</ul></div>"
            f"<div id=main><h1>{name.title()}</h1><p>The {name} page has words of its own about {name}.</p>"
            f"<p>A second paragraph only {name} of {site} has.</p></div><div id=foot>Copyright Site</div>"
            f"</body></html>").encode()


def _rows(out, dataset="pages"):
    path = os.path.join(out, dataset)
    if not os.path.isdir(path) or not any(n.endswith(".parquet") and not n.startswith("_") for n in os.listdir(path)):
        return []
    return ds.dataset(path, format="parquet").to_table().to_pylist()


def _watch(landing, out, *extra, idle="10"):
    return subprocess.Popen(
        [sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--watch", "--input",
         os.path.join(landing, "*.warc.gz"), "--output", out, "--idle-timeout", idle,
         "--poll-interval", "0.2", "--window", "1", "--quiet", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _land(staged, landing):
    """The completion convention: written elsewhere, renamed into the watched folder."""
    target = os.path.join(landing, os.path.basename(staged))
    os.rename(staged, target)
    return target


def _wait_for_rows(out, urls, proc):
    """Until the pages rows of `urls` are on disk (bounded), while the job still runs."""
    deadline = time.monotonic() + ROWS_LIMIT_S
    while time.monotonic() < deadline:
        if urls <= {r["url"] for r in _rows(out)}:
            return
        assert proc.poll() is None, f"the job ended before writing {sorted(urls)}: {proc.communicate()}"
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"no rows for {sorted(urls)} within {ROWS_LIMIT_S} s")


@pytest.mark.beam
@pytest.mark.slow
def test_every_page_of_every_landed_file_has_one_row_and_state_carries_over(tmp_path):
    """Three WARC files are moved into the watched folder one by one, each only after the rows
    of the one before are on disk, so the rows appear while the job runs (the job is still
    running then: its idle timeout counts from the last new file).

    File 1: alpha, beta, gamma of site.test (they link each other); file 2: delta of
    site.test alone; file 3: alpha and beta of other.test, plus one 404 (skipped, not a row).
    Expected, by hand: 3 + 1 + 2 = 6 pages rows, one per page, none twice; the job ends by
    itself after --idle-timeout; no errors rows. Delta arrives alone in its file, so without
    state it would be a one-page site (page_only, as test_state_store shows); the stored pages of
    file 1 are kept in Beam user state for site.test, so alpha, beta, gamma are delta's
    candidates (all from the state) and it gets the site method cs, as in the batch
    incremental run of test_state_store."""
    staging, landing, out = tmp_path / "staging", tmp_path / "landing", str(tmp_path / "out")
    staging.mkdir()
    landing.mkdir()
    site = [f"https://site.test/{n}.html" for n in NAMES]
    other = [f"https://other.test/{n}.html" for n in NAMES[:2]]
    files = [
        write_warc(staging / "one.warc.gz", [response(u, _page(n)) for u, n in zip(site[:3], NAMES)]),
        write_warc(staging / "two.warc.gz", [response(site[3], _page("delta"))]),
        write_warc(staging / "three.warc.gz",
                   [response(u, _page(n, "other.test")) for u, n in zip(other, NAMES)]
                   + [response("https://other.test/gone.html", b"gone", status="404 Not Found")]),
    ]
    expected = [set(site[:3]), {site[3]}, set(other)]
    proc = _watch(str(landing), out)
    landed = []
    try:
        for staged, urls in zip(files, expected):
            landed.append(_land(staged, str(landing)))
            _wait_for_rows(out, urls, proc)
        stdout, stderr = proc.communicate(timeout=JOB_LIMIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    rows = _rows(out)
    assert sorted(r["url"] for r in rows) == sorted(site + other)
    by_url = {r["url"]: r for r in rows}
    for path, urls in zip(landed, expected):
        assert {u for u, r in by_url.items() if r["warc_file"] == path} == urls
    delta = by_url[site[3]]
    assert delta["candidate_method"] == "cs"
    assert delta["state_candidate_urls"] and set(delta["state_candidate_urls"]) == set(delta["candidate_urls"])
    assert set(delta["candidate_urls"]) <= set(site[:3])
    assert _rows(out, "errors") == []
    assert {r["site"] for r in _rows(out, "sites")} == {"site.test", "other.test"}
    assert re.search(r"rows written: pages 6, menus \d+, errors 0, sites ", stdout), stdout
    # Menus per batch of a site: summed over a (site, signature)'s rows, the pages carrying it.
    carried = Counter((r["site"], r["menu_signature"]) for r in rows if r["menu_links"] and r["menu_signature"])
    menus = Counter()
    for m in _rows(out, "menus"):
        menus[(m["site"], m["menu_signature"])] += m["pages"]
    assert menus == carried and menus
    # Every dataset has its empty part 0 from the job's start, so each reads with its schema.
    for name in ("pages", "menus", "errors", "sites"):
        assert any(pq.ParquetFile(path).metadata.num_rows == 0 and "-00000000-00000-of-" in path.name
                   for path in (tmp_path / "out" / name).glob("part-*.parquet")), name


def _delta_to_land(tmp_path):
    """(an empty landing folder, delta's WARC file written beside it, ready to land)."""
    staging, landing = tmp_path / "staging", tmp_path / "landing"
    staging.mkdir()
    landing.mkdir()
    return landing, write_warc(staging / "two.warc.gz", [response("https://site.test/delta.html", _page("delta"))])


def _watch_delta_with_state(tmp_path, state, out, idle):
    """A watch job with --state over an empty landing folder; delta's WARC file lands; the
    job runs to its end: (process, stderr)."""
    landing, delta = _delta_to_land(tmp_path)
    proc = _watch(str(landing), out, "--state", str(state), idle=idle)
    try:
        _land(delta, str(landing))
        _stdout, stderr = proc.communicate(timeout=JOB_LIMIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc, stderr


@pytest.mark.beam
@pytest.mark.slow
def test_watch_seeds_a_site_from_the_state_of_a_batch_run(tmp_path):
    """A batch run with --state reads alpha, beta, gamma; a watch run with the same --state
    then gets delta alone: its stored pages come from the state directory (read on the
    site's first batch), so, as in the batch incremental run, delta's candidates are the
    stored pages and its method is cs, not page_only. When the job ends (idle timeout) it
    writes the state back as the next version: the seed's pages and delta's, and a batch run
    over a new page of the site then takes its candidates from it, delta among them."""
    state = tmp_path / "state"
    first = write_warc(tmp_path / "one.warc.gz",
                       [response(f"https://site.test/{n}.html", _page(n)) for n in NAMES[:3]])
    assert main(["run", "--input", first, "--output", str(tmp_path / "batch"), "--state", str(state),
                 "--quiet"]) == 0
    current = (state / "CURRENT").read_text()
    out = str(tmp_path / "out")
    proc, stderr = _watch_delta_with_state(tmp_path, state, out, idle="3")
    assert proc.returncode == 0, stderr
    (row,) = _rows(out)
    assert row["url"] == "https://site.test/delta.html" and row["candidate_method"] == "cs"
    assert set(row["state_candidate_urls"]) == set(row["candidate_urls"])
    assert set(row["candidate_urls"]) <= {f"https://site.test/{n}.html" for n in NAMES[:3]}
    assert (state / "CURRENT").read_text() != current
    assert _stored_urls(state) == {f"https://site.test/{n}.html" for n in NAMES}
    assert not [p for p in state.iterdir() if p.name.startswith("_watch-")]
    _a_batch_run_continues_from(tmp_path, state)


def _stored_urls(state):
    return {r["url"] for path in state_files(str(state)) for r in pq.read_table(path, columns=["url"]).to_pylist()}


def _a_batch_run_continues_from(tmp_path, state):
    """A batch run over a page that links only delta: delta comes from the written-back state."""
    epsilon = write_warc(tmp_path / "five.warc.gz", [response(
        "https://site.test/epsilon.html",
        b"<html><body><ul id=menu><li><a href='/delta.html'>Delta</a></li></ul><p>Epsilon words.</p></body></html>")])
    assert main(["run", "--input", epsilon, "--output", str(tmp_path / "after"), "--state", str(state),
                 "--quiet"]) == 0
    (row,) = ds.dataset(str(tmp_path / "after" / "pages"), format="parquet").to_table().to_pylist()
    assert "https://site.test/delta.html" in row["state_candidate_urls"]


@pytest.mark.beam
@pytest.mark.slow
def test_a_stopped_watch_job_writes_its_state_back(tmp_path):
    """No idle timeout: the job runs until a SIGTERM, sent once delta's row is on disk. It ends
    with 143 and one line, its state written back (delta among the stored pages), no working
    directory left, and its rows kept."""
    import signal
    state, _ = _batch_state(tmp_path)
    current = (state / "CURRENT").read_text()
    landing, delta = _delta_to_land(tmp_path)
    out = str(tmp_path / "out")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--watch", "--input",
         os.path.join(landing, "*.warc.gz"), "--output", out, "--poll-interval", "0.2", "--window", "1",
         "--quiet", "--state", str(state)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _land(delta, str(landing))
        _wait_for_rows(out, {"https://site.test/delta.html"}, proc)
        proc.send_signal(signal.SIGTERM)
        _stdout, stderr = proc.communicate(timeout=JOB_LIMIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    assert stderr.startswith("sitestrip: watch stopped; the rows written so far are kept, the state written back")
    assert len(stderr.strip().splitlines()) == 1
    assert (state / "CURRENT").read_text() != current
    assert "https://site.test/delta.html" in _stored_urls(state)
    assert not [p for p in state.iterdir() if p.name.startswith("_watch-")]
    assert [r["url"] for r in _rows(out)] == ["https://site.test/delta.html"]


@pytest.mark.parametrize("argv, message", [
    (["--idle-timeout", "5"], "--idle-timeout applies to --watch only"),
    (["--window", "5"], "--window applies to --watch only"),
    (["--poll-interval", "5"], "--poll-interval applies to --watch only"),
    (["--watch"], "--watch needs --input with one glob"),
    (["--watch", "--input", "a/*.warc.gz", "b/*.warc.gz"], "--watch needs --input with one glob"),
    (["--watch", "--input", "a/*.warc.gz", "--idle-timeout", "0"], "--idle-timeout must be greater than 0"),
    (["--watch", "--input", "a/*.warc.gz", "--window", "-1"], "--window must be greater than 0"),
    (["--watch", "--input", "a/*.warc.gz", "--poll-interval", "0"], "--poll-interval must be greater than 0"),
    (["--watch", "--input", "a/*.warc.gz", "--workers", "2"], "--watch runs one local worker"),
])
def test_watch_options_are_validated(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_idle_for_stops_only_after_that_long_without_a_new_file():
    """IdleFor(5): started at t=100 s, a new file at 103 s; at 107.9 s it is 4.9 s since
    the last new file (go on), at 108 s it is 5 s (stop). Before any file, the start counts."""
    idle = IdleFor(5)
    state = idle.for_new_input(Timestamp(100), "glob")
    assert not idle.can_stop_polling(Timestamp(104.9), state)
    assert idle.can_stop_polling(Timestamp(105), state)
    state = idle.on_seen_new_output(Timestamp(103), state)
    assert not idle.can_stop_polling(Timestamp(107.9), state)
    assert idle.can_stop_polling(Timestamp(108), state)
    assert idle.state_coder().decode(idle.state_coder().encode(state)) == state


def test_window_part_names_differ_by_window_and_batch():
    """1767268800 s is 2026-01-01 12:00:00 UTC; the digest is the batch's row keys (8 hex)."""
    assert (window_part_path("out/pages/part", 1767268800.0, 0x1A2B, 0, 2)
            == "out/pages/part-20260101T120000Z-00001a2b-00000-of-00002.parquet")
    assert window_part_path("p", 1767268800.0, 1, 0, 1) != window_part_path("p", 1767268810.0, 1, 0, 1)
    assert window_part_path("p", 1767268800.0, 1, 0, 1) != window_part_path("p", 1767268800.0, 2, 0, 1)


def _batch_state(tmp_path):
    state = tmp_path / "state"
    first = write_warc(tmp_path / "one.warc.gz",
                       [response(f"https://site.test/{n}.html", _page(n)) for n in NAMES[:3]])
    assert main(["run", "--input", first, "--output", str(tmp_path / "batch"), "--state", str(state),
                 "--quiet"]) == 0
    (path,) = state_files(str(state))
    return state, path


@pytest.mark.beam
@pytest.mark.slow
def test_a_damaged_state_file_is_refused_before_the_watch_starts(tmp_path, capsys):
    """A state file cut in half: its footer is unreadable, so the watch job is not started
    (exit 2) and the message names the file."""
    state, path = _batch_state(tmp_path)
    data = open(path, "rb").read()
    with open(path, "wb") as fh:
        fh.write(data[: len(data) // 2])
    capsys.readouterr()
    code = main(["run", "--watch", "--input", str(tmp_path / "landing" / "*.warc.gz"), "--output",
                 str(tmp_path / "out"), "--state", str(state), "--idle-timeout", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "bad --state" in err and path in err


@pytest.mark.beam
@pytest.mark.slow
def test_a_damaged_stored_page_ends_the_watch_job_naming_it(tmp_path):
    """A readable state file whose first stored page's bytes are cut: it is read when its
    site's first file lands (delta of site.test), and the job ends with exit 1 and a message
    naming the damaged stored page, not a traceback."""
    state, path = _batch_state(tmp_path)
    damage_first_stored_page(path)
    proc, stderr = _watch_delta_with_state(tmp_path, state, str(tmp_path / "out"), idle="30")
    assert proc.returncode == 1
    assert "bad --state" in stderr and "damaged stored page" in stderr and "site.test" in stderr


@pytest.mark.beam
@pytest.mark.slow
def test_the_state_is_checkpointed_while_the_job_runs(tmp_path):
    """--checkpoint-interval: once delta's site has been processed, a new state version holding
    delta appears while the job is still running (it ends only after its idle timeout)."""
    state, _ = _batch_state(tmp_path)
    current = (state / "CURRENT").read_text()
    landing, delta = _delta_to_land(tmp_path)
    out = str(tmp_path / "out")
    proc = _watch(str(landing), out, "--state", str(state), "--checkpoint-interval", "0.5", idle="60")
    try:
        _land(delta, str(landing))
        deadline = time.monotonic() + ROWS_LIMIT_S
        while (state / "CURRENT").read_text() == current:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no checkpoint"
            time.sleep(0.2)
        assert proc.poll() is None
        assert "https://site.test/delta.html" in _stored_urls(state)
        proc.terminate()
        proc.communicate(timeout=JOB_LIMIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143


def test_checkpoint_interval_needs_state(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--watch", "--input", "a/*.warc.gz", "--checkpoint-interval", "5"])
    assert exit_.value.code == 2 and "--checkpoint-interval needs --state" in capsys.readouterr().err


@pytest.mark.beam
@pytest.mark.slow
def test_a_checkpoint_without_a_changed_site_writes_no_version(tmp_path):
    """checkpoint_state: no site file → no version; a site file → a version with the seed's other
    sites and the file's pages; the same files again → no new version; a changed file → one."""
    from sitestrip.pipeline.state_store import current_version
    from sitestrip.pipeline.watch import checkpoint_state, write_site_state
    from sitestrip.pipeline.state_store import read_state_file
    state, path = _batch_state(tmp_path)
    working = str(state / "_watch-test")
    os.makedirs(working)
    seed = state_files(str(state))
    assert checkpoint_state(str(state), working, seed)[0] is None
    from sitestrip.transforms.state import StoredPage
    stored = [page for _site, page in read_state_file(path) if isinstance(page, StoredPage)]
    assert len(stored) == 3
    write_site_state(working, "site.test", stored[:1])
    version, signature = checkpoint_state(str(state), working, seed)
    assert version is not None and current_version(str(state)) == version
    assert len(_stored_urls(state)) == 1
    assert checkpoint_state(str(state), working, seed, signature) == (None, signature)
    write_site_state(working, "site.test", stored)
    version2, _ = checkpoint_state(str(state), working, seed, signature)
    assert version2 not in (None, version) and len(_stored_urls(state)) == len(stored)
