"""The ``rerankit`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import math
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from ._jsonl import read_records, read_text
from .errors import InputError, RerankitError


def _json_safe(value: Any) -> Any:
    """``value`` with non-finite floats as None (NaN and Infinity are not JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _records(result: Any, score_field: str, details: bool) -> list[dict]:
    if details:
        return result.to_dicts()
    out = []
    for r in result:
        doc = r.document
        out.append(doc if isinstance(doc, dict) else {"text": r.text, score_field: r.score})
    return out


def _table(result: Any, out: TextIO) -> None:
    width = max(40, min(shutil.get_terminal_size((100, 20)).columns, 160))
    id_width = max([2, *(len(str(r.id)) for r in result if r.id is not None)])
    id_width = min(id_width, 16)
    head = f"{'rank':>4}  {'score':>8}  {'id':<{id_width}}  text"
    out.write(head + "\n")
    room = max(10, width - len(head) + 4)
    for r in result:
        snippet = " ".join(r.text.split())
        if len(snippet) > room:
            snippet = snippet[: room - 1] + "…"
        rid = "" if r.id is None else str(r.id)[:id_width]
        out.write(f"{r.rank:>4}  {r.score:>8.4f}  {rid:<{id_width}}  {snippet}\n")


def _announce_model_loading(reranker: Any) -> None:
    """One line on stderr before a rerank that loads a local model (10-40 s on a CPU)."""
    from .scorers._models import LocalModelScorer

    waiting = [s for s in reranker.scorers() if isinstance(s, LocalModelScorer) and not s.loaded]
    if waiting:
        names = ", ".join(sorted({str(s.model_id or s.name) for s in waiting}))
        print(f"rerankit: loading {names} (first use; this can take a while)", file=sys.stderr)


def _cmd_rank(args: argparse.Namespace) -> int:
    if sys.stdout is None:
        raise InputError("standard output is closed; nowhere to write the ranking")
    reranker = _reranker_from(args)  # a bad pipeline file is reported before reading input
    if args.input == "-":
        if sys.stdin is None:
            raise InputError("standard input is closed; pass --input FILE")
        items = read_records(sys.stdin.read(), "stdin")
    else:
        items = read_records(read_text(args.input), args.input)
    _announce_model_loading(reranker)
    result = reranker.rerank(
        args.query,
        items,
        top_k=args.top_k,
        text_field=args.text_field,
        id_field=args.id_field,
        score_field=args.score_field,
        first_stage_field=args.first_stage_field,
        first_stage_higher_is_better=not args.first_stage_lower_is_better,
    )
    for w in result.warnings:
        print(f"rerankit: warning: {w}", file=sys.stderr)
    out = sys.stdout
    if args.explain:
        out.write(result.explain_table() + "\n")
    elif args.format == "table":
        _table(result, out)
    else:
        for rec in _records(result, args.score_field, args.details):
            out.write(json.dumps(_json_safe(rec), ensure_ascii=False, allow_nan=False) + "\n")
    return 0


def _reranker_from(args: argparse.Namespace) -> Any:
    """``--config FILE``, else ``--reranker`` (a name or a pipeline file), else the default."""
    from .api import load

    if args.config and args.reranker:
        raise InputError("give --reranker or --config, not both")
    return load(args.config or args.reranker or _default_reranker())


def _cmd_batch(args: argparse.Namespace) -> int:
    from .batch import beir_rows, quiet_ray_logs, run_batch

    if args.engine == "ray" and not args.verbose:
        quiet_ray_logs()
    if args.config and args.reranker:
        raise InputError("give --reranker or --config, not both")
    pipeline = args.config or args.reranker or _default_reranker()
    source: Any = args.input
    if args.run:
        source = beir_rows(args.input, args.run, split=args.split, k=args.k)
    elif Path(args.input).is_dir():
        raise InputError(f"{args.input} is a folder: give --run with a BEIR folder")
    summary = run_batch(
        source,
        args.output,
        pipeline,
        engine=args.engine,
        workers=args.workers,
        batch_size=args.batch_size,
        address=args.address,
        num_cpus=args.num_cpus,
        num_gpus=args.num_gpus,
        concurrency=args.concurrency,
        top_k=args.top_k,
        text_field=args.text_field,
        id_field=args.id_field,
        first_stage_field=args.first_stage_field,
    )
    print(f"rerankit batch: wrote {args.output}: {summary}", file=sys.stderr)
    for error in summary.errors[:3]:
        print(f"  error: {error}", file=sys.stderr)
    if args.summary:
        Path(args.summary).write_text(json.dumps(summary.to_dict(), indent=2) + "\n")
    return 1 if summary.failures else 0


def _default_reranker() -> str:
    """The default reranker (``hybrid`` with the torch extra, else ``bm25``, said on stderr)."""
    from .api import default_reranker

    name, note = default_reranker()
    if note:
        print(f"rerankit: note: {note}", file=sys.stderr)
    return name


def _cmd_rerankers(args: argparse.Namespace) -> int:
    from . import registry

    rows = [
        (e.name, e.summary, "; ".join(e.needs) or "nothing extra")
        for e in registry.entries("reranker")
    ]
    if args.all:
        for kind in ("scorer", "rule", "llm_client"):
            rows += [
                (f"{kind}:{e.name}", e.summary, "; ".join(e.needs) or "nothing extra")
                for e in registry.entries(kind)
            ]
    width = max(len(r[0]) for r in rows)
    summary = max(len(r[1]) for r in rows)
    print(f"{'name':<{width}}  {'what':<{summary}}  needs")
    for name, what, needs in rows:
        print(f"{name:<{width}}  {what:<{summary}}  {needs or 'nothing extra'}")
    return 0


def _cmd_cache(args: argparse.Namespace) -> int:
    """Where the caches are, how big, and clearing them."""
    import os
    import sqlite3
    from pathlib import Path

    from .cache import EmbeddingCache, JudgmentCache, default_cache_dir

    judgments = default_cache_dir() / "judgments.sqlite"
    embeddings = os.environ.get("RERANKIT_EMBEDDING_CACHE")
    stores = [("judgments", judgments, "judgments")]
    if embeddings:
        stores.append(("embeddings", Path(embeddings), "embeddings"))
    for label, path, table in stores:
        if args.action == "clear" and args.what in ("all", label) and path.exists():
            if label == "judgments":
                JudgmentCache(path).clear()
            else:
                EmbeddingCache(path=path).clear()
            print(f"cleared {label}: {path}")
            continue
        if not path.exists():
            print(f"{label}: {path} (empty)")
            continue
        with sqlite3.connect(path) as db:
            rows = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        print(f"{label}: {path}, {rows} entries, {path.stat().st_size / 1e6:.1f} MB")
    if not embeddings:
        print("embeddings: in memory only (set RERANKIT_EMBEDDING_CACHE to keep them on disk)")
    return 0


def serve_settings(args: argparse.Namespace) -> Any:
    """The ServerSettings ``rerankit serve`` runs: the ``--config`` file's, with the flags
    overriding it (``--reranker``/``--model`` make that pipeline the default)."""
    from .config import read_spec
    from .server import ServerSettings
    from .server.settings import flag_pipeline

    spec = read_spec(args.config) if args.config else {}
    server = dict(spec.get("server") or {})
    pipelines = dict(spec["pipelines"]) if spec.get("pipelines") else None
    for key in ("backend", "quantize", "api_key_env"):
        if getattr(args, key):
            server[key] = getattr(args, key)
    if args.reranker or args.model:
        name = args.reranker or "hybrid"
        pipelines = {
            **(pipelines or {}),
            name: flag_pipeline(name, args.model, args.backend, args.quantize),
        }
        server["default"] = name
    mapping: dict[str, Any] = {"server": server}
    if pipelines:
        mapping["pipelines"] = pipelines
    return ServerSettings.from_mapping(mapping)


def _cmd_serve(args: argparse.Namespace) -> int:
    from .server import serve

    settings = serve_settings(args)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    serve(
        settings,
        host=args.host,
        port=args.port,
        graceful_seconds=args.graceful_timeout,
        workers=args.workers,
    )
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .onnx_models import export

    out = export(
        args.model,
        args.out,
        kind=args.kind.replace("-", "_"),
        quantize=args.quantize,
        max_length=args.max_length,
        trust_remote_code=args.trust_remote_code,
    )
    files = sorted(p.name for p in out.iterdir())
    print(f"wrote {out}: {', '.join(files)}")
    backend = "cross_encoder" if args.kind != "embedding" else "embedding"
    quantize = ', quantize = "int8"' if args.quantize else ""
    print(
        f'load it with {{ type = "{backend}", model = "{out}", backend = "onnx"{quantize} }} '
        "(no torch needed)"
    )
    return 0


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rerankit",
        description="Rerank search candidates so the most relevant come first.",
    )
    parser.add_argument("--version", action="version", version=f"rerankit {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log progress to stderr (-vv for debug)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    rank = sub.add_parser(
        "rank",
        help="rerank documents from a JSONL file or JSON array",
        description="Read documents (JSON Lines or a JSON array of strings or objects), "
        "rerank them for the query and write JSON Lines, best first.",
    )
    rank.add_argument("--query", "-q", required=True, help="the search query")
    rank.add_argument("--input", "-i", default="-", help="input file, or - for stdin (default)")
    rank.add_argument(
        "--reranker",
        "-r",
        default=None,
        help="reranker name (see `rerankit rerankers`) or a pipeline file (.toml, .yaml, "
        ".json); default hybrid (BM25 + MiniLM), or bm25 without the torch extra",
    )
    rank.add_argument(
        "--top-k", "-k", type=_positive_int, default=None, help="keep only the best K"
    )
    rank.add_argument("--text-field", default="text", help="object field holding the text")
    rank.add_argument("--id-field", default="id", help="object field holding the id")
    rank.add_argument(
        "--score-field",
        default="rerank_score",
        help="field added to each output object (default rerank_score)",
    )
    rank.add_argument(
        "--first-stage-field",
        default=None,
        metavar="FIELD",
        help="object field holding the first-stage (retriever) score; the hybrid fuses it "
        "(a 'first_stage_score' field is read without naming it)",
    )
    rank.add_argument(
        "--first-stage-lower-is-better",
        action="store_true",
        help="the first-stage field is a distance or rank: lower is better",
    )
    rank.add_argument(
        "--format",
        choices=("jsonl", "table"),
        default="jsonl",
        help="jsonl (default): the input objects plus the score; table: for people",
    )
    rank.add_argument(
        "--details",
        action="store_true",
        help="write result records (index, rank, score, id, text, scores, flags)",
    )
    rank.add_argument("--config", "-c", default=None, help="a pipeline file (see rerankit.config)")
    rank.add_argument(
        "--explain",
        action="store_true",
        help="print each document's per-strategy raw, normalised, weight and contribution",
    )
    rank.set_defaults(func=_cmd_rank)

    bat = sub.add_parser(
        "batch",
        help="rerank many queries from a file (in this process or on Ray)",
        description="Rerank every row of a JSON Lines or Parquet file ({query_id?, query, "
        "candidates: [strings or objects with text]}) into another (the input's fields plus "
        "results, error, degraded, warnings, seconds), or a BEIR folder's queries with --run. "
        "A row that fails is written with its error and counted; the exit status is 1 when "
        "any row failed, 0 otherwise.",
    )
    bat.add_argument("--input", "-i", required=True, help=".jsonl or .parquet (or a BEIR folder)")
    bat.add_argument("--output", "-o", required=True, help=".jsonl or .parquet to write")
    bat.add_argument("--reranker", "-r", default=None, help="reranker name or pipeline file")
    bat.add_argument("--config", "-c", default=None, help="a pipeline file")
    bat.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this process (default); ray: Ray Data actors (extra ray)",
    )
    bat.add_argument("--address", default=None, help="ray: cluster address (default: local)")
    bat.add_argument(
        "--workers", type=_positive_int, default=1, help="ray: actors, each with the pipeline"
    )
    bat.add_argument(
        "--batch-size", type=_positive_int, default=16, help="rows per call of a worker (16)"
    )
    bat.add_argument(
        "--concurrency",
        type=_positive_int,
        default=1,
        help="rows in flight at once per worker (1); raise it for pipelines that wait on "
        "an LLM provider",
    )
    bat.add_argument(
        "--num-cpus", type=float, default=None, help="ray: CPUs per actor (pipeline's threads)"
    )
    bat.add_argument("--num-gpus", type=float, default=None, help="ray: GPUs per actor")
    bat.add_argument("--run", default=None, help="with a BEIR --input: a TREC run file")
    bat.add_argument("--split", default="test", help="with --run: the BEIR split (test)")
    bat.add_argument(
        "--k", type=_positive_int, default=100, help="with --run: candidates per query (100)"
    )
    bat.add_argument("--top-k", type=_positive_int, default=None, help="keep the best K")
    bat.add_argument("--text-field", default="text", help="candidate field holding the text")
    bat.add_argument("--id-field", default="id", help="candidate field holding the id")
    bat.add_argument(
        "--first-stage-field", default=None, help="candidate field with the retriever score"
    )
    bat.add_argument("--summary", default=None, help="also write the summary as JSON here")
    bat.set_defaults(func=_cmd_batch)

    names = sub.add_parser(
        "rerankers",
        help="list the named rerankers and what each needs",
        description="The registered rerankers with a line on each and what it needs (extras to "
        "install, environment variables). --all adds scorers, ordering rules and LLM clients "
        "(the types a pipeline file names).",
    )
    names.add_argument("--all", action="store_true", help="also list scorers, rules and clients")
    names.set_defaults(func=_cmd_rerankers)
    from .eval.cli import add_commands

    add_commands(sub)
    cache = sub.add_parser(
        "cache",
        help="show or clear rerankit's caches",
        description="The LLM judgment cache (judgments.sqlite under $RERANKIT_CACHE_DIR, else "
        "~/.cache/rerankit) and the embedding cache ($RERANKIT_EMBEDDING_CACHE, when set).",
    )
    cache.add_argument("action", choices=("info", "clear"), nargs="?", default="info")
    cache.add_argument(
        "what",
        choices=("all", "judgments", "embeddings"),
        nargs="?",
        default="all",
        help="which cache to clear (default all)",
    )
    cache.set_defaults(func=_cmd_cache)

    exp = sub.add_parser(
        "export",
        help="export a local model to ONNX (to run without torch)",
        description="Export an embedding model (sentence-transformers) or a cross-encoder to a "
        "folder that EmbeddingScorer / CrossEncoderScorer load with backend='onnx' on ONNX "
        "Runtime alone (extra onnx). Exporting needs the torch and onnx extras.",
    )
    exp.add_argument("model", help="hub id or model directory (all-MiniLM-L6-v2: the bundled copy)")
    exp.add_argument("--out", required=True, help="folder to write")
    exp.add_argument(
        "--kind",
        choices=("embedding", "cross-encoder"),
        default="embedding",
        help="what the model is (default embedding)",
    )
    exp.add_argument("--quantize", choices=("int8",), default=None, help="also write int8 weights")
    exp.add_argument(
        "--max-length", type=_positive_int, default=None, help="tokens per input (model's own)"
    )
    exp.add_argument("--trust-remote-code", action="store_true", help="for models with code")
    exp.set_defaults(func=_cmd_export)

    srv = sub.add_parser("serve", help="run the HTTP service (Cohere- and TEI-compatible)")
    srv.add_argument(
        "--config",
        "-c",
        default=None,
        help="service file: [server] and [pipelines.NAME] (see rerankit.server.settings)",
    )
    srv.add_argument(
        "--reranker",
        "-r",
        default=None,
        help="serve this reranker as the default pipeline (a registered name such as hybrid, "
        "bm25, embedding, or cross_encoder / causal_lm with --model); with --config it "
        "replaces or adds the pipeline of that name",
    )
    srv.add_argument(
        "--model",
        default=None,
        help="the reranker's model (the hybrid's embedding model): a hub id, a model folder "
        "or a folder written by rerankit export; alone it applies to hybrid",
    )
    srv.add_argument(
        "--backend",
        choices=("torch", "onnx"),
        default=None,
        help="where the embedding model runs (default torch; onnx needs no torch when "
        "--model is an exported folder)",
    )
    srv.add_argument("--quantize", choices=("int8",), default=None, help="with --backend onnx")
    srv.add_argument(
        "--api-key-env",
        metavar="VAR",
        default=None,
        help="environment variable holding the API keys, comma-separated (default "
        "RERANKIT_API_KEYS; a variable named here must be set)",
    )
    srv.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        help="worker processes on one socket, each with its own models (default 1)",
    )
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    srv.add_argument("--port", type=int, default=8080, help="port to listen on (8080)")
    srv.add_argument(
        "--graceful-timeout",
        type=float,
        default=None,
        help="seconds requests in flight may take to finish on shutdown (default: the "
        "config's graceful_timeout, 30)",
    )
    srv.set_defaults(func=_cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(
            level=logging.DEBUG if args.verbose > 1 else logging.INFO,
            format="%(levelname)s %(name)s: %(message)s",
        )
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (InputError, ValueError, TypeError, RerankitError, FileNotFoundError) as exc:
        if sys.stderr is not None:
            print(f"rerankit: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `rerankit rank ... | head`
        return 0
    except OSError as exc:  # a closed or failing standard stream
        if sys.stderr is not None:
            print(f"rerankit: error: {exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
