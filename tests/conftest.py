from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from rerankit import Document


class FixedScorer:
    """A scorer returning preset values (a test double for *callers* of scorers)."""

    def __init__(self, name: str, values: Sequence[float]) -> None:
        self.name = name
        self.values = np.asarray(values, dtype=float)
        self.calls: list[dict[str, Any]] = []

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        self.calls.append({"query": query, "n": len(docs), "context": context})
        return self.values[: len(docs)]


class FailingScorer:
    def __init__(self, name: str = "broken", exc: Exception | None = None) -> None:
        self.name = name
        self.exc = exc or RuntimeError("provider unavailable")

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        raise self.exc


@pytest.fixture(scope="session")
def fixed_scorer():
    """``fixed_scorer(name, values)``: a scorer returning preset values (a test double for
    the callers of scorers)."""
    return FixedScorer


@pytest.fixture(scope="session")
def failing_scorer():
    """``failing_scorer(name="broken", exc=None)``: a scorer that raises."""
    return FailingScorer


@pytest.fixture
def run():
    return asyncio.run


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory, monkeypatch):
    """LLM judgments and other default caches go to a temporary folder, never ~/.cache."""
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    # restored after each test: `rerankit eval` sets it for the scorers it builds
    monkeypatch.delenv("RERANKIT_EMBEDDING_CACHE", raising=False)
