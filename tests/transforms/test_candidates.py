"""Candidate selection (design §4; thesis 2023 ch. 7, 2014 thesis §2.2), expectations derived by hand.

Thesis references: "000" is the 2023 thesis (Def. 4.2.x, ch. 7, Alg. 8/9),
"001" the 2014 thesis (Def. 2.2.x, Alg. 1/2).
"""
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.nested import nested_elements
from sitestrip.transforms.candidates import (
    CandidateParams, _dispersion, _Tree, SiteLinks, directory_sequence, dom_distance, h_distance, key_page_links,
    link_relevance_rank, select_candidates, site_links, sort_links,
)
from sitestrip.transforms.page import parse_page, tag_name


def list_page(url, hrefs):
    """A page whose links are items of one list: every two links are 4 apart
    (a-li-ul-li-a), so Alg. 8 keeps document order inside a tier."""
    items = "".join(f'<li><a href="{h}">{h}</a></li>' for h in hrefs)
    return parse_page(f"<html><body><ul>{items}</ul></body></html>", url)


def build_site(links_of, site="ex.com"):
    """{url: [hrefs]} -> (pages, SiteLinks)."""
    pages = {url: list_page(url, hrefs) for url, hrefs in links_of.items()}
    return pages, site_links(pages, site)


def select(key, pages, site, **params):
    return select_candidates(key, pages[key], site, CandidateParams(**params))


# ---------------------------------------------------------------------------
# Directory sequences and hyperlink distance

def test_directory_sequence_decision():
    """design §4: host (site key) first, then directories; the last segment is a
    resource unless the path ends in "/"; the query is ignored."""
    assert directory_sequence("https://www.caltech.org/about/news") == ("caltech.org", "about")
    assert directory_sequence("https://www.caltech.org/about/news/") == ("caltech.org", "about", "news")
    assert directory_sequence("http://ex.com/a/b.html?x=/c/d/") == ("ex.com", "a")
    assert directory_sequence("http://ex.com") == ("ex.com",)
    assert directory_sequence("HTTP://WWW.Ex.com:80/A/") == ("ex.com", "A")
    # written the way the theses write URLs: the first word is the host
    assert directory_sequence("gp/computer-science/") == ("gp", "computer-science")
    assert directory_sequence("www.bbc.com/news/uk/") == ("bbc.com", "news", "uk")
    assert directory_sequence("mailto:x@y") == ()


def test_h_distance_springer_example_7_2_6():
    """000 Example 7.2.6, exact strings and values: hDistance(1,1)=0, (1,2)=+1,
    (1,3)=-1, (1,4)=-1, (1,5)=-2. URL (5) has a host as its first word and (1)
    has "gp", so the first words differ and the distance is -|h| = -2."""
    u1 = "gp/computer-science/"
    assert h_distance(u1, u1) == 0
    assert h_distance(u1, "gp/computer-science/information-systems-and-applications/") == +1
    assert h_distance(u1, "gp/") == -1
    assert h_distance(u1, "gp/engineering/") == -1
    assert h_distance(u1, "www.springer.com/gp/") == -2


def test_h_distance_springer_example_7_2_5():
    """000 Example 7.2.5 (no numbers in the text, the values follow the prose):
    key www.springer.com/gp/computer-science/become-an-author has directories
    (springer.com, gp, computer-science).
    URL 1 another domain -> -|h| = -3; URL 2 same directory -> 0;
    URL 3 the main page "two levels above" -> -2; URL 4 a sibling section
    (gp/engineering) -> diverges after 2 words, key has 1 more -> -1."""
    key = "www.springer.com/gp/computer-science/become-an-author"
    assert h_distance(key, "www.springernature.com") == -3
    assert h_distance(key, "www.springer.com/gp/computer-science/stay-informed") == 0
    assert h_distance(key, "www.springer.com") == -2
    assert h_distance(key, "www.springer.com/gp/engineering/contact-us") == -1


def test_h_distance_figure_7_4():
    """000 Figure 7.4: hDistance(www.upv.es, www.upv.es/organizacion/la-institucion/index-en.html)
    = 2 and the reverse -2 (index-en.html is a resource name)."""
    a, b = "www.upv.es", "www.upv.es/organizacion/la-institucion/index-en.html"
    assert h_distance(a, b) == 2
    assert h_distance(b, a) == -2


def test_h_distance_2014_definition_examples():
    """001 Def. 2.2.5 examples, exact strings and values. "dynamics" has no
    trailing slash, so it is a resource in research/physics/: the paths
    diverge after "research" and h has one more word -> -1."""
    h = "research/maths/"
    assert h_distance(h, "research/maths/") == 0
    assert h_distance(h, "research/maths/geometry/") == +1
    assert h_distance(h, "research/") == -1
    assert h_distance(h, "research/physics/dynamics") == -1
    assert h_distance(h, "www.upv.es/research/") == -2


def test_h_distance_2014_example_2_2_3():
    """001 Example 2.2.3: key www.upv.es/research/maths/index.html = (upv.es, research, maths).
    URL 1 another domain -> -3; URL 2 same folder -> 0; URL 3 www.upv.es/sport/
    diverges after the host, key has 2 more words ("two levels above") -> -2;
    URL 4 in the subfolder news/ -> +1."""
    key = "www.upv.es/research/maths/index.html"
    assert h_distance(key, "www.tesco.es/") == -3
    assert h_distance(key, "www.upv.es/research/maths/pi.html") == 0
    assert h_distance(key, "www.upv.es/sport/") == -2
    assert h_distance(key, "www.upv.es/research/maths/news/computers.html") == +1


def test_h_distance_bbc_example_2_2_13_and_relevance_order():
    """001 Example 2.2.13, exact strings and values, reference A1 = www.bbc.com/news/:
    A2 +2, A3 -1, A4 +1, A5 -1 (28497920/ ends in "/", a directory; the path
    diverges after the host), A6 +1. Link relevance (Def. 2.2.12): {A4, A6}
    (+1), then A2 (+2), then {A3, A5} (-1), as the example lists them."""
    a1 = "www.bbc.com/news/"
    links = {
        "A2": "www.bbc.com/news/world/europe/",
        "A3": "www.bbc.com",
        "A4": "www.bbc.com/news/uk/",
        "A5": "www.bbc.com/sport/0/football/28497920/",
        "A6": "www.bbc.com/news/also_in_the_news/",
    }
    distances = {name: h_distance(a1, url) for name, url in links.items()}
    assert distances == {"A2": +2, "A3": -1, "A4": +1, "A5": -1, "A6": +1}
    order = sorted(links, key=lambda name: (link_relevance_rank(distances[name]), name))
    assert order == ["A4", "A6", "A2", "A3", "A5"]


def test_h_distance_bbc_example_2_2_6_against_the_spec_decision():
    """001 Example 2.2.6 writes the news section as "www.bbc.com/news" (no final
    "/") yet treats "news" as a directory, and its first example has the
    arguments swapped relative to its prose ("distance between the news
    webpage and the tech news webpage ... positive"). design §4 decides that a
    last segment without "/" is a resource, so on the literal strings the
    values differ from the printed ones; the product follows design §4:

        printed                                                design §4, literal strings
        (news/technology, news)             +1                 -1  (technology is a resource in news/)
        (news, www.bbc.com)                 -1                  0  (both in the root directory)
        (news, news/world/europe/)          +2                 +3  (news, world, europe below the root)
        (news, weather)                     -1                  0
        (news, sport/0/formula1/26599556)   -1                 +3  (sport/0/formula1/ below the root)

    Written with the directory spelt as a directory ("www.bbc.com/news/") and
    the first pair in the order of its prose, every printed value comes out.
    """
    news = "www.bbc.com/news"
    assert h_distance("www.bbc.com/news/technology", news) == -1
    assert h_distance(news, "www.bbc.com") == 0
    assert h_distance(news, "www.bbc.com/news/world/europe/") == +3
    assert h_distance(news, "www.bbc.com/weather") == 0
    assert h_distance(news, "www.bbc.com/sport/0/formula1/26599556") == +3

    news_dir = "www.bbc.com/news/"
    assert h_distance(news_dir, "www.bbc.com/news/technology/") == +1
    assert h_distance(news_dir, "www.bbc.com") == -1
    assert h_distance(news_dir, "www.bbc.com/news/world/europe/") == +2
    assert h_distance(news_dir, "www.bbc.com/weather") == -1
    assert h_distance(news_dir, "www.bbc.com/sport/0/formula1/26599556") == -1


CALTECH_TABLE_7_2 = [
    ("about/at-a-glance", 0), ("about/caltech-media", 0), ("about/offices-departments", 0),
    ("about/news/caltech-mourns-passing-manuel-manny-soriaga", 1),
    ("about/legacy/history-milestones", 1), ("about/visit/plan-your-visit", 1),
    ("about/news/what-it-be-caltech-seismologist-during-big-quake", 1),
    ("about/news/caltechs-apollo-connection", 1),
    ("about/news/performing-chemistry-floating-droplets", 1),
    ("about/news/bronner-named-director-beckman-institute", 1),
    ("about/news/hima-vatti-tapped-to-lead-caltechs-equity-and-title-ix-office", 1),
    ("about/news/three-caltech-professors-receive-presidential-early-career-awards", 1),
    ("about/news/ztf-spots-asteroid-shortest-year", 1), ("about/news/edge-philosophy-and-physics", 1),
    ("about/news/bioengineers-guide-design", 1),
    ("about/news/seeing-farther-and-deeper-interview-katie-bouman", 1),
    ("about/visit/directions", 1), ("about/legacy/historic-awards-honors", 1),
    ("about/visit/campus-maps", 1), ("about/visit/tours", 1),
    ("quick-links-faculty", -1), ("media-contacts", -1), ("map/history", -1), ("contact", -1),
    ("academics/resources/academic-calendar", -1), ("research/jpl", -1),
    ("campus-life-events/master-calendar", -1), ("admissions-aid", -1), ("", -1), ("about", -1),
    ("research", -1), ("academics", -1), ("campus-life-events", -1),
    ("research/centers-institutes", -1), ("research/research-facilities", -1),
    ("research/faculty-listing", -1), ("campus-life-events/caltech-today", -1),
    ("campus-life-events/emergency-information", -1), ("quick-links-students", -1),
    ("quick-links-staff", -1), ("quick-links-alumni", -1), ("rssfeeds", -1),
    ("claimed-copyright-infringement", -1), ("privacy-notice", -1),
]


def test_h_distance_caltech_table_7_2_link_column():
    """000 Table 7.2, column "Link d." for all 44 links of the news page
    (key .../about/news, i.e. directories (caltech.org, about)): 3 links at 0,
    17 at +1, 24 at -1, and Alg. 8's tiers come in that order. (The table's
    links are on caltech.org; the footnote names caltech.edu for the key page,
    which would make every distance -|h| = -2, so the key is taken on .org.)"""
    key = "https://www.caltech.org/about/news"
    for path, expected in CALTECH_TABLE_7_2:
        assert h_distance(key, f"https://www.caltech.org/{path}") == expected, path
    ranks = [link_relevance_rank(d) for _, d in CALTECH_TABLE_7_2]
    assert ranks == sorted(ranks)
    assert [d for _, d in CALTECH_TABLE_7_2].count(1) == 17
    assert len(CALTECH_TABLE_7_2) == 44


@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=4),
       st.lists(st.sampled_from(["a", "b", "c"]), max_size=4))
def test_h_distance_is_antisymmetric_along_one_branch(p, q):
    """Def. 4.2.1: +k one way is -k the other way exactly when one directory
    contains the other; between diverging branches both distances are negative."""
    h = "http://ex.com/" + "".join(f"{d}/" for d in p)
    h2 = "http://ex.com/" + "".join(f"{d}/" for d in q)
    forward, backward = h_distance(h, h2), h_distance(h2, h)
    if p == q:
        assert forward == backward == 0
    elif q[:len(p)] == p:
        assert forward == len(q) - len(p) == -backward
    elif p[:len(q)] == q:
        assert backward == len(p) - len(q) == -forward
    else:
        assert forward < 0 and backward < 0


# ---------------------------------------------------------------------------
# DOM distance

def test_dom_distance_figure_7_4():
    """000 Figure 7.4: path(A) = BODY DIV A, path(A') = BODY TABLE A'; after the
    shared BODY come DIV, A, TABLE, A' -> 4 both ways (lxml keeps the <a>
    directly under <table>).
    Nodes: 0 body, 1 div, 2 a, 3 text, 4 table, 5 a, 6 text."""
    page = parse_page('<body><div><a href="http://www.upv.es">A</a></div><table>'
                      '<a href="http://www.upv.es/organizacion/la-institucion/index-en.html">B</a>'
                      '</table></body>', "http://www.upv.es/")
    assert page.link_node.tolist() == [2, 5]
    assert dom_distance(page, 2, 5) == dom_distance(page, 5, 2) == 4


def test_dom_distance_compares_nodes_by_identity():
    """001 Example 2.2.11: SPAN at BODY CONTENT DIV P SPAN and IMG at
    BODY CONTENT DIV DIV IMG. The third nodes are both DIVs but different
    nodes, so the common prefix is BODY CONTENT and 3 + 3 = 6 nodes follow.
    Nodes: 0 body, 1 content, 2 div, 3 p, 4 span, 5 text, 6 div, 7 div, 8 img."""
    page = parse_page("<body><content><div><p><span>x</span></p></div>"
                      "<div><div><img src=i.png></div></div></content></body>", "http://ex.com/")
    assert [tag_name(t) for t in page.tag][6:] == ["div", "div", "img"]
    assert dom_distance(page, 4, 8) == 6
    assert dom_distance(page, 4, 4) == 0
    assert dom_distance(page, 2, 4) == 2          # an ancestor: only the path below it
    assert dom_distance(page, 0, 8) == 4
    with pytest.raises(IndexError):
        dom_distance(page, 0, 9)


def test_dom_distance_on_a_deep_page():
    """No recursion: two links under a 2,000-deep chain of divs (past Python's
    recursion limit; the parser itself stops at 2,048 levels, page.py). Each
    is 1 below the innermost div -> 2 apart; div 1 is 2,000 levels above them."""
    html = "<body>" + "<div>" * 2000 + "<a href=/x>x</a><a href=/y>y</a>" + "</div>" * 2000 + "</body>"
    page = parse_page(html, "http://ex.com/")
    a, b = page.link_node.tolist()
    assert page.depth[a] == 2001
    assert dom_distance(page, a, b) == 2
    assert dom_distance(page, 1, a) == 2000
    # ... and sorting them works too: same tier, document order
    assert [u for u, _ in sort_links(page, key_page_links(page, "ex.com"))] == \
        ["http://ex.com/x", "http://ex.com/y"]


# ---------------------------------------------------------------------------
# Links of the key page and Alg. 8

def test_key_page_links_site_self_and_duplicates():
    """Same site = same site key (www. and port ignored, either scheme); the key
    page itself (also as "#top" or "") is dropped; a repeated URL keeps its
    first node. Nodes: links are at 1, 3, 5, ... (each <a> + its text)."""
    page = parse_page(
        '<body><a href="#top">top</a><a href="/a">a</a><a href="http://ex.com/b">b</a>'
        '<a href="https://www.ex.com:8443/c">c</a><a href="http://other.org/d">d</a>'
        '<a href="/a#part">a again</a><a href="">self</a><a href="mailto:x@ex.com">m</a>'
        '<a href="http://sub.ex.com/e">e</a></body>', "http://www.ex.com/k.html")
    assert key_page_links(page, "ex.com") == [
        ("http://www.ex.com/a", 3), ("http://ex.com/b", 5), ("https://www.ex.com:8443/c", 7)]



@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([
    "http://www.ex.com/a", "http://ex.com/b", "https://www.ex.com:8443/c", "http://other.org/d",
    "http://sub.ex.com/e", "http://www.ex.com/k.html", "http://ex.com", "ex.com/no-scheme",
    "http:/one-slash.ex.com/x", "http://ex.com//double", "", "http://[::1]/v6",
    "http://www.ex.com:80/a?x=//y"]), max_size=30))
def test_key_page_links_agree_with_the_one_link_at_a_time_definition(urls):
    """The one-pass host scan (_key_link_positions) against the definition written as a loop
    over the links (first occurrence, not the page itself, same site by _site_of_normalized),
    on any list of link URLs, including ones without "//" (which take the per-URL path)."""
    from sitestrip.transforms.candidates import _site_of_normalized
    page = parse_page("<body></body>", "http://www.ex.com/k.html")
    page.link_url = tuple(urls)
    page.link_node = np.arange(1, len(urls) + 1, dtype=page.link_node.dtype)
    seen, expected = set(), []
    for url, node in zip(urls, range(1, len(urls) + 1)):
        if url in seen:
            continue
        seen.add(url)
        if url != "http://www.ex.com/k.html" and _site_of_normalized(url) == "ex.com":
            expected.append((url, node))
    assert key_page_links(page, "ex.com") == expected

CALTECH_LIKE = (
    '<body><header><nav><a href="/about">About</a><a href="/research">Research</a>'
    '<a href="/about/at-a-glance">At a glance</a></nav></header>'
    '<main><ul><li><a href="/about/news/caltechs-apollo-connection">Apollo</a></li>'
    '<li><a href="/about/news/performing-chemistry-floating-droplets">Droplets</a></li></ul>'
    '<p><a href="/about/offices-departments">Offices</a> <a href="/about/news/archive/2020">Archive</a></p>'
    '</main><footer><a href="/about/caltech-media">Media</a><a href="/contact">Contact</a></footer></body>'
)


def test_sort_links_caltech_like_page():
    """Alg. 8 on a small page shaped like the Caltech news page (Table 7.2),
    key https://www.caltech.org/about/news = (caltech.org, about).

    Nodes/depths: 0 body; 1 header(1) 2 nav(2) 3 a About(3) 5 a Research(3)
    7 a at-a-glance(3); 9 main(1) 10 ul(2) 11 li 12 a apollo(4) 14 li
    15 a droplets(4) 17 p(2) 18 a offices(3) 20 a archive(3); 22 footer(1)
    23 a media(2) 25 a contact(2).
    Tier 0: at-a-glance, offices, media. First at-a-glance (document order);
      offices is 3+3 = 6 from it (common ancestor BODY), media 3+2 = 5 ->
      offices; then media (min(5, 2+3) = 5).
    Tier +1 (about/news/): apollo, droplets (4 apart; document order).
    Tier +2 (about/news/archive/): archive.
    Tier -1: About, Research (nav), Contact (footer). First About; Research is
      2 from it, Contact 3+2 = 5 -> Contact before Research.
    """
    page = parse_page(CALTECH_LIKE, "https://www.caltech.org/about/news")
    links = key_page_links(page, "caltech.org")
    assert [n for _, n in links] == [3, 5, 7, 12, 15, 18, 20, 23, 25]
    got = [url.rsplit("caltech.org/", 1)[1] for url, _ in sort_links(page, links)]
    assert got == ["about/at-a-glance", "about/offices-departments", "about/caltech-media",
                   "about/news/caltechs-apollo-connection",
                   "about/news/performing-chemistry-floating-droplets",
                   "about/news/archive/2020", "about", "contact", "research"]


DISPERSION = ('<body><div><a href="/d/1">1</a><a href="/d/2">2</a></div>'
              '<div><div><div><a href="/d/3">3</a><a href="/d/6">6</a></div></div>'
              '<a href="/d/4">4</a></div><a href="/d/5">5</a></body>')


def test_sort_links_is_max_min_dispersion_not_distance_to_the_first():
    """One tier (all in /d/). Nodes/depths: a1=2(2), a2=4(2), a3=9(4), a6=11(4),
    a4=13(2), a5=15(1); a3 and a6 are siblings under div 8, a4 is under div 6.
    Distances: d(1,3)=d(1,6)=6, d(1,4)=4, d(1,5)=3, d(1,2)=2, d(3,6)=2,
    d(3,4)=d(4,6)=(4-1)+(2-1)=4, d(3,5)=d(5,6)=5, d(4,5)=d(2,5)=3, d(2,4)=4.
    Greedy: 1; then 3 (6, tie with 6 broken by document order); mins now
    2:2, 6:2, 4:4, 5:3 -> 4; mins 2:2, 6:2, 5:3 -> 5; then 2 and 6 tie at 2
    -> 2 first. Sorting by distance to the first link alone would have put 6
    second. The minimum distances at each pick, 6, 4, 3, 2, 2, never grow
    (like Table 7.2's "DOM d." column)."""
    page = parse_page(DISPERSION, "http://ex.com/d/k.html")
    assert page.link_node.tolist() == [2, 4, 9, 11, 13, 15]
    assert dom_distance(page, 9, 11) == 2 and dom_distance(page, 9, 13) == 4
    order = [url.rsplit("/", 1)[1] for url, _ in sort_links(page, key_page_links(page, "ex.com"))]
    assert order == ["1", "3", "4", "5", "2", "6"]


def test_sort_links_ties_and_input_order():
    """Tiers are ordered 0, +1, +2, -1, -2 whatever the input order, and inside a
    tier the first link is the first in document order even if listed last."""
    page = parse_page('<body><a href="/x/a/b/p">p</a><a href="/q">q</a><a href="/x/r">r</a>'
                      '<a href="/x/a/s">s</a><a href="/t/u/v">v</a></body>', "http://ex.com/x/k")
    links = key_page_links(page, "ex.com")
    by_name = {u.rsplit("/", 1)[1]: h_distance(page.url, u) for u, _ in links}
    assert by_name == {"p": 2, "q": -1, "r": 0, "s": 1, "v": -1}
    got = [u.rsplit("/", 1)[1] for u, _ in sort_links(page, list(reversed(links)))]
    assert got == ["r", "s", "p", "q", "v"]


def reference_sort(page, links):
    """Alg. 8 written out directly: quadratic, one pick at a time."""
    tiers = {}
    for i, (url, node) in enumerate(links):
        tiers.setdefault(link_relevance_rank(h_distance(page.url, url)), []).append((node, i, url))
    out = []
    for rank in sorted(tiers):
        rest = sorted(tiers[rank])
        taken = [rest.pop(0)]
        while rest:
            scores = [min(dom_distance(page, n, t[0]) for t in taken) for n, _, _ in rest]
            taken.append(rest.pop(scores.index(max(scores))))
        out.extend((url, node) for node, _, url in taken)
    return out


@st.composite
def random_pages(draw):
    """Random nesting of div/span/a (including links inside links) with hrefs
    drawn from a few directories, so that several tiers and many ties occur."""
    hrefs = ["/k/a", "/k/b", "/k/s/c", "/k/s/t/d", "/e", "/f/g", "/k/h", "/k/s/i", "/j/k/l"]
    parts, stack = [], []
    for _ in range(draw(st.integers(1, 60))):
        action = draw(st.integers(0, 9))
        if action < 3 and len(stack) < 12:
            tag = draw(st.sampled_from(["div", "span", "a"]))
            parts.append(f'<a href="{draw(st.sampled_from(hrefs))}?{len(parts)}">' if tag == "a" else f"<{tag}>")
            stack.append(tag)
        elif action < 5 and stack:
            parts.append(f"</{stack.pop()}>")
        else:
            parts.append(f'<a href="{draw(st.sampled_from(hrefs))}?{len(parts)}">x</a>')
    key = draw(st.sampled_from(["http://ex.com/k/p", "http://ex.com/k/s/p", "http://ex.com/p"]))
    return parse_page("<body>" + "".join(parts) + "</body>", key)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_pages())
def test_sort_links_matches_the_one_pick_at_a_time_definition(page):
    """The level-by-level dispersion gives exactly Alg. 8's greedy order."""
    links = key_page_links(page, "ex.com")
    assert sort_links(page, links) == reference_sort(page, links)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_pages(), st.sampled_from(["per_source", "whole_tree"]), st.integers(0, 2))
def test_dispersion_internals_agree(page, distances, rounds):
    """The two ways of updating distances (per source, multi-source passes)
    and the two ways of resolving a level (pick-and-drop rounds, preorder
    sweep) are interchangeable: forcing each one gives the greedy order."""
    nodes = np.unique(page.link_node).astype(np.int64)
    if nodes.size == 0:
        return
    tree = _Tree(page)
    tree._ROUNDS = rounds
    if distances == "whole_tree":
        tree.nearest = tree._from_many
    else:
        tree.nearest = lambda sources, targets: np.min(
            [tree._from_one(int(s), targets) for s in sources], axis=0)
    expected = [0]
    while len(expected) < nodes.size:
        scores = [-1 if i in expected else min(dom_distance(page, nodes[i], nodes[j]) for j in expected)
                  for i in range(nodes.size)]
        expected.append(scores.index(max(scores)))
    assert list(_dispersion(tree, nodes)) == expected


# ---------------------------------------------------------------------------
# Alg. 9 and the fallback

K = "http://ex.com/k.html"


def u(name):
    return f"http://ex.com/{name}.html"


def test_cs_found_without_links_back_to_the_key_page():
    """(1) K links to D, A, B, C (one list: sorted order = document order).
    A, B, C link to each other, not to K; D links to nothing.
    Walk: D -> best {D} (size 1); A -> {A}, not larger; B -> {A, B};
    C -> {A, B, C} = n: return. Four loads; the CS needs no link back to K
    (000 Alg. 9 only connects the key page's links among themselves)."""
    names = "abc"
    pages, site = build_site({
        K: [u("d"), u("a"), u("b"), u("c")],
        u("d"): [],
        **{u(x): [u(y) for y in names if y != x] for x in names},
    })
    got = select(K, pages, site)
    assert got.method == "cs"
    assert got.candidates == [u("a"), u("b"), u("c")]
    assert (got.cs_size, got.pages_loaded) == (3, 4)


def test_cs_stops_at_n_and_counts_the_key_page_out():
    """n counts candidate pages, not the key page (000 §7.2.3: the Caltech
    4-CS is four linked pages; Table 7.7: size 1 = 2 loads with the key page).
    With n = 1 the first loaded page is a 1-CS; with n = 2 the walk stops at
    the first mutually linked pair, never loading the later pages."""
    pages, site = build_site({
        K: [u("a"), u("b"), u("c"), u("e")],
        u("a"): [u("b"), u("c")], u("b"): [u("a"), u("c")], u("c"): [u("a"), u("b")], u("e"): [],
    })
    one = select(K, pages, site, n=1)
    assert (one.method, one.candidates, one.cs_size, one.pages_loaded) == ("cs", [u("a")], 1, 1)
    two = select(K, pages, site, n=2)
    assert (two.method, two.candidates, two.cs_size, two.pages_loaded) == ("cs", [u("a"), u("b")], 2, 2)


def test_cs_must_contain_the_current_link_and_prefers_relevant_links():
    """Mutual pairs: A-C, B-C, A-D, B-D, C-D (not A-B). Walk A, B, C, D, n = 3.
    After C the CSs with C are {A,C} and {B,C}: best {A,C}. After D the
    3-CSs with D are {A,C,D} and {B,C,D}; the one of earlier (more relevant)
    links is taken."""
    mutual = {("a", "c"), ("b", "c"), ("a", "d"), ("b", "d"), ("c", "d")}
    out = {x: [u(y) for y in "abcd" if (x, y) in mutual or (y, x) in mutual] for x in "abcd"}
    pages, site = build_site({K: [u(x) for x in "abcd"], **{u(x): out[x] for x in "abcd"}})
    got = select(K, pages, site)
    assert (got.method, got.candidates, got.cs_size, got.pages_loaded) == \
        ("cs", [u("a"), u("c"), u("d")], 3, 4)


def test_linked_when_no_two_pages_link_each_other():
    """(2) K links to A and B; they link back to K only. Walk: A -> {A}; B -> {B},
    not larger. cs_size 1; fill (a) adds B, (b) the other input page Z (not
    linked from K). Some candidate is linked from K -> "linked"."""
    pages, site = build_site({K: [u("a"), u("b")], u("a"): [K], u("b"): [K], u("z"): [u("a")]})
    got = select(K, pages, site)
    assert got.method == "linked"
    assert got.candidates == [u("a"), u("b"), u("z")]
    assert (got.cs_size, got.pages_loaded) == (1, 2)


def test_partial_cs_filled_in_sorted_link_order():
    """(3) K links C, A, D, B (document order = sorted order); only A-B are
    mutual. Walk: C {C}; A, D no larger; B -> {A, B} = 2. Best CS {A, B},
    then fill (a) with the remaining loaded pages in sorted-link order: C."""
    pages, site = build_site({K: [u("c"), u("a"), u("d"), u("b")],
                              u("a"): [u("b"), u("c")], u("b"): [u("a")], u("c"): [], u("d"): [K]})
    got = select(K, pages, site)
    assert got.method == "partial_cs"
    assert got.candidates == [u("a"), u("b"), u("c")]
    assert (got.cs_size, got.pages_loaded) == (2, 4)


def test_site_sample_by_link_relevance_then_url():
    """(4) K = /docs/guide/k.html = (ex.com, docs, guide) links only to a page
    that is not in the input (skipped, not a load). Input pages and their
    distance from K: guide/b.html 0, guide/a.html 0, guide/deep/x.html +1,
    docs/other/y.html -1 (diverges after docs), docs/z.html -1 (docs/ is
    above), z.html -2; a page of another host is not of the site.
    Order: tier 0 by URL (a, b), +1, then -1 by URL (other/y < z), then -2."""
    key = "http://ex.com/docs/guide/k.html"
    others = ["http://ex.com/docs/guide/b.html", "http://ex.com/docs/guide/a.html",
              "http://ex.com/docs/guide/deep/x.html", "http://ex.com/docs/other/y.html",
              "http://ex.com/docs/z.html", "http://ex.com/z.html"]
    pages, site = build_site({key: ["/docs/guide/missing.html"], **{o: [] for o in others}})
    site.outlinks["http://other.org/docs/guide/a.html"] = frozenset()
    got = select_candidates(key, pages[key], site, CandidateParams(n=6))
    assert got.method == "site_sample"
    assert got.candidates == ["http://ex.com/docs/guide/a.html", "http://ex.com/docs/guide/b.html",
                              "http://ex.com/docs/guide/deep/x.html", "http://ex.com/docs/other/y.html",
                              "http://ex.com/docs/z.html", "http://ex.com/z.html"]
    assert (got.cs_size, got.pages_loaded) == (0, 0)


def test_page_only_for_a_lone_page():
    """(5) The only page of its site in the input; its links lead nowhere loadable."""
    pages, site = build_site({K: [u("a"), u("b")], "http://other.org/x.html": []})
    assert list(site.outlinks) == [K]
    got = select(K, pages, site)
    assert (got.method, got.candidates, got.cs_size, got.pages_loaded) == ("page_only", [], 0, 0)


def test_max_loads_is_respected():
    """(6) K links p0..p9, all in the input; only p7, p8, p9 are mutually linked.
    With max_loads = 4 the walk stops after p0..p3 (no two mutual): cs_size 1,
    candidates p0 then (a) p1, p2. With max_loads = 10 the 3-CS is reached."""
    names = [f"p{i}" for i in range(10)]
    links_of = {K: [u(x) for x in names], **{u(x): [] for x in names}}
    for x in ("p7", "p8", "p9"):
        links_of[u(x)] = [u(y) for y in ("p7", "p8", "p9") if y != x]
    pages, site = build_site(links_of)
    short = select(K, pages, site, max_loads=4)
    assert short.pages_loaded == 4
    assert (short.method, short.cs_size) == ("linked", 1)
    assert short.candidates == [u("p0"), u("p1"), u("p2")]
    full = select(K, pages, site, max_loads=10)
    assert (full.method, full.candidates, full.pages_loaded) == ("cs", [u("p7"), u("p8"), u("p9")], 10)
    none = select(K, pages, site, max_loads=0)
    assert none.pages_loaded == 0 and none.cs_size == 0


def test_absent_link_targets_are_not_loads():
    """Links to pages missing from the input are skipped without counting."""
    pages, site = build_site({K: [u("gone1"), u("a"), u("gone2"), u("b")],
                              u("a"): [u("b")], u("b"): [u("a")]})
    got = select(K, pages, site, n=2)
    assert (got.method, got.candidates, got.pages_loaded) == ("cs", [u("a"), u("b")], 2)


def test_fully_connected_site_of_250_pages():
    """(7) 250 pages, each linking to all the others in one list. For every key
    page the walk loads the first three other pages and they form a 3-CS; with
    n = 4, four pages."""
    names = [u(f"p{i:03d}") for i in range(250)]
    pages, site = build_site({x: [y for y in names if y != x] for x in names})
    for i, key in enumerate(names):
        expected = [y for y in names if y != key][:3]
        got = select(key, pages, site)
        assert (got.method, got.candidates, got.cs_size, got.pages_loaded) == ("cs", expected, 3, 3)
    got = select(names[100], pages, site, n=4)
    assert (got.method, got.candidates, got.pages_loaded) == ("cs", names[:4], 4)


@pytest.mark.slow
def test_key_page_with_100000_links():
    """(7) 100,000 links in one list plus a nav and a footer link, all in the key
    page's directory except /about/. Only four targets are in the input:
    item10 (links nowhere) and item50000, item99998, item99999 (mutually
    linked). Sorted order inside tier 0: news/a.html (first in document
    order), item0 (farthest: 2+3 = 5), then the rest at distance 4 in document
    order; so the loadable ones come as item10, item50000, item99998,
    item99999, and the 3-CS closes at the fourth load."""
    items = "".join(f'<li><a href="/news/item{i}.html">{i}</a></li>' for i in range(100_000))
    html = (f'<body><nav><a href="/news/a.html">a</a><a href="/about/">b</a></nav><ul>{items}</ul>'
            f'<footer><a href="/news/z.html">z</a></footer></body>')
    key = "http://big.com/news/index.html"
    page = parse_page(html, key)
    item = "http://big.com/news/item{}.html".format
    clique = [item(50000), item(99998), item(99999)]
    outlinks = {item(10): frozenset(), **{c: frozenset(x for x in clique if x != c) for c in clique}}
    got = select_candidates(key, page, SiteLinks(outlinks=outlinks, site="big.com"), CandidateParams())
    assert (got.method, got.candidates, got.cs_size, got.pages_loaded) == ("cs", clique, 3, 4)
    order = sort_links(page, key_page_links(page, "big.com"))
    assert len(order) == 100_003
    assert [url for url, _ in order[:4]] == ["http://big.com/news/a.html", item(0), item(1), item(2)]
    assert order[-2][0] == "http://big.com/news/z.html" and order[-1][0] == "http://big.com/about/"


def test_clique_search_is_bounded_on_a_dense_graph_without_an_n_cs():
    """120 pages in three groups (page i in group i mod 3), every two pages of
    different groups mutually linked: many triangles, no 4-CS. With n = 4 and
    max_loads = 120 the walk loads all pages; the best CS is the first
    triangle p0, p1, p2 (found at the third load and never beaten), filled
    with p3: partial_cs."""
    names = [u(f"p{i:03d}") for i in range(120)]
    links_of = {K: names}
    for i, x in enumerate(names):
        links_of[x] = [y for j, y in enumerate(names) if j % 3 != i % 3]
    pages, site = build_site(links_of)
    got = select(K, pages, site, n=4, max_loads=120)
    assert (got.method, got.cs_size, got.pages_loaded) == ("partial_cs", 3, 120)
    assert got.candidates == names[:4]


def test_result_does_not_depend_on_input_order():
    """Same pages, outlinks built in reverse order and from shuffled sets."""
    links_of = {K: [u("c"), u("a"), u("b"), u("d")], u("a"): [u("b")], u("b"): [u("a")],
                u("c"): [], u("d"): [], u("e"): [], u("f"): []}
    pages, site = build_site(links_of)
    reversed_site = SiteLinks(outlinks=dict(reversed(list(site.outlinks.items()))), site="ex.com")
    for n in (2, 3, 4, 6):
        assert select(K, pages, site, n=n) == select_candidates(K, pages[K], reversed_site,
                                                                CandidateParams(n=n))


def test_site_links_and_params():
    """site_links keeps the site's pages only, and each page's in-site links
    minus itself; CandidateParams rejects sizes that cannot work."""
    pages = {
        "http://ex.com/a.html": list_page("http://ex.com/a.html",
                                          ["/a.html", "/b.html", "http://other.org/", "/b.html#x"]),
        "http://www.ex.com/b.html": list_page("http://www.ex.com/b.html", ["http://ex.com/a.html"]),
        "http://other.org/": list_page("http://other.org/", ["http://ex.com/a.html"]),
    }
    site = site_links(pages, "ex.com")
    assert site.outlinks == {"http://ex.com/a.html": frozenset({"http://ex.com/b.html"}),
                             "http://www.ex.com/b.html": frozenset({"http://ex.com/a.html"})}
    with pytest.raises(ValueError):
        CandidateParams(n=0)
    with pytest.raises(ValueError):
        CandidateParams(max_loads=-1)


def max_clique_size(nodes, mutual, cap):
    for size in range(min(cap, len(nodes)), 0, -1):
        for combo in itertools.combinations(nodes, size):
            if all((a, b) in mutual for a, b in itertools.combinations(combo, 2)):
                return size
    return 0


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 7), st.data())
def test_select_candidates_invariants_on_random_sites(count, data):
    """Against a brute-force reading of Alg. 9: the walk is the sorted links
    with a target in the input; cs_size is the largest pairwise mutually
    linked set (capped at n) among the pages walked, the walk stops exactly
    at the first load that completes an n-CS, the first cs_size candidates
    form such a set, and the rest follow the fallback rules."""
    names = [u(f"q{i}") for i in range(count)]
    present = [x for x in names if data.draw(st.booleans())]
    linked = data.draw(st.lists(st.sampled_from(names), unique=True))
    out = {x: data.draw(st.lists(st.sampled_from(names + [K]), unique=True)) for x in present}
    n = data.draw(st.integers(1, 4))
    max_loads = data.draw(st.integers(0, 8))
    pages, site = build_site({K: linked, **out})
    got = select(K, pages, site, n=n, max_loads=max_loads)

    targets = site.outlinks
    mutual = {(a, b) for a in targets for b in targets
              if a != b and b in targets[a] and a in targets[b]}
    walk = [url for url, _ in sort_links(pages[K], key_page_links(pages[K], "ex.com")) if url in targets]
    walk = walk[:max_loads]
    loaded = walk[:got.pages_loaded]
    assert got.pages_loaded <= max_loads
    assert got.cs_size == max_clique_size(loaded, mutual, n)
    if got.cs_size == n:
        assert max_clique_size(loaded[:-1], mutual, n) < n
    else:
        assert loaded == walk
    core = got.candidates[:got.cs_size]
    assert all((a, b) in mutual for a, b in itertools.combinations(core, 2))
    assert set(core) <= set(loaded)
    assert len(got.candidates) == len(set(got.candidates)) <= n
    assert K not in got.candidates
    others = [x for x in present if x != K]
    assert len(got.candidates) == min(n, len(others))
    if got.cs_size < n:
        rest_loaded = [x for x in loaded if x not in core]
        from_a = got.candidates[got.cs_size:got.cs_size + len(rest_loaded)]
        assert from_a == rest_loaded[:len(from_a)]
    expected_method = ("cs" if got.cs_size == n else "partial_cs" if got.cs_size >= 2
                       else "linked" if any(c in linked for c in got.candidates)
                       else "site_sample" if got.candidates else "page_only")
    assert got.method == expected_method


def test_a_page_s_site_links_are_found_once_and_reused_by_its_candidate_search(monkeypatch):
    """site_links finds each input page's in-site links; the candidate search of that page
    reuses them (one scan of a page's links per shard, not two), with the same result as a
    search that finds them itself. A second capture of a URL is another page (here it lists
    only C): its own links are scanned and used, never the first capture's."""
    from sitestrip.transforms import candidates as module
    links_of = {K: [u("a"), u("b"), u("c")], u("a"): [u("b"), u("c")], u("b"): [u("a"), u("c")],
                u("c"): [u("a"), u("b")]}
    pages, site = build_site(links_of)
    scans = []
    real = module._key_link_positions
    monkeypatch.setattr(module, "_key_link_positions", lambda page, s: scans.append(page.url) or real(page, s))
    got = select(K, pages, site)
    assert scans == []
    fresh = SiteLinks(outlinks=dict(site.outlinks), site=site.site)     # nothing found before
    assert select(K, pages, fresh) == got
    assert scans == [K]
    assert (got.method, got.candidates) == ("cs", [u("a"), u("b"), u("c")])
    second_capture = list_page(K, [u("c")])
    scans.clear()
    other = select_candidates(K, second_capture, site, CandidateParams())
    assert scans == [K]
    assert (other.method, other.candidates[:1], other.pages_loaded) == ("linked", [u("c")], 1)


def test_compiled_dispersion_is_the_reference_order():
    """transforms/_features.c dispersion against _dispersion's level sweeps (the reference):
    the same positions in the same order, up to the last wanted one, on seeded random pages,
    node sets with repeats and without, every position wanted or a few; and its refusal of
    nodes out of document order."""
    import random

    from helpers.compiled import require_built
    from sitestrip.transforms import candidates as C
    require_built("_features")
    rng = random.Random(4)

    tags = ["div", "p", "ul", "li", "a", "span", "section"]
    for trial in range(150):
        html = nested_elements(rng, tags, 7, 0.55, children=(1, 5))
        page = parse_page(f"<html><body>{html}</body></html>", "http://ex.com/")
        for _ in range(4):
            m = rng.randrange(1, min(page.size, 60) + 1)
            picked = rng.choices(range(page.size), k=m) if trial % 4 == 0 else rng.sample(range(page.size), m)
            nodes = np.array(sorted(picked), dtype=np.int64)
            wanted = np.array([rng.random() < (0.3 if trial % 2 else 1.0) for _ in range(m)], dtype=bool)
            assert C._dispersion_order(page, nodes, wanted) == list(C._dispersion(C._Tree(page), nodes, wanted))
    with pytest.raises(ValueError, match="document order"):
        C._dispersion_order(page, np.array([1, 0], dtype=np.int64), np.ones(2, dtype=bool))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([
    "http://www.ex.com/a/b/k.html", "http://ex.com/a/b/", "http://ex.com/a/b/c/d.html", "http://ex.com/a/x.html",
    "http://ex.com/", "http://other.org/a/b/k.html", "https://ex.com/a/b/c/", "http://ex.com/z/y/x/w.html",
    "http://ex.com/a/b/k.html?x=/c/d", "ex.com/a/b/", "mailto:x@ex.com"]), st.integers(0, 9)), max_size=30),
    st.booleans())
def test_tiers_agree_with_the_one_link_at_a_time_definition(links, of_page):
    """_tiers (ranks per distinct directory, one sort) against Def. 4.2.5 written as a loop over
    the links: each link's rank from h_distance of its directories to the page's, tiers in rank
    order, each in (node, input position) order; with `of_page` the links are the page's own."""
    from sitestrip.transforms.candidates import (_directories_of_normalized, _h_distance, _tiers,
                                                 link_relevance_rank)
    page = parse_page("<body>" + "<p>x</p>" * 5 + "</body>", "http://www.ex.com/a/b/k.html")
    assert page.size == 11
    if of_page:
        links = [(url, node) for url, node in links if "://" in url]
        page.link_url = tuple(url for url, _ in links)
    groups: dict = {}
    for i, (url, node) in enumerate(links):
        dirs = _directories_of_normalized(url) if url in page.link_url else directory_sequence(url)
        groups.setdefault(link_relevance_rank(_h_distance(directory_sequence(page.url), dirs)), []).append(
            (node, i, url))
    expected = [[(url, node) for node, _, url in sorted(groups[rank])] for rank in sorted(groups)]
    assert _tiers(page, links, of_page) == expected


def test_tiers_reject_a_link_outside_the_page():
    from sitestrip.transforms.candidates import _tiers
    page = parse_page("<body><p>x</p></body>", "http://ex.com/")
    with pytest.raises(ValueError, match="link node 7 outside the page"):
        _tiers(page, [("http://ex.com/a", 1), ("http://ex.com/b", 7), ("http://ex.com/c", -1)])


LINK_HOST_CASES = [
    [],
    ["http://www.ex.com/k.html"],
    ["http://ex.com/a", "http://www.ex.com/k.html", "http://ex.com/a", "https://other.org:8443/x", "http://ex.com"],
    ["", "//", "http://", "ex.com/no-scheme", "http:/one-slash.ex.com/x", "http://ex.com//double",
     "http://[::1]:8080/v6", "http://user@ex.com/u", "http://www.ex.com:80/a?x=//y", "", "ex.com/no-scheme"],
    [f"http://h{k % 7}.org/p{k % 11}" for k in range(60)],
]


@pytest.mark.parametrize("urls", LINK_HOST_CASES)
def test_link_hosts_are_the_first_positions_of_the_distinct_urls(urls):
    """Each distinct URL's first position and host, the key page's own URL left out (the
    reference of _site.c key_links, which test_key_links_compiled_is_the_reference compares)."""
    from sitestrip.transforms.candidates import _link_hosts_python
    own = "http://www.ex.com/k.html"
    want = _link_hosts_python(tuple(urls), own)
    seen, positions = {own}, []
    for k, url in enumerate(urls):
        if url not in seen:
            seen.add(url)
            positions.append(k)
    assert want[0] == positions
    assert len(want[1]) == len(positions)
    assert _link_hosts_python(list(urls), own) == want


def test_link_hosts_slices_as_the_site_of_a_normalized_url():
    """Hosts: after the first "//" up to the next "/", the port and userinfo kept (the site
    key drops them later); a string without "//" is sliced from its second character, as
    _site_of_normalized slices it."""
    from sitestrip.transforms.candidates import _link_hosts_python
    urls = ("https://www.ex.com:8443/a", "http://user@ex.com/u", "http://ex.com", "ex.com/x", "http://a//b")
    assert _link_hosts_python(urls, "http://ex.com/") == (
        [0, 1, 2, 3, 4], ["www.ex.com:8443", "user@ex.com", "ex.com", "x.com", "a"])


def test_key_links_leave_out_hosts_that_only_contain_the_site():
    """A host holding the site key's text is of another site unless its own key is that site
    (sub.ex.com, notex.com, ex.com.evil.org are not ex.com; www.ex.com:8080 is)."""
    page = parse_page("<body></body>", "http://ex.com/k.html")
    urls = ("http://sub.ex.com/a", "http://notex.com/b", "http://ex.com.evil.org/c", "http://www.ex.com:8080/d",
            "http://ex.com/e", "http://other.org/f")
    page.link_url = urls
    page.link_node = np.arange(1, len(urls) + 1, dtype=page.link_node.dtype)
    assert [u for u, _ in key_page_links(page, "ex.com")] == ["http://www.ex.com:8080/d", "http://ex.com/e"]


RANK_URLS = ["http://www.ex.com/a/b/k.html", "http://ex.com/a/b/", "http://ex.com/a/b/c/d.html",
             "http://ex.com/a/x.html", "http://ex.com/", "http://ex.com", "https://ex.com/a/b/c/",
             "http://ex.com/z/y/x/w.html", "http://ex.com/a/b/k.html?x=/c/d", "http://ex.com/a/bb/k.html",
             "http://ex.com/a//b/", "http://ex.com/ä/b/", "http://ex.com/ä/b/c/", "http://ex.com/ä/c/",
             "http://ex.com/a/b/c/d/e/f/", "http://ex.com/a?q=/a/b/"]


@pytest.mark.parametrize("page_url", ["http://www.ex.com/a/b/k.html", "http://ex.com/", "http://ex.com/ä/b/x",
                                      "http://ex.com/a//b/c", "http://ex.com/a/b/c/d/e/f/g/h/"])
def test_link_ranks_is_the_hyperlink_distance_of_the_directories(page_url):
    """_site.c link_ranks against _h_distance of the directory tuples, a URL's host word the
    page's: equal, deeper, shallower, diverging, empty and non-ASCII directories, a query with
    slashes, no path at all."""
    from helpers.compiled import require_built
    from sitestrip.transforms.urls import normalize_url
    site_c = require_built("_site")
    urls = [normalize_url(url) for url in RANK_URLS]     # as a page's link_url holds them
    reference = directory_sequence(page_url)
    out = np.full(len(urls), 99, dtype=np.int64)
    site_c.link_ranks(urls, list(reference[1:]), out)
    expected = [h_distance(page_url, url) for url in urls]
    assert out.tolist() == expected
    assert len(set(expected)) >= 3
    with pytest.raises(ValueError):
        site_c.link_ranks(urls, list(reference[1:]), np.zeros(2, dtype=np.int64))
    with pytest.raises(TypeError):
        site_c.link_ranks(["http://ex.com/", 3], [], np.zeros(2, dtype=np.int64))


def test_loadable_key_links_compiled_agrees_with_the_tiers():
    """_loadable_key_links' compiled path (link_ranks, one sort of arrays, the tiers that hold a
    loadable link) against its reference (_loadable_in_order over _tiers), on pages of nested
    links in several directories, repeated nodes' order kept, any subset loadable; and the
    reference taken where the page is not of the site or the switch is off."""
    import random

    from helpers.compiled import require_built
    from sitestrip.transforms import candidates as C
    require_built("_site")
    rng = random.Random(7)
    dirs = ["a/b", "a", "a/b/c", "z", "a/b/c/d", "a/c", "q/w/e/r", "", "a/b?x=/a"]
    for trial in range(60):
        hrefs = [f"/{d}/x{k}.html" if d else f"/x{k}.html"
                 for k, d in enumerate(rng.choices(dirs, k=rng.randrange(1, 40)))]
        body = "".join(f'<div><p><a href="{h}">x</a>{"<span>y</span>" * rng.randrange(3)}</p></div>' for h in hrefs)
        page = parse_page(f"<html><body>{body}</body></html>", rng.choice(
            ["http://www.ex.com/a/b/k.html", "http://ex.com/", "http://ex.com/a/c/d/"]))
        urls, nodes = list(page.link_url), np.asarray(page.link_node)
        if trial % 3 == 0:      # several links in one node's place: their input order decides
            nodes = np.sort(rng.choices(nodes.tolist(), k=nodes.size))
        for _ in range(4):
            loadable = set(rng.sample(urls, rng.randrange(0, len(urls) + 1)))
            got = list(C._loadable_key_links(page, urls, nodes, loadable, "ex.com", compiled=True))
            want = list(C._loadable_in_order(page, list(zip(urls, nodes.tolist())), loadable, of_page=True))
            assert got == want
            assert set(got) == loadable & set(urls)
    page = list_page("http://ex.com/a/b/k.html", ["/a/b/x", "/a/y", "/a/b/c/z", "/q"])
    urls, nodes = list(page.link_url), np.asarray(page.link_node)
    assert list(C._loadable_key_links(page, urls, nodes, set(urls), "ex.com")) == \
        ["http://ex.com/a/b/x", "http://ex.com/a/b/c/z", "http://ex.com/a/y", "http://ex.com/q"]
    # Not a page of the site: its links' host words are not the page's, the reference ranks them.
    assert list(C._loadable_key_links(page, urls, nodes, set(urls), "other.org")) == \
        list(C._loadable_in_order(page, list(zip(urls, nodes.tolist())), set(urls), of_page=True))
    with pytest.raises(ValueError, match="link node 99 outside the page"):
        list(C._loadable_key_links(page, urls, np.array([1, 2, 99, 3]), set(urls), "ex.com"))


@pytest.mark.parametrize("urls", LINK_HOST_CASES + [
    ["http://sub.ex.com/a", "http://notex.com/b", "http://ex.com.evil.org/c", "http://www.ex.com:8080/d",
     "http://ex.com/e", "http://other.org/f", "http://ex.com/e", "http://WWW.ex.com/g", "http://ex.co/h"]])
def test_key_links_compiled_is_the_reference(urls):
    """transforms/_site.c key_links (distinct URLs, hosts and the site test in one pass, a host
    tested only when the site's name is in it) against _key_links_python (link_hosts, then a
    set of the site's hosts), for the page's own site, another, one whose name is in other
    hosts ("ex.co") and the empty site; positions in document order and the set of their URLs."""
    from sitestrip.transforms import tree
    from sitestrip.transforms.candidates import _key_links, _key_links_python
    if tree._site_compiled is None:
        pytest.skip("transforms/_site.c not built")
    page = parse_page("<body></body>", "http://www.ex.com/k.html")
    page.link_url = tuple(urls)
    page.link_node = np.arange(1, len(urls) + 1, dtype=page.link_node.dtype)
    for site in ("ex.com", "other.org", "ex.co", "h3.org", ""):
        got, want = _key_links(page, site, compiled=True), _key_links_python(page, site)
        assert got[0].dtype == want[0].dtype == np.int32 and got[0].tolist() == want[0].tolist()
        assert got[1] == want[1] == {urls[k] for k in want[0].tolist()}
