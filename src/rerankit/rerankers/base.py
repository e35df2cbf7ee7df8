"""The base every reranker shares: the sync and async entry points, input adaptation,
and assembling scores into a :class:`~rerankit.RerankResult`."""

from __future__ import annotations

import contextlib
import difflib
import functools
import inspect
import logging
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .._threads import run_sync, run_until_answered
from .._words import counted
from ..documents import InputFields, output_for, repeated_ids
from ..errors import said_for
from ..scorers.base import ScoreBatch, Scorer, as_score_batch
from ..spans import TRACER, span
from ..types import EARLIER_STAGE, SUM, Document, RankedDocument, RerankResult, check_top_k
from .deadline import check_deadline, rank_within

__all__ = [
    "DUPLICATE_ID",
    "Reranker",
    "Scored",
    "ScoringReranker",
    "assemble",
    "check_keywords",
    "input_checked",
    "note_duplicate_ids",
    "run_sync",
]

logger = logging.getLogger(__name__)

#: the flag of a document with no text to score (blank or whitespace only)
EMPTY = "empty_content"
#: the flag of a document whose id another document of the same call has
DUPLICATE_ID = "duplicate_id"
#: how many of the repeated ids a warning names (all are flagged)
_IDS_NAMED = 5
#: true while a rerank runs: a rerank within it (a pipeline's stage) leaves the checks of
#: the whole input to the outer one
_WITHIN: ContextVar[bool] = ContextVar("rerankit_within_rerank", default=False)
#: the explanation parts a pipeline's row holds one of, per document: a term of the score,
#: or (an earlier stage's) a term of the score that chose the candidate
ONE_OF = ("contribution", EARLIER_STAGE)


#: what users of other rerank APIs reach for, and rerankit's name for it
_KEYWORD_HINTS = {
    "top_n": "top_k",
    "k": "top_k",
    "model": "reranker= (rerankit.rerank) or the reranker object itself",
    "rank_fields": "text_field",
    "return_documents": "result.documents() (results always carry the document)",
    "query_embedding": 'context={"query_embedding": ...}',
    "document_embeddings": 'context={"document_embeddings": ...}',
    "language": "reranker=HybridReranker(language=...), or a reranker built for the language",
    "doc_ids": "rerankit.Document(text, id=...) for each document",  # AnswerDotAI's rerankers
    "metadata": "rerankit.Document(text, metadata=...) for each document",
}


def check_keywords(unexpected: Mapping[str, Any], where: str) -> None:
    """A ``TypeError`` naming the keyword arguments ``where`` does not take, with the
    rerankit name for the ones other rerank APIs use."""
    if not unexpected:
        return
    parts = []
    known = [*InputFields.names(), "top_k", "fields", "context", "deadline"]
    for name in unexpected:
        hint = _KEYWORD_HINTS.get(name)
        close = difflib.get_close_matches(name, known, n=1)  # a misspelt option
        maybe = f" (did you mean {close[0]!r}?)" if close else ""
        parts.append(f"{name!r} (use {hint})" if hint else f"{name!r}{maybe}")
    said = "an unexpected keyword argument" if len(parts) == 1 else "unexpected keyword arguments"
    raise TypeError(f"{where}() got {said}: {', '.join(parts)}")


@contextlib.contextmanager
def input_checked() -> Iterator[None]:
    """Within it, a rerank leaves the checks of its whole input (repeated ids) to the
    caller, which made them on the documents it was given: a pipeline for its stages, the
    service for the chunks it split documents into (a task started within inherits it)."""
    token = _WITHIN.set(True)
    try:
        yield
    finally:
        _WITHIN.reset(token)


def note_duplicate_ids(result: RerankResult, docs: Sequence[Document]) -> RerankResult:
    """``result`` with a warning naming the ids that several of ``docs`` share (and the
    positions holding each), and those documents flagged ``duplicate_id``; ``result``
    itself when every id is distinct. Each document stays a candidate of its own: results
    tell them apart by ``index``, which an id cannot."""
    repeats = repeated_ids(docs)
    if not repeats:
        return result
    named = "; ".join(
        f"{value!r}: documents {', '.join(map(str, at))}" for value, at in repeats[:_IDS_NAMED]
    )
    more = f"; {len(repeats) - _IDS_NAMED} more" if len(repeats) > _IDS_NAMED else ""
    many = f"{len(repeats)} ids are" if len(repeats) > 1 else "1 id is"
    message = (
        f"{many} shared by several documents ({named}{more}): each document is ranked as a "
        "candidate of its own; tell them apart by their index, not their id"
    )
    logger.warning("%s", message)
    shared = {i for _, at in repeats for i in at}
    results = tuple(
        replace(r, flags=(*r.flags, DUPLICATE_ID)) if r.index in shared else r for r in result
    )
    return replace(result, results=results, warnings=(*result.warnings, message))


@dataclass
class Scored:
    """What a reranker's scoring step produced, before ordering."""

    final: np.ndarray
    per_strategy: dict[str, np.ndarray] = field(default_factory=dict)
    flags: dict[int, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    degraded: bool = False
    usage: dict[str, int] = field(default_factory=dict)
    # strategy -> {"raw", "normalized", "contribution": arrays; "weight": float}
    explanation: dict[str, dict[str, Any]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    # strategy -> documents it never scored (pipeline stages see only the kept documents)
    unseen: dict[str, np.ndarray] = field(default_factory=dict)
    # no strategy produced scores: the order is the input's
    failed_all: bool = False
    # what the final scores mean (rerankit.normalize.SCORE_SCALES); None: the reranker's own
    scale: str | None = None
    # how each document's explained contributions make its score (types.SUM or
    # types.SIGMOID_OF_SUM): one for all, or one per document (a pipeline's)
    link: str | list[str] = SUM

    def saw(self, name: str, i: int) -> bool:
        mask = self.unseen.get(name)
        return mask is None or not mask[i]

    def add_usage(self, usage: Mapping[str, int]) -> None:
        for k, v in usage.items():
            self.usage[k] = self.usage.get(k, 0) + v

    def take(self, name: str, batch: ScoreBatch) -> np.ndarray:
        """Record one strategy's batch (raw scores, flags, warnings, usage) and return its
        scores with the non-finite policy applied: a NaN/inf score counts as the strategy's
        worst finite score, the document is flagged and the result warned."""
        self.per_strategy[name] = batch.values
        # a warning or flag two strategies both raise (two read the same bad text) is said once
        self.warnings.extend(w for w in dict.fromkeys(batch.warnings) if w not in self.warnings)
        self.degraded |= batch.degraded
        self.add_usage(batch.usage)
        for j, f in batch.flags.items():
            have = self.flags.setdefault(j, [])
            have.extend(x for x in dict.fromkeys(f) if x not in have)
        values = batch.values
        bad = ~np.isfinite(values)
        if not bad.any():
            return values
        finite = values[~bad]
        worst = float(finite.min()) if finite.size else 0.0
        idx = np.flatnonzero(bad)
        for i in idx:
            self.flags.setdefault(int(i), []).append(f"non_finite:{name}")
        self.warnings.append(
            f"scorer {name!r} returned {counted(int(idx.size), 'non-finite score')} (documents "
            f"{idx[:10].tolist()}{'...' if idx.size > 10 else ''}); they count as its worst score"
        )
        logger.warning(self.warnings[-1])
        return np.where(bad, worst, values)

    def failed(self, scorer: Scorer, exc: BaseException) -> None:
        """Record a scorer's failure: a warning and a degraded result."""
        logger.warning("scorer %r failed: %s", scorer.name, exc, exc_info=exc)
        self.warnings.append(f"scorer {scorer.name!r} failed: {type(exc).__name__}: {exc}")
        self.degraded = True


async def run_scorer(
    scorer: Scorer, query: str, docs: Sequence[Document], context: Mapping[str, Any]
) -> ScoreBatch:
    """A scorer's validated output for ``docs``. The rerank's ``top_k`` reaches only scorers
    that declare ``uses_top_k = True`` (the listwise judge, whose windows must carry it)."""
    if "top_k" in context and not getattr(scorer, "uses_top_k", False):
        context = {k: v for k, v in context.items() if k != "top_k"}
    if TRACER.get() is None:
        return as_score_batch(scorer.name, await _scores(scorer, query, docs, context), len(docs))
    with span(f"scorer {scorer.name}", scorer=scorer.name, documents=len(docs)):
        return as_score_batch(scorer.name, await _scores(scorer, query, docs, context), len(docs))


def _scores(scorer: Scorer, query: str, docs: Sequence[Document], context: Any) -> Any:
    """What ``scorer.score`` gives to await; a TypeError saying how to write it when that
    is not awaitable (a plain ``def score``)."""
    pending = scorer.score(query, docs, **context)
    if not inspect.isawaitable(pending):
        raise TypeError(
            f"score must be `async def score(self, query, docs, **context)`; it returned "
            f"{type(pending).__name__} instead of something to await"
        )
    return pending


class Reranker(ABC):
    """Base of every reranker: adapt the input, rank, map back.

    Results of a rerank without ``top_k`` are always a permutation of the input; equal
    scores keep input order. Subclasses implement :meth:`_rank` (or, through
    :class:`ScoringReranker`, just the scoring).
    """

    name: str = "reranker"

    def rerank(
        self,
        query: str,
        documents: Iterable[Any],
        *,
        top_k: int | None = None,
        fields: InputFields | None = None,
        context: Mapping[str, Any] | None = None,
        deadline: float | None = None,
        **options: Any,
    ) -> RerankResult:
        """Rerank ``documents`` for ``query`` (blocking). See :meth:`arerank`."""
        coro = self.arerank(
            query,
            documents,
            top_k=top_k,
            fields=fields,
            context=context,
            deadline=deadline,
            **options,
        )
        return run_sync(coro) if deadline is None else run_until_answered(coro)

    async def arerank(
        self,
        query: str,
        documents: Iterable[Any],
        *,
        top_k: int | None = None,
        fields: InputFields | None = None,
        context: Mapping[str, Any] | None = None,
        deadline: float | None = None,
        **options: Any,
    ) -> RerankResult:
        """Rerank ``documents`` (strings, dicts, Documents, LangChain documents, LlamaIndex
        nodes, or a pandas DataFrame's rows; see :mod:`rerankit.documents`) for ``query``.

        ``top_k`` keeps the best k. How documents are read and results written is
        ``fields`` (an :class:`~rerankit.InputFields`), or its options as keywords:
        ``text_field``, ``id_field``, ``score_field`` (dict inputs come back as new dicts
        with the score under it), ``first_stage_field`` (the field holding the retriever's
        score; ``first_stage_higher_is_better=False`` for distances; it becomes the
        documents' ``first_stage_score``). ``context`` carries per-call inputs to the
        scorers (for example ``{"query_embedding": vector}`` for an embedding scorer). An
        empty query or an empty list returns the input order with a warning. Documents that
        share an ``id`` are each ranked as a candidate of their own; the result warns,
        naming the ids, and flags them ``duplicate_id``. ``deadline`` (seconds): a pipeline
        still running then returns its last finished stage's result, degraded (saying so);
        with none finished, a :class:`~rerankit.errors.DeadlineError` (see
        :mod:`~rerankit.rerankers.deadline`). Unknown keyword arguments are a ``TypeError``.
        """
        until = None if check_deadline(deadline) is None else time.monotonic() + deadline
        check_keywords({k: v for k, v in options.items() if k not in InputFields.names()}, "rerank")
        fields = (fields or InputFields()).with_options(**options)
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        check_top_k(top_k)
        docs = fields.read(documents)
        score_field = fields.score_field
        outer = not _WITHIN.get()
        if not docs or not query.strip():
            what = "the document list is empty" if not docs else "the query is empty"
            logger.warning("%s; returning the input order", what)
            scored = Scored(final=np.zeros(len(docs)), warnings=[f"{what}; input order kept"])
            result = assemble(query, docs, scored, top_k=top_k, score_field=score_field)
        else:
            rank = functools.partial(self._rank, query, docs, top_k=top_k, score_field=score_field)
            with input_checked():
                if until is None:
                    result = await rank(**dict(context or {}))
                else:
                    result = await self._rank_until(rank, dict(context or {}), until, deadline)
        if outer:
            result = note_duplicate_ids(result, docs)
        clash = sum(isinstance(d.source, Mapping) and score_field in d.source for d in docs)
        if clash:
            message = (
                f"{counted(clash, 'input dict')} already had a {score_field!r} field: the output "
                "dicts hold the rerank score there instead "
                f"({said_for('score_field=', '--score-field NAME')} names another field)"
            )
            logger.warning("%s", message)
            result = replace(result, warnings=(*result.warnings, message))
        return result

    @abstractmethod
    async def _rank(
        self,
        query: str,
        docs: Sequence[Document],
        *,
        top_k: int | None,
        score_field: str,
        **context: Any,
    ) -> RerankResult:
        """Order non-empty ``docs`` for a non-empty ``query``."""

    async def _rank_until(
        self, rank: Any, context: dict[str, Any], until: float, seconds: Any
    ) -> RerankResult:
        """``rank(**context)`` by ``until``: a reranker with no stages raises at its deadline."""
        return await rank_within(rank, context, until, seconds, name=self.name)

    def scorers(self) -> Iterator[Scorer]:
        """Every scorer this reranker runs (for services that wrap or warm them up)."""
        return iter(())

    @property
    def score_scale(self) -> str:
        """What this reranker's scores mean (:data:`rerankit.normalize.SCORE_SCALES`):
        ``relative`` unless the reranker knows its scores depend on the (query, document)
        pair alone. A result's own ``score_scale`` says what that call's scores were."""
        return "relative"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class ScoringReranker(Reranker):
    """A reranker that orders by one score per document: subclasses implement
    :meth:`_score`."""

    async def _rank(
        self,
        query: str,
        docs: Sequence[Document],
        *,
        top_k: int | None,
        score_field: str,
        **context: Any,
    ) -> RerankResult:
        # scorers that order by windows need to know how far down the caller will look
        scored = await self._score(query, docs, **{"top_k": top_k, **context})
        if scored.scale is None:
            scored.scale = self.score_scale
        return assemble(query, docs, scored, top_k=top_k, score_field=score_field)

    @abstractmethod
    async def _score(self, query: str, docs: Sequence[Document], **context: Any) -> Scored:
        """Score non-empty ``docs`` for a non-empty ``query``."""


def _as_floats(value: Any) -> float | list[float]:
    """A scalar as a float, an array as a list of floats (read per document afterwards)."""
    return float(value) if np.isscalar(value) else np.asarray(value, dtype=float).tolist()


def _per_document(scored: Scored) -> tuple[dict, dict]:
    """``scored``'s per-strategy scores and explanations as Python floats, converted once
    for all documents instead of once per document."""
    strategies = {k: _as_floats(v) for k, v in scored.per_strategy.items()}
    explained = {
        name: {k: _as_floats(v) for k, v in parts.items()}
        for name, parts in scored.explanation.items()
    }
    return strategies, explained


def _explanation_of(scored: Scored, explained: dict, i: int) -> dict[str, dict[str, float]]:
    out = {}
    for name, parts in explained.items():
        if scored.saw(name, i):
            row = {k: v if isinstance(v, float) else v[i] for k, v in parts.items()}
            for k in ONE_OF:  # a pipeline's row holds one or the other (NaN: not this one)
                if k in row and math.isnan(row[k]):
                    del row[k]
            out[name] = row
    return out


def _flags_of(doc: Document, flags: Iterable[str]) -> tuple[str, ...]:
    """A document's flags, with ``empty_content`` for a blank text (whichever scorer ran)."""
    flags = tuple(flags)
    return flags if doc.text.strip() or EMPTY in flags else (*flags, EMPTY)


def assemble(
    query: str,
    docs: Sequence[Document],
    scored: Scored,
    *,
    top_k: int | None = None,
    score_field: str = "rerank_score",
    order: Sequence[int] | None = None,
    dropped: Sequence[int] = (),
) -> RerankResult:
    """Order documents by ``scored.final`` (stable, best first), or in the given ``order``,
    into a RerankResult."""
    final = scored.final
    ranking = np.argsort(-final, kind="stable") if order is None else np.asarray(order, int)
    if top_k is not None:
        ranking = ranking[:top_k]
    results = []
    strategies, explained = _per_document(scored)
    for rank, i in enumerate(ranking.tolist(), start=1):
        doc = docs[i]
        score = float(final[i])
        results.append(
            RankedDocument(
                document=output_for(doc, score, score_field=score_field),
                index=i,
                rank=rank,
                score=score,
                text=doc.text,
                id=doc.id,
                scores={k: v[i] for k, v in strategies.items() if scored.saw(k, i)},
                flags=_flags_of(doc, scored.flags.get(i, ())),
                explanation=_explanation_of(scored, explained, i),
                score_from_contributions=(
                    scored.link if isinstance(scored.link, str) else scored.link[i]
                ),
            )
        )
    return RerankResult(
        query=query,
        results=tuple(results),
        degraded=scored.degraded,
        warnings=tuple(scored.warnings),
        usage=dict(scored.usage),
        timings=dict(scored.timings),
        dropped=tuple(dropped),
        failed=scored.failed_all,
        score_scale=scored.scale or "relative",
    )
