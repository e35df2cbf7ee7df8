"""Pointwise LLM judging: a 0-10 relevance score per document (specs 1 and 4).

Each document is rated in its own call (or ``docs_per_call`` at a time), concurrently, with
the resilience of :class:`~rerankit.llm.CallRunner`. Query and documents enter the prompt as
JSON strings, so a document cannot break the prompt's structure.

Outcomes per document, all visible in the result:

* a parsed score, clamped to [0, 10] (flag ``score_clamped`` when it was outside); a
  one-document answer that names another id than the prompt gave (or a null one) keeps its
  score, flagged ``llm_wrong_id`` with a warning;
* empty text: 0.0 without a call (flag ``empty_content``);
* a call that failed after its retries, or an answer with no score in it: 0.0, flag
  ``llm_failed`` and ``llm_failed:<kind>`` (how: ``timeout``, ``rate_limit``, ...,
  ``unreadable``; see :data:`rerankit.errors.FAILURE_KINDS`), a warning, and the result is
  ``degraded``; the call counts once in
  ``usage["failures"]`` however many of its documents it left unscored. When every call
  fails the scores are all 0, the input order is kept, and the warning's count of calls is
  that of ``failures``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._threads import in_thread
from ..errors import ProviderError, for_the_log
from ..llm.base import LLMClient, LLMRequest, Usage
from ..llm.parsing import parse_json, parse_score
from ..llm.prompts import load_template, presets
from ..types import Document
from ._llm_common import LLMScorerBase, LLMScorerOptions
from .base import NO_SCORE, ScoreBatch, cut_to_fit, valid_unicode, which_document

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["INSTRUCTION_PRESETS", "LLMPointwiseScorer"]

logger = logging.getLogger(__name__)

#: the shipped presets of ``instructions`` (text files in ``rerankit/llm/prompts``)
INSTRUCTION_PRESETS = {name: load_template("pointwise", name) for name in presets("pointwise")}
_SCALE = (
    "Rate relevance from 0 (irrelevant) to 10 (exactly what the query asks for). "
    "Reply with JSON only."
)
_ONE_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "score": {"type": "number"}},
    "required": ["id", "score"],
    "additionalProperties": False,
}
_MANY_SCHEMA = {
    "type": "object",
    "properties": {"scores": {"type": "array", "items": _ONE_SCHEMA}},
    "required": ["scores"],
    "additionalProperties": False,
}


class LLMPointwiseScorer(LLMScorerBase):
    """Scores each document 0-10 with an LLM.

    ``client``: a :class:`~rerankit.llm.GeminiClient`, :class:`~rerankit.llm.OpenAIClient`
    or any :class:`~rerankit.llm.LLMClient`. ``instructions``: a preset (``"general"``,
    ``"news"`` for news articles, ``"passages"`` for study passages) or your own text.
    ``max_chars``: each document is cut to this many characters (the news reranker uses
    10,000; passage scoring 500).
    ``docs_per_call`` > 1 rates several documents per call (fewer calls, longer prompts).
    ``cache``: True (the server ``$RERANKIT_CACHE_URL`` names, else SQLite in the user
    cache dir), ``"memory"``, a path, a Redis URL, a
    :class:`~rerankit.cache.JudgmentCache`, or False.
    ``retry``: a :class:`~rerankit.llm.RetryPolicy`, each call's ``timeout`` and how many
    ``attempts`` it gets (default 3 attempts, 60 s each, waits of 2-30 s between them).
    ``max_concurrency``: calls in flight (default 16); ``requests_per_minute``: a cap on
    call starts (default none); ``limits``: a :class:`~rerankit.llm.Limits` shared with
    other scorers instead. ``max_output_tokens``, ``temperature`` (default 0): sent with
    each call. An option it does not take is a TypeError naming those it does. E.g.::

        LLMPointwiseScorer(
            OpenAIClient(base_url="http://localhost:8000/v1", model="judge", api_key="..."),
            retry=RetryPolicy(attempts=2, timeout=10),
            max_concurrency=4,
            requests_per_minute=600,
        )
    """

    score_scale = "grade10"

    def __init__(
        self,
        client: LLMClient,
        *,
        instructions: str = "general",
        max_chars: int = 10_000,
        docs_per_call: int = 1,
        name: str = "llm_pointwise",
        **options: Unpack[LLMScorerOptions],
    ) -> None:
        super().__init__(client, name=name, **options)
        if max_chars < 1:
            raise ValueError(f"max_chars must be >= 1, got {max_chars}")
        if docs_per_call < 1:
            raise ValueError(f"docs_per_call must be >= 1, got {docs_per_call}")
        self.instructions = load_template("pointwise", instructions)
        self.max_chars, self.docs_per_call = max_chars, docs_per_call

    # -- prompts -------------------------------------------------------------------------
    def _request(self, query: str, items: list[tuple[str, str]]) -> LLMRequest:
        if len(items) == 1:
            doc_id, text = items[0]
            prompt = (
                f"Query (a JSON string): {json.dumps(query, ensure_ascii=False)}\n"
                f"Document {json.dumps(doc_id)} (a JSON string): "
                f"{json.dumps(text, ensure_ascii=False)}\n\n"
                f'{_SCALE} Format: {{"id": {json.dumps(doc_id)}, "score": <0-10>}}'
            )
            schema = _ONE_SCHEMA
        else:
            listing = json.dumps([{"id": i, "text": t} for i, t in items], ensure_ascii=False)
            prompt = (
                f"Query (a JSON string): {json.dumps(query, ensure_ascii=False)}\n"
                f"Documents (a JSON array): {listing}\n\n"
                f"{_SCALE} Rate every document. Format: "
                '{"scores": [{"id": "<document id>", "score": <0-10>}, ...]}'
            )
            schema = _MANY_SCHEMA
        return LLMRequest(
            prompt=prompt,
            system=self.instructions,
            json_schema=schema,
            schema_name="relevance",
            temperature=self.temperature,
            max_output_tokens=self.max_output_tokens,
        )

    def _key(self, query: str, text: str) -> str:
        # one document's request, whatever docs_per_call groups it with
        return self.cache_key(self._request(query, [("0", text)]))

    def cached(self, query: str, docs: Sequence[Document]) -> list[bool]:
        """Whether the judgment cache holds each document's judgment for ``query`` (so
        scoring it makes no call); all False without a cache. Looks up, calls nothing."""
        if self.cache is None:
            return [False] * len(docs)
        texts = valid_unicode([d.text[: self.max_chars] for d in docs], {}, [])
        hits = self.cache.get_many([self._key(query, text) for text in texts])
        return [hit is not None for hit in hits]

    # -- scoring -------------------------------------------------------------------------
    async def _judge(
        self, query: str, items: list[tuple[str, str]], usage: Usage
    ) -> tuple[dict[str, float | Exception], str | None]:
        """Scores by id for one call's documents (an exception for those that failed), and
        the other id a one-document answer named; a call that leaves any of them without a
        score counts in ``usage.failures`` (the runner counts those that failed, this the
        answers that could not be read)."""
        try:
            response = await self.runner.call(self._request(query, items), usage)
        except ProviderError as exc:
            return {doc_id: exc for doc_id, _ in items}, None
        outcome = self._read(response.text, items)
        if any(isinstance(v, Exception) for v in outcome.values()):
            usage.failures += 1
        return outcome, _other_id(response.text, items)

    @staticmethod
    def _read(text: str, items: list[tuple[str, str]]) -> dict[str, float | Exception]:
        """Scores by id from one answer (an exception for a document it gives none)."""
        if len(items) == 1:
            try:
                return {items[0][0]: parse_score(text)}
            except ValueError as exc:
                return {items[0][0]: exc}
        found: dict[str, float | Exception] = {}
        try:
            answer = parse_json(text)
            for entry in answer.get("scores", []) if isinstance(answer, dict) else []:
                if isinstance(entry, dict) and "score" in entry:
                    try:  # one rule for every answer: booleans and non-finite are unreadable
                        found[str(entry.get("id"))] = parse_score(json.dumps(entry["score"]))
                    except ValueError as exc:
                        found[str(entry.get("id"))] = exc
        except (ValueError, TypeError, AttributeError) as exc:
            return {doc_id: ValueError(f"unreadable answer: {exc}") for doc_id, _ in items}
        asked = {doc_id for doc_id, _ in items}
        unknown = sorted(set(found) - asked)
        missing = ValueError(
            "the answer left this document out"
            + (
                f" (it named ids not asked about: {', '.join(map(repr, unknown[:5]))})"
                if unknown
                else ""
            )
        )
        return {doc_id: found.get(doc_id, missing) for doc_id, _ in items}

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        n = len(docs)
        values = np.zeros(n)
        flags: dict[int, list[str]] = {}
        warnings: list[str] = []
        usage = Usage()
        texts = valid_unicode(
            [d.text[: self.max_chars] for d in docs], flags, warnings, [d.id for d in docs]
        )
        cut_to_fit(docs, self.max_chars, self.name, flags, warnings)
        present = [i for i, text in enumerate(texts) if text.strip()]
        for i in set(range(n)) - set(present):
            flags.setdefault(i, []).append("empty_content")
        todo: list[int] = present
        if self.cache is not None:  # looked up and written off the event loop, in batches
            keys = {i: self._key(query, texts[i]) for i in present}
            cached = await in_thread(self.cache.get_many, list(keys.values()))
            todo = []
            for i, hit in zip(present, cached, strict=True):
                if hit is None:
                    todo.append(i)
                else:
                    values[i] = float(hit)
                    usage.cache_hits += 1
        fresh: list[tuple[str, float]] = []
        groups = [todo[k : k + self.docs_per_call] for k in range(0, len(todo), self.docs_per_call)]
        # the prompt names each document by its own id when every document has a distinct
        # one (an article's url_hash, say), else by its position
        ids = [d.id for d in docs]
        own = all(x is not None for x in ids) and len({str(x) for x in ids}) == n
        label = [str(ids[i]) if own else str(i) for i in range(n)]
        answers = await asyncio.gather(
            *(self._judge(query, [(label[i], texts[i]) for i in g], usage) for g in groups)
        )
        failed, first_cause = 0, None
        for group, (answer, other) in zip(groups, answers, strict=True):
            for i in group:
                outcome, which = answer[label[i]], which_document(i, ids[i])
                if isinstance(outcome, Exception):
                    failed += 1
                    # the log names a provider's failure; an answer's text stays in warnings
                    provider = isinstance(outcome, ProviderError)  # it names where
                    first_cause = first_cause or (
                        for_the_log(str(outcome))
                        if provider
                        else f"{self.runner.where}: unreadable answer"
                    )
                    kind = getattr(outcome, "kind", "unreadable")  # else a ValueError: read
                    flags.setdefault(i, []).extend(("llm_failed", f"llm_failed:{kind}"))
                    said = outcome if provider else f"{self.runner.where}: {outcome}"
                    warnings.append(f"{which}: no score ({said}){NO_SCORE}")
                    continue
                if other is not None:  # one document was asked about: its score, misnamed
                    flags.setdefault(i, []).append("llm_wrong_id")
                    warnings.append(
                        f"{which}: the answer names id {other}, not {label[i]!r}, the id "
                        "the prompt gave it; its score is kept (it was asked about this "
                        "document alone)"
                    )
                if not 0.0 <= outcome <= 10.0:
                    flags.setdefault(i, []).append("score_clamped")
                    warnings.append(f"{which}: score {outcome:g} is outside 0-10; clamped")
                    outcome = float(np.clip(outcome, 0.0, 10.0))
                values[i] = outcome
                fresh.append((self._key(query, texts[i]), outcome))
        if self.cache is not None and fresh:
            await in_thread(self.cache.put_many, fresh)
        if failed == len(todo) and todo and not usage.cache_hits:  # each a usage failure
            warnings.append(
                f"every LLM call failed ({len(groups)} of {len(groups)}; no score for "
                f"{failed} documents); input order kept"
            )
        if failed:  # with the first cause: a provider's failure names where the call went
            logger.warning(
                "%s: %d of %d documents got no score (the first failure: %s)",
                self.name,
                failed,
                n,
                first_cause,
            )
        return ScoreBatch(
            values=values,
            flags=flags,
            warnings=warnings,
            degraded=failed > 0,
            usage=usage.as_dict(),
        )

    def __repr__(self) -> str:
        return f"LLMPointwiseScorer({self.client!r})"


def _other_id(text: str, items: list[tuple[str, str]]) -> str | None:
    """The id a one-document answer names when it is not the one the prompt gave, as a
    warning shows it (``'d7'``, or ``null`` for an id left null); None when it names none,
    or that one."""
    if len(items) != 1:
        return None
    try:
        answer = parse_json(text)
    except (ValueError, TypeError):
        return None
    if not isinstance(answer, dict) or "id" not in answer:
        return None
    named = answer["id"]
    if named is None:
        return "null"
    return None if str(named) == items[0][0] else repr(str(named))
