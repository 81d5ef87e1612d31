"""configs/published.yaml runs the published algorithm: on a hand-built site, the thesis's
behaviour where the product's defaults differ (design §1 drops <noscript>; design §5.5 groups a node's
children on its own), and the same site under the defaults for contrast."""
import dataclasses
import os

import pyarrow.dataset as ds
import pytest

from sitestrip.configs import load_config
from sitestrip.pipeline.cli import main
from sitestrip.transforms.site_step import build_page_record, process_site
from helpers.warcs import response, write_warc

ARTICLES = {"a": "Apples grow on trees.", "b": "Bananas are yellow fruit.",
            "c": "Cherries are small and red.", "d": "Dates grow in the desert."}
ITEMS = [f"<div>item {k}</div>" for k in range(201)]


def shop_page(name):
    """Page a lists 201 items straight under div#list; b, c and d hold the same items in three
    wrapper divs of 100, 100 and 1. Every page has its own article and its own <noscript> note."""
    if name == "a":
        items = "".join(ITEMS)
    else:
        items = "".join(f"<div>{''.join(ITEMS[lo:lo + 100])}</div>" for lo in (0, 100, 200))
    return (f"<html><head><title>Shop {name}</title></head><body><div id=list>{items}</div>"
            f"<div id=content><p>{ARTICLES[name]}</p>"
            f"<noscript><p>Comments on {name} need JavaScript</p></noscript></div></body></html>")


def rows_of(config):
    records = [build_page_record(url=f"https://shop.example/{name}.html", body=shop_page(name).encode(),
                                 http_charset="utf-8", warc_file="shop.warc.gz", warc_offset=i,
                                 warc_record_id=f"<urn:{name}>", fetch_date="2024-01-01T00:00:00Z",
                                 content_type="text/html", truncated=None, rules=config.read.parse_rules())
               for i, name in enumerate(ARTICLES)]
    rows = {}
    for kind, row in process_site("shop.example", records, config):
        if kind in ("sites", "links"):          # links: output.links, on in both presets
            continue
        assert kind == "pages", row
        rows[row["url"].rsplit("/", 1)[1][0]] = row
    return rows


def test_published_preset_behaves_as_the_thesis():
    """The pages do not link to each other, so page a's TemEx candidates are b, c, d
    (site_sample, n = 3, v = 2).

    Published: <noscript> is dropped (design §1), so a has 201 × 2 item words + 4 article words =
    406 words. a's div#list has 201 > 200 children, so they are grouped under three temporary
    divs of 100, 100 and 1 (design §5.5, a alone: b's div#list has 3 children). The temporary divs and
    b's wrappers (no classes or attributes on either side, 100/100/1 children, position 1 on the
    diagonal) are certain matches, and below them every item div and its text maps onto b's same
    item: all 201 item texts are in 3 candidates, template. What is left is the article.

    Grouping by pairs instead (the product's rule; 201 × 3 pairs ≤ 200²): a's item divs are
    compared with b's three wrappers directly; items 0, 1, 2 pair with them (certain, 1 child
    against 100) and no item text ever meets a text, so every item stays non-template."""
    published = load_config("published")
    row = rows_of(published)["a"]
    assert row["candidate_method"] == "site_sample" and row["words_page"] == 406
    assert row["nontemplate_text"] == "Apples grow on trees."
    assert "JavaScript" not in row["main_text"]

    by_pairs = dataclasses.replace(published,
                                   template_etdm=dataclasses.replace(published.template_etdm, grouping="pair"))
    paired = rows_of(by_pairs)["a"]
    assert paired["nontemplate_text"].split("\n") == [f"item {k}" for k in range(201)] + [
        "Apples grow on trees."]


def test_default_preset_keeps_noscript_text():
    """The defaults keep <noscript> content (page-wcxb's Discourse forums): a's note is 5 more
    words and, differing from page to page, it is not template."""
    row = rows_of(load_config())["a"]
    assert row["words_page"] == 411
    assert "Comments on a need JavaScript" in row["nontemplate_text"]


@pytest.mark.beam
@pytest.mark.slow
def test_a_published_run_drops_noscript_when_reading(tmp_path):
    """Through the pipeline: `--config published` reaches the read stage (the compact page is
    built there). The site's pages are the four shop pages; a's note is in no output."""
    warc = write_warc(tmp_path / "shop.warc.gz", [
        response(f"https://shop.example/{name}.html", shop_page(name).encode()) for name in ARTICLES])
    for config, expected in (("published", 406), ("default", 411)):
        out = str(tmp_path / config)
        assert main(["run", "--input", warc, "--output", out, "--config", config, "--quiet"]) == 0
        pages = ds.dataset(os.path.join(out, "pages"), format="parquet").to_table().to_pylist()
        row = next(r for r in pages if r["url"] == "https://shop.example/a.html")
        assert row["words_page"] == expected, config
