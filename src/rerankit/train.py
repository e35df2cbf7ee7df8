"""Deprecated: moved to :mod:`rerankit.training.embedding` (this name goes in the next
release)."""

import sys
import warnings

from .training import embedding

warnings.warn(
    "rerankit.train moved to rerankit.training.embedding", DeprecationWarning, stacklevel=2
)
sys.modules[__name__] = embedding
