"""Where rerankit keeps what it derives and may read again (caches, exports, compact
tables): one directory for every layer."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_cache_dir"]


def default_cache_dir() -> Path:
    """``$RERANKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/rerankit``, else ``~/.cache/rerankit``."""
    if os.environ.get("RERANKIT_CACHE_DIR"):
        return Path(os.environ["RERANKIT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rerankit"
