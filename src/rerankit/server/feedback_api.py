"""``POST /v1/feedback``: what was clicked in an answer (with ``[server.feedback]`` on).

The body is ``{"id": ANSWER_ID, "clicks": [index or document id, ...], "dwell_ms": ...}``:
``clicks`` name documents of the answer's request by their index (from 0, as ``results[].
index`` gives it) or their ``id``: an integer is always an index and a string an id, so a
numeric id (a SKU ``1001``) goes as a string (``"1001"``); ``dwell_ms`` (optional) is one
number for the answer or one per click. An id the log does not hold is 404; a click naming
no document of the answer, or one it did not show (cut by ``top_n``), is 422; the same
feedback sent again is answered alike and written once (``"duplicate": true``). Behind
the API keys, as the rerank endpoints are.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ServiceError
from ..training.clicks.records import ClickError
from .feedback import FeedbackLog
from .http import ErrorBody, invalid, parse
from .settings import ServerSettings

__all__ = ["FeedbackAnswer", "FeedbackRequest", "add_feedback_routes"]

Milliseconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: str = Field(min_length=1, description="the answer's id, as the rerank answer gave it")
    clicks: list[Any] = Field(
        description="the clicked documents: indices into the request's documents (an "
        "integer, from 0) or document ids (a string: send numeric ids as strings); [] for an "
        "answer where nothing was clicked",
        json_schema_extra={
            "items": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]}
        },
    )
    dwell_ms: Milliseconds | list[Milliseconds | None] | None = Field(
        default=None, description="time spent, one number for the answer or one per click"
    )

    @field_validator("dwell_ms", mode="before")
    @classmethod
    def _not_negative(cls, dwell: Any) -> Any:
        # said here: inside the union, pydantic would name the wrong branch for -5
        values = dwell if isinstance(dwell, list) else [dwell]
        for n, value in enumerate(values):
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if number and not value >= 0:
                where = f"item {n}: " if isinstance(dwell, list) else ""
                raise ValueError(f"{where}{value!r}: must be a number >= 0 (milliseconds)")
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


def add_feedback_routes(app: Any, feedback: FeedbackLog, settings: ServerSettings) -> None:
    """``POST /v1/feedback``."""

    async def post_feedback(request: Request) -> Any:
        """Record what was clicked in an answer (see the module doc)."""
        body = await parse(request, FeedbackRequest, settings)
        dwell = body.dwell_ms
        if isinstance(dwell, list) and len(dwell) != len(body.clicks):
            raise invalid(
                "dwell_ms",
                f"{len(dwell)} values for {len(body.clicks)} clicks (one number for the "
                "answer, or one per click)",
            )
        answer = await asyncio.to_thread(feedback.index.find, body.id)  # may read the log
        if answer is None:
            raise ServiceError(
                404,
                f"no answer with id {body.id!r} in the click log (feedback names the id of "
                "an answer this service logged; the oldest leave with rotation)",
            )
        try:
            indices = answer.indices(body.clicks)
        except ClickError as exc:
            raise invalid(f"clicks.{exc.n}", exc.reason) from None
        new = feedback.record_feedback(body.id, indices, body.dwell_ms)
        return {"id": body.id, "clicks": indices, "duplicate": not new}

    statuses = (400, 401, 404, 413, 422)
    app.post(
        "/v1/feedback",
        summary="Record what was clicked in an answer",
        description="`{id, clicks, dwell_ms}`: the `id` of an answer this service logged, "
        "the documents clicked (indices into the request's documents, or their ids as strings: "
        "an integer is an index) and the "
        "time spent. An unknown id is a 404, a click naming no document of the answer, or "
        "one it did not show (cut by `top_n`), a 422; "
        "the same feedback sent again is answered alike (`duplicate: true`) and written once.",
        response_model=FeedbackAnswer,
        responses={status: {"model": ErrorBody} for status in statuses},
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": FeedbackRequest.model_json_schema()}},
            }
        },
    )(post_feedback)
