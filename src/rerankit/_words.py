"""Words of messages shared across the package."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, thing: str, many: str | None = None) -> str:
    """``n`` and ``thing`` in the number it takes: ``1 row``, ``2 rows`` (``many``: the
    plural where it is not ``thing`` + ``s``)."""
    return f"{n} {thing if n == 1 else many or thing + 's'}"
