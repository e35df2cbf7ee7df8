"""``rerankit check``: pipeline files, and the service's settings file, built as ``-r FILE``
and ``serve --settings FILE`` would build them, without documents, loading no model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .. import registry
from ..api import load, pipeline_name
from ..backends.hub import not_here
from ..cache import cache_defaults
from ..config import read_spec
from ..errors import InputError, RerankitError, no_such_file
from ..ordering import Rule
from ..rerankers import Pipeline
from ..rerankers.hybrid import REWEIGHTED_NOTE
from ..server.settings import ServerSettings, settings_beside
from .args import UsageError, examples
from .pipelines import is_settings_file

__all__ = ["add_commands", "check_settings", "cmd_check", "describe"]

#: what building a pipeline may raise: its mistake, said and counted
PROBLEMS = (InputError, RerankitError, ValueError, TypeError, OSError)


def describe(reranker: Any, name: str | None = None) -> str:
    """One line on what a built reranker will run: its ``name`` (default: the reranker's
    own), its stages, what each keeps, its scale."""

    def step(x: Any) -> str:
        if isinstance(x, Rule):
            return f"rule {registry.name_of('rule', x) or type(x).__name__}"
        return f"{x.name} ({', '.join(s.name for s in x.scorers()) or 'no scorer'})"

    if isinstance(reranker, Pipeline):
        keeps = {id(s): f", keeps {s.keep}" if s.keep else "" for s in reranker.stages}
        body = " -> ".join(f"{s.name}: {step(s.step)}{keeps[id(s)]}" for s in reranker.stages)
    else:
        body = step(reranker)
    steps = [s.step for s in reranker.stages] if isinstance(reranker, Pipeline) else [reranker]
    weights = [w for x in steps if (w := getattr(x, "reweighted", None))]
    said = ", ".join(f"{k} {round(v, 4):g}" for k, v in weights[0].items()) if weights else ""
    note = REWEIGHTED_NOTE.format(weights=said) if weights else ""
    return f"{name or reranker.name!r}: {body}; scores {reranker.score_scale}{note}"


def _in_file(name: str, exc: BaseException) -> str:
    """``exc`` said with the file's name in front, once."""
    said = str(exc)
    return said if said.startswith(f"{name}:") else f"{name}: {said}"


def _warn_models(name: str, reranker: Any, where: str = "") -> None:
    """Warn (on stderr; not a failure) of each model that is neither a folder nor in the
    local Hugging Face cache: it would be fetched from the hub."""
    models = {getattr(scorer, "model_id", None) for scorer in reranker.scorers()}
    for model in sorted(m for m in models if isinstance(m, str)):
        warning = not_here(model)
        if warning is not None:  # a hub id is legitimate: warned, not failed
            print(f"{name}: warning: {where}{warning}", file=sys.stderr)


def check_settings(name: str) -> int:
    """Check the service's settings file ``name`` as ``serve --settings`` reads it (its
    relative paths beside it, the flags' defaults): its [server] and [cache] tables, then
    every pipeline it serves, each built as serve builds it (models not loaded). Prints
    ``ok`` per pipeline, or its mistake; returns how many problems were found."""
    try:
        spec = settings_beside(read_spec(name, "settings file"), Path(name).resolve().parent)
        settings = ServerSettings.from_mapping(spec)
    except PROBLEMS as exc:
        print(_in_file(name, exc), file=sys.stderr)
        return 1
    failed = 0
    for pipeline, declared in (settings.pipelines or {}).items():
        try:
            with cache_defaults(settings.cache):  # as the service builds it
                reranker = load(declared)
        except PROBLEMS as exc:
            print(f"{name}: pipeline {pipeline!r}: {exc}", file=sys.stderr)
            failed += 1
            continue
        print(f"{name}: ok: {describe(reranker, pipeline)}")
        _warn_models(name, reranker, f"pipeline {pipeline!r}: ")
    return failed


def cmd_check(args: argparse.Namespace) -> int:
    """Build each pipeline file as ``-r FILE`` would, and each pipeline of a service
    settings file as ``serve --settings`` would, without documents or loading models;
    name each as ``serve`` and ``eval`` do (:func:`~rerankit.api.pipeline_name`), warning
    of a model that is neither a folder nor in the local Hugging Face cache."""
    for name in args.files:  # a file that is not there: a usage error, as every command says it
        if not Path(name).exists():
            raise UsageError(no_such_file(name, "a pipeline or settings file"))
    failed = 0
    for name in args.files:
        if is_settings_file(name):
            failed += check_settings(name)
            continue
        try:
            reranker = load(Path(name))
        except PROBLEMS as exc:
            print(_in_file(name, exc), file=sys.stderr)
            failed += 1
            continue
        print(f"{name}: ok: {describe(reranker, pipeline_name(name))}")
        _warn_models(name, reranker)
    return 1 if failed else 0


def add_commands(sub: Any) -> None:
    """``check``."""
    check = sub.add_parser(
        "check",
        help="check pipeline files, or the service's settings file, without running them",
        description="Build each pipeline file (.toml, .yaml, .json) as -r FILE would and say "
        "what it runs, or the mistake (ConfigError: the stage, the key): no documents are "
        "needed and no model is loaded (models load on first use, so a missing extra or a "
        "model that cannot load shows then; a model that is neither a folder nor in the "
        "local Hugging Face cache is warned of: it will be fetched from the hub). The "
        "service's settings file ([server], [pipelines.NAME], [cache]) is checked as `serve "
        "--settings FILE` reads it: its tables, then each pipeline it serves, one line each "
        "(check it before restarting a replica; API keys are not read). Exit status 1 when "
        "any file or pipeline has a mistake.",
        **examples(
            "rerankit check pipeline.toml",
            "rerankit check service.toml  # every pipeline the service would serve",
        ),
    )
    check.add_argument(
        "files", nargs="+", metavar="FILE", help="pipeline files or service settings files"
    )
    check.set_defaults(func=cmd_check)
