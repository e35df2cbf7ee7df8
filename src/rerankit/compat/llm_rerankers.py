"""Compatible LLM rerankers: the news reranker ``ReRanker``, the listwise helpers ``AiRerank``
and ``RerankSchema``, and passage scoring ``rerank_passages``; each thin over rerankit's LLM
scorers."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from .._optional import require
from ..documents import to_documents
from ..llm.base import LLMClient
from ..llm.gemini import DEFAULT_GEMINI_MODEL, GeminiClient
from ..llm.parsing import repair_permutation, validate_permutation
from ..rerankers import ScorerReranker
from ..scorers.llm_listwise import listwise_prompt
from ..scorers.llm_pointwise import LLMPointwiseScorer
from ..types import RerankResult, check_top_k

__all__ = ["AiRerank", "ReRanker", "make_rerank_schema", "rerank_passages"]

logger = logging.getLogger(__name__)


class ReRanker:
    """Gemini rates each article 0-10 for the query (a financial analyst's framing,
    content cut at 10,000 characters); articles come back as new dicts, best first, with
    ``rerank_score``. Articles need ``url_hash`` and ``processed_content``; other fields are
    kept. ``last_result`` holds the full :class:`~rerankit.RerankResult` (warnings, flags,
    calls and tokens) of the latest call."""

    def __init__(
        self,
        api_key: str,
        model_name: str = DEFAULT_GEMINI_MODEL,
        *,
        base_url: str | None = None,
        **scorer_options: Any,
    ) -> None:
        if not api_key:
            raise ValueError("ReRanker needs a Gemini API key (api_key)")
        client = GeminiClient(api_key=api_key, model=model_name, base_url=base_url)
        scorer_options.setdefault("instructions", "news")
        scorer_options.setdefault("max_chars", 10_000)
        self.model_name = model_name
        self.scorer = LLMPointwiseScorer(client, **scorer_options)
        self._reranker = ScorerReranker(self.scorer)
        self.last_result: RerankResult | None = None

    def rerank_articles(self, query: str, articles: list[dict]) -> list[dict]:
        """``articles`` sorted by relevance (ties keep their order), each a new dict with
        ``rerank_score`` in [0, 10]. An empty list gives []; an empty query keeps the order
        (scores 0.0) and logs a warning; an article whose call fails scores 0.0."""
        if not articles:
            logger.warning("rerank_articles: no articles to rerank")
            return []
        self.last_result = self._reranker.rerank(
            query,
            articles,
            text_field="processed_content",
            id_field="url_hash",
            score_field="rerank_score",
        )
        return self.last_result.documents()


def make_rerank_schema() -> type:
    """The listwise response model (pydantic): ``reranked_indices``, ``is_rejected``,
    ``rejection_reason``, extra fields forbidden."""

    pydantic = require("pydantic", "RerankSchema")

    class RerankSchema(pydantic.BaseModel):
        """A listwise answer: the order, or a rejection with its reason. No other fields."""

        model_config = pydantic.ConfigDict(extra="forbid")
        reranked_indices: list[int]
        is_rejected: bool
        rejection_reason: str

    return RerankSchema


class AiRerank:
    """Listwise helpers: the listwise prompt, permutation validation and repair."""

    @staticmethod
    def get_prompt_rerank(question: str, indexed_chunks_json_text: str) -> str:
        """The whole listwise prompt as one string (instructions, chunks, question)."""

        try:
            count = len(json.loads(indexed_chunks_json_text))
        except (ValueError, TypeError):
            count = 0
        system, user = listwise_prompt(question, indexed_chunks_json_text, count)
        return f"{system}\n\n{user}"

    validate_permutation = staticmethod(validate_permutation)
    repair_permutation = staticmethod(repair_permutation)


def rerank_passages(
    query: str,
    passages: Sequence[Any],
    *,
    client: LLMClient | None = None,
    api_key: str | None = None,
    model: str = DEFAULT_GEMINI_MODEL,
    text_field: str = "text",
    max_chars: int = 500,
    top_k: int | None = None,
    **scorer_options: Any,
) -> list[Any]:
    """Passages scored 0-10 for relevance, depth and substance (texts cut at 500
    characters), best first. Passages may be strings, dicts (text under ``text_field``) or
    objects with that attribute; dicts come back as new dicts with ``rerank_score``, other
    passages as themselves.

    All passages are scored in one structured call (``docs_per_call``). Graceful
    degradation: with fewer than two passages, or when reranking cannot run (no key, missing
    SDK) or the call fails or leaves a passage unscored, the passages come back in their
    original order and a warning is logged: never a partly reordered list.
    """
    check_top_k(top_k)
    items = list(passages)
    if len(items) < 2:
        return items[:top_k] if top_k else items
    try:
        llm = client or GeminiClient(api_key=api_key, model=model)
    except (ValueError, ImportError) as exc:
        logger.warning("rerank_passages: reranking skipped (%s); original order kept", exc)
        return items[:top_k] if top_k else items
    scorer_options.setdefault("instructions", "passages")
    scorer_options.setdefault("docs_per_call", len(items))  # one structured call for all
    scorer = LLMPointwiseScorer(llm, max_chars=max_chars, **scorer_options)
    docs = to_documents(items, text_field=text_field, missing_text="empty")
    result = ScorerReranker(scorer).rerank(query, docs, top_k=top_k, score_field="rerank_score")
    for w in result.warnings:
        logger.warning("rerank_passages: %s", w)
    if result.degraded:  # a failed (or partly unreadable) call: the original order, whole
        logger.warning("rerank_passages: reranking failed; original order kept")
        return items[:top_k] if top_k else items
    return result.documents()
