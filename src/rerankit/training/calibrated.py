"""Refitting the calibrated texts-only hybrid on training queries (``rerankit tune
--calibrate``): each signal's calibration to P(relevant) and the fusion weights, so that
scores estimate P(relevant) per pair (see :mod:`rerankit.calibration`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..calibration import expected_calibration_error, fit_calibration, sigmoid
from ..eval.data import Dataset
from ..eval.metrics import ranked_ndcg
from ..eval.refit_check import ADOPT_MARGIN, OutputRefit, output_refit
from ..scorers.recipe import (
    HYBRID_BM25,
    HYBRID_CALIBRATION,
    READING_DEFAULTS,
    ROLES,
    background_bm25,
    proximity_reader,
)
from .fusion_search import embedding_entry

__all__ = [
    "OutputRefit",
    "calibrated_spec",
    "calibration_options",
    "calibration_weights",
    "fit_calibrated",
    "fit_calibrated_sets",
    "fit_signal_calibrations",
    "fused_logits",
    "output_log_losses",
    "output_refit",
    "pairwise_matrix",
    "reading",
    "refit_output",
    "relevance_labels",
]


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

    spec = HYBRID_CALIBRATION if spec is None else {**READING_DEFAULTS, **spec}
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
    :class:`~rerankit.scorers.EmbeddingScorer` (or any scorer with ``score_texts``, for the whole
    document only)."""

    read = reading() if read is None else read
    scorers = {
        "bm25_background": background_bm25(
            avgdl=read["avgdl"], query_normalization=read["query_normalization"]
        ),
        "embedding": embedding,
    }
    if "proximity" in read["roles"]:
        scorers["proximity"] = proximity_reader(
            avgdl=read["avgdl"], query_normalization=read["query_normalization"]
        )
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


def output_log_losses(
    logits: Mapping[str, np.ndarray],
    labels: Mapping[str, np.ndarray],
    default: Any,
    *,
    folds: int = 5,
) -> tuple[float, float]:
    """:func:`output_refit`'s cross-validated log losses, ``(refitted, default)``."""
    check = output_refit(logits, labels, default, folds=folds)
    return check.refit_loss, check.default_loss


def refit_output(
    logits: Mapping[str, np.ndarray],
    labels: Mapping[str, np.ndarray],
    default: Any,
    folds: int,
    margin: float = ADOPT_MARGIN,
    force: bool = False,
) -> tuple[Any, OutputRefit]:
    """The output calibration to write over the default's fused ``logits``: refitted on
    every pair when that predicts held-out queries better than ``default`` by more than
    ``margin`` times the noise (:func:`output_refit`), or whatever the check says when
    ``force`` (``--keep-learned``), else ``default``; with the check."""
    check = output_refit(logits, labels, default, folds=folds, margin=margin)
    x = np.concatenate(list(logits.values()))
    y = np.concatenate([labels[q] for q in logits])
    if not (check.adopt or force) or y.min() == y.max():  # all alike: nothing to fit
        return default, check
    return fit_calibration(x, y), check


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
    """The fit of :func:`rerankit.training.crossval.cross_validate` for ``tune --calibrate``:
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
    if "proximity" in read["roles"]:
        entries["proximity"] = {
            "type": "proximity",
            "name": "proximity",
            "avgdl": read["avgdl"],
            "query_normalized": read["query_normalization"],
            **HYBRID_BM25,
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
