"""Evaluation on your own data: :func:`evaluate` in one call (what ``rerankit eval`` runs),
BEIR-layout loading, a BM25 first stage, ranking metrics.

:func:`evaluate` and its results load on first use (they build rerankers), so reading a
collection or scoring a run imports no more than it needs."""

from __future__ import annotations

import importlib
from typing import Any

from .data import Dataset, load_beir, load_qrels, load_run
from .metrics import mean_ndcg, ndcg_at_k

_LAZY = {
    "evaluate": "evaluation",
    "Evaluation": "results",
    "CollectionEvaluation": "results",
}

__all__ = [
    "CollectionEvaluation",
    "Dataset",
    "Evaluation",
    "evaluate",
    "load_beir",
    "load_qrels",
    "load_run",
    "mean_ndcg",
    "ndcg_at_k",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rerankit.eval' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
