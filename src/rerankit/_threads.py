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

Loading is the exception: the service loads each pipeline's models on a thread of the
pipeline's own (:func:`in_loading_thread`), which ends with the load, so that a load that
hangs (a hub that never answers) holds no thread another pipeline's work needs. Only the
model thread scores, and the OpenMP team a load's kernels start ends with its thread: once
it has, the process has as many threads as before the load (a test counts them).

The work of one service request runs in a :func:`work_scope`: its blocking calls run on
its pipeline's own executor, provider calls read the time left before its deadline
(:func:`time_left`), calls not yet started when it is abandoned never start, and model
work stops at its next batch (:func:`stop_if_abandoned`). The time its calls wait behind
other work (for a thread of its executor, for the model thread, for a micro-batch) adds up
in its :class:`Waits`, and so does a wait for a model's lock (:func:`holding`; not the
time it waits for its own work on the model thread): a
deadline missed mostly waiting is overload, not a broken pipeline.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import CancelledError, Executor, Future, ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any, TypeVar

__all__ = [
    "ABANDONED",
    "Waits",
    "counted_as_waits",
    "deadline_scope",
    "holding",
    "in_loading_thread",
    "in_model_thread",
    "in_thread",
    "loads_in_place",
    "on_model_thread",
    "run_sync",
    "run_until_answered",
    "running_on_model_thread",
    "stop_if_abandoned",
    "time_left",
    "waits",
    "work_scope",
]

T = TypeVar("T")

_MODEL_GUARD = threading.Lock()
_model_pool: ThreadPoolExecutor | None = None
_model_ident: int | None = None
_loading = threading.local()  # .active: this thread loads models in place

#: Set by the service for each request's work: an event that is set once nobody waits for
#: the answer (its deadline passed or its client disconnected).
ABANDONED: ContextVar[threading.Event | None] = ContextVar("rerankit_abandoned", default=None)
_EXECUTOR: ContextVar[Executor | None] = ContextVar("rerankit_executor", default=None)
_DEADLINE: ContextVar[float | None] = ContextVar("rerankit_deadline", default=None)


class Waits:
    """The seconds a request's work has waited behind other requests' work: the time some
    of its calls waited (each from :meth:`begin` to :meth:`end`; one still open counts up
    to now) while none of its own work ran on the model thread (:meth:`working`). Its
    calls waiting for each other, or for the model thread busy with its own earlier work,
    are not waiting behind others; two of its calls waiting at once count once.
    Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: set[object] = set()
        self._running = 0  # its calls running on the model thread now
        self._counted = 0.0
        self._since = time.monotonic()  # the last change of the two above

    def _advance(self, now: float) -> None:
        if self._open and not self._running:
            self._counted += now - self._since
        self._since = now

    def begin(self) -> object:
        token = object()
        with self._lock:
            self._advance(time.monotonic())
            self._open.add(token)
        return token

    def end(self, token: object) -> None:
        with self._lock:
            self._advance(time.monotonic())
            self._open.discard(token)

    @contextlib.contextmanager
    def working(self) -> Iterator[None]:
        """Inside, some of this request's work runs on the model thread."""
        with self._lock:
            self._advance(time.monotonic())
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._advance(time.monotonic())
                self._running -= 1

    def seconds(self) -> float:
        with self._lock:
            self._advance(time.monotonic())
            return self._counted


class _EveryWaits:
    """The waits of several requests at once (a micro-batch's): each is told."""

    def __init__(self, many: list[Waits]) -> None:
        self._many = many

    def begin(self) -> object:
        return [(w, w.begin()) for w in self._many]

    def end(self, token: Any) -> None:
        for w, own in token:
            w.end(own)

    @contextlib.contextmanager
    def working(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for w in self._many:
                stack.enter_context(w.working())
            yield


def _working(waited: Any) -> Any:
    """``waited.working()`` (nothing when ``waited`` is None)."""
    return waited.working() if waited is not None else contextlib.nullcontext()


_WAITS: ContextVar[Any] = ContextVar("rerankit_waits", default=None)


@contextlib.contextmanager
def work_scope(
    *,
    executor: Executor | None = None,
    deadline: float | None = None,
    abandoned: threading.Event | None = None,
    waited: Waits | None = None,
) -> Iterator[None]:
    """The work started inside (and in the tasks and threads it starts, which copy the
    context): :func:`in_thread` calls run on ``executor`` (None: the loop's default one),
    provider calls end by ``deadline`` (``time.monotonic()``; see :func:`time_left`),
    calls not started by the time ``abandoned`` is set never start, and the time calls wait
    for a thread adds up in ``waited``."""
    tokens = (_EXECUTOR.set(executor), _DEADLINE.set(deadline), ABANDONED.set(abandoned))
    counting = _WAITS.set(waited)
    try:
        yield
    finally:
        _EXECUTOR.reset(tokens[0])
        _DEADLINE.reset(tokens[1])
        ABANDONED.reset(tokens[2])
        _WAITS.reset(counting)


@contextlib.contextmanager
def deadline_scope(deadline: float, abandoned: threading.Event) -> Iterator[None]:
    """The current work (on its own executor, its waits counted as before), inside, ends by
    ``deadline`` too (the earlier of it and the work's own) and counts as abandoned once
    ``abandoned`` is set (or the work's own event is): a rerank's ``deadline=``."""
    outer = _DEADLINE.get()
    tokens = (
        _DEADLINE.set(deadline if outer is None else min(outer, deadline)),
        ABANDONED.set(_Either(ABANDONED.get(), abandoned)),
    )
    try:
        yield
    finally:
        _DEADLINE.reset(tokens[0])
        ABANDONED.reset(tokens[1])


def waits() -> Any:
    """The current work's :class:`Waits` (None: not counted)."""
    return _WAITS.get()


@contextlib.contextmanager
def counted_as_waits(many: list[Any]) -> Iterator[None]:
    """Inside, waits for a thread count for each of ``many`` (a micro-batch's requests'
    :class:`Waits`; None among them are skipped)."""
    counting = _WAITS.set(_EveryWaits([w for w in many if w is not None]))
    try:
        yield
    finally:
        _WAITS.reset(counting)


@contextlib.contextmanager
def holding(lock: Any) -> Iterator[None]:
    """``with lock:``, the time spent waiting for another thread's hold of it (a model's
    lock, held by another request's model call) counted in the current work's waits."""
    if not lock.acquire(blocking=False):
        waited = _WAITS.get()
        token = waited.begin() if waited is not None else None
        try:
            lock.acquire()
        finally:
            if waited is not None:
                waited.end(token)
    try:
        yield
    finally:
        lock.release()


def time_left() -> float | None:
    """Seconds left before the current work's deadline (None: it has none; 0 once past)."""
    deadline = _DEADLINE.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def stop_if_abandoned() -> None:
    """Raise ``CancelledError`` if the current work was abandoned: model work calls it
    between its batches, so that a request answered at its deadline (or whose client left)
    stops at the next batch instead of encoding the rest. Work run for several requests at
    once (a micro-batch) sees an event set only once every one of them was abandoned."""
    abandoned = ABANDONED.get()
    if abandoned is not None and abandoned.is_set():
        raise CancelledError("its request was abandoned; stopped before its next batch")


def _unless_abandoned(fn: Callable[..., T], args: tuple, kwargs: dict[str, Any]) -> T:
    """``fn(*args, **kwargs)``, unless the work it belongs to was abandoned meanwhile."""
    abandoned = ABANDONED.get()
    if abandoned is not None and abandoned.is_set():
        raise CancelledError("its request was answered before this call started")
    return fn(*args, **kwargs)


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the current work's executor (see :func:`work_scope`; by
    default the loop's), in the caller's context (as ``asyncio.to_thread``). If the
    awaiting task is cancelled, a call that has not started is dropped; one already running
    stops before its model's next batch (:func:`stop_if_abandoned`; a call with no batches
    runs to its end), and the cancellation waits for it before it propagates: whoever holds
    a slot for this task (the service) holds it until the thread is free again, and nothing
    after this step runs."""
    return await _run_in(_EXECUTOR.get(), fn, args, kwargs)


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, also when an event loop is running in
    this thread (notebooks, async servers): then it runs on a helper thread's own loop. The
    coroutine runs outside the check's ``except`` block, so an exception it raises carries
    no unrelated "no running event loop" in its chain."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rerankit-sync") as pool:
        return pool.submit(asyncio.run, coro).result()


def run_until_answered(coro: Coroutine[Any, Any, Any]) -> Any:
    """Blocking: ``coro``'s result, on an event loop of a new thread (in the caller's
    context), returned as soon as ``coro`` ends: work it left running (past a deadline, on
    a thread) ends there on its own, while the caller goes on."""
    answer: Future = Future()

    async def main() -> None:
        try:
            answer.set_result(await coro)
        except BaseException as exc:  # handed to the caller
            answer.set_exception(exc)

    context = contextvars.copy_context()
    threading.Thread(
        target=context.run, args=(asyncio.run, main()), name="rerankit-deadline", daemon=True
    ).start()
    return answer.result()


async def in_loading_thread(name: str, fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(*args)`` on a new daemon thread called ``name``, in the caller's context; models
    first used there load there (:func:`loads_in_place`) rather than on the model thread,
    and the thread ends with the call. Cancelling the awaiting task stops the wait, not
    the call (a load cannot be interrupted); the thread then ends when the call does."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def run() -> None:
        _loading.active = True
        value, error = None, None
        try:
            value = context.run(fn, *args)
        except BaseException as exc:  # handed to the awaiting task
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future


def loads_in_place() -> bool:
    """Whether a model first used on this thread loads here: on the model thread, and on a
    loading thread (:func:`in_loading_thread`); elsewhere it loads on the model thread."""
    return running_on_model_thread() or getattr(_loading, "active", False)


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
    waited = _WAITS.get()
    token = waited.begin() if waited is not None else None

    def started() -> T:
        if waited is not None:
            waited.end(token)
        with _working(waited):
            return _unless_abandoned(fn, args, kwargs)

    return _model_executor().submit(context.run, started).result()


def running_on_model_thread() -> bool:
    """Whether this is the model thread (work that waits for other threads to use a model
    must not run there: it would wait for itself)."""
    return _model_ident is not None and threading.get_ident() == _model_ident


async def _run_in(
    executor: Executor | None, fn: Callable[..., T], args: tuple, kwargs: dict[str, Any]
) -> T:
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    started, stop = threading.Event(), threading.Event()
    # the call stops at its model's next batch once this task is cancelled, or once the
    # work it belongs to is abandoned (:func:`stop_if_abandoned`)
    context.run(ABANDONED.set, _Either(ABANDONED.get(), stop))
    waited = _WAITS.get()
    token = waited.begin() if waited is not None else None

    def call() -> T:
        started.set()
        if waited is not None:
            waited.end(token)
        # (its own work on the model thread is progress, not waiting behind others)
        with _working(waited) if running_on_model_thread() else contextlib.nullcontext():
            return context.run(_unless_abandoned, fn, args, kwargs)

    future = loop.run_in_executor(executor, call)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        if started.is_set():  # running: stopped at its next batch; wait for it, then give up
            stop.set()
            try:
                await future
            except GeneratorExit:  # closed while waiting (its loop ended: the process
                raise  # is stopping): close quietly, not with the CancelledError above
            except BaseException:  # the call's own outcome: given up either way
                pass
        else:
            future.cancel()  # not started: the executor skips it
            if waited is not None:
                waited.end(token)
        raise


class _Either(threading.Event):
    """Set when ``outer`` (the work's own event, if any) or ``own`` is."""

    def __init__(self, outer: threading.Event | None, own: threading.Event) -> None:
        super().__init__()
        self._outer, self._own = outer, own

    def is_set(self) -> bool:
        return self._own.is_set() or (self._outer is not None and self._outer.is_set())


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
