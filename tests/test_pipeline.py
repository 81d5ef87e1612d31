"""End to end through Beam: WARC files built here → pages, menus, errors."""
import gzip
import json
import os
from collections import Counter

import apache_beam as beam
import pyarrow.dataset as ds
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from configs import Config
from pipeline.cli import SAMPLE_WARC, main
from pipeline.graph import build_pipeline
from schemas import DATASETS
from warcs import HTML_UTF8, response, write_warc


def page_html(title, body, menu=("/a.html", "/b.html", "/c.html")):
    links = "".join(f"<li><a href='{href}'>{href.strip('/').split('.')[0].upper()} page</a></li>"
                    for href in menu)
    return (f"<html><head><title>{title}</title></head><body><div id=page><div id=header><ul id=menu>{links}</ul></div>"
            f"<div id=content><h1>{title}</h1><p>{body}</p><p>{body} again, with more words.</p>"
            f"<p>Third paragraph of {title}.</p></div><div id=footer>Footer text</div></div></body></html>").encode()


@pytest.fixture
def corpus(tmp_path):
    """Two sites over two files, skipped records, and broken records of every read-side kind."""
    first = write_warc(tmp_path / "one.warc.gz", [
        ("warcinfo", "one.warc.gz", b"", None, None),
        response("https://www.site-a.org/a.html", page_html("Alpha", "Alpha text")),
        response("https://site-a.org/b.html", page_html("Beta", "Beta text")),
        response("https://other.example/x.html", page_html("X", "Other site", menu=("/x.html", "/y.html"))),
        response("https://site-a.org/style.css", b"body{}", headers=[("Content-Type", "text/css")]),
        response("https://site-a.org/missing.html", b"<html>nope</html>", status="404 Not Found"),
        response("https://site-a.org/old.html", b"", status="301 Moved Permanently",
                 headers=[("Location", "https://site-a.org/a.html")]),
        # HTML 200 whose gzip Content-Encoding is corrupt → errors row, stage decode
        response("https://site-a.org/broken.html", b"<html>plain bytes, not gzip</html>",
                 headers=HTML_UTF8 + [("Content-Encoding", "gzip")]),
        # HTML 200 whose target URI is not a URL → errors row, stage read
        response("not-a-url", page_html("Bad", "Bad url")),
        # gzip-encoded, chunked HTML 200 that decodes fine
        response("https://site-a.org/c.html", _chunked(gzip.compress(page_html("Gamma", "Gamma text"))),
                 headers=HTML_UTF8 + [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")]),
    ])
    second = write_warc(tmp_path / "two.warc.gz", [
        response("https://other.example/y.html", page_html("Y", "Why text", menu=("/x.html", "/y.html"))),
        response("https://site-a.org/d.html", page_html("Delta", "Delta text")),
        response("https://site-a.org/cut.html", page_html("Cut", "This record is cut " * 50)),
    ])
    data = open(second, "rb").read()
    with open(second, "wb") as fh:         # cut the last record in the middle
        fh.write(data[: len(data) - 200])
    return tmp_path, [first, second]


def _chunked(body, size=50):
    parts = [b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size]) for i in range(0, len(body), size)]
    return b"".join(parts) + b"0\r\n\r\n"


EXPECTED_PAGES = {
    "https://www.site-a.org/a.html", "https://site-a.org/b.html", "https://site-a.org/c.html",
    "https://site-a.org/d.html", "https://other.example/x.html", "https://other.example/y.html",
}


def test_pipeline_rows_through_beam(corpus):
    tmp_path, files = corpus
    out = str(tmp_path / "out")
    with BeamTestPipeline(runner=FnApiRunner()) as p:
        pages, menus, errors = build_pipeline(p, files, out, Config())
        # Methods, by hand (SPEC §4, n = 4): the menus link /a, /b, /c of the page's own host.
        # b and c: a is not in the input (only www.site-a.org/a.html is), the other one loads,
        # a single page is no CS of 2 → linked. d: b and c load and link each other → CS of 2
        # → partial_cs. www a: its links stay on www.site-a.org, none in the input → site_sample.
        # x and y: one loadable link each → linked.
        assert_that(pages | "PageKeys" >> beam.Map(lambda r: (r["url"], r["method"])),
                    equal_to([("https://site-a.org/b.html", "linked"), ("https://site-a.org/c.html", "linked"),
                              ("https://site-a.org/d.html", "partial_cs"),
                              ("https://www.site-a.org/a.html", "site_sample"),
                              ("https://other.example/x.html", "linked"),
                              ("https://other.example/y.html", "linked")]), label="pages")
        assert_that(errors | "ErrorKeys" >> beam.Map(lambda r: (r["url"], r["stage"], r["error_class"])),
                    equal_to([("https://site-a.org/broken.html", "decode", "BadContentEncoding"),
                              ("not-a-url", "read", "BadUrl"),
                              ("https://site-a.org/cut.html", "read", "TruncatedFile")]), label="errors")
        # every site-a page carries the same three-link menu; the two other.example pages share theirs
        assert_that(menus | "MenuSummary" >> beam.Map(lambda r: (r["site"], r["pages"], r["example_url"],
                                                              len(r["menu_links"]))),
                    equal_to([("site-a.org", 4, "https://site-a.org/b.html", 3),
                              ("other.example", 2, "https://other.example/x.html", 2)]), label="menus")

    for name, schema in DATASETS.items():
        table = ds.dataset(os.path.join(out, name), format="parquet").to_table()
        assert table.schema.remove_metadata() == schema.remove_metadata(), name
    pages = ds.dataset(os.path.join(out, "pages"), format="parquet").to_table().to_pylist()
    by_url = {r["url"]: r for r in pages}
    assert set(by_url) == EXPECTED_PAGES
    gamma = by_url["https://site-a.org/c.html"]
    assert gamma["title"] == "Gamma" and "Gamma text again" in gamma["main_text"]
    assert "Footer text" not in gamma["main_text"]
    assert [m["url"] for m in gamma["menu_links"]] == [
        "https://site-a.org/a.html", "https://site-a.org/b.html", "https://site-a.org/c.html"]
    # the menu and the footer are shared with the candidate pages: template
    assert gamma["nontemplate_text"] == ("Gamma\nGamma text\nGamma text again, with more words.\n"
                                         "Third paragraph of Gamma.")
    assert sorted(gamma["candidate_urls"]) == ["https://site-a.org/b.html", "https://site-a.org/d.html",
                                               "https://www.site-a.org/a.html"]
    assert 0 < gamma["template_share"] < 1 and gamma["site"] == "site-a.org"
    assert gamma["words_page"] > gamma["words_main"] > 0
    assert gamma["timing_ms"]["parse"] >= 0 and gamma["timing_ms"]["etdm"] > 0
    assert gamma["warc_file"] == files[0] and gamma["charset"] == "utf-8"


def test_every_html_200_record_ends_in_exactly_one_row(corpus):
    """Each HTML 200 response written by the fixture, broken or not, is one pages row or one
    errors row; nothing else (CSS, 404, 301, warcinfo) leaves a row."""
    tmp_path, files = corpus
    out = str(tmp_path / "out2")
    assert main(["run", "--input", str(tmp_path), "--output", out, "--quiet"]) == 0
    pages = ds.dataset(os.path.join(out, "pages"), format="parquet").to_table().to_pylist()
    errors = ds.dataset(os.path.join(out, "errors"), format="parquet").to_table().to_pylist()
    html_200 = EXPECTED_PAGES | {"https://site-a.org/broken.html", "not-a-url", "https://site-a.org/cut.html"}
    rows = Counter([r["url"] for r in pages] + [r["url"] for r in errors])
    assert rows == Counter(html_200)


def test_cli_runs_the_embedded_sample(tmp_path, capsys):
    out = str(tmp_path / "sample-out")
    assert main(["run", "--output", out, "--quiet"]) == 0
    summary = capsys.readouterr().out
    manifest = json.load(open(os.path.join(os.path.dirname(SAMPLE_WARC), "manifest.json")))
    html_pages = {e["url"] for e in manifest["urls"] if e["kind"] == "html_page"}
    pages = ds.dataset(os.path.join(out, "pages"), format="parquet").to_table().to_pylist()
    assert sorted(r["url"] for r in pages) == sorted(html_pages)
    assert f"pages: {len(html_pages)} " in summary
    assert "skipped: non_200 1, non_html 3, redirect 1" in summary
    menus = ds.dataset(os.path.join(out, "menus"), format="parquet").to_table().to_pylist()
    sqlite_menus = [m for m in menus if m["site"] == "sqlite.org"]
    # the SQLite site has one menu on most pages
    assert max(m["pages"] for m in sqlite_menus) > 20

    # a second run into the same output replaces, never mixes, the part files
    assert main(["run", "--output", out, "--quiet"]) == 0
    again = ds.dataset(os.path.join(out, "pages"), format="parquet").to_table()
    assert again.num_rows == len(html_pages)


def test_cli_rejects_bad_config_naming_the_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("menex:\n  w_amplitud: 0.3\n")
    assert main(["run", "--config", str(bad), "--output", str(tmp_path / "o")]) == 2
    assert "menex.w_amplitud: unknown key" in capsys.readouterr().err


def test_cli_rejects_missing_input(tmp_path, capsys):
    assert main(["run", "--input", str(tmp_path / "nothing-*.warc.gz"), "--output", str(tmp_path / "o")]) == 2
    assert "nothing-" in capsys.readouterr().err
