"""Choosing a fusion on training queries: ``rerankit tune``.

The strategies are the first stage's score (``first_stage``), BM25 over the candidates
(``bm25``) and the embedding model (``embedding``). Every combination of method
(weighted sum of min-max or z-score normalised scores, or RRF) and weights on a 0.1 grid is
scored (nDCG@10, ranx) on the training split; the best becomes a pipeline file, which is
then loaded and evaluated on the test split. The test split never informs the choice.
"""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .._optional import require
from ..fusion import fuse, normalize_rows
from .data import Dataset
from .runner import candidate_documents

__all__ = ["FUSIONS", "STRATEGIES", "grid", "pipeline_spec", "score_matrix", "search", "to_toml"]

STRATEGIES = ("first_stage", "bm25", "embedding")
FUSIONS = (("weighted_average", "min_max"), ("weighted_average", "z_score"), ("rrf", None))


def grid(n: int, step: float = 0.1) -> list[tuple[float, ...]]:
    """Weights for ``n`` strategies on a ``step`` grid, summing to 1, with at least two
    strategies weighted above 0."""
    units = round(1 / step)
    out = []
    for combo in itertools.product(range(units + 1), repeat=n):
        if sum(combo) == units and sum(1 for c in combo if c) >= 2:
            out.append(tuple(c / units for c in combo))
    return out


def score_matrix(
    data: Dataset,
    cands: Mapping[str, Sequence[tuple[str, float]]],
    embedding: Any,
    *,
    progress: Callable[[Any], Any] | None = None,
) -> dict[str, tuple[list[str], np.ndarray]]:
    """Per query: candidate ids and a (3, n) matrix of raw first-stage, BM25 and cosine."""
    from ..scorers.lexical import BM25Scorer

    bm25 = BM25Scorer()
    items = [(q, c) for q, c in cands.items() if c]
    out = {}
    for qid, ranked in progress(items) if progress else items:
        docs = candidate_documents(data, ranked)
        texts = [d["text"] for d in docs]
        query = data.queries[qid]
        out[qid] = (
            [d["id"] for d in docs],
            np.vstack(
                [
                    [d["first_stage_score"] for d in docs],
                    bm25.score_texts(query, texts),
                    embedding.score_texts(query, texts),
                ]
            ),
        )
    return out


def _fused_run(matrices, rows, weights, method, normalization) -> dict[str, dict[str, float]]:
    run = {}
    for qid, (ids, raw) in matrices.items():
        m = normalize_rows(raw[list(rows)], method, normalization)
        fused = fuse(m, method, np.asarray(weights))
        order = np.argsort(-fused, kind="stable")
        run[qid] = {ids[i]: float(len(ids) - p) for p, i in enumerate(order)}
    return run


def search(
    data: Dataset,
    matrices: Mapping[str, tuple[list[str], np.ndarray]],
    strategies: Sequence[str] = STRATEGIES,
) -> list[dict[str, Any]]:
    """Every fusion of the grid with its training nDCG@10, best first."""
    ranx = require("ranx", "rerankit tune")
    qrels = ranx.Qrels({q: dict(j) for q, j in data.qrels.items() if q in matrices})
    rows = [STRATEGIES.index(s) for s in strategies]
    results = []
    for (method, normalization), weights in itertools.product(FUSIONS, grid(len(rows))):
        active = [i for i, w in enumerate(weights) if w > 0]
        run = _fused_run(
            matrices,
            [rows[i] for i in active],
            [weights[i] for i in active],
            method,
            normalization,
        )
        with warnings.catch_warnings():  # numba's notes on ranx's internal casts
            warnings.filterwarnings("ignore", message=".*unsafe cast.*")
            score = float(ranx.evaluate(qrels, ranx.Run(run), "ndcg@10"))
        results.append(
            {
                "method": method,
                "normalization": normalization,
                "weights": {strategies[i]: weights[i] for i in active},
                "ndcg@10": score,
            }
        )
    results.sort(key=lambda r: -r["ndcg@10"])
    return results


def pipeline_spec(
    choice: Mapping[str, Any],
    name: str = "tuned-hybrid",
    *,
    embedding_max_length: int | None = None,
) -> dict[str, Any]:
    """A declared pipeline (see :mod:`rerankit.config`) for a fusion found by :func:`search`."""
    embedding: dict[str, Any] = {"type": "embedding"}
    if embedding_max_length:
        embedding["max_length"] = embedding_max_length
    scorer_of = {
        "first_stage": {"type": "field", "field": "first_stage_score", "name": "first_stage"},
        "bm25": {"type": "bm25"},
        "embedding": embedding,
    }
    stage: dict[str, Any] = {
        "name": name,
        "method": choice["method"],
        "scorers": [{**scorer_of[s], "weight": round(w, 4)} for s, w in choice["weights"].items()],
    }
    if choice["normalization"]:
        stage["normalization"] = choice["normalization"]
    return {"name": name, "stages": [stage]}


def to_toml(spec: Mapping[str, Any], comment: str = "") -> str:
    """A pipeline spec of the shape :func:`pipeline_spec` makes, as TOML."""

    def value(v: Any) -> str:
        if isinstance(v, str):
            return json.dumps(v)  # a TOML basic string is JSON-escaped
        if isinstance(v, bool):
            return "true" if v else "false"
        return repr(v)

    lines = [f"# {line}" for line in comment.splitlines()] if comment else []
    lines.append(f"name = {value(spec['name'])}")
    for stage in spec["stages"]:
        lines += ["", "[[stages]]"]
        for k, v in stage.items():
            if k == "scorers":
                lines.append("scorers = [")
                for entry in v:
                    inner = ", ".join(f"{ek} = {value(ev)}" for ek, ev in entry.items())
                    lines.append(f"  {{ {inner} }},")
                lines.append("]")
            else:
                lines.append(f"{k} = {value(v)}")
    return "\n".join(lines) + "\n"
