"""The rerank endpoints, one per wire format (:mod:`rerankit.server.formats`), and the
answers' headers (the OpenAPI document is :mod:`.openapi`'s)."""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from typing import Any, Union

from fastapi import Request
from fastapi.responses import Response

from ..errors import InputError, InvalidDocumentError, ServiceError, serving
from ..normalize import unit_scale
from .answers import Answer, mark, stamp
from .experiments import Experiments
from .feedback import FeedbackLog
from .formats import FORMATS
from .formats.base import answer_warnings
from .http import ErrorBody, invalid_document, read_json, render, until_disconnect, validate
from .languages import LanguageNotes
from .request_timeout import HEADER, asked_timeout, request_timeout
from .service import Service
from .settings import ServerSettings
from .tracing import request_attributes, traced

__all__ = ["WARNINGS_HEADER_CHARS", "add_rerank_routes", "warnings_header"]

#: the most characters ``x-rerankit-warnings`` holds: proxies refuse a longer answer header
#: (nginx's default buffer is 4 KiB), and a request of 1000 cut documents has 1000 lines
WARNINGS_HEADER_CHARS = 2000
#: what a header value cannot hold (a provider's error text may have line breaks)
CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def warnings_header(warned: list[str], limit: int = WARNINGS_HEADER_CHARS) -> str:
    """``warned`` joined by ``; `` with non-ASCII ``\\u``-escaped (headers are Latin-1) and
    control characters (a line break) as a space,
    a ``; `` inside one warning written ``, `` so that splitting on ``; `` gives each
    warning whole; past ``limit`` characters the rest is counted, not said
    (``x-rerankit-truncated`` lists every cut document)."""
    said: list[str] = []
    size = 0
    for i, line in enumerate(warned):
        line = CONTROL.sub(" ", line).replace("; ", ", ")  # a header holds no line break
        line = line.encode("ascii", "backslashreplace").decode()
        if said and size + 2 + len(line) > limit:
            rest = len(warned) - i
            said.append(f"and {rest} more warning{'s' if rest > 1 else ''}")
            break
        said.append(line)
        size += len(line) + 2
    return "; ".join(said)


def add_rerank_routes(
    app: Any,
    service: Service,
    settings: ServerSettings,
    tracer: Any,
    feedback: FeedbackLog | None = None,
) -> None:
    """``POST`` one route per wire format; answers from the answer cache where it is on
    (see :mod:`.answers`); with ``feedback``, each answer with an ``id`` is logged (and may
    be an experiment, never cached: :mod:`.experiments`)."""
    metrics, answers = service.metrics, service.answers
    experiments = Experiments(service, settings) if feedback is not None else None
    languages = LanguageNotes(settings)

    def logs(fmt: Any) -> bool:
        """Whether answers in ``fmt`` are logged (and may be experiments): those with an
        ``id`` and a ``meta`` to say how they were ordered (Cohere's, the explanation)."""
        fields = getattr(fmt.Response, "model_fields", {})
        return experiments is not None and "id" in fields and "meta" in fields

    def route(formats: list[Any]) -> Any:
        """``POST`` the path of ``formats``: the first whose ``accepts`` takes the body
        reads it, else the first of them."""

        async def computed(
            request: Request, fmt: Any, body: Any, call: Any, pipeline: Any, plan: str | None
        ) -> Answer:
            """The answer computed for ``call`` (or the experiment ``plan`` names): its body
            and the headers describing it."""
            arrival = request.state.arrival
            with serving():  # the pipeline's warnings name the settings file's remedies
                if plan is None:
                    result, shown = await service.compute(pipeline, call, arrival), {}
                else:
                    assert experiments is not None
                    result, shown = await experiments.run(fmt.path, call, arrival, plan)
            request.state.result, request.state.shown = result, shown
            content = fmt.respond(body, call, result)
            # an answer whose order is not its scores' says why (an exploration that
            # exchanged nothing is logged as one, but its order is the plain ranking)
            swapped = shown.get("explore", {}).get("swapped")
            how = "interleaved" if "interleaving" in shown else "explored" if swapped else None
            if how:
                content["meta"].setdefault("rerankit", {})["order"] = how
            # the scale of the numbers sent: TEI's raw_scores are the pipeline's own
            raw = getattr(body, "raw_scores", False)
            headers = {
                "x-rerankit-scores": result.score_scale if raw else unit_scale(result.score_scale)
            }
            if result.degraded:  # SDK users rarely read meta: the header says it too
                headers["x-rerankit-degraded"] = "true"
            # every warning of the answer (the request's, the pipeline's, each cut or split
            # document's line), as meta.warnings says them where the format has one (not
            # TEI's, Infinity's, Voyage's: this header is their only place)
            warned = answer_warnings(result, call)
            if warned:
                headers["x-rerankit-warnings"] = warnings_header(warned)
            # said in meta too, where the format has one: TEI's answer is a bare list, so
            # a document a rule dropped would vanish from it unsaid but for its header
            described = (
                ("truncated", call.cut_documents()),  # the service's cuts and the pipeline's
                ("chunked", call.splits),
                ("dropped", result.dropped),
            )
            for header, which in described:
                if which:
                    headers[f"x-rerankit-{header}"] = ",".join(map(str, sorted(which)))
            cached = request.state.answer_key is not None
            return Answer(
                render(mark(content) if cached else content), headers, not result.degraded
            )

        async def handle(request: Request) -> Any:
            arrival = getattr(request.state, "arrival", None) or time.monotonic()
            request.state.arrival = arrival
            asked = asked_timeout(request.headers.get(HEADER), settings.timeout)
            data = await read_json(request, settings)
            fmt = next((f for f in formats[1:] if f.accepts(data)), formats[0])
            logged = logs(fmt)
            body = validate(data, fmt.Request)
            try:
                call = fmt.call(body, settings)
            except InvalidDocumentError as exc:  # a validation error, located: 422
                raise invalid_document(exc) from exc
            except InputError as exc:
                raise ServiceError(400, str(exc), code="invalid_request") from exc
            if asked is not None:  # the client's own, shorter deadline
                call = replace(call, timeout=asked)
            request.state.model = settings.resolve(call.model)  # errors are counted by it
            request.state.result = None
            request.state.shown = {}
            # the explanation shows the pipeline's own order: never an experiment
            tried = logged and experiments is not None and fmt.path != "/v1/explain"
            plan = experiments.plan(call) if tried else None

            async def respond() -> tuple[Answer, str | None]:
                """The answer and where it came from (None: no answer cache)."""
                pipeline = service.check(fmt.path, call)
                named = call.asked or call.model  # English only for a multilingual name
                note = languages.note(named, pipeline)
                if note:  # model name: meta.warnings says so
                    call.notes.append(note)
                key = None
                if plan is None:  # an experiment's answer is drawn anew: never kept
                    key = answers.key(
                        fmt.path, body, pipeline.fingerprint, request.headers, call.notes
                    )
                request.state.answer_key = key
                compute = lambda: computed(request, fmt, body, call, pipeline, plan)  # noqa: E731
                if key is None:
                    return await until_disconnect(request, compute(), metrics), None
                deadline = arrival + request_timeout(call.timeout, settings.timeout)[0]
                work = answers.answer(key, pipeline.name, deadline, compute)
                return await until_disconnect(request, work, metrics)

            def answered(out: tuple[Answer, str | None]) -> dict[str, Any]:
                described = request_attributes(call, request.state.model, request.state.result)
                return {**described, **({"rerankit.cache": out[1]} if out[1] else {})}

            if tracer is None:
                answer, source = await respond()
            else:  # the span covers the checks and the answer cache too
                model = request.state.model
                work = traced(tracer, request.headers, fmt.path, call, model, respond, answered)
                answer, source = await work
            headers = {  # as Text Embeddings Inference sends them, in milliseconds
                "x-total-time": f"{1000 * (time.monotonic() - arrival):.1f}",
                "x-queue-time": f"{1000 * call.timings.get('queue', 0.0):.1f}",
                "x-inference-time": f"{1000 * call.timings.get('inference', 0.0):.1f}",
                **answer.headers,
            }
            if source is not None:  # hit, shared, miss or unavailable
                headers["x-rerankit-cache"] = source
            body_sent = stamp(answer.body, source)
            if logged and feedback is not None:  # the answer as sent: its id is the one
                shown = request.state.shown  # feedback will name, from the cache or not
                sent = json.loads(body_sent)
                if fmt.path == "/v1/explain":  # the playground's tries: not left to learning
                    shown = {**shown, "endpoint": "explain"}
                feedback.impression(sent, call.documents, call.query, request.state.model, **shown)
            return Response(body_sent, media_type="application/json", headers=headers)

        answers_of = tuple(f.Response for f in formats)
        answer = answers_of[0] if len(answers_of) == 1 else Union[answers_of]  # noqa: UP007
        # the route's own errors; those of every route and of every JSON body, the request
        # body and the headers are the OpenAPI document's (:mod:`.openapi`)
        unknown = "No pipeline or alias of that `model`: `message` lists them"
        errors = {status: {"model": ErrorBody} for status in (429, 502, 503, 504)}
        app.post(
            formats[0].path,
            summary=formats[0].summary,
            description=formats[0].description,
            response_model=answer,
            responses={404: {"model": ErrorBody, "description": unknown}, **errors},
        )(handle)

    by_path: dict[str, list[Any]] = {}
    for fmt in FORMATS:
        by_path.setdefault(fmt.path, []).append(fmt)
    for formats in by_path.values():
        route(formats)
