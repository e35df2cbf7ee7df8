"""rerankit's errors: one hierarchy under :class:`RerankitError`.

=========================  ====================================================================
error                      raised when
=========================  ====================================================================
``InputError``             the caller's input cannot be used (also a ``ValueError``)
``InvalidDocumentError``   one document cannot be used; ``index`` and ``field`` say which
``ConfigError``            a declared pipeline or setting is wrong; ``where`` names the stage
                           and key (also a ``ValueError``)
``MissingDependencyError`` an optional package is missing; the message names the extra
                           (also an ``ImportError``)
``ModelLoadError``         a model could not be loaded (unknown id, missing files, no network)
``ScorerError``            a scorer could not produce scores
``ProviderError``          an LLM provider call failed (a ``ScorerError``); transient ones are
                           retried, permanent ones are not; ``kind`` says how, in a word
``ServiceError``           the HTTP service answers with an error status
``DeadlineError``          a rerank's ``deadline`` came before any stage had finished (also a
                           ``TimeoutError``); ``deadline`` and ``stage`` say which
=========================  ====================================================================

Input, configuration, dependency and model-load errors describe the caller's set-up: they
propagate out of a rerank. Scorer and provider errors degrade the result instead (the
other strategies decide, and the result says so).

This module imports nothing from the rest of rerankit.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "FAILURE_KINDS",
    "ConfigError",
    "DeadlineError",
    "InputError",
    "InvalidDocumentError",
    "MissingDependencyError",
    "ModelLoadError",
    "PermanentProviderError",
    "ProviderError",
    "RerankitError",
    "RuleError",
    "ScorerError",
    "ServiceError",
    "TransientProviderError",
    "command_running",
    "failure_cause",
    "flags_first",
    "for_the_log",
    "in_file",
    "keyword_flag",
    "no_such_file",
    "said_for",
    "serving",
    "strip_location",
    "text_field_hint",
]


class RerankitError(Exception):
    """Base class of rerankit's own errors."""


class InputError(RerankitError, ValueError):
    """The caller's input cannot be used (a query, a list, a file, an argument)."""

    def located(self) -> str:
        """The message for a caller who sees only the text (a client of the service)."""
        return str(self)


class InvalidDocumentError(InputError):
    """A document in the input cannot be used; ``index`` (its position in the documents
    given to the rerank; None: the error names no one document) and ``field`` say which
    and where. A scorer raises it with the position in the ``docs`` it got: a pipeline
    tells its caller the position in the caller's input instead."""

    def __init__(self, message: str, *, index: int | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.index = index
        self.field = field

    def detail(self) -> str:
        """The message without its leading ``document <index>: ``."""
        return str(self).removeprefix(f"document {self.index}: ")

    def at(self, index: int) -> InvalidDocumentError:
        """This error said of the document at ``index`` (of a longer list) instead."""
        return InvalidDocumentError(
            f"document {index}: {self.detail()}", index=index, field=self.field
        )

    def located(self) -> str:
        """The message, naming the document (``document 3: ...``) and its field when it
        knows them and does not say them already."""
        text = str(self)
        if self.index is not None and not text.startswith(f"document {self.index}"):
            text = f"document {self.index}: {text}"
        if self.field is not None and repr(self.field) not in text:
            text += f" (field {self.field!r})"
        return text


class ConfigError(RerankitError, ValueError):
    """A declared pipeline or a setting is wrong. ``where`` locates it (``stages[1].keep``)."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where


def in_file(exc: ConfigError, source: object) -> ConfigError:
    """``exc`` (raised while building what the file ``source`` declares) with the file in
    front of its location: ``FILE: stages[0].scorer: unknown scorer 'bm25x'``; as it is
    when it names the file already."""
    text, name = str(exc), str(source)
    if name in text:
        return exc
    message = text[len(exc.where) + 2 :] if exc.where else text
    return ConfigError(message, where=f"{name}: {exc.where}" if exc.where else name)


def no_such_file(path: object, what: str = "", *, folder: bool = False) -> str:
    """How a file (or, with ``folder``, a folder) that is not there is said, everywhere:
    ``PATH: no such file (what it was for)``."""
    kind = "folder" if folder else "file"
    return f"{path}: no such {kind}" + (f" ({what})" if what else "")


#: whether the messages being built are for a user of the command line (set by the
#: ``rerankit`` command while it parses and runs a command: :func:`flags_first`)
_FLAGS_FIRST: ContextVar[bool] = ContextVar("rerankit_flags_first", default=False)


#: the ``rerankit`` command running (``tune``), when :func:`flags_first` was told it
_COMMAND: ContextVar[str | None] = ContextVar("rerankit_command", default=None)


@contextmanager
def flags_first(command: str | None = None) -> Iterator[None]:
    """Within it, :func:`keyword_flag` and :func:`said_for` word messages for a user of the
    command line: the flag leads (``--unjudged negative``), not the Python keyword.
    ``command``: the command running, for a message whose fix is one of its own flags
    (:func:`command_running`)."""
    token, named = _FLAGS_FIRST.set(True), _COMMAND.set(command)
    try:
        yield
    finally:
        _COMMAND.reset(named)
        _FLAGS_FIRST.reset(token)


def command_running() -> str | None:
    """The ``rerankit`` command running (``tune``), within :func:`flags_first` told it;
    else None (the library called from Python, or the service answering a client)."""
    return _COMMAND.get() if _FLAGS_FIRST.get() else None


#: whether the messages being built are for a client of the service (set by the service
#: while it computes an answer: :func:`serving`)
_SERVING: ContextVar[bool] = ContextVar("rerankit_serving", default=False)


@contextmanager
def serving() -> Iterator[None]:
    """Within it, :func:`said_for` words messages for a client of ``rerankit serve``, who
    can change nothing but the server's settings file."""
    token = _SERVING.set(True)
    try:
        yield
    finally:
        _SERVING.reset(token)


def said_for(python: str, command_line: str, service: str | None = None) -> str:
    """``python``, or within :func:`flags_first` ``command_line``, or within
    :func:`serving` ``service`` (when given): a message's words that differ between a
    caller of the library, a user of the command and a client of the service."""
    if service is not None and _SERVING.get():
        return service
    return command_line if _FLAGS_FIRST.get() else python


def text_field_hint() -> str:
    """How to name the field that holds a document's text, in the words of the surface."""
    return said_for(
        "; name yours with text_field='NAME' (or several: text_fields=[...])",
        "; name yours with --text-field NAME (or several: --text-fields A,B)",
        "",  # the service: its request format says what to send
    )


def _as_typed(value: object) -> str:
    """``value`` as one types it after a flag (``a,b`` for a list, quoted for the shell)."""
    if isinstance(value, list | tuple | set | frozenset):
        return ",".join(map(str, value))
    return shlex.quote(str(os.fspath(value) if isinstance(value, os.PathLike) else value))


def keyword_flag(keyword: str, *value: object, flag: str | None = None) -> str:
    """How an error or a note of the library names an option, everywhere: by its Python
    keyword, with the value given as Python writes it, and the command line's flag beside it
    (``folds=2 (--folds)``; without a value, ``train_split= (--train-split)``), so that a
    caller of the function and a user of the command both know it. ``flag``: the flag when
    it is not the keyword with dashes (``split`` is ``rerankit train``'s ``--train-split``).
    Within :func:`flags_first` (the command line) the flag leads, with the value as typed
    after it: ``--folds 2``, ``--train-split``, ``--keep-learned`` (a switch set to True)."""
    named = flag or "--" + keyword.replace("_", "-")
    if _FLAGS_FIRST.get():
        if not value or value[0] is True:
            return named
        return f"{named} {_as_typed(value[0])}"
    shown = "".join(repr(os.fspath(v) if isinstance(v, os.PathLike) else v) for v in value[:1])
    return f"{keyword}={shown} ({named})"


def strip_location(exc: ConfigError, outer: str) -> ConfigError:
    """``exc`` located without its ``outer`` part, for a spec that has no such level: a
    pipeline of one stage without a ``stages`` list is located ``scorer.model``, not
    ``stages[0].scorer.model``; ``exc`` itself when not located under ``outer``."""
    where = exc.where or ""
    if where != outer and not where.startswith(f"{outer}."):
        return exc
    return ConfigError(str(exc)[len(where) + 2 :], where=where[len(outer) + 1 :] or None)


class MissingDependencyError(RerankitError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class ModelLoadError(RerankitError):
    """A model could not be loaded (unknown id, missing files, no network for a download)."""


class ScorerError(RerankitError):
    """A scorer could not produce scores (model failure, provider down, bad output)."""


#: how an LLM call failed, in a word: a :class:`ProviderError`'s ``kind``, and the flag
#: ``llm_failed:<kind>`` beside ``llm_failed`` on each document it left without a judgment
FAILURE_KINDS = {
    "timeout": "no answer in the time allowed (the call's timeout, HTTP 408, or the "
    "request's deadline passed before the call)",
    "rate_limit": "refused for the rate of calls or tokens (HTTP 429)",
    "server_error": "the provider failed (HTTP 5xx)",
    "connection": "the provider could not be reached (refused, reset, no such host)",
    "auth": "the key was refused (HTTP 401, 403)",
    "bad_request": "the provider refused the request (another 4xx: an unknown model, a "
    "prompt too long, a base_url without its /v1, ...)",
    "unreadable": "the answer held no readable judgment for the document (a refusal in "
    "prose too; a listwise window's also keeps its older flag, llm_unreadable), or the "
    "server's answer was not its JSON at all (a proxy's HTML page) or was cut off (retried)",
    "error": "anything else",
}


def _status_kind(status: int | None) -> str:
    """The failure kind of an HTTP ``status`` from a provider (see :data:`FAILURE_KINDS`)."""
    if status is None:
        return "error"
    if status in (401, 403):
        return "auth"
    if status in (408, 429):
        return "timeout" if status == 408 else "rate_limit"
    if status >= 500:
        return "server_error"
    return "bad_request" if 400 <= status < 500 else "error"


class RuleError(RerankitError):
    """An ordering rule's ``decide()`` returned no valid
    :class:`~rerankit.ordering.Outcome` (not one, or positions out of range, repeated or
    left out): in a pipeline its stage fails and the previous stage's order is kept."""


class ProviderError(ScorerError):
    """An LLM provider call failed; ``kind`` says how, in a word (:data:`FAILURE_KINDS`)."""

    def __init__(self, message: str, *, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


#: a provider's error answer as its message quotes it (``... answered HTTP 400: TEXT``)
_PROVIDER_TEXT = re.compile(r"(answered HTTP \d{3}): (.*)", re.DOTALL)


def for_the_log(text: str) -> str:
    """``text`` (an error's message, a warning) as a log line says it: a provider's error
    answer without its text, which may quote the request (the query and the documents),
    from ``answered HTTP 400:`` to the end."""
    return _PROVIDER_TEXT.sub(
        lambda m: (
            f"{m[1]} ({len(m[2])} characters of its text, which may quote the "
            "request, left out of the log)"
        ),
        text,
    )


class TransientProviderError(ProviderError):
    """Worth retrying: rate limit (429), server error (5xx), connection error, timeout.
    ``retry_after`` is the provider's Retry-After in seconds, when it sent one."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        kind: str | None = None,
    ) -> None:
        super().__init__(message, kind=kind or _status_kind(status))
        self.status, self.retry_after = status, retry_after


class PermanentProviderError(ProviderError):
    """Not worth retrying: bad request (400), bad key (401), forbidden (403), unknown model
    (404), ... The message carries the provider's own explanation."""

    def __init__(self, message: str, *, status: int | None = None, kind: str | None = None) -> None:
        super().__init__(message, kind=kind or _status_kind(status))
        self.status = status


class ServiceError(RerankitError):
    """An error answer of the HTTP service: ``status``, ``message``, extra ``headers``, and
    the ``code`` that names its cause for a client to act on (snake_case, stable: one status
    covers several causes; None: the status's general one) with the ``details`` a client
    acts on that the message says in words (``{"max_documents": 22}``), sent as fields of
    the body beside ``message`` and ``code``."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: Mapping[str, str] | None = None,
        *,
        code: str | None = None,
        details: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, dict(headers or {})
        self.code, self.details = code, dict(details or {})


class DeadlineError(RerankitError, TimeoutError):
    """A rerank's ``deadline`` (seconds) came while ``stage`` (a pipeline's stage, or the
    reranker itself) ran and no stage before it had finished: there is no order to return.
    A pipeline whose deadline comes after a stage finished returns that stage's result,
    degraded, instead."""

    def __init__(self, message: str, *, deadline: float, stage: str | None) -> None:
        super().__init__(message)
        self.deadline, self.stage = deadline, stage


CALLER_ERRORS: tuple[type[BaseException], ...] = (
    InputError,
    ConfigError,
    MissingDependencyError,
    ModelLoadError,
)
"""Errors that describe the caller's input or set-up: a scorer raising one of them makes
the call raise it, where any other failure of a scorer degrades the result instead."""


#: what a warning that tells a failure says (a stage or a strategy that failed, a stage
#: that scored nothing or ran out of time, a document left unjudged), as against a note (no
#: query term in any candidate, a text cut) that may come before it
_FAILURE_WORDS = re.compile(
    r"\bfailed\b|\bno score\b|\bscored nothing\b|\bcould not score\b"
    r"|\bunreadable answer\b|\bdid not finish\b"
)


def failure_cause(warnings: list[str] | tuple[str, ...]) -> str | None:
    """The warning that says why a result is degraded or failed: the first that tells a
    failure, else the first of all (None when there is none)."""
    first = warnings[0] if warnings else None
    return next((w for w in warnings if _FAILURE_WORDS.search(w)), first)
