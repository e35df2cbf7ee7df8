"""What ``GET /ready`` answers: for the whole service (``ready_when``), or for one pipeline
(``?model=NAME``). Readiness covers loading and warm-up: a pipeline whose requests fail
once it is ready (``failing``: a provider that stalls or refuses mid-day) keeps the
replica ready and says so in the body. A provider several replicas share would otherwise
take every replica out of the balancer at once, the healthy pipelines with them, and a
pipeline no balancer sends requests to could never show that it answers again."""

from __future__ import annotations

from typing import Any

from .service import Service

__all__ = ["HIDDEN", "pipeline_readiness", "readiness", "ready_answer"]

#: what ``/ready`` (which needs no key) says in place of an error's text when the service
#: has API keys: a provider's error may quote the request it refused (a tenant's query and
#: documents), and a load error names paths and addresses; ``/info`` (with a key) has it
HIDDEN = "see /info (with an API key) for the cause"


def _shown(service: Service, text: str | None, public: bool = True) -> str | None:
    """``text`` as an unauthenticated ``/ready`` may show it (``public``), else as is."""
    return HIDDEN if public and text is not None and service.settings.api_keys else text


def _state(service: Service, name: str, public: bool = True) -> dict[str, Any]:
    state = service.describe_state(name)
    for key in ("error", "degraded_cause"):
        if key in state:
            state[key] = _shown(service, state[key], public)
    return state


async def ready_answer(
    service: Service,
    model: str | None = None,
    *,
    public: bool = True,
    cache_checked: tuple[str | None] | None = None,
) -> tuple[int, dict[str, Any], dict[str, str] | None]:
    """What ``/ready`` answers (``model``: ``?model=NAME``): :func:`readiness` or
    :func:`pipeline_readiness`, then, when that is 200 and ``[cache] required = true``,
    503 ``{"status": "failed", "failed": {"cache": why}}`` while the shared cache cannot be
    used (one PING), its reason in a few words, no address. ``public`` False: every cause
    in full, the server's address too, as ``/info`` (behind the keys) says why the replica
    is not ready. ``cache_checked``: the answer of a PING this request already sent
    (:meth:`~.shared_cache.SharedCache.check`, in a 1-tuple), used in place of another."""
    if model is None:
        (status, body), headers = readiness(service, public=public), None
    else:
        status, body, headers = pipeline_readiness(service, model, public=public)
    if status == 200:
        why = await service.shared_cache.unready(public=public, checked=cache_checked)
        if why is not None:
            status, body = 503, {"status": "failed", "failed": {"cache": why}}
    return status, body, headers


def readiness(service: Service, *, public: bool = True) -> tuple[int, dict[str, Any]]:
    """The ``/ready`` answer. ``ready_when="all"``: 503 ``loading`` until every pipeline's
    first load attempt has ended, then 503 ``failed`` (naming them with their errors)
    while any is not ready, 200 once all are. ``ready_when="any"``: 200 as soon as one
    pipeline is ready (naming those that failed or still load). A 200 names the pipelines
    that are ``failing`` (with why). 503 while stopping (the drain period after SIGTERM
    included). With API keys, errors' text is :data:`HIDDEN` (``/ready`` needs no key)."""
    if service.stopping or service.admission.draining:
        return 503, {"status": "stopping"}
    pipelines = service.pipelines.values()
    ok = [p.name for p in pipelines if p.ready]
    failed = {
        p.name: _shown(service, p.state.error, public)
        for p in pipelines
        if not p.ready and p.state.error
    }
    if ok and (service.settings.ready_when == "any" or len(ok) == len(service.pipelines)):
        body: dict[str, Any] = {"status": "ready"}
        if service.ready.is_set():
            body["warm_up_seconds"] = round(service.warm_up_seconds, 3)
        if failed:  # ready_when = "any"
            body["failed"] = failed
        loading = sorted(p.name for p in pipelines if not p.ready and not p.state.error)
        if loading:
            body["loading"] = loading
        failing = {
            p.name: _shown(service, p.state.failing, public)
            for p in pipelines
            if p.ready and p.state.failing
        }
        if failing:
            body["failing"] = failing
        return 200, body
    states = {name: _state(service, name, public) for name in service.pipelines}
    if not service.ready.is_set() or not failed:
        return 503, {"status": "loading", "pipelines": states}
    return 503, {"status": "failed", "failed": failed, "pipelines": states}


def pipeline_readiness(
    service: Service, model: str, *, public: bool = True
) -> tuple[int, dict[str, Any], dict[str, str] | None]:
    """``/ready?model=NAME``: 200 ``ready`` (or ``failing``, with why and since when) while
    the pipeline ``model`` names serves; 503 while it loads, failed or the service stops;
    404 for a name not served."""
    pipeline = service.named(model)  # 404 for a name not served
    named = {"model": model, "pipeline": pipeline.name}
    if service.stopping or service.admission.draining:
        return 503, {"status": "stopping", **named}, None
    state = _state(service, pipeline.name, public)
    status = state.pop("state")
    if pipeline.ready:  # ready, or failing (and serving)
        return 200, {"status": status, **named, **state}, None
    # what its requests are told now, and Retry-After; without a key, the load error's
    # text left out (it may name paths and addresses), the attempt and the wait kept
    hidden = HIDDEN if public and service.settings.api_keys else None
    why = pipeline.unavailable(hidden)
    return 503, {"status": status, **named, "message": why.message, **state}, why.headers
