"""Service-level micro-batching: the model work of concurrent requests run together.

The service sets :data:`rerankit.scorers.embedding.ENCODE_HOOK` and
:data:`rerankit.scorers.cross_encoder.PAIRS_HOOK` to a :class:`MicroBatching` for the work
of its requests. Every embedding model's texts then go through one :class:`EncodeBatcher`
per (scorer, prompt), and a cross-encoder's (query, document) pairs, tokenised on the
request's own thread, through one per scorer. The scorers themselves hold no batching
state, and rerankers used outside the service's requests are not affected.

An embedding batch closes at ``max_items`` texts, at ``max_batch_tokens`` tokens (counted by
the model's tokenizer, capped at its maximum length) or ``max_wait_ms`` after its first
text, whichever comes first. Pairs do not wait: a batch takes the pairs of every request
queued when the model is free again, up to ``max_pairs`` (continuous batching), so a lone
request pays nothing and concurrent ones share forward passes. A single request's items are
never split. Work whose request was abandoned (:data:`ABANDONED` set: deadline passed or
client gone) is dropped from the queue before it is run, and a batch whose requests were
all abandoned stops at its model's next inner batch (the ONNX backend's, and a
cross-encoder's own forward passes).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import CancelledError, Future
from typing import Any

import numpy as np

from .._threads import ABANDONED, counted_as_waits, waits
from ..scorers.cross_encoder import PAIRS_HOOK
from ..scorers.embedding import ENCODE_HOOK

__all__ = ["ABANDONED", "PAIR_MODES", "EncodeBatcher", "MicroBatching", "request_hooks"]

PAIR_MODES = ("auto", "on", "off")


class _EveryAbandoned(threading.Event):
    """Set once each of ``events`` is: the requests sharing a batch have all been
    abandoned (its model work then stops at its next batch)."""

    def __init__(self, events: list[threading.Event]) -> None:
        super().__init__()
        self._events = events

    def is_set(self) -> bool:
        return all(event.is_set() for event in self._events)


def _begun(waited: Any) -> tuple[Any, Any]:
    return waited, waited.begin() if waited is not None else None


def _ended(wait: tuple[Any, Any]) -> None:
    if wait[0] is not None:
        wait[0].end(wait[1])


class EncodeBatcher:
    """Items (texts, or encoded pairs) from concurrent callers are run in one ``encode``
    call, up to ``max_items`` items, ``max_batch_tokens`` tokens (when ``count_tokens`` is
    given) or ``max_wait_ms`` after the first arrives; jobs already queued by then join
    too, up to those limits (``max_wait_ms=0``: only those). Callers block until their own
    rows are ready; a caller whose ``abandoned`` event is set before its batch is run gets
    ``CancelledError`` and costs nothing. One worker thread, started on first use."""

    def __init__(
        self,
        encode: Callable[[list[Any]], np.ndarray],
        *,
        max_items: int = 256,
        max_wait_ms: float = 5.0,
        max_batch_tokens: int | None = None,
        count_tokens: Callable[[Sequence[str]], int] | None = None,
        on_batch: Callable[[int, int], None] | None = None,
    ) -> None:
        self._encode, self.max_items, self.max_wait = encode, max_items, max_wait_ms / 1000
        self.max_batch_tokens = max_batch_tokens if count_tokens is not None else None
        self._count_tokens = count_tokens
        self._on_batch = on_batch
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self.batches = 0  # encode calls made (for tests and metrics)
        self.batch_sizes: list[tuple[int, int]] = []  # (texts, tokens) of recent batches
        self.dropped = 0  # abandoned jobs never encoded

    def encode(self, texts: Sequence[Any], abandoned: threading.Event | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        future: Future = Future()
        texts = list(texts)
        tokens = self._count_tokens(texts) if self.max_batch_tokens is not None else 0
        self._ensure_worker()
        waited = waits()  # (the request's wait for its batch counts as waiting)
        self._queue.put((texts, tokens, abandoned, future, _begun(waited)))
        return future.result()

    def _ensure_worker(self) -> None:
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._run, name="rerankit-encode-batcher", daemon=True
                )
                self._worker.start()

    def _full(self, count: int, tokens: int) -> bool:
        budget = self.max_batch_tokens
        return count >= self.max_items or (budget is not None and tokens >= budget)

    def _fits(self, count: int, tokens: int, job: tuple) -> bool:
        budget = self.max_batch_tokens
        return count + len(job[0]) <= self.max_items and (
            budget is None or tokens + job[1] <= budget
        )

    def _live(self, job: tuple) -> bool:
        """False (and the caller told) for a job nobody waits for any more."""
        abandoned = job[2]
        if abandoned is not None and abandoned.is_set():
            _ended(job[4])
            job[3].set_exception(CancelledError("the request was abandoned"))
            self.dropped += 1
            return False
        return True

    def _run(self) -> None:
        held: tuple | None = None  # a job that did not fit the last batch: it opens the next
        while True:
            first = held if held is not None else self._queue.get()
            held = None
            if not self._live(first):
                continue
            jobs, count, tokens = [first], len(first[0]), first[1]
            deadline = time.monotonic() + self.max_wait
            while not self._full(count, tokens):
                left = deadline - time.monotonic()
                try:  # past the wait, only what is queued already
                    job = self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
                if not self._live(job):
                    continue
                if not self._fits(count, tokens, job):
                    held = job
                    break
                jobs.append(job)
                count += len(job[0])
                tokens += job[1]
            jobs = [job for job in jobs if self._live(job)]  # abandoned while waiting
            if not jobs:
                continue
            texts = [t for job in jobs for t in job[0]]
            events = [job[2] for job in jobs]  # its model work stops once all are set
            shared = ABANDONED.set(None if None in events else _EveryAbandoned(events))
            for job in jobs:
                _ended(job[4])
            try:
                with counted_as_waits([job[4][0] for job in jobs]):
                    rows = self._encode(texts)
                self.batches += 1
                self.batch_sizes = [*self.batch_sizes[-99:], (len(texts), tokens)]
                if self._on_batch is not None:
                    self._on_batch(len(texts), tokens)
            except BaseException as exc:  # every caller of this batch gets the error
                for job in jobs:
                    job[3].set_exception(exc)
                continue
            finally:
                ABANDONED.reset(shared)
            start = 0
            for texts_, _, _, future, _ in jobs:
                future.set_result(rows[start : start + len(texts_)])
                start += len(texts_)


class MicroBatching:
    """The encode and pairs hooks (see the module doc): one batcher per (scorer, prompt) for
    embeddings, one per cross-encoder for pairs. ``pairs``: ``"on"`` batches every
    cross-encoder's pairs, ``"auto"`` those of cross-encoders running on an accelerator
    (where a larger batch can fill the device; on a CPU it only makes the first requests
    wait for the last), ``"off"`` (the default) none: on an H200, MiniLM-shaped requests of
    100 documents each gained nothing consistent from it (``benchmarks/speed/gpu.py``)."""

    def __init__(
        self,
        *,
        max_items: int = 256,
        max_wait_ms: float = 5.0,
        max_batch_tokens: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        pairs: str = "off",
        max_pairs: int = 1024,
        on_pairs: Callable[[int, int], None] | None = None,
    ) -> None:
        if pairs not in PAIR_MODES:
            raise ValueError(f"pairs must be one of {', '.join(PAIR_MODES)}, got {pairs!r}")
        self.max_items, self.max_wait_ms = max_items, max_wait_ms
        self.max_batch_tokens = max_batch_tokens
        self.on_batch = on_batch
        self.pairs, self.max_pairs, self.on_pairs = pairs, max_pairs, on_pairs
        self._batchers: dict[tuple[int, str | None], EncodeBatcher] = {}
        self._pair_batchers: dict[int, EncodeBatcher] = {}
        self._lock = threading.Lock()

    def batches_pairs(self, scorer: Any) -> bool:
        """Whether ``scorer``'s pairs go through a batcher (see the class doc)."""
        if self.pairs == "auto":
            return bool(getattr(scorer, "on_accelerator", False))
        return self.pairs == "on"

    def score_pairs(self, scorer: Any, encodings: Sequence[Any]) -> np.ndarray:
        """``scorer.logits_of(encodings)``, run with the pairs of other requests queued at the
        same time (blocking; on the caller's thread until its rows are ready)."""
        batcher = self._batcher(
            self._pair_batchers,
            id(scorer),
            lambda: EncodeBatcher(
                scorer.logits_of, max_items=self.max_pairs, max_wait_ms=0.0, on_batch=self.on_pairs
            ),
        )
        return batcher.encode(encodings, ABANDONED.get())

    def _batcher(
        self, kept: dict[Any, EncodeBatcher], key: Any, make: Callable[[], EncodeBatcher]
    ) -> EncodeBatcher:
        """The batcher ``kept`` for ``key``, made by ``make`` on first use."""
        with self._lock:
            batcher = kept.get(key)
            if batcher is None:
                batcher = kept[key] = make()
            return batcher

    def __call__(self, scorer: Any, texts: Sequence[str], prompt: str | None) -> np.ndarray:
        batcher = self._batcher(
            self._batchers,
            (id(scorer), prompt),
            lambda: EncodeBatcher(
                lambda batch: scorer.encode_now(batch, prompt),
                max_items=self.max_items,
                max_wait_ms=self.max_wait_ms,
                max_batch_tokens=self.max_batch_tokens,
                count_tokens=getattr(scorer, "count_tokens", None),
                on_batch=self.on_batch,
            ),
        )
        return batcher.encode(texts, ABANDONED.get())


@contextlib.contextmanager
def request_hooks(batching: MicroBatching | None, abandoned: threading.Event) -> Iterator[None]:
    """The hooks set for one request's work (a task started inside copies them): its
    embeddings and pairs through ``batching`` (None: no batching), and ``abandoned``."""
    tokens = (ENCODE_HOOK.set(batching), PAIRS_HOOK.set(batching), ABANDONED.set(abandoned))
    try:
        yield
    finally:
        ENCODE_HOOK.reset(tokens[0])
        PAIRS_HOOK.reset(tokens[1])
        ABANDONED.reset(tokens[2])
