"""Objects built once per key and shared by every thread: the registered rerankers that
:func:`rerankit.config.shared_reranker` hands out.

One reentrant lock covers every build, so a build may ask for other keys (a factory given to
``register_reranker`` that loads another name) and two threads never wait on each other
(one builds, the other waits for the lock and finds the object built). A build that asks
for its own name while it runs, directly or through others, would never end: it is a
:class:`~rerankit.errors.ConfigError` naming the cycle.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

from .errors import ConfigError

__all__ = ["BuiltOnce"]


class BuiltOnce:
    """A table of shared objects of one kind (``what``: ``"reranker"``), each kept with the
    ``version`` it was built for and built anew when asked for with another."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._lock = threading.RLock()
        self._local = threading.local()  # .names: the names this thread builds, outermost first
        self._built: dict[Hashable, tuple[object, Any]] = {}

    def get(self, key: Hashable, name: str, version: object, build: Callable[[], Any]) -> Any:
        """The object of ``key`` built for ``version`` (compared by identity), made with
        ``build()`` the first time; ``name`` is what the cycle error calls it."""
        with self._lock:
            found = self._built.get(key)
            if found is not None and found[0] is version:
                return found[1]
            building: list[str] = self._local.__dict__.setdefault("names", [])
            if name in building:
                cycle = " -> ".join(map(repr, [*building[building.index(name) :], name]))
                raise ConfigError(
                    f"{self.what} {name!r} loads itself while it is built ({cycle}): "
                    f"a registered factory may load other names, not its own"
                )
            building.append(name)
            try:
                made = build()
            finally:
                building.pop()
            self._built[key] = (version, made)
            return made
