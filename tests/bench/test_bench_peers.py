"""Peer extractors for the benchmark (bench/sitestrip_bench/peers.py): the adapters on a hand-written
article page, and the subprocess runner's accounting of time, memory, failures,
crashes and timeouts."""
import importlib.metadata
import json
import sys
import time

import pytest

from sitestrip_bench import peers
from sitestrip_bench.peers import PEER_NAMES, PEERS, Peer, PeerUnavailable, available_peers, element_text, fragment_text, run_peer, write_pages

DISTINCT = "The cormorants nesting on the abandoned mill race turned out to be the most reliable witnesses"
FOOTER = "Copyright 2024 Field Notes Media Group"
NAV = ("Home", "News", "Science", "Travel", "Contact")

ARTICLE_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Rivers of the Lowlands - Field Notes</title></head>
<body>
<nav><ul>
<li><a href="/">Home</a></li><li><a href="/news">News</a></li><li><a href="/science">Science</a></li>
<li><a href="/travel">Travel</a></li><li><a href="/contact">Contact</a></li>
</ul></nav>
<header><h1>Field Notes Magazine</h1></header>
<article>
<h2>How the old river found its new course</h2>
<p>When the spring floods arrived three weeks earlier than usual, the farmers along the lower
valley watched the water climb past the marks their grandparents had painted on the barn walls.
Nobody expected the river to leave its bed entirely, yet by the end of April it had cut a fresh
channel through the eastern meadows and abandoned the town mill.</p>
<p>Hydrologists from the regional university spent the summer measuring the new channel with
boats, drones and a great deal of patience. The cormorants nesting on the abandoned mill race turned out to be the most reliable witnesses
of how quickly the water level had dropped in the old bed. Their findings suggest that decades of
gravel extraction upstream had quietly weakened the banks long before the flood came.</p>
<p>The town council has now voted to let the river keep its new course rather than spend millions
forcing it back. Local schools have started taking pupils to the new banks every Friday, where
they count birds, measure the current and write short reports that are later published in the
weekly newspaper for everyone to read.</p>
</article>
<footer><p>Copyright 2024 Field Notes Media Group. All rights reserved.</p></footer>
</body></html>"""

# Import names of the peers' libraries, for skipping where the bench extra is not installed.
IMPORTS = {
    "trafilatura": "trafilatura",
    "trafilatura_precision": "trafilatura",
    "resiliparse": "resiliparse.extract.html2text",
    "readability": "readability",
    "justext": "justext",
    "boilerpy3": "boilerpy3.extractors",
}
# boilerpy3's ArticleExtractor keeps the footer line of this page; the others drop it.
KEEPS_FOOTER = {"boilerpy3"}


def lines_of(text):
    return [line.strip() for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("name", PEER_NAMES)
def test_adapter_extracts_the_article(name):
    pytest.importorskip(IMPORTS[name])
    text = PEERS[name].load()(ARTICLE_PAGE, "http://example.org/rivers/new-course")
    assert isinstance(text, str)
    # Source line breaks inside a paragraph must not survive into the text.
    assert DISTINCT in " ".join(text.split())
    assert not set(NAV) & set(lines_of(text))
    if name not in KEEPS_FOOTER:
        assert FOOTER not in text
    # One line per block: the three paragraphs are not run together.
    assert sum("abandoned the town mill." in line and "Hydrologists" not in line for line in lines_of(text)) == 1


def test_peer_table_describes_installed_versions():
    assert tuple(PEERS) == PEER_NAMES
    for name, peer in PEERS.items():
        assert peer.name == name and peer.settings
        try:
            expected = importlib.metadata.version(peer.package)
        except importlib.metadata.PackageNotFoundError:
            expected = None
        assert peer.version() == expected
    assert "all-language stoplist" in PEERS["justext"].settings
    assert "favor_precision=True" in PEERS["trafilatura_precision"].settings
    found = available_peers()
    assert set(found) == {n for n in PEER_NAMES if PEERS[n].version() is not None}
    assert available_peers(["no_such_peer", "_no_such_hook"]) == {}


def test_load_of_a_missing_module_raises_peer_unavailable():
    ghost = Peer("ghost", "no-such-distribution-sitestrip", "nothing", "no_such_module_sitestrip", lambda: None)
    assert ghost.version() is None
    with pytest.raises(PeerUnavailable):
        ghost.load()


def test_fragment_text_puts_blocks_on_lines_and_skips_scripts():
    fragment = (
        "<div><h2>Title  here</h2><p>First <b>bold</b>\n  words<!-- note -->, then tail.</p>"
        "<script>var x = 1;</script><p>Line one<br>line two</p>"
        "<table><tr><td>a</td><td>b</td></tr></table><ul><li>x</li><li>y</li></ul></div>"
    )
    assert fragment_text(fragment).split("\n") == [
        "Title here", "First bold words, then tail.", "Line one", "line two", "a b", "x", "y",
    ]
    assert fragment_text("") == ""
    assert fragment_text("<div>only text</div>") == "only text"


def test_element_text_handles_trees_deeper_than_the_recursion_limit():
    from lxml import etree

    root = node = etree.Element("div")
    for _ in range(sys.getrecursionlimit() * 3):
        node = etree.SubElement(node, "div")
    node.text = "deep"
    node.tail = "after"
    assert element_text(root) == "deep\nafter"


def test_write_pages_round_trips_awkward_text(tmp_path):
    pages = [("http://a/1", "<p>caf\u00e9 \u4e2d\u6587</p>"), ("http://a/2", "lone \udcff surrogate")]
    path = tmp_path / "pages.jsonl"
    assert write_pages(iter(pages), str(path)) == 2
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(r["url"], r["html"]) for r in rows] == pages


def test_run_peer_trafilatura_end_to_end(tmp_path):
    pytest.importorskip("trafilatura")
    pages = [
        ("http://example.org/a", ARTICLE_PAGE),
        ("http://example.org/b", ARTICLE_PAGE.replace("cormorants", "herons")),
        ("http://example.org/garbage", "\x00\x01 <<<>>> &&& </div></div>"),
    ]
    pages_path = tmp_path / "pages.jsonl"
    write_pages(pages, str(pages_path))
    run = run_peer("trafilatura", str(pages_path), str(tmp_path / "out"), timeout=300)
    assert run.error is None, run.error
    assert run.name == "trafilatura" and run.version == importlib.metadata.version("trafilatura")
    assert run.pages == 3 and not run.timed_out
    assert set(run.texts) == {url for url, _ in pages}
    assert DISTINCT in " ".join(run.texts["http://example.org/a"].split())
    assert "herons nesting" in run.texts["http://example.org/b"]
    assert run.texts["http://example.org/garbage"].strip() == ""
    assert set(run.page_ms) == set(run.texts) and all(ms > 0 for ms in run.page_ms.values())
    assert run.cpu_seconds > 0 and run.max_rss_mb > 10
    # Only the calls are timed: well under the child's CPU time, which includes importing trafilatura.
    assert 0 < run.wall_seconds < run.cpu_seconds
    assert run.wall_seconds == pytest.approx(sum(run.page_ms.values()) / 1000, rel=1e-6)


def test_run_peer_unknown_or_uninstalled_peer_starts_no_process(tmp_path, monkeypatch):
    pages_path = tmp_path / "pages.jsonl"
    write_pages([("http://example.org/a", ARTICLE_PAGE)], str(pages_path))
    out = tmp_path / "out"

    run = run_peer("no_such_peer", str(pages_path), str(out))
    assert run.error == "unknown peer" and run.texts == {} and run.version is None

    ghost = Peer("trafilatura", "no-such-distribution-sitestrip", "nothing", "no_such_module_sitestrip", lambda: None)
    monkeypatch.setitem(peers.PEERS, "trafilatura", ghost)
    run = run_peer("trafilatura", str(pages_path), str(out))
    assert run.error == "not installed" and run.texts == {} and run.version is None
    assert not out.exists()
    assert "trafilatura" not in available_peers()


def test_run_peer_counts_raised_pages_and_survives_a_worker_crash(tmp_path):
    pages = [
        ("http://t/1", "fine one"),
        ("http://t/2", "please RAISE here"),
        ("http://t/3", "fine three"),
        ("http://t/4", "now EXIT the worker"),
        ("http://t/5", "never reached"),
    ]
    pages_path = tmp_path / "pages.jsonl"
    write_pages(pages, str(pages_path))
    run = run_peer("_crash", str(pages_path), str(tmp_path / "out"), timeout=120)
    assert not run.timed_out
    assert run.pages == 5 and run.failed == 3          # one raised, two never written
    assert run.texts == {"http://t/1": "fine one", "http://t/2": "", "http://t/3": "fine three",
                         "http://t/4": "", "http://t/5": ""}
    assert set(run.page_ms) == {"http://t/1", "http://t/2", "http://t/3"}
    assert run.error.startswith("worker exited with code 3")

    # Without the exit the same peer finishes cleanly, the raised page recorded per page.
    write_pages(pages[:3], str(pages_path))
    run = run_peer("_crash", str(pages_path), str(tmp_path / "out"), timeout=120)
    assert run.error is None and run.failed == 1 and run.texts["http://t/2"] == ""
    out_rows = [json.loads(line) for line in (tmp_path / "out" / "_crash.jsonl").read_text().splitlines()]
    assert out_rows[1]["error"] == "ValueError: asked to raise"
    assert "summary" in out_rows[-1]


@pytest.mark.slow
def test_run_peer_kills_a_worker_past_its_timeout(tmp_path):
    pages = [("http://s/1", "a"), ("http://s/2", "b")]
    pages_path = tmp_path / "pages.jsonl"
    write_pages(pages, str(pages_path))
    start = time.monotonic()
    run = run_peer("_sleep", str(pages_path), str(tmp_path / "out"), timeout=1.0)
    elapsed = time.monotonic() - start
    assert run.timed_out
    assert elapsed < 5
    assert run.pages == 2 and run.failed == 2
    assert run.texts == {"http://s/1": "", "http://s/2": ""}
    assert run.error and "timed out" in run.error


def test_run_peer_memory_is_the_workers_not_the_benchmarks(tmp_path):
    # Linux hands a vfork-spawned child the parent's peak in ru_maxrss; the
    # figure reported must stay the worker's own however big the benchmark is.
    pages_path = tmp_path / "pages.jsonl"
    write_pages([("http://m/1", "small page")], str(pages_path))
    ballast = b"x" * (256 * 1024 * 1024)
    run = run_peer("_crash", str(pages_path), str(tmp_path / "out"), timeout=120)
    assert len(ballast) and run.error is None
    assert 5 < run.max_rss_mb < 150
