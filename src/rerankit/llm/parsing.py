"""Reading LLM answers: JSON first (code fences tolerated), then narrow regex fallbacks;
permutation checks and repair for listwise answers."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "parse_index",
    "parse_json",
    "parse_score",
    "repair_permutation",
    "validate_permutation",
]

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)
_SCORE_FIELD = re.compile(r"""["']?\bscore["']?\s*[:=]\s*(-?\d+(?:\.\d+)?)""", re.IGNORECASE)
_OUT_OF_TEN = re.compile(r"(-?\d+(?:\.\d+)?)\s*/\s*10\b")
_LONE_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*\.?\s*$")
_INDEX = re.compile(r"^\s*\[?\s*(\d+)\s*\]?\s*$")


def parse_json(text: str) -> Any:
    """The JSON value in ``text`` (optionally inside a ```json fence); ValueError if none."""
    match = _FENCE.match(text)
    body = match.group(1) if match else text.strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        start, end = body.find("{"), body.rfind("}")
        if 0 <= start < end:
            return json.loads(body[start : end + 1])  # JSON inside chatter
        raise ValueError(f"not JSON: {text[:80]!r}") from None


def parse_score(text: str) -> float:
    """A relevance score from an answer: ``{"score": 7}`` (JSON), else ``score: 7``,
    ``7/10`` or an answer that is just a number. ValueError when none is found, and for a
    boolean or a non-finite value (``true``, ``Infinity``, ``NaN``): such an answer is
    unreadable, not a score."""
    try:
        value = parse_json(text)
    except (ValueError, TypeError):
        value = None
    if isinstance(value, dict) and "score" in value:
        value = value["score"]
    if value is not None and not isinstance(value, (dict, list)):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"the score is not a number: {value!r}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"the score is not a number: {value!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"the score is not a finite number: {value!r}")
        return number
    for pattern in (_SCORE_FIELD, _OUT_OF_TEN, _LONE_NUMBER):
        match = pattern.search(text)
        if match:
            return float(match.group(1))
    raise ValueError(f"unreadable answer: {text[:80]!r}")


def parse_index(value: Any) -> int | None:
    """An index given as ``11``, ``"11"`` or ``"[11]"`` (exactly: ``"[11]"`` is 11, never 1);
    None for anything else (booleans, floats with a fraction, words)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        match = _INDEX.match(value)
        return int(match.group(1)) if match else None
    return None


def validate_permutation(
    original: Sequence[int], reranked: Sequence[int]
) -> tuple[bool, list[int], list[int], list[int]]:
    """``(is_valid, missing, extra, out_of_range)``: valid when ``reranked`` holds each
    element of ``original`` exactly once and nothing else. ``missing``/``extra`` are sorted
    set differences; ``out_of_range`` lists (repeats kept) the entries outside
    ``[min(original), max(original)]``, sorted (empty when ``original`` is)."""
    want, got = set(original), set(reranked)
    missing = sorted(want - got)
    extra = sorted(got - want)
    if original:
        lo, hi = min(original), max(original)
        out_of_range = sorted(i for i in reranked if i < lo or i > hi)
    else:
        out_of_range = []
    valid = not missing and not extra and not out_of_range and len(reranked) == len(original)
    return valid, missing, extra, out_of_range


def repair_permutation(original: Sequence[int], reranked: Sequence[int]) -> list[int]:
    """A permutation of ``original`` (whose elements must be distinct) that follows
    ``reranked`` as far as it can: unknown and repeated entries are dropped (the first
    occurrence wins), then whatever is missing is appended in its ``original`` order."""
    allowed = set(original)
    seen: set[int] = set()
    kept: list[int] = []
    for i in reranked:
        if i in allowed and i not in seen:
            seen.add(i)
            kept.append(i)
    return kept + [i for i in original if i not in seen]
