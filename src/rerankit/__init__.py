"""rerankit: put the most relevant candidates first.

>>> import rerankit
>>> result = rerankit.rerank("solar power", ["wind farms", "solar panels on roofs"])
>>> result[0].text
'solar panels on roofs'

The front door holds what a first program needs: :func:`rerank` and :func:`load`, the
:class:`Reranker` and :class:`Pipeline` they give, the documents and results, the per-call
:class:`InputFields`, :func:`evaluate` (``rerankit eval`` in one call, from
:mod:`rerankit.eval`), the errors worth catching and the registry of names, and, outside
``__all__`` (at most 15 names), :func:`precompute` (a corpus encoded into the cache ahead
of traffic). The parts live
in their own modules: scorers in :mod:`rerankit.scorers`, rerankers in
:mod:`rerankit.rerankers`, caches in :mod:`rerankit.cache`, text analysis in
:mod:`rerankit.text`, fusion and normalisation in :mod:`rerankit.fusion` and
:mod:`rerankit.normalize`, every error in :mod:`rerankit.errors`, learning in
:mod:`rerankit.training`.

Importing the package is cheap: numpy and the scorers load on first use.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from .errors import InputError, MissingDependencyError, RerankitError
from .types import Document, RankedDocument, RerankResult

#: PEP 440; the package metadata reads it from here (pyproject.toml [tool.hatch.version])
__version__ = "0.2.0.dev0"

# A library never configures logging; this only stops Python's last-resort handler from
# printing our warnings when the application has not configured logging either.
logging.getLogger(__name__).addHandler(logging.NullHandler())

_LAZY = {
    "rerank": "api",
    "load": "api",
    "register_reranker": "api",
    "available_rerankers": "api",
    "Reranker": "rerankers",
    "Pipeline": "rerankers",
    "InputFields": "documents",
    "evaluate": "eval",
    "precompute": "api",
}

#: where the names that left the front door live now (said when one is asked for here)
_MOVED = {
    **dict.fromkeys(
        (
            "BM25Scorer",
            "CausalLMScorer",
            "CrossEncoderScorer",
            "EmbeddingScorer",
            "FieldScorer",
            "FunctionScorer",
            "GraphScorer",
            "JaccardScorer",
            "LLMListwiseScorer",
            "LLMPointwiseScorer",
            "PopularityScorer",
            "ProximityScorer",
            "RecencyScorer",
            "ScoreBatch",
            "Scorer",
            "TextSimilarity",
        ),
        "rerankit.scorers",
    ),
    **dict.fromkeys(
        ("FusionReranker", "HybridReranker", "ScorerReranker", "Stage"), "rerankit.rerankers"
    ),
    **dict.fromkeys(
        ("ConfigError", "InvalidDocumentError", "ModelLoadError", "ProviderError", "ScorerError"),
        "rerankit.errors",
    ),
    "Analyzer": "rerankit.text",
    "HardwareProfile": "rerankit.backends",
    "EmbeddingCache": "rerankit.cache",
    "JudgmentCache": "rerankit.cache",
    "ScoreCombinationMethod": "rerankit.fusion",
    "combine_scores": "rerankit.fusion",
    "normalize_scores": "rerankit.normalize",
}

#: names removed after a deprecation, and what replaces them
_REMOVED = {
    "get_reranker": "rerankit.load(name)",
    "hybrid_reranker": "rerankit.rerankers.HybridReranker",
    "onnx_models": "rerankit.backends.onnx",
    "learn": "rerankit.scorers.learned and rerankit.training.ltr",
    "train": "rerankit.training.embedding",
}

#: the package's parts, imported when first reached as ``rerankit.<part>``
_PARTS = (
    "api",
    "backends",
    "batch",
    "cache",
    "compat",
    "config",
    "documents",
    "errors",
    "eval",
    "fusion",
    "integrations",
    "llm",
    "normalize",
    "ordering",
    "registry",
    "rerankers",
    "scorers",
    "text",
    "training",
    "types",
)

__all__ = [
    "Document",
    "InputError",
    "InputFields",
    "MissingDependencyError",
    "Pipeline",
    "RankedDocument",
    "RerankResult",
    "Reranker",
    "RerankitError",
    "__version__",
    "available_rerankers",
    "evaluate",
    "load",
    "register_reranker",
    "rerank",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value
    if name in _PARTS:
        return importlib.import_module(f".{name}", __name__)
    if name in _MOVED:
        raise AttributeError(
            f"rerankit.{name} is not in the package's front door: from {_MOVED[name]} import {name}"
        )
    if name in _REMOVED:
        raise AttributeError(f"rerankit.{name} was removed: use {_REMOVED[name]}")
    raise AttributeError(f"module 'rerankit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
