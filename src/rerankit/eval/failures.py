"""A pipeline that raised while reranking during an evaluation: :class:`PipelineFailed`
(which pipeline, which query, the error) and what is said of it under the table.

:func:`~rerankit.eval.evaluate` records such a pipeline in its collection's
``meta["failed"]`` (``results.json``'s ``failed``) and goes on with the others: the failed
one has no row (a part of its queries measured would read as a result), and ``rerankit
eval`` exits 3 after printing and writing the rest (1 when every pipeline failed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import RerankitError

__all__ = ["PipelineFailed", "common_rows", "failed_lines"]


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
