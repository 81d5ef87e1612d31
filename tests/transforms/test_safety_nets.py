"""The safety nets around the main-content model (docs/algorithms.md "Safety nets") on the
hand-built fruit site: near-duplicate candidates, judging a page without its site, and the
page type column, through the per-site step with the shipped model."""
import dataclasses

import numpy as np

from sitestrip.configs import load_config
from sitestrip.transforms.site_step import PageRecord, SiteBlocks, process_site
from sitestrip.transforms.page import parse_page
from helpers.fruit import ARTICLES, PAGES

SITE = "fruit.example"


def html(name, extra=""):
    title, first, second = ARTICLES[name]
    menu = "".join(f"<li><a href='/{p}.html'>{p.upper()}</a></li>" for p in PAGES + ("a2",))
    return (f"<html><head><title>{title}</title></head><body>"
            f"<div id=header><h1>Fruit Site</h1><ul id=menu>{menu}</ul></div>"
            f"<div id=content><h2>{title}</h2><p>{first}</p><p>{second}</p>{extra}</div>"
            f"<div id=footer><p>Copyright 2024 Fruit Site</p></div></body></html>")


def record(url_name, body, offset):
    url = f"https://{SITE}/{url_name}.html"
    return PageRecord(url=url, site=SITE, warc_file="f.warc.gz", warc_offset=offset,
                      warc_record_id=f"<urn:{url_name}>", fetch_date="2024-01-01T00:00:00Z",
                      content_type="text/html", charset="utf-8", truncated=None, page=parse_page(body, url))


def rows(records, duplicates=True, **main_content):
    config = load_config(None)
    config = dataclasses.replace(config, main_content=dataclasses.replace(config.main_content, **main_content),
                                 duplicates=dataclasses.replace(config.duplicates, enabled=duplicates))
    return {r["url"]: r for kind, r in process_site(SITE, records, config) if kind == "pages"}


def test_shared_word_share_both_ways():
    """a2 is a with one more sentence: every block word of a is on a2 (share 1), a2's words are
    on a but for the 4 of the added sentence."""
    a, a2 = html("a"), html("a", "<p>Some are green.</p>")
    blocks = SiteBlocks({"a": parse_page(a, "https://fruit.example/a.html"),
                         "a2": parse_page(a2, "https://fruit.example/a2.html")})
    words_a2 = int(blocks.of("a2").blocks.words.sum())
    assert blocks.shared_word_share("a", "a2") == 1.0
    assert blocks.shared_word_share("a2", "a") == (words_a2 - 3) / words_a2
    assert blocks.near_duplicates("a", ["a2"], 0.8) == ["a2"]
    assert blocks.near_duplicates("a", ["a2"], 0.99) == []


def test_a_near_duplicate_is_no_candidate_and_the_row_says_so():
    """Two captures of one article under two URLs (a, a2) and one more page (b): a's two
    template candidates would be a2 and b. With the net a2 is left out, the row says so and the
    article is main content, and the template is the site's header, menu and footer; without
    it (and without the fallback) a2 is a candidate and the article maps onto it: template."""
    records = [record("a", html("a"), 0), record("a2", html("a"), 1), record("b", html("b"), 2)]
    with_net = rows(records)["https://fruit.example/a.html"]
    assert with_net["template_candidate_urls"] == ["https://fruit.example/b.html"]
    assert "near-duplicate candidate pages left out: 1" in with_net["notes"]
    assert "Apples grow on trees in orchards." in with_net["main_text"]
    assert with_net["template_share"] < 0.8
    assert "Apples grow on trees in orchards." in with_net["nontemplate_text"]
    bare = rows(records, duplicates=False, near_duplicate_share=0.0, site_fallback=False)["https://fruit.example/a.html"]
    assert "https://fruit.example/a2.html" in bare["template_candidate_urls"]
    assert bare["template_share"] == 1.0 and bare["nontemplate_text"] == ""


def test_a_page_that_is_all_template_is_judged_without_its_site():
    """A site of two identical pages: each is the other's only candidate, so all of it is
    template (share 1). Without the near-duplicate net, the fallback judges it alone and its
    notes say so; with both nets off nothing is main."""
    records = [record("a", html("a"), 0), record("a2", html("a"), 1)]
    fallback = rows(records, duplicates=False, near_duplicate_share=0.0)["https://fruit.example/a.html"]
    assert fallback["template_share"] >= 0.95
    assert "Apples grow on trees in orchards." in fallback["main_text"]
    assert any(n.startswith("main content judged without site features") for n in fallback["notes"])
    bare = rows(records, duplicates=False, near_duplicate_share=0.0, site_fallback=False)["https://fruit.example/a.html"]
    assert not any(n.startswith("main content judged without site features") for n in bare["notes"])
    near = rows(records)["https://fruit.example/a.html"]
    assert near["candidate_method"] == "page_only"
    assert "near-duplicate candidate pages left out: 1" in near["notes"]


def test_rows_carry_the_page_type():
    got = rows([record(p, html(p), i) for i, p in enumerate(PAGES)])
    for row in got.values():
        assert row["page_type"] in ("article", "documentation", "forum", "product", "listing", "collection",
                                    "service")
        assert 0 < row["page_type_score"] <= 1
    empty = rows([record("x", "<html><body></body></html>", 0)])["https://fruit.example/x.html"]
    assert empty["page_type"] == "other" and empty["page_type_score"] is None
