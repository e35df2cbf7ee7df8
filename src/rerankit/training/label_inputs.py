"""What :func:`~rerankit.training.labelling.label` takes, in the forms it works on: a
folder read, a number of candidates ranked by the first stage, a judge file built, and the
queries to label in place of a split's (:func:`read_queries`, :func:`with_queries`)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config import build, read_spec
from ..errors import ConfigError, InputError, in_file, no_such_file
from ..eval.data import Dataset, load_beir
from ..eval.first_stage import first_stage as rank_first_stage
from ..llm.base import KEYS_OPTIONAL

__all__ = ["Queries", "judge_from", "label_inputs", "read_queries", "with_queries"]

#: queries to label: a text file of them (one a line), their texts, or ``{id: text}``
Queries = str | Path | Sequence[str] | Mapping[str, str]


def read_queries(path: str | Path) -> dict[str, str]:
    """The queries of a UTF-8 text file, one a line, by id: ``q1``, ``q2``, ... in the
    file's order (its blank lines skipped, each query stripped of the spaces around it),
    as ``rerankit label --queries-file`` reads them. A file without any is an
    :class:`InputError`: ``PATH: no queries (one a line)``."""
    if not Path(path).is_file():
        raise InputError(no_such_file(path, "the queries to label, one a line"))
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return _numbered([line.strip() for line in lines if line.strip()], f"{path}: ")


def _numbered(texts: Sequence[str], where: str = "") -> dict[str, str]:
    if not texts:
        raise InputError(f"{where}no queries (one a line)")
    return {f"q{i + 1}": text for i, text in enumerate(texts)}


def _queries(queries: Queries) -> dict[str, str]:
    """``queries`` as ``{id: text}`` (see :func:`with_queries`)."""
    if isinstance(queries, (str, Path)):
        return read_queries(queries)
    if isinstance(queries, Mapping):
        given = dict(queries)
        if not given:
            raise InputError("queries: no queries")
    elif isinstance(queries, Sequence):
        if not queries:
            raise InputError("queries: no queries")
        given = _numbered([q.strip() if isinstance(q, str) else q for q in queries], "queries: ")
    else:
        raise InputError(
            "queries: a text file of queries (one a line), a list of query texts or "
            f"{{query id: text}}, not {type(queries).__name__}"
        )
    for qid, text in given.items():
        if not isinstance(qid, str) or not isinstance(text, str) or not text.strip():
            raise InputError(
                f"queries: query {qid!r}: each query is a non-empty text with a text id, "
                f"got {text!r}"
            )
    return given


def with_queries(data: Dataset, queries: Queries) -> Dataset:
    """A copy of ``data`` (its corpus shared) that holds ``queries`` in place of its own, to
    label them: a text file (:func:`read_queries`), a list of texts (ids ``q1``, ``q2``,
    ...) or ``{id: text}``. Its qrels are left empty (the judge decides) and its first-stage
    run dropped (a run's query ids do not name these queries: the first stage ranks them)."""
    chosen = _queries(queries)
    data = copy.copy(data)
    data.queries, data.qrels, data.run_scores = chosen, {}, None
    return data


def label_inputs(
    data: Any,
    candidates: Any,
    judge: Any,
    split: str,
    source: str | Path | None,
    first_stage: str | None,
    depth: int | None,
    queries: Queries | None = None,
) -> tuple[Dataset, Mapping[str, Sequence[str]], Any, Any, str | None, int | None]:
    """:func:`~rerankit.training.labelling.label`'s inputs in the forms it works on: a
    folder read, a number of candidates ranked by the first stage, a judge file built,
    ``queries`` in place of the split's (:func:`with_queries`)."""
    if isinstance(data, (str, Path)):
        source = data if source is None else source
        data = load_beir(data, split, judged=False)
        data.qrels = {}  # never read: the judge decides
    elif not isinstance(data, Dataset):
        raise InputError(
            f"data: a BEIR-layout folder (its path) or a Dataset, not {type(data).__name__}"
        )
    if queries is not None:
        data = with_queries(data, queries)
    if isinstance(candidates, int) and not isinstance(candidates, bool):
        if candidates < 1:
            raise InputError(
                f"candidates: a number of candidates per query above 0, not {candidates}"
            )
        first_stage, depth = first_stage or "auto", candidates
        ranked = rank_first_stage(data, first_stage, k=depth)
        candidates = {q: [d for d, _ in rows] for q, rows in ranked.items()}
    elif not isinstance(candidates, Mapping):
        raise InputError(
            "candidates: each query's doc ids, best first ({query id: [doc id, ...]}), or a "
            f"number k of first-stage candidates per query, not {type(candidates).__name__}"
        )
    if isinstance(judge, (str, Path)):
        judge = judge_from(judge)
    return data, candidates, judge, source, first_stage, depth


def judge_from(spec: str | Path, *, keys: bool = True) -> Any:
    """The LLM scorer a pipeline file declares (a single scorer): the judge of
    :func:`~rerankit.training.labelling.label`.
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
