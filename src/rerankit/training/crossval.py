"""Choosing settings by k-fold cross-validation over queries, and the honest comparison
with a default that was never fitted.

Every learning path of ``rerankit tune`` is a set of *options* (fusion weights, a
calibration weight, LightGBM settings and a number of trees, a blend with the default)
that a training set turns into rankings. :func:`cross_validate` splits the training
queries into ``k`` folds (:func:`kfold`, by a hash of each query id, so the same ids give
the same folds in any order) and measures, for each fold, the option that the *other*
folds choose (an inner cross-validation over them: nested, so the choice of option is part
of what is measured and its estimate is not flattered by the choice), on the fold's own
queries. :func:`verdict` compares the result with the default on the same queries, per
query, and adopts the learned pipeline only when it beats the default by more than the
noise of that comparison: the larger of two standard errors of the mean gain, one from the
per-query gains and one from the folds' gains corrected for cross-validation (below),
times a margin (:data:`ADOPT_MARGIN`).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import statistics
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import keyword_flag
from ..eval.metrics import paired_standard_error
from ..eval.refit_check import ADOPT_MARGIN, MIN_QUERIES, few_queries_margin, folds_for, kfold

__all__ = [
    "ADOPT_MARGIN",
    "MIN_QUERIES",
    "CrossValidation",
    "Verdict",
    "cross_validate",
    "fold_standard_error",
    "kfold",
    "learning_curve",
    "verdict",
]


#: what a fitted option gives: a query id -> that query's nDCG@10 under the option
Evaluator = Callable[[str], float]
#: training query ids -> each option's evaluator, fitted on those queries only (a ValueError
#: when they are too few to fit on)
Fit = Callable[[Sequence[str]], Mapping[Hashable, Evaluator]]


@dataclass
class CrossValidation:
    """What :func:`cross_validate` measured.

    ``per_query``: each training query's nDCG@10 under the option its outer fold's
    training part chose (the honest estimate); ``chosen_by_fold``: those options;
    ``options``: each option's plain cross-validated mean nDCG@10 (every fold, fitted on the
    others), which :attr:`best` maximises: the option to fit on all training queries;
    ``fold_of``: query id -> fold number.
    """

    per_query: dict[str, float]
    chosen_by_fold: list[Hashable]
    options: dict[Hashable, float]
    fold_of: dict[str, int]
    fold_means: dict[Hashable, list[float]] = field(default_factory=dict)

    @property
    def best(self) -> Hashable:
        return max(self.options, key=lambda o: self.options[o])

    @property
    def mean(self) -> float:
        return statistics.fmean(self.per_query.values())

    def by_fold(self, per_query: Mapping[str, float]) -> list[float]:
        """The mean of ``per_query`` over each fold's queries (folds with none of them left
        out)."""
        folds = sorted({self.fold_of[q] for q in per_query})
        return [
            statistics.fmean(v for q, v in per_query.items() if self.fold_of[q] == f) for f in folds
        ]


def _mean_over(values: Mapping[str, float], qids: Sequence[str]) -> float:
    return statistics.fmean(values[q] for q in qids)


def cross_validate(qids: Sequence[str], fit: Fit, k: int = 5) -> CrossValidation:
    """Nested ``k``-fold cross-validation of the options ``fit`` makes (see the module doc).

    ``fit`` is called once per fold and once per pair of folds, on the queries outside
    them; an option whose fitting does not depend on the training queries (a fixed fusion)
    costs only its evaluation."""
    qids = list(dict.fromkeys(qids))
    k = folds_for(len(qids), k)
    folds = kfold(qids, k)
    fold_of = {q: f for f, members in enumerate(folds) for q in members}
    outside = [[q for q in qids if fold_of[q] != f] for f in range(k)]
    # model fitted without fold f, evaluated on fold f: every option
    outer = [fit(outside[f]) for f in range(k)]
    per_option: dict[Hashable, dict[str, float]] = {}
    for f, models in enumerate(outer):
        for option, evaluate in models.items():
            values = per_option.setdefault(option, {})
            for q in folds[f]:
                values[q] = evaluate(q)
    # without folds f and g, evaluated on g (for outer fold f) and on f (for outer g)
    inner: dict[tuple[int, int], dict[Hashable, float]] = {}
    for f, g in itertools.combinations(range(k), 2):
        models = fit([q for q in qids if fold_of[q] not in (f, g)])
        for a, b in ((f, g), (g, f)):
            inner[a, b] = {o: sum(e(q) for q in folds[b]) for o, e in models.items()}
    chosen, per_query = [], {}
    for f in range(k):
        others = [g for g in range(k) if g != f]
        total = sum(len(folds[g]) for g in others)
        score = {o: sum(inner[f, g][o] for g in others) / total for o in outer[f]}
        best = max(score, key=lambda o: score[o])
        chosen.append(best)
        for q in folds[f]:
            per_query[q] = per_option[best][q]
    options = {o: statistics.fmean(v.values()) for o, v in per_option.items()}
    fold_means = {o: [_mean_over(v, folds[f]) for f in range(k)] for o, v in per_option.items()}
    return CrossValidation(per_query, chosen, options, fold_of, fold_means)


@dataclass
class Verdict:
    """The learned pipeline against the default on the same training queries, each scored
    by a model that never saw it: mean nDCG@10 of each, the mean per-query gain, its noise,
    the gain on each fold, and whether to adopt the learned pipeline (gain greater than
    ``margin`` times the noise).

    ``noise`` is the larger of ``query_noise`` (the standard error of the mean per-query
    gain) and ``fold_noise`` (the folds' gains' standard error with Nadeau and Bengio's
    correction for cross-validation: their variance times ``1/k + 1/(k-1)``). The queries
    of one fold share a fitted model, so their gains are not independent: a model that
    happens to fit well on one fold and badly on another shows up in the folds' gains, not
    in the per-query standard error; and the training sets of the folds overlap, which the
    correction accounts for."""

    learned: float
    default: float
    gain: float
    query_noise: float
    fold_noise: float
    fold_gains: list[float]
    queries: int
    margin: float = ADOPT_MARGIN
    #: the queries whose nDCG@10 under the option their fold chose differs from the
    #: default's (None: not counted); 0 is a tie on every query, which :meth:`describe` says
    differing: int | None = None

    @property
    def noise(self) -> float:
        return max(self.query_noise, self.fold_noise)

    @property
    def required(self) -> float:
        """How many times the noise the gain must exceed: ``margin``, widened when the
        noise comes from few queries (:func:`~rerankit.eval.refit_check.few_queries_margin`:
        Student's t; 2.83 for 5 queries, 2.09 for 30, 2.00 from a few hundred)."""
        return few_queries_margin(self.margin, self.queries)

    @property
    def adopt(self) -> bool:
        return self.gain > self.required * self.noise

    def describe(self) -> str:
        spread = statistics.pstdev(self.fold_gains) if len(self.fold_gains) > 1 else 0.0
        folds = ", ".join(f"{100 * g:+.2f}" for g in self.fold_gains)
        return (
            f"cross-validated nDCG@10 over {self.queries} training queries "
            f"({len(self.fold_gains)} folds): learned {100 * self.learned:.2f}, default "
            f"{100 * self.default:.2f}; gain {100 * self.gain:+.2f} (noise "
            f"{100 * self.noise:.2f}: standard error {100 * self.query_noise:.2f} over "
            f"queries, {100 * self.fold_noise:.2f} over folds; per fold {folds}; spread "
            f"{100 * spread:.2f})"
            + (
                f"; a tie on every query: each of the {self.queries} queries scored exactly "
                "the default's nDCG@10 under the option chosen for its fold, so there is no "
                "difference to weigh"
                if self.differing == 0
                else ""
            )
            + (
                ""
                if self.margin == 1
                else "; adopted only when the gain exceeds "
                + ("twice" if self.margin == 2 else f"{self.margin:g} times")
                + " the noise"
                + (
                    f" ({self.required:.2f} times with {self.queries} queries, whose noise "
                    "is itself uncertain: Student's t)"
                    if self.required > self.margin * 1.01
                    else ""
                )
            )
        )

    def as_written(self) -> str:
        """:meth:`describe` for the header of a learned pipeline's file: when the learned
        pipeline was not adopted (written only as ``keep_learned`` asks), it says so, so a
        file read on its own never passes for an adopted one."""
        said = self.describe()
        if self.adopt:
            return said
        return f"{said}. NOT ADOPTED: written anyway, as {keyword_flag('keep_learned', True)} asked"


def fold_standard_error(gains: Sequence[float]) -> float:
    """The standard error of the mean of ``k`` folds' gains with Nadeau and Bengio's
    correction for ``k``-fold cross-validation ("Inference for the generalization error",
    2003): the folds' sample variance times ``1/k + n_test/n_train = 1/k + 1/(k-1)``, where
    the plain ``1/k`` would treat the folds' overlapping training sets as independent."""
    k = len(gains)
    if k < 2:
        return math.inf
    return math.sqrt((1 / k + 1 / (k - 1)) * statistics.variance(gains))


def verdict(
    cv: CrossValidation,
    default: Mapping[str, float],
    *,
    margin: float = ADOPT_MARGIN,
    among: Collection[str] | None = None,
) -> Verdict:
    """Compare :func:`cross_validate`'s estimate with the default's per-query nDCG@10; the
    learned pipeline is adopted when its gain is above ``margin`` times the noise. ``among``:
    compare on these queries only (e.g. those a model the pipeline reads was not trained on);
    the folds' noise is then over the folds that have any of them."""
    if not margin > 0:
        raise ValueError(f"margin must be positive, got {margin}")
    qids = [q for q in cv.per_query if among is None or q in among]
    if not qids:
        raise ValueError("no cross-validated queries to compare on")
    diffs = {q: cv.per_query[q] - default[q] for q in qids}
    se = paired_standard_error(list(diffs.values()))
    query_noise = math.inf if se is None else se
    gains = cv.by_fold(diffs)
    return Verdict(
        learned=statistics.fmean(cv.per_query[q] for q in qids),
        default=statistics.fmean(default[q] for q in qids),
        gain=statistics.fmean(diffs.values()),
        query_noise=query_noise,
        fold_noise=fold_standard_error(gains),
        fold_gains=gains,
        queries=len(qids),
        margin=margin,
        differing=sum(1 for d in diffs.values() if d != 0),
    )


def learning_curve(
    cv: CrossValidation,
    fit: Fit,
    option: Hashable | None = None,
    shares: Sequence[float] = (0.25, 0.5, 0.75, 1.0),
    among: Collection[str] | None = None,
) -> list[tuple[int, float]]:
    """Cross-validated nDCG@10 when fitting on a growing share of each fold's training part
    (its first queries in the folds' hash order): ``(training queries per fit, mean nDCG@10
    over every query)`` per share (over the queries ``among``, when given, as
    :func:`verdict` compares on them), so a user sees whether more judgments would help.

    With ``option``, that option is refitted on each share (a trained model). Without, each
    share chooses among the options as the verdict does: by an inner cross-validation over
    the share's queries, each outer fold's queries among them scored by a fit on the rest
    (in-sample only when the share holds one fold's queries, or no fit without one of them
    works); so the whole training part is :func:`cross_validate`'s own choice, and the last
    row is the verdict's learned nDCG@10. (An in-sample choice would differ wherever the
    options are fitted on the queries that choose among them, as the calibrated hybrid's
    signal calibrations are: it favours the option that fits its own queries best.) A
    share whose fits would take as many queries per fit (rounded) as a larger share's adds
    no row: each size is shown once, fitted as the largest share of that size."""
    k = max(cv.fold_of.values()) + 1
    order = sorted(cv.fold_of, key=lambda q: hashlib.sha256(str(q).encode()).hexdigest())
    shown = [q for q in order if among is None or q in among] or order
    pools = [[q for q in order if cv.fold_of[q] != f] for f in range(k)]
    plans: dict[int, list[int]] = {}  # training queries per fit (rounded) -> the last share's
    for share in shares:  # shares of few queries can round to the same size: one row, the larger
        counts = [min(len(pool), max(2, round(share * len(pool)))) for pool in pools]
        plans[round(statistics.fmean(counts))] = counts
    out = []
    for size, counts in plans.items():
        values = {}
        for f, (pool, count) in enumerate(zip(pools, counts, strict=True)):
            used = pool[:count]
            held = [q for q in order if cv.fold_of[q] == f]
            if option is None and len(used) == len(pool):  # the verdict's fit and choice
                values.update((q, cv.per_query[q]) for q in held)
                continue
            models = fit(used)
            chosen = option if option is not None else _inner_choice(fit, used, cv, models)
            if chosen not in models:
                raise ValueError(f"the fit gave no option {chosen!r}")
            for q in held:
                values[q] = models[chosen](q)
        out.append((size, statistics.fmean(values[q] for q in shown)))
    return out


def _inner_choice(
    fit: Fit, used: Sequence[str], cv: CrossValidation, models: Mapping[Hashable, Evaluator]
) -> Hashable:
    """The option :func:`learning_curve` takes for a share of the training queries, chosen
    as :func:`cross_validate` chooses: the best mean over the share's queries, each outer
    fold's scored by a fit on the share's others (``models``: the fit on all of them, whose
    own queries score it when no such fit can be made)."""
    groups: dict[int, list[str]] = {}
    for q in used:
        groups.setdefault(cv.fold_of[q], []).append(q)
    totals: dict[Hashable, float] = {}
    scored = 0
    for g in sorted(groups) if len(groups) > 1 else ():
        try:
            inner = fit([q for q in used if cv.fold_of[q] != g])
        except ValueError:  # too few of the share's queries to fit on without fold g
            continue
        scored += len(groups[g])
        for o, evaluate in inner.items():
            totals[o] = totals.get(o, 0.0) + sum(evaluate(q) for q in groups[g])
    if not scored:
        totals = {o: sum(e(q) for q in used) for o, e in models.items()}
    return max(totals, key=lambda o: totals[o])
