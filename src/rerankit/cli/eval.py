"""``rerankit eval``: its arguments, and a call to :func:`rerankit.eval.evaluate` whose
results are printed as each collection is done (the tables on stdout, notes and the files
written on stderr)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import registry
from .._words import counted
from ..api import load
from ..batch import quiet_ray_logs, ray_engine
from ..eval.compare import FIRST_STAGE_BASELINE
from ..eval.evaluation import DEFAULT_RERANKERS, evaluate, renamed_notes, reranker_labels
from ..eval.failures import EvaluationInterrupted, failed_lines, interrupted_lines
from ..eval.notes import fell_back
from ..eval.results import CollectionEvaluation, Evaluation
from ..eval.runner import FIRST_STAGE
from ..eval.thresholds import thresholds_text
from .args import (
    refuse_unused,
    use_embedding_cache,
)
from .console import note, progress_bar
from .files import need_collection, need_first_stage, need_reranker
from .pipelines import pipeline_spec, refuse_model_flags

__all__ = ["cmd_eval", "named_pipelines", "reranker_specs"]

#: ``rerankit eval``'s exit status when some pipeline raised while reranking and the
#: others were measured (``batch``'s with some rows failed)
SOME_PIPELINES_FAILED = 3

#: ``rerankit eval --strict``'s exit status when some pipeline had degraded queries and
#: nothing worse happened (a failed pipeline exits 3, every query of one degraded 1)
SOME_QUERIES_DEGRADED = 4

#: the exit status after Ctrl-C (what finished printed and written), as ``batch``'s
INTERRUPTED = 130


def reranker_specs(names: str, args: argparse.Namespace | None = None) -> dict[str, Any]:
    """Label -> what to load, for each comma-separated name, pipeline file and model in
    ``names`` (labelled by :func:`~rerankit.eval.evaluation.reranker_labels`), with
    ``args``' ``--language`` (for names), ``--backend`` and ``--quantize`` applied (see
    :func:`~rerankit.cli.pipelines.pipeline_spec`); ``--backend``/``--quantize`` when none
    of them runs a model, and ``--language`` when none is a registered name, refused."""
    flags = args if args is not None else argparse.Namespace()
    files = argparse.Namespace(**{**vars(flags), "language": None})  # a file has its own
    given = [n.strip() for n in names.split(",") if n.strip()]
    refuse_model_flags(flags, given, f"--rerankers {','.join(given)}")
    if getattr(flags, "language", None) and not any(map(registered, given)):
        refuse_unused(
            {"--language": flags.language},
            f"with --rerankers {','.join(given)}: it applies to registered rerankers by "
            "name (hybrid, bm25, ...); in a pipeline file, give language on its reranker or "
            "scorers",
        )
    return {
        label: pipeline_spec(name, files if Path(name).suffix else flags, check=False)
        for label, name in zip(reranker_labels(given), given, strict=True)
    }


def registered(name: str) -> bool:
    """Whether ``name`` is a registered reranker's (either spelling)."""
    return registry.canonical("reranker", name) is not None


def named_pipelines(
    names: str, args: argparse.Namespace | None = None
) -> list[tuple[str, Any, Any]]:
    """(label, reranker, what it was declared as) for each of :func:`reranker_specs`."""
    return [(label, load(spec), spec) for label, spec in reranker_specs(names, args).items()]


def cmd_eval(args: argparse.Namespace) -> int:
    if args.engine == "ray" and not getattr(args, "verbose", 0):
        quiet_ray_logs()
    if args.engine != "ray":
        refuse_unused(
            {"--workers": args.workers, "--address": args.address},
            "without --engine ray (they tell Ray's actors)",
        )
    for spec in args.data:
        need_collection(spec, what="a BEIR-layout folder, or a folder of them")
    need_first_stage(args.first_stage)
    given = [*([args.rerankers] if args.rerankers else []), *(args.reranker or [])]
    named = [n.strip() for n in ",".join(given).split(",") if n.strip()]
    # the first stage's own labels: evaluate says how to score a run alone
    need_reranker([n for n in named if n not in (FIRST_STAGE, FIRST_STAGE_BASELINE)])
    use_embedding_cache(args)
    engine: Any = "local"
    if args.engine == "ray":
        engine = ray_engine(workers=args.workers or 1, address=args.address)
    shown: list[CollectionEvaluation] = []
    names = ",".join(given) or DEFAULT_RERANKERS
    for line in renamed_notes([n.strip() for n in names.split(",") if n.strip()]):
        note(line)

    def show(collection: CollectionEvaluation) -> None:
        """Each collection's table as it is done (a blank line between two)."""
        print(("\n" if shown else "") + collection.table())
        if args.thresholds:
            print("\n" + threshold_text(collection))
        for written in collection.written:
            print(f"wrote {written}", file=sys.stderr)
        shown.append(collection)

    try:
        with keyboard_interrupt():
            result = evaluate(
                args.data,
                reranker_specs(names, args),
                split=args.split,
                first_stage=args.first_stage,
                candidates=args.candidates,
                baseline=args.baseline,
                titles=args.titles,
                texts_only=args.texts_only,
                max_queries=args.max_queries,
                metrics=args.metrics,
                engine=engine,
                out=args.out,
                progress=lambda label: progress_bar(label, not args.no_progress),
                note=note,
                on_collection=show,
            )
    except EvaluationInterrupted as stopped:
        result = stopped.evaluation
    except KeyboardInterrupt:  # loading the models, or a second Ctrl-C while writing
        measured = "the tables above are what was measured" if shown else "nothing measured"
        print(f"rerankit eval: interrupted: {measured}", file=sys.stderr)
        return INTERRUPTED
    if len(result.collections) > 1:
        print("\n" + result.summary())
        if result.summary_file is not None:
            print(f"wrote {result.summary_file}", file=sys.stderr)
    failed = say_failed(result)  # 3 (or 1) when some pipeline raised
    say_some_degraded(result.collections)  # exit 0 for these, as docs/cli.md says
    if result.interrupted is not None:
        return say_interrupted(result, args.out)
    if say_all_degraded(result.collections):
        return 1
    if failed or not args.strict:
        return failed
    return say_strict(result)


@contextlib.contextmanager
def keyboard_interrupt() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt where the work is, inside a pipeline's event loop
    too (asyncio's own handler would cancel its task instead, which a provider call's
    retries may absorb), as ``batch`` has it; the handler before is put back after."""

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def say_interrupted(result: Evaluation, out: str | None) -> int:
    """Ctrl-C: after the tables and files of what finished, on stderr, the pipeline it
    stopped and what was not started (:func:`~rerankit.eval.failures.interrupted_lines`),
    then one line saying what was measured and written; exit status 130, as ``batch``'s."""
    several = len(result.collections) > 1 or bool(result.interrupted["collections_not_started"])
    for line in interrupted_lines(result.interrupted, several):
        note(line)
    rows = sum(len(c.rows) - 1 for c in result.collections)  # the first stage's aside
    done = f"{counted(rows, 'pipeline run')} measured" if rows else "no pipeline measured"
    if out is not None and result.collections:
        done += f", written to {out}"
    print(f"rerankit eval: interrupted: {done}", file=sys.stderr)
    return INTERRUPTED


def say_strict(result: Evaluation) -> int:
    """``--strict``: exit :data:`SOME_QUERIES_DEGRADED` when some pipeline had degraded
    queries (said on stderr, with how many), else 0."""
    degraded = {
        (c.collection, name): ids for c in result.collections for name, ids in c.degraded.items()
    }
    if not degraded:
        return 0
    several = len(result.collections) > 1
    for (collection, name), ids in degraded.items():
        where = f" on {collection}" if several else ""
        note(
            f"--strict: {name}{where} had {len(ids)} degraded queries ({', '.join(ids[:5])}"
            + (", ..." if len(ids) > 5 else "")
            + f"): exit {SOME_QUERIES_DEGRADED}"
        )
    return SOME_QUERIES_DEGRADED


def say_failed(result: Evaluation) -> int:
    """Say on stderr, after the tables and files, each pipeline that raised while
    reranking (it has no row); the exit status: 0 when none did, 3 when some did (what
    finished is printed and written, as ``batch`` exits 3 with some rows failed), 1 when
    every pipeline failed on every collection (only the first stage was measured)."""
    several = len(result.collections) > 1 or result.interrupted is not None
    for f in result.failed:
        where = f" on {f['collection']}" if several else ""
        note(failed_lines([f], where)[0])
    if not result.failed:
        return 0
    measured = any(len(c.rows) > 1 for c in result.collections)
    return SOME_PIPELINES_FAILED if measured else 1


def threshold_text(collection: CollectionEvaluation) -> str:
    """What ``--thresholds`` prints under a collection's table
    (:func:`~rerankit.eval.thresholds.thresholds_text`)."""
    empty = collection.meta.get("without_candidates") or []
    return thresholds_text(collection.thresholds, len(empty))


def say_some_degraded(collections: list[CollectionEvaluation]) -> None:
    """Say on stderr each pipeline with some (not all) of its queries degraded: its row
    and its comparison with a baseline measure the fallback on those queries."""
    for c in collections:
        every = set(c.all_degraded())
        for r in c.rows:
            mark = fell_back(r)
            if mark and r["pipeline"] not in every:
                where = f" on {c.collection}" if len(collections) > 1 else ""
                note(
                    f"{r['pipeline']}: {mark}{where}: on those queries its row and its "
                    "comparison measure the fallback (results.json's degraded_by_query names "
                    "them and why)"
                )


def say_all_degraded(collections: list[CollectionEvaluation]) -> bool:
    """Say on stderr each pipeline whose every query degraded (its row measures only the
    fallback, as the note under its table says); whether there were any (then eval exits
    1, as ``rank`` does on an unusable result, with the tables printed and files written)."""
    said = False
    for c in collections:
        for name in c.all_degraded():
            where = f" on {c.collection}" if len(collections) > 1 else ""
            note(
                f"every query of {name} degraded{where}: a scorer or stage failed and it "
                "fell back, so its row measures the fallback (see the note under the table)"
            )
            said = True
    return said
