"""TeCo benchmarks (bench/sitestrip_bench/teco.py): finding key pages, the WARC conversion with the labels
removed, the gold derived from the labels, and the DOM-node metrics, on a tiny suite built
here by hand."""
import gzip
from types import SimpleNamespace

import numpy as np
import pytest
from warcio.archiveiterator import ArchiveIterator

from sitestrip_bench.corpus_format import read_corpus
from sitestrip_bench.teco import (find_benchmarks, is_teco, node_scores, page_url, read_teco,
                                  strip_labels, teco_node_metrics)
from sitestrip.configs import Config
from sitestrip_bench.metrics import PRF
from sitestrip.transforms.page import TEXT, parse_page

HOST = "www.example.org"
BASE = f"http://{HOST}/"
# (file, title, article paragraphs, sidebar); index.html is the key page.
PAGES = {
    "index.html": ("Harbour festival returns",
                   ("The annual <b>harbour</b> festival returns this weekend with boats and music.",
                    "Organisers expect thousands of visitors along the quay."),
                   "Weather: sunny spells"),
    "about/index.html": ("About the Gazette",
                         ("The Gazette has covered the coast since 1921.",
                          "It is written by a small team of volunteers."),
                         "Weather: rain showers"),
    "news/index.html": ("Council approves new library",
                        ("The council voted to build a library next to the old market.",
                         "Construction starts in the spring."),
                        "Weather: strong winds"),
    "contact.html": ("Contact us",
                     ("Write to the editor at the harbour office.",
                      "Letters are answered within a week."),
                     "Weather: fog at dawn"),
}
MENU = (("index.html", "Home"), ("about/index.html", "About"), ("news/index.html", "News"),
        ("contact.html", "Contact"))


def page_html(path, labelled):
    """One page of the site as wget --convert-links leaves it: menu links relative to the page."""
    title, paragraphs, sidebar = PAGES[path]
    up = "../" * path.count("/")
    menu_cls, content_cls, sidebar_cls = ("menu", "content", "sidebar")
    if labelled:
        # The three spellings a label comes in: appended, in the middle, a numbered variant.
        menu_cls = "menu TECO_mainMenu"
        content_cls = "content TECO_mainContent TECO_notTemplate"
        sidebar_cls = "TECO_notTemplate2 sidebar"
    items = "".join(f'<li><a href="{up}{href}">{text}</a></li>' for href, text in MENU)
    paras = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title} - Example Gazette</title>'
            f'<link rel="stylesheet" href="{up}style.css"></head>\n<body>\n'
            f'<div id="header"><h1 class="sitename">Example Gazette</h1>\n'
            f'<ul class="{menu_cls}">{items}</ul></div>\n'
            f'<div class="{content_cls}"><h2>{title}</h2>{paras}</div>\n'
            f'<div class="{sidebar_cls}"><p>{sidebar}</p></div>\n'
            f'<div id="footer"><p>Copyright 2024 Example Gazette</p></div>\n'
            f'</body></html>\n')


@pytest.fixture
def suite(tmp_path):
    """tmp/teco/Media/www.example.org/{index.html (key), about/index.html, news/index.html,
    contact.html, style.css}, plus the suite's info file beside the benchmark folder."""
    root = tmp_path / "teco"
    bench = root / "Media" / HOST
    for path in PAGES:
        target = bench / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page_html(path, labelled=path == "index.html"), encoding="utf-8")
    (bench / "style.css").write_text(".TECO_mainContent { outline: 1px solid red }\n")
    (root / "Media" / "keypages.txt").write_text(f"{HOST}/index.html\n")
    return root


def warc_responses(path):
    with open(path, "rb") as fh:
        return [(r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
                for r in ArchiveIterator(fh) if r.rec_type == "response"]


# Node counts of the key page by hand (whitespace-only text makes no node; HEAD is dropped):
#   BODY                                                     1
#   div#header, h1, "Example Gazette"                        3
#   ul.menu + 4 × (li, a, anchor text)                      13
#   div.content, h2, title text, p, "The annual", b,
#     "harbour", "festival returns …", p, "Organisers …"    10
#   div.sidebar, p, "Weather: sunny spells"                  3
#   div#footer, p, "Copyright …"                             3
N_NODES = 33
N_MAIN = 10
N_NONTEMPLATE = 13
N_MENU = 13
MAIN_TEXT = ("Harbour festival returns\n"
             "The annual harbour festival returns this weekend with boats and music.\n"
             "Organisers expect thousands of visitors along the quay.")
MENU_LINKS = ("http://www.example.org/index.html", "http://www.example.org/about/index.html",
              "http://www.example.org/news/index.html", "http://www.example.org/contact.html")


def test_is_teco(suite, tmp_path):
    assert is_teco(str(suite))
    plain = tmp_path / "plain" / HOST
    plain.mkdir(parents=True)
    (plain / "index.html").write_text(page_html("about/index.html", labelled=False))
    assert not is_teco(str(tmp_path / "plain"))


@pytest.mark.parametrize("start", ["", "Media", f"Media/{HOST}"])
def test_find_benchmarks_from_any_level(suite, start):
    found = find_benchmarks(str(suite / start) if start else str(suite))
    assert found == [(str(suite / "Media" / HOST), str(suite / "Media" / HOST / "index.html"), "Media")]


def test_folder_of_benchmarks_without_category(tmp_path):
    root = tmp_path / "downloads"
    (root / HOST).mkdir(parents=True)
    (root / HOST / "index.html").write_text(page_html("index.html", labelled=True))
    assert find_benchmarks(str(root)) == [(str(root / HOST), str(root / HOST / "index.html"), "teco")]


def test_strip_labels_keeps_everything_else():
    html = ('<div class="a TECO_mainContent b">x</div><p CLASS = \'TECO_notTemplate3\'>y</p>'
            '<ul class=TECO_mainMenu id=m><li data-class="TECO_mainMenu" class="TECO_x">z</li></ul>'
            '<span class="mainContent">w</span>')
    stripped, found = strip_labels(html)
    # Removed: the label tokens; dropped: attributes left empty; kept: "data-class"
    # (not a class attribute) and the unprefixed "mainContent" (a site's own name
    # once the suite uses TECO_ labels).
    assert stripped == ('<div class="a b">x</div><p >y</p>'
                        '<ul  id=m><li data-class="TECO_mainMenu" >z</li></ul>'
                        '<span class="mainContent">w</span>')
    assert found == {"main": {"TECO_mainContent"}, "nontemplate": {"TECO_notTemplate3"},
                     "menu": {"TECO_mainMenu"}}
    old, found = strip_labels('<div class="notTemplate mainContent x">t</div>', scheme="bare")
    assert old == '<div class="x">t</div>'
    assert found == {"main": {"mainContent"}, "nontemplate": {"notTemplate"}, "menu": set()}


def test_stripping_keeps_the_parsed_structure():
    labelled = page_html("index.html", labelled=True)
    stripped, _ = strip_labels(labelled)
    a, b = parse_page(labelled, BASE), parse_page(stripped, BASE)
    assert a.size == b.size == N_NODES
    assert np.array_equal(a.tag, b.tag) and np.array_equal(a.end, b.end)
    assert a.text == b.text
    # The key page's classes now equal its unlabelled twin's.
    twin = parse_page(page_html("index.html", labelled=False), BASE)
    assert np.array_equal(b.class_hash, twin.class_hash) and np.array_equal(b.class_ptr, twin.class_ptr)


def test_page_url_percent_encodes_file_names():
    # wget stores "viewforum.php?f=5" as a file of that name, and --convert-links
    # writes links to it with "?" escaped.
    assert page_url(HOST, "forum/viewforum.php?f=5.html") == "http://www.example.org/forum/viewforum.php%3Ff=5.html"
    assert page_url(HOST, "cms/¿qué es.html") == "http://www.example.org/cms/%C2%BFqu%C3%A9%20es.html"
    assert page_url(HOST, "a%b.html") == "http://www.example.org/a%25b.html"


def test_read_teco_writes_a_warc_without_labels(suite, tmp_path):
    corpus = read_teco(str(suite), str(tmp_path / "work"))
    assert corpus.name == "teco-teco" and corpus.kind == "teco" and corpus.source == str(suite)
    assert corpus.warc_paths == [str(tmp_path / "work" / "teco-teco.warc.gz")]
    with gzip.open(corpus.warc_paths[0]) as fh:
        assert fh.read(5) == b"WARC/"
    responses = warc_responses(corpus.warc_paths[0])
    # The 4 pages in file order (style.css is not a page); the HTTP block is what
    # the reader parses.
    assert [url for url, _ in responses] == [
        BASE + "about/index.html", BASE + "contact.html", BASE + "index.html", BASE + "news/index.html"]
    for url, payload in responses:
        assert b"TECO_" not in payload
        assert b'class="menu"' in payload and b'class="content"' in payload
        assert b'class="sidebar"' in payload
    key = dict(responses)[BASE + "index.html"]
    # The unlabelled page, with wget's relative links made absolute again.
    expected = page_html("index.html", labelled=False)
    for target in ("about/index.html", "contact.html", "news/index.html", "index.html", "style.css"):
        expected = expected.replace(f'href="{target}"', f'href="{BASE}{target}"')
    assert key == expected.encode()
    about = dict(responses)[BASE + "about/index.html"]
    assert f'href="{BASE}contact.html"'.encode() in about and b'href="../' not in about


def test_gold_of_the_key_page(suite, tmp_path):
    corpus = read_teco(str(suite), str(tmp_path / "work"))
    assert len(corpus.gold) == 1 and corpus.notes == []
    g = corpus.gold[0]
    assert (g.url, g.site, g.corpus, g.genre) == (BASE + "index.html", HOST, "teco-teco", "Media")
    assert g.main_text == MAIN_TEXT
    assert g.nontemplate_text == MAIN_TEXT + "\nWeather: sunny spells"
    assert g.menu_links == MENU_LINKS
    nodes = g.nodes
    assert nodes["main"].shape == (N_NODES,)
    assert int(nodes["main"].sum()) == N_MAIN
    assert int(nodes["nontemplate"].sum()) == N_NONTEMPLATE
    assert int(nodes["menu"].sum()) == N_MENU
    assert np.array_equal(nodes["template"], ~nodes["nontemplate"])
    # Main ⊂ not template; the menu is template.
    assert not (nodes["main"] & nodes["template"]).any()
    assert not (nodes["menu"] & ~nodes["template"]).any()
    page = parse_page(page_html("index.html", labelled=False), g.url)
    # Template nodes are BODY, the header with its menu, and the footer: 20 nodes,
    # of which the text nodes are the site name, the 4 anchors and the copyright.
    assert int(nodes["template"].sum()) == N_NODES - N_NONTEMPLATE == 20
    assert [page.node_text(i) for i in np.flatnonzero(nodes["template"] & (page.tag == TEXT))] == [
        "Example Gazette", "Home", "About", "News", "Contact", "Copyright 2024 Example Gazette"]


def test_benchmark_without_labels_is_noted(suite, tmp_path):
    other = suite / "Media" / "www.unlabelled.net"
    other.mkdir()
    (other / "index.html").write_text(page_html("contact.html", labelled=False))
    corpus = read_teco(str(suite), str(tmp_path / "work"))
    assert [g.site for g in corpus.gold] == [HOST]
    assert corpus.notes == ["Media/www.unlabelled.net: skipped, no page with TeCo labels among 1 HTML files"]
    assert find_benchmarks(str(suite)) == [
        (str(suite / "Media" / HOST), str(suite / "Media" / HOST / "index.html"), "Media")]


def test_read_corpus_dispatches_to_teco(suite, tmp_path):
    corpus = read_corpus(str(suite / "Media"), str(tmp_path / "work"))
    assert corpus.kind == "teco" and corpus.name == "teco-Media"
    assert [g.genre for g in corpus.gold] == ["Media"]


def test_folder_without_labels_is_rejected(tmp_path):
    plain = tmp_path / "plain" / HOST
    plain.mkdir(parents=True)
    for path in PAGES:
        (plain / path).parent.mkdir(parents=True, exist_ok=True)
        (plain / path).write_text(page_html(path, labelled=False))
    with pytest.raises(ValueError, match="neither a shared corpus"):
        read_corpus(str(tmp_path / "plain"), str(tmp_path / "work"))
    with pytest.raises(ValueError, match="no TeCo benchmark"):
        read_teco(str(tmp_path / "plain"), str(tmp_path / "work"))


def test_node_scores_by_hand(suite, tmp_path):
    g = read_teco(str(suite), str(tmp_path / "work")).gold[0]
    page = parse_page(page_html("index.html", labelled=False), g.url)
    # Node indices by hand: 0 BODY, 1 div#header, 2 h1, 3 text, 4 ul (menu, to 17),
    # 17 div.content (to 27), 27 div.sidebar (to 30), 30 div#footer (to 33).
    assert (int(page.end[4]), int(page.end[17]), int(page.end[27]), int(page.end[30])) == (17, 27, 30, 33)
    main = np.zeros(N_NODES, dtype=bool)
    main[19:30] = True          # content minus div and h2 (17, 18), plus the sidebar: 11 nodes
    template = np.zeros(N_NODES, dtype=bool)
    template[0:17] = True       # BODY, header and menu: 17 nodes, all template
    template[27:30] = True      # the sidebar: 3 nodes, not template
    fake = SimpleNamespace(main=main, template=SimpleNamespace(template=template),
                           menu=SimpleNamespace(node=5))   # the first <li>: 3 nodes
    scores = node_scores(g, fake)
    # main: predicted 11, of which the 8 content nodes 19..26 are gold (10 gold nodes).
    assert scores["main"] == PRF(8, 11, N_MAIN)
    # template: predicted 20; gold template = 0..16 and 30..32 (20 nodes); overlap 17.
    assert scores["template"] == PRF(17, 20, 20)
    # menu: the <li> subtree 5..7 lies inside the gold menu 4..16.
    assert scores["menu"] == PRF(3, 3, N_MENU)
    # Page-only analyses claim no template; a missed menu costs its whole recall.
    page_only = SimpleNamespace(main=main, template=None, menu=None)
    assert node_scores(g, page_only) == {"main": PRF(8, 11, N_MAIN), "template": None,
                                         "menu": PRF(0, 0, N_MENU)}
    with pytest.raises(ValueError):
        node_scores(g, SimpleNamespace(main=main[:-1], template=None, menu=None))


def test_teco_node_metrics_end_to_end(suite, tmp_path):
    corpus = read_teco(str(suite), str(tmp_path / "work"))
    # Config(): the published parameters with the product's site-ConEx refinements,
    # the values the comments below derive from.
    rows = teco_node_metrics(corpus, Config())
    assert len(rows) == 1
    row = rows[0]
    assert (row["url"], row["site"], row["genre"], row["error"]) == (BASE + "index.html", HOST, "Media", None)
    # The four pages link to each other: a complete subdigraph, so site-level methods ran.
    assert row["candidate_method"] != "page_only"
    # Site-level ConEx keeps what no candidate has: the article (all 10 gold nodes) and
    # the sidebar, whose weather line differs on every page (3 nodes the gold calls
    # "not template" but not main content).
    assert row["main"] == PRF(10, 13, N_MAIN)
    # MenEx picks the <ul> of four links: exactly the labelled subtree.
    assert row["menu"] == PRF(N_MENU, N_MENU, N_MENU)
    # TemEx (a node is template when mapped into ≥ 2 of the 3 candidates):
    # - BODY, the header (div, h1, site name), the footer (div, p, text), the <ul>, its
    #   4 <li>, 4 <a> and their texts: identical on every page once the reader has made
    #   wget's per-folder relative hrefs absolute again: all 20 gold template nodes;
    # - the elements of the article and the sidebar (2 div, h2, 3 p) have their twins on
    #   every page and are template; their texts differ and are not: 6 false positives.
    assert row["template"] == PRF(20, 26, N_NODES - N_NONTEMPLATE)


def test_gold_nodes_follow_the_runs_parse_rules(suite, tmp_path):
    """A <noscript> note in the key page's sidebar: under the product's rules it is two more
    nodes (element and text) than under design §1's, which drop it. The gold masks are numbered
    like the run's pages, so the node metrics compare like with like under either preset: the
    same scores as test_teco_node_metrics_end_to_end when <noscript> is dropped."""
    import dataclasses

    from sitestrip.configs import ReadLimits
    from sitestrip.transforms.page import SPEC_RULES
    key = suite / "Media" / HOST / "index.html"
    key.write_text(key.read_text().replace("Weather: sunny spells</p>",
                                           "Weather: sunny spells</p><noscript>Enable scripts</noscript>"))
    product = read_teco(str(suite), str(tmp_path / "product"))
    spec = read_teco(str(suite), str(tmp_path / "spec"), SPEC_RULES)
    assert product.gold[0].nodes["main"].shape == (N_NODES + 2,)
    assert spec.gold[0].nodes["main"].shape == (N_NODES,)
    config = dataclasses.replace(Config(), read=ReadLimits(keep_noscript=False, widget_leaves=False))
    (row,) = teco_node_metrics(spec, config)
    assert row["error"] is None
    assert (row["main"], row["template"]) == (PRF(10, 13, N_MAIN), PRF(20, 26, N_NODES - N_NONTEMPLATE))


def test_unprefixed_labels_and_several_key_pages(tmp_path):
    """Old versions label without "TECO_"; a site's own "mainContent" class is not a label,
    and two labelled pages in one folder are two key pages (the suite has two benchmarks
    of users.dsic.upv.es)."""
    bench = tmp_path / "Personal" / "users.example.edu"
    (bench / "~ann").mkdir(parents=True)
    (bench / "~bob").mkdir()
    body = '<div class="{}"><p>{}</p></div><div class="{}"><p>Menu</p></div>'
    (bench / "~ann" / "index.html").write_text(
        body.format("mainContent notTemplate", "Ann's page", "mainMenu"))
    (bench / "~bob" / "page?id=2.html").write_text(
        body.format("notTemplate mainContent", "Bob's page", "side"))
    # A sibling whose own class happens to be "mainContent": not a key page.
    (bench / "index.html").write_text(body.format("mainContent", "Welcome", "side"))
    found = find_benchmarks(str(tmp_path))
    assert found == [(str(bench), str(bench / "~ann" / "index.html"), "Personal"),
                     (str(bench), str(bench / "~bob" / "page?id=2.html"), "Personal")]
    corpus = read_teco(str(tmp_path), str(tmp_path / "work"))
    assert [g.url for g in corpus.gold] == ["http://users.example.edu/~ann/index.html",
                                            "http://users.example.edu/~bob/page%3Fid=2.html"]
    assert [g.main_text for g in corpus.gold] == ["Ann's page", "Bob's page"]
    assert corpus.gold[0].menu_links == () and corpus.gold[1].menu_links is None
    assert corpus.notes == [
        "Personal/users.example.edu: unprefixed (pre-TECO_) labels",
        "Personal/users.example.edu: 2 labelled pages, all taken as key pages: "
        "~ann/index.html, ~bob/page?id=2.html"]
    # Unprefixed labels are removed from every page, the site's own "mainContent" too,
    # so the key pages' classes still match their siblings'.
    for url, payload in warc_responses(corpus.warc_paths[0]):
        assert b"mainContent" not in payload and b"notTemplate" not in payload


def test_absolute_links_restores_what_the_site_served():
    from sitestrip_bench.teco import absolute_links
    page = "http://www.example.org/news/2020/item.html"
    html = ("<a href='../../about.html'>A</a><a HREF=x.html>B</a><a href=\"#top\">C</a>"
            "<a href='mailto:me@example.org'>D</a><a data-href='rel.html' href=''>E</a>"
            "<a href='//cdn.example.org/x'>F</a>")
    assert absolute_links(html, page) == (
        "<a href='http://www.example.org/about.html'>A</a>"
        "<a HREF=\"http://www.example.org/news/2020/x.html\">B</a><a href=\"#top\">C</a>"
        "<a href='mailto:me@example.org'>D</a><a data-href='rel.html' href=''>E</a>"
        "<a href='//cdn.example.org/x'>F</a>")


@pytest.mark.beam
@pytest.mark.slow
def test_bench_command_on_a_teco_suite(suite, tmp_path):
    from sitestrip_bench.run import run_bench
    summary = run_bench([str(suite)], str(tmp_path / "r"), peers=[], charts=False, log=lambda m: None)
    (c,) = summary["corpora"]
    assert c["name"] == "teco-teco" and c["kind"] == "teco" and c["pages_gold"] == 1
    # The same key-page results as test_teco_node_metrics_end_to_end, averaged over one page.
    assert c["nodes"]["main"]["mean_recall"] == 1.0
    assert c["nodes"]["main"]["mean_precision"] == pytest.approx(10 / 13, abs=1e-4)
    assert c["nodes"]["menu"]["mean_f1"] == 1.0
    assert c["nodes"]["template"]["mean_precision"] == pytest.approx(20 / 26, abs=1e-4)
    # Text scores against the gold's own non-template text exist for TeCo only.
    assert "sitestrip:nontemplate_vs_teco_nontemplate" in c["quality"]
    report = (tmp_path / "r" / "report.md").read_text()
    assert "DOM-node metrics (TeCo gold)" in report and "| teco-teco | 0.769 / 1.000 / 0.870 |" in report
