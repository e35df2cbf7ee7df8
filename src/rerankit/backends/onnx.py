"""Local models on ONNX Runtime: export once (with torch, :mod:`.export`), then run without
torch.

:class:`OnnxModel` runs a folder written by :func:`~.export.export` with ``onnxruntime``
and ``tokenizers`` only (extra ``onnx``): mean/CLS/max pooling and normalisation as the
sentence-transformers model defines them, inputs sorted by token length and padded per
batch. ``EmbeddingScorer(..., backend="onnx")`` and ``CrossEncoderScorer(...,
backend="onnx")`` use it: given a folder they load it; given a hub id or a model directory
they export it once into the rerankit cache directory (``onnx/``, :func:`~.export.cached_export`),
keyed by the folder's path and files (or the hub id's commit), kind and maximum length
(:mod:`.export_cache`). Nothing here imports torch or transformers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from ..errors import ModelLoadError
from .export import cached_export, export, onnx_cache_root
from .manifest import (
    BACKENDS,
    MANIFEST,
    QUANTIZATIONS,
    check_backend,
    is_exported,
    missing_file,
    read_manifest,
)
from .pairs import PairEncoder, lengths, offsets, padded_batches, unpadded

__all__ = [
    "BACKENDS",
    "MANIFEST",
    "QUANTIZATIONS",
    "OnnxModel",
    "cached_export",
    "check_backend",
    "export",
    "is_exported",
    "load_onnx",
    "onnx_cache_root",
    "read_manifest",
]

logger = logging.getLogger(__name__)

#: whether ONNX Runtime's threads spin-wait for work between calls (its default) instead
#: of sleeping: off, since spinning burns a core that the rest of a call (tokenising, the
#: lexical signals, other requests) needs on a small machine
SPIN = False


# --- runtime (onnxruntime + tokenizers) ------------------------------------------------------


class OnnxModel:
    """An exported folder on ONNX Runtime. ``encode`` (embedding models) and ``predict``
    (cross-encoders) take the arguments sentence-transformers' methods take, so the scorers
    use either backend the same way. Inputs are sorted by token length and padded per
    batch; ``threads`` sets ONNX Runtime's intra-op threads (None: its default, one per
    core)."""

    def __init__(
        self,
        path: str | Path,
        *,
        quantize: str | None = None,
        threads: int | None = None,
        max_length: int | None = None,
    ) -> None:
        ort = require("onnxruntime", "running an ONNX model")
        tokenizers = require("tokenizers", "running an ONNX model")
        self.path = Path(path)
        self.manifest = read_manifest(self.path)
        if (missing := missing_file(self.path, quantize)) is not None:
            raise ModelLoadError(missing)
        file = self.manifest["files"]["int8" if quantize == "int8" else "float32"]
        self.kind = self.manifest["kind"]
        self.quantize = quantize
        self.max_seq_length = int(max_length or self.manifest["max_length"])
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = int(threads)
        options.inter_op_num_threads = 1
        if not SPIN:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(
                str(self.path / file), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's own error types
            raise ModelLoadError(f"{self.path / file}: {exc}") from exc
        self._tokenizer = tokenizers.Tokenizer.from_file(str(self.path / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_seq_length)
        self.inputs = list(self.manifest["inputs"])
        self.pair_encoder = (
            PairEncoder(self._spans, self.max_seq_length) if self.kind == "cross_encoder" else None
        )
        self.tokenizer = None  # no Hugging Face tokenizer here: see count_tokens

    @cached_property
    def _spans(self) -> Any:
        """A copy of the tokenizer reading whole texts (for :meth:`token_spans`, the pair
        encoder): made when first needed, not at every start."""
        return unpadded(self._tokenizer)

    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Each text's tokens (no special tokens, no length cap) as character offsets."""
        return offsets(self._spans, texts)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """How many tokens each text takes (no special tokens, no length cap)."""
        return lengths(self._spans, texts)

    def count_tokens(self, texts: Sequence[str]) -> int:
        """Tokens each text takes (capped at the maximum length), summed."""
        return sum(len(e.ids) for e in self._tokenizer.encode_batch(list(texts)))

    def _run(self, encodings: list[Any], batch_size: int) -> np.ndarray:
        outputs: list[np.ndarray | None] = [None] * len(encodings)
        pad = int(self.manifest.get("pad_token_id", 0))
        for positions, feed in padded_batches(encodings, batch_size, pad):
            (result,) = self.session.run(None, {k: feed[k] for k in self.inputs})
            if self.kind == "embedding":
                result = self._pool(result, feed["attention_mask"])
            for row, i in enumerate(positions):
                outputs[i] = result[row]
        return np.stack(outputs) if outputs else np.zeros((0, 0), dtype=np.float32)

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        pooling = self.manifest.get("pooling", "mean")
        if pooling == "cls":
            out = hidden[:, 0]
        elif pooling == "max":
            out = np.where(mask[..., None] > 0, hidden, -np.inf).max(axis=1)
        else:
            weights = mask[..., None].astype(hidden.dtype)
            out = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        if self.manifest.get("normalize"):
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = out / np.clip(norms, 1e-12, None)
        return out.astype(np.float32)

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 32,
        prompt: str | None = None,
        **_: Any,
    ) -> np.ndarray:
        """Sentence embeddings, as ``SentenceTransformer.encode`` gives them."""
        if self.kind != "embedding":
            raise TypeError(f"{self.path} is a {self.kind}, not an embedding model")
        texts = [f"{prompt}{t}" if prompt else t for t in sentences]
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return self._run(self._tokenizer.encode_batch(texts), batch_size)

    def predict(
        self, pairs: Sequence[tuple[str, str]], batch_size: int = 32, **_: Any
    ) -> np.ndarray:
        """Raw logits per (query, document) pair, as ``CrossEncoder.predict`` gives them
        with an identity activation: shape ``(n,)`` for one label, ``(n, labels)`` else.
        Each query is kept whole and its documents cut to fit (:mod:`.pairs`)."""
        if self.pair_encoder is None:
            raise TypeError(f"{self.path} is a {self.kind}, not a cross-encoder")
        by_query: dict[str, list[int]] = {}
        for i, (query, _) in enumerate(pairs):
            by_query.setdefault(query, []).append(i)
        encodings: list[Any] = [None] * len(pairs)
        for query, positions in by_query.items():
            found = self.pair_encoder.encode(query, [pairs[i][1] for i in positions])
            for i, e in zip(positions, found.encodings, strict=True):
                encodings[i] = e
        return self.predict_encoded(encodings, batch_size)

    def predict_encoded(self, encodings: list[Any], batch_size: int = 32) -> np.ndarray:
        """Raw logits for pairs encoded by :attr:`pair_encoder` (shapes as :meth:`predict`)."""
        if self.kind != "cross_encoder":
            raise TypeError(f"{self.path} is a {self.kind}, not a cross-encoder")
        if not encodings:
            return np.zeros(0, dtype=np.float32)
        logits = self._run(encodings, batch_size)
        return logits[:, 0] if logits.shape[1] == 1 else logits


def load_onnx(
    model: str,
    *,
    kind: str,
    quantize: str | None = None,
    max_length: int | None = None,
    threads: int | None = None,
    trust_remote_code: bool = False,
    revision: str | None = None,
) -> OnnxModel:
    """An :class:`OnnxModel` for ``model``: an exported folder as it is, anything else
    exported once into the cache first (which needs torch; a hub id at ``revision``)."""
    if is_exported(model):
        folder = Path(model)
        found = read_manifest(folder)["kind"]
        if found != kind:
            raise ModelLoadError(f"{model} holds a {found}, not a {kind}")
    else:
        folder = cached_export(
            model,
            kind=kind,
            quantize=quantize,
            max_length=max_length,
            trust_remote_code=trust_remote_code,
            revision=revision,
        )
    return OnnxModel(folder, quantize=quantize, threads=threads, max_length=max_length)
