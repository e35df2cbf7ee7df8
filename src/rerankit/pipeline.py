"""The 0.1.0 import path of the rerankers and ``rerank``: deprecated, kept working.

``rerankit.pipeline`` was split: the rerankers live in :mod:`rerankit.rerankers`, and
``rerank``, ``register_reranker`` and ``available_rerankers`` on :mod:`rerankit`. Importing
this module warns (``DeprecationWarning``) and gives the same objects.
"""

from __future__ import annotations

import warnings
from typing import Any

from .api import available_rerankers, register_reranker, rerank
from .rerankers import FusionReranker, HybridReranker, Pipeline, Reranker, ScorerReranker, Stage

__all__ = [
    "FusionReranker",
    "HybridReranker",
    "Pipeline",
    "Reranker",
    "ScorerReranker",
    "Stage",
    "available_rerankers",
    "register_reranker",
    "rerank",
]

warnings.warn(
    "rerankit.pipeline is now rerankit.rerankers (Pipeline, Stage, Reranker, ScorerReranker, "
    "FusionReranker, HybridReranker) and rerankit (rerank, register_reranker, "
    "available_rerankers): import from there",
    DeprecationWarning,
    stacklevel=2,
)

#: the 0.1.0 names that are gone, and what replaces them
_REMOVED = {
    "get_reranker": "rerankit.load(name)",
    "hybrid_reranker": "rerankit.rerankers.HybridReranker(...)",
}


def __getattr__(name: str) -> Any:
    if name in _REMOVED:  # an ImportError, so that `from rerankit.pipeline import ...` says it
        raise ImportError(f"rerankit.pipeline.{name} was removed: use {_REMOVED[name]}")
    raise AttributeError(f"module 'rerankit.pipeline' has no attribute {name!r}")
