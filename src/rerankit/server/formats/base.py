"""What every wire format shares: the request it turns into a core call, and the limits
applied to documents on the way in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ...errors import ServiceError
from ...types import Document, RerankResult
from ..settings import ServerSettings

__all__ = ["Call", "WireFormat", "check_query", "clip", "meta"]


@dataclass(frozen=True)
class Call:
    """One rerank the service runs for a request."""

    query: str
    documents: list[Document]
    model: str | None = None
    top_n: int | None = None
    #: seconds spent waiting for a slot (``queue``) and reranking (``inference``)
    timings: dict[str, float] = field(default_factory=dict, compare=False)


class WireFormat(Protocol):
    """A wire format: its ``path``, its pydantic ``Request`` model, how a request becomes a
    :class:`Call` and how a result becomes the response body."""

    path: str
    Request: type

    def call(self, body: Any, settings: ServerSettings) -> Call: ...

    def respond(self, body: Any, call: Call, result: RerankResult) -> Any: ...


def clip(
    docs: Sequence[Document],
    settings: ServerSettings,
    *,
    truncate: bool | None = None,
    left: bool = False,
) -> list[Document]:
    """Documents within ``max_document_chars``: longer ones are truncated (``truncate``, the
    server's setting by default; keeping the start, or the end with ``left``) or refused
    with a 400 naming the first."""
    cap = settings.max_document_chars
    truncate = settings.truncate if truncate is None else truncate
    out = []
    for i, d in enumerate(docs):
        if len(d.text) > cap:
            if not truncate:
                raise ServiceError(
                    400, f"document {i}: {len(d.text)} characters; the limit is {cap}"
                )
            d = replace(d, text=d.text[-cap:] if left else d.text[:cap])
        out.append(d)
    return out


def check_query(query: str, settings: ServerSettings) -> str:
    """The query, or a 400 when it is longer than a document may be."""
    if len(query) > settings.max_document_chars:
        raise ServiceError(
            400, f"query: {len(query)} characters; the limit is {settings.max_document_chars}"
        )
    return query


def meta(result: RerankResult, version: str) -> dict[str, Any]:
    """Cohere's ``meta`` object, with the result's warnings, and rerankit's own account
    (``meta.rerankit``: ``degraded`` and the per-document ``flags`` by input index) when
    anything went wrong."""
    out: dict[str, Any] = {"api_version": {"version": version}, "billed_units": {"search_units": 1}}
    if result.warnings:
        out["warnings"] = list(result.warnings)
    flags = {str(r.index): list(r.flags) for r in result if r.flags}
    if result.degraded or flags:
        out["rerankit"] = {"degraded": result.degraded, "flags": flags}
    return out
