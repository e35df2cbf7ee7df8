"""What every wire format shares: the request it turns into a core call, and the limits
applied to documents on the way in."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal, Protocol

from pydantic import BeforeValidator, Field

from ...errors import ServiceError
from ...normalize import SCORE_SCALES, ranked_unit_scores, scale_to_unit, served_scales
from ...rerankers.notes import pipeline_note
from ...types import Document, RerankResult
from ..answers import SOURCES
from ..http import AnswerShape
from ..model_names import COHERE
from ..settings import ServerSettings

__all__ = [
    "NOT_BLANK",
    "UNIT_SCALES",
    "UUID",
    "ApiVersion",
    "BilledUnits",
    "Call",
    "CohereMeta",
    "PositiveWholeNumber",
    "RankedResponse",
    "RankedResult",
    "RelevanceScore",
    "RerankitMeta",
    "ScoreScale",
    "UnitScale",
    "WholeNumber",
    "WireFormat",
    "answer_warnings",
    "check_count",
    "check_query",
    "clip",
    "meta",
    "python_name",
    "ranked_call",
    "relevance_scores",
]

logger = logging.getLogger(__name__)

#: how many notes on pipelines' settings the log says, at most (each once)
SETTING_NOTES = 100
_SETTING_SAID: set[tuple[str | None, str]] = set()


#: a query must hold a character that is not whitespace as Python's ``str.isspace`` sees it
#: (the service strips with it); listed explicitly so that every regular-expression engine
#: (pydantic's, JSON Schema validators', schemathesis') reads the pattern alike: ``\\s``
#: differs between them on U+0085 and U+001C..U+001F
NOT_BLANK = "[^\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


def python_name(name: str, cohere: str, example: str) -> Any:
    """The type of a field of rerankit's Python API (``top_k``, ``text_field``) that a
    Cohere request may carry by mistake: refused (422) unless null, naming Cohere's field
    (``cohere``; ``example`` shows it, ``{value}`` the value sent), as Cohere's API refuses
    fields it does not know, where rerankit would otherwise ignore it unsaid."""

    def refuse(value: Any) -> None:
        if value is None:
            return None
        shown = example.replace("{value}", json.dumps(value, ensure_ascii=False))
        raise ValueError(
            f"{name} is rerankit's Python name; Cohere's rerank request says {cohere}: "
            f"send {shown} (Cohere's API refuses fields it does not know)"
        )

    return Annotated[
        None,
        BeforeValidator(refuse),
        Field(
            default=None,
            description=f"rerankit's Python name for {cohere}: refused "
            f"(422) unless null; send {cohere}",
        ),
    ]


def _whole_number(value: Any) -> Any:
    """A JSON integer: ``5`` or ``5.0`` (JSON Schema's integer allows both), never ``"5"``,
    ``true`` or ``5.5``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("Input should be a valid integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("Input should be a valid integer, got a fraction")
        return int(value)
    return value


#: an integer field of a request body (strict about strings and booleans)
WholeNumber = Annotated[int, BeforeValidator(_whole_number)]
#: the same, at least 1
PositiveWholeNumber = Annotated[int, Field(ge=1), BeforeValidator(_whole_number)]


@dataclass(frozen=True)
class Call:
    """One rerank the service runs for a request."""

    query: str
    documents: list[Document]
    model: str | None = None
    top_n: int | None = None
    #: the model name the request gave, where ``model`` is already the pipeline's (Infinity
    #: answers with the pipeline's name): what the multilingual-name warning reads
    asked: str | None = None
    #: seconds spent waiting for a slot (``queue``) and reranking (``inference``)
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    #: what was cut from a document before scoring, by input index (reported in ``meta``)
    cuts: dict[int, str] = field(default_factory=dict, compare=False)
    #: documents split into chunks, by input index (reported in ``meta``)
    splits: dict[int, str] = field(default_factory=dict, compare=False)
    #: filled in by the service: what the pipeline itself cut (``truncated:<scorer>`` flags,
    #: e.g. passages beyond ``max_passages``), by input index, over every document of the
    #: request (not only the ``top_n`` answered); its warnings say what was kept
    pipeline_cuts: dict[int, list[str]] = field(default_factory=dict, compare=False)
    #: each document cut to this many of the pipeline's tokens (``"model"``: its input limit)
    max_tokens: int | str | None = None
    #: which end a cut keeps: the start, or the end (``left``)
    left: bool = False
    #: the option that asked for the cut, named in the report
    cut_by: str = "max_tokens_per_doc"
    #: score each document by the best of its first N chunks (Cohere v1)
    max_chunks: int | None = None
    #: count tokens and search units for Cohere's ``billed_units``
    bill: bool = False
    #: filled in by the service: ``search_units`` and ``input_tokens`` when billed
    usage: dict[str, int] = field(default_factory=dict, compare=False)
    #: filled in by the service for relative scores: each document's relevance score by
    #: input index, min-max normalised over every document of the request (not only the
    #: ``top_n`` answered)
    relevance: dict[int, float] = field(default_factory=dict, compare=False)
    #: the API family whose shape the request has (``"cohere"``, ``"voyage"``: see
    #: :func:`~rerankit.server.model_names.family_of`), whose model names a 404 for an
    #: unknown one offers first; None for the others (TEI's, Infinity's, the explanation)
    family: str | None = None
    #: filled in by the service: warnings about the request itself (a Cohere multilingual
    #: model name answered by a pipeline that reads English only), said in ``meta.warnings``
    notes: list[str] = field(default_factory=list, compare=False)
    #: the request's own deadline (seconds from its arrival) when its ``x-rerankit-timeout``
    #: header asked for less than the service's ``timeout`` (None: the service's)
    timeout: float | None = None

    def cut_documents(self) -> set[int]:
        """The input indices of every document cut before or while it was scored: by the
        service (``max_document_chars``, ``max_tokens_per_doc``, ...) or by the pipeline
        (``max_passages``, ...): what ``x-rerankit-truncated`` lists."""
        return set(self.cuts) | set(self.pipeline_cuts)


class WireFormat(Protocol):
    """A wire format: its ``path``, the ``summary`` and ``description`` of its operation in
    the OpenAPI document, its pydantic ``Request`` and ``Response`` models, how a request
    becomes a :class:`Call` and how a result becomes the response body."""

    path: str
    summary: str
    description: str
    Request: type
    Response: Any

    def call(self, body: Any, settings: ServerSettings) -> Call: ...

    def respond(self, body: Any, call: Call, result: RerankResult) -> Any: ...


#: the scales a ``relevance_score`` is on (:func:`rerankit.normalize.unit_scale`):
#: ``meta.rerankit.scores``, ``x-rerankit-scores``
UNIT_SCALES = ("probability", "unit", "relative")
UnitScale = Literal[UNIT_SCALES]
#: a pipeline's own scale (``meta.rerankit.raw_scores``; TEI's and Infinity's ``raw_scores``)
ScoreScale = Literal[SCORE_SCALES]
#: a relevance score as the rerank endpoints answer it
RelevanceScore = Annotated[float, Field(ge=0, le=1)]
#: an answer's ``id``: a random UUID (feedback names it)
UUID = Annotated[str, Field(json_schema_extra={"format": "uuid"})]


class ApiVersion(AnswerShape):
    """Cohere's ``meta.api_version``: the version of the shape answered."""

    version: Literal["1", "2"]


class BilledUnits(AnswerShape):
    """Cohere's ``meta.billed_units``: search units (a query with up to 100 documents is
    one) and, when counted, the tokens read (with the pipeline's tokenizer)."""

    search_units: int = Field(ge=1)
    input_tokens: int | None = Field(default=None, ge=0)


class RerankitMeta(AnswerShape):
    """``meta.rerankit``: what the scores mean; and, when anything went wrong or was cut,
    ``degraded`` and each document's ``flags`` (by its index in the request, as a string:
    ``truncated``, ``chunked``, ``truncated:<scorer>``, a scorer's own such as
    ``llm_failed``); ``order`` when the order is not the scores' (an experiment); ``cache``
    where the answer cache is on."""

    scores: UnitScale
    raw_scores: ScoreScale
    degraded: bool | None = None
    flags: dict[str, list[str]] | None = Field(
        default=None, json_schema_extra={"propertyNames": {"pattern": "^[0-9]+$"}}
    )
    order: Literal["interleaved", "explored"] | None = None
    cache: Literal[SOURCES] | None = None


class CohereMeta(AnswerShape):
    """Cohere's ``meta``, with the answer's warnings and rerankit's own account."""

    api_version: ApiVersion
    billed_units: BilledUnits
    warnings: list[str] | None = None
    rerankit: RerankitMeta


class RankedResult(AnswerShape):
    """One result of a Cohere-style answer: the document's position in the request, its
    relevance score and, when asked for, the document (``{"text": ...}``, or the object
    sent)."""

    index: int = Field(ge=0)
    relevance_score: RelevanceScore
    document: dict[str, Any] | None = None


class RankedResponse(AnswerShape):
    """A Cohere-style answer (``/v1/rerank``, ``/v2/rerank``): results best first, and
    ``meta`` (warnings, ``meta.rerankit``)."""

    id: UUID
    results: list[RankedResult]
    meta: CohereMeta


def ranked_call(body: Any, docs: list[Document], settings: ServerSettings, **limits: Any) -> Call:
    """The call of a Cohere-style request ``body`` (``query``, ``model``, ``top_n``) over
    its ``docs``, clipped to the service's limits, billed, with the format's own
    ``limits`` (``max_chunks``, ``max_tokens``)."""
    cuts: dict[int, str] = {}
    docs = clip(docs, settings, cuts=cuts)
    query = check_query(body.query, settings)
    return Call(query, docs, body.model, body.top_n, cuts=cuts, bill=True, family=COHERE, **limits)


def clip(
    docs: Sequence[Document],
    settings: ServerSettings,
    *,
    truncate: bool | None = None,
    left: bool = False,
    cuts: dict[int, str] | None = None,
) -> list[Document]:
    """Documents within ``max_document_chars``: longer ones are truncated (``truncate``, the
    server's setting by default; keeping the start, or the end with ``left``; each cut is
    recorded in ``cuts``) or refused with a 400 naming the first."""
    cap = settings.max_document_chars
    truncate = settings.truncate if truncate is None else truncate
    out = []
    for i, d in enumerate(docs):
        if len(d.text) > cap:
            if not truncate:
                raise ServiceError(
                    400,
                    f"document {i}: {len(d.text)} characters; the limit is {cap} "
                    "(max_document_chars in the service's settings; truncate = true cuts "
                    "longer documents instead)",
                    code="document_too_long",
                    details={"max_document_chars": cap, "index": i},
                )
            if cuts is not None:
                part = "last" if left else "first"
                cuts[i] = f"scored on its {part} {cap} of {len(d.text)} characters"
            d = replace(d, text=d.text[-cap:] if left else d.text[:cap])
        out.append(d)
    return out


def check_count(documents: int, settings: ServerSettings) -> None:
    """A 400 when a request's ``documents`` are more than ``max_documents``."""
    limit = settings.max_documents
    if documents > limit:
        raise ServiceError(
            400,
            f"{documents} documents; the limit is {limit} per request: split them into "
            f"batches of at most {limit} (max_documents in the service's settings sets the "
            "limit)",
            code="too_many_documents",
            details={"max_documents": limit},
        )


def check_query(query: str, settings: ServerSettings) -> str:
    """The query, or a 400 when it is longer than a document may be."""
    if len(query) > settings.max_document_chars:
        raise ServiceError(
            400,
            f"query: {len(query)} characters; the limit is {settings.max_document_chars} "
            "(max_document_chars in the service's settings)",
            code="query_too_long",
            details={"max_document_chars": settings.max_document_chars},
        )
    return query


def relevance_scores(result: RerankResult, call: Call | None = None) -> list[float]:
    """The result's scores in [0, 1] by the fixed map of its scale (see
    :func:`rerankit.normalize.scale_to_unit`): a probability as it is, a cosine clipped at
    0, a logit through the sigmoid; only ``relative`` scores are min-max normalised per
    request (over all its documents: ``call.relevance`` when the service filled it in), and
    never rise with rank (:func:`rerankit.normalize.ranked_unit_scores`).
    :func:`rerankit.normalize.unit_scale` names their scale."""
    if call is not None and call.relevance and all(r.index in call.relevance for r in result):
        return [call.relevance[r.index] for r in result]
    if result.score_scale == "relative":
        return ranked_unit_scores([r.score for r in result]).tolist()
    return scale_to_unit([r.score for r in result], result.score_scale).tolist()


def answer_warnings(result: RerankResult, call: Call | None = None) -> list[str]:
    """What an answer warns of: the service's notes on the request, the result's warnings,
    then each cut or split document's (``document i: ...``). A note on the pipeline's
    setting, the same on every call (:func:`~rerankit.rerankers.notes.pipeline_note`: the
    default hybrid not fusing the documents' first-stage scores, ...), is logged once per
    pipeline instead of riding on every answer."""
    warned = [w for w in result.warnings if not _setting_said(w, call)]
    cuts = call.cuts if call is not None else {}
    splits = call.splits if call is not None else {}
    notes = {**{i: [why] for i, why in cuts.items()}}
    for i, why in splits.items():
        notes.setdefault(i, []).append(why)
    return [
        *(call.notes if call is not None else ()),
        *warned,
        *(f"document {i}: {'; '.join(why)}" for i, why in sorted(notes.items())),
    ]


def meta(result: RerankResult, version: str, call: Call | None = None) -> dict[str, Any]:
    """Cohere's ``meta`` object, with the result's warnings, and rerankit's own account in
    ``meta.rerankit``: ``scores`` (what the relevance scores are: ``probability``, ``unit``
    for another pair-wise scale mapped into [0, 1], or ``relative`` when they are min-max
    normalised within this answer), ``raw_scores`` (the pipeline's own scale, as TEI's
    ``raw_scores`` returns them: ``logit``, ``cosine``, ...) and, when anything went
    wrong, ``degraded`` and the per-document ``flags`` by input index."""
    billed = {"search_units": 1, **(call.usage if call is not None else {})}
    out: dict[str, Any] = {"api_version": {"version": version}, "billed_units": billed}
    cuts = call.cuts if call is not None else {}
    splits = call.splits if call is not None else {}
    warnings = answer_warnings(result, call)
    if warnings:
        out["warnings"] = warnings
    own: dict[str, Any] = served_scales(result.score_scale)
    flags = {str(r.index): list(r.flags) for r in result if r.flags}
    for i in sorted(cuts):  # every cut and split is said on its document too
        flags.setdefault(str(i), []).append("truncated")
    for i, cut in sorted((call.pipeline_cuts if call is not None else {}).items()):
        have = flags.setdefault(str(i), [])  # the answered documents' flags hold them already
        have.extend(c for c in cut if c not in have)
    for i in sorted(splits):
        flags.setdefault(str(i), []).append("chunked")
    if result.degraded or flags:
        own.update(degraded=result.degraded, flags=flags)
    out["rerankit"] = own
    return out


def _setting_said(warning: str, call: Call | None) -> bool:
    """Whether ``warning`` is a note on the pipeline's setting: logged the first time a
    pipeline gives it (at most :data:`SETTING_NOTES` of them in all), left out of answers."""
    note = pipeline_note(warning)
    if note is None:
        return False
    key = (call.model if call is not None else None, note)
    if key not in _SETTING_SAID and len(_SETTING_SAID) < SETTING_NOTES:
        _SETTING_SAID.add(key)
        logger.warning("pipeline %r: %s (said once, not in each answer)", key[0], warning)
    return True
