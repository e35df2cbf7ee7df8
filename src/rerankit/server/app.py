"""The HTTP service: a thin FastAPI app over rerankit pipelines.

Endpoints: one per wire format in :mod:`rerankit.server.formats` (Cohere ``/v1/rerank`` and
``/v2/rerank``, TEI's and Infinity's ``/rerank``, rerankit's ``/v1/explain``), ``GET
/health``, ``GET /ready`` (``?model=NAME``: one pipeline's), ``GET /info``, ``GET
/v1/models``, ``GET /metrics`` (Prometheus), the OpenAPI docs at ``/docs`` and the
playground page at ``/playground``. Errors are JSON ``{"message": ..., "code": ...}`` with Cohere's
status codes. What runs a request (admission, deadlines, warm-up) is
:mod:`rerankit.server.service`; the metrics are :mod:`rerankit.server.metrics`.

Relevance scores are in [0, 1] and, for pipelines whose scores depend only on the (query,
document) pair, mean the same in every request: the default ``hybrid`` (given texts) gives
a calibrated estimate of P(relevant) (``probability``); ``embedding``'s cosine (negative as
0) and a cross-encoder's sigmoid of its logit are ``unit``. Pipelines whose scores are
relative to the request (``bm25`` over the candidates, min-max or rank fusion, a caller's
first-stage score) are min-max normalised per request (``relative``). ``meta.rerankit.scores``
(and the ``x-rerankit-scores`` header) names the scale of the relevance scores sent, and
``raw_scores`` the pipeline's own; ``/v1/models`` and ``/info`` list both for each
pipeline. TEI's ``raw_scores`` returns the pipeline's own scores instead.
"""

import asyncio
import contextlib
import logging
import os
from typing import Any

from .._optional import require

require("fastapi", "rerankit serve")  # the modules below need it: say which extra, once

from .. import __version__  # noqa: E402
from . import middleware  # noqa: E402
from .admission import isolation_warning  # noqa: E402
from .api_keys import keys_counted  # noqa: E402
from .feedback import FeedbackLog  # noqa: E402
from .feedback_api import add_feedback_routes  # noqa: E402
from .http import SafeJSONResponse  # noqa: E402
from .model_names import unserved_note  # noqa: E402
from .openapi import set_openapi  # noqa: E402
from .pages import add_pages  # noqa: E402
from .routes import add_rerank_routes  # noqa: E402
from .service import Service  # noqa: E402
from .settings import API_KEY_ENV, ServerSettings  # noqa: E402
from .status import add_status_routes  # noqa: E402
from .tracing import fastapi_telemetry, setup_tracer  # noqa: E402

__all__ = ["create_app"]

logger = logging.getLogger(__name__)


def create_app(settings: ServerSettings | None = None, *, tracer_provider: Any = None) -> Any:
    """The FastAPI application (extra ``server``); traced to ``tracer_provider`` when given
    (see :mod:`rerankit.server.tracing`)."""
    import fastapi

    settings = settings or ServerSettings()
    service = Service(settings)
    tracer = setup_tracer(tracer_provider)  # None unless OpenTelemetry is set up
    feedback = FeedbackLog(settings.feedback) if settings.feedback else None

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        warm = asyncio.ensure_future(service.warm_up())
        yield
        warm.cancel()
        service.stop_retries()
        service.admission.said_stopped()
        if feedback is not None:  # what is queued is written before the process ends
            await asyncio.to_thread(feedback.close)

    app = fastapi.FastAPI(
        title="rerankit",
        description="Reranking with Cohere- and TEI-compatible endpoints.",
        version=__version__,
        default_response_class=SafeJSONResponse,
        lifespan=lifespan,
        docs_url=None,  # served by add_pages from local files: FastAPI's own page loads a CDN
        redoc_url=None,
        **fastapi_telemetry(tracer_provider),  # its HTTP span, rerankit's under it
    )
    middleware.install(app, settings, service.metrics, service.admission.in_flight)
    add_rerank_routes(app, service, settings, tracer, feedback)
    if feedback is not None:
        add_feedback_routes(app, feedback, settings)
        service.metrics.registry.register(feedback.collector())
    set_openapi(app, settings)
    add_pages(app)
    add_status_routes(app, service, settings)
    if settings.api_keys:
        variable = settings.api_key_env or API_KEY_ENV
        counted = keys_counted(settings.api_keys, variable, os.environ.get(variable))
        logger.info(
            "rerankit service: %s; every request but the public endpoints needs one", counted
        )
    else:
        logger.warning(
            "rerankit service: no API keys configured; the service is open to "
            "anyone who can reach it"
        )
    admission = service.admission
    alone = isolation_warning(admission.slots, admission.share, len(settings.pipelines or ()))
    if alone is not None:
        logger.warning("rerankit service: %s", alone)
    left_out = unserved_note(settings.aliases or {}, settings.pipelines or {})
    if left_out:  # (only with aliases = {}, on purpose)
        logger.info("rerankit service: %s", left_out)
    app.state.settings = settings
    app.state.admission = service.admission
    app.state.service = service
    app.state.tracer = tracer
    app.state.feedback = feedback
    return app
