"""``serve``'s parser: its flags, their help and checks, and nothing the
command runs (:mod:`rerankit.cli.serve`, imported when it runs)."""

from __future__ import annotations

import argparse
from typing import Any

from ..args import (
    add_backend_arguments,
    add_language_argument,
    add_old_spelling,
    examples,
    non_negative_float,
    port_number,
    positive_float,
    positive_int,
)
from .shown import LOG_FORMATS

__all__ = ["add_commands"]


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
