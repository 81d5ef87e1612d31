"""Same input, same rows (design "Determinism"): whatever the arrival order of the pages, the
number of local workers, or a `max_site_pages` the sites fit in; and a site over the limit
is cut into shards of at most that many pages, each page in exactly one row."""
import json
import os
import random
from collections import Counter

import pyarrow.dataset as ds
import pytest
import yaml
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline

from sitestrip.configs import DEFAULT_CONFIG, config_from_dict
from sitestrip.pipeline.cli import main
from sitestrip.pipeline.graph import build_pipeline
from sitestrip.schemas import DATASETS
from sitestrip.transforms.shards import shard_urls
from helpers.warcs import response, write_warc

BIG = "docs.example"
SMALL = "tiny.example"
LAYOUT = {"": 2, "guide": 12, "api": 10, "blog": 8}     # 32 pages of BIG by directory
FILES = 3


def _url(site, directory, i):
    return f"https://{site}/" + (f"{directory}/" if directory else "") + f"p{i}.html"


def _page(site, directory, i, count):
    """A templated page: site menu, links to its neighbours in its directory, own text."""
    menu = [_url(site, "", 0)] + [_url(site, d, 0) for d in LAYOUT if d]
    local = [_url(site, directory, (i + step) % count) for step in (1, 2, count - 1)]
    items = "".join(f"<li><a href='{u}'>{u.rsplit('/', 2)[-2:]}</a></li>" for u in menu)
    nav = "".join(f"<a href='{u}'>see {u.rsplit('/', 1)[-1]}</a> " for u in local)
    title = f"{directory or 'home'} {i}"
    body = " ".join(f"{directory or 'home'} page {i} sentence {k} about topic {i * 7 + k}."
                    for k in range(6))
    return (f"<html><head><title>{title}</title></head><body><div id=top><ul class=menu>{items}</ul>"
            f"</div><div id=main><h1>{title}</h1><p>{body}</p><div class=nav>{nav}</div></div>"
            f"<div id=foot>(c) {site}</div></body></html>").encode()


def _record(site, directory, i, count):
    url = _url(site, directory, i)
    # Fixed ids and dates: warcio would draw new ones for every file written.
    warc = {"WARC-Record-ID": f"<urn:test:{url}>", "WARC-Date": "2024-05-01T00:00:00Z"}
    return response(url, _page(site, directory, i, count), warc_headers=warc)


def corpus_records():
    records = [_record(BIG, directory, i, count)
               for directory, count in LAYOUT.items() for i in range(count)]
    return records + [_record(SMALL, "", i, 3) for i in range(3)]


def write_corpus(folder, shuffle_seed=None):
    """The corpus over FILES files; with a seed, each file holds the same records in another order."""
    folder.mkdir(parents=True, exist_ok=True)
    records = corpus_records()
    paths = []
    for f in range(FILES):
        part = records[f::FILES]
        if shuffle_seed is not None:
            random.Random(shuffle_seed + f).shuffle(part)
        paths.append(write_warc(folder / f"part-{f}.warc.gz", part))
    return paths


def run(paths, out, config=None):
    """The pipeline under the shipped defaults (what `sitestrip run` loads), sections
    of `config` replaced."""
    with open(DEFAULT_CONFIG, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    for section, values in (config or {}).items():
        data[section] = {**data.get(section, {}), **values}
    with BeamTestPipeline(runner=FnApiRunner()) as p:
        build_pipeline(p, paths, str(out), config_from_dict(data))
    return out


def rows(out, name, drop=("timing_ms",)):
    """The dataset's rows as sorted JSON strings, without the columns in `drop`."""
    table = ds.dataset(os.path.join(str(out), name), format="parquet").to_table()
    keep = [c for c in table.column_names if c not in drop]
    return sorted(json.dumps(r, sort_keys=True, default=bytes.hex) for r in table.select(keep).to_pylist())


def all_rows(out, drop=("timing_ms",)):
    return {name: rows(out, name, drop) for name in DATASETS}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The corpus in its written order, run once with the default config (no site over the limit)."""
    folder = tmp_path_factory.mktemp("determinism")
    paths = write_corpus(folder / "in")
    return folder, paths, run(paths, folder / "out")


@pytest.mark.beam
@pytest.mark.slow
def test_baseline_covers_every_page(baseline):
    _, _, out = baseline
    pages = [json.loads(r) for r in rows(out, "pages")]
    assert len(pages) == sum(LAYOUT.values()) + 3 and not rows(out, "errors")
    assert Counter(r["site"] for r in pages) == {BIG: 32, SMALL: 3}
    methods = Counter(r["candidate_method"] for r in pages)
    assert methods["cs"] + methods["partial_cs"] > 0   # complete subdigraph searches found pages


@pytest.mark.beam
@pytest.mark.slow
def test_rows_do_not_depend_on_record_or_file_order(baseline, tmp_path):
    """Records shuffled inside every file, files listed in another order: the pages reach the
    per-site step in another order. Offsets move with the records, so they are left out."""
    folder, _, out = baseline
    paths = write_corpus(tmp_path / "in", shuffle_seed=11)
    shuffled = run(list(reversed(paths)), tmp_path / "out")
    drop = ("timing_ms", "warc_offset", "warc_file")
    assert all_rows(shuffled, drop) == all_rows(out, drop)
    # the file a page was read from is the same name in both layouts, relative to its folder
    names = lambda o: sorted((r["url"], os.path.basename(r["warc_file"]))
                             for r in map(json.loads, rows(o, "pages")))
    assert names(shuffled) == names(out)


@pytest.mark.beam
@pytest.mark.slow
def test_rows_do_not_depend_on_the_number_of_local_workers(baseline, tmp_path):
    _, paths, out = baseline
    folder = os.path.dirname(paths[0])
    two = str(tmp_path / "two")
    assert main(["run", "--input", folder, "--output", two, "--workers", "2", "--quiet"]) == 0
    assert all_rows(two) == all_rows(out)


@pytest.mark.beam
@pytest.mark.parametrize("limit", [32, 33, 500])
def test_sites_within_max_site_pages_give_the_same_rows(baseline, tmp_path, limit):
    _, paths, out = baseline
    limited = run(paths, tmp_path / "out", {"site": {"max_site_pages": limit}})
    assert all_rows(limited) == all_rows(out)


@pytest.mark.beam
@pytest.mark.slow
def test_site_over_the_limit_is_cut_into_bounded_shards(baseline, tmp_path, capsys):
    _, paths, out = baseline
    limit = 10
    sharded = run(paths, tmp_path / "out", {"site": {"max_site_pages": limit}})
    pages = [json.loads(r) for r in rows(sharded, "pages")]
    assert not rows(sharded, "errors")
    big = [r for r in pages if r["site"] == BIG]
    assert Counter(r["url"] for r in big) == Counter(_url(BIG, d, i) for d, n in LAYOUT.items()
                                                     for i in range(n))
    shard_of = shard_urls(BIG, [r["url"] for r in big], limit)
    sizes = Counter(shard_of.values())
    assert len(sizes) >= 4 and max(sizes.values()) <= limit
    for row in big:
        # a page is compared only with pages of its own shard
        for url in (row["candidate_urls"] or []) + (row["template_candidate_urls"] or []):
            assert shard_of[url] == shard_of[row["url"]], (row["url"], url)
    # the small site is under the limit: its rows are those of the unsharded run
    small = lambda rs: [r for r in rs if json.loads(r)["site"] == SMALL]
    assert small(rows(sharded, "pages")) == small(rows(out, "pages"))
    # and the sharded run is itself reproducible, here through the command line
    preset = tmp_path / "limit.yaml"
    preset.write_text(f"site:\n  max_site_pages: {limit}\n")
    again = tmp_path / "again"
    assert main(["run", "--input", *reversed(paths), "--output", str(again),
                 "--config", str(preset), "--quiet"]) == 0
    assert all_rows(again) == all_rows(sharded)
    assert (f"hot sites (over site.max_site_pages): 1, 32 pages in {len(sizes)} shards"
            in capsys.readouterr().out)
