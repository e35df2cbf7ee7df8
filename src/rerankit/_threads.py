"""Blocking work on a worker thread, with cancellation that keeps its accounting honest;
and the one thread every local model runs on.

Why one thread for the models: PyTorch's CPU kernels run on an OpenMP team that belongs to
the thread calling them. Each thread that calls into a model gets a team of its own, and
once a process holds more OpenMP threads than it has cores, the teams stop waiting for work
by spinning and sleep instead, so every small kernel pays a wake-up. Measured on 2 cores:
a MiniLM-shaped cross-encoder reranking 100 passages took 13 % longer on a second thread
than on the thread that had loaded it, a two-layer one 70 % longer; run on one thread
throughout, neither paid anything. A fresh event loop per synchronous ``rerank`` call (a
fresh default executor, so a fresh thread and team each time) paid the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["in_model_thread", "in_thread", "on_model_thread", "running_on_model_thread"]

T = TypeVar("T")

_MODEL_GUARD = threading.Lock()
_model_pool: ThreadPoolExecutor | None = None
_model_ident: int | None = None


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the loop's default executor, in the caller's context (as
    ``asyncio.to_thread``). If the awaiting task is cancelled, a call that has not started
    is dropped; one already running cannot be stopped, so the cancellation waits for it to
    end before it propagates: whoever holds a slot for this task (the service) holds it
    until the thread is free again, and nothing after this step runs."""
    return await _run_in(None, fn, args, kwargs)


async def in_model_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """:func:`in_thread` on the process's model thread (see the module's docstring): calls
    queue there one at a time, in the caller's context, with the same cancellation."""
    if running_on_model_thread():  # pragma: no cover - model code does not await
        return fn(*args, **kwargs)
    return await _run_in(_model_executor(), fn, args, kwargs)


def on_model_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Blocking: ``fn(*args, **kwargs)`` on the model thread, in the caller's context (at
    once when called there)."""
    if running_on_model_thread():
        return fn(*args, **kwargs)
    context = contextvars.copy_context()
    return _model_executor().submit(context.run, fn, *args, **kwargs).result()


def running_on_model_thread() -> bool:
    """Whether this is the model thread (work that waits for other threads to use a model
    must not run there: it would wait for itself)."""
    return _model_ident is not None and threading.get_ident() == _model_ident


async def _run_in(
    executor: Executor | None, fn: Callable[..., T], args: tuple, kwargs: dict[str, Any]
) -> T:
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    started = threading.Event()

    def call() -> T:
        started.set()
        return context.run(fn, *args, **kwargs)

    future = loop.run_in_executor(executor, call)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        if started.is_set():  # running: it cannot be stopped; wait for it, then give up
            with contextlib.suppress(BaseException):
                await future
        else:
            future.cancel()  # not started: the executor skips it
        raise


def _model_executor() -> ThreadPoolExecutor:
    global _model_pool
    with _MODEL_GUARD:
        if _model_pool is None:
            _model_pool = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="rerankit-model", initializer=_mark
            )
        return _model_pool


def _mark() -> None:
    global _model_ident
    _model_ident = threading.get_ident()


def _forget_after_fork() -> None:  # the child has none of the parent's threads
    global _model_pool, _model_ident
    _model_pool, _model_ident = None, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
