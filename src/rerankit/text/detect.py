"""What language a query is in, as far as rerankit needs to know it to warn: the script
decides it for most non-Latin scripts (kana: Japanese, Hangul: Korean, Han alone: Chinese,
...), and for Latin-script text a few of the language's commonest words must outnumber the
English ones. Both are cheap and conservative: they answer None rather than guess, and a
query needs clear evidence (two of a language's own common words, more than of any other
language and of English) before it is called anything but English. A language's own
letters (ä, ö, ü, ß; ç, è, ê; ñ; ã, õ; ...) and French or Italian elision (``l'``, ``qu'``)
count as evidence too, once each, so a short query with one common word and an accent is
told; a single word is never enough."""

from __future__ import annotations

import re
from typing import NamedTuple

from .language import non_latin_share

__all__ = [
    "SCRIPT_LANGUAGES",
    "Guess",
    "differs",
    "guess_language",
    "latin_language",
    "script_language",
]


class Guess(NamedTuple):
    """A language guessed for a text: its ISO 639-1 ``code``, its English ``name``, and
    whether the code is only an example (``example``: a script several languages write,
    such as Cyrillic, says ``e.g. ru``)."""

    code: str
    name: str
    example: bool = False
    #: another language the script may be just as well (Han alone: Japanese kanji)
    also: str | None = None

    def __str__(self) -> str:
        if self.example:
            return f"{self.name}: e.g. {self.code}"
        return f"{self.name}: {self.code}" + (f" or {self.also}" if self.also else "")


# (name, character class, guess); kana and Hangul are looked for before Han, which
# Japanese and Korean text may also hold
_SCRIPTS = (
    ("kana", "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f", Guess("ja", "Japanese")),
    ("Hangul", "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f", Guess("ko", "Korean")),
    # Han alone: Chinese, or Japanese written in kanji only (返品), which no script tells
    (
        "Han",
        "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff",
        Guess("zh", "Chinese or Japanese", also="ja"),
    ),
    ("Cyrillic", "\u0400-\u052f", Guess("ru", "Cyrillic script", True)),
    ("Arabic", "\u0600-\u06ff\u0750-\u077f", Guess("ar", "Arabic script", True)),
    ("Greek", "\u0370-\u03ff\u1f00-\u1fff", Guess("el", "Greek")),
    ("Hebrew", "\u0590-\u05ff", Guess("he", "Hebrew script", True)),
    ("Devanagari", "\u0900-\u097f", Guess("hi", "Devanagari script", True)),
    ("Thai", "\u0e00-\u0e7f", Guess("th", "Thai")),
)
#: the languages that write the script each guess of :func:`script_language` stands for
SCRIPT_LANGUAGES = {
    "ja": ("ja",),
    "ko": ("ko",),
    "zh": ("zh", "ja"),
    "ru": tuple("ru uk be bg mk sr kk ky mn tg tt ba cv ce os ab av kv".split()),
    "ar": tuple("ar fa ur ps ug sd ku ks".split()),
    "el": ("el",),
    "he": ("he", "yi"),
    "hi": ("hi", "mr", "ne", "sa"),
    "th": ("th",),
}
_SCRIPT_CHARS = tuple((re.compile(f"[{chars}]"), guess) for _, chars, guess in _SCRIPTS)


def script_language(text: str) -> Guess | None:
    """The language the script of ``text``'s letters says, or None (Latin script, or a
    script not known here). Kana anywhere makes it Japanese, Hangul Korean; otherwise the
    script with the most letters decides."""
    if text.isascii():
        return None
    counts = [(len(pattern.findall(text)), guess) for pattern, guess in _SCRIPT_CHARS]
    if counts[0][0]:  # kana: Japanese, whatever Han it also has
        return counts[0][1]
    if counts[1][0]:
        return counts[1][1]
    n, guess = max(counts[2:], key=lambda c: c[0])
    return guess if n else None


# Common words of each language that are not English words too (no "die", "was", "in",
# "an", "so", "no", "me", "per", "van", "son", "comment", one-letter words); those
# several of these languages share count for each of them
_WORDS = {
    "de": """der und ist nicht mit ein eine einer einen eines einem dem das wie ich sie auf für
        von sich auch werden wird wurde sind oder bei nach kann können wenn aus über noch dass
        welche welcher welches warum wann wer mein meine ihr ihre uns zum zur vom beim wir
        gibt muss soll habe haben ohne durch unter zwischen""",
    "fr": """le les des est et une du dans pour pas qui que sur au aux avec ce cette ces sont
        mais ou où je vous nous il elle ils elles pourquoi quand quel quelle quels leur mon ma
        mes être sans peut faire entre se de la un""",
    "es": """el los las del es por para con una su sus al lo como más pero qué cómo cuál
        cuándo dónde este esta estos estas hay puedo mi tiene entre se de la un en""",
    "it": """il gli della delle dei degli di che è una con non sono nel nella al alla come
        perché quando dove cosa questo questa anche più ma mio se la un""",
    "pt": """os do da dos das em um uma não para com por mais como que é ao na nas nos seu
        sua onde quando porque você isso este esta entre se""",
    "nl": """het een niet met voor zijn dat hoe wat waarom wanneer ik naar bij ook worden kan
        mijn er om uit aan de en""",
}
_ENGLISH = set(
    """the of and to in is for on with that by as are what how does do be this it from or
    was which why when who can not have has at my you your their there between were been
    its than into about after""".split()
)
_LANGUAGE_WORDS = {code: set(words.split()) for code, words in _WORDS.items()}
_NAMES = {
    "de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
    "nl": "Dutch",
}  # fmt: skip
#: letters each of these languages writes and English does not: any of them counts as one
#: of its words (once; é, shared, counts for each language writing it)
_LETTERS = {
    "de": "äöüß",
    "fr": "éèêëçœàâîïôûù",
    "es": "ñ¿¡áéíóú",
    "it": "àèéìòù",
    "pt": "ãõâêôçáéíóú",
}
#: French elision (l'étiquette, qu'il, j'ai), and Italian's l' and d' (l'ordine): one word
_ELISION = {
    "fr": re.compile(r"(?<![^\W\d_])(?:l|d|qu|n|j|c|s|m|t)['’](?=[^\W\d_])", re.I),
    "it": re.compile(r"(?<![^\W\d_])(?:l|d|dell|nell|all|un)['’](?=[^\W\d_])", re.I),
}
_WORD = re.compile(r"[^\W\d_]+")
#: the languages :func:`latin_language` tells apart, and English
LATIN_LANGUAGES = ("en", *_WORDS)


def latin_language(text: str, *, english: bool = False) -> Guess | None:
    """The language other than English that ``text``'s common words clearly say, or None:
    at least two pieces of evidence for it (distinct common words, its own letters, an
    elision), more than for any other language here and more than English common words.
    With ``english``, a text whose English common words clearly win (two or more, more
    than any other language's evidence) is called English (``en``) rather than None."""
    words = {w.lower() for w in _WORD.findall(text)}
    if len(words) < 2:
        return None
    n_english = len(words & _ENGLISH)
    lowered = text.lower()
    hits = []
    for code, common in _LANGUAGE_WORDS.items():
        n = len(words & common) + any(c in lowered for c in _LETTERS.get(code, ""))
        elision = _ELISION.get(code)
        n += bool(elision and elision.search(text))
        hits.append((n, code))
    hits.sort(reverse=True)
    (best, code), (second, _) = hits[0], hits[1]
    if best < 2 or best <= second or best <= n_english:
        if english and n_english >= 2 and n_english > best:
            return Guess("en", "English")
        return None
    return Guess(code, _NAMES[code])


def guess_language(text: str, *, english: bool = False) -> Guess | None:
    """The language of ``text``: as :func:`script_language` says it when most of its
    letters are in another script than Latin, else as :func:`latin_language` says it
    (English only with ``english``: else English text is None, as unclear text is)."""
    if non_latin_share(text) > 0.5:
        return script_language(text)
    return latin_language(text, english=english)


def differs(guess: Guess, language: str) -> bool:
    """Whether text of the language ``guess`` says is clearly not in ``language`` (the
    language a pipeline reads). A script guess differs when ``language`` does not write
    that script (Han alone is not told from Japanese, Cyrillic not from Ukrainian); a
    Latin-script one only when ``language`` is one :func:`latin_language` tells apart, or
    writes another script: Catalan text may look Spanish, Swedish German."""
    if guess.code == language or guess.also == language:
        return False
    if guess.code in SCRIPT_LANGUAGES:
        return language not in SCRIPT_LANGUAGES[guess.code]
    other_script = any(language in codes for codes in SCRIPT_LANGUAGES.values())
    return language in LATIN_LANGUAGES or other_script
