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


# --- version 5: the sections of a content at the narrowest widths their values need ---

def _hand_content() -> tuple[bytes, bytes]:
    """A version-4 content of two nodes built by hand, and its version-5 narrowing derived by
    hand: each section's width is that of its largest value (tag 300 needs 2 bytes, flags
    0x100 the whole 2 of a flag, a hint of 0x10000 and the class hash 0xFFFFFFFF 4; empty
    sections and all the others 1), and each value keeps its low bytes, little-endian."""
    u32 = lambda *v: np.array(v, dtype="<u4").tobytes()  # noqa: E731
    header = np.array([2, 1, 1, 0, 0, 2, 0], dtype="<i8").tobytes()      # n, texts, classes, attrs, links, text, pre
    sections = [u32(1, 1), u32(1, 0), u32(0, 1), u32(5, 300), np.array([0, 0x100], "<u2").tobytes(),
                u32(0x10000, 0), u32(7, 0), u32(0, 0), u32(1, 0), u32(0xFFFFFFFF), u32(0, 0), b"",
                u32(2), u32(1), b"", b""]
    content = header + b"".join(sections) + b"hi"
    widths = bytes([1, 1, 1, 2, 2, 4, 1, 1, 1, 4, 1, 1, 1, 1, 1, 1])
    narrowed = (header + widths + bytes([1, 1]) + bytes([1, 0]) + bytes([0, 1]) + bytes([5, 0, 0x2C, 0x01])
                + bytes([0, 0, 0, 1]) + u32(0x10000, 0) + bytes([7, 0]) + bytes([0, 0]) + bytes([1, 0])
                + u32(0xFFFFFFFF) + bytes([0, 0]) + bytes([2]) + bytes([1]) + b"hi")
    return content, narrowed


def test_narrowing_a_hand_built_content():
    blob = require_built("_blob")
    content, narrowed = _hand_content()
    for narrow, widen in ((blob.narrow, blob.widen),
                          (page_module._narrow_reference, page_module._widen_reference)):
        assert narrow(content) == narrowed
        assert widen(narrowed) == content


@pytest.mark.parametrize("html", PAGES)
def test_narrowing_compiled_is_the_reference_and_widening_undoes_it(html):
    blob = require_built("_blob")
    raw = parse_page(html, "http://ex.com/")._raw()
    narrowed = blob.narrow(raw)
    assert narrowed == page_module._narrow_reference(raw)
    assert len(narrowed) < len(raw)
    assert blob.widen(narrowed) == page_module._widen_reference(narrowed) == raw


def test_values_past_a_width_keep_the_full_width():
    """The wrapping int32 values of test_int32_arithmetic_wraps_as_numpy_s (hash-sized lines,
    all-ones id hashes) need all 4 bytes; narrowed and widened, the page is the same."""
    blob = require_built("_blob")
    page = parse_page(PAGES[2], "http://ex.com/")
    n = page.size
    page.line = np.array([np.iinfo(np.int32).max - 1] + [np.iinfo(np.int32).min + 3] * (n - 1), dtype=np.int32)
    page.id_hash = np.full(n, 0xFFFFFFFF, dtype=np.uint32)
    raw = page._raw()
    narrowed = blob.narrow(raw)
    assert narrowed[56 + 6] == narrowed[56 + 7] == 4          # line steps, id hashes
    assert blob.widen(narrowed) == page_module._widen_reference(narrowed) == raw


@pytest.mark.parametrize("damage", ["width_3", "flags_width_4", "cut", "no_widths"])
def test_a_damaged_narrowed_content_is_refused_on_both_paths(damage):
    blob = require_built("_blob")
    content, narrowed = _hand_content()
    if damage == "width_3":
        bad = narrowed[:56] + bytes([3]) + narrowed[57:]
    elif damage == "flags_width_4":
        bad = narrowed[:60] + bytes([4]) + narrowed[61:]
    elif damage == "cut":
        bad = narrowed[:80]
    else:
        bad = narrowed[:60]
    for widen in (blob.widen, page_module._widen_reference):
        with pytest.raises(ValueError):
            widen(bad)
    with pytest.raises(ValueError):
        blob.narrow(content[:70])
    with pytest.raises(ValueError):
        page_module._narrow_reference(content[:70])
