"""What a model is, told from its files: a sentence-transformers embedding model, a
cross-encoder (a sequence-classification architecture), a causal-LM reranker, or a folder
written by ``rerankit export``; for a hub id, from the local Hugging Face cache, fetched
when the hub answers (:mod:`.hub` asks it first: offline, the hub client would retry
for a minute). And whether a model folder has the tokenizer it needs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ModelLoadError
from .hub import hub_options, hub_reachable
from .manifest import MANIFEST, read_manifest

__all__ = ["TOKENIZER_FILES", "check_tokenizer", "folder_kind", "model_kind"]


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
        manifest = folder / MANIFEST
        if manifest.is_file():
            kind = json.loads(manifest.read_text(encoding="utf-8")).get("kind", "embedding")
            return kind, {"backend": "onnx"}
        has = lambda name: (folder / name).is_file()  # noqa: E731
        config = folder / "config.json"
    else:  # fails at once, saying what to do, when neither the hub nor the cache has it
        hub_options(model, "model", 'rerankit.load("{folder}")')
        has = lambda name: _hub_file(model, name) is not None  # noqa: E731
        found = _hub_file(model, "config.json")
        config = Path(found) if found else None
    kind = _kind_of(config, has)
    if kind is not None:
        return kind, {}
    raise ConfigError(
        f"cannot tell what {model!r} is: no sentence-transformers files and no "
        "sequence-classification or causal-LM architecture in its config.json. Name its kind "
        f'in a pipeline file ([scorer] type = "cross_encoder", model = "{model}"; or '
        "embedding, causal_lm) and give the file where a reranker is named, or in Python "
        f'(CrossEncoderScorer("{model}"))'
    )


def _kind_of(config: Path | None, has: Callable[[str], bool]) -> str | None:
    """The kind a model's ``config.json`` and files (``has(name)``) say, or None."""
    architectures = []
    if config is not None and config.is_file():
        architectures = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
    # sentence-transformers saves cross-encoders with its own files too (modules.json and
    # a config_sentence_transformers.json whose model_type says CrossEncoder), so the
    # architecture decides first: a classification head is a cross-encoder
    if any(str(a).endswith("ForSequenceClassification") for a in architectures):
        return "cross_encoder"
    if has("modules.json") or has("config_sentence_transformers.json"):
        return "embedding"
    for suffix, kind in _ARCHITECTURES:
        if any(str(a).endswith(suffix) for a in architectures):
            return kind
    return None


def folder_kind(model: str) -> str | None:
    """What the local folder ``model`` is, told as :func:`model_kind` tells it (a folder
    written by ``rerankit export`` by its manifest), without asking the hub: None for a
    hub id, or a folder its files do not tell."""
    folder = Path(model)
    if not folder.is_dir():
        return None
    if (folder / MANIFEST).is_file():
        try:
            return str(read_manifest(folder).get("kind", "embedding"))
        except ModelLoadError:
            return None
    try:
        return _kind_of(folder / "config.json", lambda name: (folder / name).is_file())
    except (OSError, ValueError):  # an unreadable config.json: loading it will say so
        return None


#: the files a saved tokenizer has (any one of them): the fast tokenizer's, its settings,
#: and the vocabularies of WordPiece, BPE and SentencePiece tokenizers
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)


def check_tokenizer(model: str, what: str) -> None:
    """A :class:`ModelLoadError` when ``model`` is a local model folder (not an export) with
    no tokenizer file in it or in a folder inside it (an older sentence-transformers
    layout): loaded as it is, transformers makes a tokenizer of special tokens alone, every
    word reads as unknown and the scores mean nothing, with no error. ``what`` names the
    model's kind for the message."""
    folder = Path(model)
    if not folder.is_dir() or (folder / MANIFEST).is_file():
        return
    places = [folder, *(p for p in folder.iterdir() if p.is_dir())]
    if any((place / name).is_file() for place in places for name in TOKENIZER_FILES):
        return
    raise ModelLoadError(
        f"the {what} folder {str(folder)!r} has no tokenizer (none of "
        f"{', '.join(TOKENIZER_FILES[:3])}, ...): loaded as it is, every word would read as "
        "unknown and the scores would mean nothing. Save the tokenizer the model was "
        f"trained with beside it, tokenizer.save_pretrained({str(folder)!r}) "
        "(model.save_pretrained writes the weights and config.json only)"
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
    if not hub_reachable():
        return None
    try:
        return huggingface_hub.hf_hub_download(model, name)
    except Exception:  # unknown id or no such file: the caller says what it needs
        return None
