"""One scorer's scores decide the order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import CALLER_ERRORS
from ..scorers.base import Scorer, check_scorer
from ..types import Document
from .base import Scored, ScoringReranker, run_scorer

__all__ = ["ScorerReranker"]


class ScorerReranker(ScoringReranker):
    """Orders by one scorer's scores. If the scorer fails, the input order is kept and the
    result is marked ``degraded`` (scores 0.0) with the error in ``warnings``."""

    def __init__(self, scorer: Scorer, *, name: str | None = None) -> None:
        self.scorer = check_scorer(scorer)
        self.name = name or scorer.name

    def scorers(self) -> Iterator[Scorer]:
        yield self.scorer

    @property
    def score_scale(self) -> str:
        """The scorer's ``score_scale`` (``relative`` when it declares none)."""
        return getattr(self.scorer, "score_scale", "relative")

    async def _score(self, query: str, docs: Sequence[Document], **context: Any) -> Scored:
        scored = Scored(final=np.zeros(len(docs)))
        try:
            batch = await run_scorer(self.scorer, query, docs, context)
        except CALLER_ERRORS:
            raise
        except Exception as exc:
            scored.failed(self.scorer, exc)
            scored.failed_all = True
            return scored
        name = self.scorer.name
        scored.final = scored.take(name, batch)
        scored.explanation[name] = {"raw": batch.values, "normalized": scored.final, "weight": 1.0}
        if not batch.parts:  # else the parts are the terms of the score
            scored.explanation[name]["contribution"] = scored.final
        for part, (values, shares) in batch.parts.items():  # e.g. a learned model's features
            scored.explanation[f"{name}.{part}"] = {"raw": values, "contribution": shares}
        return scored
