"""``rerankit rerankers`` (what is registered), ``cache`` and ``export``."""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from .. import registry
from ..backends.onnx import export, is_exported, onnx_cache_root, read_manifest
from ..backends.quantize import SMOOTH_ALPHA
from ..cache import EmbeddingCache, JudgmentCache, default_cache_dir
from .args import model_kind_name, positive_int

__all__ = ["add_commands", "cmd_cache", "cmd_export", "cmd_rerankers"]


def cmd_rerankers(args: argparse.Namespace) -> int:

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
    print("\n" + ALSO_ACCEPTED)
    return 0


#: what ``rerankit rerankers`` says after the names: the other things a reranker may be
ALSO_ACCEPTED = """\
Names are the same with - or _ (hybrid-relative = hybrid_relative). Wherever a reranker is
named (-r, --rerankers, reranker= in Python, [pipelines.NAME] of the service) these work too:
  a pipeline file   .toml, .yaml or .json (its scorer and rule types: rerankers --all)
  a model           a Hugging Face hub id or a model folder, e.g.
                    cross-encoder/ms-marco-MiniLM-L6-v2 or BAAI/bge-reranker-base: a
                    cross-encoder, embedding model or causal-LM reranker, told apart by its
                    config.json (extra torch). A hub id is downloaded once into the Hugging
                    Face cache; offline, pass the folder of a saved copy instead."""


def _size(path: Path) -> int:
    """Bytes under ``path`` (a file, or a folder's files)."""
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def cache_stores() -> list[tuple[str, Path, str]]:
    """Every cache rerankit keeps on disk: (name, path, what it holds)."""
    embeddings = os.environ.get("RERANKIT_EMBEDDING_CACHE") or str(
        default_cache_dir() / "embeddings.sqlite"
    )
    return [
        (
            "embeddings",
            Path(embeddings),
            "document vectors (eval and tune; the library and "
            "service when RERANKIT_EMBEDDING_CACHE names this file)",
        ),
        ("judgments", default_cache_dir() / "judgments.sqlite", "LLM judgments"),
        ("onnx", onnx_cache_root(), "models exported to ONNX on first use with backend onnx"),
    ]


def _describe(name: str, path: Path) -> str:
    if name == "onnx":
        folders = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
        sources = [read_manifest(f).get("source", f.name) for f in folders if is_exported(f)]
        return f"{len(folders)} export(s){': ' + ', '.join(sources) if sources else ''}"
    table = "embeddings" if name == "embeddings" else "judgments"
    with sqlite3.connect(path) as db:
        rows = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    return f"{rows} entries"


def cmd_cache(args: argparse.Namespace) -> int:
    """Where every cache is, what it holds and how big it is; ``clear`` empties them."""
    for name, path, what in cache_stores():
        if args.action == "clear":
            if args.what in ("all", name) and path.exists():
                if name == "judgments":
                    JudgmentCache(path).clear()
                elif name == "embeddings":
                    EmbeddingCache(path=path).clear()
                else:
                    shutil.rmtree(path)
                print(f"cleared {name}: {path}")
            continue
        if not path.exists():
            print(f"{name}: {path} (empty): {what}")
            continue
        size = _size(path) / 1e6
        print(f"{name}: {path}, {_describe(name, path)}, {size:.1f} MB: {what}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:

    out = export(
        args.model,
        args.out,
        kind=args.kind,
        quantize=args.quantize,
        max_length=args.max_length,
        trust_remote_code=args.trust_remote_code,
        smooth_alpha=None if args.no_smoothing else SMOOTH_ALPHA,
        per_token=args.int8_scales == "per-token",
    )
    files = sorted(p.name for p in out.iterdir())
    print(f"wrote {out}: {', '.join(files)}")
    backend = args.kind
    quantize = ', quantize = "int8"' if args.quantize else ""
    print(
        f'load it with {{ type = "{backend}", model = "{out}", backend = "onnx"{quantize} }} '
        "(no torch needed)"
    )
    return 0


def add_commands(sub: Any) -> None:
    """``rerankers``, ``cache`` and ``export``."""
    names = sub.add_parser(
        "rerankers",
        help="list the named rerankers and what each needs",
        description="The registered rerankers with a line on each and what it needs (extras to "
        "install, environment variables). --all adds scorers, ordering rules and LLM clients "
        "(the types a pipeline file names).",
    )
    names.add_argument("--all", action="store_true", help="also list scorers, rules and clients")
    names.set_defaults(func=cmd_rerankers)
    cache = sub.add_parser(
        "cache",
        help="show or clear rerankit's caches",
        description="Every cache under $RERANKIT_CACHE_DIR (else $XDG_CACHE_HOME/rerankit, "
        "else ~/.cache/rerankit): document embeddings (embeddings.sqlite, or "
        "$RERANKIT_EMBEDDING_CACHE), LLM judgments (judgments.sqlite) and ONNX exports "
        "(onnx/), with their paths and sizes.",
    )
    cache.add_argument("action", choices=("info", "clear"), nargs="?", default="info")
    cache.add_argument(
        "what",
        choices=("all", "embeddings", "judgments", "onnx"),
        nargs="?",
        default="all",
        help="which cache to clear (default all)",
    )
    cache.set_defaults(func=cmd_cache)

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
        type=model_kind_name,
        choices=("embedding", "cross_encoder"),
        default="embedding",
        help="what the model is (default embedding; cross-encoder works too)",
    )
    exp.add_argument("--quantize", choices=("int8",), default=None, help="also write int8 weights")
    exp.add_argument(
        "--max-length", type=positive_int, default=None, help="tokens per input (model's own)"
    )
    exp.add_argument("--trust-remote-code", action="store_true", help="for models with code")
    exp.add_argument(
        "--no-smoothing",
        action="store_true",
        help="cross-encoders: do not smooth before int8 (by default each MatMul's input range "
        "is smoothed into its weights first, which keeps the order closer to float32's)",
    )
    exp.add_argument(
        "--int8-scales",
        choices=("per-token", "per-tensor"),
        default="per-token",
        help="cross-encoders: one int8 scale per token of each MatMul input (default; keeps "
        "the order closer to float32's) or ONNX Runtime's one per tensor; "
        "--no-smoothing --int8-scales per-tensor is plain dynamic int8",
    )
    exp.set_defaults(func=cmd_export)
