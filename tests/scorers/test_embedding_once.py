"""A text asked for by two readings of one embedding scorer at once (the hybrid's whole
documents and best passages, which are the same texts for short documents) is encoded once."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np

from rerankit.scorers import EmbeddingScorer
from rerankit.types import Document

DOCS = ["vaccines train the immune system", "the stock market fell", "solar panels on roofs"]


class SlowModel:
    """A model double: a vector per text from its length and letters, slowly (so that two
    callers overlap), remembering every text it was asked to encode."""

    def __init__(self) -> None:
        self.encoded: list[str] = []
        self.lock = threading.Lock()

    def encode(self, texts, **_):
        with self.lock:
            self.encoded += list(texts)
        time.sleep(0.3)
        return np.array([[len(t), t.count("e") + 1.0, t.count("s") + 1.0] for t in texts])


def test_two_readings_asking_at_once_encode_each_text_once():
    model = SlowModel()
    whole = EmbeddingScorer(model, cache=True)
    passages = whole.with_passages(48)  # the documents are shorter: the same texts
    docs = [Document(text=t) for t in DOCS]

    async def both():
        return await asyncio.gather(whole.score("vaccines", docs), passages.score("vaccines", docs))

    first, second = asyncio.run(both())
    np.testing.assert_allclose(first.values, second.values)
    assert sorted(t for t in model.encoded if t != "vaccines") == sorted(DOCS)


def test_a_failed_encoding_fails_the_reading_that_waited_for_it_too():
    class Failing(SlowModel):
        def encode(self, texts, **kw):
            if len(texts) > 1:
                time.sleep(0.3)
                raise RuntimeError("out of luck")
            return super().encode(texts, **kw)

    whole = EmbeddingScorer(Failing(), cache=True)
    passages = whole.with_passages(48)
    docs = [Document(text=t) for t in DOCS]

    async def both():
        return await asyncio.gather(
            whole.score("q", docs), passages.score("q", docs), return_exceptions=True
        )

    results = asyncio.run(both())
    assert all(isinstance(r, RuntimeError) for r in results), results
    again = asyncio.run(both())  # nothing left claimed: the next call encodes (and fails)
    assert all(isinstance(r, RuntimeError) for r in again), again
