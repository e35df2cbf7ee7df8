"""Infinity's ``POST /rerank``: ``{"query", "documents": [str], "model", "top_n",
"return_documents", "raw_scores"}``, answered as Infinity answers: ``{"id", "object":
"rerank", "results": [{"relevance_score", "index", "document"?}], "model", "usage":
{"prompt_tokens", "total_tokens"}, "created"}``, results best first.

It shares the path with Text Embeddings Inference's format: a body with ``documents`` and
no ``texts`` is Infinity's (:func:`accepts`), every other one TEI's. ``model`` names a
pipeline or an alias; Infinity's default, ``default/not-specified``, and none name the
default pipeline. The answer's ``model`` is the name sent (an alias as sent, as Infinity
echoes the model id it serves), the pipeline's when none is. ``raw_scores`` answers the
pipeline's own scores, as TEI's does."""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...documents import InputFields
from ...types import RerankResult
from ..http import AnswerShape
from ..settings import ServerSettings
from .base import (
    NOT_BLANK,
    UUID,
    Call,
    PositiveWholeNumber,
    check_query,
    clip,
    relevance_scores,
)

path = "/rerank"
summary = "Rerank, in Infinity's shape"
description = (
    "Infinity's rerank request (`documents`, and no `texts`, on `POST /rerank`): `model` "
    "names a pipeline or an alias (none, or Infinity's `default/not-specified`: the default "
    "pipeline); the answer is Infinity's, results best first with `relevance_score` in "
    "[0, 1] (`raw_scores: true`: the pipeline's own scores) and `usage` in tokens."
)

#: the model name Infinity's clients send when none is chosen
UNSPECIFIED = "default/not-specified"


def accepts(data: Any) -> bool:
    """Whether a request body to ``/rerank`` is Infinity's: ``documents`` and no
    ``texts``."""
    return isinstance(data, dict) and "documents" in data and "texts" not in data


class InfinityRequest(BaseModel):
    # strict: "2" is not an integer and "yes" not a boolean; unknown fields are ignored, as
    # Infinity ignores them
    model_config = ConfigDict(extra="ignore", strict=True)
    query: str = Field(pattern=NOT_BLANK)  # not empty, not only whitespace
    documents: list[str] = Field(min_length=1)
    model: str | None = None
    top_n: PositiveWholeNumber | None = None
    return_documents: bool = False
    raw_scores: bool = False


Request = InfinityRequest


class InfinityResult(AnswerShape):
    """One document of Infinity's answer: its score (in [0, 1], or the pipeline's own with
    ``raw_scores``), its index in ``documents`` and, with ``return_documents``, its text."""

    relevance_score: float
    index: int = Field(ge=0)
    document: str | None = None


class InfinityUsage(AnswerShape):
    prompt_tokens: int = Field(ge=0)
    total_tokens: int = Field(ge=0)


class InfinityResponse(AnswerShape):
    """Infinity's answer: results best first, the model name sent (the default pipeline's
    when none), tokens read, when it was made (Unix seconds)."""

    id: UUID
    object: Literal["rerank"]
    results: list[InfinityResult]
    model: str
    usage: InfinityUsage
    created: int


Response = InfinityResponse


def call(body: Request, settings: ServerSettings) -> Call:
    cuts: dict[int, str] = {}
    named = None if body.model in (None, "", UNSPECIFIED) else body.model
    return Call(
        check_query(body.query, settings),
        clip(InputFields().read(body.documents), settings, cuts=cuts),
        settings.resolve(named),  # the pipeline's name; the answer gives the one sent
        body.top_n,
        cuts=cuts,
        bill=True,  # Infinity's usage: the tokens read
        asked=named,
    )


def respond(body: Request, call: Call, result: RerankResult) -> dict[str, Any]:
    scores = [r.score for r in result] if body.raw_scores else relevance_scores(result, call)
    tokens = int(call.usage.get("input_tokens", 0))
    return {  # the id first: an answer from the answer cache gets a fresh one there
        "id": str(uuid.uuid4()),
        "object": "rerank",
        "results": [
            {"relevance_score": s, "index": r.index}
            | ({"document": body.documents[r.index]} if body.return_documents else {})
            for r, s in zip(result, scores, strict=True)
        ],
        "model": call.asked or call.model,  # the name sent, as Infinity echoes its model's
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        "created": int(time.time()),
    }
