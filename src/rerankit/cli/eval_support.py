"""What ``rerankit eval`` and ``rerankit tune`` share: progress bars, query limits, the
pipelines named on the command line, the embedding cache and the runs over candidates."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..api import load
from ..cache import cache_url, default_cache_dir
from ..eval.data import load_beir
from ..eval.runner import first_stage_run, run_pipeline, run_pipeline_ray
from ..scorers import learned
from .args import in_language

__all__ = [
    "add_embedding_cache_arguments",
    "default_hybrid_scores",
    "feature_rows",
    "limit_queries",
    "named_pipelines",
    "pipeline_runs",
    "progress_bar",
    "read_collection",
    "use_embedding_cache",
]


#: without a progress bar, a plain line every this many queries (and one at the end)
PLAIN_EVERY = 50


def progress_bar(label: str, enabled: bool) -> Any:
    """How a loop over queries reports progress on stderr: a tqdm bar when ``enabled`` and
    tqdm is installed, else a plain line every :data:`PLAIN_EVERY` queries (``--no-progress``
    in a log file is never silent for minutes)."""
    if enabled:
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            return lambda items: tqdm(items, desc=label, unit="query", file=sys.stderr, leave=False)
    return lambda items: _plain_progress(label, items)


def _plain_progress(label: str, items: Any) -> Any:
    items = list(items)
    start = time.perf_counter()
    for done, item in enumerate(items, start=1):
        yield item
        if done % PLAIN_EVERY == 0 or done == len(items):
            seconds = time.perf_counter() - start
            print(
                f"rerankit: {label}: {done}/{len(items)} queries ({seconds:.1f} s)", file=sys.stderr
            )


def limit_queries(data, n: int | None):
    if n:
        data.queries = dict(list(data.queries.items())[:n])
    return data


def read_collection(path: str | Path, split: str, max_queries: int | None = None, **options):
    """:func:`load_beir` with its notes said on stderr, cut to the first ``max_queries``."""
    data = load_beir(path, split, **options)
    for note in data.notes:
        print(f"rerankit: warning: {note}", file=sys.stderr)
    return limit_queries(data, max_queries)


def named_pipelines(
    names: str, configs: list[str], language: str | None = None
) -> list[tuple[str, Any, Any]]:
    """(label, reranker, what it was declared as) for each named reranker (in ``language``
    when given) and file."""

    out = []
    for name in [n.strip() for n in names.split(",") if n.strip()]:
        spec = name if Path(name).suffix else in_language(name, language)
        out.append((Path(name).stem if Path(name).suffix else name, load(spec), spec))
    for path in configs:
        out.append((Path(path).stem, load(Path(path)), Path(path)))
    return out


def add_embedding_cache_arguments(parser: Any) -> None:
    """``--embedding-cache`` and ``--no-embedding-cache`` (read by :func:`use_embedding_cache`)."""
    parser.add_argument(
        "--embedding-cache",
        default=None,
        help="SQLite file caching document embeddings across runs (default: "
        "$RERANKIT_EMBEDDING_CACHE, else the server $RERANKIT_CACHE_URL names, else "
        "embeddings.sqlite in the rerankit cache directory)",
    )
    parser.add_argument(
        "--no-embedding-cache", action="store_true", help="encode documents afresh, keep nothing"
    )


def feature_rows(
    data: Any, cands: Any, embedding: str | None, *, progress: bool
) -> dict[str, tuple[list[str], np.ndarray]]:
    """Learning to rank's features (:data:`rerankit.scorers.learned.FEATURES`) of each query's
    candidates, ``{qid: (doc ids, matrix)}``, for the queries with any; ``embedding``: the
    model the embedding features read (None: the bundled MiniLM)."""
    signals = learned.Signals(embedding)
    items = [(q, c) for q, c in cands.items() if c]
    rows = {}
    iterator = progress_bar("features", progress)
    for qid, ranked in iterator(items):
        texts = [data.text(d) for d, _ in ranked]
        x = learned.features(signals, data.queries[qid], texts, [s for _, s in ranked])
        rows[qid] = ([d for d, _ in ranked], x)
    return rows


def use_embedding_cache(args: argparse.Namespace) -> None:
    """Document embeddings cached on disk by default (read by every EmbeddingScorer built
    from here on), so every reranker of an evaluation, and the next evaluation, encode each
    document once: --embedding-cache, else $RERANKIT_EMBEDDING_CACHE, else the server
    $RERANKIT_CACHE_URL names, else embeddings.sqlite in the rerankit cache directory;
    --no-embedding-cache turns it off."""

    if args.no_embedding_cache:
        os.environ["RERANKIT_EMBEDDING_CACHE"] = ""
    elif args.embedding_cache:
        os.environ["RERANKIT_EMBEDDING_CACHE"] = args.embedding_cache
    elif not os.environ.get("RERANKIT_EMBEDDING_CACHE") and not cache_url():
        path = default_cache_dir() / "embeddings.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        os.environ["RERANKIT_EMBEDDING_CACHE"] = str(path)


def pipeline_runs(
    args: argparse.Namespace, data: Any, cands: Any, pipelines: Any, *, texts_only: bool
) -> list[Any]:
    """The first stage's run, then each pipeline's over the same candidates (on Ray Data
    actors with ``--engine ray``)."""
    runs = [first_stage_run(cands)]
    for name, reranker, declared in pipelines:
        if getattr(args, "engine", "local") == "ray":
            runs.append(
                run_pipeline_ray(
                    name,
                    declared,
                    data,
                    cands,
                    first_stage_scores=not texts_only,
                    workers=args.workers,
                    address=args.address,
                )
            )
            continue
        run = run_pipeline(
            name,
            reranker,
            data,
            cands,
            progress=progress_bar(name, not args.no_progress),
            first_stage_scores=not texts_only,
        )
        if run.load_seconds >= 0.05:
            print(
                f"rerankit: {name}: models loaded in {run.load_seconds:.1f} s (before the "
                "first query: not in its latency)",
                file=sys.stderr,
            )
        runs.append(run)
    return runs


def default_hybrid_scores(
    data: Any, cands: Any, *, progress: bool = False
) -> dict[str, np.ndarray]:
    """The default ``hybrid``'s scores of each query's candidates (in the candidates' order),
    given their first-stage scores: the default ``tune`` measures learned pipelines with."""
    run = run_pipeline(
        "hybrid",
        load("hybrid"),
        data,
        cands,
        progress=progress_bar("scoring the default", progress),
        first_stage_scores=True,
    )
    return {
        q: np.array([run.scores[q][d] for d, _ in ranked]) for q, ranked in cands.items() if ranked
    }
