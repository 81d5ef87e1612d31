"""`sitestrip-bench speed` (bench/sitestrip_bench/speed.py): the one-page WARC its start-up
runs read, the arithmetic of throughput past start-up, and the table."""
import gzip
import json

import pytest
from warcio.archiveiterator import ArchiveIterator

from helpers.warcs import response, write_warc
from sitestrip_bench.speed import markdown, median_repeat, one_page_warc
from sitestrip_bench.stages import row_stages, stage_percentiles

PAGE = b"<html><body><p>The one page.</p></body></html>"


def test_one_page_warc_holds_the_first_html_200_response(tmp_path):
    first = write_warc(tmp_path / "a.warc.gz", [
        ("warcinfo", "a.warc.gz", b"", None, None),
        response("https://x.example/style.css", b"p{}", headers=[("Content-Type", "text/css")]),
        response("https://x.example/gone.html", PAGE, status="404 Not Found"),
    ])
    second = write_warc(tmp_path / "b.warc.gz", [
        response("https://x.example/page.html", PAGE),
        response("https://x.example/later.html", PAGE),
    ])
    out = tmp_path / "one.warc.gz"
    assert one_page_warc([first, second], str(out)) == "https://x.example/page.html"
    with open(out, "rb") as fh:
        records = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
                   for r in ArchiveIterator(fh)]
    assert records == [("response", "https://x.example/page.html", PAGE)]
    gzip.decompress(out.read_bytes())       # a gzipped WARC, as the corpora's are


def test_one_page_warc_without_an_html_page_is_an_error(tmp_path):
    css = write_warc(tmp_path / "a.warc.gz", [
        response("https://x.example/style.css", b"p{}", headers=[("Content-Type", "text/css")])])
    with pytest.raises(ValueError, match="no HTML 200 response"):
        one_page_warc([css], str(tmp_path / "one.warc.gz"))


def test_row_stages_keep_pipeline_order_and_unknown_stages_last():
    timings = [{"total": 3.0, "parse": 1.0, "read": 0.5, "new_stage": 0.1}, {"parse": 2.0, "blocks": 1.0}, None]
    assert row_stages(timings) == ["read", "parse", "blocks", "total", "new_stage"]
    stats = stage_percentiles(timings)
    assert stats["parse"]["pages"] == 2 and stats["parse"]["p50"] == 1.5 and stats["blocks"]["pages"] == 1


def _corpus(name, pages, start, run, peer):
    """A measure_corpus result with the figures the table reads."""
    past_cpu, past_wall = run[1] - start[1], run[0] - start[0]
    return {"corpus": name, "stages": ["parse", "total"],
            "stages_ms": {"parse": {"p50": 1.25, "p99": 4.5}, "total": {"p50": 10.0, "p99": 20.0}},
            "startup": {"wall_s": start[0], "cpu_s": start[1]},
            "sitestrip": {"pages": pages, "wall_s": run[0], "cpu_s": run[1],
                          "pages_per_s_wall": round(pages / past_wall, 1), "pages_per_s_cpu": round(pages / past_cpu, 1)},
            "peer": {"pages_per_s_wall": peer[0], "pages_per_s_cpu": peer[1]},
            "ratio": {"wall": round(pages / past_wall / peer[0], 2), "cpu": round(pages / past_cpu / peer[1], 2)}}


def test_the_table_shows_start_up_apart_and_both_bases():
    """1,000 pages; start-up 2 s wall, 1.5 s CPU; the run 12 s wall, 6.5 s CPU: past start-up
    1,000 / 10 = 100 pages/s wall and 1,000 / 5 = 200 per CPU s; the peer 50 and 80: 2× and 2.5×."""
    text = markdown({"peer": "trafilatura", "corpora": [_corpus("c", 1000, (2.0, 1.5), (12.0, 6.5), (50.0, 80.0))]})
    table, stages = text.split("\n\n", 1)
    header, _, row = table.splitlines()
    assert "trafilatura pages/s" in header and "sitestrip ÷ trafilatura" in header
    assert row == "| c | 1,000 | 2.00 / 1.50 | 12.00 / 6.50 | 100.0 / 200.0 | 50.0 / 80.0 | 2.00× / 2.50× |"
    assert stages.splitlines()[-1] == "| c | 1.25 / 4.50 | 10.00 / 20.00 |"


def _repeat(cpu, wall=1.0):
    return {"sitestrip": {"cpu_s": cpu}, "peer": {}, "ratio": {"cpu": cpu, "wall": wall}}


def test_the_median_repeat_is_the_median_cpu_ratio_the_upper_one_of_an_even_count():
    # CPU ratios 3.0, 2.5, 3.2 sort as repeats 1, 0, 2: the median is repeat 0.
    assert median_repeat([_repeat(3.0), _repeat(2.5), _repeat(3.2)]) == 0
    # 3.0, 2.5, 3.2, 2.8 sort as 1, 3, 0, 2: of the middle two (3 and 0) the upper, repeat 0.
    assert median_repeat([_repeat(3.0), _repeat(2.5), _repeat(3.2), _repeat(2.8)]) == 0
    # A repeat without a ratio (past start-up not positive) sorts below every ratio.
    assert median_repeat([_repeat(None), _repeat(4.0), _repeat(5.0)]) == 1
    # Equal ratios: the earlier repeat first.
    assert median_repeat([_repeat(2.0), _repeat(2.0), _repeat(2.0)]) == 1
    # Without a peer there is no ratio: the one repeat, or the first.
    assert median_repeat([{"sitestrip": {}, "peer": None}]) == 0


def test_the_table_of_repeats_lists_each_repeat_and_the_range():
    corpus = _corpus("c", 1000, (2.0, 1.5), (12.0, 6.5), (50.0, 80.0))
    corpus.update(median_repeat=2, repeats=[_repeat(2.4, 1.9), _repeat(2.5, 2.0), _repeat(2.7, 2.1)],
                  ratio_range={"cpu": [2.4, 2.7], "wall": [1.9, 2.1]})
    text = markdown({"peer": "trafilatura", "corpora": [corpus]})
    assert "| c | 2 of 3 | 1.90× / 2.40×, 2.00× / 2.50×, 2.10× / 2.70× | 2.40× – 2.70× |" in text.splitlines()
    # A run of one repeat has no such table.
    assert "each repeat" not in markdown({"peer": "trafilatura",
                                          "corpora": [_corpus("c", 1000, (2.0, 1.5), (12.0, 6.5), (50.0, 80.0))]})


@pytest.mark.beam
@pytest.mark.slow
def test_speed_command_on_a_small_corpus(tmp_path, capsys):
    """Two `sitestrip run`s (one page, then the corpus) and trafilatura on the same pages: the
    numbers are consistent with each other and written to speed.json and speed.md."""
    pytest.importorskip("trafilatura")
    from sitestrip_bench.cli import main
    from helpers.fruit import PAGES, site_page
    root = tmp_path / "fruit-dev"
    (root / "warc").mkdir(parents=True)
    write_warc(root / "warc" / "part-00000.warc.gz",
               [response(f"https://fruit.example/{p}.html", site_page(p).encode()) for p in PAGES])
    (root / "gold.jsonl").write_text("".join(
        json.dumps({"url": f"https://fruit.example/{p}.html", "site": "fruit", "genre": "docs",
                    "main_text": ""}) + "\n" for p in PAGES))
    out = tmp_path / "speed"
    assert main(["speed", "--corpus", str(root), "--out", str(out), "--repeats", "2"]) == 0
    (c,) = json.loads((out / "speed.json").read_text())["corpora"]
    # Two repeats, each a product run and the peer's; the figures are the median repeat's.
    assert len(c["repeats"]) == 2 and c["median_repeat"] in (1, 2)
    chosen = c["repeats"][c["median_repeat"] - 1]
    assert c["sitestrip"] == chosen["sitestrip"] and c["peer"] == chosen["peer"] and c["ratio"] == chosen["ratio"]
    assert (out / c["corpus"] / "out-2" / "pages").is_dir() and (out / c["corpus"] / "peer-2").is_dir()
    s, start, peer = c["sitestrip"], c["startup"], c["peer"]
    assert s["pages"] == len(PAGES) == peer["pages"] and peer["failed"] == 0
    assert start["cpu_s"] > 0 and start["wall_s"] > 0 and s["cpu_s"] > 0
    assert s["past_startup_cpu_s"] == pytest.approx(s["cpu_s"] - start["cpu_s"], abs=2e-3)
    assert peer["extract_cpu_s"] > 0
    # Five pages cost less than the two runs' start-up differs by, so past start-up may be
    # negative here: then there is no rate and no ratio, never a negative one. The json holds
    # seconds rounded to the millisecond, so a rate is checked against the interval the
    # unrounded seconds lie in.
    past, rate = s["past_startup_cpu_s"], s["pages_per_s_cpu"]
    if rate is None:
        assert past <= 0.0005 and c["ratio"]["cpu"] is None
    else:
        assert rate > 0 and past >= 0
        low = len(PAGES) / (past + 0.0005)
        high = len(PAGES) / (past - 0.0005) if past > 0.0005 else float("inf")
        assert low - 0.05 <= rate <= high + 0.05
        if c["ratio"]["cpu"] is not None:
            assert c["ratio"]["cpu"] == pytest.approx(rate / peer["pages_per_s_cpu"], rel=0.01, abs=0.0051)
    assert {"read", "parse", "classify", "total"} <= set(c["stages_ms"])
    assert capsys.readouterr().out.strip() == (out / "speed.md").read_text().strip()


def test_the_bench_stage_lists_follow_the_rows_timing_stages():
    """One list of stage names, the pages schema's TIMING_STAGES: row_stages orders by it, and
    the report's, the profile's and the scaling tables' stages are row stages in its order (the
    report adds the in-process "group" after parse and "write" last)."""
    from sitestrip.schemas.tables import TIMING_STAGES
    from sitestrip_bench import profile_sites, scaling, stages

    assert stages.ROW_STAGES == TIMING_STAGES == profile_sites.STAGES
    assert row_stages([{stage: 1.0 for stage in reversed(TIMING_STAGES)}]) == list(TIMING_STAGES)
    report = [s for s in stages.STAGES if s not in ("group", "write")]
    assert stages.STAGES[2] == "group" and stages.STAGES[-1] == "write"
    for listed in (report, scaling.STAGES):
        assert list(listed) == [s for s in TIMING_STAGES if s in listed]
