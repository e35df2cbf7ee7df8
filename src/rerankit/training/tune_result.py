"""What :func:`~rerankit.training.tune` gives back: :class:`TuneResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..documents import FIRST_STAGE_SCORE
from ..eval.refit_check import OutputRefit
from . import crossval
from .selection import Comparison

__all__ = ["TuneResult"]


@dataclass
class TuneResult:
    """What :func:`~rerankit.training.tune` chose and measured.

    ``path``: the pipeline file written, ``spec`` its pipeline (load either with
    :func:`rerankit.load`) and ``comment`` the reason written above it; ``learned``: whether
    the learned pipeline was written (adopted, or ``keep_learned``), else the default;
    ``default``: the default it was measured against (``"hybrid"``, or ``"fusion"``: the
    hybrid's fusion over another embedding model); ``comparison``: the cross-validated
    comparison with it, also read as ``adopted`` (the verdict: the learned pipeline beat the
    default by more than ``verdict.margin`` times the noise), ``verdict`` (nDCG@10 as
    fractions: gain, noise, per fold), ``cross_validation``, ``learning_curve`` (training
    queries per fit, cross-validated nDCG@10) and ``chosen`` (the best learned option);
    ``model_path`` and ``model_report``: a learned ranker's file and its report; ``test``:
    the rows of the report on the test split (first stage, ``hybrid``, the written
    pipeline; see :func:`rerankit.eval.runner.evaluate_runs`) with ``test_name`` and
    ``test_queries``, or None without a test split; ``lines``: the account, as ``rerankit
    tune`` prints it (the test-split report included); ``notes``: what reading the
    collections found amiss (:attr:`~rerankit.eval.data.Dataset.notes`; the reporter's
    ``note`` hears each as a warning).

    With ``calibrate=True`` the written pipeline's probabilities have a verdict of their own:
    ``probabilities_refitted`` says whether they were refitted to these judgments (with the
    refitted weights when ``adopted``; else over the default's order, when the refit
    predicted held-out queries better, or ``keep_learned`` asked), and
    ``probability_check`` is that check (:class:`~rerankit.eval.refit_check.OutputRefit`:
    ``refit_loss``, ``default_loss``, ``gain``, ``noise``, ``adopt``, ``refit_ece``,
    ``default_ece``; None when the weights were adopted, or for the other methods), so
    ``adopted`` False does not mean the default's probabilities were written."""

    method: str
    path: Path
    spec: dict[str, Any]
    comment: str
    learned: bool
    default: str
    comparison: Comparison
    model_path: Path | None = None
    model_report: dict[str, Any] = field(default_factory=dict)
    test: list[dict[str, Any]] | None = None
    test_name: str | None = None
    test_queries: int = 0
    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    probabilities_refitted: bool = False
    probability_check: OutputRefit | None = None

    @property
    def verdict(self) -> crossval.Verdict:
        return self.comparison.verdict

    @property
    def adopted(self) -> bool:
        return self.comparison.verdict.adopt

    @property
    def cross_validation(self) -> crossval.CrossValidation:
        return self.comparison.cross_validation

    @property
    def learning_curve(self) -> list[tuple[int, float]]:
        return self.comparison.learning_curve

    @property
    def chosen(self) -> str:
        return self.comparison.chosen

    @property
    def reads_first_stage(self) -> bool:
        """Whether the written pipeline reads the retriever's score (a ``field`` scorer on
        ``first_stage_score``, or a learned ranker with a first-stage feature): serving it
        then needs that score with each document, as training had it."""

        def reads(node: Any) -> bool:
            if isinstance(node, dict):
                if node.get("field") == FIRST_STAGE_SCORE:
                    return True
                if node.get("type") == "learned":
                    features = self.model_report.get("features", ())
                    return any(str(f).startswith("first_stage") for f in features)
                return any(reads(v) for v in node.values())
            if isinstance(node, list):
                return any(reads(v) for v in node)
            return False

        return reads(self.spec)
