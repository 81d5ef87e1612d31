"""Duplicate pages (transforms/duplicates.py) and captures of one URL (transforms/site_step.py)."""
import dataclasses
import random

import numpy as np
import pytest

from sitestrip.configs import config_from_dict, load_config
from sitestrip.transforms.duplicates import (DuplicateParams, Fingerprint, agreement, content_hash,
                                             find_duplicates, minhash, near_signature, shingle_hashes,
                                             signature_bytes, signature_from_bytes, word_hashes)
from sitestrip.transforms.site_step import PageRecord, process_site
from sitestrip.transforms.page import parse_page

from helpers.compiled import require_built
from helpers.fruit import PAGES, site_page

PARAMS = DuplicateParams(enabled=True)


def text(n, seed=0):
    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(n))


def test_words_set_case_spaces_and_punctuation_aside():
    same = [word_hashes(t) for t in ("Hello, World!  It’s   here.", "hello world it s here",
                                     "HELLO\nWORLD — it's here")]
    assert all(np.array_equal(same[0], other) for other in same[1:])
    assert same[0].size == 5
    assert not np.array_equal(word_hashes("hello world"), word_hashes("world hello"))
    # Non-ASCII words are words, whole: "naïve" is one, and differs from "naive".
    assert word_hashes("naïve café").size == 2
    assert word_hashes("naïve")[0] != word_hashes("naive")[0]
    assert word_hashes("").size == 0 and word_hashes(None).size == 0 and word_hashes("— …").size == 0


def test_content_hash_is_exact_on_the_words():
    assert content_hash(word_hashes("Breaking: the river rose.")) == content_hash(word_hashes("breaking the river rose"))
    assert content_hash(word_hashes("the river rose")) != content_hash(word_hashes("the river fell"))
    assert content_hash(word_hashes("")) is None
    assert len(content_hash(word_hashes("x"))) == 16


def test_shingles_of_a_short_text_are_the_text():
    words = word_hashes("one two three")
    assert shingle_hashes(words, 5).size == 1
    assert shingle_hashes(word_hashes("a b c d e f g"), 5).size == 3
    # Order matters inside a shingle.
    assert shingle_hashes(word_hashes("a b"), 2)[0] != shingle_hashes(word_hashes("b a"), 2)[0]


def test_signature_agreement_estimates_jaccard():
    base = text(600, seed=1).split()
    errors = []
    for changed in (0, 10, 30, 60, 120):
        rng = random.Random(changed)
        other = list(base)
        for k in rng.sample(range(len(base)), changed):
            other[k] = "x" + other[k]
        a, b = word_hashes(" ".join(base)), word_hashes(" ".join(other))
        sa, sb = set(shingle_hashes(a, 5).tolist()), set(shingle_hashes(b, 5).tolist())
        jaccard = len(sa & sb) / len(sa | sb)
        errors.append(abs(agreement(near_signature(a, PARAMS), near_signature(b, PARAMS)) - jaccard))
    assert errors[0] == 0.0                 # the same text: the same signature
    assert max(errors) < 0.2 and np.mean(errors) < 0.1


def test_signature_of_few_shingles_fills_every_value():
    sig = minhash(shingle_hashes(word_hashes("a b c d e f"), 5), 64)
    assert sig.shape == (64,) and sig.dtype == np.uint32
    assert np.array_equal(signature_from_bytes(signature_bytes(sig)), sig)
    assert len(signature_bytes(sig)) == 256
    unrelated = near_signature(word_hashes(text(300, seed=2)), PARAMS)
    assert agreement(sig, unrelated) < 0.2


def fp(url, words=None, fetch="2024-01-01", canonical=None, record=None):
    hashes = word_hashes(words)
    return Fingerprint(url=url, url_normalized=url, record_id=record or f"<{url}@{fetch}>", fetch_date=fetch,
                       canonical_url=canonical, content_hash=content_hash(hashes),
                       signature=near_signature(hashes, PARAMS))


def test_clusters_canonical_pages_and_kinds():
    article, notice, other = text(300, 3), text(200, 4), text(250, 5)
    edited = article.split()
    edited[150] = "changed"                 # one word of 300: Jaccard of 5-shingles 290/305
    fps = [
        fp("https://s.example/story", article),                              # 0 canonical: shortest URL
        fp("https://s.example/story?utm_source=x", article),                 # 1 exact copy
        fp("https://s.example/story/print", " ".join(edited)),               # 2 near copy
        fp("https://s.example/a", notice, canonical="https://s.example/notice-page"),  # 3
        fp("https://s.example/notice-page", notice),                          # 4 named as canonical
        fp("https://s.example/old", other, fetch="2024-01-01"),               # 5 older capture
        fp("https://s.example/old", other + " updated", fetch="2024-03-01"),  # 6 newest capture
        fp("https://s.example/empty", ""),                                    # 7 no words: unique
        fp("https://s.example/empty2", ""),                                   # 8 no words: unique
    ]
    found = find_duplicates(fps, PARAMS)
    assert {i: (d.canonical, d.kind) for i, d in found.items()} == {
        1: (0, "exact"), 2: (0, "near"), 3: (4, "exact"), 5: (6, "capture")}


def test_canonical_ties_break_on_earliest_fetch_then_url():
    a = text(100, 6)
    fps = [fp("https://s.example/y", a, fetch="2024-05-01"), fp("https://s.example/x", a, fetch="2024-05-02"),
           fp("https://s.example/z", a, fetch="2024-04-01")]
    found = find_duplicates(fps, PARAMS)
    assert {i: d.canonical for i, d in found.items()} == {0: 2, 1: 2}
    # The result does not depend on the order of the pages.
    again = find_duplicates(fps[::-1], PARAMS)
    assert {2 - i: 2 - d.canonical for i, d in again.items()} == {0: 2, 1: 2}


def test_pages_below_the_threshold_stay_apart():
    a = text(200, 7).split()
    half = a[:100] + text(100, 8).split()    # shares half its words with `a`
    found = find_duplicates([fp("https://s.example/a", " ".join(a)), fp("https://s.example/b", " ".join(half))],
                            PARAMS)
    assert found == {}


def test_params_are_validated_in_the_config():
    with pytest.raises(Exception, match="near_threshold"):
        config_from_dict({"duplicates": {"near_threshold": 0.2}})
    with pytest.raises(Exception, match="num_perm"):
        config_from_dict({"duplicates": {"num_perm": 2}})


# Through the site step: fruit pages, one of them captured twice and one under a URL variant.

def page_html(name, note=""):
    return site_page(name, note=note)


def capture(url, html, offset, fetch):
    return PageRecord(url=url, site="fruit.example", warc_file="f.warc.gz", warc_offset=offset,
                      warc_record_id=f"<urn:{offset}>", fetch_date=fetch, content_type="text/html",
                      charset="utf-8", truncated=None, page=parse_page(html, url))


CONFIG = load_config()     # the defaults: duplicates on, the shipped block model
NOTE = ("<p>Editor's note: this article was updated to correct the harvest season and to add "
        "the names of the orchards that grow the old varieties.</p>")


def site_rows(records, config=CONFIG):
    out = list(process_site("fruit.example", records, config))
    assert [kind for kind, _ in out if kind == "errors"] == []
    return [row for kind, row in out if kind == "pages"]


def test_every_capture_of_a_url_gets_its_own_analysis_and_row():
    records = [capture(f"https://fruit.example/{p}.html", page_html(p), k, "2024-01-01T00:00:00Z")
               for k, p in enumerate(PAGES)]
    records.append(capture("https://fruit.example/a.html", page_html("a", NOTE), 10, "2024-02-01T00:00:00Z"))
    rows = site_rows(records)
    assert len(rows) == 6
    a_rows = sorted((r for r in rows if r["url"] == "https://fruit.example/a.html"), key=lambda r: r["fetch_date"])
    old, new = a_rows
    assert "Editor's note" in new["main_text"] and "Editor's note" not in old["main_text"]
    assert "Apples grow on trees" in old["main_text"] and "Apples grow on trees" in new["main_text"]
    # The older capture is a duplicate of the newer; the newer stands for the URL.
    assert (old["duplicate_of"], old["duplicate_of_record"], old["duplicate_kind"]) == \
        ("https://fruit.example/a.html", "<urn:10>", "capture")
    assert new["duplicate_of"] is None and new["duplicate_kind"] is None
    # The same rows whichever order the records come in.
    again = site_rows(records[::-1])
    key = lambda r: (r["url"], r["warc_offset"])
    assert [(r["main_text"], r["duplicate_of_record"]) for r in sorted(rows, key=key)] == \
        [(r["main_text"], r["duplicate_of_record"]) for r in sorted(again, key=key)]


def test_a_url_variant_is_an_exact_duplicate_of_the_shorter_url():
    records = [capture(f"https://fruit.example/{p}.html", page_html(p), k, "2024-01-01T00:00:00Z")
               for k, p in enumerate(PAGES)]
    records.append(capture("https://fruit.example/b.html?ref=feed", page_html("b"), 9, "2024-01-01T00:00:00Z"))
    rows = {r["url"]: r for r in site_rows(records)}
    variant, b = rows["https://fruit.example/b.html?ref=feed"], rows["https://fruit.example/b.html"]
    assert variant["content_hash"] == b["content_hash"] is not None
    assert (variant["duplicate_of"], variant["duplicate_kind"]) == ("https://fruit.example/b.html", "exact")
    assert sum(r["duplicate_of"] is not None for r in rows.values()) == 1
    assert len(variant["near_signature"]) == 4 * 64


def test_duplicate_columns_are_null_when_off():
    records = [capture(f"https://fruit.example/{p}.html", page_html(p), k, "2024-01-01T00:00:00Z")
               for k, p in enumerate(PAGES)]
    rows = site_rows(records, config_from_dict({"main_content": {"method": "conex"}}))
    assert all(r.get("content_hash") is None and r.get("duplicate_of") is None for r in rows)


# Through the Beam pipeline: exact duplicates across sites, and captures of one URL.

@pytest.mark.beam
def test_duplicates_through_beam(tmp_path):
    import glob
    import pyarrow.parquet as pq
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.testing.test_pipeline import TestPipeline
    from sitestrip.pipeline.graph import build_pipeline
    from helpers.warcs import response, write_warc

    def story(site, note=""):
        menu = "".join(f"<li><a href='/{p}.html'>{p.upper()}</a></li>" for p in PAGES)
        return (f"<html><head><title>River</title></head><body><ul id=menu>{menu}</ul><div id=content>"
                f"<h2>The river rose</h2>{note}<p>{text(120, seed=11)}</p></div>"
                f"<footer><p>Copyright {site}</p><p>Terms of use and privacy</p></footer></body></html>").encode()

    records = []
    for site in ("one.example", "two.example", "three.example"):
        records += [response(f"https://{site}/{p}.html", page_html(p).encode()) for p in PAGES[1:]]
        records.append(response(f"https://{site}/a.html", story(site)))
    # A later capture of one.example's story with a note added: its own row, the older marked.
    records.append(response("https://one.example/a.html", story("one.example", NOTE),
                            warc_headers={"WARC-Date": "2030-01-01T00:00:00Z"}))
    path = write_warc(tmp_path / "in.warc.gz", records)
    out = str(tmp_path / "out")
    config = load_config()
    config = dataclasses.replace(config, duplicates=dataclasses.replace(config.duplicates, across_sites=True))
    with TestPipeline(runner=FnApiRunner()) as p:
        build_pipeline(p, [path], out, config)
    rows = pq.read_table(glob.glob(f"{out}/pages/*.parquet")).to_pylist()
    assert len(rows) == len(records)
    stories = sorted((r for r in rows if r["url"].endswith("/a.html")), key=lambda r: (r["site"], r["fetch_date"]))
    by = {(r["site"], r["fetch_date"] > "2029"): r for r in stories}
    newest_one = by[("one.example", True)]
    older_one = by[("one.example", False)]
    assert (older_one["duplicate_of_record"], older_one["duplicate_kind"]) == (newest_one["warc_record_id"], "capture")
    assert "Editor's note" in newest_one["main_text"]
    # The three sites' story pages: the older capture of one.example's is a capture duplicate;
    # of the other two, with the same main text, the shortest normalized URL is canonical.
    same = [by[("three.example", False)], by[("two.example", False)]]
    assert same[0]["content_hash"] == same[1]["content_hash"] is not None
    assert same[1]["duplicate_of"] is None
    assert (same[0]["duplicate_of"], same[0]["duplicate_kind"]) == ("https://two.example/a.html", "exact_across_sites")
    # The fruit pages, the same on every site, are exact duplicates across sites of one.example's.
    b_rows = sorted((r for r in rows if r["url"].endswith("/b.html")), key=lambda r: r["site"])
    assert [r["duplicate_of"] for r in b_rows] == [None, "https://one.example/b.html", "https://one.example/b.html"]


def test_compiled_word_hashes_equal_the_reference():
    from sitestrip.transforms import duplicates
    assert duplicates._compiled is not None, "transforms/_text.c is not built: pip install -e ."
    rng = random.Random(3)
    alphabet = ["a", "Z", "9", "_", " ", "\n", ",", "'", "é", "É", "ß", "\u00a0", "\u00bf", "\u00c0", "\u2014",
                "\u2019", "\u206f", "\u2070", "\u2122", "\u3001", "\u3040", "\uff01", "\uff10", "\uff20", "\uff21",
                "中", "文", "\U0001f600", "\ud800", "İ"]
    texts = ["", "word", " lead and trail ", "ÉCOLE école", "«quoted» — dash…", "a\u00a0b", "x\u2122y"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 60))) for _ in range(400)]
    for t in texts:
        assert np.array_equal(word_hashes(t, compiled=True), word_hashes(t, compiled=False)), repr(t)



def test_compiled_word_hashes_lower_every_character_as_str_lower():
    # Each code point between letters, as a word and next to words: the compiled per-character
    # lowering against str.lower, with the texts that need str.lower whole (U+0130, U+03A3).
    chars = [chr(c) for c in range(0x80, 0x110000)]
    for start in range(0, len(chars), 1 << 16):
        part = chars[start:start + (1 << 16)]
        for t in ("a".join(part), " ".join(part), "Ab" + "".join(part)):
            assert np.array_equal(word_hashes(t, compiled=True), word_hashes(t, compiled=False)), start
    latin1 = "".join(chr(c) for c in range(0x80, 0x100))      # a str of the 1-byte kind
    for t in ("ΟΔΟΣ οδός", "ΣΑΣ Σ aΣ Σa", "İstanbul İ", "Kelvin \u212a Ångström \u212b", latin1,
              "a".join(latin1), "\u00c0\u00c9 CAF\u00c9 \u00b5\u00ff \u00d7\u00f7"):
        assert np.array_equal(word_hashes(t, compiled=True), word_hashes(t, compiled=False)), t

def test_compiled_near_signature_of_one_shingle_by_hand():
    """One word: one shingle, hash h = fmix64(word). With 8 bins it fills bin h's top 3 bits
    with h's low 32 bits; every other bin takes that bin's value plus its distance to it
    (circularly, forward) times 0x9E3779B1, modulo 2^32."""
    from sitestrip.transforms import duplicates
    require_built("_text")
    word = np.array([0x0123456789ABCDEF], dtype=np.uint64)
    h = int(duplicates._mix(word)[0])
    b, low = h >> 61, h & 0xFFFFFFFF
    expected = [(low + ((b - at) % 8) * 0x9E3779B1) % (1 << 32) for at in range(8)]
    params = DuplicateParams(shingle_words=5, num_perm=8)
    for compiled in (True, False):
        assert near_signature(word, params, compiled=compiled).tolist() == expected


def test_compiled_near_signature_equals_the_reference():
    """Seeded word hashes: fewer words than a shingle, repeated words (shingles hashing alike),
    few and many bins, against shingle_hashes then minhash."""
    require_built("_text")
    rng = np.random.default_rng(8)
    cases = [rng.integers(0, 1 << 64, n, dtype=np.uint64, endpoint=False) for n in (1, 2, 4, 5, 6, 40, 3000)]
    cases.append(np.repeat(rng.integers(0, 1 << 64, 3, dtype=np.uint64), 50))
    for words in cases:
        for k, num_perm in ((5, 64), (1, 8), (3, 1024), (7, 100)):
            params = DuplicateParams(shingle_words=k, num_perm=num_perm)
            got = near_signature(words, params, compiled=True)
            ref = minhash(shingle_hashes(words, k), num_perm)
            assert got.dtype == ref.dtype == np.uint32 and got.tolist() == ref.tolist(), (words.size, k, num_perm)


def test_a_page_with_a_near_duplicate_is_judged_again_without_it():
    """a.html and a-print.html show the article, the copy with an editor's note: they are near
    duplicates (main texts of 5-word shingles mostly shared), so each is judged again with the
    other left out of its candidates and of the site's counts, and the rows say so."""
    records = [capture(f"https://fruit.example/{p}.html", page_html(p), k, "2024-01-01T00:00:00Z")
               for k, p in enumerate(PAGES)]
    long_a = page_html("a").replace("<p>They are harvested in autumn.</p>",
                                    "<p>They are harvested in autumn.</p><p>" + text(80, seed=21) + "</p>")
    records[0] = capture("https://fruit.example/a.html", long_a, 0, "2024-01-01T00:00:00Z")
    records.append(capture("https://fruit.example/a-print.html",
                           long_a.replace("<h2>Apples</h2>", "<h2>Apples</h2><p>Updated.</p>"), 9,
                           "2024-01-01T00:00:00Z"))
    rows = {r["url"]: r for r in site_rows(records)}
    a, copy = rows["https://fruit.example/a.html"], rows["https://fruit.example/a-print.html"]
    note = "judged again with its duplicates left out of the site: 1"
    assert note in a["notes"] and note in copy["notes"]
    assert "https://fruit.example/a-print.html" not in (a["template_candidate_urls"] or [])
    assert "Apples grow on trees in orchards." in a["main_text"]
    assert (copy["duplicate_of"], copy["duplicate_kind"]) == ("https://fruit.example/a.html", "near")
    assert all(note not in rows[f"https://fruit.example/{p}.html"]["notes"] for p in PAGES[1:])


def test_content_hash_is_the_blake2b_of_the_little_endian_words():
    import hashlib
    words = word_hashes("one Two three, four five six seven")
    for array in (words, words[::2], words.astype(">u8"), words[::-1]):
        expected = hashlib.blake2b(array.astype("<u8").tobytes(), digest_size=8).hexdigest()
        assert content_hash(array) == expected


def _signature_family(rng, num_perm):
    """Signatures built by hand around two bases: copies, copies with values changed in chosen
    bands, and unrelated ones, so that pairs share whole bands or not, and agree above or below
    the threshold."""
    base = [rng.integers(0, 1 << 32, num_perm, dtype=np.uint32) for _ in range(2)]
    out = []
    for k in range(24):
        s = base[k % 2].copy()
        kind = k % 6
        if kind == 1:       # one value changed in every band but the first: shares band 0 only
            s[4::4] += np.uint32(1 + k)
        elif kind == 2:     # one value changed in every band: agrees in 3/4 of its values, shares no band
            s[::4] += np.uint32(1 + k)
        elif kind == 3:     # half the values new: shares the first half's bands, below the threshold
            s[num_perm // 2:] = rng.integers(0, 1 << 32, num_perm - num_perm // 2, dtype=np.uint32)
        elif kind == 4:     # unrelated
            s = rng.integers(0, 1 << 32, num_perm, dtype=np.uint32)
        elif kind == 5:     # a few values changed: a near duplicate
            s[rng.choice(num_perm, max(1, num_perm // 16), replace=False)] ^= np.uint32(0xFFFF)
        out.append(s)
    return out


def test_compiled_near_pairs_equal_the_reference():
    """transforms/_text.c near_pairs against the numpy LSH: copies, pairs sharing one band above
    and below the threshold, pairs agreeing in 3/4 of their values on no band, unrelated pages,
    keys that are not 0..n-1, a num_perm that leaves a partial band, and one or no signature."""
    from sitestrip.transforms.duplicates import _near_pairs
    require_built("_text")
    rng = np.random.default_rng(11)
    for num_perm, threshold in ((64, 0.75), (64, 0.5), (8, 0.75), (10, 0.5), (1024, 0.9)):
        params = DuplicateParams(enabled=True, num_perm=num_perm, near_threshold=threshold)
        family = _signature_family(rng, num_perm)
        keys = rng.permutation(np.arange(100, 100 + 3 * len(family), 3)).tolist()
        for signatures in ({key: s for key, s in zip(keys, family)}, {5: family[0]}, {},
                           {key: family[0] for key in keys[:6]}):
            got = _near_pairs(signatures, params, compiled=True)
            assert got == _near_pairs(signatures, params, compiled=False), (num_perm, threshold)
            assert all(p < q for p, q in got) and got == sorted(got)
    # By hand: 0 and 1 are copies, 2 shares only the first band of 0 (and agrees in 61 of 64), 3
    # agrees with 0 in 48 values on no band (no candidate), 4 shares the first band below the threshold.
    base = np.arange(64, dtype=np.uint32)
    one_band = base.copy()
    one_band[[4, 20, 40]] += 2000
    no_band = base.copy()
    no_band[::4] += 1000
    below = base.copy()
    below[4:] += 1000
    signatures = {0: base, 1: base.copy(), 2: one_band, 3: no_band, 4: below}
    for compiled in (True, False):
        assert _near_pairs(signatures, PARAMS, compiled=compiled) == [(0, 1), (0, 2), (1, 2)]
