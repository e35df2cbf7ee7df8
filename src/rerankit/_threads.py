"""Blocking work on a worker thread, with cancellation that keeps its accounting honest."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["in_thread"]

T = TypeVar("T")


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the loop's default executor, in the caller's context (as
    ``asyncio.to_thread``). If the awaiting task is cancelled, a call that has not started
    is dropped; one already running cannot be stopped, so the cancellation waits for it to
    end before it propagates: whoever holds a slot for this task (the service) holds it
    until the thread is free again, and nothing after this step runs."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    started = threading.Event()

    def call() -> T:
        started.set()
        return context.run(fn, *args, **kwargs)

    future = loop.run_in_executor(None, call)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        if started.is_set():  # running: it cannot be stopped; wait for it, then give up
            with contextlib.suppress(BaseException):
                await future
        else:
            future.cancel()  # not started: the executor skips it
        raise
