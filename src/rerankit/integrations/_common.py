"""What the integrations share, without importing any framework."""

from __future__ import annotations

from typing import Any

__all__ = ["resolve"]


def resolve(reranker: Any) -> Any:
    """A rerankit reranker from a reranker, a scorer, a registered name or a pipeline file."""
    from ..config import load
    from ..pipeline import Reranker, get_reranker

    if isinstance(reranker, Reranker):
        return reranker
    if isinstance(reranker, str):
        return load(reranker)
    return get_reranker(reranker)
