"""A pages row's `status` and notes (transforms/status.py): a row whose text is not the
whole page says so, whatever made it partial."""
import pytest

from sitestrip.configs import Config
from sitestrip.transforms.site_step import build_page_record, process_site
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.status import page_status

CUT = "payload cut: chunked body ends inside a chunk"
FAILED = "parse failed: lxml built no tree from 9 characters"


@pytest.mark.parametrize("notes, words, status", [
    ((), 5, "ok"),
    ((), 0, "empty"),
    (("parser depth limit: nodes nested deeper than 2048 were dropped",), 5, "ok"),   # not a cut
    ((CUT,), 5, "partial"),
    ((CUT,), 0, "partial"),                       # nothing arrived: still a cut, not an empty page
    (("WARC-Truncated: length",), 5, "partial"),
    ((CUT, FAILED), 0, "parse_failed"),           # no tree at all outweighs a cut
])
def test_status_of_notes(notes, words, status):
    assert page_status(notes, words) == status


@pytest.mark.parametrize("html, failed", [
    ("<!-- open", True),          # an unclosed comment swallows the page
    ("<![CDATA[x", True),
    ("  \n ", False),             # blank: an empty page, not a failure
    ("<p>fine</p>", False),
])
def test_a_document_lxml_makes_no_tree_of_is_noted(html, failed):
    notes = parse_page(html, "http://e.example/").notes
    expected = (f"parse failed: lxml built no tree from {len(html)} characters",) if failed else ()
    assert notes == expected


def record(url, body, **kwargs):
    return build_page_record(url=url, body=body, http_charset="utf-8", warc_file="w.warc.gz",
                             warc_offset=0, warc_record_id="<urn:x>", fetch_date="2024-01-01T00:00:00Z",
                             content_type="text/html", **kwargs)


def test_rows_carry_the_readers_notes_and_the_url_as_written():
    """A page read with a cut body (notes from pipeline.warc) is `partial` with the note first;
    a page lxml makes no tree of is `parse_failed`; a complete one `ok`. Each one alone on its
    site: page-level methods. `url` is the target URI as given, `url_normalized` normalized."""
    rows = {}
    for site, body, kwargs in [
        ("cut.example", b"<html><body><p>Half a sent", {"notes": (CUT,), "truncated": None}),
        ("broken.example", b"<!-- open <p>never shown</p>", {"truncated": None}),
        ("fine.example", b"<p>All here.</p>", {"truncated": None}),
    ]:
        rec = record(f"HTTP://{site.upper()}/x", body, **kwargs)
        (kind, row), = process_site(site, [rec], Config())
        rows[site] = row
    cut = rows["cut.example"]
    assert (cut["status"], cut["notes"], cut["main_text"]) == ("partial", [CUT], "Half a sent")
    broken = rows["broken.example"]
    assert broken["status"] == "parse_failed" and broken["words_page"] == 0
    assert broken["notes"] == ["parse failed: lxml built no tree from 28 characters"]
    fine = rows["fine.example"]
    assert (fine["status"], fine["notes"]) == ("ok", [])
    assert (fine["url"], fine["url_normalized"]) == ("HTTP://FINE.EXAMPLE/x", "http://fine.example/x")
