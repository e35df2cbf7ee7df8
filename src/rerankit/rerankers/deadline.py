"""A rerank's latency budget: ``deadline=`` seconds on ``rerank`` and ``arerank``.

When the deadline comes while a pipeline's later stage runs, the rerank returns the result
of the last stage that finished, degraded, its first warning saying which stage did not
finish (the wording of ``rerankit serve``'s ``[server] deadline``). When no stage had
finished (or the reranker is not a pipeline) it raises
:class:`~rerankit.errors.DeadlineError`, a ``TimeoutError``.

Work on a thread cannot be stopped: at the deadline the rerank's work is cancelled without
waiting for it. A call on a thread that had not started never starts, model work stops
before its next batch, LLM calls end by the deadline, and no further stage starts
(:func:`rerankit._threads.deadline_scope`); the caller has its answer at once. The
blocking ``rerank`` runs the work on an event loop of its own thread
(:func:`rerankit._threads.run_until_answered`), which ends once that work has.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from .._threads import deadline_scope
from ..errors import DeadlineError, InputError, keyword_flag, said_for
from ..types import RerankResult

__all__ = [
    "FINISHED_STAGES",
    "check_deadline",
    "deadline_refusal",
    "deadline_warning",
    "rank_within",
    "said_as",
]

#: context key: a list to which a pipeline appends, once each stage has ended while a
#: scoring stage is still to come, ``(next stage's name, a callable that returns the result
#: it would return were the later stages to fail)``: a rerank (or a service) whose deadline
#: comes while a later stage runs answers with the last one (degraded) instead of nothing
FINISHED_STAGES = "finished_stages"

logger = logging.getLogger(__name__)


def check_deadline(deadline: Any) -> float | None:
    """``deadline`` (seconds, or None: none) as a float; an :class:`InputError` for
    anything but a positive finite number."""
    if deadline is None:
        return None
    if (
        isinstance(deadline, bool)
        or not isinstance(deadline, int | float)
        or not 0 < deadline < math.inf
    ):
        raise InputError(
            f"{keyword_flag('deadline', deadline)}: expected a positive number of seconds "
            "(the rerank's latency budget), or None for none"
        )
    return float(deadline)


def deadline_warning(stage: str, seconds: float) -> str:
    """The warning of a result answered at a ``seconds`` deadline while ``stage`` ran."""
    return (
        f"stage {stage!r} did not finish within the {seconds:g} s deadline; "
        "its documents keep the previous stage's order and scores"
    )


async def rank_within(
    rank: Callable[..., Awaitable[RerankResult]],
    context: dict[str, Any],
    until: float,
    seconds: float,
    *,
    name: str,
    first: str | None = None,
) -> RerankResult:
    """``rank(**context)``'s result by ``until`` (``time.monotonic()``; the deadline of
    ``seconds`` given). ``first``: the name of a pipeline's first stage (``name`` is the
    pipeline's), whose later stages' deadline returns the last finished stage's result;
    None: a reranker with no stages, which has nothing to return at its deadline."""
    finished: list[tuple[str, Callable[[], RerankResult]]] = []
    if first is not None:
        context = {**context, FINISHED_STAGES: finished}
    abandoned = threading.Event()
    with deadline_scope(until, abandoned):  # the task copies the context
        task = asyncio.get_running_loop().create_task(
            rank(**context), name=f"rerankit-deadline:{name}"
        )
    task.add_done_callback(_settled)
    try:
        done, _ = await asyncio.wait({task}, timeout=max(until - time.monotonic(), 0.0))
    except BaseException:  # the caller was cancelled
        abandoned.set()
        task.cancel()
        raise
    if done:
        return task.result()
    abandoned.set()  # nothing more starts; what runs on a thread ends on its own
    task.cancel()
    if not finished:
        message = deadline_refusal(name, first, seconds)
        raise DeadlineError(message, deadline=seconds, stage=first or name)
    stage, result_of = finished[-1]
    why = deadline_warning(stage, seconds)
    logger.warning("pipeline %r: %s", name, why)
    result = result_of()
    return replace(result, degraded=True, warnings=(why, *result.warnings))


def _settled(task: asyncio.Task) -> None:
    """Nobody awaits a task left at its deadline: its outcome is read here, so that its
    error (if it ends with one rather than cancelled) is not reported as never retrieved."""
    if not task.cancelled() and task.exception() is not None:
        logger.debug("work left at its deadline ended: %r", task.exception())


def deadline_refusal(name: str, first: str | None, seconds: float) -> str:
    """Why the reranker ``name`` has no order to return at its deadline of ``seconds``:
    ``first``, its first stage, had not finished (None: it has no stages). The fix is
    worded for the command line within :func:`~rerankit.errors.flags_first`."""
    if first is None:
        fix = said_for(
            "give a longer deadline, or rerank with a Pipeline whose first stage is fast",
            "give a longer --deadline, or rank with a pipeline file whose first [[stages]] "
            "entry is fast, such as bm25",
        )
        return (
            f"reranker {name!r} did not finish within the {seconds:g} s deadline; it has "
            f"no earlier stage whose order could be returned ({fix})"
        )
    return (
        ("" if name == "pipeline" else f"pipeline {name!r}: ")  # (the default name)
        + f"stage {first!r} did not finish within the {seconds:g} s deadline, and no "
        "stage had finished before it: no order to return (give a longer deadline, "
        "or put a fast stage first, such as bm25)"
    )


def said_as(error: DeadlineError, reranker: Any, name: str) -> DeadlineError:
    """``error``, which ``reranker`` raised, said with ``name``: the name its user knows it
    by (a pipeline file's declared name or stem, as ``rerankit check`` says it), not the
    type of its scorer."""
    first = error.stage if getattr(reranker, "stages", None) else None
    message = deadline_refusal(name, first, error.deadline)
    return DeadlineError(message, deadline=error.deadline, stage=error.stage)
