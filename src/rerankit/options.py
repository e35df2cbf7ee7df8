"""The keyword options a factory (a scorer's, rule's or reranker's class or function) takes,
read from its signature, and declared options checked against them before the factory runs:
a key it does not take is named with the keys it does (and the close one), and a value of
the wrong kind is named by its key, which the factory's own error (``'<=' not supported
between instances of 'str' and 'int'``) cannot do. :data:`FILE_SPELLINGS` says what a
pipeline file writes for a key spelled as in Python (``combination_method``)."""

from __future__ import annotations

import difflib
import inspect
import keyword
import sys
from collections.abc import Callable, Iterable, Mapping
from numbers import Real
from typing import Any

from .errors import ConfigError

__all__ = [
    "FILE_SPELLINGS",
    "check_options",
    "factory_options",
    "missing_options",
    "stage_spellings",
    "unknown_keys",
]

_PER_CALL = (
    "the fields a document is read from are the caller's, per call: text_field= in Python, "
    "--text-field on the command line (a scorer that reads a field names it: field = ...)"
)
#: keys a pipeline file spells otherwise (a Python keyword argument, a per-call option)
FILE_SPELLINGS = {
    "combination_method": "a file spells it 'method'",
    "normalization_method": "a file spells it 'normalization'",
    "weights": "give each scorer table its own weight = ...",
    "strategies": "a file lists them as scorers = [...]",
    **dict.fromkeys(("text_field", "text_fields", "id_field", "first_stage_field"), _PER_CALL),
}


def stage_spellings(kind: str, step: Any) -> dict[str, str]:
    """:data:`FILE_SPELLINGS` for a stage of ``kind`` (``reranker``, ``scorers``, ...) whose
    ``kind`` key holds ``step``: a reranker stage's ``weights`` go inside the reranker's
    table, in the form docs/pipelines.md gives (``reranker = { type = "hybrid", weights =
    { ... } }``), not on scorer tables as a fusion stage's do."""
    hints = dict(FILE_SPELLINGS)
    if kind == "reranker":
        named = step.get("type") if isinstance(step, Mapping) else step
        named = named if isinstance(named, str) else "hybrid"
        hints["weights"] = (
            "a reranker's weights go inside its table: "
            f'reranker = {{ type = "{named}", weights = {{ bm25_background = 0.7 }} }}'
        )
    return hints


#: the annotations a value is checked against, alone or in a union (``float | None``)
_KINDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "float": ("a number", lambda v: isinstance(v, Real) and not isinstance(v, bool)),
    "int": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "str": ("a string", lambda v: isinstance(v, str)),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "None": ("", lambda v: v is None),
}


def _text(annotation: Any) -> str | None:
    """An annotation as written (``"float | None"``), or None when there is none."""
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        return annotation
    return getattr(annotation, "__forward_arg__", None) or getattr(annotation, "__name__", None)


def _unpacked(factory: Any, annotation: str | None) -> dict[str, str | None] | None:
    """The options a ``**options: Unpack[SomeTypedDict]`` parameter names, or None."""
    if not annotation or not annotation.startswith("Unpack[") or not annotation.endswith("]"):
        return None
    module = sys.modules.get(getattr(factory, "__module__", None) or "")
    hints = getattr(getattr(module, annotation[len("Unpack[") : -1], None), "__annotations__", None)
    return {k: _text(v) for k, v in hints.items()} if isinstance(hints, Mapping) else None


def factory_options(factory: Any) -> dict[str, str | None] | None:
    """Each keyword option ``factory`` takes, with its annotation as text, in the order of its
    signature; None when it also takes options it does not name (a bare ``**options``)."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a builtin or a callable without a readable signature
        return None
    out: dict[str, str | None] = {}
    for p in parameters:
        if p.kind is p.VAR_KEYWORD:
            named = _unpacked(factory, _text(p.annotation))
            if named is None:
                return None
            out.update(named)
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            out[p.name] = _text(p.annotation)
    return out


def unknown_keys(
    given: Iterable[str],
    known: Iterable[str],
    what: str,
    hints: Mapping[str, str] | None = None,
    word: str = "key",
) -> str | None:
    """The message for the first of ``given`` that is not ``known`` (the hint for it, else
    the close known key and all of them), or None when every key is known."""
    known = list(known)
    for key in given:
        if key in known:
            continue
        if hints and key in hints:
            return f"{what} has no {word} {key!r}: {hints[key]}"
        swapped = key.replace("-", "_")  # a flag's hyphens in a file's key
        close = [swapped] if swapped in known else difflib.get_close_matches(key, known, n=1)
        maybe = f" (did you mean {close[0]!r}?)" if close else ""
        if not known:
            return f"{what} has no {word} {key!r}; it takes no {word}s"
        return f"{what} has no {word} {key!r}{maybe}; its {word}s: {', '.join(known)}"
    return None


def _expected(annotation: str | None) -> list[tuple[str, Callable[[Any], bool]]] | None:
    """The kinds a value of ``annotation`` may be, or None when it is not a plain one."""
    parts = [p.strip() for p in (annotation or "").split("|")]
    if not all(p in _KINDS for p in parts):
        return None
    return [_KINDS[p] for p in parts]


def check_options(factory: Any, options: Mapping[str, Any], what: str) -> dict[str, Any]:
    """``options`` checked against ``factory``'s signature, a Python keyword spelled as a
    parameter name can spell it (``lambda`` for ``lambda_``): a
    :class:`~rerankit.errors.ConfigError` names a key it does not take, listing those it
    does, or a value that is not of the key's annotated kind (``bool``, ``int``, ``float``,
    ``str``, or a union of them with ``None``). Options of a factory that takes any
    (``**options``) pass unchecked."""
    known = factory_options(factory)
    if known is None:
        return dict(options)
    out: dict[str, Any] = {}
    for key, value in options.items():
        name = f"{key}_" if keyword.iskeyword(key) and f"{key}_" in known else key
        if name not in known:  # named as a file writes them (lambda, not lambda_)
            shown = [k[:-1] if keyword.iskeyword(k[:-1]) else k for k in known]
            raise ConfigError(str(unknown_keys([key], shown, what, word="option")))
        if name in out:
            raise ConfigError(f"{what}: give {name[:-1]!r} or {name!r}, not both")
        kinds = _expected(known[name])
        if kinds is not None and not any(check(value) for _, check in kinds):
            words = " or ".join(word for word, _ in kinds if word)
            raise ConfigError(f"{what}: {key} must be {words}, got {value!r}")
        out[name] = value
    return out


def missing_options(factory: Any, options: Mapping[str, Any], what: str) -> None:
    """A :class:`~rerankit.errors.ConfigError` naming the options ``factory`` requires (no
    default) that ``options`` lacks, as a file writes them, with all it takes: said before
    the factory runs, where Python's own error names ``__init__`` and positional arguments."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    takes = [p.name for p in parameters if p.kind in kinds]
    needed = [
        p.name
        for p in parameters
        if p.kind in kinds and p.default is p.empty and p.name not in options
    ]
    if needed:
        shown = [k[:-1] if keyword.iskeyword(k[:-1]) else k for k in takes]
        lacking = " and ".join(f"{k} = ..." for k in needed)
        raise ConfigError(f"{what} needs {lacking}; its options: {', '.join(shown)}")
