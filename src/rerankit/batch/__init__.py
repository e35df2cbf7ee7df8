"""Offline reranking of many queries: ``rerankit batch`` and :func:`rerank_dataset`.

Input rows are ``{"query_id": ..., "query": "...", "candidates": [...]}`` (JSON Lines or
Parquet; ``query_id`` optional, any other field kept), or a BEIR folder with a TREC run
(:func:`beir_rows`). Candidates are strings or objects with ``text`` (and ``id``,
``first_stage_score`` or any other field). Each output row is the input row plus
``results`` (best first: ``index`` into ``candidates``, ``rank``, its place from 1,
``id``, ``score``, ``flags``),
``error`` (null, or why the row could not be reranked), ``degraded``, ``warnings``,
``score_scale`` (what the scores mean, see ``RerankResult``) and ``seconds``. A bad row
or a failed provider never stops the job: the row is written with its error and counted
in the :class:`BatchSummary`. An output that already holds rows is refused unless the run
overwrites it or resumes after its finished rows (:mod:`.resume`).

Two engines run the same per-row code (:mod:`.rows`): ``local`` (in this process, no
extra needed; :mod:`.local`) and ``ray`` (extra ``ray``; :mod:`.ray`). Reading and writing
rows is :mod:`.io` (a file's row count, :func:`total_rows`, and its rows' candidates,
:func:`row_candidates`, too); BEIR folders become rows in :mod:`.beir`.
"""

from .beir import beir_rows, ray_engine, run_pipeline_ray
from .io import input_format, read_rows, row_candidates, total_rows, write_rows
from .local import run_batch
from .ray import RayOptions, declared, iter_ray, quiet_ray_logs, rerank_dataset
from .resume import BatchInterrupted
from .rows import (
    FORMATS,
    OUTPUT_FIELDS,
    USAGE_KEY,
    BatchSummary,
    arerank_row,
    rerank_row,
    rerank_rows,
)

__all__ = [
    "FORMATS",
    "OUTPUT_FIELDS",
    "USAGE_KEY",
    "BatchInterrupted",
    "BatchSummary",
    "RayOptions",
    "arerank_row",
    "beir_rows",
    "declared",
    "input_format",
    "iter_ray",
    "quiet_ray_logs",
    "ray_engine",
    "read_rows",
    "rerank_dataset",
    "rerank_row",
    "rerank_rows",
    "row_candidates",
    "run_batch",
    "run_pipeline_ray",
    "total_rows",
    "write_rows",
]
