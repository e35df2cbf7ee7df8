"""Sessions grouped by query into arrays (:class:`QueryLog`): what learning, propensity
estimation and counterfactual evaluation read, whether the sessions came from a log
(:func:`collect`) or a simulation (:mod:`.simulate`); and the learning-to-rank features of
each query's logged candidates (:func:`log_features`).

Sessions belong to the same query when they carry the same ``query_id``, or, without one,
the same query text. A query's candidates are the union of its impressions' documents
(by id, in the order first seen).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ...errors import keyword_flag
from ...scorers import learned
from .log import Feedback, Impression, LoggedDocument, text_hash
from .reader import ReadReport, Session

__all__ = ["DEPTH", "CorpusTexts", "QueryLog", "collect", "log_features", "records", "with_texts"]

#: how many positions learning reads by default: a page of ten results
DEPTH = 10


@dataclass
class QueryLog:
    """One query's sessions as arrays: ``shown[s, p]`` is the index (into ``doc_ids``) of
    the document session ``s`` showed at position ``p + 1`` (-1: nothing there),
    ``clicked[s, p]`` whether it was clicked. ``first_stage`` holds NaN where a document had
    no first-stage score; ``texts`` / ``hashes`` what the log kept of each document."""

    key: str
    query: str
    doc_ids: list[str]
    shown: np.ndarray
    clicked: np.ndarray
    first_stage: np.ndarray
    texts: list[str | None] = field(default_factory=list)
    hashes: list[str | None] = field(default_factory=list)
    pipelines: list[str] = field(default_factory=list)

    @property
    def sessions(self) -> int:
        return int(self.shown.shape[0])

    @property
    def depth(self) -> int:
        return int(self.shown.shape[1])

    def head(self, sessions: int) -> QueryLog:
        """The same query with its first ``sessions`` sessions only."""
        return QueryLog(
            self.key,
            self.query,
            self.doc_ids,
            self.shown[:sessions],
            self.clicked[:sessions],
            self.first_stage,
            self.texts,
            self.hashes,
            self.pipelines[:sessions],
        )

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """``(shows, clicks)``, each ``(documents, depth)``: how often each document was shown
        at each position, and clicked there."""
        n, depth = len(self.doc_ids), self.depth
        shows = np.zeros((n, depth))
        clicks = np.zeros((n, depth))
        for p in range(depth):
            at = self.shown[:, p]
            ok = at >= 0
            np.add.at(shows[:, p], at[ok], 1.0)
            np.add.at(clicks[:, p], at[ok & self.clicked[:, p]], 1.0)
        return shows, clicks


def _candidates(group: Sequence[Impression]) -> tuple[list[LoggedDocument], list[list[str]]]:
    """The distinct documents of a query's impressions, and each impression's documents'
    keys: the id, or for a document logged by its position (no id) its content's hash
    (its position means nothing across impressions), prefixed ``#``."""
    docs: list[LoggedDocument] = []
    seen: set[str] = set()
    keys = []
    for impression in group:
        own = []
        for n, d in enumerate(impression.documents):
            key = d.id
            if d.positional:
                digest = d.sha256 or (None if d.text is None else text_hash(d.text))
                key = f"#{digest or f'{impression.id}/{n}'}"
                d = replace(d, id=key)
            if key not in seen:
                seen.add(key)
                docs.append(d)
            own.append(key)
        keys.append(own)
    return docs, keys


def collect(
    sessions: Iterable[Session],
    *,
    depth: int = DEPTH,
    min_dwell_ms: float | None = None,
    pipelines: Sequence[str] | None = None,
) -> dict[str, QueryLog]:
    """The sessions grouped by query (see the module doc), each as a :class:`QueryLog` of
    its first ``depth`` positions. ``min_dwell_ms``: a click counts only when its dwell is
    at least this (a click without a dwell counts); ``pipelines``: only sessions served by
    these pipelines."""
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    groups: dict[str, list[Session]] = {}
    for s in sessions:
        if pipelines is not None and s.impression.pipeline not in pipelines:
            continue
        key = s.impression.query_id if s.impression.query_id is not None else s.impression.query
        groups.setdefault(key, []).append(s)
    out = {}
    for key, group in groups.items():
        docs, keys = _candidates([s.impression for s in group])
        where = {d.id: n for n, d in enumerate(docs)}
        shown = np.full((len(group), depth), -1, dtype=np.int32)
        clicked = np.zeros((len(group), depth), dtype=bool)
        for row, s in enumerate(group):
            imp = s.impression
            kept = {
                i
                for i in s.clicks
                if min_dwell_ms is None or s.dwell_ms.get(i, math.inf) >= min_dwell_ms
            }
            for p, i in enumerate(imp.shown[:depth]):
                shown[row, p] = where[keys[row][i]]
                clicked[row, p] = i in kept
        first = np.array(
            [math.nan if d.first_stage_score is None else d.first_stage_score for d in docs]
        )
        out[key] = QueryLog(
            key=key,
            query=group[0].impression.query,
            doc_ids=[d.id for d in docs],
            shown=shown,
            clicked=clicked,
            first_stage=first,
            texts=[d.text for d in docs],
            hashes=[d.sha256 for d in docs],
            pipelines=[s.impression.pipeline for s in group],
        )
    return out


def records(
    log: QueryLog, *, prefix: str = "", pipeline: str = "", start: float = 0.0
) -> Iterator[tuple[Impression, Feedback | None]]:
    """Each session of ``log`` as the records a service would have written: an impression
    with every candidate (as ``log`` keeps them) and the shown order, and its feedback
    (None when nothing was clicked). Answer ids are ``prefix`` + the query key + the
    session number; times ``start`` + the session number; the pipeline the log names for
    the session, else ``pipeline``."""
    docs = tuple(
        LoggedDocument(
            id=d,
            text=log.texts[i] if log.texts else None,
            sha256=log.hashes[i] if log.hashes else None,
            first_stage_score=None if math.isnan(log.first_stage[i]) else float(log.first_stage[i]),
        )
        for i, d in enumerate(log.doc_ids)
    )
    for s in range(log.sessions):
        row = log.shown[s]
        shown = tuple(int(i) for i in row[row >= 0])
        rid = f"{prefix}{log.key}:{s}"
        name = (log.pipelines[s] if log.pipelines else "") or pipeline
        impression = Impression(
            id=rid,
            query=log.query,
            documents=docs,
            shown=shown,
            pipeline=name,
            time=start + s,
            query_id=log.key,
        )
        clicks = tuple(int(row[p]) for p in np.flatnonzero(log.clicked[s] & (row >= 0)))
        yield impression, (Feedback(rid, clicks, None, start + s + 0.5) if clicks else None)


class CorpusTexts:
    """Documents' texts looked up in a corpus (doc id -> text): by a logged SHA-256 when
    there is one (the hashes of the corpus computed once, when first needed), else by id."""

    def __init__(self, corpus: Mapping[str, str] | None) -> None:
        self.given = corpus is not None
        self.by_id: Mapping[str, str] = corpus if corpus is not None else {}
        self._by_hash: dict[str, str] | None = None
        #: documents found by their id because their logged hash matched no text of the
        #: corpus (id -> that hash): a text other than the one the ranker read
        self.found_by_id: dict[str, str] = {}

    def text(self, doc_id: str | None, text: str | None, digest: str | None) -> str | None:
        """The logged ``text``, else the corpus's by ``digest``, else by ``doc_id`` (None:
        a document logged by its position, never looked up by it)."""
        if text is not None:
            return text
        by_id = None if doc_id is None else self.by_id.get(doc_id)
        if digest is None:
            return by_id
        found = self._hashes().get(digest)
        if found is None and by_id is not None:
            self.found_by_id[str(doc_id)] = digest
        return by_id if found is None else found

    def _hashes(self) -> dict[str, str]:
        """The corpus's texts by their SHA-256, computed once."""
        if self._by_hash is None:
            self._by_hash = {text_hash(t): t for t in self.by_id.values()} if self.given else {}
        return self._by_hash

    def has_hash(self, digest: str) -> bool:
        """Whether a document of the corpus has a text of this SHA-256."""
        return digest in self._hashes()

    def why_not(self, impression: Impression) -> str | None:
        """None when every document of ``impression`` has a text, else why the first
        without one has none."""
        for d in impression.documents:
            if self.text(None if d.positional else d.id, d.text, d.sha256) is None:
                return self.missing(impression.query, d.id, d.sha256, positional=d.positional)
        return None

    def missing(
        self, query: str, doc_id: str, digest: str | None, *, positional: bool = False
    ) -> str:
        """Why a document has no text: what the log keeps of it, and the corpus (none can
        help a ``positional`` document logged without a hash: nothing names its text)."""
        if positional and not digest:
            return (
                f"query {query!r}: no text for document {doc_id!r}: it came without an id "
                "(a /v2/rerank request's strings, say), so the log names it by its index in "
                'the request, and keeps no text nor hash of it (store = "id"): no corpus '
                "can give its text. Send each document's id (/v1/rerank takes objects with "
                'an id), or log with store = "text" or "hash"'
            )
        kept = "its hash" if digest else "its id only"
        where = (
            "it is not in the corpus given"
            if self.given
            else f"pass the corpus it came from ({keyword_flag('data')})"
        )
        return f"query {query!r}: no text for document {doc_id!r} (the log keeps {kept}); {where}"


def with_texts(
    sessions: Iterable[Session], texts: CorpusTexts, report: ReadReport
) -> list[Session]:
    """The sessions whose every document has a text (in the log, else in the corpus); the
    others are counted in ``report`` (``unresolved``, each described up to its limit) and
    left out. Documents found by their id because their logged hash matched no text of
    the corpus are counted too (``found_by_id``, the first described)."""
    out = []
    for s in sessions:
        why = texts.why_not(s.impression)
        if why is None:
            out.append(s)
        else:
            report.unresolved += 1
            report.note(f"impression {s.impression.id}: {why}")
    if texts.found_by_id and not report.found_by_id:
        doc_id, digest = next(iter(texts.found_by_id.items()))
        report.note(
            f"document {doc_id!r}: its logged hash {digest[:12]}... matches no text of the "
            "corpus, so its text was found by its id (a text other than the one the ranker "
            "read, if the corpus is built otherwise: title, a newline, then the text)"
        )
    report.found_by_id = len(texts.found_by_id)
    return out


def log_features(
    logs: Mapping[str, QueryLog],
    signals: Any = None,
    *,
    corpus: Mapping[str, str] | CorpusTexts | None = None,
    progress: Any = None,
) -> dict[str, tuple[list[str], np.ndarray]]:
    """Learning to rank's features (:func:`rerankit.scorers.learned.features`, the same
    as ``rerankit tune --method ltr`` reads) of each query's candidates,
    ``{key: (doc ids, matrix)}``. A document's text comes from the log, else from
    ``corpus`` (doc id -> text) by its id or by its SHA-256 (a log kept as ``hash`` or
    ``id`` needs it). The first-stage features count when every candidate of the query
    has a first-stage score (as :class:`~rerankit.scorers.learned.LearnedScorer` does).
    ``signals``: a :class:`~rerankit.scorers.learned.Signals` (None: the bundled model);
    ``progress`` wraps the loop over the queries (e.g. ``tqdm``)."""
    signals = signals if signals is not None else learned.Signals()
    lookup = corpus if isinstance(corpus, CorpusTexts) else CorpusTexts(corpus)
    rows = {}
    items = list(logs.items())
    for key, log in items if progress is None else progress(items):
        texts = []
        for i, d in enumerate(log.doc_ids):
            digest = log.hashes[i] if log.hashes else None
            text = lookup.text(d, log.texts[i] if log.texts else None, digest)
            if text is None:
                raise ValueError(lookup.missing(key, d, digest))
            texts.append(text)
        first = log.first_stage
        scores = None if np.isnan(first).any() else first.tolist()
        rows[key] = (list(log.doc_ids), learned.features(signals, log.query, texts, scores))
    return rows
