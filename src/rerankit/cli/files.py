"""Files and folders the command line names, checked before any work: one that is not
there is a usage error (exit status 2), said the same way by every command,
``rerankit COMMAND: error: PATH: no such file (--flag: what it is for)``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .. import registry
from ..api import PIPELINE_SUFFIXES
from ..backends.hub import looks_like_a_path
from ..errors import no_such_file
from ..eval.first_stage import SOURCES
from .args import UsageError
from .console import note

__all__ = ["need_collection", "need_file", "need_first_stage", "need_model", "need_reranker"]


def need_file(path: str | Path | None, flag: str, what: str, *, folder: bool = False) -> None:
    """A :class:`~rerankit.cli.args.UsageError` when ``path`` (given with ``flag``, for
    ``what``) is not there; nothing when it is, or when it was not given (None)."""
    if path is not None and not Path(path).exists():
        raise UsageError(no_such_file(path, f"{flag}: {what}", folder=folder))


def need_reranker(
    values: str | Iterable[str] | None, flag: str = "--reranker", *, named_later: bool = False
) -> None:
    """Each reranker named (``-r``) is one there can be: a pipeline file (.toml, .yaml,
    .json) or a model folder (a path such as ``./model``) that is there, or a registered
    name (a hub id, ``owner/name``, is not checked here). A name that is none of these is
    a usage error too (:func:`rerankit.registry.unknown_reranker` words it), unless
    ``named_later``: a settings file read later may register it (its ``plugins``)."""
    for value in [values] if isinstance(values, str) else values or ():
        if Path(value).suffix.lower() in PIPELINE_SUFFIXES:
            need_file(value, flag, "a pipeline file")
        elif registry.canonical("reranker", value) is None:
            need_model(value, flag, "a model folder")
            if not (named_later or "/" in value or "\\" in value or Path(value).is_dir()):
                raise UsageError(str(registry.unknown_reranker(value)))


def need_model(value: str | None, flag: str, what: str) -> None:
    """The model folder ``value`` names is there, when ``value`` can only be a path (a hub
    id, ``owner/name``, is loaded, or refused, by the library); an ``owner/name`` whose
    ``owner`` is a folder here but that is none is said on stderr, then read as a hub id."""
    if value is not None and looks_like_a_path(value):
        need_file(value, flag, what, folder=True)
    elif value and "/" in value and not Path(value).exists():
        first = value.split("/", 1)[0]
        if Path(first).is_dir():
            note(
                f"note: {flag} {value}: no such folder in the current directory "
                f"({Path.cwd()}), though {first}/ is one there; reading it as a hub id"
            )


def need_first_stage(value: str | None, flag: str = "--first-stage") -> None:
    """``--first-stage``: a word (auto, bm25, run), or a file that is there."""
    if value is not None and value not in SOURCES:
        need_file(value, flag, "a TREC run or JSON Lines candidates, or auto, bm25 or run")


def need_collection(
    spec: str | None, flag: str = "--data", what: str = "a BEIR-layout folder"
) -> None:
    """A BEIR-layout folder that is there; ``PATH@SPLIT`` names one with its split, as
    ``eval --data`` takes it."""
    if spec is None:
        return
    path = spec
    if not Path(spec).exists() and "@" in spec:
        path = spec.rpartition("@")[0]
    need_file(path, flag, what, folder=True)
