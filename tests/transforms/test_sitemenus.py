"""Site-level menus (design §12) on hand-built pages; expected results derived by hand."""
import numpy as np
import pytest

from sitestrip.configs import Config, config_from_dict
from sitestrip.transforms.site_step import PageRecord, process_site
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.sitemenus import MenuProposal, choose_menu_keys, menu_node_by_key, node_keys, own_links

from helpers.linksite import site_records

NAMES = ("alpha", "beta", "gamma", "delta")


def _html(name):
    """A related-links list first in the page (six links, anchors naming the page, so they differ
    from page to page), the article, then the site's sidebar (four links, same on every page)."""
    side = "".join(f"<li><a href='/{n}.html'>{n.title()}</a></li>" for n in NAMES)
    related = "".join(f"<li><a href='/{name}/see{i}.html'>{name} see also {i}</a></li>" for i in range(6))
    return (f"<html><body><div class=body><ul class=related>{related}</ul><h2>{name}</h2>"
            f"<p>About {name} and more words here.</p><p>{name} closing words of the page.</p></div>"
            f"<ul class=side>{side}</ul></body></html>")


def _records():
    return site_records(_html)


def _menus(config):
    return {row["url"]: row for kind, row in process_site("docs.test", _records(), config) if kind == "pages"}


SIDEBAR = [f"https://docs.test/{n}.html" for n in NAMES]


def test_page_menex_takes_the_related_list_the_site_menu_is_the_sidebar():
    """Page-level MenEx (Config(): the thesis) weighs each page alone: the related list has more
    children (amplitude 1 - 1/6 > 1 - 1/4) and comes first (position), so each page gets its own
    related links as its "menu", a different menu per page. The site menu keeps only template
    blocks whose anchor text is mostly template: the related list's elements map across pages
    (same tags and classes) but its anchors ("alpha see also 0" ...) do not, so only the sidebar
    (its anchors Alpha..Delta are on every page) qualifies, and every page carries it under one
    menu signature."""
    page_level = _menus(Config())
    assert page_level["https://docs.test/alpha.html"]["menu_links"][0]["text"] == "alpha see also 0"
    assert len({row["menu_signature"] for row in page_level.values()}) == 4
    site_level = _menus(config_from_dict({"site_menus": {"enabled": True}}))
    for row in site_level.values():
        assert [link["url"] for link in row["menu_links"]] == SIDEBAR
    assert len({row["menu_signature"] for row in site_level.values()}) == 1



def test_a_replaced_page_level_menu_never_reads_its_links(monkeypatch):
    """With site menus on, every page's menu columns are its site menu (the sidebar, test
    above), so the links of the page-level menus (the related lists) are never read: one
    links_in per page, the sidebar's four links. With them off, one per page too, the
    related list's six. Same rows as when every menu's links are read (menu_links compared
    with links_in on the chosen menu nodes)."""
    from sitestrip.transforms import menex
    read = []
    real = menex.links_in
    monkeypatch.setattr(menex, "links_in", lambda page, node: read.append(node) or real(page, node))
    site_level = _menus(config_from_dict({"site_menus": {"enabled": True}}))
    assert len(read) == len(NAMES)
    assert all(len(row["menu_links"]) == 4 for row in site_level.values())
    read.clear()
    page_level = _menus(Config())
    assert len(read) == len(NAMES)
    assert all(len(row["menu_links"]) == 6 for row in page_level.values())

def test_node_keys_name_the_same_block_on_two_pages():
    """ul.side under BODY has the same key on both pages (same path of tags and classes), whatever
    its text; ul.side and ul.other differ (class), and the class order does not matter."""
    a = parse_page("<body><div><p>x</p></div><ul class='side nav'><li>a</li></ul></body>", "http://s.test/a")
    b = parse_page("<body><div><p>y</p><p>z</p></div><ul class='nav side'><li>b</li></ul>"
                   "<ul class=other><li>c</li></ul></body>", "http://s.test/b")
    ul_a = [i for i in range(a.size) if a.tag[i] == a.tag[4]]   # node 4 of a is the <ul>
    ka, kb = node_keys(a), node_keys(b)
    assert ka[4] in set(kb.tolist())
    ul_b = [i for i in range(b.size) if b.tag[i] == a.tag[4]]
    assert len(ul_b) == 2 and ka[4] == kb[ul_b[0]] and ka[4] != kb[ul_b[1]]
    assert len(ul_a) == 1


def test_choose_menu_keys_sums_scores_over_the_group():
    """Group g: page p proposes keys 1 (0.9) and 2 (0.5); page q proposes 2 (0.6); page r 2 (0.3).
    Sums: key 1 = 0.9, key 2 = 1.4 → 2. Group h: one page, keys 5 and 3 both 0.7 → the tie goes
    to the smaller key, 3."""
    def proposal(*pairs):
        return MenuProposal(np.arange(len(pairs)), np.array([k for k, _ in pairs], dtype=np.uint64),
                            np.array([s for _, s in pairs]))
    proposals = {"p": proposal((1, 0.9), (2, 0.5)), "q": proposal((2, 0.6)), "r": proposal((2, 0.3)),
                 "s": proposal((5, 0.7), (3, 0.7))}
    chosen = choose_menu_keys(proposals, {"p": "g", "q": "g", "r": "g", "s": "h"})
    assert chosen == {"g": 2, "h": 3}


def test_menu_node_by_key_needs_two_links():
    """The key of a <ul> with one link finds nothing; with two links it finds the <ul>."""
    one = parse_page("<body><ul class=m><li><a href='/a'>A</a></li></ul></body>", "http://s.test/")
    two = parse_page("<body><ul class=m><li><a href='/a'>A</a></li><li><a href='/b'>B</a></li></ul></body>",
                     "http://s.test/")
    ul = 1
    assert menu_node_by_key(one, int(node_keys(one)[ul])) is None
    assert menu_node_by_key(two, int(node_keys(two)[ul])) == ul


def test_site_menu_names_its_node_by_its_key(monkeypatch):
    """A page of two link lists, ul.a (node 1) and ul.b (node 8): each <ul> is followed by two
    <li><a>text</a></li> (3 nodes each), so ul.a = 1..7 and ul.b = 8..14. Its proposal holds only
    ul.a (score 0.4, key from node_keys). A chosen key of the proposal gives ul.a and that key
    without computing the page's node keys; the key of ul.b (not proposed, two links) is found
    on the page and named by itself; an unknown key, or none, falls back to the best proposed
    root, ul.a, with its key."""
    from sitestrip.transforms import sitemenus
    from sitestrip.transforms.sitemenus import site_menu

    page = parse_page("<body><ul class=a><li><a href='/1'>1</a></li><li><a href='/2'>2</a></li></ul>"
                      "<ul class=b><li><a href='/3'>3</a></li><li><a href='/4'>4</a></li></ul></body>",
                      "http://s.test/")
    keys = node_keys(page)
    assert page.tag[1] == page.tag[8] and keys[1] != keys[8]
    proposal = MenuProposal(np.array([1]), keys[[1]], np.array([0.4]))
    computed = []
    real = sitemenus.node_keys
    monkeypatch.setattr(sitemenus, "node_keys", lambda p: computed.append(1) or real(p))
    menu, key = site_menu(page, proposal, int(keys[1]))
    assert (menu.node, key, computed) == (1, int(keys[1]), [])
    menu, key = site_menu(page, proposal, int(keys[8]))
    assert (menu.node, key) == (8, int(keys[8])) and [u for u, _ in menu.links] == ["http://s.test/3", "http://s.test/4"]
    for chosen in (12345, None):
        menu, key = site_menu(page, proposal, chosen)
        assert (menu.node, key) == (1, int(keys[1]))
    assert site_menu(page, MenuProposal(np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0)), 1) is None


# --- The menu's own links (own_links) ------------------------------------------------------

# A docs site of three sections. Every page's header (div.top) holds the site's global menu
# (ul.menu: Home, Guide, API, FAQ, the same on every page), a breadcrumb (ul.nav.crumbs: Home,
# Docs, the page's section, then the page's own title unlinked) and a previous/next bar
# (div.pager: the neighbouring pages in reading order).
SECTIONS = {"guide": ("install", "start", "config"), "api": ("core", "io", "net"), "faq": ("general", "errors")}
READING = [(s, p) for s, pages in SECTIONS.items() for p in pages]
GLOBAL = ["https://docs.test/", "https://docs.test/guide/", "https://docs.test/api/", "https://docs.test/faq/"]


def _header_html(i):
    section, name = READING[i]
    menu = "".join(f"<li><a href='{u}'>{u.rstrip('/').rsplit('/', 1)[-1].title()}</a></li>" for u in GLOBAL)
    crumbs = (f"<li><a href='/'>Home</a></li><li><a href='/docs/'>Docs</a></li>"
              f"<li><a href='/{section}/'>{section.title()}</a></li><li>{name.title()}</li>")
    neighbours = [("Previous", READING[i - 1]) if i > 0 else None,
                  ("Next", READING[i + 1]) if i + 1 < len(READING) else None]
    pager = "".join(f"<a href='/{s}/{p}.html'>{label}</a>" for label, (s, p) in filter(None, neighbours))
    body = "".join(f"<p>Paragraph {k} of {section} {name}: words about {name} in the {section} part, number {k}.</p>"
                   for k in range(6))
    return (f"<html><body><div class=top><ul class=menu>{menu}</ul><ul class='nav crumbs'>{crumbs}</ul>"
            f"<div class=pager>{pager}</div></div><div class=main><h1>{name.title()}</h1>{body}</div>"
            f"<div class=foot><p>Copyright words</p></div></body></html>")


def _site(site, pages):
    """PageRecords of (url, html) pairs, in order."""
    return [PageRecord(url=url, site=site, warc_file="f.warc.gz", warc_offset=i, warc_record_id=f"<urn:{i}>",
                       fetch_date="2024-01-01T00:00:00Z", content_type="text/html", charset="utf-8",
                       truncated=None, page=parse_page(html, url)) for i, (url, html) in enumerate(pages)]


def _header_site():
    return _site("docs.test", [(f"https://docs.test/{s}/{p}.html", _header_html(i))
                               for i, (s, p) in enumerate(READING)])


def _site_menus(site, records, own_links):
    config = config_from_dict({"site_menus": {"enabled": True, "own_links": own_links}})
    return {row["url"]: row for kind, row in process_site(site, records, config) if kind == "pages"}


def test_the_menu_row_drops_the_breadcrumb_and_the_pager_beside_the_global_menu():
    """The global menu and the breadcrumb weigh alike in MenEx (both <ul>, four items, a nav
    hint), so Alg. 1 climbs from the menu to their parent div.top, and the site takes div.top:
    the menu row held the global menu, the breadcrumb and the pager (io.html, between core.html
    and net.html: Home, Guide, API, FAQ, Home, Docs, API, Core, Net). div.top's parts are its
    three children. ul.menu holds the same four links on all 8 pages: site-wide, two or more
    links. The pager's links are each on at most 2 pages of 8: not site-wide. The breadcrumb's
    Home and Docs are on all 8 pages and its section link on 2 or 3, so two of its three links
    recur, but its class names it a breadcrumb. With own_links, every page's menu row is the
    global menu alone; the menu is still named by div.top, one signature for the site."""
    before = _site_menus("docs.test", _header_site(), own_links=False)
    io = [link["url"] for link in before["https://docs.test/api/io.html"]["menu_links"]]
    assert io == GLOBAL + ["https://docs.test/", "https://docs.test/docs/", "https://docs.test/api/",
                           "https://docs.test/api/core.html", "https://docs.test/api/net.html"]
    after = _site_menus("docs.test", _header_site(), own_links=True)
    for row in after.values():
        assert [link["url"] for link in row["menu_links"]] == GLOBAL
    assert len({row["menu_signature"] for row in after.values()}) == 1
    assert {row["menu_signature"] for row in after.values()} == {row["menu_signature"] for row in before.values()}


NODES = ("Top", "Intro", "Syntax", "Types", "Index")
UP = {"Intro": "Top", "Syntax": "Top", "Types": "Syntax", "Index": "Top"}


def _texinfo_html(i):
    """A Texinfo node: its navigation bar (Next, Previous, Up, then Contents and Index, one
    line) above and below the text."""
    node = NODES[i]
    parts = ([f"Next: <a href='{NODES[i + 1]}.html' rel=next>{NODES[i + 1]}</a>"] if i + 1 < len(NODES) else []) \
        + ([f"Previous: <a href='{NODES[i - 1]}.html' rel=prev>{NODES[i - 1]}</a>"] if i > 0 else []) \
        + ([f"Up: <a href='{UP[node]}.html' rel=up>{UP[node]}</a>"] if node in UP else [])
    bar = ("<div class=header><p>" + ", ".join(parts) + " &nbsp; [<a href='toc.html#SEC_Contents' rel=contents>"
           "Contents</a>][<a href='Index.html' rel=index>Index</a>]</p></div>")
    body = "".join(f"<p>The {node} node, paragraph {k}: some words about {node.lower()} and its use.</p>"
                   for k in range(5))
    return f"<html><body>{bar}<h2>{node}</h2>{body}<hr>{bar}</body></html>"


def test_a_texinfo_bar_is_the_site_navigation_and_stays_whole():
    """The site's menu is the node bar (div.header, the same key on every page). Its parts,
    below the <p> that holds all its links, are its five (or fewer) <a>: single links, none a
    block of two or more, so nothing beside it is a global menu and it is kept whole: Syntax
    (between Intro and Types, under Top) has Next Types, Previous Intro, Up Top, Contents,
    Index, with own_links as without."""
    site = _site("manual.test", [(f"https://manual.test/{n}.html", _texinfo_html(i)) for i, n in enumerate(NODES)])
    after = _site_menus("manual.test", site, own_links=True)
    assert [link["url"].rsplit("/", 1)[1] for link in after["https://manual.test/Syntax.html"]["menu_links"]] == \
        ["Types.html", "Intro.html", "Top.html", "toc.html", "Index.html"]
    before = _site_menus("manual.test", site, own_links=False)
    assert {u: r["menu_links"] for u, r in after.items()} == {u: r["menu_links"] for u, r in before.items()}
    assert len({row["menu_signature"] for row in after.values()}) == 1


def _menus_of(pages_html, root_id="m"):
    """menu_links of the element with id `root_id` on each page (one URL dictionary)."""
    import zlib

    from sitestrip.transforms.sitemenus import menu_links
    ids, out = {}, []
    for k, html in enumerate(pages_html):
        page = parse_page(html, f"https://s.test/p{k}.html")
        root = int(np.flatnonzero(page.id_hash == zlib.crc32(root_id.encode()))[0])   # id: crc32 of its value
        out.append(menu_links(page, root, ids))
    return out


def _kept(menu, kept):
    return [menu.links[i][0].rsplit("/", 1)[1] for i in (range(len(menu.links)) if kept is None else kept)]


def test_own_links_drops_a_previous_up_next_bar_beside_the_global_menu():
    """Four pages read p1..p4, each header (div#m) a title link to the front page, the global
    menu (home, contents, index: on all four pages) and the page's bar (previous, up, next). Up:
    p1 → front page, p2 and p3 → s1, p4 → s2. On p2 the bar holds p1 (a bar link on p2 alone),
    s1 (p2, p3) and p3 (p2, p4): each on 2 pages of 4 at most, none on more than half; the
    global menu's links are on all 4. The parts of div#m are the title link (one link, on every
    page: kept), the global menu (a site-wide block) and the bar (dropped)."""
    up = {1: "index.html", 2: "s1.html", 3: "s1.html", 4: "s2.html"}
    pages = []
    for k in range(1, 5):
        bar = (f"<a href='/p{k - 1}.html'>previous</a> | " if k > 1 else "") + f"<a href='/{up[k]}'>up</a>" \
            + (f" | <a href='/p{k + 1}.html'>next</a>" if k < 4 else "")
        pages.append(f"<body><div id=m><h1><a href='/index.html'>Docs</a></h1><div id=global-nav>"
                     f"<a href='/index.html'>Home</a> | <a href='/contents.html'>Contents</a> | "
                     f"<a href='/genindex.html'>Index</a></div><div class=nav>{bar}</div></div><p>text</p></body>")
    menus = _menus_of(pages)
    kept = own_links(menus)
    assert _kept(menus[1], kept[1]) == ["index.html", "index.html", "contents.html", "genindex.html"]
    assert all(_kept(m, k) == ["index.html", "index.html", "contents.html", "genindex.html"]
               for m, k in zip(menus, kept))
    # One page alone: nothing recurs or fails to; kept whole.
    assert own_links(menus[:1]) == [None]


def test_own_links_drops_a_deep_breadcrumb_by_its_links_and_keeps_a_varying_mega_menu():
    """div#m holds the global menu (ul.global: a, b, c on all 6 pages) and a trail (ul.trail:
    home, then the page's section and subsection: each section on 2 pages of 6, each subsection
    on 1). The trail has no breadcrumb name; one of its three links recurs on more than half
    of the pages (home): not site-wide, dropped. A mega-menu instead (div#m holding two
    dropdown lists, each of four links of which one changes page by page) has parts whose
    links recur three times in four: site-wide, nothing dropped."""
    trail_pages = [f"<body><div id=m><ul class=global><li><a href='/a'>A</a></li><li><a href='/b'>B</a></li>"
                   f"<li><a href='/c'>C</a></li></ul><ul class=trail><li><a href='/'>Home</a></li>"
                   f"<li><a href='/s{k // 2}/'>S</a></li><li><a href='/s{k // 2}/t{k}/'>T</a></li></ul></div></body>"
                   for k in range(6)]
    menus = _menus_of(trail_pages)
    assert all(_kept(m, k) == ["a", "b", "c"] for m, k in zip(menus, own_links(menus)))
    mega_pages = [f"<body><div id=m>" + "".join(
        f"<ul class=drop{d}><li><a href='/d{d}/1'>1</a></li><li><a href='/d{d}/2'>2</a></li>"
        f"<li><a href='/d{d}/3'>3</a></li><li><a href='/d{d}/latest{k}'>L</a></li></ul>" for d in (1, 2))
        + "</div></body>" for k in range(4)]
    assert own_links(_menus_of(mega_pages)) == [None] * 4


def test_own_links_keeps_a_bar_of_single_links_and_a_sidebar_of_page_lists():
    """A Sphinx related bar (div#m > ul > li: index and modules on every page, next and
    previous changing): its parts are single links, no block of two beside them: kept whole. A
    reference sidebar (div#m: the library's front page, the page's own methods, a generator
    link): the front-page and generator links recur but are single links, the methods list
    is the page's own: no site-wide block, kept whole."""
    bar_pages = [f"<body><div id=m><h3>Navigation</h3><ul><li><a href='/genindex.html'>index</a></li>"
                 f"<li><a href='/modindex.html'>modules</a></li><li><a href='/p{k + 1}.html'>next</a></li>"
                 f"<li><a href='/p{k - 1}.html'>previous</a></li><li><a href='/index.html'>Docs</a> »</li>"
                 f"</ul></div></body>" for k in range(4)]
    assert own_links(_menus_of(bar_pages)) == [None] * 4
    side_pages = [f"<body><nav id=m><div><a href='/index.html'>Lib</a></div><div class=links>"
                  f"<a href='/c{k}.new.html'>new</a><a href='/c{k}.get.html'>get</a><a href='/c{k}.set.html'>set</a>"
                  f"</div><div><a href='https://gen.test/'>generator</a></div></nav></body>" for k in range(4)]
    assert own_links(_menus_of(side_pages)) == [None] * 4


def test_a_page_that_proposed_nothing_carries_the_site_block_with_own_links():
    """Three pages with the same ul.nav (two links) and a related list. Pages a and b propose
    ul.nav; page c proposed nothing (its template had no link block). The site's key is
    ul.nav's. With own_links, c carries the ul.nav it has too; without, its row is left to
    page-level MenEx (not set here)."""
    from sitestrip.transforms.site_step import _apply_site_menus
    html = ("<body><ul class=nav><li><a href='/x'>X</a></li><li><a href='/y'>Y</a></li></ul>"
            "<ul class=rel><li><a href='/r{0}'>R</a></li><li><a href='/s{0}'>S</a></li></ul></body>")
    pages = {f"https://s.test/{n}": parse_page(html.format(n), f"https://s.test/{n}") for n in "abc"}
    key = node_keys(pages["https://s.test/a"])[1]
    proposals = {u: MenuProposal(np.array([1]), np.array([key]), np.array([0.8])) for u in list(pages)[:2]}
    proposals["https://s.test/c"] = MenuProposal(np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0))
    for own, replaced in ((True, {0, 1, 2}), (False, {0, 1})):
        rows = [{"url_normalized": u, "site": "s.test"} for u in pages]
        config = config_from_dict({"site_menus": {"enabled": True, "own_links": own}})
        row_pages = [(u, pages[u]) for u in pages]
        assert _apply_site_menus(rows, row_pages, None, proposals, config) == replaced
        for k in replaced:
            assert [link["url"] for link in rows[k]["menu_links"]] == ["https://s.test/x", "https://s.test/y"]
            assert rows[k]["menu_signature"] == f"s.test:{int(key):016x}"


@pytest.mark.beam
def test_the_menu_row_holds_the_global_menu_through_the_pipeline(tmp_path):
    """The header site above as a WARC, through `sitestrip run` (Beam, default.yaml: own_links
    on; off, its site menu is div.top there too, breadcrumb and pager included): every pages
    row's menu is the global menu, and menus/ holds one row for the site, its block, carried
    by the 8 pages, with the global menu's links."""
    import pyarrow.dataset as ds

    from sitestrip.pipeline.cli import main
    from helpers.warcs import response, write_warc
    write_warc(tmp_path / "site.warc.gz", [response(f"https://docs.test/{s}/{p}.html", _header_html(i).encode())
                                           for i, (s, p) in enumerate(READING)])
    out = tmp_path / "out"
    assert main(["run", "--input", str(tmp_path / "site.warc.gz"), "--output", str(out), "--quiet"]) == 0
    pages = ds.dataset(str(out / "pages"), format="parquet").to_table(columns=["url", "menu_links"]).to_pylist()
    assert len(pages) == len(READING)
    assert all([link["url"] for link in row["menu_links"]] == GLOBAL for row in pages)
    (menu,) = ds.dataset(str(out / "menus"), format="parquet").to_table().to_pylist()
    assert menu["pages"] == len(READING) and [link["url"] for link in menu["menu_links"]] == GLOBAL


def test_compiled_node_keys_are_the_reference():
    """node_keys with its labels from transforms/_features.c menu_labels and the running sum
    from path_hashes, against node_keys_labels and path_hashes_reference (numpy), bit for bit:
    seeded pages of nested elements with ids, repeated and reordered class tokens."""
    import random

    from helpers.compiled import require_built
    from sitestrip.transforms import sitemenus, tree
    from sitestrip.transforms.clusters import path_hashes_reference
    from sitestrip.transforms.sitemenus import node_keys_labels
    require_built("_features")
    rng = random.Random(11)

    def attrs():
        out = ""
        if rng.random() < 0.3:
            out += f' id="i{rng.randrange(5)}"'
        if rng.random() < 0.6:
            out += ' class="' + " ".join(rng.choices(["a", "b", "nav", "menu", "x-1"], k=rng.randrange(0, 4))) + '"'
        return out

    def fragment(depth):
        tags = ["div", "nav", "ul", "li", "a", "span"]
        return "".join(f"<{t}{attrs()}{' href=/x' if t == 'a' else ''}>"
                       f"{fragment(depth + 1) if depth < 6 and rng.random() < 0.6 else 'x'}</{t}>"
                       for t in rng.choices(tags, k=rng.randrange(1, 4)))

    assert tree._COMPILED
    for _ in range(60):
        page = parse_page(f"<html><body{attrs()}>{fragment(0)}</body></html>", "http://ex.com/")
        want = path_hashes_reference(page, node_keys_labels(page))
        got = node_keys(page)
        assert got.dtype == want.dtype == np.uint64 and np.array_equal(got, want)
        # menu_links' labels of some nodes: the page's compiled labels at them, or numpy's of them
        nodes = np.arange(0, page.size, 2)
        compiled = sitemenus._labels(page, nodes)
        links = sitemenus.menu_links(page, 0, {})
        tree._COMPILED = False
        try:
            assert np.array_equal(compiled, sitemenus._labels(page, nodes))
            # and the keys of a menu's parts relative to its root (clusters.subtree_path_hashes)
            reference = sitemenus.menu_links(page, 0, {})
            assert np.array_equal(links.inner, reference.inner) and np.array_equal(links.keys, reference.keys)
        finally:
            tree._COMPILED = True


def test_menu_proposal_is_the_same_with_the_compiled_roots():
    """propose_menus with Alg. 1's roots and Alg. 2's scores from transforms/_features.c
    menu_pick, against the Python walk per candidate (SITESTRIP_FEATURES=python's path):
    the same roots, keys and scores on seeded pages of nested link lists, every node template."""
    import random

    from helpers.compiled import require_built
    from sitestrip.transforms import tree
    from sitestrip.transforms.sitemenus import propose_menus
    require_built("_features")
    rng = random.Random(2)

    def block(depth):
        if depth > 3 or rng.random() < 0.3:
            return "".join(f'<a href="/p{rng.randrange(30)}">link {rng.randrange(9)}</a>'
                           for _ in range(rng.randrange(0, 5))) + rng.choice(["", "some words here"])
        return "".join(f"<{t}>{block(depth + 1)}</{t}>" for t in rng.choices(["div", "ul", "li", "nav", "p"],
                                                                             k=rng.randrange(1, 5)))

    proposed = 0
    for _ in range(80):
        page = parse_page(f"<html><body>{block(0)}</body></html>", "http://ex.com/")
        template = np.ones(page.size, dtype=bool)
        got = propose_menus(page, template)
        tree._COMPILED = False
        try:
            want = propose_menus(page, template)
        finally:
            tree._COMPILED = True
        proposed += got.nodes.size > 0
        for a, b in ((got.nodes, want.nodes), (got.keys, want.keys), (got.scores, want.scores)):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert proposed >= 20


def test_menu_links_and_eligible_roots_compiled_are_the_python_references():
    """menu_links with its elements and the links' single text nodes from transforms/_site.c
    menu_elements, its keys from menu_keys, and propose_menus's eligible roots from
    menu_eligible, against their numpy references (_menu_elements_python, subtree_texts,
    _labels with subtree_path_hashes, _menu_eligible_python) on seeded pages of nested link
    lists: links with one text node, none (an image) or several (markup inside), breadcrumb
    classes, ids and several classes on one element, every element as a menu root, random
    template masks and shares."""
    import random

    from helpers.compiled import require_built
    from sitestrip.transforms import sitemenus, tree
    from sitestrip.transforms.menex import menu_scores
    require_built("_site")
    rng = random.Random(7)

    def link():
        inner = rng.choice(["one", "<b>two</b> words", "<img src=/i.png>", "a <i>b</i> c", "", "x"])
        return f'<a href="/p{rng.randrange(12)}">{inner}</a>'

    def block(depth):
        if depth > 3 or rng.random() < 0.3:
            return "".join(link() for _ in range(rng.randrange(0, 5))) + rng.choice(["", "some words"])
        cls = rng.choice(["", " class=breadcrumb", " class=nav", " id=menu", " class='nav main' id=top"])
        return "".join(f"<{t}{cls}>{block(depth + 1)}</{t}>"
                       for t in rng.choices(["div", "ul", "li", "nav", "p", "ol"], k=rng.randrange(1, 4)))

    fields = ("uid", "keys", "lo", "hi", "crumb", "inner", "inner_lo", "inner_hi")
    assert tree._COMPILED
    roots = eligible_seen = 0
    for _ in range(60):
        page = parse_page(f"<html><body>{block(0)}</body></html>", "http://ex.com/")
        for root in range(page.size):
            if page.tag[root] == sitemenus.TEXT:
                continue
            got = sitemenus.menu_links(page, root, {})
            tree._COMPILED = False
            try:
                want = sitemenus.menu_links(page, root, {})
            finally:
                tree._COMPILED = True
            assert got.links == want.links
            for name in fields:
                a, b = getattr(got, name), getattr(want, name)
                assert a.dtype == b.dtype and np.array_equal(a, b), name
            roots += 1
        f, weights = menu_scores(page)
        for share in (0.0, 0.25, 0.5, 1.0):
            template = np.array([rng.random() < 0.8 for _ in range(page.size)], dtype=bool)
            got = sitemenus._menu_eligible(page, template, f.hyperlinks, weights, share)
            want = sitemenus._menu_eligible_python(page, template, f.hyperlinks, weights, share)
            for a, b in zip(got, want):
                assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
            eligible_seen += int(got[0].sum())
    assert roots > 500 and eligible_seen > 100
