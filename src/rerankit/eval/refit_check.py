"""How well a pipeline's probabilities match some judgments (:func:`run_calibration`), and
whether refitting them would predict the queries it did not see better than what it has
(:func:`probability_refit`): the check ``rerankit tune --calibrate`` makes before it writes
a refit, and ``evaluate`` makes before it advises one.

The folds are by query (:func:`kfold`, by a hash of each id); the gain of the refit is the
default's held-out log loss less the refit's, and it counts only when it is more than
:data:`ADOPT_MARGIN` times its noise (the standard error over queries), the rule every
learning verdict of rerankit keeps.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..calibration import (
    Calibration,
    expected_calibration_error,
    fit_calibration,
    reliability_bins,
    sigmoid,
)
from ..errors import said_for
from .data import asked_queries, parse_split
from .first_stage import ranked_queries
from .given import IN_MEMORY
from .qrels import read_qrels, read_splits, split_files

__all__ = [
    "ADOPT_MARGIN",
    "ECE_REFIT",
    "MIN_QUERIES",
    "OutputRefit",
    "few_queries_margin",
    "fit_queries",
    "folds_for",
    "kfold",
    "output_refit",
    "probability_refit",
    "ranks_training",
    "run_calibration",
    "student_t975",
    "too_few_to_refit",
]

#: an ECE above this is worth refitting for before a threshold on the scores is trusted
ECE_REFIT = 0.05

#: how many times the noise a learned pipeline must beat the default by to be adopted, whoever made
#: the labels: about a one-sided 2.5 % chance that a learner no better than the default clears it.
#: At one noise, on the classic collections' halves (15 to 38 training queries,
#: ``benchmarks/experiments/learn_halves.py``) the one model adopted (a gain of 1.01 times its
#: noise) lost 0.28 nDCG@10 on the other half; on labels from an oracle judge with 10 or 30 % of
#: them flipped (``benchmarks/experiments/judge_noise_dev.py``) the models adopted had gains of 1.05
#: to 1.95 times it, and three of the four were worse than the default on the other half's human
#: judgments. The gains that did hold were 2.4 to 3.0 times the noise (learning to rank on SciFact's
#: 809 training queries, by people or by an oracle judge).
ADOPT_MARGIN = 2.0

#: Student's t at 97.5 % by degrees of freedom 1 to 30 (beyond: :func:`student_t975`'s
#: expansion), the quantile a standard error from that few queries is widened by
# fmt: off
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
# fmt: on
_Z975 = 1.959964


def student_t975(df: int) -> float:
    """Student's t distribution's 97.5 % quantile with ``df`` degrees of freedom: a table to
    30, then the Cornish-Fisher expansion around the normal's 1.96 (within 0.001 beyond)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def few_queries_margin(margin: float, queries: int) -> float:
    """``margin`` (times the noise) widened for a standard error measured on few queries:
    times Student's t over the normal quantile (97.5 %, ``queries - 1`` degrees of freedom),
    never narrowed. 5 queries: 2.83 for a margin of 2; 30: 2.09; 100: 2.02; 809: 2.00."""
    if queries < 2:
        return math.inf
    return margin * max(1.0, student_t975(queries - 1) / _Z975)


def kfold(qids: Sequence[str], k: int = 5) -> list[list[str]]:
    """``k`` folds of the query ids (each id in exactly one; sizes differ by at most one),
    assigned by a hash of each id, so the folds do not depend on the ids' order."""
    if k < 2:
        raise ValueError(f"k must be >= 2, got {k}")
    if len(qids) < k:
        raise ValueError(f"{len(qids)} queries cannot make {k} folds")
    ranked = sorted(qids, key=lambda q: hashlib.sha256(str(q).encode()).hexdigest())
    return [ranked[i::k] for i in range(k)]


#: training queries below which nested cross-validation has nothing to fit on
MIN_QUERIES = 4


def folds_for(n: int, k: int = 5) -> int:
    """The number of folds to use for ``n`` queries: ``k``, fewer when there are fewer than
    two queries per fold, but at least 3 (nested cross-validation fits on the queries
    outside two folds, so two folds would leave it none; a ValueError under 4 queries)."""
    if n < MIN_QUERIES:
        raise ValueError(
            f"cross-validation needs at least {MIN_QUERIES} training queries with candidates "
            f"(and with judgments, or with clicks when learning from a click log), got {n}"
        )
    return max(3, min(k, n // 2))


@dataclass(frozen=True)
class OutputRefit:
    """Whether refitting the output calibration (the probabilities) to the judgments
    predicts queries it did not see better than the default's (folds by query): the
    cross-validated log loss of each, the gain (the default's loss less the refit's), its
    noise (the standard error over queries: a query's pairs share its judge and wording,
    so they are not independent), the expected calibration error of each on the held-out
    pairs, and the ``margin`` over the noise the gain needs, as the order's verdict does
    (:class:`~rerankit.training.crossval.Verdict`)."""

    refit_loss: float
    default_loss: float
    noise: float
    refit_ece: float
    default_ece: float
    queries: int
    margin: float = ADOPT_MARGIN

    @property
    def gain(self) -> float:
        return self.default_loss - self.refit_loss

    @property
    def adopt(self) -> bool:
        return self.gain > self.margin * self.noise

    def summary(self) -> dict[str, Any]:
        """The check as plain values (for a results file): gain, noise, margin, queries and
        whether the refit is adopted."""
        return {
            "gain": float(self.gain),
            "noise": float(self.noise),
            "margin": float(self.margin),
            "queries": int(self.queries),
            "adopt": bool(self.adopt),
        }

    def describe(self) -> str:
        """What ``tune --calibrate`` prints: both losses, the gain against the margin times
        the noise, and both held-out ECEs (the refit's said to be worse when it is)."""
        times = "" if self.margin == 1 else f"{self.margin:g} x "
        worse = " (worse)" if self.refit_ece > self.default_ece else ""
        return (
            f"cross-validated log loss of the probabilities ({self.queries} queries, folds by "
            f"query): refitted {self.refit_loss:.4f}, the default's {self.default_loss:.4f}; "
            f"gain {self.gain:+.4f} (noise {self.noise:.4f}; adopted only above "
            f"{times}the noise)\nECE on the training queries, each held out by the folds: "
            f"refitted {self.refit_ece:.4f}{worse}, the default's {self.default_ece:.4f}"
        )


def output_refit(
    logits: Mapping[str, np.ndarray],
    labels: Mapping[str, np.ndarray],
    default: Any,
    *,
    folds: int = 5,
    margin: float = ADOPT_MARGIN,
) -> OutputRefit:
    """Cross-validate (folds by query, :func:`kfold`) an output
    calibration refitted on the other folds' pairs against ``default`` (a
    :class:`~rerankit.calibration.Calibration`), over every query's fused ``logits`` and
    0/1 ``labels``: whether refitting the probabilities to these judgments generalises to
    queries it did not see (:class:`OutputRefit`)."""
    qids = list(logits)
    refit, kept, y = {}, {}, {}
    for held in kfold(qids, folds_for(len(qids), folds)):
        out = set(held)
        rest = [q for q in qids if q not in out]
        x_rest = np.concatenate([logits[q] for q in rest])
        y_rest = np.concatenate([labels[q] for q in rest])
        constant = y_rest.min() == y_rest.max()  # nothing to fit on: the default stands
        fitted = default if constant else fit_calibration(x_rest, y_rest)
        for q in held:
            refit[q] = sigmoid(fitted.logit(logits[q]))
            kept[q] = sigmoid(default.logit(logits[q]))
            y[q] = np.asarray(labels[q], dtype=float)
    # per query, the summed gain over its pairs; the gain is their total over all pairs
    sums = np.array([_losses(kept[q], y[q]).sum() - _losses(refit[q], y[q]).sum() for q in qids])
    sizes = np.array([y[q].size for q in qids], dtype=float)
    gain = sums.sum() / sizes.sum()
    n = len(qids)  # the clustered (by query) standard error of a mean over pairs
    noise = (
        math.sqrt(n / (n - 1) * float(np.sum((sums - gain * sizes) ** 2))) / sizes.sum()
        if n > 1
        else math.inf
    )
    truth, p_refit, p_kept = (np.concatenate([d[q] for q in qids]) for d in (y, refit, kept))
    return OutputRefit(
        refit_loss=_log_loss(p_refit, truth),
        default_loss=_log_loss(p_kept, truth),
        noise=noise,
        refit_ece=expected_calibration_error(p_refit, truth),
        default_ece=expected_calibration_error(p_kept, truth),
        queries=n,
        margin=margin,
    )


def _losses(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def _log_loss(p: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(_losses(p, y)))


#: probabilities are clipped this far from 0 and 1 before their logits are taken
_EDGE = 1e-6


def probability_refit(
    scores: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    folds: int = 5,
    margin: float = ADOPT_MARGIN,
) -> OutputRefit | None:
    """:func:`output_refit` of a pipeline's probability ``scores`` (query id -> document id
    -> probability) against ``qrels`` (relevant when judged >= 1): whether a logistic refit
    of those probabilities, on some of these queries, predicts the others better than the
    probabilities as they are. A refit of the pipeline's output calibration is the same
    refit (both are logistic in the same logit), so this is what ``tune --calibrate`` would
    find on these judgments. None when fewer than :data:`MIN_QUERIES` queries have scores
    or the judgments are all alike (nothing to refit on)."""
    logits, labels = {}, {}
    for qid, by_doc in scores.items():
        if not by_doc:
            continue
        p = np.clip(np.fromiter(by_doc.values(), dtype=float, count=len(by_doc)), _EDGE, 1 - _EDGE)
        judged = qrels.get(qid, {})
        logits[qid] = np.log(p / (1 - p))
        labels[qid] = np.array([float(judged.get(d, 0) >= 1) for d in by_doc])
    if len(logits) < MIN_QUERIES:
        return None
    y = np.concatenate(list(labels.values()))
    if y.min() == y.max():
        return None
    return output_refit(logits, labels, Calibration(), folds=folds, margin=margin)


def run_calibration(
    qrels: Mapping[str, Mapping[str, int]],
    scores: Mapping[str, Mapping[str, float]],
    bins: int = 10,
) -> dict[str, Any] | None:
    """Expected calibration error and reliability bins of a run's probability ``scores``
    (query id -> document id -> probability) over every scored pair, relevant when judged
    >= 1 in ``qrels``; when the error is above :data:`ECE_REFIT`, ``refit``: whether a
    refit on some of these queries predicts the others (:func:`probability_refit`, as
    :meth:`OutputRefit.summary`). None when nothing was scored."""
    probabilities, labels = [], []
    for qid, by_doc in scores.items():
        judged = qrels.get(qid, {})
        for doc, p in by_doc.items():
            probabilities.append(p)
            labels.append(1.0 if judged.get(doc, 0) >= 1 else 0.0)
    if not probabilities:
        return None
    ece = expected_calibration_error(probabilities, labels, bins)
    check = probability_refit(scores, qrels) if ece > ECE_REFIT else None
    return {
        "ece": ece,
        "pairs": len(labels),
        "relevant": int(sum(labels)),
        "bins": reliability_bins(probabilities, labels, bins),
        "refit": check and check.summary(),
    }


#: the share of the training split's judged queries a retriever's file must rank for tune's
#: default splits to be advised with it
TRAINING_COVERED = 0.5


def ranks_training(folder: str, first_stage: Any) -> bool:
    """Whether the first stage ``first_stage`` (a file, or candidates in memory) ranks
    candidates for at least :data:`TRAINING_COVERED` of the judged queries of ``folder``'s
    training split (and :data:`MIN_QUERIES` of them), so that
    tune's default splits can fit on them. False when either cannot be read."""
    train = Path(folder) / "qrels" / "train.tsv"
    if not train.is_file() or first_stage in (None, "auto", "bm25", "run", IN_MEMORY):
        return False
    try:
        judged = set(read_qrels(train)[0])
        asked = asked_queries(folder)
        if asked is not None:
            judged &= set(asked)
        ranked = ranked_queries(first_stage)
    except (OSError, ValueError):  # unreadable here: the halves, which need no training split
        return False
    covered = len(judged & ranked)
    return covered >= MIN_QUERIES and covered >= TRAINING_COVERED * len(judged)


def fit_queries(
    folder: str, split: str, first_stage: Any, max_queries: int | None = None
) -> int | None:
    """How many judged queries with candidates ``rerankit tune --data folder --train-split
    split --calibrate`` (with ``first_stage`` and ``max_queries``) would fit on: the split's
    judged queries in ``queries.jsonl``'s order, the half ``:odd``/``:even`` names, the first
    ``max_queries``, then those a first stage's file ranks. Fewer than :data:`MIN_QUERIES`
    and tune refuses. None when it cannot be told here (files unreadable)."""
    try:
        name, selector = parse_split(split)
        qrels = read_splits(split_files(folder, name))[0]
        asked = asked_queries(folder)
        ids = [q for q in asked if q in qrels] if asked is not None else list(qrels)
        if selector is not None:
            ids = ids[0 if selector == "odd" else 1 :: 2]  # position 1 is odd
        ids = ids[:max_queries] if max_queries else ids
        if first_stage not in (None, "auto", "bm25", "run", IN_MEMORY):
            ranked = ranked_queries(first_stage)
            ids = [q for q in ids if q in ranked]
    except (OSError, ValueError):
        return None
    return len(ids)


def too_few_to_refit(
    n: int,
    split: str,
    first_stage: Any,
    max_queries: int | None,
    halves: tuple[str, str] | None = None,
    why: str | None = None,
) -> str:
    """What a refit needs, where the one :func:`~.notes.refit_call` would write refuses: ``n``
    judged queries with candidates to fit on in ``split``, fewer than tune takes. ``halves``
    (fit, check) and ``why``: the halves of the evaluated split tune would take instead of
    its training split, and the reason (``"the folder has no qrels/train.tsv"``), said so
    that a split the user never named is explained."""
    which = f"the {split} split's judged queries"
    if max_queries:
        which = f"the first {max_queries} of {which}"
    if first_stage not in (None, "auto", "bm25", "run"):
        which += f" that {first_stage} ranks"
    tune = said_for("rerankit.training.tune(calibrate=True)", "rerankit tune --calibrate")
    reason = ""
    if halves and why:
        base = halves[0].partition(":")[0]
        reason = (
            f" ({why}, so tune fits on half of the {base} split's queries, {halves[0]}, "
            f"and checks the refit on the other half, {halves[1]})"
        )
    return (
        f"none can be refit here yet: {tune} fits on at least {MIN_QUERIES} judged queries "
        f"with candidates, and {which} are {n}{reason}; judge more queries (or give a first "
        "stage that ranks more of them), then refit"
    )
