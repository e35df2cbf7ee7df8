"""An LLM scorer's options as a pipeline file declares them: checked and split between the
provider client (``json_mode``, ...) and the scorer (``window``, ``retry``, ...), with the
``retry`` table made a :class:`~rerankit.llm.RetryPolicy` when the file loads, so a mistake
is a :class:`~rerankit.errors.ConfigError` naming the key before any call is made."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from numbers import Real
from typing import Any

from ..errors import ConfigError
from ..options import check_options, factory_options, unknown_keys
from .keywords import RATE_HINTS
from .resilience import RetryPolicy

__all__ = ["DECLARED_KEYS", "RETRY_KEYS", "retry_policy", "split_llm_options"]

#: the keys every declared LLM scorer takes besides its client's and its own
DECLARED_KEYS = ("provider", "model", "base_url", "api_key_env")
#: the keys of a ``retry = {...}`` table: :class:`~rerankit.llm.RetryPolicy`'s fields
RETRY_KEYS = tuple(f.name for f in fields(RetryPolicy))
_RETRY_HINT = f"set it in the retry table: retry = {{ {', '.join(RETRY_KEYS)} }}"
#: keys a file does not take, and what it writes instead
_HINTS = {
    "api_key": "a file names the environment variable that holds the key: api_key_env = ...",
    "limits": "a Limits object is shared in Python; a file sets max_concurrency and "
    "requests_per_minute on each scorer",
    "client": "a file declares the client by provider, model and base_url",
    **dict.fromkeys(RETRY_KEYS, _RETRY_HINT),
    **RATE_HINTS,
}
#: Python-only parameters of the scorer and the client, never read from a file
_NOT_IN_FILES = ("client", "limits", "api_key", "model", "base_url")


def retry_policy(value: Any, where: str = "retry") -> RetryPolicy | None:
    """A :class:`~rerankit.llm.RetryPolicy` from a ``retry`` table (``attempts``, ``timeout``,
    ``min_wait``, ``max_wait``, ``multiplier``; the others keep their defaults); None and a
    policy pass as they are. A wrong key or value is a ConfigError located at ``where``."""
    if value is None or isinstance(value, RetryPolicy):
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(f"a table of {', '.join(RETRY_KEYS)}, got {value!r}", where=where)
    unknown = unknown_keys(value, RETRY_KEYS, "the table")
    if unknown:
        raise ConfigError(unknown, where=where)
    for key, v in value.items():
        whole = key == "attempts"
        if isinstance(v, bool) or not isinstance(v, int if whole else Real):
            kind = "an integer" if whole else "a number of seconds"
            raise ConfigError(f"must be {kind}, got {v!r}", where=f"{where}.{key}")
    try:
        return RetryPolicy(**value)
    except ValueError as exc:
        raise ConfigError(str(exc), where=where) from exc


def split_llm_options(
    scorer_cls: Any, client_cls: Any, options: Mapping[str, Any], what: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` (a scorer table's keys besides :data:`DECLARED_KEYS`) split into the
    client's and the scorer's, each checked against its signature: an unknown key is a
    ConfigError naming every key the table takes; ``retry`` becomes a RetryPolicy."""
    scorer_keys = [k for k in factory_options(scorer_cls) or () if k not in _NOT_IN_FILES]
    client_keys = [k for k in factory_options(client_cls) or () if k not in _NOT_IN_FILES]
    unknown = unknown_keys(options, [*DECLARED_KEYS, *client_keys, *scorer_keys], what, _HINTS)
    if unknown:
        raise ConfigError(unknown)
    client = {k: v for k, v in options.items() if k in client_keys}
    scorer = {k: v for k, v in options.items() if k not in client_keys}
    if "retry" in scorer:
        scorer["retry"] = retry_policy(scorer["retry"])
    check_options(client_cls, client, what)
    return client, check_options(scorer_cls, scorer, what)
