"""Service-level micro-batching: embedding work of concurrent requests encoded together.

The service sets :data:`rerankit.scorers.embedding.ENCODE_HOOK` to a :class:`MicroBatching`
for the work of its requests; every embedding model's texts then go through one
:class:`EncodeBatcher` per (scorer, prompt). The scorers themselves hold no batching state,
and rerankers used outside the service's requests are not affected.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

__all__ = ["EncodeBatcher", "MicroBatching"]


class EncodeBatcher:
    """Texts from concurrent callers are encoded in one call, up to ``max_items`` texts or
    ``max_wait_ms`` after the first arrives. Callers block until their own rows are ready.
    One worker thread, started on first use."""

    def __init__(
        self,
        encode: Callable[[list[str]], np.ndarray],
        *,
        max_items: int = 256,
        max_wait_ms: float = 5.0,
    ) -> None:
        self._encode, self.max_items, self.max_wait = encode, max_items, max_wait_ms / 1000
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self.batches = 0  # encode calls made (for tests and metrics)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        future: Future = Future()
        self._ensure_worker()
        self._queue.put((list(texts), future))
        return future.result()

    def _ensure_worker(self) -> None:
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._run, name="rerankit-encode-batcher", daemon=True
                )
                self._worker.start()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            jobs, count = [first], len(first[0])
            deadline = time.monotonic() + self.max_wait
            while count < self.max_items:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    job = self._queue.get(timeout=left)
                except queue.Empty:
                    break
                jobs.append(job)
                count += len(job[0])
            texts = [t for job, _ in jobs for t in job]
            try:
                rows = self._encode(texts)
                self.batches += 1
            except BaseException as exc:  # every caller of this batch gets the error
                for _, future in jobs:
                    future.set_exception(exc)
                continue
            start = 0
            for job, future in jobs:
                future.set_result(rows[start : start + len(job)])
                start += len(job)


class MicroBatching:
    """An encode hook (see the module doc) keeping one batcher per (scorer, prompt)."""

    def __init__(self, *, max_items: int = 256, max_wait_ms: float = 5.0) -> None:
        self.max_items, self.max_wait_ms = max_items, max_wait_ms
        self._batchers: dict[tuple[int, str | None], EncodeBatcher] = {}
        self._lock = threading.Lock()

    def __call__(self, scorer: Any, texts: Sequence[str], prompt: str | None) -> np.ndarray:
        key = (id(scorer), prompt)
        with self._lock:
            batcher = self._batchers.get(key)
            if batcher is None:
                batcher = self._batchers[key] = EncodeBatcher(
                    lambda batch: scorer.encode_now(batch, prompt),
                    max_items=self.max_items,
                    max_wait_ms=self.max_wait_ms,
                )
        return batcher.encode(texts)
