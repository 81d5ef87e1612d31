"""A page record as it crosses the shuffles (pipeline/wire.py): packed once, unpacked exactly."""
import dataclasses
import pickle

import numpy as np

from sitestrip.configs import config_from_dict
from sitestrip.pipeline.graph import ProcessSite
from sitestrip.pipeline.wire import pack_record, unpack_record, unpacked_records
from helpers.linksite import NAMES, site_records

# Every kind of node extra (images, code, fragments, <area>, rel, an image link's alt text), a
# title, metadata and non-ASCII text: what the compact page keeps beside its node arrays.
RICH = ("<html><head><title>Ünïcode — page</title><meta name=description content='About it'>"
        "<meta name=author content='A. Writer'></head><body>"
        "<div id=nav class='menu top'><a href='/a.html#part'>A</a> <a href='/b.html' rel='nofollow ugc'>B</a></div>"
        "<p>Text with <b>bold</b> words, ⁂ and 日本語.</p><pre>  verbatim\n   text </pre>"
        "<pre><code class='language-python'>print(1)</code></pre>"
        "<a href='/img.html'><img src='/i.png' alt='picture'></a>"
        "<map><area href='/area.html' alt='zone'></map></body></html>")


URL = "https://bücher.example/dir/stra\udcdfe.html?q=ü"


def rich_record():
    (record,) = site_records(html=lambda name: RICH)[:1]
    record.page.notes = ("body cut at 1 MB",) + record.page.notes
    # Any str survives, a lone surrogate too (what a damaged page's URL may decode to).
    return dataclasses.replace(record, url=URL, site="bücher.example",
                               warc_file="gs://bucket/crawl-00001.warc.gz", warc_offset=123456789012,
                               warc_record_id="<urn:uuid:1>", fetch_date="2024-01-02T03:04:05Z",
                               content_type="text/html; charset=utf-8", truncated="length",
                               timing_ms={"read": 0.25, "parse": 1.5},
                               target_uri="https://Example.org/dir/page.html?q=1")


def test_a_record_round_trips_exactly():
    record = rich_record()
    back = unpack_record(pack_record(record))
    assert back.url == URL
    for name in record.__dataclass_fields__:
        if name != "page":
            assert getattr(back, name) == getattr(record, name), name
            assert type(getattr(back, name)) is type(getattr(record, name)), name
    assert back.page.differing_fields(record.page) == []
    side, got = record.page.side, back.page.side
    assert got.image_src == side.image_src and side.image_src[0].endswith("/i.png")
    assert got.area_url and got.area_url == side.area_url
    assert got.rel == side.rel and got.code_lang == side.code_lang and got.fragment == side.fragment
    assert np.array_equal(got.alt_node, side.alt_node) and got.alt == side.alt
    assert back.page.meta == record.page.meta and back.page.notes == record.page.notes
    assert back.page.html_bytes == record.page.html_bytes


def test_packing_is_deterministic_and_smaller_than_the_pickled_record():
    """The same record packs to the same bytes (a retried read step sends what it sent), and
    to no more than the record pickled as Beam's generic coder pickled it."""
    record = rich_record()
    assert pack_record(record) == pack_record(rich_record())
    assert len(pack_record(record)) <= len(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))


def test_unpacked_records_takes_packed_and_plain_records():
    records = site_records()
    mixed = [pack_record(records[0]), memoryview(pack_record(records[1])), *records[2:]]
    got = unpacked_records(iter(mixed))
    assert [r.url for r in got] == [r.url for r in records]
    assert got[2] is records[2]
    assert got[0].page.differing_fields(records[0].page) == []


def _outputs(dofn, element):
    out = []
    for kind, value in dofn.process(element):
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != "timing_ms"}
        elif hasattr(value, "columns"):
            value = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in value.columns().items()}
        out.append((kind, repr(sorted(value.items())) if isinstance(value, dict) else repr(value)))
    return out


def test_the_site_step_gives_the_same_outputs_for_packed_records():
    config = config_from_dict({"output": {"links": True}})
    dofn = ProcessSite(config)
    dofn.setup()
    plain = _outputs(dofn, (("docs.test", 0), site_records()))
    packed = _outputs(dofn, (("docs.test", 0), [pack_record(r) for r in site_records()]))
    assert len([1 for kind, _ in plain if kind == "main"]) == len(NAMES)
    assert packed == plain
