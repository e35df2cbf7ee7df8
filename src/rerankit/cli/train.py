"""``rerankit train``: its arguments, a call to :func:`rerankit.training.fine_tune`, and
the warnings its check calls for printed."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import asdict

from ..backends.bundled import resolve_source
from ..backends.hub import hub_reachable, in_hub_cache, is_hub_id
from ..training import FineTuneOptions, fine_tune
from ..training.fine_tuning import NAMES
from ..training.next_step import as_path, check_train_split, tune_splits
from .args import (
    UsageError,
)
from .console import note, reporter, training_progress
from .files import need_collection, need_model

__all__ = ["cmd_train"]


def cmd_train(args: argparse.Namespace) -> int:
    need_collection(args.data)
    options = FineTuneOptions.from_namespace(args)
    options.check()  # the options' own refusals first (--train-split test among them)
    check_train_split(args.data, args.train_split)
    need_model(args.model, "--model", "the model folder to start from")
    need_hub(args.model)
    result = fine_tune(
        args.data,
        args.out,
        progress=training_progress(not args.no_progress),
        reporter=reporter(args),
        **asdict(options),
    )
    check = result.held_out_check or result.cross_fit_check
    if check is None:
        return 0
    what = NAMES[args.what]
    model, unseen = (
        (f"trained {what} does", "it")
        if check is result.held_out_check
        else (f"trained {what}'s fold models do", "each")
    )
    if not check.beats_first_stage:
        use = (
            "`rerankit tune --method ltr` learns from the same judgments"
            if args.what == "cross_encoder"
            else "as features it may still help: `rerankit tune --data "
            f"{shlex.quote(args.data)}{tune_splits(args.train_split)} --method ltr "
            f"--embedding-model {shlex.quote(as_path(args.out))}` measures "
            "that against the default"
        )
        note(
            f"warning: the {model} not rank better than BM25 on the "
            f"{check.queries} queries {unseen} did not see; do not serve it as it is (more "
            "--epochs or a higher --learning-rate, into a new --out folder, or more judgments "
            f"may help; {use})"
        )
    if check.beats_start is False:
        note(
            f"warning: the trained {what} ranks no better than the model it started from "
            "on queries it did not see"
        )
    return 0


def need_hub(model: str) -> None:
    """``--model`` a hub id (neither a folder here nor the bundled model) that the local
    Hugging Face cache does not hold, while the hub cannot be reached (or ``HF_HUB_OFFLINE``
    is set): a :class:`UsageError` in one line, before anything loads (the library's own
    error is several lines about the hub's client)."""
    if not is_hub_id(model) or resolve_source(model) != model or in_hub_cache(model):
        return
    if not hub_reachable():
        raise UsageError(
            f"--model {model}: the Hugging Face hub cannot be reached (or HF_HUB_OFFLINE is "
            "set) and the local Hugging Face cache does not hold this model; a local model "
            "folder works offline: --model PATH"
        )
