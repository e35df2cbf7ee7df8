"""Every pipeline of an evaluation against one of them (``rerankit eval --baseline``): the
paired difference in nDCG@10 over the same queries, its standard error, and the paired
t-test's p-value, per collection and over several."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputError, keyword_flag
from .metrics import paired_standard_error

__all__ = [
    "against",
    "check_baseline",
    "format_against",
    "format_summary_against",
    "mean_against",
]


#: how ``--baseline`` names the first stage (its run is named ``"first stage"``, which is
#: accepted too)
FIRST_STAGE_BASELINE = "first-stage"


def check_baseline(baseline: str, names: Sequence[str]) -> str:
    """The evaluated run ``baseline`` names, one of ``names`` (``-`` and ``_`` read alike,
    as in every registered name): ``first-stage`` (or ``first stage``) names the first
    stage's run, ``"first stage"``; anything else, an error listing the names ``--baseline``
    takes."""

    def key(name: str) -> str:
        return name.replace("_", "-").replace(" ", "-")

    wanted = next((n for n in names if key(n) == key(baseline)), None)
    if wanted is None:
        shown = [FIRST_STAGE_BASELINE if n == "first stage" else n for n in names]
        raise InputError(
            f"{keyword_flag('baseline', baseline)}: is not among the evaluated pipelines "
            f"({', '.join(repr(n) for n in shown)})"
        )
    return wanted


def against(rows: Sequence[Mapping[str, Any]], baseline: str) -> list[dict[str, Any]]:
    """For each row of :func:`rerankit.eval.runner.evaluate_runs` but the baseline's: the
    mean per-query difference of nDCG@10 from the baseline's (``diff``), its standard
    error over the queries (``se``; None under two queries), the t-test's ``p`` and the
    number of ``queries`` compared."""
    base = next(r for r in rows if r["pipeline"] == baseline)["per_query_ndcg@10"]
    out = []
    for r in rows:
        if r["pipeline"] == baseline:
            continue
        mine = r["per_query_ndcg@10"]
        diffs = [mine[q] - base[q] for q in mine if q in base]
        se = paired_standard_error(diffs)
        out.append(
            {
                "pipeline": r["pipeline"],
                "diff": statistics.fmean(diffs) if diffs else 0.0,
                "se": se,
                "p": r.get("p_vs", {}).get(baseline),
                "queries": len(diffs),
            }
        )
    return out


def _points(value: float) -> str:
    """``value`` x 100 with a sign and two decimals (a rounded-away -0.00 shows as +0.00)."""
    return f"{round(100 * value, 2) + 0.0:+.2f}"


def _cell(entry: Mapping[str, Any]) -> str:
    se = "" if entry["se"] is None else f" ± {100 * entry['se']:.2f}"
    return f"{_points(entry['diff'])}{se}"


def format_against(rows: Sequence[Mapping[str, Any]], baseline: str) -> str:
    """:func:`against` as a Markdown table (nDCG@10 x 100)."""
    lines = [
        f"nDCG@10 x 100 minus {baseline}'s, per query (± standard error over queries):\n",
        "| pipeline | difference | p (paired t-test) | queries |",
        "|---|---:|---:|---:|",
    ]
    for e in against(rows, baseline):
        p = "" if e["p"] is None else f"{e['p']:.3g}"
        lines.append(f"| {e['pipeline']} | {_cell(e)} | {p} | {e['queries']} |")
    return "\n".join(lines)


def format_summary_against(collections: Sequence[Mapping[str, Any]], baseline: str) -> str:
    """One row per collection: every pipeline's :func:`against` difference (x 100, ± its
    standard error), and the mean difference over the collections (± the standard error of
    that mean: the collections' variances added, over their number squared)."""
    per = [against(c["rows"], baseline) for c in collections]
    names = [e["pipeline"] for e in per[0]]
    lines = [
        f"nDCG@10 x 100 minus {baseline}'s by collection (± standard error over queries):\n",
        "| collection | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for c, entries in zip(collections, per, strict=True):
        lines.append(f"| {c['collection']} | " + " | ".join(_cell(e) for e in entries) + " |")
    means = [_cell(e) for e in mean_against(collections, baseline)]
    lines.append("| mean | " + " | ".join(means) + " |")
    return "\n".join(lines)


def mean_against(collections: Sequence[Mapping[str, Any]], baseline: str) -> list[dict[str, Any]]:
    """For each pipeline but the baseline: its :func:`against` difference averaged over the
    collections (each counts once: ``diff``) and the standard error of that mean (``se``:
    the collections' variances added, over their number squared; None when a collection's
    is unknown)."""
    per = [against(c["rows"], baseline) for c in collections]
    out = []
    for i, first in enumerate(per[0]):  # collections are independent: their variances add
        column = [e[i] for e in per]
        known = all(e["se"] is not None for e in column)
        out.append(
            {
                "pipeline": first["pipeline"],
                "diff": statistics.fmean(e["diff"] for e in column),
                "se": math.sqrt(sum(e["se"] ** 2 for e in column)) / len(column) if known else None,
            }
        )
    return out
