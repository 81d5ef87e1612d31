"""End to end through Beam: WARC files built here → pages, menus, errors."""
import gzip
import glob
import json
import os
from collections import Counter

import apache_beam as beam
import pyarrow.dataset as ds
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from sitestrip.configs import Config, config_from_dict
from sitestrip.pipeline.cli import SAMPLE_WARC, main
from sitestrip.pipeline.graph import build_pipeline
from sitestrip.schemas import DATASETS
from helpers.warcs import HTML_UTF8, flip_bytes, gzip_members, plain_records, raw_record, response, write_warc


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


@pytest.mark.beam
@pytest.mark.slow
def test_pipeline_rows_through_beam(corpus):
    tmp_path, files = corpus
    out = str(tmp_path / "out")
    with BeamTestPipeline(runner=FnApiRunner()) as p:
        pages, menus, errors = build_pipeline(p, files, out, Config())
        # Methods, by hand (design §4, n = 4): the menus link /a, /b, /c of the page's own host.
        # b and c: a is not in the input (only www.site-a.org/a.html is), the other one loads,
        # a single page is no CS of 2 → linked. d: b and c load and link each other → CS of 2
        # → partial_cs. www a: its links stay on www.site-a.org, none in the input → site_sample.
        # x and y: one loadable link each → linked.
        assert_that(pages | "PageKeys" >> beam.Map(lambda r: (r["url"], r["candidate_method"])),
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
        if name == "links":             # output.links is off in Config(): no links/
            assert not os.path.exists(os.path.join(out, name))
            continue
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


@pytest.mark.beam
@pytest.mark.slow
def test_links_and_their_targets_in_input_through_beam(corpus):
    """The links dataset through Beam (the target join, pipeline/graph.py): every pages row's
    menu links, each marked whether its target has a pages row in the run. By hand: the site-a
    pages link /a.html, /b.html, /c.html of their own host: site-a.org/a.html is not in the
    input (www.site-a.org/a.html is), b and c are; the www page's links stay on www.site-a.org,
    where only a.html (itself) is in the input. The other.example pages link x and y, both in
    the input. All are in their page's site (www. is the same site) and in its menu (MenEx's
    menu: a ul#menu, no main content or template around it). Broken records (errors rows) are
    no targets. A page's links lie in one part file, in position order."""
    tmp_path, files = corpus
    out = str(tmp_path / "links-out")
    with BeamTestPipeline(runner=FnApiRunner()) as p:
        build_pipeline(p, files, out, config_from_dict({"output": {"links": True}}))
    parts = sorted(glob.glob(os.path.join(out, "links", "*.parquet")))
    assert len(parts) == 2
    table = ds.dataset(os.path.join(out, "links"), format="parquet").to_table()
    assert table.schema.remove_metadata() == DATASETS["links"].remove_metadata()
    rows = []
    for part in parts:
        got = ds.dataset(part, format="parquet").to_table().to_pylist()
        assert [(r["source_url"], r["warc_file"], r["warc_offset"], r["position"]) for r in got] == sorted(
            (r["source_url"], r["warc_file"], r["warc_offset"], r["position"]) for r in got)
        rows += [dict(r, part=part) for r in got]
    found = {(r["source_url"], r["target_url"].rsplit("/", 1)[-1]): r["target_in_input"] for r in rows}
    site_a = {"a.html": False, "b.html": True, "c.html": True}
    expected = {**{(f"https://site-a.org/{p}.html", t): v for p in "bcd" for t, v in site_a.items()},
                **{("https://www.site-a.org/a.html", t): t == "a.html" for t in site_a},
                **{(f"https://other.example/{p}.html", t): True for p in "xy" for t in ("x.html", "y.html")}}
    assert found == expected and len(rows) == 16
    assert {(r["region"], r["in_site"], r["fragment"], r["rel_nofollow"]) for r in rows} == {("menu", True, None, False)}
    assert {r["anchor_text"] for r in rows} == {"A page", "B page", "C page", "X page", "Y page"}
    assert all(len({r["part"] for r in rows if r["source_url"] == u}) == 1 for u in {r["source_url"] for r in rows})


@pytest.mark.beam
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


@pytest.mark.beam
@pytest.mark.slow
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
    # design §12: the Sphinx site's menu is one block (its related bar, whose previous/next links
    # change from page to page), so one menus row carries all of its pages
    click = [r for r in pages if r["site"] == "click.palletsprojects.com"]
    click_menus = [m for m in menus if m["site"] == "click.palletsprojects.com"]
    assert len(click_menus) == 1 and click_menus[0]["pages"] == len(click)
    # design §11: every page names its template cluster, and the sites rows account for every page
    sites = ds.dataset(os.path.join(out, "sites"), format="parquet").to_table().to_pylist()
    assert {r["template_cluster"] for r in pages} == {s["template_cluster"] for s in sites}
    assert sum(s["pages"] for s in sites) == len(html_pages)

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


@pytest.mark.beam
def test_damaged_files_and_partial_pages_through_the_pipeline(tmp_path):
    """End to end through Beam, files built here:

    - site.warc.gz: five pages of one site, a gzip member each, 8 bytes flipped in the middle
      of member 2: page 2 is one errors row (read, BadGzipMember, its member's offset, its
      URL from the header block that inflates before the damage); pages 0, 1, 3 and 4 are
      pages rows at their own offsets (the resync went on at member 3).
    - plain.warc: three pages of another site, the middle one with WARC Content-Length "²":
      one errors row at its offset, without a URL (its header block is unusable), and
      the two others.
    - odd.warc.gz: a page whose chunked body stops inside a chunk (partial), a page that
      is an unclosed comment (parse_failed), a page the crawler cut (WARC-Truncated:
      partial), and a page whose target URI is not normalized: `url` keeps it as written.
    """
    site = [raw_record(f"https://site-a.org/p{i}.html", page_html(f"P{i}", f"Text {i} " * 200,
                                                                  menu=[f"/p{k}.html" for k in range(5)]))
            for i in range(5)]
    data, site_offsets = gzip_members(site)
    (tmp_path / "site.warc.gz").write_bytes(flip_bytes(data, (site_offsets[2] + site_offsets[3]) // 2))
    plain = [raw_record(f"https://site-b.org/q{i}.html", page_html(f"Q{i}", f"Plain {i}"),
                        content_length="\u00b2" if i == 1 else None) for i in range(3)]
    data, plain_offsets = plain_records(plain)
    (tmp_path / "plain.warc").write_bytes(data)
    body = page_html("Cut", "Chunked text that stops early")
    cut_chunked = b"%x\r\n%s\r\n%x\r\n%s" % (100, body[:100], len(body) - 100, body[100:150])
    odd = [
        raw_record("https://site-c.org/chunked.html", cut_chunked,
                   http=b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"),
        raw_record("https://site-c.org/comment.html", b"<!-- never closed <p>Hidden text</p>"),
        raw_record("https://site-c.org/truncated.html", page_html("T", "Cut by the crawler"),
                   fields=b"WARC-Truncated: length\r\n"),
        raw_record("HTTP://Site-D.example:80/a/./b.html", page_html("D", "Raw target URI")),
    ]
    data, _ = gzip_members(odd)
    (tmp_path / "odd.warc.gz").write_bytes(data)
    out = str(tmp_path / "out")
    assert main(["run", "--input", str(tmp_path), "--output", out, "--quiet"]) == 0
    pages = {r["url"]: r for r in ds.dataset(os.path.join(out, "pages"), format="parquet").to_table().to_pylist()}
    errors = ds.dataset(os.path.join(out, "errors"), format="parquet").to_table().to_pylist()

    assert sorted((os.path.basename(e["warc_file"]), e["url"], e["warc_offset"], e["stage"], e["error_class"])
                  for e in errors) == [
        ("plain.warc", None, plain_offsets[1], "read", "BadWarcRecord"),
        ("site.warc.gz", "https://site-a.org/p2.html", site_offsets[2], "read", "BadGzipMember")]
    for i in (0, 1, 3, 4):
        row = pages[f"https://site-a.org/p{i}.html"]
        assert row["warc_offset"] == site_offsets[i] and f"Text {i}" in row["main_text"]
    assert {u for u in pages if "site-b" in u} == {"https://site-b.org/q0.html", "https://site-b.org/q2.html"}
    assert pages["https://site-b.org/q2.html"]["warc_offset"] == plain_offsets[2]

    chunked = pages["https://site-c.org/chunked.html"]
    assert chunked["status"] == "partial"
    # The page's only text is cut short: the learned model keeps none of it as main content.
    assert chunked["notes"] == ["payload cut: chunked body ends inside a chunk",
                                "no main content: no block classified as main content"]
    comment = pages["https://site-c.org/comment.html"]
    assert (comment["status"], comment["words_page"], comment["main_text"]) == ("parse_failed", 0, "")
    # 36 characters of HTML; the site-level note that follows says the same page has no main content
    assert comment["notes"][0] == "parse failed: lxml built no tree from 36 characters"
    truncated = pages["https://site-c.org/truncated.html"]
    assert (truncated["status"], truncated["truncated"], truncated["notes"]) == (
        "partial", "length", ["WARC-Truncated: length"])
    raw = pages["HTTP://Site-D.example:80/a/./b.html"]
    assert (raw["url_normalized"], raw["site"], raw["status"]) == ("http://site-d.example/a/b.html",
                                                                   "site-d.example", "ok")


@pytest.mark.beam
@pytest.mark.slow
def test_shipped_block_model_through_the_pipeline(tmp_path):
    """The default preset runs the shipped learned model (design §10) end to end on the embedded sample.

    The pages files name the model that made them. Click's arguments page is 2% template: site
    ConEx kept one section of it (286 of ~1,300 words); the block model keeps its sections, and
    the SQLite index keeps its first sentence whole although its inline links ("small", "fast")
    repeat on other pages.
    """
    import pyarrow.parquet as pq

    from sitestrip.transforms.classify import SHIPPED_MODELS
    from sitestrip.transforms.features import FEATURE_SET_VERSION
    from sitestrip.transforms.model import load_model
    out = str(tmp_path / "learned-out")
    assert main(["run", "--output", out, "--quiet"]) == 0
    shipped = load_model(SHIPPED_MODELS["learned"])
    for part in glob.glob(os.path.join(out, "pages", "*.parquet")):
        meta = pq.read_schema(part).metadata
        assert meta[b"sitestrip.main_content.method"] == b"learned"
        assert meta[b"sitestrip.model_id"].decode() == shipped.model_id
        assert meta[b"sitestrip.feature_set"].decode() == FEATURE_SET_VERSION
    pages = {r["url"]: r for r in ds.dataset(os.path.join(out, "pages"), format="parquet").to_table().to_pylist()}
    click = pages["https://click.palletsprojects.com/en/8.1.x/arguments.html"]
    assert click["words_main"] > 0.8 * click["words_page"]
    assert "Basic Arguments" in click["main_text"] and "Environment Variables" in click["main_text"]
    sqlite = pages["https://www.sqlite.org/index.html"]
    first = [line for line in sqlite["main_text"].splitlines() if line.startswith("SQLite is a C-language")]
    assert first and first[0].startswith("SQLite is a C-language library that implements a small, fast, "
                                         "self-contained")
    assert all(r["timing_ms"]["classify"] is not None for r in pages.values())


def _docs_page(name):
    """A page of a four-page documentation site (every page links the other three): a shared
    menu and footer, a sentence with shared inline links, a sentence of its own with a comma
    right after a link, and a code block."""
    menu = "".join(f"<li><a href='/{n}.html'>{n.title()}</a></li>" for n in ("alpha", "beta", "gamma", "delta"))
    return (f"<html><head><title>{name.title()}</title></head><body><ul id=menu>{menu}</ul>"
            f"<div id=content><h1>{name.title()} module</h1>"
            f"<p>The {name} module is <a href='/small.html'>small</a>, <a href='/fast.html'>fast</a>, and tested.</p>"
            f"<p>{name.title()} reads <a href='/{name}-files.html'>{name} files</a>, {name} logs, and exits {name}.</p>"
            f"<pre>\nimport {name}\n\nif ready:\n    {name}.run()\n</pre></div>"
            f"<p id=footer>Copyright 2024 Docs Example</p></body></html>").encode()


@pytest.mark.beam
def test_text_as_a_browser_shows_it_through_beam(tmp_path):
    """Rows through Beam keep the text's own spacing (transforms/text.py) and judge template
    text by block line (template.block_granularity).

    By hand, for alpha.html: the menu, the footer, and in the first sentence the links
    "small", "fast" and the texts ", " and ", and tested." are the same on every page and map
    (TemEx); the title, "The alpha module is", the second sentence and the code are alpha's
    own. nontemplate_text: the h1, the first sentence whole (its line has text of its own),
    the second sentence, the code verbatim (the newline after <pre> and the one before </pre>
    dropped), one line per block. "files</a>, alpha" has no whitespace before the comma, so
    none is written. main_text (Config(): site ConEx, which judges nodes, design §7): the h1,
    the second sentence and the code have no leaf mapped and are main content; of the first
    sentence only its own text "The alpha module is" is (its links map). Same spacing."""
    path = write_warc(tmp_path / "docs.warc.gz",
                      [response(f"https://docs.example/{n}.html", _docs_page(n)) for n in ("alpha", "beta", "gamma", "delta")])
    out = str(tmp_path / "out")
    with BeamTestPipeline(runner=FnApiRunner()) as p:
        build_pipeline(p, [path], out, Config())
    rows = {r["url"]: r for r in ds.dataset(os.path.join(out, "pages"), format="parquet").to_table().to_pylist()}
    alpha = rows["https://docs.example/alpha.html"]
    code = "import alpha\n\nif ready:\n    alpha.run()"
    assert alpha["nontemplate_text"] == ("Alpha module\nThe alpha module is small, fast, and tested.\n"
                                         f"Alpha reads alpha files, alpha logs, and exits alpha.\n{code}")
    assert alpha["main_text"] == ("Alpha module\nThe alpha module is\n"
                                  f"Alpha reads alpha files, alpha logs, and exits alpha.\n{code}")
    assert all(" ," not in r["main_text"] and " ," not in r["nontemplate_text"] for r in rows.values())
