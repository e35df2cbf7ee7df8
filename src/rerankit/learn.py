"""Deprecated: the learned scorer moved to :mod:`rerankit.scorers.learned` and its training
to :mod:`rerankit.training.ltr` (this name goes in the next release)."""

import warnings

from .scorers.learned import *  # noqa: F403
from .scorers.learned import __all__ as _scorer_names
from .training.ltr import *  # noqa: F403
from .training.ltr import __all__ as _training_names

__all__ = [*_scorer_names, *_training_names]

warnings.warn(
    "rerankit.learn moved to rerankit.scorers.learned (the scorer) and rerankit.training.ltr "
    "(its training)",
    DeprecationWarning,
    stacklevel=2,
)
