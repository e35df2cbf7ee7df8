"""Cross-encoder scoring: query and document read together by a sequence classifier.

Runs sentence-transformers' ``CrossEncoder`` (extra ``torch``) on any sequence-classification
reranker (BGE, MiniLM, mxbai, ...).

Score semantics (``output``):

* ``"logit"`` (default): the model's raw relevance logit, unbounded, higher = more relevant.
  For a two-label model (not relevant / relevant) it is ``logit[1] - logit[0]``, or
  ``logit[0] - logit[1]`` when its ``config.json`` names label 0 the relevant one
  (``id2label`` ``{0: "relevant", 1: "irrelevant"}``; see
  :mod:`rerankit.backends.labels`).
* ``"sigmoid"``: the sigmoid of that logit, in (0, 1) (for a two-label model, exactly the
  softmax probability of the relevant label). Its scale is ``unit``: the model's own
  estimate, not a calibrated probability (see ``normalize.SCORE_SCALES``).
  ``"probability"``, its older name, is still accepted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._optional import require
from .._threads import in_thread, on_model_thread
from .._words import read_in_part
from ..backends.detect import check_tokenizer
from ..backends.hardware import attention_kernels
from ..backends.hub import cache_only_model_options
from ..backends.labels import (
    declared_label_count,
    labels_note,
    loaded_label_count,
    loaded_labels,
    relevant_label,
    too_many_labels,
)
from ..backends.local import run_splitting_on_oom
from ..backends.pairs import EncodedPairs, PairEncoder, padded_batches
from ..errors import ModelLoadError, ScorerError
from ..types import Document
from .base import ScoreBatch, valid_query, valid_unicode
from .local import LocalModelOptions, LocalModelScorer

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DEFAULT_CROSS_ENCODER", "PAIRS_HOOK", "CrossEncoderScorer"]

logger = logging.getLogger(__name__)

#: Set by the service for the work of its requests (see :mod:`rerankit.server.batching`): an
#: object whose ``batches_pairs(scorer)`` says whether this scorer's pairs go to its
#: ``score_pairs(scorer, encodings)``, which runs them with other requests' pairs. Pairs are
#: then tokenised on the request's own thread, not on the model thread.
PAIRS_HOOK: ContextVar[Any | None] = ContextVar("rerankit_pairs_hook", default=None)

DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L6-v2"
OUTPUTS = ("logit", "sigmoid")
#: older names of :data:`OUTPUTS`, still accepted
OUTPUT_ALIASES = {"probability": "sigmoid"}


def outputs_said(value: str) -> str:
    """What the outputs are, said where ``value``, which is none of them, is refused: a
    two-label model's softmax is its sigmoid, said outright when ``value`` asks for it."""
    said = (
        "logit is the model's raw relevance score (unbounded; the default), sigmoid its "
        "sigmoid in (0, 1), which for a two-label model is exactly the softmax probability of "
        "the relevant label"
    )
    if value.strip().lower().startswith(("softmax", "prob")):
        said += f"; for {value.strip()!r}, use sigmoid"
    return said


def relevance_from_logits(logits: np.ndarray, output: str, relevant: int = 1) -> np.ndarray:
    """One relevance score per row of a cross-encoder's logits (see the module doc);
    ``relevant``: which of two labels is the relevant one."""
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim == 2 and logits.shape[1] == 1:
        logits = logits[:, 0]
    if logits.ndim == 2 and logits.shape[1] == 2:
        logits = logits[:, relevant] - logits[:, 1 - relevant]
    if logits.ndim != 1:
        raise ScorerError(
            f"cross-encoder returned logits of shape {logits.shape}; a relevance model has 1 "
            "or 2 labels"
        )
    if OUTPUT_ALIASES.get(output, output) == "sigmoid":
        return 0.5 * (1.0 + np.tanh(0.5 * logits))  # the sigmoid, without overflow
    return logits


class CrossEncoderScorer(LocalModelScorer):
    """Scores each (query, document) pair with a cross-encoder.

    ``model``: hub id, local directory, or a loaded ``CrossEncoder``. ``output``:
    ``"logit"`` or ``"sigmoid"`` (see the module doc). ``profile`` and the
    ``device``/``batch_size``/``dtype``/``max_length`` overrides say how it runs. The query
    is read whole and each document cut to the room left in ``max_length`` tokens (the
    model's own limit by default; see :mod:`rerankit.backends.pairs`), and each cut is
    flagged. Pairs are scored sorted by length, so each batch pads little. ``backend="onnx"`` (and
    ``quantize="int8"``) runs the model on ONNX Runtime, as for :class:`EmbeddingScorer`.
    """

    @property
    def score_scale(self) -> str:
        """``logit`` or, with ``output="sigmoid"``, ``unit``."""
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
        output = OUTPUT_ALIASES.get(output, output)
        if output not in OUTPUTS:
            raise ValueError(
                f"output must be one of {', '.join(OUTPUTS)}, got {output!r}: "
                + outputs_said(str(output))
            )
        super().__init__(model, name=name, **options)
        self.output = output
        self._encoder: PairEncoder | Literal[False] | None = None  # False: none for this model

    def _load(self) -> Any:
        # a hub model neither the hub nor the cache has is said first, as for any hub id
        # (offline, the missing torch is not what to fix first)
        hub = self._hub_options(self.model_id, "cross-encoder", 'CrossEncoderScorer("{folder}")')
        st = self._sentence_transformers()
        check_tokenizer(self.model_id, "cross-encoder")
        device = self.profile.resolve_device()
        return st.CrossEncoder(
            self.model_id,
            device=device,
            max_length=self.profile.max_length,
            trust_remote_code=self.trust_remote_code,
            model_kwargs={"dtype": self.profile.resolve_dtype(device)}
            | cache_only_model_options(hub),
            **hub,
        )

    def _checked(self, model: Any) -> Any:
        """``model``, its labels said in the log when its config.json names label 0 the
        relevant one, or names two labels that say neither (:func:`labels_note`); one of
        three or more labels is a :class:`ModelLoadError` (:func:`too_many_labels`)."""
        count = loaded_label_count(model)
        if count is not None and count > 2:
            raise ModelLoadError(too_many_labels(self.model_id or type(model).__name__, count))
        id2label = loaded_labels(model)
        note = labels_note(self.model_id or type(model).__name__, id2label)
        if note is not None:
            level = logging.INFO if relevant_label(id2label) == 0 else logging.WARNING
            logger.log(level, "%s", note)
        return model

    def load_problem(self) -> str | None:
        """As :meth:`LocalModelScorer.load_problem`, and a model whose files say it has
        three or more labels (:func:`too_many_labels`), read without loading it."""
        found = super().load_problem()
        if found is not None or self.model_id is None:
            return found
        count = declared_label_count(self.model_id, self.revision)
        return too_many_labels(self.model_id, count) if count is not None and count > 2 else None

    @property
    def relevant_label(self) -> int:
        """Which label of a two-label model is scored as relevant: 1, or 0 when the
        model's config.json names label 0 so (:func:`~rerankit.backends.labels.relevant_label`;
        loads the model)."""
        found = self.__dict__.get("_relevant")
        if found is None:
            found = self._relevant = relevant_label(loaded_labels(self.model))
        return found

    def logits(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """The model's raw output for each (query, text) pair."""
        if not texts:
            return np.zeros(0)
        return on_model_thread(self._logits_held, query, texts)

    def _logits_held(self, query: str, texts: Sequence[str]) -> np.ndarray:
        with self.using_model():
            return self._logits(query, texts)[0]

    @property
    def batch_size(self) -> int:
        """Pairs per forward pass: the profile's, else chosen for where the model runs
        (:meth:`~rerankit.backends.HardwareProfile.resolve_batch_size`)."""
        return self.profile.resolve_batch_size("pairs", self._device_kind)

    @property
    def _device_kind(self) -> str:
        """Where the model runs: ``cpu`` (ONNX Runtime included), ``cuda``, ``mps``, ..."""
        if self.backend == "onnx":
            return "cpu"
        return str(getattr(self.model, "device", "cpu")).split(":")[0]

    def _pair_encoder(self) -> PairEncoder | None:
        """How pairs are encoded for this model: the ONNX model's own encoder, one built
        from a sentence-transformers model's fast tokenizer, or None (a model read through
        sentence-transformers' ``predict``, which cuts "longest first")."""
        if self._encoder is None:
            model = self.model
            if self.backend == "onnx":
                self._encoder = model.pair_encoder
            else:
                parts = _direct_parts(model)
                self._encoder = (
                    PairEncoder(parts[1].backend_tokenizer, self.max_tokens or 512)
                    if parts is not None
                    else False
                )
        return self._encoder or None

    def _logits(self, query: str, texts: Sequence[str]) -> tuple[np.ndarray, EncodedPairs | None]:
        encoder = self._pair_encoder()
        if encoder is None:
            return self._predict_through_sentence_transformers(query, texts), None
        pairs = encoder.encode(query, texts)
        return self._logits_encoded(pairs.encodings), pairs

    def _logits_encoded(self, encodings: Sequence[Any]) -> np.ndarray:
        """The model (torch or ONNX Runtime) on pairs its pair encoder made."""
        if self.backend == "onnx":
            return np.asarray(self.model.predict_encoded(list(encodings), self.batch_size))
        return self._forward(EncodedPairs(list(encodings)))

    @property
    def on_accelerator(self) -> bool:
        """Whether the model runs on a GPU or another accelerator (torch, not on the CPU)."""
        return self._device_kind != "cpu"

    def logits_of(self, encodings: Sequence[Any]) -> np.ndarray:
        """The model's raw output for pairs this model's pair encoder made (on the model
        thread; pairs of several queries may be mixed: each batch is sorted by length)."""
        return on_model_thread(self._logits_of_held, encodings)

    def _logits_of_held(self, encodings: Sequence[Any]) -> np.ndarray:
        with self.using_model():
            return self._logits_encoded(encodings)

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        """As :meth:`LocalModelScorer.score`; under the service's pairs hook (see
        :data:`PAIRS_HOOK`) the pairs are tokenised on a worker thread and scored with
        those of concurrent requests."""
        hook = PAIRS_HOOK.get()
        # otherwise straight to the model thread, where a call not yet started is dropped
        # when its request is abandoned (a model not loaded yet is never loaded from here)
        if hook is None or not docs or not (self.loaded and hook.batches_pairs(self)):
            return await super().score(query, docs, **context)
        flags: dict[int, list[str]] = {}
        warnings: list[str] = []
        texts = valid_unicode([d.text for d in docs], flags, warnings, [d.id for d in docs])
        query = valid_query(query, warnings)
        values = await in_thread(self._score_hooked, hook, query, texts, flags, warnings)
        return ScoreBatch(values=values, flags=flags, warnings=warnings)

    def _score_hooked(
        self,
        hook: Any,
        query: str,
        texts: Sequence[str],
        flags: dict[int, list[str]],
        warnings: list[str],
    ) -> np.ndarray:
        encoder = self._pair_encoder()
        if encoder is None:  # read through sentence-transformers' predict: scored alone
            return on_model_thread(self.score_noted, query, texts, flags, warnings)
        pairs = encoder.encode(query, texts)  # here, while the model runs other requests
        logits = hook.score_pairs(self, pairs.encodings)
        return self._noted(logits, pairs.truncated, pairs.query_cut, flags, warnings)

    def _forward(self, pairs: EncodedPairs) -> np.ndarray:
        """The sequence classifier on encoded pairs, batch by batch of similar length."""
        torch = require("torch", "CrossEncoderScorer")
        parts = _direct_parts(self.model)
        assert parts is not None
        hf, tokenizer = parts
        device = next(hf.parameters()).device
        names = set(tokenizer.model_input_names)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        out: np.ndarray | None = None

        def forward(feed: dict[str, np.ndarray], rows: Sequence[int]) -> list[np.ndarray]:
            cut = slice(rows[0], rows[-1] + 1)  # halving keeps the rows contiguous
            inputs = {k: torch.from_numpy(v[cut]).to(device) for k, v in feed.items() if k in names}
            return list(hf(**inputs).logits.float().cpu().numpy())

        with torch.inference_mode(), attention_kernels(device):
            for positions, feed in padded_batches(pairs.encodings, self.batch_size, pad):
                rows = range(len(positions))
                logits = np.stack(run_splitting_on_oom(rows, lambda r, f=feed: forward(f, r)))
                if out is None:
                    out = np.empty((len(pairs.encodings), logits.shape[1]), dtype=np.float32)
                out[positions] = logits
        assert out is not None
        return out[:, 0] if out.shape[1] == 1 else out

    def _predict_through_sentence_transformers(
        self, query: str, texts: Sequence[str]
    ) -> np.ndarray:
        torch = require("torch", "CrossEncoderScorer")
        order = np.argsort([len(t) for t in texts], kind="stable")  # similar lengths together
        with attention_kernels(getattr(self.model, "device", "cpu")):
            predicted = self.model.predict(
                [(query, texts[i]) for i in order],
                batch_size=self.batch_size,
                activation_fn=torch.nn.Identity(),
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        logits = np.asarray(predicted)
        out = np.empty_like(logits)
        out[order] = logits
        return out

    def score_noted(
        self, query: str, texts: Sequence[str], flags: dict[int, list[str]], warnings: list[str]
    ) -> np.ndarray:
        """Scores, with each document cut to fit the model flagged ``truncated:<name>`` (and
        one warning); a query too long to leave the documents a quarter of the input is cut
        and said in a warning."""
        if not texts:
            return np.zeros(0)
        with self.using_model():
            logits, pairs = self._logits(query, texts)
            if pairs is None:
                long = self._too_long_by_spans(query, texts)
                return self._noted(logits, long, 0, flags, warnings)
        return self._noted(logits, pairs.truncated, pairs.query_cut, flags, warnings)

    def _noted(
        self,
        logits: np.ndarray,
        long: list[int],
        query_cut: int,
        flags: dict[int, list[str]],
        warnings: list[str],
    ) -> np.ndarray:
        """Relevance from ``logits``, with the documents cut (``long``) flagged and the cuts
        (theirs and ``query_cut`` of the query's tokens) warned of."""
        for i in long:
            flags.setdefault(i, []).append(f"truncated:{self.name}")
        if long:
            longer = f"the model's {self.max_tokens} tokens with the query"
            warnings.append(f"{self.name}: {read_in_part(len(long), longer, 'start')}")
        if query_cut:
            warnings.append(
                f"{self.name}: the query is too long for the model's {self.max_tokens} "
                f"tokens with room for the documents; its last {query_cut} tokens "
                "were not read"
            )
        return relevance_from_logits(logits, self.output, self.relevant_label)

    def too_long(self, query: str, texts: Sequence[str]) -> list[int]:
        """The positions of ``texts`` that do not fit the model's input with ``query``."""
        if not texts:
            return []
        with self.using_model():
            encoder = self._pair_encoder()
            if encoder is not None:
                return encoder.encode(query, texts).truncated
            return self._too_long_by_spans(query, texts)

    def _too_long_by_spans(self, query: str, texts: Sequence[str]) -> list[int]:
        limit = self.max_tokens
        spans = self.token_spans([query, *texts]) if texts and limit else None
        if spans is None:
            return []
        tokenizer = getattr(self.model, "tokenizer", None)
        extra = tokenizer.num_special_tokens_to_add(True) if tokenizer is not None else 3
        q = len(spans[0])
        return [i for i, found in enumerate(spans[1:]) if q + len(found) + extra > limit]

    def score_texts(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Blocking scores for plain strings (lone surrogates replaced by U+FFFD)."""
        if not texts:
            return np.zeros(0)
        texts, query = valid_unicode(texts, {}, []), valid_query(query, [])
        return on_model_thread(self.score_noted, query, texts, {}, [])


def _direct_parts(model: Any) -> tuple[Any, Any] | None:
    """The Hugging Face sequence classifier and fast tokenizer inside a sentence-transformers
    ``CrossEncoder`` that is nothing more (one module), else None."""
    try:
        if len(model) != 1:
            return None
    except TypeError:  # older sentence-transformers: not a module list
        pass
    hf, tokenizer = getattr(model, "model", None), getattr(model, "tokenizer", None)
    if hf is None or not getattr(tokenizer, "is_fast", False):
        return None
    if not hasattr(tokenizer, "backend_tokenizer") or not hasattr(hf, "config"):
        return None
    return hf, tokenizer
