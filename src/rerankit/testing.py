"""The 0.1.0 import path of the fake LLM provider server: deprecated, kept working.
Importing it warns (``DeprecationWarning``); import from :mod:`rerankit.llm.testing`."""

from __future__ import annotations

import warnings

from .llm.testing import FakeLLMServer, RecordedRequest, Reply

__all__ = ["FakeLLMServer", "RecordedRequest", "Reply"]

warnings.warn(
    "rerankit.testing is now rerankit.llm.testing: import from there",
    DeprecationWarning,
    stacklevel=2,
)
