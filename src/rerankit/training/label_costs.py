"""What ``rerankit label`` costs: list prices, the estimate before a run, the cost of the
tokens a provider counted, and what a label folder records as spent over every run into it
(``--max-calls`` and ``--budget`` cover the folder, not one run)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import read_spec
from ..errors import InputError, keyword_flag
from ..scorers.base import NO_SCORE
from ..scorers.llm_listwise import LLMListwiseScorer, windows
from ..scorers.llm_pointwise import LLMPointwiseScorer
from ..types import Document

__all__ = [
    "ANSWER_TOKENS",
    "PRICES",
    "Estimate",
    "Spent",
    "as_left_out",
    "calls_for",
    "check_budget",
    "cost_of",
    "estimate",
    "judge_kind",
    "no_negatives",
    "price_of",
    "read_prices",
    "spent_before",
]

#: US$ per million input / output tokens, the providers' list prices in 2025 (override them
#: with ``prices=``, or ``--prices FILE`` on the command line)
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gemini-2.0-flash": (0.10, 0.40),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-pro": (1.25, 10.00),
}

CHARS_PER_TOKEN = 4  # the estimate before a run; the report counts the provider's tokens
PROMPT_TOKENS = 150  # instructions and format around each call's texts
#: output tokens an answer is estimated at, per judge kind
ANSWER_TOKENS = {"pointwise": 20, "listwise": 60}

Prices = Mapping[str, tuple[float, float]]


def judge_kind(judge: Any) -> str:
    """``"pointwise"`` or ``"listwise"``; InputError for anything else."""
    if isinstance(judge, LLMPointwiseScorer):
        return "pointwise"
    if isinstance(judge, LLMListwiseScorer):
        return "listwise"
    raise InputError(
        f"a judge must be an LLM pointwise or listwise scorer, got {type(judge).__name__}"
    )


#: how a judge's warning of a failed judgment ends (the scorer's own words, right for
#: rerank), and what ``label``, which writes no label for it, says instead
_FATES = {
    NO_SCORE: "; left out (no label written for it)",
    "; input order kept": "; left out (no label written for them)",
    "; order kept": "; its query's candidates left out (no label written for them)",
}


def as_left_out(warning: str) -> str:
    """``warning`` of a failed judgment as ``label`` says it: the scorer scored the document
    0.0 (or kept a listwise window's order), but ``label`` leaves it out, never writing it
    as not relevant."""
    for fate, said in _FATES.items():
        if warning.endswith(fate):
            return warning[: -len(fate)] + said
    return warning


def no_negatives(depth: int, positions: tuple[int, int]) -> bool:
    """Whether a listwise judge's order of ``depth`` candidates grades each 1 or 2: none
    labelled not relevant (grade 0), since every position is within ``positions[1]``."""
    return depth <= positions[1]


def calls_for(judge: Any, n: int) -> int:
    """The calls judging ``n`` candidates of one query takes with an empty cache."""
    if judge_kind(judge) == "pointwise":
        return math.ceil(n / judge.docs_per_call)
    return sum(1 for a, b in windows(n, judge.window, judge.step) if b - a >= 2)


def price_of(model: str, prices: Prices) -> tuple[float, float] | None:
    """``model``'s input and output prices (US$ per million tokens), also under what follows
    its last ``/``; None without one."""
    return prices.get(model) or prices.get(model.rsplit("/", 1)[-1])


def cost_of(model: str, input_tokens: int, output_tokens: int, prices: Prices) -> float | None:
    """What the tokens cost at ``model``'s price (None without one)."""
    price = price_of(model, prices)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1e6


@dataclass(frozen=True)
class Estimate:
    """What a run would take: calls, input and output tokens (input estimated at 4
    characters a token, output at a typical answer's length) and their cost (None without a
    price for the judge's model); ``cached_calls``: the calls the judgment cache answers
    instead, for free (0 for an estimate with an empty cache)."""

    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    cached_calls: int = 0


def _to_judge(
    judge: Any, kind: str, query: str, ids: Sequence[str], texts: Callable[[str], str]
) -> tuple[list[tuple[int, int]], int]:
    """What judging ``ids`` for ``query`` still shows the judge, as spans of documents (a
    pointwise judge's: one, of the documents the cache holds no judgment of, asked
    ``docs_per_call`` a call; a listwise judge's: each window to ask), and the calls the
    judgment cache answers instead (the judge's ``cached``: it looks up, calls nothing)."""
    docs = [Document(texts(d), id=d) for d in ids]
    if kind == "pointwise":
        todo = sum(not hit for hit in judge.cached(query, docs))
        return ([(0, todo)] if todo else []), calls_for(judge, len(ids)) - calls_for(judge, todo)
    spans = [(a, b) for a, b in windows(len(ids), judge.window, judge.step) if b - a >= 2]
    held = judge.cached(query, docs)
    return [span for span, hit in zip(spans, held, strict=True) if not hit], sum(held)


def estimate(
    judge: Any,
    queries: Mapping[str, str],
    candidates: Mapping[str, Sequence[str]],
    texts: Callable[[str], str],
    prices: Prices = PRICES,
    *,
    cache: bool = False,
) -> Estimate:
    """The :class:`Estimate` of judging each query's ``candidates``: with an empty cache,
    or, with ``cache``, counting only the calls the judge's judgment cache does not answer
    (those it answers are ``cached_calls``)."""
    kind = judge_kind(judge)
    calls = tokens = cached = 0
    for qid, query in queries.items():
        docs = list(candidates.get(qid, []))
        if cache:
            spans, held = _to_judge(judge, kind, query, docs, texts)
            cached += held
        elif kind == "pointwise":  # each document shown once, docs_per_call a call
            spans = [(0, len(docs))] if docs else []
        else:
            spans = [(a, b) for a, b in windows(len(docs), judge.window, judge.step) if b - a >= 2]
        shown = sum(b - a for a, b in spans)  # the documents the calls show, in all
        n_calls = calls_for(judge, shown) if kind == "pointwise" else len(spans)
        chars = sum(min(len(texts(d)), judge.max_chars) for d in docs)
        chars = round(chars * shown / max(len(docs), 1))
        calls += n_calls
        tokens += chars // CHARS_PER_TOKEN + n_calls * (PROMPT_TOKENS + len(query) // 4)
    answers = calls * ANSWER_TOKENS[kind]
    cost = cost_of(judge.client.model, tokens, answers, prices)
    return Estimate(calls, tokens, answers, cost, cached)


@dataclass(frozen=True)
class Spent:
    """What every earlier run into a label folder spent: calls (retries included), the
    provider's tokens, and their cost (None when no price is known)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0


def spent_before(made: Mapping[str, Any], prices: Prices, model: str) -> Spent:
    """What a folder's ``label_report.json`` (``made``, parsed) records as spent: its
    ``total_*`` counts, or, in a report written before totals were kept, that run's own. A
    cost the report does not know is priced from its tokens, at its model's price, else at
    ``model``'s (the judge of this run)."""

    def count(name: str) -> int:
        value = made.get(f"total_{name}", made.get(name))
        return int(value) if isinstance(value, (int, float)) else 0

    calls, tokens_in, tokens_out = count("calls"), count("input_tokens"), count("output_tokens")
    cost = made.get("total_cost_usd", made.get("cost_usd"))
    if not isinstance(cost, (int, float)):
        cost = cost_of(str(made.get("model") or model), tokens_in, tokens_out, prices)
        if cost is None:
            cost = cost_of(model, tokens_in, tokens_out, prices)
    return Spent(calls, tokens_in, tokens_out, None if cost is None else float(cost))


def check_budget(judge: Any, budget: float | None, prices: Prices = PRICES) -> None:
    """Refuse a ``budget`` for a judge whose model has no price (what would it count?);
    :func:`~rerankit.training.labelling.label` checks it, and a dry run can before it
    estimates."""
    if budget is not None and price_of(judge.client.model, prices) is None:
        raise InputError(
            f"no price for model {judge.client.model!r}: pass its prices with "
            f"{keyword_flag('prices')} to use a budget"
        )


def read_prices(path: str | Path | None) -> dict[str, tuple[float, float]]:
    """The built-in :data:`PRICES`, overridden by a JSON, TOML or YAML file of
    ``{model: {input: $/M tokens, output: $/M tokens}}``."""
    prices = dict(PRICES)
    if path is None:
        return prices
    table = read_spec(path)
    for model, price in table.items():
        try:
            prices[model] = (float(price["input"]), float(price["output"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"{path}: {model!r} needs input and output prices per million tokens"
            ) from exc
    return prices
