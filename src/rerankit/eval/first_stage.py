"""The first stage of an evaluation: each query's candidates from BM25 over the whole
corpus (an inverted index in numpy, for datasets that ship no candidate run), from a TREC
run file or from JSON Lines candidates (your own retriever's output), and those candidates
as the documents a reranker takes."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from numbers import Real
from pathlib import Path
from typing import Any

import numpy as np

from .._jsonl import numbered_jsonl
from .._words import counted
from ..errors import InputError, keyword_flag
from ..scorers.lexical import length_norm, lucene_idf, saturated_tf
from ..text.analysis import Analyzer
from ..text.language import CorpusStats
from .data import Dataset, load_run
from .given import check_first_stage, given_candidates, source_name
from .qrels import read_qrels

__all__ = [
    "SOURCES",
    "BM25Index",
    "UncoveredQueries",
    "candidate_depth",
    "candidate_documents",
    "depth_label",
    "first_stage",
    "first_stage_label",
    "load_candidates",
    "ranked_queries",
]


logger = logging.getLogger(__name__)

#: the first stages named by a word; anything else is a file (a TREC run or JSON Lines)
SOURCES = ("auto", "bm25", "run")


class BM25Index:
    """Okapi BM25 with Lucene's idf over a fixed corpus (the same formula as
    :class:`~rerankit.scorers.BM25Scorer`, over an inverted index). Defaults ``k1=0.9, b=0.4`` are
    Anserini's, the usual BM25 baseline of BEIR and TREC tables."""

    def __init__(
        self,
        doc_ids: Sequence[str],
        texts: Sequence[str],
        *,
        k1: float = 0.9,
        b: float = 0.4,
        analyzer: Analyzer | None = None,
    ) -> None:
        if len(doc_ids) != len(texts):
            raise ValueError(f"{len(doc_ids)} ids for {len(texts)} texts")
        self.doc_ids = list(doc_ids)
        self.k1, self.b = k1, b
        self.analyzer = analyzer or Analyzer()
        batch = self.analyzer.analyze(texts)
        self.vocab = batch.vocab
        width = max(len(batch.vocab), 1)
        kept = batch.term_ids >= 0
        codes, tf = np.unique(
            batch.term_ids[kept] * len(texts) + batch.doc_idx[kept], return_counts=True
        )
        terms, self._docs = np.divmod(codes, len(texts))  # postings sorted by term, then doc
        self._tf = tf.astype(np.float64)
        self._indptr = np.concatenate(([0], np.cumsum(np.bincount(terms, minlength=width))))
        avgdl = float(batch.lengths.mean()) if len(texts) else 1.0
        self._norm = length_norm(batch.lengths, avgdl or 1.0, k1, b)

    def corpus_stats(self) -> CorpusStats:
        """The corpus's document frequencies, for ``BM25Scorer(idf=...)`` over candidates."""
        df = np.diff(self._indptr)
        return CorpusStats(
            {t: int(df[i]) for t, i in self.vocab.items() if i < df.shape[0]}, len(self.doc_ids)
        )

    def scores(self, query: str) -> np.ndarray:
        """BM25 of every document for ``query``."""
        n = len(self.doc_ids)
        out = np.zeros(n)
        for term in self.analyzer.terms(query):
            tid = self.vocab.get(term)
            if tid is None or tid + 1 >= len(self._indptr):
                continue
            lo, hi = self._indptr[tid], self._indptr[tid + 1]
            docs, tf = self._docs[lo:hi], self._tf[lo:hi]
            out[docs] += lucene_idf(hi - lo, n) * saturated_tf(tf, self._norm[docs], self.k1)
        return out

    def search(self, query: str, k: int = 100) -> list[str]:
        """The ids of the ``k`` best documents (ties: corpus order)."""
        s = self.scores(query)
        top = np.argsort(-s, kind="stable")[:k]
        return [self.doc_ids[i] for i in top if s[i] > 0]

    def run(self, queries: Mapping[str, str], k: int = 100) -> dict[str, list[str]]:
        """``search`` for every query: query id -> doc ids, best first."""
        return {qid: self.search(text, k) for qid, text in queries.items()}


def first_stage(
    data: Dataset,
    source: str | Mapping[str, Any] = "bm25",
    k: int = 100,
    *,
    note: Callable[[str], None] | None = None,
) -> dict[str, list[tuple[str, float]]]:
    """Each query's top ``k`` as ``(doc id, first-stage score)``, best first: BM25 over the
    corpus (``"bm25"``, Anserini's k1=0.9, b=0.4), the dataset's own run (``"run"``), the
    run when the dataset ships one and BM25 otherwise (``"auto"``), or the path of your
    retriever's output: a TREC run file, or JSON Lines candidates (``.jsonl``, see
    :func:`load_candidates`), or those candidates in memory: a mapping query id -> doc ids
    best first or ``(doc id, score)`` pairs (:func:`~.given.given_candidates`), read as a
    file is. A file's lines for queries not in the folder's queries.jsonl
    are skipped (it may rank other folders' queries too); one that ranks none of the
    split's queries is an error naming the split and the folder. Queries the first stage
    finds nothing for get an empty list. A
    document a file lists twice for one query is kept at its first place; a warning (logged,
    and given to ``note``) says how many."""
    if not isinstance(source, Mapping):  # a mapping's entries are checked as it is read
        check_first_stage(source)
    if source == "auto":
        source = "run" if data.run_scores is not None else "bm25"
    if source == "bm25":
        ids = list(data.corpus)
        index = BM25Index(ids, [data.text(i) for i in ids])
        out = {}
        for qid, text in data.queries.items():
            scores = index.scores(text)
            top = (-scores).argsort(kind="stable")[:k]  # ties: corpus order
            out[qid] = [(ids[i], float(scores[i])) for i in top if scores[i] > 0]
        return out
    if k < 1:
        raise InputError(f"k must be a positive integer, got {k}")
    if source == "run":
        if data.run_scores is None:
            use = keyword_flag("first_stage", "bm25")
            raise InputError(f"dataset {data.name!r} ships no run file; use {use}")
        ranked = data.run_scores
    else:
        ranked = _read(source, corpus=data.corpus, queries=data.query_ids)
        if not set(ranked) & set(data.queries):
            raise _uncovered(data, source_name(source), set(_read(source)))
    out = {qid: _once(ranked.get(qid, [])) for qid in data.queries}
    repeated = {qid: n for qid, (_, n) in out.items() if n}
    if repeated:
        example = next(iter(repeated))
        named = data.run_file if source == "run" else source_name(source)
        said = (
            f"{named}: {counted(sum(repeated.values()), 'candidate')} listed again for the "
            f"same query, in {counted(len(repeated), 'query', 'queries')} "
            f"(e.g. {repeated[example]} in query {example!r}): each document is ranked once, "
            "where it was listed first"
        )
        logger.warning("%s", said)
        if note is not None:
            note(said)
    return {qid: ranked_once[:k] for qid, (ranked_once, _) in out.items()}


def ranked_queries(source: str | Mapping[str, Any]) -> set[str]:
    """The query ids a first stage's file (JSON Lines candidates or a TREC run), or its
    candidates given in memory, ranks candidates for."""
    return set(_read(source))


def _read(source: str | Mapping[str, Any], **check: Any) -> dict[str, list[tuple[str, float]]]:
    """The file ``source`` (JSON Lines candidates or a TREC run), or the candidates given
    in memory, read with ``check``: ``corpus`` and ``queries``, as :func:`load_candidates`
    and :func:`load_run` take them."""
    if isinstance(source, Mapping):
        return given_candidates(source, **check)
    if _json_lines(Path(source)):
        return load_candidates(source, **check)
    return load_run(source, with_scores=True, **check)


def _json_lines(path: Path) -> bool:
    """Whether ``path`` holds JSON Lines candidates: named ``.jsonl``, or its first line that
    is not blank starts with ``{`` (a retriever's rows saved as ``.json`` or ``.txt``); a TREC
    run's lines start with a query id."""
    if path.suffix.lower() == ".jsonl":
        return True
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return next((line.lstrip()[:1] == "{" for line in f if line.strip()), False)
    except OSError:  # missing or unreadable: load_run says so
        return False


def _once(ranked: Sequence[tuple[str, float]]) -> tuple[list[tuple[str, float]], int]:
    """``ranked`` with each document at its first (best) place only, and how many later
    places were dropped."""
    seen: set[str] = set()
    kept = []
    for doc, score in ranked:
        if doc not in seen:
            seen.add(doc)
            kept.append((doc, score))
    return kept, len(ranked) - len(kept)


class UncoveredQueries(InputError):
    """A first stage's file that ranks none of the split's queries; ``judged_in``: how many
    of the file's query ids each split of the folder judges (those that judge none left
    out), so that a caller can say which split the file was made for."""

    def __init__(self, message: str, judged_in: Mapping[str, int]) -> None:
        super().__init__(message)
        self.judged_in = dict(judged_in)


def _uncovered(data: Dataset, source: str, ids: set[str]) -> UncoveredQueries:
    """The error for ``source``, whose query ``ids`` miss every query of ``data``'s split:
    which split's queries were needed, and which splits judge the file's queries."""
    split = f"the {data.split} split" if data.split else "the dataset"
    if data.folder is not None:
        split += f" of {data.folder}"
    judged_in: dict[str, int] = {}
    if data.folder is not None:
        for path in sorted((data.folder / "qrels").glob("*.tsv")):
            try:
                judged = read_qrels(path)[0]
            except (InputError, OSError, UnicodeError):
                continue  # a split that cannot be read says nothing about this file
            if shared := len(ids & set(judged)):
                judged_in[path.stem] = shared
    said = [f"{n} {'are' if n > 1 else 'is'} judged in the {k} split" for k, n in judged_in.items()]
    found = f"; of its query ids, {', '.join(said)}" if said else ""
    if not said and data.folder is not None:
        found = f"; no split of {data.folder} judges any of them"
    if not said:  # ids written differently ('query1' for 'q1')? show both
        theirs, ours = (", ".join(map(repr, sorted(i)[:3])) for i in (ids, data.queries))
        found += f" (its ids: {theirs}; the split's: {ours}: the same queries written differently?)"
    return UncoveredQueries(
        f"{source}: none of its {len(ids)} query ids is among the {len(data.queries)} "
        f"queries of {split}{found}",
        judged_in,
    )


def candidate_depth(cands: Mapping[str, Sequence[Any]], k: int) -> int:
    """The depth the first stage gave: the most candidates any query has (at most ``k``;
    ``k`` when none has any). A 20-deep run evaluated with the default ``k=100`` is 20 deep,
    and recall is reported at 20."""
    most = max((len(c) for c in cands.values()), default=0)
    return min(most, k) if most else k


def first_stage_label(data: Dataset, source: str | Mapping[str, Any]) -> str:
    """What the first stage of ``data`` is, in words (``auto`` resolved): BM25's settings,
    the dataset's run file, the file given, or the candidates given in memory."""
    if isinstance(source, Mapping):
        return f"the candidates given in memory ({len(source)} queries)"
    if source == "auto":
        source = "run" if data.run_scores is not None else "bm25"
    if source == "bm25":
        return "BM25 over the corpus (k1=0.9, b=0.4)"
    if source == "run":
        return f"the dataset's run ({data.run_file})" if data.run_file else "the dataset's run"
    return source


def depth_label(depth: int, asked: int) -> str:
    """The depth evaluated, as a heading says it: ``top 20``, or ``top 13 (the first stage
    had no more; candidates=100 (--candidates))`` when the first stage gave fewer than asked
    (recall is reported at the depth evaluated: see :func:`candidate_depth`)."""
    asked_for = (
        f" (the first stage had no more; {keyword_flag('candidates', asked)})"
        if depth < asked
        else ""
    )
    return f"top {depth}{asked_for}"


def candidate_documents(
    data: Dataset, ranked: Sequence[tuple[str, float]], *, with_scores: bool = True
) -> list[dict]:
    """Candidates as dicts a reranker takes: ``id``, ``text``, ``title`` when the document
    has one, and (unless ``with_scores`` is false, as for a caller that only has texts)
    ``first_stage_score``."""
    if not with_scores:
        return [data.document(d) for d, _ in ranked]
    return [{**data.document(d), "first_stage_score": s} for d, s in ranked]


def load_candidates(
    path: str | Path, *, corpus: Any = None, queries: Any = None
) -> dict[str, list[tuple[str, float]]]:
    """Your retriever's output as JSON Lines, one row a query: ``{"query_id": "q1",
    "candidates": [{"id": "d3", "first_stage_score": 12.1}, ...]}`` (the rows ``rerankit
    batch`` reads; other fields, such as ``query`` and the candidates' ``text``, are
    ignored: texts come from the corpus). A candidate may also be a bare id; its score is
    ``first_stage_score``, else ``score``, else its position (best first). Returns query id
    -> ``(doc id, score)`` best first. With ``queries`` (the ids of a folder's
    queries.jsonl), rows of other queries are skipped, as :func:`~.data.load_run` skips
    them; a mistake in a row read (a document not in ``corpus``, when given) is an
    :class:`InputError` naming the line."""
    out: dict[str, list[tuple[str, float]]] = {}
    line = ("candidates", '{"query_id": "q1", "candidates": [{"id": "d3"}, ...]}')
    for n, row in numbered_jsonl(path, line):
        where = f"{path}:{n}"
        if not isinstance(row, dict) or not isinstance(row.get("candidates"), list):
            fields = ", ".join(map(repr, list(row)[:8])) if isinstance(row, dict) else ""
            raise InputError(
                f"{where}: expected an object with query_id and a candidates list"
                + (f" (fields present: {fields})" if fields else "")
            )
        qid = row.get("query_id")
        if "query_id" not in row:
            present = ", ".join(map(repr, list(row)[:8]))
            raise InputError(
                f"{where}: the row has no 'query_id' (fields present: {present}): each row "
                "needs a 'query_id' (a string or number) and a 'candidates' list"
            )
        if not isinstance(qid, (str, int)) or isinstance(qid, bool):
            raise InputError(f"{where}: query_id must be a string or number, got {qid!r}")
        if queries is not None and str(qid) not in queries:
            continue  # another folder's query
        ranked = []
        for i, cand in enumerate(row["candidates"]):
            doc = cand.get("id") if isinstance(cand, dict) else cand
            if not isinstance(doc, (str, int)) or isinstance(doc, bool):
                raise InputError(f"{where}: {_no_id(cand, i)}")
            if corpus is not None and str(doc) not in corpus:
                raise InputError(f"{where}: document {str(doc)!r} is not in the corpus")
            score = _score(cand, f"{where}: query {str(qid)!r}") if isinstance(cand, dict) else None
            ranked.append((str(doc), float(-i) if score is None else score, i))
        ranked.sort(key=lambda r: (-r[1], r[2]))
        out[str(qid)] = [(d, s) for d, s, _ in ranked]
    return out


def _no_id(candidate: Any, i: int) -> str:
    """Why candidate ``i`` has no usable id, with the fields it has and what one needs."""
    needs = (
        "each candidate needs an 'id' (a string or number) and may have a "
        "'first_stage_score' (else 'score', else its position), or is a bare id"
    )
    if not isinstance(candidate, dict):
        return f"candidate {i} is {candidate!r}, not an id or an object: {needs}"
    if "id" in candidate:
        got = type(candidate["id"]).__name__
        return f"candidate {i}'s 'id' must be a string or number, got {got}: {needs}"
    present = ", ".join(map(repr, list(candidate)[:8])) or "none"
    return f"candidate {i} has no 'id' (fields present: {present}): {needs}"


def _score(candidate: Mapping[str, Any], where: str) -> float | None:
    """A candidate's ``first_stage_score`` (else ``score``); None when it has neither
    (``where``: the row, for the error)."""
    for key in ("first_stage_score", "score"):
        value = candidate.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, Real):
                raise InputError(
                    f"{where}: candidate {candidate.get('id')!r}: {key} must be a number"
                )
            return float(value)
    return None
