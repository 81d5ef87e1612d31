"""`sitestrip report` on a small run: numbers from the Parquet, charts, the Markdown twin."""
import re
import shutil

import pyarrow.parquet as pq
import pytest
from lxml import etree

from sitestrip.pipeline.cli import main
from sitestrip.pipeline.run_report import hbar_svg, histogram_svg, summarize
from sitestrip.schemas import SCHEMA_VERSION
from helpers.warcs import HTML_UTF8, response, write_warc


def page_html(site, name, pages, body):
    menu = "".join(f"<li><a href='/{p}.html'>{p.upper()} page</a></li>" for p in pages)
    return (f"<html><head><title>{name}</title></head><body><div id=header><ul id=menu>{menu}</ul></div>"
            f"<div id=content><h1>{name}</h1><p>{body}</p><p>{body} again, with more words.</p></div>"
            f"<div id=footer>Footer of {site}</div></body></html>").encode()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """Site big.example: 5 pages linking each other (cs under the tuned template_n = 2); small.example: 2 pages; one page alone
    (page_only); an HTML record with a broken gzip body (errors: decode) and one with a bad URL
    (errors: read)."""
    tmp = tmp_path_factory.mktemp("report")
    big = ("a", "b", "c", "d", "e")
    records = [response(f"https://big.example/{p}.html", page_html("big", p, big, f"Text of {p} " * 5))
               for p in big]
    records += [response(f"https://small.example/{p}.html", page_html("small", p, ("x", "y"), f"Small {p}"))
                for p in ("x", "y")]
    records.append(response("https://alone.example/", page_html("alone", "alone", ("q", "r"), "Alone")))
    records.append(response("https://big.example/broken.html", b"<html>not gzip</html>",
                            headers=HTML_UTF8 + [("Content-Encoding", "gzip")]))
    records.append(response("not-a-url", page_html("bad", "bad", (), "Bad")))
    warc = write_warc(tmp / "run.warc.gz", records)
    out = tmp / "out"
    assert main(["run", "--input", warc, "--output", str(out), "--quiet"]) == 0
    return out


@pytest.mark.beam
def test_summary_numbers(run_dir):
    s = summarize(str(run_dir))
    assert s["pages"] == 8 and s["sites"] == 3 and s["errors"] == 2
    methods = dict(s["candidate_methods"])
    # Main content by the learned block model: provenance is the TemEx search (tuned template_n 2),
    # and big.example's pages each link the 4 others, so a 2-CS is found.
    assert methods["cs"] == 5 and methods["page_only"] == 1
    assert sum(methods.values()) == 8
    assert [m for m, _ in s["candidate_methods"]][:5] == ["cs", "partial_cs", "linked", "cluster", "site_sample"]
    assert s["share"]["pages"] == 7 and s["share"]["without"] == 1
    assert sum(s["share"]["hist"]) == 7
    assert dict(s["errors_by_stage"]) == {"decode": 1, "read": 1}
    classes = {(e["stage"], e["error_class"]): e for e in s["error_classes"]}
    assert classes[("decode", "BadContentEncoding")]["example_url"] == "https://big.example/broken.html"
    assert classes[("read", "BadUrl")]["count"] == 1
    top = s["largest_sites"][0]
    assert top["site"] == "big.example" and top["pages"] == 5 and top["candidate_methods"] == {"cs": 5}
    assert [r["site"] for r in s["largest_sites"]] == ["big.example", "small.example", "alone.example"]
    menus = {r["site"]: r for r in s["menus_per_site"]}
    assert menus["big.example"]["pages"] == 5 and menus["big.example"]["menus"] >= 1
    assert sum(c for _, c in s["menus_histogram"]) == 3
    assert s["schema_version"] == SCHEMA_VERSION
    assert {t["stage"] for t in s["timing"]} >= {"parse", "total"}


@pytest.mark.beam
def test_output_of_schema_6_reads_its_method_column_as_candidate_method(run_dir, tmp_path):
    """Schema 6 named pages' `candidate_method` `method`: the report of such a run counts the
    same candidate methods as of the run itself, not a column of nulls."""
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    for path in (old / "pages").glob("*.parquet"):
        table = pq.read_table(path)
        names = ["method" if n == "candidate_method" else n for n in table.column_names]
        meta = {**table.schema.metadata, b"sitestrip.schema_version": b"6"}
        pq.write_table(table.rename_columns(names).replace_schema_metadata(meta), path)
    then, now = summarize(str(old)), summarize(str(run_dir))
    assert then["schema_version"] == "6"
    assert then["candidate_methods"] == now["candidate_methods"]
    assert dict(then["candidate_methods"])["cs"] == 5
    assert then["largest_sites"][0]["candidate_methods"] == {"cs": 5}


@pytest.mark.beam
def test_report_command_writes_html_with_charts_and_a_markdown_twin(run_dir, capsys):
    assert main(["report", "--output", str(run_dir)]) == 0
    assert "8 pages, 3 sites, 2 errors" in capsys.readouterr().out
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    tree = etree.fromstring(html.encode(), etree.HTMLParser())
    # self-contained: no scripts, no external resources
    assert tree.find(".//script") is None and tree.find(".//link") is None
    assert not re.search(r"""(src|href)=["']?https?:""", html)
    svgs = tree.findall(".//svg")
    titles = [svg.findtext("title") for svg in svgs]
    assert titles == ["pages by candidate method", "pages by template share", "errors by stage",
                      "largest sites by pages, by candidate method", "sites by number of distinct menus"]
    # the candidate method chart has one bar per candidate method with its count
    bars = {r.findtext("title") for r in svgs[0].iter("rect")}
    assert "cs: 5" in bars and "page_only: 1" in bars
    for heading in ("Candidate methods", "Template share", "Errors by stage and class", "Largest sites", "Menus per site"):
        assert heading in html and f"## {heading}" in md
    assert "| cs | 5 | 62.5% |" in md
    assert "| decode | BadContentEncoding | 1 | 1 | https://big.example/broken.html |" in md
    assert "| big.example | 5 | cs 5 |" in md


@pytest.mark.beam
def test_report_out_path_and_bad_run_dir(run_dir, tmp_path, capsys):
    out = tmp_path / "reports" / "run-1.html"
    assert main(["report", "--output", str(run_dir), "--out", str(out)]) == 0
    assert out.exists() and (tmp_path / "reports" / "run-1.md").exists()
    assert main(["report", "--output", str(tmp_path / "nothing")]) == 2
    assert "no pages/ dataset" in capsys.readouterr().err


def test_charts_escape_labels_and_handle_empty_data():
    svg = hbar_svg([("<script>x</script>", 3), ("b&c", 1)], "t<")
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "b&amp;c" in svg
    etree.fromstring(svg.encode())                       # well-formed XML
    assert "nothing to show" in histogram_svg([0, 0], ["a", "b"], "empty")
    assert "nothing to show" in hbar_svg([], "none")


@pytest.mark.beam
def test_an_output_without_success_is_refused_or_reported_with_a_warning(run_dir, tmp_path, capsys):
    """A run stopped before publishing (or a watch job's output) has no _SUCCESS: its files may
    be part of a run, so the report refuses them unless asked, and then says so at its top."""
    import shutil
    partial = tmp_path / "partial"
    shutil.copytree(run_dir, partial)
    (partial / "_SUCCESS").unlink()
    for name in ("report.html", "report.md"):
        if (partial / name).exists():
            (partial / name).unlink()
    capsys.readouterr()
    assert main(["report", "--output", str(partial)]) == 2
    err = capsys.readouterr().err
    assert "has no _SUCCESS" in err and "--allow-incomplete" in err and len(err.strip().splitlines()) == 1
    assert not (partial / "report.html").exists()
    assert main(["report", "--output", str(partial), "--allow-incomplete"]) == 0
    assert "WARNING" in capsys.readouterr().err
    assert "Warning:" in (partial / "report.html").read_text() and "Warning:" in (partial / "report.md").read_text()


@pytest.mark.beam
def test_an_output_whose_files_differ_from_its_success_is_refused(run_dir, tmp_path, capsys):
    """_SUCCESS names every file with its rows: a part file missing (a copy cut short) is
    refused as incomplete."""
    import shutil
    partial = tmp_path / "partial"
    shutil.copytree(run_dir, partial)
    next((partial / "pages").glob("part-*.parquet")).unlink()
    capsys.readouterr()
    assert main(["report", "--output", str(partial), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "are not those its _SUCCESS lists (missing pages/part-" in err
