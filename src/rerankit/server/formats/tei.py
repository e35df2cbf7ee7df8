"""Text Embeddings Inference's ``POST /rerank``: ``texts``, ``raw_scores``, ``return_text``,
``truncate`` and ``truncation_direction``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator

from ...documents import InputFields
from ...errors import ServiceError
from ...types import RerankResult
from ..http import AnswerShape
from ..settings import ServerSettings
from .base import NOT_BLANK, Call, check_query, clip, relevance_scores

path = "/rerank"
summary = "Rerank, in Text Embeddings Inference's or Infinity's shape"
description = (
    "Text Embeddings Inference's rerank (`texts`), answered as TEI answers: a list of "
    "`{index, score}` best first (`return_text` adds the text; `raw_scores: true` gives the "
    "pipeline's own scores; `truncate: true` cuts each text to the model's input, `false` "
    "refuses one over `max_document_chars` with a 413, none follows the server's `truncate` "
    "setting, as TEI's `--auto-truncate` does). TEI's "
    "request names no model: the default pipeline answers it, and a `model` field is ignored, "
    "as TEI ignores it. A body with `documents` and no `texts` is Infinity's instead: "
    "`model` names the pipeline, and the answer is Infinity's (`results` of "
    "`relevance_score` and `index`, `model`, `usage`)."
)


def _texts_or_documents(data: Any) -> Any:
    """A body with neither ``texts`` nor ``documents`` is told both: it may be either
    product's request with the field misspelt."""
    if isinstance(data, dict) and "texts" not in data and "documents" not in data:
        raise ValueError(
            "texts: Field required: send the documents as `texts` (Text Embeddings "
            "Inference's request) or `documents` (Infinity's)"
        )
    return data


class TeiRequest(BaseModel):
    # strict: "2" is not an integer and "yes" not a boolean; unknown fields are ignored
    model_config = ConfigDict(extra="ignore", strict=True)
    query: str = Field(pattern=NOT_BLANK)  # not empty, not only whitespace
    texts: list[str] = Field(min_length=1)

    _either = model_validator(mode="before")(_texts_or_documents)
    raw_scores: bool = False
    return_text: bool = False
    #: none: the server's ``truncate`` setting (as TEI's ``--auto-truncate``); a request's
    #: own value wins over it, as TEI's does
    truncate: bool | None = None
    truncation_direction: Literal["Left", "Right", "left", "right"] = "Right"


Request = TeiRequest


class TeiRank(AnswerShape):
    """One text's place in TEI's answer: its index in ``texts``, its score (in [0, 1],
    or the pipeline's own with ``raw_scores``) and, with ``return_text``, the text."""

    index: int = Field(ge=0)
    score: float
    text: str | None = None


class TeiResponse(RootModel[list[TeiRank]]):
    """TEI's answer: a list of ranks, best first."""


Response = TeiResponse


def call(body: Request, settings: ServerSettings) -> Call:
    cap = settings.max_document_chars
    truncate = settings.truncate if body.truncate is None else body.truncate
    long = [i for i, t in enumerate(body.texts) if len(t) > cap] if not truncate else []
    if long:
        which = f"texts.{long[0]}" + (f" (and {len(long) - 1} more)" if len(long) > 1 else "")
        raise ServiceError(
            413,
            f"{which} is over {cap} characters (max_document_chars); send truncate=true",
            code="document_too_long",
            details={"max_document_chars": cap, "index": long[0]},
        )
    # the caller's truncate decides here, whatever the server's own setting: each text is
    # cut to max_document_chars, and with an explicit true to the model's input limit in
    # tokens too, from the direction asked (as TEI does); none: cut as the other shapes cut
    left = body.truncation_direction.lower() == "left"
    cuts: dict[int, str] = {}
    docs = clip(InputFields().read(body.texts), settings, truncate=True, left=left, cuts=cuts)
    return Call(
        check_query(body.query, settings),
        docs,
        cuts=cuts,
        max_tokens="model" if body.truncate else None,
        left=left,
        cut_by="truncate",
    )


def respond(body: Request, call: Call, result: RerankResult) -> list[dict[str, Any]]:
    scores = [r.score for r in result] if body.raw_scores else relevance_scores(result, call)
    out = []
    for r, s in zip(result, scores, strict=True):
        entry: dict[str, Any] = {"index": r.index, "score": s}
        if body.return_text:
            entry["text"] = body.texts[r.index]
        out.append(entry)
    return out
