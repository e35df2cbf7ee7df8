"""The earlier names of :func:`~rerankit.batch.run_batch`'s and
:func:`~rerankit.batch.rerank_dataset`'s arguments, still taken: ``pipeline=`` is now
``reranker=`` (as :func:`rerankit.rerank`, :func:`rerankit.precompute` and every command's
``--reranker`` name it) and ``output=`` is now ``out=`` (as :func:`rerankit.evaluate`,
``tune`` and every command's ``--out`` name it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._renamed import NOT_GIVEN, one_name

__all__ = ["DEFAULT_RERANKER", "earlier_names"]

#: what a batch reranks with when no reranker is named
DEFAULT_RERANKER = "hybrid"


def earlier_names(
    out: str | Path | None, reranker: Any, options: dict[str, Any], *, call: str
) -> tuple[str | Path | None, Any]:
    """``out`` and ``reranker``, or their earlier names ``output`` and ``pipeline`` taken
    out of ``options`` (a call's other keywords); both names of one argument given is a
    TypeError, as Python says of an argument given twice (:func:`rerankit._renamed.one_name`)."""
    out = one_name(call, "out", out, "output", options.pop("output", NOT_GIVEN))
    earlier = options.pop("pipeline", NOT_GIVEN)
    reranker = one_name(call, "reranker", reranker, "pipeline", earlier, default=DEFAULT_RERANKER)
    return out, reranker
