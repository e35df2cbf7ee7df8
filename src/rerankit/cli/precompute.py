"""``rerankit precompute``: encode a fixed corpus into the embedding cache ahead of traffic,
so every later rerank of its documents (``rank``, ``batch``, ``serve``) is the fast case."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from .._jsonl import numbered_records, read_text
from ..api import precompute
from ..cache import EMBEDDING_CACHE_ENV
from ..errors import InputError, InvalidDocumentError
from ..rerankers.precompute import (
    NOTHING_TO_KEEP,
    keeping_scorers,
)
from ..server.building import build_pipelines
from .args import (
    refuse_unused,
)
from .fields import input_fields
from .files import need_file, need_reranker
from .rank import default_reranker_name, located, reranker_from
from .serve import serve_settings, settings_args

__all__ = ["cmd_precompute"]


class _Progress:
    """A line on stderr now and then (every few seconds, and at the end once one was
    said): ``rerankit precompute: 2560 of 10000 documents``."""

    def __init__(self, total: int, enabled: bool, every: float = 5.0) -> None:
        self.total, self.enabled, self.every = total, enabled, every
        self.last = time.monotonic()
        self.said = False

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self.last < self.every and done < self.total):
            return
        if done >= self.total and not self.said:
            return  # a short input: the summary says it
        self.last, self.said = now, True
        print(f"rerankit precompute: {done} of {self.total} documents", file=sys.stderr)


def _pipelines(args: argparse.Namespace) -> dict[str, Any]:
    """Each pipeline to precompute for, by name, built as the command that reranks later
    builds it: ``--settings FILE``'s, as ``serve --settings FILE [--reranker X]`` serves
    them (its [cache] table reaching their caches), else ``-r`` as ``rank -r`` reads it."""
    if args.settings is None:
        name = args.reranker or default_reranker_name()  # (bm25 without the model: said)
        return {name: reranker_from(argparse.Namespace(**{**vars(args), "reranker": name}))}
    refuse_unused(
        {"--backend": args.backend, "--quantize": args.quantize},
        f"with --settings {args.settings}: its [server] table and pipelines say where "
        "their models run, as serve reads them",
    )
    return build_pipelines(serve_settings(settings_args(args.settings, args.reranker)))


def cmd_precompute(args: argparse.Namespace) -> int:
    need_file(args.input, "--input", "the documents to encode")
    need_file(args.settings, "--settings", "the service's settings file")
    need_reranker(args.reranker, named_later=args.settings is not None)  # its plugins
    if args.embedding_cache is not None:
        refuse_unused(
            {"--settings": args.settings},
            "with --embedding-cache: the settings file's [cache] table says where its "
            "pipelines keep vectors",
        )
        os.environ[EMBEDDING_CACHE_ENV] = args.embedding_cache  # every scorer built from here
    pipelines = _pipelines(args)
    keeping = {n: r for n, r in pipelines.items() if keeping_scorers(r)}
    for name in pipelines:
        if name not in keeping:
            print(NOTHING_TO_KEEP.format(name=name))
    if not keeping:
        return 0
    numbered = numbered_records(read_text(args.input), args.input)
    items = [item for _, item in numbered]
    if not items:
        raise InputError(f"{args.input} holds no documents")
    for name, reranker in keeping.items():
        progress = _Progress(len(items), not args.no_progress)
        try:
            result = precompute(
                items,
                reranker,
                batch_size=args.batch_size,
                fields=input_fields(args),
                progress=progress,
            )
        except InvalidDocumentError as exc:
            raise located(exc, args.input, [n for n, _ in numbered]) from None
        print(result.summary(name))
        if result.failed_calls:
            return 1
    return 0
