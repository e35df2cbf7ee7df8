"""rerankit: put the most relevant candidates first.

>>> import rerankit
>>> result = rerankit.rerank("solar power", ["wind farms", "solar panels on roofs"])
>>> result[0].text
'solar panels on roofs'

Importing the package is cheap: numpy and the scorers load on first use.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from .errors import (
    ConfigError,
    InputError,
    InvalidDocumentError,
    MissingDependencyError,
    ModelLoadError,
    ProviderError,
    RerankitError,
    ScorerError,
)
from .types import Document, RankedDocument, RerankResult

__version__ = "0.1.0"

# A library never configures logging; this only stops Python's last-resort handler from
# printing our warnings when the application has not configured logging either.
logging.getLogger(__name__).addHandler(logging.NullHandler())

_LAZY = {
    "rerank": "api",
    "load": "api",
    "InputFields": "documents",
    "register_reranker": "api",
    "available_rerankers": "api",
    "Reranker": "rerankers",
    "ScorerReranker": "rerankers",
    "FusionReranker": "rerankers",
    "HybridReranker": "rerankers",
    "Pipeline": "rerankers",
    "Stage": "rerankers",
    "Scorer": "scorers.base",
    "ScoreBatch": "scorers.base",
    "Analyzer": "scorers.lexical",
    "BM25Scorer": "scorers.lexical",
    "JaccardScorer": "scorers.lexical",
    "TextSimilarity": "scorers.lexical",
    "ProximityScorer": "scorers.proximity",
    "FieldScorer": "scorers.field",
    "RecencyScorer": "scorers.field",
    "PopularityScorer": "scorers.field",
    "FunctionScorer": "scorers.field",
    "GraphScorer": "scorers.graph",
    "EmbeddingScorer": "scorers.embedding",
    "CrossEncoderScorer": "scorers.cross_encoder",
    "CausalLMScorer": "scorers.causal_lm",
    "HardwareProfile": "backends.hardware",
    "EmbeddingCache": "cache",
    "JudgmentCache": "cache",
    "LLMPointwiseScorer": "scorers.llm_pointwise",
    "LLMListwiseScorer": "scorers.llm_listwise",
    "ScoreCombinationMethod": "fusion",
    "normalize_scores": "normalize",
    "combine_scores": "fusion",
}

__all__ = [
    "ConfigError",
    "Document",
    "InputError",
    "InputFields",
    "InvalidDocumentError",
    "MissingDependencyError",
    "ModelLoadError",
    "ProviderError",
    "RankedDocument",
    "RerankResult",
    "RerankitError",
    "ScorerError",
    "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rerankit' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
