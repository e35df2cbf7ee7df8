"""The shapes of what the status endpoints answer (``/health``, ``/ready``, ``/v1/models``,
``/info``), for the OpenAPI document: the endpoints build their answers as plain JSON
(:mod:`.status`, :mod:`.readiness`), and the suite checks real answers against these
shapes. A field typed ``X | None = None`` may be absent (it is never null)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..training.clicks.interleave import METHODS
from ..training.clicks.log import STORE
from .batching import PAIR_MODES
from .formats.base import ScoreScale, UnitScale
from .http import AnswerShape

__all__ = ["Health", "Info", "Models", "NotReady", "Ready"]


def _moment() -> Any:
    """A field that may be absent holding a moment as the service says it: UTC ISO 8601 to
    the second (``2025-05-01T12:00:00Z``)."""
    return Field(default=None, json_schema_extra={"format": "date-time"})


class Health(AnswerShape):
    """``/health``: the process answers; the pipelines it serves and the default one."""

    status: Literal["ok"]
    models: list[str]
    default: str


class StateDetails(AnswerShape):
    """What is said of a pipeline beside its state. Ready but ``failing`` (its last
    requests got no answer): ``error`` (why), ``failing_since``, ``failed_requests`` and
    ``next_try_in_seconds`` (when a request is next let through to try it). Ready with
    degraded answers: ``degraded_since``, ``degraded_answers``, ``degraded_cause``. Not
    ready: ``error`` (the last attempt's), ``attempts``, ``loading_seconds`` (the attempt
    running), ``retry_in_seconds`` (the next attempt), ``retry_after_seconds`` (what a
    request is told to wait) and ``retried: false`` when no attempt will be made (restart
    the service once it has what it needs). With API keys, ``/ready`` gives no error's
    text (``see /info (with an API key) for the cause``)."""

    error: str | None = None
    failing_since: str | None = _moment()
    failed_requests: int | None = Field(default=None, ge=1)
    next_try_in_seconds: float | None = Field(default=None, ge=0)
    degraded_since: str | None = _moment()
    degraded_answers: int | None = Field(default=None, ge=1)
    degraded_cause: str | None = None
    retried: Literal[False] | None = None
    loading_seconds: float | None = Field(default=None, ge=0)
    attempts: int | None = Field(default=None, ge=0)
    retry_in_seconds: float | None = Field(default=None, ge=0)
    retry_after_seconds: int | None = Field(default=None, ge=1)


class PipelineState(StateDetails):
    """Where a pipeline stands: ``loading``, ``ready``, ``failing`` (ready, but its last
    requests got no answer) or ``failed`` (to load)."""

    state: Literal["loading", "ready", "failing", "failed"]


class ScoresMeaning(AnswerShape):
    """What a pipeline's scores mean (``scores`` is null until it has loaded):
    ``scores`` the scale of the ``relevance_score`` answered, ``raw_scores`` the
    pipeline's own, ``pairwise`` whether a score depends only on its (query, document) pair
    (not on the request's other documents), ``scores_with_first_stage_field`` the scale
    when a request sends ``first_stage_field``, ``backends`` where each local model runs."""

    scores: UnitScale | None
    raw_scores: ScoreScale | None = None
    pairwise: bool | None = None
    scores_with_first_stage_field: Literal["relative"] | None = None
    backends: dict[str, str] | None = None


class Ready(StateDetails):
    """``/ready``'s 200. Without ``model``: ``ready``, with ``warm_up_seconds`` and the
    pipelines that ``failed`` (to load), are still ``loading`` (with ``ready_when =
    "any"``) or are ``failing``, each with why. With ``?model=NAME``: that pipeline's
    state (``ready`` or ``failing``), the ``model`` asked and the ``pipeline`` it names."""

    status: Literal["ready", "failing"]
    model: str | None = None
    pipeline: str | None = None
    warm_up_seconds: float | None = Field(default=None, ge=0)
    failed: dict[str, str] | None = None
    loading: list[str] | None = None
    failing: dict[str, str] | None = None


class NotReady(StateDetails):
    """``/ready``'s 503: ``loading``, ``failed`` or ``stopping``. Without ``model``: each
    pipeline's state (``pipelines``) and those that ``failed``, with their errors (the key
    ``cache`` when the shared cache that ``[cache] required`` names cannot be reached).
    With ``?model=NAME``: the ``model`` asked, the ``pipeline`` it names and what its
    requests are told (``message``), with the details of its state."""

    status: Literal["loading", "failed", "stopping"]
    model: str | None = None
    pipeline: str | None = None
    message: str | None = None
    pipelines: dict[str, PipelineState] | None = None
    failed: dict[str, str] | None = None


class ModelEntry(ScoresMeaning):
    """A name a request's ``model`` may take: a pipeline, or an alias of one
    (``alias_of``), with the kinds of request it answers and whether it is the default."""

    name: str
    endpoints: list[Literal["rerank", "explain"]]
    default: bool
    alias_of: str | None = None


class Models(AnswerShape):
    """``/v1/models``: every pipeline, then every alias."""

    models: list[ModelEntry]


class PipelineInfo(PipelineState, ScoresMeaning):
    """A pipeline in ``/info``: its spec (a name or a table, as the settings give it),
    whether it is loaded, its state and what its scores mean."""

    spec: str | dict[str, Any]
    loaded: bool


class Limits(AnswerShape):
    """The service's limits (``timeout`` in seconds), and what one pipeline may hold of
    the slots and the queue."""

    max_documents: int
    max_document_chars: int
    max_body_bytes: int
    timeout: float
    max_concurrency: int
    max_queue: int
    max_concurrency_per_pipeline: int
    max_queue_per_pipeline: int


class Batching(AnswerShape):
    """Micro-batching of the embedding (and, with ``pairs``, cross-encoder) work."""

    enabled: bool
    max_items: int
    max_tokens: int | None
    max_wait_ms: float
    pairs: Literal[PAIR_MODES]
    max_pairs: int


class SharedCacheInfo(AnswerShape):
    """The shared Redis/Valkey server: its ``url`` (no password) and whether it is ``up``
    (both null without one); while it cannot be used, the ``problem`` and for how long
    (``out_seconds``)."""

    url: str | None
    up: bool | None
    problem: str | None = None
    out_seconds: float | None = Field(default=None, ge=0)


class CacheInfo(AnswerShape):
    """The answer cache: on or off, where its answers are kept, whether the shared cache
    is required for readiness, and the shared server."""

    answer_cache: bool
    answers_in: str | None
    required: bool
    server: SharedCacheInfo


class FeedbackInfo(AnswerShape):
    path: str
    store: Literal[STORE]
    retention_days: float | None
    accept_unknown_ids: bool


class InterleaveInfo(AnswerShape):
    pipelines: list[str] = Field(min_length=2, max_length=2)
    share: float
    method: Literal[METHODS]


class ExploreInfo(AnswerShape):
    share: float
    pairs: float


class ExperimentsInfo(AnswerShape):
    """The experiments on logged answers and the click log they need (null: off)."""

    feedback: FeedbackInfo | None
    interleave: InterleaveInfo | None
    explore: ExploreInfo | None


class ProcessInfo(AnswerShape):
    """Which process answered (one of ``rerankit serve --workers``)."""

    pid: int


class Info(AnswerShape):
    """``/info``: the version, the default pipeline, each pipeline, the limits,
    micro-batching, the answer cache, the experiments, whether the service is ready (and
    while not, why: ``/ready``'s 503 in full) and which process answered."""

    version: str
    default: str
    pipelines: dict[str, PipelineInfo]
    limits: Limits
    batching: Batching
    cache: CacheInfo
    experiments: ExperimentsInfo
    ready: bool
    not_ready: NotReady | None = None
    process: ProcessInfo
