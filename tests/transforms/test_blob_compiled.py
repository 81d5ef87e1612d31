"""The compact page's blob content laid out and rebuilt compiled (transforms/_blob.c) against
its Python reference (page.py `CompactPage._raw_reference`, `_arrays_reference`)."""
import pickle

import numpy as np
import pytest

from helpers.compiled import require_built
from sitestrip.transforms import page as page_module
from sitestrip.transforms.page import (CompactPage, _arrays_compiled, _arrays_reference, _pack_blob,
                                       parse_page)

PAGES = [
    "<body></body>",
    "<body><p>one</p></body>",
    # verbatim text, classes, an id, other attributes, a non-ASCII character, links in and out
    "<body><pre>  x\n  y</pre><div class='a b' id=m data-k=v><p>caf\u00e9 <a href='/x'>t</a>"
    "<a href='http://o.test/'>u</a></p></div></body>",
    # an odd node count, so the 2-byte flags leave the arrays after them at an address of 2 mod 4
    "<body><ul class=nav><li><a href='/a'>A</a></li><li><a href='/b'>B</a></li></ul><pre>z</pre>"
    "<p>t\u00e9xt <b>bold</b> tail</p><p>\ud83d\ude00 emoji</p></body>",
    "<body>" + "".join(f"<div class=c{k}><p>p{k} <a href='/l{k}'>l{k}</a></p></div>" for k in range(40)) + "</body>",
]


def text_and_links(page):
    return page.text.encode("utf-8", "surrogatepass"), "\n".join(page.link_url).encode("utf-8", "surrogatepass")


def assert_same_arrays(got, expected):
    assert set(got) == set(expected)
    for name, array in expected.items():
        assert got[name].dtype == array.dtype, name
        assert got[name].tolist() == array.tolist(), name


@pytest.mark.parametrize("html", PAGES)
def test_the_compiled_layout_and_rebuild_are_the_reference(html):
    require_built("_blob")
    page = parse_page(html, "http://ex.com/")
    raw = page._raw()
    assert raw == page._raw_reference(*text_and_links(page))
    arrays, pos = _arrays_compiled(raw)
    expected, expected_pos = _arrays_reference(raw)
    assert pos == expected_pos
    assert_same_arrays(arrays, expected)
    for name, array in arrays.items():
        assert array.tolist() == getattr(page, name).tolist(), name


def test_int32_arithmetic_wraps_as_numpy_s():
    """Values no parsed page has (a hash-sized line counter, pointers near the int32 range) lay
    out and rebuild as numpy's wrapping int32 differences and sums do."""
    require_built("_blob")
    page = parse_page(PAGES[2], "http://ex.com/")
    n = page.size
    big = np.iinfo(np.int32)
    page.line = np.array([big.max - 1] + [big.min + 3] * (n - 1), dtype=np.int32)
    page.id_hash = np.full(n, 0xFFFFFFFF, dtype=np.uint32)
    page.hints = np.arange(n, dtype=np.uint32) * np.uint32(0x9E3779B1)
    raw = page._raw()
    assert raw == page._raw_reference(*text_and_links(page))
    assert_same_arrays(_arrays_compiled(raw)[0], _arrays_reference(raw)[0])


def test_arrays_of_other_item_sizes_take_the_reference(monkeypatch):
    """An array the layout does not hold as it is (a hand-built page's int64 depths, unsigned
    parents, float word counts) is laid out by the reference, as it always was."""
    require_built("_blob")
    calls = []
    monkeypatch.setattr(page_module, "_blob", type("Spy", (), {"raw": lambda *a: calls.append(a)}))
    for name, dtype in (("depth", np.int64), ("parent", np.uint32), ("words", np.float32)):
        page = parse_page(PAGES[1], "http://ex.com/")
        setattr(page, name, getattr(page, name).astype(dtype))
        assert page._raw() == page._raw_reference(*text_and_links(page))
    assert calls == []


@pytest.mark.parametrize("change", ["strided", "two_d", "short", "long_pointer"])
def test_arrays_of_the_pages_dtypes_that_do_not_fit_take_the_reference(change):
    """The page's own dtypes go straight to the compiled layout, which refuses what
    _blob_layout refuses (not one dimension, not contiguous, not the node count's lengths):
    those are laid out by the reference."""
    require_built("_blob")
    page = parse_page(PAGES[2], "http://ex.com/")
    expected = None
    if change == "strided":
        page.depth = np.repeat(page.depth, 2)[::2]
        assert not page.depth.flags.c_contiguous
        expected = page._raw_reference(*text_and_links(page))
    elif change == "two_d":
        page.hints = page.hints.reshape(1, -1)
    elif change == "short":
        page.words = page.words[:-1]
    else:
        page.class_ptr = np.append(page.class_ptr, page.class_ptr[-1])
    assert not page_module._blob_layout((page.parent, page.end, page.depth, page.tag, page.flags, page.hints,
                                         page.line, page.id_hash, page.class_ptr, page.class_hash, page.attr_ptr,
                                         page.attr_hash, page.text_ptr, page.words, page.chars, page.link_node),
                                        page.size)
    try:
        reference = page._raw_reference(*text_and_links(page))
    except Exception as exc:   # noqa: BLE001 - the reference's own refusal is what _raw gives
        with pytest.raises(type(exc)):
            page._raw()
    else:
        assert page._raw() == reference
        if expected is not None:
            assert reference == expected


def test_a_page_round_trips_through_its_blob_on_either_path(monkeypatch):
    require_built("_blob")
    for compiled in (True, False):
        monkeypatch.setattr(page_module, "_BLOB_COMPILED", compiled)
        for html in PAGES:
            page = parse_page(html, "http://ex.com/")
            back = pickle.loads(pickle.dumps(page))
            assert back.tag.size == page.size
            assert back.differing_fields(page) == []


@pytest.mark.parametrize("cut", [0, 20, 60, -1])
def test_a_cut_blob_is_damage_on_both_paths(cut):
    require_built("_blob")
    page = parse_page(PAGES[2], "http://ex.com/")
    raw = page._raw()
    text_start = _arrays_reference(raw)[1]
    short = raw[:cut] if cut >= 0 else raw[:text_start - 4]
    for rebuild in (_arrays_compiled, _arrays_reference):
        with pytest.raises(ValueError):
            rebuild(short)


def test_a_stored_blob_reads_back_compiled():
    """A page stored by the reference layout (state files of earlier runs) rebuilds equal."""
    require_built("_blob")
    page = parse_page(PAGES[3], "http://ex.com/")
    state = page.__getstate__()
    stored = CompactPage.__new__(CompactPage)
    stored.__setstate__({**state, "blob": _pack_blob(page._raw_reference(*text_and_links(page)))})
    assert stored.differing_fields(page) == []
