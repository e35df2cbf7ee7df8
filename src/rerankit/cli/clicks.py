"""Learning from clicks on the command line: ``rerankit tune --clicks LOG`` (a call to
:func:`rerankit.training.clicks.learn_from_log`, its propensities, learning curve and
verdict printed, a pipeline and the propensities written) and ``rerankit
interleave-report LOG`` (:func:`rerankit.training.clicks.interleaving_report`)."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from ..errors import no_such_file
from ..training.clicks.advice import deploy_advice, verdict
from ..training.clicks.deploy import served_pipeline, write_learned
from ..training.clicks.from_log import learn_from_log, read_corpus
from ..training.clicks.given import floored, read_propensities
from ..training.clicks.interleave import interleaving_report
from ..training.clicks.log import log_files
from ..training.clicks.reader import logs_files, read_log
from ..training.clicks.sessions import DEPTH
from ..training.clicks.simulate_data import simulate_collection
from .args import (
    UsageError,
)
from .console import progress_bar, read_collection, reporter
from .files import need_collection, need_first_stage, need_reranker

__all__ = [
    "cmd_interleave_report",
    "cmd_simulate_clicks",
    "cmd_tune_clicks",
    "need_click_log",
]


def need_click_log(log: str, flag: str) -> None:
    """A :class:`~rerankit.cli.args.UsageError` when neither the click log ``log`` nor any
    of its rotated files is there (see :func:`~rerankit.cli.files.need_file`)."""
    if not log_files(log):
        raise UsageError(no_such_file(log, f"{flag}: a click log, or its rotated files"))


def cmd_tune_clicks(args: argparse.Namespace) -> int:
    """``tune --clicks LOG``: learn, print, write (the learned pipeline only when adopted)."""
    out = Path(args.out or "tuned-clicks.toml")
    # what served the log, when named: checked before the work
    served = served_pipeline(args.served) if args.served else None
    corpus = read_corpus(args.data) if args.data else None  # (read before the other work)
    options: dict[str, Any] = {"folds": args.folds, "seeds": tuple(range(args.seeds))}
    if args.adopt_margin is not None:
        options["margin"] = args.adopt_margin
    if args.propensities is not None:  # checked before the work
        options["propensities"] = read_propensities(args.propensities, DEPTH)
        if said := floored(args.propensities, depth=DEPTH):
            print(f"note: {said}")
    # one log (with its rotated files), or the files of several (each with its own)
    logs = args.clicks[0] if len(args.clicks) == 1 else logs_files(args.clicks)
    found = learn_from_log(
        logs,
        data=corpus,
        features=args.features,
        embedding=args.embedding_model,
        min_dwell_ms=args.min_dwell_ms,
        max_feedback_delay=args.max_feedback_delay,
        keep_learned=args.keep_learned,
        reporter=reporter(args),
        **options,
    )
    read, result = found.read, found.learning
    print(read.describe())
    if found.features:
        print(found.features)
    by = ", ".join(
        f"{name or '(unnamed)'} {n}" + _explored(found.explored.get(name))
        for name, n in found.served.items()
    )
    print(f"sessions by pipeline: {by}")
    for pair, n in found.interleaved.items():
        print(
            f"  note: {n} of them showed an interleaved order ({pair.replace('+', ' and ')} "
            'mixed, as [server] interleave serves them): there the verdict\'s "served" is '
            "that mix, not one pipeline's own order"
        )
    counted = f"{found.counted_clicks} counted (in the first {DEPTH} positions"
    if args.min_dwell_ms is not None:
        counted += f", with at least {args.min_dwell_ms:g} ms of dwell or none recorded"
    print(f"clicks: {found.clicks} in the log, {counted})")
    unclicked = len(found.logs) - result.queries
    left = (
        f" ({unclicked} logged quer{'y' if unclicked == 1 else 'ies'} without a click counted "
        "left out: they hold nothing to learn from or to score)"
        if unclicked
        else ""
    )
    print(f"{result.queries} queries, {result.sessions} sessions{left}\n")
    print(result.propensities.describe())
    caveat = result.propensities.caveat()
    if caveat:
        print(f"  note: {caveat}")
    warning = result.propensities.warning()
    if warning:
        print(f"  warning: {warning}")
    if result.curve:
        print("\nlearning curve (cross-validated counterfactual nDCG@10 x 100):")
        sizes = _sizes([sessions for sessions, _ in result.curve])
        for size, (_, ndcg) in zip(sizes, result.curve, strict=True):
            noun = "session" if size == "1" else "sessions"
            print(f"  {size:>8} {noun} a query: {100 * ndcg:6.2f}")
    print(f"\nverdict: {verdict(result)}")
    written = write_learned(
        found, out, served=served, keep_learned=args.keep_learned, source=" ".join(args.clicks)
    )
    print(f"\nwrote {out}: {written.what}")
    for path, role in written.files[1:]:
        print(f"wrote {path}: {role}")
    deploy = [str(path) for path, role in written.files if "serving does not read" not in role]
    if not written.learned:
        held = (
            "is what served the log (serving it changes nothing)"
            if written.unchanged
            else "holds the default hybrid, not what served the log (see above)"
        )
        print(
            f"nothing to deploy: {out} {held}; to compare the learned pipeline with what "
            "serves today on live traffic anyway (interleaving, docs/clicks.md), run again "
            "with --keep-learned"
        )
    elif len(deploy) > 1:
        together = "together (the pipeline names its model beside it)"
        print(f"to deploy, copy {', '.join(deploy)} {together}")
    else:
        print(f"to deploy, serve {out}")
    for line in written.requirements():
        print(f"  note: {line}")
    if written.score_scale is None:
        print("  note: the pipeline does not build here, so its score scale is not known")
    for line in deploy_advice(written, found.served_by, served=args.served, data=args.data):
        print(f"  note: {line}")
    return 0


def _explored(exploration: Any) -> str:
    """`` (33 explored, 15 with exchanged pairs)`` for a pipeline whose sessions were
    explored, else nothing."""
    said = exploration.describe() if exploration is not None else ""
    return f" ({said})" if said else ""


def _sizes(values: list[float]) -> list[str]:
    """Sessions a query as printed: whole numbers when they are, else with the decimal
    places (1 to 3) that print distinct values distinctly."""
    if all(float(v).is_integer() for v in values):
        return [str(int(v)) for v in values]
    places = _places(values)
    return [f"{v:.{places}f}" for v in values]


def _places(values: list[float]) -> int:
    """The decimal places (1 to 3) that print distinct values distinctly."""
    for places in (1, 2):
        if len({f"{v:.{places}f}" for v in values}) == len(set(values)):
            return places
    return 3


def cmd_interleave_report(args: argparse.Namespace) -> int:
    logs = [*args.log, *(args.clicks or ())]
    if not logs:
        raise UsageError("name the click log: rerankit interleave-report LOG")
    for log in logs:
        need_click_log(log, "LOG")
    sessions, read = read_log(logs_files(logs), max_feedback_delay=args.max_feedback_delay)
    pair = tuple(args.pipelines) if args.pipelines else None
    try:
        report = interleaving_report(
            sessions,
            pipelines=pair,  # type: ignore[arg-type]
            confidence=args.confidence,
            seed=args.seed,
            by=args.by,
            method=args.method,
        )
    except ValueError as exc:  # say which log, and what was read of it
        read_line = read.describe().splitlines()[0]
        raise ValueError(f"{', '.join(map(str, logs))}: {exc} ({read_line})") from exc
    if args.json:
        print(json.dumps({**report.as_dict(), "read": read.counts()}, indent=2))
        return 0
    print(read.describe())
    print(report.describe())
    few = f" (tentative: {report.clicked} clicked sessions)" if report.few_clicked else ""
    print(f"winner: {report.winner or 'none (the interval includes 0)'}{few}")
    return 0


def cmd_simulate_clicks(args: argparse.Namespace) -> int:
    need_collection(args.data)
    need_first_stage(args.first_stage)
    need_reranker(args.reranker)
    data = read_collection(args.data, args.split, args.max_queries)
    simulated = simulate_collection(
        data,
        args.out,
        reranker=args.reranker,
        first_stage=args.first_stage,
        candidates=args.candidates,
        sessions=args.sessions,
        eta=args.eta,
        explore_pairs=args.explore_pairs,
        store=args.store,
        seed=args.seed,
        progress=progress_bar("rerank", not args.no_progress),
    )
    print(simulated.describe())
    corpus = "" if args.store == "text" else f" --data {shlex.quote(str(args.data))}"
    features = shlex.quote(str(Path(args.out).with_suffix(".npz")))
    print(
        f"learn from it: rerankit tune --clicks {shlex.quote(str(args.out))}{corpus} "
        f"--features {features} --out learned.toml"
    )
    print(
        f"a rehearsal: the log's 'served' is the simulation's ranker ({simulated.pipeline}), "
        "and what is learned fits this collection and these simulated users; learn what you "
        "deploy from your own service's log"
    )
    return 0
