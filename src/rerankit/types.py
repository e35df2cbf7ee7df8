"""Core value types shared by every part of rerankit.

This module imports nothing from the rest of the package but :mod:`rerankit.errors` (and
not numpy), so it is cheap to import and safe to use from anywhere.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from . import errors

__all__ = [
    "EARLIER_STAGE",
    "INTERCEPT",
    "SIGMOID_OF_SUM",
    "SUM",
    "Document",
    "RankedDocument",
    "RerankResult",
    "check_top_k",
    "repeated_ids",
]

#: how a document's explained contributions make its score: their sum, or the sigmoid of
#: their sum (a calibrated fusion's contributions are logits)
SUM = "sum"
SIGMOID_OF_SUM = "sigmoid(sum)"
#: the explanation part of an earlier pipeline stage's row that takes the place of
#: ``contribution``: the row's share of that stage's score, which chose the document as a
#: candidate; it is no term of the document's own score
EARLIER_STAGE = "earlier_stage_contribution"
#: the explanation entry of a calibrated fusion's constant term (its output intercept)
INTERCEPT = "(intercept)"


def check_top_k(top_k: object, name: str = "top_k") -> int | None:
    """``top_k`` if it is None or a positive integer, else a ``ValueError`` naming it.

    The one check every entry point (library, CLI, service, compat) applies.
    """
    if top_k is None:
        return None
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"{name} must be a positive integer or None, got {top_k!r}")
    return top_k


@dataclass(frozen=True)
class Document:
    """One candidate to rerank.

    ``text`` is what scorers read; ``id`` is optional; ``metadata`` holds any other fields
    (a dict input's remaining fields land here: a chunk's source or URL belongs there,
    ``metadata={"source": "who.int"}``). ``source`` is the caller's original object, kept
    so results can be mapped back (``result[i].document`` is it: a
    ``Document(text, source="who.int")`` comes back as ``"who.int"``); it takes no part in
    equality.
    """

    text: str
    id: Any = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"Document.text must be a str, got {type(self.text).__name__}")
        if not isinstance(self.metadata, Mapping):
            raise TypeError(
                f"Document.metadata must be a mapping, got {type(self.metadata).__name__}"
            )


@dataclass(frozen=True)
class RankedDocument:
    """A document's place in a reranked list.

    ``document`` is the output in the kind the caller passed (the same ``str``, the same
    frozen ``Document``, or a *new* dict holding the original fields plus the score).
    ``index`` is its position in the input, ``rank`` its 1-based position in the output,
    ``score`` the final score (higher is more relevant), ``scores`` each strategy's raw score,
    and ``flags`` short machine-readable notes about this document (for example
    ``"non_finite:bm25"`` when a strategy returned NaN for it, ``"llm_failed"`` with
    ``"llm_failed:timeout"`` when an LLM judge's call for it timed out, ``"duplicate_id"``
    when another document of the call has its id). ``ranked_by``, in a
    :class:`~rerankit.rerankers.Pipeline`'s result, names the stage that decided its place:
    the last stage that scored it, or a rule stage that moved it after that (a ``pin`` that
    put it first: the rule moved it, not the documents it passed); None outside a pipeline.
    """

    document: Any
    index: int
    rank: int
    score: float
    text: str
    id: Any = None
    scores: Mapping[str, float] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    explanation: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    score_from_contributions: str = SUM
    ranked_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly record of this result (the caller's object is not included)."""
        return {
            "index": self.index,
            "rank": self.rank,
            "score": self.score,
            "id": self.id,
            "text": self.text,
            "scores": dict(self.scores),
            "flags": list(self.flags),
        }


@dataclass(frozen=True)
class RerankResult:
    """The outcome of one rerank: ordered results plus an honest account of problems.

    ``degraded`` is true when a scorer failed and the order fell back (see ``warnings``),
    and when ``rerankit.rerank()`` without ``reranker=`` ranked with ``bm25`` because the
    default ``hybrid`` cannot run here (its first warning says what it needs);
    ``warnings`` are human-readable. ``usage`` counts what the rerank cost where a scorer
    calls a provider (``calls``, ``retries``, ``cache_hits``, ``failures``: calls that left
    a document without a judgment, see :class:`rerankit.llm.Usage`, ``input_tokens``,
    ``output_tokens``); it is empty otherwise. ``timings`` gives seconds per stage of a
    :class:`~rerankit.rerankers.Pipeline`, by stage name (a first call's include loading its
    models: :func:`rerankit.scorers.local.load_models` loads them beforehand); it is empty
    for every other reranker, the default ``hybrid`` among them (time the call yourself).
    ``dropped`` gives the input positions of documents an ordering rule removed (a warning
    says which rule). ``failed`` is true when no strategy could score at all (the order is
    then the input's); an LLM provider that failed for every document leaves it
    false and flags each document ``llm_failed``: :attr:`unusable` says whether the result
    carries a ranking at all, in either case. ``ranked_by``, on a
    :class:`~rerankit.rerankers.Pipeline`'s result, names the last stage that scored any of
    its documents (None on other rerankers' results, and when no stage scored): where a
    later stage scored nothing (an LLM judge whose every call failed), the documents keep
    that stage's order, a ranking. ``score_scale`` says what the scores mean (see
    :data:`rerankit.normalize.SCORE_SCALES`): ``probability`` for a calibrated estimate of
    P(relevant) that depends only on the query and the document, ``relative`` when scores
    are comparable only within this result. Iterating yields :class:`RankedDocument` best
    first.
    """

    query: str
    results: tuple[RankedDocument, ...] = ()
    degraded: bool = False
    warnings: tuple[str, ...] = ()
    usage: Mapping[str, int] = field(default_factory=dict)
    timings: Mapping[str, float] = field(default_factory=dict)
    dropped: tuple[int, ...] = ()
    failed: bool = False
    score_scale: str = "relative"
    ranked_by: str | None = None

    def __iter__(self) -> Iterator[RankedDocument]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> RankedDocument:
        return self.results[i]

    @property
    def unusable(self) -> str | None:
        """Why this result carries no ranking at all, or None: ``"every strategy failed"``
        (``failed``), or ``"the LLM provider failed for every document"`` (every document
        flagged ``llm_failed``, but those with no text to judge, flagged ``empty_content``
        and never sent, and a pipeline whose earlier stage ranked them: see
        ``ranked_by``). A service answers an error for it; a batch job counts the row as
        failed; ``rerankit rank`` writes nothing and exits 1."""
        if self.failed:
            return "every strategy failed"
        if self.ranked_by is not None:  # a stage's order stands, whatever failed after it
            return None
        flags = [r.flags for r in self.results]
        if any("llm_failed" in f for f in flags) and all(
            "llm_failed" in f or "empty_content" in f for f in flags
        ):
            return "the LLM provider failed for every document"
        return None

    def top_k(self, k: int) -> RerankResult:
        """A new result holding only the best ``k`` (all of them when ``k`` exceeds the size)."""
        if k is None:
            raise ValueError("k must be a positive integer, got None")
        check_top_k(k, "k")
        return replace(self, results=self.results[:k])

    def documents(self) -> list[Any]:
        """The caller-kind outputs (strings, Documents, or new dicts with the score), best first."""
        return [r.document for r in self.results]

    def to_dicts(self) -> list[dict[str, Any]]:
        """One JSON-friendly record per result, best first."""
        return [r.to_dict() for r in self.results]

    def explain(self) -> list[dict[str, Any]]:
        """Why each document landed where it did, best first: for every strategy (named
        ``stage/strategy`` in a pipeline) its ``raw`` score, the ``normalized`` score the
        fusion used, its ``weight`` and its ``contribution`` to the document's score, which
        ``score_from_contributions`` makes: ``"sum"`` (score = sum of the contributions) or
        ``"sigmoid(sum)"``. A pipeline's earlier stages' rows (they chose the candidates)
        carry ``earlier_stage_contribution`` instead: no term of the score; ``ranked_by``
        names the stage that decided the document's place: the last that scored it, or a rule
        that moved it after that (None outside a pipeline)."""
        return [
            {
                "rank": r.rank,
                "index": r.index,
                "id": r.id,
                "score": r.score,
                "score_from_contributions": r.score_from_contributions,
                "ranked_by": r.ranked_by,
                "strategies": {k: dict(v) for k, v in r.explanation.items()},
                "flags": list(r.flags),
            }
            for r in self.results
        ]

    def explain_table(self, *, text_width: int = 40) -> str:
        """:meth:`explain` as a plain-text table, one row per document and strategy: the
        rows that make the score first, then any earlier pipeline stage's (marked, their
        contribution left blank), and a footer saying how the contributions make the score.
        A calibrated fusion's ``(intercept)`` row shows only when it is a term of the score:
        not at 0, nor as an earlier stage's."""
        head = f"{'rank':>4}  {'id':<12} {'score':>9}  {'strategy':<28} {'raw':>9} {'norm':>7} "
        head += f"{'weight':>6} {'contrib':>8}  text"
        lines = [head]
        earlier = False
        for r in self.results:
            snippet = " ".join(r.text.split())
            snippet = snippet if len(snippet) <= text_width else snippet[: text_width - 1] + "…"
            rid = "" if r.id is None else str(r.id)[:12]
            rows = sorted(
                ((k, v) for k, v in r.explanation.items() if not _no_term(k, v)),
                key=lambda kv: EARLIER_STAGE in kv[1],
            )
            for j, (name, parts) in enumerate(rows or [("-", {})]):
                lead = f"{r.rank:>4}  {rid:<12} {r.score:>9.4f}" if j == 0 else " " * 28
                if name.endswith(INTERCEPT):  # a constant, no signal: its term alone
                    parts = {k: v for k, v in parts.items() if k == "contribution"}
                cells = " ".join(
                    (_weight(parts[k]).rjust(w) if k == "weight" else f"{parts[k]:>{w}.{p}f}")
                    if k in parts
                    else " " * w
                    for k, w, p in (
                        ("raw", 9, 4),
                        ("normalized", 7, 3),
                        ("weight", 6, 4),
                        ("contribution", 8, 4),
                    )
                )
                note = snippet if j == 0 else ""
                if EARLIER_STAGE in parts:
                    earlier = True
                    note = "(earlier stage: chose it; not in the score)"
                lines.append(f"{lead}  {name[:28]:<28} {cells}  {note}")
        lines.extend(self._explain_footer(earlier))
        return "\n".join(line.rstrip() for line in lines)

    def _explain_footer(self, earlier: bool) -> list[str]:
        """How the table's contributions make each score."""
        shown = [r for r in self.results if r.explanation]
        links = {r.score_from_contributions for r in shown}
        lines = []
        if links == {SUM}:
            lines.append("score = sum of contrib")
        elif links == {SIGMOID_OF_SUM}:
            lines.append(
                "score = sigmoid(sum of contrib): each contrib is weight x the signal's "
                "calibrated logit (logit of norm) x the output calibration's slope; "
                "(intercept) is its constant"
            )
        elif links:
            ranks = [str(r.rank) for r in shown if r.score_from_contributions == SIGMOID_OF_SUM]
            lines.append(
                f"score = sigmoid(sum of contrib) at {'rank' if len(ranks) == 1 else 'ranks'} "
                f"{', '.join(ranks)} (calibrated "
                "logits; (intercept) is the calibration's constant), sum of contrib elsewhere"
            )
        if earlier:
            lines.append(
                "earlier stage: a row of the pipeline stage that chose the candidate; a later "
                "stage gave the score, so it is no term of the sum"
            )
        return lines


def _no_term(name: str, parts: Mapping[str, float]) -> bool:
    """Whether an explanation row is a calibrated fusion's ``(intercept)`` that adds nothing
    to the score: a constant of 0, or an earlier stage's (no contribution)."""
    if not name.endswith(INTERCEPT):
        return False
    share = parts.get("contribution")
    return share is None or not math.isfinite(share) or share == 0


def _weight(w: float) -> str:
    """A weight as the documentation writes it: up to 4 decimals, without trailing zeros
    or float noise (0.475, 0.0857, 0.3, 1)."""
    return f"{w:.4f}".rstrip("0").rstrip(".") or "0"


def repeated_ids(docs: Sequence[Document]) -> list[tuple[Any, list[int]]]:
    """Each id that more than one of ``docs`` has, with the positions holding it, in the
    order the ids first appear (a document without an id repeats nothing; an id that
    cannot be hashed is compared by its ``repr``)."""
    where: dict[Any, tuple[Any, list[int]]] = {}
    for i, doc in enumerate(docs):
        if doc.id is None:
            continue
        key: tuple[bool, Any] = (True, doc.id)
        try:
            hash(doc.id)
        except TypeError:  # a list or a dict as an id
            key = (False, repr(doc.id))
        where.setdefault(key, (doc.id, []))[1].append(i)
    return [(value, at) for value, at in where.values() if len(at) > 1]


#: the errors that lived here in 0.1.0, kept working from here with a warning
_MOVED_ERRORS = ("MissingDependencyError", "ModelLoadError", "RerankitError", "ScorerError")


def __getattr__(name: str) -> Any:
    if name in _MOVED_ERRORS:
        warnings.warn(
            f"rerankit.types.{name} is now rerankit.errors.{name}: import from there",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(errors, name)
    raise AttributeError(f"module 'rerankit.types' has no attribute {name!r}")
