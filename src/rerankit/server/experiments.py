"""What a logged answer shows (with ``[server.feedback]`` on): the pipeline's ranking, or,
on a share of requests, an experiment whose clicks the log can learn from.

- ``interleave = ["current", "candidate"]`` with ``interleave_share``: that share of the
  requests served by ``current`` is answered with an interleaving of both pipelines'
  rankings, optimized (``interleave_method = "optimized"``, the default:
  :func:`rerankit.training.clicks.optimized.optimized_interleave`; the impression records
  each position's credit) or team draft (``"team-draft"``:
  :func:`rerankit.training.clicks.team_draft`; the impression records which pipeline
  placed each position), so ``rerankit interleave-report LOG`` can credit the clicks. A
  request whose rankings admit no unbiased optimized interleaving (rare) is answered by
  ``current`` alone. The answer's relevance scores, their scale (``meta.rerankit.scores``)
  and the rest of ``meta`` are ``current``'s, as its plain answer would give them (a
  document only ``candidate`` kept, one an ordering rule of ``current`` dropped, carries
  ``candidate``'s score mapped into [0, 1]).
- ``explore`` with ``explore_pairs``: that share of all requests (never one interleaved:
  ``interleave_share + explore`` is at most 1) has adjacent results below the top 3
  exchanged (RandPair, each pair with probability ``explore_pairs``;
  :func:`rerankit.training.clicks.randpair`), and the impression records the order shown
  and the swaps, so propensities below position 3 can be measured from them.

A request sent with ``x-rerankit-experiment: off`` (a parity check, a probe) gets neither:
it is answered plainly and logs no impression (:mod:`.opt_out`).

An answer so changed says it in ``meta.rerankit.order`` (``"interleaved"`` or
``"explored"``): its relevance scores are then not in decreasing order (an exploration
that exchanged no pair is logged as one but not marked: its order is the plain one). If
the candidate fails, the request is answered by ``current`` alone (and logged as such).
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import replace
from typing import Any

import numpy as np

from ..training.clicks.interleave import team_draft
from ..training.clicks.optimized import optimized_interleave
from ..training.clicks.propensity import randpair
from ..types import RerankResult
from .feedback import experiments_said
from .formats.base import Call, relevance_scores
from .opt_out import OPTED_OUT
from .service import Service
from .settings import ServerSettings

__all__ = ["Experiments", "reordered"]

logger = logging.getLogger(__name__)

#: how many different warnings of an interleaved second pipeline are logged, at most
WARNINGS_SAID = 100


def reordered(results: list[Any], order: list[int]) -> tuple[Any, ...]:
    """``results`` (ranked documents) in ``order`` (positions into them), ranks renumbered."""
    return tuple(replace(results[i], rank=r) for r, i in enumerate(order, start=1))


class Experiments:
    """Serves a logged request: the plain ranking, an interleaving or an exploration (see
    the module doc). ``seed``: the draws, repeatable (None: fresh)."""

    def __init__(self, service: Service, settings: ServerSettings, seed: int | None = None):
        self.service, self.settings = service, settings
        self.coin = random.Random(seed)
        self.rng = np.random.default_rng(seed)
        self.said: set[tuple[str, str]] = set()  # the second pipeline's warnings logged
        for line in experiments_said(settings):
            logger.info("%s", line)

    def plan(self, call: Call) -> str | None:
        """What this request gets: ``"interleave"``, ``"explore"`` or None (the plain
        ranking, which the answer cache may answer), drawn once; always None for a request
        sent with ``x-rerankit-experiment: off`` (:mod:`.opt_out`)."""
        s = self.settings
        if OPTED_OUT.get():
            return None
        pair = s.interleave
        # one draw: [0, interleave_share) interleaves a request to the first pipeline, the
        # next `explore` explores, so explore is the share of all requests explored
        draw = self.coin.random()
        interleaved = s.interleave_share if pair and s.resolve(call.model) == pair[0] else 0.0
        if draw < interleaved:
            return "interleave"
        if s.explore and interleaved <= draw < interleaved + s.explore:
            return "explore"
        return None

    async def run(
        self, endpoint: str, call: Call, arrival: float | None, plan: str | None
    ) -> tuple[RerankResult, dict[str, Any]]:
        """The result to answer and what its impression records beside it (``explore`` or
        ``interleaving``; empty for a plain ranking), for ``plan`` (see :meth:`plan`)."""
        if plan == "interleave":
            return await self._interleaved(endpoint, call, arrival, self.settings.interleave)
        result = await self.service.run(endpoint, call, arrival)
        return self._explored(result) if plan == "explore" else (result, {})

    async def _interleaved(
        self, endpoint: str, call: Call, arrival: float | None, pair: list[str]
    ) -> tuple[RerankResult, dict[str, Any]]:
        # each pipeline's call has its own state: the answer's scores are the first's
        current = replace(
            call, model=pair[0], top_n=None, timings={}, cuts={}, splits={}, usage={}, relevance={}
        )
        candidate = replace(
            call, model=pair[1], top_n=None, timings={}, cuts={}, splits={}, usage={}, relevance={}
        )
        a, b = await asyncio.gather(
            self.service.run(endpoint, current, arrival),
            self.service.run(endpoint, candidate, arrival),
            return_exceptions=True,
        )
        if isinstance(a, BaseException):
            raise a
        for name in ("timings", "cuts", "splits", "usage", "relevance"):  # the answer's
            getattr(call, name).update(getattr(current, name))
        if isinstance(b, BaseException):
            logger.warning("interleave: %r failed (%s); answered by %r alone", pair[1], b, pair[0])
            return (a if call.top_n is None else a.top_k(call.top_n)), {}
        self._say_warnings(pair, b.warnings)
        k = len(a) if call.top_n is None else call.top_n
        ranking_a, ranking_b = [r.index for r in a], [r.index for r in b]
        info: dict[str, Any] = {"pipelines": list(pair)}
        if self.settings.interleave_method == "team-draft":
            indices, info["teams"] = self._team_draft(ranking_a, ranking_b, k)
        else:
            coin = random.Random(int(self.rng.integers(2**63)))  # the generator stays here
            mixed = await asyncio.to_thread(optimized_interleave, ranking_a, ranking_b, coin, k=k)
            if mixed is None:
                logger.info("interleave: no unbiased interleaving; answered by %r", pair[0])
                return (a if call.top_n is None else a.top_k(call.top_n)), {}
            indices, info["credits"] = [int(i) for i in mixed[0]], mixed[1]
        by_index = {r.index: r for r in b} | {r.index: r for r in a}
        ranked = [by_index[i] for i in indices]
        # each document's relevance score: the first pipeline's; the second's (in [0, 1]
        # by its own scale) for a document only the second kept
        unit = dict(zip([r.index for r in b], relevance_scores(b, candidate), strict=True))
        unit |= dict(zip([r.index for r in a], relevance_scores(a, current), strict=True))
        call.relevance.update({i: unit[i] for i in indices})
        result = replace(a, results=reordered(ranked, list(range(len(ranked)))))
        return result, {"interleaving": info}

    def _say_warnings(self, pair: list[str], warnings: tuple[str, ...]) -> None:
        """Log the second pipeline's warnings, which the interleaved answer (the first's
        meta) does not carry: each once, and none past :data:`WARNINGS_SAID` different."""
        for text in warnings:
            if (pair[1], text) in self.said or len(self.said) >= WARNINGS_SAID:
                continue
            self.said.add((pair[1], text))
            logger.warning(
                "interleave: %r warned (not in the interleaved answers, which carry %r's "
                "warnings; said once): %s",
                pair[1],
                pair[0],
                text,
            )

    def _team_draft(self, a: list[int], b: list[int], k: int) -> tuple[list[int], list[int]]:
        order, teams = team_draft(a, b, self.rng, k=k)
        return [int(i) for i in order], teams

    def _explored(self, result: RerankResult) -> tuple[RerankResult, dict[str, Any]]:
        shown, swapped = randpair(
            list(range(len(result))), self.rng, pairs=self.settings.explore_pairs
        )
        results = reordered(list(result.results), [int(i) for i in shown])
        return replace(result, results=results), {"explore": {"swapped": swapped}}
