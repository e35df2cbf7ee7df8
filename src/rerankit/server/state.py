"""Where each of the service's pipelines stands (for ``/ready``, ``/info`` and requests)."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["PipelineState"]


class PipelineState:
    """Where one pipeline stands: ``loading`` (not warmed up yet), ``ready`` or ``failed``
    (with the error, and when the background retry runs)."""

    def __init__(self) -> None:
        self.status = "loading"
        self.error: str | None = None
        self.failures = 0
        self.retry_at: float | None = None  # time.monotonic() of the next retry

    def retry_in(self) -> float | None:
        return None if self.retry_at is None else max(0.0, self.retry_at - time.monotonic())

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.status}
        if self.error is not None:
            out["error"] = self.error
        wait = self.retry_in()
        if self.status == "failed" and wait is not None:
            out["retry_in_seconds"] = round(wait, 1)
        return out
