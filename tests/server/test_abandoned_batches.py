"""Model work whose request was abandoned (its deadline passed, its client left) stops at
its next inner batch instead of encoding the rest on the model thread, where it held up
every request behind it. A batch shared with a request still waiting runs to its end."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from rerankit._threads import on_model_thread, work_scope
from rerankit.backends.pairs import padded_batches
from rerankit.scorers import EmbeddingScorer
from rerankit.server.batching import EncodeBatcher

TEXTS = [f"text {i}" for i in range(10)]  # 5 inner batches of 2


@dataclass
class _Encoding:  # what a tokenizer gives padded_batches
    ids: list[int]
    type_ids: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.type_ids = [0] * len(self.ids)


class _Model:
    """A model that runs its texts batch by batch as the ONNX backend does, counting the
    batches; once its first batch ran, ``abandon`` (the requests' events) are set, as a
    deadline passing meanwhile would."""

    def __init__(self) -> None:
        self.batches = 0
        self.abandon: list[threading.Event] = []

    def run(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 1), dtype=np.float32)
        for positions, _ in padded_batches([_Encoding([1] * len(t)) for t in texts], 2, 0):
            self.batches += 1
            for event in self.abandon:
                event.set()
            out[positions] = 1.0
        return out

    def encode(self, texts: list[str]) -> np.ndarray:  # as a scorer's, on the model thread
        return on_model_thread(self.run, texts)


def test_abandoned_work_stops_at_its_next_batch():
    model, abandoned = _Model(), threading.Event()
    model.abandon = [abandoned]
    with work_scope(abandoned=abandoned), pytest.raises(CancelledError):
        model.encode(TEXTS)
    assert model.batches == 1  # of 5

    model = _Model()  # work nobody abandons runs every batch
    with work_scope(abandoned=threading.Event()):
        assert model.encode(TEXTS).sum() == len(TEXTS)
    assert model.batches == 5


def _encode_in(batcher: EncodeBatcher, texts: list[str], abandoned: threading.Event) -> Any:
    out: list = []

    def call() -> None:
        try:
            out.append(batcher.encode(texts, abandoned))
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    return thread, out


def test_a_micro_batch_stops_only_once_every_request_in_it_was_abandoned():
    model = _Model()
    batcher = EncodeBatcher(model.encode, max_items=len(TEXTS), max_wait_ms=2000)
    gone, waiting = threading.Event(), threading.Event()
    model.abandon = [gone]  # one of the two requests sharing the batch is abandoned
    one, first = _encode_in(batcher, TEXTS[:5], gone)
    two, second = _encode_in(batcher, TEXTS[5:], waiting)
    one.join(10), two.join(10)
    assert batcher.batches == 1 and model.batches == 5  # one shared batch, run to its end
    assert first[0].sum() == 5 and second[0].sum() == 5

    model = _Model()
    batcher = EncodeBatcher(model.encode, max_items=len(TEXTS), max_wait_ms=2000)
    gone, gone_too = threading.Event(), threading.Event()
    model.abandon = [gone, gone_too]  # both are
    one, first = _encode_in(batcher, TEXTS[:5], gone)
    two, second = _encode_in(batcher, TEXTS[5:], gone_too)
    one.join(10), two.join(10)
    assert model.batches == 1
    assert isinstance(first[0], CancelledError) and isinstance(second[0], CancelledError)


class _CountingSession:
    """An ONNX session whose runs are counted; its first run sets ``abandon``."""

    def __init__(self, session: Any, abandon: threading.Event) -> None:
        self.session, self.abandon, self.runs = session, abandon, 0

    def run(self, *args: Any) -> Any:
        self.runs += 1
        self.abandon.set()
        return self.session.run(*args)


@pytest.mark.slow  # (its first use in a test session exports the model to ONNX: ~15 s)
def test_the_bundled_embedding_model_stops_encoding_an_abandoned_requests_texts():
    scorer = EmbeddingScorer(device="cpu")  # the bundled MiniLM, on the ONNX backend
    model = scorer.model
    if not hasattr(model, "session"):
        pytest.skip("the bundled model does not run on the ONNX backend here")
    texts = [f"document number {i} about vaccines" for i in range(100)]  # 4 batches of 32
    session = model.session
    try:
        abandoned = threading.Event()
        model.session = _CountingSession(session, abandoned)
        with work_scope(abandoned=abandoned), pytest.raises(CancelledError):
            scorer.encode_now(texts, None)
        assert model.session.runs == 1

        model.session = _CountingSession(session, threading.Event())  # nobody abandons it
        with work_scope(abandoned=threading.Event()):
            assert scorer.encode_now(texts, None).shape[0] == 100
        assert model.session.runs == 4
    finally:
        model.session = session
