"""rerankit's own ``POST /v1/explain``: a rerank that answers with every document's
explanation (each strategy's raw score, normalised value, weight and contribution, per
stage, as :meth:`~rerankit.RerankResult.explain` gives them), its flags, the request's
timings and LLM usage. Documents are strings or objects with ``text`` (and ``id``,
``first_stage_score`` or other fields), or the fields ``rank_fields``, ``title_field`` and
``first_stage_field`` name, as ``/v1/rerank`` reads them. The playground page draws this."""

from __future__ import annotations

import math
import uuid
from typing import Any, Literal

from pydantic import ConfigDict, Field

from ...types import SIGMOID_OF_SUM, SUM, RerankResult
from ..http import AnswerShape
from ..settings import ServerSettings
from .base import (
    NOT_BLANK,
    UUID,
    Call,
    CohereMeta,
    PositiveWholeNumber,
    RelevanceScore,
    ScoreScale,
    answer_warnings,
    check_query,
    clip,
    meta,
    relevance_scores,
)
from .cohere_v1 import FieldOptions, absent_rank_fields, read_documents

path = "/v1/explain"
summary = "Rerank, explaining every score"
description = (
    "rerankit's own: a rerank (`model`, `query`, `documents` as strings or objects with "
    "`text`, `id`, `first_stage_score`, or the fields named by `rank_fields`, `title_field` "
    "and `first_stage_field` as /v1/rerank reads them; `top_n`) whose answer explains each "
    "document "
    "returned: `score` (the pipeline's own score) beside `relevance_score` (in [0, 1], as "
    "the rerank endpoints answer it), and per strategy its `raw` score, `normalized` value, "
    "`weight` and `contribution`; `score_from_contributions` says how the contributions make "
    "`score` (`sum`, or `sigmoid(sum)` for a calibrated fusion's logits). A pipeline's "
    "earlier stages' rows (they chose the candidates; a later stage gave the score) carry "
    "`earlier_stage_contribution` in place of `contribution`, and `ranked_by` names the "
    "stage that decided each document's place: the last that scored it, or a rule stage "
    "that moved it after that (a `pin`; its `relevance_score` is then its stretch's, 1 for a "
    "relative score pinned first, or its own pair-wise score, which can be below the next "
    "one's); null outside a pipeline. With flags, "
    "`warnings` (once: `meta` is Cohere v2's without them), timings and LLM usage. What the "
    "playground draws."
)


class ExplainRequest(FieldOptions):
    model_config = ConfigDict(extra="forbid", strict=True)
    model: str | None = None
    query: str = Field(pattern=NOT_BLANK)  # not empty, not only whitespace
    documents: list[str | dict[str, Any]] = Field(min_length=1)
    top_n: PositiveWholeNumber | None = None


Request = ExplainRequest

#: where the playground names the fields, for the error of a document without ``text``
PLAYGROUND_HINT = " (in the playground: the 'Text field(s)' box)"


class ExplainStrategy(AnswerShape):
    """One strategy's part in a document's score (null where it has none, or where the
    number is not finite)."""

    raw: float | None
    normalized: float | None
    weight: float | None
    contribution: float | None
    earlier_stage_contribution: float | None


class ExplainResult(AnswerShape):
    """One document, explained: its index in the request and rank in the answer, its id
    (an object document's ``id``, else null), the pipeline's own ``score`` and the
    ``relevance_score`` the rerank endpoints answer, how the contributions make the score,
    the stage that placed it, the text scored, its flags and each strategy's part."""

    index: int = Field(ge=0)
    rank: int = Field(ge=1)
    id: Any
    score: float | None
    relevance_score: RelevanceScore
    score_from_contributions: Literal[SUM, SIGMOID_OF_SUM]
    ranked_by: str | None
    text: str
    flags: list[str]
    strategies: dict[str, ExplainStrategy]


class ExplainResponse(AnswerShape):
    """Results best first, each with its explanation; what the scores mean; the
    request's timings (seconds) and provider usage."""

    id: UUID
    model: str | None
    results: list[ExplainResult]
    score_scale: ScoreScale
    degraded: bool
    warnings: list[str]
    timings: dict[str, float]
    usage: dict[str, int]
    meta: CohereMeta


Response = ExplainResponse


def call(body: Request, settings: ServerSettings) -> Call:
    cuts: dict[int, str] = {}
    return Call(
        check_query(body.query, settings),
        clip(read_documents(body, PLAYGROUND_HINT), settings, cuts=cuts),
        body.model or settings.default,
        body.top_n,
        cuts=cuts,
        notes=absent_rank_fields(body),
    )


def _number(x: Any) -> float | None:
    """A JSON number, or null for NaN and infinities (which JSON cannot carry)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def respond(body: Request, call: Call, result: RerankResult) -> dict[str, Any]:
    scores = relevance_scores(result, call)
    texts = {r.index: r.text for r in result}
    results = []
    for entry, unit in zip(result.explain(), scores, strict=True):
        results.append(
            {
                "index": entry["index"],
                "rank": entry["rank"],
                "id": entry["id"],
                "score": _number(entry["score"]),
                "relevance_score": unit,
                "score_from_contributions": entry["score_from_contributions"],
                "ranked_by": entry["ranked_by"],
                "text": texts[entry["index"]],
                "flags": entry["flags"],
                "strategies": {
                    name: {k: _number(part.get(k)) for k in ExplainStrategy.model_fields}
                    for name, part in entry["strategies"].items()
                },
            }
        )
    timings = {f"stage:{k}": float(v) for k, v in result.timings.items()}
    timings.update({k: float(v) for k, v in call.timings.items()})
    cohere = meta(result, "2", call)
    cohere.pop("warnings", None)  # said once, in the answer's own warnings
    return {
        "id": str(uuid.uuid4()),
        "model": call.model,
        "results": results,
        "score_scale": result.score_scale,
        "degraded": result.degraded,
        "warnings": answer_warnings(result, call),
        "timings": timings,
        "usage": {k: int(v) for k, v in result.usage.items()},
        "meta": cohere,
    }
