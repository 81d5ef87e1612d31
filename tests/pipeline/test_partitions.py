"""Local runs in partitions (pipeline/partitions.py): the input spilled by site, the sites run
one partition after another, the same rows, errors rows and counters as the one graph, and a
failed or interrupted partitioned run leaves the previous output as it was."""
import dataclasses
import glob
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import apache_beam as beam
import numpy as np
import pyarrow.parquet as pq
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from sitestrip.configs import RunLimits, load_config
from sitestrip.pipeline import partitions
from sitestrip.pipeline.cli import _counters, main
from sitestrip.pipeline.graph import build_pipeline
from sitestrip.pipeline.wire import pack_record, unpack_record
from sitestrip.pipeline.partitions import (BUCKETS, SpillIndex, SpilledUrls, SpillWriter, bucket_of,
                                           iter_frames, iter_heads, partition_bytes, plan_partitions, read_frame,
                                           read_index, run_partitioned)
from sitestrip.schemas import DATASETS
from sitestrip.transforms.site_step import build_page_record
from sitestrip.transforms.shards import shard_urls
from helpers.warcs import HTML_UTF8, response, write_warc
from helpers.files import snapshot

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
# Sites over 3 pages are split into shards, and a budget under the run's fixed cost makes every
# bucket and every hot site's shard a partition of its own.
# The shipped defaults otherwise, as `--config` with a file of these two keys gives them.
SMALL = dataclasses.replace(load_config(), site=dataclasses.replace(load_config().site, max_site_pages=3),
                            run=RunLimits(memory_budget_mb=1))


def page(title, links):
    menu = "".join(f"<li><a href='{href}'>{href.strip('/')}</a></li>" for href in links)
    return (f"<html><head><title>{title}</title></head><body><ul id=menu>{menu}</ul>"
            f"<div id=content><h1>{title}</h1><p>{title} has words of its own, and more of them.</p>"
            f"<p>A second paragraph about {title}.</p></div><div id=footer>Footer of the site</div>"
            f"</body></html>").encode()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Four sites over two files: one of 9 pages in three directories (a hot site at 3 pages a
    shard), three small ones; a page with a corrupt gzip body and one whose target URI is no
    URL (errors rows of the read), a CSS file and a 404 (skipped), and an empty file."""
    d = tmp_path_factory.mktemp("partitions")
    big = [f"/{section}/{i}.html" for section in ("guide", "api", "faq") for i in range(3)]
    first = [response(f"https://big.example{path}", page(f"Big {path}", big[:6])) for path in big[:5]]
    first += [
        response("https://small-a.org/a.html", page("A one", ["/a.html", "/b.html"])),
        response("https://small-a.org/b.html", page("A two", ["/a.html", "/b.html"])),
        response("https://small-b.net/x.html", page("B one", ["/x.html"])),
        response("https://big.example/style.css", b"body{}", headers=[("Content-Type", "text/css")]),
        response("https://big.example/gone.html", b"<html>gone</html>", status="404 Not Found"),
        response("https://small-a.org/broken.html", b"<html>not gzip</html>",
                 headers=HTML_UTF8 + [("Content-Encoding", "gzip")]),
    ]
    second = [response(f"https://big.example{path}", page(f"Big {path}", big[3:])) for path in big[5:]]
    second += [
        response("https://www.small-c.io/", page("C home", ["/", "/about.html"])),
        response("https://small-c.io/about.html", page("C about", ["/", "/about.html"])),
        response("not-a-url", page("Nowhere", ["/"])),
    ]
    files = [write_warc(d / "one.warc.gz", first), write_warc(d / "two.warc.gz", second)]
    empty = d / "empty.warc.gz"
    empty.write_bytes(b"")
    return d, files + [str(empty)]


def rows(out, name):
    """A dataset's rows, sorted, without the wall-clock column."""
    found = []
    for path in sorted(glob.glob(os.path.join(out, name, "part-*.parquet"))):
        found += [repr(sorted((k, v) for k, v in row.items() if k != "timing_ms"))
                  for row in pq.read_table(path).to_pylist()]
    return sorted(found)


@pytest.fixture(scope="module")
def one_graph(corpus):
    """The graph over the whole input, as remote runners run it: its output and counters."""
    d, files = corpus
    out = str(d / "one-graph")
    p = beam.Pipeline(runner=FnApiRunner())
    build_pipeline(p, files, out, SMALL, part_files=2)
    result = p.run()
    result.wait_until_finish()
    return out, _counters(result)


@pytest.fixture(scope="module")
def partitioned(corpus, tmp_path_factory):
    d, files = corpus
    out, spill = str(d / "partitioned"), str(tmp_path_factory.mktemp("spill"))
    done = run_partitioned(lambda: beam.Pipeline(runner=FnApiRunner()), _counters, files, out, SMALL, spill,
                           part_files=2)
    return out, done


@pytest.mark.beam
@pytest.mark.slow
def test_partitions_give_the_rows_of_the_one_graph(one_graph, partitioned):
    (one, _), (out, done) = one_graph, partitioned
    plan = done.plan
    # What this test is for: several partitions, a hot site's shards among them apart.
    assert plan.partitions > 2 and plan.split_sites() == {"big.example"}
    assert plan.hot["big.example"].shards == 3
    for name in DATASETS:
        assert rows(out, name) == rows(one, name), name
    assert len(rows(out, "pages")) == 14
    # One menus row per site and menu, though big.example's pages were counted in three partitions.
    menus = pq.read_table(os.path.join(out, "menus")).to_pylist()
    assert len({(m["site"], m["menu_signature"]) for m in menus}) == len(menus)


@pytest.mark.beam
@pytest.mark.slow
def test_a_link_to_a_page_of_another_partition_is_in_the_input(one_graph, partitioned):
    """target_in_input is set over every partition's pages rows (the spilled pages' URLs,
    partitions.SpilledUrls), not within the source page's partition alone."""
    out, done = partitioned
    plan = done.plan

    def partition(site, url):
        shard = plan.shard_of(site, partitions.page_cell(url))
        return plan.partition_of(site, shard, bucket_of(site))

    links = pq.read_table(os.path.join(out, "links")).to_pylist()
    pages = {row["url_normalized"] for row in pq.read_table(os.path.join(out, "pages")).to_pylist()}
    assert links and all(link["target_in_input"] == (link["target_url"] in pages) for link in links)
    across = [link for link in links if link["target_in_input"] and link["in_site"]
              and partition(link["site"], link["source_url"]) != partition(link["site"], link["target_url"])]
    # What the test is for: big.example's menu links to pages of its other shards' partitions.
    assert {link["site"] for link in across} == {"big.example"}
    assert rows(out, "links") == rows(one_graph[0], "links")


@pytest.mark.beam
@pytest.mark.slow
def test_a_spilled_page_without_a_pages_row_is_no_link_target(corpus, tmp_path, monkeypatch):
    """The partitions set target_in_input from the spilled pages' URLs (SpilledUrls). A page
    whose site step fails is spilled but has no pages row: then the links files are set again
    from the pages rows (fill_link_targets), and the links to it are not in the input, as in
    the one graph. Without such a page they are not set again."""
    from sitestrip.transforms import site_step

    d, files = corpus
    filled = []
    fill = partitions.fill_link_targets
    monkeypatch.setattr(partitions, "fill_link_targets", lambda staging: (filled.append(staging), fill(staging)))

    def partitioned_run(name):
        out, spill = tmp_path / name, tmp_path / f"spill-{name}"
        spill.mkdir()
        run_partitioned(lambda: beam.Pipeline(runner=FnApiRunner()), _counters, files, str(out), SMALL, str(spill),
                        part_files=2)
        return str(out)

    partitioned_run("whole")
    assert filled == []
    failing, analyse = "https://small-a.org/b.html", site_step.analyse_page

    def analyse_page(record, *args, **kwargs):
        if record.url == failing:
            raise RuntimeError("this page fails")
        return analyse(record, *args, **kwargs)

    monkeypatch.setattr(site_step, "analyse_page", analyse_page)
    out = partitioned_run("one-failing")
    assert len(filled) == 1
    one = str(tmp_path / "one-graph")
    p = beam.Pipeline(runner=FnApiRunner())
    build_pipeline(p, files, one, SMALL, part_files=2)
    p.run().wait_until_finish()
    for name in DATASETS:
        assert rows(out, name) == rows(one, name), name
    to_failing = [link["target_in_input"] for link in pq.read_table(os.path.join(out, "links")).to_pylist()
                  if link["target_url"] == failing]
    assert to_failing and not any(to_failing)
    assert failing in {e["url"] for e in pq.read_table(os.path.join(out, "errors")).to_pylist()}


def test_a_run_with_duplicates_across_sites_is_not_partitioned(corpus, tmp_path):
    config = dataclasses.replace(SMALL, duplicates=dataclasses.replace(SMALL.duplicates, across_sites=True))
    assert partitions.can_partition(SMALL) and not partitions.can_partition(config)
    with pytest.raises(ValueError, match="duplicates.across_sites"):
        run_partitioned(lambda: pytest.fail("no pipeline is built"), _counters, corpus[1], str(tmp_path / "out"),
                        config, str(tmp_path / "spill"))


@pytest.mark.beam
@pytest.mark.slow
def test_errors_rows_and_counters_survive_partitioning(one_graph, partitioned):
    (one, counters), (out, done) = one_graph, partitioned
    errors = pq.read_table(os.path.join(out, "errors")).to_pylist()
    assert sorted((os.path.basename(e["warc_file"]), e["url"], e["stage"], e["error_class"]) for e in errors) == [
        ("empty.warc.gz", None, "read", "EmptyFile"),
        ("one.warc.gz", "https://small-a.org/broken.html", "decode", "BadContentEncoding"),
        ("two.warc.gz", "not-a-url", "read", "BadUrl")]
    assert {k: v for k, v in done.counters.items() if k != "partitions"} == counters
    assert done.counters["partitions"] == done.plan.partitions
    assert counters["pages"] == 14 and counters["hot_sites"] == 1 and counters["hot_site_shards"] == 3


@pytest.mark.beam
@pytest.mark.slow
def test_a_dataset_keeps_one_file_and_no_empty_one_beside_it(partitioned):
    out, done = partitioned
    for name in DATASETS:
        files = sorted(glob.glob(os.path.join(out, name, "*.parquet")))
        counts = [pq.ParquetFile(f).metadata.num_rows for f in files]
        assert files and (all(counts) or counts == [0]), (name, counts)
    # Partitions name their own parts; the pages of every partition are there.
    names = {os.path.basename(f).split("-")[1] for f in glob.glob(os.path.join(out, "pages", "*.parquet"))}
    assert len(names) == done.plan.partitions


@pytest.mark.beam
@pytest.mark.slow
def test_a_run_of_one_partition_writes_the_files_of_the_one_graph(corpus, one_graph, tmp_path):
    """The one graph's files (parts.WriteParts): every dataset's part 0, empty or not, and the
    parts with rows, under the one graph's names. With 8 parts, the menus and sites rows of
    this corpus leave part 0 empty, which a run of several partitions would remove. (Not the
    errors rows: they are placed by their file's path, which is pytest's temporary one.)"""
    d, files = corpus
    config = dataclasses.replace(SMALL, run=RunLimits(memory_budget_mb=100_000))
    out, spill = tmp_path / "out", tmp_path / "spill"
    spill.mkdir()
    done = run_partitioned(lambda: beam.Pipeline(runner=FnApiRunner()), _counters, files, str(out), config,
                           str(spill), part_files=8)
    assert done.plan.partitions == 1
    empty_first = []
    for name in DATASETS:
        parts = sorted(p.name for p in (out / name).iterdir())
        counts = [pq.ParquetFile(out / name / part).metadata.num_rows for part in parts]
        assert parts[0] == "part-00000-of-00008.parquet" and all(p.startswith("part-0") for p in parts), name
        assert all(counts[1:]), (name, counts)
        if not counts[0]:
            empty_first.append(name)
        assert rows(str(out), name) == rows(one_graph[0], name), name
    assert {"menus", "sites"} <= set(empty_first)


def _spilled_bucket(tmp_path, urls):
    """The spill file of example.org's bucket after `urls`' pages are spilled in that order."""
    writer = SpillWriter(str(tmp_path))
    for url in urls:
        writer.add_page(build_page_record(url=url, body=page(url, ["/"]), http_charset=None, warc_file="f",
                                          warc_offset=0, warc_record_id="r", fetch_date="d",
                                          content_type="text/html", truncated=None))
    writer.close()
    (path,) = read_index(str(tmp_path), 10).page_files[bucket_of("example.org")]
    return path


def test_a_page_comes_back_from_the_spill_as_it_went_in(tmp_path):
    body = page("Spilled \u00e9t\u00e9", ["/a.html", "/b.html"])
    record = build_page_record(url="https://Example.org/dir/p.html?q=\u00fc", body=body, http_charset=None,
                               warc_file="f.warc.gz", warc_offset=123, warc_record_id="<urn:uuid:1>",
                               fetch_date="2024-01-01T00:00:00Z", content_type="text/html",
                               truncated="length", read_ms=1.25, notes=("payload cut: test",))
    writer = SpillWriter(str(tmp_path))
    writer.add_page(record)
    writer.add_error({"url": None, "warc_file": "f", "warc_offset": None, "stage": "read",
                      "error_class": "EmptyFile", "message": "the file is empty \udcff"})
    writer.close()
    index = read_index(str(tmp_path), max_site_pages=10)
    assert index.sites == {"example.org": [bucket_of("example.org"), 1, index.bytes]} and index.bytes > 0
    (path,) = index.page_files[bucket_of("example.org")]
    with open(path, "rb") as fh:
        ((site, cell, packed),) = list(iter_frames(fh))
    # A page is spilled as it crosses the shuffles of the one graph (pipeline/wire.py).
    assert packed == pack_record(record)
    back = unpack_record(packed)
    assert (site, cell) == ("example.org", ("dir", cell[1]))
    for field in dataclasses.fields(record):
        if field.name != "page":
            assert getattr(back, field.name) == getattr(record, field.name), field.name
    assert back.page.differing_fields(record.page) == []
    # Which link targets are pages of the run: the spilled pages' URLs, as digests.
    urls = SpilledUrls.write(index, str(tmp_path))
    assert urls.contains([record.url, "https://example.org/dir/other.html"]).tolist() == [True, False]
    assert pickle.loads(pickle.dumps(urls)).contains([record.url]).tolist() == [True]
    assert pickle.loads(pickle.dumps(urls))._digests is None      # its path only, loaded where used
    with open(index.error_files[0], encoding="ascii") as fh:
        (line,) = fh.read().splitlines()
    assert json.loads(line)["message"] == "the file is empty \udcff"


def test_a_shard_reaches_the_site_step_as_its_places_and_unpacks_in_order(tmp_path, monkeypatch):
    """read_shard hands ProcessSite a shard's records as their places in the spill, read as
    they are unpacked: pickled (the runner encodes a step's first outputs to estimate their
    size) it is the places, not the pages."""
    from sitestrip.pipeline.partitions import ShardRecords, read_shard
    from sitestrip.pipeline.wire import unpacked_records

    monkeypatch.setattr(SpillWriter, "FLUSH_BYTES", 1)
    urls = [f"https://example.org/{i}.html" for i in range(4)]
    path = _spilled_bucket(tmp_path, urls)
    with open(path, "rb") as fh:
        offsets = [offset for offset, _, _ in iter_heads(fh)]
    key, records = read_shard((("example.org", 0), [(path, offsets[::-1])]))
    assert key == ("example.org", 0) and isinstance(records, ShardRecords) and len(records) == 4
    assert len(pickle.dumps(records)) < 300
    assert [r.url for r in unpacked_records(records)] == urls[::-1]
    assert [r.url for r in unpacked_records(pickle.loads(pickle.dumps(records)))] == urls[::-1]


def test_a_bucket_written_in_many_flushes_reads_back_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(SpillWriter, "FLUSH_BYTES", 1)
    urls = [f"https://example.org/{i}.html" for i in range(5)]
    path = _spilled_bucket(tmp_path, urls)
    with open(path, "rb") as fh:
        assert [unpack_record(packed).url for _, _, packed in iter_frames(fh)] == urls
    with open(path, "rb") as fh:
        heads = list(iter_heads(fh))
        assert [unpack_record(read_frame(fh, offset)).url for offset, _, _ in reversed(heads)] == urls[::-1]


def test_a_cut_spill_file_is_an_error_not_fewer_pages(tmp_path):
    record = build_page_record(url="https://example.org/", body=page("P", ["/"]), http_charset=None,
                               warc_file="f", warc_offset=0, warc_record_id="r", fetch_date="d",
                               content_type="text/html", truncated=None)
    writer = SpillWriter(str(tmp_path))
    writer.add_page(record)
    writer.close()
    (path,) = read_index(str(tmp_path), 10).page_files[bucket_of("example.org")]
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:-5])
    with open(path, "rb") as fh, pytest.raises(ValueError, match="cut short"):
        list(iter_frames(fh))
    with open(path, "rb") as fh, pytest.raises(ValueError, match="cut short"):
        list(iter_heads(fh))
    with open(path, "rb") as fh, pytest.raises(ValueError, match="cut short"):
        read_frame(fh, 0)


def _index(sites, cells=None):
    return SpillIndex({s: list(v) for s, v in sites.items()}, {}, [], cells or {})


def test_the_plan_fits_the_capacity_with_the_fewest_partitions():
    sites = {f"site{i}.example": (bucket_of(f"site{i}.example"), 10, 1000) for i in range(40)}
    assert plan_partitions(_index(sites), 100, capacity=10 ** 6).partitions == 1
    plan = plan_partitions(_index(sites), 100, capacity=8000)
    assert sum(plan.bytes) == 40_000 and sum(plan.pages) == 400
    assert max(plan.bytes) <= 8000
    # Fewer partitions could not hold it: 40,000 bytes need at least 5 of 8,000.
    assert plan.partitions >= 5
    for site, (bucket, _, _) in sites.items():
        assert plan.partition_of(site, 0, bucket) == plan.bucket_partition[bucket] < plan.partitions


def _hot_site(small_pages):
    """hot.example's 20 URLs in four directories and the index of it (20,000 bytes) beside
    small.example (`small_pages` pages, 2,000 bytes)."""
    urls = [f"https://hot.example/{d}/{i}.html" for d in ("a", "b", "c", "d") for i in range(5)]
    cells = {}
    for url in urls:
        cell = partitions.page_cell(url)
        cells[cell] = cells.get(cell, 0) + 1
    sites = {"hot.example": (bucket_of("hot.example"), 20, 20_000),
             "small.example": (bucket_of("small.example"), small_pages, 2_000)}
    return urls, _index(sites, {"hot.example": cells})


def test_a_hot_sites_shards_are_planned_over_the_whole_input():
    urls, index = _hot_site(2)
    plan = plan_partitions(index, 6, capacity=7_000)
    expected = shard_urls("hot.example", urls, 6)
    assert {url: plan.shard_of("hot.example", partitions.page_cell(url)) for url in urls} == expected
    # Every shard of the hot site has a partition; none is over the capacity.
    shards = set(expected.values())
    assert {s for (site, s) in plan.shard_partition if site == "hot.example"} == shards
    assert max(plan.bytes) <= 7_000 and sum(plan.pages) == 22


def test_the_budget_less_the_fixed_cost_sets_the_partition_size():
    """The room is 90 % of the budget less 190 MB and 0.075 MB per page of the largest shard,
    planned at 2.5 bytes per spilled byte: 400 MB and a 2,000-page shard leave 360 - 340 = 20
    MB, partitions of 8 MiB; 300-page sites leave 360 - 212.5 = 147.5 MB, 59 MiB."""
    assert partition_bytes(400, 2000) == 20 * 2 ** 20 * 2 // 5 == 8_388_608
    assert partition_bytes(400, 300) == int(147.5 * 2 ** 20 / 2.5) == 61_865_984
    assert partition_bytes(800, 2000) > partition_bytes(400, 2000)
    assert partition_bytes(1, 0) == 0 and partition_bytes(370, 2000) == 0
    assert BUCKETS >= 64


def test_the_largest_shard_is_a_sites_pages_or_a_hot_sites_largest_shard():
    from sitestrip.pipeline.partitions import hot_site_plans, largest_shard

    _, index = _hot_site(4)
    hot = hot_site_plans(index, 6)
    sizes = sorted(hot["hot.example"].sizes)
    assert sum(sizes) == 20 and max(sizes) <= 6
    assert largest_shard(index, hot) == max(sizes[-1], 4)
    assert largest_shard(_index({"small.example": index.sites["small.example"]}), {}) == 4
    assert largest_shard(_index({}), {}) == 0
    assert plan_partitions(index, 6, 7_000, hot).hot == hot


# ------------------------------------------------------------------ through the command line



@pytest.fixture(scope="module")
def budget_yaml(tmp_path_factory):
    path = tmp_path_factory.mktemp("config") / "small.yaml"
    path.write_text("site:\n  max_site_pages: 3\nrun:\n  memory_budget_mb: 1\n")
    return str(path)


@pytest.fixture
def previous(tmp_path, corpus):
    """An output published by a complete (one-partition) run, and its snapshot."""
    out = tmp_path / "out"
    assert main(["run", "--input", *corpus[1][:2], "--output", str(out), "--quiet"]) == 0
    return out, snapshot(out)


@pytest.mark.beam
@pytest.mark.slow
def test_a_partitioned_run_publishes_once_and_says_so(tmp_path, corpus, budget_yaml, one_graph, capsys):
    out = tmp_path / "out"
    code = main(["run", "--input", *corpus[1], "--output", str(out), "--config", budget_yaml,
                 "--allow-missing-inputs", "1"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "  partitions: " in printed and "hot sites (over site.max_site_pages): 1, 9 pages in 3 shards" in printed
    for name in DATASETS:
        assert rows(str(out), name) == rows(one_graph[0], name), name
    marker = json.loads((out / "_SUCCESS").read_text())
    listed = {f["path"] for d in marker["datasets"].values() for f in d["files"]}
    assert listed == {str(p.relative_to(out)) for p in out.glob("*/*.parquet")}
    assert marker["counts"]["pages"] == 14 and marker["counts"]["errors_by_stage"] == {"decode": 1, "read": 2}
    assert not [p for p in os.listdir(out) if p.startswith("_sitestrip-staging-")]


@pytest.mark.beam
@pytest.mark.slow
@pytest.mark.parametrize("extra, warned", [
    ("duplicates:\n  across_sites: true\n", True),
    ("run:\n  memory_budget_mb: 1\n  partitions: false\n", False),
])
def test_the_command_line_runs_one_graph_when_asked_or_needed(tmp_path, corpus, caplog, capsys, extra, warned):
    """run.partitions false, or a step that joins rows across all sites (a warning says so)."""
    config = tmp_path / "one-graph.yaml"
    config.write_text("site:\n  max_site_pages: 3\n" + ("" if "run:" in extra else "run:\n  memory_budget_mb: 1\n")
                      + extra)
    spills = tmp_path / "tmp"
    spills.mkdir()
    caplog.set_level("WARNING", logger="sitestrip")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("tempfile.tempdir", str(spills))
        code = main(["run", "--input", *corpus[1][:2], "--output", str(tmp_path / "out"), "--config", str(config)])
    assert code == 0
    assert "  partitions: " not in capsys.readouterr().out
    assert ("duplicates.across_sites is on: the run is one graph" in caplog.text) == warned
    assert not glob.glob(str(spills / "sitestrip-spill-*"))


@pytest.mark.beam
@pytest.mark.slow
def test_a_failed_partition_leaves_the_previous_output_and_no_spill(tmp_path, corpus, budget_yaml, previous,
                                                                    monkeypatch):
    out, before = previous
    spills = tmp_path / "tmp"
    spills.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(spills))
    built = []

    def failing(p, *args, part_name="part", **kwargs):
        built.append(part_name)
        if len(built) == 2:
            raise RuntimeError("the second partition fails")
        return build_pipeline(p, *args, part_name=part_name, **kwargs)

    monkeypatch.setattr(partitions, "build_pipeline", failing)
    with pytest.raises(RuntimeError, match="second partition"):
        main(["run", "--input", *corpus[1], "--output", str(out), "--config", budget_yaml, "--quiet"])
    assert built == ["part-p00000", "part-p00001"]
    assert snapshot(out) == before
    assert not glob.glob(str(spills / "sitestrip-spill-*"))


@pytest.mark.beam
@pytest.mark.slow
def test_an_interrupted_partitioned_run_leaves_the_previous_output(tmp_path, corpus, budget_yaml, previous):
    """SIGINT once the first partition's part files are in the staging directory: later
    partitions never run, nothing is published, the spill is removed."""
    out, before = previous
    spills = tmp_path / "tmp"
    spills.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--input", *corpus[1],
                             "--output", str(out), "--config", budget_yaml, "--quiet"],
                            cwd=tmp_path, env={**ENV, "TMPDIR": str(spills)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not glob.glob(str(out / "_sitestrip-staging-*" / "pages" / "part-p00000-*.parquet")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "sitestrip: interrupted; previous output kept"
    assert "sitestrip: finished" not in stdout
    assert snapshot(out) == before
    assert not glob.glob(str(spills / "sitestrip-spill-*"))


@pytest.mark.beam
@pytest.mark.slow
def test_two_workers_give_the_same_rows(tmp_path, corpus, budget_yaml, one_graph):
    out = tmp_path / "out"
    code = main(["run", "--input", *corpus[1][:2], "--output", str(out), "--config", budget_yaml,
                 "--workers", "2", "--quiet"])
    assert code == 0
    for name in ("pages", "menus", "sites"):
        assert rows(str(out), name) == rows(one_graph[0], name), name


def test_compiled_url_digests_are_hashlibs_blake2b():
    """transforms/_site.c url_digests against hashlib: lengths around BLAKE2b's 128-byte block
    (0, 127, 128, 129, 256, 257), non-ASCII characters and lone surrogates ("surrogatepass")."""
    import hashlib
    import random

    from helpers.compiled import require_built
    from sitestrip.pipeline.partitions import url_digests
    require_built("_site")
    rng = random.Random(5)
    alphabet = "abz09/:?=&%~.\u00e9\u4e2d\U0001f600"
    urls = ["".join(rng.choice(alphabet) for _ in range(n)) for n in range(0, 300, 7)]
    urls += ["x" * n for n in (0, 1, 127, 128, 129, 255, 256, 257, 1000)]
    urls += ["https://example.org/a\ud800b", "\udfff" * 50]
    expected = b"".join(hashlib.blake2b(u.encode("utf-8", "surrogatepass"), digest_size=16).digest() for u in urls)
    assert url_digests(urls, compiled=True) == url_digests(urls, compiled=False) == expected
    assert url_digests(iter(urls), compiled=True) == expected and url_digests([], compiled=True) == b""
    with pytest.raises(TypeError):
        url_digests([b"https://example.org/"], compiled=True)


def test_links_present_are_those_the_spilled_urls_contain(tmp_path):
    """_LinksPresentIn asks the spilled URLs about every link outside the page's shard: a
    target is in the input where it is a spilled page's URL, and a shard's own links are
    True whatever the lookup says."""
    from sitestrip.pipeline import graph
    from sitestrip.transforms.outlinks import page_links
    from sitestrip.transforms.page import parse_page

    url = "https://docs.test/guide/page.html"
    hrefs = ["/a.html", "/b.html", "https://other.test/x", "/a.html", "/c.html", "https://other.test/y"]
    page = parse_page("<body>" + "".join(f'<a href="{h}">{k}</a>' for k, h in enumerate(hrefs)) + "</body>", url)
    run_pages = ["https://docs.test/b.html", "https://other.test/x", "https://docs.test/c.html"]
    digests = partitions.distinct_digests([np.frombuffer(partitions.url_digests(run_pages), dtype="S16")])
    (tmp_path / "urls.bin").write_bytes(digests.tobytes())
    spilled = SpilledUrls(str(tmp_path / "urls.bin"))

    for local in (None, frozenset({"https://docs.test/c.html", "https://docs.test/a.html"})):
        links = page_links(page, None, None, None, source_url=url, row_url=url, site="docs.test",
                           warc_file="f", warc_offset=0, local_urls=local)
        step = graph._LinksPresentIn(spilled)
        ((out,),) = list(step.process([pickle.loads(pickle.dumps(links))]))
        targets = links.strings()[0]
        expected = [t in run_pages or (local is not None and t in local) for t in targets]
        assert out.in_input.tolist() == expected and any(expected) and not all(expected)
        # A shard's PageLinks as one list: one list out, the pages without links left out.
        empty = page_links(parse_page("<body>none</body>", url), None, None, None, source_url=url, row_url=url,
                           site="docs.test", warc_file="f", warc_offset=1)
        (batch,) = list(step.process([pickle.loads(pickle.dumps(links)), empty, pickle.loads(pickle.dumps(links))]))
        assert type(batch) is list and len(batch) == 2
        assert all(one.in_input.tolist() == expected for one in batch)
        assert list(step.process([empty])) == []
