"""Batch rows from a BEIR folder and a TREC run (each query with its top candidates), and an
evaluation's run of a pipeline over a dataset's candidates on Ray Data actors."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ..eval.data import Dataset, evaluation_only, parse_split, read_split
from ..eval.failures import PipelineFailed
from ..eval.first_stage import candidate_documents, first_stage
from ..eval.runner import PipelineRun
from .ray import RayOptions, iter_ray
from .rows import USAGE_KEY

__all__ = ["beir_rows", "ray_engine", "run_pipeline_ray"]

logger = logging.getLogger(__name__)


def beir_rows(
    folder: str | Path,
    run: str | Path,
    *,
    split: str = "test",
    k: int = 100,
    max_queries: int | None = None,
    note: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows from a BEIR folder (its corpus and queries) and a TREC run file: each query of
    the run with its top ``k`` documents (``id``, ``text``, ``first_stage_score``); the
    split's first ``max_queries`` queries only when given; a folder without
    ``qrels/<split>.tsv`` gives every query of queries.jsonl (reranking needs no judgments),
    and ``note`` is told so. What reading the folder found amiss
    (:attr:`~rerankit.eval.data.Dataset.notes`, also logged) is passed to ``note``, but
    relevant judged documents missing from the corpus: they matter to nDCG and recall
    only, which a batch does not compute."""

    def batch_note(message: str) -> None:
        if note is not None and not evaluation_only(message):
            note(message)

    data = read_split(folder, split, max_queries, note=batch_note, judged=False)
    qrels = Path(folder) / "qrels" / f"{parse_split(split)[0]}.tsv"
    if not qrels.is_file() and note is not None:
        note(
            f"{folder}: no qrels/{qrels.name} (split {split!r}): reranking every query of "
            f"queries.jsonl ({len(data.queries)})"
        )
    cands = first_stage(data, str(run), k)
    return [
        {"query_id": q, "query": data.queries[q], "candidates": candidate_documents(data, c)}
        for q, c in cands.items()
        if c
    ]


def run_pipeline_ray(
    name: str,
    pipeline: Any,
    data: Dataset,
    cands: Mapping[str, Sequence[tuple[str, float]]],
    *,
    first_stage_scores: bool = True,
    **ray_options: Any,
) -> PipelineRun:
    """:func:`~rerankit.eval.runner.run_pipeline` on Ray Data actors (see
    :func:`rerankit.batch.rerank_dataset`;
    ``pipeline`` is a registered name, a pipeline file or a spec mapping). Latency is each
    query's time on its worker."""

    rows = [
        {
            "query_id": qid,
            "query": data.queries[qid],
            "candidates": candidate_documents(data, ranked, with_scores=first_stage_scores),
        }
        for qid, ranked in cands.items()
        if ranked
    ]
    result = PipelineRun(name, {qid: {} for qid, ranked in cands.items() if not ranked})
    for row in iter_ray(rows, pipeline, **ray_options):
        if row["error"]:
            done = len(result.latencies)  # evaluate records it and goes on with the others
            raise PipelineFailed(name, row["query_id"], row["error"], done)
        result.record(
            row["query_id"],
            [(r["id"], r["score"]) for r in row["results"]],
            seconds=row["seconds"],
            scale=row["score_scale"],
            degraded=row["degraded"],
            usage=row.get(USAGE_KEY, {}),
        )
    return result


def ray_engine(ray: RayOptions | None = None, **options: Any) -> Callable[..., PipelineRun]:
    """The ``ray`` engine of :func:`rerankit.eval.evaluate` (``rerankit eval --engine
    ray``): ``evaluate(..., engine=ray_engine(workers=4))`` reranks each collection's
    candidates with each pipeline on Ray Data actors (:func:`run_pipeline_ray` with these
    options). ``ray`` is a :class:`RayOptions`, or its fields as keywords (``workers``,
    ``address``, ...); the pipelines must be names, pipeline files or spec mappings, which
    each actor builds."""
    return partial(run_pipeline_ray, ray=ray, **options)
