"""Lexical scorers computed over the candidate set: BM25, Jaccard and their blend.

Statistics (document frequencies, average length) come from the candidates themselves, as a
reranker sees no corpus. Tokenising is the only step that touches each document in Python;
counting and scoring are vectorised numpy over the whole batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from .._threads import in_thread
from ..text.analysis import BY_LANGUAGE, ENGLISH_STOPWORDS, Analyzer, AnalyzerOptions, TermBatch
from ..text.language import BackgroundFrequencies, CorpusStats
from ..text.words import split_words
from ..types import Document
from .base import ScoreBatch

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "ENGLISH_STOPWORDS",
    "Analyzer",
    "BM25Scorer",
    "JaccardScorer",
    "TermBatch",
    "TextSimilarity",
    "split_words",
]


def lucene_idf(df: np.ndarray | float, n: int) -> np.ndarray:
    """Lucene's BM25 idf, ``log(1 + (N - df + 0.5) / (df + 0.5))``: never negative."""
    return np.log1p((n - np.asarray(df, dtype=np.float64) + 0.5) / (np.asarray(df) + 0.5))


def length_norm(lengths: np.ndarray, avgdl: float, k1: float, b: float) -> np.ndarray:
    """BM25's per-document ``k1 * (1 - b + b * length / avgdl)``."""
    return k1 * (1.0 - b + b * np.asarray(lengths, dtype=np.float64) / avgdl)


def saturated_tf(tf: np.ndarray, norm: np.ndarray, k1: float) -> np.ndarray:
    """BM25's term-frequency saturation ``tf * (k1 + 1) / (tf + norm)`` (0 where both are 0,
    as for an empty document with b = 1)."""
    denom = tf + norm
    return np.divide(tf * (k1 + 1.0), denom, out=np.zeros_like(denom * tf), where=denom > 0)


def bm25_from_batch(
    batch: TermBatch,
    query_terms: Sequence[str],
    *,
    k1: float = 1.5,
    b: float = 0.75,
    idf: str | Mapping[str, float] = "lucene",
    epsilon: float = 0.25,
    avgdl: float | None = None,
    query_normalized: bool | float = False,
) -> np.ndarray:
    """Okapi BM25 of every document in ``batch`` for ``query_terms`` (repeats count).

    ``idf``: ``"lucene"`` or ``"okapi"`` from the batch's own document frequencies, or a
    mapping of each query term to its idf (from a corpus or a word-frequency table).
    ``avgdl``: the average document length (in terms) for length normalisation; the batch's
    own mean when None. ``query_normalized``: divide by the most any document could score
    (every query term saturated, ``idf * (k1 + 1)`` per occurrence; with a mapping, all query
    terms count, with the batch's own idf those occurring in the batch), or by that ceiling
    raised to a power in (0, 1) when it is a number (a partial normalisation: long queries
    keep some of their larger scores)."""
    n = batch.n_docs
    tf, qids, qcounts = batch.query_tf(query_terms)
    if avgdl is None:
        avgdl = float(batch.lengths.mean()) if n else 0.0
    if n == 0 or qids.shape[0] == 0 or avgdl == 0.0:
        return np.zeros(n)
    if isinstance(idf, Mapping):
        by_id = {batch.vocab[t]: v for t, v in idf.items() if t in batch.vocab}
        idf_q = np.array([by_id[i] for i in qids.tolist()], dtype=np.float64)
    elif idf == "lucene":
        idf_q = lucene_idf((tf > 0).sum(axis=0), n)
    else:  # "okapi": rank_bm25's variant, negative idf floored at epsilon * mean idf
        present, df_all = batch.document_frequencies()
        idf_all = np.log(n - df_all + 0.5) - np.log(df_all + 0.5)
        floor = epsilon * np.sort(idf_all).mean()  # sorted: the same sum whatever the ids
        idf_all = np.where(idf_all < 0, floor, idf_all)
        idf_q = idf_all[np.searchsorted(present, qids)]  # query terms are all present
    norm = length_norm(batch.lengths, avgdl, k1, b)
    scores = saturated_tf(tf, norm[:, None], k1) @ (idf_q * qcounts)
    power = float(query_normalized)
    if power:
        if isinstance(idf, Mapping):
            ceiling = sum(idf.get(t, 0.0) for t in query_terms)
        else:
            ceiling = float(np.clip(idf_q, 0.0, None) @ qcounts)
        ceiling *= k1 + 1.0
        scores = scores / ceiling**power if ceiling > 0 else scores
    return scores


def jaccard_from_batch(batch: TermBatch, query_terms: Sequence[str]) -> np.ndarray:
    """|query terms ∩ document terms| / |query terms ∪ document terms| per document."""
    n = batch.n_docs
    q_distinct = len(set(query_terms))
    if n == 0 or q_distinct == 0:
        return np.zeros(n)
    tf, _, _ = batch.query_tf(query_terms)
    inter = (tf > 0).sum(axis=1).astype(np.float64)
    union = q_distinct + batch.distinct_terms_per_doc() - inter
    return np.divide(inter, union, out=np.zeros(n), where=union > 0)


class LexicalScorer:
    """A scorer that reads each candidate's text with an :class:`Analyzer` (its subclasses
    implement :meth:`score_texts`)."""

    name: str
    analyzer: Analyzer

    def _texts(self, docs: Sequence[Document]) -> list[str]:
        return [d.text for d in docs]

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        # CPU work runs on a worker thread: concurrent requests' event loop stays free
        return await in_thread(self.score_texts, query, self._texts(docs))

    def score_texts(self, query: str, texts: Sequence[str]) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


def check_bm25(k1: float, b: float, avgdl: float | None) -> None:
    """A ValueError naming the first of BM25's settings out of range (``avgdl`` None: the
    batch's own mean)."""
    if k1 < 0:
        raise ValueError(f"k1 must be >= 0, got {k1}")
    if avgdl is not None and not (isinstance(avgdl, Real) and 0 < avgdl < math.inf):
        raise ValueError(f"avgdl must be a positive number, got {avgdl!r}")
    if not 0.0 <= b <= 1.0:
        raise ValueError(f"b must be in [0, 1], got {b}")


def own_analyzer(analyzer: Analyzer | None, **options: Unpack[AnalyzerOptions]) -> Analyzer:
    """``analyzer``, or a new one built from ``options`` when it is None."""
    return analyzer if analyzer is not None else Analyzer(**options)


class BM25Scorer(LexicalScorer):
    """Okapi BM25 of each candidate; scores are >= 0 except with ``idf="okapi"``.

    Where the idf comes from (``idf``):

    * ``"lucene"`` (default): the candidates themselves, ``log(1 + (N - df + 0.5) / (df +
      0.5))``;
    * ``"okapi"``: the candidates, as ``rank_bm25``'s ``BM25Okapi`` (negative idf floored at
      ``epsilon`` times the mean idf);
    * ``"background"``: a general word-frequency table of ``language`` (see
      :class:`~rerankit.text.BackgroundFrequencies`; extra ``lexical``). Use it
      when the candidates came from a lexical search: they all contain the query's words,
      so their own document frequencies say little about which words matter;
    * a :class:`~rerankit.text.CorpusStats`: the document frequencies of your
      corpus.

    ``avgdl`` fixes the average document length (in analysed terms) used for length
    normalisation; by default it is the candidates' mean. ``query_normalized`` divides each
    score by the most any document could score for the query (the sum over its terms of
    ``idf * (k1 + 1)``), so scores lie in [0, 1) and are comparable across queries; a number
    between 0 and 1 divides by that ceiling raised to it instead (``0.5``: its square root).
    With ``avgdl`` fixed and an idf that does not come from the candidates (background or
    corpus statistics), a document's score depends only on the query and that document,
    not on the other candidates (``score_scale`` ``unit`` when fully query-normalised).

    When no query term occurs in any candidate (or the query has no terms), every score is 0
    and the batch carries a warning saying so.
    """

    @property
    def score_scale(self) -> str:
        """``unit`` when each score depends on its document alone (idf not from the
        candidates, ``avgdl`` fixed, ``query_normalized``); else ``relative``."""
        own = isinstance(self.idf, (CorpusStats, BackgroundFrequencies))
        return (
            "unit" if own and self.avgdl is not None and self.query_normalized == 1 else "relative"
        )

    def __init__(
        self,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        idf: str | CorpusStats | BackgroundFrequencies = "lucene",
        epsilon: float = 0.25,
        analyzer: Analyzer | None = None,
        language: str = "en",
        lowercase: bool = True,
        stopwords: str | Iterable[str] | None = BY_LANGUAGE,
        stemmer: str | Callable[[str], str] | None = BY_LANGUAGE,
        avgdl: float | None = None,
        query_normalized: bool | float = False,
        name: str = "bm25",
    ) -> None:
        check_bm25(k1, b, avgdl)
        if isinstance(idf, str) and idf == "background":
            idf = BackgroundFrequencies((analyzer.language if analyzer else language).lower())
        elif not isinstance(idf, (CorpusStats, BackgroundFrequencies)) and idf not in (
            "lucene",
            "okapi",
        ):
            raise ValueError(
                f"idf must be 'lucene', 'okapi', 'background' or CorpusStats, got {idf!r}"
            )
        self.k1, self.b, self.idf, self.epsilon, self.name = k1, b, idf, epsilon, name
        self.avgdl = None if avgdl is None else float(avgdl)
        if isinstance(query_normalized, bool):
            query_normalized = float(query_normalized)
        if not (isinstance(query_normalized, Real) and 0.0 <= query_normalized <= 1.0):
            raise ValueError(
                "query_normalized must be true, false or a number in [0, 1], got "
                f"{query_normalized!r}"
            )
        self.query_normalized = float(query_normalized)
        self.analyzer = own_analyzer(
            analyzer, language=language, lowercase=lowercase, stopwords=stopwords, stemmer=stemmer
        )

    def score_texts(self, query: str, texts: Sequence[str]) -> np.ndarray:
        return self.score_batch(query, texts).values

    def score_batch(self, query: str, texts: Sequence[str]) -> ScoreBatch:
        """Scores of ``texts``, with a warning when no query term occurs in any of them."""
        terms, surfaces = self.analyzer.query_terms(query)
        batch = self.analyzer.analyze(texts)
        idf: Any = self.idf
        if not isinstance(idf, str):
            distinct = list(surfaces)
            idf = dict(
                zip(distinct, idf.idf(distinct, [surfaces[t] for t in distinct]), strict=True)
            )
        values = bm25_from_batch(
            batch,
            terms,
            k1=self.k1,
            b=self.b,
            idf=idf,
            epsilon=self.epsilon,
            avgdl=self.avgdl,
            query_normalized=self.query_normalized,
        )

        warnings = []
        fallback = self.idf.fallback_note() if isinstance(self.idf, BackgroundFrequencies) else None
        if fallback:
            warnings.append(f"{self.name}: {fallback}")
        if texts and not values.any():
            what = (
                "the query has no terms" if not terms else "no query term occurs in any candidate"
            )
            warnings.append(
                f"{self.name}: {what} (language {self.analyzer.language!r}); every score is 0"
            )
        return ScoreBatch(values=values, warnings=warnings)

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        return await in_thread(self.score_batch, query, self._texts(docs))


class JaccardScorer(LexicalScorer):
    """Token-set overlap in [0, 1] (after the analyzer's stopwords and stemming); the
    :class:`AnalyzerOptions` build the analyzer when none is given."""

    score_scale = "unit"

    def __init__(
        self,
        *,
        analyzer: Analyzer | None = None,
        name: str = "jaccard",
        **options: Unpack[AnalyzerOptions],
    ) -> None:
        self.name = name
        self.analyzer = own_analyzer(analyzer, **options)

    def score_texts(self, query: str, texts: Sequence[str]) -> np.ndarray:
        return jaccard_from_batch(self.analyzer.analyze(texts), self.analyzer.terms(query))


class TextSimilarity(LexicalScorer):
    """Blend of BM25 and Jaccard in [0, 1]: ``(w_b * bm25 / max(bm25) + w_j * jaccard) /
    (w_b + w_j)``. BM25 is scaled by the best candidate's score, so a candidate sharing no
    term with the query scores 0. One tokenisation serves both parts; the
    :class:`AnalyzerOptions` build it when no ``analyzer`` is given."""

    def __init__(
        self,
        *,
        bm25_weight: float = 0.7,
        jaccard_weight: float = 0.3,
        k1: float = 1.5,
        b: float = 0.75,
        analyzer: Analyzer | None = None,
        name: str = "text",
        **options: Unpack[AnalyzerOptions],
    ) -> None:
        if bm25_weight < 0 or jaccard_weight < 0 or bm25_weight + jaccard_weight <= 0:
            raise ValueError("bm25_weight and jaccard_weight must be >= 0 and not both 0")
        self.bm25_weight, self.jaccard_weight = bm25_weight, jaccard_weight
        self.k1, self.b, self.name = k1, b, name
        self.analyzer = own_analyzer(analyzer, **options)

    def score_texts(self, query: str, texts: Sequence[str]) -> np.ndarray:
        batch = self.analyzer.analyze(texts)
        terms = self.analyzer.terms(query)
        bm25 = np.clip(bm25_from_batch(batch, terms, k1=self.k1, b=self.b), 0.0, None)
        top = bm25.max(initial=0.0)
        scaled = bm25 / top if top > 0 else bm25
        blend = self.bm25_weight * scaled + self.jaccard_weight * jaccard_from_batch(batch, terms)
        return blend / (self.bm25_weight + self.jaccard_weight)
