"""``tune``'s parser: its flags, their help and checks, and nothing the
command runs (:mod:`rerankit.cli.tune`, imported when it runs)."""

from __future__ import annotations

import argparse
from typing import Any

from ..args import (
    add_candidates_argument,
    add_data_argument,
    add_embedding_cache_arguments,
    add_first_stage_argument,
    add_max_queries_argument,
    add_metrics_argument,
    add_no_progress_argument,
    examples,
    positive_float,
    positive_int,
    remember_defaults,
)
from .clicks import add_tune_click_arguments

__all__ = ["add_commands", "adopt_margin"]


def adopt_margin(value: str) -> float:
    """``--adopt-margin``: a positive number; 0 or less refused with the flag that writes
    the learned pipeline whatever its gain."""
    try:
        return positive_float(value)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(
            f"{exc}; to write the learned pipeline whatever its gain, add --keep-learned "
            "(with --calibrate: the default's order with its probabilities refitted)"
        ) from None


def add_commands(sub: Any) -> None:
    tu = sub.add_parser(
        "tune",
        help="fit a pipeline to your judgments, keeping it only when it beats the default",
        description="Fit a pipeline on the training split: fusion weights of the first-stage "
        "score, BM25 over the candidates and the embedding (weighted min-max, weighted z-score "
        "and RRF; a 0.1 grid), or with --calibrate the calibrated hybrid's weights, or with "
        "--method ltr a LightGBM ranker. Settings are chosen by k-fold cross-validation over "
        "the training queries (folds by query, nested so the estimate is honest) and compared "
        "with the default on the same folds; when the learned pipeline does not beat the "
        "default by more than twice the noise of that comparison, the default is written instead "
        "(--keep-learned writes the learned one anyway). A learning curve says whether more "
        "judgments would help. The written pipeline is then reported once on the test split, "
        "which never informs the choice. With --clicks LOG it learns from a click log "
        "instead (see --clicks).",
        **examples(
            "rerankit tune --data my-data --out tuned.toml",
            "rerankit tune --data my-data --method ltr  # a LightGBM ranker (extra learn)",
            "rerankit tune --data my-data --metrics ndcg@5,map@100  # more in the test report",
            "rerankit tune --clicks clicks.jsonl --out learned.toml",
        ),
    )
    add_data_argument(
        tu,
        required=False,
        also="; with --clicks, the corpus of a log that kept hashes or ids only",
    )
    add_tune_click_arguments(tu)
    tu.add_argument(
        "--train-split",
        default="train",
        metavar="SPLIT",
        help="split to choose on (default train); SPLIT:odd / SPLIT:even for half of a split's "
        "queries (by position in queries.jsonl)",
    )
    tu.add_argument(
        "--test-split",
        default="test",
        metavar="SPLIT",
        help="split to report on (default test); it may not share a query with the training "
        "split. Without it (labels made by `rerankit label`, say) the report is skipped",
    )
    tu.add_argument(
        "--test-data",
        help="report on this folder's --test-split instead (e.g. the judged collection "
        "whose training queries `rerankit label` labelled)",
    )
    add_first_stage_argument(tu)
    add_candidates_argument(tu, "first-stage candidates per query")
    tu.add_argument(
        "--strategies",
        default="first_stage,bm25,embedding",
        help="signals to fuse, two or more of first_stage, bm25, embedding",
    )
    tu.add_argument(
        "--out",
        help="TOML pipeline file to write (default tuned-<dataset>.toml; calibrated-... with "
        "--calibrate, ltr-... with --method ltr, tuned-clicks.toml with --clicks); learning "
        "from judgments, it is named after its file (its stem), as serve and eval name it",
    )
    add_embedding_cache_arguments(tu)
    tu.add_argument(
        "--embedding-model",
        default=None,
        help="embedding model (hub id or folder, e.g. from `rerankit train embedding`) for "
        "the fusion, calibration or features; written into the pipeline file "
        "(default: the bundled all-MiniLM-L6-v2)",
    )
    tu.add_argument(
        "--embedding-max-length",
        type=positive_int,
        default=None,
        help="tokens the embedding model reads per document (MiniLM: 256 unless set)",
    )
    tu.add_argument(
        "--method",
        choices=("fusion", "ltr"),
        default="fusion",
        help="fusion: search fusion weights (default); ltr: train a LightGBM ranker over "
        "rerankit's signals (extra learn)",
    )
    tu.add_argument(
        "--unjudged",
        choices=("auto", "negative", "skip"),
        default="auto",
        help="ltr: candidates the training qrels do not name are non-relevant (negative, "
        "as in most judged collections) or left out of training and of the "
        "cross-validation's nDCG (skip: right for labels that judged only each query's top "
        "few); auto (default): skip for a folder written by `rerankit label`, else negative",
    )
    tu.add_argument(
        "--seeds",
        type=positive_int,
        default=1,
        help="ltr: compare the settings by the mean over this many LightGBM seeds (default 1)",
    )
    tu.add_argument(
        "--folds",
        type=positive_int,
        default=5,
        help="cross-validation folds over the training queries (default 5; at least 3, "
        "which nested cross-validation needs). With fewer than two training queries per "
        "fold, tune uses half as many folds as queries, but 3 at least; it needs 4 "
        "training queries",
    )
    tu.add_argument(
        "--keep-learned",
        action="store_true",
        help="write the learned pipeline even when it does not beat the default by more "
        "than --adopt-margin times the cross-validation noise (by default the default "
        "pipeline is written then). With --calibrate it keeps the default's order and writes "
        "the probabilities refitted to the training split (the refitted weights are written "
        "only when they beat the default)",
    )
    tu.add_argument(
        "--adopt-margin",
        type=adopt_margin,
        default=None,
        metavar="Z",
        help="adopt the learned pipeline only when its cross-validated gain over the default "
        "is above Z times the noise (default 2)",
    )
    tu.add_argument(
        "--calibrate",
        action="store_true",
        help="instead of searching fusions, refit the calibrated texts-only hybrid (scores "
        "that estimate P(relevant) per pair) on the training split; when that does not order "
        "better than the default, keep the default's order and refit only its probabilities",
    )
    add_metrics_argument(tu, "on the test split ", "the choice and its verdict")
    add_max_queries_argument(tu)
    add_no_progress_argument(
        tu,
        "default: a bar on a terminal, else a line now and then, as in a log file; the start "
        "of each long step is said either way",
    )
    remember_defaults(tu)
