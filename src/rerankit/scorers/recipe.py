"""The default ``hybrid``'s recipe: how it reads the texts, each signal's calibration and
the weights that fuse them, and the two lexical readers it builds from them. Kept beside
the scorers, below :mod:`rerankit.rerankers`, so that the learned scorer's features and
``rerankit tune --calibrate`` read the same recipe the hybrid runs
(:class:`~rerankit.rerankers.HybridReranker` fuses it)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Real
from typing import Any

from .base import Scorer
from .lexical import BM25Scorer
from .proximity import ProximityScorer

__all__ = [
    "HYBRID_BM25",
    "HYBRID_CALIBRATED_FIRST_STAGE_WEIGHT",
    "HYBRID_CALIBRATION",
    "HYBRID_FIRST_STAGE_WEIGHT",
    "HYBRID_TEXT_WEIGHTS",
    "READING_DEFAULTS",
    "ROLES",
    "SCORE_MODES",
    "background_bm25",
    "check_text_weights",
    "proximity_reader",
    "reweighted",
]

#: How the default ``hybrid`` fuses its signals.
#:
#: * Texts only, ``scores="calibrated"`` (the default): four signals that depend on the
#:   (query, document) pair alone: the bundled MiniLM's cosine of the document's best
#:   passage (about 48 words, each passage after the first starting with the document's
#:   first 20 words), its cosine of the whole document, BM25 with background idf
#:   (``avgdl`` fixed at 100, the score divided by its query's ceiling to the power 0.75)
#:   and term proximity (the query's adjacent terms next to each other in the document,
#:   read like that BM25: :func:`proximity_reader`), each mapped to a logit by its
#:   calibration, summed with the weights below and mapped
#:   through the output calibration: an estimate of P(relevant) per pair. Chosen on a
#:   development pool across domains (SciFact train, NFCorpus dev, CISI, CACM, MEDLINE,
#:   LISA) by a rule that protects the worst collection
#:   (``benchmarks/experiments/default_pool.py``).
#: * Texts only, ``scores="relative"``: a weighted sum of min-max normalised scores, 0.2 BM25
#:   with the candidates' own idf, 0.2 BM25 with background idf, 0.6 embedding (chosen on
#:   the same queries, ``benchmarks/experiments/hybrid_dev.py``). Scores are relative to the
#:   request.
#: * With the documents' first-stage scores: calibrated, ``first_stage_weight`` of the
#:   first stage beside ``1 - first_stage_weight`` of the texts-only fusion's logit, each
#:   min-max normalised (the retriever's scale is unknown, so these scores are relative);
#:   its default, 0, was chosen on the same pool by the same rule
#:   (``benchmarks/experiments/first_stage_pool.py``: no weight above 0 kept every collection within
#:   0.5 of the texts alone), so by default the texts alone rank and the scores stay
#:   probabilities. Relative: 0.3 first stage / 0.7 embedding.
HYBRID_FIRST_STAGE_WEIGHT = 0.3
HYBRID_CALIBRATED_FIRST_STAGE_WEIGHT = 0.0
#: texts only: BM25 with the candidates' idf, BM25 with background idf (the rest: embedding)
HYBRID_TEXT_WEIGHTS = (0.2, 0.2)
HYBRID_BM25 = {"k1": 0.9, "b": 0.4}
#: the calibrated texts-only hybrid: how its signals read the texts, each signal's
#: calibration, the weights of their logits and the output calibration (see
#: ``benchmarks/experiments/default_pool.py``, which chooses them on the development pool)
HYBRID_CALIBRATION: dict[str, Any] = {
    "avgdl": 100.0,
    "query_normalization": 0.75,
    "passage_words": 48,
    "passage_lead": 20,
    "weights": {"passage": 0.3, "embedding": 0.15, "bm25_background": 0.475, "proximity": 0.075},
    "calibration": {
        "passage": {"slope": 8.924815, "intercept": -5.886335},
        "embedding": {"slope": 8.65649, "intercept": -5.524876},
        "bm25_background": {"slope": 2.472666, "intercept": -3.850231},
        "proximity": {"slope": 2.810077, "intercept": -2.426808},
    },
    "output_calibration": {"slope": 1.588705, "intercept": 1.290698},
}
#: how a ``calibration=`` mapping that leaves them out reads the texts: as the built-in one
READING_DEFAULTS: dict[str, Any] = {
    key: HYBRID_CALIBRATION[key] for key in ("avgdl", "query_normalization", "passage_lead")
}
#: the signals a calibrated hybrid can fuse: the cosine of the whole document (of its best
#: passage, in a mapping without ``passage`` but with ``passage_words``), the cosine of its
#: best passage, BM25 with background idf, and the query's adjacent terms next to each other
#: in the document (``proximity``, read like that BM25)
ROLES = ("passage", "embedding", "bm25_background", "proximity")
SCORE_MODES = ("calibrated", "relative")


def background_bm25(
    analyzer: Any = None, *, avgdl: float | None = None, query_normalization: float | None = None
) -> Scorer:
    """The calibrated hybrid's lexical signal, ``bm25_background``: BM25 (k1=0.9, b=0.4) with
    idf from a general word-frequency table, a fixed average length (``avgdl``) and the
    score divided by the most any document could score for the query raised to
    ``query_normalization`` (the calibration's values by default), so it depends on the pair
    alone."""

    return BM25Scorer(
        analyzer=analyzer,
        idf="background",
        avgdl=HYBRID_CALIBRATION["avgdl"] if avgdl is None else avgdl,
        query_normalized=(
            HYBRID_CALIBRATION["query_normalization"]
            if query_normalization is None
            else query_normalization
        ),
        name="bm25_background",
        **HYBRID_BM25,
    )


def proximity_reader(
    analyzer: Any = None, *, avgdl: float | None = None, query_normalization: float | None = None
) -> Scorer:
    """The calibrated hybrid's ``proximity`` signal: how often the query's adjacent terms
    stand next to each other in the document, scored like :func:`background_bm25` (the same
    k1, b, background idf, average length and query normalisation)."""

    return ProximityScorer(
        analyzer=analyzer,
        avgdl=HYBRID_CALIBRATION["avgdl"] if avgdl is None else avgdl,
        query_normalized=(
            HYBRID_CALIBRATION["query_normalization"]
            if query_normalization is None
            else query_normalization
        ),
        **HYBRID_BM25,
    )


def _number(v: Any) -> bool:
    return isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v)


def check_text_weights(text_weights: Any) -> tuple[float, float]:
    """``hybrid-relative``'s ``text_weights`` as a pair, or ``ValueError`` saying what
    they are: two numbers >= 0 summing to at most 1, the weights of BM25 with the
    candidates' idf and of BM25 with background idf (the embedding takes the rest)."""
    form = (
        "text_weights: two numbers [bm25, bm25_background] >= 0 with sum <= 1 (BM25 with "
        "the candidates' idf, BM25 with background idf; the embedding takes the rest)"
    )
    if isinstance(text_weights, Mapping):
        raise ValueError(
            f"{form}, not a table ({dict(text_weights)!r}); to reweigh the default hybrid's "
            f"signals by name use weights = {{ bm25_background = 0.7 }} (signals: "
            f"{', '.join(ROLES)})"
        )
    pair = list(text_weights) if isinstance(text_weights, list | tuple) else None
    if pair is None or len(pair) != 2 or not all(_number(w) for w in pair):
        raise ValueError(f"{form}; got {text_weights!r}")
    if min(pair) < 0 or sum(pair) > 1:
        raise ValueError(f"{form}; got {text_weights!r}")
    return float(pair[0]), float(pair[1])


def reweighted(base: Mapping[str, float], weights: Any) -> dict[str, float]:
    """The calibrated hybrid's signal weights with ``weights`` (signal name -> weight) in
    place of ``base``'s: each named signal gets the share of the fused logit it names, and
    the signals left out share the rest (1 minus the named ones) in ``base``'s proportions,
    so the weights still sum to 1 (the fusion divides them by their sum, which would
    otherwise shrink the named ones). ``ValueError`` names an unknown signal with the
    known ones, a weight that is no number in [0, 1], and named weights above 1 in all."""
    signals = ", ".join(base)
    if not isinstance(weights, Mapping) or not weights:
        raise ValueError(
            f"weights: a table of signal names to weights, such as "
            f"{{ bm25_background = 0.7 }} (signals: {signals}); got {weights!r}"
        )
    unknown = [k for k in weights if k not in base]
    if unknown:
        unknown_signal = "unknown signal" if len(unknown) == 1 else "unknown signals"
        raise ValueError(f"weights: {unknown_signal} {unknown}; the signals are {signals}")
    bad = {k: w for k, w in weights.items() if not _number(w) or not 0 <= w <= 1}
    if bad:
        raise ValueError(f"weights: each weight is a number in [0, 1]; got {bad}")
    named = float(sum(weights.values()))
    rest = {k: float(w) for k, w in base.items() if k not in weights}
    if named > 1 + 1e-9 or (not rest and not math.isclose(named, 1.0, abs_tol=1e-6)):
        raise ValueError(
            f"weights: {dict(weights)} sum to {named:.4g}; they are shares of the fused "
            "logit: name weights summing to at most 1 (the signals left out share the "
            "rest), or to exactly 1 when you name every signal"
        )
    left, total = max(0.0, 1.0 - named), sum(rest.values())
    if rest and left > 1e-9 and total <= 0:
        raise ValueError(f"weights: the signals left out ({', '.join(rest)}) weigh 0 here")
    share = {k: (left * w / total if total > 0 else 0.0) for k, w in rest.items()}
    return {k: float(weights[k]) if k in weights else share[k] for k in base}
