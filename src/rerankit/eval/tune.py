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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..calibration import expected_calibration_error, fit_calibration, sigmoid
from ..fusion import fuse, normalize_rows
from ..rerankers.hybrid import (
    HYBRID_BM25,
    HYBRID_CALIBRATION,
    LEGACY_CALIBRATION,
    ROLES,
    background_bm25,
)
from ..scorers.lexical import BM25Scorer
from .data import Dataset
from .first_stage import candidate_documents
from .metrics import ndcg_at_k

__all__ = [
    "FUSIONS",
    "STRATEGIES",
    "calibrated_spec",
    "fit_calibrated",
    "fusion_options",
    "fusion_table",
    "grid",
    "pairwise_matrix",
    "pipeline_spec",
    "score_matrix",
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


def ranked_ndcg(ids: Sequence[str], scores: np.ndarray, judged: Mapping[str, int]) -> float:
    """nDCG@10 of ``ids`` ordered by ``scores`` (ties keep the given order)."""

    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return ndcg_at_k([ids[i] for i in order], judged, 10)


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
    """The fit of :func:`rerankit.eval.crossval.cross_validate` for fusions: a fusion needs
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


def calibration_weights(roles: Sequence[str], step: float = 0.1) -> list[tuple[float, ...]]:
    """The logit-space weights :func:`fit_calibrated_sets` compares for ``roles``: every
    vector on a ``step`` grid that sums to 1 with every role weighted above 0."""
    units = round(1 / step)
    return [
        tuple(c / units for c in combo)
        for combo in itertools.product(range(1, units + 1), repeat=len(roles))
        if sum(combo) == units
    ]


def reading(spec: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """How a calibrated hybrid reads the texts (avgdl, query normalisation, passages) and
    which signals it fuses, from a mapping shaped like ``HYBRID_CALIBRATION`` (default:
    the built-in one)."""

    spec = HYBRID_CALIBRATION if spec is None else {**LEGACY_CALIBRATION, **spec}
    return {
        "avgdl": spec["avgdl"],
        "query_normalization": spec["query_normalization"],
        "passage_words": spec.get("passage_words"),
        "passage_lead": spec["passage_lead"],
        "roles": tuple(r for r in ROLES if r in spec["weights"]),
    }


def pairwise_matrix(
    data: Dataset,
    cands: Mapping[str, Sequence[tuple[str, float]]],
    embedding: Any,
    *,
    read: Mapping[str, Any] | None = None,
    progress: Callable[[Any], Any] | None = None,
) -> dict[str, tuple[list[str], np.ndarray]]:
    """Per query: candidate ids and a matrix of the calibrated hybrid's raw signals, one row
    per role of ``read`` (:func:`reading`; the default hybrid's by default): the cosine of
    each document's best passage (``passage``), of the whole document (``embedding``) and
    BM25 with background idf (``bm25_background``). ``embedding`` is an
    :class:`~rerankit.EmbeddingScorer` (or any scorer with ``score_texts``, for the whole
    document only)."""

    read = reading() if read is None else read
    scorers = {
        "bm25_background": background_bm25(
            avgdl=read["avgdl"], query_normalization=read["query_normalization"]
        ),
        "embedding": embedding,
    }
    if "passage" in read["roles"]:
        scorers["passage"] = embedding.with_passages(
            read["passage_words"], lead=read["passage_lead"]
        )
    elif read["passage_words"]:  # the older form: "embedding" read passages
        scorers["embedding"] = embedding.with_passages(
            read["passage_words"], lead=read["passage_lead"]
        )
    items = [(q, c) for q, c in cands.items() if c]
    out = {}
    for qid, ranked in progress(items) if progress else items:
        texts = [data.text(d) for d, _ in ranked]
        query = data.queries[qid]
        out[qid] = (
            [d for d, _ in ranked],
            np.vstack([scorers[r].score_texts(query, texts) for r in read["roles"]]),
        )
    return out


def relevance_labels(
    data: Dataset, matrices: Mapping[str, tuple[list[str], np.ndarray]]
) -> dict[str, np.ndarray]:
    """Per query, each candidate's label for calibration: 1 when judged >= 1, else 0."""
    return {
        q: np.array([float(data.qrels.get(q, {}).get(d, 0) >= 1) for d in ids])
        for q, (ids, _) in matrices.items()
    }


def fit_signal_calibrations(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]], roles: Sequence[str]
) -> dict[str, Any]:
    """One logistic calibration per role (row of each raw matrix), fitted on the pooled
    ``(raw matrix, labels)`` pairs."""

    y = np.concatenate([lab for _, lab in pairs]) if pairs else np.zeros(0)
    if y.size == 0 or y.min() == y.max():
        raise ValueError(
            "calibration needs judged training pairs, relevant and not, among the candidates"
        )
    return {
        role: fit_calibration(np.concatenate([raw[i] for raw, _ in pairs]), y)
        for i, role in enumerate(roles)
    }


def fused_logits(raw: np.ndarray, calibrations: Sequence[Any], weights: Sequence[float]) -> Any:
    """The calibrated hybrid's fused logit of each candidate (before the output calibration)."""
    return sum(w * c.logit(row) for row, c, w in zip(raw, calibrations, weights, strict=True))


def fit_calibrated(
    data: Dataset,
    matrices: Mapping[str, tuple[list[str], np.ndarray]],
    roles: Sequence[str],
    weights: Sequence[Sequence[float]] | None = None,
) -> dict[str, Any]:
    """Fit the calibrated hybrid on judged training pairs (relevant: judged >= 1): a
    logistic calibration per signal, the logit-space weights by training nDCG@10 among
    ``weights`` (default :func:`calibration_weights`), and an output calibration of the
    fused logit. (:func:`fit_calibrated_sets` does the same over several datasets.)"""
    return fit_calibrated_sets([(data, matrices)], roles, weights)


def fit_calibrated_sets(
    sets: Sequence[tuple[Dataset, Mapping[str, tuple[list[str], np.ndarray]]]],
    roles: Sequence[str],
    weights: Sequence[Sequence[float]] | None = None,
) -> dict[str, Any]:
    """:func:`fit_calibrated` over several datasets at once: calibrations fitted on their
    pooled pairs, the weights chosen by the mean over the datasets of each one's nDCG@10.
    Returns the ``calibration`` (weights, calibrations and output calibration, shaped like
    ``HYBRID_CALIBRATION``), ``ndcg_by_set`` (weights -> each dataset's nDCG@10),
    ``ndcg_by_weight`` (their mean), the pooled ``ece`` and ``pairs``, and per dataset the
    fused probabilities and labels of its pairs (``probabilities``, ``labels``)."""

    weights = list(weights or calibration_weights(roles))
    labels = [relevance_labels(data, m) for data, m in sets]
    pooled = [(m[q][1], y[q]) for (_, m), y in zip(sets, labels, strict=True) for q in m]
    fitted = fit_signal_calibrations(pooled, roles)
    cals = [fitted[r] for r in roles]
    by_set = {
        tuple(w): [
            float(
                np.mean(
                    [
                        ranked_ndcg(ids, fused_logits(raw, cals, w), data.qrels.get(q, {}))
                        for q, (ids, raw) in m.items()
                    ]
                )
            )
            for data, m in sets
        ]
        for w in weights
    }
    by_weight = {w: float(np.mean(cells)) for w, cells in by_set.items()}
    best = max(by_weight, key=lambda w: by_weight[w])
    y = np.concatenate([lab for _, lab in pooled])
    fused = np.concatenate([fused_logits(raw, cals, best) for raw, _ in pooled])
    out_cal = fit_calibration(fused, y)
    return {
        "calibration": {
            "weights": {r: round(w, 4) for r, w in zip(roles, best, strict=True)},
            "calibration": {r: fitted[r].as_dict() for r in roles},
            "output_calibration": out_cal.as_dict(),
        },
        "ndcg_by_weight": by_weight,
        "ndcg_by_set": by_set,
        "ece": expected_calibration_error(sigmoid(out_cal.logit(fused)), y),
        "pairs": int(y.size),
        "probabilities": [
            np.concatenate([sigmoid(out_cal.logit(fused_logits(m[q][1], cals, best))) for q in m])
            for _, m in sets
        ],
        "labels": [
            np.concatenate([lab[q] for q in m]) for (_, m), lab in zip(sets, labels, strict=True)
        ],
    }


def calibration_options(
    data: Dataset,
    matrices: Mapping[str, tuple[list[str], np.ndarray]],
    roles: Sequence[str],
    weights: Sequence[Sequence[float]] | None = None,
) -> Callable[[Sequence[str]], dict[tuple[float, ...], Callable[[str], float]]]:
    """The fit of :func:`rerankit.eval.crossval.cross_validate` for ``tune --calibrate``:
    signal calibrations fitted on the training queries' pairs, and per weight vector an
    evaluator of a query's nDCG@10."""
    weights = [tuple(w) for w in (weights or calibration_weights(roles))]
    labels = relevance_labels(data, matrices)

    def fit_on(qids: Sequence[str]) -> dict[tuple[float, ...], Callable[[str], float]]:
        fitted = fit_signal_calibrations([(matrices[q][1], labels[q]) for q in qids], roles)
        cals = [fitted[r] for r in roles]

        def evaluator(w: tuple[float, ...]) -> Callable[[str], float]:
            def evaluate(q: str) -> float:
                ids, raw = matrices[q]
                return ranked_ndcg(ids, fused_logits(raw, cals, w), data.qrels.get(q, {}))

            return evaluate

        return {w: evaluator(w) for w in weights}

    return fit_on


def calibrated_spec(
    calibration: Mapping[str, Any],
    name: str = "calibrated-hybrid",
    *,
    read: Mapping[str, Any] | None = None,
    embedding_model: str | None = None,
    embedding_max_length: int | None = None,
) -> dict[str, Any]:
    """A declared pipeline for a calibration found by :func:`fit_calibrated` (its signals
    read as ``read`` says, :func:`reading`): a fusion with ``normalization = "calibrated"``."""

    read = reading() if read is None else read
    cal, weights = calibration["calibration"], calibration["weights"]
    entries = {
        "bm25_background": {
            "type": "bm25",
            "name": "bm25_background",
            "idf": "background",
            "avgdl": read["avgdl"],
            "query_normalized": read["query_normalization"],
            **HYBRID_BM25,
        },
        "embedding": embedding_entry(
            embedding_model,
            embedding_max_length,
            None if "passage" in read["roles"] else read["passage_words"],
        ),
    }
    if "passage" in read["roles"]:
        entries["passage"] = {
            **embedding_entry(embedding_model, embedding_max_length, read["passage_words"]),
            "name": "passage",
        }
    for entry in entries.values():
        if entry.get("passage_words") and read["passage_lead"]:
            entry["passage_lead"] = read["passage_lead"]
    stage = {
        "name": name,
        "normalization": "calibrated",
        "output_calibration": dict(calibration["output_calibration"]),
        "scorers": [
            {**entries[r], "weight": weights[r], "calibration": cal[r]} for r in read["roles"]
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
