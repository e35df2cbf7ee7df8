"""What ``rerankit tune`` checks before the work, how it reads a cross-fitted embedding model
and how it writes its pipeline file."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..config import to_toml
from ..errors import InputError
from ..eval.label import LABEL_REPORT
from ..scorers.embedding import EmbeddingScorer
from ..training.crossval import ADOPT_MARGIN
from ..training.fusion_search import DEFAULT_HYBRID, pipeline_spec
from ..training.trainer import cross_fit_models, queries_trained_on

__all__ = [
    "adoption_margin",
    "check_out",
    "check_train_split",
    "cross_fit_routes",
    "default_pipeline",
    "judged_only",
    "labelled",
    "per_fold",
    "pick_default",
    "unseen_queries",
    "write_pipeline",
]


def labelled(data: str | Path) -> bool:
    """Whether ``data`` is a folder ``rerankit label`` wrote (its labels come from a judge)."""
    return (Path(data) / LABEL_REPORT).is_file()


def adoption_margin(args: argparse.Namespace) -> float:
    """How many times the noise a learned pipeline must beat the default by: ``--adopt-margin``,
    else :data:`~rerankit.training.crossval.ADOPT_MARGIN`, whoever made the labels."""
    return ADOPT_MARGIN if args.adopt_margin is None else args.adopt_margin


def judged_only(args: argparse.Namespace) -> bool:
    """Whether learning to rank leaves unjudged candidates out (``--unjudged``)."""
    if args.unjudged != "auto":
        return args.unjudged == "skip"
    judged = labelled(args.data)
    if judged:
        print(
            f"{args.data} was labelled by `rerankit label`: training and cross-validating on "
            "the judged candidates only (a candidate the judge did not see is not taken as "
            "non-relevant; --unjudged negative to change)"
        )
    return judged


def unseen_queries(args: argparse.Namespace, qids: list[str]) -> set[str] | None:
    """The training queries ``--embedding-model`` was not trained on, when it was trained on
    the judgments of some of them (said: a pipeline that reads it looks better on those
    than it is, so the default is chosen and the verdict made on the others); None when it
    was trained on none of them. Refused when it was trained on every one."""
    seen = queries_trained_on(args.embedding_model, args.data) & set(qids)
    if not seen:
        return None
    unseen = set(qids) - seen
    if not unseen:
        raise InputError(
            f"--embedding-model {args.embedding_model} was trained on the judgments of all "
            f"{len(qids)} training queries, so nothing that reads it can be measured on them; "
            "fine-tune it with some held out (rerankit train embedding --held-out 0.2), or "
            "tune on other queries"
        )
    print(
        f"{args.embedding_model} was trained on the judgments of {len(seen)} of these "
        f"{len(qids)} training queries: a pipeline that reads it looks better on them than it "
        f"is, so the default is chosen and the verdict made on the {len(unseen)} it never saw"
    )
    return unseen


def cross_fit_routes(args: argparse.Namespace, qids: Iterable[str]) -> dict[str, str] | None:
    """For each training query, the fold model of ``--embedding-model`` that was not trained
    on it, when ``rerankit train embedding --cross-fit`` wrote fold models for this
    collection and every query has one (said: the features then read a model that never saw
    the query, so the verdict is made on all of them); None otherwise."""
    folds = cross_fit_models(args.embedding_model, args.data)
    if not folds:
        return None
    qids = list(qids)
    routes = {q: next((path for path, seen in folds if q not in seen), "") for q in qids}
    missing = [q for q, path in routes.items() if not path]
    if missing:
        print(
            f"{args.embedding_model}: every one of its {len(folds)} fold models was trained on "
            f"{len(missing)} of these queries (e.g. {missing[0]!r}), so its cross-fitting is "
            "not used (train it again with --cross-fit on this split)"
        )
        return None
    print(
        f"{args.embedding_model} was cross-fitted ({len(folds)} fold models): each of the "
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


def pick_default(
    args: argparse.Namespace,
    hybrid: dict[str, float],
    fused: dict[str, float] | None,
    among: set[str] | None = None,
) -> tuple[str, dict[str, float]]:
    """The default a learned pipeline must beat and ``tune`` writes when it does not, with
    its nDCG@10 per training query: the ``hybrid`` (``hybrid``'s values), or with
    ``--embedding-model`` / ``--embedding-max-length`` the better on these queries of the
    ``hybrid`` and its min-max fusion over that embedding (``fused``), so that an embedding
    model weaker than the bundled one never lowers the bar. Returns ``"hybrid"`` or
    ``"fusion"``, and that default's values. ``among``: compare on these queries only
    (:func:`unseen_queries`)."""
    if fused is None:
        return "hybrid", hybrid
    qids = [q for q in hybrid if among is None or q in among]
    mean_hybrid = statistics.fmean(hybrid[q] for q in qids)
    mean_fused = statistics.fmean(fused[q] for q in qids)
    which = "hybrid" if mean_hybrid >= mean_fused else "fusion"
    model = args.embedding_model or f"MiniLM at {args.embedding_max_length} word pieces"
    chosen = "the `hybrid`" if which == "hybrid" else f"the fusion over {model}"
    weights = DEFAULT_HYBRID["weights"]
    print(
        f"the default to beat: {chosen}, the better on these queries (nDCG@10 x 100: "
        f"`hybrid` {100 * mean_hybrid:.2f}, {weights['first_stage']:g} first stage + "
        f"{weights['embedding']:g} {model} {100 * mean_fused:.2f})"
    )
    return which, hybrid if which == "hybrid" else fused


def default_pipeline(
    args: argparse.Namespace, train: Any, verdict: Any, what: str, which: str
) -> tuple[dict[str, Any], str]:
    """The default pipeline (``which``: the ``hybrid``, or its ``"fusion"`` over
    ``--embedding-model``) to write when the learned one does not beat it, and the file's
    comment."""

    comment = (
        f"Written by `rerankit tune` on {train.name} {args.train_split}: the {what} did not "
        f"beat the default by more than {verdict.margin:g} x the noise ({verdict.describe()}), "
        "so this is the default pipeline; rerun with --keep-learned to write the learned one "
        "anyway."
    )
    if which == "fusion":
        spec = pipeline_spec(
            DEFAULT_HYBRID,
            name="hybrid",
            embedding_model=args.embedding_model,
            embedding_max_length=args.embedding_max_length,
        )
        return spec, comment
    return {"name": "hybrid", "stages": [{"reranker": "hybrid"}]}, comment


def write_pipeline(args: argparse.Namespace, default: str, spec: Any, comment: str) -> Path:
    """A pipeline file at ``--out`` (or ``default``), announced."""

    out = Path(args.out or default)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_toml(spec, comment), encoding="utf-8")
    print(f"\nwrote {out}")
    return out


def check_out(out: str | None) -> None:
    """Refuse an ``--out`` that could not be written or read back, before the work."""
    if out is None:
        return
    path = Path(out)
    if path.is_dir():
        raise InputError(
            f"--out {out}: is a folder; name the pipeline file, e.g. {path / 'tuned.toml'}"
        )
    if path.suffix.lower() != ".toml":
        raise InputError(
            f"--out {out}: tune writes a TOML pipeline file; give a name ending in .toml "
            f"(e.g. {path.with_suffix('.toml')})"
        )


def check_train_split(data: Path, split: str) -> None:
    """A missing training split, with the halves of an existing one as the way out."""
    name = split.partition(":")[0]
    if not data.is_dir() or (data / "qrels" / f"{name}.tsv").is_file():
        return  # load_beir says what is wrong with a folder that is not one
    found = sorted(p.stem for p in (data / "qrels").glob("*.tsv"))
    if len(found) == 1:
        raise InputError(
            f"{data}: no qrels/{name}.tsv to tune on (splits found: {found[0]}); with one "
            f"judged split, tune on half of its queries and report on the other: "
            f"--train-split {found[0]}:odd --test-split {found[0]}:even"
        )
    if found:
        raise InputError(
            f"{data}: no qrels/{name}.tsv to tune on (splits found: {', '.join(found)}); "
            "name the one to tune on with --train-split and the one to report on with "
            "--test-split"
        )
