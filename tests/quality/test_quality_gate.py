"""The main-content quality gate (docs/development.md "Quality gate"): hand-written gold pages scored with the
product's word F1 against floors, and what the embedded sample must give.

A floor is a measured score minus a margin (tests/quality/floors.json); a change that lowers a
page type's mean F1 or the overall mean below it fails here. `python tests/quality/gate.py`
prints the scores, `--write-floors` raises the floors after an improvement."""
import dataclasses
import json
import os
import re
from collections import Counter

import pytest

import gate

from sitestrip_bench.core import extract_rows, load_corpus
from sitestrip.configs import load_config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(REPO, "sample", "sitestrip-sample.warc.gz")
with open(os.path.join(gate.HERE, "sample_expectations.json"), encoding="utf-8") as _f:
    EXPECT = json.load(_f)


def squash(text: str) -> str:
    return "".join(text.split())


def lines_of(text) -> list[str]:
    return [line for line in (text or "").split("\n") if line.strip()]


@pytest.fixture(scope="module")
def pages():
    return gate.load_gold()


@pytest.fixture(scope="module")
def rows(pages, tmp_path_factory):
    return gate.extract(pages, workdir=str(tmp_path_factory.mktemp("gold")))


@pytest.fixture(scope="module")
def sample_rows():
    config = load_config()
    return {r["url"]: r for r in extract_rows(load_corpus([SAMPLE], config.read), config, processes=1)}


# --- the gold set itself -----------------------------------------------------------------

def test_gold_markers_follow_the_convention():
    marked = ('<html><body><div class="nav">Home</div><h1 data-gold="headline">Title</h1>'
              '<div data-gold><p>Kept <b>bold</b>text.</p><p data-gold="no">Read more: x</p>'
              '<figure><figcaption data-gold="no">Caption</figcaption></figure>'
              '<pre>a = 1\n  b = 2</pre><ul><li>one</li><li>two</li></ul></div>'
              '<p>Footer</p></body></html>')
    assert gate.gold_text(marked, headline_in_main=False) == "Kept boldtext.\na = 1\nb = 2\none\ntwo"
    assert gate.gold_text(marked, headline_in_main=True).startswith("Title\nKept")


def test_gold_set_covers_page_types_and_site_shapes(pages):
    assert 25 <= len(pages) <= 40
    assert {p.page_type for p in pages} == set(gate.TYPES)
    per_site = Counter(p.site for p in pages)
    assert sum(3 <= n <= 6 for n in per_site.values()) >= 4      # template detection runs
    assert sum(n == 1 for n in per_site.values()) >= 5           # no site signal at all
    for p in pages:
        assert p.gold and "data-gold" not in p.html, p.url
        assert len(p.gold.split()) >= 50, p.url


def test_gold_leaves_out_what_the_convention_says(pages):
    by_url = {p.url: p for p in pages}
    ferry = by_url["https://harbourgazette.example/news/2026/ferry-timetable.html"].gold
    assert ferry.startswith("Islanders say the last crossing")                # standfirst in, headline out
    for boilerplate in ("Photograph: Dan Penrose", "By Morwenna Tait", "07:15", "Read more:",
                        "Related stories", "morning briefing", "Share this article"):
        assert boilerplate not in ferry
    assert "¶" not in "".join(p.gold for p in pages if p.page_type == "documentation")
    assert "Legacy option names" not in by_url["https://docs.tallow.example/en/2.4/configuration.html"].gold
    tent = by_url["https://trailforum.example/t/condensation-in-single-wall-tent"].gold
    assert "microfibre cloth" in tent and "Like (" not in tent                 # replies are the content


def test_multi_page_sites_are_compared_single_page_sites_are_not(pages, rows):
    for p in pages:
        method = rows[p.url]["candidate_method"]
        assert (method != "page_only") == p.multi_page, (p.url, method)


# --- the floors --------------------------------------------------------------------------

def test_floors_name_every_page_type():
    floors = gate.read_floors()
    assert set(floors["types"]) == set(gate.TYPES)
    assert floors["headline_in_main"] == gate.HEADLINE_IN_MAIN
    for t, floor in floors["types"].items():
        assert 0.0 <= floor <= floors["measured"]["types"][t], t


def test_main_text_stays_above_the_floors(pages, rows):
    scores = gate.score(pages, rows)
    failures = gate.below_floors(scores, gate.read_floors())
    assert not failures, "\n".join(failures) + "\n\n" + gate.report(pages, rows, scores, gate.read_floors())


def test_the_floors_catch_a_weaker_main_content_method(pages, tmp_path):
    # Site ConEx, the published method, loses whole page types against the learned model: the
    # gate must see that, or its floors are too low to catch a real regression.
    config = load_config()
    conex = dataclasses.replace(config, main_content=dataclasses.replace(config.main_content, method="conex"))
    weaker = gate.score(pages, gate.extract(pages, conex, workdir=str(tmp_path)))
    failures = gate.below_floors(weaker, gate.read_floors())
    assert any(f.startswith("product:") for f in failures) and any(f.startswith("overall:") for f in failures)


def test_the_floors_catch_one_dropped_page(pages, rows):
    worst_hit = dict(rows)
    lost = next(p.url for p in pages if p.page_type == "product")
    worst_hit[lost] = {**rows[lost], "main_text": ""}
    failures = gate.below_floors(gate.score(pages, worst_hit), gate.read_floors())
    assert any(f.startswith("product:") for f in failures)


def test_floors_are_raised_not_lowered_by_default(pages, rows):
    scores = gate.score(pages, rows)
    high = {"types": {t: 0.999 for t in gate.TYPES}, "overall": 0.999}
    kept = gate.new_floors(scores, high, margin=0.02, allow_lower=False)
    assert kept["types"] == high["types"] and kept["overall"] == 0.999
    lowered = gate.new_floors(scores, high, margin=0.02, allow_lower=True)
    assert lowered["overall"] == pytest.approx(scores.overall - 0.02, abs=0.001)


# --- the embedded sample: lines it must keep or drop ---------------------------------------------

def test_sample_expectations_are_the_pages_visible_text(sample_rows):
    # The hand-derived lines must all be on the pages (nontemplate_text holds them today), or
    # the targets below could never pass.
    pragma = sample_rows[EXPECT["pragma"]["url"]]
    visible = {squash(line) for line in lines_of(pragma["nontemplate_text"])}
    assert len(EXPECT["pragma"]["syntax_lines"]) == 132
    assert all(squash(line) in visible for line in EXPECT["pragma"]["syntax_lines"])
    about = sample_rows[EXPECT["about"]["url"]]
    assert len(EXPECT["about"]["summary_bullets"]) == 15
    visible = {squash(line) for line in lines_of(about["nontemplate_text"])}
    assert all(squash(b) in visible for b in EXPECT["about"]["summary_bullets"])
    assert hidden_heading_leaks(pragma["nontemplate_text"]) == EXPECT["pragma"]["hidden_headings"]


def hidden_heading_leaks(text) -> list[str]:
    """The display:none headings whose text is in `text` as a line of its own or at the end of
    one (`<h>` is no block element, so a browser-less reading glues it to the paragraph before),
    beyond the visible syntax lines that read the same (e.g. "PRAGMA fullfsync")."""
    syntax = Counter(EXPECT["pragma"]["syntax_lines"])
    normalized = [" ".join(line.split()) for line in lines_of(text)]
    leaks = []
    for heading in EXPECT["pragma"]["hidden_headings"]:
        ending = re.compile(r"(^|\s)" + re.escape(heading) + "$")
        if sum(1 for line in normalized if ending.search(line)) > syntax[heading]:
            leaks.append(heading)
    return leaks


@pytest.mark.xfail(strict=True, reason="13 of the 132 PRAGMA syntax lines are dropped from main_text")
def test_sample_pragma_keeps_its_syntax_lines(sample_rows):
    main = {squash(line) for line in lines_of(sample_rows[EXPECT["pragma"]["url"]]["main_text"])}
    missing = [line for line in EXPECT["pragma"]["syntax_lines"] if squash(line) not in main]
    assert not missing, f"{len(missing)} missing, e.g. {missing[:5]}"


def test_sample_pragma_hidden_headings_are_not_main_text(sample_rows):
    leaks = hidden_heading_leaks(sample_rows[EXPECT["pragma"]["url"]]["main_text"])
    assert not leaks, f"{len(leaks)} hidden headings in main_text, e.g. {leaks[:5]}"


def test_sample_about_keeps_every_summary_bullet(sample_rows):
    main = {squash(line) for line in lines_of(sample_rows[EXPECT["about"]["url"]]["main_text"])}
    missing = [b for b in EXPECT["about"]["summary_bullets"] if squash(b) not in main]
    assert not missing, missing


def test_sample_click_headings_are_main_text(sample_rows):
    for url, headings in EXPECT["click"]["headings"].items():
        main = {squash(line.replace("¶", "")) for line in lines_of(sample_rows[url]["main_text"])}
        assert [h for h in headings if squash(h) not in main] == [], url


def test_sample_click_headings_have_no_pilcrow(sample_rows):
    click = {url: row["main_text"] or "" for url, row in sample_rows.items() if "click.palletsprojects" in url}
    assert len(click) == 24
    assert [url for url, text in click.items() if "¶" in text] == []
