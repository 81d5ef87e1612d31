"""Site-level menus (SPEC §12) on hand-built pages; expected results derived by hand."""
import numpy as np

from sitestrip.configs import Config, config_from_dict
from sitestrip.transforms.extract import PageRecord, process_site
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.sitemenus import MenuProposal, choose_menu_keys, menu_node_by_key, node_keys

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
    out = []
    for i, name in enumerate(NAMES):
        url = f"https://docs.test/{name}.html"
        out.append(PageRecord(url=url, site="docs.test", warc_file="f.warc.gz", warc_offset=i,
                              warc_record_id=f"<urn:{i}>", fetch_date="2024-01-01T00:00:00Z",
                              content_type="text/html", charset="utf-8", truncated=None,
                              page=parse_page(_html(name), url)))
    return out


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
