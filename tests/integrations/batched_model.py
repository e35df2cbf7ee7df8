"""A stand-in for a local model, for tests of in-process apps: its work runs on the
process's model thread batch by batch (through the ONNX backend's ``padded_batches``, which
stops abandoned work before its next batch), each batch taking ``seconds``. A rerank of
``n`` documents holds the model thread for about ``n * seconds``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from rerankit._threads import in_model_thread
from rerankit.backends.pairs import padded_batches


@dataclass
class _Encoding:  # what a tokenizer gives padded_batches
    ids: list[int]
    type_ids: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.type_ids = [0] * len(self.ids)


class BatchedModel:
    """A scorer whose every document is one model batch of ``seconds``."""

    def __init__(self, seconds: float, name: str = "batched") -> None:
        self.seconds, self.name = seconds, name
        self.batches = 0  # batches run, all calls together

    async def score(self, query, docs, **context):
        return await in_model_thread(self._run, [d.text for d in docs])

    def _run(self, texts: list[str]) -> np.ndarray:
        out = np.zeros(len(texts))
        for positions, _ in padded_batches([_Encoding([1]) for _ in texts], 1, 0):
            time.sleep(self.seconds)
            self.batches += 1
            out[positions] = [1.0 / (1 + len(texts[i])) for i in positions]
        return out
