"""The answer cache of the service (``[server] answer_cache = true``): whole rerank answers
kept as the bytes that were sent, and identical requests computed once.

For a request to a cached endpoint (Cohere's ``/v1/rerank`` and ``/v2/rerank``, TEI's
``/rerank``; never ``/v1/explain``, whose body reports that request's own timings and LLM
usage):

1. Its key (:func:`request_key`): the served pipeline's fingerprint, the tenant (the API key
   sent, when keys are configured) and a digest of everything that decides the body.
2. An identical request in flight in this process: wait for its answer (``shared``).
3. Else read the store (Redis when ``[cache] url`` names one, else the SQLite file
   ``answers.sqlite`` in the cache directory, shared by the workers of one machine): a
   ``hit`` is sent at once.
4. Else claim the computing among the processes sharing the store (``SET NX PX`` in Redis,
   expiring after the request ``timeout``). When another process holds the claim, read its
   answer every 20 ms until it is stored (a ``hit``), the claim is gone, or half of the
   request's time is spent; then compute anyway.
5. Compute (a ``miss``), answer, and store it unless it is degraded; then release the claim.
   When the store could not be asked (down, slow, in its back-off after a failure), the
   answer is computed the same way but marked ``unavailable``, not ``miss``.

A stored answer is sent byte for byte as it was computed but for two values: ``id`` (a
Cohere answer's per-request id, fresh in each answer) and ``meta.rerankit.cache`` (``miss``,
``hit``, ``shared`` or ``unavailable``; TEI's answers have no ``meta``: the
``x-rerankit-cache`` header says it for every format). A store that fails (down, slow, full)
costs only the cache: the request is computed as without it, its answer marked
``unavailable``, and the failure counted in ``rerankit_cache_errors_total``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..cache import AnswerCache, answer_key
from .metrics import Metrics
from .settings import ServerSettings

__all__ = [
    "CACHED_PATHS",
    "SOURCES",
    "UNAVAILABLE",
    "Answer",
    "Answers",
    "mark",
    "request_key",
    "stamp",
]

logger = logging.getLogger(__name__)

#: the endpoints whose answers are cached
CACHED_PATHS = frozenset({"/v1/rerank", "/v2/rerank", "/rerank"})
#: seconds between two reads of an answer another process is computing
POLL_SECONDS = 0.02
_MISS = b'"cache":"miss"}}}'  # how a marked body ends (see :func:`mark`)
_ID = b'{"id":"'
#: the source of an answer computed because the store could not be asked (down, slow, or
#: in its back-off after a failure): a miss that says the cache was not there
UNAVAILABLE = "unavailable"
#: every source ``x-rerankit-cache`` and ``meta.rerankit.cache`` name
SOURCES = ("hit", "shared", "miss", UNAVAILABLE)


@dataclass(frozen=True)
class Answer:
    """A computed answer: the body as sent, the headers that describe it (what its scores
    mean, what was cut), and whether it may be kept (a degraded answer is not)."""

    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    storable: bool = True

    def pack(self) -> bytes:
        """As stored: its headers as one JSON line, then the body."""
        return json.dumps(self.headers, ensure_ascii=True).encode("ascii") + b"\n" + self.body

    @classmethod
    def unpack(cls, stored: bytes | None) -> Answer | None:
        if stored is None or b"\n" not in stored:
            return None
        head, body = stored.split(b"\n", 1)
        try:
            headers = json.loads(head)
        except ValueError:
            return None
        return cls(body, headers) if isinstance(headers, dict) else None


def request_key(
    fingerprint: str,
    path: str,
    body: Any,
    settings: ServerSettings,
    tenant: str | None,
    notes: Sequence[str] = (),
) -> str:
    """The answer key of request ``body`` (its validated model) to endpoint ``path``: the
    query, the documents as sent in their order, every other field of the request model
    (``top_n``, ``return_documents``, ``max_tokens_per_doc``, ``max_chunks_per_doc``,
    ``rank_fields``, ``raw_scores``, ``truncate``, ... with their defaults, so a field added
    later joins the key by itself) but ``model`` (the fingerprint stands for the pipeline it
    names) and ``priority`` (Cohere's order under load: no effect here), the endpoint, the
    service's limits that change the body (``max_document_chars``, ``truncate``) and the
    warnings the service adds about the request (``notes``: a multilingual model name that
    an English pipeline answers)."""
    fields = body.model_dump()
    query = fields.pop("query")
    documents = fields.pop("texts") if "texts" in fields else fields.pop("documents")
    fields.pop("model", None)
    fields.pop("priority", None)  # Cohere's order under load: no effect on the answer
    options = {
        "endpoint": path,
        "request": fields,
        "max_document_chars": settings.max_document_chars,
        "truncate": settings.truncate,
    }
    if notes:  # (absent otherwise: the keys of answers without them stay as they were)
        options["notes"] = list(notes)
    return answer_key(fingerprint, tenant=tenant, query=query, documents=documents, options=options)


def mark(content: Any) -> Any:
    """``content`` (a response body) with ``meta.rerankit.cache = "miss"`` as its very last
    value, where its ``meta`` ends it and ``meta.rerankit`` ends that (Cohere's formats);
    other bodies as they are."""
    meta = content.get("meta") if isinstance(content, dict) else None
    own = meta.get("rerankit") if isinstance(meta, dict) else None
    if isinstance(own, dict) and list(content)[-1] == "meta" and list(meta)[-1] == "rerankit":
        own.pop("cache", None)
        own["cache"] = "miss"
    return content


def stamp(body: bytes, source: str | None) -> bytes:
    """The body to send: as computed for a ``miss`` (or without the cache); for a ``hit``
    or ``shared`` answer, with a fresh ``id`` (when it starts the body), and for those and
    an ``unavailable`` one (computed for this request) the source in
    ``meta.rerankit.cache`` (when :func:`mark` put it there)."""
    if source in (None, "miss"):
        return body
    if source != UNAVAILABLE and body.startswith(_ID):
        end = body.index(b'"', len(_ID))
        body = _ID + str(uuid.uuid4()).encode("ascii") + body[end:]
    if body.endswith(_MISS):
        body = body[: -len(_MISS)] + b'"cache":"' + source.encode("ascii") + b'"}}}'
    return body


@dataclass
class _Flight:
    """The computing of one key in this process, and how many requests wait for it."""

    task: asyncio.Future
    waiters: int = 0


class Answers:
    """The service's answer cache and single flight (see the module's docstring); off
    (``enabled`` false, nothing opened) unless ``answer_cache`` is set."""

    def __init__(self, settings: ServerSettings, metrics: Metrics) -> None:
        self.settings, self.metrics = settings, metrics
        self.enabled = settings.answer_cache
        options = settings.cache.options("answer")
        self.cache = AnswerCache(**options) if self.enabled else None
        #: the store's calls block (up to its timeout): on threads of their own, so a slow
        #: store holds no thread a pipeline needs
        self._executor = ThreadPoolExecutor(8, thread_name_prefix="rerankit-answers")
        self._flights: dict[str, _Flight] = {}
        self._pending: set[asyncio.Future] = set()

    def describe(self) -> dict[str, Any]:
        """What ``/info`` says of the caches."""
        return {
            "answer_cache": self.enabled,
            "answers_in": self.cache.store.where if self.cache else None,
            "required": self.settings.cache.required,
        }

    def key(
        self,
        path: str,
        body: Any,
        fingerprint: str | None,
        headers: Any,
        notes: Sequence[str] = (),
    ) -> str | None:
        """The request's answer key, or None when its answers are not cached (the cache is
        off, the endpoint is not cached, or the pipeline has no fingerprint)."""
        if not self.enabled or path not in CACHED_PATHS or fingerprint is None:
            return None
        tenant = None
        if self.settings.api_keys:  # (checked by then) tenants never read each other's
            sent = headers.get("authorization", "")
            tenant = sent[7:].strip() if sent.lower().startswith("bearer ") else ""
        return request_key(fingerprint, path, body, self.settings, tenant, notes)

    async def answer(
        self, key: str, model: str, deadline: float, compute: Callable[[], Awaitable[Answer]]
    ) -> tuple[Answer, str]:
        """The answer under ``key`` and where it came from (``hit``, ``shared``, ``miss``,
        ``unavailable``: the store could not be asked),
        computed by ``compute`` at most once in this process for the requests waiting at
        once. A request that stops waiting (its client left) leaves the computing to the
        others; the last to leave cancels it."""
        flight = self._flights.get(key)
        joined = flight is not None
        if flight is None:
            task = asyncio.ensure_future(self._lead(key, deadline, compute))
            flight = self._flights[key] = _Flight(task)
            task.add_done_callback(lambda done, f=flight: self._landed(key, f, done))
        flight.waiters += 1
        try:
            answer, source = await asyncio.shield(flight.task)
        except asyncio.CancelledError:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.task.done():
                self._landed(key, flight, flight.task)
                flight.task.cancel()
            raise
        if joined and source in ("miss", UNAVAILABLE):
            source = "shared"
        self.metrics.answers.labels(model, source).inc()
        if source == "hit":
            self.metrics.answer_bytes.labels("read").inc(len(answer.body))
        return answer, source

    def _landed(self, key: str, flight: _Flight, task: asyncio.Future) -> None:
        if self._flights.get(key) is flight:  # later requests start afresh
            del self._flights[key]
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: each waiter has it

    async def _lead(
        self, key: str, deadline: float, compute: Callable[[], Awaitable[Answer]]
    ) -> tuple[Answer, str]:
        cache = self.cache
        assert cache is not None
        found = await self._read(key)
        if found is not None:
            return found, "hit"
        token = await self._call(cache.claim, key, self.settings.timeout)
        if token is None:  # another process computes it: its answer, unless it is late
            found = await self._await_holder(key, deadline)
            if found is not None:
                return found, "hit"
        elif token:  # stored between the read and the claim?
            found = await self._read(key)
            if found is not None:
                self._later(cache.release, key, token)
                return found, "hit"
        try:
            answer = await compute()
        except BaseException:
            if token:
                self._later(cache.release, key, token)
            raise
        self._later(self._keep, key, answer, token or "")
        return answer, "miss" if token != "" else UNAVAILABLE  # "": the store was not asked

    async def _await_holder(self, key: str, deadline: float) -> Answer | None:
        """The answer another process is computing, read every ``POLL_SECONDS`` until it is
        stored; None once its claim is gone without it, or half of the time left before
        ``deadline`` is spent (the holder may be stuck or gone)."""
        until = time.monotonic() + max(0.0, deadline - time.monotonic()) / 2
        while time.monotonic() < until:
            await asyncio.sleep(POLL_SECONDS)
            held, found = await self._call(self._poll, key)
            if found is not None or not held:
                return found
        return None

    def _poll(self, key: str) -> tuple[bool, Answer | None]:
        assert self.cache is not None
        held = self.cache.claimed(key)  # first: an answer is stored before its claim goes
        return held, Answer.unpack(self.cache.get(key))

    async def _read(self, key: str) -> Answer | None:
        assert self.cache is not None
        return Answer.unpack(await self._call(self.cache.get, key))

    def _keep(self, key: str, answer: Answer, token: str) -> None:
        assert self.cache is not None
        if answer.storable:
            self.cache.put(key, answer.pack())
            self.metrics.answer_bytes.labels("written").inc(len(answer.body))
        self.cache.release(key, token)

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _later(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)`` on the store's threads, not waited for (the answer goes out)."""
        future = asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
        self._pending.add(future)
        future.add_done_callback(self._settled)

    def _settled(self, future: asyncio.Future) -> None:
        self._pending.discard(future)
        if not future.cancelled() and future.exception() is not None:
            logger.error("answer cache: %s", future.exception(), exc_info=future.exception())
