"""Template clusters (design §11) and the cluster candidate fill, on hand-built pages.

Expected values are derived by hand in each docstring."""
from collections import Counter

import numpy as np
import pytest

from helpers.nested import nested_elements
from sitestrip.configs import Config, ConfigError, config_from_dict
from sitestrip.transforms.candidates import select_candidates, site_links
from sitestrip.transforms.clusters import (ClusterCandidates, ClusterParams, cluster_id, cluster_pages,
                                           cluster_signatures, page_signature, similarity)
from sitestrip.transforms.site_step import PageRecord, process_site
from sitestrip.transforms.page import parse_page


def sig(*values):
    return np.array(sorted(set(values)), dtype=np.uint64)


def test_signature_is_the_set_of_root_to_leaf_element_paths():
    """Leaves (elements without element children): p, p, li, img → paths body/div/p (twice: one
    member), body/ul/li, body/div/img... img sits in div → body/div/img. Three distinct paths;
    text nodes are no elements and are not leaves (div/p with text is still a leaf p)."""
    page = parse_page("<body><div><p>a</p><p>b</p><img src=x.png></div><ul><li>x</li></ul></body>",
                      "http://s.test/")
    assert page_signature(page).size == 3
    same_shape = parse_page("<body><div><p>other words</p><img src=y.png></div><ul><li>y</li><li>z</li></ul>"
                            "</body>", "http://s.test/2")
    assert np.array_equal(page_signature(page), page_signature(same_shape))


def test_path_ids_all_stable_none():
    """<div id=main> vs <div id=box>: different paths under `all` and `stable` (no digit runs), equal
    under `none`. <div id=post-12345> vs <div id=post-67890>: different under `all`, equal under
    `stable` (a run of 3+ digits makes the id volatile) and `none`."""
    def page(div_id):
        return parse_page(f"<body><div id='{div_id}'><p>t</p></div></body>", "http://s.test/")
    main, box, p1, p2 = page("main"), page("box"), page("post-12345"), page("post-67890")
    for mode, main_vs_box, post_vs_post in (("all", False, False), ("stable", False, True), ("none", True, True)):
        assert np.array_equal(page_signature(main, mode), page_signature(box, mode)) is main_vs_box, mode
        assert np.array_equal(page_signature(p1, mode), page_signature(p2, mode)) is post_vs_post, mode


def test_similarity_is_common_paths_over_the_larger_set():
    """{1,2,3,4} and {1,2,3,5,6}: 3 common, larger set 5 → 0.6. Two empty pages are identical."""
    assert similarity(sig(1, 2, 3, 4), sig(1, 2, 3, 5, 6)) == pytest.approx(0.6)
    assert similarity(sig(), sig()) == 1.0


def test_leader_clustering_in_url_order():
    """URL order a, b, c, d, e. a founds cluster 0. b = {1,2,3,4,6} vs a = {1,2,3,4,5}: 4/5 = 0.8 >
    0.7 → cluster 0. c = {7,8,9} shares nothing → founds cluster 1. d = {7,8,9,10}: vs a 0, vs c 3/4
    = 0.75 → cluster 1. e = {1,2,3,7,8,9}: vs a 3/6 = 0.5, vs c 3/6 = 0.5, neither > 0.7 → founds
    cluster 2. Representatives are never updated: b joined a's cluster by its similarity to a."""
    signatures = {"http://s.test/a": sig(1, 2, 3, 4, 5), "http://s.test/b": sig(1, 2, 3, 4, 6),
                  "http://s.test/c": sig(7, 8, 9), "http://s.test/d": sig(7, 8, 9, 10),
                  "http://s.test/e": sig(1, 2, 3, 7, 8, 9)}
    result = cluster_signatures("s.test", signatures, ClusterParams())
    assert result.representatives == ["http://s.test/a", "http://s.test/c", "http://s.test/e"]
    assert [result.cluster_of[f"http://s.test/{x}"] for x in "abcde"] == [0, 0, 1, 1, 2]
    assert result.similarity["http://s.test/b"] == pytest.approx(0.8)
    assert result.similarity["http://s.test/d"] == pytest.approx(0.75)
    assert result.cluster_pages("http://s.test/a") == ["http://s.test/b"]
    assert result.id_of("http://s.test/d") == cluster_id("s.test", "http://s.test/c")


def test_threshold_is_strict_and_ties_go_to_the_earliest_representative():
    """a = {1..10}, b = {1..7, 21, 22, 23}: 7/10 = 0.7, not > 0.7 → b founds its own cluster.
    a = {1..10}, b = {11..20}, c = {1..5, 11..15}: c is 5/10 = 0.5 to both; with threshold 0.4
    it joins the earliest representative, a."""
    a, b = sig(*range(1, 11)), sig(*range(1, 8), 21, 22, 23)
    result = cluster_signatures("s.test", {"http://s.test/a": a, "http://s.test/b": b}, ClusterParams())
    assert len(result.representatives) == 2
    a, b, c = sig(*range(1, 11)), sig(*range(11, 21)), sig(*range(1, 6), *range(11, 16))
    result = cluster_signatures("s.test", {"http://s.test/a": a, "http://s.test/b": b, "http://s.test/c": c},
                                ClusterParams(threshold=0.4))
    assert result.cluster_of["http://s.test/c"] == 0


def test_representatives_are_bounded_and_overflow_is_flagged():
    """max_representatives = 2, three mutually disjoint pages: a and b found clusters; c matches
    nothing but the bound is reached → it joins its best match (all 0: the earliest, a) and is
    flagged."""
    signatures = {"http://s.test/a": sig(1), "http://s.test/b": sig(2), "http://s.test/c": sig(3)}
    result = cluster_signatures("s.test", signatures, ClusterParams(max_representatives=2))
    assert result.representatives == ["http://s.test/a", "http://s.test/b"]
    assert result.cluster_of["http://s.test/c"] == 0 and result.overflow == {"http://s.test/c"}


def test_deep_page_signature_without_recursion():
    """5,000 nested divs: one leaf, one path; pointer doubling, no recursion limit hit."""
    html = "<body>" + "<div>" * 5000 + "x" + "</div>" * 5000 + "</body>"
    page = parse_page(html, "http://s.test/deep", 100000)
    assert page_signature(page).size == 1


ARTICLE = ("<body><div class=top><a href='/home'>Home</a></div><div class=article><h1>{t}</h1>"
           "<p>{t} text one.</p><p>{t} text two.</p><p>{t} text three.</p></div>"
           "<div class=foot>Copyright</div></body>")
LISTING = ("<body><table><tr><td><b>Index {t}</b></td></tr>"
           + "".join(f"<tr><td><span>{{t}} item {i}</span><i>new</i></td></tr>" for i in range(6))
           + "</table></body>")


def _records(htmls):
    out = []
    for i, (name, html) in enumerate(sorted(htmls.items())):
        url = f"https://news.test/{name}"
        out.append(PageRecord(url=url, site="news.test", warc_file="f.warc.gz", warc_offset=i,
                              warc_record_id=f"<urn:{name}>", fetch_date="2024-01-01T00:00:00Z",
                              content_type="text/html", charset="utf-8", truncated=None,
                              page=parse_page(html, url)))
    return out


def _news_site():
    """Pages that do not link to each other: three articles (a1, x1, z1 — one template) and three
    listings (a2, b2, c2 — another). In URL order: a1, a2, b2, c2, x1, z1."""
    htmls = {n: ARTICLE.format(t=n) for n in ("a1", "x1", "z1")}
    htmls.update({n: LISTING.format(t=n) for n in ("a2", "b2", "c2")})
    return _records(htmls)


def test_a_short_cs_is_filled_from_the_key_pages_cluster():
    """Key page z1 links only to /home (not in the input): no CS, nothing loaded. The design §4
    site sample takes pages by link relevance (all in the site root: one tier), then URL: a1, a2
    — a listing among them. With the cluster fill, the candidates are z1's cluster (a1, x1) and
    the method is `cluster`, every source `cluster`."""
    records = _news_site()
    pages = {r.url: r.page for r in records}
    links = site_links(pages, "news.test")
    clusters = cluster_pages("news.test", pages, ClusterParams())
    assert len(clusters.representatives) == 2
    key = "https://news.test/z1"
    plain = select_candidates(key, pages[key], links)
    assert plain.method == "site_sample"
    assert plain.candidates[:2] == ["https://news.test/a1", "https://news.test/a2"]
    fill = ClusterCandidates(clusters).fill_for(key)
    got = select_candidates(key, pages[key], links, cluster_fill=fill)
    assert got.method == "cluster"
    assert got.candidates[:2] == ["https://news.test/a1", "https://news.test/x1"]
    assert got.sources[:2] == ["cluster", "cluster"]


def test_a_page_with_linked_candidates_is_not_filled_from_its_cluster():
    """z1 now links to a2 (a listing, in the input): the walk loads a2, no CS of 2. Fallback (a)
    takes a2; the cluster fill applies only to key pages whose links load nothing, so the
    second candidate is fallback (b)'s first site page by URL, a1 (which happens to be in z1's
    cluster, but is labelled by where it came from): method `linked`, sources linked, site."""
    records = _news_site()
    z1 = next(r for r in records if r.url.endswith("/z1"))
    z1.page = parse_page(ARTICLE.format(t="z1").replace("href='/home'", "href='/a2'"), z1.url)
    pages = {r.url: r.page for r in records}
    links = site_links(pages, "news.test")
    clusters = cluster_pages("news.test", pages, ClusterParams())
    fill = ClusterCandidates(clusters, order="closest").fill_for(z1.url)
    got = select_candidates(z1.url, z1.page, links, cluster_fill=fill)
    assert got.method == "linked"
    assert got.candidates[:2] == ["https://news.test/a2", "https://news.test/a1"]
    assert got.sources[:2] == ["linked", "site"]


def test_closest_and_farthest_fill_orders():
    """Cluster of k (key), p, q, r by signature: k = {1..10}, p = {1..9, 20} (sim 0.9),
    q = {1..7, 21, 22, 23} (0.7), r = {1..8, 24, 25} (0.8); all clear threshold 0.5 against k
    (the representative, first in URL order: k < p < q < r). URL order fills p, q, r; closest
    p, r, q; farthest q, r, p."""
    signatures = {"http://s.test/k": sig(*range(1, 11)), "http://s.test/p": sig(*range(1, 10), 20),
                  "http://s.test/q": sig(*range(1, 8), 21, 22, 23), "http://s.test/r": sig(*range(1, 9), 24, 25)}
    clusters = cluster_signatures("s.test", signatures, ClusterParams(threshold=0.5))
    assert len(clusters.representatives) == 1
    orders = {order: ClusterCandidates(clusters, order=order).fill_for("http://s.test/k")(set(), 3)
              for order in ("url", "closest", "farthest")}
    assert orders == {"url": ["http://s.test/p", "http://s.test/q", "http://s.test/r"],
                      "closest": ["http://s.test/p", "http://s.test/r", "http://s.test/q"],
                      "farthest": ["http://s.test/q", "http://s.test/r", "http://s.test/p"]}


def test_pipeline_rows_carry_clusters_and_sites_rows():
    """Through process_site with the cluster fill on: every row names its cluster; the sites rows
    are one per cluster with its pages (3 articles, 3 listings) and representatives (the first
    page of each in URL order: a1 and a2)."""
    config = config_from_dict({"clusters": {"fill_candidates": True, "fill_order": "closest"}})
    out = list(process_site("news.test", _news_site(), config))
    pages = [row for kind, row in out if kind == "pages"]
    sites = [row for kind, row in out if kind == "sites"]
    assert len(pages) == 6 and len(sites) == 2
    by_rep = {row["representative_url"]: row for row in sites}
    assert by_rep["https://news.test/a1"]["pages"] == 3 and by_rep["https://news.test/a2"]["pages"] == 3
    cluster_of = {row["url"]: row["template_cluster"] for row in pages}
    assert cluster_of["https://news.test/x1"] == by_rep["https://news.test/a1"]["template_cluster"]
    assert cluster_of["https://news.test/c2"] == by_rep["https://news.test/a2"]["template_cluster"]
    z1 = next(row for row in pages if row["url"] == "https://news.test/z1")
    # site ConEx wants n = 4: the cluster's two other pages first, then the site sample (a2, b2).
    assert z1["candidate_method"] == "cluster"
    assert z1["candidate_urls"] == ["https://news.test/a1", "https://news.test/x1",
                                    "https://news.test/a2", "https://news.test/b2"]
    assert z1["candidate_sources"] == ["cluster", "cluster", "site", "site"]


def test_published_preset_keeps_the_spec_fallback():
    """Config() and published.yaml leave the fill off: z1 is a site_sample page."""
    out = list(process_site("news.test", _news_site(), Config()))
    z1 = next(row for kind, row in out if kind == "pages" and row["url"] == "https://news.test/z1")
    assert z1["candidate_method"] == "site_sample" and z1["template_cluster"] is not None


@pytest.mark.parametrize("section, message", [
    ({"path_ids": "some"}, "clusters.path_ids"), ({"threshold": 1.0}, "clusters.threshold"),
    ({"max_representatives": 0}, "clusters.max_representatives"), ({"pool": 0}, "clusters.pool"),
    ({"fill_order": "random"}, "clusters.fill_order")])
def test_cluster_config_is_validated(section, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict({"clusters": section})


def test_a_large_site_is_clustered_against_a_bounded_set_of_representatives():
    """5,000 pages of 40 layouts (each layout: paths {40k..40k+9}, plus 2 paths of the page's
    own): a page shares 10 of its 12 paths with its layout's first page (10/12 = 0.83 > 0.7)
    and none with other layouts → exactly 40 clusters of 125 pages. With the bound at 16, the
    first 16 layouts found clusters and every page of the 24 later layouts is overflow (it
    matches nothing and joins the earliest representative, sim 0)."""
    signatures = {}
    for i in range(5000):
        layout = i % 40
        own = [1_000_000 + 2 * i, 1_000_001 + 2 * i]
        signatures[f"http://s.test/{i:05d}"] = sig(*range(40 * layout, 40 * layout + 10), *own)
    result = cluster_signatures("s.test", signatures, ClusterParams())
    assert len(result.representatives) == 40
    assert set(Counter(result.cluster_of.values()).values()) == {125}
    bounded = cluster_signatures("s.test", signatures, ClusterParams(max_representatives=16))
    assert len(bounded.representatives) == 16
    assert len(bounded.overflow) == 24 * 125


def _path_hashes_by_walk(page, labels):
    """The definition, one root path at a time: Σ label(a)·B^depth(a) over the node and its
    ancestors (mod 2**64), then mixed with the depth."""
    from sitestrip.transforms.clusters import _BASE, mix64
    out = np.zeros(page.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(page.size):
            total, a = np.uint64(0), i
            while a >= 0:
                total = total + labels[a] * (_BASE ** np.uint64(int(page.depth[a]) + 1))
                a = int(page.parent[a])
            out[i] = total
        return mix64(out ^ (page.depth.astype(np.uint64) * _BASE))


def test_path_hashes_are_the_root_path_sums_of_their_definition():
    """path_hashes' one cumulative sum (a term added at a node, taken back where its subtree
    ends) against the walk up every root path, on nested, sibling-heavy and seeded random
    pages; two nodes with the same tag path (the two <li> of one <ul>) hash alike, and a
    different path (li under ol) differently."""
    import random

    from sitestrip.transforms.clusters import node_labels, path_hashes
    page = parse_page("<html><body><ul><li>a</li><li>b</li></ul><ol><li>c</li></ol></body></html>", "http://ex.com/")
    got = path_hashes(page, node_labels(page))
    assert np.array_equal(got, _path_hashes_by_walk(page, node_labels(page)))
    li = [i for i in range(page.size) if page.tag[i] == page.tag[3]]
    assert got[li[0]] == got[li[1]] != got[li[2]]
    rng = random.Random(3)

    tags = ["div", "p", "span", "ul", "li", "section"]
    for _ in range(40):
        page = parse_page(f"<html><body>{nested_elements(rng, tags, 6, 0.6)}</body></html>", "http://ex.com/")
        labels = node_labels(page)
        assert np.array_equal(path_hashes(page, labels), _path_hashes_by_walk(page, labels))


def test_compiled_path_hashes_are_the_reference():
    """transforms/_features.c path_hashes against path_hashes_reference's numpy running sum,
    bit for bit, on seeded random pages with labels over the whole uint64 range (the sums
    wrap), and its refusal of arrays that are no preorder page."""
    import random

    from helpers.compiled import require_built
    from sitestrip.transforms import tree
    from sitestrip.transforms.clusters import path_hashes, path_hashes_reference
    _features = require_built("_features")
    rng, gen = random.Random(7), np.random.default_rng(7)

    tags = ["div", "p", "span", "ul", "li", "section"]
    assert tree._COMPILED
    for _ in range(60):
        page = parse_page(f"<html><body>{nested_elements(rng, tags, 8, 0.6)}</body></html>", "http://ex.com/")
        labels = gen.integers(0, 2 ** 64, page.size, dtype=np.uint64)
        got, want = path_hashes(page, labels), path_hashes_reference(page, labels)
        assert got.dtype == want.dtype == np.uint64 and np.array_equal(got, want)
    with pytest.raises(ValueError, match="preorder"):
        _features.path_hashes(np.array([1, 1], dtype=np.int32), np.zeros(2, dtype=np.int32),
                              np.zeros(2, dtype=np.uint64), np.empty(2, dtype=np.uint64))


def test_compiled_node_labels_are_the_reference():
    """transforms/_features.c cluster_labels against node_labels_reference under every
    path_ids choice: pages with ids, generated ids (a run of digits: volatile) and none."""
    import random

    from helpers.compiled import require_built
    from sitestrip.transforms.clusters import PATH_IDS, node_labels, node_labels_reference
    require_built("_features")
    rng = random.Random(5)

    def fragment(depth):
        out = ""
        for t in rng.choices(["div", "p", "section", "ul", "li"], k=rng.randrange(1, 4)):
            ident = rng.choice(["", ' id="main"', ' id="post-12345"', ' id="nav"'])
            inner = fragment(depth + 1) if depth < 5 and rng.random() < 0.6 else "x"
            out += f"<{t}{ident}>{inner}</{t}>"
        return out

    for _ in range(40):
        page = parse_page(f"<html><body>{fragment(0)}</body></html>", "http://ex.com/")
        for path_ids in PATH_IDS:
            assert np.array_equal(node_labels(page, path_ids), node_labels_reference(page, path_ids))


def test_compiled_leaf_elements_are_the_reference():
    """transforms/_site.c leaf_elements (page_signature's leaves) against _leaf_elements_python
    on seeded pages of nested elements with and without text, and page_signature the same
    with either path."""
    import random

    from helpers.compiled import require_built
    from sitestrip.transforms import tree
    from sitestrip.transforms.clusters import _leaf_elements, _leaf_elements_python, page_signature
    require_built("_site")
    rng = random.Random(3)

    tags = ["div", "p", "span", "ul", "li", "br", "img"]
    assert tree._COMPILED
    for _ in range(80):
        html = nested_elements(rng, tags, 6, 0.5, children=(0, 4), leaves=["", "x"])
        page = parse_page(f"<html><body>{html}</body></html>", "http://ex.com/")
        got, want = _leaf_elements(page), _leaf_elements_python(page)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        signature = page_signature(page)
        tree._COMPILED = False
        try:
            assert np.array_equal(signature, page_signature(page))
        finally:
            tree._COMPILED = True


def test_compiled_page_signature_is_the_reference():
    """transforms/_site.c signature (labels, leaf path hashes and their sort in one call)
    against page_signature_reference under every path_ids choice, on seeded pages with ids,
    volatile ids and repeated leaves (a list of 60 equal items: one path many times), and its
    refusal of arrays that are no preorder page."""
    import random

    from helpers.compiled import require_built
    from sitestrip.transforms import tree
    from sitestrip.transforms.clusters import PATH_IDS, page_signature_reference
    from sitestrip.transforms.page import F_VOLATILE_ID, TEXT
    _site = require_built("_site")
    rng = random.Random(11)

    def fragment(depth):
        out = ""
        for t in rng.choices(["div", "p", "section", "ul", "li", "img"], k=rng.randrange(1, 5)):
            ident = rng.choice(["", ' id="main"', ' id="post-12345"', ' id="nav"'])
            inner = fragment(depth + 1) if depth < 6 and rng.random() < 0.6 else rng.choice(["", "x"])
            out += f"<{t}{ident}>{inner}</{t}>"
        return out

    assert tree._COMPILED
    pages = [parse_page(f"<html><body>{fragment(0)}</body></html>", "http://ex.com/") for _ in range(60)]
    pages.append(parse_page("<html><body><ul>" + "<li><a href=/x>x</a></li>" * 60 + "</ul></body></html>",
                            "http://ex.com/"))
    for page in pages:
        for path_ids in PATH_IDS:
            got, want = page_signature(page, path_ids), page_signature_reference(page, path_ids)
            assert got.dtype == want.dtype == np.uint64 and np.array_equal(got, want)
    assert page_signature(pages[-1]).size == 1          # 60 leaves, each <a> under body/ul/li: one path
    with pytest.raises(ValueError, match="preorder"):
        i32 = np.zeros(2, dtype=np.int32)
        _site.signature(i32, np.zeros(2, dtype=np.uint32), np.zeros(2, dtype=np.uint16), i32 - 1,
                        np.array([1, 1], dtype=np.int32), i32, TEXT, F_VOLATILE_ID, 0, np.empty(2, dtype=np.uint64))


def test_compiled_leader_clustering_is_the_reference():
    """transforms/_site.c leader_clusters against _leader_python (the incidence-matrix
    products): seeded signatures drawn around a few templates, with empty ones (two empty
    signatures are alike: 1.0), equal ones (ties go to the earliest representative),
    thresholds near the shares that occur, seeds, and bounds small enough to overflow. A
    signature that is not sorted and distinct is clustered by the reference."""
    from helpers.compiled import require_built
    from sitestrip.transforms import tree
    from sitestrip.transforms.clusters import SiteClusters, _leader_python
    require_built("_site")
    rng = np.random.default_rng(4)
    templates = [rng.integers(0, 2 ** 64, 40, dtype=np.uint64) for _ in range(4)]

    def around(base):
        keep = base[rng.random(base.size) < 0.8]
        return np.unique(np.concatenate([keep, rng.integers(0, 2 ** 64, rng.integers(0, 12), dtype=np.uint64)]))

    def reference(signatures, params, seeds):
        seeds = [u for u in dict.fromkeys(seeds) if u in signatures]
        urls = seeds + sorted(set(signatures) - set(seeds))
        return _leader_python(SiteClusters("s.test", [], {}, {}, signatures=dict(signatures)), urls, params)

    assert tree._COMPILED
    overflowed = joined = False
    for trial in range(40):
        signatures = {f"http://s.test/{k:03d}": around(templates[rng.integers(0, 4)]) for k in range(30)}
        signatures["http://s.test/e1"] = signatures["http://s.test/e2"] = np.zeros(0, dtype=np.uint64)
        signatures["http://s.test/same"] = signatures["http://s.test/000"].copy()
        params = ClusterParams(threshold=float(rng.choice([0.0, 0.3, 0.5, 0.7, 0.9])),
                               max_representatives=int(rng.choice([1, 2, 3, 256])))
        seeds = ["http://s.test/017", "http://s.test/none"] if trial % 3 == 0 else []
        got, want = cluster_signatures("s.test", signatures, params, seeds), reference(signatures, params, seeds)
        assert got.representatives == want.representatives
        assert got.cluster_of == want.cluster_of and got.similarity == want.similarity
        assert got.overflow == want.overflow
        overflowed |= bool(want.overflow)
        joined |= len(want.representatives) < len(signatures) - len(want.overflow)
    assert overflowed and joined
    unsorted = {"http://s.test/a": np.array([3, 1, 2], dtype=np.uint64), "http://s.test/b": np.array([1, 2, 3], dtype=np.uint64)}
    got = cluster_signatures("s.test", unsorted)
    assert got.cluster_of == reference(unsorted, ClusterParams(), []).cluster_of == {"http://s.test/a": 0, "http://s.test/b": 0}
