"""Cohere's ``POST /v1/rerank``: strings or objects (``rank_fields``), ``top_n``,
``return_documents``."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...documents import InputFields
from ...errors import InvalidDocumentError, ServiceError
from ...types import RerankResult
from ..settings import ServerSettings
from . import base
from .base import NOT_BLANK, Call, PositiveWholeNumber, meta, relevance_scores

#: the answer: results best first, and ``meta`` (warnings, ``meta.rerankit``)
Response = base.RankedResponse

path = "/v1/rerank"


class Request(BaseModel):
    # strict: "2" is not an integer and "yes" not a boolean; unknown fields are ignored
    model_config = ConfigDict(extra="ignore", strict=True)
    query: str = Field(pattern=NOT_BLANK)  # not empty, not only whitespace
    documents: list[str | dict[str, Any]] = Field(
        min_length=1,
        description="Strings, or objects with a string 'text' field (or, with rank_fields, "
        "the fields it names); an object without one is a 422",
    )
    model: str | None = None
    top_n: PositiveWholeNumber | None = None
    rank_fields: list[str] | None = Field(default=None, min_length=1)
    return_documents: bool = True
    #: a long document is split into chunks that fit the model with the query, and scored
    #: by the best of its first N (as Cohere does; its default is 10)
    max_chunks_per_doc: PositiveWholeNumber | None = None
    #: rerankit's extension: the object field holding the first-stage (retriever) score
    first_stage_field: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _objects_have_text(self) -> Request:
        if self.rank_fields is None:
            for i, doc in enumerate(self.documents):
                if isinstance(doc, dict) and not isinstance(doc.get("text"), str):
                    raise ValueError(
                        f"document {i}: an object document needs a string 'text' field "
                        "(or rank_fields naming its fields)"
                    )
        return self


def call(body: Request, settings: ServerSettings) -> Call:
    try:
        fields = InputFields(
            text_fields=tuple(body.rank_fields) if body.rank_fields else None,
            first_stage_field=body.first_stage_field,
        )
        docs = fields.read(body.documents)
    except InvalidDocumentError as exc:
        hint = "; object documents need a 'text' field or rank_fields naming theirs"
        raise ServiceError(400, f"{exc}{hint if body.rank_fields is None else ''}") from exc
    return base.ranked_call(body, docs, settings, max_chunks=body.max_chunks_per_doc)


def respond(body: Request, call: Call, result: RerankResult) -> dict[str, Any]:
    scores = relevance_scores(result, call)
    results = []
    for r, s in zip(result, scores, strict=True):
        entry: dict[str, Any] = {"index": r.index, "relevance_score": s}
        if body.return_documents:
            original = body.documents[r.index]
            entry["document"] = {"text": original} if isinstance(original, str) else original
        results.append(entry)
    return {"id": str(uuid.uuid4()), "results": results, "meta": meta(result, "1", call)}
