"""A pipeline that raised while reranking during an evaluation: :class:`PipelineFailed`
(which pipeline, which query, the error) and what is said of it under the table; and one
that Ctrl-C stopped: :class:`PipelineInterrupted`, and :class:`EvaluationInterrupted`,
which carries what had finished.

:func:`~rerankit.eval.evaluate` records such a pipeline in its collection's
``meta["failed"]`` (``results.json``'s ``failed``) and goes on with the others: the failed
one has no row (a part of its queries measured would read as a result), and ``rerankit
eval`` exits 3 after printing and writing the rest (1 when every pipeline failed).

Ctrl-C (KeyboardInterrupt) is not a failure: :func:`~rerankit.eval.evaluate` measures and
writes the pipelines that had finished, records the one it stopped and those not started
(``meta["interrupted"]``, ``results.json``'s ``interrupted``) and raises
:class:`EvaluationInterrupted` (a ``KeyboardInterrupt``) with that evaluation;
``rerankit eval`` prints it and exits 130."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import RerankitError

__all__ = [
    "EvaluationInterrupted",
    "PipelineFailed",
    "PipelineInterrupted",
    "common_rows",
    "failed_lines",
    "interrupted_lines",
]


class PipelineFailed(RerankitError):
    """``pipeline`` raised ``error`` while reranking query ``query_id`` (``reranked``
    queries done before it); :meth:`record` is what the evaluation keeps of it."""

    def __init__(
        self,
        pipeline: str,
        query_id: str | None,
        error: BaseException | str,
        reranked: int = 0,
        error_type: str | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.query_id = query_id
        self.error_type = error_type or (
            type(error).__name__ if isinstance(error, BaseException) else "Error"
        )
        self.error = str(error)
        self.reranked = reranked
        where = f" on query {query_id!r}" if query_id is not None else ""
        super().__init__(f"{pipeline} failed{where}: {self.error_type}: {self.error}")

    def record(self, name: str | None = None) -> dict[str, Any]:
        """Plain data: ``pipeline`` (``name``, the label it is shown under, when given),
        ``query_id``, ``error_type``, ``error`` and ``reranked_queries`` (done before it)."""
        return {
            "pipeline": name or self.pipeline,
            "query_id": self.query_id,
            "error_type": self.error_type,
            "error": self.error,
            "reranked_queries": self.reranked,
        }


class PipelineInterrupted(KeyboardInterrupt):
    """Ctrl-C while ``pipeline`` reranked query ``query_id`` (None: between queries, or
    not known), ``reranked`` queries done before it. A ``KeyboardInterrupt``."""

    def __init__(self, pipeline: str, query_id: str | None = None, reranked: int = 0) -> None:
        super().__init__(f"{pipeline} interrupted")
        self.pipeline, self.query_id, self.reranked = pipeline, query_id, reranked

    def record(self, not_started: Sequence[str] = ()) -> dict[str, Any]:
        """Plain data: ``pipeline``, ``query_id``, ``reranked_queries`` and
        ``not_started`` (the pipelines after it, in order)."""
        return {
            "pipeline": self.pipeline,
            "query_id": self.query_id,
            "reranked_queries": self.reranked,
            "not_started": list(not_started),
        }


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`~rerankit.eval.evaluate`: ``evaluation`` holds what had
    finished, measured (and written, with ``out``) as usual, the collection it stopped in
    with the pipelines done there; its ``interrupted`` says which pipeline was stopped
    and what was not started. A ``KeyboardInterrupt``, so code that does not catch it stops
    as on any Ctrl-C."""

    def __init__(self, evaluation: Any) -> None:
        super().__init__("evaluation interrupted; what had finished is in .evaluation")
        self.evaluation = evaluation


def interrupted_lines(stopped: Mapping[str, Any] | None, several: bool = False) -> list[str]:
    """What to say of an interrupted evaluation (see :attr:`Evaluation.interrupted
    <rerankit.eval.results.Evaluation.interrupted>`): the pipeline stopped, on which query,
    and the pipelines and collections not started (on which collection, with ``several``);
    none of them is measured."""
    if not stopped:
        return []
    where = f" on {stopped['collection']}" if several and stopped.get("collection") else ""
    lines = []
    if stopped.get("pipeline"):
        query = f" on query {stopped['query_id']!r}" if stopped.get("query_id") else ""
        lines.append(
            f"INTERRUPTED: {stopped['pipeline']}{where} stopped by Ctrl-C{query} "
            f"({stopped['reranked_queries']} queries reranked before it); not measured, so "
            "it has no row"
        )
    elif stopped.get("collection"):
        lines.append(
            f"INTERRUPTED: Ctrl-C before any pipeline ran on {stopped['collection']}; not measured"
        )
    if stopped.get("not_started"):
        lines.append(
            f"INTERRUPTED: {', '.join(stopped['not_started'])}{where} not started; not measured"
        )
    if stopped.get("collections_not_started"):
        lines.append(
            f"INTERRUPTED: {', '.join(stopped['collections_not_started'])} not started; "
            "not measured"
        )
    return lines


def failed_lines(failed: Sequence[Mapping[str, Any]], where: str = "") -> list[str]:
    """A line for each failed pipeline (see :meth:`PipelineFailed.record`): which, on
    which query, why, and that it has no row."""
    lines = []
    for f in failed:
        query = f" on query {f['query_id']!r}" if f.get("query_id") is not None else ""
        lines.append(
            f"FAILED: {f['pipeline']}{where} raised{query} ({f['reranked_queries']} queries "
            f"reranked before it): {f['error_type']}: {f['error']}; not measured, so it has "
            "no row"
        )
    return lines


def common_rows(collections: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``collections`` (each with ``rows``) with only the rows of pipelines every one of
    them measured: a pipeline that failed on one has no mean over them."""
    every = set.intersection(*({r["pipeline"] for r in c["rows"]} for c in collections))
    return [{**c, "rows": [r for r in c["rows"] if r["pipeline"] in every]} for c in collections]
