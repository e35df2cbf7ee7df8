"""Plugins: your modules that register scorers, rules and rerankers
(:func:`rerankit.registry.register`, :func:`rerankit.register_reranker`), imported where
they are named, so the ``rerankit`` command and ``rerankit serve`` know your names too.

A plugin is a module name (``acme_rerank``: found on ``sys.path``/``PYTHONPATH``, else in
the current folder, or, named in a pipeline file, beside that file) or a path to a ``.py``
file. It is named by

* ``--plugin MODULE`` (repeatable) on the commands that build pipelines;
* the environment variable :data:`PLUGINS_ENV` (``RERANKIT_PLUGINS=acme_rerank,other``),
  read by the command line and by the service, its worker processes included;
* ``plugins = ["acme_rerank"]`` at the top of a pipeline file (imported before its stages
  are built; a relative ``.py`` path there is read beside the file), or in the ``[server]``
  table of the service's settings file.

Importing is Python's own: a module is imported once per process, however often named.
Nothing is discovered by itself (no entry points): that would cost every command its
start-up time.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import logging
import os
import sys
import traceback
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import ConfigError

__all__ = ["PLUGINS_ENV", "from_environment", "load_plugins", "plugin_list", "plugins_beside"]

logger = logging.getLogger(__name__)

#: the environment variable naming plugins, comma-separated
PLUGINS_ENV = "RERANKIT_PLUGINS"

#: how to load a plugin, for the errors of names nobody registered
HOW = (
    "if it is yours, import the module that registers it (in Python: `import MODULE` before "
    f"the call), or load it with --plugin MODULE, {PLUGINS_ENV}=MODULE or "
    'plugins = ["MODULE"] in the pipeline or settings file'
)


def plugin_list(value: Any, where: str) -> list[str]:
    """``value`` checked as a list of plugin names (a ConfigError at ``where`` if not)."""
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(v, str) and v.strip() for v in value
    ):
        raise ConfigError(
            f'a list of module names or .py files (["acme_rerank"]), got {value!r}', where=where
        )
    return [v.strip() for v in value]


def plugins_beside(spec: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``spec`` with each relative ``.py`` path of its ``plugins`` that exists in ``folder``
    made absolute (a pipeline file's plugin is read beside it, as its models are)."""
    names = spec.get("plugins")
    if not isinstance(names, list):
        return spec
    for n in names:  # a module beside the file is found there, as Python finds a script's
        if isinstance(n, str) and not _is_file(n) and _module_in(folder, n):
            _search(folder)
    out = [
        str(folder / n)
        if isinstance(n, str)
        and _is_file(n)
        and (folder / n).exists()
        and not Path(n).is_absolute()
        else n
        for n in names
    ]
    return {**spec, "plugins": out}


def from_environment() -> list[str]:
    """The plugins :data:`PLUGINS_ENV` names (none when it is unset or empty)."""
    return [n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(",") if n.strip()]


def load_plugins(names: Iterable[str], named_by: str) -> list[ModuleType]:
    """Import each plugin of ``names`` (module names or ``.py`` paths); ``named_by`` says
    where they were named (``--plugin``, ``$RERANKIT_PLUGINS``, a file's key) in the
    ConfigError raised when one cannot be imported."""
    modules = []
    for name in names:
        try:
            modules.append(_load_file(name) if _is_file(name) else _import(name))
        except ConfigError:
            raise
        except Exception as exc:  # an ImportError, or whatever the module raised
            raise ConfigError(
                f"cannot import plugin {name!r} (named by {named_by}): {type(exc).__name__}: "
                f"{exc}{_where(exc, name)}"
            ) from exc
        logger.debug("plugin %r (named by %s) imported", name, named_by)
    return modules


def load_environment() -> list[ModuleType]:
    """Import the plugins :data:`PLUGINS_ENV` names."""
    return load_plugins(from_environment(), f"${PLUGINS_ENV}")


#: what a plugin that is nowhere to be found is told
NOT_FOUND = (
    "; a module is looked up on sys.path (PYTHONPATH), then in the current folder, or beside "
    "the pipeline file naming it; or name its .py file"
)


def _module_in(folder: Path, name: str) -> bool:
    """Whether ``folder`` holds the top-level module or package of ``name``."""
    top = name.split(".")[0]
    return (folder / f"{top}.py").is_file() or (folder / top / "__init__.py").is_file()


def _search(folder: Path) -> None:
    """Look for modules in ``folder`` too, after everything else on ``sys.path``."""
    where = str(folder.resolve())
    if where not in sys.path:
        sys.path.append(where)
        importlib.invalidate_caches()
        logger.info("plugins: modules are also looked up in %s", where)


def _import(name: str) -> ModuleType:
    """``name`` imported as Python would, else from the current folder when it is there
    (as ``python -m`` finds it)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name.split(".")[0] or not _module_in(Path.cwd(), name):
            raise
    _search(Path.cwd())
    return importlib.import_module(name)


def _where(exc: BaseException, name: str) -> str:
    """Where plugin ``name`` failed: the hint when it was not found; for an error its code
    raised (a module it imports missing too), the file and line (a SyntaxError names them)."""
    if isinstance(exc, ModuleNotFoundError) and exc.name == name.split(".")[0]:
        return NOT_FOUND
    if isinstance(exc, SyntaxError) or exc.__traceback__ is None:
        return ""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    if _is_file(name):  # the plugin's own last line that raised, else the last line
        ours = (str(Path(name).resolve()),)
    else:
        stem = os.path.join(*name.split("."))
        ours = (os.sep + stem + ".py", os.sep + os.path.join(stem, "__init__.py"))
    frames = [f for f in frames if str(Path(f.filename).resolve()).endswith(ours)] or frames
    return f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""


def _is_file(name: str) -> bool:
    return name.endswith(".py") or "/" in name or os.sep in name


def _load_file(name: str) -> ModuleType:
    """The module in the ``.py`` file ``name``, imported once per process (its module name
    is made from its resolved path, so two files of one name do not collide)."""
    path = Path(name).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {name}")
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    module_name = f"rerankit_plugin_{path.stem}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot read {name} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module
