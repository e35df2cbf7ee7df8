"""Precision and recall at each score threshold: what keeping only the candidates scoring
at least ``t`` keeps, for pipelines whose scores are probabilities or a model's ``unit``
scores (a cut such as ``min_score``'s means something only on those scales).

As scikit-learn's ``precision_recall_curve`` counts them, a pair is kept when its score is
``>= t``; precision is the share of kept pairs that are relevant, recall the share of the
relevant pairs that are kept. The pairs are every (query, candidate) a pipeline scored,
relevant when judged >= 1 (an unjudged candidate counts as not relevant, as for the
expected calibration error), so recall is of the relevant candidates the first stage
found, not of every relevant document: of every candidate the first stage gave when
those are passed (``candidates``), so a pipeline that dropped some (a ``min_score`` cut,
a ``top_k``) is measured against all of them, not against what it kept. Per query,
``queries left empty`` counts the queries that would keep no candidate at ``t`` (an empty
context for an LLM that reads only the kept ones); a query the first stage found no
candidate for is empty at every ``t``."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._words import counted

__all__ = [
    "PRINTED_THRESHOLDS",
    "THRESHOLDS",
    "THRESHOLDS_FILE",
    "THRESHOLD_SCALES",
    "format_thresholds",
    "threshold_rows",
    "thresholds_text",
    "write_thresholds",
]

#: the cuts ``thresholds.csv`` and :meth:`CollectionEvaluation.thresholds` report
THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(1, 20))
#: the cuts ``rerankit eval --thresholds`` prints
PRINTED_THRESHOLDS = tuple(round(0.1 * i, 1) for i in range(1, 10))
#: the score scales a threshold means something on
THRESHOLD_SCALES = frozenset({"probability", "unit"})
THRESHOLDS_FILE = "thresholds.csv"
COLUMNS = (
    "pipeline",
    "threshold",
    "kept",
    "relevant_kept",
    "precision",
    "recall",
    "queries_left_empty",
)


def threshold_rows(
    scores: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    thresholds: Sequence[float] = THRESHOLDS,
    queries: Sequence[str] | None = None,
    candidates: Mapping[str, Iterable[str]] | None = None,
) -> list[dict[str, Any]]:
    """For each threshold ``t``: ``kept`` (pairs scoring ``>= t``), ``relevant_kept``,
    ``precision`` (None when none is kept), ``recall`` (None when no candidate is
    relevant) and ``relevant`` (the relevant pairs in all), over every scored pair of
    ``scores`` (query id -> document id -> score), relevant when ``qrels`` grades it >= 1;
    ``queries_left_empty``, of the ``queries`` (the evaluated query ids; by default those
    of ``scores``, whose number is ``queries``), those keeping no candidate at ``t``.
    ``candidates``: query id -> the first stage's candidate ids; when given, ``relevant``
    counts the relevant ones among them all, those the pipeline dropped too, and
    ``dropped`` how many candidates it did not score (0 when not given)."""
    qids = list(dict.fromkeys([*(scores if queries is None else queries)]))
    best = {q: max(scores.get(q, {}).values(), default=None) for q in qids}
    pairs = [
        (score, qrels.get(qid, {}).get(doc, 0) >= 1)
        for qid, scored in scores.items()
        for doc, score in scored.items()
    ]
    relevant = sum(1 for _, r in pairs if r)
    dropped = 0
    for qid, ids in (candidates or {}).items():
        unscored = set(ids) - set(scores.get(qid, {}))
        dropped += len(unscored)
        relevant += sum(1 for doc in unscored if qrels.get(qid, {}).get(doc, 0) >= 1)
    rows = []
    for t in thresholds:
        kept = [r for s, r in pairs if s >= t]
        hits = sum(kept)
        rows.append(
            {
                "threshold": t,
                "kept": len(kept),
                "relevant_kept": hits,
                "precision": hits / len(kept) if kept else None,
                "recall": hits / relevant if relevant else None,
                "relevant": relevant,
                "queries_left_empty": sum(1 for b in best.values() if b is None or b < t),
                "queries": len(qids),
                "dropped": dropped,
            }
        )
    return rows


def format_thresholds(
    table: Mapping[str, Sequence[Mapping[str, Any]]],
    thresholds: Sequence[float] = PRINTED_THRESHOLDS,
) -> str:
    """The rows of ``table`` (pipeline -> :func:`threshold_rows`) at ``thresholds``, one
    block per pipeline, as ``rerankit eval --thresholds`` prints them."""
    blocks = []
    for name, rows in table.items():
        relevant = rows[0]["relevant"] if rows else 0
        queries = rows[0].get("queries", 0) if rows else 0
        lines = [
            f"{name}: keeping the candidates scoring >= t ({relevant} relevant "
            "candidates in all; unjudged ones count as not relevant; queries left empty: of "
            f"the {queries}, those that keep no candidate)",
            f"{'t':>5} {'kept':>7} {'precision':>9} {'recall':>6} {'queries left empty':>18}",
        ]
        for r in rows:
            if any(abs(r["threshold"] - t) < 1e-9 for t in thresholds):
                lines.append(
                    f"{r['threshold']:>5.2f} {r['kept']:>7} {_cell(r['precision']):>9} "
                    f"{_cell(r['recall']):>6} {r.get('queries_left_empty', ''):>18}"
                )
        dropped = rows[0].get("dropped", 0) if rows else 0
        if dropped:
            lines.append(
                f"({name} dropped {dropped} of the first stage's candidates (a cut such as "
                "min_score, or top_k): recall counts every relevant candidate, those it dropped "
                "too, but the other columns describe only what it kept, with each t as a further "
                "cut that no floor (keep_at_least) holds back; to choose a cut, measure the "
                "ranker without one)"
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def thresholds_text(
    table: Mapping[str, Sequence[Mapping[str, Any]]],
    without_candidates: int = 0,
    thresholds: Sequence[float] = PRINTED_THRESHOLDS,
) -> str:
    """What ``rerankit eval --thresholds`` prints under a collection's table:
    :func:`format_thresholds` of ``table`` (a collection's ``thresholds``), or, when it is
    empty, that no pipeline scores on a scale a cut means something on; with
    ``without_candidates``, the queries the first stage gave no candidate (empty at every
    ``t``, counted in each row's ``queries left empty``) are said below it."""
    if not table:
        return (
            "thresholds: no pipeline here scores on a probability or unit scale (a cut on "
            "relative scores means nothing)"
        )
    left = (
        f"\n(queries left empty counts, at every t, the "
        f"{counted(without_candidates, 'query', 'queries')} the first stage gave no candidate)"
        if without_candidates
        else ""
    )
    return format_thresholds(table, thresholds) + left


def write_thresholds(path: str | Path, table: Mapping[str, Sequence[Mapping[str, Any]]]) -> Path:
    """``thresholds.csv``: one line per pipeline and threshold (:data:`COLUMNS`; an empty
    precision when nothing is kept)."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for name, rows in table.items():
            for r in rows:
                counts = [name, r["threshold"], r["kept"], r["relevant_kept"]]
                rates = [_cell(r["precision"], 4), _cell(r["recall"], 4)]
                writer.writerow([*counts, *rates, r.get("queries_left_empty", "")])
    return path


def _cell(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"
