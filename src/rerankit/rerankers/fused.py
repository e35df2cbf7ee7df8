"""Several scorers run concurrently and their scores are combined (see
:mod:`rerankit.fusion`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .. import fusion
from ..calibration import Calibration, sigmoid
from ..errors import CALLER_ERRORS
from ..normalize import check_normalization_method
from ..scorers.base import Scorer, check_scorer
from ..types import INTERCEPT, SIGMOID_OF_SUM, Document
from .base import Scored, ScoringReranker, run_scorer

#: the warning of a fusion whose every strategy failed
ALL_FAILED = "every strategy failed; input order kept"

__all__ = ["ALL_FAILED", "INTERCEPT", "FusionReranker"]


class FusionReranker(ScoringReranker):
    """Runs several scorers concurrently and combines their scores.

    Each strategy's raw scores are kept in ``RankedDocument.scores``. Score-based methods
    normalise each strategy first (``normalize_scores=True``, ``normalization_method``);
    rank-based ones (RRF, BORDA) use ranks. If some strategies fail, the rest decide the
    order and the result is ``degraded`` with a warning per failure; if all fail, the input
    order is kept. A strategy weighing 0 is not run, whatever the method: the scores are
    those of the others alone. See :mod:`rerankit.fusion` for weights, ranges and tie rules.

    ``normalization_method="calibrated"`` (with ``weighted_average``) maps each strategy's
    raw score through its fixed :class:`~rerankit.calibration.Calibration` (``calibration``,
    by strategy name) to a logit, sums the logits with the weights, and maps the sum through
    ``output_calibration`` and the sigmoid: the score is an estimate of P(relevant) that
    depends only on the query and the document (``score_scale == "probability"``). In the
    explanation, ``normalized`` is each strategy's own probability and ``contribution`` its
    share of the fused logit; an ``(intercept)`` entry holds the output calibration's
    constant, so the contributions sum to the score's logit: ``score = sigmoid(sum)``.
    Every other normalisation makes the scores relative to the request's other documents.
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
        calibration: Mapping[str, Calibration | Mapping[str, float]] | None = None,
        output_calibration: Calibration | Mapping[str, float] | None = None,
        name: str = "fusion",
    ) -> None:
        strategies = [check_scorer(s) for s in strategies]
        if not strategies:
            raise ValueError("FusionReranker needs at least one strategy")
        names = [s.name for s in strategies]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"strategy names must be unique; repeated: {dupes}")
        fusion.check_rrf_k(rrf_k)
        method = fusion.ScoreCombinationMethod.parse(combination_method)
        self.calibration: dict[str, Calibration] | None = None
        self.output_calibration = Calibration()
        if normalization_method == "calibrated":
            if method is not fusion.ScoreCombinationMethod.WEIGHTED_AVERAGE or not normalize_scores:
                raise ValueError(
                    "calibrated normalization combines logits: use method weighted_average"
                )
            given = dict(calibration or {})
            unknown = sorted(set(given) - set(names))
            missing = [n for n in names if n not in given]
            if unknown or missing:
                raise ValueError(
                    "calibrated normalization needs a calibration for every strategy"
                    + (f"; missing {missing}" if missing else "")
                    + (f"; unknown {unknown}" if unknown else "")
                )
            self.calibration = {n: Calibration.parse(given[n], f"calibration.{n}") for n in names}
            if output_calibration is not None:
                self.output_calibration = Calibration.parse(
                    output_calibration, "output_calibration"
                )
        else:
            normalization_method = check_normalization_method(normalization_method)
            if calibration is not None or output_calibration is not None:
                raise ValueError('calibration is used only with normalization "calibrated"')
        resolved = fusion.resolve_weights(names, weights)
        # a strategy weighing 0 is left out whatever the method (rerankit.fusion): not run
        self.strategies = [s for s, w in zip(strategies, resolved, strict=True) if w > 0]
        self.combination_method = method
        self.weights = (
            {s.name: weights[s.name] for s in self.strategies} if weights is not None else None
        )
        self._weights = resolved[resolved > 0]
        self.normalize_scores = normalize_scores
        self.normalization_method = normalization_method
        self.rrf_k = rrf_k
        self.name = name

    def scorers(self) -> Iterator[Scorer]:
        yield from self.strategies

    @property
    def score_scale(self) -> str:
        """``probability`` when calibrated, else ``relative``."""
        return "probability" if self.calibration is not None else "relative"

    async def _score(self, query: str, docs: Sequence[Document], **context: Any) -> Scored:
        outcomes = await asyncio.gather(
            *(run_scorer(s, query, docs, context) for s in self.strategies),
            return_exceptions=True,
        )
        scored = Scored(final=np.zeros(len(docs)))
        rows, kept = [], []
        for i, (strategy, outcome) in enumerate(zip(self.strategies, outcomes, strict=True)):
            if isinstance(outcome, CALLER_ERRORS) or (
                isinstance(outcome, BaseException) and not isinstance(outcome, Exception)
            ):
                raise outcome
            if isinstance(outcome, Exception):
                scored.failed(strategy, outcome)
                continue
            rows.append(scored.take(strategy.name, outcome))
            kept.append(i)
        if not rows:
            scored.warnings.append(ALL_FAILED)
            scored.failed_all = True
            return scored
        weights = self._weights[kept] / self._weights[kept].sum()
        if self.calibration is not None:
            self._calibrated(scored, rows, kept, weights)
            return scored
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

    def _calibrated(
        self, scored: Scored, rows: list[np.ndarray], kept: list[int], weights: np.ndarray
    ) -> None:
        """Weighted sum of the strategies' calibrated logits, through the output map."""
        assert self.calibration is not None
        out = self.output_calibration
        names = [self.strategies[j].name for j in kept]
        logits = np.vstack([self.calibration[n].logit(r) for n, r in zip(names, rows, strict=True)])
        shares = out.slope * weights[:, None] * logits
        scored.final = sigmoid(shares.sum(axis=0) + out.intercept)
        scored.link = SIGMOID_OF_SUM
        for row, name in enumerate(names):
            scored.explanation[name] = {
                "raw": scored.per_strategy[name],
                "normalized": sigmoid(logits[row]),
                "weight": float(weights[row]),
                "contribution": shares[row],
            }
        # the calibration's own term, so the contributions add up to the score's logit:
        # score = sigmoid(sum of contributions), readable from the explanation alone
        constant = np.full(len(scored.final), float(out.intercept))
        scored.explanation[INTERCEPT] = {
            "raw": constant,
            "normalized": constant,
            "weight": 1.0,
            "contribution": constant,
        }
