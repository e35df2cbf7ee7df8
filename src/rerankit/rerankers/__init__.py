"""Rerankers: one scorer (``single``), several fused (``fused``), the default hybrid
(``hybrid``) and staged pipelines (``cascade``), on one base (``base``)."""

from .base import Reranker, Scored, ScoringReranker, assemble, run_sync
from .cascade import Pipeline, Stage
from .fused import FusionReranker
from .hybrid import HybridReranker
from .single import ScorerReranker

__all__ = [
    "FusionReranker",
    "HybridReranker",
    "Pipeline",
    "Reranker",
    "Scored",
    "ScorerReranker",
    "ScoringReranker",
    "Stage",
    "assemble",
    "run_sync",
]
