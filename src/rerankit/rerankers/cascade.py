"""Pipelines: stages run in order, each reordering what the previous one kept."""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._threads import ABANDONED
from ..errors import CALLER_ERRORS, ConfigError, InvalidDocumentError
from ..ordering import Rule
from ..scorers.base import NO_SCORE, Scorer
from ..spans import span
from ..types import EARLIER_STAGE, SUM, Document, RankedDocument, RerankResult
from .base import Reranker, Scored, assemble
from .deadline import FINISHED_STAGES, rank_within
from .placement import (
    bounded_order,
    check_max_demotion,
    order_warnings,
    placing,
    raised_in_rule,
)
from .single import ScorerReranker

__all__ = ["ANSWER_DEPTH", "FINISHED_STAGES", "Pipeline", "Stage"]

#: context key: how many of the best documents the caller will return of a result it asked
#: for whole (a service that normalises relative scores over every document, then cuts);
#: a pipeline's ``score_scale`` is then that of those documents
ANSWER_DEPTH = "answer_depth"

logger = logging.getLogger(__name__)

#: the key, within an explanation row being built, of the stage that wrote it
STAGE = "_stage"
#: how a per-document warning of a stage ends for a document an earlier stage scored and
#: this one could not (where the scorer alone would say it scored 0.0)
KEPT = "it keeps the previous stage's score and place"
#: how a scorer or reranker run alone ends a warning that it scored nothing
INPUT_ORDER = "; input order kept"


@dataclass
class Stage:
    """One step of a :class:`Pipeline`: a reranker (or scorer, or registered name) or an
    ordering rule (:class:`~rerankit.ordering.Rule`), and how many of its best documents go
    on to the next stage (``keep``; None: all of them).

    ``max_demotion`` bounds how far the stage may move a document down: none ends more than
    that many places below its place in the previous stage's order (among the documents the
    stage keeps), whatever the stage's scores say; the stage's order is changed as little as
    needed (:func:`~rerankit.rerankers.placement.bounded_order`), so its scores can rise with
    rank where the bound held a document up. None (the default): no bound. For a fusion of
    the previous order with recency, ``max_demotion=3`` keeps the previous stage's best
    document within the first four."""

    step: Any
    keep: int | None = None
    name: str | None = None
    max_demotion: int | None = None

    def __post_init__(self) -> None:
        try:
            check_max_demotion(self.max_demotion)
        except ValueError as exc:
            raise ConfigError(str(exc), where="max_demotion") from None
        if self.keep is not None and (
            isinstance(self.keep, bool) or not isinstance(self.keep, int) or self.keep < 1
        ):
            raise ConfigError(
                f"must be a positive integer or absent, got {self.keep!r}", where="keep"
            )
        if isinstance(self.step, Scorer):
            self.step = ScorerReranker(self.step)
        elif not isinstance(self.step, (Reranker, Rule)):
            raise TypeError(
                f"a stage takes a reranker, a scorer or an ordering rule, got "
                f"{type(self.step).__name__} (for a registered name: rerankit.load(name))"
            )
        if self.name is None:
            self.name = getattr(self.step, "name", type(self.step).__name__)


class Pipeline(Reranker):
    """Stages run in order; each reorders the documents the previous stage kept (the first
    stage sees all), and the documents it does not keep stay behind them in the order they
    had. So a cascade is ``Pipeline([(BM25Scorer(), 100), (CrossEncoderScorer(), 20),
    (LLMListwiseScorer(client), None)])``.

    Each document's ``scores`` and explanation hold every stage's strategies as
    ``"stage/strategy"``; its ``score`` is the one from the last stage that scored it (order
    comes from position, as scores of different stages are not comparable). Ordering rules
    keep the scores they are given. The result's ``score_scale`` is the scale of the stages
    that last scored the documents it returns when they share one (a ``top_k`` within the
    last stage's documents, or stages on one scale), else ``relative``. ``timings``
    gives each stage's seconds. A stage that raises, or scores nothing (every strategy failed,
    or the LLM provider failed for every document), leaves its documents the previous
    stage's order, scores and scale, and marks the result degraded. A stage whose LLM judge
    fails for some documents (flagged ``llm_failed``) marks it degraded too: each of those
    an earlier stage scored keeps that stage's score, scale and place (its position in the
    previous order), and the documents the stage did score fill the other places in its
    order, so a failure never demotes a document below the judged ones. A set-up mistake
    is raised, not degraded around: a model that cannot load (``ModelLoadError``,
    ``MissingDependencyError``), bad input or a bad setting (``InputError``,
    ``ConfigError``; :data:`~rerankit.errors.CALLER_ERRORS`).
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
        #: what the order of the stages undoes (a rule's order lost to a later stage), as
        #: logged when built; ``rerankit check`` prints them
        self.order_warnings = tuple(order_warnings(built))
        for warning in self.order_warnings:
            logger.warning("pipeline %r: %s", name, warning)

    def scorers(self) -> Iterator[Scorer]:
        for stage in self.stages:
            if isinstance(stage.step, Reranker):
                yield from stage.step.scorers()

    @property
    def score_scale(self) -> str:
        """The last scoring stage's scale (rules keep scores as they are; ``relative`` when
        no stage scores): what a result says when it returns only documents that stage
        scored (a ``top_k`` within its documents, as a cascade's answers are). A result
        says ``relative`` when it reaches documents an earlier stage on another scale left
        behind, and the earlier stage's scale when the last one scored nothing."""
        scales = [s.step.score_scale for s in self.stages if not isinstance(s.step, Rule)]
        return scales[-1] if scales else "relative"

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
        scoring, failures = 0, 0
        ranked_by: str | None = None  # the last stage that scored any document
        scales: list[str | None] = [None] * n  # the scale of the stage that last scored each
        scored.link = [SUM] * n  # how its explained contributions make each document's score
        last: list[str | None] = [None] * n  # the stage that last scored each document
        placed: list[str | None] = [None] * n  # the stage that decided each one's place
        answer_depth = context.pop(ANSWER_DEPTH, None)  # this pipeline's, not its stages'
        finished = context.pop(FINISHED_STAGES, None)  # (the same)
        depth = top_k if top_k is not None else answer_depth
        for k, stage in enumerate(self.stages):
            if k and (gone := ABANDONED.get()) is not None and gone.is_set():  # (a deadline)
                raise asyncio.CancelledError(f"abandoned; stage {stage.name!r} not started")
            head, tail = order[:limit], order[limit:]
            start = time.perf_counter()
            with span(f"stage {stage.name}", stage=stage.name, documents=len(head)):
                new_head, failed = await self._run_stage(
                    stage, query, docs, head, scored, dropped, context, (scales, last)
                )
            scored.timings[stage.name] = time.perf_counter() - start
            kept = set(new_head)
            was = [i for i in head if i in kept]  # the previous order, less what it dropped
            if stage.max_demotion is not None:
                new_head = bounded_order(was, new_head, stage.max_demotion)
            placing(stage.name, isinstance(stage.step, Rule), was, new_head, (last, placed))
            if not isinstance(stage.step, Rule):
                scoring += 1
                failures += failed
                if stage.name in last:
                    ranked_by = stage.name
            order = new_head + tail
            limit = min(stage.keep, len(new_head)) if stage.keep else len(new_head)
            later = [s for s in self.stages[k + 1 :] if not isinstance(s.step, Rule)]
            if finished is not None and later:  # what to answer should the rest not end
                so_far = copy.deepcopy(scored)  # (the later stages write on scored)
                so_far.failed_all = scoring > 0 and failures == scoring
                marks = (list(scales), list(last))
                ending = (order, list(dropped), (ranked_by, list(placed)), depth)
                finished.append(  # built only if asked for (at a deadline), not on each call
                    (
                        self.stages[k + 1].name,
                        functools.partial(
                            self._finish, query, docs, so_far, marks, ending, top_k, score_field
                        ),
                    )
                )
        scored.failed_all = scoring > 0 and failures == scoring
        ending = (order, dropped, (ranked_by, placed), depth)
        return self._finish(query, docs, scored, (scales, last), ending, top_k, score_field)

    async def _rank_until(
        self, rank: Any, context: dict[str, Any], until: float, seconds: Any
    ) -> RerankResult:
        """``rank(**context)`` by ``until``; at the deadline, the last finished stage's
        result, degraded (:func:`~rerankit.rerankers.deadline.rank_within`)."""
        first = self.stages[0].name
        return await rank_within(rank, context, until, seconds, name=self.name, first=first)

    def _finish(
        self,
        query: str,
        docs: Sequence[Document],
        scored: Scored,
        marks: tuple[list[str | None], list[str | None]],
        ending: tuple[list[int], list[int], tuple[str | None, list[str | None]], int | None],
        top_k: int | None,
        score_field: str,
    ) -> RerankResult:
        """The result of the stages that ran (``scored``, which this changes: give a copy
        while stages are to run), its documents in ``order``."""
        scales, last = marks
        order, dropped, (ranked_by, placed), depth = ending
        self._mark_earlier_stages(scored, last)
        returned = {scales[i] for i in (order if depth is None else order[:depth])}
        scored.scale = returned.pop() if len(returned) == 1 else "relative"
        result = assemble(
            query,
            docs,
            scored,
            top_k=top_k,
            score_field=score_field,
            order=order,
            dropped=dropped,
        )
        each = tuple(replace(r, ranked_by=placed[r.index]) for r in result)
        return replace(result, results=each, ranked_by=ranked_by)

    async def _run_stage(
        self,
        stage: Stage,
        query: str,
        docs: Sequence[Document],
        head: list[int],
        scored: Scored,
        dropped: list[int],
        context: dict[str, Any],
        marks: tuple[list[str | None], list[str | None]],
    ) -> tuple[list[int], bool]:
        """The stage's new order of ``head``, and whether the stage failed to score (a
        scoring stage records, for each document it scored, its result's scale and its own
        name in ``marks``; one that scored nothing leaves the previous scores and marks)."""
        n = len(docs)
        scales, last = marks
        sub_docs = [docs[i] for i in head]
        is_rule = isinstance(stage.step, Rule)
        try:
            if is_rule:
                current = self._current(query, sub_docs, head, scored, scales)
                sub = stage.step.apply_result(current)
            else:
                sub = await stage.step.arerank(query, sub_docs, context=context)
        except InvalidDocumentError as exc:  # its index is a position in this stage's list
            if exc.index is None or not 0 <= exc.index < len(head):
                raise
            raise exc.at(head[exc.index]) from exc
        except CALLER_ERRORS:
            raise
        except Exception as exc:
            where = raised_in_rule(exc, stage.step) if is_rule else ""
            message = (
                f"stage {stage.name!r} failed ({type(exc).__name__}: {exc}{where}); "
                "the previous stage's order is kept"
            )
            logger.warning(message, exc_info=exc)
            scored.warnings.append(message)
            scored.degraded = True
            return head, True
        # a rule's warnings name input positions already; a reranker's, its own list's
        said = [w if is_rule else _at(w, head) for w in sub.warnings]
        # a document an earlier stage scored and this one could not keeps that score and place
        earlier = any(last[i] is not None for i in head)
        scored.warnings.extend(
            f"stage {stage.name!r}: {_kept(w, earlier) if sub.unusable or earlier else w}"
            for w in said
        )
        scored.degraded |= sub.degraded
        scored.add_usage(sub.usage)
        if is_rule:  # rules see (and report) the documents' input positions
            dropped.extend(sub.dropped)
            return [r.index for r in sub], False
        if sub.unusable:  # its scores are placeholders: keep the previous stage's, as its order
            scored.warnings.append(
                f"stage {stage.name!r} scored nothing ({sub.unusable}); its documents keep "
                "the previous stage's order and scores"
            )
            for r in sub:
                if r.flags:
                    scored.flags.setdefault(head[r.index], []).extend(r.flags)
            return head, sub.failed
        stay = {r.index for r in sub if earlier and "llm_failed" in r.flags}
        if stay:
            scored.warnings.append(
                f"stage {stage.name!r} could not score {len(stay)} of {len(head)} documents "
                f"({_unscored(sorted(head[p] for p in stay))}); each keeps the previous "
                "stage's score and place, the others fill the other places in this stage's order"
            )
        for r in sub:
            i = head[r.index]
            if r.index in stay:  # its flags say why; its score here is a placeholder
                scored.flags.setdefault(i, []).extend(r.flags)
                continue
            scored.final[i] = r.score
            scales[i], last[i] = sub.score_scale, stage.name
            assert isinstance(scored.link, list)
            scored.link[i] = r.score_from_contributions
            for k, v in r.scores.items():
                key = f"{stage.name}/{k}"
                scored.per_strategy.setdefault(key, np.full(n, np.nan))[i] = v
                scored.unseen.setdefault(key, np.ones(n, dtype=bool))[i] = False
            for k, parts in r.explanation.items():  # rows with no score (intercept) too
                key = f"{stage.name}/{k}"
                scored.unseen.setdefault(key, np.ones(n, dtype=bool))[i] = False
                target = scored.explanation.setdefault(key, {})
                target.setdefault(STAGE, stage.name)
                for part, value in parts.items():
                    target.setdefault(part, np.full(n, np.nan))[i] = value
            if r.flags:
                scored.flags.setdefault(i, []).extend(r.flags)
        # a reranker whose own rules dropped some (a pipeline ending in min_score) drops them
        gone = set(range(len(head))).difference(r.index for r in sub)
        dropped.extend(head[p] for p in sorted(gone))
        judged = iter(r.index for r in sub if r.index not in stay)
        places = (p for p in range(len(head)) if p not in gone)
        return [head[p if p in stay else next(judged)] for p in places], False

    @staticmethod
    def _mark_earlier_stages(scored: Scored, last: list[str | None]) -> None:
        """Each row of a stage that chose a document but did not give its score: its
        ``contribution`` becomes ``earlier_stage_contribution`` (no term of the score)."""
        for parts in scored.explanation.values():
            stage = parts.pop(STAGE)
            share = parts.get("contribution")
            if share is None:
                continue
            earlier = np.array([s != stage for s in last])
            parts[EARLIER_STAGE] = np.where(earlier, share, np.nan)
            parts["contribution"] = np.where(earlier, np.nan, share)

    @staticmethod
    def _current(
        query: str,
        sub_docs: Sequence[Document],
        head: list[int],
        scored: Scored,
        scales: Sequence[str | None],
    ) -> RerankResult:
        """The head as a RerankResult (current scores, on the scale of the stages that
        last scored them when they share one, else ``relative``) for a rule to reorder."""
        common = {scales[i] for i in head}
        scale = common.pop() if len(common) == 1 else None
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
        return RerankResult(query=query, results=results, score_scale=scale or "relative")


def _kept(warning: str, earlier: bool = True) -> str:
    """A scorer's warning, told for a stage after one that scored the documents: a document
    was not scored 0.0 but keeps the previous stage's score and place, and a scorer that
    failed for all kept its input's order, which is the previous stage's (``earlier``)."""
    if warning.endswith(NO_SCORE):
        return warning[: -len(NO_SCORE)] + f"; {KEPT}"
    if earlier and warning.endswith(INPUT_ORDER):
        return warning[: -len(INPUT_ORDER)] + "; the previous stage's order is kept"
    return warning


def _unscored(at: list[int]) -> str:
    """The input positions of the documents a stage could not score, as a warning names
    them (``document 3``, ``documents [0, 3]``: at most ten, then how many more)."""
    if len(at) == 1:
        return f"document {at[0]}"
    more = f" and {len(at) - 10} more" if len(at) > 10 else ""
    return f"documents {at[:10]}{more}"


_ONE = re.compile(r"\bdocument (\d+)\b")
_LIST = re.compile(r"\bdocuments \[(\d+(?:, \d+)*)\]")


def _at(warning: str, head: list[int]) -> str:
    """A stage's warning naming documents by their positions in the stage's list
    (``document 0``, ``documents [0, 3]``), naming them by the caller's ``head`` instead."""

    def one(m: re.Match[str]) -> str:
        i = int(m.group(1))
        return f"document {head[i]}" if i < len(head) else m.group(0)

    def many(m: re.Match[str]) -> str:
        at = [int(i) for i in m.group(1).split(", ")]
        return f"documents {sorted(head[i] if i < len(head) else i for i in at)}"

    return _LIST.sub(many, _ONE.sub(one, warning))
