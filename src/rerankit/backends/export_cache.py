"""The cache of ONNX exports made on first use (:func:`~.export.cached_export` makes them):
where the export of a model is kept (:func:`export_folder`), when it is made again, the
lock processes that make one at once share, and what a process without torch says when
none is there.

An export made on first use (``backend="onnx"`` given a model that is not an export
already) is kept under ``onnx/`` in the rerankit cache directory, one folder per:

- a local model folder: its resolved absolute path and the names, sizes and modification
  times of every file in it (weights, config, tokenizer: :func:`.local.folder_fingerprint`),
  so ``my-ce``, ``./my-ce`` and ``/abs/my-ce`` share one export, another folder named
  ``my-ce`` elsewhere gets its own, and a model saved again into the folder (retrained in
  place) is exported again on its next use, the stale export then removed;
- a hub id: the id and the commit its revision (``main`` by default) resolves to, asked of
  the hub when it answers, else read from the local Hugging Face cache
  (:func:`hub_commit`): a new commit on the hub is exported again, and two revisions keep
  two exports;
- the bundled all-MiniLM-L6-v2: its name (the package pins its files);

and the kind and the maximum length asked for.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._optional import install_hint, require
from .._paths import default_cache_dir, unwritable
from ..errors import ModelLoadError, command_running
from .bundled import BUNDLED_NAMES, DEFAULT_EMBEDDING_MODEL
from .hub import PROBE_SECONDS, hub_reachable, is_hub_id, looks_like_a_path
from .local import folder_fingerprint
from .manifest import is_exported, missing_file, read_manifest

__all__ = [
    "CACHED_FOR",
    "CACHE_LAYOUT",
    "LOCK_TIMEOUT",
    "RERANKER_COMMANDS",
    "cache_source",
    "cached_exports",
    "can_export",
    "export_complete",
    "export_folder",
    "export_lock",
    "export_missing",
    "export_needed",
    "hub_commit",
    "onnx_cache_root",
    "publish_export",
    "remove_stale_exports",
]

logger = logging.getLogger(__name__)

#: the layout of the exports in the cache (2: weights beside each ``.onnx`` file)
CACHE_LAYOUT = 2
#: seconds a process waits for another's export of the same model before giving up
LOCK_TIMEOUT = 1800.0
#: the manifest's record of what a cached export was made of (:func:`cache_source`, the
#: kind and the maximum length asked for)
CACHED_FOR = "cached_for"
_lock = threading.Lock()  # one export at a time in a process


def onnx_cache_root() -> Path:
    """Where exports made on first use live: ``onnx/`` in the rerankit cache directory."""
    return default_cache_dir() / "onnx"


def hub_commit(model: str, revision: str | None = None) -> str | None:
    """The commit hub model ``model`` at ``revision`` (None: ``main``) resolves to: the
    hub's answer when it answers (asked once per process), else the one the local Hugging
    Face cache holds; None when neither says (or huggingface_hub is not installed)."""
    try:
        import huggingface_hub
    except ImportError:  # pragma: no cover - comes with transformers and the onnx extra
        return None
    if hub_reachable():
        found = _asked_commit(model, revision)
        if found is not None:
            return found
    try:
        cached = huggingface_hub.try_to_load_from_cache(model, "config.json", revision=revision)
    except ValueError:  # not a valid hub id ("a b"): loading it says so
        return None
    return Path(cached).parent.name if isinstance(cached, str) else None


@functools.cache
def _asked_commit(model: str, revision: str | None) -> str | None:
    """The hub's answer to :func:`hub_commit` (None when it does not say: no such model, a
    gated one without a token, a timeout)."""
    import huggingface_hub

    try:
        info = huggingface_hub.model_info(model, revision=revision, timeout=PROBE_SECONDS)
    except Exception:  # any refusal: the local cache decides, and loading says what failed
        return None
    return getattr(info, "sha", None)


def cache_source(model: str, revision: str | None = None) -> dict[str, Any]:
    """What identifies ``model``'s export in the cache (see the module's docstring):
    ``{"source": ...}`` plus ``files`` (a folder's fingerprint) or ``revision`` (a hub id's
    commit, None when unknown); the bundled model's name alone."""
    if model in BUNDLED_NAMES:
        return {"source": DEFAULT_EMBEDDING_MODEL}
    if not is_hub_id(model) or looks_like_a_path(model):  # a folder (there or not)
        folder = Path(model).expanduser().resolve()
        return {"source": str(folder), "files": folder_fingerprint(str(folder))}
    return {"source": model, "revision": hub_commit(model, revision)}


def export_folder(
    model: str, *, kind: str, max_length: int | None = None, revision: str | None = None
) -> Path:
    """The cache folder of ``model``'s export (made or not): one per model as
    :func:`cache_source` identifies it (a folder's path and files, a hub id's commit at
    ``revision``), kind and maximum length. Its name starts with the model's folder or hub
    name, never with a dot."""
    source = cache_source(model, revision)
    if model in BUNDLED_NAMES:  # the key of earlier versions: an export made then is read
        key = json.dumps([source["source"], kind, max_length], separators=(",", ":"))
        name = source["source"]
    else:
        key = json.dumps({**source, "kind": kind, "max_length": max_length}, sort_keys=True)
        name = Path(source["source"]).name if "files" in source else source["source"]
    key += f"|layout={CACHE_LAYOUT}"  # exports of an older layout are made again, not read
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name.strip("/")).lstrip(".")[-60:] or "model"
    return onnx_cache_root() / f"{slug}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def export_complete(folder: Path, quantize: str | None) -> bool:
    """Whether ``folder`` holds an export with the weights ``quantize`` asks for."""
    if not is_exported(folder):
        return False
    return quantize is None or "int8" in read_manifest(folder).get("files", {})


def can_export() -> bool:
    """Whether this process can make an export: torch, sentence-transformers and onnx
    installed, and the cache directory writable (its nearest existing parent)."""
    if not all(importlib.util.find_spec(m) for m in ("torch", "sentence_transformers", "onnx")):
        return False
    return unwritable(onnx_cache_root()) is None  # (a path under a file: it cannot)


@contextlib.contextmanager
def export_lock(folder: Path) -> Iterator[None]:
    """This process's export lock, then the file lock ``.<folder>.lock`` beside the folder,
    which other processes making the same export wait on."""
    filelock = require("filelock", "exporting a model to ONNX once for several processes")
    lock = filelock.FileLock(str(folder.parent / f".{folder.name}.lock"), timeout=LOCK_TIMEOUT)
    with _lock:
        try:
            with lock:
                yield
        except filelock.Timeout as exc:
            raise ModelLoadError(
                f"waited {LOCK_TIMEOUT:.0f} s for another process's export into {folder} "
                f"(lock file {lock.lock_file}); if no rerankit process is exporting, delete "
                "the lock file"
            ) from exc


def publish_export(staging: Path, folder: Path) -> None:
    """Rename the complete ``staging`` folder to ``folder``, moving an older export aside
    first (a rename never replaces a folder that has files)."""
    old = None
    if folder.exists():
        old = folder.with_name(f".{folder.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(folder, old)
    os.replace(staging, folder)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


#: the commands whose ``-r`` takes a pipeline file (``eval``'s ``--rerankers``)
RERANKER_COMMANDS = ("rank", "batch", "eval", "precompute", "simulate-clicks")


def export_needed(model: str, kind: str) -> str:
    """What a torch-free process says when a model has no export to run: how to make one
    and where to name it, in the words of the command running
    (:func:`~rerankit.errors.command_running`): ``tune``'s ``--embedding-model``, or the
    export of the bundled model in the cache, which tune's default hybrid reads; a pipeline
    file given to ``-r`` for the commands that take one; else (the service, ``check``, the
    library) ``serve --model`` for the built-in pipelines first, then a pipeline file's
    scorers of ``kind`` (a file written by ``rerankit tune`` names no model, so it reads
    the bundled one), short enough for the service's cut."""
    command = command_running()
    export = f"run `rerankit export {model} --out DIR` where torch is installed"
    needs = f"Exporting it here needs the optional package 'torch': {install_hint('torch')}"
    into_cache = (
        f"run `rerankit export {model}` (no --out: into rerankit's cache) where torch is "
        f"installed and copy that cache's onnx/ folder here, to {onnx_cache_root()} ("
        "RERANKIT_CACHE_DIR names the cache)"
    )
    if command == "tune" and kind == "embedding":
        if model in BUNDLED_NAMES:
            fix = (
                f"{into_cache}: the default hybrid tune compares with reads it there (with "
                "--clicks, --embedding-model DIR, a folder `rerankit export --out DIR` wrote, "
                "also does)"
            )
        else:
            fix = f"{export}, then give --embedding-model DIR"
        return f"backend 'onnx' needs an export of {model!r}: {fix}. {needs}"
    if kind == "cross_encoder":
        scorers = 'model = "DIR" on each cross_encoder scorer'
        builtin = "cross-encoder"
    else:
        scorers = 'model = "DIR" on each embedding scorer (embedding = "DIR" on a learned one)'
        builtin = "hybrid or embedding"
    if command in RERANKER_COMMANDS:
        if kind == "cross_encoder":
            fix = f"{export}, then give -r DIR, or in a pipeline file given to -r, {scorers}"
        else:
            fix = (
                f"{export}, then give -r a pipeline file that names DIR: reranker = {{ type = "
                f'"hybrid", model = "DIR" }} for the built-in hybrid, or {scorers}'
            )
        if model in BUNDLED_NAMES:
            fix += f"; or, for the built-in pipelines as they are, {into_cache}"
        return f"backend 'onnx' needs an export of {model!r}: {fix}. {needs}"
    return (  # the service's fix first: its messages are cut at 400 characters
        f"backend 'onnx' needs an export of {model!r}: {export}, then name DIR: `rerankit "
        f"serve --model DIR` for the built-in {builtin}; in a pipeline file, {scorers}. {needs}"
    )


def export_missing(
    model: str,
    *,
    kind: str,
    quantize: str | None = None,
    max_length: int | None = None,
    revision: str | None = None,
) -> str | None:
    """What stops ``model`` loading on ONNX Runtime in this process, found without loading
    it (:func:`export_needed`; ``rerankit check`` says it): None when ``model`` is a folder
    written by ``rerankit export``, when its export is in the cache (for its files as they
    are now, or its hub commit: the module's docstring), or when torch is installed to make
    that export on first use."""
    if is_exported(model):  # runs as it is, if it holds the weights asked for
        return missing_file(model, quantize)
    folder = export_folder(model, kind=kind, max_length=max_length, revision=revision)
    if export_complete(folder, quantize) or importlib.util.find_spec("torch") is not None:
        return None
    return export_needed(model, kind)


def remove_stale_exports(folder: Path, made_of: dict[str, Any]) -> None:
    """Remove the cache's other exports of the model folder ``made_of`` names (same kind
    and maximum length), made of files it no longer holds, and their lock files."""
    same = {k: made_of[k] for k in ("source", "kind", "max_length")}
    for other in folder.parent.iterdir():
        if other == folder or other.name.startswith(".") or not is_exported(other):
            continue
        with contextlib.suppress(ModelLoadError):
            was = read_manifest(other).get(CACHED_FOR) or {}
            if "files" in was and {k: was.get(k) for k in same} == same:
                logger.info("removing %s: an export of %s's earlier files", other, same["source"])
                shutil.rmtree(other, ignore_errors=True)
                with contextlib.suppress(OSError):
                    (other.parent / f".{other.name}.lock").unlink(missing_ok=True)


#: the folders an export passes through (:func:`publish_export`): ``.NAME.PID-XXXXXXXX``
#: while written, ``.NAME.old-XXXXXXXX`` while replaced; neither is an export to count
_PASSING = re.compile(r"^\..+\.(?:\d+|old)-[0-9a-f]{8}$")


def cached_exports() -> list[tuple[Path, str]]:
    """The exports in the cache (:func:`onnx_cache_root`), each with what it was made of:
    a model folder's path, a hub id with ``@`` and its commit's first 12 characters, or
    the ``source`` an export made by an earlier build recorded (those made of a
    ``./``-relative path sat in a hidden folder: counted too). Folders being written or
    replaced are left out."""
    root = onnx_cache_root()
    if not root.is_dir():
        return []
    found = []
    for folder in sorted(root.iterdir()):
        if not folder.is_dir() or _PASSING.match(folder.name) or not is_exported(folder):
            continue
        try:
            manifest = read_manifest(folder)
        except ModelLoadError:
            continue
        made_of = manifest.get(CACHED_FOR) or {}
        source = str(made_of.get("source") or manifest.get("source") or folder.name)
        if made_of.get("revision"):
            source += f"@{str(made_of['revision'])[:12]}"
        found.append((folder, source))
    return found
