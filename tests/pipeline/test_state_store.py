"""The per-site state of incremental runs (`--state`, design §11 use (b)): stored pages as
candidates, versions switched atomically, bounds, damage refused."""
import os
import shutil

import numpy as np
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from sitestrip.pipeline.cli import main
from sitestrip.pipeline.state_store import CURRENT, state_files
from sitestrip.transforms.clusters import ClusterParams, cluster_signatures
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.state import (StateError, StateParams, StoredPage, merge_site_state, page_columns,
                                        page_from_columns, shard_state, stored_from_row, stored_row)
from helpers.warcs import damage_first_stored_page, response, write_warc

NAMES = ("alpha", "beta", "gamma", "delta")


def _page(name):
    """Four pages of one site, each linking the other three (a menu): mutually linked."""
    menu = "".join(f"<li><a href='/{n}.html'>{n.title()}</a></li>" for n in NAMES if n != name)
    return (f"<html><head><title>{name}</title></head><body><div id=top><ul id=menu>{menu}</ul></div>"
            f"<div id=main><h1>{name.title()}</h1><p>The {name} page has words of its own about {name}.</p>"
            f"<p>A second paragraph only {name} has.</p></div><div id=foot>Copyright Site</div></body></html>").encode()


def _warc(path, names):
    return str(write_warc(path, [response(f"https://site.test/{n}.html", _page(n)) for n in names]))


def _rows(out):
    table = ds.dataset(os.path.join(out, "pages"), format="parquet").to_table()
    return {r["url"]: r for r in table.to_pylist()}


def _run(tmp_path, name, warc, state):
    out = str(tmp_path / name)
    code = main(["run", "--input", warc, "--output", out, "--state", str(state), "--quiet"])
    return code, out


@pytest.mark.beam
@pytest.mark.slow
def test_stored_pages_are_candidates_of_a_later_run(tmp_path):
    """Run 1 reads alpha, beta, gamma: they link each other, so they get site methods, and the
    state stores them. Run 2 reads delta alone: without a state it is a one-page site
    (page_only); with it, alpha, beta and gamma (stored) are its linked pages: a CS is found
    among them (they link each other), the row says which candidates came from the state, and
    only delta has a row."""
    state = tmp_path / "state"
    first = _warc(tmp_path / "one.warc.gz", NAMES[:3])
    code, out1 = _run(tmp_path, "out1", first, state)
    assert code == 0 and set(_rows(out1)) == {f"https://site.test/{n}.html" for n in NAMES[:3]}
    version1 = (state / CURRENT).read_text().strip()
    second = _warc(tmp_path / "two.warc.gz", NAMES[3:])
    alone = str(tmp_path / "alone")
    assert main(["run", "--input", second, "--output", alone, "--quiet"]) == 0
    assert _rows(alone)["https://site.test/delta.html"]["candidate_method"] == "page_only"
    code, out2 = _run(tmp_path, "out2", second, state)
    assert code == 0
    rows = _rows(out2)
    assert list(rows) == ["https://site.test/delta.html"]
    delta = rows["https://site.test/delta.html"]
    assert delta["candidate_method"] == "cs"
    assert delta["state_candidate_urls"] and set(delta["state_candidate_urls"]) == set(delta["candidate_urls"])
    assert set(delta["candidate_urls"]) <= {f"https://site.test/{n}.html" for n in NAMES[:3]}
    # the state moved to a new version that holds all four pages
    version2 = (state / CURRENT).read_text().strip()
    assert version2 != version1 and version2.startswith("v00002-")
    stored = pq.read_table(state_files(str(state))[0]).to_pylist()
    assert {r["url"] for r in stored} == {f"https://site.test/{n}.html" for n in NAMES}


@pytest.mark.beam
@pytest.mark.slow
def test_same_state_and_same_input_give_the_same_rows(tmp_path):
    state = tmp_path / "state"
    code, _ = _run(tmp_path, "out1", _warc(tmp_path / "one.warc.gz", NAMES[:3]), state)
    assert code == 0
    copy = tmp_path / "copy"
    shutil.copytree(state, copy)
    second = _warc(tmp_path / "two.warc.gz", NAMES[3:])
    runs = [_run(tmp_path, name, second, s)[1] for name, s in (("a", state), ("b", copy))]
    strip = [{u: {k: v for k, v in r.items() if k != "timing_ms"} for u, r in _rows(o).items()} for o in runs]
    assert strip[0] == strip[1]


@pytest.mark.beam
def test_a_damaged_state_file_is_refused_naming_it_and_the_state_is_untouched(tmp_path, capsys):
    """A state file cut in half: refused before any worker starts (its footer is unreadable),
    exit 2, the message names the file; CURRENT and the file itself are as they were."""
    state = tmp_path / "state"
    warc = _warc(tmp_path / "one.warc.gz", NAMES[:3])
    assert _run(tmp_path, "out1", warc, state)[0] == 0
    path, = state_files(str(state))
    data = open(path, "rb").read()
    with open(path, "wb") as fh:
        fh.write(data[: len(data) // 2])
    before = (state / CURRENT).read_bytes(), open(path, "rb").read()
    capsys.readouterr()
    code, _ = _run(tmp_path, "out2", warc, state)
    err = capsys.readouterr().err
    assert code == 2 and "bad --state" in err and path in err
    assert ((state / CURRENT).read_bytes(), open(path, "rb").read()) == before


@pytest.mark.beam
@pytest.mark.slow
def test_a_damaged_stored_page_fails_the_run_and_leaves_the_state(tmp_path, capsys):
    """A readable state file whose stored page bytes are damaged (valid Parquet): the worker
    that reads it stops the run (exit 1), naming the file and the URL; CURRENT unchanged."""
    state = tmp_path / "state"
    warc = _warc(tmp_path / "one.warc.gz", NAMES[:3])
    assert _run(tmp_path, "out1", warc, state)[0] == 0
    path, = state_files(str(state))
    damage_first_stored_page(path)
    before = (state / CURRENT).read_bytes()
    capsys.readouterr()
    code, _ = _run(tmp_path, "out2", warc, state)
    err = capsys.readouterr().err
    assert code == 1 and "bad --state" in err and "damaged stored page" in err
    assert (state / CURRENT).read_bytes() == before


def test_a_stored_page_round_trips_without_pickle():
    page = parse_page("<html lang=en><body><nav><a href='/a'>A</a></nav><pre>  x\n  y</pre><p>Text here.</p>"
                      "<img src='/i.png' alt='pic'></body></html>", "https://s.test/p")
    fields, blob = page_columns(page)
    again = page_from_columns(fields, blob, "f.parquet")
    for name in ("parent", "tag", "flags", "text_ptr", "link_node"):
        assert np.array_equal(getattr(page, name), getattr(again, name)), name
    assert (again.text, again.link_url, again.url, again.notes) == (page.text, page.link_url, page.url, page.notes)
    row = stored_row(StoredPage("s.test", page.url, "c1", True, 3, page))
    assert stored_from_row(row, "f.parquet").page.text == page.text
    with pytest.raises(StateError, match=r"f\.parquet, https://s\.test/p: damaged stored page"):
        stored_from_row({**row, "page_blob": row["page_blob"][:-5]}, "f.parquet")
    with pytest.raises(StateError, match="f.parquet: not a state row"):
        stored_from_row({"site": "s.test"}, "f.parquet")


def test_state_stays_within_its_bounds_on_a_5000_page_site():
    """5,000 pages of 100 layouts (signatures as in test_clusters: 10 shared paths per layout,
    2 of each page's own): 100 clusters of 50. With max_pages_per_cluster 4 and
    max_clusters_per_site 64 the state holds 64 clusters × 4 pages = 256 pages, each cluster
    its representative first; a second merge of that state with itself changes nothing."""
    def sig(*v):
        return np.array(sorted(set(v)), dtype=np.uint64)
    signatures = {f"https://big.test/{i:05d}": sig(*range(20 * (i % 100), 20 * (i % 100) + 10),
                                                    1_000_000 + 2 * i, 1_000_001 + 2 * i) for i in range(5000)}
    clusters = cluster_signatures("big.test", signatures, ClusterParams())
    assert len(clusters.representatives) == 100
    page = parse_page("<body><p>x</p></body>", "https://big.test/")
    pages = {u: page for u in signatures}
    params = StateParams(max_pages_per_cluster=4, max_clusters_per_site=64)
    shard = shard_state("big.test", clusters, pages, pages, (), params)
    assert len(shard) == 100 * 4 and all(p.cluster_pages == 50 for p in shard)
    kept = merge_site_state("big.test", shard, params)
    assert len(kept) == 64 * 4 and len({p.template_cluster for p in kept}) == 64
    assert sum(p.representative for p in kept) == 64
    assert merge_site_state("big.test", kept, params) == kept


@pytest.mark.beam
@pytest.mark.slow
def test_state_candidate_urls_is_empty_not_null_while_the_state_is_empty(tmp_path):
    """A run with --state over a new (empty) state: no candidate is a stored page, so every row
    says [] (null is kept for runs without --state)."""
    warc = _warc(tmp_path / "one.warc.gz", NAMES[:3])
    code, out = _run(tmp_path, "out", warc, tmp_path / "state")
    assert code == 0
    assert [r["state_candidate_urls"] for r in _rows(out).values()] == [[], [], []]
    assert main(["run", "--input", warc, "--output", str(tmp_path / "plain"), "--quiet"]) == 0
    assert [r["state_candidate_urls"] for r in _rows(str(tmp_path / "plain")).values()] == [None, None, None]


@pytest.mark.beam
@pytest.mark.slow
def test_a_later_run_finds_the_duplicate_of_a_page_of_an_earlier_run(tmp_path):
    """Run 1 reads alpha, beta, gamma; the state keeps their fingerprints. Run 2 reads delta and
    beta under a tracking-parameter URL (the same bytes): its row names run 1's beta as the page
    it duplicates, and the new state keeps the fingerprints of both runs."""
    state = tmp_path / "state"
    code, _ = _run(tmp_path, "out1", _warc(tmp_path / "one.warc.gz", NAMES[:3]), state)
    assert code == 0
    kinds = [r["kind"] for path in state_files(str(state)) for r in pq.read_table(path, columns=["kind"]).to_pylist()]
    assert kinds.count("fingerprint") == 3
    second = str(write_warc(tmp_path / "two.warc.gz", [
        response("https://site.test/delta.html", _page("delta")),
        response("https://site.test/beta.html?utm_source=mail", _page("beta"))]))
    code, out2 = _run(tmp_path, "out2", second, state)
    rows = _rows(out2)
    assert code == 0 and set(rows) == {"https://site.test/delta.html", "https://site.test/beta.html?utm_source=mail"}
    variant = rows["https://site.test/beta.html?utm_source=mail"]
    assert (variant["duplicate_of"], variant["duplicate_kind"]) == ("https://site.test/beta.html", "exact")
    assert variant["duplicate_of_record"] and variant["duplicate_of_record"].startswith("<urn:uuid:")
    assert rows["https://site.test/delta.html"]["duplicate_of"] is None
    fingerprints = [r for path in state_files(str(state)) for r in pq.read_table(path).to_pylist()
                    if r["kind"] == "fingerprint"]
    assert len(fingerprints) == 5 and all(len(r["near_signature"]) == 256 for r in fingerprints)


@pytest.mark.beam
@pytest.mark.slow
def test_a_version_1_state_is_read(tmp_path):
    """A state written before fingerprints (version 1: stored pages only) is read as it is."""
    from sitestrip.schemas import STATE_V1
    state = tmp_path / "state"
    assert _run(tmp_path, "out1", _warc(tmp_path / "one.warc.gz", NAMES[:3]), state)[0] == 0
    path, = state_files(str(state))
    table = pq.read_table(path)
    pages = table.filter(ds.field("kind") == "page").select(STATE_V1.names).replace_schema_metadata(STATE_V1.metadata)
    pq.write_table(pages, path)
    code, out2 = _run(tmp_path, "out2", _warc(tmp_path / "two.warc.gz", NAMES[3:]), state)
    assert code == 0 and _rows(out2)["https://site.test/delta.html"]["candidate_method"] != "page_only"
