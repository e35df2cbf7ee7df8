"""A pipeline spec read from a file (TOML, YAML or JSON) and written as TOML (what ``rerankit
tune`` and learning write); :mod:`rerankit.config` builds and checks it."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ._optional import require
from .errors import ConfigError, no_such_file
from .plugins import plugins_beside

try:
    import tomllib
except ImportError:  # Python 3.10: the tomli package (a dependency there)
    tomllib = None

__all__ = [
    "PATH_KEYS",
    "PIPELINE_KEYS",
    "PIPELINE_SUFFIXES",
    "SETTINGS_KEYS",
    "files_read_once",
    "is_settings_file",
    "paths_beside",
    "read_pipeline",
    "read_spec",
    "settings_not_pipeline",
    "to_toml",
]

#: the suffixes of pipeline files (a ``reranker`` value ending so is a file to read)
PIPELINE_SUFFIXES = (".toml", ".yaml", ".yml", ".json")


def to_toml(spec: Mapping[str, Any], comment: str = "") -> str:
    """A pipeline spec (a name and stages of plain values, as ``rerankit tune`` writes
    them, or a name and a ``reranker``) as TOML, unchecked: :func:`rerankit.config.to_toml`
    builds it first (tune's writers do not: their paths are read beside the file)."""

    def value(v: Any) -> str:
        if isinstance(v, str):
            return json.dumps(v)  # a TOML basic string is JSON-escaped
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, Mapping):  # an inline table
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return repr(v)

    lines = [f"# {line}" for line in comment.splitlines()] if comment else []
    lines += [f"name = {value(spec['name'])}"] if "name" in spec else []
    lines += [f"{k} = {value(v)}" for k, v in spec.items() if k not in ("name", "stages")]
    for stage in spec.get("stages", ()):
        lines += ["", "[[stages]]"]
        for k, v in stage.items():
            if k == "scorers":
                lines.append("scorers = [")
                for entry in v:
                    inner = ", ".join(f"{ek} = {value(ev)}" for ek, ev in entry.items())
                    lines.append(f"  {{ {inner} }},")
                lines.append("]")
            else:
                lines.append(f"{k} = {value(v)}")
    return "\n".join(lines) + "\n"


def read_spec(source: str | Path, what: str = "pipeline file") -> dict[str, Any]:
    """The spec in a ``.toml``, ``.yaml``/``.yml`` or ``.json`` file (``what`` it is, for
    the error when it is missing: a pipeline file, or the service's settings file)."""
    path = Path(source)
    if not path.exists():
        raise ConfigError(no_such_file(path, f"a {what}"))
    suffix = path.suffix.lower()
    if path.is_dir():
        raise ConfigError(
            f"a folder, not a {what}: use a .toml, .yaml, .yml or .json file", where=str(path)
        )
    if suffix not in PIPELINE_SUFFIXES:
        raise ConfigError("use a .toml, .yaml, .yml or .json file", where=str(path))
    try:
        text = path.read_text(encoding="utf-8")
        if suffix == ".toml":
            toml = tomllib or require("tomli", "reading TOML pipelines")
            spec = toml.loads(text)
        elif suffix == ".json":
            spec = json.loads(text)
        else:
            spec = require("yaml", "reading YAML pipelines").safe_load(text)
    except ConfigError:
        raise
    except Exception as exc:  # a parser's own error type (TOMLDecodeError, YAMLError, ...)
        raise ConfigError(str(exc), where=str(path)) from exc
    if not isinstance(spec, Mapping):
        raise ConfigError("a pipeline spec is a table/mapping at the top level", where=str(path))
    return dict(spec)


#: the top-level keys of the service's settings file, and those of a pipeline file
SETTINGS_KEYS = ("server", "pipelines", "cache")
PIPELINE_KEYS = ("stages", "reranker", "scorer", "scorers", "rule")


def is_settings_file(path: str | Path, *, spec: Mapping[str, Any] | None = None) -> bool:
    """Whether ``path`` (read as ``spec``, when given) is the service's settings file:
    [server], [pipelines.NAME] or [cache] at its top and no stage (False for one that
    cannot be read)."""
    if spec is None:
        if Path(path).suffix.lower() not in PIPELINE_SUFFIXES:
            return False
        try:
            spec = read_spec(path)
        except ConfigError:
            return False
    return bool(set(SETTINGS_KEYS) & set(spec)) and not set(PIPELINE_KEYS) & set(spec)


def settings_not_pipeline(
    path: str | Path, given_to: str | None = None, *, spec: Mapping[str, Any] | None = None
) -> str | None:
    """What to say when ``path`` (read as ``spec``, when given), read as a pipeline file
    (``given_to`` a command's flag that takes one, e.g. ``--reranker``), is the service's
    settings file (:func:`is_settings_file`): None for any other file."""
    if not is_settings_file(path, spec=spec):
        return None
    spec = read_spec(path) if spec is None else spec
    tables = ", ".join(f"[{k}]" for k in SETTINGS_KEYS if k in spec)
    top = "a reranker, scorer, scorers, rule or stages at the top"
    takes = f"{given_to} takes pipeline files ({top})" if given_to else f"a pipeline file has {top}"
    serves = f"`rerankit serve --settings {path}` serves them"
    if not given_to:  # a Python caller's way too
        serves += f" (in Python, rerankit.server.ServerSettings.from_file({str(path)!r}))"
    return (
        f"{path}: this is the service's settings file ({tables}), not a pipeline file: "
        f"{takes}; `rerankit check {path}` checks every pipeline it serves, and {serves}"
    )


#: the keys of a pipeline file whose relative paths are read from the file's folder
PATH_KEYS = ("model", "embedding", "reranker")


#: the pipeline files read in the current :func:`files_read_once` block, by resolved path
_READ: ContextVar[dict[str, dict[str, Any]] | None] = ContextVar("rerankit_read", default=None)


@contextlib.contextmanager
def files_read_once(
    read: dict[str, dict[str, Any]] | None = None,
) -> Iterator[dict[str, dict[str, Any]]]:
    """Inside the block (in this thread or task), each pipeline file is read once: a later
    :func:`read_pipeline` of it gives what the first read gave, so a pipeline built from
    its files and its fingerprint (:func:`rerankit.cache.pipeline_fingerprint`) come from
    the same bytes, even when a file is edited in between. ``read``: the files an earlier
    block read, to go on from (the dict yielded, filled in as files are read)."""
    read = {} if read is None else read
    token = _READ.set(read)
    try:
        yield read
    finally:
        _READ.reset(token)


def read_pipeline(source: str | Path) -> dict[str, Any]:
    """The spec in a pipeline file, with the relative ``model`` and ``embedding`` paths that
    exist beside the file made absolute (see :mod:`rerankit.config`); inside
    :func:`files_read_once`, as first read there."""
    path = Path(source).resolve()
    read = _READ.get()
    if read is not None and str(path) in read:
        return copy.deepcopy(read[str(path)])
    spec = read_spec(source)
    if note := settings_not_pipeline(source, spec=spec):
        raise ConfigError(note)
    spec = plugins_beside(paths_beside(spec, path.parent), path.parent)
    if read is not None:
        read[str(path)] = copy.deepcopy(spec)
    return spec


def paths_beside(node: Any, folder: Path) -> Any:
    """``node`` (a spec, or part of one) with each relative :data:`PATH_KEYS` path that
    exists in ``folder`` made absolute (pipeline files, and the service's settings file)."""
    if isinstance(node, Mapping):
        out = {}
        for key, value in node.items():
            if (
                key in PATH_KEYS
                and isinstance(value, str)
                and value
                and not Path(value).is_absolute()
            ):
                there = folder / value
                out[key] = str(there) if there.exists() else value
            else:
                out[key] = paths_beside(value, folder)
        return out
    if isinstance(node, list):
        return [paths_beside(v, folder) for v in node]
    return node
