"""``label``'s parser: its flags, their help and checks, and nothing the
command runs (:mod:`rerankit.cli.label`, imported when it runs)."""

from __future__ import annotations

import argparse
from typing import Any

from ..args import (
    add_data_argument,
    add_first_stage_argument,
    add_max_queries_argument,
    add_no_progress_argument,
    add_old_spelling,
    examples,
    positive_float,
    positive_int,
    remember_defaults,
)

__all__ = ["add_commands"]


def _positions(value: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in value.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected two numbers like 3,10, got {value!r}") from exc
    if not 0 < a <= b:
        raise argparse.ArgumentTypeError(f"expected 0 < first <= second, got {value!r}")
    return a, b


def add_commands(sub: Any) -> None:
    lab = sub.add_parser(
        "label",
        help="label queries with an LLM judge (judgments for tune and train)",
        description="Judge each query's first-stage top k with an LLM judge and write a "
        "folder the learning commands read (corpus.jsonl, queries.jsonl, "
        "qrels/<split>.tsv) plus label_report.json. Pointwise 0-10 judgments become grades "
        "0-3 (<4, 4-6, 7-8, 9-10); a listwise order becomes 2 / 1 / 0 by position "
        "(--positions). Failed or unreadable judgments are counted and left out (exit 3: "
        "run it again to ask again for them). The "
        "estimated calls and cost are printed first; --max-calls / --budget stop cleanly, "
        "and a second run resumes (the judgment cache answers what was judged); both limits "
        "count what every run into --out spent (label_report.json's total_calls and "
        "total_cost_usd).",
        **examples(
            "rerankit label --data my-data --judge judge.toml --out labelled --dry-run",
            "rerankit label --data my-data --judge judge.toml --out labelled --budget 5",
            "rerankit tune --data labelled --test-data my-data  # then learn from the labels",
        ),
    )
    add_data_argument(lab)
    lab.add_argument(
        "--split",
        default="train",
        help="label the queries of qrels/<split>.tsv (only their ids are read; default "
        "train, not eval's test: labels are for learning, and the test split stays judged "
        "by people for measuring); without that file, every query",
    )
    lab.add_argument("--queries-file", help="label these queries instead (one a line)")
    add_max_queries_argument(lab, old="--queries")
    lab.add_argument(
        "--judge", required=True, help="pipeline file declaring one LLM scorer (the judge)"
    )
    lab.add_argument(
        "--candidates",
        dest="candidates",
        type=positive_int,
        default=20,
        metavar="N",
        help="first-stage candidates judged per query (default 20, not the 100 other "
        "commands rerank: each one judged is an LLM call)",
    )
    add_old_spelling(
        lab,
        "--k",
        dest="candidates",
        now="--candidates",
        type=positive_int,
        hint="how many first-stage candidates are judged per query",
    )
    add_first_stage_argument(lab)
    lab.add_argument("--out", required=True, help="folder to write")
    lab.add_argument(
        "--out-split", default="train", help="name of the qrels written (default train)"
    )
    lab.add_argument(
        "--max-calls",
        type=positive_int,
        help="stop before passing this many calls (retries included) in all the runs into "
        "--out (a run it stopped writes what it labelled and exits 3)",
    )
    lab.add_argument(
        "--budget",
        type=positive_float,
        help="stop before spending more than this (US$, above 0) in all the runs into --out: "
        "a stopped run writes what it labelled, exits 3, and goes on when run again with a "
        "higher budget",
    )
    lab.add_argument(
        "--prices",
        help="JSON, TOML or YAML file {model: {input: ..., output: ...}} in US$ per million "
        "tokens, over the built-in list prices (a model without one: no cost shown, and "
        "--budget is refused)",
    )
    lab.add_argument(
        "--positions",
        type=_positions,
        default=(3, 10),
        help="listwise: the first N get grade 2, up to M grade 1 (default 3,10)",
    )
    lab.add_argument("--dry-run", action="store_true", help="print the estimate only")
    add_no_progress_argument(lab)
    remember_defaults(lab)
