"""Languages for lexical scoring: Snowball stemmers by language code, CJK bigrams, and the
term statistics BM25 can use instead of the candidates' own (a general word-frequency table
by language, or the document frequencies of a corpus the user has)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import said_for
from .frequencies import FrequencyTable, frequency_table

__all__ = [
    "CJK_LANGUAGES",
    "LANGUAGES",
    "MISTAKEN_CODES",
    "SNOWBALL",
    "BackgroundFrequencies",
    "CorpusStats",
    "check_language",
    "cjk_bigrams",
    "non_latin_share",
]

#: ISO 639-1 code -> PyStemmer's Snowball algorithm
SNOWBALL = {
    "ar": "arabic", "ca": "catalan", "da": "danish", "de": "german", "el": "greek",
    "en": "english", "es": "spanish", "eu": "basque", "fi": "finnish", "fr": "french",
    "ga": "irish", "hi": "hindi", "hu": "hungarian", "hy": "armenian", "id": "indonesian",
    "it": "italian", "lt": "lithuanian", "ne": "nepali", "nl": "dutch", "no": "norwegian",
    "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "sv": "swedish",
    "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip
#: languages written without spaces: their runs of characters become overlapping bigrams
CJK_LANGUAGES = ("zh", "ja", "ko")
#: the language codes ``language=`` takes: ISO 639-1's. Those of :data:`SNOWBALL` are
#: stemmed; every other is split into words without stemming (CJK into bigrams)
LANGUAGES = tuple(
    """aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu
    cv cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho
    hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv
    kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr
    nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq
    sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh
    yi yo za zh zu""".split()
)


#: codes and names often given for a language's ISO 639-1 code: country codes (jp, cn),
#: ISO 639-2 codes (deu, ger), withdrawn codes (iw, in) and English names (german)
MISTAKEN_CODES = {
    "jp": "ja", "jpn": "ja", "japanese": "ja", "cn": "zh", "zho": "zh", "chi": "zh",
    "chinese": "zh", "kor": "ko", "korean": "ko", "gr": "el", "dk": "da",
    "cz": "cs", "ua": "uk", "vn": "vi", "iw": "he", "in": "id", "ji": "yi", "eng": "en",
    "deu": "de", "ger": "de", "fra": "fr", "fre": "fr", "spa": "es", "ita": "it",
    "por": "pt", "nld": "nl", "dut": "nl", "rus": "ru", "ara": "ar",
    **{name: code for code, name in SNOWBALL.items()},
}  # fmt: skip

#: where a user of the command line is pointed for the codes taken
LANGUAGES_PAGE = "docs/documents.md, Languages, lists them"


def check_language(language: object) -> str:
    """``language`` as the analyzers read it (lower case), or a ``ValueError`` saying what
    is taken: an ISO 639-1 code (:data:`LANGUAGES`); ``"klingon"``, ``"xx"`` or
    ``"en-US"`` are refused rather than read as a language without stemming."""
    code = language.strip().lower() if isinstance(language, str) else None
    if code in LANGUAGES:
        return code
    hint = ""
    if code in MISTAKEN_CODES:  # jp, deu, german
        hint = f" (did you mean {MISTAKEN_CODES[code]!r}?)"
    elif code and code[:2] in LANGUAGES and not code[2:3].isalpha():  # en-US, pt_BR
        hint = f" (did you mean {code[:2]!r}?)"
    elif code and code[:2] in MISTAKEN_CODES and not code[2:3].isalpha():  # jp-JP
        hint = f" (did you mean {MISTAKEN_CODES[code[:2]]!r}?)"
    raise ValueError(
        f"unknown language {language!r}{hint}: give an ISO 639-1 code, such as en, de, fr "
        f"or zh ({said_for('rerankit.text.LANGUAGES lists them', LANGUAGES_PAGE)}); stemmed: "
        f"{', '.join(sorted(SNOWBALL))}"
    )


# Han, Hiragana, Katakana, Hangul (syllables and jamo), CJK compatibility ideographs
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff"
_CJK_RUN = re.compile(f"[{_CJK}]{{2,}}")
_CJK_CHAR = re.compile(f"[{_CJK}]")


def _bigrams(match: re.Match[str]) -> str:
    run = match.group(0)
    return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "


def cjk_bigrams(texts: Sequence[str]) -> list[str]:
    """Texts with every run of CJK characters written as its overlapping bigrams ("东京大学"
    -> "东京 京大 大学"), as Lucene's CJK analyzer indexes them; a lone character stays a
    unigram. Texts without CJK characters come back as they are (pure ASCII is skipped
    without a scan)."""
    return [
        t if t.isascii() or not _CJK_CHAR.search(t) else _CJK_RUN.sub(_bigrams, t) for t in texts
    ]


def non_latin_share(text: str) -> float:
    """The share of a text's letters outside the Latin script (0 for pure ASCII)."""
    if text.isascii():
        return 0.0
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    return sum(
        1 for c in letters if not ("a" <= c.lower() <= "z" or "\u00c0" <= c <= "\u024f")
    ) / len(letters)


@dataclass(frozen=True)
class CorpusStats:
    """Document frequencies of terms in a corpus (``df``, keyed by the analyzer's terms,
    i.e. stems) and its size. ``BM25Scorer(idf=CorpusStats(...))`` then scores candidates
    as BM25 over that corpus would; ``rerankit.eval``'s index gives them
    (``BM25Index.corpus_stats()``)."""

    df: Mapping[str, int]
    n_docs: int

    def __post_init__(self) -> None:
        if self.n_docs < 1:
            raise ValueError(f"n_docs must be >= 1, got {self.n_docs}")

    def idf(self, terms: Sequence[str], surfaces: Sequence[Iterable[str]]) -> np.ndarray:
        df = np.array([self.df.get(t, 0) for t in terms], dtype=np.float64)
        return np.log1p((self.n_docs - df + 0.5) / (df + 0.5))


class BackgroundFrequencies:
    """Term statistics from a general word-frequency table of a language (the ``wordfreq``
    package: Wikipedia, subtitles, news, books, web text; extra ``lexical``).

    A term's frequency is the summed frequency of the surface words it stands for (a stem's
    query words); its chance of occurring in a document of ``doc_length`` words is
    ``p = 1 - exp(-frequency * doc_length)``, and its idf is Lucene's over a collection of
    ``n_docs`` documents with ``df = n_docs * p``. Words the table does not know get the
    table's rarest frequency. The default ``doc_length`` (1000) was chosen with the texts-only
    hybrid on development queries (``benchmarks/experiments/hybrid_dev.py``).
    """

    def __init__(self, language: str = "en", *, doc_length: float = 1000.0, n_docs: float = 1e7):
        if doc_length <= 0 or n_docs < 1:
            raise ValueError("doc_length must be > 0 and n_docs >= 1")
        self.language, self.doc_length, self.n_docs = language, doc_length, n_docs

    def table(self) -> tuple[FrequencyTable, float]:
        """The word -> frequency table of the language (looked up with ``get``) and its
        rarest frequency: loaded once per process, and kept compact in the cache directory
        for the next (see :mod:`.frequencies`)."""
        table = frequency_table(self.language)
        return table, table.floor

    def fallback_note(self) -> str | None:
        """What to say when the language has no word-frequency table of its own and the
        nearest one's is read instead (``"xh"``: English's), or None."""
        used = self.table()[0].language
        if used is None or used == self.language:
            return None
        return (
            f"no word-frequency table for language {self.language!r}: its idf reads the "
            f"nearest language's table, {used!r}"
        )

    def frequency(self, words: Iterable[str]) -> float:
        table, floor = self.table()
        return sum(table.get(w, floor) for w in set(words)) or floor

    def idf(self, terms: Sequence[str], surfaces: Sequence[Iterable[str]]) -> np.ndarray:
        out = np.empty(len(terms))
        for i, words in enumerate(surfaces):
            p = -math.expm1(-self.frequency(words) * self.doc_length)
            df = self.n_docs * p
            out[i] = math.log1p((self.n_docs - df + 0.5) / (df + 0.5))
        return out
