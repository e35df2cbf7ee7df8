"""Cohere's ``POST /v1/rerank``: strings or objects (``rank_fields``), ``top_n``,
``return_documents``.

An object document's text is its ``text`` field, read as ``text_field`` reads it (a
``title`` field on the line before). ``rank_fields`` names others: one is read the same way
(``rank_fields=["body"]`` ranks as ``text_field="body"``, and ``["text"]`` as sending none),
several are joined as ``field: value`` lines in the order named (the YAML-like form Cohere
recommends for structured documents), each one a document has; one of several that no
document has is said in ``meta.warnings``. The fields read must hold strings, as Cohere's
schema says; a document that breaks this is a 422 naming it and the field."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...documents import TITLE, Document, InputFields
from ...errors import InvalidDocumentError, serving
from ...types import RerankResult
from ..http import AnswerShape
from ..settings import ServerSettings
from . import base
from .base import NOT_BLANK, Call, PositiveWholeNumber, meta, python_name, relevance_scores


class CohereV1Usage(AnswerShape):
    """Jina's ``usage``: the tokens read."""

    total_tokens: int = Field(ge=0)


class CohereV1Response(base.RankedResponse):
    """Cohere's v1 answer (results best first, ``meta``: warnings, ``meta.rerankit``) with
    the ``model`` and ``usage`` that Jina's answer, sent to the same path, has (Cohere's
    SDK keeps fields it does not know)."""

    model: str
    usage: CohereV1Usage


Response = CohereV1Response


path = "/v1/rerank"
summary = "Rerank, in Cohere's v1 shape"
description = (
    "Cohere's v1 rerank (`cohere.Client`): documents as strings or objects, `rank_fields` "
    "to say which fields are ranked, `top_n`, `return_documents`, `max_chunks_per_doc`; "
    "`model` names a pipeline or an alias (none: the default pipeline). The answer lists "
    "the documents best first, each with its `index` in the request and a `relevance_score` "
    "in [0, 1]; `meta.rerankit` says what the scores mean. As Jina's answer on this path, "
    "it has `model` (the name sent, or the default pipeline's) and `usage.total_tokens`."
)


#: rerankit's Python names for ``rank_fields`` (:func:`~.base.python_name`): refused
TextField = python_name("text_field", "rank_fields", '"rank_fields": [{value}]')
TextFields = python_name("text_fields", "rank_fields", '"rank_fields": {value}')


class CohereV1Request(BaseModel):
    # strict: "2" is not an integer and "yes" not a boolean; a field Cohere's v1 request
    # (or Jina's) does not have is refused (422, naming the fields), as Cohere's API does
    model_config = ConfigDict(extra="forbid", strict=True)
    query: str = Field(pattern=NOT_BLANK)  # not empty, not only whitespace
    documents: list[str | dict[str, Any]] = Field(
        min_length=1,
        description="Strings, or objects with a string 'text' field (or, with rank_fields, "
        "the string fields it names: one is read as 'text' is, several are joined as "
        "'field: value' lines); an object without them is a 422",
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
    #: rerankit's extension: the object field holding the title (default ``title``)
    title_field: str | None = Field(default=None, min_length=1)
    #: rerankit's Python names for rank_fields, sent by mistake: refused, naming rank_fields
    text_field: TextField = None  # type: ignore[valid-type]
    text_fields: TextFields = None  # type: ignore[valid-type]


Request = CohereV1Request


class FieldOptions(BaseModel):
    """The fields of a request that say how its object documents are read (``rank_fields``,
    ``first_stage_field``, ``title_field``): ``/v1/explain`` takes them too."""

    rank_fields: list[str] | None = Field(default=None, min_length=1)
    first_stage_field: str | None = Field(default=None, min_length=1)
    title_field: str | None = Field(default=None, min_length=1)


def read_documents(body: Any, hint: str = "") -> list[Document]:
    """The documents of ``body`` (a request with ``documents`` and the fields of
    :class:`FieldOptions`) read as those fields say; a missing ``text`` gets a hint naming
    rank_fields (and ``hint``, where the request came from)."""
    names = body.rank_fields or []
    if len(names) > 1:  # joined as "field: value" lines
        _check_strings(body.documents, names)
        # those no document has are left out, as Cohere's API reads the keys a document has
        # (absent_rank_fields says so), where the library refuses them as misspelt names
        present = [n for n in names if any(isinstance(d, dict) and n in d for d in body.documents)]
        fields = InputFields(text_fields=tuple(present or names))
    else:  # one field: read as text_field reads it
        fields = InputFields(text_field=names[0] if names else "text")
    fields = fields.with_options(
        first_stage_field=body.first_stage_field, title_field=body.title_field or TITLE
    )
    try:
        with serving():  # a missing field's fix is the request's (below), not text_field=
            return fields.read(body.documents)
    except InvalidDocumentError as exc:
        present = exc.field in body.documents[exc.index]  # a dict: a string always reads
        if names or exc.field != "text" or present:  # the hint is for a missing text only
            raise
        hint = (
            f"; an object document needs a string 'text' field, or rank_fields naming others{hint}"
        )
        if "image" in body.documents[exc.index]:  # Jina's image documents
            hint += "; image documents are not supported: the pipelines read text only"
        raise InvalidDocumentError(f"{exc}{hint}", index=exc.index, field=exc.field) from exc


def absent_rank_fields(body: Any) -> list[str]:
    """A warning for each of several ``rank_fields`` that no object document of ``body``
    has: it is ignored (the documents are ranked on the others, as Cohere's API reads the
    keys a document has), which a misspelt name would otherwise leave unsaid. (One rank
    field is read as the text: a document without it is a 422.)"""
    names = body.rank_fields or []
    if len(names) < 2:
        return []
    objects = [d for d in body.documents if isinstance(d, dict)]
    if not objects:
        return []
    seen = {key for d in objects for key in d}
    return [
        f"rank field {name!r} is in no document of the request, so it was ignored "
        f"(fields present: {', '.join(map(repr, sorted(seen)))})"
        for name in dict.fromkeys(names)
        if name not in seen
    ]


def call(body: Request, settings: ServerSettings) -> Call:
    docs = read_documents(body)
    made = base.ranked_call(body, docs, settings, max_chunks=body.max_chunks_per_doc)
    made.notes.extend(absent_rank_fields(body))
    # the name the answer's model gives (Jina's echoes it): the one sent, else the default
    return replace(made, model=body.model or settings.default)


def _check_strings(documents: list[str | dict[str, Any]], names: list[str]) -> None:
    """Each of the fields ``names`` that an object document has holds a string."""
    for i, doc in enumerate(documents):
        if not isinstance(doc, dict):
            continue
        for name in names:
            value = doc.get(name)
            if name in doc and not isinstance(value, str):
                raise InvalidDocumentError(
                    f"document {i}: rank field {name!r} must be a string, got "
                    f"{type(value).__name__}",
                    index=i,
                    field=name,
                )


def respond(body: Request, call: Call, result: RerankResult) -> dict[str, Any]:
    scores = relevance_scores(result, call)
    results = []
    for r, s in zip(result, scores, strict=True):
        entry: dict[str, Any] = {"index": r.index, "relevance_score": s}
        if body.return_documents:
            original = body.documents[r.index]
            entry["document"] = {"text": original} if isinstance(original, str) else original
        results.append(entry)
    tokens = int(call.usage.get("input_tokens", 0))
    return {  # meta last: the answer cache marks its end (answers.mark)
        "id": str(uuid.uuid4()),
        "model": call.model,  # Jina's answer has model and usage too
        "usage": {"total_tokens": tokens},
        "results": results,
        "meta": meta(result, "1", call),
    }
