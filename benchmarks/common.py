"""What the benchmarks share: where the repository and the evaluation sets are, the
embedding cache they reuse, timing interleaved variants, reading queries with their
first-stage candidates, and nDCG@10 per query."""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: the evaluation sets (BEIR layout) beside the checkout; RERANKIT_BENCH_DATA points
#: elsewhere (a GPU machine with its own copy)
DATA = Path(os.environ.get("RERANKIT_BENCH_DATA") or ROOT.parent / "shared" / "data")
BEIR = DATA / "beir"
CLASSIC = DATA / "classic"
DL19 = DATA / "msmarco" / "trec-dl-2019-bm25-top100"
#: the collections :func:`load_queries` reads: TREC DL19's BM25 run (short web passages)
#: and SciFact's training queries over BM25 of the corpus (abstracts, longer)
COLLECTIONS = {"dl19": (DL19, "test"), "scifact": (BEIR / "scifact", "train")}


def use_embedding_cache() -> None:
    """Reuse document embeddings across runs (``.cache/embeddings.sqlite`` in the checkout)
    unless ``RERANKIT_EMBEDDING_CACHE`` already names a cache."""
    os.environ.setdefault("RERANKIT_EMBEDDING_CACHE", str(ROOT / ".cache" / "embeddings.sqlite"))


def open_service(env: Any) -> dict[str, str]:
    """``env`` for a ``rerankit serve`` that is open on purpose: RERANKIT_API_KEYS unset (set
    but empty, the service refuses to start)."""
    return {k: v for k, v in env.items() if k != "RERANKIT_API_KEYS"}


def load_queries(name: str, queries: int) -> list[tuple[str, list[str]]]:
    """``queries`` queries of collection ``name`` (the first by id) with their first-stage
    top 100 texts."""
    from rerankit.eval.data import load_beir
    from rerankit.eval.first_stage import first_stage

    path, split = COLLECTIONS[name]
    data = load_beir(path, split)
    chosen = sorted(data.queries)[:queries]
    data.queries = {q: data.queries[q] for q in chosen}
    ranked = first_stage(data, "auto", k=100)
    return [(data.queries[q], [data.text(d) for d, _ in ranked[q]]) for q in chosen]


def timed(fn: Callable[[str, list[str]], Any]) -> Callable:
    """``fn`` returning ``(scores, seconds)``: the form :func:`interleave` runs."""

    def run(query: str, texts: list[str]) -> tuple[np.ndarray, float]:
        start = time.perf_counter()
        out = np.asarray(fn(query, texts), dtype=np.float64)
        return out, time.perf_counter() - start

    return run


def interleave(variants: dict, pairs: list, rounds: int, seed: int = 0) -> tuple[dict, dict, dict]:
    """Every variant on every (query, texts) pair, in a shuffled order per pair, for
    ``rounds`` rounds (the machine is shared and noisy): rates (documents per second per
    round), latencies (seconds per query) and the last scores, per variant."""
    for fn in variants.values():  # warm up: load each model, one query
        fn(*pairs[0])
    rates: dict[str, list[float]] = {n: [] for n in variants}
    lats: dict[str, list[float]] = {n: [] for n in variants}
    last: dict[str, list[np.ndarray]] = {n: [np.zeros(0)] * len(pairs) for n in variants}
    n_docs = sum(len(t) for _, t in pairs)
    rng = random.Random(seed)
    for r in range(rounds):
        spent = dict.fromkeys(variants, 0.0)
        for index, (query, texts) in enumerate(pairs):
            order = list(variants)
            rng.shuffle(order)
            for name in order:
                last[name][index], took = variants[name](query, texts)
                spent[name] += took
                lats[name].append(took)
        for name in variants:
            rates[name].append(n_docs / spent[name])
        print(f"  round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    return rates, lats, last


def table(title: str, rates: dict, lats: dict, reference: str) -> None:
    """A Markdown table of :func:`interleave`'s medians, each rate against ``reference``'s."""
    base = statistics.median(rates[reference])
    print(f"\n{title}\n")
    print(f"| variant | docs/s | vs {reference.split(' ')[0]} | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|---:|")
    for name in rates:
        rate = statistics.median(rates[name])
        p50, p95 = (1000 * float(np.percentile(lats[name], q)) for q in (50, 95))
        print(f"| {name} | {rate:.1f} | {rate / base:.2f}x | {p50:.0f} | {p95:.0f} |")


def per_query_ndcg(rows: dict, scores: dict, qrels: dict) -> dict[str, float]:
    """nDCG@10 of each query in ``rows`` (query -> (document ids, features)) ranked by
    ``scores`` (query -> one score per document)."""
    from rerankit.eval.metrics import ranked_ndcg

    return {q: ranked_ndcg(ids, scores[q], qrels.get(q, {})) for q, (ids, _) in rows.items()}


def mean_ndcg_of(rows: dict, scores: dict, qrels: dict) -> float:
    """nDCG@10 x 100 of ``scores``; a judged query without candidates scores 0."""
    return 100 * sum(per_query_ndcg(rows, scores, qrels).values()) / len(qrels)
