"""The rule API keys follow, wherever they are set (``[server] api_keys`` or the key
variable): a key is visible ASCII characters (``!`` to ``~``: letters, digits, punctuation)
other than a comma, with single spaces allowed inside. Anything else can never match what
a client sends (HTTP trims the ends of a header; clients send UTF-8, servers read Latin-1)
or cannot be written in the comma-separated variable, so it is refused. Messages name a
key by its position and kind, never by its value (they reach CI logs)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "KEY_RULE",
    "env_keys",
    "env_problem",
    "key_problem",
    "keys_counted",
    "keys_said",
    "kind_of",
    "list_problem",
]

#: the rule, as messages and the docs say it
KEY_RULE = "visible ASCII characters (! to ~) other than a comma, spaces only inside"


def kind_of(value: Any) -> str:
    """What ``value`` is, without its content: "a string of 6 characters", "a list of 2
    entries", "an integer" (a secret's value is never repeated)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, str):
        return f"a string of {len(value)} character{'s' * (len(value) != 1)}"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} entr{'ies' if len(value) != 1 else 'y'}"
    if isinstance(value, dict):
        return f"a table of {len(value)} entr{'ies' if len(value) != 1 else 'y'}"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    return f"a {type(value).__name__}"


def key_problem(key: str) -> str | None:
    """Why ``key`` (a string) can never be sent and matched, or None."""
    if not key.strip():
        return "is empty (an empty key would let any request in)"
    if key != key.strip():
        return "starts or ends with a space (HTTP trims it, so no request can send it)"
    for position, char in enumerate(key, 1):
        if char == ",":
            return f"holds a comma (character {position}; commas separate keys)"
        if not (" " <= char <= "~"):
            what = "a non-ASCII" if ord(char) > 127 else "a control"
            return f"holds {what} character (character {position}), which clients cannot send"
    return None


def list_problem(keys: Any, where: str = "api_keys") -> str | None:
    """Why ``keys`` (the file's ``api_keys``) is not a list of keys following the rule,
    or None; an empty list is refused too (it would run the service open, as an empty key
    variable would: to run open, leave ``api_keys`` out)."""
    if not isinstance(keys, (list, tuple)):
        return f'{where}: expected a list of strings (["k1", "k2"]), got {kind_of(keys)}'
    if not keys:
        return (
            f"{where}: an empty list would run the service open; give one key or several, "
            "or leave api_keys out to run open on purpose"
        )
    for position, key in enumerate(keys, 1):
        if not isinstance(key, str):
            return f"{where}: entry {position} of {len(keys)} is {kind_of(key)}, not a string"
        problem = key_problem(key)
        if problem is not None:
            return f"{where}: entry {position} of {len(keys)} {problem}; a key holds {KEY_RULE}"
    return None


def env_keys(value: str | None) -> list[str]:
    """The keys in a key variable's ``value``: comma-separated, spaces around each and
    empty entries ignored."""
    return [k.strip() for k in (value or "").split(",") if k.strip()]


def env_problem(value: str | None, variable: str) -> str | None:
    """Why a key in ``$variable`` (its ``value``) breaks the rule, or None."""
    keys = env_keys(value)
    for position, key in enumerate(keys, 1):
        problem = key_problem(key)
        if problem is not None:
            return f"${variable}: key {position} of {len(keys)} {problem}; a key holds {KEY_RULE}"
    return None


def keys_said(in_file: int, variable: str, named: bool, value: str | None) -> str:
    """Whether a service with ``in_file`` keys in ``api_keys`` and ``$variable`` (holding
    ``value``; ``named`` by ``api_key_env``) needs a key, and how many from where: the
    line ``rerankit check`` prints (counts only, never a key)."""
    from_env = len(env_keys(value))
    if not in_file and not from_env and not named:
        here = "is not set here" if value is None else "holds no keys here"
        return (
            f"keys: none in api_keys and ${variable} {here}: the service will be "
            f"open to anyone who can reach it, unless ${variable} holds keys where it runs"
        )
    where = [f"{in_file} in api_keys"] if in_file else []
    if value is None and named:
        where.append(f"those in ${variable} (not set here; serve needs it)")
    elif value is not None:
        where.append(f"{from_env} in ${variable}")
    return f"keys: every request but the public endpoints needs one: {', '.join(where)}"


def keys_counted(keys: list[str], variable: str, value: str | None) -> str:
    """How many of the service's ``keys`` came from where: "3 API keys (2 in api_keys, 1
    in $RERANKIT_API_KEYS)", for the start line (``value``: ``$variable`` as the service
    read it; a key in both is counted once, in the variable, as the workers read it)."""
    from_env = set(env_keys(value))
    in_file = sum(1 for k in keys if k not in from_env)
    where = [f"{in_file} in api_keys"] if in_file else []
    if len(keys) > in_file:
        where.append(f"{len(keys) - in_file} in ${variable}")
    plural = "s" if len(keys) != 1 else ""
    return f"{len(keys)} API key{plural} ({', '.join(where)})"
