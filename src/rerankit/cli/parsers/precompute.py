"""``precompute``'s parser: its flags, their help and checks, and nothing the
command runs (:mod:`rerankit.cli.precompute`, imported when it runs)."""

from __future__ import annotations

from typing import Any

from ..args import (
    add_backend_arguments,
    add_no_progress_argument,
    add_refused_flag,
    examples,
    positive_int,
    remember_defaults,
)
from ..fields import add_field_arguments
from .rank import RERANKER_HELP
from .shown import DEFAULT_BATCH_SIZE

__all__ = ["add_commands"]


def add_commands(sub: Any) -> None:
    """``precompute``."""
    p = sub.add_parser(
        "precompute",
        help="encode a corpus into the embedding cache ahead of traffic",
        description="Encode each document (whole and by passages, as the pipeline reads "
        "it) into the embedding cache a later rerank reads, so reranking those documents "
        "encodes only the query: the cache file that rank, batch and serve read when "
        "$RERANKIT_EMBEDDING_CACHE names it, or the Redis/Valkey server the service's "
        "[cache] url or $RERANKIT_CACHE_URL names. Keeping them in memory only is refused "
        "(they would be thrown away at exit); a pipeline that keeps nothing per document "
        "(bm25, a cross-encoder, an LLM judge) says so and exits 0.",
        **examples(
            "rerankit precompute -i corpus.jsonl --embedding-cache embeddings.sqlite",
            "RERANKIT_EMBEDDING_CACHE=embeddings.sqlite rerankit serve  # then reads them",
            "rerankit precompute -i corpus.jsonl --settings service.toml  # its [cache] url",
        ),
    )
    p.add_argument("--input", "-i", required=True, help="the documents: JSON Lines or a JSON array")
    p.add_argument("--reranker", "-r", default=None, help=RERANKER_HELP)
    p.add_argument(
        "--embedding-cache",
        default=None,
        metavar="FILE",
        help="SQLite file to keep the vectors in; start serve (or rank, batch) with "
        "RERANKIT_EMBEDDING_CACHE=FILE to read them (default: $RERANKIT_EMBEDDING_CACHE, "
        "else the server $RERANKIT_CACHE_URL names; neither: refused)",
    )
    add_refused_flag(
        p,
        "--no-embedding-cache",
        why="precompute keeps vectors for later reranks; name where with --embedding-cache FILE",
    )
    p.add_argument(
        "--settings",
        default=None,
        metavar="FILE",
        help="the service's settings file: encode for every pipeline `serve --settings "
        "FILE` serves (with -r, as `serve --settings FILE -r X` serves), into the cache its "
        "[cache] table names",
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=DEFAULT_BATCH_SIZE,
        metavar="N",
        help=f"documents encoded, then written to the cache, at a time (default "
        f"{DEFAULT_BATCH_SIZE})",
    )
    add_field_arguments(p, score_field=False)
    add_backend_arguments(p)
    add_no_progress_argument(p, "default: a line every few seconds on a long input")
    p.set_defaults(language=None)
    remember_defaults(p)
