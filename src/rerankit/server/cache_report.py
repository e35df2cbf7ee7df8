"""What the service says of its caches (``[cache]``, ``answer_cache``): where answers, LLM
judgments and embeddings are kept, for how long, and whether the shared server answers a
PING. ``rerankit check`` prints it as its ``cache:`` line (:func:`cache_check`); the
service logs it once at start (:func:`log_cache`), a WARNING when the server does not
answer. The PING is one call bounded by ``[cache] timeout`` (or the url's ``?socket_timeout=``
and ``?socket_connect_timeout=``, which win): it reads and writes no entry.
A cache directory that cannot be written is a WARNING at start and in ``check``, or a
mistake in ``check`` where serve would not start (:func:`cache_dir_check`)."""

from __future__ import annotations

import logging
import os
from typing import Any

from .._paths import CACHE_DIR_ENV, unwritable, warn_unwritable
from ..cache import EMBEDDING_CACHE_ENV
from ..cache.redis_store import AUTH_FAILED, RedisStore
from ..cache.store import default_cache_dir, redacted
from ..errors import RerankitError

__all__ = [
    "UNWRITABLE_COST",
    "cache_check",
    "cache_dir_check",
    "cache_ping",
    "cache_where",
    "log_cache",
]

logger = logging.getLogger(__name__)

_PLURAL = {"answer": "answers", "judgment": "LLM judgments", "embedding": "embeddings"}

#: what a service whose cache directory cannot be written goes without (it still serves)
UNWRITABLE_COST = (
    "nothing is kept there: word-frequency tables are built again in each process (a "
    "slower warm-up) and no model is exported to ONNX there (what is already there is read)"
)


def _kept(cache: Any, kinds: list[str]) -> str:
    """How long entries of ``kinds`` are kept (their ``*_ttl``)."""
    said = []
    for kind in kinds:
        ttl = getattr(cache, f"{kind}_ttl")
        said.append(f"{_PLURAL[kind]} {f'{ttl:g} s' if ttl else 'until evicted or cleared'}")
    return ", ".join(said)


def cache_where(settings: Any) -> str:
    """Where the service ``settings`` (a :class:`~rerankit.server.ServerSettings`) keeps
    answers, LLM judgments and embeddings, and for how long."""
    cache = settings.cache
    kinds = [k for k in _PLURAL if k != "answer" or settings.answer_cache]
    off = "" if settings.answer_cache else "answers not cached (answer_cache = false); "
    url = cache.resolved_url
    if url:
        named = [_PLURAL[k] for k in kinds]
        said = ", ".join(named[:-1]) + " and " + named[-1]
        return (
            f"{off}{said} shared in Redis {redacted(url)} under {cache.resolved_namespace}:* "
            f"(kept: {_kept(cache, kinds)}); required = {str(cache.required).lower()}"
        )
    folder = default_cache_dir()
    files = [f"{_PLURAL[k]} in {folder / f'{k}s.sqlite'}" for k in kinds if k != "embedding"]
    embeddings = os.environ.get(EMBEDDING_CACHE_ENV) or ""
    files.append(
        f"embeddings in {embeddings}"
        if embeddings
        else f"embeddings in each process's memory (${EMBEDDING_CACHE_ENV} can name a file)"
    )
    kept = _kept(cache, [k for k in kinds if k != "embedding"])
    return f"{off}{'; '.join(files)}, on this machine (kept: {kept}); no [cache] url"


def cache_ping(settings: Any) -> str | None:
    """None when the shared cache server of ``settings`` answers a PING within ``[cache]
    timeout`` (or the url's own timeouts), else why not (also when no shared server is
    named: not asked)."""
    return _ping(settings)[0]


def _ping(settings: Any) -> tuple[str | None, str]:
    """:func:`cache_ping`'s answer, and the timeout the PING had (:func:`_timeouts_said`)."""
    url, timeout = settings.cache.resolved_url, settings.cache.timeout
    if not url:
        return "no shared server to ask", f"{timeout:g} s"
    try:
        store = RedisStore(url, "answer", timeout=timeout)
    except (RerankitError, ImportError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}", f"{timeout:g} s"
    problem = store.ping()
    said = _timeouts_said(*store.timeouts, timeout)
    return (None if problem is None else problem.split(": ", 1)[-1].rstrip(".")), said


def _timeouts_said(connect: float | None, answer: float | None, timeout: float) -> str:
    """The seconds a call waits to connect and to be answered, as one when they agree, and
    which of the url's parameters set them where not ``[cache] timeout``."""

    def seconds(value: float | None) -> str:
        return "no limit" if value is None else f"{value:g} s"

    said = (
        seconds(answer)
        if connect == answer
        else f"{seconds(connect)} to connect, {seconds(answer)} to answer"
    )
    from_url = [
        f"?{name}="
        for name, value in (("socket_connect_timeout", connect), ("socket_timeout", answer))
        if value != timeout
    ]
    if from_url:
        said += f", set by the url's {' and '.join(from_url)} over [cache] timeout = {timeout:g}"
    return said


def cache_check(settings: Any) -> tuple[str, str | None]:
    """``rerankit check``'s ``cache:`` line for ``settings``, and how grave it is: None,
    ``warning`` or ``mistake``, as serve would meet the same server. A shared server that
    does not answer is said, never a mistake: like a key variable not set here, what this
    machine reaches says little of where serve runs (CI may have no Redis); with ``required
    = true`` the line says that serve would not be ready without it. A server that answers
    and refuses the url's credentials would refuse serve's too: a warning (serve computes
    without it), a mistake with ``required = true`` (serve would never be ready)."""
    line = f"cache: {cache_where(settings)}"
    if not settings.cache.resolved_url:
        return line, None
    problem, timeout = _ping(settings)
    if problem is None:
        return f"{line}; the server answered a PING from here (within {timeout})", None
    required = settings.cache.required
    if AUTH_FAILED in problem:
        if required:
            then = "with required = true, serve's /ready says 503 until the url is mended"
        else:
            then = "serve starts and computes without it until the url is mended"
        return f"{line}; the server refused the url's credentials ({problem}): {then}", (
            "mistake" if required else "warning"
        )
    if required:
        then = "with required = true, serve's /ready says 503 until it answers"
    else:
        then = "serve starts anyway and computes without it until it answers"
    return (
        f"{line}; the server is not reachable from here ({problem}; one PING, timeout "
        f"{timeout}): {then}",
        None,
    )


def cache_dir_check(settings: Any) -> tuple[bool, str] | None:
    """None when the cache directory can be written here, else ``(mistake, what to say)``:
    a mistake where serve would not start (``answer_cache = true`` keeps answers there,
    in SQLite, when no ``[cache] url`` names a server), a warning where it still serves
    without keeping things there (:data:`UNWRITABLE_COST`)."""
    folder = default_cache_dir()
    problem = unwritable(folder)
    if problem is None:
        return None
    said = f"the rerankit cache directory {folder} cannot be written ({problem})"
    if settings.answer_cache and not settings.cache.resolved_url:
        return True, (
            f"{said}, and answer_cache = true keeps answers there "
            f"({folder / 'answers.sqlite'}): serve would not start; set {CACHE_DIR_ENV} to a "
            "writable folder, name a shared server ([cache] url), or set answer_cache = false"
        )
    return False, (
        f"{said}: serve still starts, but {UNWRITABLE_COST}; set {CACHE_DIR_ENV} to a "
        "writable folder"
    )


def log_cache(settings: Any) -> None:
    """The service's start line on its caches: INFO, or a WARNING when the shared server
    does not answer a PING. Never raises: a line that cannot be said holds no warm-up."""
    try:
        _log_cache(settings)
    except Exception as exc:  # (a report: the service starts whatever it could not say)
        logger.warning("rerankit service caches: could not say where they are: %s", exc)


def _log_cache(settings: Any) -> None:
    folder = default_cache_dir()
    problem = unwritable(folder)
    if problem is not None:  # (answers kept there would have stopped the service before)
        warn_unwritable(folder, problem, UNWRITABLE_COST)
    where = cache_where(settings)
    if not settings.cache.resolved_url:
        logger.info("rerankit service caches: %s", where)
        return
    problem = cache_ping(settings)
    if problem is None:
        logger.info("rerankit service caches: %s; the server answered a PING", where)
        return
    then = (
        "/ready says 503 until it answers (required = true)"
        if settings.cache.required
        else "requests are computed without it until it answers"
    )
    how = "refused the url's credentials" if AUTH_FAILED in problem else "did not answer a PING"
    logger.warning("rerankit service caches: %s; the server %s (%s): %s", where, how, problem, then)
