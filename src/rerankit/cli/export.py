"""``rerankit export``: a model to ONNX, into a folder or the cache, and, for a folder,
how far its scores are from the model's on torch (:mod:`rerankit.scorers.parity`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._optional import require
from ..backends.export import cached_export, export, export_folder, export_kind
from ..backends.manifest import is_exported
from ..backends.quantize import SMOOTH_ALPHA
from ..scorers.parity import PAIRS, export_differences
from .args import (
    given,
    refuse_unused,
)

__all__ = ["cmd_export"]


def _export_to_cache(args: argparse.Namespace, kind: str) -> int:
    """``rerankit export MODEL`` without ``--out``: the export ``backend`` ``auto`` and
    ``onnx`` use, made into the cache (once; said when it was there already), and how the
    commands read it."""
    folder = export_folder(
        args.model, kind=kind, max_length=args.max_length, revision=args.revision
    )
    there = is_exported(folder)
    cached_export(
        args.model,
        kind=kind,
        quantize=args.quantize,
        max_length=args.max_length,
        trust_remote_code=args.trust_remote_code,
        revision=args.revision,
    )
    print(f"{'already exported' if there else 'exported'} {args.model} to {folder}")
    flag = " --quantize int8" if args.quantize else ""
    print(
        f"rank, batch, eval and serve read it for -r {args.model} with --backend onnx{flag} "
        '(backend = "onnx" in a pipeline file); --out FOLDER writes a folder of your own '
        "instead, checked against the model on torch, that runs as it is (-r FOLDER)"
    )
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
        export_folder(args.model, kind=kind, max_length=args.max_length, revision=args.revision)
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
        revision=args.revision,
        smooth_alpha=None if args.no_smoothing else SMOOTH_ALPHA,
        per_token=args.int8_scales == "per-token",
    )
    files = sorted(p.name for p in out.iterdir())
    print(f"wrote {out}: {', '.join(files)}")
    if not args.no_check:
        _say_differences(args, kind, out)
    if args.quantize:
        print(_judge_int8(kind, out))
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
    flag = " --quantize int8" if args.quantize else ""
    print(
        f"serve it with `rerankit serve -r {out}{flag}` (`rank -r` the same), load it with "
        f'reranker = {{ type = "{kind}", {options} }} in a pipeline file, or as one of its '
        f'stages: {{ scorer = {{ type = "{kind}", {options} }} }} (no torch needed)'
    )
    return 0


def _judge_int8(kind: str, out: Any) -> str:
    """How to tell whether the int8 file ranks well enough: no bound on a few fixed pairs
    says it, an evaluation of the same pipeline on each file over the user's judgments
    does; and a threshold fitted on float32 probabilities is checked again there."""
    reranker = "hybrid" if kind == "embedding" else kind  # the embedding as the default reads it
    table = f'reranker = {{ type = "{reranker}", model = "{out}", backend = "onnx" }}'
    return (
        "int8 moves scores more than float32 and can swap close documents; whether that "
        "costs quality is for your judged queries to say, not these pairs. Write "
        f'float32.toml holding {table} and int8.toml the same with quantize = "int8", then '
        "run `rerankit eval --data YOUR_DATA --rerankers float32.toml,int8.toml --baseline "
        "float32` (int8 within noise of float32: it ranks as well on your data).\n"
        "A pipeline whose probabilities were calibrated on float32 (tune --calibrate): "
        'give that eval its file with quantize = "int8" beside its model, and --thresholds, '
        "and re-check the threshold you chose (ECE, precision at each threshold) on int8 "
        "before serving it there"
    )


def _say_differences(args: argparse.Namespace, kind: str, out: Any) -> None:
    """How far the export's scores are from the model's on torch, on a few fixed pairs
    (:data:`~rerankit.scorers.parity.PAIRS`)."""
    found = export_differences(
        args.model,
        out,
        kind=kind,
        quantize=args.quantize,
        max_length=args.max_length,
        trust_remote_code=args.trust_remote_code,
        revision=args.revision,
    )
    pairs = sum(len(docs) for _, docs in PAIRS)
    scale = "logit" if kind == "cross_encoder" else "cosine"
    said = ", ".join(f"{name} {value:.1e}" for name, value in found.items())
    print(
        f"checked on {pairs} fixed pairs against {args.model} on torch: largest {scale} "
        f"difference {said} (float32 should be under 1e-4; --no-check skips this)"
    )
