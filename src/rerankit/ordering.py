"""Ordering rules applied after scoring: difficulty-aware ordering, MMR diversity, a
minimum-score cut, near-duplicate removal, pins (:mod:`rerankit.pins`) and a per-field cap
(:mod:`rerankit.caps`).

Every rule takes a ranked list (a :class:`~rerankit.RerankResult`, or a list of
RankedDocuments, Documents, dicts or strings, best first) and returns the same kind. Rules
that drop documents list them in the result's ``dropped`` and ``warnings`` (for a
RerankResult) or log a warning (for a plain list). Rule objects can also be pipeline stages.

A plain list is read as ``rerank()`` reads documents: the rules that compare texts
(deduplicate, mmr) read each dict's or object's ``text_field`` (default ``"text"``), and
one without it is an error naming the field and the fields it has (it would otherwise read
as an empty text, the same as every other one); ``min_score`` reads each item's
``score_field`` (default ``"rerank_score"``), and a list in which no item has one is an
error. A result's documents carry the text they were ranked by and their score.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from numbers import Real
from typing import Any

import numpy as np

from .caps import Cap
from .documents import field_names, field_value, to_documents
from .errors import InvalidDocumentError, text_field_hint
from .normalize import THRESHOLD_NOTES, normalize_scores
from .outcome import Outcome, Rule
from .pins import Pin
from .text.words import split_words
from .types import Document, RankedDocument, RerankResult

__all__ = [
    "DIFFICULTY_BUCKETS",
    "MMR",
    "Cap",
    "Deduplicate",
    "DifficultyOrdering",
    "MinScore",
    "Outcome",
    "Pin",
    "Rule",
    "apply_difficulty_ordering",
    "deduplicate",
    "min_score",
    "mmr",
]

logger = logging.getLogger(__name__)

#: difficulty buckets; a missing or unknown value counts as intermediate
DIFFICULTY_BUCKETS: dict[str, int] = {"introductory": 0, "intermediate": 1, "advanced": 2}
_DEFAULT_BUCKET = 1


# --- one view over every kind of ranked list -------------------------------------------------


def _view(
    items: Sequence[Any], text_field: str = "text", *, reader: str | None = None
) -> list[Document]:
    """The items as Documents (a RankedDocument's document, with the text it was ranked
    by). For ``reader``, the name of a rule that compares the texts, an item without its
    ``text_field`` is an error naming the field, the fields present and ``text_field=``;
    for the other rules a missing text reads as ""."""
    if reader is None:
        return to_documents(items, text_field=text_field, missing_text="empty")
    try:
        return to_documents(items, text_field=text_field)
    except InvalidDocumentError as exc:
        if exc.field != text_field:
            raise
        said = str(exc).removesuffix(text_field_hint())  # (it offers text_fields too)
        raise InvalidDocumentError(
            f"{said}; rule {reader!r} compares the texts: name the field that holds them "
            f'with text_field= ({reader}(items, text_field="content"))',
            index=exc.index,
            field=exc.field,
        ) from None


def _score(item: Any, doc: Document, score_field: str) -> float | None:
    """A RankedDocument's score, else the numeric ``score_field`` of the item."""
    if isinstance(item, RankedDocument):
        return item.score
    value = field_value(doc, score_field)
    if isinstance(value, Real) and not isinstance(value, bool):
        return float(value)
    return None


# --- difficulty ---------------------------------------------------------------------------


class DifficultyOrdering(Rule):
    """In ``"learn"`` mode the top ``window`` items are stably sorted by difficulty
    bucket (introductory, intermediate, advanced), so relevance order holds inside a bucket
    and items past the window stay put; ``"research"`` mode changes nothing."""

    name = "difficulty"

    def __init__(
        self,
        mode: str = "learn",
        window: int = 20,
        field: str = "difficulty",
        buckets: Mapping[str, int] | None = None,
    ) -> None:
        if mode not in ("learn", "research"):
            raise ValueError(f"mode must be 'learn' or 'research', got {mode!r}")
        if window < 0:
            raise ValueError(f"window must be >= 0, got {window}")
        self.mode, self.window, self.field = mode, window, field
        self.buckets = {k.lower(): v for k, v in (buckets or DIFFICULTY_BUCKETS).items()}

    def bucket(self, item: Any) -> int:
        """The difficulty bucket of one item (a Document, dict, RankedDocument, ...)."""
        return self._bucket(item)[0]

    def _bucket(self, item: Any) -> tuple[int, bool]:
        """The bucket, and whether the item's value named one (False: missing or unknown,
        so it counts as intermediate)."""
        doc = item if isinstance(item, Document) else _view([item])[0]
        value = field_value(doc, self.field)
        if isinstance(value, str) and value.strip().lower() in self.buckets:
            return self.buckets[value.strip().lower()], True
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and value in set(self.buckets.values())
        ):
            return value, True
        return _DEFAULT_BUCKET, False

    def decide(self, items: Sequence[Any]) -> Outcome:
        n = len(items)
        if self.mode == "research" or n < 2:
            return Outcome(list(range(n)), [])
        top = min(self.window, n)
        buckets = [self._bucket(doc) for doc in _view(items[:top])]
        head = sorted(range(top), key=lambda i: (buckets[i][0], i))
        unread = sum(1 for _, known in buckets if not known)
        warnings = ()
        if unread:
            which = "every document" if unread == top else f"{unread} of {top} documents"
            names = ", ".join(repr(k) for k in self.buckets)
            warnings = (
                f"rule 'difficulty': field {self.field!r} is missing or not one of {names} "
                f"in {which} of its window; they count as intermediate",
            )
        return Outcome(head + list(range(top, n)), [], warnings=warnings)


def apply_difficulty_ordering(
    items: Any,
    mode: str = "learn",
    window: int = 20,
    *,
    field: str = "difficulty",
    buckets: Mapping[str, int] | None = None,
) -> Any:
    """Difficulty-aware ordering (see :class:`DifficultyOrdering`)."""
    return DifficultyOrdering(mode, window, field, buckets)(items)


# --- score cut ----------------------------------------------------------------------------


class MinScore(Rule):
    """Drops items scoring below ``threshold``, but never the first ``keep_at_least`` (a
    floor: the best few stay whatever they score); dropping every item is said in a warning.

    A result's documents are compared by their score; on a result whose ``score_scale``
    is ``relative`` or ``logit`` the rule still cuts, and adds a warning that the threshold
    is no probability. Items of a plain list (best first) are compared by their
    ``score_field``: those without a numeric one are kept, with a warning saying how many,
    and a list in which none has one is an ``InvalidDocumentError`` naming the field."""

    name = "min_score"
    reorders = False

    def __init__(
        self, threshold: float, *, score_field: str = "rerank_score", keep_at_least: int = 0
    ) -> None:
        if (
            isinstance(keep_at_least, bool)
            or not isinstance(keep_at_least, int)
            or keep_at_least < 0
        ):
            raise ValueError(
                f"min_score: keep_at_least must be an integer >= 0, got {keep_at_least!r}"
            )
        self.threshold, self.score_field, self.keep_at_least = (
            float(threshold),
            score_field,
            keep_at_least,
        )

    def decide(self, items: Sequence[Any]) -> Outcome:
        keep, drop, unscored = [], [], 0
        docs = _view(items)
        best: float | None = None
        for i, (item, doc) in enumerate(zip(items, docs, strict=True)):
            s = _score(item, doc, self.score_field)
            unscored += s is None
            best = s if s is not None and (best is None or s > best) else best
            below = s is not None and s < self.threshold
            (drop if below and i >= self.keep_at_least else keep).append(i)
        warnings: tuple[str, ...] = ()
        if items and not keep:
            warnings = (
                f"rule 'min_score': all {len(items)} documents scored below {self.threshold:g} "
                f"(the best {best:.4g}), so none is kept; keep_at_least= keeps the best few "
                "whatever they score",
            )
        if unscored and unscored == len(items):
            raise InvalidDocumentError(
                f"rule 'min_score': none of the {len(items)} items has a numeric "
                f"{self.score_field!r} to compare with the threshold (item 0 has "
                f"{field_names(docs[0])}); name the field that holds the score with "
                "score_field=, or apply the rule to the RerankResult",
                index=0,
                field=self.score_field,
            )
        if unscored:
            warnings = (
                *warnings,
                f"rule 'min_score': {unscored} of {len(items)} items have no numeric "
                f"{self.score_field!r} and are kept",
            )
        return Outcome(keep, drop, f"score below {self.threshold:g}", warnings)

    def apply_result(self, result: RerankResult) -> RerankResult:
        out = super().apply_result(result)
        note = THRESHOLD_NOTES.get(result.score_scale)
        if note is None:
            return out
        return replace(
            out, warnings=(*out.warnings, f"rule 'min_score': {note.format(t=self.threshold)}")
        )


def min_score(
    items: Any, threshold: float, *, score_field: str = "rerank_score", keep_at_least: int = 0
) -> Any:
    """Items scoring at least ``threshold``, and the first ``keep_at_least`` whatever they
    score (see :class:`MinScore`)."""
    return MinScore(threshold, score_field=score_field, keep_at_least=keep_at_least)(items)


# --- similarity-based rules ------------------------------------------------------------------


def _word_sets(texts: Sequence[str]) -> list[frozenset[str]]:

    return [frozenset(words) for words in split_words(list(texts))]


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


class Deduplicate(Rule):
    """Drops an item whose word set overlaps an item ranked above it by at least
    ``threshold`` (Jaccard, default 0.9): near-duplicates keep their best-ranked copy.
    It compares texts, not ids. A plain list's dicts are read by their ``text_field``
    (default ``"text"``): one without it is an error naming the fields present."""

    name = "deduplicate"
    reorders = False

    def __init__(self, threshold: float = 0.9, *, text_field: str = "text") -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold, self.text_field = threshold, text_field

    def decide(self, items: Sequence[Any]) -> Outcome:
        sets = _word_sets([d.text for d in _view(items, self.text_field, reader=self.name)])
        keep: list[int] = []
        drop: list[int] = []
        for i, words in enumerate(sets):
            if any(_jaccard(words, sets[j]) >= self.threshold for j in keep):
                drop.append(i)
            else:
                keep.append(i)
        return Outcome(keep, drop, f"near-duplicate (word overlap >= {self.threshold:g})")


def deduplicate(items: Any, threshold: float = 0.9, *, text_field: str = "text") -> Any:
    """Items without their near-duplicates (see :class:`Deduplicate`)."""
    return Deduplicate(threshold, text_field=text_field)(items)


class MMR(Rule):
    """Maximal marginal relevance: repeatedly takes the item maximising
    ``lambda * relevance - (1 - lambda) * max similarity to the items already taken``.

    Relevance is the items' scores min-max normalised (their rank when they have none).
    Similarity is the cosine of embeddings when available (``embed``: a callable mapping
    texts to vectors, e.g. ``EmbeddingScorer().encode_documents``, which caches; or an
    ``embedding`` field on the items), else word-set overlap (Jaccard). ``k`` (default:
    all) is how many MMR picks, from the top; the rest follow in their current order, so it
    reorders and never cuts the list (cut with ``top_k``). A plain list's dicts are read
    by their ``text_field`` (default ``"text"``) and ``score_field``: an item without its
    text is an error naming the fields present, unless every item carries an ``embedding``
    and no ``embed`` is given.
    """

    name = "mmr"
    orders_by_score = True

    def __init__(
        self,
        lambda_: float = 0.5,
        *,
        k: int | None = None,
        embed: Callable[[list[str]], Any] | None = None,
        text_field: str = "text",
        score_field: str = "rerank_score",
    ) -> None:
        if not 0.0 <= lambda_ <= 1.0:
            raise ValueError(f"lambda_ must be in [0, 1], got {lambda_}")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(
                f"k must be a positive integer (how many MMR picks from the top; the rest "
                f"follow, nothing is cut) or absent, got {k!r}"
            )
        if embed is not None and not callable(embed):  # (a pipeline file cannot give one)
            raise ValueError(
                f"embed must be a function from texts to vectors, got {embed!r}; in a "
                "pipeline file, give each document an 'embedding' field instead"
            )
        self.lambda_, self.k, self.embed = lambda_, k, embed
        self.text_field, self.score_field = text_field, score_field

    @classmethod
    def from_options(cls, **options: Any) -> MMR:
        """An MMR from declared options, where ``lambda`` may stand for ``lambda_``."""
        if "lambda" in options:
            options["lambda_"] = options.pop("lambda")
        return cls(**options)

    def _similarity(self, docs: Sequence[Document]) -> np.ndarray:
        texts = [d.text for d in docs]
        vectors: Any = None
        if self.embed is not None:
            vectors = self.embed(texts)
        else:
            given = [field_value(d, "embedding") for d in docs]
            if all(v is not None for v in given):
                vectors = given
        if vectors is not None:
            m = np.asarray(vectors, dtype=np.float64)
            norms = np.linalg.norm(m, axis=1, keepdims=True)
            unit = np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)
            return unit @ unit.T
        sets = _word_sets(texts)
        return np.array([[_jaccard(a, b) for b in sets] for a in sets])

    def decide(self, items: Sequence[Any]) -> Outcome:
        n = len(items)
        if n < 2:
            return Outcome(list(range(n)), [])
        try:
            docs = _view(items, self.text_field, reader=self.name)
        except InvalidDocumentError:  # no texts: fine when every item carries its vector
            docs = _view(items, self.text_field)
            if self.embed is not None or any(field_value(d, "embedding") is None for d in docs):
                raise
        raw = [_score(x, d, self.score_field) for x, d in zip(items, docs, strict=True)]
        if all(s is not None for s in raw):
            rel = normalize_scores(np.asarray(raw, dtype=np.float64), "min_max")
        else:
            rel = 1.0 - np.arange(n) / n
        sim = self._similarity(docs)
        chosen: list[int] = []
        left = list(range(n))
        limit = n if self.k is None else min(self.k, n)
        closest = np.full(n, -math.inf)
        while left and len(chosen) < limit:
            penalty = np.where(np.isfinite(closest), closest, 0.0)
            value = self.lambda_ * rel[left] - (1 - self.lambda_) * penalty[left]
            best = left[int(np.argmax(value))]  # first of equals: the better-ranked
            chosen.append(best)
            left.remove(best)
            closest = np.maximum(closest, sim[best])
        return Outcome(chosen + left, [])


def mmr(items: Any, lambda_: float = 0.5, **options: Any) -> Any:
    """Items reordered for diversity (see :class:`MMR`)."""
    return MMR(lambda_, **options)(items)
