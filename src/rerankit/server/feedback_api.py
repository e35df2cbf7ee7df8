"""``POST /v1/feedback``: what was clicked in an answer (with ``[server.feedback]`` on).

The body is ``{"id": ANSWER_ID, "clicks": [index or document id, ...], "dwell_ms": ...}``:
``clicks`` name documents of the answer's request by their index (from 0, as ``results[].
index`` gives it) or their ``id``: an integer is always an index and a string an id, so a
numeric id (a SKU ``1001``) goes as a string (``"1001"``); ``dwell_ms`` (optional) is one
number for the answer or one per click. ``id`` is a string; an integer is read as its
string, as the click log's reader reads it. An id the log does not hold is 404, or, with
``[server.feedback] accept_unknown_ids`` (replicas without session affinity), 202: written
unchecked, for reading every replica's log to join with its answer; a click naming no
document of the answer, or one it did not show (cut by ``top_n``), is 422; the same
feedback sent again is answered alike and written once (``"duplicate": true``). Behind the
API keys, as the rerank endpoints are, and any valid key may send feedback for any answer
(its id, a random UUID, is the only secret).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ServiceError
from ..training.clicks.records import ClickError
from .feedback import FeedbackLog
from .http import ErrorBody, invalid, parse
from .settings import ServerSettings

__all__ = ["FeedbackAnswer", "FeedbackKept", "FeedbackRequest", "add_feedback_routes"]

#: the longest time a click may report (a day, in milliseconds): more is a client's bug
MAX_DWELL_MS = 86_400_000

Milliseconds = Annotated[float, Field(ge=0, le=MAX_DWELL_MS, allow_inf_nan=False)]


def _repeated(values: list[Any]) -> tuple[int, int] | None:
    """``(n, m)``: item ``n`` of ``values`` repeats item ``m``; None when all differ."""
    seen: dict[Any, int] = {}
    for n, value in enumerate(values):
        if value in seen:
            return n, seen[value]
        seen[value] = n
    return None


def _string_or_integer(schema: dict[str, Any]) -> None:
    """The id's schema: a string, or an integer (read as its string)."""
    for key in ("type", "minLength"):
        schema.pop(key, None)
    schema["anyOf"] = [{"type": "string", "minLength": 1}, {"type": "integer"}]


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: str = Field(
        min_length=1,
        description="the answer's id, as the rerank answer gave it (an integer is read as its "
        "string, as the click log's reader reads it)",
        json_schema_extra=_string_or_integer,
    )
    clicks: list[Any] = Field(
        description="the clicked documents: indices into the request's documents (an "
        "integer, from 0) or document ids (a string: send numeric ids as strings), each "
        "document once; [] for an answer where nothing was clicked",
        json_schema_extra={
            "items": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]}
        },
    )
    dwell_ms: Milliseconds | list[Milliseconds | None] | None = Field(
        default=None,
        description="time spent in milliseconds (0 to 86,400,000, a day), one number for the "
        "answer or one per click",
    )

    @field_validator("id", mode="before")
    @classmethod
    def _integer_as_string(cls, rid: Any) -> Any:
        # the log's format reads an integer id as its string: so does the endpoint
        if isinstance(rid, bool) or not isinstance(rid, (str, int)):
            raise ValueError(f"{rid!r}: the answer's id is a string (an integer is read as one)")
        return str(rid) if isinstance(rid, int) else rid

    @field_validator("dwell_ms", mode="before")
    @classmethod
    def _not_negative(cls, dwell: Any) -> Any:
        # said here: inside the union, pydantic would name the wrong branch for -5
        values = dwell if isinstance(dwell, list) else [dwell]
        for n, value in enumerate(values):
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if number and not 0 <= value <= MAX_DWELL_MS:
                where = f"item {n}: " if isinstance(dwell, list) else ""
                raise ValueError(
                    f"{where}{value!r}: must be a number of milliseconds from 0 to "
                    f"{MAX_DWELL_MS} (a day)"
                )
        return dwell

    @field_validator("clicks")
    @classmethod
    def _indices_or_ids(cls, clicks: list[Any]) -> list[Any]:
        for n, click in enumerate(clicks):
            index = isinstance(click, int) and not isinstance(click, bool) and click >= 0
            if not index and not (isinstance(click, str) and click):
                raise ValueError(
                    f"item {n}: {click!r} is neither an index (an integer from 0) nor a "
                    "document id (a string)"
                )
        return clicks


class FeedbackAnswer(BaseModel):
    """The feedback as recorded: the clicks as indices, and whether it repeated feedback
    already recorded (then nothing was written)."""

    id: str
    clicks: list[int]
    duplicate: bool


class FeedbackKept(BaseModel):
    """Feedback naming an answer this replica's log does not hold, written unchecked
    (``[server.feedback] accept_unknown_ids``): the clicks as sent, whether it repeated
    feedback kept before, and why it was not checked."""

    id: str
    clicks: list[int | str]
    duplicate: bool
    unchecked: bool = True
    message: str


#: what a 202 says of feedback kept unchecked
KEPT = (
    "no answer with this id in this replica's click log: the feedback was written "
    "unchecked (accept_unknown_ids), for learning from all replicas' logs, where reading "
    "joins it with its answer and checks its clicks (rerankit tune --clicks A --clicks B)"
)


def _once_each(clicks: list[Any], sent: list[Any] | None = None) -> None:
    """A 422 for a click naming a document an earlier click named (``clicks`` as indices,
    ``sent`` as the caller wrote them): feedback says which documents were clicked, once
    each, so a repeat is a client's bug (and would let one caller fill the log)."""
    repeat = _repeated(clicks)
    if repeat is not None:
        n, m = repeat
        named = "names the same document as" if sent is not None else "repeats"
        shown = (sent or clicks)[n]
        raise invalid(
            f"clicks.{n}",
            f"{shown!r} {named} clicks[{m}]: name each clicked document once",
        )


def add_feedback_routes(app: Any, feedback: FeedbackLog, settings: ServerSettings) -> None:
    """``POST /v1/feedback``."""

    async def post_feedback(request: Request) -> Any:
        """Record what was clicked in an answer (see the module doc)."""
        body = await parse(request, FeedbackRequest, settings)
        if len(body.clicks) > settings.max_documents:
            raise invalid(
                "clicks",
                f"{len(body.clicks)} clicks, more than the {settings.max_documents} documents "
                "an answer may hold (max_documents): each clicked document once",
            )
        _once_each(body.clicks)
        dwell = body.dwell_ms
        if isinstance(dwell, list) and len(dwell) != len(body.clicks):
            raise invalid(
                "dwell_ms",
                f"{len(dwell)} values for {len(body.clicks)} clicks (one number for the "
                "answer, or one per click)",
            )
        answer = await asyncio.to_thread(feedback.index.find, body.id)  # may read the log
        if answer is None and feedback.settings.accept_unknown_ids:
            new = feedback.record_feedback(body.id, body.clicks, body.dwell_ms, unchecked=True)
            kept = FeedbackKept(id=body.id, clicks=body.clicks, duplicate=not new, message=KEPT)
            return JSONResponse(kept.model_dump(), status_code=202)
        if answer is None:
            raise ServiceError(
                404,
                f"no answer with id {body.id!r} in this replica's click log: feedback names "
                "the id of an answer this service logged, and the oldest leave with rotation. "
                "Behind a load balancer, the likely cause is feedback reaching a replica "
                "other than the one that answered: route /v1/feedback with session affinity, "
                "or set [server.feedback] accept_unknown_ids = true on every replica to keep "
                "it for learning from all replicas' logs",
                code="unknown_answer_id",
            )
        try:
            indices = answer.indices(body.clicks)
        except ClickError as exc:
            raise invalid(f"clicks.{exc.n}", exc.reason) from None
        _once_each(indices, body.clicks)
        new = feedback.record_feedback(body.id, indices, body.dwell_ms)
        return {"id": body.id, "clicks": indices, "duplicate": not new}

    # the errors of every route and of every JSON body, and the request body, are the
    # OpenAPI document's (:mod:`.openapi`)
    unknown = "No answer with this `id` in this replica's click log"
    app.post(
        "/v1/feedback",
        summary="Record what was clicked in an answer",
        description="`{id, clicks, dwell_ms}`: the `id` of an answer this service logged, "
        "the documents clicked (indices into the request's documents, or their ids as strings: "
        "an integer is an index) and the "
        "time spent. An unknown id is a 404 (with `[server.feedback] accept_unknown_ids`: a "
        "202, the feedback written unchecked for reading every replica's log), a click "
        "naming no document of the answer, or one it did not show (cut by `top_n`), a 422; "
        "the same feedback sent again is answered alike (`duplicate: true`) and written once. "
        "Any valid API key may send feedback for any answer.",
        response_model=FeedbackAnswer,
        responses={
            202: {"model": FeedbackKept, "description": "written unchecked"},
            404: {"model": ErrorBody, "description": unknown},
            503: {"model": ErrorBody, "description": "The service is stopping"},
        },
    )(post_feedback)
