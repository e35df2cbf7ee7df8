"""Text analysis for lexical scoring: words split in one vectorised pass (see
:mod:`rerankit.text.words`), lowercased, stop words dropped and stemmed (Snowball by
language, CJK as bigrams), counted as terms per document (:class:`TermBatch`)."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from itertools import chain, count
from typing import Any, TypedDict

import numpy as np

from ..errors import MissingDependencyError
from .language import SNOWBALL, check_language, cjk_bigrams
from .words import WordTable, nfkc, split_batch, split_words
from .words import fold_accents as fold_word

__all__ = ["BY_LANGUAGE", "ENGLISH_STOPWORDS", "Analyzer", "AnalyzerOptions", "TermBatch"]

#: The stop set of Lucene's English analyzer (what Anserini's BM25 baselines use).
ENGLISH_STOPWORDS = frozenset(
    (
        "a an and are as at be but by for if in into is it no not of on or such that the "
        "their then there these they this to was will with"
    ).split()
)


class AnalyzerOptions(TypedDict, total=False):
    """The keyword options of :class:`Analyzer`, for a scorer that passes them on to the
    analyzer it builds (``**options: Unpack[AnalyzerOptions]``): a pipeline file's misspelt
    key is then named with these, as a scorer's own options are."""

    language: str
    lowercase: bool
    stopwords: str | Iterable[str] | None
    stemmer: str | Callable[[str], str] | None
    fold_accents: bool
    cache_words: int


def _resolve_stopwords(stopwords: str | Iterable[str] | None) -> frozenset[str]:
    if stopwords is None or stopwords is False:
        return frozenset()
    if isinstance(stopwords, str):
        if stopwords.lower() in ("en", "english"):
            return ENGLISH_STOPWORDS
        raise ValueError(f"unknown stopword list {stopwords!r}; use 'en', None or a set of words")
    return frozenset(w.lower() for w in stopwords)


def _resolve_stemmer(
    stemmer: str | Callable[[str], str] | None,
) -> Callable[[list[str]], list[str]] | None:
    if stemmer is None or stemmer is False:
        return None
    if callable(stemmer):
        return lambda words: [stemmer(w) for w in words]
    try:
        import Stemmer  # PyStemmer
    except ImportError as exc:  # pragma: no cover - PyStemmer is a core dependency
        raise MissingDependencyError(
            "stemming needs PyStemmer: pip install PyStemmer (or pass stemmer=None)"
        ) from exc
    try:
        snowball = Stemmer.Stemmer(stemmer)
    except KeyError as exc:
        raise ValueError(
            f"unknown stemmer language {stemmer!r}; PyStemmer knows "
            f"{', '.join(Stemmer.algorithms())}"
        ) from exc
    # Each batch stems its distinct words once; PyStemmer's own cache only adds overhead
    # (it thrashes on vocabularies larger than its size and was 4x slower here).
    snowball.maxCacheSize = 0
    return snowball.stemWords


class TermBatch:
    """A tokenised batch: flat term ids with the document each token came from.

    A term id of -1 marks a dropped word (a stopword), left in place to save a copy;
    ``lengths`` counts only the kept terms.
    """

    def __init__(
        self,
        term_ids: np.ndarray,
        doc_idx: np.ndarray,
        lengths: np.ndarray,
        vocab: dict[str, int],
        width: int | None = None,
    ) -> None:
        self.term_ids = term_ids
        self.doc_idx = doc_idx
        self.lengths = lengths
        self.vocab = vocab  # term -> id; may be shared with (and grown by) later batches
        self._width = max(len(vocab) if width is None else width, 1)  # ids are below this

    @property
    def n_docs(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def width(self) -> int:
        """Every term id of this batch is below this (later batches may grow ``vocab``)."""
        return self._width

    @cached_property
    def distinct_pairs(self) -> np.ndarray:
        """Sorted unique ``doc * |vocab| + term`` codes (each term once per document)."""
        kept = self.term_ids >= 0
        return np.unique(self.doc_idx[kept] * self._width + self.term_ids[kept])

    def document_frequencies(self) -> tuple[np.ndarray, np.ndarray]:
        """``(term ids, document frequencies)`` of the terms present in the batch."""
        return np.unique(self.distinct_pairs % self._width, return_counts=True)

    def distinct_terms_per_doc(self) -> np.ndarray:
        return np.bincount(self.distinct_pairs // self._width, minlength=self.n_docs)

    def query_tf(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Term frequencies of the query's terms: ``(tf[n_docs, q], term ids, query counts)``.
        Query terms absent from every document of the batch are dropped. Columns follow the
        terms' alphabetical order, not their ids: ids depend on which texts a shared vocabulary
        met first, and a sum over columns must round the same way in every process (a batch
        worker against the local run), or exactly tied documents could swap places."""
        counts = Counter(t for t in terms if self.vocab.get(t, self._width) < self._width)
        ordered = sorted(counts)
        qids = np.array([self.vocab[t] for t in ordered], dtype=np.int64)
        qcounts = np.array([counts[t] for t in ordered], dtype=np.int64)
        tf = np.zeros((self.n_docs, qids.shape[0]))
        for j, qid in enumerate(qids.tolist()):  # q is small: one vectorised pass per term
            tf[:, j] = np.bincount(self.doc_idx[self.term_ids == qid], minlength=self.n_docs)
        present = tf.any(axis=0)
        return tf[:, present], qids[present], qcounts[present]


BY_LANGUAGE: Any = "language"  # stopwords / stemmer chosen by the analyzer's language


class Analyzer:
    """Text to terms: split into words, optionally lowercase, drop stopwords, stem.

    ``language`` (an ISO 639-1 code, default ``"en"``) picks the defaults: English uses
    Lucene's English stopwords and the Snowball English stemmer; other languages with a
    Snowball stemmer (``de``, ``fr``, ``es``, ``ru``, ... see ``SNOWBALL``) use it without
    stopwords; others (``zh``, ``ja``, ``ko``, ...) neither. ``stopwords``: ``"en"``,
    ``None``, or your own words; ``stemmer``: a Snowball algorithm name, ``None``, or a
    callable ``word -> stem``; either overrides the language's choice. Stopwords are matched
    before stemming. Words are matched in NFKC, case-folded (see
    :func:`~rerankit.text.words.matching_form`): decomposed accents, full-width Latin and
    half-width kana match their usual forms; the texts themselves are never changed.
    ``fold_accents`` (by default on for every language but English) also removes the
    accents of Latin letters before stopwords and stemming (see
    :func:`~rerankit.text.words.fold_accents`: ``etiquette`` matches ``étiquette``); the
    query's surface words keep theirs for word-frequency lookups. Runs
    of Chinese, Japanese or Korean characters always become overlapping bigrams (a text in
    those scripts has no spaces to split on).

    Batches are split and looked up with numpy (see :mod:`rerankit.text.words`); the
    analyzer keeps a table of the words it has met (up to ``cache_words`` distinct words,
    then it starts afresh), so stopword matching and stemming run once per new word, not
    once per batch.
    ``cache_words=0`` selects the plain per-document path; both give the same terms.
    """

    def __init__(
        self,
        *,
        language: str = "en",
        lowercase: bool = True,
        stopwords: str | Iterable[str] | None = BY_LANGUAGE,
        stemmer: str | Callable[[str], str] | None = BY_LANGUAGE,
        fold_accents: bool = BY_LANGUAGE,
        cache_words: int = 500_000,
    ) -> None:
        if cache_words < 0:
            raise ValueError(f"cache_words must be >= 0, got {cache_words}")
        self.language = check_language(language)
        if stopwords is BY_LANGUAGE:
            stopwords = "en" if self.language == "en" else None
        if stemmer is BY_LANGUAGE:
            stemmer = SNOWBALL.get(self.language)
        if fold_accents is BY_LANGUAGE:
            fold_accents = self.language != "en"
        if not isinstance(fold_accents, bool):
            raise ValueError(f"fold_accents must be true or false, got {fold_accents!r}")
        self.lowercase = lowercase
        self.fold_accents = fold_accents
        self.stopwords = _resolve_stopwords(stopwords)
        if fold_accents:  # a stopword typed with or without its accents drops both
            self.stopwords = frozenset(map(fold_word, self.stopwords))
        self._stem = _resolve_stemmer(stemmer)
        self.cache_words = cache_words
        self._lock = threading.Lock()
        self._reset_cache()

    def _reset_cache(self) -> None:
        self._table = WordTable()
        self._vocab: dict[str, int] = {}  # a new dict: batches already made keep theirs

    def _folded(self, words: list[str]) -> list[str]:
        return [fold_word(w) for w in words] if self.fold_accents else words

    def _words(self, text: str) -> list[str]:
        """The text's words but stopwords, as written (accents kept)."""
        words = split_words(cjk_bigrams([nfkc(text)]), lowercase=self.lowercase)[0]
        folded = self._folded(words)
        return [w for w, f in zip(words, folded, strict=True) if f not in self.stopwords]

    def _to_terms(self, words: list[str]) -> list[str]:
        """Terms of words that are not stopwords: accents folded (when on), stemmed."""
        folded = self._folded(words)
        return self._stem(folded) if self._stem else folded

    def terms(self, text: str) -> list[str]:
        """The terms of one text, in order, repeats kept."""
        return self._to_terms(self._words(text))

    def query_terms(self, text: str) -> tuple[list[str], dict[str, set[str]]]:
        """:meth:`terms`, and for each term the surface words that became it (as written,
        accents kept: what a word-frequency table looks up)."""
        words = self._words(text)
        terms = self._to_terms(words)
        surfaces: dict[str, set[str]] = {}
        for term, word in zip(terms, words, strict=True):
            surfaces.setdefault(term, set()).add(word)
        return terms, surfaces

    def _term_ids(self, surfaces: list[str], vocab: dict[str, int]) -> np.ndarray:
        """Term id of each distinct surface word (-1 for a stopword), growing ``vocab``."""
        ids = np.full(len(surfaces), -1, dtype=np.int64)
        folded = self._folded(surfaces)
        kept_pos = [i for i, w in enumerate(folded) if w not in self.stopwords]
        kept = [folded[i] for i in kept_pos]
        stems = self._stem(kept) if self._stem else kept
        ids[kept_pos] = [vocab.setdefault(t, len(vocab)) for t in stems]
        return ids

    def analyze(self, texts: Sequence[str]) -> TermBatch:
        """Tokenise a batch into flat term ids."""
        texts = cjk_bigrams([nfkc(t) for t in texts])  # NFKC first: half-width kana are CJK
        if self.cache_words:
            words = split_batch(texts, self.lowercase)
            if words is not None:
                with self._lock:
                    if self._table.size > self.cache_words:
                        self._reset_cache()
                    vocab = self._vocab
                    try:
                        slots, new_slots, first = self._table.lookup_or_insert(words.hashes)
                        if new_slots.shape[0]:
                            new_ids = self._term_ids(words.strings(first), vocab)
                            self._table.values[new_slots] = new_ids
                    except BaseException:
                        self._reset_cache()  # never keep words whose ids were not set
                        raise
                    term_ids = self._table.values[slots]
                    width = len(vocab)
                kept = (term_ids >= 0).view(np.int8)
                lengths = np.bincount(words.doc, weights=kept, minlength=len(texts))
                return TermBatch(term_ids, words.doc, lengths.astype(np.int64), vocab, width)
        return self._analyze_exact(texts)

    def _analyze_exact(self, texts: Sequence[str]) -> TermBatch:
        """Per-document splitting with a vocabulary local to the batch."""
        tokens = split_words(texts, lowercase=self.lowercase)
        counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(texts))
        doc_idx = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
        # One hashing pass: an unseen word gets the next id from the counter.
        surface_id: defaultdict[str, int] = defaultdict(count().__next__)
        flat = chain.from_iterable(tokens)
        sid = np.fromiter(map(surface_id.__getitem__, flat), dtype=np.int64, count=len(doc_idx))
        vocab: dict[str, int] = {}
        term_ids = self._term_ids(list(surface_id), vocab)[sid]
        keep = term_ids >= 0
        lengths = np.bincount(doc_idx[keep], minlength=len(texts))
        return TermBatch(term_ids[keep], doc_idx[keep], lengths, vocab)
