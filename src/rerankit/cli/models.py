"""``rerankit rerankers`` (what is registered), ``cache`` and ``export``."""

from __future__ import annotations

import argparse
import os
import sqlite3
from pathlib import Path
from typing import Any

from .. import registry
from ..backends.onnx import export
from ..cache import EmbeddingCache, JudgmentCache, default_cache_dir
from .args import positive_int

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
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    """Where the caches are, how big, and clearing them."""

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


def cmd_export(args: argparse.Namespace) -> int:

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
        choices=("embedding", "cross-encoder"),
        default="embedding",
        help="what the model is (default embedding)",
    )
    exp.add_argument("--quantize", choices=("int8",), default=None, help="also write int8 weights")
    exp.add_argument(
        "--max-length", type=positive_int, default=None, help="tokens per input (model's own)"
    )
    exp.add_argument("--trust-remote-code", action="store_true", help="for models with code")
    exp.set_defaults(func=cmd_export)
