"""Reading JSON Lines (and JSON arrays): the one reader the CLI and the evaluation share.

Errors name the source and the line. Files are read as UTF-8 (a byte-order mark is
allowed); anything else is an error naming the file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import InputError, no_such_file

__all__ = [
    "DOCUMENT_LINE",
    "dumps_strict",
    "json_lines",
    "json_safe",
    "numbered_jsonl",
    "numbered_records",
    "parse_jsonl",
    "read_jsonl",
    "read_records",
    "read_text",
]


def json_safe(value: Any) -> Any:
    """``value`` with non-finite floats as None (NaN and Infinity are not JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def dumps_strict(value: Any, **options: Any) -> str:
    """JSON that strict parsers accept: NaN and Infinity written as null."""
    return json.dumps(json_safe(value), allow_nan=False, **options)


def read_text(path: str | Path) -> str:
    """A UTF-8 file's text (a leading byte-order mark dropped); errors name the file."""
    path = Path(path)
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x}); "
            "save the file as UTF-8"
        ) from None
    except FileNotFoundError:
        raise InputError(no_such_file(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


def json_lines(text: str) -> list[str]:
    """``text`` cut into JSON Lines' lines: at ``\\n`` only (a ``\\r`` before it is JSON
    whitespace). Not :meth:`str.splitlines`, which also cuts at characters JSON keeps
    unescaped inside strings (U+2028, U+0085, form feed, ...), as ``json.dumps(...,
    ensure_ascii=False)`` writes them."""
    return text.split("\n")


#: what a line of a file of documents holds, as an error about a line that is not JSON shows it
DOCUMENT_LINE = ("documents", '{"id": "d1", "text": "..."}')


def _numbered(
    lines: Iterable[str], source: str, rows: tuple[str, str] = DOCUMENT_LINE
) -> list[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line; a line that is not JSON is an error
    naming the line, the column and, for plain text, what a line holds (``rows``: what the
    rows are, and one as an example)."""
    items = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            items.append((lineno, json.loads(line)))
        except json.JSONDecodeError as exc:
            plain = line.lstrip()[:1] not in tuple('{["-0123456789')  # no JSON value begins so
            hint = (
                f" (JSON Lines: one JSON object a line, such as {rows[1]}; plain text is not "
                f"read as {rows[0]})"
                if plain
                else ""
            )
            at = "column" if exc.msg.endswith(" at") else "at column"  # json's own "... at"
            message = f"{exc.msg} {at} {exc.colno}"
            raise InputError(f"{source}:{lineno}: invalid JSON: {message}{hint}") from None
    return items


def parse_jsonl(lines: Iterable[str], source: str) -> list[Any]:
    """One JSON value per non-blank line."""
    return [value for _, value in _numbered(lines, source)]


def numbered_jsonl(
    path: str | Path, line: tuple[str, str] = DOCUMENT_LINE
) -> list[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of a JSON Lines file (``line``:
    what its rows are, and one as an example, for the error about a line that is not JSON)."""
    return _numbered(json_lines(read_text(path)), str(path), line)


def read_jsonl(path: str | Path) -> list[Any]:
    """The values of a JSON Lines file."""
    return parse_jsonl(json_lines(read_text(path)), str(path))


def read_records(text: str, source: str) -> list[Any]:
    """A JSON array, or JSON Lines (one value per line). A text that starts with ``[`` is
    an array only when the whole text is one JSON array; otherwise it is read as lines."""
    return [value for _, value in numbered_records(text, source)]


def numbered_records(text: str, source: str) -> list[tuple[int | None, Any]]:
    """:func:`read_records` with each value's line number (None for the items of a JSON
    array), so that a mistake in one can be said where it is."""
    text = text.removeprefix("\ufeff")
    if text.lstrip().startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, list):
            return [(None, item) for item in value]
    return _numbered(json_lines(text), source)
