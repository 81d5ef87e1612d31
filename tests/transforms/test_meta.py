"""What a page declares about itself (transforms/meta.py): each source, the order between
sources, normalization, and bad values that cost their column only."""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitestrip.transforms.meta import (MAX_DESCRIPTION, MAX_JSONLD_SCRIPTS, PageMeta, code_language,
                                       iso_date, language_tag)
from sitestrip.transforms.page import TAG_ID, parse_page, parse_tree

URL = "https://news.example/2024/story.html"


def meta_of(head: str, body: str = "<p>x</p>", html_attrs: str = "") -> PageMeta:
    page = parse_page(f"<html{html_attrs}><head>{head}</head><body>{body}</body></html>", URL)
    return PageMeta(*page.meta)


def test_standard_meta_tags():
    """Each column from its plain HTML source."""
    m = meta_of('<link rel="canonical" href="/2024/story.html?page=1">'
                '<meta name="description" content="  A   short\n story. ">'
                '<meta name="author" content="Jane Roe">'
                '<meta name="date" content="2024-03-05">', html_attrs=' lang="en-us"')
    assert m == PageMeta(html_lang="en-US", canonical_url="https://news.example/2024/story.html?page=1",
                         description="A short story.", published_date="2024-03-05", author="Jane Roe")


def test_opengraph():
    """OpenGraph is read when the plain tags are missing; article:author is a profile URL here,
    which is no name, so author stays null."""
    m = meta_of('<meta property="og:url" content="https://news.example/s">'
                '<meta property="og:description" content="OG text">'
                '<meta property="article:published_time" content="2024-03-05T10:20:30+01:00">'
                '<meta property="article:author" content="https://facebook.com/jane">')
    assert m == PageMeta(canonical_url="https://news.example/s", description="OG text",
                         published_date="2024-03-05T10:20:30+01:00")


def test_json_ld():
    """The article object of an @graph wins over the WebSite object before it; authors are
    the names of a list of Person objects; 'Z' is written as +00:00."""
    ld = ('{"@context": "https://schema.org", "@graph": ['
          '{"@type": "WebSite", "description": "The site"},'
          '{"@type": "NewsArticle", "description": "The story", "datePublished": "2024-03-05T08:00:00Z",'
          ' "author": [{"@type": "Person", "name": "Ann A"}, {"@type": "Person", "name": "Bob B"}]}]}')
    m = meta_of(f'<script type="application/ld+json">{ld}</script>')
    assert (m.description, m.published_date, m.author) == ("The story", "2024-03-05T08:00:00+00:00", "Ann A, Bob B")


def test_json_ld_in_body_and_bad_json_ld_costs_nothing():
    """A broken JSON-LD script is skipped and the next one read; JSON-LD in <body> counts."""
    m = meta_of('<script type="application/ld+json">{"@type": "Article", oops</script>',
                body='<p>x</p><script type="application/ld+json">{"@type": "BlogPosting",'
                     '"author": "By Carl C", "datePublished": "not a date"}</script>')
    assert m.author == "Carl C" and m.published_date is None


def test_first_source_wins():
    """Plain meta description before og:description before JSON-LD; <link rel=canonical> before
    og:url; article:published_time before JSON-LD before meta names."""
    m = meta_of('<meta property="og:description" content="og">'
                '<meta name="description" content="plain">'
                '<meta property="og:url" content="https://news.example/og">'
                '<link rel="canonical" href="https://news.example/canon">'
                '<meta name="pubdate" content="2020-01-01">'
                '<meta property="article:published_time" content="2021-02-02">'
                '<script type="application/ld+json">{"@type": "Article", "description": "ld",'
                '"datePublished": "2022-03-03"}</script>')
    assert (m.description, m.canonical_url, m.published_date) == ("plain", "https://news.example/canon", "2021-02-02")


def test_microdata_of_other_items_is_not_the_page_date():
    """A related video's <meta itemprop="datePublished"> in the body describes the video: the
    page's dc.date is its date."""
    m = meta_of('<meta name="dc.date" content="2015-01-19">',
                body='<p>Story</p><div itemscope><meta itemprop="datePublished" content="2015-01-15T07:46:35Z"></div>')
    assert m.published_date == "2015-01-19"


def test_bad_values_are_null_and_the_page_parses():
    """An unparseable date, a non-http canonical URL, an empty description, a lang that is no
    language tag: each column null, the page's text intact."""
    page = parse_page('<html lang="not a tag!"><head><link rel="canonical" href="javascript:void(0)">'
                      '<meta name="description" content="   "><meta name="date" content="yesterday">'
                      '</head><body><p>Text stays.</p></body></html>', URL)
    assert page.meta == (None, None, None, None, None, None)
    assert page.text == "Text stays."


def test_json_ld_bounds():
    """Only the first MAX_JSONLD_SCRIPTS scripts are read: a date in a later one is not seen."""
    empty = '<script type="application/ld+json">{"@type": "Thing"}</script>' * MAX_JSONLD_SCRIPTS
    late = '<script type="application/ld+json">{"@type": "Article", "datePublished": "2024-01-01"}</script>'
    assert meta_of(empty + late).published_date is None
    assert meta_of(late + empty).published_date == "2024-01-01"


def test_deeply_nested_json_ld_is_walked_without_recursion():
    """JSON nested 5,000 levels: json.loads refuses it (RecursionError) or the bounded walk
    stops; either way the columns are null and nothing raises."""
    nested = '{"a":' * 5000 + '1' + '}' * 5000
    m = meta_of(f'<script type="application/ld+json">{nested}</script>')
    assert m.published_date is None


def test_long_description_is_cut_at_a_word():
    m = meta_of(f'<meta name="description" content="{"word " * 400}">')
    assert len(m.description) <= MAX_DESCRIPTION and m.description.endswith("word")


@pytest.mark.parametrize("value, expected", [
    ("2024-03-05", "2024-03-05"),
    ("2024/3/5", "2024-03-05"),
    ("20240305", "2024-03-05"),
    ("2024-03-05T10:20:30.123Z", "2024-03-05T10:20:30+00:00"),
    ("2024-03-05 10:20", "2024-03-05T10:20:00"),
    ("Tue, 05 Mar 2024 10:20:30 GMT", "2024-03-05T10:20:30+00:00"),
    ("2024-02-30", None),
    ("0000-00-00", None),
    ("1850-01-01", None),
    ("July 31, 2012, 2:42 pm", "2012-07-31"),
    ("5th March 2024", "2024-03-05"),
    ("Sept. 9, 2014", "2014-09-09"),
    ("Smarch 5, 2024", None),
    ("March 5th", None),
    ("", None),
    (None, None),
])
def test_dates_are_iso_8601(value, expected):
    assert iso_date(value) == expected


@pytest.mark.parametrize("value, expected", [
    ("en", "en"), ("EN_us", "en-US"), ("zh-hant-tw", "zh-Hant-TW"), ("pt-BR", "pt-BR"),
    (" de ", "de"), ("", None), ("x", None), ("en us", None), (None, None)])
def test_language_tags(value, expected):
    assert language_tag(value) == expected


def test_xml_lang_counts_when_lang_is_missing():
    assert meta_of("", html_attrs=' xml:lang="fr"').html_lang == "fr"


def test_node_extras_images_and_code_languages_survive_the_shuffle():
    """Two images kept: the <img> of the paragraph (the 1×1 pixel is not) and the <picture>,
    whose <img> has a data: URI as src, so its data-src is the URL; relative URLs resolve
    against the page. Two code languages: Sphinx's wrapper class two levels above the <pre>,
    and the <code> child's class; highlight-default names no language."""
    html = ('<body><p>Hi<img src="/a.png" alt=" An  image "><img src="/t.gif" width="1" height="1"></p>'
            '<div class="highlight-python3"><div class="highlight"><pre>x = 1</pre></div></div>'
            '<pre><code class="language-js">f()</code></pre>'
            '<picture><source srcset="/b.webp"><img src="data:image/gif;base64,R0" data-src="/b.jpg"></picture>'
            '<pre class="highlight-default">plain</pre></body>')
    page = parse_page(html, URL)
    img, picture, pre = TAG_ID["img"], TAG_ID["picture"], TAG_ID["pre"]
    images = page.side.image_of()
    assert [page.tag[n] for n in images] == [img, picture]
    assert list(images.values()) == [("https://news.example/a.png", "An image"), ("https://news.example/b.jpg", "")]
    langs = page.side.code_language_of()
    assert all(page.tag[n] == pre for n in langs) and list(langs.values()) == ["python3", "js"]
    back = pickle.loads(pickle.dumps(page))
    assert back.side == page.side and back.meta == page.meta
    assert np.array_equal(back.side.image_node, page.side.image_node)


@pytest.mark.parametrize("html, expected", [
    ('<pre class="language-rust">x</pre>', "rust"),
    ('<pre class="brush: js; gutter: false">x</pre>', "js"),
    ('<div class="sourceCode"><pre class="sourceCode haskell">x</pre></div>', "haskell"),
    ('<div class="highlight highlight-source-python"><pre>x</pre></div>', "python"),
    ('<pre class="nohighlight">x</pre>', None),
    ('<pre>x</pre>', None),
    # the <code> child need not come first; a <code> grandchild is not the <pre>'s child
    ('<pre><span>1</span><code class="language-go">x</code></pre>', "go"),
    ('<div class="lang-c"><pre><span><code class="language-go">x</code></span></pre></div>', "c"),
    # the first of the candidates that names a language: <code>, <pre>, then up to three wrappers
    ('<div class="highlight-ruby"><pre class="language-none"><code class="nohighlight">x</code></pre></div>', "ruby"),
    ('<div class="language-a"><div><div><div><pre>x</pre></div></div></div></div>', None),
])
def test_code_language_classes(html, expected):
    _, body, _ = parse_tree(f"<body>{html}</body>")
    assert code_language(body.find(".//pre")) == expected


def test_json_ld_bound_counts_json_ld_scripts_only():
    """Other scripts, before or between, do not use up MAX_JSONLD_SCRIPTS; the meta tags after
    the scripts (one walk finds both) are still read."""
    others = '<script>var x = 1;</script><script type="text/javascript">f()</script>' * MAX_JSONLD_SCRIPTS
    late = '<script type="application/ld+json">{"@type": "Article", "datePublished": "2024-01-01"}</script>'
    m = meta_of(others + late + '<meta name="author" content="A. Writer">', body='<p>x</p><meta name="x" content="y">')
    assert (m.published_date, m.author) == ("2024-01-01", "A. Writer")
    ld = '<script type=" Application/LD+JSON ">{"@type": "Thing"}</script>'
    assert meta_of(ld * MAX_JSONLD_SCRIPTS + others + late).published_date is None


def _image_alts_reference(page, images):
    """meta._image_alts as written before it was vectorized: image by image."""
    from sitestrip.transforms.meta import MAX_ALT, _clip
    from sitestrip.transforms.tree import nearest_in_mask
    links, end, tag = page.link_node, page.end, page.tag
    cover = np.cumsum(np.bincount(links, minlength=page.size + 1) - np.bincount(end[links], minlength=page.size + 1))
    nearest = None
    out, done = [], set()
    for node, alt in images:
        if cover[node] <= 0:
            continue
        link = int(links[np.searchsorted(links, node) - 1])
        if end[link] <= node:
            if nearest is None:
                mask = np.zeros(page.size, dtype=bool)
                mask[links] = True
                nearest = nearest_in_mask(page, mask)
            link = int(nearest[node])
        if link in done:
            continue
        text = _clip(alt, MAX_ALT)
        if not text:
            continue
        done.add(link)
        if not (tag[link:end[link]] == 0).any():
            out.append((link, text))
    return out


_alt_leaf = st.sampled_from(['<img alt="A">', '<img alt="">', "<img>", '<img alt=" B  c ">', "text", " ", "<br>",
                             '<picture><source srcset="/s.webp"><img alt="P"></picture>', '<img alt="W" width="1">',
                             '<a href="/open"><img alt="O">', '<a href="mailto:x"><img alt="M"></a>', "</a>"])
_alt_html = st.recursive(
    _alt_leaf,
    lambda inner: st.builds(lambda tag, kids: f"<{tag}>{''.join(kids)}</{tag.split()[0]}>",
                            st.sampled_from(['a href="/x"', 'a href="/y"', "span", "p", "div", "a"]),
                            st.lists(inner, max_size=4)),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_alt_html)
def test_alt_texts_of_links_without_text_are_the_references(html):
    """The alt texts kept for links without text (nested links that libxml2 leaves open,
    images after a nested link closed, links holding text, pictures, pixels) are what the
    image-by-image reference keeps."""
    from sitestrip.transforms import meta
    page = parse_page(f"<body>{html}</body>", URL)
    got = (page.side.alt_node.tolist(), page.side.alt)
    real = meta._image_alts
    try:
        meta._image_alts = _image_alts_reference
        ref = parse_page(f"<body>{html}</body>", URL)
    finally:
        meta._image_alts = real
    assert got == (ref.side.alt_node.tolist(), ref.side.alt)


# --- the declared elements gathered in one compiled pass (transforms/_flatten.c meta_elements) ---

def _metadata_both_ways(html: str) -> tuple:
    """page_metadata of a parsed document with meta_elements and with root.iter, its reference."""
    from helpers.compiled import require_built
    from sitestrip.transforms import meta

    require_built("_flatten")
    root, _, _ = parse_tree(html)
    saved = meta._COMPILED
    try:
        meta._COMPILED = True
        got = meta.page_metadata(root, URL)
        meta._COMPILED = False
        ref = meta.page_metadata(root, URL)
    finally:
        meta._COMPILED = saved
    return got, ref


def test_meta_elements_by_hand():
    """What the pass hands over: every <meta> with a content attribute, the <link>s whose rel
    may say canonical, the <script>s whose type may be JSON-LD; <head> and <body> alike, in
    document order, inside elements flattening drops too."""
    from helpers.compiled import require_built

    C = require_built("_flatten")
    root, _, _ = parse_tree('<html><head><meta name="a" content="1"><meta property="b" content="">'
                            '<meta name="c"><link rel="Canonical" href="/x"><link rel="icon" href="/i">'
                            '<script type="application/LD+json">{}</script><script>f()</script></head>'
                            '<body><template><meta name="d" content="2"></template>'
                            '<svg><link rel="canonicalé"></svg><script type="x">y</script></body></html>')
    metas, links, scripts = C.meta_elements(root)
    assert metas == [("a", None, "1"), (None, "b", ""), ("d", None, "2")]
    assert links == [("Canonical", "/x"), ("canonicalé", None)]
    assert [s.text for s in scripts] == ["{}"]


_META_PIECE = st.sampled_from([
    '<meta name="description" content=" D ">', '<meta property="og:description" content="OG">',
    '<meta name="Author" property="article:author" content="A. B.">', '<meta name="author" content="  ">',
    '<meta name="date" content="2024-01-02">', '<meta name="\u00a0date" content="2023-01-01">', '<meta content="x">',
    '<meta property="og:url" content="/og">', '<meta property="og:type" content="Article">',
    '<link rel="canonical" href="mailto:x">', '<link rel="canonical alternate" href="/c1">', '<link rel="CANONICAL">',
    '<link rel="canonical\u00a0x" href="/c2">', '<link href="/c3" rel=" canonical ">', '<link rel="icon" href="/i">',
    '<script type="application/ld+json">{"@type": "NewsArticle", "author": {"name": "L D"}}</script>',
    '<script type=" Application/LD+JSON ">{"datePublished": "2022-02-02", "@type": "WebPage"}</script>',
    '<script type="application/ld+json\u00a0">{"description": "nbsp"}</script>', '<script>var x;</script>',
    '<script type="text/javascript">f()</script>', '<template><meta name="description" content="T"></template>',
    '<noscript><meta name="author" content="N"></noscript>', '<p>text</p>', '<svg><script type="application/ld+json">'
    '{"description": "in svg"}</script></svg>',
])


@settings(max_examples=300, deadline=None)
@given(st.lists(_META_PIECE, max_size=8), st.lists(_META_PIECE, max_size=6), st.booleans())
def test_declared_metadata_read_by_the_pass_is_the_reference(head, body, bare):
    """meta_elements against root.iter; and what the walk gathers as it reads the body is what
    meta_elements gathers (a document that is a bare body too)."""
    from sitestrip.transforms import page as P

    html = f"<body>{''.join(body)}</body>" if bare else \
        f"<html lang=en><head>{''.join(head)}</head><body>{''.join(body)}</body></html>"
    got, ref = _metadata_both_ways(html)
    assert got == ref
    root, body_el, _ = parse_tree(html)
    gathered = []
    P._flatten_compiled(body_el, URL, "", URL, 0, (), P.PRODUCT_RULES, root, gathered)
    assert gathered == [P._compiled.meta_elements(root)]


def _extras_fields(extras) -> dict:
    return {name: (getattr(extras, name).dtype.str, getattr(extras, name).tolist())
            if isinstance(getattr(extras, name), np.ndarray) else getattr(extras, name)
            for name in extras.__dataclass_fields__}


def _full_extras(**strings):
    from sitestrip.transforms.meta import NodeExtras
    i32 = np.int32
    fields = dict(image_node=np.array([3, 9], dtype=i32), image_src=("https://x.org/\u00e9.png", "https://x.org/b"),
                  image_alt=("caf\u00e9 \ud83d\ude00", ""), code_node=np.array([12], dtype=i32),
                  code_lang=("python",), fragment_node=np.array([4, 5, 6], dtype=i32),
                  fragment=("top", "a%20b", "\udcff lone"), area_node=np.array([20], dtype=i32),
                  area_url=("https://x.org/area",), area_fragment=("",), rel_node=np.array([4, 20], dtype=i32),
                  rel=(1, 6), alt_node=np.array([20], dtype=i32), alt=("Area\none",))
    fields.update(strings)
    return NodeExtras(**fields)


def test_node_extras_pack_in_the_fixed_layout_and_read_back():
    """Every field back with its type (int32 nodes, tuples of str and int), non-ASCII, lone
    surrogates and empty strings kept; the pack starts with the layout's byte, never zlib's."""
    from sitestrip.transforms.meta import NodeExtras
    extras = _full_extras()
    packed = extras.packed()
    assert packed[:1] == b"\x01"
    back = NodeExtras.unpacked(packed)
    assert _extras_fields(back) == _extras_fields(extras)
    assert back == extras and back.packed() == packed
    back.image_node[0] = 7          # an array of its own, writable as a parsed page's are
    assert NodeExtras.unpacked(packed).image_node.tolist() == [3, 9]


@pytest.mark.parametrize("fields", [
    dict(rel_node=np.array([2], dtype=np.int32), rel=(4,)),                    # no strings at all
    dict(code_node=np.array([1], dtype=np.int32), code_lang=("",)),             # one empty string
    dict(fragment_node=np.array([1, 2], dtype=np.int32), fragment=("", "")),
    dict(image_node=np.array([1], dtype=np.int32), image_src=("https://i/",), image_alt=("alt",)),
])
def test_node_extras_of_few_fields_read_back(fields):
    from sitestrip.transforms.meta import NodeExtras
    extras = NodeExtras(**fields)
    packed = extras.packed()
    assert packed[:1] == b"\x01"
    assert _extras_fields(NodeExtras.unpacked(packed)) == _extras_fields(extras)


def test_node_extras_with_a_nul_in_a_string_pack_as_json():
    """NUL separates the layout's strings: a string holding one packs as older versions did
    (zlib'd JSON) and reads back the same."""
    import zlib

    from sitestrip.transforms.meta import NodeExtras
    extras = _full_extras(alt=("a\0b",))
    packed = extras.packed()
    assert packed[:1] == b"\x78" and zlib.decompress(packed)[:1] == b"["
    assert _extras_fields(NodeExtras.unpacked(packed)) == _extras_fields(extras)


def test_node_extras_of_older_versions_read_as_the_layout_does():
    """A JSON pack (what state files written before the layout hold) and the layout's pack of
    the same extras read back to equal fields."""
    from sitestrip.transforms.meta import NodeExtras
    extras = _full_extras()
    old = extras._packed_json()
    assert old[:1] == b"\x78"
    assert _extras_fields(NodeExtras.unpacked(old)) == _extras_fields(NodeExtras.unpacked(extras.packed()))


@pytest.mark.parametrize("damage", ["cut", "count", "strings", "garbage"])
def test_damaged_node_extras_are_refused(damage):
    """A damaged layout is a ValueError (or zstd's OSError), which a state file's reader
    (transforms/state.py) reports as a damaged stored page."""
    from sitestrip.transforms import compression
    from sitestrip.transforms.meta import NodeExtras
    extras = _full_extras()
    raw = bytearray(extras._layout())
    if damage == "cut":
        blob = b"\x01" + compression.pack(bytes(raw[:20]))
    elif damage == "count":
        raw[0:4] = (1000).to_bytes(4, "little")
        blob = b"\x01" + compression.pack(bytes(raw))
    elif damage == "strings":
        blob = b"\x01" + compression.pack(bytes(raw) + b"\0extra")
    else:
        blob = b"\x01" + b"\x10" + bytes(20)
    with pytest.raises((ValueError, OSError)):
        NodeExtras.unpacked(blob)


@pytest.mark.parametrize("fields", [
    dict(image_node=np.array([1, 2], dtype=np.int32), image_src=("a",), image_alt=("b",)),   # unequal
    dict(alt_node=np.array([1], dtype=np.int32), alt=(None,)),                             # not a string
    dict(rel_node=np.array([1], dtype=np.int32), rel=(1 << 40,)),                          # past int32
])
def test_node_extras_the_layout_cannot_hold_pack_as_json(fields):
    """What the layout cannot hold packs as JSON did, and reads back as it did (the check of a
    stored page refuses the unequal ones: transforms/state.py)."""
    from sitestrip.transforms.meta import NodeExtras
    extras = NodeExtras(**fields)
    packed = extras.packed()
    assert packed[:1] == b"\x78" and packed == extras._packed_json()
    assert _extras_fields(NodeExtras.unpacked(packed)) == _extras_fields(NodeExtras._unpacked_json(packed))
