"""Relevance labels from an LLM judge, for queries nobody judged by hand.

:func:`label` judges each query's first-stage top ``k`` with a pointwise or listwise LLM
scorer and writes a BEIR folder the learning commands read unchanged (``qrels/<split>.tsv``,
``queries.jsonl``, the corpus), with a report of what it cost. Grades:

* pointwise (0-10): below 4 -> 0, 4-6 -> 1, 7-8 -> 2, 9-10 -> 3;
* listwise (an order): by position, the first ``positions[0]`` -> 2, up to
  ``positions[1]`` -> 1, the rest -> 0.

A judgment that failed or could not be read is counted and left out, never written as 0.
The judge's cache makes a second run free for what the first judged, so a stopped run
resumes where it stopped; the output is rewritten atomically after every query. A run into
a folder that holds labels keeps those of every query it does not label again (one it
stopped before, or whose judgments all failed this time): paid-for labels are never dropped.
The report keeps what every run into the folder spent (``total_calls``, ``total_cost_usd``,
...), and ``max_calls`` and ``budget`` cover those totals, not one run.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._words import counted
from ..eval.data import Dataset
from ..rerankers.base import run_sync
from ..types import Document
from .label_candidates import (
    LABEL_REPORT,
    candidates_digest,
    first_stage_mismatch,
    read_label_report,
    stage_name,
)
from .label_costs import (
    PRICES,
    Spent,
    as_left_out,
    check_budget,
    cost_of,
    estimate,
    judge_kind,
    no_negatives,
    read_prices,
    spent_before,
)
from .label_files import link_corpus, write_labels, written_labels
from .label_inputs import Queries, judge_from, label_inputs, read_queries, with_queries

__all__ = [
    "LABEL_REPORT",
    "PRICES",
    "LabelReport",
    "candidates_digest",
    "check_budget",
    "estimate",
    "first_stage_mismatch",
    "grade_pointwise",
    "judge_from",
    "label",
    "no_negatives",
    "read_label_report",
    "read_prices",
    "read_queries",
    "spent_on",
    "with_queries",
]

logger = logging.getLogger(__name__)


#: flags that mean a document's judgment is unusable
UNUSABLE = ("llm_failed", "llm_unreadable", "empty_content")


MAX_REASONS = 5  # failure reasons a report keeps
#: queries in a row whose every judgment failed, after which :func:`label` stops (a judge
#: that is down, or answers nothing readable, would otherwise be asked about every query)
GIVE_UP = 3
#: the start of a warning that names its document (and its id): the same reason for another
_REASON = re.compile(r"^(document|window) [\d-]+( \(id .*?\))?: ")


def grade_pointwise(score: float) -> int:
    """A 0-10 judgment as a graded label (0-3)."""
    return 0 if score < 4 else 1 if score < 7 else 2 if score < 9 else 3


@dataclass
class LabelReport:
    """What a labelling run did and cost."""

    judge: str
    model: str
    queries: int
    labelled_queries: int = 0
    labels: int = 0
    failed: int = 0
    grades: dict[int, int] = field(default_factory=dict)
    #: requests sent to the provider, retries included (as ``usage["calls"]`` counts them)
    calls: int = 0
    #: of ``calls``, those that repeated an attempt that failed on the way (a rate limit, a
    #: server error, a timeout, a connection the server reset): at most ``calls - retries``
    #: were answered, and the cost counts the answers' tokens
    retries: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    #: what every run into this folder spent, this one included (``max_calls`` and
    #: ``budget`` count these): calls, the provider's tokens, and their cost
    total_calls: int = 0
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    total_cost_usd: float | None = None
    estimated_calls: int = 0
    estimated_cost_usd: float | None = None
    seconds: float = 0.0
    stopped: str | None = None
    #: where the judged candidates came from (``--first-stage``, a file made absolute) and
    #: how many per query: learning from the labels should rank the same candidates
    first_stage: str | None = None
    candidates: int | None = None
    #: each labelled query's candidates as :func:`candidates_digest` sums them up: what
    #: :func:`first_stage_mismatch` compares, whatever file they came from
    candidate_digests: dict[str, str] = field(default_factory=dict)
    #: why judgments failed: the first few distinct reasons (the judge's warnings)
    failure_reasons: list[str] = field(default_factory=list)
    #: answers that named another document id than the prompt gave (or a null one,
    #: flagged ``llm_wrong_id``): their scores are kept; and the first one's warning
    wrong_ids: int = 0
    wrong_id_example: str | None = None
    #: queries an earlier run into the folder labelled that this run did not label again
    #: (it stopped before them, or their judgments failed): their labels are kept as written
    kept_queries: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def tally(self, earlier: Spent, prices: Mapping[str, tuple[float, float]]) -> None:
        """This run's cost, and the folder's totals: ``earlier`` runs' and this one's."""
        self.cost_usd = cost_of(self.model, self.input_tokens, self.output_tokens, prices)
        self.total_calls = earlier.calls + self.calls
        self.total_input_tokens = earlier.input_tokens + self.input_tokens
        self.total_output_tokens = earlier.output_tokens + self.output_tokens
        known = self.cost_usd is not None and earlier.cost_usd is not None
        self.total_cost_usd = earlier.cost_usd + self.cost_usd if known else None

    def note_failures(self, qid: str, warnings: Sequence[str]) -> None:
        """Keep the first :data:`MAX_REASONS` distinct reasons among a query's warnings."""
        seen = {_REASON.sub("", r.partition(": ")[2]) for r in self.failure_reasons}
        for warning in map(as_left_out, warnings):
            reason = _REASON.sub("", warning)
            if len(self.failure_reasons) < MAX_REASONS and reason not in seen:
                seen.add(reason)
                self.failure_reasons.append(f"query {qid}: {warning}")

    @property
    def error(self) -> str | None:
        """Why the run wrote no label, or None when it wrote some."""
        if self.labels:
            return None
        if self.failed:
            reasons = "".join(f"\n  {r}" for r in self.failure_reasons)
            return f"no label written: all {self.failed} judgments failed; why:{reasons}"
        if self.stopped:
            kept = "; the folder keeps the earlier runs' labels" if self.total_calls else ""
            return f"no label written: stopped before the first query ({self.stopped}){kept}"
        return "no label written: no query had candidates to judge"

    def notes(self) -> list[str]:
        """What to read besides the counts: the retries among the calls, the answers that
        named another document id, and why judgments failed, when some did (when all did,
        the error says it all)."""
        notes = []
        if self.retries:
            notes.append(
                f"retries: {self.retries} of the {self.calls} calls repeated an attempt that "
                "failed (a rate limit, a server error, a timeout, or a connection the server "
                "reset, which it never saw), so the provider answered at most "
                f"{self.calls - self.retries}; the cost counts the tokens of the answers "
                "(`rerankit -v label`, or the rerankit.llm logger at INFO, says why)"
            )
        if self.wrong_ids:
            notes.append(
                f"wrong ids: {self.wrong_ids} answers named another document id than the "
                "prompt gave (their scores are kept, flagged llm_wrong_id: does the judge "
                f"read the document's id from the prompt?), e.g. {self.wrong_id_example}"
            )
        if self.failed and self.labels:
            notes += [f"failed: {r}" for r in self.failure_reasons]
        if self.kept_queries and self.labels:
            notes.append(
                f"kept: the labels of {counted(self.kept_queries, 'query', 'queries')} an "
                "earlier run labelled, which this run did not label again"
            )
        return notes

    def note_wrong_ids(
        self, qid: str, flags: Mapping[int, Sequence[str]], warnings: Sequence[str]
    ) -> None:
        """Count the documents a query's answers misnamed, keeping the first warning."""
        wrong = sum("llm_wrong_id" in f for f in flags.values())
        self.wrong_ids += wrong
        if wrong and self.wrong_id_example is None:
            said = next((w for w in warnings if "the answer names id" in w), None)
            self.wrong_id_example = f"query {qid}: {said}" if said else f"query {qid}"


def _grades(kind: str, values: Sequence[float], positions: tuple[int, int]) -> list[int]:
    if kind == "pointwise":
        return [grade_pointwise(v) for v in values]
    order = sorted(range(len(values)), key=lambda i: -values[i])
    rank = {i: r for r, i in enumerate(order)}
    first, last = positions
    return [2 if rank[i] < first else 1 if rank[i] < last else 0 for i in range(len(values))]


def label(
    data: Dataset | str | Path,
    candidates: Mapping[str, Sequence[str]] | int,
    judge: Any,
    out: str | Path,
    *,
    split: str = "train",
    max_calls: int | None = None,
    budget: float | None = None,
    prices: Mapping[str, tuple[float, float]] = PRICES,
    positions: tuple[int, int] = (3, 10),
    source: str | Path | None = None,
    progress: Callable[[LabelReport], None] | None = None,
    first_stage: str | None = None,
    depth: int | None = None,
    queries: Queries | None = None,
) -> LabelReport:
    """Judge each query's ``candidates`` (doc ids, best first) with ``judge`` and write the
    labels under ``out`` (see the module). ``max_calls`` / ``budget`` (US$, from ``prices``
    per million tokens) stop the run before a query that would pass them, counting what
    every earlier run into ``out`` spent (its report's totals); what was labelled until then
    is written (a run stopped before its first query leaves an earlier run's folder as it
    was); so does a judge that failed every judgment of :data:`GIVE_UP` queries in a row
    (``stopped`` says so). ``source``: the dataset's folder (its corpus is linked, not
    copied). ``first_stage`` and ``depth``: where ``candidates`` came from and how many per
    query, recorded in the report for :func:`first_stage_mismatch`. ``queries``: label
    these instead of the split's (see :func:`~.label_inputs.with_queries`): a text file,
    one query a line (ids ``q1``, ``q2``, ...), a list of texts or ``{id: text}``.

    As ``rerankit label`` takes them, ``data`` may be a BEIR-layout folder (its ``split``
    queries are read, and its corpus linked), ``candidates`` a number ``k`` (each query's
    first-stage top k: ``first_stage``, ``"auto"`` by default, as
    :func:`~rerankit.eval.first_stage.first_stage` reads it) and ``judge`` a judge file::

        label("my-data", 20, "judge.toml", "my-labels", budget=5)
        label("my-data", 20, "judge.toml", "my-labels", queries="questions.txt")"""
    data, candidates, judge, source, first_stage, depth = label_inputs(
        data, candidates, judge, split, source, first_stage, depth, queries
    )
    kind = judge_kind(judge)
    deepest = max((len(ids) for ids in candidates.values()), default=0)
    if kind == "listwise" and deepest and no_negatives(deepest, positions):
        logger.warning(
            "positions %s grade every one of %d candidates 1 or 2: none will be labelled not "
            "relevant (grade 0); judge more candidates than %d, or lower it",
            positions,
            deepest,
            positions[1],
        )
    out = Path(out)
    report = LabelReport(judge=kind, model=judge.client.model, queries=len(data.queries))
    report.first_stage, report.candidates = stage_name(first_stage), depth
    texts = data.text
    planned = estimate(judge, data.queries, candidates, texts, prices, cache=True)
    report.estimated_calls, report.estimated_cost_usd = planned.calls, planned.cost_usd
    check_budget(judge, budget, prices)
    earlier = spent_on(out, prices, report.model)
    resumed = (out / LABEL_REPORT).is_file()
    before = written_labels(out / "qrels" / f"{split}.tsv") if resumed else {}
    before_digests = (read_label_report(out) or {}).get("candidate_digests") or {}
    report.tally(earlier, prices)
    out.mkdir(parents=True, exist_ok=True)
    link_corpus(out, data, Path(source) if source is not None else None)
    qrels: dict[str, dict[str, int]] = {}
    grades: Counter[int] = Counter()
    start = time.perf_counter()

    def written() -> dict[str, dict[str, int]]:
        """This run's labels, and an earlier run's of each query this run did not label
        (in the queries' order), the report's digests and ``kept_queries`` to match."""
        kept = [q for q in data.queries if q not in qrels and q in before]
        report.kept_queries = len(kept)
        for qid in kept:
            if isinstance(before_digests.get(qid), str):
                report.candidate_digests[qid] = before_digests[qid]
        return {q: qrels.get(q) or before[q] for q in data.queries if q in qrels or q in kept}

    def stop_before(qid: str, query: str, ids: list[str]) -> str | None:
        """Why the next query would pass ``max_calls`` or ``budget``, counting what every
        run into ``out`` spent; None when it would not."""
        # what the judgment cache answers is free (a listwise judge's windows too)
        pending = estimate(judge, {qid: query}, {qid: ids}, texts, prices, cache=True)
        need = pending.calls
        if max_calls is not None and report.total_calls + need > max_calls:
            this = f" ({report.calls} in this run)" if earlier.calls else ""
            return (
                f"max calls: {report.total_calls} made for {out}{this}, the next query needs "
                f"up to {need}"
            )
        if budget is not None:
            next_cost = pending.cost_usd or 0.0
            spent = report.total_cost_usd or 0.0
            if spent + next_cost > budget:
                this = f" (${report.cost_usd or 0.0:.4f} in this run)" if earlier.calls else ""
                return (
                    f"budget: ${spent:.4f} spent on {out}{this}, the next query may cost "
                    f"${next_cost:.4f}"
                )
        return None

    async def judge_all() -> None:  # one event loop: the provider's connections are reused
        failing = 0  # queries in a row whose every judgment failed
        for qid, query in data.queries.items():
            ids = list(candidates.get(qid, []))
            if not ids:
                continue
            report.stopped = stop_before(qid, query, ids)
            if report.stopped is not None:
                return
            batch = await judge.score(query, [Document(texts(d), id=d) for d in ids])
            for name in ("calls", "retries", "cache_hits", "input_tokens", "output_tokens"):
                setattr(report, name, getattr(report, name) + int(batch.usage.get(name, 0)))
            bad = {i for i in range(len(ids)) if set(batch.flags.get(i, ())) & set(UNUSABLE)}
            failing = failing + 1 if len(bad) == len(ids) else 0
            if kind == "listwise" and bad:
                bad = set(range(len(ids)))  # an order with a failed window: no positions
            report.failed += len(bad)
            if bad:
                report.note_failures(qid, batch.warnings)
            report.note_wrong_ids(qid, batch.flags, batch.warnings)
            labels = _grades(kind, [float(v) for v in batch.values], positions)
            usable = [i for i in range(len(ids)) if i not in bad]
            if usable:
                qrels[qid] = {ids[i]: labels[i] for i in usable}
                report.candidate_digests[qid] = candidates_digest(ids)
                grades.update(labels[i] for i in usable)
                report.labelled_queries += 1
                report.labels += len(usable)
            report.grades = dict(sorted(grades.items()))
            report.tally(earlier, prices)
            report.seconds = time.perf_counter() - start
            if failing == GIVE_UP:  # the judge is down, or answers nothing readable
                report.stopped = (
                    f"the judge: every judgment of {GIVE_UP} queries in a row failed, so it "
                    "was asked no more; fix what the failures say, then run it again"
                )
            write_labels(out, split, data, written(), report.as_dict())
            if progress is not None:
                progress(report)
            if report.stopped is not None:
                return

    run_sync(judge_all())
    report.seconds = time.perf_counter() - start
    report.tally(earlier, prices)
    if report.labelled_queries or report.failed or not resumed:  # else left as it was
        write_labels(out, split, data, written(), report.as_dict())
    logger.info(
        "labelled %d queries (%d labels, %d failed)",
        report.labelled_queries,
        report.labels,
        report.failed,
    )
    return report


def spent_on(
    out: str | Path, prices: Mapping[str, tuple[float, float]] = PRICES, model: str = ""
) -> Spent:
    """What earlier runs into the label folder ``out`` spent, as its ``label_report.json``
    records it (nothing without one; see
    :func:`~rerankit.training.label_costs.spent_before`)."""
    made = read_label_report(out)
    return Spent() if made is None else spent_before(made, prices, model)
