"""The 0.1.0 import path of :class:`~rerankit.backends.HardwareProfile`: deprecated, kept
working. Importing it warns (``DeprecationWarning``); import from :mod:`rerankit.backends`."""

from __future__ import annotations

import warnings

from .backends import HardwareProfile

__all__ = ["HardwareProfile"]

warnings.warn(
    "rerankit.hardware is now rerankit.backends: import from there",
    DeprecationWarning,
    stacklevel=2,
)
