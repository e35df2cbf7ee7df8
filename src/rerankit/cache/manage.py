"""Which caches there are, where, what they hold and how big they are (:func:`cache_info`),
and emptying them (:func:`clear_cache`): what ``rerankit cache`` shows and clears.

Five caches: ``embeddings``, ``judgments`` and ``answers`` (SQLite files in the rerankit
cache directory, or the keys under a namespace in a shared Redis/Valkey server), and this
machine's folders ``onnx`` (models exported to ONNX) and ``wordfreq`` (word-frequency
tables). Neither function prints; :func:`clear_cache` logs what it clears and keeps.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .._paths import default_cache_dir
from ..backends.export_cache import cached_exports, can_export, onnx_cache_root
from .embedding import EMBEDDING_CACHE_ENV
from .redis_store import RedisStore, key_namespace
from .sqlite import SQLiteStore
from .store import Store, cache_url

__all__ = [
    "CACHE_NAMES",
    "CacheInfo",
    "ClearedCache",
    "cache_file",
    "cache_info",
    "cache_name",
    "clear_cache",
]

logger = logging.getLogger(__name__)

#: the stores: (name, kind of entry, what it holds in an SQLite file on this machine, what it
#: holds in a shared server)
STORES = (
    (
        "embeddings",
        "embedding",
        "document vectors: eval and tune keep them here; rank, batch, the library and the "
        "service only when RERANKIT_EMBEDDING_CACHE names this file (else in memory)",
        "document vectors from every process whose RERANKIT_CACHE_URL or [cache] url names "
        "this server (each also keeps those it uses in memory)",
    ),
    ("judgments", "judgment", "LLM judgments", "LLM judgments"),
    (
        "answers",
        "answer",
        "whole rerank answers (the service's answer_cache)",
        "whole rerank answers (the service's answer_cache)",
    ),
)

#: this machine's folders in the cache directory: (name, what it holds)
FOLDERS = (
    ("onnx", "models exported to ONNX on first use with backend onnx"),
    ("wordfreq", "word-frequency tables (background idf)"),
)

#: every cache's name, as :func:`cache_info` and :func:`clear_cache` take them
CACHE_NAMES = tuple(name for name, *_ in STORES) + tuple(name for name, *_ in FOLDERS)

#: the singular names (as in the keys and the metrics' cache label), taken too
SINGULAR = {kind: name for name, kind, *_ in STORES}


@dataclass(frozen=True)
class CacheInfo:
    """One cache as :func:`cache_info` finds it: its ``name``, ``where`` it is (a file, a
    folder, or a server's URL and key pattern), what it ``holds``, whether it was ``found``
    (False: no file or folder there yet), its ``entries`` (for ``onnx`` the exports, for
    ``wordfreq`` the languages) and ``bytes`` (``estimated`` from a sample of keys in a
    server); ``items``, what ``onnx``'s exports were made of or ``wordfreq``'s languages;
    ``notes`` on the entries and ``server`` notes (a server's memory settings and lookups,
    the same for each of its caches)."""

    name: str
    where: str
    holds: str
    found: bool = True
    entries: int = 0
    bytes: int = 0
    estimated: bool = False
    items: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    server: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClearedCache:
    """One cache :func:`clear_cache` cleared or kept: its ``name``, ``where`` it is, the
    ``entries`` removed from a store (None for a folder, removed whole) and, when it was
    kept, why: ``kept="local"``, one of this machine's folders left by clearing a server's
    caches; ``kept="cannot-export"``, the ONNX exports, left on an install without torch,
    which could not make them again (``which="onnx"`` removes them)."""

    name: str
    where: str
    entries: int | None = None
    kept: str | None = None

    @property
    def cleared(self) -> bool:
        """Whether it was emptied (not kept)."""
        return self.kept is None


def cache_name(value: str) -> str:
    """A cache's name as :data:`CACHE_NAMES` spells it: ``embedding`` -> ``embeddings``."""
    return SINGULAR.get(value, value)


def cache_file(name: str) -> Path:
    """The SQLite file on this machine of the store ``name`` (``embeddings``, ``judgments``
    or ``answers``): ``$RERANKIT_EMBEDDING_CACHE`` for the embeddings when it is set, else
    ``<name>.sqlite`` in the rerankit cache directory."""
    if name == "embeddings" and os.environ.get(EMBEDDING_CACHE_ENV):
        return Path(os.environ[EMBEDDING_CACHE_ENV])
    return default_cache_dir() / f"{name}.sqlite"


def cache_info(
    url: str | None = None, namespace: str | None = None, which: str = "all"
) -> list[CacheInfo]:
    """Every cache (or the one ``which`` names: see :data:`CACHE_NAMES`; singular names work
    too): the stores in the server ``url`` names (None: ``$RERANKIT_CACHE_URL``; ``""`` or
    neither: the SQLite files on this machine), under ``namespace`` (with a server only),
    then this machine's folders. A server that cannot be reached raises
    :class:`~rerankit.cache.CacheUnavailableError`."""
    which, url = _checked(which, url, namespace)
    found: list[CacheInfo] = []
    for name, kind, local, shared in STORES:
        if which not in ("all", name):
            continue
        holds = shared if url else local
        if url is None and not cache_file(name).exists():
            found.append(CacheInfo(name, str(cache_file(name)), holds, found=False))
            continue
        store = _store(kind, name, url, namespace)
        try:
            info = store.info()
        finally:
            store.close()
        found.append(
            CacheInfo(
                name,
                info.where,
                holds,
                entries=info.entries,
                bytes=info.bytes,
                estimated=url is not None,  # Redis: from a sample of keys
                notes=tuple(info.notes),
                server=tuple(info.server),
            )
        )
    for name, path, holds in _folders(which):
        if not path.exists():
            found.append(CacheInfo(name, str(path), holds, found=False))
            continue
        items = _folder_items(name, path)
        found.append(
            CacheInfo(name, str(path), holds, entries=len(items), items=items, bytes=_size(path))
        )
    return found


def clear_cache(
    which: str = "all", url: str | None = None, namespace: str | None = None
) -> list[ClearedCache]:
    """Empty every cache (or the one ``which`` names): the stores in the server ``url``
    names (None: ``$RERANKIT_CACHE_URL``; ``""`` or neither: the SQLite files on this
    machine; in a server only the keys under ``namespace``, nothing else), and this
    machine's folders. ``which="all"`` keeps the folders when it clears a server's caches,
    and the ONNX exports on an install without torch, which could not make them again;
    naming one removes it. What was cleared and kept, each once; a cache that was not
    there is left out."""
    which, url = _checked(which, url, namespace)
    done: list[ClearedCache] = []
    for name, kind, *_ in STORES:
        if which not in ("all", name) or (url is None and not cache_file(name).exists()):
            continue
        store = _store(kind, name, url, namespace)
        try:
            done.append(ClearedCache(name, store.where, entries=store.clear()))
        finally:
            store.close()
        logger.info("cleared %s: %s (%d entries)", name, store.where, done[-1].entries)
    for name, path, _ in _folders(which):
        if not path.exists():
            continue
        kept = None
        if which == "all" and url is not None:  # all the server's caches; these stay
            kept = "local"
        elif which == "all" and name == "onnx" and not can_export():
            kept = "cannot-export"
        else:
            shutil.rmtree(path)
        done.append(ClearedCache(name, str(path), kept=kept))
        logger.info("%s %s: %s", "kept" if kept else "cleared", name, path)
    return done


def _checked(which: str, url: str | None, namespace: str | None) -> tuple[str, str | None]:
    """``which`` by its plural name and the server's URL (None: SQLite), or a ValueError
    for a name that is no cache's or a namespace without a server (or given twice)."""
    which = cache_name(which)
    if which not in ("all", *CACHE_NAMES):
        raise ValueError(
            f"which must be all or one of {', '.join(CACHE_NAMES)} (or embedding, judgment, "
            f"answer), got {which!r}"
        )
    url = cache_url(url)
    if url is None and namespace is not None:
        raise ValueError(
            "namespace has no effect without a server (url=, or $RERANKIT_CACHE_URL): the "
            "SQLite files here have no key prefix"
        )
    if url is not None:
        key_namespace(url, namespace)  # in the url or given, not both
    return which, url


def _store(kind: str, name: str, url: str | None, namespace: str | None) -> Store:
    if url is not None:
        return RedisStore(url, kind, namespace=namespace)
    return SQLiteStore(cache_file(name), kind)


def _folders(which: str) -> list[tuple[str, Path, str]]:
    """The folders ``which`` takes: (name, path, what it holds)."""
    roots = {"onnx": onnx_cache_root(), "wordfreq": default_cache_dir() / "wordfreq"}
    return [(n, roots[n], h) for n, h in FOLDERS if which in ("all", n)]


def _folder_items(name: str, path: Path) -> tuple[str, ...]:
    """What a folder holds: the exports' sources, or the tables' languages."""
    if name == "onnx":
        return tuple(source for _, source in cached_exports())
    # LANGUAGE-LIST-KEY-vN.npz
    return tuple(sorted({f.name.split("-")[0] for f in path.glob("[!.]*.npz")}))


def _size(path: Path) -> int:
    """Bytes under ``path`` (a file, or a folder's files)."""
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
