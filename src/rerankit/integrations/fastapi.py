"""rerankit in your own FastAPI (or Starlette) app: work a client no longer waits for is
cancelled.

Starlette does not cancel a request's handler when its client disconnects: an endpoint that
simply awaits ``reranker.arerank(...)`` runs the rerank to its end, and the process's one
model thread stays busy with it while the next requests wait. :func:`cancel_on_disconnect`
awaits the rerank while it watches the request, and cancels it once the client has gone:
the model work stops before its next batch and the thread is free again.

Needs no extra of its own: it reads only ``await request.is_disconnected()``, which a
Starlette (and so FastAPI) ``Request`` has, and imports neither.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable
from typing import Any, TypeVar

from ..errors import RerankitError

__all__ = ["ClientDisconnected", "cancel_on_disconnect"]

T = TypeVar("T")

#: how often (seconds) the request is asked whether its client is still there
POLL = 0.05


class ClientDisconnected(RerankitError):
    """The client of the request disconnected before the work finished; the work was
    cancelled. Answer it with anything (nobody reads it): ``Response(status_code=499)``,
    nginx's "client closed request", keeps access logs honest."""


async def cancel_on_disconnect(request: Any, work: Awaitable[T], *, poll: float = POLL) -> T:
    """``await work`` (``reranker.arerank(...)``, or any awaitable), cancelled as soon as
    the client of ``request`` (a FastAPI or Starlette ``Request``: anything with
    ``await request.is_disconnected()``) disconnects, which is then a
    :class:`ClientDisconnected`. The client is checked every ``poll`` seconds.

    A cancelled ``arerank`` stops its model work before the model's next batch (ONNX
    Runtime, cross-encoders with a fast tokenizer; an embedding model on torch finishes
    its call first); this returns once it has stopped, so the model thread is free for the
    next request. The work's own errors (a :class:`~rerankit.errors.DeadlineError`) come
    out as they are. If the handler itself is cancelled (the server stopping), the work is
    cancelled with it."""
    is_disconnected = getattr(request, "is_disconnected", None)
    if not callable(is_disconnected):
        raise TypeError(
            "cancel_on_disconnect(request, work): request must be the FastAPI/Starlette "
            f"Request (with an async is_disconnected()), got {type(request).__name__}"
        )
    if isinstance(poll, bool) or not isinstance(poll, (int, float)) or not poll > 0:
        raise ValueError(f"poll must be a number of seconds above 0, got {poll!r}")
    if math.isinf(poll):
        raise ValueError("poll must be finite: the client would never be checked")
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=poll)
            if done:
                return task.result()
            if await is_disconnected():
                task.cancel()
                await asyncio.wait({task})  # until its model work has stopped
                if not task.cancelled():
                    task.exception()  # (it ended otherwise meanwhile: nobody reads it)
                raise ClientDisconnected(
                    "the client disconnected before the rerank finished; it was cancelled"
                )
    finally:
        if not task.done():  # this handler was cancelled: the work goes with it
            task.cancel()
