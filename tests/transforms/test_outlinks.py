"""The links dataset's rows (transforms/outlinks.py): regions, anchor texts, rel flags, fragments,
in_site and target_in_input, on hand-built pages and sites; expected results derived by hand."""
import pickle

import numpy as np
import pytest

from sitestrip.configs import ConfigError, config_from_dict
from sitestrip.schemas import LINKS
from sitestrip.transforms.site_step import process_site
from sitestrip.transforms.outlinks import PageLinks, page_links
from sitestrip.transforms.page import parse_page, tag_name
from sitestrip.transforms.tree import subtree_mask
from helpers.linksite import NAMES, site_records, site_rows

URL = "https://docs.test/guide/page.html"

PAGE = """<html><body>
<div id=header><a href="/"><img src="/logo.png" alt="Docs home"></a> <a href="/search.html">Search</a></div>
<ul id=nav><li><a href="/guide/a.html">Alpha</a></li><li><a href="/guide/b.html#intro">Beta</a></li></ul>
<div id=content><h1>Page</h1><p>Read <a href="https://www.docs.test/ref.html" rel="nofollow">the <b>reference</b></a>
or <a href="#part-2">part two</a>.</p><p><a href="/big.png"><img src="/small.png" alt="A figure"></a></p>
<map name=m><area href="https://maps.example/x#here" alt="Map area" rel="sponsored UGC"></map></div>
<div id=footer><a href="http://other.example/about">About</a></div>
</body></html>"""


def _node(page, tag, nth=0):
    return [i for i in range(page.size) if tag_name(page.tag[i]) == tag][nth]


def _links(main=True, template=True, menu=True):
    """PageLinks of PAGE with hand-made masks: main content = the div#content subtree; template
    = the header, the nav list and the footer (the three divs/ul outside the content), and the
    content's first paragraph's link too (a template link the main content kept); menu = the
    nav list."""
    page = parse_page(PAGE, URL)
    content, nav = _node(page, "div", 1), _node(page, "ul")
    header, footer = _node(page, "div", 0), _node(page, "div", 2)
    main_mask = subtree_mask(page, [content]) if main else None
    template_mask = subtree_mask(page, [header, nav, footer]) if template else None
    if template:
        template_mask[page.link_node[2]] = True
    held = page_links(page, main_mask, template_mask, nav if menu else None, source_url=URL, row_url=URL,
                      site="docs.test", warc_file="f.warc.gz", warc_offset=7)
    return page, held


def test_rows_by_hand():
    """Links in document order: logo (an image: its alt is the anchor text), Search, Alpha,
    Beta (its fragment apart), the reference (its text from two nodes, the joiner's "the
    reference"; rel nofollow; www.docs.test is the site docs.test), "part two" (an in-page
    link: the page itself with its fragment), the figure link (an image in a paragraph of the
    main content: main by its nearest ancestor with text... none: the <p> holds only the
    image, so the div#content with text decides), the area (its alt; sponsored and ugc; its
    fragment), About (another site).
    Regions, main > menu > template > other: header links template, nav links menu (also
    template), the reference main though marked template too, part two and the figure main,
    the area main (inside div#content), About template."""
    _page, held = _links()
    rows = list(held.rows())
    assert [r["position"] for r in rows] == list(range(9))
    assert [r["target_url"] for r in rows] == [
        "https://docs.test/", "https://docs.test/search.html", "https://docs.test/guide/a.html",
        "https://docs.test/guide/b.html", "https://www.docs.test/ref.html", URL, "https://docs.test/big.png",
        "https://maps.example/x", "http://other.example/about"]
    assert [r["fragment"] for r in rows] == [None, None, None, "intro", None, "part-2", None, "here", None]
    assert [r["anchor_text"] for r in rows] == ["Docs home", "Search", "Alpha", "Beta", "the reference",
                                                "part two", "A figure", "Map area", "About"]
    assert [r["region"] for r in rows] == ["template", "template", "menu", "menu", "main", "main", "main", "main",
                                           "template"]
    assert [r["rel_nofollow"] for r in rows] == [False] * 4 + [True] + [False] * 4
    assert [r["rel_sponsored"] and r["rel_ugc"] for r in rows] == [False] * 7 + [True, False]
    assert [r["in_site"] for r in rows] == [True] * 7 + [False, False]
    assert all(r["target_in_input"] is None for r in rows)
    assert {(r["source_url"], r["site"], r["warc_file"], r["warc_offset"]) for r in rows} == {
        (URL, "docs.test", "f.warc.gz", 7)}
    present = {"https://docs.test/guide/a.html", URL}
    assert [r["target_in_input"] for r in held.rows(present)] == [False, False, True, False, False, True,
                                                                  False, False, False]


def test_regions_without_main_template_or_menu():
    """Without a main content, a template or a menu every link is `other`; a menu alone makes
    the nav links `menu`; set_menu moves it (the site menu replacing the page's), and a menu of
    another page object (a second capture's site menu) is ignored."""
    page, held = _links(main=False, template=False, menu=False)
    assert set(r["region"] for r in held.rows()) == {"other"}
    held.set_menu(page, _node(page, "ul"))
    assert [r["region"] for r in held.rows()][2:4] == ["menu", "menu"]
    held.set_menu(page, _node(page, "div", 2))          # the footer
    assert [r["region"] for r in held.rows()] == ["other"] * 8 + ["menu"]
    other = parse_page(PAGE, URL)
    held.set_menu(other, None)
    assert [r["region"] for r in held.rows()][-1] == "menu"
    held.seal()
    held.set_menu(page, None)                            # sealed: the menu is final
    assert [r["region"] for r in held.rows()][-1] == "menu"


def test_a_textless_link_is_judged_by_its_nearest_ancestor_with_text():
    """body(0) div(1) a(2) img(3) p(4) "Text"(5) a(6) img(7). The main content is the <p>
    alone: link 6 has no text, its nearest ancestor with text is the <p>: main. Link 2's
    nearest ancestor with text is BODY, not main: other."""
    page = parse_page('<body><div><a href="/x"><img alt="X"></a></div><p>Text<a href="/y"><img alt="Y"></a></p>'
                      "</body>", URL)
    held = page_links(page, subtree_mask(page, [4]), None, None, source_url=URL, row_url=URL, site="docs.test",
                      warc_file="f", warc_offset=0)
    assert [(r["anchor_text"], r["region"]) for r in held.rows()] == [("X", "other"), ("Y", "main")]


def test_page_links_pickle_without_their_nodes():
    """Through Beam's coder a PageLinks keeps its rows and target_in_input, not its nodes (the
    menu is final by then)."""
    _page, held = _links()
    held.seal()
    held.set_present({URL})
    back = pickle.loads(pickle.dumps(held))
    assert isinstance(back, PageLinks) and back.nodes is None
    assert list(back.rows()) == list(held.rows())
    mine, theirs = held.columns(), back.columns()
    assert list(mine) == list(theirs) == LINKS.names
    assert all(np.array_equal(mine[k], theirs[k]) if isinstance(mine[k], np.ndarray) else mine[k] == theirs[k]
               for k in mine)
    assert back.key == held.key and back.targets() == sorted(set(back.strings()[0]))
    empty = page_links(parse_page("<body><p>no links</p></body>", URL), None, None, None, source_url=URL,
                       row_url=URL, site="docs.test", warc_file="f", warc_offset=0)
    assert len(empty) == 0 and list(pickle.loads(pickle.dumps(empty)).rows()) == []


# --- a hand-built site through process_site ---

CONEX_LINKS = {"main_content": {"method": "conex"}, "output": {"links": True}}


def _regions(rows, url):
    return [(r["target_url"].rsplit("/", 1)[-1], r["region"]) for r in rows if r["source_url"] == url]


def test_site_regions_follow_the_final_menu():
    """Site ConEx (main_content conex) keeps the article (the h2 and the two paragraphs: the
    texts that differ page by page), so the inline reference is main. TemEx maps the logo link,
    the sidebar and the footer into the other pages: template. The related list's <a> elements
    differ from page to page in href and text (ETDM's attribute and children terms), so they
    map nowhere: other, unless they are the menu. The menu region is the final menu:
    page-level MenEx takes the related list (tests/test_sitemenus.py), the site menu the
    sidebar (site_menus on). target_in_input: the four pages are the input; the related pages,
    the home page, the legal page and the reference are not."""
    alpha = "https://docs.test/alpha.html"
    related = [(f"see{i}.html", "other") for i in range(6)]
    sidebar = [(f"{n}.html", "template") for n in NAMES]
    for config, menu_of in ((config_from_dict({**CONEX_LINKS}), "related"),
                            (config_from_dict({**CONEX_LINKS, "site_menus": {"enabled": True}}), "sidebar")):
        pages, rows = site_rows(config)
        assert len(pages) == 4 and {r["timing_ms"]["links"] is not None for r in pages} == {True}
        expected = ([("", "template")]
                    + [(t, "menu" if menu_of == "related" else r) for t, r in related]
                    + [("alpha", "main")]
                    + [(t, "menu" if menu_of == "sidebar" else r) for t, r in sidebar]
                    + [("legal.html", "template")])
        assert _regions(rows, alpha) == expected, menu_of
        mine = [r for r in rows if r["source_url"] == alpha]
        assert [r["target_in_input"] for r in mine] == [False] * 8 + [True] * 4 + [False]
        assert [r["in_site"] for r in mine] == [True] * 7 + [False] + [True] * 5
        assert [r["rel_nofollow"] for r in mine] == [False] * 12 + [True]
        assert mine[0]["anchor_text"] == "Docs" and mine[7]["anchor_text"] == "alpha reference"


def test_links_off_computes_nothing(monkeypatch):
    """output.links false (and the code's default, Config(): on in both presets): no
    ("links", ...) output, nothing of links computed; a non-boolean is refused."""
    from sitestrip.transforms import site_step

    def boom(*args, **kwargs):
        raise AssertionError("links computed")

    monkeypatch.setattr(site_step, "page_links", boom)
    for config in (config_from_dict({"main_content": {"method": "conex"}, "output": {"links": False}}),
                   config_from_dict({"main_content": {"method": "conex"}})):        # off in the code's defaults
        kinds = [kind for kind, _ in process_site("docs.test", site_records(), config)]
        assert "links" not in kinds and kinds.count("pages") == 4
    with pytest.raises(ConfigError, match="output.links"):
        config_from_dict({"output": {"links": "yes"}})


def test_a_failing_links_stage_is_the_pages_errors_row(monkeypatch):
    """Like every stage, a failure making a page's links is that page's errors row (stage
    "links"); the site's other pages go on."""
    from sitestrip.transforms import site_step
    real = site_step.page_links

    def fail_on_beta(page, *args, **kwargs):
        if kwargs["source_url"].endswith("beta.html"):
            raise ValueError("broken")
        return real(page, *args, **kwargs)

    monkeypatch.setattr(site_step, "page_links", fail_on_beta)
    out = list(process_site("docs.test", site_records(), config_from_dict(CONEX_LINKS)))
    errors = [row for kind, row in out if kind == "errors"]
    assert [(e["url"], e["stage"], e["error_class"]) for e in errors] == [
        ("https://docs.test/beta.html", "links", "ValueError")]
    assert sum(kind == "pages" for kind, _ in out) == 3 and sum(kind == "links" for kind, _ in out) == 3


def test_in_site_is_the_site_key():
    """A target is in the site when its site key (urls.site_key: no leading www., no port) is
    the page's site: http and https, www. or not, any port; not a subdomain, not a longer host."""
    from sitestrip.transforms.outlinks import _in_site
    from sitestrip.transforms.urls import site_key
    urls = ["https://docs.test/", "http://www.docs.test:8080/a", "https://docs.test:443/x", "https://api.docs.test/",
            "https://docs.test.evil/", "https://www.www.docs.test/", "https://xdocs.test/"]
    got = _in_site(urls, "docs.test").tolist()
    assert got == [site_key(u) == "docs.test" for u in urls] == [True, True, True, False, False, False, False]
    assert np.asarray(_in_site([], "docs.test")).size == 0


class _Group:
    """A group's values as a runner hands them: iterable again and again, counted."""

    def __init__(self, values):
        self.values, self.passes = values, 0

    def __iter__(self):
        self.passes += 1
        yield from self.values


def test_the_target_join_streams_a_hot_target():
    """_present_targets reads a target's group up to its first pages marker (None), then once
    more for the source keys (a tuple of them per shard); a target without a pages row is read
    once and gives nothing. No list of the group is made (a hot target's group may not fit in
    memory)."""
    from sitestrip.pipeline.graph import _present_targets
    hot = _Group([(b"k1", b"k2"), None, (b"k3",)] + [(b"k%d" % i,) for i in range(4, 1000)])
    assert list(_present_targets(("https://t/", hot))) == [(b"k%d" % i, "https://t/") for i in range(1, 1000)]
    assert hot.passes == 2
    absent = _Group([(b"k1",), (b"k2",)])
    assert list(_present_targets(("https://u/", absent))) == [] and absent.passes == 1


def test_node_extras_of_older_pages_still_read():
    """A side packed before the links dataset (5 fields, or 7 with fragments) unpacks with no
    areas, rel flags or alt texts; one with them packs the two older groups too."""
    import json
    import zlib

    from sitestrip.transforms.meta import NodeExtras
    old = zlib.compress(json.dumps([[3], ["https://i/"], ["alt"], [], []]).encode())
    with_fragments = zlib.compress(json.dumps([[], [], [], [], [], [5], ["frag"]]).encode())
    for blob in (old, with_fragments):
        side = NodeExtras.unpacked(blob)
        assert side.area_node.size == 0 and side.rel == () and side.alt == () and side.area_url == ()
    assert NodeExtras.unpacked(with_fragments).fragment == ("frag",)
    links = NodeExtras(rel_node=np.array([4], dtype=np.int32), rel=(1,))
    back = NodeExtras.unpacked(links.packed())
    assert back.rel == (1,) and back.rel_node.tolist() == [4] and back.fragment == () and back == links


def test_a_stored_page_whose_link_extras_do_not_fit_is_refused():
    """transforms/state.py checks a stored page's node extras against its nodes: an alt text on
    a node past the page is damage (StateError), not an IndexError in a later run."""
    import base64
    import json

    from sitestrip.transforms.meta import NodeExtras
    from sitestrip.transforms.state import StateError, page_columns, page_from_columns
    page = parse_page(PAGE, URL)
    fields, blob = page_columns(page)
    state = json.loads(fields)
    bad = NodeExtras(alt_node=np.array([page.size + 5], dtype=np.int32), alt=("x",)).packed()
    state["side"] = {"base64": base64.b64encode(bad).decode("ascii")}
    with pytest.raises(StateError, match="damaged stored page"):
        page_from_columns(json.dumps(state), blob, "test")


def test_links_to_their_shards_own_pages_skip_the_target_join():
    """process_site marks the links whose target is a pages row of the shard (set_local): the
    join looks up only the others (targets), and they are in the input whatever it says."""
    held = [v for kind, v in process_site("docs.test", site_records(), config_from_dict(CONEX_LINKS))
            if kind == "links"]
    alpha = held[0]
    sidebar = {f"https://docs.test/{n}.html" for n in NAMES}
    assert set(alpha.targets()) == set(alpha.strings()[0]) - sidebar and len(alpha.targets()) == 9
    alpha.set_present(frozenset())
    assert [r["target_in_input"] for r in alpha.rows()] == [False] * 8 + [True] * 4 + [False]
    back = pickle.loads(pickle.dumps(held[1]))
    assert back.targets() == held[1].targets()


def test_a_nul_in_an_anchor_text_is_replaced_and_the_strings_stay_aligned(monkeypatch):
    """A NUL ends each packed URL and text (PageLinks): an anchor text holding one (not from a
    parsed page) gets U+FFFD in its place; texts without one are packed as they are."""
    from sitestrip.transforms import outlinks
    page = parse_page('<body><p><a href="/a">A</a> <a href="/b">B</a> <a href="/c">C</a></p></body>', URL)
    urls = ["https://docs.test/a", "https://docs.test/b", "https://docs.test/c"]
    for texts, expected in ((["x\x00y", "", "\x00"], ["x\ufffdy", "", "\ufffd"]), (["", "", ""], ["", "", ""]),
                            (["one", "two", "three"], ["one", "two", "three"])):
        monkeypatch.setattr(outlinks, "_anchor_texts", lambda page, nodes, texts=texts: list(texts))
        held = page_links(page, None, None, None, source_url=URL, row_url=URL, site="docs.test", warc_file="f",
                          warc_offset=0)
        assert held.strings() == (urls, expected)


def test_target_urls_kept_from_set_local_to_targets_are_the_packed_ones():
    """set_local keeps the decoded target URLs for targets, which lets them go: every step
    gives what it gives from the packed string alone, and a pickled copy (what crosses a
    shuffle) never carries them."""
    _page, held = _links()
    fresh = pickle.loads(pickle.dumps(held))
    urls, texts = fresh.strings()
    assert fresh._target_urls() == urls
    shard = {urls[1], urls[4]}
    held.set_local(shard)
    assert held._decoded == urls
    assert pickle.loads(pickle.dumps(held))._decoded is None
    assert held.local.tolist() == [u in shard for u in urls]
    assert held.targets() == sorted({u for u in urls if u not in shard})
    assert held._decoded is None
    present = {urls[0], urls[-1]}
    held.set_present(present)
    columns = held.columns()
    assert columns["target_url"] == urls and columns["anchor_text"] == texts
    assert columns["target_in_input"].tolist() == [u in present or u in shard for u in urls]
    assert held.strings() == (urls, texts) and held._decoded is None


def test_links_marked_local_as_made_are_those_set_local_marks():
    """page_links marks the links to `local_urls` from its URLs before packing them, as
    set_local marks them from the packed string; unmarked, `local` is None."""
    page = parse_page(PAGE, URL)
    plain = page_links(page, None, None, None, source_url=URL, row_url=URL, site="docs.test", warc_file="f",
                       warc_offset=0)
    urls = plain.strings()[0]
    assert plain.local is None
    for shard in ({urls[1], urls[4], "https://docs.test/nowhere.html"}, set(), set(urls)):
        made = page_links(page, None, None, None, source_url=URL, row_url=URL, site="docs.test", warc_file="f",
                          warc_offset=0, local_urls=frozenset(shard))
        plain.set_local(shard)
        assert made.local.tolist() == plain.local.tolist() == [u in shard for u in urls]
        assert made.targets() == plain.targets() == sorted({u for u in urls if u not in shard})


def test_a_page_without_a_pages_row_is_no_local_target(monkeypatch):
    """The links are marked local against the shard's record URLs as they are made; a page
    that ends as an errors row has no pages row, so the links to it are looked up again
    (set_local over the pages rows' URLs) and go through the target join."""
    from sitestrip.transforms import site_step
    real = site_step.page_links

    def fail_on_beta(page, *args, **kwargs):
        if kwargs["source_url"].endswith("beta.html"):
            raise ValueError("broken")
        return real(page, *args, **kwargs)

    beta = "https://docs.test/beta.html"
    whole = {v.source_url: v for kind, v in process_site("docs.test", site_records(), config_from_dict(CONEX_LINKS))
             if kind == "links"}
    monkeypatch.setattr(site_step, "page_links", fail_on_beta)
    failed = {v.source_url: v for kind, v in process_site("docs.test", site_records(), config_from_dict(CONEX_LINKS))
              if kind == "links"}
    assert set(whole) - set(failed) == {beta}
    to_beta = 0
    for url, links in failed.items():
        urls = links.strings()[0]
        assert links.local.tolist() == [u in failed for u in urls]
        assert whole[url].local.tolist() == [u in whole for u in urls]
        to_beta += urls.count(beta)
        assert (beta in links.targets()) == (beta in urls) and beta not in whole[url].targets()
    assert to_beta > 0


SEPARATED = """<html><body><p><a href="/1">one <b>two</b><br>three</a> <a href="/2"><i>x</i><sup>2</sup>,y</a>
<a href="/3"></a><a href="/4"><img src=i.png alt=pic></a><div><a href="/5"><p>block</p><p>next <span>in</span></p></a></div>
<pre><a href="/6">  keep   its
 spaces</a></pre><a href="/7">caf\u00e9 \ud83d\ude00 \u4e2d</a></p></body></html>"""


@pytest.mark.parametrize("html", [PAGE, SEPARATED])
def test_compiled_anchor_texts_equal_the_reference(html):
    from sitestrip.transforms import outlinks, text
    assert text._compiled is not None, "transforms/_text.c is not built: pip install -e ."
    page = parse_page(html, URL)
    # Every element as a link: nested subtrees, subtrees without text, the whole page.
    for nodes in (page.link_node, np.flatnonzero(page.tag != outlinks.TEXT).astype(np.int32),
                  np.zeros(0, dtype=np.int32)):
        assert outlinks._anchor_texts(page, nodes, compiled=True) == outlinks._anchor_texts(page, nodes, compiled=False)
    assert outlinks._anchor_texts(page, page.link_node, compiled=True)[:2] == ["one two\nthree", "x 2,y"] \
        or html is PAGE


@pytest.mark.parametrize("html", [PAGE, SEPARATED])
def test_compiled_in_main_equals_the_reference(html):
    from sitestrip.transforms import outlinks, tree
    assert tree._site_compiled is not None, "transforms/_site.c is not built: pip install -e ."
    page = parse_page(html, URL)
    rng = np.random.default_rng(5)
    every = np.arange(page.size, dtype=np.int32)
    for main in [rng.random(page.size) < share for share in (0.0, 0.2, 0.5, 1.0)]:
        for nodes in (page.link_node, every):
            assert np.array_equal(outlinks._in_main(page, nodes, main, compiled=True),
                                  outlinks._in_main(page, nodes, main, compiled=False))


def test_compiled_in_site_equals_the_reference():
    import random
    from sitestrip.transforms import outlinks, tree
    assert tree._site_compiled is not None, "transforms/_site.c is not built: pip install -e ."
    rng = random.Random(2)
    parts = ["http://", "https://", "ftp://", "www.", "docs.test", "docs.tes", "docs.testx", "/", ":", ":8080/", "a",
             "", "\u00e9", "www.docs.test"]
    urls = ["".join(rng.choice(parts) for _ in range(rng.randrange(0, 6))) for _ in range(3000)]
    urls += ["https://docs.test", "https://docs.test/", "http://www.docs.test:80/x", "https://www.www.docs.test/"]
    for site in ("docs.test", "www.docs.test", "", "\u00e9"):
        got = outlinks._in_site(urls, site, compiled=True)
        assert np.array_equal(got, outlinks._in_site(urls, site, compiled=False)), site
    assert outlinks._in_site(["https://docs.test/", "http://www.docs.test:80/x", "https://docs.testx/"],
                             "docs.test", compiled=True).tolist() == [True, True, False]


def _joined_reference(held):
    """The record batch of several PageLinks as the part writer makes it of their columns()."""
    from sitestrip.pipeline.parts import _joined_columns
    pieces = {name: [links.columns()[name] for links in held] for name in LINKS.names}
    return _joined_columns(pieces, LINKS)


def _batch_of_pages():
    """PageLinks of PAGE (fragments, an area, rel flags, every region) and of SEPARATED
    (non-ASCII, empty and multi-node texts), one without links, and copies of them: one with
    no WARC offset and target_in_input unknown, one with target_in_input known, one whose
    site and fragments are not ASCII."""
    _page, first = _links()
    first.seal()
    first.set_present({URL, "https://docs.test/guide/a.html"})
    second = page_links(parse_page(SEPARATED, URL), None, None, None, source_url=URL + "?2", row_url=URL,
                        site="docs.test", warc_file=None, warc_offset=None)
    second.seal()
    empty = page_links(parse_page("<body><p>no links</p></body>", URL), None, None, None, source_url=URL,
                       row_url=URL, site="docs.test", warc_file="f", warc_offset=0)
    third = pickle.loads(pickle.dumps(first))
    third.site, third.fragments = "dócs.test", tuple("fr\u00e4g-" + f for f in third.fragments)
    third.in_input = None
    return [first, second, empty, third, pickle.loads(pickle.dumps(first))]


@pytest.mark.parametrize("compiled", [True, False])
def test_links_arrow_batch_is_the_batch_of_their_columns(compiled, monkeypatch):
    """PageLinks.arrow_batch gives the record batch the writer made of the links' columns():
    the same values, nulls and buffer sizes (a part's row groups are cut by them), over pages
    with and without links, fragments, offsets and target_in_input; with the compiled split
    (transforms/_site.c split_links) and its numpy reference."""
    from sitestrip.transforms import outlinks, tree
    assert tree._site_compiled is not None, "transforms/_site.c is not built: pip install -e ."
    monkeypatch.setattr(tree, "_COMPILED", compiled)
    held = _batch_of_pages()
    got, want = PageLinks.arrow_batch(held, LINKS), _joined_reference(held)
    assert got is not None and got.equals(want) and got.schema.equals(LINKS)
    assert got.nbytes == want.nbytes and got.num_rows == sum(len(links) for links in held) > 20
    assert got.column("fragment").null_count == want.column("fragment").null_count > 0
    assert got.column("warc_offset").null_count == len(held[1]) > 0
    assert got.column("target_in_input").null_count == len(held[1]) + len(held[3])
    assert "dócs.test" in got.column("site").to_pylist() and "" in got.column("anchor_text").to_pylist()
    for part in ([held[2]], held[:1], held[1:2]):
        assert PageLinks.arrow_batch(part, LINKS).equals(_joined_reference(part))
    assert outlinks._split_links(np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int64), compiled) is not None


@pytest.mark.parametrize("compiled", [True, False])
def test_links_arrow_batch_leaves_to_columns_what_it_cannot_tell_apart(compiled, monkeypatch):
    """None (the writer then converts columns()) for strings that hold a NUL, for text that
    is not UTF-8 (a lone surrogate, which converting the strings refuses) and for a column
    it does not know; the split of strings that are not the links' count likewise."""
    from sitestrip.transforms import compression, outlinks, tree
    monkeypatch.setattr(tree, "_COMPILED", compiled)
    held = _batch_of_pages()
    nul = pickle.loads(pickle.dumps(held[0]))
    urls, texts = nul.strings()
    nul._strings = compression.pack(("\x00".join(urls) + "\x00" + "\x00".join(["a\x00b"] + texts[1:]) + "\x00")
                                    .encode("utf-8"), "lz4")
    assert PageLinks.arrow_batch([held[1], nul], LINKS) is None
    lone = pickle.loads(pickle.dumps(held[0]))
    lone._strings = compression.pack(("\x00".join(urls) + "\x00" + "\x00".join(["\ud800"] + texts[1:]) + "\x00")
                                     .encode("utf-8", "surrogatepass"), "lz4")
    assert PageLinks.arrow_batch([lone], LINKS) is None
    lone_site = pickle.loads(pickle.dumps(held[0]))
    lone_site.site = "\udc80.test"
    assert PageLinks.arrow_batch([lone_site], LINKS) is None
    import pyarrow as pa
    assert PageLinks.arrow_batch(held, pa.schema(list(LINKS) + [pa.field("extra", pa.string())])) is None
    raw = np.frombuffer(b"a\x00b\x00c\x00", dtype=np.uint8)
    for counts in ([1], [2], [0]):
        assert outlinks._split_links(raw, np.array(counts, dtype=np.int64), compiled) is None
    got = outlinks._split_links(np.frombuffer(b"a\x00bc\x00\x00d\x00", dtype=np.uint8), np.array([1, 1]), compiled)
    assert [bytes(got[0]), got[1].tolist(), bytes(got[2]), got[3].tolist()] == [b"a", [1, 0], b"bcd", [2, 1]]


def test_a_links_part_is_written_from_arrow_batches_as_from_columns(tmp_path, monkeypatch):
    """The part writer takes PageLinks through arrow_batch, and writes the file the rows of
    their columns() make (pipeline/parts.py _column_batches), byte for byte."""
    from sitestrip.pipeline import parts
    held = _batch_of_pages()
    fields = parts.PART_KEYS["links"]
    keyed = [(parts.sort_key(links.key_row(), fields), parts.pack_row(links)) for links in held if len(links)]
    calls = []
    real = PageLinks.arrow_batch
    monkeypatch.setattr(PageLinks, "arrow_batch", staticmethod(lambda h, s: calls.append(len(h)) or real(h, s)))
    parts.write_sorted_part(keyed, LINKS, str(tmp_path / "fast.parquet"))
    assert calls
    monkeypatch.setattr(PageLinks, "arrow_batch", staticmethod(lambda h, s: None))
    parts.write_sorted_part(keyed, LINKS, str(tmp_path / "columns.parquet"))
    assert (tmp_path / "fast.parquet").read_bytes() == (tmp_path / "columns.parquet").read_bytes()
