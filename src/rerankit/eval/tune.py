"""Choosing a fusion on training queries: ``rerankit tune``.

The strategies are the first stage's score (``first_stage``), BM25 over the candidates
(``bm25``) and the embedding model (``embedding``). Every combination of method
(weighted sum of min-max or z-score normalised scores, or RRF) and weights on a 0.1 grid is
scored (nDCG@10, ranx) on the training split; the best becomes a pipeline file, which is
then loaded and evaluated on the test split. The test split never informs the choice.

``--calibrate`` instead refits the calibrated texts-only hybrid (scores that estimate
P(relevant) per pair; see :mod:`rerankit.calibration`) on the training split:
:func:`fit_calibrated`.
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

__all__ = [
    "FUSIONS",
    "STRATEGIES",
    "calibrated_spec",
    "fit_calibrated",
    "grid",
    "pairwise_matrix",
    "pipeline_spec",
    "score_matrix",
    "search",
    "to_toml",
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


#: the default hybrid given first-stage scores, as a choice of :func:`search`'s shape
DEFAULT_HYBRID = {
    "method": "weighted_average",
    "normalization": "min_max",
    "weights": {"first_stage": 0.3, "embedding": 0.7},
}


def held_out(qids: Sequence[str], share: float = 0.2) -> set[str]:
    """A fixed ``share`` of the query ids (by a hash of each id, so the same ids whatever
    their order): kept out of the search to check its choice."""
    import hashlib

    ranked = sorted(qids, key=lambda q: hashlib.sha256(q.encode()).hexdigest())
    return set(ranked[: int(len(ranked) * share)])


def evaluate_choice(
    data: Dataset, matrices: Mapping[str, tuple[list[str], np.ndarray]], choice: Mapping[str, Any]
) -> float:
    """nDCG@10 of one fusion (shaped as :func:`search`'s results) over ``matrices``' queries."""
    ranx = require("ranx", "rerankit tune")
    qrels = ranx.Qrels({q: dict(j) for q, j in data.qrels.items() if q in matrices})
    names = list(choice["weights"])
    run = _fused_run(
        matrices,
        [STRATEGIES.index(s) for s in names],
        [choice["weights"][s] for s in names],
        choice["method"],
        choice["normalization"],
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*unsafe cast.*")
        return float(ranx.evaluate(qrels, ranx.Run(run), "ndcg@10"))


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
    """A declared pipeline (see :mod:`rerankit.config`) for a fusion found by :func:`search`."""
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


CALIBRATION_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)  # BM25's weight in logit space


def pairwise_matrix(
    data: Dataset,
    cands: Mapping[str, Sequence[tuple[str, float]]],
    embedding: Any,
    *,
    avgdl: float = 400.0,
    passage_words: int | None = None,
    progress: Callable[[Any], Any] | None = None,
) -> dict[str, tuple[list[str], np.ndarray]]:
    """Per query: candidate ids and a (2, n) matrix of the calibrated hybrid's raw signals,
    BM25 with background idf (fixed ``avgdl``, query-normalised) and the cosine (of each
    document's best passage of about ``passage_words`` words, when given: ``embedding``
    is then an :class:`~rerankit.EmbeddingScorer`)."""
    from ..rerankers.hybrid import background_bm25

    bm25 = background_bm25(avgdl=avgdl)
    if passage_words is not None:
        embedding = embedding.with_passages(passage_words)
    items = [(q, c) for q, c in cands.items() if c]
    out = {}
    for qid, ranked in progress(items) if progress else items:
        texts = [data.text(d) for d, _ in ranked]
        query = data.queries[qid]
        out[qid] = (
            [d for d, _ in ranked],
            np.vstack([bm25.score_texts(query, texts), embedding.score_texts(query, texts)]),
        )
    return out


def fit_calibrated(
    data: Dataset,
    matrices: Mapping[str, tuple[list[str], np.ndarray]],
    weights: Sequence[float] = CALIBRATION_WEIGHTS,
) -> dict[str, Any]:
    """Fit the calibrated hybrid on judged training pairs (relevant: judged >= 1): a
    logistic calibration per signal, BM25's logit-space weight by training nDCG@10 among
    ``weights``, and an output calibration of the fused logit. Returns the calibration
    (shaped like ``HYBRID_CALIBRATION``), the training nDCG@10 per weight and the
    training ECE. (:func:`fit_calibrated_sets` does the same over several datasets.)"""
    return fit_calibrated_sets([(data, matrices)], weights)


def fit_calibrated_sets(
    sets: Sequence[tuple[Dataset, Mapping[str, tuple[list[str], np.ndarray]]]],
    weights: Sequence[float] = CALIBRATION_WEIGHTS,
) -> dict[str, Any]:
    """:func:`fit_calibrated` over several datasets at once: calibrations fitted on their
    pooled pairs, the weight chosen by the mean over the datasets of each one's nDCG@10.
    Also returns ``ndcg_by_set`` (weight -> each dataset's nDCG@10) and, per dataset, the
    fused probabilities and labels of its pairs (``probabilities``, ``labels``)."""
    from ..calibration import expected_calibration_error, fit_calibration, sigmoid
    from .metrics import mean_ndcg

    labels = [
        {q: np.array([float(data.qrels.get(q, {}).get(d, 0) >= 1) for d in m[q][0]]) for q in m}
        for data, m in sets
    ]
    pooled = [(m[q], y[q]) for (_, m), y in zip(sets, labels, strict=True) for q in m]
    y = np.concatenate([lab for _, lab in pooled]) if pooled else np.zeros(0)
    if y.size == 0 or y.min() == y.max():
        raise ValueError(
            "calibration needs judged training pairs, relevant and not, among the candidates"
        )
    bm25_cal = fit_calibration(np.concatenate([row[1][0] for row, _ in pooled]), y)
    cos_cal = fit_calibration(np.concatenate([row[1][1] for row, _ in pooled]), y)

    def logits(raw: np.ndarray, w: float) -> np.ndarray:
        return w * bm25_cal.logit(raw[0]) + (1 - w) * cos_cal.logit(raw[1])

    by_set: dict[float, list[float]] = {}
    for w in weights:
        by_set[w] = [
            mean_ndcg(
                {
                    q: [m[q][0][i] for i in np.argsort(-logits(m[q][1], w), kind="stable")]
                    for q in m
                },
                data.qrels,
            )
            for data, m in sets
        ]
    by_weight = {w: float(np.mean(cells)) for w, cells in by_set.items()}
    best = max(by_weight, key=lambda w: by_weight[w])
    fused = np.concatenate([logits(row[1], best) for row, _ in pooled])
    out_cal = fit_calibration(fused, y)
    return {
        "calibration": {
            "weights": {"embedding": round(1 - best, 4), "bm25_background": round(best, 4)},
            "calibration": {
                "embedding": cos_cal.as_dict(),
                "bm25_background": bm25_cal.as_dict(),
            },
            "output_calibration": out_cal.as_dict(),
        },
        "ndcg_by_weight": by_weight,
        "ndcg_by_set": by_set,
        "ece": expected_calibration_error(sigmoid(out_cal.logit(fused)), y),
        "pairs": int(y.size),
        "probabilities": [
            np.concatenate([sigmoid(out_cal.logit(logits(m[q][1], best))) for q in m])
            for _, m in sets
        ],
        "labels": [
            np.concatenate([lab[q] for q in m]) for (_, m), lab in zip(sets, labels, strict=True)
        ],
    }


def calibrated_spec(
    calibration: Mapping[str, Any],
    name: str = "calibrated-hybrid",
    *,
    avgdl: float = 400.0,
    embedding_model: str | None = None,
    embedding_max_length: int | None = None,
    passage_words: int | None = None,
) -> dict[str, Any]:
    """A declared pipeline for a calibration found by :func:`fit_calibrated`: a fusion with
    ``normalization = "calibrated"`` (``passage_words``: what the cosine was fitted on)."""
    from ..rerankers.hybrid import HYBRID_BM25

    embedding = embedding_entry(embedding_model, embedding_max_length, passage_words)
    bm25 = {
        "type": "bm25",
        "name": "bm25_background",
        "idf": "background",
        "avgdl": avgdl,
        "query_normalized": True,
        **HYBRID_BM25,
    }
    cal, weights = calibration["calibration"], calibration["weights"]
    stage = {
        "name": name,
        "normalization": "calibrated",
        "output_calibration": dict(calibration["output_calibration"]),
        "scorers": [
            {**bm25, "weight": weights["bm25_background"], "calibration": cal["bm25_background"]},
            {**embedding, "weight": weights["embedding"], "calibration": cal["embedding"]},
        ],
    }
    return {"name": name, "stages": [stage]}


def to_toml(spec: Mapping[str, Any], comment: str = "") -> str:
    """A pipeline spec of the shape :func:`pipeline_spec` or :func:`calibrated_spec` makes,
    as TOML."""

    def value(v: Any) -> str:
        if isinstance(v, str):
            return json.dumps(v)  # a TOML basic string is JSON-escaped
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, Mapping):  # an inline table
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
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
