"""An evaluation in one call: :func:`evaluate` reranks every collection's first-stage
candidates with each reranker (once per title layout) and returns an
:class:`~rerankit.eval.results.Evaluation`; ``rerankit eval`` is this call, printed."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._optional import require
from ..api import load
from ..cache import embedding_cache_in_use, rerankers_use_store
from ..errors import InputError
from ..scorers.local import load_models
from .compare import FIRST_STAGE_BASELINE, check_baseline, first_stage_clash
from .data import Dataset, find_collections, read_split
from .failures import (
    EvaluationInterrupted,
    PipelineFailed,
    PipelineInterrupted,
    failed_lines,
    interrupted_lines,
)
from .first_stage import candidate_depth, candidate_documents, first_stage_label
from .first_stage import first_stage as first_stage_candidates
from .given import IN_MEMORY, check_first_stage
from .labels import renamed_notes, reranker_labels, title_layouts
from .latency import first_run_note
from .metrics import parse_metrics
from .notes import fitted_on
from .results import CollectionEvaluation, Evaluation, collection_folder
from .runner import (
    FIRST_STAGE,
    PipelineRun,
    check_output_folder,
    describe_pipeline,
    evaluate_runs,
    first_stage_run,
    run_pipeline,
)
from .summary import write_summary
from .thresholds import THRESHOLD_SCALES, threshold_rows

__all__ = [
    "DEFAULT_RERANKERS",
    "evaluate",
    "renamed_notes",
    "reranker_labels",
    "title_layouts",
]

logger = logging.getLogger(__name__)

#: what :func:`evaluate` (and ``rerankit eval``) compares when not told
DEFAULT_RERANKERS = "bm25,embedding,hybrid"

#: ``progress(label)``: a wrapper of a loop over queries (a progress bar)
Progress = Callable[[str], Callable[[Iterable[Any]], Iterable[Any]]]


def _rerankers(rerankers: Any, note: Callable[[str], None] | None = None) -> list[tuple[str, Any]]:
    """(label, what was given) for each reranker: a comma-separated string of names, files
    and models, a list of those or of reranker objects, or a mapping label -> any of them;
    each name declared twice said to ``note`` (:func:`renamed_notes`)."""
    if rerankers is None:
        rerankers = DEFAULT_RERANKERS
    if isinstance(rerankers, str):
        rerankers = [n.strip() for n in rerankers.split(",") if n.strip()]
    if isinstance(rerankers, Mapping):
        pairs = [(str(label), item) for label, item in rerankers.items()]
        if any(not label.strip() for label, _ in pairs):
            raise InputError("rerankers: every label of the mapping must be a non-empty name")
    elif isinstance(rerankers, Iterable):
        items = list(rerankers)
        pairs = list(zip(reranker_labels(items), items, strict=True))
        for line in renamed_notes(items):
            (note or logger.info)(line)
    else:
        raise InputError(
            "rerankers: expected names, pipeline files or rerankers (a comma-separated "
            f"string, a list, or a mapping label -> reranker), got {type(rerankers).__name__}"
        )
    if not pairs:
        raise InputError("rerankers: none given (name at least one, e.g. 'bm25')")
    clash = [label for label, _ in pairs if label in (FIRST_STAGE, FIRST_STAGE_BASELINE)]
    if clash:
        raise InputError(first_stage_clash(clash[0]))
    return pairs


def _collections(data: Any, split: str) -> list[tuple[str, str, Path | Dataset]]:
    """(name, split, folder or dataset) for each collection ``data`` names (see
    :func:`evaluate`)."""
    given = [data] if isinstance(data, (str, Path, Dataset)) else data
    if not isinstance(given, Iterable) or isinstance(given, Mapping):
        raise InputError(
            "data: expected a BEIR-layout folder, a folder of them, a Dataset or a list of "
            f"those, got {type(data).__name__}"
        )
    out: list[tuple[str, str, Path | Dataset]] = []
    for item in list(given):
        if isinstance(item, Dataset):
            out.append((item.name, item.split or split, item))
        elif isinstance(item, (str, Path)):
            out += [(p.name, s, p) for p, s in find_collections([str(item)], split)]
        else:
            raise InputError(
                f"data: expected a folder (str or Path) or a Dataset, got {type(item).__name__}"
            )
    if not out:
        raise InputError("data: no collection given")
    return out


def _labels(collections: Sequence[tuple[str, str, Any]], split: str) -> list[str]:
    """A short, unique label per collection: its name, with its split when that is not
    ``split`` or when two share a name."""
    names = [name for name, _, _ in collections]
    return [
        name if s == split and names.count(name) == 1 else f"{name}@{s}"
        for name, s, _ in collections
    ]


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{name}: expected a positive integer, got {value!r}")
    return value


def _progress(progress: bool | Progress) -> Progress | None:
    """``progress`` as a bar factory: True gives tqdm's bars on stderr (extra ``eval``)."""
    if callable(progress):
        return progress
    if not progress:
        return None
    tqdm = require("tqdm", "progress=True").tqdm
    return lambda label: lambda items: tqdm(items, desc=label, unit="query", leave=False)


def _engine(engine: Any) -> Callable[..., PipelineRun] | None:
    """None for ``"local"`` (this process), else the engine callable given."""
    if engine == "local":
        return None
    if callable(engine):
        return engine
    if engine == "ray":
        raise InputError(
            "engine='ray': pass the ray engine itself, engine=rerankit.batch.ray_engine("
            "workers=N) (extra ray; it lives in rerankit.batch)"
        )
    raise InputError(f"engine: expected 'local' or an engine such as ray_engine(), got {engine!r}")


def _keep_note(dataset: Dataset, note: Callable[[str], None] | None) -> Callable[[str], None]:
    """What the first stage read past: kept in ``dataset.notes`` (this evaluation's copy;
    results.json holds them) and said to ``note`` as a warning."""

    def keep(message: str) -> None:
        dataset.notes.append(message)
        if note is not None:
            note(f"warning: {message}")

    return keep


def _read(
    source: Path | Dataset,
    split: str,
    max_queries: int | None,
    note: Callable[[str], None] | None,
) -> Dataset:
    """A collection read from its folder (each of its notes said to ``note`` as a warning;
    they are logged as warnings too), or the dataset given, cut to its first
    ``max_queries`` queries (a copy: the caller's is kept)."""
    if isinstance(source, Dataset):
        queries = dict(list(source.queries.items())[: max_queries or None])
        return replace(source, queries=queries, notes=list(source.notes))
    said = None if note is None else (lambda m: note(f"warning: {m}"))
    return read_split(source, split, max_queries, note=said)


def evaluate(
    data: str | Path | Dataset | Sequence[str | Path | Dataset],
    rerankers: Any = None,
    *,
    split: str = "test",
    first_stage: str | Mapping[str, Any] = "auto",
    candidates: int = 100,
    baseline: str | None = None,
    titles: str | Sequence[str] = "field",
    texts_only: bool = False,
    max_queries: int | None = None,
    engine: Any = "local",
    out: str | Path | None = None,
    progress: bool | Progress = False,
    note: Callable[[str], None] | None = None,
    on_collection: Callable[[CollectionEvaluation], None] | None = None,
    embedding_cache: str | Path | bool | None = None,
    metrics: str | Sequence[str] | None = None,
) -> Evaluation:
    """Rerank each query's first-stage candidates with every reranker and measure how well
    each orders them, beside the first stage: what ``rerankit eval`` prints, as an
    :class:`~rerankit.eval.results.Evaluation` (``str()`` of it is the printed text,
    ``.rows`` the metrics, ``.to_dict()`` plain data, ``.write(folder)`` the files).

    ``data``: a BEIR-layout folder (``corpus.jsonl``, ``queries.jsonl``,
    ``qrels/<split>.tsv``), a folder of such folders, ``"PATH@SPLIT"`` for another split, a
    loaded :class:`~rerankit.eval.Dataset` (evaluated on the split it was loaded with), or
    a list of these. ``rerankers``: names, pipeline files, models and reranker objects
    (anything :func:`rerankit.load` takes), as a comma-separated string, a list, or a
    mapping label -> reranker (default ``bm25,embedding,hybrid``); each is shown under
    :func:`reranker_labels`' name. The keywords are ``rerankit eval``'s flags:
    ``first_stage`` (``auto``, ``bm25``, ``run``, your run/candidates file, or those
    candidates in memory: query id -> doc ids best first or ``(doc id, score)`` pairs, read
    as the file's lines are),
    ``candidates`` per query, ``baseline`` (a label, or ``first-stage``) to compare every
    pipeline with, ``titles`` (layouts, comma-separated or a list: each reranker runs once
    per layout over the same candidates), ``texts_only`` (hide the first-stage scores from
    the rerankers), ``max_queries`` (the first N of each collection), ``engine``
    (``"local"``, or :func:`rerankit.batch.ray_engine`'s), ``out`` (a folder to write the
    files in as each collection is done), ``embedding_cache`` (where document vectors are
    kept, as ``--embedding-cache``: by default on disk, as the command keeps them, so each
    document is encoded once across rerankers and runs; a path; False: in memory only),
    ``metrics`` (``NAME@K`` beside the usual ones: :func:`~rerankit.eval.metrics.parse_metrics`).
    ``--backend``, ``--quantize`` and ``--language`` shape a reranker: give them in its
    spec (``{"reranker": {"type": "hybrid", "backend": "onnx"}}``).

    Nothing is printed unless asked: ``progress`` (True: tqdm bars on stderr, extra
    ``eval``; or ``label -> wrapper`` of a loop over queries), ``note`` (each warning about
    the data, as ``"warning: ..."``, and how long models took to load; both are logged
    too) and ``on_collection`` (each collection's result as it is done) say what it does
    while it works.

    Mistakes are :class:`~rerankit.InputError` s (or :class:`~rerankit.errors.ConfigError`
    for an unknown reranker) raised before any reranker runs: a missing folder, an unknown
    title layout, a baseline that is not among the rerankers; and every reranker's models
    are loaded before the first query is reranked (locally), so one that cannot load fails
    first, not after the others ran. An error reading the data or in the first stage stops
    it at once. A pipeline that raises while reranking does not: it is recorded in its
    collection's ``meta["failed"]`` (``pipeline``, ``query_id``, ``error_type``,
    ``error``, ``reranked_queries``; ``Evaluation.failed`` lists them all), logged as a
    warning, left out of the rows (and of the means over collections), and the others are
    measured and written as usual, as ``rerankit.batch`` writes a failed row with its error
    and goes on; check ``evaluation.failed`` (and ``evaluation.degraded``, the queries where
    a pipeline fell back) before reading the rows as complete. Ctrl-C while a collection is
    read or reranked raises :class:`~rerankit.eval.failures.EvaluationInterrupted` (a
    ``KeyboardInterrupt``) once the pipelines that finished are measured (and written, with
    ``out``; ``on_collection`` told): its ``evaluation`` holds them, and its
    ``interrupted`` says which pipeline it stopped and what was not started.
    """
    # read by the scorers built below, and lent to those of objects built before
    with embedding_cache_in_use(embedding_cache), contextlib.ExitStack() as lent:
        collections = _collections(data, split)
        candidates = _positive("candidates", candidates)
        extra = parse_metrics(metrics) if metrics is not None else []
        check_first_stage(first_stage)
        if max_queries is not None:
            max_queries = _positive("max_queries", max_queries)
        if out is not None:
            check_output_folder(out)  # before the work, not after it
        layouts = title_layouts(titles)
        runner = _engine(engine)
        given = _rerankers(rerankers, note)
        names = [_run_name(n, t, layouts) for t in layouts for n, _ in given]
        if baseline is not None:
            baseline = check_baseline(baseline, [FIRST_STAGE, *names])
        pipelines = [(label, load(item), item) for label, item in given]
        lent.enter_context(rerankers_use_store(r for _, r, _ in pipelines))
        loaded: dict[str, float] = {}
        if runner is None:  # every model loaded now: one that cannot fails before any work
            loaded = {name: load_models(r) for name, r, _ in pipelines}
            said = [PipelineRun(n, {}, load_seconds=s).load_note() for n, s in loaded.items()]
            said.append(first_run_note([(name, r.scorers()) for name, r, _ in pipelines]))
            for line in filter(None, said):  # before the first query (and the wait it warns of)
                (note or logger.info)(line)
        bars = _progress(progress)
        several = len(collections) > 1
        done: list[CollectionEvaluation] = []
        labels = _labels(collections, split)
        order = [(t, p) for t in layouts for p in pipelines]  # every layout, same candidates
        for i, (label, (_, own, source)) in enumerate(zip(labels, collections, strict=True)):
            try:
                dataset = _read(source, own, max_queries, note)
                cands = first_stage_candidates(
                    dataset, first_stage, candidates, note=_keep_note(dataset, note)
                )
            except KeyboardInterrupt:  # nothing of this collection measured
                stopped = {**PipelineInterrupted("").record(names), "pipeline": None}
                left = {"collection": label, **stopped, "collections_not_started": labels[i + 1 :]}
                raise EvaluationInterrupted(_finish(done, baseline, out, left)) from None
            runs, failed, stopped, shown, scales = [first_stage_run(cands)], [], None, dataset, {}
            for n, (layout, (name, reranker, declared)) in enumerate(order):
                if n % len(pipelines) == 0:  # a layout's first pipeline
                    shown = dataset.with_titles(layout)
                run_name = _run_name(name, layout, layouts)
                try:
                    if runner is not None:
                        scores = not texts_only
                        run = runner(name, declared, shown, cands, first_stage_scores=scores)
                    else:
                        bar = bars(name) if bars is not None else None
                        run = _run_here(name, reranker, shown, cands, bar, texts_only)
                except PipelineFailed as exc:  # recorded; the others go on
                    failed.append(exc.record(run_name))
                    logger.warning("%s: %s", label, failed_lines(failed[-1:])[0])
                    continue
                except KeyboardInterrupt as exc:  # what finished is measured, then raised
                    stopped = _stopped(exc, run_name, names)
                    break
                if runner is None:
                    run.load_seconds += loaded.pop(name, 0.0)  # once, on its first run (said)
                run.name = run_name
                scales.setdefault(name, set()).update(run.score_scales)  # (said in meta)
                runs.append(run)
            meta = {
                **_meta(dataset, own, first_stage, cands, candidates, max_queries, texts_only),
                "titles": layouts[0] if len(layouts) == 1 else layouts,
                "metrics": extra,  # those asked beside the usual ones
                "baseline": baseline,
                "pipelines": {n: describe_pipeline(r, scales.get(n, ())) for n, r, _ in pipelines},
                "fitted_on": {n: f for n, r, item in pipelines if (f := fitted_on(item, r))},
                "notes": dataset.notes,
                "failed": failed,
                "interrupted": stopped,
            }
            result = _measured(label, meta, dataset, runs, cands, candidates, texts_only)
            if isinstance(first_stage, Mapping):  # for the refit's advice (see IN_MEMORY)
                result.first_stage_given = IN_MEMORY
            else:
                result.first_stage_given = first_stage
            if out is not None:
                result.written = result.write(collection_folder(out, label, several))
            done.append(result)
            if on_collection is not None:
                on_collection(result)
            if stopped is not None:
                logger.warning("%s: %s", label, "; ".join(interrupted_lines(stopped)))
                left = {"collection": label, **stopped, "collections_not_started": labels[i + 1 :]}
                raise EvaluationInterrupted(_finish(done, baseline, out, left))
        return _finish(done, baseline, out, None)


def _stopped(exc: KeyboardInterrupt, run_name: str, names: Sequence[str]) -> dict[str, Any]:
    """The record of the pipeline Ctrl-C stopped (see
    :meth:`~rerankit.eval.failures.PipelineInterrupted.record`), under its name here."""
    given = exc if isinstance(exc, PipelineInterrupted) else PipelineInterrupted(run_name)
    return {**given.record(names[names.index(run_name) + 1 :]), "pipeline": run_name}


def _finish(
    done: list[CollectionEvaluation],
    baseline: str | None,
    out: str | Path | None,
    interrupted: dict[str, Any] | None,
) -> Evaluation:
    """The evaluation of the ``done`` collections (``summary.json`` written over several)."""
    evaluation = Evaluation(done, baseline, interrupted=interrupted)
    if out is not None and len(done) > 1:
        evaluation.summary_file = write_summary(out, [c.entry() for c in done])
    return evaluation


def _meta(
    dataset: Dataset,
    split: str,
    first_stage: Any,
    cands: Mapping[str, Sequence[tuple[str, float]]],
    candidates: int,
    max_queries: int | None,
    texts_only: bool,
) -> dict[str, Any]:
    """What ``results.json`` records of the collection and its candidates."""
    depth = candidate_depth(cands, candidates)
    return {
        "dataset": dataset.name,
        "split": split,
        "first_stage": first_stage_label(dataset, first_stage),
        "candidates": depth,
        "k": depth,  # its earlier name, kept for readers of older files
        "queries": len(dataset.queries),
        "max_queries": max_queries,
        "queries_without_candidates": sum(1 for q in dataset.queries if not cands.get(q)),
        "without_candidates": [q for q in dataset.queries if not cands.get(q)],
        "fewer_candidates": sum(1 for q in dataset.queries if 0 < len(cands.get(q, ())) < depth),
        "first_stage_scores_given": not texts_only,
    }


def _measured(
    label: str,
    meta: dict[str, Any],
    dataset: Dataset,
    runs: list[PipelineRun],
    cands: Mapping[str, Sequence[tuple[str, float]]],
    candidates: int,
    texts_only: bool,
) -> CollectionEvaluation:
    """A collection's runs measured: its rows, thresholds and candidates as shown."""
    return CollectionEvaluation(
        label,
        meta,
        evaluate_runs(dataset, runs, meta["candidates"], meta["metrics"]),
        runs,
        candidates,
        folder=dataset.folder,
        queries=dict(dataset.queries),
        thresholds={
            r.name: threshold_rows(
                r.scores,
                dataset.qrels,
                queries=list(dataset.queries),
                candidates={q: [d for d, _ in c] for q, c in cands.items()},
            )
            for r in runs
            if r.scores
            and r.score_scales
            and r.score_scales <= THRESHOLD_SCALES
            and not r.all_degraded  # the fallback's scores, not its own
        },
        shown={  # each query's candidates, as the rerankers read them
            q: candidate_documents(dataset, cands.get(q, []), with_scores=not texts_only)
            for q in dataset.queries
        },
    )


def _run_here(
    name: str,
    reranker: Any,
    data: Dataset,
    cands: Mapping[str, Sequence[tuple[str, float]]],
    bar: Callable[[Iterable[Any]], Iterable[Any]] | None,
    texts_only: bool,
) -> PipelineRun:
    """One pipeline's run in this process (its models loaded before)."""
    return run_pipeline(
        name, reranker, data, cands, progress=bar, first_stage_scores=not texts_only, failed_as=True
    )


def _run_name(name: str, layout: str, layouts: Sequence[str]) -> str:
    """A pipeline's name in the tables: with its title layout when there are several."""
    return name if len(layouts) == 1 else f"{name} ({layout})"
