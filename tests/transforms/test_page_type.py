"""Page type (transforms/page_type.py): the page features on hand-built pages, the model's
probabilities from hand-made one-leaf ensembles, and the column's value."""
import math

import numpy as np
import pytest

from sitestrip.transforms.blocks import block_texts, page_blocks
from sitestrip.transforms.features import FEATURE_NAMES, block_features
from sitestrip.transforms.model import BlockModel, _tree
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.page_type import (OTHER, PAGE_FEATURE_NAMES, PAGE_TYPES, PageTypeModel,
                                            page_type_features, page_type_label)

COL = {name: i for i, name in enumerate(FEATURE_NAMES)}
PCOL = {name: i for i, name in enumerate(PAGE_FEATURE_NAMES)}

PRODUCT = """<html><head><meta property="og:type" content="product">
<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Product",
 "offers": {"@type": "Offer", "price": "19.99"}}</script></head>
<body><h1>Blue kettle</h1><p>Price: $19.99</p><p><button>Add to cart</button></p>
<table><tr><td>Volume</td><td>1.5 l</td></tr></table></body></html>"""

FORUM = """<html><body><h1>Kettle keeps clicking</h1>
<div class="post"><p>Posted by anna</p><p>My kettle clicks when it boils. Any idea?</p><a href="#r">Reply</a></div>
<div class="post"><p>Posted by ben</p><p>Descale it with vinegar.</p><a href="#r">Reply</a></div>
<div class="post"><p>Posted by cleo</p><p>Same here, descaling fixed it.</p><a href="#r">Reply</a></div>
</body></html>"""


def page_features(html, url):
    page = parse_page(html, url)
    blocks = page_blocks(page)
    texts = block_texts(page, blocks)
    X = block_features(page, blocks, texts, conex_main=np.zeros(page.size, dtype=bool), menu_node=None, site=None)
    return page_type_features(page, url, texts, blocks.words, X, COL).astype(np.float64), texts


def test_declared_types_url_and_cues_of_a_product_page():
    f, texts = page_features(PRODUCT, "https://shop.example/products/blue-kettle")
    # og:type product and JSON-LD Product/Offer: the product family; nothing else declared.
    assert f[PCOL["declared_product"]] == 1
    assert f[PCOL["declared_article"]] == 0
    # /products/blue-kettle: two segments, the product family's word, no date, no query.
    assert f[PCOL["url_depth"]] == 2
    assert f[PCOL["url_product"]] == 1 and f[PCOL["url_forum"]] == 0
    assert f[PCOL["url_date"]] == 0 and f[PCOL["url_query"]] == 0
    # "$19.99" is one price; "Add to cart" one cart cue.
    assert f[PCOL["cue_price_log"]] == pytest.approx(math.log1p(1))
    assert f[PCOL["cue_cart_log"]] == pytest.approx(math.log1p(1))
    assert f[PCOL["tags_button_log"]] == pytest.approx(math.log1p(1))
    assert f[PCOL["tags_table_log"]] == pytest.approx(math.log1p(1))
    # No other page of the site.
    assert f[PCOL["has_site"]] == 0


def test_forum_furniture_and_repetition():
    f, texts = page_features(FORUM, "https://talk.example/t/kettle-keeps-clicking/4711")
    assert f[PCOL["url_forum"]] == 1 and f[PCOL["url_numeric"]] == 1
    # Three "Reply" links are forum cues; each "Posted by anna" holds two byline cues ("posted",
    # "by "): six.
    assert f[PCOL["cue_forum_log"]] == pytest.approx(math.log1p(3))
    assert f[PCOL["cue_byline_log"]] == pytest.approx(math.log1p(6))
    # Every block but the heading sits in one of three same-shaped div.post siblings.
    heading_words = 3
    total = sum(len(t.split()) for t in texts)
    assert f[PCOL["repeated_word_share"]] == pytest.approx((total - heading_words) / total, abs=1e-6)


def test_a_page_without_blocks_has_zero_aggregates():
    page = parse_page("<html><body></body></html>", "https://x.example/")
    f = page_type_features(page, page.url, [], np.zeros(0), np.zeros((0, len(FEATURE_NAMES)), np.float32), COL)
    assert f.shape == (len(PAGE_FEATURE_NAMES),)
    assert f[PCOL["words_log"]] == 0 and f[PCOL["w_link_char_share"]] == 0


def _constant(raw):
    """A gbdt BlockModel over the page features that gives every page the raw score `raw`."""
    leaf = _tree({"feature": [-1], "threshold": [0.0], "left": [-1], "right": [-1], "default_left": [0],
                  "value": [0.0]}, len(PAGE_FEATURE_NAMES), "t")
    return BlockModel(kind="gbdt", model_id="", feature_set="page-type-v1", feature_names=PAGE_FEATURE_NAMES,
                      threshold=0.5, trained_on={}, group_names=(), base_score=raw, trees=(leaf,))


def test_probabilities_are_the_ensembles_normalized():
    # Raw 0 → 0.5 for the first type, raw log(1/3) → 0.25 for the others: 0.5 / (0.5 + 6 * 0.25) = 0.25.
    models = [_constant(0.0)] + [_constant(math.log(1 / 3))] * (len(PAGE_TYPES) - 1)
    p = PageTypeModel(models).proba(np.zeros((2, len(PAGE_FEATURE_NAMES)), np.float32))
    assert p.shape == (2, len(PAGE_TYPES))
    assert p[:, 0] == pytest.approx([0.25, 0.25])
    assert p.sum(axis=1) == pytest.approx([1.0, 1.0])
    assert page_type_label(p[0], blocks=4) == PAGE_TYPES[0]
    assert page_type_label(p[0], blocks=0) == OTHER
    with pytest.raises(ValueError):
        PageTypeModel(models[:3])


# ---------------------------------------------------------------- compiled cue counts
# transforms/_features.c count_strings against str.count, the reference of page_type._cue_counts.

def _count_strings(text, strings):
    from helpers.compiled import require_built
    compiled = require_built("_features")
    out = np.empty(len(strings), dtype=np.int64)
    compiled.count_strings(text, tuple(strings), out)
    return out.tolist()


def test_count_strings_counts_as_str_count_does():
    """By hand: "aaaa" holds "aa" twice (occurrences do not overlap: at 0 and 2), "aaa" once;
    "reply replies" holds "repl" twice, "reply" once, "replies" once, "ies" once; "€" and
    "märz" are found in a text of wider code points; "" counts len + 1; "x" none; a string
    longer than the text none."""
    assert _count_strings("aaaa", ["aa", "aaa", "a", "", "aaaaa"]) == [2, 1, 4, 5, 0]
    assert _count_strings("reply replies", ["repl", "reply", "replies", "ies", "x"]) == [2, 1, 1, 1, 0]
    assert _count_strings("im märz: 5 €, 6 € 😀", ["€", "märz", " €", "😀", "z:"]) == [2, 1, 2, 1, 1]
    assert _count_strings("", ["a", ""]) == [0, 1]


def test_count_strings_on_seeded_texts_and_the_cue_strings():
    """Seeded texts over a small alphabet (so that strings recur and overlap) and the page type's
    own cue strings over texts built from their pieces: every count is str.count's."""
    import random
    from sitestrip.transforms import page_type as PT
    rng = random.Random(3)
    strings = ["ab", "aba", "b", "ba a", "€a", "aa", "a"]
    for _ in range(500):
        text = "".join(rng.choice("ab €\n") for _ in range(rng.randint(0, 40)))
        assert _count_strings(text, strings) == [text.count(s) for s in strings], text
    pieces = list(PT.CUE_STRINGS) + ["x", " ", "\n", "ä"]
    for _ in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert _count_strings(text, PT.CUE_STRINGS) == [text.count(s) for s in PT.CUE_STRINGS]


class _NoReference:
    def __iter__(self):
        raise AssertionError("the reference ran")


@pytest.mark.parametrize("html,url", [(PRODUCT, "https://shop.example/products/blue-kettle"),
                                      (FORUM, "https://talk.example/t/kettle-keeps-clicking/4711")])
def test_page_features_by_both_cue_counts(html, url, monkeypatch):
    """The page features with the compiled cue counts are the reference's bit for bit; by
    default the reference (str.count over _CUES) does not run."""
    from helpers.compiled import require_built
    from sitestrip.transforms import page_type as PT
    require_built("_features")
    assert PT._COMPILED
    cues = PT._CUES
    monkeypatch.setattr(PT, "_CUES", _NoReference())
    compiled, _ = page_features(html, url)
    monkeypatch.setattr(PT, "_CUES", cues)
    monkeypatch.setattr(PT, "_COMPILED", False)
    reference, _ = page_features(html, url)
    assert compiled.tobytes() == reference.tobytes()
    assert compiled[PCOL["cue_byline_log"]] > 0 or compiled[PCOL["cue_cart_log"]] > 0


def test_nan_helpers_are_numpys_nan_to_num():
    """page_type's _without_nan and _finite give np.nan_to_num's values: NaN 0, ±inf the
    largest finite values of the dtype, everything else as it is."""
    from sitestrip.transforms.page_type import _finite, _without_nan
    for v in (1.5, np.nan, np.inf, -np.inf, 0.0, -2.25):
        v = np.float32(v)
        assert type(_finite(v)) is float and _finite(v) == float(np.nan_to_num(v))
    x = np.array([[1.0, np.nan], [np.inf, -np.inf], [np.nan, 3.0]])
    assert _without_nan(x.copy()).tobytes() == np.nan_to_num(x.copy(), nan=0.0).tobytes()
    assert _without_nan(x[[0, 2]].copy()).tobytes() == np.nan_to_num(x[[0, 2]], nan=0.0).tobytes()


def test_short_cue_counts_per_text_are_the_joined_texts_counts(monkeypatch):
    """_features.c count_lowered (each short text lowered and counted on its own) against the
    reference's one str.count per cue over the short texts newline-joined and lower-cased:
    seeded texts of cue strings in any case, ASCII and not (Greek capital sigmas next to cue
    letters, "İ", "ẞ", "Ä"), blocks long and short, and a list with no short block."""
    from helpers.compiled import require_built
    from sitestrip.transforms import page_type as PT
    require_built("_features")
    import random
    rng = random.Random(5)
    pieces = list(PT.CUE_STRINGS) + [s.upper() for s in PT.CUE_STRINGS] + [
        "x", " ", "\n", "ä", "Ä", "ΣΑΣ", "Σ", "İ", "ẞ", "BY ", "Posted", "€9"]
    for _ in range(150):
        texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(0, 9))]
        words = np.array([rng.choice([1, 5, 20, 21, 40]) for _ in texts], dtype=np.int64)
        compiled = PT._short_cue_counts(texts, words)
        monkeypatch.setattr(PT, "_COMPILED", False)
        reference = PT._short_cue_counts(texts, words)
        monkeypatch.setattr(PT, "_COMPILED", True)
        assert compiled == reference


def test_url_family_columns_are_the_path_words_set_intersections():
    """_url_columns's family columns, looked up word by word, against each family's set
    intersection with the path's words (a word in two families, "artikel", sets both)."""
    import re
    from urllib.parse import urlsplit

    from sitestrip.transforms.page_type import _URL_FAMILIES, _url_columns

    urls = ["https://a.example/forum/t/123", "https://a.example/Shop/Artikel-42.html", "https://a.example/",
            "https://a.example/docs/api/reference/", "https://a.example/p?q=1", "http://[::1", "",
            "https://a.example/2015/07/news/story-x", "https://a.example/über/kontakt", "https://a.example/tagged"]
    for url in urls:
        try:
            path = urlsplit(url).path.lower()
        except ValueError:
            path = ""
        words = set(re.findall(r"[a-z]+", path))
        expected = [bool(words.intersection(family)) for _, family in _URL_FAMILIES]
        assert _url_columns(url)[-len(_URL_FAMILIES):] == expected, url
    assert _url_columns(urls[1])[-len(_URL_FAMILIES):] == [False, True, False, False, True, False]


@pytest.mark.parametrize("html,url", [(PRODUCT, "https://shop.example/products/blue-kettle"),
                                      (FORUM, "https://talk.example/t/kettle-keeps-clicking/4711")])
def test_compiled_tag_counts_and_weighted_columns_are_numpys(html, url, monkeypatch):
    """_model.c tag_counts and finite_columns against np.bincount and take/astype/nan_to_num:
    the page's features bit for bit, with the block features as computed and with NaN, +inf
    and -inf put in weighted columns and in site_pages_log (np.nan_to_num's largest finite
    values count in the weighted means), and with tag ids past every counted one."""
    from helpers.compiled import require_built
    from sitestrip.transforms import page_type as PT
    require_built("_model")
    page = parse_page(html, url)
    blocks = page_blocks(page)
    texts = block_texts(page, blocks)
    X = block_features(page, blocks, texts, conex_main=np.zeros(page.size, dtype=bool), menu_node=None, site=None)
    odd = X.copy()
    odd[0, COL["link_char_share"]] = np.nan
    odd[-1, COL["digit_share"]] = np.inf
    odd[1, COL["occ_mean"]] = -np.inf
    odd[0, COL["site_pages_log"]] = -np.inf
    monkeypatch.setattr(page, "tag", np.where(page.tag == page.tag.max(), 10_000, page.tag).astype(np.int32))
    for features in (X, odd):
        with np.errstate(over="ignore"):          # the infinite column's mean past float32
            compiled = PT.page_type_features(page, url, texts, blocks.words, features, COL)
            monkeypatch.setattr(PT, "_COMPILED", False)
            reference = PT.page_type_features(page, url, texts, blocks.words, features, COL)
            monkeypatch.setattr(PT, "_COMPILED", True)
        assert compiled.tobytes() == reference.tobytes()
    # The infinite weighted value, float64's largest, dominates its column's mean (past float32's
    # range); -inf site pages are float32's lowest value, NaN weighted values count 0.
    assert compiled[PCOL["w_digit_share"]] == np.inf
    assert compiled[PCOL["site_pages_log"]] == np.finfo(np.float32).min
    assert np.isfinite(compiled[PCOL["w_link_char_share"]])
    assert compiled[PCOL["tags_button_log"]] == reference[PCOL["tags_button_log"]]


def test_row_probabilities_are_the_one_row_matrixs():
    """PageTypeModel.row_proba (classify's one page) is proba of the row as a one-row matrix,
    bit for bit: the shipped page type stage on seeded rows with NaN, and hand-made ensembles
    whose probabilities sum to more than one."""
    from sitestrip.transforms.classify import SHIPPED_MODELS
    from sitestrip.transforms.model import load_model
    with open(SHIPPED_MODELS["learned"], "rb") as f:
        shipped = PageTypeModel(load_model(f.read()).page_type_models)
    hand = PageTypeModel([_constant(0.0)] + [_constant(2.0)] * (len(PAGE_TYPES) - 1))
    rng = np.random.default_rng(11)
    for types in (shipped, hand):
        for _ in range(40):
            row = rng.normal(scale=2.0, size=len(PAGE_FEATURE_NAMES)).astype(np.float32)
            row[rng.random(row.size) < 0.2] = np.nan
            got = types.row_proba(row)
            assert got.dtype == np.float64 and got.shape == (len(PAGE_TYPES),)
            assert got.tobytes() == types.proba(row[None, :])[0].tobytes()
    assert hand.row_proba(row)[0] == pytest.approx(0.5 / (0.5 + 6 / (1 + math.exp(-2.0))))
