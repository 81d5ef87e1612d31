"""The output columns for indexers and corpus builders (transforms/output.py): the `output`
config section, and main_markdown, language and the declared metadata end to end through
Beam on a WARC built here."""
import dataclasses
import os
import re

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline

from sitestrip.configs import Config, ConfigError, config_from_dict, load_config
from sitestrip.pipeline.graph import build_pipeline
from sitestrip.schemas import SCHEMA_VERSION
from sitestrip.transforms.site_step import build_page_record, process_site
from sitestrip_bench.output_columns import rendered_words
from sitestrip.transforms.output import OutputParams
from sitestrip.transforms.tokens import words
from helpers.warcs import response, write_warc

MENU = "".join(f"<li><a href='/{n}.html'>{n.title()} page</a></li>" for n in ("one", "two", "three"))
HEAD = {
    "one": ('<link rel="canonical" href="https://docs.example/one.html">'
            '<meta name="description" content="The first page.">'
            '<meta property="article:published_time" content="2024-05-06T07:08:09Z">'
            '<script type="application/ld+json">{"@type": "Article", "author": {"name": "Ada L"}}</script>'),
    "two": '<meta property="og:description" content="Zweite Seite.">',
    "three": '<meta name="date" content="broken">',
}
BODY = {
    "one": ("<h1>Installing the tool</h1><p>The tool installs with <code>pip</code>; read "
            "<a href='/two.html'>the second page</a> for the <em>details</em> and the options.</p>"
            "<ol><li>Download the archive from the site</li><li>Unpack the archive in a folder"
            "<ul><li>on Linux use tar</li><li>on Windows use the explorer</li></ul></li></ol>"
            "<table><tr><th>Option</th><th>Meaning</th></tr><tr><td>-a|-b</td><td>all or brief output</td></tr>"
            "</table><pre class='language-sh'>make install\n    make test</pre>"
            "<p>After the installation the tool is ready for everyday work on your computer.</p>"),
    "two": ("<h1>Die Einzelheiten</h1><p>Das Werkzeug liest jede Datei einzeln und schreibt das Ergebnis "
            "in einen neuen Ordner, den man vorher angeben muss.</p><p>Die Optionen stehen in der "
            "Tabelle auf der ersten Seite, zusammen mit ihrer Bedeutung.</p>"),
    "three": ("<h1>Questions</h1><p>Ask your questions in the forum of the project, where the people who "
              "wrote the tool answer them.</p><blockquote><p>It just works.</p></blockquote>"),
}


def page_bytes(name: str) -> bytes:
    lang = ' lang="de"' if name == "two" else ' lang="en"'
    return (f"<html{lang}><head><title>{name}</title>{HEAD[name]}</head><body><div id=page>"
            f"<ul id=menu>{MENU}</ul><div id=content>{BODY[name]}</div>"
            f"<div id=footer>Copyright the docs team</div></div></body></html>").encode()


def test_output_section_defaults_and_validation():
    # the links dataset is on in both presets, off in the code's defaults (transforms/output.py)
    assert load_config().output == dataclasses.replace(OutputParams(), links=True) \
        == dataclasses.replace(Config().output, links=True)
    assert load_config("published").output == dataclasses.replace(OutputParams(), links=True)
    cfg = config_from_dict({"output": {"markdown_links": "drop", "language": False, "language_chars": 200}})
    assert (cfg.output.markdown_links, cfg.output.language, cfg.output.language_chars) == ("drop", False, 200)
    for bad, message in [({"markdown_links": "maybe"}, "output.markdown_links: must be keep or drop"),
                         ({"markdown_images": True}, "output.markdown_images: expected a string"),
                         ({"language_chars": 5}, "output.language_chars: must be 20 or more"),
                         ({"markdown": "yes"}, "output.markdown: expected true or false"),
                         ({"html": True}, "output.html: unknown key")]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            config_from_dict({"output": bad})


def _rows(config: Config) -> dict:
    records = [build_page_record(url=f"https://docs.example/{name}.html", body=page_bytes(name),
                                 http_charset="utf-8", warc_file="docs.warc.gz", warc_offset=i,
                                 warc_record_id=f"<urn:{name}>", fetch_date="2024-06-01T00:00:00Z",
                                 content_type="text/html", truncated=None, rules=config.read.parse_rules())
               for i, name in enumerate(BODY)]
    return {row["url"].rsplit("/", 1)[1][:-5]: row for kind, row in process_site("docs.example", records, config)
            if kind == "pages"}


def test_switches_change_only_their_columns():
    """links dropped: no link targets, the same words; markdown and language off: null columns,
    main_text unchanged."""
    on = _rows(load_config())
    off = _rows(dataclasses.replace(load_config(), output=OutputParams(
        markdown_links="drop", markdown_images="drop", language=False)))
    none = _rows(dataclasses.replace(load_config(), output=OutputParams(markdown=False)))
    for name in BODY:
        assert off[name]["main_text"] == on[name]["main_text"] == none[name]["main_text"]
        assert "](" not in off[name]["main_markdown"]
        assert rendered_words(off[name]["main_markdown"]) == rendered_words(on[name]["main_markdown"])
        assert off[name]["language"] is None and off[name]["language_score"] is None
        assert none[name]["main_markdown"] is None and none[name]["language"] == on[name]["language"]
    assert "[the second page](https://docs.example/two.html)" in on["one"]["main_markdown"]


@pytest.mark.beam
def test_markdown_language_and_metadata_through_beam(tmp_path):
    """Three pages of one site (a menu and a footer they share: template) through the Beam
    pipeline. Every row's main_markdown has main_text's words in order; page one's Markdown has
    its structure; page two is German (its <html lang> says so too); the metadata columns are
    what the heads declare (page three's date is no date: null); the Parquet files carry schema
    version 6; the timings name the two new stages."""
    warc = write_warc(tmp_path / "docs.warc.gz",
                      [response(f"https://docs.example/{name}.html", page_bytes(name)) for name in BODY])
    out = str(tmp_path / "out")
    with BeamTestPipeline(runner=FnApiRunner()) as p:
        build_pipeline(p, [warc], out, Config())
    for part in os.listdir(os.path.join(out, "pages")):
        meta = pq.read_schema(os.path.join(out, "pages", part)).metadata
        assert meta[b"sitestrip.schema_version"] == SCHEMA_VERSION.encode() == b"7"
    rows = {r["url"].rsplit("/", 1)[1][:-5]: r
            for r in ds.dataset(os.path.join(out, "pages"), format="parquet").to_table().to_pylist()}
    assert set(rows) == set(BODY)
    for name, row in rows.items():
        assert row["main_text"], name
        assert rendered_words(row["main_markdown"]) == words(row["main_text"]), name
        assert row["timing_ms"]["markdown"] is not None and row["timing_ms"]["language"] is not None
        assert "Copyright" not in row["main_markdown"]
    one = rows["one"]["main_markdown"]
    for part in ("# Installing the tool", "`pip`", "*details*", "1. Download the archive from the site",
                 "   - on Linux use tar", "| -a\\|-b | all or brief output |", "```sh\nmake install\n    make test\n```"):
        assert part in one, part
    assert [(r["language"], r["html_lang"]) for r in (rows["one"], rows["two"], rows["three"])] == \
        [("en", "en"), ("de", "de"), ("en", "en")]
    assert all(0.5 < rows[n]["language_score"] <= 1 for n in rows)
    assert {k: rows["one"][k] for k in ("canonical_url", "description", "published_date", "author")} == {
        "canonical_url": "https://docs.example/one.html", "description": "The first page.",
        "published_date": "2024-05-06T07:08:09+00:00", "author": "Ada L"}
    assert (rows["two"]["description"], rows["two"]["canonical_url"]) == ("Zweite Seite.", None)
    assert rows["three"]["published_date"] is None and rows["three"]["author"] is None
