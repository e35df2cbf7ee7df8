"""Where rerankit keeps what it derives and may read again (caches, exports, compact
tables): one directory for every layer; and what is said when it cannot be written."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

__all__ = [
    "CACHE_DIR_ENV",
    "default_cache_dir",
    "folder_name",
    "model_files",
    "unwritable",
    "warn_unwritable",
]

logger = logging.getLogger(__name__)

#: the environment variable that names the cache directory
CACHE_DIR_ENV = "RERANKIT_CACHE_DIR"

_WARNED: set[str] = set()  # the folders warned of in this process
_WARNED_LOCK = threading.Lock()


def default_cache_dir() -> Path:
    """``$RERANKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/rerankit``, else ``~/.cache/rerankit``."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rerankit"


def folder_name(path: str | Path) -> str:
    """What a folder named on the command line is called in what is said and written of it:
    its name as given (``data/scifact`` and ``scifact/``: ``scifact``), and for ``.``,
    ``..`` or a path ending in them, which have no name of their own, the name of the
    folder they stand for."""
    given = Path(path)
    return given.name if given.name not in ("", "..") else given.resolve().name


def model_files(path: str | Path) -> list[Path]:
    """The files that make up a model: ``path`` itself when it is a file, else every file
    in the folder and its subfolders but hidden ones (``.git``, ``.cache``) and those under
    ``checkpoints/`` (a trainer's), sorted; empty when nothing is there. The one list for a
    model's content digest and its files' fingerprint (what keys its answers, vectors and
    exports)."""
    root = Path(path).expanduser()
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    return sorted(
        f
        for f in root.rglob("*")
        if not any(p.startswith(".") or p == "checkpoints" for p in f.relative_to(root).parts)
        and f.is_file()
    )


def unwritable(folder: Path) -> str | None:
    """Why this process could not write in ``folder``, found without writing anything (a
    folder that does not exist yet is created by its first use): the nearest part of its
    path that exists is a file, or this user may not write in it (its permissions, or a
    read-only file system); None when it could."""
    where = folder
    while not where.exists() and where.parent != where:
        where = where.parent
    if not where.is_dir():
        return f"{where} is a file, not a folder"
    if not os.access(where, os.W_OK | os.X_OK):
        return f"permission denied: this user may not write in {where}"
    return None


def warn_unwritable(folder: Path, error: str, lost: str) -> bool:
    """Log a WARNING that the cache directory ``folder`` cannot be written (``error``), what
    that costs (``lost``) and what to do, once per folder in this process (later: DEBUG).
    Returns whether it was said now."""
    with _WARNED_LOCK:
        first = str(folder) not in _WARNED
        _WARNED.add(str(folder))
    (logger.warning if first else logger.debug)(
        "the rerankit cache directory %s cannot be written (%s): %s; set %s to a writable "
        "folder (an emptyDir on Kubernetes)",
        folder,
        error,
        lost,
        CACHE_DIR_ENV,
    )
    return first
