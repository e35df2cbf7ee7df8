"""Relevance labels from an LLM judge, for queries nobody judged by hand.

:func:`label` judges each query's first-stage top ``k`` with a pointwise or listwise LLM
scorer and writes a BEIR folder the learning commands read unchanged (``qrels/<split>.tsv``,
``queries.jsonl``, the corpus), with a report of what it cost. Grades:

* pointwise (0-10): below 4 -> 0, 4-6 -> 1, 7-8 -> 2, 9-10 -> 3;
* listwise (an order): by position, the first ``positions[0]`` -> 2, up to
  ``positions[1]`` -> 1, the rest -> 0.

A judgment that failed or could not be read is counted and left out, never written as 0.
The judge's cache makes a second run free for what the first judged, so a stopped run
resumes where it stopped; the output is rewritten atomically after every query.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..config import build, read_spec
from ..errors import ConfigError, InputError, in_file, keyword_flag
from ..eval.data import Dataset
from ..llm.base import KEYS_OPTIONAL
from ..rerankers.base import run_sync
from ..scorers.llm_listwise import LLMListwiseScorer, windows
from ..scorers.llm_pointwise import LLMPointwiseScorer
from ..types import Document

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
    "read_prices",
]

logger = logging.getLogger(__name__)

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

#: the report `rerankit label` writes beside the qrels (also how `tune` knows labels)
LABEL_REPORT = "label_report.json"

#: flags that mean a document's judgment is unusable
UNUSABLE = ("llm_failed", "llm_unreadable", "empty_content")
CHARS_PER_TOKEN = 4  # the estimate before a run; the report counts the provider's tokens
PROMPT_TOKENS = 150  # instructions and format around each call's texts
ANSWER_TOKENS = {"pointwise": 20, "listwise": 60}


MAX_REASONS = 5  # failure reasons a report keeps
_REASON = re.compile(r"^(document|window) [\d-]+: ")  # the same reason for another document


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
    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def note_failures(self, qid: str, warnings: Sequence[str]) -> None:
        """Keep the first :data:`MAX_REASONS` distinct reasons among a query's warnings."""
        seen = {_REASON.sub("", r.partition(": ")[2]) for r in self.failure_reasons}
        for warning in warnings:
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
            return f"no label written: stopped before the first query ({self.stopped})"
        return "no label written: no query had candidates to judge"

    def notes(self) -> list[str]:
        """What to read besides the counts: why judgments failed, when some did."""
        if not self.failed or not self.labels:  # none failed, or the error says it all
            return []
        return [f"failed: {r}" for r in self.failure_reasons]


def _kind(judge: Any) -> str:
    if isinstance(judge, LLMPointwiseScorer):
        return "pointwise"
    if isinstance(judge, LLMListwiseScorer):
        return "listwise"
    raise InputError(
        f"a judge must be an LLM pointwise or listwise scorer, got {type(judge).__name__}"
    )


def _calls_for(judge: Any, n: int) -> int:
    if _kind(judge) == "pointwise":
        return math.ceil(n / judge.docs_per_call)
    return sum(1 for a, b in windows(n, judge.window, judge.step) if b - a >= 2)


def _price(model: str, prices: Mapping[str, tuple[float, float]]) -> tuple[float, float] | None:
    return prices.get(model) or prices.get(model.rsplit("/", 1)[-1])


def estimate(
    judge: Any,
    queries: Mapping[str, str],
    candidates: Mapping[str, Sequence[str]],
    texts: Callable[[str], str],
    prices: Mapping[str, tuple[float, float]] = PRICES,
) -> tuple[int, float | None, int]:
    """Calls, cost (None without a price for the judge's model) and input tokens a run
    would take with an empty cache (tokens estimated at 4 characters each)."""
    kind = _kind(judge)
    calls = tokens = 0
    for qid, query in queries.items():
        docs = candidates.get(qid, [])
        n_calls = _calls_for(judge, len(docs))
        chars = sum(min(len(texts(d)), judge.max_chars) for d in docs)
        if kind == "listwise":  # each window shows its documents once
            per_doc = chars / max(len(docs), 1)
            chars = int(
                per_doc * sum(b - a for a, b in windows(len(docs), judge.window, judge.step))
            )
        calls += n_calls
        tokens += chars // CHARS_PER_TOKEN + n_calls * (PROMPT_TOKENS + len(query) // 4)
    price = _price(judge.client.model, prices)
    cost = None
    if price is not None:
        cost = (tokens * price[0] + calls * ANSWER_TOKENS[kind] * price[1]) / 1e6
    return calls, cost, tokens


def _cost(report: LabelReport, prices: Mapping[str, tuple[float, float]]) -> float | None:
    price = _price(report.model, prices)
    if price is None:
        return None
    return (report.input_tokens * price[0] + report.output_tokens * price[1]) / 1e6


def _grades(kind: str, values: Sequence[float], positions: tuple[int, int]) -> list[int]:
    if kind == "pointwise":
        return [grade_pointwise(v) for v in values]
    order = sorted(range(len(values)), key=lambda i: -values[i])
    rank = {i: r for r, i in enumerate(order)}
    first, last = positions
    return [2 if rank[i] < first else 1 if rank[i] < last else 0 for i in range(len(values))]


def _replace(path: Path, text: str) -> None:
    """``path`` replaced atomically (a reader never sees half a file)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _write(
    out: Path,
    split: str,
    data: Dataset,
    qrels: Mapping[str, Mapping[str, int]],
    report: LabelReport,
) -> None:
    """The folder, each file replaced atomically: qrels, queries and the report."""
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    rows = [f"{q}\t{d}\t{g}" for q, docs in qrels.items() for d, g in docs.items()]
    _replace(
        out / "qrels" / f"{split}.tsv",
        "query-id\tcorpus-id\tscore\n" + "".join(r + "\n" for r in rows),
    )
    _replace(
        out / "queries.jsonl",
        "".join(json.dumps({"_id": q, "text": data.queries[q]}) + "\n" for q in qrels),
    )
    _replace(out / LABEL_REPORT, json.dumps(report.as_dict(), indent=2) + "\n")


def _corpus(out: Path, data: Dataset, source: Path | None) -> None:
    target = out / "corpus.jsonl"
    if target.exists() or target.is_symlink():
        return
    if source is not None and (source / "corpus.jsonl").is_file():
        try:
            target.symlink_to((source / "corpus.jsonl").resolve())
            return
        except OSError:  # no symlinks here: a copy
            shutil.copyfile(source / "corpus.jsonl", target)
            return
    rows = ({"_id": d, **doc} for d, doc in data.corpus.items())
    target.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def label(
    data: Dataset,
    candidates: Mapping[str, Sequence[str]],
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
) -> LabelReport:
    """Judge each query's ``candidates`` (doc ids, best first) with ``judge`` and write the
    labels under ``out`` (see the module). ``max_calls`` / ``budget`` (US$, from ``prices``
    per million tokens) stop the run before a query that would pass them; what was labelled
    until then is written. ``source``: the dataset's folder (its corpus is linked, not
    copied). ``first_stage`` and ``depth``: where ``candidates`` came from and how many per
    query, recorded in the report for :func:`first_stage_mismatch`."""
    kind = _kind(judge)
    out = Path(out)
    report = LabelReport(judge=kind, model=judge.client.model, queries=len(data.queries))
    report.first_stage, report.candidates = stage_name(first_stage), depth
    texts = data.text
    report.estimated_calls, report.estimated_cost_usd, _ = estimate(
        judge, data.queries, candidates, texts, prices
    )
    check_budget(judge, budget, prices)
    out.mkdir(parents=True, exist_ok=True)
    _corpus(out, data, Path(source) if source is not None else None)
    qrels: dict[str, dict[str, int]] = {}
    grades: Counter[int] = Counter()
    start = time.perf_counter()

    async def judge_all() -> None:  # one event loop: the provider's connections are reused
        for qid, query in data.queries.items():
            ids = list(candidates.get(qid, []))
            if not ids:
                continue
            need = _calls_for(judge, len(ids))
            if max_calls is not None and report.calls + need > max_calls:
                report.stopped = (
                    f"max calls: {report.calls} made, the next query needs up to {need}"
                )
                return
            if budget is not None:
                _, next_cost, _ = estimate(judge, {qid: query}, {qid: ids}, texts, prices)
                spent = _cost(report, prices) or 0.0
                if spent + (next_cost or 0.0) > budget:
                    report.stopped = (
                        f"budget: ${spent:.4f} spent, the next query may cost "
                        f"${next_cost or 0.0:.4f}"
                    )
                    return
            batch = await judge.score(query, [Document(texts(d), id=d) for d in ids])
            for name in ("calls", "cache_hits", "input_tokens", "output_tokens"):
                setattr(report, name, getattr(report, name) + int(batch.usage.get(name, 0)))
            bad = {i for i in range(len(ids)) if set(batch.flags.get(i, ())) & set(UNUSABLE)}
            if kind == "listwise" and bad:
                bad = set(range(len(ids)))  # an order with a failed window: no positions
            report.failed += len(bad)
            if bad:
                report.note_failures(qid, batch.warnings)
            labels = _grades(kind, [float(v) for v in batch.values], positions)
            usable = [i for i in range(len(ids)) if i not in bad]
            if usable:
                qrels[qid] = {ids[i]: labels[i] for i in usable}
                report.candidate_digests[qid] = candidates_digest(ids)
                grades.update(labels[i] for i in usable)
                report.labelled_queries += 1
                report.labels += len(usable)
            report.grades = dict(sorted(grades.items()))
            report.cost_usd = _cost(report, prices)
            report.seconds = time.perf_counter() - start
            _write(out, split, data, qrels, report)
            if progress is not None:
                progress(report)

    run_sync(judge_all())
    report.seconds = time.perf_counter() - start
    report.cost_usd = _cost(report, prices)
    _write(out, split, data, qrels, report)
    logger.info(
        "labelled %d queries (%d labels, %d failed)",
        report.labelled_queries,
        report.labels,
        report.failed,
    )
    return report


def check_budget(
    judge: Any, budget: float | None, prices: Mapping[str, tuple[float, float]] = PRICES
) -> None:
    """Refuse a ``budget`` for a judge whose model has no price (what would it count?);
    :func:`label` checks it, and a dry run can before it estimates."""
    if budget is not None and _price(judge.client.model, prices) is None:
        raise InputError(
            f"no price for model {judge.client.model!r}: pass its prices with "
            f"{keyword_flag('prices')} to use a budget"
        )


def stage_name(first_stage: str | None) -> str | None:
    """``--first-stage`` as a label report records it: a file's absolute path, else as is."""
    if first_stage is not None and Path(first_stage).is_file():
        return str(Path(first_stage).resolve())
    return first_stage


def candidates_digest(ids: Sequence[str]) -> str:
    """A query's candidates (doc ids; their order aside) summed up in 16 hex digits."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16]


def first_stage_mismatch(
    data: str | Path,
    first_stage: str | None,
    depth: int,
    candidates: Mapping[str, Sequence[tuple[str, float]]] | None = None,
) -> str | None:
    """When ``data`` holds labels ``rerankit label`` made from other candidates than
    ``first_stage`` top ``depth`` gives, the warning to give; None otherwise (or when the
    report does not say). With ``candidates`` (query id -> ``(doc id, score)``, as
    :func:`~rerankit.eval.first_stage.first_stage` gives them) and a report that kept its
    queries' digests, the labelled queries' candidates are compared, not the names: the
    same candidates from another file pass, others from a file of the same name do not."""
    try:
        made = json.loads((Path(data) / LABEL_REPORT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    was, k, digests = made.get("first_stage"), made.get("candidates"), made.get("candidate_digests")
    differ = ""
    if digests and candidates is not None:
        both = [q for q in candidates if q in digests]
        n = sum(candidates_digest([d for d, _ in candidates[q]]) != digests[q] for q in both)
        if not n:
            return None
        differ = f", which gives other candidates for {n} of the {len(both)} labelled queries"
    elif was is None or (was == stage_name(first_stage) and k == depth):
        return None
    return (
        f"the labels in {data} judged the candidates of first stage {was}, top {k}; this run "
        f"ranks {keyword_flag('first_stage', first_stage)}, "
        f"{keyword_flag('candidates', depth)}{differ}: pass the same to learn and measure on "
        "the candidates the judge saw"
    )


def judge_from(spec: str | Path, *, keys: bool = True) -> Any:
    """The LLM scorer a pipeline file declares (a single scorer): the judge of :func:`label`.
    ``keys=False`` builds it without an API key, for an estimate that calls nothing."""
    token = KEYS_OPTIONAL.set(not keys)
    try:
        reranker = build(read_spec(spec))
    except ConfigError as exc:  # said with the file it is in
        raise in_file(exc, spec) from None
    finally:
        KEYS_OPTIONAL.reset(token)
    scorer = getattr(reranker, "scorer", None)
    if scorer is None:
        raise InputError(
            f'{spec}: a judge is one LLM scorer ([scorer] type = "llm_pointwise" or '
            '"llm_listwise"), not a pipeline of several'
        )
    return scorer


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
