"""How :func:`~rerankit.training.tune` decides: the default a learned pipeline must beat
(measured on the same training queries), the nested cross-validation of the learned
options against it with its verdict and learning curve, the queries and fold models an
embedding model fine-tuned on these judgments allows to measure on, and the pipeline file
written (the learned one only when it beats the default by more than the margin times the
noise)."""

from __future__ import annotations

import logging
import statistics
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..api import load
from ..errors import InputError, keyword_flag
from ..eval.compare import clear_note, queries_to_clear
from ..eval.metrics import ranked_ndcg
from ..eval.runner import run_pipeline
from ..normalize import unit_scale
from ..scorers.embedding import EmbeddingScorer
from ..spec_toml import to_toml  # unchecked: its paths are read beside the file it writes
from . import crossval
from .fine_tuning import MIN_QUERIES_TO_HOLD_OUT
from .fusion_search import DEFAULT_HYBRID, as_option, pipeline_spec
from .labelling import LABEL_REPORT
from .reporting import Reporter, quiet
from .trainer import cross_fit_models, queries_trained_on

logger = logging.getLogger(__name__)

__all__ = [
    "Comparison",
    "adoption_margin",
    "cross_fit_routes",
    "cross_validated",
    "curve_trend",
    "default_hybrid_scores",
    "default_ndcg",
    "default_pipeline",
    "judged_only",
    "labelled",
    "other_embedding",
    "per_fold",
    "pick_default",
    "unseen_queries",
    "write_pipeline",
    "written_name",
]


def labelled(data: str | Path) -> bool:
    """Whether ``data`` is a folder ``rerankit label`` wrote (its labels come from a judge)."""
    return (Path(data) / LABEL_REPORT).is_file()


def adoption_margin(opts: Any) -> float:
    """How many times the noise a learned pipeline must beat the default by: the options'
    ``adopt_margin``, else :data:`~rerankit.training.crossval.ADOPT_MARGIN`, whoever made
    the labels."""
    return crossval.ADOPT_MARGIN if opts.adopt_margin is None else opts.adopt_margin


def judged_only(opts: Any, report: Reporter | None = None) -> bool:
    """Whether learning to rank leaves unjudged candidates out (``unjudged``: ``skip``, or
    ``auto`` for a folder written by ``rerankit label``)."""
    if opts.unjudged != "auto":
        return opts.unjudged == "skip"
    judged = labelled(opts.data)
    if judged:
        quiet(report).say(
            f"{opts.data} was labelled by `rerankit label`: training and cross-validating on "
            "the judged candidates only (a candidate the judge did not see is not taken as "
            f"non-relevant; {keyword_flag('unjudged', 'negative')} to change)"
        )
    return judged


def unseen_queries(opts: Any, qids: list[str], report: Reporter | None = None) -> set[str] | None:
    """The training queries ``embedding_model`` was not trained on, when it was trained on
    the judgments of some of them (said: a pipeline that reads it looks better on those
    than it is, so the default is chosen and the verdict made on the others); None when it
    was trained on none of them. Refused when it was trained on every one."""
    seen = queries_trained_on(opts.embedding_model, opts.data) & set(qids)
    if not seen:
        return None
    unseen = set(qids) - seen
    if not unseen:
        raise InputError(
            f"{keyword_flag('embedding_model', opts.embedding_model)}: was trained on the "
            f"judgments of all {len(qids)} training queries, so nothing that reads it can be "
            "measured on them; fine-tune it with some held out "
            f"({keyword_flag('held_out', 0.2)}, from {MIN_QUERIES_TO_HOLD_OUT} judged queries "
            "up), or tune on other queries"
        )
    quiet(report).say(
        f"{opts.embedding_model} was trained on the judgments of {len(seen)} of these "
        f"{len(qids)} training queries: a pipeline that reads it looks better on them than it "
        f"is, so the default is chosen and the verdict made on the {len(unseen)} it never saw"
    )
    return unseen


def cross_fit_routes(
    opts: Any, qids: Iterable[str], report: Reporter | None = None
) -> dict[str, str] | None:
    """For each training query, the fold model of ``embedding_model`` that was not trained
    on it, when ``rerankit train embedding --cross-fit`` wrote fold models for this
    collection and every query has one (said: the features then read a model that never saw
    the query, so the verdict is made on all of them); None otherwise."""
    folds = cross_fit_models(opts.embedding_model, opts.data)
    if not folds:
        return None
    qids = list(qids)
    routes = {q: next((path for path, seen in folds if q not in seen), "") for q in qids}
    missing = [q for q, path in routes.items() if not path]
    if missing:
        quiet(report).say(
            f"{opts.embedding_model}: every one of its {len(folds)} fold models was trained on "
            f"{len(missing)} of these queries (e.g. {missing[0]!r}), so its cross-fitting is "
            f"not used (train it again with {keyword_flag('cross_fit')} on this split)"
        )
        return None
    quiet(report).say(
        f"{opts.embedding_model} was cross-fitted ({len(folds)} fold models): each of the "
        f"{len(qids)} training queries is read by the fold model never trained on it, so the "
        "learned pipeline is fitted, the default chosen and the verdict made on all of them "
        "(the written pipeline reads the model trained on every query)"
    )
    return routes


def per_fold(
    compute: Callable[[dict[str, Any], Any], dict[str, Any]],
    cands: dict[str, Any],
    routes: dict[str, str] | None,
    whole: Any,
    max_length: int | None = None,
) -> dict[str, Any]:
    """``compute(candidates, embedding)`` per query: with the embedding scorer ``whole`` for
    every query when ``routes`` is None, else for each fold's queries with that fold model's
    scorer (:func:`cross_fit_routes`; ``max_length`` as ``whole``'s), merged in the order
    of ``cands``."""
    if routes is None:
        return compute(cands, whole)
    merged: dict[str, Any] = {}
    for path in sorted(set(routes.values())):
        fold = {q: c for q, c in cands.items() if routes.get(q) == path}
        merged.update(compute(fold, EmbeddingScorer(path, max_length=max_length)))
    return {q: merged[q] for q in cands if q in merged}


def other_embedding(opts: Any) -> bool:
    """Whether ``embedding_model`` or ``embedding_max_length`` asks for another embedding
    than the bundled MiniLM as the hybrid reads it: then the hybrid's min-max fusion over
    that embedding (:data:`~rerankit.training.fusion_search.DEFAULT_HYBRID`) is a
    candidate default too (:func:`pick_default`)."""
    return bool(opts.embedding_model or opts.embedding_max_length)


def pick_default(
    opts: Any,
    hybrid: dict[str, float],
    fused: dict[str, float] | None,
    among: set[str] | None = None,
    report: Reporter | None = None,
) -> tuple[str, dict[str, float]]:
    """The default a learned pipeline must beat and ``tune`` writes when it does not, with
    its nDCG@10 per training query: the ``hybrid`` (``hybrid``'s values), or with another
    embedding (:func:`other_embedding`) the better on these queries of the ``hybrid`` and
    its min-max fusion over that embedding (``fused``), so that an embedding model weaker
    than the bundled one never lowers the bar. Returns ``"hybrid"`` or ``"fusion"``, and
    that default's values. ``among``: compare on these queries only
    (:func:`unseen_queries`)."""
    if fused is None:
        return "hybrid", hybrid
    qids = [q for q in hybrid if among is None or q in among]
    mean_hybrid = statistics.fmean(hybrid[q] for q in qids)
    mean_fused = statistics.fmean(fused[q] for q in qids)
    which = "hybrid" if mean_hybrid >= mean_fused else "fusion"
    model = opts.embedding_model or f"MiniLM at {opts.embedding_max_length} word pieces"
    chosen = "the `hybrid`" if which == "hybrid" else f"the fusion over {model}"
    weights = DEFAULT_HYBRID["weights"]
    quiet(report).say(
        f"the default to beat: {chosen}, the better on these queries (nDCG@10 x 100: "
        f"`hybrid` {100 * mean_hybrid:.2f}, {weights['first_stage']:g} first stage + "
        f"{weights['embedding']:g} {model} {100 * mean_fused:.2f})"
    )
    return which, hybrid if which == "hybrid" else fused


def default_hybrid_scores(
    data: Any, cands: Any, *, progress: Callable[[Any], Any] | None = None
) -> dict[str, np.ndarray]:
    """The default ``hybrid``'s scores of each query's candidates (in the candidates' order),
    given their first-stage scores: the default ``tune`` measures learned pipelines with.
    ``progress`` wraps the loop over queries."""
    run = run_pipeline("hybrid", load("hybrid"), data, cands, progress=progress)
    return {
        q: np.array([run.scores[q][d] for d, _ in ranked]) for q, ranked in cands.items() if ranked
    }


def default_ndcg(
    opts: Any, train: Any, cands: Any, table: Any, among: set[str] | None, report: Reporter
) -> tuple[str, dict[str, float]]:
    """Which default pipeline ``tune`` would write (chosen on the queries ``among`` when
    given), and each training query's nDCG@10 under it (``table``: the fusions' nDCG@10)."""
    fused = table[as_option(DEFAULT_HYBRID)]
    scores = default_hybrid_scores(train, cands, progress=report.progress("scoring the default"))
    hybrid = {
        q: ranked_ndcg([d for d, _ in cands[q]], scores[q], train.qrels.get(q, {})) for q in fused
    }
    return pick_default(opts, hybrid, fused if other_embedding(opts) else None, among, report)


@dataclass
class Comparison:
    """The learned options against the default: the nested cross-validation, its verdict,
    the learning curve (training queries per fit, cross-validated nDCG@10) and the best
    option described."""

    cross_validation: crossval.CrossValidation
    verdict: crossval.Verdict
    learning_curve: list[tuple[int, float]]
    chosen: str


def cross_validated(
    opts: Any,
    qids: list[str],
    fit: Any,
    default: dict[str, float],
    describe: Callable[[Hashable], str],
    report: Reporter,
    *,
    refit: bool = False,
    among: set[str] | None = None,
) -> Comparison:
    """Nested cross-validation of ``fit``'s options against the default's per-query
    nDCG@10: the options' table, the verdict (on the queries ``among`` when given) and a
    learning curve (of choosing among the options on fewer queries, or with ``refit`` of
    refitting the best option on them), each said as it is known."""

    say = report.say
    margin = adoption_margin(opts)
    report.note(f"tune: cross-validating the options on {len(qids)} training queries")
    cv = crossval.cross_validate(qids, fit, k=opts.folds)
    k = len(cv.chosen_by_fold)
    seen = (
        ""
        if among is None
        else f", {sum(q not in among for q in qids)} the embedding model trained on"
    )
    say(
        f"options by cross-validated nDCG@10 x 100 over {len(qids)} training queries{seen} "
        f"({k} folds; mean, spread of the fold means), best 5:"
    )
    for option in sorted(cv.options, key=lambda o: -cv.options[o])[:5]:
        spread = statistics.pstdev(cv.fold_means[option])
        say(f"  {100 * cv.options[option]:6.2f} ± {100 * spread:4.2f}  {describe(option)}")
    say(f"  {100 * statistics.fmean(default[q] for q in qids):6.2f}         the default")
    chosen = [f"{i}: {describe(o)}" for i, o in enumerate(cv.chosen_by_fold, start=1)]
    say(
        "\n(the top of this list is the best of many tries on the same queries, so it "
        "flatters; the verdict below measures each fold with the option the other folds "
        "chose, as a new query meets it)\n"
        "chosen by the other folds, for each fold: " + "; ".join(chosen)
    )
    verdict = crossval.verdict(cv, default, margin=margin, among=among)
    say(verdict.describe())
    report.note("tune: the learning curve (fitting on fewer training queries)")
    points = crossval.learning_curve(cv, fit, cv.best if refit else None, among=among)
    say(
        "\nlearning curve: cross-validated nDCG@10 x 100 by training queries per fit "
        f"(the default: {100 * verdict.default:.2f}"
        f"{'' if among is None else f'; on the {len(among)} the verdict is made on'}):"
    )
    for n, value in points:
        say(f"  {n:6d}  {100 * value:6.2f}")
    trend = curve_trend(points, verdict.noise)
    if trend:
        say(f"  {trend}")
    say()
    required = round(verdict.required, 2)  # the margin, widened for few queries
    times = "" if required == 1 else f"{required:g} x "
    if verdict.adopt:
        say(f"adopted: {describe(cv.best)} beats the default by more than {times}the noise")
    else:
        say(
            f"not adopted: the learned pipeline does not beat the default by more than {times}"
            "the noise"
            + (
                (
                    f" ({keyword_flag('keep_learned', True)} with "
                    f"{keyword_flag('calibrate', True)}: the default's order kept, only its "
                    "probabilities refitted)"
                    if getattr(opts, "calibrate", False)
                    else f" ({keyword_flag('keep_learned', True)}: written anyway)"
                )
                if opts.keep_learned
                else ""
            )
        )
    needed = queries_to_clear(verdict.gain, verdict.noise, verdict.queries, verdict.margin)
    if needed is not None:
        say(f"({clear_note(verdict.gain, needed, verdict.margin)})")
    return Comparison(cv, verdict, points, describe(cv.best))


def curve_trend(points: list[tuple[int, float]], noise: float) -> str | None:
    """What a learning curve's end says (None for a curve of one point): still rising when
    its last point is above the best earlier one by more than half the ``noise`` (the
    verdict's), else not rising beyond the noise. The best earlier point, not the one just
    before, so that a zig-zag (59.2, 60.4, 59.3, 60.4) does not read as a rise. A noise of
    zero (the verdict a tie, or the same gain, on every query) sets no bar: any rise counts,
    and the line says so instead of quoting a bar of 0.00."""
    if len(points) < 2:
        return None
    best = max(value for _, value in points[:-1])
    rise, bar = 100 * (points[-1][1] - best), 100 * noise / 2
    if round(bar, 2) == 0:
        said = "the verdict's noise is 0.00, so any rise counts"
        if rise > bar:
            return (
                f"still rising at the end ({rise:+.2f} over the best earlier point; {said}): "
                "more judged queries would likely help"
            )
        return (
            f"not rising at the end ({rise:+.2f} over the best earlier point; {said}): more "
            "judgments of the same kind are unlikely to raise it"
        )
    if rise > bar:
        return (
            f"still rising at the end ({rise:+.2f} over the best earlier point, more than half "
            f"the noise, {bar:.2f}): more judged queries would likely help"
        )
    return (
        f"not rising beyond the noise at the end ({rise:+.2f} over the best earlier point; "
        f"rising takes more than half the noise, {bar:.2f}): more judgments of the same kind "
        "are unlikely to raise it"
    )


def default_pipeline(
    opts: Any, train: Any, verdict: Any, what: str, which: str, name: str
) -> tuple[dict[str, Any], str]:
    """The default pipeline (``which``: the ``hybrid``, or its ``"fusion"`` over
    ``embedding_model``), named ``name``, to write when the learned one does not beat it,
    and the file's comment (naming the command as the learned file's would: ``rerankit tune
    --method ltr`` for the learned ranker)."""
    command = "rerankit tune --method ltr" if opts.method == "ltr" else "rerankit tune"
    comment = (
        f"Written by `{command}` on {train.name} {opts.train_split}: the {what} did not "
        f"beat the default by more than {round(verdict.required, 2):g} x the noise "
        f"({verdict.describe()}), "
        "so this is the default pipeline; rerun with --keep-learned to write the learned one "
        "anyway."
    )
    if which == "fusion":
        spec = pipeline_spec(
            DEFAULT_HYBRID,
            name=name,
            embedding_model=opts.embedding_model,
            embedding_max_length=opts.embedding_max_length,
        )
        return spec, comment
    return {"name": name, "stages": [{"reranker": "hybrid"}]}, comment


def written_name(opts: Any, default: str) -> str:
    """The ``name`` a pipeline file tune writes declares: the file's stem (``--out
    tuned.toml``: ``tuned``; without ``out``, ``default``, which is the stem of the file it
    then writes), whatever the verdict, so that ``check``, ``serve``, ``eval`` and tune's own
    report call the file by one name."""
    return Path(opts.out).stem if opts.out else default


def write_pipeline(
    opts: Any, default: str, spec: Any, comment: str, report: Reporter | None = None
) -> Path:
    """A pipeline file at the options' ``out`` (or ``default``), announced."""

    out = Path(opts.out or default)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_toml(spec, comment), encoding="utf-8")
    quiet(report).say(f"\nwrote {out}")
    if spec.get("stages") == [{"reranker": "hybrid"}]:  # the default itself
        quiet(report).say(
            f"(the default `hybrid`, named {spec['name']!r} after its file: `rerankit serve "
            f"--reranker {out}` answers requests naming {spec['name']!r} or `hybrid` with it)"
        )
    else:
        quiet(report).say(
            f"(rerank with it: `rerankit rank -r {out}`, `rerankit serve --reranker {out}`, or "
            f"rerankit.load({str(out)!r}) in Python)"
        )
        scale_note = _scale_note(out)
        if scale_note:
            quiet(report).say(scale_note)
    return out


def _scale_note(path: Path) -> str | None:
    """What changes for a caller when the pipeline file ``path`` scores on another scale
    than the default ``hybrid``'s probabilities (a learned fusion's are relative): a served
    ``relevance_score`` threshold no longer means a chance of relevance. None when the
    scales agree, or the file does not build here."""
    try:
        scale = str(load(path).score_scale)
    except Exception as exc:  # a pipeline that needs what is not installed here
        logger.debug("the written pipeline does not build here: %s", exc)
        return None
    if scale == "probability":
        return None
    served = unit_scale(scale)
    how = " (min-max per request: the best document scores 1.0)" if served == "relative" else ""
    return (
        f"(its scores are {scale}, not probabilities as the default `hybrid`'s: `rerankit "
        f"serve` answers its relevance_score as {served}{how}, header `x-rerankit-scores: "
        f"{served}`, so a filter such as `relevance_score > 0.5` no longer keeps the documents "
        "more likely relevant than not; where a threshold decides, keep the default (or its "
        'refit by tune\'s `calibrate`): docs/learning.md, "Scores over HTTP")'
    )
