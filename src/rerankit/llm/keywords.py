"""A wrong keyword given to an LLM class in Python answered as a pipeline file's wrong key
is: the class's options, the close one (``did you mean``) or where the option lives."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..options import unknown_keys

__all__ = ["RATE_HINTS", "checked_keywords", "scorer_hints", "unknown_keywords"]

C = TypeVar("C", bound=type)

#: what a reader coming from a pipeline file or another library may write for a rate
RATE_HINTS = dict.fromkeys(
    ("rate_limit", "rpm", "rate", "requests_per_min"),
    "did you mean 'requests_per_minute'? (calls started per minute)",
)


def unknown_keywords(
    unknown: Any, known: list[str], what: str, hints: Mapping[str, str] | None, word: str
) -> TypeError:
    """The TypeError for keywords ``what`` does not take: the close one or ``hints[key]``
    (where it goes instead), and always the ``word``s it takes."""
    said = unknown_keys(unknown, known, what, hints, word=word)
    if f"; its {word}s: " not in str(said):
        said = f"{said}; its {word}s: {', '.join(known)}"
    return TypeError(said)


def checked_keywords(
    hints: Mapping[str, str] | None = None, word: str = "option"
) -> Callable[[C], C]:
    """A class decorator: a keyword its ``__init__`` does not take is a TypeError that names
    the class's keywords, the close one, or ``hints[key]`` (where that option goes instead).
    The signature stays the class's own (``inspect.signature`` reads through)."""

    def decorate(cls: C) -> C:
        init = cls.__init__
        parameters = list(inspect.signature(init).parameters.values())[1:]
        known = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            unknown = [k for k in kwargs if k not in known]
            if unknown:
                raise unknown_keywords(unknown, known, cls.__name__, hints, word)
            init(self, *args, **kwargs)

        cls.__init__ = __init__  # type: ignore[misc]
        return cls

    return decorate


def scorer_hints(retry_fields: tuple[str, ...]) -> dict[str, str]:
    """For a client: the options that are the scorer's, and how to give them there."""
    policy = f"(from rerankit.llm import RetryPolicy; its fields: {', '.join(retry_fields)})"
    return {
        **{
            key: f"it is the scorer's retry policy: LLMPointwiseScorer(client, "
            f"retry=RetryPolicy({key}=...)) {policy}"
            for key in retry_fields
        },
        **dict.fromkeys(
            ("max_retries", "retries"),
            "retries are the scorer's: LLMPointwiseScorer(client, retry=RetryPolicy("
            f"attempts=...)), attempts counting the first call {policy}",
        ),
        **{
            key: f"it is the scorer's: LLMPointwiseScorer(client, {key}=...)"
            for key in ("max_concurrency", "requests_per_minute", "cache", "temperature")
        },
    }
