"""Which served pipeline stands in for the built-in ``hybrid`` when none is named so: a
pipeline that is the hybrid itself, such as the file ``rerankit tune`` writes when nothing
learned beat the default (named after its file, ``tuned``). The service's default aliases
then send requests for ``hybrid`` to it, so clients that name the default keep working."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import PIPELINE_SUFFIXES, read_pipeline
from ..errors import RerankitError

__all__ = ["hybrid_stand_in", "is_the_hybrid"]

#: a hybrid's options that say where it runs, not what it computes (``--backend``, ...)
_PLACEMENT = {"type", "backend", "quantize"}


def _declared(spec: Any) -> Any:
    """``spec``, or the spec in the pipeline file it names (None when that cannot be read:
    loading the pipeline says why)."""
    if isinstance(spec, Mapping) and set(spec) == {"reranker"}:  # reranker = "tuned.toml"
        spec = spec["reranker"]
    if isinstance(spec, (str, Path)) and Path(spec).suffix.lower() in PIPELINE_SUFFIXES:
        try:
            return read_pipeline(spec)
        except (OSError, ValueError, RerankitError):
            return None
    return spec


def is_the_hybrid(spec: Any) -> bool:
    """Whether a served pipeline's spec (a name, a spec, a pipeline file's path) is the
    built-in ``hybrid`` and nothing else, wherever it runs."""
    spec = _declared(spec)
    if isinstance(spec, Mapping) and set(spec) <= {"name", "stages"}:
        stages = spec.get("stages")
        spec = stages[0] if isinstance(stages, list) and len(stages) == 1 else None
    if isinstance(spec, Mapping):
        if set(spec) - {"name", "reranker"}:
            return False
        spec = spec.get("reranker")
    if isinstance(spec, Mapping):
        return spec.get("type") == "hybrid" and set(spec) <= _PLACEMENT
    return spec == "hybrid"


def hybrid_stand_in(pipelines: Mapping[str, Any], default: str) -> str | None:
    """The served pipeline requests for ``hybrid`` should reach when no pipeline has that
    name: the default when it is the hybrid itself, else the first such; None when one is
    named ``hybrid`` or none is the hybrid."""
    if "hybrid" in pipelines:
        return None
    for name in sorted(pipelines, key=lambda n: n != default):
        if is_the_hybrid(pipelines[name]):
            return name
    return None
