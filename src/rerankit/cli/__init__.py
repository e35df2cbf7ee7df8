"""The ``rerankit`` command line: one module per command group (:mod:`.rank`,
:mod:`.models`, :mod:`.eval`, :mod:`.tune`, :mod:`.train`, :mod:`.label`, :mod:`.serve`),
each parsing its arguments, calling the library and printing; shared arguments in
:mod:`.args`, progress and notes on stderr in :mod:`.console`, output formats in
:mod:`.output`, the root parser in :mod:`.main`."""

from __future__ import annotations

from typing import Any

from .main import build_parser, main
from .serve import serve_settings

__all__ = ["build_parser", "main", "serve_settings"]


def __getattr__(name: str) -> Any:
    if name == "read_documents":  # 0.1.0's, gone; an ImportError so that `from ...` says it
        raise ImportError(
            "rerankit.cli.read_documents was removed: read a JSON array with json.load, or "
            "JSON Lines with one json.loads per line, and pass the list to rerankit.rerank"
        )
    raise AttributeError(f"module 'rerankit.cli' has no attribute {name!r}")
