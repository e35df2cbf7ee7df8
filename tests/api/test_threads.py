"""Thread work and cancellation: a cancelled step ends before the cancellation is seen."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from rerankit._threads import in_thread


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
        await asyncio.sleep(0.05)
        return task.cancelled()

    assert asyncio.run(main()) and ran == []


def test_context_variables_reach_the_thread():
    import contextvars

    var = contextvars.ContextVar("v", default="unset")

    async def main():
        var.set("set")
        return await in_thread(var.get)

    assert asyncio.run(main()) == "set"
