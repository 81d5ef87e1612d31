"""The duplicate-detection bench's generator and measures (bench/sitestrip_bench/duplicates.py)."""
from types import SimpleNamespace

from sitestrip_bench.duplicates import NOTE, _variant_url, _with_note, measure


def test_the_near_edit_changes_the_longest_paragraph_only():
    html = ("<html><body><p>Short 2019.</p><p class=x>The long paragraph of 2020 with many words in it.</p>"
            "<footer><p>© 2024</p></footer></body></html>")
    edited = _with_note(html)
    assert edited == ("<html><body><p>Short 2019.</p><p class=x>" + NOTE + " The long paragraph of 2021 with many "
                      "words in it.</p><footer><p>© 2024</p></footer></body></html>")
    assert _with_note("<html><body>no paragraph</body></html>") == "<html><body>no paragraph</body></html>"


def test_variant_urls():
    assert _variant_url("https://s.example/a", "url_variant") == \
        "https://s.example/a?utm_source=newsletter&utm_medium=email"
    assert _variant_url("https://s.example/a?x=1", "session_path") == "https://s.example/a;jsessionid=8F3A2C1D9E?x=1"
    assert _variant_url("https://s.example/a", "recapture") == "https://s.example/a"


def _row(record_id, offset, duplicate_of_record=None, kind=None):
    return {"warc_record_id": record_id, "warc_file": "f", "warc_offset": offset, "url": f"u{offset}",
            "duplicate_of_record": duplicate_of_record, "duplicate_of": None, "duplicate_kind": kind}


def test_measure_counts_found_pairs_and_marked_pages():
    original = SimpleNamespace(warc_file="f", warc_offset=1, warc_record_id="r1")
    copy = SimpleNamespace(warc_file="f", warc_offset=2, warc_record_id="r2")
    other = SimpleNamespace(warc_file="f", warc_offset=3, warc_record_id="r3")
    missed = SimpleNamespace(warc_file="f", warc_offset=4, warc_record_id="r4")
    rows = [_row("r1", 1), _row("r2", 2, "r1", "exact"), _row("r3", 3, "r1", "near"), _row("r4", 4),
            _row("r5", 5)]
    got = measure(rows, [("url_variant", original, copy), ("near_edit", other, missed)], {"r2", "r4"})
    assert got["found"] == {"url_variant": 1, "near_edit": 0} and got["recall_all"] == 0.5
    # r3 (a page of the corpus) names r1, which is not its own injected copy: marked.
    assert got["own_pages"] == 3 and got["own_marked"] == 1
