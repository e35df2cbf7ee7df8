"""Which candidates a folder's labels judged: ``rerankit label`` records its first stage
and depth, and a digest of each query's candidates, in :data:`LABEL_REPORT`; ``tune``
compares them with its own (:func:`first_stage_mismatch`), and ``train`` with the BM25
candidates it draws negatives from (:func:`negatives_mismatch`), so that a model is not
learned and measured on candidates the judge never saw."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import keyword_flag
from ..eval.given import source_name

__all__ = [
    "LABEL_REPORT",
    "candidates_digest",
    "first_stage_mismatch",
    "negatives_mismatch",
    "read_label_report",
    "stage_name",
]

#: the report `rerankit label` writes beside the qrels (also how `tune` knows labels)
LABEL_REPORT = "label_report.json"


def read_label_report(data: str | Path) -> dict[str, Any] | None:
    """What ``rerankit label`` recorded of the labels in folder ``data``: its
    :data:`LABEL_REPORT`, parsed; None when there is none, or it cannot be read or holds no
    JSON object (then it records nothing). The one reader of that file."""
    try:
        made = json.loads((Path(data) / LABEL_REPORT).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # (UnicodeDecodeError is a ValueError)
        return None
    return made if isinstance(made, dict) else None


def stage_name(first_stage: str | Mapping[str, Any] | None) -> str | None:
    """``--first-stage`` as a label report records it: a file's absolute path, candidates
    given in memory by their number of queries, else as is."""
    if isinstance(first_stage, Mapping):
        return source_name(first_stage)
    if first_stage is not None and Path(first_stage).is_file():
        return str(Path(first_stage).resolve())
    return first_stage


def candidates_digest(ids: Sequence[str]) -> str:
    """A query's candidates (doc ids; their order aside) summed up in 16 hex digits."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16]


def first_stage_mismatch(
    data: str | Path,
    first_stage: str | Mapping[str, Any] | None,
    depth: int,
    candidates: Mapping[str, Sequence[tuple[str, float]]] | None = None,
) -> str | None:
    """When ``data`` holds labels ``rerankit label`` made from other candidates than
    ``first_stage`` top ``depth`` gives, the warning to give; None otherwise (or when the
    report does not say). With ``candidates`` (query id -> ``(doc id, score)``, as
    :func:`~rerankit.eval.first_stage.first_stage` gives them) and a report that kept its
    queries' digests, the labelled queries' candidates are compared, not the names: the
    same candidates from another file pass, others from a file of the same name do not."""
    made = read_label_report(data)
    if made is None:
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
        f"ranks {_first_stage_flag(first_stage)}, "
        f"{keyword_flag('candidates', depth)}{differ}: pass the same to learn and measure on "
        "the candidates the judge saw"
    )


def negatives_mismatch(
    data: str | Path, depth: int, candidates: Mapping[str, Sequence[tuple[str, float]]]
) -> str | None:
    """For ``rerankit train``, which draws its negatives from BM25's top ``depth``
    (``candidates``) and counts a candidate nobody judged as not relevant: the warning to
    give when ``data`` holds labels of other candidates for some labelled query; None
    otherwise (or when its report kept no digests)."""
    made = read_label_report(data) or {}
    digests = made.get("candidate_digests") or {}
    both = [q for q in candidates if q in digests]
    n = sum(candidates_digest([d for d, _ in candidates[q]]) != digests[q] for q in both)
    if not n:
        return None
    return (
        f"the labels in {data} judged the candidates of first stage {made.get('first_stage')}, "
        f"top {made.get('candidates')}; train draws negatives from BM25's top {depth} "
        f"({keyword_flag('candidates', depth)}), other candidates for {n} of the {len(both)} "
        "labelled queries, and takes each candidate the judge never saw as not relevant: pass "
        "the --candidates label judged (and label with --first-stage bm25 for a folder that "
        "ships a run file)"
    )


def _first_stage_flag(first_stage: str | Mapping[str, Any] | None) -> str:
    """``first_stage=`` as a message names it: candidates given in memory by their number
    of queries, never written out."""
    if isinstance(first_stage, Mapping):
        return f"{source_name(first_stage)} ({keyword_flag('first_stage')})"
    return keyword_flag("first_stage", first_stage)
