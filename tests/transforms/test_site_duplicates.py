"""The site step searches a shard's duplicates once when no page is judged again
(transforms/site_step.py process_site, _mark_duplicates)."""
import random

import pytest

from sitestrip.configs import load_config
from sitestrip.transforms import site_step
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.site_step import PageRecord, process_site

from helpers.fruit import PAGES, site_page

CONFIG = load_config()     # the defaults: duplicates on, the shipped block model


def capture(url, html, offset, fetch):
    return PageRecord(url=url, site="fruit.example", warc_file="f.warc.gz", warc_offset=offset,
                      warc_record_id=f"<urn:{offset}>", fetch_date=fetch, content_type="text/html",
                      charset="utf-8", truncated=None, page=parse_page(html, url))


def rows_and_searches(records, monkeypatch):
    """The pages rows and the fingerprints of every find_duplicates call."""
    searched = []
    real = site_step.find_duplicates

    def counting(fingerprints, params):
        searched.append(list(fingerprints))
        return real(fingerprints, params)

    monkeypatch.setattr(site_step, "find_duplicates", counting)
    out = list(process_site("fruit.example", records, CONFIG))
    assert [kind for kind, _ in out if kind == "errors"] == []
    return {(r["url"], r["warc_offset"]): r for kind, r in out if kind == "pages"}, searched


def test_captures_alone_are_searched_once(monkeypatch):
    """Two captures of a.html (no page has exact or near duplicates, none is judged again): one
    search, whose result marks the older capture a duplicate of the newer."""
    records = [capture(f"https://fruit.example/{p}.html", site_page(p), k, "2024-01-01T00:00:00Z")
               for k, p in enumerate(PAGES)]
    records.append(capture("https://fruit.example/a.html", site_page("a"), 10, "2024-02-01T00:00:00Z"))
    rows, searched = rows_and_searches(records, monkeypatch)
    assert len(searched) == 1
    old, new = rows[("https://fruit.example/a.html", 0)], rows[("https://fruit.example/a.html", 10)]
    assert (old["duplicate_of_record"], old["duplicate_kind"]) == ("<urn:10>", "capture")
    assert new["duplicate_kind"] is None
    assert all(r["timing_ms"]["duplicates"] > 0 for r in rows.values())


def test_a_shard_with_a_page_judged_again_is_searched_again(monkeypatch):
    """a.html and a-print.html are near duplicates: each is judged again, its fingerprint made
    anew, and the duplicate columns come from a second search over the new fingerprints."""
    rng = random.Random(21)
    extra = " ".join(f"w{rng.randrange(5000)}" for _ in range(80))
    records = [capture(f"https://fruit.example/{p}.html", site_page(p), k, "2024-01-01T00:00:00Z")
               for k, p in enumerate(PAGES)]
    long_a = site_page("a").replace("<p>They are harvested in autumn.</p>",
                                    "<p>They are harvested in autumn.</p><p>" + extra + "</p>")
    records[0] = capture("https://fruit.example/a.html", long_a, 0, "2024-01-01T00:00:00Z")
    records.append(capture("https://fruit.example/a-print.html",
                           long_a.replace("<h2>Apples</h2>", "<h2>Apples</h2><p>Updated.</p>"), 9,
                           "2024-01-01T00:00:00Z"))
    rows, searched = rows_and_searches(records, monkeypatch)
    assert len(searched) == 2
    # The pages judged again have fingerprints of their own.
    assert sum(a is not b for a, b in zip(searched[0], searched[1])) == 2
    copy = rows[("https://fruit.example/a-print.html", 9)]
    assert "judged again with its duplicates left out of the site: 1" in copy["notes"]
    assert (copy["duplicate_of"], copy["duplicate_kind"]) == ("https://fruit.example/a.html", "near")
