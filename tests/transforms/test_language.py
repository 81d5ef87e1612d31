"""Language of main_text (transforms/language.py): short texts in several scripts, mixed texts,
the bounded prefix, texts without language, and no network."""
import socket

import pytest

from sitestrip.transforms import language
from sitestrip.transforms.language import identify_language, text_prefix


@pytest.mark.parametrize("text, code", [
    ("Das Wetter ist heute schön.", "de"),
    ("Il pleut encore à Paris ce matin.", "fr"),
    ("La reunión empieza a las diez.", "es"),
    ("A chuva continua em Lisboa hoje.", "pt"),
    ("Het regent vandaag in Amsterdam.", "nl"),
    ("Bugün İstanbul'da yağmur yağıyor.", "tr"),
    ("Сегодня идёт дождь.", "ru"),
    ("今日は雨が降っています。", "ja"),
    ("오늘은 비가 옵니다.", "ko"),
    ("今天下雨了。", "zh"),
    ("The meeting starts at ten.", "en"),
])
def test_short_texts(text, code):
    """One short sentence (18 to 34 characters) per language, six scripts."""
    got, score = identify_language(text)
    assert got == code and 0.5 < score <= 1.0


def test_mixed_text_is_the_language_of_most_of_it():
    """A German paragraph with an English call to action at its end is German; the score of a
    clean text is higher than that of the mixed one."""
    german = "Dies ist ein langer deutscher Absatz über das Wetter in Berlin, der ziemlich viele Wörter enthält."
    mixed, mixed_score = identify_language(german + " Click here to subscribe to our newsletter.")
    clean, clean_score = identify_language(german)
    assert mixed == clean == "de" and mixed_score <= clean_score


def test_only_a_bounded_prefix_is_read():
    """600 characters of French, then English: with 400 characters read the text is French;
    read whole, the English (three times as long) wins."""
    french = ("Le chat dort sur le canapé pendant que la pluie tombe sur la ville. " * 9)[:600]
    english = "The dog runs across the garden while the sun shines over the hills. " * 27
    assert identify_language(french + english, chars=400)[0] == "fr"
    assert identify_language(french + english, chars=100_000)[0] == "en"


def test_prefix_cuts_at_a_word():
    assert text_prefix("alpha beta gamma", 12) == "alpha beta"
    assert text_prefix("alpha\nbeta gamma", 8) == "alpha"
    assert text_prefix("abcdefghij", 4) == "abcd"           # no boundary: cut in the word
    assert text_prefix("short", 100) == "short"


@pytest.mark.parametrize("text", ["", "   ", "12 345 6789", "!!! ??? ---", "→ ← ↑"])
def test_no_letter_no_language(text):
    assert identify_language(text) == (None, None)


def test_line_breaks_are_word_breaks():
    """main_text has one line per block; the identifier sees the same words either way."""
    assert identify_language("Das Wetter\nist heute\nschön.") == identify_language("Das Wetter ist heute schön.")


@pytest.mark.parametrize("compiled", [True, False])
def test_the_packaged_model_loads_and_runs_without_network(monkeypatch, compiled):
    """A fresh load with every socket connection refused, compiled and through the libraries
    (the reference): the model comes from the wheel."""
    def refuse(*args, **kwargs):
        raise AssertionError("language identification tried the network")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(language, "_detector", None)
    monkeypatch.setattr(language, "_model", None)
    monkeypatch.setattr(language, "_COMPILED", compiled)
    assert identify_language("Il pleut encore à Paris ce matin.")[0] == "fr"
    assert (language._model is None) != compiled and (language._detector is None) == compiled
