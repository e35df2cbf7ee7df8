"""Thread work and cancellation: a cancelled step ends before the cancellation is seen; the
one model thread."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from rerankit import _threads
from rerankit._threads import Waits, in_model_thread, in_thread, on_model_thread, stop_if_abandoned


def test_a_cancelled_call_that_is_running_ends_before_the_task_does():
    finished = []

    def work():
        time.sleep(0.3)
        finished.append(time.monotonic())

    async def main():
        task = asyncio.ensure_future(in_thread(work))
        await asyncio.sleep(0.05)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return time.monotonic()
        raise AssertionError("the task was not cancelled")

    cancelled_at = asyncio.run(main())
    assert finished and finished[0] <= cancelled_at  # the thread was done first


def test_a_cancelled_call_that_has_not_started_never_runs():
    ran, gate = [], threading.Event()

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(1))
        blocker = loop.run_in_executor(None, gate.wait, 5)  # the only worker is busy
        task = asyncio.ensure_future(in_thread(ran.append, "ran"))
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.sleep(0.05)  # the cancellation is processed while the worker is busy
        gate.set()
        await blocker
        await loop.run_in_executor(None, lambda: None)  # whatever was queued before has run
        return task.cancelled()

    assert asyncio.run(main()) and ran == []


def test_context_variables_reach_the_thread():
    import contextvars

    var = contextvars.ContextVar("v", default="unset")

    async def main():
        var.set("set")
        return await in_thread(var.get)

    assert asyncio.run(main()) == "set"


def test_model_work_runs_on_one_thread_whoever_asks():
    seen = set()

    def where():
        seen.add(threading.get_ident())
        return threading.current_thread().name

    async def twice():
        return [await in_model_thread(where), await in_model_thread(where)]

    names = [on_model_thread(where), *asyncio.run(twice()), *asyncio.run(twice())]
    with ThreadPoolExecutor(4) as pool:  # from other threads, at once
        names += list(pool.map(lambda _: on_model_thread(where), range(8)))
    assert len(seen) == 1 and threading.get_ident() not in seen
    assert all(name.startswith("rerankit-model") for name in names)


def test_model_work_asked_for_on_the_model_thread_runs_there_at_once():
    # a call from the model thread itself would otherwise wait for its own thread forever
    def outer():
        return on_model_thread(threading.get_ident), threading.get_ident()

    inner, outer_ident = on_model_thread(outer)
    assert inner == outer_ident


def test_model_thread_calls_keep_the_context_and_raise_the_callers_errors():
    import contextvars

    var = contextvars.ContextVar("v", default="unset")
    var.set("set")
    assert on_model_thread(var.get) == "set"
    with pytest.raises(ZeroDivisionError):
        on_model_thread(lambda: 1 / 0)
    assert on_model_thread(lambda: "still works") == "still works"


def test_a_cancelled_model_call_that_has_not_started_never_runs():
    ran, gate, busy = [], threading.Event(), threading.Event()

    def block():
        busy.set()
        gate.wait(5)

    async def main():
        loop = asyncio.get_running_loop()
        blocker = loop.run_in_executor(None, on_model_thread, block)  # the model thread is busy
        await asyncio.to_thread(busy.wait, 5)
        task = asyncio.ensure_future(in_model_thread(ran.append, "ran"))
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.sleep(0.05)
        gate.set()
        await blocker
        on_model_thread(lambda: None)  # everything queued before this has had its turn
        return task.cancelled()

    assert asyncio.run(main()) and ran == []


@pytest.mark.parametrize("run", [in_thread, in_model_thread])
def test_a_cancelled_call_stops_at_its_next_batch(run):
    # model work checks between its batches; a cancelled caller's call stops there (it ran
    # all 50 batches before the awaiting task could end)
    entered, batches = threading.Event(), []

    def encode() -> None:
        for i in range(50):
            stop_if_abandoned()
            batches.append(i)
            entered.set()
            time.sleep(0.01)

    async def main() -> None:
        task = asyncio.ensure_future(run(encode))
        await asyncio.to_thread(entered.wait, 10)  # the first batch ran
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert 1 <= len(batches) < 50


def test_an_uncancelled_call_runs_every_batch():
    def encode() -> int:
        for _ in range(5):
            stop_if_abandoned()
        return 5

    assert asyncio.run(in_model_thread(encode)) == 5


def test_a_cancelled_call_left_waiting_when_its_loop_ends_closes_without_an_error():
    """After SIGTERM the process ends while a cancelled row still waits for its running
    call: the coroutine, destroyed then, must close quietly (it raised CancelledError,
    which Python printed as "Exception ignored in: <coroutine object run_scorer ...>")."""
    done = threading.Event()

    def work():
        time.sleep(0.2)
        done.set()

    coro = in_model_thread(work)

    async def main():
        task = asyncio.ensure_future(coro)
        await asyncio.sleep(0.05)  # running on the model thread
        task.cancel()
        await asyncio.sleep(0)  # cancelled: now waiting for the call to stop
        assert not task.done()

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    coro.close()  # what the garbage collector does at exit: no exception
    assert done.wait(2)


def test_waits_count_overlapping_waits_once_and_not_while_its_own_work_runs(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(_threads, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    waited = Waits()
    a = waited.begin()
    clock[0] = 1.0
    b = waited.begin()  # two of its calls waiting at once: counted once
    clock[0] = 3.0
    waited.end(a)
    with waited.working():  # a runs on the model thread; b waits for it: its own work
        clock[0] = 5.0
    clock[0] = 6.0  # b waits on, behind something else
    assert waited.seconds() == pytest.approx(4.0)  # 0-3 and 5-6
    waited.end(b)
    clock[0] = 9.0  # nothing open: not waiting
    assert waited.seconds() == pytest.approx(4.0)
