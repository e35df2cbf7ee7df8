"""Term proximity: whether the query's words stand next to each other in a document, as they
do in the query. BM25 matches each word alone, so "parallel processing" scores a document
that says "parallel" in one sentence and "processing" in another as one that says "parallel
processing"; the ordered and unordered windows of Metzler and Croft's sequential dependence
model are the classic remedy. :class:`ProximityScorer` is its unordered window of two, scored
like BM25 with background idf, so it depends on the (query, document) pair alone."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import pairwise
from numbers import Real
from typing import Any

import numpy as np

from ..text.analysis import BY_LANGUAGE, Analyzer, TermBatch
from ..text.language import BackgroundFrequencies
from .lexical import LexicalScorer, check_bm25, length_norm, own_analyzer, saturated_tf

__all__ = ["ProximityScorer", "proximity_from_batch", "query_pairs"]


def query_pairs(terms: Sequence[str]) -> list[tuple[str, str]]:
    """The distinct pairs of different terms next to each other in ``terms`` (a query's
    terms, stopwords already dropped), each pair once whatever its order, sorted."""
    pairs = {tuple(sorted((a, c))) for a, c in pairwise(terms) if a != c}
    return sorted(pairs)  # type: ignore[arg-type]


def proximity_from_batch(
    batch: TermBatch,
    query_terms: Sequence[str],
    *,
    idf: Mapping[str, float],
    k1: float = 0.9,
    b: float = 0.4,
    avgdl: float = 100.0,
    query_normalized: float = 0.0,
) -> np.ndarray:
    """BM25 over the query's pairs of adjacent terms (:func:`query_pairs`) for every document
    of ``batch``: a pair's frequency in a document is how often its two terms stand next to
    each other there, in either order (stopwords skipped, as in the query); its weight is
    the smaller idf of its two terms (``idf``: term -> idf). ``query_normalized``: divide by
    the most any document could score raised to this power (0: not at all). A query with
    fewer than two distinct terms scores 0 everywhere."""
    n = batch.n_docs
    pairs = query_pairs(query_terms)
    if n == 0 or not pairs:
        return np.zeros(n)
    kept = batch.term_ids >= 0
    terms, docs = batch.term_ids[kept], batch.doc_idx[kept]
    left, right = terms[:-1], terms[1:]
    same_doc = docs[:-1] == docs[1:]
    width = batch.width
    tf = np.zeros((n, len(pairs)))
    for j, (a, c) in enumerate(pairs):
        ia, ic = batch.vocab.get(a, width), batch.vocab.get(c, width)
        if ia >= width or ic >= width:
            continue  # a term no document of the batch has
        hit = same_doc & (((left == ia) & (right == ic)) | ((left == ic) & (right == ia)))
        tf[:, j] = np.bincount(docs[:-1][hit], minlength=n)
    weights = np.array([min(idf.get(a, 0.0), idf.get(c, 0.0)) for a, c in pairs])
    scores = saturated_tf(tf, length_norm(batch.lengths, avgdl, k1, b)[:, None], k1) @ weights
    ceiling = float(weights.sum()) * (k1 + 1.0)
    if query_normalized and ceiling > 0:
        scores = scores / ceiling**query_normalized
    return scores


class ProximityScorer(LexicalScorer):
    """How often the query's adjacent terms stand next to each other in each candidate,
    scored like BM25 (:func:`proximity_from_batch`) with idf from a general word-frequency
    table of ``language`` (extra ``lexical``) and a fixed average length ``avgdl``, so a
    document's score depends on the query and the document alone. Scores are >= 0; a
    one-word query scores 0. The default ``hybrid`` fuses it beside BM25."""

    def __init__(
        self,
        *,
        k1: float = 0.9,
        b: float = 0.4,
        avgdl: float = 100.0,
        query_normalized: float = 0.0,
        analyzer: Analyzer | None = None,
        language: str = "en",
        lowercase: bool = True,
        stopwords: str | Iterable[str] | None = BY_LANGUAGE,
        stemmer: str | Callable[[str], str] | None = BY_LANGUAGE,
        name: str = "proximity",
    ) -> None:
        check_bm25(k1, b, avgdl)
        if not (isinstance(query_normalized, Real) and 0.0 <= query_normalized <= 1.0):
            raise ValueError(f"query_normalized must be in [0, 1], got {query_normalized!r}")
        self.k1, self.b, self.avgdl, self.name = float(k1), float(b), float(avgdl), name
        self.query_normalized = float(query_normalized)
        self.analyzer = own_analyzer(
            analyzer, language=language, lowercase=lowercase, stopwords=stopwords, stemmer=stemmer
        )
        self.idf = BackgroundFrequencies(self.analyzer.language)

    @property
    def score_scale(self) -> str:
        """``unit`` when fully query-normalised (scores in [0, 1], each from its document
        alone, as :class:`~rerankit.scorers.lexical.BM25Scorer`'s); else ``relative``."""
        return "unit" if self.query_normalized == 1 else "relative"

    def score_texts(self, query: str, texts: Sequence[str]) -> np.ndarray:
        terms, surfaces = self.analyzer.query_terms(query)
        distinct = list(surfaces)
        idf: Any = dict(
            zip(distinct, self.idf.idf(distinct, [surfaces[t] for t in distinct]), strict=True)
        )
        return proximity_from_batch(
            self.analyzer.analyze(texts),
            terms,
            idf=idf,
            k1=self.k1,
            b=self.b,
            avgdl=self.avgdl,
            query_normalized=self.query_normalized,
        )
