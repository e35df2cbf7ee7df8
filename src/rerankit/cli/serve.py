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
from ..server.logs import LOG_FORMATS, log_formatter
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
    add_backend_arguments,
    add_language_argument,
    add_old_spelling,
    examples,
    non_negative_float,
    port_number,
    positive_float,
    positive_int,
    refuse_unused,
)
from .files import need_file, need_model, need_reranker
from .pipelines import (
    in_language,
    model_flags,
    pipeline_name,
    pipeline_spec,
    refuse_model_flags,
)

__all__ = ["add_commands", "cmd_serve", "serve_settings", "served_pipeline", "settings_args"]


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


def add_commands(sub: Any) -> None:
    """``serve``."""
    srv = sub.add_parser(
        "serve",
        help="run the HTTP service (Cohere-, TEI-, Infinity-, Jina- and Voyage-compatible)",
        description="Serve rerank endpoints that Cohere's (/v1/rerank, /v2/rerank; Jina's and "
        "Voyage's requests too), Text Embeddings Inference's and Infinity's (/rerank) clients "
        "call, with /health, /ready, "
        "/metrics and /v1/models. Without --settings it serves the built-ins hybrid (the "
        "default), bm25 and embedding (--model, --backend and --quantize set the hybrid's "
        "and embedding's model and where it runs); --settings FILE serves the pipelines its "
        "[pipelines] declares, or the built-ins when it declares none; --reranker X serves "
        "X as the default pipeline, beside the pipelines the file's [pipelines] declares "
        "(replacing the one named X), else alone: without --settings, or with a file that "
        "declares no [pipelines], the built-ins are not served beside X (declare them, "
        '[pipelines] bm25 = "bm25", to serve them too; `rerankit check FILE --reranker X` '
        "checks what this serves). A pipeline that cannot load (a torch model on a "
        "torch-free install, say) does not stop the server: it logs the error and stays up, "
        "/health answering 200 and /ready 503, that pipeline's requests 503 (docs/service.md, "
        "'When a pipeline cannot load or a provider stalls'). On SIGTERM /ready says "
        "stopping while requests are still served for --shutdown-delay seconds, then it "
        "stops; SIGINT stops at once.",
        **examples(
            "rerankit serve --port 8080  # hybrid, bm25 and embedding",
            "rerankit serve --reranker tuned.toml  # the pipeline tune wrote",
            "rerankit serve --model minilm-onnx  # a folder rerankit export wrote: no torch",
            "rerankit serve --settings service.toml",
        ),
    )
    srv.add_argument(
        "--settings",
        default=None,
        metavar="FILE",
        help="the service's settings file, TOML (.toml), YAML (.yaml/.yml: extra yaml) or "
        "JSON (.json), told by its suffix: a [server] table (API keys, limits, "
        "interleave and explore, ...) with its [server.feedback] table (the click log, as "
        "docs/clicks.md shows; it keeps queries in clear text, its store setting covers "
        "the documents only), and a [pipelines.NAME] table per pipeline, as the "
        "service guide (docs/service.md) shows",
    )
    add_old_spelling(srv, "--config", "-c", dest="settings", now="--settings")
    srv.add_argument(
        "--reranker",
        "-r",
        default=None,
        help="serve this reranker as the default pipeline: a registered name (hybrid, bm25, "
        "embedding, cross-encoder or causal-lm with --model, ...; `rerankit rerankers` lists "
        "them; - and _ alike), a pipeline file (listed under the name it declares) or a "
        "model folder or hub id; with --settings it is added to the pipelines the file's "
        "[pipelines] declares (replacing the one of that name), else it is the only "
        "pipeline served (with a file that declares none too: the built-ins are served "
        "only when no pipeline is named)",
    )
    srv.add_argument(
        "--model",
        default=None,
        help="the reranker's model (the hybrid's embedding model): a hub id, a model folder "
        "or a folder written by rerankit export; without --reranker it is the embedding "
        "model of the built-in hybrid and embedding, served with bm25 (with --settings: of "
        "the file's pipelines that name them, which it moves as --backend does, adding none)",
    )
    add_backend_arguments(srv, service=True)
    add_language_argument(srv)
    srv.add_argument(
        "--api-key-env",
        metavar="VAR",
        default=None,
        help="environment variable holding the API keys, comma-separated (default "
        "RERANKIT_API_KEYS). A variable named here must hold a key, and so must "
        "RERANKIT_API_KEYS when it is set, even empty: else serve refuses to start (the "
        "service would be open). Only with RERANKIT_API_KEYS unset, and no keys in the "
        "settings file, is the service open, with a warning",
    )
    srv.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="worker processes on one socket, each with its own models, its own /metrics "
        "and /ready (a scrape or probe reaches one worker: on Kubernetes run one worker per "
        "pod and scale with replicas) and each logging rerankit's lines to stderr (default 1)",
    )
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    srv.add_argument(
        "--port", type=port_number, default=8080, help="port to listen on, 1-65535 (8080)"
    )
    srv.add_argument(
        "--deadline",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="each request's deadline, from its arrival (as rank --deadline bounds a rerank): "
        "one not run by then gets 503, one still running 504, "
        "or, in a cascade whose later stage is still running, the earlier stages' order, "
        "degraded (default: the settings file's deadline, 30; keep it at or below "
        "--graceful-timeout, and above an LLM judge's calls: `rerankit check` warns)",
    )
    add_old_spelling(srv, "--timeout", dest="deadline", now="--deadline", type=positive_float)
    srv.add_argument(
        "--shutdown-delay",
        type=non_negative_float,
        default=None,
        metavar="SECONDS",
        help="after SIGTERM, seconds /ready answers 503 stopping while requests are still "
        "served, so a load balancer stops routing here first (default: the settings file's "
        "shutdown_delay, 5; SIGINT skips it)",
    )
    srv.add_argument(
        "--graceful-timeout",
        type=non_negative_float,
        default=None,
        metavar="SECONDS",
        help="then, seconds requests in flight may take to finish; those still running "
        "are answered 503, shutting down (default: the settings file's graceful_timeout, "
        "30; keep --deadline at or below it, else serve warns at start)",
    )
    srv.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default=None,
        help="the service's log level, rerankit's and uvicorn's (default info, or debug "
        "with -vv); each request's access line is info, so warning drops them",
    )
    srv.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="the service's log lines, rerankit's and uvicorn's, in every worker: text "
        "(default: '2026-11-30T17:24:15.123+00:00 INFO rerankit.server.app: ...') or json, "
        "one JSON object per line with time, level, logger, message, request_id (and "
        "trace_id) while a request is answered, client, method, path and status on access "
        "lines, and a traceback in exception, for a log pipeline that parses JSON",
    )
    srv.add_argument("--check", action="store_true", help=argparse.SUPPRESS)  # said: use check
    srv.set_defaults(func=cmd_serve)
