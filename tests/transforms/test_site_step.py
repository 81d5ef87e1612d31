"""Site-level extraction (design §6–§8) on hand-built sites; expected results derived by hand."""
import numpy as np
import pytest

from sitestrip.configs import Config, config_from_dict
from sitestrip.transforms.conex_page import PageConexParams
from sitestrip.transforms.conex_site import (SITE_CONEX_ETDM, SiteConexParams, candidate_nodes, main_branch,
                                             merge_siblings, reduce_candidates, site_main_content)
from sitestrip.transforms.etdm import EtdmParams
from sitestrip.transforms.site_step import PageRecord, process_site
from sitestrip.transforms.page import parse_page, tag_name
from sitestrip.transforms.template import TemplateParams, detect_template
from sitestrip.transforms.tree import text_of
from helpers.fruit import PAGES, site_page



def parsed(name, **kw):
    return parse_page(site_page(name, **kw), f"https://fruit.example/{name}.html")


def record(name, html=None):
    url = f"https://fruit.example/{name}.html"
    page = parse_page(html or site_page(name), url)
    return PageRecord(url=url, site="fruit.example", warc_file="f.warc.gz", warc_offset=PAGES.index(name[0]),
                      warc_record_id=f"<urn:{name}>", fetch_date="2024-01-01T00:00:00Z",
                      content_type="text/html", charset="utf-8", truncated=None, page=page)


def node_of(page, tag, nth=0):
    return [i for i in range(page.size) if tag_name(page.tag[i]) == tag][nth]


def test_temex_marks_the_shared_parts_as_template():
    """Key a against b, c, d (TemEx defaults, v = 2): header, menu and footer elements and their
    identical texts map into all three; the article texts differ, so with text_equality they never
    map. Non-template text = title + the two paragraphs; template share = template words / page words
    = (2 + 5 + 4) / (11 + 1 + 6 + 5) = 11 / 23... counted: header 'Fruit Site' 2, menu A..E 5,
    footer 'Copyright 2024 Fruit Site' 4 → 11 template words; article 1 + 6 + 5 = 12 → share 11/23."""
    key = parsed("a")
    result = detect_template(key, [parsed(x) for x in "bcd"], EtdmParams(), TemplateParams(), PageConexParams())
    assert text_of(key, result.nontemplate) == ("Apples\nApples grow on trees in orchards.\n"
                                                "They are harvested in autumn.")
    assert result.share == pytest.approx(11 / 23)
    assert result.occurrences[0] == 3                       # BODY maps into all three
    assert result.template[node_of(key, "ul")] and result.template[node_of(key, "h2")]
    # the h2 element maps, its text does not
    assert not result.template[node_of(key, "h2") + 1]


def test_votes_and_hybex():
    """With v = 4 > n = 3 no node is template. HybEx keeps page-level ConEx's main content out of
    the mapping: those nodes get occurrences 0 and are never template."""
    key = parsed("a")
    others = [parsed(x) for x in "bcd"]
    none = detect_template(key, others, EtdmParams(), TemplateParams(votes=4), PageConexParams())
    assert not none.template.any() and none.share == 0.0
    hybrid = detect_template(key, others, EtdmParams(), TemplateParams(method="hybex"), PageConexParams())
    from sitestrip.transforms.conex_page import main_content
    main = main_content(key, PageConexParams())
    assert main.any() and not hybrid.template[main].any()
    assert (hybrid.occurrences[main] == 0).all()


def test_site_conex_text_aware_finds_the_article():
    """Site-level ETDM (w = .1/.0/.2/.7, t = .9, option 4): BODY, #header, #content, #footer (ids),
    h2 and p elements (same tag, no classes/attributes, one child each: .1 + .2 + .7 = 1) map; the
    article texts do not. Published variant: candidates = the three article text nodes; reduced
    roots = those texts; Alg. 13: their parents h2, p, p all have subtrees of 2 → the first, h2,
    is the branch → only the title survives. Text-aware variant: #content's content leaves are all
    unmatched → #content is a candidate root, the only one → main content = #content."""
    key = parsed("a")
    others = [parsed(x) for x in "bcde"]
    published, _ = site_main_content(key, others, SITE_CONEX_ETDM,
                                     SiteConexParams(variant="published", branch="nodes"))
    assert text_of(key, published) == "Apples"
    # Alg. 13 by words: the roots' parents h2, p, p hold 1, 6 and 5 words → the first p
    by_words, _ = site_main_content(key, others, SITE_CONEX_ETDM,
                                    SiteConexParams(variant="published", branch="words"))
    assert text_of(key, by_words) == "Apples grow on trees in orchards."
    aware, _ = site_main_content(key, others, SITE_CONEX_ETDM, SiteConexParams(variant="text_aware"))
    assert text_of(key, aware) == "Apples\nApples grow on trees in orchards.\nThey are harvested in autumn."


def test_identical_pages_have_no_main_content():
    key = parsed("a")
    mask, _ = site_main_content(key, [parsed("a") for _ in range(4)])
    assert not mask.any()


# Alg. 12–15 on one hand-built tree with chosen occurrence counts.
TREE = ("<body><div><p>x</p><p>y</p></div><div><section><p>z</p><p>w</p><p>v</p></section></div></body>")
# 0 body, 1 div, 2 p, 3 "x", 4 p, 5 "y", 6 div, 7 section, 8 p, 9 "z", 10 p, 11 "w", 12 p, 13 "v"


def test_candidate_reduction_branch_and_merge():
    """Candidates (occurrences 0): 4, 5 (p "y"), 8–13 (the three p of section). Roots (Alg. 12):
    4, 8, 10, 12. Alg. 13: parents div(1) subtree 5, section(7) subtree 7 → branch = section.
    Alg. 14 drops 4. Alg. 15: 8, 10, 12 share section → section(7)."""
    page = parse_page(TREE, "http://e.com/")
    occ = np.ones(page.size, dtype=np.int32)
    occ[[4, 5, 8, 9, 10, 11, 12, 13]] = 0
    candidates = candidate_nodes(page, occ, "published")
    roots = reduce_candidates(page, candidates)
    assert roots == [4, 8, 10, 12]
    assert main_branch(page, roots) == 7
    # by words: div(1) holds root 4 ("y", 1 word), section(7) roots with 3 words → section too;
    # with only the first section paragraph a root, the tie (1 word each) goes to div(1)
    assert main_branch(page, roots, "words") == 7
    assert main_branch(page, [4, 8], "words") == 1
    assert merge_siblings(page, [8, 10, 12]) == [7]
    # merging cascades: the section then has no sibling root, so it stays
    assert merge_siblings(page, [2, 4, 8]) == [1, 8]


def test_text_aware_candidates_need_content_and_no_matched_content():
    """Text-aware: section(7) holds three text leaves, none matched → candidate although the
    section element itself is mapped (occurrences 2); div(1) has matched text "x" → not."""
    page = parse_page(TREE, "http://e.com/")
    occ = np.full(page.size, 2, dtype=np.int32)
    occ[[5, 9, 11, 13]] = 0
    aware = candidate_nodes(page, occ, "text_aware")
    assert aware[7] and aware[6] and not aware[1] and not aware[0]
    # p(4) holds only the unmatched "y" → a root too
    assert reduce_candidates(page, aware) == [4, 6]


def rows_for(records, config=None):
    """pages and errors rows (the sites rows, design §11, are tested in test_clusters.py)."""
    return [(kind, row) for kind, row in process_site("fruit.example", records, config or Config())
            if kind != "sites"]


def test_mutually_linked_site_gets_cs_and_the_article():
    rows = {r["url"]: r for kind, r in rows_for([record(x) for x in PAGES]) if kind == "pages"}
    a = rows["https://fruit.example/a.html"]
    assert a["candidate_method"] == "cs" and a["cs_size"] == 4
    assert sorted(a["candidate_urls"]) == [f"https://fruit.example/{x}.html" for x in "bcde"]
    assert len(a["template_candidate_urls"]) == 3
    assert a["main_text"] == "Apples\nApples grow on trees in orchards.\nThey are harvested in autumn."
    assert a["nontemplate_text"] == a["main_text"]
    assert a["template_share"] == pytest.approx(11 / 23)
    assert [m["url"] for m in a["menu_links"]] == [f"https://fruit.example/{x}.html" for x in PAGES]
    assert a["timing_ms"]["etdm"] > 0 and a["timing_ms"].get("page_conex") is None


def test_unlinked_site_pages_are_a_site_sample():
    records = [record(x, site_page(x, links=())) for x in PAGES]
    rows = [r for kind, r in rows_for(records) if kind == "pages"]
    assert {r["candidate_method"] for r in rows} == {"site_sample"}
    assert rows[0]["main_text"].startswith("Apples")


def test_single_page_is_page_only():
    (kind, row), = rows_for([record("a")])
    assert kind == "pages" and row["candidate_method"] == "page_only" and row["candidate_urls"] is None


def test_linked_pages_without_a_complete_subdigraph():
    """a links to b and c, which link nowhere: no CS of 2 → candidates are linked pages → linked."""
    records = [record("a", site_page("a", links=("b", "c"))),
               record("b", site_page("b", links=())), record("c", site_page("c", links=()))]
    rows = {r["url"]: r for kind, r in rows_for(records) if kind == "pages"}
    assert rows["https://fruit.example/a.html"]["candidate_method"] == "linked"


def test_partial_cs_is_filled_up():
    """a links to b, c; b and c link to each other: a CS of 2 < n → partial_cs, filled with d."""
    records = [record("a", site_page("a", links=("b", "c"))),
               record("b", site_page("b", links=("c",))), record("c", site_page("c", links=("b",))),
               record("d", site_page("d", links=()))]
    rows = {r["url"]: r for kind, r in rows_for(records) if kind == "pages"}
    a = rows["https://fruit.example/a.html"]
    assert a["candidate_method"] == "partial_cs" and a["cs_size"] == 2
    assert "https://fruit.example/d.html" in a["candidate_urls"]


def test_config_switches_reach_the_site_step():
    config = config_from_dict({"site_conex": {"variant": "published", "branch": "nodes"}})
    rows = {r["url"]: r for kind, r in rows_for([record(x) for x in PAGES], config) if kind == "pages"}
    assert rows["https://fruit.example/a.html"]["main_text"] == "Apples"


def test_a_failing_page_becomes_an_errors_row_and_the_site_goes_on(monkeypatch):
    import sitestrip.transforms.site_step as site_step

    real = site_step.detect_template

    def fail_for_b(key, *args, **kwargs):
        if key.url.endswith("/b.html"):
            raise ValueError("boom")
        return real(key, *args, **kwargs)

    monkeypatch.setattr(site_step, "detect_template", fail_for_b)
    out = rows_for([record(x) for x in PAGES])
    errors = [r for kind, r in out if kind == "errors"]
    assert [(e["url"], e["stage"], e["error_class"]) for e in errors] == [
        ("https://fruit.example/b.html", "template", "ValueError")]
    assert len([r for kind, r in out if kind == "pages"]) == 4
    # a failure outside the named stages is caught as well
    monkeypatch.setattr(site_step, "detect_template", real)
    monkeypatch.setattr(site_step, "text_of", lambda *a, **k: 1 / 0)
    out = rows_for([record(x) for x in PAGES])
    assert {(kind, r["stage"]) for kind, r in out} == {("errors", "site")}


def test_a_page_whose_blocks_fail_costs_its_own_row_only(monkeypatch):
    """Every page's blocks are computed up front for the shard's block-text counts. When c's
    fail, c gets an errors row in its blocks stage and the other four pages get their rows,
    as before the failure was possible; before, the first key page computed them all and
    every page of the site failed in turn."""
    import sitestrip.transforms.site_step as site_step

    real = site_step._own_blocks

    def fail_for_c(page):
        if page.url.endswith("/c.html"):
            raise ValueError("no blocks")
        return real(page)

    monkeypatch.setattr(site_step, "_own_blocks", fail_for_c)
    out = rows_for([record(x) for x in PAGES], config_from_dict({"main_content": {"method": "learned"}}))
    errors = [(r["url"], r["stage"], r["error_class"]) for kind, r in out if kind == "errors"]
    assert errors == [("https://fruit.example/c.html", "blocks", "ValueError")]
    rows = {r["url"]: r for kind, r in out if kind == "pages"}
    assert len(rows) == 4
    assert rows["https://fruit.example/a.html"]["main_text"].startswith("Apples")


@pytest.mark.slow
def test_each_page_is_charged_its_own_blocks_not_the_shards(monkeypatch):
    """Each page's own blocks cost 300 ms of CPU here (a busy loop inside _own_blocks); the
    page budget is 1,000 ms. Charged to the first key page, five pages' blocks (1,500 ms)
    would put it over its budget; charged to each page, every page stays within it, and
    each row's blocks time includes its own 300 ms."""
    import time

    import sitestrip.transforms.site_step as site_step

    real = site_step._own_blocks

    def slow(page):
        start = time.thread_time()
        while time.thread_time() - start < 0.3:
            pass
        return real(page)

    monkeypatch.setattr(site_step, "_own_blocks", slow)
    config = config_from_dict({"site": {"page_budget_ms": 1000}, "main_content": {"method": "learned"}})
    out = rows_for([record(x) for x in PAGES], config)
    assert [kind for kind, _ in out] == ["pages"] * 5
    assert all(300 <= r["timing_ms"]["blocks"] < 1000 for _, r in out)


def test_flat_page_merge_does_not_swallow_the_template():
    """Paragraphs directly under BODY, a shared header beside them. Site ETDM maps BODY, #h with its
    text, and both p elements (.1 + .2 + .7 = 1 ≥ .9); the paragraph texts differ. Text-aware roots:
    p, p (BODY holds the matched header text). Alg. 13/14 keep both (parent BODY). Alg. 15: the
    published merge replaces them by BODY → the header comes back; merge "content" refuses a parent
    holding matched content → the two paragraphs."""
    def flat(a, b):
        return parse_page(f"<body><div id=h>Site header</div><p>{a}</p><p>{b}</p></body>", "http://f.example/x")
    key = flat("one two", "three four")
    others = [flat("five", "six"), flat("seven", "eight"), flat("nine", "ten"), flat("eleven", "twelve")]
    published, _ = site_main_content(key, others, SITE_CONEX_ETDM, SiteConexParams(merge="always"))
    assert text_of(key, published) == "Site header\none two\nthree four"
    content, _ = site_main_content(key, others, SITE_CONEX_ETDM, SiteConexParams(merge="content"))
    assert text_of(key, content) == "one two\nthree four"


# --- TemEx at block granularity (template.block_granularity) ---

def _doc_page(name):
    """A page of a small documentation site: a nav list, a title, a sentence whose inline links
    ("small", "fast") are on every page, a note and an aside that mix shared and own text, and a
    footer; `name` varies the page's own text."""
    return (f"<html><body><ul id=nav><li><a href='/a'>Home</a></li><li><a href='/b'>Docs</a></li></ul>"
            f"<div id=content><h1>{name}</h1>"
            f"<p>{name} is a <a href='/small'>small</a>, <a href='/fast'>fast</a> library.</p>"
            f"<div class=note>Note: <p>{name} notes differ here.</p>See also <a href='/faq'>FAQ</a></div>"
            f"<div class=aside>{name} aside words<p>Shared words here</p></div></div>"
            f"<p id=foot>Copyright <a href='/lic'>Example</a> 2024</p></body></html>")


def _doc_site(params):
    key = parse_page(_doc_page("Alpha"), "https://docs.example/alpha.html")
    others = [parse_page(_doc_page(n), f"https://docs.example/{n.lower()}.html") for n in ("Beta", "Gamma", "Delta")]
    return key, detect_template(key, others, EtdmParams(), params, PageConexParams())


def test_inline_links_in_a_sentence_stay_with_the_sentence():
    """Key Alpha against Beta, Gamma, Delta (v = 2). Every element and every text equal on all
    pages maps into all three: the nav, the footer, the links "small" and "fast", the shared
    ", " and " library." of the sentence, "Note:", "See also", "FAQ", "Shared words here". The
    page's own texts (the name in h1, "Alpha is a", the note's p, "Alpha aside words") map
    nowhere.

    Per node (design §6, block_granularity off) the sentence keeps only "Alpha is a". By block
    line: the sentence's line has text of its own, so all of it is non-template; the note's
    lines "Note:" and "See also FAQ" and the aside's nested "Shared words here" have none and
    stay template although their block (div.note, div.aside) holds non-template text in a
    nested block or another line; the nav and footer stay template.
    Words: nav 2, h1 1, sentence 6, note 1 + 4 + 3, aside 3 + 3, footer 3 = 26; non-template
    1 + 6 + 4 + 3 = 14 by block line, 1 + 3 + 4 + 3 = 11 per node."""
    key, by_line = _doc_site(TemplateParams(block_granularity=True))
    assert text_of(key, by_line.nontemplate) == ("Alpha\nAlpha is a small, fast library.\n"
                                                 "Alpha notes differ here.\nAlpha aside words")
    assert by_line.share == pytest.approx(12 / 26)
    _, per_node = _doc_site(TemplateParams(block_granularity=False))
    assert text_of(key, per_node.nontemplate) == "Alpha\nAlpha is a\nAlpha notes differ here.\nAlpha aside words"
    assert per_node.share == pytest.approx(15 / 26)
    # The template node set itself is TemEx's either way: the links map into all three pages.
    assert np.array_equal(by_line.template, per_node.template)
    small = [i for i in range(key.size) if key.tag[i] == 0 and key.node_text(i) == "small"][0]
    assert by_line.template[small] and by_line.occurrences[small] == 3 and by_line.nontemplate[small]


def test_block_granularity_is_in_the_presets():
    """On in default.yaml, off in published.yaml (design §6 judges every node alone)."""
    from sitestrip.configs import load_config
    assert load_config().template.block_granularity
    assert not load_config("published").template.block_granularity


def test_rows_do_not_depend_on_how_many_unpacked_pages_are_kept(monkeypatch):
    """The site's pages arrive packed (as from a shuffle). With a bound of one node every read
    of another page drops the ones unpacked before, even the key page's in the middle of its
    analysis and every candidate's: rebuilt from the blob, the arrays are equal, so the rows
    are those of an unbounded run, and pages were unpacked many more times than there are."""
    import pickle

    from sitestrip.transforms import page as page_mod

    def run(bound):
        monkeypatch.setattr(page_mod, "UNPACKED", page_mod.RecentPages(bound, page_mod.UNPACKED.drop))
        records = pickle.loads(pickle.dumps([record(x) for x in PAGES]))
        return rows_for(records), page_mod.UNPACKED.added

    kept, unpacked_kept = run(10 ** 9)
    dropped, unpacked_dropped = run(1)
    assert unpacked_kept == len(PAGES) and unpacked_dropped > 3 * len(PAGES)
    for (kind, row), (kind2, row2) in zip(kept, dropped, strict=True):
        assert kind == kind2 == "pages"
        assert {k: v for k, v in row.items() if k != "timing_ms"} == {k: v for k, v in row2.items() if k != "timing_ms"}
    assert kept[0][1]["main_text"].startswith("Apples")


def test_held_rows_give_back_their_texts_exactly():
    """A shard's rows wait for its site menus with their long texts packed together: what is
    yielded is the row as made, to the code point (non-ASCII, a lone surrogate, empty and
    missing texts, other columns untouched, the columns in their order), and a long text waits
    in a fraction of its size."""
    import sys

    from sitestrip.transforms.compression import PACKED_TEXTS, PackedTexts
    from sitestrip.transforms.site_step import held_row, _released_row

    long_text = "Apples grow on trees in orchards. " * 2000 + "café 日本 \ud800 ¶"
    row = {"url": "https://fruit.example/a.html", "main_text": long_text, "main_markdown": "# T\n\n¶",
           "nontemplate_text": "", "menu_links": [{"url": "u", "text": "t"}]}
    made = dict(row)
    held = held_row(row)
    packed = held[PACKED_TEXTS]
    assert isinstance(packed, PackedTexts) and packed.names == ("main_text", "main_markdown", "nontemplate_text")
    assert held["main_text"] is held["main_markdown"] is held["nontemplate_text"] is None
    assert held["menu_links"] is made["menu_links"]
    assert len(packed.blob) * 20 < sys.getsizeof(long_text)
    released = _released_row(held)
    assert released == made and list(released) == list(made)
    assert _released_row(held_row({"main_text": None})) == {"main_text": None}
    assert _released_row(held_row({"url": "u"})) == {"url": "u"}
    # As the graph's writer reads them: each text's UTF-8 as the surrogates pass through.
    assert [bytes(b) for b in packed.utf8()] == [made[name].encode("utf-8", "surrogatepass")
                                                 for name in packed.names]


def test_a_shard_begins_without_the_previous_shards_urls():
    """The URL caches hold one shard's entries: 3,000 URLs of another site seen before, then a
    five-page shard, leave its own few hundred entries at most (every page's links, their
    directories), never the other site's 3,000."""
    from sitestrip.transforms.candidates import directory_sequence
    from sitestrip.transforms.urls import _normalize_cached, normalize_url
    for i in range(3000):
        directory_sequence(normalize_url(f"https://other.example/d{i % 40}/p{i}.html"))
    assert _normalize_cached.cache_info().currsize >= 3000
    assert directory_sequence.cache_info().currsize >= 3000
    rows = [r for kind, r in rows_for([record(x) for x in PAGES]) if kind == "pages"]
    assert len(rows) == len(PAGES)
    assert 0 < _normalize_cached.cache_info().currsize < 300
    assert directory_sequence.cache_info().currsize < 300


def test_menu_signature_reduces_each_host_to_its_site_key():
    """Per link, its URL with the host reduced to its site key (urls.site_key of the URL),
    taken once per host: www.ex.com and ex.com are one site, a port and another site are not
    dropped, and the signature depends on the URLs in order only."""
    import hashlib
    from sitestrip.transforms.site_step import menu_signature
    from sitestrip.transforms.urls import site_key
    hrefs = ["http://WWW.Ex.com/a", "/b?x=1", "https://ex.com:8443/c", "http://other.org", "http://www.ex.com/",
             "http://[::1]:8080/v6", "http://www.www.ex.com/d", "https://www.ex.com/e#f", "http://ex.com/a"]
    html = "<body><nav>" + "".join(f'<a href="{h}">{k}</a>' for k, h in enumerate(hrefs)) + "</nav></body>"
    page = parse_page(html, "http://www.ex.com/k.html")
    links = [(url, "t") for url in page.link_url]
    assert len(links) == len(hrefs)

    def by_url(url):
        scheme, _, rest = url.partition("://")
        host, slash, path = rest.partition("/")
        return f"{scheme}://{site_key(url) or host}{slash}{path}"

    want = hashlib.sha1("\n".join(by_url(u) for u, _ in links).encode("utf-8")).hexdigest()[:16]
    assert menu_signature(links) == want
    assert menu_signature([("http://www.ex.com/a", "x"), ("http://ex.com/b", "y")]) == \
        menu_signature([("http://ex.com/a", "z"), ("http://www.ex.com/b", "w")])
    assert menu_signature(links[:2]) != menu_signature(links[1::-1])
