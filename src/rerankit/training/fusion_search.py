"""Choosing a fusion on training queries (``rerankit tune``): every combination of method
(weighted sum of min-max or z-score normalised scores, or RRF) and weights on a 0.1 grid
over the strategies (the first stage's score ``first_stage``, BM25 over the candidates
``bm25``, the embedding model ``embedding``), scored by nDCG@10 on the training split; the
best becomes a pipeline spec. The test split never informs the choice."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..eval.data import Dataset
from ..eval.first_stage import candidate_documents
from ..eval.metrics import ranked_ndcg
from ..fusion import fuse, normalize_rows
from ..scorers.lexical import BM25Scorer

__all__ = [
    "DEFAULT_HYBRID",
    "FUSIONS",
    "STRATEGIES",
    "Fusion",
    "as_choice",
    "as_option",
    "describe_fusion",
    "embedding_entry",
    "fusion_options",
    "fusion_table",
    "grid",
    "pipeline_spec",
    "score_matrix",
]


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


#: the default hybrid given first-stage scores, as a fusion choice (see :func:`as_choice`)
DEFAULT_HYBRID = {
    "method": "weighted_average",
    "normalization": "min_max",
    "weights": {"first_stage": 0.3, "embedding": 0.7},
}


#: a fusion as a hashable option: (method, normalization, ((strategy, weight), ...))
Fusion = tuple[str, "str | None", tuple[tuple[str, float], ...]]


def as_option(choice: Mapping[str, Any]) -> Fusion:
    """A fusion choice (``method``, ``normalization``, ``weights``) as a hashable option."""
    return (choice["method"], choice["normalization"], tuple(choice["weights"].items()))


def as_choice(option: Fusion) -> dict[str, Any]:
    """The inverse of :func:`as_option`."""
    method, normalization, weights = option
    return {"method": method, "normalization": normalization, "weights": dict(weights)}


def describe_fusion(option: Fusion) -> str:
    """``weighted_average + min_max: first_stage 0.3, embedding 0.7``."""
    method, normalization, weights = option
    norm = f" + {normalization}" if normalization else ""
    return f"{method}{norm}: " + ", ".join(f"{k} {v:.1f}" for k, v in weights)


def fusion_table(
    data: Dataset,
    matrices: Mapping[str, tuple[list[str], np.ndarray]],
    strategies: Sequence[str] = STRATEGIES,
) -> dict[Fusion, dict[str, float]]:
    """Every fusion of the grid (and the default hybrid) -> each query's nDCG@10."""
    rows = [STRATEGIES.index(s) for s in strategies]
    options = {as_option(DEFAULT_HYBRID)}
    for (method, normalization), weights in itertools.product(FUSIONS, grid(len(rows))):
        active = tuple((strategies[i], w) for i, w in enumerate(weights) if w > 0)
        options.add((method, normalization, active))
    table: dict[Fusion, dict[str, float]] = {}
    for option in sorted(options, key=str):
        method, normalization, weights = option
        index = [STRATEGIES.index(s) for s, _ in weights]
        w = np.asarray([v for _, v in weights])
        table[option] = {
            q: ranked_ndcg(
                ids,
                fuse(normalize_rows(raw[index], method, normalization), method, w),
                data.qrels.get(q, {}),
            )
            for q, (ids, raw) in matrices.items()
        }
    return table


def fusion_options(table: Mapping[Fusion, Mapping[str, float]]) -> Any:
    """The fit of :func:`rerankit.training.crossval.cross_validate` for fusions: a fusion needs
    no fitting, so every training set gives every option its per-query nDCG@10."""
    evaluators = {option: values.__getitem__ for option, values in table.items()}
    return lambda qids: evaluators


def embedding_entry(
    model: str | None = None, max_length: int | None = None, passage_words: int | None = None
) -> dict[str, Any]:
    """The declared embedding scorer of a written pipeline (bundled model unless ``model``)."""
    entry: dict[str, Any] = {"type": "embedding"}
    if model:
        entry["model"] = model
    if max_length:
        entry["max_length"] = max_length
    if passage_words:
        entry["passage_words"] = passage_words
    return entry


def pipeline_spec(
    choice: Mapping[str, Any],
    name: str = "tuned-hybrid",
    *,
    embedding_model: str | None = None,
    embedding_max_length: int | None = None,
) -> dict[str, Any]:
    """A declared pipeline (see :mod:`rerankit.config`) for a fusion (:func:`as_choice`)."""
    embedding = embedding_entry(embedding_model, embedding_max_length)
    scorer_of = {  # documents without a first-stage score count as the worst (BM25's 0)
        "first_stage": {
            "type": "field",
            "field": "first_stage_score",
            "name": "first_stage",
            "missing": 0.0,
        },
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
