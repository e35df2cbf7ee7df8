"""Words of messages shared across the package."""

from __future__ import annotations

__all__ = ["counted", "read_in_part"]


def counted(n: int, thing: str, many: str | None = None) -> str:
    """``n`` and ``thing`` in the number it takes: ``1 row``, ``2 rows`` (``many``: the
    plural where it is not ``thing`` + ``s``)."""
    return f"{n} {thing if n == 1 else many or thing + 's'}"


def read_in_part(n: int, longer: str, read: str) -> str:
    """A scorer's words for the ``n`` documents it cut to fit, ``longer`` than what it reads,
    read on ``read`` (``start``, ``first 500``), in their number: ``1 document longer than
    500 characters was read on its first 500``, ``2 documents ... were read on their ...``."""
    was = "was read on its" if n == 1 else "were read on their"
    return f"{counted(n, 'document')} longer than {longer} {was} {read}"
