"""Rerankers: one scorer, or several fused; sync and async entry points; named built-ins."""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import fusion
from .documents import output_for, to_documents
from .errors import CALLER_ERRORS
from .normalize import check_normalization_method
from .scorers.base import Scorer, as_score_batch
from .types import Document, RankedDocument, RerankResult, check_top_k

__all__ = [
    "FusionReranker",
    "HybridReranker",
    "Pipeline",
    "Reranker",
    "ScorerReranker",
    "Stage",
    "available_rerankers",
    "get_reranker",
    "hybrid_reranker",
    "register_reranker",
    "rerank",
]

logger = logging.getLogger(__name__)


_CALLER_ERRORS = CALLER_ERRORS


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, also when an event loop is running in
    this thread (notebooks, async servers): then it runs on a helper thread's own loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rerankit-sync") as pool:
        return pool.submit(asyncio.run, coro).result()


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

    def saw(self, name: str, i: int) -> bool:
        mask = self.unseen.get(name)
        return mask is None or not mask[i]

    def explain_single(self, name: str, values: np.ndarray) -> None:
        """A lone strategy: its score is the document's score."""
        self.explanation[name] = {
            "raw": values,
            "normalized": values,
            "weight": 1.0,
            "contribution": values,
        }

    def add_usage(self, usage: Mapping[str, int]) -> None:
        for k, v in usage.items():
            self.usage[k] = self.usage.get(k, 0) + v


def _replace_non_finite(name: str, values: np.ndarray, scored: Scored) -> np.ndarray:
    """Policy: a NaN/inf score counts as the strategy's worst finite score; flagged + warned."""
    bad = ~np.isfinite(values)
    if not bad.any():
        return values
    finite = values[~bad]
    worst = float(finite.min()) if finite.size else 0.0
    idx = np.flatnonzero(bad)
    for i in idx:
        scored.flags.setdefault(int(i), []).append(f"non_finite:{name}")
    scored.warnings.append(
        f"scorer {name!r} returned {idx.size} non-finite score(s) (documents "
        f"{idx[:10].tolist()}{'...' if idx.size > 10 else ''}); they count as its worst score"
    )
    logger.warning(scored.warnings[-1])
    return np.where(bad, worst, values)


class Reranker(ABC):
    """Base of every reranker: adapt the input, score, order, map back.

    Subclasses implement :meth:`_score`. Results of a rerank without ``top_k`` are always a
    permutation of the input; equal scores keep input order.
    """

    name: str = "reranker"

    def rerank(
        self,
        query: str,
        documents: Iterable[Any],
        *,
        top_k: int | None = None,
        text_field: str = "text",
        id_field: str = "id",
        score_field: str = "rerank_score",
        **context: Any,
    ) -> RerankResult:
        """Rerank ``documents`` for ``query`` (blocking). See :meth:`arerank`."""
        return run_sync(
            self.arerank(
                query,
                documents,
                top_k=top_k,
                text_field=text_field,
                id_field=id_field,
                score_field=score_field,
                **context,
            )
        )

    async def arerank(
        self,
        query: str,
        documents: Iterable[Any],
        *,
        top_k: int | None = None,
        text_field: str = "text",
        id_field: str = "id",
        score_field: str = "rerank_score",
        **context: Any,
    ) -> RerankResult:
        """Rerank ``documents`` (strings, dicts or Documents) for ``query``.

        ``top_k`` keeps the best k. Dict inputs come back as new dicts with the score under
        ``score_field``. An empty query or an empty list returns the input order with a
        warning. Extra keyword arguments are passed to the scorers as context.
        """
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        check_top_k(top_k)
        docs = to_documents(documents, text_field=text_field, id_field=id_field)
        if not docs or not query.strip():
            what = "the document list is empty" if not docs else "the query is empty"
            logger.warning("%s; returning the input order", what)
            scored = Scored(final=np.zeros(len(docs)), warnings=[f"{what}; input order kept"])
            return assemble(query, docs, scored, top_k=top_k, score_field=score_field)
        return await self._rank(query, docs, top_k=top_k, score_field=score_field, **context)

    async def _rank(
        self,
        query: str,
        docs: Sequence[Document],
        *,
        top_k: int | None,
        score_field: str,
        **context: Any,
    ) -> RerankResult:
        """Score non-empty ``docs`` and order them (rerankers that order by other means,
        such as pipelines, override this)."""
        scored = await self._score(query, docs, **context)
        return assemble(query, docs, scored, top_k=top_k, score_field=score_field)

    @abstractmethod
    async def _score(self, query: str, docs: Sequence[Document], **context: Any) -> Scored:
        """Score non-empty ``docs`` for a non-empty ``query``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def _explanation_of(scored: Scored, i: int) -> dict[str, dict[str, float]]:
    out = {}
    for name, parts in scored.explanation.items():
        if scored.saw(name, i):
            out[name] = {k: float(v if np.isscalar(v) else v[i]) for k, v in parts.items()}
    return out


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
                scores={k: float(v[i]) for k, v in scored.per_strategy.items() if scored.saw(k, i)},
                flags=tuple(scored.flags.get(i, ())),
                explanation=_explanation_of(scored, i),
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
    )


async def _run_scorer(scorer: Scorer, query: str, docs: Sequence[Document], context: dict) -> Any:
    return as_score_batch(scorer.name, await scorer.score(query, docs, **context), len(docs))


def _failure(scorer: Scorer, exc: BaseException) -> str:
    logger.warning("scorer %r failed: %s", scorer.name, exc, exc_info=exc)
    return f"scorer {scorer.name!r} failed: {type(exc).__name__}: {exc}"


class ScorerReranker(Reranker):
    """Orders by one scorer's scores. If the scorer fails, the input order is kept and the
    result is marked ``degraded`` (scores 0.0) with the error in ``warnings``."""

    def __init__(self, scorer: Scorer, *, name: str | None = None) -> None:
        if not isinstance(scorer, Scorer):
            raise TypeError(f"{scorer!r} is not a scorer (needs .name and async .score)")
        self.scorer = scorer
        self.name = name or scorer.name

    async def _score(self, query: str, docs: Sequence[Document], **context: Any) -> Scored:
        try:
            batch = await _run_scorer(self.scorer, query, docs, context)
        except _CALLER_ERRORS:
            raise
        except Exception as exc:
            return Scored(
                final=np.zeros(len(docs)), warnings=[_failure(self.scorer, exc)], degraded=True
            )
        scored = Scored(
            final=batch.values,
            flags={i: list(f) for i, f in batch.flags.items()},
            warnings=list(batch.warnings),
            degraded=batch.degraded,
            usage=dict(batch.usage),
        )
        scored.per_strategy[self.scorer.name] = batch.values
        scored.final = _replace_non_finite(self.scorer.name, batch.values, scored)
        scored.explain_single(self.scorer.name, scored.final)
        scored.explanation[self.scorer.name]["raw"] = batch.values
        return scored


class FusionReranker(Reranker):
    """Runs several scorers concurrently and combines their scores.

    Each strategy's raw scores are kept in ``RankedDocument.scores``. Score-based methods
    normalise each strategy first (``normalize_scores=True``, ``normalization_method``);
    rank-based ones (RRF, BORDA) use ranks. If some strategies fail, the rest decide the
    order and the result is ``degraded`` with a warning per failure; if all fail, the input
    order is kept. See :mod:`rerankit.fusion` for weights, ranges and tie rules.
    """

    def __init__(
        self,
        strategies: Sequence[Scorer],
        combination_method: fusion.ScoreCombinationMethod | str = (
            fusion.ScoreCombinationMethod.WEIGHTED_AVERAGE
        ),
        weights: Mapping[str, float] | None = None,
        normalize_scores: bool = True,
        normalization_method: str = "min_max",
        *,
        rrf_k: float = 60.0,
        name: str = "fusion",
    ) -> None:
        strategies = list(strategies)
        if not strategies:
            raise ValueError("FusionReranker needs at least one strategy")
        for s in strategies:
            if not isinstance(s, Scorer):
                raise TypeError(f"{s!r} is not a scorer (needs .name and async .score)")
        names = [s.name for s in strategies]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"strategy names must be unique; repeated: {dupes}")
        check_normalization_method(normalization_method)
        fusion.check_rrf_k(rrf_k)
        self.strategies = strategies
        self.combination_method = fusion.ScoreCombinationMethod.parse(combination_method)
        self.weights = dict(weights) if weights is not None else None
        self._weights = fusion.resolve_weights(names, weights)
        self.normalize_scores = normalize_scores
        self.normalization_method = normalization_method
        self.rrf_k = rrf_k
        self.name = name

    async def _score(self, query: str, docs: Sequence[Document], **context: Any) -> Scored:
        outcomes = await asyncio.gather(
            *(_run_scorer(s, query, docs, context) for s in self.strategies),
            return_exceptions=True,
        )
        scored = Scored(final=np.zeros(len(docs)))
        rows, kept = [], []
        for i, (strategy, outcome) in enumerate(zip(self.strategies, outcomes, strict=True)):
            if isinstance(outcome, _CALLER_ERRORS):
                raise outcome
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, Exception):
                    raise outcome
                scored.warnings.append(_failure(strategy, outcome))
                scored.degraded = True
                continue
            scored.per_strategy[strategy.name] = outcome.values
            scored.warnings.extend(outcome.warnings)
            scored.degraded |= outcome.degraded
            scored.add_usage(outcome.usage)
            for j, f in outcome.flags.items():
                scored.flags.setdefault(j, []).extend(f)
            rows.append(_replace_non_finite(strategy.name, outcome.values, scored))
            kept.append(i)
        if not rows:
            scored.warnings.append("every strategy failed; input order kept")
            return scored
        weights = self._weights[kept] / self._weights[kept].sum()
        normalization = self.normalization_method if self.normalize_scores else None
        matrix = fusion.normalize_rows(np.vstack(rows), self.combination_method, normalization)
        scored.final = fusion.fuse(matrix, self.combination_method, weights, rrf_k=self.rrf_k)
        shares = fusion.contributions(matrix, self.combination_method, weights, rrf_k=self.rrf_k)
        for row, j in enumerate(kept):
            name = self.strategies[j].name
            scored.explanation[name] = {
                "raw": scored.per_strategy[name],
                "normalized": matrix[row],
                "weight": float(weights[row]),
                "contribution": shares[row],
            }
        return scored


# --- named rerankers -------------------------------------------------------------------------

_FACTORIES: dict[str, Callable[[], Reranker]] = {}
_INSTANCES: dict[str, Reranker] = {}


def register_reranker(name: str, factory: Callable[[], Reranker]) -> None:
    """Make ``factory()`` available as ``get_reranker(name)`` (and in the CLI)."""
    _FACTORIES[name] = factory
    _INSTANCES.pop(name, None)


def available_rerankers() -> list[str]:
    """Names accepted by :func:`get_reranker`."""
    return sorted(_FACTORIES)


def get_reranker(spec: str | Reranker | Scorer) -> Reranker:
    """A reranker from a name, a reranker (returned as is) or a scorer (wrapped)."""
    if isinstance(spec, Reranker):
        return spec
    if isinstance(spec, str):
        if spec not in _FACTORIES:
            raise ValueError(
                f"unknown reranker {spec!r}; available: {', '.join(available_rerankers())}"
            )
        if spec not in _INSTANCES:
            _INSTANCES[spec] = _FACTORIES[spec]()
        return _INSTANCES[spec]
    if isinstance(spec, Scorer):
        return ScorerReranker(spec)
    raise TypeError(f"reranker must be a name, a Reranker or a Scorer, got {type(spec).__name__}")


def _lexical(factory_name: str) -> Callable[[], Reranker]:
    def make() -> Reranker:
        from .scorers import lexical

        return ScorerReranker(getattr(lexical, factory_name)())

    return make


register_reranker("bm25", _lexical("BM25Scorer"))
register_reranker("jaccard", _lexical("JaccardScorer"))
register_reranker("text", _lexical("TextSimilarity"))

#: How the default ``hybrid`` pipeline fuses its two signals: a weighted sum of min-max
#: normalised scores. With the first stage's score: 0.3 first stage / 0.7 embedding; without
#: it, BM25 over the candidates: 0.4 BM25 / 0.6 embedding. Both chosen by ``rerankit tune``
#: style searches on development queries only (SciFact train, NFCorpus dev); see the README.
HYBRID_METHOD = fusion.ScoreCombinationMethod.WEIGHTED_AVERAGE
HYBRID_FIRST_STAGE_WEIGHT = 0.3
HYBRID_BM25_WEIGHT = 0.4
#: where the hybrid looks for a first-stage score (the first field every document has)
FIRST_STAGE_FIELDS = ("first_stage_score", "retriever_score", "score")


class HybridReranker(Reranker):
    """The default offline reranker: a lexical signal and a bi-encoder fused.

    The lexical signal is the first stage's own score when every document carries one (the
    first of ``first_stage_fields`` that all documents have), else BM25 over the candidates.
    The embedding model is the bundled all-MiniLM-L6-v2 unless given (extra ``torch``).
    Strategies appear as ``first_stage`` or ``bm25``, and ``embedding``.
    """

    def __init__(
        self,
        embedding: Scorer | None = None,
        *,
        first_stage_fields: Sequence[str] = FIRST_STAGE_FIELDS,
        first_stage_weight: float = HYBRID_FIRST_STAGE_WEIGHT,
        bm25_weight: float = HYBRID_BM25_WEIGHT,
        combination_method: fusion.ScoreCombinationMethod | str = HYBRID_METHOD,
        normalization_method: str = "min_max",
        name: str = "hybrid",
    ) -> None:
        from .scorers.embedding import EmbeddingScorer
        from .scorers.lexical import BM25Scorer

        for label, w in (("first_stage_weight", first_stage_weight), ("bm25_weight", bm25_weight)):
            if not 0.0 <= w <= 1.0:
                raise ValueError(f"{label} must be in [0, 1], got {w}")
        self.embedding = embedding if embedding is not None else EmbeddingScorer()
        self.first_stage_fields = tuple(first_stage_fields)
        self.first_stage_weight, self.bm25_weight = first_stage_weight, bm25_weight
        self.combination_method = fusion.ScoreCombinationMethod.parse(combination_method)
        self.normalization_method = normalization_method
        self.name = name
        self.with_bm25 = self._fusion(BM25Scorer(), bm25_weight)
        self._with_field: dict[str, FusionReranker] = {}

    def _fusion(self, lexical: Scorer, weight: float) -> FusionReranker:
        return FusionReranker(
            [lexical, self.embedding],
            self.combination_method,
            {lexical.name: weight, self.embedding.name: 1.0 - weight},
            normalization_method=self.normalization_method,
            name=self.name,
        )

    def first_stage_field(self, docs: Sequence[Document]) -> tuple[str | None, str | None]:
        """The field to use, and a warning when some documents (not all) have one."""
        from numbers import Real

        partial = None
        for f in self.first_stage_fields:
            have = sum(
                isinstance(d.metadata.get(f), Real) and not isinstance(d.metadata.get(f), bool)
                for d in docs
            )
            if have == len(docs):
                return f, None
            if have and partial is None:
                partial = (
                    f"{have} of {len(docs)} documents have a {f!r} score; BM25 over the "
                    "candidates is used instead"
                )
        return None, partial

    async def _score(self, query: str, docs: Sequence[Document], **context: Any) -> Scored:
        from .scorers.field import FieldScorer

        f, note = self.first_stage_field(docs)
        if f is None:
            scored = await self.with_bm25._score(query, docs, **context)
        else:
            if f not in self._with_field:
                lexical = FieldScorer(f, name="first_stage")
                self._with_field[f] = self._fusion(lexical, self.first_stage_weight)
            scored = await self._with_field[f]._score(query, docs, **context)
        if note:
            scored.warnings.append(note)
        return scored


def hybrid_reranker(embedding: Scorer | None = None, **options: Any) -> HybridReranker:
    """The default ``hybrid`` reranker (see :class:`HybridReranker`)."""
    return HybridReranker(embedding, **options)


def _embedding() -> Reranker:
    from .scorers.embedding import EmbeddingScorer

    return ScorerReranker(EmbeddingScorer())


register_reranker("embedding", _embedding)
register_reranker("hybrid", hybrid_reranker)
# the hybrid as `rerankit rank` users without a first-stage score get it: BM25 over the candidates
register_reranker("hybrid-bm25", lambda: HybridReranker(first_stage_fields=(), name="hybrid-bm25"))


def _llm(provider: str, kind: str) -> Callable[[], Reranker]:
    """LLM built-ins; they need the provider's key in the environment (GEMINI_API_KEY /
    GOOGLE_API_KEY, or OPENAI_API_KEY)."""

    def make() -> Reranker:
        if provider == "gemini":
            from .llm.gemini import GeminiClient

            client: Any = GeminiClient()
        else:
            from .llm.openai_client import OpenAIClient

            client = OpenAIClient()
        if kind == "pointwise":
            from .scorers.llm_pointwise import LLMPointwiseScorer

            return ScorerReranker(LLMPointwiseScorer(client))
        from .scorers.llm_listwise import LLMListwiseScorer

        return ScorerReranker(LLMListwiseScorer(client))

    return make


for _provider in ("gemini", "openai"):
    for _kind in ("pointwise", "listwise"):
        register_reranker(f"{_provider}-{_kind}", _llm(_provider, _kind))


def rerank(
    query: str,
    documents: Iterable[Any],
    *,
    reranker: str | Reranker | Scorer = "bm25",
    top_k: int | None = None,
    text_field: str = "text",
    id_field: str = "id",
    score_field: str = "rerank_score",
    **context: Any,
) -> RerankResult:
    """Rerank in one call: ``rerankit.rerank("query", ["doc a", "doc b"])``."""
    return get_reranker(reranker).rerank(
        query,
        documents,
        top_k=top_k,
        text_field=text_field,
        id_field=id_field,
        score_field=score_field,
        **context,
    )


# --- pipelines and cascades ------------------------------------------------------------------


@dataclass
class Stage:
    """One step of a :class:`Pipeline`: a reranker (or scorer, or registered name) or an
    ordering rule, and how many of its best documents go on to the next stage (``keep``;
    None: all of them)."""

    step: Any
    keep: int | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.keep is not None and (isinstance(self.keep, bool) or self.keep < 1):
            raise ValueError(f"keep must be a positive integer or None, got {self.keep!r}")
        if not _is_rule(self.step):
            self.step = get_reranker(self.step)
        if self.name is None:
            self.name = getattr(self.step, "name", type(self.step).__name__)


def _is_rule(step: Any) -> bool:
    return hasattr(step, "apply_result") and hasattr(step, "decide")


class Pipeline(Reranker):
    """Stages run in order; each reorders the documents the previous stage kept (the first
    stage sees all), and the documents it does not keep stay behind them in the order they
    had. So a cascade is ``Pipeline([(BM25Scorer(), 100), (CrossEncoderScorer(), 20),
    (LLMListwiseScorer(client), None)])``.

    Each document's ``scores`` and explanation hold every stage's strategies as
    ``"stage/strategy"``; its ``score`` is the one from the last stage that scored it (order
    comes from position, as scores of different stages are not comparable). ``timings``
    gives each stage's seconds. A stage that raises keeps the previous stage's order and
    marks the result degraded; a stage whose scorers fail degrades the same way by itself.
    """

    def __init__(self, stages: Sequence[Any], *, name: str = "pipeline") -> None:
        built: list[Stage] = []
        for s in stages:
            if isinstance(s, Stage):
                built.append(s)
            elif isinstance(s, tuple):
                built.append(Stage(*s))
            else:
                built.append(Stage(s))
        if not built:
            raise ValueError("a Pipeline needs at least one stage")
        names = [s.name for s in built]
        for i, s in enumerate(built):  # unique stage names: "bm25", "bm25#2", ...
            if names.count(s.name) > 1:
                s.name = f"{s.name}#{names[: i + 1].count(s.name)}"
        self.stages = built
        self.name = name

    async def _score(self, query: str, docs: Sequence[Document], **context: Any) -> Scored:
        raise NotImplementedError  # pragma: no cover - arerank is overridden

    async def _rank(
        self,
        query: str,
        docs: Sequence[Document],
        *,
        top_k: int | None,
        score_field: str,
        **context: Any,
    ) -> RerankResult:
        n = len(docs)
        scored = Scored(final=np.zeros(n))
        order, limit, dropped = list(range(n)), n, []
        for stage in self.stages:
            head, tail = order[:limit], order[limit:]
            start = time.perf_counter()
            new_head = await self._run_stage(stage, query, docs, head, scored, dropped, context)
            scored.timings[stage.name] = time.perf_counter() - start
            order = new_head + tail
            limit = min(stage.keep, len(new_head)) if stage.keep else len(new_head)
        return assemble(
            query,
            docs,
            scored,
            top_k=top_k,
            score_field=score_field,
            order=order,
            dropped=dropped,
        )

    async def _run_stage(
        self,
        stage: Stage,
        query: str,
        docs: Sequence[Document],
        head: list[int],
        scored: Scored,
        dropped: list[int],
        context: dict[str, Any],
    ) -> list[int]:
        n = len(docs)
        sub_docs = [docs[i] for i in head]
        try:
            if _is_rule(stage.step):
                sub = stage.step.apply_result(self._current(query, sub_docs, head, scored))
            else:
                sub = await stage.step.arerank(query, sub_docs, **context)
        except _CALLER_ERRORS:
            raise
        except Exception as exc:
            message = (
                f"stage {stage.name!r} failed ({type(exc).__name__}: {exc}); "
                "the previous stage's order is kept"
            )
            logger.warning(message)
            scored.warnings.append(message)
            scored.degraded = True
            return head
        scored.warnings.extend(f"stage {stage.name!r}: {w}" for w in sub.warnings)
        scored.degraded |= sub.degraded
        scored.add_usage(sub.usage)
        if _is_rule(stage.step):  # rules see (and report) the documents' input positions
            dropped.extend(sub.dropped)
            return [r.index for r in sub]
        for r in sub:
            i = head[r.index]
            scored.final[i] = r.score
            for k, v in r.scores.items():
                key = f"{stage.name}/{k}"
                scored.per_strategy.setdefault(key, np.full(n, np.nan))[i] = v
                scored.unseen.setdefault(key, np.ones(n, dtype=bool))[i] = False
            for k, parts in r.explanation.items():
                target = scored.explanation.setdefault(f"{stage.name}/{k}", {})
                for part, value in parts.items():
                    target.setdefault(part, np.full(n, np.nan))[i] = value
            if r.flags:
                scored.flags.setdefault(i, []).extend(r.flags)
        return [head[r.index] for r in sub]

    @staticmethod
    def _current(
        query: str, sub_docs: Sequence[Document], head: list[int], scored: Scored
    ) -> RerankResult:
        """The head as a RerankResult (current scores) for a rule to reorder."""
        results = tuple(
            RankedDocument(
                document=d.source if d.source is not None else d,
                index=i,
                rank=j + 1,
                score=float(scored.final[i]),
                text=d.text,
                id=d.id,
            )
            for j, (d, i) in enumerate(zip(sub_docs, head, strict=True))
        )
        return RerankResult(query=query, results=results)
