"""The scorer protocol and the small value a scorer may return."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._words import read_in_part
from ..errors import ScorerError
from ..types import Document

__all__ = [
    "NO_SCORE",
    "ScoreBatch",
    "Scorer",
    "as_score_batch",
    "check_scorer",
    "cut_to_fit",
    "valid_unicode",
    "which_document",
]


@runtime_checkable
class Scorer(Protocol):
    """Anything with a ``name`` and an async ``score`` returning one float per document.

    Higher means more relevant. ``score`` returns a 1-D numpy array (or a :class:`ScoreBatch`
    when it has per-document flags or warnings to report) in the order of ``docs``. Extra
    keyword arguments (``context``) carry per-call inputs such as a precomputed query
    embedding; a scorer ignores what it does not use.
    """

    name: str

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> Any: ...


@dataclass
class ScoreBatch:
    """Scores plus what the scorer wants the caller to know about them."""

    values: np.ndarray
    flags: dict[int, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    degraded: bool = False
    usage: dict[str, int] = field(default_factory=dict)  # provider calls, tokens, ...
    #: optional parts of each score: name -> (input values, contributions), one per document;
    #: the contributions sum to the score (a learned model's per-feature shares)
    parts: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


def as_score_batch(name: str, raw: Any, n: int) -> ScoreBatch:
    """Validate a scorer's output: a float array of length ``n`` (NaN/inf are left for the
    caller's policy to handle, unless every score is one: then the scorer contributed
    nothing and failed, as for a wrong shape). Raises :class:`ScorerError` naming the
    scorer otherwise."""
    batch = raw if isinstance(raw, ScoreBatch) else ScoreBatch(values=raw)
    try:
        values = np.asarray(batch.values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ScorerError(f"scorer {name!r} returned non-numeric scores: {exc}") from exc
    if values.ndim != 1 or values.shape[0] != n:
        raise ScorerError(
            f"scorer {name!r} returned scores of shape {values.shape}, expected ({n},)"
        )
    if values.size and not np.isfinite(values).any():  # it contributed nothing: it failed
        raise ScorerError(f"scorer {name!r} returned no finite score (all {n} are NaN or infinite)")
    batch.values = values
    return batch


def check_scorer(scorer: Any) -> Scorer:
    """``scorer`` itself, or a ``TypeError`` when it is not one; for a reranker (a
    fusion's strategy, say), one that says how to combine it with scorers instead."""
    if isinstance(scorer, Scorer):
        return scorer
    if callable(getattr(scorer, "arerank", None)):
        kind = type(scorer).__name__
        raise TypeError(
            f"{scorer!r} is a reranker, not a scorer (needs .name and async .score): give it "
            "as a reranker or a pipeline stage of its own, and to fuse its order with other "
            "signals, fuse a PositionScorer (its order as a score) in the stage after it: "
            f"Pipeline([{kind}(), FusionReranker([PositionScorer(), "
            'RecencyScorer("date")])])'
        )
    if callable(getattr(scorer, "score", None)) and getattr(scorer, "name", None) is None:
        raise TypeError(
            f'{type(scorer).__qualname__} has no name: give the class one (name = "mine"), '
            "the name its scores, flags and fusion weight go by"
        )
    raise TypeError(f"{scorer!r} is not a scorer (needs .name and async .score)")


def _replace_surrogates(text: str) -> str | None:
    """``text`` with lone surrogates replaced by U+FFFD, or None when it had none."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    return None


#: how a per-document warning of a scorer that had no judgment for a document ends: the
#: document scored 0.0 (a pipeline stage that scored nothing says instead that its documents
#: keep the previous stage's scores)
NO_SCORE = "; scored 0.0"


def which_document(i: int, doc_id: Any = None) -> str:
    """How a warning names the document at input position ``i``: ``document 3``, and with
    the id it has, ``document 3 (id 'u1')``."""
    return f"document {i}" if doc_id is None else f"document {i} (id {str(doc_id)!r})"


def valid_unicode(
    texts: Sequence[str],
    flags: dict[int, list[str]],
    warnings: list[str],
    ids: Sequence[Any] = (),
) -> list[str]:
    """Texts a tokenizer, a model or a provider can take: a text that cannot be encoded as
    UTF-8 (a lone surrogate, as a bad decode leaves behind; valid JSON can carry one) has
    those characters replaced by U+FFFD, and its document is flagged ``invalid_unicode``
    with a warning (naming it by its id too when ``ids`` gives one), so one bad document
    does not fail, or change, the others' scores."""
    out = []
    for i, text in enumerate(texts):
        fixed = _replace_surrogates(text)
        if fixed is not None:
            text = fixed
            flags.setdefault(i, []).append("invalid_unicode")
            doc_id = ids[i] if i < len(ids) else None
            warnings.append(
                f"{which_document(i, doc_id)}: text is not valid Unicode; bad characters replaced"
            )
        out.append(text)
    return out


def valid_query(query: str, warnings: list[str]) -> str:
    """``query`` with lone surrogates replaced by U+FFFD (and a warning saying so)."""
    fixed = _replace_surrogates(query)
    if fixed is None:
        return query
    warnings.append("the query is not valid Unicode; bad characters replaced")
    return fixed


def cut_to_fit(
    docs: Sequence[Document],
    max_chars: int,
    scorer: str,
    flags: dict[int, list[str]],
    warnings: list[str],
) -> None:
    """Say which documents a scorer reads only the first ``max_chars`` characters of: the
    flag ``truncated:<scorer>`` on each, and one warning."""
    cut = [i for i, d in enumerate(docs) if len(d.text) > max_chars]
    for i in cut:
        flags.setdefault(i, []).append(f"truncated:{scorer}")
    if cut:
        read = f"first {max_chars} (max_chars)"
        warnings.append(f"{scorer}: {read_in_part(len(cut), f'{max_chars} characters', read)}")
