"""``rerankit check``: pipeline files, and the service's settings file, built as ``-r FILE``
and ``serve --settings FILE`` would build them, without documents, loading no model."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .. import registry
from ..api import load, pipeline_name
from ..backends.hub import missing_folder, not_here
from ..config import read_spec
from ..errors import InputError, RerankitError, no_such_file
from ..llm.base import KEYS_OPTIONAL
from ..normalize import served_scales
from ..ordering import Rule
from ..rerankers import Pipeline
from ..rerankers.hybrid import REWEIGHTED_NOTE, HybridReranker
from ..scorers.local import load_problems, models_run
from ..server.admission import isolation_warning
from ..server.api_keys import keys_said
from ..server.building import build_pipeline
from ..server.cache_report import cache_check, cache_dir_check
from ..server.feedback import UNSET_NOTED, experiments_said
from ..server.llm_deadline import deadline_warnings
from ..server.model_names import unserved_note
from ..server.settings import API_KEY_ENV, ServerSettings
from ..server.shutdown import cut_warning
from .args import UsageError
from .check_clicks import need_click_flags, report_clicks
from .files import need_model, need_reranker
from .pipelines import is_settings_file
from .serve import serve_settings, served_pipeline, settings_args

__all__ = ["check_settings", "cmd_check", "describe", "setting_warnings"]

#: what building a pipeline may raise: its mistake, said and counted
PROBLEMS = (InputError, RerankitError, ValueError, TypeError, OSError)


def describe(reranker: Any, name: str | None = None, *, served: bool = False) -> str:
    """One line on what a built reranker will run: its ``name`` (default: the reranker's
    own), its stages, what each keeps, its scale: with ``served``, the scale the service
    answers (``scores unit (raw_scores logit)`` for a cross-encoder, as ``/info`` says)."""

    def step(x: Any) -> str:
        if isinstance(x, Rule):
            return f"rule {registry.name_of('rule', x) or type(x).__name__}"
        return f"{x.name} ({', '.join(s.name for s in x.scorers()) or 'no scorer'})"

    if isinstance(reranker, Pipeline):
        keeps = {
            id(s): (f", keeps {s.keep}" if s.keep else "")
            + (f", max_demotion {s.max_demotion}" if s.max_demotion is not None else "")
            for s in reranker.stages
        }
        body = " -> ".join(f"{s.name}: {step(s.step)}{keeps[id(s)]}" for s in reranker.stages)
    else:
        body = step(reranker)
    steps = [s.step for s in reranker.stages] if isinstance(reranker, Pipeline) else [reranker]
    weights = [w for x in steps if (w := getattr(x, "reweighted", None))]
    said = ", ".join(f"{k} {round(v, 4):g}" for k, v in weights[0].items()) if weights else ""
    note = REWEIGHTED_NOTE.format(weights=said) if weights else ""
    scoring = [x for x in steps if not isinstance(x, Rule)]
    if weights and scoring and not getattr(scoring[-1], "reweighted", None):
        note = f" (a hybrid with weights {said}; a later stage gives the scores)"
    scales = served_scales(reranker.score_scale)
    scale = scales["scores"] if served else scales["raw_scores"]
    if served and scales["scores"] != scales["raw_scores"]:
        scale += f" (raw_scores {scales['raw_scores']})"
    if reranker.score_scale != "relative" and getattr(scoring[-1], "fuses_first_stage", 0):
        note += "; scores relative when every document carries a first-stage score"
    return f"{name or reranker.name!r}: {body}; scores {scale}{note}"


def _in_file(name: str, exc: BaseException) -> str:
    """``exc`` said with the file's name in front, once."""
    said = str(exc)
    return said if said.startswith(f"{name}:") else f"{name}: {said}"


def _models(reranker: Any) -> list[str]:
    models = {getattr(scorer, "model_id", None) for scorer in reranker.scorers()}
    return sorted(m for m in models if isinstance(m, str))


def setting_warnings(reranker: Any) -> list[str]:
    """What building ``reranker`` logged of its stages' order (a rule's order undone later),
    and what its reranks warn of whatever the text (a hybrid's language beside an English
    model): its own, and each stage's (said with that stage's name)."""
    if isinstance(reranker, HybridReranker):
        return [note] if (note := reranker.language_setting_note()) else []
    if not isinstance(reranker, Pipeline):
        return []
    said = list(reranker.order_warnings)
    for stage in reranker.stages:
        said.extend(f"stage {stage.name!r}: {w}" for w in setting_warnings(stage.step))
    return said


def _warn_models(name: str, reranker: Any, where: str = "") -> None:
    """Warn (not a failure) of each model that is neither a folder nor in the
    local Hugging Face cache: it would be fetched from the hub."""
    for model in _models(reranker):
        warning = not_here(model)
        if warning is not None:  # a hub id is legitimate: warned, not failed
            print(f"{name}: warning: {where}{warning}")


def _ok(name: str, reranker: Any, pipeline: str | None = None, *, served: bool = False) -> str:
    """The ``ok`` line of a built reranker: what it runs (with ``served``, the scale the
    service answers: :func:`describe`); or, when a model folder it names
    is not here, only that it built (what a folder holds, such as an export of the bundled
    model, decides a hybrid's scorers and scale: said here, they could be wrong)."""
    missing = [m for m in _models(reranker) if missing_folder(m)]
    if not missing:
        said = f"; runs {', '.join(runs)}" if (runs := models_run(reranker)) else ""
        return f"{name}: ok: {describe(reranker, pipeline, served=served)}{said}"
    return (
        f"{name}: ok: {(pipeline or reranker.name)!r} builds; its scorers and scale are not "
        f"described, since model {missing[0]!r} is not here to read (check where it is)"
    )


def _cannot_load(name: str, pipeline: str, reranker: Any) -> int:
    """Print why each model of ``pipeline`` cannot load in this install (a mistake: serve
    would fail to load it); return how many."""
    problems = load_problems(reranker)
    for problem in problems:
        print(f"{name}: pipeline {pipeline!r}: {problem}")
    return len(problems)


def _keyless(build: Any) -> tuple[Any, BaseException | None]:
    """``build()``; one that fails only for an LLM provider's key that is not set here is
    built again without it: the reranker, and the failure to warn of (None when built)."""
    try:
        return build(), None
    except PROBLEMS as strict:
        token = KEYS_OPTIONAL.set(True)
        try:
            return build(), strict
        except PROBLEMS:
            raise strict from None
        finally:
            KEYS_OPTIONAL.reset(token)


def _build(name: str, pipeline: str, declared: Any, settings: ServerSettings) -> Any:
    """Pipeline ``pipeline`` built as the service builds it; one that fails only for an
    API key that is not set here is built without it, and the missing key is a warning
    (CI has no secrets; ``serve`` needs it)."""

    def build() -> Any:
        return build_pipeline(declared, settings)

    reranker, strict = _keyless(build)
    if strict is not None:
        print(
            f"{name}: warning: pipeline {pipeline!r}: {strict} (checked without it; serve "
            "needs it)",
        )
    return reranker


def _unset(key: str, variable: str) -> str:
    """The warning of ``$variable``, which ``key`` reads, not set here (or, for API keys,
    set but holding none): serve would refuse to start."""
    if key.startswith("api_key"):
        state = "is set here but holds no keys" if variable in os.environ else "is not set here"
        return (
            f"{key}: the environment variable {variable!r} {state} (checked without API "
            "keys; serve needs it to hold one or several, comma-separated)"
        )
    return (
        f"{key}: the environment variable {variable!r} is not set here (checked as written; "
        "serve needs it set)"
    )


def check_settings(
    name: str, reranker: str | None = None, moved: dict[str, str | None] | None = None
) -> int:
    """Check the service's settings file ``name`` as ``serve --settings`` reads it (its
    relative paths beside it, the flags' defaults; with ``reranker``, as ``serve --settings
    NAME --reranker RERANKER`` serves it): its [server] and [cache] tables, then
    every pipeline it serves, each built as serve builds it (models not loaded). Prints
    ``ok`` per pipeline, or its mistake; returns how many problems were found. An
    environment variable the file names (``${REDIS_PASSWORD}``) or an API key that is not
    set here is a warning naming it, not a mistake (CI has no secrets); so is a ``deadline``
    longer than ``graceful_timeout``, as serve warns of it, and an LLM scorer whose one call
    can take longer than the ``deadline`` (:func:`deadline_warnings`)."""
    unset: list[tuple[str, str]] = []
    token = UNSET_NOTED.set(unset)
    try:
        settings = serve_settings(settings_args(name, reranker, moved))  # as serve reads it
        spec = read_spec(name, "settings file")  # (its own api_keys, counted below)
    except PROBLEMS as exc:
        said = _in_file(name, exc)
        if reranker is None and "names pipeline" in said:  # an alias of what -r serves?
            said += (
                f" (a pipeline that `serve --reranker X` adds? check the file as serve runs it: "
                f"rerankit check {name} --reranker X)"
            )
        print(said)
        return 1
    finally:
        UNSET_NOTED.reset(token)
    for key, variable in dict.fromkeys(unset):
        print(f"{name}: warning: {_unset(key, variable)}")
    cut = cut_warning(settings.timeout, settings.graceful_timeout)
    if cut is not None:
        print(f"{name}: warning: {cut}")
    served = len(settings.pipelines or ())
    alone = isolation_warning(settings.max_concurrency, settings.pipeline_share(), served)
    if alone is not None:  # as serve warns of it at start
        print(f"{name}: warning: {alone}")
    left_out = unserved_note(settings.aliases or {}, settings.pipelines or {})
    if left_out is not None:
        print(f"{name}: note: {left_out}")  # (only with aliases = {}, on purpose)
    failed = 0
    for pipeline, declared in (settings.pipelines or {}).items():
        try:
            reranker = _build(name, pipeline, declared, settings)
        except PROBLEMS as exc:
            print(f"{name}: pipeline {pipeline!r}: {exc}")
            failed += 1
            continue
        if _cannot_load(name, pipeline, reranker):
            failed += 1
            continue
        print(_ok(name, reranker, pipeline, served=True))
        for warning in setting_warnings(reranker):
            print(f"{name}: warning: pipeline {pipeline!r}: {warning}")
        _warn_models(name, reranker, f"pipeline {pipeline!r}: ")
        for warning in deadline_warnings(reranker, settings.timeout):
            print(f"{name}: warning: pipeline {pipeline!r}: {warning}")
    in_file = len(dict(spec.get("server") or {}).get("api_keys") or [])
    variable = settings.api_key_env or API_KEY_ENV
    said = keys_said(in_file, variable, settings.api_key_env is not None, os.environ.get(variable))
    print(f"{name}: {said}")
    line, level = cache_check(settings)  # one PING of a shared server, at most
    print(f"{name}: warning: {line}" if level == "warning" else f"{name}: {line}")
    failed += level == "mistake"
    unwritable = cache_dir_check(settings)
    if unwritable is not None:  # a mistake only where serve would not start
        mistake, said = unwritable
        print(f"{name}: {said}" if mistake else f"{name}: warning: {said}")
        failed += mistake
    if settings.feedback is not None:  # what an approver asks of the click log
        print(f"{name}: feedback on: {settings.feedback.describe()}")
    for line in experiments_said(settings):  # and what users will be shown
        print(f"{name}: {line}")
    return failed


#: the flags that move the built-in hybrid's and embedding's model, as in rank and serve
MOVING = ("model", "backend", "quantize")


def _served(name: str, moved: dict[str, str | None]) -> argparse.Namespace:
    """The flags ``serve --reranker NAME`` would read with ``moved`` (the others unset)."""
    return argparse.Namespace(reranker=name, language=None, **moved)


def cmd_check(args: argparse.Namespace) -> int:
    """Build each pipeline file as ``-r FILE`` would, and each pipeline of a service
    settings file as ``serve --settings`` would, without documents or loading models;
    name each as ``serve`` and ``eval`` do (:func:`~rerankit.api.pipeline_name`), warning
    of a model that is neither a folder nor in the local Hugging Face cache."""
    need_click_flags(args)
    if args.clicks and not args.files:
        return report_clicks(args.clicks, args.data)
    if not args.files:
        raise UsageError("name a pipeline or settings file to check, or --clicks LOG")
    for name in args.files:  # a file that is not there: a usage error, as every command says it
        if not Path(name).exists():
            raise UsageError(no_such_file(name, "a pipeline or settings file"))
    settings = any(is_settings_file(n) for n in args.files)
    need_reranker(args.reranker, named_later=settings)  # (its plugins may register it)
    if args.reranker is not None and not settings:
        raise UsageError(
            f"--reranker {args.reranker} goes with the service's settings file (check "
            f"service.toml --reranker {args.reranker} checks what `serve --settings "
            f"service.toml --reranker {args.reranker}` serves); a pipeline file is checked "
            "by naming it: rerankit check FILE"
        )
    need_model(args.model, "--model", "a model folder")
    moved = {key: getattr(args, key) for key in MOVING}
    failed = 0
    for name in args.files:
        if is_settings_file(name):
            failed += check_settings(name, args.reranker, moved)
            continue
        if Path(name).suffix.lower() in (".jsonl", ".ndjson"):  # a click log, most likely
            print(
                f"{name}: a pipeline or settings file is .toml, .yaml, .yml or .json; a click "
                f"log is checked with rerankit check --clicks {name}"
            )
            failed += 1
            continue
        # as `rank -r FILE` / `serve --reranker FILE` read it with the same flags
        spec = served_pipeline(_served(name, moved)) if any(moved.values()) else name
        spec = Path(name) if spec == name else spec
        try:  # a provider key not set here: a warning, as in a settings file
            reranker, strict = _keyless(lambda spec=spec: load(spec))
        except PROBLEMS as exc:
            print(_in_file(name, exc))
            failed += 1
            continue
        if strict is not None:
            warned = _in_file(name, strict).replace(f"{name}: ", "", 1)
            print(f"{name}: warning: {warned} (checked without it; rank and serve need it)")
        if _cannot_load(name, pipeline_name(name), reranker):
            failed += 1
            continue
        print(_ok(name, reranker, pipeline_name(name)))
        for warning in setting_warnings(reranker):
            print(f"{name}: warning: {warning}")
        _warn_models(name, reranker)
    if args.clicks:  # a click log besides: checked after the files
        failed += report_clicks(args.clicks, args.data)
    return 1 if failed else 0
