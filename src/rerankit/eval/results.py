"""What :func:`rerankit.eval.evaluate` returns: each collection's rows (the metrics of every
pipeline), the comparison with a baseline and the summary over several collections, as the
text ``rerankit eval`` prints, as plain data, and as the files ``--out`` writes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, keyword_flag
from .compare import (
    PER_QUERY_FILE,
    against,
    check_baseline,
    format_against,
    format_differences,
    format_summary_against,
    largest_differences,
    mean_against,
    per_query,
    write_per_query,
)
from .failures import common_rows, failed_lines, interrupted_lines
from .first_stage import depth_label
from .given import CANDIDATES_FILE, IN_MEMORY, refit_first_stage
from .labels import titles_note
from .latency import latency_note
from .notes import all_degraded, degraded_notes, in_sample_note, judgment_cache_note
from .runner import PipelineRun, check_output_folder, format_table, write_outputs
from .summary import format_summary, mean_by_pipeline, write_summary
from .thresholds import THRESHOLDS_FILE, write_thresholds

__all__ = ["CollectionEvaluation", "Evaluation", "collection_folder", "titles_note"]


def collection_folder(out: str | Path, collection: str, several: bool) -> Path:
    """Where a collection's files go: ``out`` itself, or ``out/<collection>`` when an
    evaluation has several."""
    return Path(out) / collection if several else Path(out)


@dataclass
class CollectionEvaluation:
    """One collection's evaluation: ``rows`` (one per pipeline, the first stage first: every
    metric as a fraction, the p-values, latency, LLM usage and each query's nDCG@10),
    ``meta`` (what ran: dataset, split, first stage, depth, pipelines, the data's notes:
    what ``results.json`` records beside the rows), ``runs`` (each pipeline's ranking and
    scores), ``candidates`` (the depth asked for) and ``written`` (the files written)."""

    collection: str
    meta: dict[str, Any]
    rows: list[dict[str, Any]]
    runs: list[PipelineRun] = field(repr=False)
    candidates: int = 100
    written: list[Path] = field(default_factory=list)
    #: the data folder (None for a Dataset built in Python) and the first stage as given,
    #: for the command that refits its probabilities on the same candidates
    folder: Path | None = None
    first_stage_given: str = "auto"
    #: the queries' texts by id (for :meth:`per_query`)
    queries: dict[str, str] = field(default_factory=dict, repr=False)
    #: each query's candidates as the rerankers read them (for :meth:`query_candidates`)
    shown: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)
    #: pipeline -> the precision and recall of keeping its candidates scoring >= each
    #: threshold (0.05 to 0.95; see :func:`~rerankit.eval.thresholds.threshold_rows`), for
    #: pipelines whose scores are probabilities or unit scores
    thresholds: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)

    @property
    def baseline(self) -> str | None:
        """The run every pipeline is compared with, when one was named."""
        return self.meta.get("baseline")

    @property
    def against(self) -> list[dict[str, Any]] | None:
        """Each pipeline's paired difference in nDCG@10 from the baseline's (``diff``, its
        standard error ``se``, the t-test's ``p``, ``queries``); None without a baseline."""
        return None if not self._baseline_measured() else against(self.rows, self.baseline)

    @property
    def failed(self) -> list[dict[str, Any]]:
        """The pipelines that raised while reranking here (see
        :meth:`~rerankit.eval.failures.PipelineFailed.record`): they have no row."""
        return list(self.meta.get("failed") or [])

    @property
    def interrupted(self) -> dict[str, Any] | None:
        """When Ctrl-C stopped the evaluation here: the ``pipeline`` it stopped, on which
        ``query_id``, its ``reranked_queries`` and the pipelines ``not_started`` (none of
        them has a row); None when every pipeline ran."""
        return self.meta.get("interrupted")

    @property
    def degraded(self) -> dict[str, list[str]]:
        """Each pipeline with degraded queries (a scorer or stage failed and it fell back
        there: its row measures the fallback on them) -> their ids, in the order reranked;
        empty when none degraded. ``results.json``'s ``degraded_by_query`` says why."""
        return {
            r["pipeline"]: list(r.get("degraded_by_query") or {})
            for r in self.rows
            if r.get("degraded_queries")
        }

    def _baseline_measured(self) -> bool:
        """Whether a baseline was named and has a row here (it did not fail)."""
        return self.baseline is not None and any(r["pipeline"] == self.baseline for r in self.rows)

    def _baseline(self, baseline: str | None) -> str:
        if baseline is None and self.baseline is None:
            raise InputError("baseline: name one of the evaluated pipelines (none was given)")
        names = [r["pipeline"] for r in self.rows]
        return check_baseline(self.baseline if baseline is None else baseline, names)

    def per_query(self, baseline: str | None = None) -> list[dict[str, Any]]:
        """One entry per query: ``query_id``, ``query`` (its text), every pipeline's
        ``ndcg@10`` and, against ``baseline`` (by default the evaluation's; without either,
        left out), each other pipeline's ``difference`` from it (positive: better)."""
        if baseline is not None or self.baseline is not None:
            baseline = self._baseline(baseline)
        return per_query(self.rows, baseline, self.queries)

    def differences(self, baseline: str | None = None, n: int = 5) -> dict[str, list[dict]]:
        """For each pipeline but ``baseline`` (by default the evaluation's): the ``n``
        queries where it differs most from the baseline in nDCG@10, largest first, either
        way (each ``query_id``, ``query``, ``difference``, ``ndcg@10``); queries that score
        the same are left out."""
        baseline = self._baseline(baseline)
        entries = per_query(self.rows, baseline, self.queries)
        names = [r["pipeline"] for r in self.rows if r["pipeline"] != baseline]
        return {name: largest_differences(entries, name, n) for name in names}

    def query_candidates(self, query_id: str) -> dict[str, Any]:
        """One query as the rerankers got it: ``query_id``, ``query`` (its text) and
        ``candidates`` (the first stage's, best first: ``id``, ``text``, ``title`` where
        there is one, ``first_stage_score`` unless the evaluation hid the scores), to rank
        again with ``rerankit.rerank`` or paste into the playground."""
        if str(query_id) not in self.shown:
            some = ", ".join(repr(q) for q in list(self.shown)[:5])
            raise InputError(
                f"query_id: {str(query_id)!r} is not among the {len(self.shown)} queries "
                f"evaluated ({some}{', ...' if len(self.shown) > 5 else ''})"
            )
        q = str(query_id)
        return {"query_id": q, "query": self.queries.get(q, ""), "candidates": self.shown[q]}

    def header(self) -> str:
        """The line above the table: collection, split, queries, first stage and depth."""
        m = self.meta
        empty = m["queries_without_candidates"]
        layouts = [m["titles"]] if isinstance(m["titles"], str) else list(m["titles"])
        return (
            f"{m['dataset']}, {m['split']} split, {m['queries']} queries"
            + (f", {empty} with no candidates (they score 0)" if empty else "")
            + f"; first stage: {m['first_stage']}, {depth_label(m['k'], self.candidates)}"
            + (
                ""
                if m["first_stage_scores_given"]
                else "; rerankers see texts only (no first-stage scores)"
            )
            + titles_note(layouts)
        )

    def latency_note(self) -> str | None:
        """What the latency columns cannot show by themselves (None: nothing): a run whose
        time included encoding documents that runs after it read from the embedding cache,
        and a mean above p95 (see :mod:`~rerankit.eval.latency`)."""
        return latency_note(self.rows)

    def degraded_notes(self) -> list[str]:
        """A line for each pipeline with degraded queries (a scorer or stage failed and it
        fell back): how many, the first cause, and that its row measures the fallback
        (see :mod:`~rerankit.eval.notes`)."""
        return degraded_notes(self.rows)

    def all_degraded(self) -> list[str]:
        """The pipelines whose every query was degraded: their rows measure only the
        fallback (``rerankit eval`` exits 1 when there are any)."""
        return all_degraded(self.rows)

    def judgment_cache_note(self) -> str | None:
        """Which pipelines read LLM judgments from the judgment cache, so that their
        latency, LLM calls and tokens count only what this run paid (None: none did)."""
        return judgment_cache_note(self.rows)

    def candidates_note(self) -> str | None:
        """Which queries the first stage found no candidate for (by id), and how many got
        fewer candidates than the depth evaluated (None: every query got that many)."""
        m = self.meta
        empty, fewer, k = m.get("without_candidates") or [], m.get("fewer_candidates", 0), m["k"]
        said = []
        if empty:
            shown = ", ".join(empty[:20]) + (
                f" and {len(empty) - 20} more" if len(empty) > 20 else ""
            )
            said.append(f"no candidates for {shown} (each scores 0 in every metric)")
            if not str(m["first_stage"]).startswith("BM25"):  # your run lacks those queries
                said[-1] += (
                    f": {m['first_stage']} ranks none of them; to measure only the queries "
                    f"it ranks, give {keyword_flag('data')} a folder whose queries.jsonl "
                    "holds just the queries it ranks (the corpus and qrels can stay)"
                )
        if fewer:
            said.append(
                f"{fewer} of {m['queries']} queries got fewer than {k} candidates (the first "
                f"stage found fewer), so the pairs scored are fewer than {m['queries']} x {k}"
            )
        return "; ".join(said) or None

    def notes(self) -> dict[str, Any]:
        """The notes under the table, as ``results.json`` keeps them beside the rows."""
        fitted = self.meta.get("fitted_on") or {}
        return {
            "in_sample_note": in_sample_note(fitted, self.meta["dataset"], self.meta["split"]),
            "candidates_note": self.candidates_note(),
            "latency_note": self.latency_note(),
            "judgment_cache_note": self.judgment_cache_note(),
            "degraded_note": self.degraded_notes(),
        }

    def table(self) -> str:
        """The heading, the Markdown table (with :meth:`latency_note`,
        :meth:`judgment_cache_note` and :meth:`degraded_notes` under it) and the comparison
        with the baseline, as ``rerankit eval`` prints them."""
        refit = {
            "data": self.folder,
            "first_stage": self.first_stage_given,
            "first_stage_note": None,
            "candidates": self.candidates,
            "max_queries": self.meta.get("max_queries"),
            "split": self.meta.get("split"),
            # a tune --calibrate refit is not told to refit again (see calibration_note)
            "refitted": [
                n for n, f in (self.meta.get("fitted_on") or {}).items() if f["calibrated"]
            ],
        }
        if self.first_stage_given == IN_MEMORY:  # named by a placeholder (see refit_call)
            refit["first_stage_note"] = refit_first_stage(self.written)
        table = format_table(self.rows, self.meta["k"], refit, self.meta.get("metrics") or ())
        text = f"{self.header()}\n\n{table}"
        notes = self.notes()
        for line in [
            *failed_lines(self.failed),
            *interrupted_lines(self.interrupted),
            notes["in_sample_note"],
            notes["candidates_note"],
            notes["latency_note"],
            notes["judgment_cache_note"],
            *notes["degraded_note"],
        ]:
            if line:
                text += f"\n{line}"
        if self.baseline is not None and not self._baseline_measured():
            text += f"\n\nno comparison with {self.baseline}: it failed (see above)"
        elif self.baseline is not None:
            text += "\n\n" + format_against(self.rows, self.baseline)
            names = [e["pipeline"] for e in against(self.rows, self.baseline)]
            most = format_differences(self.per_query(), self.baseline, names)
            if most:
                text += "\n\n" + most
        return text

    def __str__(self) -> str:
        return self.table()

    def entry(self) -> dict[str, Any]:
        """The collection as the summary over several reads it (label, meta and rows)."""
        return {"collection": self.collection, **self.meta, "rows": self.rows}

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready): the collection's label, its ``meta``, the rows under
        ``results`` (as ``results.json`` holds them) and ``against_baseline``."""
        return {
            "collection": self.collection,
            **self.meta,
            "results": self.rows,
            "against_baseline": self.against,
            **self.notes(),
            "thresholds": self.thresholds,
        }

    def write(self, folder: str | Path) -> list[Path]:
        """``results.json``, a TREC run per pipeline under ``runs/``, ``ndcg.png`` and, for
        calibrated pipelines, ``reliability.svg`` in ``folder`` (the chart needs the
        ``eval`` extra), ``candidates.jsonl`` (:meth:`query_candidates` for every query),
        ``thresholds.csv`` (:attr:`thresholds`, when some pipeline has them) and,
        with a baseline, ``per_query.csv`` (:meth:`per_query`: each
        query's nDCG@10 per pipeline and difference from the baseline's); the paths
        written."""
        meta = {**self.meta, **self.notes(), "against_baseline": self.against}
        written = write_outputs(folder, self.rows, self.runs, meta)
        lines = [
            json.dumps(self.query_candidates(q), ensure_ascii=False) + "\n" for q in self.shown
        ]
        (Path(folder) / CANDIDATES_FILE).write_text("".join(lines), encoding="utf-8")
        written.append(Path(folder) / CANDIDATES_FILE)
        if self.thresholds:
            written.append(write_thresholds(Path(folder) / THRESHOLDS_FILE, self.thresholds))
        if self._baseline_measured():
            written.append(
                write_per_query(Path(folder) / PER_QUERY_FILE, self.per_query(), self.baseline)
            )
        return written


@dataclass
class Evaluation:
    """What :func:`rerankit.eval.evaluate` found: a :class:`CollectionEvaluation` per
    collection, in order, and the ``baseline`` they are compared with (None when none was
    named). ``str(evaluation)`` is the text ``rerankit eval`` prints."""

    collections: list[CollectionEvaluation]
    baseline: str | None = None
    #: ``summary.json``, when the evaluation wrote one (several collections and ``out``)
    summary_file: Path | None = None
    #: when Ctrl-C stopped it (see :class:`~rerankit.eval.failures.EvaluationInterrupted`):
    #: the ``collection`` it stopped in, with :attr:`CollectionEvaluation.interrupted`'s
    #: fields (``pipeline`` None: before any ran there) and ``collections_not_started``;
    #: None when it ran to its end
    interrupted: dict[str, Any] | None = None

    @property
    def several(self) -> bool:
        """Whether more than one collection was evaluated (then a summary follows them)."""
        return len(self.collections) > 1

    def _one(self) -> CollectionEvaluation:
        if self.several:
            labels = ", ".join(c.collection for c in self.collections)
            raise InputError(
                f"this evaluation has {len(self.collections)} collections ({labels}): read "
                "each one's from .collections"
            )
        return self.collections[0]

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The rows of the one collection evaluated (see :class:`CollectionEvaluation`;
        with several, read each from :attr:`collections`)."""
        return self._one().rows

    @property
    def against(self) -> list[dict[str, Any]] | None:
        """The one collection's comparison with the baseline (None without a baseline);
        over several, :meth:`mean_against` has the mean difference."""
        return self._one().against

    def per_query(self, baseline: str | None = None) -> list[dict[str, Any]]:
        """The one collection's :meth:`CollectionEvaluation.per_query`."""
        return self._one().per_query(baseline)

    def differences(self, baseline: str | None = None, n: int = 5) -> dict[str, list[dict]]:
        """The one collection's :meth:`CollectionEvaluation.differences`: per pipeline, the
        ``n`` queries where it differs most from the baseline."""
        return self._one().differences(baseline, n)

    @property
    def thresholds(self) -> dict[str, list[dict[str, Any]]]:
        """The one collection's :attr:`CollectionEvaluation.thresholds`: per pipeline with
        probability or unit scores, the precision and recall of each cut."""
        return self._one().thresholds

    def query_candidates(self, query_id: str) -> dict[str, Any]:
        """The one collection's :meth:`CollectionEvaluation.query_candidates`."""
        return self._one().query_candidates(query_id)

    @property
    def degraded(self) -> dict[str, list[str]]:
        """The one collection's :attr:`CollectionEvaluation.degraded`: each pipeline with
        degraded queries -> their ids (empty when none degraded; with several collections,
        read each one's from :attr:`collections`)."""
        return self._one().degraded

    @property
    def failed(self) -> list[dict[str, Any]]:
        """Every pipeline that raised while reranking, on which collection (``collection``
        beside :attr:`CollectionEvaluation.failed`'s fields); empty when none did."""
        return [{"collection": c.collection, **f} for c in self.collections for f in c.failed]

    def _compared(self) -> list[dict[str, Any]] | None:
        """The collections' entries with the pipelines measured on every one, for the
        comparison with the baseline; None when there is none, or it failed somewhere."""
        entries = common_rows([c.entry() for c in self.collections])
        names = [r["pipeline"] for r in entries[0]["rows"]]
        return None if self.baseline is None or self.baseline not in names else entries

    def mean_ndcg(self) -> dict[str, float]:
        """Each pipeline's nDCG@10 averaged over the collections (each counts once; one
        that failed on some collection is left out)."""
        return mean_by_pipeline([c.entry() for c in self.collections])

    def mean_against(self) -> list[dict[str, Any]] | None:
        """Each pipeline's difference in nDCG@10 from the baseline's, averaged over the
        collections, with the standard error of that mean; None without a baseline."""
        entries = self._compared()
        return None if entries is None else mean_against(entries, self.baseline)

    def summary(self) -> str:
        """The summary over several collections as printed (nDCG@10 by collection and the
        mean, then the differences from the baseline); empty for one collection."""
        if not self.several:
            return ""
        entries = [c.entry() for c in self.collections]
        text = format_summary(entries)
        compared = self._compared()
        if compared is not None:
            text += "\n\n" + format_summary_against(compared, self.baseline)
        elif self.baseline is not None:
            text += f"\n\nno comparison with {self.baseline}: it failed on some collection"
        return text

    def table(self) -> str:
        """Everything ``rerankit eval`` prints: each collection's
        :meth:`~CollectionEvaluation.table`, then, over several, the :meth:`summary`."""
        parts = [c.table() for c in self.collections]
        return "\n\n".join([*parts, self.summary()] if self.several else parts)

    def __str__(self) -> str:
        return self.table()

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready): each collection's :meth:`~CollectionEvaluation.to_dict`,
        the baseline, the mean nDCG@10 of every pipeline over the collections and the mean
        difference from the baseline."""
        return {
            "baseline": self.baseline,
            "failed": self.failed,
            "interrupted": self.interrupted,
            "collections": [c.to_dict() for c in self.collections],
            "mean_ndcg@10": self.mean_ndcg(),
            "mean_against_baseline": self.mean_against(),
        }

    def write(self, out: str | Path) -> list[Path]:
        """The files ``rerankit eval --out`` writes, in ``out``: each collection's (see
        :meth:`CollectionEvaluation.write`; in a folder of its own when there are several)
        and, over several, ``summary.json``; the paths written."""
        check_output_folder(out)
        written = []
        for c in self.collections:
            written += c.write(collection_folder(out, c.collection, self.several))
        if self.several:
            written.append(write_summary(out, [c.entry() for c in self.collections]))
        return written
