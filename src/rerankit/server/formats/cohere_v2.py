"""Cohere's ``POST /v2/rerank``: string documents, ``top_n``, ``max_tokens_per_doc``
(counted with the pipeline model's tokenizer), ``return_documents``."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ...documents import InputFields
from ...types import RerankResult
from ..settings import ServerSettings
from . import base
from .base import (
    NOT_BLANK,
    Call,
    PositiveWholeNumber,
    WholeNumber,
    meta,
    python_name,
    relevance_scores,
)


class CohereV2Response(base.RankedResponse):
    """Cohere's v2 answer: results best first, and ``meta`` (warnings,
    ``meta.rerankit``)."""


Response = CohereV2Response

path = "/v2/rerank"
summary = "Rerank, in Cohere's v2 shape"
description = (
    "Cohere's v2 rerank (`cohere.ClientV2`): string documents, `top_n`, "
    "`max_tokens_per_doc` (counted with the pipeline's own tokenizer), `return_documents`; "
    "`model` names a pipeline or an alias (none: the default pipeline). The answer lists "
    "the documents best first, each with its `index` in the request and a `relevance_score` "
    "in [0, 1]; `meta.rerankit` says what the scores mean."
)


def _text(value: Any) -> Any:
    """A v2 document: an object one is refused with where it goes (v1 takes them)."""
    if isinstance(value, dict):
        raise ValueError(
            "Input should be a valid string: v2 takes text documents; send object documents "
            "to /v1/rerank (Cohere's v1 shape, cohere.Client)"
        )
    return value


#: rerankit's Python name for ``top_n`` (:func:`~.base.python_name`): refused
TopK = python_name("top_k", "top_n", '"top_n": {value}')


def _no_spans(value: Any) -> Any:
    """Cohere's ``relevant_spans`` (Rerank v5): none are answered, so only its ``disabled``
    mode is taken; ``enabled`` is refused rather than answered without them."""
    if value is None or (isinstance(value, dict) and value.get("mode") == "disabled"):
        return None
    raise ValueError(
        "the service answers no relevant spans (Cohere's Rerank v5 feature): leave "
        'relevant_spans out, or send {"mode": "disabled"}'
    )


class CohereV2Request(BaseModel):
    # strict: "2" is not an integer and "yes" not a boolean; a field Cohere's v2 request
    # does not have is refused (422, naming the fields), as Cohere's API refuses it
    model_config = ConfigDict(extra="forbid", strict=True)
    model: str | None = None
    query: str = Field(pattern=NOT_BLANK)  # not empty, not only whitespace
    documents: list[Annotated[str, BeforeValidator(_text)]] = Field(min_length=1)
    top_n: PositiveWholeNumber | None = None
    max_tokens_per_doc: PositiveWholeNumber | None = None
    #: answered as Cohere's v2 API answers it: each result's ``document: {"text": ...}``
    return_documents: bool = False
    #: rerankit's Python name for top_n, sent by mistake: refused, naming top_n
    top_k: TopK = None  # type: ignore[valid-type]
    #: Cohere's order under load (0, the default, first): taken, with no effect here (the
    #: service's queue is first come, first served)
    priority: WholeNumber | None = None
    #: Cohere's relevant spans: refused unless disabled (none are answered)
    relevant_spans: Annotated[None, BeforeValidator(_no_spans)] = Field(
        default=None,
        description='Cohere\'s relevant spans: refused (422) unless null or {"mode": '
        '"disabled"}; the service answers none',
    )


Request = CohereV2Request


def call(body: Request, settings: ServerSettings) -> Call:
    docs = InputFields().read(body.documents)
    # max_tokens: cut by the service, with the pipeline model's tokenizer
    return base.ranked_call(body, docs, settings, max_tokens=body.max_tokens_per_doc)


def respond(body: Request, call: Call, result: RerankResult) -> dict[str, Any]:
    scores = relevance_scores(result, call)
    return {
        "id": str(uuid.uuid4()),
        "results": [
            {"index": r.index, "relevance_score": s}
            | ({"document": {"text": body.documents[r.index]}} if body.return_documents else {})
            for r, s in zip(result, scores, strict=True)
        ],
        "meta": meta(result, "2", call),
    }
