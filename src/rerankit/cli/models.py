"""``rerankit rerankers`` (what is registered), ``check`` (a pipeline file, without running
it), ``cache`` and ``export``."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import registry
from .._optional import require
from ..backends.export import (
    cached_export,
    export,
    export_folder,
    export_kind,
    onnx_cache_root,
)
from ..backends.manifest import is_exported, read_manifest
from ..backends.quantize import SMOOTH_ALPHA
from ..cache import cache_url, default_cache_dir
from ..cache.redis_store import RedisStore
from ..cache.sqlite import SQLiteStore
from . import check as check_commands
from .args import (
    MODEL_KINDS_SHOWN,
    examples,
    given,
    model_kind_name,
    positive_int,
    refuse_unused,
    remember_defaults,
)
from .check import cmd_check, describe

__all__ = [
    "add_commands",
    "cmd_cache",
    "cmd_check",
    "cmd_export",
    "cmd_rerankers",
    "describe",
]


def cmd_rerankers(args: argparse.Namespace) -> int:

    rows = [(e.name, e.summary, needs_said(e.needs)) for e in registry.entries("reranker")]
    if args.all:
        for kind in ("scorer", "rule", "llm_client"):
            rows += [
                (f"{kind}:{e.name}", e.summary, needs_said(e.needs)) for e in registry.entries(kind)
            ]
    width = max(len(r[0]) for r in rows)
    summary = max(len(r[1]) for r in rows)
    print(f"{'name':<{width}}  {'what':<{summary}}  needs")
    for name, what, needs in rows:
        print(f"{name:<{width}}  {what:<{summary}}  {needs or 'nothing extra'}")
    print("\n" + ALSO_ACCEPTED)
    return 0


def needs_said(needs: Sequence[str]) -> str:
    """What an entry needs, as ``rerankers`` lists it: ``extra:`` once for several extras
    (``extra: learn and torch``), then anything else; ``nothing extra`` for nothing."""
    extras = [n.removeprefix("extra: ") for n in needs if n.startswith("extra: ")]
    said = [f"extra: {' and '.join(extras)}"] if extras else []
    return "; ".join([*said, *(n for n in needs if not n.startswith("extra: "))]) or (
        "nothing extra"
    )


#: what ``rerankit rerankers`` says after the names: the other things a reranker may be
ALSO_ACCEPTED = """\
Reranker names are spelled with - (hybrid-relative, cross-encoder), the types of a pipeline
file with _ (cross_encoder, min_score); either spelling works for either (cross_encoder =
cross-encoder). Wherever a reranker is named (-r, --rerankers, reranker= in Python,
[pipelines.NAME] of the service) these work too:
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


def _entries(count: int) -> str:
    """``1 entry``, ``2 entries``."""
    return f"{count} {'entry' if count == 1 else 'entries'}"


def _readable(size: float) -> str:
    """``size`` bytes in B, KB, MB or GB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size:.0f} B"


#: the caches ``rerankit cache`` names: (name, kind of entry, what it holds in an SQLite file
#: on this machine, what it holds in a shared server)
CACHES = (
    (
        "embeddings",
        "embedding",
        "document vectors: eval and tune keep them here; rank, batch, the library and the "
        "service only when RERANKIT_EMBEDDING_CACHE names this file (else in memory)",
        "document vectors from every process whose RERANKIT_CACHE_URL or [cache] url names "
        "this server (each also keeps those it uses in memory)",
    ),
    ("judgments", "judgment", "LLM judgments", "LLM judgments"),
    (
        "answers",
        "answer",
        "whole rerank answers (the service's answer_cache)",
        "whole rerank answers (the service's answer_cache)",
    ),
)

#: the singular names (as in the keys and the metrics' cache label) ``clear`` accepts too
SINGULAR = {kind: name for name, kind, *_ in CACHES}


def cache_name(value: str) -> str:
    """A cache's name as ``rerankit cache clear`` lists it: ``embedding`` -> ``embeddings``."""
    return SINGULAR.get(value, value)


def sqlite_file(name: str) -> Path:
    """The SQLite file of the cache ``name`` on this machine."""
    if name == "embeddings" and os.environ.get("RERANKIT_EMBEDDING_CACHE"):
        return Path(os.environ["RERANKIT_EMBEDDING_CACHE"])
    return default_cache_dir() / f"{name}.sqlite"


def _folders(args: argparse.Namespace, server: bool) -> None:
    """The caches kept as folders on this machine: ONNX exports, word-frequency tables."""
    for name, path, what in (
        ("onnx", onnx_cache_root(), "models exported to ONNX on first use with backend onnx"),
        ("wordfreq", default_cache_dir() / "wordfreq", "word-frequency tables (background idf)"),
    ):
        if args.action == "clear":
            if args.what == "all" and server:  # all the server's caches; these stay
                if path.exists():
                    print(f"kept {name}: {path} (on this machine; `rerankit cache clear {name}`)")
            elif args.what in ("all", name) and path.exists():
                shutil.rmtree(path)
                print(f"cleared {name}: {path}")
            continue
        if args.what not in ("all", name):
            continue
        if not path.exists():
            print(f"{name}: {path} (empty): {what}")
            continue
        if name == "onnx":
            folders = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
            sources = [read_manifest(f).get("source", f.name) for f in folders if is_exported(f)]
            listed = f"{len(folders)} export(s){': ' + ', '.join(sources) if sources else ''}"
        else:  # LANGUAGE-LIST-KEY-vN.npz
            tables = sorted({f.name.split("-")[0] for f in path.glob("[!.]*.npz")})
            listed = f"{len(tables)} language(s){': ' + ', '.join(tables) if tables else ''}"
        print(f"{name}: {path}, {listed}, {_readable(_size(path))}: {what}")


def cmd_cache(args: argparse.Namespace) -> int:
    """Where every cache is, what it holds and how big it is; ``clear`` empties them (in a
    shared Redis, only rerankit's keys under its namespace)."""
    url = cache_url(args.url)  # --url, else $RERANKIT_CACHE_URL; None: SQLite here
    if url is None:
        refuse_unused(
            {"--namespace": args.namespace},
            "without a server (--url, or $RERANKIT_CACHE_URL): the SQLite files here have no "
            "key prefix",
        )
    server: list[str] = []
    for name, kind, local, shared in CACHES:
        what = shared if url else local
        if args.what not in ("all", name):  # `cache info NAME` shows that one, clear clears it
            continue
        if url is None and not sqlite_file(name).exists():
            if args.action == "info":
                print(f"{name}: {sqlite_file(name)} (empty): {what}")
            continue
        if url is not None:
            store = RedisStore(url, kind, namespace=args.namespace)
        else:
            store = SQLiteStore(sqlite_file(name), kind)
        try:
            if args.action == "clear":
                print(f"cleared {name}: {store.where} ({_entries(store.clear())})")
                continue
            info = store.info()
        finally:
            store.close()
        size = ("~" if url else "") + _readable(info.bytes)  # Redis: from a sample of keys
        print(f"{name}: {info.where}, {_entries(info.entries)}, {size}: {what}")
        for note in info.notes:
            print(f"  {note}")
        server = server or info.server  # the same for each cache
    for note in server:
        print(f"  {note}")
    _folders(args, server=url is not None)
    return 0


def _export_to_cache(args: argparse.Namespace, kind: str) -> int:
    """``rerankit export MODEL`` without ``--out``: the export ``backend`` ``auto`` and
    ``onnx`` use, made into the cache (once; said when it was there already)."""
    folder = export_folder(args.model, kind=kind, max_length=args.max_length)
    there = is_exported(folder)
    cached_export(
        args.model,
        kind=kind,
        quantize=args.quantize,
        max_length=args.max_length,
        trust_remote_code=args.trust_remote_code,
    )
    print(f"{'already exported' if there else 'exported'} {args.model} to {folder}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    kind = export_kind(args.model, args.kind)  # without --kind: what its files say
    int8_options = given(args, "no_smoothing", "int8_scales")
    if not args.quantize:
        refuse_unused(int8_options, "without --quantize int8: they shape the int8 weights")
    elif kind != "cross_encoder":
        refuse_unused(
            int8_options,
            "for an embedding model: they shape a cross-encoder's int8 weights (an embedding "
            "model's are ONNX Runtime's dynamic int8)",
        )
    elif args.out is None:
        refuse_unused(
            int8_options,
            'without --out: the export into the cache is the one backend = "auto" and '
            '"onnx" read, made with the defaults; give --out to keep one of your own',
        )
    if args.out is not None or not is_exported(
        export_folder(args.model, kind=kind, max_length=args.max_length)
    ):  # an export is made: torch is needed, said before announcing it
        require("torch", "exporting a model to ONNX")
    if args.kind is None:
        print(
            f"rerankit: exporting {args.model} as {kind} (told from its files; --kind sets it)",
            file=sys.stderr,
        )
    if args.out is None:
        return _export_to_cache(args, kind)
    out = export(
        args.model,
        args.out,
        kind=kind,
        quantize=args.quantize,
        max_length=args.max_length,
        trust_remote_code=args.trust_remote_code,
        smooth_alpha=None if args.no_smoothing else SMOOTH_ALPHA,
        per_token=args.int8_scales == "per-token",
    )
    files = sorted(p.name for p in out.iterdir())
    print(f"wrote {out}: {', '.join(files)}")
    quantize = ', quantize = "int8"' if args.quantize else ""
    options = f'model = "{out}", backend = "onnx"{quantize}'
    if kind == "embedding":  # the hybrid reading it, as the default does, before cosine alone
        flag = " --quantize int8" if args.quantize else ""
        print(
            f'load it in the default hybrid with reranker = {{ type = "hybrid", {options} }} '
            f"or `rerankit serve --model {out}{flag}` (no torch needed); "
            f'alone it ranks by cosine similarity only: {{ type = "embedding", {options} }}'
        )
        return 0
    print(f'load it with {{ type = "{kind}", {options} }} (no torch needed)')
    return 0


def add_commands(sub: Any) -> None:
    """``rerankers``, ``cache`` and ``export``."""
    names = sub.add_parser(
        "rerankers",
        help="list the named rerankers and what each needs",
        description="The registered rerankers with a line on each and what it needs (extras to "
        "install, environment variables). --all adds scorers, ordering rules and LLM clients "
        "(the types a pipeline file names).",
        **examples("rerankit rerankers --all"),
    )
    names.add_argument("--all", action="store_true", help="also list scorers, rules and clients")
    names.set_defaults(func=cmd_rerankers)
    check_commands.add_commands(sub)
    cache = sub.add_parser(
        "cache",
        help="show or clear rerankit's caches",
        description="Every cache rerankit keeps, with where it is, its entries and size: "
        "document embeddings, LLM judgments and whole answers (SQLite files under "
        "$RERANKIT_CACHE_DIR, else $XDG_CACHE_HOME/rerankit, else ~/.cache/rerankit; "
        "embeddings also $RERANKIT_EMBEDDING_CACHE), or, with --url or $RERANKIT_CACHE_URL, "
        "those in a shared Redis/Valkey server (and its memory settings); and ONNX exports "
        "(onnx/) and BM25's word-frequency tables (wordfreq/). clear deletes only rerankit's "
        "entries: in a shared Redis database, the keys under its namespace, nothing else; with "
        "a server, clear (all) empties the server's caches and leaves this machine's folders "
        "(clear onnx, clear wordfreq remove them).",
        **examples(
            "rerankit cache",
            "rerankit cache info embeddings  # that cache alone",
            "rerankit cache clear judgments",
        ),
    )
    cache.add_argument("action", choices=("info", "clear"), nargs="?", default="info")
    cache.add_argument(
        "what",
        type=cache_name,
        choices=("all", "embeddings", "judgments", "answers", "onnx", "wordfreq"),
        nargs="?",
        default="all",
        help="which cache to show or clear (default all; embedding, judgment and answer work "
        "too); judgments are the LLM judges' cached answers, never your judged queries' files",
    )
    cache.add_argument(
        "--url",
        default=None,
        help="a Redis/Valkey server, e.g. redis://127.0.0.1:6379/0 (default: "
        "$RERANKIT_CACHE_URL; neither: the SQLite files on this machine)",
    )
    cache.add_argument(
        "--namespace",
        default=None,
        help="with a server: the key prefix rerankit's entries use (default rerankit)",
    )
    cache.set_defaults(func=cmd_cache)

    exp = sub.add_parser(
        "export",
        help="export a local model to ONNX (to run without torch)",
        description="Export an embedding model (sentence-transformers) or a cross-encoder to a "
        "folder that EmbeddingScorer / CrossEncoderScorer load with backend='onnx' on ONNX "
        "Runtime alone (extra onnx). Exporting needs the torch and onnx extras.",
        **examples(
            "rerankit export all-MiniLM-L6-v2 --quantize int8 --out minilm-onnx",
            "rerankit export cross-encoder/ms-marco-MiniLM-L6-v2 --out ce-onnx",
            "rerankit serve --model minilm-onnx  # no torch",
        ),
    )
    exp.add_argument("model", help="hub id or model directory (all-MiniLM-L6-v2: the bundled copy)")
    exp.add_argument(
        "--out",
        default=None,
        help="folder to write; without it, the export goes into the rerankit cache, where "
        "--backend onnx and auto find it (for the bundled model: what the default pipeline "
        "runs; made there on first use anyway where torch is installed)",
    )
    exp.add_argument(
        "--kind",
        type=model_kind_name,
        metavar=MODEL_KINDS_SHOWN,
        default=None,
        help="what the model is (default: what its files say, as -r MODEL tells it: a "
        "sequence-classification architecture in config.json is a cross-encoder, "
        "sentence-transformers files an embedding model; cross_encoder works too)",
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
    remember_defaults(exp)
