"""``rerankit label``: relevance labels from an LLM judge (see
:mod:`rerankit.training.labelling`)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..errors import InputError, RerankitError
from ..eval.data import Dataset
from ..eval.first_stage import first_stage
from ..scorers import LLMListwiseScorer
from ..training.labelling import (
    LabelReport,
    check_budget,
    estimate,
    judge_from,
    label,
    no_negatives,
    read_prices,
    read_queries,
    spent_on,
    with_queries,
)
from .args import (
    given,
    refuse_unused,
)
from .console import limit_queries, note, read_collection
from .files import need_collection, need_file, need_first_stage

__all__ = ["cmd_label"]

#: ``rerankit label``'s exit status when --budget or --max-calls stopped it before every
#: query was labelled, or some judgments failed and were left out (what it labelled is
#: written): 3, as ``batch``'s for a run that finished partly
STOPPED_PARTLY = 3


def _queries(args: argparse.Namespace) -> Dataset:
    data = read_collection(args.data, args.split, judged=False)
    if args.queries_file:  # (a run's query ids do not name these queries: dropped)
        data = with_queries(data, read_queries(args.queries_file))
    data.qrels = {}  # never read: the judge decides
    return limit_queries(data, args.max_queries)


def dollars(amount: float) -> str:
    """US$ ``amount`` with cents, and below 10 cents with two significant digits, so that
    a small cost never reads as $0.00 ($1.27, $0.42, $0.0045; $0 for nothing)."""
    if amount <= 0:
        return "$0"
    if amount >= 0.1:
        return f"${amount:.2f}"
    return f"${amount:.{1 - math.floor(math.log10(amount))}f}"


def _line(report: LabelReport) -> str:
    cost = f", ${report.cost_usd:.4f}" if report.cost_usd is not None else ", cost unknown"
    retried = f"{report.retries} of them retries, " if report.retries else ""
    return (
        f"{report.labelled_queries}/{report.queries} queries, {report.labels} labels, "
        f"{report.failed} failed, {report.calls} calls ({retried}{report.cache_hits} cached)"
        f"{cost}"
    )


def _go_on(report: LabelReport, out: str) -> str:
    """How to go on after a stop: the limit covers every run into ``out``, so raise it."""
    if report.stopped is None:
        return ""
    if report.stopped.startswith("the judge"):
        return "the judgment cache keeps what was judged"
    limit = "--budget" if report.stopped.startswith("budget") else "--max-calls"
    return f"run again with a higher {limit} to go on (it covers every run into {out})"


def _warn_of_missing_keys(spec: str) -> None:
    """A dry run builds its judge without an API key (it calls nothing): warn now, when the
    set-up is being checked, if the real run's judge could not be built (a key not set)."""
    try:
        judge_from(spec, keys=True)
    except (InputError, RerankitError, ValueError) as exc:
        note(f"warning: without --dry-run this stops: {exc}")


def cmd_label(args: argparse.Namespace) -> int:
    need_collection(args.data)
    need_file(args.judge, "--judge", "a pipeline file declaring the LLM judge")
    need_file(args.queries_file, "--queries-file", "the queries to label, one a line")
    need_file(args.prices, "--prices", "list prices per model")
    need_first_stage(args.first_stage)
    if args.queries_file:
        refuse_unused(
            given(args, "split"), "with --queries-file: the queries to label come from that file"
        )
    judge = judge_from(args.judge, keys=not args.dry_run)
    if not isinstance(judge, LLMListwiseScorer):
        refuse_unused(
            given(args, "positions"),
            f"with the pointwise judge of --judge {args.judge}: positions grade a listwise "
            "judge's order (a pointwise judge's 0-10 scores are graded by value)",
        )
    data = _queries(args)
    prices = read_prices(args.prices)
    ranked = first_stage(data, args.first_stage, k=args.candidates)
    candidates = {q: [d for d, _ in rows] for q, rows in ranked.items()}
    planned = estimate(judge, data.queries, candidates, data.text, prices, cache=True)
    price = (
        f"about {dollars(planned.cost_usd)}"
        if planned.cost_usd is not None
        else f"cost unknown (no list price for model {judge.client.model!r}: --prices FILE)"
    )
    stops = (
        f" (--max-calls stops it at {args.max_calls})"
        if args.max_calls is not None and args.max_calls < planned.calls
        else ""
    )
    queries = f"{len(data.queries)} quer{'y' if len(data.queries) == 1 else 'ies'}"
    cached = (
        ""
        if judge.cache is None
        else f"; {planned.cached_calls} more calls the judgment cache answers, for free"
        if planned.cached_calls
        else "; the judgment cache holds none of them yet"
    )
    print(
        f"rerankit label: {queries} x top {args.candidates} with "
        f"{judge.client.model}: up to {planned.calls} calls{stops}, about "
        f"{planned.input_tokens:,} input and {planned.output_tokens:,} output tokens, {price}"
        f"{cached}",
        file=sys.stderr,
    )
    first, last = args.positions
    if isinstance(judge, LLMListwiseScorer) and no_negatives(args.candidates, args.positions):
        half = args.candidates // 2
        lower = f" or lower the second --positions number (--positions {min(first, half)},{half})"
        note(
            f"warning: --candidates {args.candidates} with --positions "
            f"{first},{last} grades every candidate 1 or 2 (the first {first} grade 2, up to "
            f"the {last}th grade 1): no candidate will be labelled not relevant (grade 0), so "
            f"what learns from these labels sees no judged negative; judge more candidates "
            f"than {last} (--candidates {2 * last}){lower if half else ''}"
        )
    spent = spent_on(args.out, prices, judge.client.model)
    if spent.calls:
        cost = f" and {dollars(spent.cost_usd)}" if spent.cost_usd is not None else ""
        print(
            f"rerankit label: {args.out} has spent {spent.calls} calls{cost} in earlier runs, "
            "which --max-calls and --budget count",
            file=sys.stderr,
        )
    if args.dry_run:
        check_budget(judge, args.budget, prices)  # as the real run would refuse it
        _warn_of_missing_keys(args.judge)
        return 0
    every = max(1, len(data.queries) // 20)

    def progress(report: LabelReport) -> None:
        if report.labelled_queries % every == 0 and not args.no_progress:
            print(f"rerankit label: {_line(report)}", file=sys.stderr)

    report = label(
        data,
        candidates,
        judge,
        args.out,
        split=args.out_split,
        max_calls=args.max_calls,
        budget=args.budget,
        prices=prices,
        positions=args.positions,
        source=args.data,
        progress=progress,
        first_stage=args.first_stage,
        depth=args.candidates,
    )
    go_on = _go_on(report, args.out)
    stopped = f"; stopped ({report.stopped}): {go_on}" if report.stopped else ""
    print(f"rerankit label: {_line(report)} in {report.seconds:.0f} s{stopped}", file=sys.stderr)
    for said in report.notes():
        print(f"rerankit label: {said}", file=sys.stderr)
    if report.error:
        raise InputError(report.error + (f"; {go_on}" if report.stopped else ""))
    written = Path(args.out) / "qrels" / f"{args.out_split}.tsv"
    print(f"rerankit label: wrote {written}", file=sys.stderr)
    if report.failed:  # partly labelled: a rerun asks again for the failed ones only
        print(
            f"rerankit label: {report.failed} failed judgments were left out (exit 3): run "
            "the same command again to ask the judge again for them (the judgment cache "
            "answers the rest, for free)",
            file=sys.stderr,
        )
    return STOPPED_PARTLY if report.stopped or report.failed else 0
