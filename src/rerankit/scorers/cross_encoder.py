"""Cross-encoder scoring: query and document read together by a sequence classifier.

Runs sentence-transformers' ``CrossEncoder`` (extra ``torch``) on any sequence-classification
reranker (BGE, MiniLM, mxbai, ...).

Score semantics (``output``):

* ``"logit"`` (default): the model's raw relevance logit, unbounded, higher = more relevant.
  For a two-label model (not relevant / relevant) it is ``logit[1] - logit[0]``.
* ``"probability"``: ``sigmoid`` of that logit, in (0, 1) (for a two-label model, the same
  as the softmax probability of the "relevant" label).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optional import require
from .._threads import in_thread
from ..backends.local import LocalModelOptions, LocalModelScorer
from ..errors import ScorerError
from ..types import Document
from .base import ScoreBatch, valid_query, valid_unicode

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DEFAULT_CROSS_ENCODER", "CrossEncoderScorer"]

DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L6-v2"
OUTPUTS = ("logit", "probability")


def relevance_from_logits(logits: np.ndarray, output: str) -> np.ndarray:
    """One relevance score per row of a cross-encoder's logits (see the module doc)."""
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim == 2 and logits.shape[1] == 1:
        logits = logits[:, 0]
    if logits.ndim == 2 and logits.shape[1] == 2:
        logits = logits[:, 1] - logits[:, 0]
    if logits.ndim != 1:
        raise ScorerError(
            f"cross-encoder returned logits of shape {logits.shape}; a relevance model has 1 "
            "or 2 labels"
        )
    if output == "probability":
        return 1.0 / (1.0 + np.exp(-logits))
    return logits


class CrossEncoderScorer(LocalModelScorer):
    """Scores each (query, document) pair with a cross-encoder.

    ``model``: hub id, local directory, or a loaded ``CrossEncoder``. ``output``:
    ``"logit"`` or ``"probability"`` (see the module doc). ``profile`` and the
    ``device``/``batch_size``/``dtype``/``max_length`` overrides say how it runs; inputs
    longer than ``max_length`` tokens are truncated (the model's own limit by default).
    Pairs are scored sorted by length, so each batch pads little. ``backend="onnx"`` (and
    ``quantize="int8"``) runs the model on ONNX Runtime, as for :class:`EmbeddingScorer`.
    """

    @property
    def score_scale(self) -> str:
        """``logit`` or, with ``output="probability"``, ``unit``."""
        return "logit" if self.output == "logit" else "unit"

    what = "cross-encoder"
    onnx_kind = "cross_encoder"

    def __init__(
        self,
        model: str | Any = DEFAULT_CROSS_ENCODER,
        *,
        output: str = "logit",
        name: str = "cross_encoder",
        **options: Unpack[LocalModelOptions],
    ) -> None:
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
        super().__init__(model, name=name, **options)
        self.output = output

    def _load(self) -> Any:
        st = require("sentence_transformers", "CrossEncoderScorer")
        device = self.profile.resolve_device()
        return st.CrossEncoder(
            self.model_id,
            device=device,
            max_length=self.profile.max_length,
            trust_remote_code=self.trust_remote_code,
            model_kwargs={"dtype": self.profile.resolve_dtype(device)},
        )

    def logits(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """The model's raw output for each (query, text) pair."""
        if not texts:
            return np.zeros(0)
        with self.using_model():
            return self._logits(query, texts)

    def _logits(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if self.backend == "onnx":  # sorts by token length itself
            return np.asarray(
                self.model.predict([(query, t) for t in texts], batch_size=self.profile.batch_size)
            )
        torch = require("torch", "CrossEncoderScorer")
        order = np.argsort([len(t) for t in texts], kind="stable")  # similar lengths together
        logits = np.asarray(
            self.model.predict(
                [(query, texts[i]) for i in order],
                batch_size=self.profile.batch_size,
                activation_fn=torch.nn.Identity(),
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        )
        out = np.empty_like(logits)
        out[order] = logits
        return out

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        """Scores, with each pair longer than the model reads flagged ``truncated:<name>``
        (and one warning): the model reads the start of such a document only."""
        batch = await super().score(query, docs, **context)
        long = await in_thread(self.too_long, query, [d.text for d in docs])
        for i in long:
            batch.flags.setdefault(i, []).append(f"truncated:{self.name}")
        if long:
            batch.warnings.append(
                f"{self.name}: {len(long)} document(s) longer than the model's "
                f"{self.max_tokens} tokens with the query were read on their start"
            )
        return batch

    def too_long(self, query: str, texts: Sequence[str]) -> list[int]:
        """The positions of ``texts`` that do not fit the model's input with ``query``."""
        limit = self.max_tokens
        spans = self.token_spans([query, *texts]) if texts and limit else None
        if spans is None:
            return []
        tokenizer = getattr(self.model, "tokenizer", None) or getattr(self.model, "_spans", None)
        extra = tokenizer.num_special_tokens_to_add(True) if tokenizer is not None else 3
        q = len(spans[0])
        return [i for i, found in enumerate(spans[1:]) if q + len(found) + extra > limit]

    def score_texts(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Blocking scores for plain strings (lone surrogates replaced by U+FFFD)."""
        if not texts:
            return np.zeros(0)
        texts, query = valid_unicode(texts, {}, []), valid_query(query, [])
        return relevance_from_logits(self.logits(query, texts), self.output)
