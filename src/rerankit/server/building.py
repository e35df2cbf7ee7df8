"""Each pipeline of a service's settings built as the service builds it: within the
settings' ``[cache]`` defaults (:func:`~rerankit.cache.cache_defaults`), so that a scorer
whose cache names no place of its own keeps its vectors and judgments where the service's
do. ``rerankit precompute --settings`` and ``rerankit check`` build them this way too."""

from __future__ import annotations

from typing import Any

from ..api import load
from ..cache import cache_defaults
from .settings import ServerSettings

__all__ = ["build_pipeline", "build_pipelines"]


def build_pipeline(spec: Any, settings: ServerSettings) -> Any:
    """The reranker ``spec`` declares (a name, a pipeline file or a declared pipeline, as
    :func:`rerankit.load` reads it), built within ``settings``' ``[cache]`` defaults, as
    the service builds each pipeline it serves. Its models load on first use; a mistake in
    the spec raises as :func:`rerankit.load` does."""
    with cache_defaults(settings.cache):
        return load(spec)


def build_pipelines(settings: ServerSettings) -> dict[str, Any]:
    """Every pipeline ``settings`` serves, by name, built as the service builds it
    (:func:`build_pipeline`): to precompute for them, or to rerank with them from Python
    exactly as the service would::

        settings = ServerSettings.from_file("service.toml")
        hybrid = build_pipelines(settings)["hybrid"]"""
    return {
        name: build_pipeline(spec, settings) for name, spec in (settings.pipelines or {}).items()
    }
