"""Voyage AI's ``POST /v1/rerank``: ``{"query", "documents": [str], "model", "top_k",
"return_documents", "truncation"}``, answered as Voyage answers: ``{"object": "list",
"data": [{"index", "relevance_score", "document"?}], "model", "usage": {"total_tokens"}}``,
results best first.

It shares Cohere's v1 path (and Jina's request there): a body is Voyage's (:func:`accepts`)
when it has a field only Voyage's API has (``top_k``, ``truncation``) or names one of
Voyage's models (``rerank-2.5``, ``rerank-2-lite``, ``rerank-lite-1``, ...: ``rerank-``, no
``v`` before the number, as Cohere's ``rerank-v3.5`` has). Any other body is Cohere's (or
Jina's, the same answer). ``truncation`` cuts each document to the pipeline model's input
unless sent false (Voyage's default is true); a document over ``max_document_chars`` is cut
when it is sent true, and otherwise as the service's own ``truncate`` setting says (with
``truncate = false``, refused), as a TEI request without ``truncate`` is."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ...documents import InputFields
from ...types import RerankResult
from ..http import AnswerShape
from ..model_names import VOYAGE, VOYAGE_MODEL
from ..settings import ServerSettings
from .base import (
    NOT_BLANK,
    Call,
    PositiveWholeNumber,
    RelevanceScore,
    check_query,
    clip,
    relevance_scores,
)

path = "/v1/rerank"
summary = "Rerank, in Voyage AI's shape"
description = (
    "Voyage AI's rerank request (`top_k` or `truncation`, or a Voyage model name such as "
    "`rerank-2.5`, on `POST /v1/rerank`): `model` names a pipeline or an alias; the answer "
    "is Voyage's, `data` best first with `relevance_score` in [0, 1] and `usage` in tokens."
)

#: the fields only Voyage's request has (Cohere's and Jina's say ``top_n``)
VOYAGE_FIELDS = ("top_k", "truncation")


def accepts(data: Any) -> bool:
    """Whether a request body to ``/v1/rerank`` is Voyage's: a field only Voyage's API has,
    or one of Voyage's model names."""
    if not isinstance(data, dict):
        return False
    model = data.get("model")
    named = isinstance(model, str) and VOYAGE_MODEL.fullmatch(model) is not None
    return named or any(f in data for f in VOYAGE_FIELDS)


def _no_top_n(value: Any) -> Any:
    """Voyage's request says ``top_k``: a ``top_n`` with it is refused, not guessed at."""
    if value is None:
        return None
    raise ValueError(
        "Voyage's request (top_k or truncation, or a Voyage model name) takes top_k, not "
        "top_n: send one of them (top_n is Cohere's and Jina's)"
    )


class VoyageRequest(BaseModel):
    # strict: "2" is not an integer and "yes" not a boolean; unknown fields are ignored
    model_config = ConfigDict(extra="ignore", strict=True)
    query: str = Field(pattern=NOT_BLANK)  # not empty, not only whitespace
    documents: list[str] = Field(min_length=1)
    model: str | None = None
    top_k: PositiveWholeNumber | None = None
    return_documents: bool = False
    truncation: bool | None = None  # absent: Voyage's default (true) for the model's input
    #: Cohere's and Jina's name for top_k: refused here, not read as one or the other
    top_n: Annotated[None, BeforeValidator(_no_top_n)] = Field(
        default=None,
        description="Cohere's and Jina's name for top_k: refused (422) unless null; send top_k",
    )


Request = VoyageRequest


class VoyageResult(AnswerShape):
    """One document of Voyage's answer: its index in ``documents``, its relevance score
    and, with ``return_documents``, its text."""

    index: int = Field(ge=0)
    relevance_score: RelevanceScore
    document: str | None = None


class VoyageUsage(AnswerShape):
    total_tokens: int = Field(ge=0)


class VoyageResponse(AnswerShape):
    """Voyage's answer: ``data`` best first, the model name sent (the default pipeline's
    when none), tokens read."""

    object: Literal["list"]
    data: list[VoyageResult]
    model: str
    usage: VoyageUsage


Response = VoyageResponse


def call(body: Request, settings: ServerSettings) -> Call:
    cuts: dict[int, str] = {}
    named = body.model or None
    truncate = True if body.truncation else None  # else: the service's own setting
    docs = clip(InputFields().read(body.documents), settings, truncate=truncate, cuts=cuts)
    return Call(
        check_query(body.query, settings),
        docs,
        settings.resolve(named),  # the pipeline's name, which the answer gives
        body.top_k,
        cuts=cuts,
        bill=True,  # Voyage's usage: the tokens read
        asked=named,
        max_tokens=None if body.truncation is False else "model",
        cut_by="truncation",
        family=VOYAGE,
    )


def respond(body: Request, call: Call, result: RerankResult) -> dict[str, Any]:
    scores = relevance_scores(result, call)
    tokens = int(call.usage.get("input_tokens", 0))
    return {
        "object": "list",
        "data": [
            {"index": r.index, "relevance_score": s}
            | ({"document": body.documents[r.index]} if body.return_documents else {})
            for r, s in zip(result, scores, strict=True)
        ],
        "model": call.asked or call.model,  # the name sent, as Voyage echoes it
        "usage": {"total_tokens": tokens},
    }
