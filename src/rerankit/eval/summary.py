"""The summary over several collections: each pipeline's nDCG@10 per collection, the mean
over them (:func:`mean_by_pipeline`), as printed (:func:`format_summary`) and as
``summary.json`` (:func:`write_summary`)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._jsonl import dumps_strict
from .runner import check_output_folder

__all__ = ["format_summary", "mean_by_pipeline", "write_summary"]


def format_summary(collections: Sequence[Mapping[str, Any]]) -> str:
    """nDCG@10 x 100 of every pipeline on every collection (one row each, from
    :func:`evaluate_runs`' rows under ``"rows"``; ``failed`` where it failed there,
    ``interrupted`` where Ctrl-C stopped it or it had not started), and the mean over the
    collections (only of a pipeline measured on every one)."""
    names = list(dict.fromkeys(r["pipeline"] for c in collections for r in c["rows"]))
    head = ["collection", "split", "queries", *names]
    lines = [
        "nDCG@10 x 100 by collection:\n",
        "| " + " | ".join(head) + " |",
        "|---|---|" + "---:|" * (len(head) - 2),
    ]
    for c in collections:
        ndcg = {r["pipeline"]: f"{100 * r['ndcg@10']:.2f}" for r in c["rows"]}
        cells = [ndcg.get(n, _missing(c, n)) for n in names]
        lines.append(
            f"| {c['collection']} | {c['split']} | {c['queries']} | " + " | ".join(cells) + " |"
        )
    means = {n: f"{100 * v:.2f}" for n, v in mean_by_pipeline(collections).items()}
    missing = {n: "failed" for c in collections for n in _failed(c)}
    cells = [means.get(n, missing.get(n, "interrupted")) for n in names]
    lines.append("| mean | | | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _failed(collection: Mapping[str, Any]) -> list[str]:
    """The pipelines that raised on ``collection``."""
    return [f["pipeline"] for f in collection.get("failed") or []]


def _missing(collection: Mapping[str, Any], name: str) -> str:
    """What a pipeline without a row on ``collection`` reads as: ``failed`` (it raised) or
    ``interrupted`` (Ctrl-C stopped it, or came before it started)."""
    return "failed" if name in _failed(collection) else "interrupted"


def mean_by_pipeline(collections: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each pipeline's nDCG@10 averaged over the collections (each counts once); one that
    failed on some collection is left out."""
    ndcg = [{r["pipeline"]: r["ndcg@10"] for r in c["rows"]} for c in collections]
    return {n: statistics.fmean(c[n] for c in ndcg) for n in ndcg[0] if all(n in c for c in ndcg)}


def write_summary(out: str | Path, collections: Sequence[Mapping[str, Any]]) -> Path:
    """``summary.json`` in ``out``: per collection its split, queries (and how many had no
    candidates), first stage and each pipeline's nDCG@10 (the full results are in each
    collection's folder), and the means."""
    path = check_output_folder(out) / "summary.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "collections": [
            {
                "collection": c["collection"],
                "dataset": c["dataset"],
                "split": c["split"],
                "queries": c["queries"],
                "queries_without_candidates": c.get("queries_without_candidates", 0),
                "first_stage": c["first_stage"],
                "ndcg@10": {r["pipeline"]: r["ndcg@10"] for r in c["rows"]},
                "failed": c.get("failed") or [],
                "interrupted": c.get("interrupted"),
            }
            for c in collections
        ],
        "mean_ndcg@10": mean_by_pipeline(collections),
    }
    path.write_text(dumps_strict(body, indent=2) + "\n", encoding="utf-8")
    return path
