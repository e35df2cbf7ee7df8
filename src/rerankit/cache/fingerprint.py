"""A pipeline's fingerprint: what makes two loaded pipelines give the same answers, so an
answer cached for one may be served for the other (on this replica or another).

It covers the cache format, rerankit's version (the code of a named pipeline such as
``hybrid`` is part of it), the declared spec as it is resolved (:func:`resolved_spec`: a
pipeline file by its contents, not its path, so a file edited in place gets a new
fingerprint and copies of one file in two places share one; a file or folder the spec
names, such as a learned model or a plugin's code, by a digest of its contents), and each
scorer's identity: its class, every plain setting it holds (name, model, backend,
quantization, prompts, BM25's k1, an LLM judge's instructions and temperature, ...), its
dtype and input length, its LLM provider and model, and for a model in a local folder or
file a digest of the files' contents in place of its path (so a model retrained in place
never shares answers with the old one, and copies of one model on two replicas do, wherever
and whenever each was copied).
A model passed as a loaded object is told apart only within one process.
Where the model runs (device, threads, batch size) is left out: it does not change answers
beyond float rounding, and replicas on different hardware should share them. A hub id is
identified by its name: pin a revision, or serve from a folder, to tell versions apart.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import threading
from collections.abc import Mapping
from functools import cached_property, lru_cache
from pathlib import Path, PurePath
from typing import Any

from .._paths import default_cache_dir, model_files
from ..spec_toml import PATH_KEYS, PIPELINE_SUFFIXES, read_pipeline
from .keys import CACHE_FORMAT, canonical_json, digest

__all__ = [
    "content_key",
    "model_files_digest",
    "pipeline_fingerprint",
    "resolved_spec",
    "scorer_identity",
]

#: a scorer's attributes that may name a model's folder or file (``embedding_model``: the
#: embedding a learned model reads its features with)
_PATH_ATTRIBUTES = ("model_id", "model", "path", "model_path", "embedding_model")
_PROFILE_ATTRIBUTES = ("dtype", "max_length")
_CLIENT_ATTRIBUTES = ("provider", "model")
_DIGESTS: dict[tuple[str, tuple], str] = {}
_DIGESTS_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _version() -> str:
    try:
        return importlib.metadata.version("rerankit")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        return "source"


def model_files_digest(path: str | Path) -> str:
    """A SHA-256 (32 hex digits) of a model folder's (or file's) contents: every file's path
    in it, size and bytes (:func:`rerankit._paths.model_files`). Computed once for
    the same files (names, sizes, modification times): remembered in the process and in
    ``digests/`` of the cache directory."""
    root = Path(path)
    files = model_files(root)
    stats = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    with _DIGESTS_LOCK:
        found = _DIGESTS.get((str(root), stats))
    if found is not None:
        return found
    # kept on disk too, by the same files' stats: a new process (each `rerankit rank`)
    # reads a large model's bytes again only after they changed
    memo = default_cache_dir() / "digests" / digest(repr((str(root.resolve()), stats)), 32)
    with contextlib.suppress(OSError, UnicodeDecodeError):
        found = memo.read_text(encoding="utf-8").strip()
    if found and len(found) == 32:
        with _DIGESTS_LOCK:
            _DIGESTS[(str(root), stats)] = found
        return found
    sha = hashlib.sha256()
    for f in files:
        name = f.name if f == root else f.relative_to(root).as_posix()
        sha.update(f"{name}\x00{f.stat().st_size}\x00".encode())
        with open(f, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
    value = sha.hexdigest()[:32]
    with _DIGESTS_LOCK:
        _DIGESTS[(str(root), stats)] = value
    with contextlib.suppress(OSError):  # (a cache directory that cannot be written)
        memo.parent.mkdir(parents=True, exist_ok=True)
        partial = memo.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(value, encoding="utf-8")
        partial.replace(memo)
    return value


def _plain_attributes(obj: Any, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """``obj``'s public attributes (``names``, or all it holds) that are plain values."""
    found = vars(obj).items() if names is None else ((n, getattr(obj, n, None)) for n in names)
    return {
        name: str(value) if isinstance(value, PurePath) else value
        for name, value in sorted(found)
        if not name.startswith("_")
        and isinstance(value, (str, int, float, bool, PurePath))
        # a cached property is in vars() only once read: never part of an identity
        and not isinstance(getattr(type(obj), name, None), cached_property)
    }


def scorer_identity(scorer: Any) -> dict[str, Any]:
    """What identifies a scorer's answers (see the module's docstring): its class and every
    public plain setting it holds (name, model, prompts, k1, temperature, ...), its profile's
    dtype and input length, its LLM client's provider and model, and a digest of the files
    of a model it reads from a local folder or file."""
    cls = type(scorer)
    ident: dict[str, Any] = {
        "class": f"{cls.__module__}.{cls.__qualname__}",
        **_plain_attributes(scorer),
    }
    profile = getattr(scorer, "profile", None)
    if profile is not None:
        ident["profile"] = _plain_attributes(profile, _PROFILE_ATTRIBUTES)
    client = getattr(scorer, "client", None)
    if client is not None:
        ident["client"] = _plain_attributes(client, _CLIENT_ATTRIBUTES)
    for name in _PATH_ATTRIBUTES:
        value = ident.get(name)
        if isinstance(value, str) and value and Path(value).exists():
            # the files stand for the model, wherever they are: not their path, nor a key
            # made of their modification times (both differ between two copies of one model)
            ident[f"{name}_files"] = model_files_digest(value)
            del ident[name]
            ident.pop("model_key", None)
    key = getattr(scorer, "model_key", None)  # a hub id's, or a loaded model's in a process
    if isinstance(key, str) and not any(k.endswith("_files") for k in ident):
        ident["model_key"] = key
    return ident


def resolved_spec(spec: Any) -> Any:
    """``spec`` (a registered name, a pipeline file, or a spec mapping) as what it computes:
    each pipeline file it names (``spec`` itself, or a stage's ``reranker = "x.toml"``)
    replaced by the file's contents as loading reads them (recursively); each ``model``,
    ``embedding`` or ``reranker`` path to a file or folder that exists (a learned model, a
    model folder) and each ``plugins`` file by a digest of its contents (a plugin named as
    a module stays a name). Paths are gone from it: a file edited in place resolves to
    another spec, and copies of one pipeline (with its models) in two folders resolve to
    the same. Raises what reading a pipeline file raises
    (:class:`~rerankit.errors.ConfigError`)."""
    if isinstance(spec, (str, PurePath)):
        return _resolved_file(spec) if _is_pipeline_file(spec) else content_key(spec)
    if isinstance(spec, Mapping):
        out: dict[str, Any] = {}
        for key, value in spec.items():
            if key == "plugins" and isinstance(value, list):
                out[key] = [content_key(v) if isinstance(v, str) else v for v in value]
            elif key in PATH_KEYS and isinstance(value, (str, PurePath)):
                out[key] = _resolved_file(value) if _is_pipeline_file(value) else content_key(value)
            else:
                out[key] = resolved_spec(value)
        return out
    if isinstance(spec, (list, tuple)):
        return [resolved_spec(v) for v in spec]
    return spec


def _is_pipeline_file(value: str | PurePath) -> bool:
    return PurePath(value).suffix.lower() in PIPELINE_SUFFIXES


def _resolved_file(path: str | PurePath) -> Any:
    return resolved_spec(read_pipeline(path))


def content_key(value: str | PurePath) -> str:
    """What a model or file named by ``value`` is, for a cache key: a path to a file or
    folder that exists, by a digest of its contents (:func:`model_files_digest`), not its
    path; anything else (a hub id, a registered name, a module) as written."""
    if str(value) and Path(value).exists():
        return f"files@{model_files_digest(value)}"
    return str(value)


def pipeline_fingerprint(spec: Any, reranker: Any = None) -> str:
    """The fingerprint (32 hex digits) of a pipeline: ``spec`` as declared (a registered
    name, a pipeline file, or a spec mapping: plain data only), resolved
    (:func:`resolved_spec`: a pipeline file by its contents), and, given the loaded
    ``reranker``, its scorers' identities (anything with ``scorers()``). Equal fingerprints
    promise equal answers to equal requests; use it as the first part of
    :func:`answer_key`."""
    parts: dict[str, Any] = {
        "format": CACHE_FORMAT,
        "rerankit": _version(),
        "spec": resolved_spec(spec),
    }
    if reranker is not None:
        parts["scorers"] = [scorer_identity(s) for s in reranker.scorers()]
    return digest(canonical_json(parts, "pipeline"), 32)
