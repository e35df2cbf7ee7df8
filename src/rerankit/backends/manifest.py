"""What an ONNX export is, read without onnxruntime or torch: the backends a local model can
run on, the folder's manifest (``rerankit_onnx.json``) and the checks on both. Shared by the
export (:mod:`.export`), the runtime (:mod:`.onnx`) and the choice of backend
(:mod:`.choice`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ModelLoadError

__all__ = [
    "BACKENDS",
    "KINDS",
    "MANIFEST",
    "QUANTIZATIONS",
    "check_backend",
    "is_exported",
    "missing_file",
    "read_manifest",
]

#: where a local model runs: ``auto`` (ONNX Runtime for the bundled model and exported
#: folders when it is installed, torch otherwise; see :func:`.choice.choose_backend`),
#: ``torch`` or ``onnx``
BACKENDS = ("auto", "torch", "onnx")
QUANTIZATIONS = (None, "int8")
MANIFEST = "rerankit_onnx.json"
KINDS = ("embedding", "cross_encoder")


def check_backend(backend: str, quantize: str | None) -> None:
    """``ValueError`` unless ``backend`` and ``quantize`` name a supported combination
    (int8 weights run on ONNX Runtime: with ``onnx``, or ``auto``, which then means it)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize must be None or 'int8', got {quantize!r}")
    if quantize is not None and backend == "torch":
        raise ValueError("quantize='int8' needs backend='onnx'")


def is_exported(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by :func:`.export.export`."""
    return (Path(path) / MANIFEST).is_file()


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of an exported folder."""
    try:
        return json.loads((Path(path) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"{path}: not a rerankit ONNX export ({exc})") from exc


def missing_file(path: str | Path, quantize: str | None) -> str | None:
    """Why the exported folder ``path`` cannot run the weights ``quantize`` asks for (an
    int8 file an export without ``--quantize int8`` never wrote), or None: what loading
    raises and ``rerankit check`` says, with the export that writes it."""
    manifest = read_manifest(path)
    files = manifest.get("files") or {}
    flavour = "int8" if quantize == "int8" else "float32"
    if flavour in files:
        return None
    export = f"rerankit export {manifest.get('source') or 'MODEL'} "
    export += f"{'--quantize int8 ' if quantize else ''}--out {path}"
    holds = ", ".join(f"{name} ({file})" for name, file in files.items()) or "no model file"
    rest = "; or leave out --quantize int8 to run its float32 file" if files else ""
    return f"{path} has no {flavour} model (it holds {holds}): run `{export}` where torch is{rest}"
