"""``rerankit serve``: the HTTP service, from flags and/or a settings file."""

from __future__ import annotations

import argparse
import logging
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import registry
from ..api import PIPELINE_SUFFIXES
from ..backends.detect import folder_kind
from ..config import read_pipeline, read_spec
from ..errors import ConfigError, InputError, in_file
from ..server import serve
from ..server.deadline_setting import DEADLINE_KEYS
from ..server.logs import log_formatter
from ..server.settings import (
    API_KEY_ENV,
    ServerSettings,
    flag_pipeline,
    key_variable_problem,
    on_backend,
    settings_beside,
)
from ..server.shutdown import exit_quickly
from .args import (
    UsageError,
    refuse_unused,
)
from .files import need_file, need_model, need_reranker
from .parsers.serve import add_commands
from .pipelines import (
    in_language,
    model_flags,
    pipeline_name,
    pipeline_spec,
    refuse_model_flags,
)

__all__ = ["cmd_serve", "serve_settings", "served_pipeline", "settings_args"]


def serve_settings(args: argparse.Namespace) -> Any:
    """The ServerSettings ``rerankit serve`` runs: the ``--settings`` file's, with the flags
    overriding it (``--reranker`` adds that pipeline to the file's declared ``[pipelines]``
    as the default, or serves it alone when the file declares none, as without
    ``--settings``: the built-ins are served only when no pipeline is named; a pipeline file
    is listed under the ``name`` it declares, else its file name; ``--model`` without
    ``--reranker`` is the built-in hybrid's and embedding's model wherever they are served:
    the three built-ins, or the file's pipelines that name them, adding none)."""

    spec: dict[str, Any] = {}
    if args.settings and model_folder(args.settings):
        raise ConfigError(
            f"a model folder, not a settings file: name it with `-r {args.settings}` "
            f"(`rerankit serve -r {args.settings}`), or as the model of a pipeline file "
            "that a settings file's [pipelines] lists",
            where=args.settings,
        )
    if args.settings:  # its relative paths (pipeline files, models, the click log) beside it
        spec = read_spec(args.settings, "settings file")
        try:  # (an unset ${NAME} in it: the file's mistake, exit 1, as its api_key_env's)
            spec = settings_beside(spec, Path(args.settings).resolve().parent)
        except ValueError as exc:
            raise in_file(ConfigError(str(exc)), args.settings) from None
    server = dict(spec.get("server") or {})
    if args.api_key_env or "api_key_env" not in server:  # (the file's: said with the file)
        variable = args.api_key_env or API_KEY_ENV
        named, others = bool(args.api_key_env), bool(server.get("api_keys"))
        problem = key_variable_problem(variable, named, others)
        if problem is not None and named:  # a usage error, said as the flag
            raise UsageError(f"--api-key-env {variable}: {problem}")
        if problem is not None:  # the environment's: a usage error too, said the same way
            raise UsageError(problem)
    pipelines = dict(spec["pipelines"]) if spec.get("pipelines") else None
    for key in ("backend", "quantize", "api_key_env"):
        if getattr(args, key):
            server[key] = getattr(args, key)
    if args.deadline is not None:  # the file's, under either name, replaced
        server = {k: v for k, v in server.items() if k not in DEADLINE_KEYS}
    for key in ("deadline", "shutdown_delay", "graceful_timeout"):  # (0 is a value)
        if getattr(args, key, None) is not None:
            server[key] = getattr(args, key)
    if args.reranker or args.language:
        name = pipeline_name(args.reranker or "hybrid")
        pipelines = {**(pipelines or {}), name: served_pipeline(args)}
        server["default"] = name
    else:  # --model, as --backend, moves the built-in hybrid and embedding where served
        if args.model:  # (the built-ins, or the file's pipelines naming them; its default)
            server["model"] = args.model
        if pipelines is not None and not any(
            on_backend(p, "onnx") != p for p in pipelines.values()
        ):
            refuse_unused(  # the file's pipelines alone, none of which the flags would move
                {"--model": args.model, **model_flags(args)},
                f"with --settings {args.settings}: --model, --backend and --quantize move the "
                "built-in hybrid and embedding wherever a pipeline names them, and none of its "
                "pipelines does (a scorer's own model, backend and quantize options place its "
                "model; or serve one with --reranker hybrid --model ...)",
            )
    if args.plugin and isinstance(server.get("plugins") or [], list):  # workers import them
        server["plugins"] = [*(server.get("plugins") or []), *args.plugin]
    mapping: dict[str, Any] = {"server": server}
    if pipelines:
        mapping["pipelines"] = pipelines
    if spec.get("cache"):
        mapping["cache"] = spec["cache"]
    try:
        return ServerSettings.from_mapping(mapping)
    except ValueError as exc:  # said with the settings file it is in, when there is one
        if not args.settings:
            raise
        found = exc if isinstance(exc, ConfigError) else ConfigError(str(exc))
        raise in_file(found, args.settings) from None


def model_folder(path: str) -> bool:
    """Whether ``path`` is a model's folder (its files or config.json say so)."""
    return folder_kind(path) is not None or (Path(path) / "config.json").is_file()


def settings_args(
    settings: str, reranker: str | None = None, moved: Mapping[str, str | None] | None = None
) -> argparse.Namespace:
    """The flags ``rerankit serve --settings SETTINGS [--reranker RERANKER]`` means (with
    ``moved``: ``--model``, ``--backend``, ``--quantize`` as given, None when not), every
    other at its default: what ``rerankit check`` reads a settings file with, so that it
    checks what serve would serve (:func:`serve_settings`, one reading for both)."""
    parser = argparse.ArgumentParser(prog="rerankit")
    add_commands(parser.add_subparsers())
    named = [f"--reranker={reranker}"] if reranker is not None else []
    named += [f"--{key}={value}" for key, value in (moved or {}).items() if value is not None]
    args = parser.parse_args(["serve", f"--settings={settings}", *named])
    args.plugin = []  # (imported by the command that asks, as serve imports its own)
    return args


def served_pipeline(args: argparse.Namespace) -> Any:
    """What ``--reranker`` (else hybrid) serves, with ``--model``, ``--backend``,
    ``--quantize`` and ``--language``: a registered reranker with those options; a pipeline
    file with its built-in hybrid and embedding moved as ``rank -r FILE`` moves them (its
    relative paths read beside it); a model folder or hub id read as ``rank -r`` and
    ``eval`` read it (:func:`~rerankit.cli.pipelines.pipeline_spec`), so ``-r FOLDER
    --quantize int8`` means the same in every command."""
    reranker = args.reranker or "hybrid"
    if registry.canonical("reranker", reranker) is not None:
        if args.reranker:
            refuse_model_flags(args, [reranker], f"--reranker {reranker}")
        return flag_pipeline(reranker, args.model, args.backend, args.quantize, args.language)
    if Path(reranker).suffix.lower() not in PIPELINE_SUFFIXES:  # a model folder or hub id
        if args.model:
            raise UsageError(
                f"--model names the model of a registered reranker (hybrid, cross-encoder, "
                f"...); --reranker {reranker} is a model itself, so give one or the other"
            )
        return pipeline_spec(reranker, args)
    in_language(reranker, args.language)  # a file sets its own: refused
    if not (args.model or args.backend or args.quantize):
        return reranker
    refuse_model_flags(args, [reranker], f"--reranker {reranker}")
    declared = read_pipeline(reranker)
    moved = on_backend(declared, args.backend or "auto", args.quantize, args.model)
    if moved == declared:  # --model alone, and nothing it could be
        refuse_unused(
            {"--model": args.model},
            f"with --reranker {reranker}: it names neither the built-in hybrid nor "
            f'embedding (name the model on its scorers: model = "{args.model}" on each '
            '{ type = "embedding" } scorer)',
        )
    return moved


def check_port_free(host: str, port: int) -> None:
    """InputError when nothing can listen on ``host:port`` (another service has it), said
    before any model loads rather than as a crash at the end."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise InputError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc} (restarting a "
                "replica on this port? wait until the old process has exited: after SIGTERM "
                "it serves for shutdown_delay, then finishes its requests; another service "
                "on the port? choose another with --port)"
            ) from None


def cmd_serve(args: argparse.Namespace) -> int:
    if args.check:  # the settings are checked by `rerankit check`, which takes them too
        raise UsageError(
            f"serve has no --check: `rerankit check {args.settings or 'FILE'}` checks a "
            "settings file (every pipeline it serves, as serve builds them) without serving"
        )
    need_file(args.settings, "--settings", "the service's settings file")
    need_reranker(args.reranker, named_later=args.settings is not None)  # its plugins
    need_model(args.model, "--model", "a model folder")
    settings = serve_settings(args)  # its mistakes first: they do not depend on the port
    check_port_free(args.host, args.port)
    level = args.log_level or ("debug" if getattr(args, "verbose", 0) > 1 else "info")
    if not logging.getLogger().handlers:
        handler = logging.StreamHandler()  # (stderr) each line with its time, ISO 8601
        handler.setFormatter(log_formatter(args.log_format))
        logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(level.upper())
    if args.log_format == "json":  # every line one JSON object: -v's handler's too, and
        for handler in logging.getLogger().handlers:  # a Python warning's (not two lines)
            handler.setFormatter(log_formatter("json"))
        logging.captureWarnings(True)
    serve(
        settings,
        host=args.host,
        port=args.port,
        graceful_seconds=settings.graceful_timeout,
        workers=args.workers,
        log_level=level,
        log_format=args.log_format,
    )
    exit_quickly()  # the process ends here: no last garbage collection over the models
    return 0
