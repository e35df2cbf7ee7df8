"""Batch rows from a BEIR folder and a TREC run: each query with its top candidates."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..eval.data import load_beir
from ..eval.first_stage import candidate_documents, first_stage

__all__ = ["beir_rows"]

logger = logging.getLogger(__name__)


def beir_rows(
    folder: str | Path, run: str | Path, *, split: str = "test", k: int = 100
) -> list[dict[str, Any]]:
    """Rows from a BEIR folder (its corpus and queries) and a TREC run file: each query of
    the run with its top ``k`` documents (``id``, ``text``, ``first_stage_score``)."""

    data = load_beir(folder, split)
    cands = first_stage(data, str(run), k)
    return [
        {"query_id": q, "query": data.queries[q], "candidates": candidate_documents(data, c)}
        for q, c in cands.items()
        if c
    ]
