"""Spans for a rerank's stages and scorers, for whoever traces (the service's OpenTelemetry
support sets :data:`TRACER` for the work of each request). Nothing is done, and nothing is
imported, while no tracer is set."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

__all__ = ["TRACER", "span"]

#: an OpenTelemetry ``Tracer`` (anything with ``start_as_current_span``), or None
TRACER: ContextVar[Any] = ContextVar("rerankit_tracer", default=None)


@contextlib.contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """A span named ``name`` with ``rerankit.*`` ``attributes`` (None values left out)
    around the block, when a tracer is set; nothing otherwise."""
    tracer = TRACER.get()
    if tracer is None:
        yield None
        return
    values = {f"rerankit.{k}": v for k, v in attributes.items() if v is not None}
    with tracer.start_as_current_span(name, attributes=values) as current:
        yield current
