"""The warning a request gets when it names a multilingual model (Cohere's
``rerank-multilingual-v3.0``, Jina's ``jina-reranker-v2-base-multilingual``, ...: any name
with ``multilingual`` in it) and the pipeline that answers reads English only.

Cohere's model names are aliases of the default pipeline (or of the one
``[server.aliases]`` names), whatever their language. rerankit ships no multilingual
model: the bundled all-MiniLM-L6-v2 reads English only, so a German query sent as
``rerank-multilingual-v3.0`` would get a worse ranking and no word of why. Its answer says
so in ``meta.warnings``, and the log says it once per name."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..backends.bundled import BUNDLED_NAMES
from ..backends.manifest import is_exported, read_manifest
from .model_names import MULTILINGUAL_PREFIX, says_multilingual
from .settings import ServerSettings

__all__ = ["MULTILINGUAL_PREFIX", "LanguageNotes", "english_only_models", "says_multilingual"]

logger = logging.getLogger(__name__)


def english_only_models(reranker: Any) -> list[str]:
    """The models of ``reranker``'s scorers known to read English only: the bundled
    all-MiniLM-L6-v2, named by its id or as a folder ``rerankit export`` made from it
    (read from the export's manifest). Reads no model."""
    found = set()
    for scorer in reranker.scorers():
        model = getattr(scorer, "model_id", None)
        if not isinstance(model, str):
            continue
        source = model
        if is_exported(model):
            source = read_manifest(Path(model)).get("source", model)
        if source in BUNDLED_NAMES:
            found.add(source)
    return sorted(found)


class LanguageNotes:
    """Per service: the warning for a request naming ``model`` that pipeline ``pipeline``
    (ready) answers, or None. Each pipeline's models are looked at once."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self._models: dict[int, tuple[Any, list[str]]] = {}  # by the reranker's id
        self._said: set[str] = set()

    def note(self, model: str | None, pipeline: Any) -> str | None:
        if not model or not says_multilingual(model):
            return None
        if model not in (self.settings.aliases or {}):  # a pipeline of that name: its own
            return None
        reranker = pipeline.reranker
        known = self._models.get(id(reranker))
        if known is None or known[0] is not reranker:
            known = self._models[id(reranker)] = (reranker, english_only_models(reranker))
        if not known[1]:
            return None
        note = (
            f"model {model!r} is an alias of pipeline {pipeline.name!r}, whose model "
            f"{known[1][0]} reads English only: text in other languages is ranked poorly "
            "(serve a multilingual pipeline under this name with [server.aliases])"
        )
        if model not in self._said:
            self._said.add(model)
            logger.warning(
                "requests naming model %r get a warning in meta.warnings: %s", model, note
            )
        return note
