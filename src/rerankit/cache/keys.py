"""Keys and values of every cache: the format version, canonical hashing, and the header that
versions each stored value.

A stored value is ``MAGIC + FORMAT + payload``. A reader meets a value written under another
format (an older or newer rerankit) as a miss, never as data: the caller computes afresh and
its write replaces the entry.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

__all__ = [
    "CACHE_FORMAT",
    "KINDS",
    "canonical_json",
    "decode",
    "digest",
    "encode",
    "text_key",
]

#: The layout of keys and values; a change to either bumps it, so no entry is misread.
CACHE_FORMAT = 1
#: The caches rerankit keeps (each a table of an SQLite file, or a key prefix in Redis).
KINDS = ("embedding", "judgment", "answer")

_MAGIC = b"rk"
_HEADER = _MAGIC + bytes([CACHE_FORMAT])


def text_key(text: str) -> bytes:
    """The cache key of a text: its SHA-256 digest."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def digest(text: str, length: int = 64) -> str:
    """The first ``length`` hex digits of the SHA-256 of ``text``."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def _plain(value: Any, where: str) -> Any:
    """``value`` as plain JSON data; anything else is refused (its text could hold a memory
    address or a timestamp, which would make a key that never hits, or worse, hits wrongly)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)  # nan, inf: one spelling each
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: keys must be strings, got {k!r}")
            out[k] = _plain(v, f"{where}.{k}")
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise TypeError(
        f"{where}: {type(value).__name__} is not plain data (str, number, bool, None, list, "
        "mapping); a cache key is built only from what stays the same across processes"
    )


def canonical_json(value: Any, where: str = "value") -> str:
    """``value`` as one canonical JSON text: mapping keys sorted, ASCII only, no spaces; the
    same data gives the same text in every process. Raises TypeError naming the first part
    that is not plain data."""
    return json.dumps(
        _plain(value, where), sort_keys=True, ensure_ascii=True, separators=(",", ":")
    )


def encode(payload: bytes) -> bytes:
    """A payload as stored: the header of this format, then the payload."""
    return _HEADER + payload


def decode(stored: bytes | None) -> bytes | None:
    """The payload of a stored value; None when there is none or it has another format."""
    if stored is None or not stored.startswith(_HEADER):
        return None
    return bytes(stored[len(_HEADER) :])
