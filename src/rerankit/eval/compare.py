"""Every pipeline of an evaluation against one of them (``rerankit eval --baseline``): the
paired difference in nDCG@10 over the same queries, its standard error, and the paired
t-test's p-value, per collection and over several; and query by query, the queries where a
pipeline differs most from the baseline (printed under the table; ``per_query.csv``)."""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, keyword_flag, said_for
from .metrics import paired_standard_error
from .notes import fell_back

__all__ = [
    "against",
    "check_baseline",
    "clear_note",
    "first_stage_clash",
    "format_against",
    "format_differences",
    "format_summary_against",
    "largest_differences",
    "mean_against",
    "per_query",
    "queries_to_clear",
    "verdict",
    "write_per_query",
]

#: the name of the per-query file ``--out`` writes with a baseline
PER_QUERY_FILE = "per_query.csv"
#: how many characters of a query's text the printed table shows
QUERY_CHARS = 60


#: a difference is real when it is more than this many standard errors (the rule
#: docs/evaluation.md and docs/choosing.md give); smaller, it is noise
NOISE_SE = 2


def verdict(diff: float, se: float | None) -> str:
    """What a paired difference ``diff`` from the baseline (positive: better) with standard
    error ``se`` says by the rule of :data:`NOISE_SE`: ``"better"`` or ``"worse"`` when it
    is more than twice its standard error, else ``"within noise"``; ``""`` when the
    standard error is unknown (under two queries)."""
    if se is None:
        return ""
    if abs(diff) <= NOISE_SE * se:
        return "within noise"
    return "better" if diff > 0 else "worse"


def queries_to_clear(
    gain: float, noise: float, queries: int, margin: float = NOISE_SE
) -> int | None:
    """About how many judged queries a ``gain`` that is positive but within ``margin`` x
    its ``noise`` (a standard error over ``queries``) would need to clear that margin, if
    it held and the noise fell as one over the square root of the queries (None: no gain,
    no noise to scale, or already clear). ``tune`` says it of a learned pipeline not
    adopted, ``eval`` of a pipeline within noise of its baseline (:func:`clear_note`)."""
    if gain <= 0 or noise <= 0 or not queries or gain > margin * noise:
        return None
    return math.ceil(queries * (margin * noise / gain) ** 2)


def clear_note(gain: float, needed: int, margin: float = NOISE_SE) -> str:
    """What :func:`queries_to_clear` found, in the words ``tune`` and ``eval`` both use
    (``gain`` as a fraction: printed x 100)."""
    times = "" if margin == 1 else f"{margin:g} x "
    return (
        f"its gain, {_points(gain)}, would clear {times}the noise with about {needed} judged "
        "queries like these, if it held: the noise falls with the square root of their number"
    )


#: how ``--baseline`` names the first stage (its run is named ``"first stage"``, which is
#: accepted too)
FIRST_STAGE_BASELINE = "first-stage"


def first_stage_clash(label: str) -> str:
    """The error for a reranker labelled as the first stage's run (``label``)."""
    run = said_for("first_stage=RUN", "--first-stage RUN")
    return (
        f"rerankers: {label!r} names the first stage's run, which every table measures as its "
        f"'first stage' row: to score a run of your own, give it as {run} beside any "
        "reranker; to evaluate a pipeline of that name, label it otherwise"
    )


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
    error over the queries (``se``; None under two queries), the t-test's ``p`` against the
    baseline, the number of ``queries`` compared, the :func:`verdict` (``better``,
    ``worse`` or ``within noise``), ``queries_to_clear`` (a gain within noise: about how
    many judged queries would settle it, :func:`queries_to_clear`; else None), and how many
    of its queries and of the baseline's degraded (``degraded_queries``,
    ``baseline_degraded_queries``: there the figures are a fallback's, see
    :func:`~rerankit.eval.notes.fell_back`)."""
    base_row = next(r for r in rows if r["pipeline"] == baseline)
    base = base_row["per_query_ndcg@10"]
    out = []
    for r in rows:
        if r["pipeline"] == baseline:
            continue
        mine = r["per_query_ndcg@10"]
        diffs = [mine[q] - base[q] for q in mine if q in base]
        se = paired_standard_error(diffs)
        diff = statistics.fmean(diffs) if diffs else 0.0
        out.append(
            {
                "pipeline": r["pipeline"],
                "diff": diff,
                "se": se,
                "p": r.get("p_vs", {}).get(baseline),
                "queries": len(diffs),
                "verdict": verdict(diff, se),
                "queries_to_clear": None if se is None else queries_to_clear(diff, se, len(diffs)),
                # its figures on these queries are its fallback's (see notes.fell_back)
                "degraded_queries": r.get("degraded_queries") or 0,
                "baseline_degraded_queries": base_row.get("degraded_queries") or 0,
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
    """:func:`against` as a Markdown table (nDCG@10 x 100), with each pipeline's
    :func:`verdict` and the rule it applies; its p is against ``baseline`` (the main
    table's, against the first stage)."""
    other = (
        "the same as the table above's"
        if baseline == "first stage"
        else "the table above's p is against the first stage"
    )
    lines = [
        f"nDCG@10 x 100 minus {baseline}'s: the mean of the queries' differences "
        "(± standard error over queries).",
        f"vs {baseline}: better or worse when the difference is more than {NOISE_SE} x its "
        f"standard error, else within noise. p vs {baseline}: the paired t-test against "
        f"{baseline} ({other}).\n",
        f"| pipeline | difference | vs {baseline} | p vs {baseline} | queries |",
        "|---|---:|---|---:|---:|",
    ]
    marks = {r["pipeline"]: fell_back(r) for r in rows}
    for e in against(rows, baseline):
        p = "" if e["p"] is None else f"{e['p']:.3g}"
        said = "; ".join(filter(None, [e["verdict"], marks[e["pipeline"]]]))
        lines.append(f"| {e['pipeline']} | {_cell(e)} | {said} | {p} | {e['queries']} |")
    unsettled = [e for e in against(rows, baseline) if e["queries_to_clear"]]
    if unsettled:
        lines.append("")
    for e in unsettled:
        lines.append(
            f"{e['pipeline']}, within noise: {clear_note(e['diff'], e['queries_to_clear'])}"
        )
    if marks.get(baseline):
        lines.append(
            f"\nthe baseline, {baseline}: {marks[baseline]}: on those queries every "
            "difference is from its fallback, not from it"
        )
    return "\n".join(lines)


def format_summary_against(collections: Sequence[Mapping[str, Any]], baseline: str) -> str:
    """One row per collection: every pipeline's :func:`against` difference (x 100, ± its
    standard error), and the mean difference over the collections (± the standard error of
    that mean: the collections' variances added, over their number squared), with its
    :func:`verdict` in brackets."""
    per = [against(c["rows"], baseline) for c in collections]
    names = [e["pipeline"] for e in per[0]]
    lines = [
        f"nDCG@10 x 100 minus {baseline}'s by collection (± standard error over queries); "
        f"the mean's verdict: better or worse than {baseline} when it is more than "
        f"{NOISE_SE} x its standard error, else within noise:\n",
        "| collection | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for c, entries in zip(collections, per, strict=True):
        cells = [
            _cell(e) + (f" ({e['degraded_queries']} degraded)" if e["degraded_queries"] else "")
            for e in entries
        ]
        lines.append(f"| {c['collection']} | " + " | ".join(cells) + " |")
    means = [
        f"{_cell(e)} ({e['verdict']})" if e["verdict"] else _cell(e)
        for e in mean_against(collections, baseline)
    ]
    lines.append("| mean | " + " | ".join(means) + " |")
    fell = [
        c["collection"]
        for c, entries in zip(collections, per, strict=True)
        if entries and entries[0]["baseline_degraded_queries"]
    ]
    if fell:
        lines.append(
            f"\nthe baseline, {baseline}, degraded on some queries of {', '.join(fell)} (fell "
            "back to an earlier stage): there the differences are from its fallback"
        )
    return "\n".join(lines)


def mean_against(collections: Sequence[Mapping[str, Any]], baseline: str) -> list[dict[str, Any]]:
    """For each pipeline but the baseline: its :func:`against` difference averaged over the
    collections (each counts once: ``diff``) and the standard error of that mean (``se``:
    the collections' variances added, over their number squared; None when a collection's
    is unknown), and its :func:`verdict`."""
    per = [against(c["rows"], baseline) for c in collections]
    out = []
    for i, first in enumerate(per[0]):  # collections are independent: their variances add
        column = [e[i] for e in per]
        known = all(e["se"] is not None for e in column)
        diff = statistics.fmean(e["diff"] for e in column)
        se = math.sqrt(sum(e["se"] ** 2 for e in column)) / len(column) if known else None
        out.append(
            {"pipeline": first["pipeline"], "diff": diff, "se": se, "verdict": verdict(diff, se)}
        )
    return out


def per_query(
    rows: Sequence[Mapping[str, Any]],
    baseline: str | None = None,
    queries: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One entry per query evaluated (in the order of the first row's): ``query_id``, the
    ``query``'s text (from ``queries``; "" where unknown), every pipeline's ``ndcg@10`` and,
    with a ``baseline``, each other pipeline's ``difference`` from the baseline's nDCG@10
    (positive: better than the baseline)."""
    ndcg = {r["pipeline"]: r["per_query_ndcg@10"] for r in rows}
    fell = {r["pipeline"]: r.get("degraded_by_query") or {} for r in rows}
    names = list(ndcg)
    out = []
    for q in ndcg[names[0]]:
        entry: dict[str, Any] = {
            "query_id": q,
            "query": (queries or {}).get(q, ""),
            "ndcg@10": {n: ndcg[n].get(q) for n in names},
            "degraded": [n for n in names if q in fell[n]],
        }
        if baseline is not None:
            base = ndcg[baseline].get(q)
            entry["difference"] = {
                n: None if base is None or ndcg[n].get(q) is None else ndcg[n][q] - base
                for n in names
                if n != baseline
            }
        out.append(entry)
    return out


def largest_differences(
    entries: Sequence[Mapping[str, Any]], pipeline: str, n: int = 5
) -> list[dict[str, Any]]:
    """The (at most) ``n`` queries of :func:`per_query`'s ``entries`` where ``pipeline``
    differs most from the baseline, the largest difference either way first (ties by query
    id); queries where they score the same are left out. Each: ``query_id``, ``query``,
    ``difference``, and both nDCG@10 (``ndcg@10``)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InputError(f"n: expected a number of queries >= 0, got {n!r}")
    changed = [e for e in entries if (e.get("difference") or {}).get(pipeline)]
    changed.sort(key=lambda e: (-abs(e["difference"][pipeline]), e["query_id"]))
    return [
        {
            "query_id": e["query_id"],
            "query": e["query"],
            "difference": e["difference"][pipeline],
            "ndcg@10": dict(e["ndcg@10"]),
        }
        for e in changed[:n]
    ]


def _cut(text: str) -> str:
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= QUERY_CHARS else text[: QUERY_CHARS - 1] + "…"


def format_differences(
    entries: Sequence[Mapping[str, Any]], baseline: str, pipelines: Sequence[str], n: int = 5
) -> str:
    """The queries where each of ``pipelines`` differs most from ``baseline`` (see
    :func:`largest_differences`), as a Markdown table (nDCG@10 x 100); "" when none differs."""
    lines = []
    for name in pipelines:
        for e in largest_differences(entries, name, n):
            row = f"| {name} | {e['query_id']} | {_points(e['difference'])} | {_cut(e['query'])} |"
            lines.append(row)
    if not lines:
        return ""
    head = [
        f"Queries where each differs most from {baseline} (nDCG@10 x 100; every query's in "
        f"{PER_QUERY_FILE} with {said_for('out=FOLDER', '--out')}):\n",
        "| pipeline | query id | difference | query |",
        "|---|---|---:|---|",
    ]
    return "\n".join(head + lines)


def write_per_query(path: str | Path, entries: Sequence[Mapping[str, Any]], baseline: str) -> Path:
    """:func:`per_query`'s ``entries`` as CSV at ``path``: ``query_id``, ``query``, each
    pipeline's nDCG@10 (``ndcg@10 NAME``) and difference from the baseline's (``NAME minus
    BASELINE``), and ``degraded``: the pipelines that fell back on that query (``;`` between
    two); the path."""
    names = list(entries[0]["ndcg@10"]) if entries else []
    others = [n for n in names if n != baseline]
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        header = ["query_id", "query", *(f"ndcg@10 {n}" for n in names)]
        out.writerow(header + [f"{n} minus {baseline}" for n in others] + ["degraded"])
        for e in entries:
            cells = [e["ndcg@10"][n] for n in names] + [e["difference"][n] for n in others]
            shown = ("" if c is None else f"{c:.6g}" for c in cells)
            fell = ";".join(e.get("degraded") or ())
            out.writerow([e["query_id"], e["query"], *shown, fell])
    return path
