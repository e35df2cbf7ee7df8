"""``rerankit tune``: its arguments, and a call to :func:`rerankit.training.tune` whose
reporter prints the account (the test-split report included)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from ..api import PIPELINE_SUFFIXES
from ..errors import ConfigError
from ..training import TuneOptions, tune
from ..training.clicks.deploy import served_pipeline
from .args import (
    UsageError,
    embedding_cache_choice,
    given,
    refuse_unused,
)
from .clicks import cmd_tune_clicks, need_click_log
from .console import reporter
from .files import need_collection, need_file, need_first_stage, need_model

__all__ = ["cmd_tune"]

#: the flags of learning from judgments, which a click log's learning does not read
JUDGMENT_FLAGS = (
    "train_split",
    "test_split",
    "test_data",
    "first_stage",
    "candidates",
    "strategies",
    "embedding_max_length",
    "method",
    "unjudged",
    "calibrate",
    "max_queries",
    "embedding_cache",
    "no_embedding_cache",
    "metrics",
)

#: the flags of learning from a click log (--clicks)
CLICK_FLAGS = ("served", "features", "min_dwell_ms", "max_feedback_delay", "propensities")


def need_served(value: str | None) -> None:
    """``--served``: a pipeline file that is there, or a registered reranker name; anything
    else a :class:`~rerankit.cli.args.UsageError`, before any work."""
    if value is None or Path(value).exists():
        return
    if Path(value).suffix.lower() in PIPELINE_SUFFIXES:
        need_file(value, "--served", "a pipeline file")
    try:
        served_pipeline(value)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def cmd_tune(args: argparse.Namespace) -> int:
    need_model(args.embedding_model, "--embedding-model", "an embedding model folder")
    if args.clicks:
        refuse_unused(
            given(args, *JUDGMENT_FLAGS),
            "with --clicks: learning from a click log reads none of the flags of learning "
            "from judgments (--data FOLDER without --clicks)",
        )
        for log in args.clicks:
            need_click_log(log, "--clicks")
        need_served(args.served)
        need_file(args.data, "--data", "the corpus of the click log, a folder or its file")
        return cmd_tune_clicks(args)
    refuse_unused(
        given(args, *CLICK_FLAGS), "without --clicks: only learning from a click log reads it"
    )
    if not args.data:
        raise ValueError("tune needs --data FOLDER (judgments) or --clicks LOG (a click log)")
    need_collection(args.data)
    need_collection(args.test_data, "--test-data")
    need_first_stage(args.first_stage)
    refuse_unlearned(args)
    options = TuneOptions.from_namespace(args)
    options.embedding_cache = embedding_cache_choice(args)
    tune(reporter=reporter(args), **asdict(options))  # the reporter prints the account
    return 0


def refuse_unlearned(args: argparse.Namespace) -> None:
    """The flags of one way of learning refused with another: ``--calibrate`` refits the
    calibrated hybrid (no fusion search, no LightGBM), ``--method ltr`` learns from every
    signal (no ``--strategies``), and only ``--method ltr`` reads ``--seeds`` and
    ``--unjudged``."""
    if args.calibrate:
        refuse_unused(
            given(args, "method", "strategies"),
            "with --calibrate, which refits the calibrated hybrid's weights instead of "
            "searching fusions or training a LightGBM ranker",
        )
    elif args.method == "ltr":
        refuse_unused(
            given(args, "strategies"),
            "with --method ltr: the LightGBM ranker learns from every signal",
        )
    if args.calibrate or args.method != "ltr":
        refuse_unused(
            given(args, "seeds", "unjudged"),
            "without --method ltr: only the LightGBM ranker reads --seeds and --unjudged",
        )
