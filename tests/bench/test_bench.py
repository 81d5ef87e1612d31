"""The benchmark: scoring, the in-process core, the report and the tuning grid, on a tiny
corpus built here (the fruit site of test_site_step.py, whose rows are derived there by hand)."""
import json
import os
import subprocess
import sys

import pytest

from sitestrip_bench.core import extract_rows, load_corpus
from sitestrip_bench.corpora import GoldPage, read_shared_corpus
from sitestrip_bench.corpus_format import read_corpus
from sitestrip_bench.report import menu_site_table, text_diff
from sitestrip_bench.scoring import aggregate, as_pages, group_scores, menu_sites, score_menus, score_texts, worst_pages
from sitestrip_bench.tune import Stage, markdown_table, run_grid
from sitestrip.configs import load_config
from helpers.fruit import ARTICLES, PAGES
from sitestrip_bench.metrics import PRF
from helpers.warcs import response, write_warc

SITE = "https://fruit.example"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def site_page(name):
    title, first, second = ARTICLES[name]
    menu = "".join(f"<li><a href='/{p}.html'>{p.upper()}</a></li>" for p in PAGES)
    return (f"<html><head><title>{title}</title></head><body>"
            f"<div id=header><h1>Fruit Site</h1><ul id=menu>{menu}</ul></div>"
            f"<div id=content><h2>{title}</h2><p>{first}</p><p>{second}</p></div>"
            f"<div id=footer><p>Copyright 2024 Fruit Site</p></div></body></html>").encode()


def article(name):
    return "\n".join(ARTICLES[name])


# The WARC names page a as a crawler may: its rows keep that URI in `url`, and gold (written
# as SITE/a.html) joins them by `url_normalized`.
RAW_URI_A = "https://FRUIT.example:443/a.html"


@pytest.fixture
def corpus_dir(tmp_path):
    """Shared-corpus format: warc/ + gold.jsonl. The gold has one page the WARC lacks."""
    root = tmp_path / "fruit-dev"
    (root / "warc").mkdir(parents=True)
    write_warc(root / "warc" / "part-00000.warc.gz",
               [response(RAW_URI_A if p == "a" else f"{SITE}/{p}.html", site_page(p)) for p in PAGES])
    with open(root / "gold.jsonl", "w") as fh:
        for p in PAGES:
            fh.write(json.dumps({"url": f"{SITE}/{p}.html", "site": "fruit", "corpus": "fruit-dev",
                                 "genre": "docs", "main_text": article(p),
                                 "menu_links": [f"{SITE}/{x}.html" for x in PAGES]}) + "\n")
        fh.write(json.dumps({"url": f"{SITE}/missing.html", "site": "fruit", "corpus": "fruit-dev",
                             "genre": "news", "main_text": "Four words are here.",
                             "menu_links": None}) + "\n")
    return str(root)


def gold(url, text, genre="g", corpus="c", site="s", menu=None):
    return GoldPage(url=url, site=site, corpus=corpus, genre=genre, main_text=text, menu_links=menu)


# --- scoring (design §9) -----------------------------------------------------------------

def test_word_scores_mean_and_micro_by_hand():
    pages = [gold("u1", "a b c d"), gold("u2", "x y")]
    # u1: output "a b e" → overlap 2, predicted 3, expected 4: P 2/3, R 1/2, F1 4/7.
    # u2: no output → overlap 0, predicted 0, expected 2: P 0 (nothing predicted, something
    #     expected), R 0, F1 0.
    scores = score_texts("sys", pages, {"u1": "A b e"})
    assert [s.words for s in scores] == [PRF(2, 3, 4), PRF(0, 0, 2)]
    agg = aggregate([s.words for s in scores])
    assert agg.mean_f1 == pytest.approx((4 / 7 + 0) / 2)
    assert agg.mean_p == pytest.approx(1 / 3)
    # micro: overlap 2, predicted 3, expected 6 → P 2/3, R 1/3, F1 4/9.
    assert agg.micro == PRF(2, 3, 6) and agg.micro.f1 == pytest.approx(4 / 9)


def test_groups_keep_corpora_apart_and_worst_pages_first():
    pages = [gold("u1", "a b", genre="news", corpus="c1"), gold("u2", "a b", genre="news", corpus="c2"),
             gold("u3", "a b c d", genre="docs", corpus="c2")]
    scores = score_texts("sys", pages, {"u1": "a b", "u2": "a", "u3": "z"})
    by_genre = group_scores(scores, "genre")
    assert set(by_genre) == {("sys", ("c1", "news")), ("sys", ("c2", "news")), ("sys", ("c2", "docs"))}
    assert by_genre[("sys", ("c1", "news"))].mean_f1 == 1.0
    assert by_genre[("sys", ("c2", "news"))].mean_f1 == pytest.approx(2 / 3)
    assert group_scores(scores, "all")[("sys", "all")].pages == 3
    # u3 (F1 0, 4 gold words) before u2 (F1 2/3) before u1 (F1 1).
    assert [s.url for s in worst_pages(scores, 2)] == ["u3", "u2"]


def test_menu_scores_only_where_gold_has_menu_links():
    pages = [gold("u1", "t", menu=("m1", "m2", "m3")), gold("u2", "t", menu=None)]
    scores = score_menus("sys", pages, {"u1": ("m1", "m4"), "u2": ("m9",)})
    assert len(scores) == 1 and scores[0].menu == PRF(1, 2, 3)


def test_menu_links_compare_as_pages_and_score_per_site():
    """Links compared as pages: m1#a and m1#b are the page m1, twice; the gold's m3#top is m3.
    u1: predicted {m1, m2}, expected {m1, m3}: PRF(1, 2, 2). u2 (site t): predicted {m9},
    expected {m9}: F1 1. u3 (site s): nothing predicted: F1 0. Site s: mean F1 (0.5 + 0) / 2 =
    0.25; site t: 1; mean over sites 0.625, the weakest site s."""
    assert as_pages(["m1#a", "m1#b", "m2"]) == {"m1", "m2"}
    pages = [gold("u1", "t", menu=("m1", "m3#top")), gold("u2", "t", site="t", menu=("m9",)),
             gold("u3", "t", menu=("m4",))]
    scores = score_menus("sys", pages, {"u1": ("m1#a", "m1#b", "m2"), "u2": ("m9",)})
    assert [s.menu for s in scores] == [PRF(1, 2, 2), PRF(1, 1, 1), PRF(0, 0, 1)]
    sites = menu_sites(scores)
    assert sites["sites"]["s"]["mean_f1"] == 0.25 and sites["sites"]["t"]["mean_f1"] == 1.0
    assert (sites["mean_f1_over_sites"], sites["min_site"], sites["min_site_f1"]) == (0.625, "s", 0.25)
    assert menu_sites([]) == {}
    table = menu_site_table({"corpora": [{"name": "c", "menu_sites": sites}, {"name": "d", "menu_sites": {}}]})
    assert "| c | s | 2 | 0.250 / 0.250 / 0.250 |" in table     # u3's P is 0: nothing predicted
    assert table[-1] == "| c | **mean over 2 sites** | | **0.625** (weakest: s 0.250) |"


def test_text_diff_marks_gold_and_output_lines():
    diff = text_diff("kept\nmissed line", "kept\nleaked menu")
    assert "-missed line" in diff and "+leaked menu" in diff and "kept" not in diff.replace("--- gold", "")
    assert text_diff("\n".join(map(str, range(100))), "", limit=5).endswith("more diff lines")


# --- corpora and the in-process core ----------------------------------------------------

def test_shared_corpus_reader(corpus_dir, tmp_path):
    corpus = read_corpus(corpus_dir, str(tmp_path / "work"))
    assert corpus.name == "fruit-dev" and corpus.kind == "warc" and len(corpus.warc_paths) == 1
    assert [g.url for g in corpus.gold][:2] == [f"{SITE}/a.html", f"{SITE}/b.html"]
    assert corpus.gold[0].menu_links == tuple(f"{SITE}/{x}.html" for x in PAGES)
    assert corpus.gold[-1].menu_links is None and corpus.genres == ["docs", "news"]
    with pytest.raises(ValueError, match="gold.jsonl"):
        read_shared_corpus(str(tmp_path))


@pytest.mark.beam
@pytest.mark.slow
def test_core_rows_equal_the_pipeline_rows(corpus_dir, tmp_path):
    corpus = read_shared_corpus(corpus_dir)
    loaded = load_corpus(corpus.warc_paths, keep_html=True)
    assert list(loaded.records) == ["fruit.example"] and len(loaded.html) == 5
    rows = {r["url"]: r for r in extract_rows(loaded, load_config(), processes=2)}
    assert rows[RAW_URI_A]["url_normalized"] == f"{SITE}/a.html"
    assert rows[RAW_URI_A]["main_text"] == article("a")   # as derived in test_site_step.py
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--input", *corpus.warc_paths,
                    "--output", str(out), "--quiet"], check=True, cwd=REPO, capture_output=True)
    import pyarrow.dataset as ds
    piped = ds.dataset(str(out / "pages"), format="parquet").to_table(
        columns=["url", "main_text", "nontemplate_text", "candidate_method"]).to_pylist()
    assert {r["url"]: (r["main_text"], r["nontemplate_text"], r["candidate_method"]) for r in piped} == \
        {u: (r["main_text"], r["nontemplate_text"], r["candidate_method"]) for u, r in rows.items()}


# --- the whole command ------------------------------------------------------------------

@pytest.mark.beam
@pytest.mark.slow
def test_bench_command_scores_reports_and_draws(corpus_dir, tmp_path):
    pytest.importorskip("matplotlib")
    from sitestrip_bench.cli import main
    out = tmp_path / "results"
    # Site ConEx (the expected texts of test_site_step.py); one site is too few to cross-validate the
    # block models, so the run is the product's column.
    conex = tmp_path / "conex.yaml"
    conex.write_text("main_content:\n  method: conex\n")
    assert main(["bench", "--corpus", corpus_dir, "--out", str(out), "--peers", "none",
                 "--config", str(conex)]) == 0
    summary = json.loads((out / "results.json").read_text())
    assert summary["cross_validation"]["product_column"].startswith("the run's own output")
    (c,) = summary["corpora"]
    q = c["quality"]["sitestrip"]["corpus"]["fruit-dev"]
    # Five pages extracted exactly (test_site_step.py), one gold page absent from the WARC: F1 0.
    assert q["pages"] == 6 and q["mean_f1"] == pytest.approx(5 / 6, abs=1e-4)
    assert c["quality"]["sitestrip"]["genre"]["news"]["mean_f1"] == 0.0
    # The tuned conex_n is 5 and each page has 4 others: the subdigraph is partial.
    assert c["menus"]["mean_f1"] == 1.0 and c["methods"] == {"partial_cs": 5}
    assert c["menu_sites"]["sites"]["fruit"]["pages"] == 5 and c["menu_sites"]["mean_f1_over_sites"] == 1.0
    assert c["product"]["pages"] == 5 and c["product"]["max_rss_mb"] > 20
    assert c["product"]["stages_ms"]["etdm"]["pages"] == 5
    assert c["product"]["stages_ms"]["group"]["p50"] > 0
    assert 0 < c["product"]["compact_wire_bytes"] < 10 * c["product"]["html_bytes"]
    assert c["worst"][0]["url"] == f"{SITE}/missing.html" and c["worst"][0]["f1"] == 0.0
    # The links dataset (bench/sitestrip_bench/links.py): each page's five menu links, all to gold menu targets,
    # all in the menu (one of them the page itself, left out of the clean measure); no anchor
    # ("A".."E") stands in a gold main text; no manifest, so no selector measure.
    links = c["links"]
    assert (links["links"], links["links_per_page"], links["regions"]) == (25, 5.0, {"menu": 25})
    assert links["gold_columns"]["menu"] == {"links": 25, "accuracy": 1.0, "clean_links": 20, "accuracy_clean": 1.0}
    assert links["gold_columns"]["main"]["links"] == 0 and "selectors" not in links
    assert links["links_bytes_per_page"] > 0 and links["stage_ms_per_page"]["pages"] == 5
    assert c["product"]["stages_ms"]["links"]["pages"] == 5
    report = (out / "report.md").read_text()
    assert "## Links dataset" in report and "| fruit-dev | 5.0 |" in report
    assert "| fruit-dev | 6 | **0.833** | – |" in report     # no peer: no gap
    assert "-Four words are here." in report          # the worst page's diff
    assert "| fruit-dev | **mean over 1 sites** | | **1.000** (weakest: fruit 1.000) |" in report
    for chart in ("f1_by_corpus", "f1_by_genre", "speed", "methods", "template_share"):
        assert (out / f"{chart}.png").read_bytes()[:4] == b"\x89PNG"
        assert f"({chart}.png)" in report


@pytest.mark.beam
@pytest.mark.slow
def test_bench_runs_a_peer_on_the_same_pages(corpus_dir, tmp_path):
    pytest.importorskip("trafilatura")
    from sitestrip_bench.run import run_bench
    summary = run_bench([corpus_dir], str(tmp_path / "r"), peers=["trafilatura"], charts=False,
                        log=lambda m: None)
    (c,) = summary["corpora"]
    peer = c["peers"]["trafilatura"]
    assert peer["pages"] == 6 and peer["error"] is None and peer["pages_per_second"] > 0
    traf = c["quality"]["trafilatura"]["corpus"]["fruit-dev"]
    assert traf["pages"] == 6 and 0 < traf["mean_f1"] <= 5 / 6 + 1e-9   # the missing page scores 0
    assert "trafilatura pages/s" in (tmp_path / "r" / "report.md").read_text()


def test_bench_rejects_unknown_peers_and_bad_corpora(tmp_path, capsys):
    from sitestrip_bench.cli import main
    assert main(["bench", "--corpus", str(tmp_path), "--out", str(tmp_path / "o"), "--peers", "nope"]) == 2
    assert "unknown peer" in capsys.readouterr().err
    assert main(["bench", "--corpus", str(tmp_path), "--out", str(tmp_path / "o"), "--peers", "none"]) == 2
    assert "neither a shared corpus" in capsys.readouterr().err


# --- tuning -----------------------------------------------------------------------------

def test_grid_keeps_the_incumbent_on_ties_and_drops_worse_variants(corpus_dir, tmp_path):
    corpus = read_shared_corpus(corpus_dir)
    # votes 4 > n: no node is template, so header, menu and footer stay in
    # nontemplate_text and its precision falls; votes 1 (the shipped default) and 2
    # both find the template of this site. "v=2" comes first and ties: the incumbent stays.
    stages = (Stage("votes", "nontemplate_text", (
        ("v=4", {"template.votes": 4}), ("v=2", {"template.votes": 2}), ("v=1", {"template.votes": 1}))),)
    report = run_grid([corpus], str(tmp_path / "t"), processes=1, stages=stages, log=lambda m: None)
    (stage,) = report["stages"]
    scores = {r["label"]: r["objective"] for r in stage["rows"]}
    assert scores["v=4"] < scores["v=2"] == scores["v=1"]
    assert stage["winner"] == "v=1" and report["final"]["template"]["votes"] == 1
    cache = json.loads((tmp_path / "t" / "tune-cache.json").read_text())
    assert len(cache) == 3
    # A second run reads every result from the cache.
    again = run_grid([corpus], str(tmp_path / "t"), processes=1, stages=stages, log=lambda m: None)
    assert again["stages"][0]["rows"] == stage["rows"]
    table = markdown_table(report)
    assert "| **v=1** |" in table and "| v=4 |" in table


def test_tune_command_runs_named_stages_only(corpus_dir, tmp_path, capsys):
    from sitestrip_bench.cli import main
    assert main(["tune", "--corpus", corpus_dir, "--out", str(tmp_path / "t"), "--processes", "1",
                 "--stage", "link_blocks"]) == 0
    report = json.loads((tmp_path / "t" / "tune.json").read_text())
    assert [s["name"] for s in report["stages"]] == ["link_blocks"]
    assert len(report["stages"][0]["rows"]) == 5
    assert "### link_blocks" in (tmp_path / "t" / "tune.md").read_text()
    assert "link_blocks.enabled: True" in capsys.readouterr().out
    assert main(["tune", "--corpus", corpus_dir, "--out", str(tmp_path / "t"), "--stage", "nope"]) == 2


@pytest.mark.slow
def test_link_regions_against_the_gold_columns_and_the_selectors(tmp_path):
    """bench/sitestrip_bench/links.py on tests/test_outlinks.py's site (conex, site menus: the sidebar is the
    menu, the inline reference main, the related list other, logo and footer template), with a
    manifest whose selectors say the same: menu ul.side, main div.body without ul.related.
    Gold columns, by hand: the menu targets are the four sidebar pages, each page links them
    once from the sidebar (16 links, all menu), 12 of them neither the page itself nor an
    anchor in the page's main text ("Alpha" on alpha's page is both); the main set is each
    page's "X reference" (its words stand in the gold main text), 4 links, all main.
    Selectors: the 16 sidebar links are gold menu and marked menu, the 4 references gold main
    and marked main, and nothing else is marked main."""
    from sitestrip_bench.corpora import Corpus
    from sitestrip_bench.links import gold_column_scores, selector_scores
    from sitestrip.configs import config_from_dict
    from sitestrip.transforms.page import PRODUCT_RULES
    from helpers.linksite import NAMES, site_html, site_rows

    (tmp_path / "manifest.json").write_text(json.dumps({"sites": {"docs": {"selectors": {
        "main": ["div.body"], "exclude": ["ul.related"], "menu": "ul.side"}}}}))
    sidebar = tuple(f"https://docs.test/{n}.html" for n in NAMES)
    golds = [GoldPage(url=f"https://docs.test/{n}.html", site="docs", corpus="docs-dev", genre="docs",
                      main_text=f"{n}\nAbout {n} and more words here, and the {n} reference with many more words "
                                f"about {n} to read.\n{n} closing words of the page, a long sentence of plain text.",
                      menu_links=sidebar) for n in NAMES]
    corpus = Corpus(name="docs-dev", warc_paths=[], gold=golds, source=str(tmp_path))
    _pages, rows = site_rows(config_from_dict({"main_content": {"method": "conex"}, "site_menus": {"enabled": True},
                                               "output": {"links": True}}))
    by_page = {}
    for row in rows:
        by_page.setdefault(row["source_url"], []).append(row)
    columns = gold_column_scores(corpus, by_page)
    assert columns["menu"] == {"links": 16, "accuracy": 1.0, "clean_links": 12, "accuracy_clean": 1.0}
    assert columns["main"] == {"links": 4, "accuracy": 1.0, "clean_links": 4, "accuracy_clean": 1.0}
    html = {g.url: site_html(g.url.rsplit("/", 1)[-1][:-5]) for g in golds}
    sel = selector_scores(corpus, by_page, html, PRODUCT_RULES)
    assert (sel["pages"], sel["pages_not_matched"], sel["menu_links"], sel["menu"], sel["main_links"], sel["main"],
            sel["main_precision"]) == (4, 0, 16, 1.0, 4, 1.0, 1.0)
    assert sel["regions_by_gold"]["other"] == {"template": 8, "other": 24}
    assert sel["rows_ms_per_page"]["pages"] == 4

    # A site listed with every selector null (the news corpora's manifests: their gold comes
    # from the dataset's files) has no selector regions: its pages are left out, and a corpus
    # of such sites only has no selector scores at all.
    (tmp_path / "manifest.json").write_text(json.dumps({"sites": {
        "docs": {"selectors": {"main": ["div.body"], "exclude": ["ul.related"], "menu": "ul.side"}},
        "news": {"selectors": {"main": None, "exclude": None, "menu": None, "note": "gold from elsewhere"}}}}))
    news = GoldPage(url="https://news.test/a.html", site="news", corpus="docs-dev", genre="news",
                    main_text="A story.", menu_links=())
    mixed = Corpus(name="docs-dev", warc_paths=[], gold=golds + [news], source=str(tmp_path))
    by_page[news.url] = [dict(by_page[golds[0].url][0], source_url=news.url)]
    html[news.url] = html[golds[0].url]
    again = selector_scores(mixed, by_page, html, PRODUCT_RULES)
    assert {k: v for k, v in again.items() if k != "rows_ms_per_page"} == \
        {k: v for k, v in sel.items() if k != "rows_ms_per_page"}
    (tmp_path / "manifest.json").write_text(json.dumps({"sites": {
        "news": {"selectors": {"main": None, "exclude": None, "menu": None}}}}))
    assert selector_scores(Corpus(name="news-dev", warc_paths=[], gold=[news], source=str(tmp_path)),
                           by_page, html, PRODUCT_RULES) is None
