"""What a model is, told from its files: a sentence-transformers embedding model, a
cross-encoder (a sequence-classification architecture), a causal-LM reranker, or a folder
written by ``rerankit export``; for a hub id, from the local Hugging Face cache, fetched
when the hub answers (a quick probe first: offline, the hub client would retry for a
minute)."""

from __future__ import annotations

import functools
import json
import os
import socket
import urllib.parse
from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = ["model_kind"]


#: what a model folder's ``config.json`` architecture says it is
_ARCHITECTURES = (
    ("ForSequenceClassification", "cross_encoder"),
    ("ForCausalLM", "causal_lm"),
)


def model_kind(model: str) -> tuple[str, dict[str, Any]]:
    """What ``model`` (a local folder or a hub id) is: ``embedding``, ``cross_encoder`` or
    ``causal_lm``, with the scorer options that follow (``backend="onnx"`` for a folder
    written by ``rerankit export``). Read from the folder's files, or from the hub's copy in
    the local Hugging Face cache (fetched when the hub can be reached). A
    :class:`ConfigError` names the model when neither says."""
    folder = Path(model)
    if folder.is_dir():
        manifest = folder / "rerankit_onnx.json"
        if manifest.is_file():
            kind = json.loads(manifest.read_text(encoding="utf-8")).get("kind", "embedding")
            return kind, {"backend": "onnx"}
        has = lambda name: (folder / name).is_file()  # noqa: E731
        config = folder / "config.json"
    else:
        has = lambda name: _hub_file(model, name) is not None  # noqa: E731
        found = _hub_file(model, "config.json")
        config = Path(found) if found else None
    if has("modules.json") or has("config_sentence_transformers.json"):
        return "embedding", {}
    if config is not None and config.is_file():
        architectures = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
        for suffix, kind in _ARCHITECTURES:
            if any(str(a).endswith(suffix) for a in architectures):
                return kind, {}
    raise ConfigError(
        f"cannot tell what {model!r} is: no sentence-transformers files and no "
        "sequence-classification or causal-LM architecture in its config.json (a hub id must "
        "be in the local Hugging Face cache or reachable); name the kind: "
        f'{{ scorer = {{ type = "cross_encoder", model = "{model}" }} }} (or embedding, '
        "causal_lm)"
    )


def _hub_file(model: str, name: str) -> str | None:
    """The path of ``name`` of hub model ``model`` in the local cache, fetched when the
    hub answers; None when neither has it (or huggingface_hub is not installed)."""
    try:
        import huggingface_hub
    except ImportError:
        return None
    cached = huggingface_hub.try_to_load_from_cache(model, name)
    if isinstance(cached, str):
        return cached
    if not _hub_reachable():
        return None
    try:
        return huggingface_hub.hf_hub_download(model, name)
    except Exception:  # unknown id or no such file: the caller says what it needs
        return None


@functools.cache
def _hub_reachable() -> bool:
    """Whether the Hugging Face hub answers (a 3 s probe, once per process), unless
    ``HF_HUB_OFFLINE`` says not to try: offline, the hub client would retry for a minute
    before failing."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    host = urllib.parse.urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        with socket.create_connection((host.hostname or "", host.port or 443), timeout=3):
            return True
    except OSError:
        return False
