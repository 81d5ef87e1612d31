"""Property-based tests of the tokenizer (design §1) and of directory sequences
and hDistance (design §4), each property read off the docs/design.md text it cites.

URL normalization and ETDM have their own properties in test_urls.py and
test_etdm.py; the hand-derived thesis examples for design §4 are in test_candidates.py.
"""
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from sitestrip.transforms.candidates import directory_sequence, h_distance
from sitestrip.transforms.tokens import count_words, folded_words, words
from sitestrip.transforms.urls import normalize_url, site_key

# ---------------------------------------------------------------------------
# Tokenizer (design §1)

# Unicode names are an independent statement of design §1's "CJK ideograph /
# kana / hangul syllable": the tokenizer itself works from code point ranges.
_CJK_NAMES = ("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH", "HIRAGANA", "KATAKANA",
              "HALFWIDTH KATAKANA", "HANGUL SYLLABLE", "HENTAIGANA")


def _is_cjk(ch):
    return ch.isalnum() and unicodedata.name(ch, "").startswith(_CJK_NAMES)


def _is_mark(ch):
    return unicodedata.category(ch).startswith("M")


def reference_words(text):
    """design §1 spelt out one character at a time: letters/digits (Python's
    isalnum, which is what a regex \\w without "_" matches) form maximal runs,
    a CJK letter is a token by itself, and combining marks extend whatever
    token they follow (the tokens.py decision for Indic/Thai vowel signs and
    decomposed kana) and are dropped where no token is open."""
    out, current, cjk = [], None, False
    for ch in text:
        if _is_cjk(ch):
            if current is not None:
                out.append(current)
            current, cjk = ch, True
        elif ch.isalnum():
            if current is not None and not cjk:
                current += ch
            else:
                if current is not None:
                    out.append(current)
                current, cjk = ch, False
        elif _is_mark(ch) and current is not None:
            current += ch
        elif current is not None:
            out.append(current)
            current = None
    if current is not None:
        out.append(current)
    return out


# Random code points almost never land on a CJK letter, a combining mark or a
# character whose case folding is unusual, so those are mixed in on purpose.
_INTERESTING = [
    "a", "Z", "0", "9", "_", "-", ".", " ", "\n", "\t", "'", "é", "e\u0301", "ß", "ẞ", "İ", "ŉ",
    "\u0345", "Σ", "ς", "ﬀ", "K", "日", "本", "〇", "々", "か", "\u3099", "シ", "・", "゠", "ー",
    "ｶ", "ﾞ", "한", "\u1100", "\u1161", "हि", "\u094d", "ไ", "\u0e31", "١", "²", "Ⅻ", "①",
    "\U00020000", "\U0001B002", "\u3040", "\ud7a4", "\u0301", "\u200d",
]
_text = st.lists(st.one_of(st.sampled_from(_INTERESTING), st.characters()), max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(_text)
def test_words_are_the_spec_tokens(text):
    """design §1: a token is a maximal run of letters/digits; each CJK ideograph,
    kana or hangul syllable is one token. Compared against a character-by-
    character reading of that sentence, so maximality and "nothing word-like
    is lost" are both covered."""
    assert words(text) == reference_words(text)


@settings(max_examples=400, deadline=None)
@given(_text)
def test_each_token_is_a_run_or_one_cjk_letter(text):
    """design §1: tokens are non-empty; a CJK letter never shares its token with
    another letter; a token starts with a letter/digit and holds only
    letters/digits and the combining marks that continue it."""
    for token in words(text):
        assert token and token[0].isalnum()
        letters = [ch for ch in token if not _is_mark(ch)]
        assert all(ch.isalnum() for ch in letters)
        if _is_cjk(token[0]):
            assert len(letters) == 1
        else:
            assert not any(_is_cjk(ch) for ch in letters)


@settings(max_examples=400, deadline=None)
@given(_text)
def test_tokenizing_the_tokens_again_gives_them_back(text):
    """design §1: tokens are separated by anything that is not a letter/digit,
    so one space between them keeps them apart and changes none of them."""
    tokens = words(text)
    assert words(" ".join(tokens)) == tokens


@settings(max_examples=400, deadline=None)
@given(_text)
def test_counts_and_folding_agree_with_words(text):
    """design §1 (one tokenizer for the algorithms and the evaluation) and §9
    (evaluation compares the design §1 tokens case-folded): count_words is the number
    of words, folded_words their case folds, in order."""
    tokens = words(text)
    assert count_words(text) == len(tokens)
    assert folded_words(text) == [token.casefold() for token in tokens]


# ---------------------------------------------------------------------------
# Directory sequences and hDistance (design §4)

# Segments that URL normalization leaves as they are (no dot segments, no
# escapes), so a generated URL's directories are known without normalizing.
_segment = st.text(alphabet="abcXYZ019-_~", min_size=1, max_size=5)
_dirs = st.lists(_segment, max_size=5)
_few_dirs = st.lists(st.sampled_from(["a", "b", "C"]), max_size=4)
_site = st.sampled_from(["ex.com", "other.org", "sub.ex.com"])
_spelling = st.sampled_from(["http://{}", "https://www.{}", "HTTP://WWW.{}:80", "https://{}:443"])
_resource = st.sampled_from(["", "index.html", "page", "a.b.c", "X"])
_tail = st.sampled_from(["", "?q=1", "?next=/x/y/", "#top", "#/a/b/", "?a=/b/#c/d/"])


def _url(spelling, site, dirs, resource="", tail=""):
    return spelling.format(site) + "/" + "".join(f"{d}/" for d in dirs) + resource + tail


@settings(max_examples=300, deadline=None)
@given(_spelling, _site, _dirs, _resource, _tail)
def test_directory_sequence_is_site_then_directories(spelling, site, dirs, resource, tail):
    """design §4: host first (as its site key), then the path's directories; the
    last segment is a resource name unless the path ends in "/"; the query is
    ignored (and the fragment, which normalization drops)."""
    url = _url(spelling, site, dirs, resource, tail)
    assert directory_sequence(url) == (site_key(url), *dirs)
    assert site_key(url) == site


_any_url = st.one_of(
    st.builds(_url, _spelling, _site, _dirs, _resource, _tail),
    st.text(max_size=30).map(lambda t: "http://ex.com/" + t),
    st.text(max_size=30),
)


@settings(max_examples=400, deadline=None)
@given(_any_url)
def test_directory_sequence_depends_only_on_the_normalized_url(url):
    """design §4 reads the directory sequence of the URL as normalized (design §1 "URLs"):
    normalizing first changes nothing, and a parseable URL starts with its
    site key."""
    normalized = normalize_url(url)
    if normalized is None:
        return
    assert directory_sequence(normalized) == directory_sequence(url)
    assert directory_sequence(url)[0] == site_key(url)


@settings(max_examples=300, deadline=None)
@given(_site, _dirs)
def test_scheme_less_strings_read_host_first(site, dirs):
    """design §4 / thesis notation: "host/dir/" without a scheme is read with
    its first word as the host."""
    bare = site + "/" + "".join(f"{d}/" for d in dirs)
    assert directory_sequence(bare) == directory_sequence("http://" + bare)


@settings(max_examples=300, deadline=None)
@given(_spelling, _spelling, _site, _dirs, st.lists(_segment, min_size=1, max_size=4),
       _resource, _resource, _tail)
def test_extension_by_k_is_plus_k_one_way_and_minus_k_the_other(
        spelling, spelling2, site, dirs, extra, resource, resource2, tail):
    """design §4: +k if h' extends h by k directories; -k if h extends h' by k.
    Resource names, queries and the spelling of the host do not count."""
    h = _url(spelling, site, dirs, resource, tail)
    h2 = _url(spelling2, site, dirs + extra, resource2)
    assert h_distance(h, h2) == len(extra)
    assert h_distance(h2, h) == -len(extra)


@settings(max_examples=400, deadline=None)
@given(_spelling, _spelling, _few_dirs, _few_dirs, _resource, _resource)
def test_zero_exactly_for_the_same_directory_sequence(spelling, spelling2, p, q, r, r2):
    """design §4: 0 if equal. Every other case is nonzero on one site: an
    extension is +k, k ≥ 1, and the rest is minus what h has beyond the shared
    prefix, which is at least one directory when h is not a prefix of h'."""
    h, h2 = _url(spelling, "ex.com", p, r), _url(spelling2, "ex.com", q, r2)
    same = directory_sequence(h) == directory_sequence(h2)
    assert (h_distance(h, h2) == 0) == same
    assert (h_distance(h2, h) == 0) == same


@settings(max_examples=400, deadline=None)
@given(_few_dirs, _few_dirs, _resource, _resource)
def test_h_distance_follows_the_shared_prefix(p, q, r, r2):
    """design §4 case by case, with the shared prefix counted directly: +k when h'
    extends h, otherwise minus the directories of h after the shared prefix
    (which covers both "h extends h'" and divergence). Between two diverging
    branches both directions are therefore negative."""
    h, h2 = _url("http://{}", "ex.com", p, r), _url("http://{}", "ex.com", q, r2)
    shared = 0
    while shared < min(len(p), len(q)) and p[shared] == q[shared]:
        shared += 1
    forward, backward = h_distance(h, h2), h_distance(h2, h)
    if shared == len(p):
        assert forward == len(q) - len(p)
    else:
        assert forward == -(len(p) - shared)
    if shared < len(p) and shared < len(q):
        assert forward < 0 and backward < 0


@settings(max_examples=300, deadline=None)
@given(_spelling, _spelling, st.sampled_from(["ex.com", "sub.ex.com", "ex.org", "x.com"]),
       st.sampled_from(["ex.com", "sub.ex.com", "ex.org", "x.com"]), _dirs, _dirs, _resource)
def test_different_first_words_give_minus_the_length_of_h(spelling, spelling2, site, site2,
                                                          p, q, resource):
    """design §4: −|h| if the first words (hosts, as site keys) differ, whatever
    the paths; |h| counts the host and the directories of h. A subdomain is
    another first word, and www. is not (same site key)."""
    h, h2 = _url(spelling, site, p, resource), _url(spelling2, site2, q)
    if site == site2:
        return
    assert h_distance(h, h2) == -len(directory_sequence(h)) == -(1 + len(p))
