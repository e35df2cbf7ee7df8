"""The bundled all-MiniLM-L6-v2 named either way (``all-MiniLM-L6-v2``, as ``rerankit
export`` and its --help spell it, or ``sentence-transformers/all-MiniLM-L6-v2``, the
default's name) is one model: its document vectors are one set in the embedding cache. An
evaluation of the default ``embedding`` beside a pipeline file naming the short spelling
encoded every document twice."""

from __future__ import annotations

import numpy as np

from rerankit.cache import EmbeddingCache
from rerankit.scorers import EmbeddingScorer

DOCS = ["solar panels on roofs", "wind farms at sea"]


class Counted(EmbeddingScorer):
    """The bundled model's scorer, counting the texts it encodes (no model is loaded)."""

    encoded: list[str]

    def _encode(self, texts, prompt=None):
        self.encoded.extend(texts)
        return np.ones((len(texts), 4), dtype=np.float32)


def test_both_spellings_of_the_bundled_model_share_one_set_of_vectors():
    cache = EmbeddingCache()
    encoded: list[str] = []
    for name in ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"):
        scorer = Counted(name, cache=cache, backend="onnx")
        scorer.encoded = encoded
        assert scorer.is_bundled
        scorer.encode_documents(DOCS)
    assert encoded == DOCS  # once, by the first
    short = Counted("all-MiniLM-L6-v2", cache=cache, backend="onnx")
    long = Counted("sentence-transformers/all-MiniLM-L6-v2", cache=cache, backend="onnx")
    assert short.model_key == long.model_key
    # another model, or the same one on torch, keeps its own vectors
    assert Counted("all-MiniLM-L6-v2", backend="torch").model_key != short.model_key
    assert Counted("BAAI/bge-small-en-v1.5", backend="onnx").model_key != short.model_key
