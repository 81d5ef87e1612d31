"""Hostile input end to end (design "Bad input"): every case of tests/helpers/hostile.py ends as
documented here, within bounded time and memory, and leaves the other records alone."""
import os
import resource
import socket
import time
from collections import Counter

import pyarrow.dataset as ds
import pytest

import sitestrip.transforms.site_step as site_step
from sitestrip.configs import Config, ConfigError, ReadLimits, SiteLimits, config_from_dict
from helpers.hostile import (BIG_PAGE_BYTES, CLIQUE_PAGES, LONG_URL_CHARS, _bomb_page, _wide_page,
                             write_corpus, write_ordinary_only)
from sitestrip.pipeline.cli import main
from sitestrip.transforms.site_step import StageError, build_page_record, process_site
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.urls import normalize_url


def _text(row):
    """The main text, or, when the main-content model kept no block of a tiny page, what was
    read of it: these cases are about reading hostile bytes, not about which blocks a model
    keeps (a two-word page may be no article)."""
    return row["main_text"] or row["nontemplate_text"] or ""


# Case → (dataset, what its row must show). Pages rows are looked up by normalized URL.
EXPECTED = {
    "deep": ("pages", lambda r: r["status"] == "ok" and "Above the pit: w1." in _text(r)
             and any(n.startswith("parser depth limit") for n in r["notes"])),
    "big": ("pages", lambda r: r["status"] == "ok" and r["html_bytes"] == BIG_PAGE_BYTES),
    "oversize": ("errors", "decode", "PayloadTooLarge"),
    "many_links": ("pages", lambda r: r["status"] == "ok" and "A page of links." in _text(r)),
    # Items equal on both pages are template; the one that differs at the far end survives.
    "wide": ("pages", lambda r: r["status"] == "ok" and "Aitem 59000" in r["nontemplate_text"] + _text(r)),
    # No error: random bytes decode to nonsense text at a bounded cost.
    "binary": ("pages", lambda r: r["status"] in ("ok", "empty") and r["charset"]),
    "empty_body": ("pages", lambda r: r["status"] == "empty" and _text(r) == ""),
    "nul_bytes": ("pages", lambda r: r["status"] == "ok" and "\x00" not in _text(r)
                  and "After them, more text." in _text(r)),
    # The HTTP label wins even when it lies: the cp1252 bytes become U+FFFD.
    "wrong_charset": ("pages", lambda r: r["charset"] == "utf-8" and "Caf\ufffd" in _text(r)),
    "missing_charset": ("pages", lambda r: r["charset"] == "cp1252" and "Café crème brûlée" in _text(r)),
    "gzip": ("pages", lambda r: _text(r) == "Gzip-encoded payload text."),
    "chunked": ("pages", lambda r: _text(r) == "Chunked payload text, in pieces."),
    "gzip_chunked": ("pages", lambda r: _text(r) == "Gzip inside chunks."),
    "bad_gzip": ("errors", "decode", "BadContentEncoding"),
    "warc_truncated": ("pages", lambda r: r["truncated"] == "length" and "WARC-Truncated: length" in r["notes"]
                       and "crawler's size limit" in _text(r)),
    "cut_record": ("errors", "read", "TruncatedFile"),
    "before_cut": ("pages", lambda r: _text(r) == "Written before the cut."),
    "long_url": ("pages", lambda r: len(r["url"]) == LONG_URL_CHARS and r["site"] == "longurl.hostile.test"),
    # `url` is the WARC-Target-URI as written; `url_normalized` what links are matched by.
    "idn": ("pages", lambda r: r["url"] == "https://bücher.example/"
            and r["url_normalized"] == "https://xn--bcher-kva.example/" and r["candidate_method"] == "linked"),
    "idn_punycode": ("pages", lambda r: r["site"] == "xn--bcher-kva.example" and r["candidate_method"] == "linked"),
    "idn_cyrillic": ("pages", lambda r: r["site"] == "xn--e1afmkfd.xn--80akhbyknj4f"
                     and _text(r) == "Пример страницы."),
    # libxml2's HTML parser ignores the internal subset: entity references stay literal text.
    "entity_bomb": ("pages", lambda r: "Text beside the bomb." in _text(r) and "lollol" not in _text(r)
                    and r["html_bytes"] < 2000),
    "path_dotdot_host": ("errors", "read", "BadUrl"),
    "path_dotdot_path": ("pages", lambda r: r["url"] == "https://escape.hostile.test/../../../../tmp/sitestrip-escape"
                         and r["url_normalized"] == "https://escape.hostile.test/tmp/sitestrip-escape"),
    "path_slash_site": ("errors", "read", "BadUrl"),
    "clique": ("pages", lambda r: r["candidate_method"] == "cs" and r["cs_size"] == 2),   # tuned template_n (the block model's search)
}


def _rows(out, name):
    return ds.dataset(os.path.join(out, name), format="parquet").to_table().to_pylist()


def _files_under(root):
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    """The corpus run once through the CLI, from an empty working directory, so that
    any file written anywhere but --output would show up."""
    root = tmp_path_factory.mktemp("hostile")
    corpus = write_corpus(str(root / "warcs"))
    work = root / "cwd"
    work.mkdir()
    out = str(root / "out")
    before = _files_under(str(root))
    cwd = os.getcwd()
    os.chdir(work)
    try:
        started = time.monotonic()
        status = main(["run", "--input", str(root / "warcs"), "--output", out, "--quiet"])
        elapsed = time.monotonic() - started
    finally:
        os.chdir(cwd)
    return {"corpus": corpus, "root": root, "out": out, "status": status, "elapsed": elapsed,
            "before": before, "pages": _rows(out, "pages"), "errors": _rows(out, "errors")}


@pytest.mark.beam
@pytest.mark.slow
def test_pipeline_finishes_on_the_hostile_corpus(hostile_run):
    # Two of its files cannot be read (one is not a WARC, one is empty): the other files' rows
    # are published, and the exit status says that inputs were lost (docs/usage.md, "Exit status").
    assert hostile_run["status"] == 1
    assert os.path.exists(os.path.join(hostile_run["out"], "_SUCCESS"))
    # Generous: about 30 s on one core; a hang or an unbounded case would blow it.
    assert hostile_run["elapsed"] < 240


@pytest.mark.beam
@pytest.mark.slow
def test_every_html_200_record_ends_in_exactly_one_row(hostile_run):
    def key(url):
        return normalize_url(url) or url if url is not None else None
    rows = Counter(key(r["url"]) for r in hostile_run["pages"] + hostile_run["errors"])
    expected = Counter()
    for url, n in hostile_run["corpus"].expected_rows.items():
        expected[key(url)] += n
    assert rows == expected


@pytest.mark.beam
@pytest.mark.slow
def test_each_hostile_case_ends_as_documented(hostile_run):
    corpus = hostile_run["corpus"]
    assert set(EXPECTED) == set(corpus.cases), "every generated case has a documented outcome"
    pages = {r["url_normalized"]: r for r in hostile_run["pages"]}
    errors = {r["url"]: r for r in hostile_run["errors"]}
    for case, outcome in EXPECTED.items():
        url = corpus.cases[case]
        if outcome[0] == "pages":
            row = pages.get(normalize_url(url))
            assert row is not None, f"{case}: no pages row (errors row: {errors.get(url)})"
            assert outcome[1](row), f"{case}: {dict(row, main_text=_text(row)[:200])}"
        else:
            row = errors.get(url)
            assert row is not None, f"{case}: no errors row"
            assert (row["stage"], row["error_class"]) == outcome[1:], f"{case}: {row}"
    clique = [pages[u] for u in corpus.clique]
    assert len(clique) == CLIQUE_PAGES and all(EXPECTED["clique"][1](r) for r in clique)


@pytest.mark.beam
@pytest.mark.slow
def test_file_level_failures_are_rows_without_a_url(hostile_run):
    file_errors = [r for r in hostile_run["errors"] if r["url"] is None]
    assert sorted((os.path.basename(r["warc_file"]), r["stage"], r["error_class"]) for r in file_errors) == [
        ("empty.warc.gz", "read", "EmptyFile"), ("not-a-warc.warc.gz", "read", "NotAWarc")]
    cut = [r for r in hostile_run["errors"] if r["url"] == hostile_run["corpus"].cases["cut_record"]]
    assert os.path.basename(cut[0]["warc_file"]) == "cut.warc.gz"


@pytest.mark.beam
@pytest.mark.slow
def test_costly_pages_stay_within_the_page_budget(hostile_run):
    """The 100,000-link page, the 60,000-children pages and the clique are processed, not cut
    off: their site-level CPU time is well inside the default budget."""
    budget = SiteLimits().page_budget_ms
    site_stages = ("candidates", "template", "site_conex", "menex", "page_conex")
    for row in hostile_run["pages"]:
        if row["site"] in ("links.hostile.test", "wide.hostile.test", "clique.hostile.test",
                           "deep.hostile.test", "big.hostile.test"):
            spent = sum(row["timing_ms"][s] or 0 for s in site_stages)
            assert spent < budget / 2, (row["url"], row["timing_ms"])


@pytest.mark.beam
@pytest.mark.slow
def test_ordinary_pages_are_unaffected(hostile_run, tmp_path):
    alone = write_ordinary_only(str(tmp_path / "warcs"))
    out = str(tmp_path / "out")
    assert main(["run", "--input", alone, "--output", out, "--quiet"]) == 0
    expected = {r["url"]: r for r in _rows(out, "pages")}
    got = {r["url"]: r for r in hostile_run["pages"] if r["site"] == "ordinary.test"}
    assert set(got) == set(expected) == set(hostile_run["corpus"].ordinary)
    for url, row in got.items():
        for column in ("main_text", "nontemplate_text", "candidate_method", "template_share", "menu_links"):
            assert row[column] == expected[url][column], (url, column)
        assert "report explains" in row["main_text"] and "rights reserved" not in row["main_text"]


@pytest.mark.beam
@pytest.mark.slow
def test_output_paths_come_only_from_output(hostile_run):
    """URLs and site keys like '../../etc' never become paths: the run adds files only
    as part files of the five datasets under --output, and its _SUCCESS."""
    root = hostile_run["root"]
    added = _files_under(str(root)) - hostile_run["before"]
    assert added, "the run wrote its datasets"
    assert os.path.join("out", "_SUCCESS") in added
    for path in added - {os.path.join("out", "_SUCCESS")}:
        parts = path.split(os.sep)
        assert parts[0] == "out" and parts[1] in ("pages", "menus", "errors", "sites", "links") and len(parts) == 3, path
        assert parts[2].startswith("part-") and parts[2].endswith(".parquet"), path
    assert not os.path.exists("/tmp/sitestrip-escape") and not os.path.exists("/etc/sitestrip-escape")


# ---------------------------------------------------------------- the bounds, one by one

def _record(url, html, max_nodes=None):
    return build_page_record(url=url, body=html.encode(), http_charset="utf-8", warc_file="f.warc.gz",
                             warc_offset=0, warc_record_id="", fetch_date="", content_type="text/html",
                             truncated=None, max_nodes=max_nodes)


def test_too_many_nodes_is_a_parse_error():
    html = "<html><body>" + "<p>x</p>" * 3000 + "</body></html>"
    assert _record("https://n.test/", html, max_nodes=10_000).page.size > 5000
    with pytest.raises(StageError) as failure:
        _record("https://n.test/", html, max_nodes=5000)
    assert (failure.value.stage, failure.value.error_class) == ("parse", "TooManyNodes")
    assert "read.max_nodes = 5000" in failure.value.message
    # The default cap leaves room for the hostile corpus's largest page (201,004 nodes).
    assert ReadLimits().max_nodes >= 250_000


def _site(urls_and_bodies):
    return [_record(url, body.decode()) for url, body in urls_and_bodies]


def test_a_page_over_its_time_budget_is_an_error_row_and_the_site_goes_on(monkeypatch):
    """A fake CPU clock: mapping the slow page's trees costs 'ten seconds', so the budget
    check inside the template stage stops it; the other pages of the site are rows."""
    links = ["/a", "/b", "/c"]
    records = _site([(f"https://w.test{p}", _wide_page(50, p, links)) for p in links])
    clock = [0.0]
    monkeypatch.setattr(site_step, "time", type("FakeTime", (), {"thread_time": staticmethod(lambda: clock[0])}))
    real = site_step.detect_template

    def slow_for_b(key, *args, **kwargs):
        if key.url.endswith("/b"):
            clock[0] += 10.0
        return real(key, *args, **kwargs)

    monkeypatch.setattr(site_step, "detect_template", slow_for_b)
    config = config_from_dict({"site": {"page_budget_ms": 2000}})
    rows = {row["url"]: (kind, row) for kind, row in process_site("w.test", records, config)
            if kind != "sites"}
    kind, row = rows["https://w.test/b"]
    assert kind == "errors" and (row["stage"], row["error_class"]) == ("template", "TimeBudgetExceeded")
    assert "site.page_budget_ms = 2000" in row["message"]
    assert [rows[f"https://w.test{p}"][0] for p in ("/a", "/c")] == ["pages", "pages"]


def test_budget_is_checked_when_a_stage_ends():
    config = config_from_dict({"site": {"page_budget_ms": 1e-6}})
    (kind, row), = list(process_site("one.test", _site([("https://one.test/", b"<p>Some text here.</p>")]),
                                     config))
    assert kind == "errors" and row["error_class"] == "TimeBudgetExceeded"
    assert row["stage"] in ("menex", "page_conex")


@pytest.mark.parametrize("data, message", [
    ({"site": {"page_budget_ms": 0}}, "site.page_budget_ms: must be greater than 0"),
    ({"site": {"budget": 1}}, "site.budget: unknown key"),
    ({"read": {"max_nodes": -1}}, "read.max_nodes: must be greater than 0"),
    ({"read": {"max_nodes": 1.5}}, "read.max_nodes: expected an integer"),
])
def test_budget_keys_are_validated(data, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)
    assert Config().site.page_budget_ms == 10_000 and Config().read.max_nodes == 500_000


def test_entity_bomb_does_not_expand():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.process_time()
    page = parse_page(_bomb_page().decode(), "https://bomb.test/")
    assert time.process_time() - started < 1.0
    assert len(page.text) < 200 and "lollol" not in page.text
    assert "Text beside the bomb." in page.text
    # ru_maxrss is in kB on Linux: the parse added well under 50 MB of peak memory.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000


def test_parsing_never_touches_the_network():
    """A listening local socket named by every way HTML or its DOCTYPE can point at a
    resource receives no connection while the page is decoded and parsed."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.3)
    base = "http://127.0.0.1:%d" % server.getsockname()[1]
    html = (f'<!DOCTYPE html SYSTEM "{base}/dtd" [<!ENTITY ext SYSTEM "{base}/ent">'
            f'<!ENTITY % pe SYSTEM "{base}/pe"> %pe;]>'
            f'<html xmlns:xi="http://www.w3.org/2001/XInclude"><head><link rel=stylesheet href="{base}/css">'
            f'<base href="{base}/"><script src="{base}/js"></script></head><body>&ext;'
            f'<xi:include href="{base}/xi"/><img src="{base}/img"><iframe src="{base}/frame"></iframe>'
            f'<a href="{base}/a">link</a><p>Local text.</p></body></html>')
    try:
        record = _record("https://net.test/", html)
        assert "Local text." in record.page.text
        with pytest.raises(socket.timeout):
            server.accept()
    finally:
        server.close()
