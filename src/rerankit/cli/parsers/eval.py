"""``eval``'s parser: its flags, their help and checks, and nothing the
command runs (:mod:`rerankit.cli.eval`, imported when it runs)."""

from __future__ import annotations

import argparse
from typing import Any

from ..args import (
    add_address_argument,
    add_backend_arguments,
    add_candidates_argument,
    add_embedding_cache_arguments,
    add_first_stage_argument,
    add_language_argument,
    add_max_queries_argument,
    add_metrics_argument,
    add_no_progress_argument,
    examples,
    one_spelling,
    positive_int,
    say_renamed,
)
from .shown import DEFAULT_RERANKERS

__all__ = ["RerankerList", "add_commands", "reranker_names"]


class RerankerList(argparse.Action):
    """``--rerankers`` (and ``--config``, its earlier spelling, given ``now``: hidden from
    ``--help``, said on stderr): a comma-separated list; given again in the same spelling,
    the lists are joined (``--rerankers bm25 --rerankers file.toml`` evaluates both); the two
    spellings together are a usage error (:func:`~rerankit.cli.args.one_spelling`)."""

    def __init__(self, option_strings: Any, dest: str, *, now: str | None = None, **kwargs: Any):
        if now:
            kwargs.update(help=argparse.SUPPRESS, default=argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.now = now

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None):
        one_spelling(parser, namespace, self, option_string)
        if self.now:
            say_renamed(str(option_string), self.now)
        earlier = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, f"{earlier},{values}" if earlier else values)


def reranker_names(value: str) -> str:
    """``--rerankers`` / ``-r``: at least one name (an empty value, an unset shell variable
    say, is refused rather than read as the default)."""
    if not value.replace(",", "").strip():
        raise argparse.ArgumentTypeError(
            f"{value!r} names no reranker: give names, pipeline files or models, "
            f"comma-separated, or leave the flag out for the default {DEFAULT_RERANKERS}"
        )
    return value


def add_commands(sub: Any) -> None:
    ev = sub.add_parser(
        "eval",
        help="evaluate rerankers on a BEIR-layout dataset",
        description="Rerank each query's first-stage candidates with every reranker given and "
        "report nDCG@10, MRR@10, Recall@10 and Recall@k (relevance >= 1 counts; --metrics adds "
        "others), latency and LLM usage, with a paired t-test against the first stage; a "
        "pipeline whose queries degraded (an LLM judge failed past its retries and it fell "
        "back: its row measures the "
        "fallback there) is marked in the table, its verdict and on stderr, exit 0, and when "
        "every query of one degraded the command exits 1. A pipeline that raises while "
        "reranking is reported as failed (which query, the error) and has no row; the others "
        "are printed and written, then the command exits 3 (1 when every pipeline failed). "
        "Ctrl-C prints and writes the pipelines that finished, says which one it stopped "
        "and which were not started, and exits 130. With --strict, degraded queries exit 4. "
        "Data: a folder with corpus.jsonl ({_id, title, text}; 'id' is read too), "
        "queries.jsonl ({_id, text}), qrels/<split>.tsv "
        "(query-id, corpus-id, score; the header line is optional) and optionally a TREC run "
        "file *.run.trec.",
        **examples(
            "rerankit eval --data my-data  # bm25, embedding and hybrid over BM25's top 100",
            "rerankit eval --data my-data --rerankers bm25,pipeline.toml --out results",
            "rerankit eval --data my-data --first-stage my.run.trec --baseline bm25",
        ),
    )
    ev.add_argument(
        "--data",
        required=True,
        action="append",
        help="folder with corpus.jsonl, queries.jsonl, qrels/<split>.tsv, or a folder of "
        "such folders; repeatable (a table per collection, then one row each and the mean); "
        "PATH@SPLIT evaluates that collection on another split",
    )
    ev.add_argument(
        "--split",
        default="test",
        help="qrels split to evaluate (default test); several, comma-separated (train,test), "
        "or all (every qrels file) evaluate their queries together, each query once; "
        "SPLIT:odd / SPLIT:even keep the queries at odd / even positions in queries.jsonl",
    )
    add_first_stage_argument(ev)
    ev.add_argument(
        "--rerankers",
        action=RerankerList,
        type=reranker_names,
        default=None,
        help="comma-separated reranker names, pipeline files or model folders/hub ids "
        f"(default {DEFAULT_RERANKERS}; repeated, the lists are joined); a pipeline file is "
        "listed under the name it declares, else its file name, and a name listed before "
        "gets -2, -3, ... (a note says which input is which)",
    )
    ev.add_argument(
        "-r",
        "--reranker",
        action="append",
        type=reranker_names,
        metavar="RERANKER",
        help="one reranker to evaluate, as --reranker means in the other commands; "
        "repeat it for several (added to --rerankers when that is given too)",
    )
    ev.add_argument(
        "--config", dest="rerankers", action=RerankerList, type=reranker_names, now="--rerankers"
    )
    add_language_argument(ev)
    add_backend_arguments(ev)
    add_candidates_argument(ev, "first-stage candidates each query's rerankers get")
    add_metrics_argument(ev, "", "--baseline and the p-values")
    ev.add_argument(
        "--out",
        help="folder for results.json, TREC runs, a chart and, for pipelines with "
        "probability or unit scores, thresholds.csv (precision, recall and queries left "
        "empty at each cut)",
    )
    ev.add_argument(
        "--thresholds",
        action="store_true",
        help="print, for pipelines with probability or unit scores, how many candidates "
        "scoring >= 0.1, 0.2, ... 0.9 are kept, with the precision and recall of each cut "
        "and how many queries it leaves with no candidate (an empty context for an LLM)",
    )
    add_max_queries_argument(ev)
    add_no_progress_argument(ev)
    ev.add_argument(
        "--strict",
        action="store_true",
        help="for CI: exit 4 when some pipeline had degraded queries (a fallback was used "
        "on some query), after printing and writing everything as usual (a failed pipeline "
        "still exits 3, and every query of one degraded or every pipeline failed 1)",
    )
    ev.add_argument(
        "--texts-only",
        action="store_true",
        help="give the rerankers the candidates' texts without their first-stage scores "
        "(as a Cohere-style request would)",
    )
    ev.add_argument(
        "--baseline",
        default=None,
        metavar="NAME",
        help="also compare every pipeline with this one (one of --rerankers, or "
        "first-stage): the paired difference in nDCG@10 over the same queries, its standard "
        "error and p-value, per collection and, over several, one row each and the mean",
    )
    ev.add_argument(
        "--titles",
        default="field",
        metavar="LAYOUTS",
        help="how the rerankers get each candidate's title: as a title field (field, the "
        "default), joined to the text by a newline, a space or '. ' (newline, space, "
        "period), as a caller sending one string per document would, or left out (drop); "
        "several, comma-separated, run every reranker once per layout ('hybrid (space)') "
        "over the same candidates, to see how much the layout matters",
    )
    add_embedding_cache_arguments(ev)
    ev.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: rerank in this process (default); ray: on Ray Data actors (extra ray; "
        "for large evaluations, see `rerankit batch`)",
    )
    ev.add_argument("--workers", type=positive_int, default=None, help="ray: actors (default 1)")
    add_address_argument(ev)
