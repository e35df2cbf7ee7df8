"""Reading text: word splitting (:mod:`.words`), analyzers with stopwords and stemming
(:mod:`.analysis`), languages, scripts and word statistics (:mod:`.language`) and
passages (:mod:`.passages`). Every lexical scorer, ordering rule and first stage reads
text through here."""

from .analysis import BY_LANGUAGE, ENGLISH_STOPWORDS, Analyzer, TermBatch
from .language import (
    CJK_LANGUAGES,
    LANGUAGES,
    SNOWBALL,
    BackgroundFrequencies,
    CorpusStats,
    check_language,
    cjk_bigrams,
    non_latin_share,
)
from .passages import DEFAULT_MAX_PASSAGES, split_passages
from .words import WordTable, split_batch, split_words

__all__ = [
    "BY_LANGUAGE",
    "CJK_LANGUAGES",
    "DEFAULT_MAX_PASSAGES",
    "ENGLISH_STOPWORDS",
    "LANGUAGES",
    "SNOWBALL",
    "Analyzer",
    "BackgroundFrequencies",
    "CorpusStats",
    "TermBatch",
    "WordTable",
    "check_language",
    "cjk_bigrams",
    "non_latin_share",
    "split_batch",
    "split_passages",
    "split_words",
]
