"""Fine-tuning a model on judgments: :func:`fine_tune` trains the embedding model, or a
cross-encoder, on a BEIR-layout folder's training split (hard negatives from BM25), keeps a
share of the queries out to check the result against BM25 and the model it started from,
and with ``cross_fit`` trains fold models that check the training on every judged query
(for an embedding model ``tune`` then reads them too, to measure a pipeline that reads the
model on every training query). ``rerankit train`` is this function with its arguments
parsed and its result printed."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from .._words import counted
from ..backends.bundled import resolve_source
from ..backends.detect import model_kind
from ..errors import ConfigError, InputError, keyword_flag
from ..eval.data import read_split
from ..eval.first_stage import first_stage
from ..eval.metrics import ranked_ndcg
from ..scorers.cross_encoder import CrossEncoderScorer
from ..scorers.embedding import EmbeddingScorer
from . import crossval, label_candidates
from .cross_encoder import cross_encoder_rows, fine_tune_cross_encoder
from .embedding import embedding_pairs, fine_tune_embedding
from .next_step import against_default, as_path, check_train_split
from .reporting import Reporter, quiet
from .trainer import CROSS_FIT, Progress, queries_trained_on, record_trained_on, spoken_time

__all__ = [
    "CHECK_DEPTH",
    "DEFAULT_HELD_OUT",
    "DEFAULT_HELD_OUT_CAP",
    "MAX_HELD_OUT",
    "MIN_QUERIES_TO_HOLD_OUT",
    "FineTuneOptions",
    "FineTuneResult",
    "HeldOutCheck",
    "against_default",
    "check_on_held_out",
    "fine_tune",
    "held_out",
    "held_out_error",
]

#: at most how many first-stage candidates the held-out check reranks
CHECK_DEPTH = 20
#: the share of the training queries kept out when not told, and at most how many: the
#: check then costs little and a large collection keeps its queries to train on
DEFAULT_HELD_OUT, DEFAULT_HELD_OUT_CAP = 0.1, 200
#: the fewest judged training queries some are held out of: below it the one or two kept out
#: would say little about the model and cost a large share of what it learns from
MIN_QUERIES_TO_HOLD_OUT = 10
#: the largest share of the training queries ``held_out`` keeps out (half: the model must
#: still have most of them to learn from)
MAX_HELD_OUT = 0.5
WHAT = ("embedding", "cross_encoder")
#: what each kind of model is called in what training says
NAMES = {"embedding": "embedding model", "cross_encoder": "cross-encoder"}


def held_out(qids: list[str], share: float, cap: int | None = DEFAULT_HELD_OUT_CAP) -> list[str]:
    """The training queries kept out of training to check the result: ``share`` of them
    (at most ``cap`` and half, at least 1 when ``share`` > 0 and there are
    :data:`MIN_QUERIES_TO_HOLD_OUT` or more), by a hash of each id so the choice does not
    depend on the file's order."""
    if share <= 0 or len(qids) < MIN_QUERIES_TO_HOLD_OUT:
        return []
    count = max(1, round(share * len(qids)))
    if cap is not None:
        count = min(cap, count)
    return crossval.kfold(qids, 2)[0][:count]


def held_out_error(share: float | None = None) -> str:
    """What ``held_out=`` / ``--held-out`` says of a share out of range, after the option's
    name: :meth:`FineTuneOptions.check` puts :func:`~rerankit.errors.keyword_flag`'s, with
    the value, in front of it; the command line's check gives the ``share`` (``got ...``)
    and argparse the flag."""
    got = "" if share is None else f", got {share}"
    return (
        f"the share of the training queries kept out to check the model on is from 0 (no "
        f"check) to {MAX_HELD_OUT} (half){got}"
    )


def check_on_held_out(
    scorer: Any, data: Any, cands: dict[str, list[tuple[str, float]]], qids: list[str], k: int
) -> tuple[float, float]:
    """Mean nDCG@10 over the held-out ``qids`` of the first stage's top ``k`` as ranked,
    and as the trained ``scorer`` reranks it."""
    first, model = [], []
    for q in qids:
        ranked = cands.get(q, [])[:k]
        ids, judged = [d for d, _ in ranked], data.qrels.get(q, {})
        first.append(ranked_ndcg(ids, -np.arange(len(ids), dtype=float), judged))
        scores = scorer.score_texts(data.queries[q], [data.text(d) for d in ids]) if ids else []
        model.append(ranked_ndcg(ids, np.asarray(scores, dtype=float), judged))
    return float(np.mean(first)), float(np.mean(model))


@dataclass
class HeldOutCheck:
    """Mean nDCG@10 over ``queries`` the model never saw, each first stage's top
    :data:`CHECK_DEPTH`: as BM25 ranks them (``first_stage``), as the trained model reranks
    them (``model``) and, when known, as the model training started from does
    (``start``)."""

    queries: int
    first_stage: float
    model: float
    start: float | None = None

    @property
    def beats_first_stage(self) -> bool:
        return self.model > self.first_stage

    @property
    def beats_start(self) -> bool | None:
        return None if self.start is None else self.model > self.start


@dataclass
class FineTuneResult:
    """What :func:`fine_tune` did: the model folder ``out``, the training's ``steps``,
    ``seconds``, ``losses`` and whether it ``resumed`` from checkpoints; ``held_out_check``, the
    check on the queries kept out (None without any; ``held_out_skipped`` then says why when
    a share was asked for, or left to its default, and none could be kept out); with
    ``cross_fit``, the folds' check
    on every judged query (``cross_fit_check``, each query ranked by the fold model never
    trained on it), the fold folders and which folds an earlier run had trained."""

    what: str
    out: Path
    steps: int
    seconds: float
    losses: list[float]
    resumed: bool
    held_out_check: HeldOutCheck | None = None
    held_out_skipped: str | None = None
    cross_fit_check: HeldOutCheck | None = None
    folds: list[Path] = field(default_factory=list)
    folds_reused: list[int] = field(default_factory=list)


@dataclass
class FineTuneOptions:
    """What :func:`fine_tune` trains and how (each is ``rerankit train``'s option of the
    same name): ``what`` (``"embedding"``: a sentence-transformers model on (query,
    relevant, hard negative) triples; ``"cross_encoder"``, or ``"cross-encoder"``: (query,
    document, 1/0) pairs), the ``train_split`` (as :func:`~rerankit.training.tune` and
    ``--train-split`` name it; ``split``, its earlier name, still taken), the ``model`` to
    start from, at most ``max_pairs`` pairs, the ``epochs``, ``batch_size`` and step sizes
    (``learning_rate``; ``head_learning_rate`` for a cross-encoder's relevance head), the BM25 depth
    ``candidates`` hard negatives come from (:func:`fine_tune` also takes ``k``, its earlier
    name), the share of the judged queries ``held_out`` to check the result on (default
    0.1, at most 200; 0 with ``cross_fit``) and ``cross_fit=K`` fold models, each trained
    with one of K folds of the queries left out and checked on it."""

    what: str = "embedding"
    train_split: str = "train"
    model: str | None = "all-MiniLM-L6-v2"
    max_pairs: int | None = None
    epochs: float = 1.0
    batch_size: int = 16
    candidates: int = 100
    learning_rate: float | None = None
    head_learning_rate: float | None = None
    held_out: float | None = None
    cross_fit: int | None = None

    @property
    def split(self) -> str:
        """The earlier name of ``train_split``, still read (and taken: ``split=``)."""
        return self.train_split

    @classmethod
    def from_namespace(cls, namespace: Any) -> FineTuneOptions:
        """The options of the same names from an object that has them (parsed arguments)."""
        return cls(**{f.name: getattr(namespace, f.name) for f in fields(cls)})

    def __post_init__(self) -> None:
        self.what = self.what.replace("-", "_")  # cross-encoder and cross_encoder alike

    def check(self) -> None:
        """Refuse options that cannot work, before any work."""
        if self.what not in WHAT:
            raise InputError(f"what={self.what!r}: must be one of {', '.join(WHAT)}")
        if self.train_split == "test":
            raise InputError(
                f"{keyword_flag('train_split', self.train_split)}: train on a training split; "
                "the test split is for reporting"
            )
        if self.what == "embedding" and self.head_learning_rate is not None:
            raise InputError(
                f"{keyword_flag('head_learning_rate', self.head_learning_rate)}: is for "
                "cross-encoders; an embedding model has no head"
            )
        if self.held_out is not None and not 0 <= self.held_out <= MAX_HELD_OUT:
            raise InputError(f"{keyword_flag('held_out', self.held_out)}: {held_out_error()}")
        if not 0 < self.epochs < math.inf:
            raise InputError(
                f"{keyword_flag('epochs', self.epochs)}: must be above 0 (a pass over the pairs)"
            )
        for name, rate in (
            ("learning_rate", self.learning_rate),
            ("head_learning_rate", self.head_learning_rate),
        ):
            if rate is not None and not 0 <= rate < math.inf:
                raise InputError(f"{keyword_flag(name, rate)}: must be 0 (weights kept) or above")
        if self.cross_fit is not None and self.cross_fit < 2:
            raise InputError(f"{keyword_flag('cross_fit', self.cross_fit)}: needs at least 2 folds")

    def trainer_options(self) -> dict[str, Any]:
        """The step sizes given, as the fine-tuning functions take them."""
        steps = {"learning_rate": self.learning_rate, "head_learning_rate": self.head_learning_rate}
        return {k: v for k, v in steps.items() if v is not None}


@functools.wraps(FineTuneOptions.__init__)
def _init_taking_split(self: FineTuneOptions, *args: Any, **kwargs: Any) -> None:
    """``FineTuneOptions(split=...)``: ``split``, the earlier name of ``train_split``."""
    if "split" in kwargs:
        if "train_split" in kwargs:
            raise TypeError("give train_split= or its earlier name split=, not both")
        kwargs["train_split"] = kwargs.pop("split")
    _init_taking_split.__wrapped__(self, *args, **kwargs)  # type: ignore[attr-defined]


FineTuneOptions.__init__ = _init_taking_split  # type: ignore[method-assign]


@dataclass
class _Run:
    """One fine-tuning's fixed settings (the model folder aside)."""

    data: Any
    source: str | Path
    cands: Any
    opts: FineTuneOptions
    progress: Progress


def fine_tune(
    data: str | Path,
    out: str | Path,
    *,
    progress: Progress = False,
    reporter: Reporter | None = None,
    **options: Any,
) -> FineTuneResult:
    """Train a model on the judgments of the BEIR-layout folder ``data`` into ``out`` (see
    the module and :class:`FineTuneOptions` for ``options``), and check it on the queries
    kept out. ``progress``: True shows the trainer's progress bars, a callable hears a plain
    line now and then instead (:data:`~rerankit.training.trainer.Progress`); ``reporter``
    hears each step (the trainer's time estimate among them); nothing is printed."""
    if "k" in options:  # the earlier name of ``candidates``, still taken
        if "candidates" in options:
            raise TypeError("give candidates= or its earlier name k=, not both")
        options["candidates"] = options.pop("k")
    opts = FineTuneOptions(**options)
    opts.check()
    check_train_split(data, opts.train_split)
    report = quiet(reporter)
    what, cross_fit = opts.what, opts.cross_fit
    dataset = read_split(
        data, opts.train_split, note=lambda message: report.note(f"warning: {message}")
    )
    cands = first_stage(dataset, "bm25", opts.candidates)
    if said := label_candidates.negatives_mismatch(data, opts.candidates, cands):
        report.note(f"warning: {said}")
    judged = [q for q in dataset.qrels if q in dataset.queries]
    if cross_fit is not None and len(judged) < 2 * cross_fit:
        raise InputError(
            f"{keyword_flag('cross_fit', cross_fit)}: {len(judged)} judged queries are too few for "
            f"{cross_fit} folds of at least 2"
        )
    if opts.held_out is None and cross_fit:  # the folds check it: train on them all
        checked = []
    elif opts.held_out is None:  # the default share, capped; a share asked for is kept
        checked = held_out(judged, DEFAULT_HELD_OUT)
    else:
        checked = held_out(judged, opts.held_out, cap=None)
    skipped = None
    if not checked and not cross_fit and opts.held_out != 0:  # a share was due, none kept
        skipped = (
            f"no held-out check: {len(judged)} judged training queries are too few to keep "
            f"some out (it takes {MIN_QUERIES_TO_HOLD_OUT} or more), so the model trains on "
            "all of them and nothing here says whether it ranks better than BM25; judge more "
            f"queries, or measure it on queries it never saw with `rerankit eval --data "
            f"FOLDER --rerankers bm25,{as_path(out)}`"
        )
        report.note(f"warning: {skipped}")
    run = _Run(dataset, data, cands, opts, progress)
    summary = _train_without(run, set(checked), out, what, report)
    result = FineTuneResult(
        what, Path(out), summary["steps"], summary["seconds"], summary["losses"], summary["resumed"]
    )
    result.held_out_skipped = skipped
    losses = result.losses
    trend = f"; training loss {losses[0]:.3f} -> {losses[-1]:.3f}" if len(losses) > 1 else ""
    load_with, export = (
        ("CrossEncoderScorer", f"rerankit export {out} --kind cross-encoder --quantize int8")
        if what == "cross_encoder"
        else ("EmbeddingScorer", f"rerankit export {out} --quantize int8")
    )
    report.say(
        f"{counted(result.steps, 'step')} in {spoken_time(result.seconds)}"
        f"{' (resumed)' if result.resumed else ''}{trend}\nwrote {out}: load it with "
        f"{load_with}({str(out)!r}), or `{export}` (its checkpoints folder is for resuming "
        "this training: serving the model does not need it)"
    )
    if checked:
        result.held_out_check = _check(run, what, out, checked, report)
    if cross_fit:
        _cross_fit(run, judged, cross_fit, out, result, report)
    report.say(against_default(what, data, out, opts.candidates, opts.train_split))
    return result


def _check_depth(candidates: int) -> tuple[int, str]:
    """How many of BM25's ``candidates`` the check reranks (two models each), at most
    :data:`CHECK_DEPTH` to stay cheap, and that said (why, when less than ``candidates``)."""
    depth = min(candidates, CHECK_DEPTH)
    why = "" if depth == candidates else f", not all {candidates}: eval below uses them all"
    return depth, f"BM25's top {depth} reranked{why}"


def _scorer(what: str, folder: str | Path) -> Any:
    """The model trained into ``folder``, as a scorer."""
    if what == "cross_encoder":
        return CrossEncoderScorer(str(folder))
    return EmbeddingScorer(str(folder), cache=False)


def _check(
    run: _Run, what: str, out: str | Path, checked: list[str], report: Reporter
) -> HeldOutCheck:
    """The trained model, BM25 and the model training started from on the held-out
    queries, said."""
    depth, said = _check_depth(run.opts.candidates)
    first, mine = check_on_held_out(_scorer(what, out), run.data, run.cands, checked, depth)
    start, before, began = _starting_model(what, run.opts.model), "", None
    if start is not None:
        began = check_on_held_out(start, run.data, run.cands, checked, depth)[1]
        before = f", the model it started from {100 * began:.2f}"
    report.say(
        f"held-out check, {len(checked)} training queries it never saw ({said}), nDCG@10: "
        f"BM25 {100 * first:.2f}{before}, the trained {NAMES[what]} {100 * mine:.2f}"
    )
    if len(checked) < MIN_QUERIES_TO_HOLD_OUT:
        report.say(
            f"  on {len(checked)} queries this is a rough check: {keyword_flag('cross_fit', 3)} "
            "checks the "
            "training on every judged query"
        )
    return HeldOutCheck(len(checked), first, mine, began)


def _cross_fit(
    run: _Run, judged: list[str], k: int, out: str | Path, result: FineTuneResult, report: Reporter
) -> None:
    """K more models in ``out/cross-fit/fold-i``, each trained as the model was but with
    the i-th of K folds of the judged queries left out (a fold already trained on the same
    queries is kept), and the check of each on the fold it never saw: every judged query
    measured, where a held-out share measures few. For an embedding model ``tune`` then
    reads each training query with the fold model that never saw it; a cross-encoder's
    folds serve the check only."""
    what = result.what
    folds = crossval.kfold(judged, k)
    first, model = [], []
    depth, said = _check_depth(run.opts.candidates)
    for i, fold in enumerate(folds):
        folder = Path(out) / CROSS_FIT / f"fold-{i}"
        result.folds.append(folder)
        if queries_trained_on(folder, run.source) == set(run.data.qrels) - set(fold):
            report.say(f"fold {i + 1} of {len(folds)}: trained in an earlier run ({folder})")
            result.folds_reused.append(i)
        else:
            report.say(f"fold {i + 1} of {len(folds)}: {len(fold)} queries left out")
            _train_without(run, set(fold), folder, what, report)
        bm25, trained = check_on_held_out(_scorer(what, folder), run.data, run.cands, fold, depth)
        first += [bm25] * len(fold)
        model += [trained] * len(fold)
    result.cross_fit_check = HeldOutCheck(len(judged), float(np.mean(first)), float(np.mean(model)))
    use = (
        f"`rerankit tune --embedding-model {out}` reads them; serving the model does not need them"
        if what == "embedding"
        else "they served this check only (delete them when done; serving the model does "
        "not need them)"
    )
    report.say(
        f"cross-fitted check, all {len(judged)} judged training queries, each ranked by the "
        f"fold model never trained on it ({said}), nDCG@10: BM25 "
        f"{100 * np.mean(first):.2f}, the fold models {100 * np.mean(model):.2f}\nwrote "
        f"{len(folds)} fold models in {Path(out) / CROSS_FIT}: {use}"
    )


def _train_without(
    run: _Run, left_out: set[str], out: str | Path, what: str, report: Reporter
) -> dict[str, Any]:
    """Fine-tune ``what`` on the rows built from the judgments of the run's queries but
    ``left_out``, into ``out``, and record the queries it was trained on; returns the
    training's summary."""
    pairs, train = (
        (cross_encoder_rows, fine_tune_cross_encoder)
        if what == "cross_encoder"
        else (embedding_pairs, fine_tune_embedding)
    )
    training = dataclasses.replace(
        run.data, qrels={q: j for q, j in run.data.qrels.items() if q not in left_out}
    )
    summary = train(
        pairs(training, run.cands, max_pairs=run.opts.max_pairs),
        out,
        model=run.opts.model,
        epochs=run.opts.epochs,
        batch_size=run.opts.batch_size,
        progress=run.progress,
        log=report.say,
        **run.opts.trainer_options(),
    )
    record_trained_on(out, run.source, run.opts.train_split, list(training.qrels))
    return summary


def _starting_model(what: str, model: str | None) -> Any:
    """The model training started from, to show in the held-out check what training
    changed; None for a cross-encoder trained from an embedding model (the bundled MiniLM
    by default), whose relevance head started random."""
    if what == "cross_encoder":
        if model is None:
            return None
        source = resolve_source(model)
        try:
            kind = model_kind(source)[0]
        except ConfigError:
            kind = None
        return CrossEncoderScorer(source) if kind == "cross_encoder" else None
    return EmbeddingScorer(*(() if model is None else (model,)))
