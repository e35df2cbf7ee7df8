"""The ``rerankit`` command line: one module per command group (:mod:`.rank`,
:mod:`.models`, :mod:`.eval`, :mod:`.tune`, :mod:`.train`, :mod:`.label`, :mod:`.serve`),
each parsing its arguments, calling the library and printing; shared arguments in
:mod:`.args`, progress and notes on stderr in :mod:`.console`, output formats in
:mod:`.output`, the root parser in :mod:`.main`."""

from .main import build_parser, main
from .serve import serve_settings

__all__ = ["build_parser", "main", "serve_settings"]
