"""What ``--reranker`` names (a registered reranker, a pipeline file or a model), built
with the flags that reach it: ``--language``, ``--backend`` and ``--quantize``, each refused
where nothing it names would read it."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import registry
from ..api import PIPELINE_SUFFIXES, pipeline_name
from ..backends.detect import model_kind
from ..config import read_pipeline, read_spec
from ..server.settings import on_backend
from ..spec_toml import is_settings_file, settings_not_pipeline
from .args import UsageError, refuse_unused

__all__ = [
    "MODEL_RERANKERS",
    "in_language",
    "is_settings_file",
    "model_flags",
    "pipeline_name",
    "pipeline_spec",
    "refuse_model_flags",
    "runs_a_model",
    "settings_not_pipeline",
]

#: the registered rerankers that run a local model (where --backend and --quantize apply)
MODEL_RERANKERS = ("hybrid", "hybrid-relative", "embedding", "cross-encoder", "causal-lm")

#: what --backend and --quantize place, said when nothing named runs one
MOVES = (
    "these flags place the embedding model of hybrid and embedding, a cross-encoder's, an "
    "LLM reranker's, or a model given as the reranker"
)


def model_flags(args: argparse.Namespace) -> dict[str, Any]:
    """``--backend`` and ``--quantize`` as given (flag -> value, None when not given)."""
    return {
        "--backend": getattr(args, "backend", None),
        "--quantize": getattr(args, "quantize", None),
    }


def runs_a_model(spec: Any) -> bool:
    """Whether ``--backend``/``--quantize`` reach something ``spec`` runs: a registered
    reranker of :data:`MODEL_RERANKERS`, a pipeline file naming the built-in hybrid or
    embedding without options of their own, or a model (anything else)."""
    if not isinstance(spec, (str, Path)):  # a declared pipeline
        return on_backend(spec, "onnx") != spec
    name = registry.canonical("reranker", spec) if isinstance(spec, str) else None
    if name is not None:
        return name in MODEL_RERANKERS
    if Path(spec).suffix.lower() in PIPELINE_SUFFIXES:
        declared = read_spec(spec)
        return on_backend(declared, "onnx") != declared
    return True


def refuse_model_flags(args: argparse.Namespace, specs: Sequence[Any], named: str) -> None:
    """A :class:`~rerankit.cli.args.UsageError` when ``--backend`` or ``--quantize`` is
    given and none of ``specs`` (``named`` in the message) runs a model they reach."""
    flags = model_flags(args)
    if any(v is not None for v in flags.values()) and not any(map(runs_a_model, specs)):
        runs = "it runs no model" if len(specs) == 1 else "none of them runs a model"
        if any(Path(str(s)).suffix.lower() in PIPELINE_SUFFIXES for s in specs):
            runs += " these flags reach (a scorer's own backend and quantize place its model)"
        refuse_unused(flags, f"with {named}: {runs} ({MOVES})")


def pipeline_spec(spec: Any, args: argparse.Namespace, *, check: bool = True) -> Any:
    """``spec`` (a registered reranker's name, a pipeline file or a model: a hub id or
    folder) with ``--language`` (see :func:`in_language`) and ``--backend``/``--quantize``
    applied: to the rerankers of :data:`MODEL_RERANKERS` by name, to the built-in hybrid
    and embedding wherever a pipeline file names them (as the service's ``backend``
    setting does; a scorer declared with options of its own keeps them), and to a model's
    scorer. With ``check``, those flags given for a reranker that runs no model (bm25,
    ...) are a :class:`~rerankit.cli.args.UsageError`; without, it is left as it is."""
    language = getattr(args, "language", None)
    options = {k.lstrip("-"): v for k, v in model_flags(args).items() if v is not None}
    if not options:
        return in_language(spec, language)
    if check:
        refuse_model_flags(args, [spec], f"--reranker {spec}")
    name = registry.canonical("reranker", spec) if isinstance(spec, str) else None
    if name is not None:  # either spelling: hybrid-relative or hybrid_relative
        if name not in MODEL_RERANKERS:
            return in_language(spec, language)
        return {
            "reranker": {"type": name, **({"language": language} if language else {}), **options}
        }
    in_language(spec, language)  # a language given with a file or a model: the same error
    if Path(spec).suffix.lower() in PIPELINE_SUFFIXES:
        declared = read_pipeline(spec)  # its relative paths read beside it, as -r FILE reads them
        return on_backend(declared, options.get("backend", "auto"), options.get("quantize"))
    kind, detected = model_kind(str(spec))  # a model given as the reranker
    return {"scorer": {"type": kind, "model": str(spec), **detected, **options}}


def in_language(spec: Any, language: str | None) -> Any:
    """``spec`` (a registered reranker's name) built for ``language``; ``spec`` itself
    when no language is given. ``--language`` with a pipeline file or a model, which set
    their own, is a :class:`~rerankit.cli.args.UsageError`."""
    if not language:
        return spec
    if not isinstance(spec, str) or registry.canonical("reranker", spec) is None:
        if isinstance(spec, str) and Path(spec).suffix.lower() in PIPELINE_SUFFIXES:
            fix = "give language in the file, on its reranker or scorers"
        else:  # a model: a pipeline file runs it with a language
            fix = (
                "a model reads the languages it learned, with nothing to set; for the hybrid "
                "with an embedding model and the lexical signals of a language, write a "
                f'pipeline file (-r pipeline.toml) holding reranker = {{ type = "hybrid", '
                f'model = "EMBEDDING-MODEL", language = "{language}" }}'
            )
        raise UsageError(
            f"--language applies to a registered reranker (hybrid, bm25, text, ...), not "
            f"{spec!r}: {fix}"
        )
    return {"reranker": {"type": spec, "language": language}}
