"""Where each of the service's pipelines stands (for ``/ready``, ``/info`` and requests),
the ``Retry-After`` its requests get until it is ready, and whether a ready pipeline's
requests keep failing (``failing``)."""

from __future__ import annotations

import math
import re
import time
from datetime import datetime, timezone
from typing import Any

from ..errors import failure_cause
from ..scorers.base import NO_SCORE

__all__ = ["FAILING_AFTER", "PipelineState", "one_line", "summary"]

#: a ready pipeline whose last this many requests failed in a row (no answer within the
#: deadline, every strategy or every LLM judgment failed, an internal error) is ``failing``
#: until one of its requests is answered again
FAILING_AFTER = 3
#: the longest message a pipeline's state shows (``/ready``, ``/info``, 503 bodies, the log)
MESSAGE_CHARS = 400


def _cut(text: str, limit: int) -> str:
    """``text`` (one line) in at most ``limit`` characters: cut with `` ...``, after its
    last whole clause (``;`` or ``.``) where that keeps half of it, so that an instruction
    is not left half-said."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 4]
    clause = max(cut.rfind("; "), cut.rfind(". "))
    if clause >= limit // 2:
        cut = cut[: clause + 1]
    return cut.rstrip() + " ..."


def one_line(text: str) -> str:
    """``text`` as one line of at most ``MESSAGE_CHARS`` characters (whitespace runs,
    newlines included, become one space; a longer text is cut as :func:`_cut` cuts)."""
    return _cut(re.sub(r"\s+", " ", text).strip(), MESSAGE_CHARS)


def summary(what: str, warnings: list[str]) -> str:
    """One line for a result that carries no ranking: the kind of failure (``what``) and
    its cause (:func:`failure_cause`), with how many more warnings there were (the log
    has them all at debug level). A document's "no score" leaves out the library's
    ``; scored 0.0``: no score is sent."""
    cause = failure_cause(warnings)
    if cause is None:
        return one_line(what)
    cause = cause.replace(NO_SCORE, "")
    more = len(warnings) - 1
    tail = f" (and {more} more warning{'s' if more > 1 else ''})" if more else ""
    first = one_line(f"{what}: {cause}")
    return _cut(first, MESSAGE_CHARS - len(tail)) + tail


def _iso(when: float) -> str:
    """``time.time()`` value ``when`` as UTC ISO 8601 to the second (``...Z``)."""
    return (
        datetime.fromtimestamp(when, timezone.utc)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


class PipelineState:
    """Where one pipeline stands: ``loading`` (a load attempt runs), ``ready``, or
    ``failed`` (the last attempt failed, with its error; the next one starts at
    ``retry_at``, or never when ``permanent``: what it needs is not installed). Attempts are
    timed, so that a client is told when to come back. A ready pipeline whose requests fail
    ``FAILING_AFTER`` times in a row is ``failing`` (it still serves: only an answered
    request can tell it works again) until one is answered."""

    def __init__(self) -> None:
        self.status = "loading"
        self.error: str | None = None
        self.failures = 0  # attempts (or requests) failed since the pipeline was last ready
        self.attempts = 0  # load attempts started
        self.retry_at: float | None = None  # time.monotonic() of the next attempt
        self.started_at: float | None = None  # when the running attempt started
        self.last_took: float | None = None  # seconds the last finished attempt ran
        self.permanent = False  # failed in a way no retry can mend (a missing package)
        self.streak = 0  # requests failed in a row since one was last answered
        self.failing: str | None = None  # why, while the last FAILING_AFTER requests failed
        self.failing_since: float | None = None  # time.time() it turned failing
        self.failed_requests = 0  # requests failed since it turned failing
        self.probe_at: float | None = None  # time.monotonic() a failing pipeline next runs one
        self.degraded_since: float | None = (
            None  # time.time() of the first degraded answer in a row
        )
        self.degraded_answers = 0  # answers degraded in a row
        self.degraded_cause: str | None = None  # why the last one was

    def begin(self) -> None:
        """A load attempt starts."""
        self.status, self.retry_at, self.permanent = "loading", None, False
        self.started_at = time.monotonic()
        self.attempts += 1

    def succeeded(self) -> None:
        self._ended()
        self.status, self.error, self.failures = "ready", None, 0
        self.answered()

    def request_failed(self, why: str, probe_every: float = 0.0) -> bool:
        """A request the ready pipeline ran got no answer (``why``); True when this one
        turned the pipeline ``failing``. With ``probe_every`` seconds, a failing pipeline
        runs its next request no sooner than that after this failure (see :meth:`refuse_for`)."""
        self.streak += 1
        if probe_every > 0 and self.streak >= FAILING_AFTER:
            self.probe_at = time.monotonic() + probe_every
        if self.failing is not None:
            self.failing, self.failed_requests = why, self.failed_requests + 1
            return False
        if self.streak < FAILING_AFTER:
            return False
        self.failing, self.failing_since, self.failed_requests = why, time.time(), self.streak
        return True

    def refuse_for(self, probe_every: float) -> float | None:
        """None when a request may run now; else the seconds until a failing pipeline lets
        the next one through to try it (one every ``probe_every`` seconds; none refused when
        it is 0). The request let through holds off the others until it ends or another
        ``probe_every`` has passed."""
        if self.failing is None or probe_every <= 0 or self.probe_at is None:
            return None
        now = time.monotonic()
        if now >= self.probe_at:
            self.probe_at = now + probe_every  # this request is the try
            return None
        return self.probe_at - now

    def answered(self) -> bool:
        """A request was answered; True when the pipeline was ``failing`` until now."""
        was = self.failing is not None
        self.streak, self.failing, self.failing_since, self.failed_requests = 0, None, None, 0
        self.probe_at = None
        return was

    def note_degraded(self, cause: str | None) -> None:
        """An answer was degraded (``cause``: why), or not (None: the run of degraded ones
        ends). A degraded answer is an answer: the pipeline stays ready and not failing."""
        if cause is None:
            self.degraded_since, self.degraded_answers, self.degraded_cause = None, 0, None
            return
        if self.degraded_since is None:
            self.degraded_since = time.time()
        self.degraded_answers += 1
        self.degraded_cause = cause

    @property
    def healthy(self) -> bool:
        """Ready, and its requests are not failing."""
        return self.status == "ready" and self.failing is None

    def failed(self, error: str, delay: float | None) -> None:
        """The attempt (or a request) failed: the next attempt starts in ``delay`` s (None:
        none will, :attr:`permanent`)."""
        self._ended()
        self.status, self.error = "failed", error
        self.failures += 1
        self.permanent = delay is None
        self.retry_at = None if delay is None else time.monotonic() + delay

    def _ended(self) -> None:
        if self.started_at is not None:
            self.last_took = time.monotonic() - self.started_at
            self.started_at = None

    def retry_in(self) -> float | None:
        """Seconds until the next load attempt starts (None unless failed)."""
        if self.status != "failed" or self.retry_at is None:
            return None
        return max(0.0, self.retry_at - time.monotonic())

    def loading_for(self) -> float | None:
        """Seconds the running attempt has run (None unless loading)."""
        if self.status != "loading" or self.started_at is None:
            return None
        return time.monotonic() - self.started_at

    def retry_after(self, longest: float) -> int | None:
        """The ``Retry-After`` (whole seconds, at least 1, at most ``longest``) for a request
        while the pipeline is not ready: when failed, the wait for the next attempt plus the
        time the last one took; while loading, what the last attempt took less what this
        one has run, or, with nothing to go by, as long again as it has run (an attempt
        that has run t seconds is as likely as not to need about t more). None when ready."""
        waited = self.retry_in()
        if waited is not None:
            expected = waited + (self.last_took or 0.0)
        else:
            running = self.loading_for()
            if running is None:
                return None
            left = (self.last_took or 0.0) - running
            expected = left if left > 0 else running
        return int(min(max(1, math.ceil(expected)), max(1, math.ceil(longest))))

    def describe(self, longest: float) -> dict[str, Any]:
        """The pipeline's entry in ``/ready`` and ``/info``."""
        out: dict[str, Any] = {"state": self.status}
        if self.error is not None:  # while a retry loads: the error it retries after
            out["error"] = self.error
        if self.status == "ready":
            if self.failing is not None and self.failing_since is not None:
                out.update(
                    state="failing",
                    error=self.failing,
                    failing_since=_iso(self.failing_since),
                    failed_requests=self.failed_requests,
                )
                if self.probe_at is not None:  # requests refused until the next try
                    wait = max(0.0, self.probe_at - time.monotonic())
                    out["next_try_in_seconds"] = round(wait, 1)
            elif self.degraded_since is not None:  # ready, but its answers fall back
                out.update(
                    degraded_since=_iso(self.degraded_since),
                    degraded_answers=self.degraded_answers,
                    degraded_cause=self.degraded_cause,
                )
            return out
        if self.permanent:
            out["retried"] = False  # restart the service once it has what it needs
        running = self.loading_for()
        if running is not None:
            out["loading_seconds"] = round(running, 1)
        out["attempts"] = self.attempts
        wait = self.retry_in()
        if wait is not None:
            out["retry_in_seconds"] = round(wait, 1)
        after = self.retry_after(longest)
        if after is not None:
            out["retry_after_seconds"] = after
        return out
