"""Running rerankers over a dataset's candidates and scoring the runs.

Metrics (:mod:`rerankit.eval.metrics`, trec_eval's conventions): nDCG@10, MRR@10, Recall@10
and Recall@k, relevance >= 1 counting as relevant, averaged over every judged query (one
with no relevant document scores 0), and a paired Student's t-test of each pipeline against
the first stage. Pipelines whose scores are calibrated probabilities also get their
expected calibration error over every (query, candidate) pair (relevant: judged >= 1;
unjudged pairs count as not relevant) and a reliability diagram.
"""

from __future__ import annotations

import re
import statistics
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from .._jsonl import dumps_strict
from .._optional import require
from ..cache import embedding_lookups
from ..calibration import reliability_svg
from ..errors import InputError, failure_cause
from ..scorers.local import load_models
from .data import Dataset
from .failures import PipelineFailed, PipelineInterrupted
from .first_stage import candidate_documents
from .first_stage import first_stage as _moved_first_stage
from .metrics import metric_value, paired_t_test
from .notes import calibration_note, dropped_candidates, kept_only_note, top_bins_note
from .refit_check import run_calibration

__all__ = [
    "PipelineRun",
    "evaluate_runs",
    "first_stage_run",
    "format_table",
    "run_file_stem",
    "run_pipeline",
    "write_outputs",
]

FIRST_STAGE = "first stage"


@dataclass
class PipelineRun:
    """One pipeline's ranking of every query, its latencies and its provider usage."""

    name: str
    run: dict[str, dict[str, float]]
    latencies: list[float] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    #: seconds spent loading the pipeline's local models before the first query (untimed
    #: by ``latencies``, which measure reranking with the models in memory)
    load_seconds: float = 0.0
    degraded_queries: int = 0
    #: the first degraded query's first warning (why it fell back); None: none degraded
    degraded_cause: str | None = None
    #: each degraded query's id -> why it fell back, in the order reranked
    degraded_causes: dict[str, str] = field(default_factory=dict)
    #: the rerankers' own scores per query and document, and the scales they came in
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    score_scales: set[str] = field(default_factory=set)
    #: a cascade's seconds per stage (:attr:`~rerankit.RerankResult.timings`), each query's
    stage_seconds: dict[str, list[float]] = field(default_factory=dict)
    #: the embedding cache's lookups while it ran (:func:`~rerankit.cache.embedding_lookups`:
    #: ``misses`` encoded, ``reused`` there before it ran); None: not counted here
    embedding_cache: dict[str, int] | None = None

    @property
    def calibrated(self) -> bool:
        """Whether every query's scores were probabilities (see ``score_scale``) of its
        own: not when every query degraded (they are the fallback's)."""
        return self.score_scales == {"probability"} and not self.all_degraded

    @property
    def all_degraded(self) -> bool:
        """Whether every query it reranked degraded (its scores are all the fallback's)."""
        return bool(self.degraded_queries) and self.degraded_queries == len(self.latencies)

    def record(
        self,
        qid: str,
        ranked: Sequence[tuple[Any, float]],
        *,
        seconds: float,
        scale: str,
        degraded: bool,
        usage: Mapping[str, int],
        cause: str | None = None,
        timings: Mapping[str, float] | None = None,
    ) -> None:
        """One query's reranked (id, score) pairs, best first, and what the rerank cost
        (``cause``: why a degraded one fell back; ``timings``: a cascade's seconds per stage)."""
        self.latencies.append(seconds)
        for stage, spent in (timings or {}).items():
            self.stage_seconds.setdefault(stage, []).append(spent)
        self.run[qid] = {d: float(len(ranked) - i) for i, (d, _) in enumerate(ranked)}
        self.scores[qid] = dict(ranked)
        self.score_scales.add(scale)
        self.degraded_queries += bool(degraded)
        if degraded:
            self.degraded_causes[qid] = cause or "no warning given"
            self.degraded_cause = self.degraded_cause or self.degraded_causes[qid]
        for key, value in usage.items():
            self.usage[key] = self.usage.get(key, 0) + value

    def load_note(self) -> str | None:
        """What to say of the models' load time (None when it was too short to mention)."""
        if self.load_seconds < 0.05:
            return None
        return (
            f"{self.name}: models loaded in {self.load_seconds:.1f} s (before the first "
            "query: not in its latency)"
        )

    @property
    def mean_latency(self) -> float:
        return statistics.fmean(self.latencies) if self.latencies else 0.0

    @property
    def p95_latency(self) -> float:
        if len(self.latencies) < 2:
            return self.mean_latency
        return statistics.quantiles(self.latencies, n=20, method="inclusive")[-1]


def _as_run(ranked: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """Ranked lists as run scores (``n - position``: the order is what counts)."""
    return {q: {d: float(len(ids) - i) for i, d in enumerate(ids)} for q, ids in ranked.items()}


def first_stage_run(cands: Mapping[str, Sequence[tuple[str, float]]]) -> PipelineRun:
    """The first stage's own ranking of ``cands`` (from
    :func:`~rerankit.eval.first_stage.first_stage`) as a run, with its scores: the first
    run :func:`evaluate_runs` is given, which the others are tested against."""
    run = PipelineRun(FIRST_STAGE, _as_run({q: [d for d, _ in c] for q, c in cands.items()}))
    run.scores = {q: {d: float(s) for d, s in c} for q, c in cands.items()}
    return run


def describe_pipeline(reranker: Any, scales: Iterable[str] = ()) -> dict[str, Any]:
    """What a reranker is, for the record: its class, score scale (that of the scores it
    gave, ``scales``, when given: ``relative`` when they differ) and scorers (with the
    model and backend of local models)."""
    seen = set(scales) or {reranker.score_scale}  # (a hybrid fusing a first stage: relative)
    scorers = []
    for s in reranker.scorers():
        entry: dict[str, Any] = {"name": s.name, "type": type(s).__name__}
        if getattr(s, "model_id", None):
            entry["model"] = s.model_id
        if hasattr(s, "backend"):
            entry["backend"] = s.backend + (f"-{s.quantize}" if s.quantize else "")
        scorers.append(entry)
    return {
        "type": type(reranker).__name__,
        "score_scale": seen.pop() if len(seen) == 1 else "relative",
        "scorers": scorers,
    }


def run_pipeline(
    name: str,
    reranker: Any,
    data: Dataset,
    cands: Mapping[str, Sequence[tuple[str, float]]],
    *,
    progress: Callable[[Any], Any] | None = None,
    first_stage_scores: bool = True,
    failed_as: bool = False,
    note: Callable[[str], None] | None = None,
) -> PipelineRun:
    """Rerank every query's candidates with ``reranker``; ``progress`` wraps the query
    iterator (e.g. ``tqdm``) when given; ``note`` is told how long the models took to load
    (:meth:`PipelineRun.load_note`), before the first query; ``first_stage_scores=False``
    gives the reranker texts only; ``failed_as=True`` raises an error of ``rerank`` as a
    :class:`~rerankit.eval.failures.PipelineFailed` naming the query, and Ctrl-C as a
    :class:`~rerankit.eval.failures.PipelineInterrupted` (a ``KeyboardInterrupt``) naming
    the query it stopped and how many were done."""
    queries = list(cands.items())
    result = PipelineRun(name, {}, load_seconds=load_models(reranker))
    if note is not None and result.load_note():
        note(result.load_note())
    iterator = progress(queries) if progress else queries
    qid = None  # the query being reranked, for the record of a Ctrl-C
    try:
        with embedding_lookups() as result.embedding_cache:
            for qid, ranked in iterator:
                _rerank_one(result, reranker, data, qid, ranked, first_stage_scores, failed_as)
            qid = None
    except KeyboardInterrupt as exc:
        if not failed_as or isinstance(exc, PipelineInterrupted):
            raise
        raise PipelineInterrupted(name, qid, len(result.latencies)) from exc
    return result


def _rerank_one(
    result: PipelineRun,
    reranker: Any,
    data: Dataset,
    qid: str,
    ranked: Sequence[tuple[str, float]],
    first_stage_scores: bool,
    failed_as: bool,
) -> None:
    """One query of :func:`run_pipeline`, recorded in ``result``."""
    if not ranked:
        result.run[qid] = {}
        return
    start = time.perf_counter()
    docs = candidate_documents(data, ranked, with_scores=first_stage_scores)
    try:
        out = reranker.rerank(data.queries[qid], docs)
    except Exception as exc:  # not KeyboardInterrupt
        if not failed_as:
            raise
        raise PipelineFailed(result.name, qid, exc, len(result.latencies)) from exc
    result.record(
        qid,
        [(r.id, r.score) for r in out],
        seconds=time.perf_counter() - start,
        scale=out.score_scale,
        degraded=out.degraded,
        usage=out.usage,
        cause=failure_cause(out.warnings),
        timings=out.timings,
    )
    return result


def metric_names(k: int, extra: Sequence[str] = ()) -> list[str]:
    """The metrics reported: nDCG@10, MRR@10, recall@10 and recall at the depth reranked,
    then those of ``extra`` (:func:`~rerankit.eval.metrics.parse_metrics`' names) not there."""
    usual = ["ndcg@10", "mrr@10", "recall@10"] + ([f"recall@{k}"] if k != 10 else [])
    return usual + [m for m in extra if m not in usual]


def per_query_metrics(
    data: Dataset, run: PipelineRun, k: int, extra: Sequence[str] = ()
) -> dict[str, dict[str, float]]:
    """Each metric of :func:`metric_names` for every judged query of ``data``, by query id in
    its qrels' order (a query the run does not rank scores 0)."""
    out: dict[str, dict[str, float]] = {m: {} for m in metric_names(k, extra)}
    for qid, judged in data.qrels.items():
        if qid not in data.queries:
            continue
        scores = run.run.get(qid, {})
        ranking = sorted(scores, key=lambda d: -scores[d])
        for metric, values in out.items():
            values[qid] = metric_value(metric, ranking, judged)
    return out


def evaluate_runs(
    data: Dataset, runs: Sequence[PipelineRun], k: int, metrics: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """One row per run: the metrics, latency, usage, the p-value of a paired t-test of
    its nDCG@10 against the first run (the first stage; ``p_vs`` has it against every
    other run by name; None where the test is undefined: one query, or the same nDCG@10
    on each), each query's nDCG@10, and for calibrated runs the expected calibration
    error (``ece``) and reliability bins (``calibration``); ``dropped_candidates``: see
    :func:`~rerankit.eval.notes.dropped_candidates` (of the first run's candidates)."""
    metrics = metric_names(k, metrics)
    scored = [per_query_metrics(data, r, k, metrics) for r in runs]
    ndcg = [list(s["ndcg@10"].values()) for s in scored]
    # the per-query output: the queries with a relevant document (those nDCG can reward)
    relevant = [q for q in scored[0]["ndcg@10"] if any(g > 0 for g in data.qrels[q].values())]
    rows = []
    for i, r in enumerate(runs):
        p_vs = {
            other.name: paired_t_test(ndcg[i], ndcg[j]) for j, other in enumerate(runs) if j != i
        }
        rows.append(
            {
                "pipeline": r.name,
                **{
                    m: float(np.mean(list(scored[i][m].values()))) if scored[i][m] else 0.0
                    for m in metrics
                },
                "p_vs_first_stage": None if i == 0 else p_vs[runs[0].name],
                "p_vs": p_vs,
                "mean_ms": 1e3 * r.mean_latency,
                "p95_ms": 1e3 * r.p95_latency,
                "max_ms": 1e3 * max(r.latencies) if r.latencies else None,
                # a cascade's mean per stage, over the queries that ran it (None: no stages)
                "stage_mean_ms": {s: 1e3 * statistics.fmean(t) for s, t in r.stage_seconds.items()}
                or None,
                "embedding_cache": r.embedding_cache,
                "load_s": r.load_seconds,
                "llm_calls": r.usage.get("calls", 0),
                "tokens": r.usage.get("input_tokens", 0) + r.usage.get("output_tokens", 0),
                "input_tokens": r.usage.get("input_tokens", 0),
                "output_tokens": r.usage.get("output_tokens", 0),
                "llm_cache_hits": r.usage.get("cache_hits", 0),
                "reranked_queries": len(r.latencies),
                "degraded_queries": r.degraded_queries,
                "degraded_cause": r.degraded_cause,
                "degraded_by_query": dict(r.degraded_causes),
                "ece": None,
                "dropped_candidates": i and dropped_candidates(runs[0].scores, r.scores),
                "per_query_ndcg@10": {q: scored[i]["ndcg@10"][q] for q in relevant},
            }
        )
        calibration = run_calibration(data.qrels, r.scores) if r.calibrated else None
        if calibration is not None:
            rows[-1]["ece"] = calibration["ece"]
            rows[-1]["calibration"] = calibration
    return rows


def format_table(
    rows: Sequence[Mapping[str, Any]],
    k: int,
    refit: Mapping[str, Any] | None = None,
    metrics: Sequence[str] = (),
) -> str:
    """The rows as a Markdown table, with the ``metrics`` asked beside the usual ones (and
    the ECE column's note: ``refit``, the data folder, first stage and candidates its refit
    advice names, see :func:`~rerankit.eval.notes.refit_call`)."""
    metrics = metric_names(k, metrics)
    head = [
        "pipeline",
        *metrics,
        "p (nDCG@10 vs first stage)",
        "mean ms",
        "p95 ms",
        "LLM calls",
        "tokens",
    ]
    with_ece = any(r.get("ece") is not None for r in rows)
    if with_ece:
        head.append("ECE")
    degraded = any(r.get("degraded_queries") for r in rows)
    if degraded:  # its figures there are the fallback's (see degraded_notes)
        head.append("degraded queries")
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in rows:
        p = "" if r["p_vs_first_stage"] is None else f"{r['p_vs_first_stage']:.3g}"
        timed = r.get("max_ms") is not None  # the first stage's ranking is read, not timed
        cells = [
            r["pipeline"],
            *(f"{100 * r[m]:.2f}" for m in metrics),
            p,
            f"{r['mean_ms']:.1f}" if timed else "-",
            f"{r['p95_ms']:.1f}" if timed else "-",
            str(r["llm_calls"]),
            str(r["tokens"]),
        ]
        if with_ece:
            cells.append("" if r.get("ece") is None else f"{r['ece']:.4f}")
        if degraded:
            n = r.get("degraded_queries") or 0
            cells.append(f"{n} of {r.get('reranked_queries') or n}" if n else "")
        lines.append("| " + " | ".join(cells) + " |")
    if with_ece:
        lines.append(calibration_note(rows, refit))
        top = top_bins_note(rows)
        if top:
            lines.append(top)
    lines += [n for n in [kept_only_note(rows)] if n]  # candidates dropped: ECE of what's kept
    return "\n".join(lines)


def check_output_folder(out: str | Path) -> Path:
    """``out`` as a Path, or an error when it names a file rather than a folder."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: is a file; give a folder to write the results in")
    return out


def run_file_stem(name: str) -> str:
    """The file name (without ``.trec``) of a pipeline's run under ``runs/``: its name with
    every run of characters other than letters, digits, ``-``, ``+`` and ``.`` made one
    ``_``, and no leading or trailing ``.`` or ``_`` (``./my-model`` is ``my-model``, never a
    hidden file; ``first stage`` is ``first_stage``)."""
    return re.sub(r"[^\w.+-]+", "_", name).strip("._") or "run"


def write_outputs(
    out: str | Path,
    rows: Sequence[Mapping[str, Any]],
    runs: Sequence[PipelineRun],
    meta: Mapping[str, Any],
) -> list[Path]:
    """``results.json`` (what ran: rerankit version, date, dataset, split, pipelines; every
    metric, and each query's nDCG@10), one TREC run per pipeline under ``runs/`` (with the
    pipelines' own scores), ``ndcg.png``, and ``reliability.svg`` when some pipeline's scores
    are calibrated probabilities."""

    out = check_output_folder(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    written = [out / "results.json"]
    header = {
        "rerankit_version": __version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **meta,
    }
    written[0].write_text(dumps_strict({**header, "results": list(rows)}, indent=2) + "\n")
    for r in runs:
        path = out / "runs" / (run_file_stem(r.name) + ".trec")
        tag = r.name.replace(" ", "_")
        with path.open("w", encoding="utf-8") as f:
            for qid, positions in r.run.items():
                scores = r.scores.get(qid) or positions  # the pipeline's own scores
                ranked = sorted(positions, key=lambda d: -positions[d])
                for rank, doc in enumerate(ranked, start=1):
                    f.write(f"{qid} Q0 {doc} {rank} {scores.get(doc, 0.0):.6g} {tag}\n")
        written.append(path)
    plt = require("matplotlib.pyplot", "the eval chart")
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(rows)), 3.2))
    bars = ax.bar(
        [r["pipeline"] for r in rows], [100 * r["ndcg@10"] for r in rows], color="#4c72b0"
    )
    ax.bar_label(bars, fmt="%.2f", fontsize=8)
    ax.set_ylabel("nDCG@10 x 100")
    ax.set_title(f"{meta.get('dataset', '')} ({meta.get('split', '')}): nDCG@10")
    ax.tick_params(axis="x", labelrotation=20)
    fig.tight_layout()
    fig.savefig(out / "ndcg.png", dpi=120)
    plt.close(fig)
    written.append(out / "ndcg.png")
    curves = {r["pipeline"]: r["calibration"]["bins"] for r in rows if r.get("calibration")}
    if curves:
        path = out / "reliability.svg"
        title = f"{meta.get('dataset', '')}: calibration of P(relevant)"
        path.write_text(reliability_svg(curves, title), encoding="utf-8")
        written.append(path)
    return written


def __getattr__(name: str) -> Any:
    if name == "first_stage":  # its 0.1.0 home, kept working
        warnings.warn(
            "rerankit.eval.runner.first_stage is now rerankit.eval.first_stage.first_stage: "
            "import from there",
            DeprecationWarning,
            stacklevel=2,
        )
        return _moved_first_stage
    raise AttributeError(f"module 'rerankit.eval.runner' has no attribute {name!r}")
