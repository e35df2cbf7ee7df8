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
    assert model.encoded.count("vaccines") == 1  # the query too


def test_a_query_asked_again_is_remembered_and_another_query_is_not_mixed_up():
    model = SlowModel()
    whole = EmbeddingScorer(model, cache=True)
    passages = whole.with_passages(48)
    docs = [Document(text=t) for t in DOCS]
    first = asyncio.run(whole.score("vaccines", docs)).values
    again = asyncio.run(passages.score("vaccines", docs)).values  # the twin remembers it
    other = asyncio.run(whole.score("stock market", docs)).values
    assert model.encoded.count("vaccines") == 1 and model.encoded.count("stock market") == 1
    np.testing.assert_allclose(first, again)
    fresh = asyncio.run(EmbeddingScorer(SlowModel()).score("stock market", docs)).values
    np.testing.assert_allclose(other, fresh)  # its own vector, not the one remembered
    assert not np.allclose(other, first)
    # a scorer with another prompt gives the query another vector: not taken from the memory
    prompted = EmbeddingScorer(model, cache=True, query_prompt="query: ")
    asyncio.run(prompted.score("vaccines", docs))
    assert "query: vaccines" in model.encoded or model.encoded.count("vaccines") == 2


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
