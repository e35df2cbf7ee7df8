"""The ``rerankit`` command line: one module per command group (:mod:`.rank`,
:mod:`.models`, :mod:`.eval`, :mod:`.tune`, :mod:`.serve`), shared argument types in
:mod:`.args`, output formats in :mod:`.output`, the root parser in :mod:`.main`."""

from .main import build_parser, main
from .serve import serve_settings

__all__ = ["build_parser", "main", "serve_settings"]
