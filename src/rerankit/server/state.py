"""Where each of the service's pipelines stands (for ``/ready``, ``/info`` and requests),
and the ``Retry-After`` its requests get until it is ready."""

from __future__ import annotations

import math
import time
from typing import Any

__all__ = ["PipelineState"]


class PipelineState:
    """Where one pipeline stands: ``loading`` (a load attempt runs), ``ready``, or
    ``failed`` (the last attempt failed, with its error; the next one starts at
    ``retry_at``, or never when ``permanent``: what it needs is not installed). Attempts are
    timed, so that a client is told when to come back."""

    def __init__(self) -> None:
        self.status = "loading"
        self.error: str | None = None
        self.failures = 0  # attempts (or requests) failed since the pipeline was last ready
        self.attempts = 0  # load attempts started
        self.retry_at: float | None = None  # time.monotonic() of the next attempt
        self.started_at: float | None = None  # when the running attempt started
        self.last_took: float | None = None  # seconds the last finished attempt ran
        self.permanent = False  # failed in a way no retry can mend (a missing package)

    def begin(self) -> None:
        """A load attempt starts."""
        self.status, self.retry_at, self.permanent = "loading", None, False
        self.started_at = time.monotonic()
        self.attempts += 1

    def succeeded(self) -> None:
        self._ended()
        self.status, self.error, self.failures = "ready", None, 0

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
            return out
        if self.permanent:
            out["retried"] = False  # install what it needs and restart the service
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
