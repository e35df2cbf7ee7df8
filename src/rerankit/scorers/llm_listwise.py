"""Listwise LLM reranking: one call returns an order of the documents.

The answer follows the permutation schema of the compatible listwise API:
``reranked_indices`` (the order), ``is_rejected`` and ``rejection_reason`` (no document is
relevant), nothing else. Documents enter the prompt as a JSON array, so their text cannot
break the prompt. Lists longer than ``window`` are ranked with a sliding window from the
back of the list to the front (RankGPT's scheme): each window reorders its slice, then the
window moves ``step`` places towards the top, carrying the best documents up. 100 documents
with window 20 and step 10 take 9 calls.

Per window, in the result:

* an answer that is not a permutation is repaired (unknown and repeated indices dropped,
  missing ones appended in their current order) and a warning says what was wrong;
* a rejection keeps the window's order, flags its documents ``llm_rejected`` and keeps the
  model's reason in a warning (a rejection is an answer, so the result is not degraded);
* a failed call keeps the window's order, flags ``llm_failed`` and ``llm_failed:<kind>``
  (how: ``timeout``, ``rate_limit``, ...; see :data:`rerankit.errors.FAILURE_KINDS`) and
  marks the result degraded;
* an answer that holds no order (prose) is such a failure too, of kind ``unreadable``, as a
  pointwise judge's: ``llm_failed`` and ``llm_failed:unreadable``, and ``llm_unreadable``,
  the older name of the same event, which still marks it.

Scores are ``n - position`` (the top document scores ``n``), so every document appears once.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._renamed import one_name
from .._threads import in_thread
from ..errors import ProviderError, for_the_log
from ..llm.base import LLMClient, LLMRequest, Usage
from ..llm.parsing import parse_index, parse_json, repair_permutation, validate_permutation
from ..llm.prompts import load_template
from ..types import Document
from ._llm_common import LLMScorerBase, LLMScorerOptions
from .base import ScoreBatch, cut_to_fit, valid_unicode

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["RERANK_SCHEMA", "LLMListwiseScorer", "listwise_prompt", "windows"]

logger = logging.getLogger(__name__)

RERANK_SCHEMA = {
    "type": "object",
    "properties": {
        "reranked_indices": {"type": "array", "items": {"type": "integer"}},
        "is_rejected": {"type": "boolean"},
        "rejection_reason": {"type": "string"},
    },
    "required": ["reranked_indices", "is_rejected", "rejection_reason"],
    "additionalProperties": False,
}


def listwise_prompt(
    question: str, chunks_json: str, count: int, template: str | None = None
) -> tuple[str, str]:
    """``(system, user)`` texts of a listwise request over ``count`` JSON-encoded chunks;
    ``template`` is the system text with ``{which}`` (the shipped one by default)."""
    if count == 0:
        which = "the array is empty, so none: reject it (is_rejected true, reranked_indices [])"
    elif count == 1:
        which = "the one index, 0"
    else:
        which = f"every index from 0 to {count - 1}"
    system = (template or load_template("listwise", None)).format(which=which)
    user = (
        f"Chunks (JSON array):\n{chunks_json}\n\n"
        f"Question (a JSON string): {json.dumps(question, ensure_ascii=False)}"
    )
    return system, user


def windows(n: int, window: int, step: int) -> list[tuple[int, int]]:
    """``(start, end)`` slices, back of the list first, the last one starting at 0."""
    if n <= 0:
        return []
    spans = []
    end = n
    while True:
        start = max(0, end - window)
        spans.append((start, end))
        if start == 0:
            return spans
        end -= step


_ARROWS = re.compile(r"\s*\[\d+\](?:\s*>\s*\[\d+\])*\s*")


def _indices_from(answer: Any, text: str) -> tuple[list[int], bool, str]:
    """``(indices, is_rejected, reason)`` from an answer: the schema's object, a JSON list of
    integers, or the ``[3] > [11] > [0]`` form. Anything else (prose that happens to hold
    numbers included) is a ``ValueError``: the window is unreadable."""
    if isinstance(answer, dict):
        raw = answer.get("reranked_indices")
        if not isinstance(raw, list):
            raise ValueError("the answer has no reranked_indices list")
        indices = [parse_index(i) for i in raw]
        if any(i is None for i in indices):
            raise ValueError("reranked_indices holds something other than integers")
        rejected = answer.get("is_rejected") is True
        return (
            [i for i in indices if i is not None],
            rejected,
            str(answer.get("rejection_reason") or ""),
        )
    if isinstance(answer, list):
        indices = [parse_index(i) for i in answer]
        if any(i is None for i in indices):
            raise ValueError("the list holds something other than integers")
        return [i for i in indices if i is not None], False, ""
    if _ARROWS.fullmatch(text):
        return [int(x) for x in re.findall(r"\[(\d+)\]", text)], False, ""
    raise ValueError("not the schema's object, a JSON list of integers or [3] > [1] > ...")


#: what can happen to a window, and the flags its documents get: an unreadable answer is a
#: failure of kind ``unreadable``, as a pointwise one is, and keeps its older flag
#: ``llm_unreadable`` too
_WINDOW_FLAGS = {
    "failed": ("llm_failed",),
    "unreadable": ("llm_failed", "llm_failed:unreadable", "llm_unreadable"),
    "repaired": ("llm_repaired",),
    "rejected": ("llm_rejected",),
}


class LLMListwiseScorer(LLMScorerBase):
    """Orders documents with an LLM, ``window`` at a time (default 20, step 10).

    ``max_chars`` cuts each document in the prompt (default 2,000). ``instructions``: the
    system text (a path to a text file, or the text itself, with ``{which}`` for the
    indices asked for; default the shipped ``listwise.txt``), named as the pointwise judge's
    are; ``template``, its earlier name, still works. ``cache``, ``retry``,
    ``max_concurrency``, ``requests_per_minute``: as for
    :class:`~rerankit.scorers.llm_pointwise.LLMPointwiseScorer` (windows depend on each
    other, so they run one after another).
    """

    uses_top_k = True  # warns when window and step cannot carry the top_k forward

    def __init__(
        self,
        client: LLMClient,
        *,
        window: int = 20,
        step: int = 10,
        max_chars: int = 2_000,
        instructions: str | None = None,
        name: str = "llm_listwise",
        template: str | None = None,
        **options: Unpack[LLMScorerOptions],
    ) -> None:
        super().__init__(client, name=name, **options)
        if window < 2:
            raise ValueError(f"window must be >= 2, got {window}")
        if not 1 <= step <= window:
            raise ValueError(f"step must be between 1 and window ({window}), got {step}")
        self.window, self.step, self.max_chars = window, step, max_chars
        given = one_name("LLMListwiseScorer", "instructions", instructions, "template", template)
        # kept as .template: the attribute is part of the judge's cache identity
        # (rerankit.cache.scorer_identity), which a new name would change
        self.template = load_template("listwise", given)
        try:
            self.template.format(which="every index")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"instructions: only {{which}} may stand in braces (double the others): {exc!r}"
            ) from exc

    @property
    def instructions(self) -> str:
        """The system text of each window's request (``{which}`` not yet filled in)."""
        return self.template

    def _request(self, query: str, texts: list[str]) -> LLMRequest:
        """The request that ranks one window of ``texts``."""
        system, prompt = listwise_prompt(
            query, json.dumps(texts, ensure_ascii=False), len(texts), self.template
        )
        return LLMRequest(
            prompt=prompt,
            system=system,
            json_schema=RERANK_SCHEMA,
            schema_name="rerank",
            temperature=self.temperature,
            max_output_tokens=self.max_output_tokens,
        )

    def cached(self, query: str, docs: Sequence[Document]) -> list[bool]:
        """Whether the judgment cache holds the answer of each window :meth:`score` asks
        about (those of two documents or more, back of the list first), following the
        orders it holds; False from the first it does not (the order that window passes on
        is not known yet). All False without a cache. Looks up, calls nothing."""
        spans = [(a, b) for a, b in windows(len(docs), self.window, self.step) if b - a >= 2]
        if self.cache is None:
            return [False] * len(spans)
        texts = valid_unicode([d.text[: self.max_chars] for d in docs], {}, [])
        order, held = list(range(len(docs))), []
        for start, end in spans:
            segment = order[start:end]
            answer = self.cache.get(
                self.cache_key(self._request(query, [texts[i] for i in segment]))
            )
            if answer is None:
                break
            held.append(True)
            try:
                indices, rejected, _ = _indices_from(parse_json(answer), answer)
            except ValueError:
                continue  # (only readable answers are cached)
            if not rejected and validate_permutation(list(range(len(segment))), indices)[0]:
                order[start:end] = [segment[k] for k in indices]
        return held + [False] * (len(spans) - len(held))

    async def _rank_window(
        self, query: str, texts: list[str], usage: Usage, label: str, notes: dict[str, Any]
    ) -> list[int] | None:
        """A local permutation of ``texts`` (None when the window keeps its order). Only
        valid answers (a permutation, or a rejection) are cached."""
        request = self._request(query, texts)
        key = self.cache_key(request) if self.cache is not None else None
        cached = await in_thread(self.cache.get, key) if key is not None else None
        if cached is not None:
            usage.cache_hits += 1
            answer_text = cached
        else:
            try:
                answer_text = (await self.runner.call(request, usage)).text
            except ProviderError as exc:
                notes["failed"].append(f"{label}: call failed ({exc}); order kept")
                notes["log"].append(f"{label}: call failed ({for_the_log(str(exc))}); order kept")
                notes["how"].append(f"llm_failed:{exc.kind}")
                return None
        try:
            try:
                answer: Any = parse_json(answer_text)
            except ValueError:
                answer = None
            indices, rejected, reason = _indices_from(answer, answer_text)
        except ValueError as exc:
            usage.failures += 1  # a call with no judgment in it, as one that failed
            source = "the judgment cache" if cached is not None else self.runner.where
            notes["unreadable"].append(
                f"{label}: unreadable answer ({source}: {exc}): {answer_text[:200]!r}; order kept"
            )
            notes["log"].append(  # (the answer may quote the documents: not logged)
                f"{label}: unreadable answer ({source}: {len(answer_text)} characters); order kept"
            )
            return None
        if rejected:
            if key is not None and cached is None:
                await in_thread(self.cache.put, key, answer_text)
            notes["rejected"].append(f"{label}: rejected by the model: {reason or 'no reason'}")
            notes["log"].append(f"{label}: rejected by the model (its reason is not logged)")
            return None
        original = list(range(len(texts)))
        valid, missing, extra, _ = validate_permutation(original, indices)
        if not valid:
            repeats = len(indices) - len(set(indices))
            notes["repaired"].append(
                f"{label}: answer repaired (missing {missing}, unknown {extra}, {repeats} repeated)"
            )
            return repair_permutation(original, indices)
        if key is not None and cached is None:
            await in_thread(self.cache.put, key, answer_text)
        return indices

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        n = len(docs)
        order = list(range(n))
        usage = Usage()
        flags: dict[int, list[str]] = {}
        degraded = False
        warnings: list[str] = []
        texts = valid_unicode(
            [d.text[: self.max_chars] for d in docs], flags, warnings, [d.id for d in docs]
        )
        cut_to_fit(docs, self.max_chars, self.name, flags, warnings)
        top_k = context.get("top_k")
        carried = self.window - self.step
        if isinstance(top_k, int) and n > self.window and top_k > carried:
            warnings.append(
                f"window {self.window} with step {self.step} carries only {carried} documents "
                f"from one window to the next: some of the best {top_k} may stay behind (use a "
                f"step of at most {max(self.window - top_k, 1)}, or a larger window)"
            )
        logged = list(warnings)  # the log's, without text the model or provider sent
        for start, end in windows(n, self.window, self.step):
            if end - start < 2:
                continue  # one document has only one order: no call
            notes: dict[str, list[str]] = {k: [] for k in (*_WINDOW_FLAGS, "how", "log")}
            label = f"window {start}-{end - 1}"
            segment = order[start:end]
            perm = await self._rank_window(query, [texts[i] for i in segment], usage, label, notes)
            for kind, named in _WINDOW_FLAGS.items():
                if notes[kind]:
                    for i in segment:
                        flags.setdefault(i, []).extend(named)
                    warnings += notes[kind]
                    logged += notes[kind] if kind == "repaired" else []
                    degraded |= kind != "rejected"  # a rejection is an answer
            logged += notes["log"]
            if notes["how"]:  # how the call failed, as a flag too
                for i in segment:
                    flags[i].extend(notes["how"])
            if perm is not None:
                order[start:end] = [segment[k] for k in perm]
        values = np.zeros(n)
        values[np.asarray(order, dtype=np.int64)] = np.arange(n, 0, -1, dtype=np.float64)
        if logged:
            logger.warning("%s: %s", self.name, "; ".join(logged))
        return ScoreBatch(
            values=values,
            flags=flags,
            warnings=warnings,
            degraded=degraded,
            usage=usage.as_dict(),
        )

    def __repr__(self) -> str:
        return f"LLMListwiseScorer({self.client!r}, window={self.window}, step={self.step})"
