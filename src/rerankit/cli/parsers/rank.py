"""``rank``'s parser: its flags, their help and checks, and nothing the
command runs (:mod:`rerankit.cli.rank`, imported when it runs)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..args import (
    add_backend_arguments,
    add_embedding_cache_if_asked_arguments,
    add_language_argument,
    add_old_spelling,
    add_refused_flag,
    examples,
    positive_float,
    positive_int,
    query_text,
    remember_defaults,
)
from ..fields import add_field_arguments

__all__ = ["RERANKER_HELP", "TO_A_FILE", "add_commands", "cross_encoder_output"]

#: how ``rank``'s results go to a file
TO_A_FILE = 'rerankit rank -q "solar power" -i docs.jsonl > ranked.jsonl'


def cross_encoder_output(value: str) -> str:
    """``rank --output``: a cross-encoder's score, ``logit`` or ``sigmoid`` (the ``output``
    of ``CrossEncoderScorer`` and of a pipeline file); anything else is refused saying what
    the two are (``softmax``: sigmoid, for a two-label model), and a file name (``--out``
    is what batch, eval and tune write to) that rank writes to standard output. (The
    scorers load when a value is checked, not when the parser is built.)"""
    from ...scorers.cross_encoder import OUTPUTS, outputs_said

    if value in OUTPUTS:
        return value
    said = f"expected logit or sigmoid (a cross-encoder's score), got {value!r}"
    if "/" in value or "\\" in value or Path(value).suffix:  # a file name
        said += (
            f"; rank writes its results to standard output: redirect it to a file: > FILE "
            f"({TO_A_FILE})"
        )
    else:
        said += f": {outputs_said(value)}"
    raise argparse.ArgumentTypeError(said)


#: what ``--reranker`` takes, for ``rank`` and ``batch``
RERANKER_HELP = (
    "a reranker name (`rerankit rerankers` lists them; - and _ alike), a pipeline file "
    "(.toml, .yaml, .json), or a model folder or Hugging Face hub id (a cross-encoder, "
    "embedding model or causal-LM reranker, told apart by its config.json); default: hybrid "
    "(the bundled MiniLM on passages and whole documents, BM25 and term proximity, "
    "calibrated) with the torch extra, or with the onnx extra and the bundled model's export "
    "in the rerankit cache (`rerankit export all-MiniLM-L6-v2`, where torch is); else bm25, "
    "said on stderr with the ways to the hybrid"
)


def add_commands(sub: Any) -> None:
    """``rank``."""
    rank = sub.add_parser(
        "rank",
        help="rerank documents from a JSONL file or JSON array",
        description="Read documents (JSON Lines or a JSON array of strings or objects), "
        "rerank them for the query and write JSON Lines, best first.",
        **examples(
            'rerankit rank -q "solar power" -i docs.jsonl --top-k 10',
            'rerankit rank -q "solar power" -i docs.jsonl -r bm25 --format table  # no model',
            'rerankit rank -q "solar power" -i docs.jsonl -r pipeline.toml --explain',
        ),
    )
    rank.add_argument(
        "--query",
        "-q",
        required=True,
        type=query_text,
        help="the search query (an empty one is refused, as batch and the service refuse it)",
    )
    rank.add_argument("--input", "-i", default="-", help="input file, or - for stdin (default)")
    rank.add_argument("--reranker", "-r", default=None, help=RERANKER_HELP)
    add_old_spelling(rank, "--config", "-c", dest="reranker", now="--reranker")
    add_refused_flag(
        rank,
        "--first-stage",
        why="rank reranks the documents --input gives and takes no first stage; name the "
        "field holding each one's first-stage score with --first-stage-field, or rerank a "
        "BEIR folder's queries over a run with `rerankit batch --data FOLDER --first-stage "
        "RUN`",
    )
    rank.add_argument("--top-k", "-k", type=positive_int, metavar="K", help="keep only the best K")
    add_field_arguments(rank)
    add_language_argument(rank)
    add_backend_arguments(rank)
    add_embedding_cache_if_asked_arguments(
        rank, "eval's candidates ranked again", "the documents are usually new"
    )
    add_refused_flag(
        rank, "--out", why=f"rank writes to standard output; redirect it: > FILE ({TO_A_FILE})"
    )
    rank.add_argument(
        "--output",
        type=cross_encoder_output,
        default=None,
        metavar="{logit,sigmoid}",
        help="a cross-encoder's score (-r a cross-encoder model, or cross-encoder): logit, "
        "the model's raw output (the default; score_scale logit), or sigmoid, its sigmoid "
        'in (0, 1) (score_scale unit), as output="sigmoid" gives in CrossEncoderScorer '
        'and output = "sigmoid" in a pipeline file\'s cross_encoder scorer',
    )
    rank.add_argument(
        "--format",
        choices=("jsonl", "table"),
        default=None,
        help="jsonl (the default without --explain): the input objects plus the score, "
        'its score_scale and, only when the ranking degraded, "degraded": true; table (the '
        "default with --explain): for people",
    )
    rank.add_argument(
        "--details",
        action="store_true",
        help="write result records (index, rank, score, score_scale, id, text, scores, flags, "
        "degraded) instead of the input objects (JSON Lines only)",
    )
    rank.add_argument(
        "--strict",
        action="store_true",
        help="a degraded result (a scorer or a rule stage failed, or without -r the default "
        "hybrid could not run and bm25 ranked: the warnings say which) is an error: exit 1 "
        "and write nothing, as a CI smoke test of a pipeline file wants",
    )
    rank.add_argument(
        "--deadline",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="a latency budget: a pipeline still running then writes the order of its last "
        "finished stage, degraded (a warning names the stage that did not finish; --strict "
        "makes it an error); with no stage finished, an error (exit 1). Local models load "
        "before it starts",
    )
    rank.add_argument(
        "--explain",
        action="store_true",
        help="show each document's per-strategy raw, normalised, weight and contribution: a "
        "table, or with --format jsonl an explanation field on each line",
    )
    remember_defaults(rank)
