"""Fitting a pipeline to your judgments: :func:`tune` chooses a fusion, refits the
calibrated hybrid or trains a LightGBM ranker on the training split by nested
cross-validation, writes it only when it beats the default by more than the margin times
the noise (else the default, with the reason) and reports it once on the test split, which
never informs the choice. ``rerankit tune`` is this function with its arguments parsed and
its account printed.

>>> from rerankit.training import tune
>>> result = tune("examples/scifact-mini", candidates=20, out="tuned.toml")  # doctest: +SKIP
>>> result.adopted, result.verdict.gain, result.spec              # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .._optional import require
from ..api import load
from ..cache import embedding_cache_in_use
from ..documents import PASS_FIRST_STAGE
from ..errors import InputError, keyword_flag, said_for
from ..eval.compare import format_against
from ..eval.data import Dataset, read_split
from ..eval.first_stage import (
    UncoveredQueries,
    candidate_depth,
    depth_label,
    first_stage,
    first_stage_label,
)
from ..eval.given import check_first_stage
from ..eval.latency import first_run_note, latency_note
from ..eval.metrics import parse_metrics
from ..eval.notes import refitted_probabilities
from ..eval.refit_check import MIN_QUERIES
from ..eval.runner import evaluate_runs, first_stage_run, format_table, run_pipeline
from ..scorers.embedding import EmbeddingScorer
from . import fusion_search
from .labelling import first_stage_mismatch
from .methods import Inputs, TuneResult, fit_calibrated, fit_fusion, fit_ltr
from .reporting import Reporter, quiet
from .selection import cross_fit_routes, unseen_queries

__all__ = ["TuneOptions", "TuneResult", "check_out", "check_train_split", "tune"]

METHODS = ("fusion", "ltr")
UNJUDGED = ("auto", "negative", "skip")


@dataclass
class TuneOptions:
    """What :func:`tune` reads and how it chooses (each is ``rerankit tune``'s option of
    the same name): the BEIR-layout folder ``data``, the split to choose on and the one to
    report on (``SPLIT:odd`` / ``SPLIT:even`` for half of one; ``test_data``: report on
    another folder's), the first stage (``"auto"``, ``"bm25"``, ``"run"``, a run or
    candidates file, or your retriever's candidates in memory: a mapping query id -> doc
    ids best first or ``(doc id, score)`` pairs, read for the training and the test split
    as :func:`~rerankit.eval.evaluate` reads it) and its depth ``candidates`` (:func:`tune` also
    takes ``k``, its earlier name), what to learn (``method`` ``"fusion"`` over
    ``strategies``, ``calibrate=True`` for the calibrated hybrid, or ``method="ltr"`` with
    ``seeds`` and ``unjudged``), the embedding model, the folds, the margin over the noise a
    learned pipeline needs (``adopt_margin``, default 2), ``keep_learned`` to write it
    anyway, ``out`` (the pipeline file) and ``max_queries``. ``metrics``: more metrics
    (``NAME@K``, as :func:`~rerankit.eval.evaluate` takes them) for the test split's
    report; the choice and its verdict stay on nDCG@10.
    ``embedding_cache``: where document vectors are kept across runs, as ``rerankit tune``
    keeps them (None: ``$RERANKIT_EMBEDDING_CACHE``, else the server ``$RERANKIT_CACHE_URL``
    names, else ``embeddings.sqlite`` in the rerankit cache directory; a path: that SQLite
    file; False: memory only, ``--no-embedding-cache``)."""

    data: str | Path
    train_split: str = "train"
    test_split: str = "test"
    test_data: str | Path | None = None
    first_stage: str | Mapping[str, Any] = "auto"
    candidates: int = 100
    strategies: str | tuple[str, ...] = "first_stage,bm25,embedding"
    out: str | Path | None = None
    embedding_model: str | None = None
    embedding_max_length: int | None = None
    method: str = "fusion"
    unjudged: str = "auto"
    seeds: int = 1
    folds: int = 5
    keep_learned: bool = False
    adopt_margin: float | None = None
    calibrate: bool = False
    max_queries: int | None = None
    embedding_cache: str | Path | bool | None = None
    metrics: str | Sequence[str] | None = None

    @property
    def strategy_list(self) -> list[str]:
        """``strategies`` as a list (a comma-separated string or a sequence; ``-``, ``_``
        and a space read alike, as in registered names: ``first-stage``)."""
        given = self.strategies.split(",") if isinstance(self.strategies, str) else self.strategies
        return ["_".join(s.replace("-", " ").replace("_", " ").split()) for s in given]

    @classmethod
    def from_namespace(cls, namespace: Any) -> TuneOptions:
        """The options of the same names from an object that has them (parsed arguments)."""
        return cls(**{f.name: getattr(namespace, f.name) for f in fields(cls)})

    def check(self) -> None:
        """Refuse options that cannot work, before any work."""
        check_first_stage(self.first_stage)
        unknown = sorted(set(self.strategy_list) - set(fusion_search.STRATEGIES))
        if unknown or len(self.strategy_list) < 2:
            raise ValueError(
                f"{keyword_flag('strategies', self.strategies)}: two or more of "
                f"{', '.join(fusion_search.STRATEGIES)}; unknown: {unknown}"
            )
        if self.train_split == self.test_split:
            raise ValueError(
                f"{keyword_flag('train_split', self.train_split)} and "
                f"{keyword_flag('test_split', self.test_split)} must differ: never tune on the "
                "split you report"
            )
        if self.folds < 3:
            raise ValueError(
                f"{keyword_flag('folds', self.folds)}: must be at least 3 (the cross-validation "
                "is nested)"
            )
        for name, value in (
            ("candidates", self.candidates),
            ("seeds", self.seeds),
            ("max_queries", self.max_queries),
        ):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{keyword_flag(name, value)}: must be a positive integer")
        if self.adopt_margin is not None and not 0 < self.adopt_margin < float("inf"):
            raise ValueError(
                f"{keyword_flag('adopt_margin', self.adopt_margin)}: must be a positive number"
            )
        if self.method not in METHODS:
            raise ValueError(
                f"{keyword_flag('method', self.method)}: must be one of {', '.join(METHODS)}"
            )
        if self.unjudged not in UNJUDGED:
            raise ValueError(
                f"{keyword_flag('unjudged', self.unjudged)}: must be one of {', '.join(UNJUDGED)}"
            )
        check_out(self.out)
        if self.metrics is not None:
            parse_metrics(self.metrics)
        self._check_one_way()

    def _check_one_way(self) -> None:
        """The options of one way of learning refused with another, as ``rerankit tune``
        refuses their flags: ``calibrate`` refits the calibrated hybrid (no ``method``, no
        ``strategies``), ``method="ltr"`` learns from every signal (no ``strategies``), and
        only ``method="ltr"`` reads ``seeds`` and ``unjudged`` (options left at their
        defaults are not counted as given)."""
        default = {f.name: f.default for f in fields(self)}
        given = {
            "method": self.method != default["method"],
            "strategies": self.strategy_list != TuneOptions(data=".").strategy_list,
            "seeds": self.seeds != default["seeds"],
            "unjudged": self.unjudged != default["unjudged"],
        }
        ltr = self.method == "ltr" and not self.calibrate
        rules = (
            (self.calibrate, ("method", "strategies"), "not used with calibrate=True, which "
             "refits the calibrated hybrid's weights instead of searching or training"),
            (ltr, ("strategies",), "not used with method='ltr', which learns from every signal"),
            (not ltr, ("seeds", "unjudged"), "only method='ltr' reads seeds and unjudged"),
        )  # fmt: skip
        said = [
            f"{', '.join(keyword_flag(n, getattr(self, n)) for n in names if given[n])}: {why}"
            for applies, names, why in rules
            if applies and any(given[n] for n in names)
        ]
        if said:
            raise ValueError("; ".join(said) + "; leave it out")


def tune(data: str | Path, *, reporter: Reporter | None = None, **options: Any) -> TuneResult:
    """Fit a pipeline to the judgments of the BEIR-layout folder ``data`` (see the module
    and :class:`TuneOptions` for ``options``); ``reporter`` hears the account as it goes
    (nothing is printed). Returns the :class:`TuneResult`; the pipeline file is written to
    ``out`` (default ``tuned-<collection>.toml``, ``calibrated-...`` or ``ltr-...`` in the
    working directory), and declares the name of its file's stem, whatever the verdict."""
    if "k" in options:  # the earlier name of ``candidates``, still taken
        if "candidates" in options:
            raise TypeError("give candidates= or its earlier name k=, not both")
        options["candidates"] = options.pop("k")
    for name, given in (("data", data), ("test_data", options.get("test_data"))):
        if isinstance(given, Dataset):
            split = "train" if name == "data" else "test"
            raise InputError(
                f"{name}: tune reads a BEIR-layout folder, not a Dataset in memory; write "
                f"it as one with .write('my-{split}', split={split!r}) and pass the folder "
                f"({name}='my-{split}')"
            )
    opts = TuneOptions(data=data, **options)
    report = quiet(reporter)
    opts.check()
    if opts.method == "ltr" and not opts.calibrate:  # before any work, not after features
        require("lightgbm", "learning to rank")
    with embedding_cache_in_use(opts.embedding_cache):
        return _tune(opts, report)


def _tune(opts: TuneOptions, report: Reporter) -> TuneResult:
    if opts.embedding_model and Path(opts.embedding_model).is_dir():  # usable from anywhere
        opts.embedding_model = str(Path(opts.embedding_model).resolve())
    model = (opts.embedding_model,) if opts.embedding_model else ()
    embedding = EmbeddingScorer(*model, max_length=opts.embedding_max_length)
    check_train_split(Path(opts.data), opts.train_split)
    warn = _warner(report)
    train = read_split(opts.data, opts.train_split, opts.max_queries, note=warn)
    test_data = Path(opts.test_data or opts.data)
    test = None
    if (test_data / "qrels" / f"{opts.test_split.split(':')[0]}.tsv").is_file():
        test = read_split(test_data, opts.test_split, opts.max_queries, note=warn)
    elif opts.test_data:
        raise InputError(f"{test_data}: no qrels/{opts.test_split}.tsv to report on")
    shared = sorted(set(train.queries) & set(test.queries)) if test is not None else []
    if shared:
        raise InputError(
            f"{keyword_flag('train_split', opts.train_split)} and "
            f"{keyword_flag('test_split', opts.test_split)} share {len(shared)} queries "
            f"(e.g. {shared[0]!r}): never tune on queries you report"
        )
    first_run = first_run_note([("tune", [embedding])])  # before the wait it warns of
    if first_run:
        report.note(first_run)
    cands = _candidates(opts, train, "train")
    _enough_to_learn(opts, cands)  # before the scoring, which takes minutes on a large folder
    test_cands = _candidates(opts, test, "test") if test is not None else {}
    mismatch = first_stage_mismatch(opts.data, opts.first_stage, opts.candidates, cands)
    if mismatch:
        warn(mismatch)
    routes = cross_fit_routes(opts, cands, report)  # fold models that never saw each query
    unseen = None if routes else unseen_queries(opts, list(train.qrels), report)
    fit = fit_calibrated if opts.calibrate else fit_ltr if opts.method == "ltr" else fit_fusion
    # each long step is named before it starts, so that no wait is silent (without bars)
    report.note(
        f"tune: scoring the candidates of the {opts.train_split} split's {len(cands)} queries"
    )
    result = fit(Inputs(opts, train, cands, embedding, routes, unseen, report))
    result.notes = train.notes + (test.notes if test is not None else [])
    if test is not None:
        result.test = _report_on_test(opts, test, test_cands, result.path, opts.calibrate, report)
        result.test_name, result.test_queries = test.name, len(test.queries)
    else:
        report.say(
            f"\nno {opts.test_split} split in {opts.data}: {result.path} is not reported on "
            f"held-out queries (to report on some, give {keyword_flag('test_data')} a folder "
            "with judged queries"
            + (
                f"; {keyword_flag('metrics', opts.metrics)} is for that report)"
                if opts.metrics
                else ")"
            )
        )
    if result.reads_first_stage:
        report.say(
            f"\n{result.path} reads the retriever's score: rerank with it per document "
            f"({PASS_FIRST_STAGE})"
        )
    result.lines = report.lines
    return result


def _warner(report: Reporter) -> Any:
    """How a collection's notes reach ``report``: as warnings."""
    return lambda message: report.note(f"warning: {message}")


def _enough_to_learn(opts: TuneOptions, cands: Mapping[str, Any]) -> None:
    """Refuse, before any scoring, a training split whose queries with candidates are fewer
    than cross-validation takes (it refused only after scoring them all)."""
    n = sum(1 for found in cands.values() if found)
    if n < MIN_QUERIES:
        raise InputError(
            f"{opts.data}: the {opts.train_split} split has {n} judged queries with "
            f"candidates; cross-validation needs at least {MIN_QUERIES} training queries "
            f"with candidates and judgments: judge more queries, or measure the rerankers "
            f"without tuning ({said_for('rerankit.evaluate()', 'rerankit eval')})"
        )


def _candidates(opts: TuneOptions, data: Dataset, role: str) -> dict[str, Any]:
    """``data``'s first-stage candidates, before any work: a file of candidates that ranks
    none of its queries is an error saying which split tune needs them for and the way out
    (``role``: ``"train"``, the split learned from, or ``"test"``, the one reported on)."""
    try:
        return first_stage(data, opts.first_stage, opts.candidates)
    except UncoveredQueries as exc:
        split = opts.train_split if role == "train" else opts.test_split
        does = "learns from" if role == "train" else "reports on"
        hint = (
            f"tune {does} the {split} split ({keyword_flag(f'{role}_split', split)}), so the "
            "candidates must cover its queries: add your retriever's candidates for them"
        )
        covered = max(exc.judged_in, key=exc.judged_in.__getitem__, default=None)
        if covered is not None and f"{covered}:odd" != opts.train_split:
            hint += (
                f", or tune on half of the {covered} split's queries and report on the other "
                f"half: {_halves(covered)}"
            )
        raise InputError(f"{exc}. {hint}") from None


def _report_on_test(
    opts: TuneOptions,
    test: Dataset,
    cands: dict[str, Any],
    path: Path,
    texts_only: bool,
    report: Reporter,
) -> list[dict[str, Any]]:
    """The written pipeline evaluated once on the test split, next to the default hybrid
    (the rows of :func:`~rerankit.eval.runner.evaluate_runs`, said as ``rerankit eval``
    prints them: recall at the depth evaluated, with the paired difference from the
    default); ``cands``: its first-stage candidates."""
    report.note(
        f"tune: scoring {path.name} and the default hybrid on the {opts.test_split} split's "
        f"{len(test.queries)} queries (the report on them follows)"
    )
    runs = [first_stage_run(cands)]
    written = load(path)
    for name, reranker in (("hybrid", load("hybrid")), (path.stem, written)):
        said = {"progress": report.progress(name), "note": report.note}  # load note first
        run = run_pipeline(name, reranker, test, cands, first_stage_scores=not texts_only, **said)
        runs.append(run)
    depth = candidate_depth(cands, opts.candidates)
    extra = parse_metrics(opts.metrics) if opts.metrics is not None else []
    rows = evaluate_runs(test, runs, depth, extra)
    report.say(
        f"\n{test.name}, {opts.test_split} split, {len(test.queries)} queries; first stage: "
        f"{first_stage_label(test, opts.first_stage)}, {depth_label(depth, opts.candidates)}\n"
    )
    # the ECE was measured on the test split's judgments (--test-data's folder when given,
    # not the labels learned from): the refit advice names that folder and split
    refit = {
        "data": opts.test_data or opts.data,
        "first_stage": opts.first_stage,
        "candidates": opts.candidates,
        "split": opts.test_split,
    }
    if not opts.test_data and (opts.train_split, opts.test_split) != ("train", "test"):
        # the refit on the splits this one used (the defaults need no naming)
        refit.update(train_split=opts.train_split, test_split=opts.test_split)
    if opts.calibrate:  # that refit was just tried: no advice to run it again
        refit["tried"] = path.stem
        if refitted_probabilities(written):  # the file written is that refit
            refit["refitted"] = path.stem
    report.say(format_table(rows, depth, refit, extra))
    note = latency_note(rows)  # from the embedding cache's counts: said only when true
    if note:
        report.say(note)
    report.say("\n" + format_against(rows, "hybrid"))
    return rows


def check_out(out: str | Path | None) -> None:
    """Refuse an ``out`` that could not be written or read back, before the work."""
    if out is None:
        return
    path = Path(out)
    if path.is_dir():
        raise InputError(
            f"{keyword_flag('out', out)}: is a folder; name the pipeline file, e.g. "
            f"{path / 'tuned.toml'}"
        )
    if path.suffix.lower() != ".toml":
        raise InputError(
            f"{keyword_flag('out', out)}: tune writes a TOML pipeline file; give a name ending "
            f"in .toml (e.g. {path.with_suffix('.toml')})"
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
            f"{_halves(found[0])}"
        )
    if found:
        raise InputError(
            f"{data}: no qrels/{name}.tsv to tune on (splits found: {', '.join(found)}); "
            f"name the one to tune on with {keyword_flag('train_split')} and the one to report "
            f"on with {keyword_flag('test_split')}"
        )


def _halves(split: str) -> str:
    """The options that tune on half of ``split``'s queries and report on the other half."""
    return (
        f"{keyword_flag('train_split', f'{split}:odd')}, "
        f"{keyword_flag('test_split', f'{split}:even')}"
    )
