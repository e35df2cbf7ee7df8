"""The ``rerankit`` command line: one module per command group (:mod:`.rank`,
:mod:`.models`, :mod:`.eval`, :mod:`.tune`, :mod:`.train`, :mod:`.label`, :mod:`.serve`),
each calling the library and printing, imported when its command runs; their parsers in
:mod:`.parsers`, which import none of the library's heavy parts (so ``--help`` and
``--version`` answer at once); shared arguments in :mod:`.args`, progress and notes on
stderr in :mod:`.console`, output formats in :mod:`.output`, the root parser in
:mod:`.main`."""

from __future__ import annotations

from typing import Any

from .main import build_parser, main

__all__ = ["build_parser", "main", "serve_settings"]


def __getattr__(name: str) -> Any:
    if name == "serve_settings":  # the service's settings: imported when asked for
        from .serve import serve_settings

        return serve_settings
    if name == "read_documents":  # 0.1.0's, gone; an ImportError so that `from ...` says it
        raise ImportError(
            "rerankit.cli.read_documents was removed: read a JSON array with json.load, or "
            "JSON Lines with one json.loads per line, and pass the list to rerankit.rerank"
        )
    raise AttributeError(f"module 'rerankit.cli' has no attribute {name!r}")
