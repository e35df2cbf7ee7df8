"""Scorers: each turns (query, documents) into one relevance score per document. One file
per family, the scorers that share one computation (docs/layout.md, "Adding a part"),
here by what they read: words (:mod:`.lexical`, :mod:`.proximity`, :mod:`.coverage`), a
document's fields (:mod:`.field`), a graph (:mod:`.graph`), feedback from the previous
stage (:mod:`.prf`), local models (:mod:`.embedding`, :mod:`.cross_encoder`, :mod:`.causal_lm`,
on :mod:`.local`), LLM judges (:mod:`.llm_pointwise`, :mod:`.llm_listwise`) and a learned
ranker (:mod:`.learned`); :mod:`.recipe` holds the default hybrid's recipe. Importing this
package loads no model and no heavy dependency: each loads on first use.

>>> from rerankit.scorers import BM25Scorer
>>> int(BM25Scorer().score_texts("solar power", ["wind farms", "solar panels"]).argmax())
1
"""

from __future__ import annotations

import warnings
from typing import Any

from .. import text
from .base import ScoreBatch, Scorer, as_score_batch
from .causal_lm import CausalLMScorer
from .coverage import CoverageScorer
from .cross_encoder import CrossEncoderScorer
from .embedding import EmbeddingScorer
from .field import FieldScorer, FunctionScorer, PopularityScorer, RecencyScorer
from .graph import GraphScorer, GraphStore, NetworkXGraphStore
from .learned import LearnedScorer
from .lexical import BM25Scorer, JaccardScorer, TextSimilarity
from .llm_listwise import LLMListwiseScorer
from .llm_pointwise import LLMPointwiseScorer
from .local import LocalModelScorer
from .prf import PositionScorer, PRFScorer
from .proximity import ProximityScorer

__all__ = [
    "BM25Scorer",
    "CausalLMScorer",
    "CoverageScorer",
    "CrossEncoderScorer",
    "EmbeddingScorer",
    "FieldScorer",
    "FunctionScorer",
    "GraphScorer",
    "GraphStore",
    "JaccardScorer",
    "LLMListwiseScorer",
    "LLMPointwiseScorer",
    "LearnedScorer",
    "LocalModelScorer",
    "NetworkXGraphStore",
    "PRFScorer",
    "PopularityScorer",
    "PositionScorer",
    "ProximityScorer",
    "RecencyScorer",
    "ScoreBatch",
    "Scorer",
    "TextSimilarity",
    "as_score_batch",
]


def __getattr__(name: str) -> Any:
    if name == "Analyzer":  # its 0.1.0 home, kept working
        warnings.warn(
            "rerankit.scorers.Analyzer is now rerankit.text.Analyzer: import from there",
            DeprecationWarning,
            stacklevel=2,
        )
        return text.Analyzer
    raise AttributeError(f"module 'rerankit.scorers' has no attribute {name!r}")
