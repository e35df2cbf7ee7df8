"""Learning from a click log file, as ``rerankit tune --clicks LOG`` does: read the log
(:func:`~.reader.read_log`), group its sessions by query (:func:`~.sessions.collect`),
compute learning to rank's features of each query's logged candidates
(:func:`~.sessions.log_features`, the features ``rerankit tune --method ltr`` reads; the
texts from the log, else from the corpus), then estimate the propensities, learn,
cross-validate and judge against what was served (:func:`~.learn.learn_from_clicks`).

Features computed beforehand can be passed instead (``rows``), and kept in a file between
runs (:func:`write_features`, :func:`read_features`).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..._renamed import one_name
from ..._words import counted
from ...documents import titled_text
from ...errors import InputError, no_such_file
from ...eval.corpus import TextCheck
from ...scorers import learned
from ..crossval import MIN_QUERIES
from ..reporting import Reporter, quiet
from .exploration import Exploration, count_exploration
from .learn import learn_from_clicks
from .reader import ReadReport, Session, read_log
from .result import ClickLearning
from .sessions import DEPTH, CorpusTexts, QueryLog, collect, log_features, with_texts

__all__ = [
    "LogLearning",
    "given_corpus",
    "learn_from_log",
    "read_corpus",
    "read_features",
    "write_features",
]

logger = logging.getLogger(__name__)

Rows = Mapping[str, tuple[Sequence[str], np.ndarray]]


@dataclass
class LogLearning:
    """What :func:`learn_from_log` found (``learning``), what it read of the log
    (``read``), the sessions each pipeline served (``served``), the queries' logs, and the
    clicks: in the log's sessions (``clicks``) and counted in learning (``counted_clicks``:
    those in the first ``depth`` positions, with at least ``min_dwell_ms`` of dwell)."""

    learning: ClickLearning
    read: ReadReport
    served: dict[str, int] = field(default_factory=dict)
    logs: dict[str, QueryLog] = field(default_factory=dict)
    clicks: int = 0
    counted_clicks: int = 0
    #: sessions whose order was interleaved, by the pair mixed ("a+b"): their "served"
    #: order is the mix, not the logged pipeline's own
    interleaved: dict[str, int] = field(default_factory=dict)
    #: where the features came from or went, when a features file was named
    features: str = ""
    #: the exploration in each pipeline's sessions (:class:`~.exploration.Exploration`)
    explored: dict[str, Exploration] = field(default_factory=dict)

    @property
    def served_by(self) -> str | None:
        """The pipeline that served most of the log's sessions (None: unnamed)."""
        named = {k: v for k, v in self.served.items() if k}
        return max(named, key=named.__getitem__) if named else None


def read_corpus(path: str | Path) -> dict[str, str]:
    """A corpus's texts by document id: a BEIR-layout folder's ``corpus.jsonl`` (or that
    file), one ``{"_id" or "id", "title"?, "text"}`` per line; a title is joined to its
    text with a new line, as ``rerankit eval`` reads it. Its documents' texts are checked
    as ``eval`` checks them (:class:`~rerankit.eval.corpus.TextCheck`: none with a ``text``
    is an error, some without one a warning)."""
    path = Path(path)
    file = path / "corpus.jsonl" if path.is_dir() else path
    out: dict[str, str] = {}
    texts = TextCheck(file)
    try:
        with open(file, encoding="utf-8-sig") as handle:
            for n, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    doc_id = row.get("_id", row.get("id"))
                    title, text = str(row.get("title") or ""), str(row.get("text") or "")
                except (ValueError, AttributeError) as exc:
                    raise InputError(f"{file}:{n}: not a JSON object ({exc})") from None
                if doc_id is None:
                    raise InputError(f"{file}:{n}: a document needs an '_id' or 'id'")
                texts.see(n, str(doc_id), row)
                out[str(doc_id)] = titled_text(text, title)
    except FileNotFoundError:
        raise InputError(no_such_file(file, "the corpus of the click log")) from None
    except OSError as exc:
        raise InputError(f"cannot read the corpus {file}: {exc.strerror or exc}") from None
    if said := texts.result():  # raises when no document has a text
        logger.warning("%s", said)
    return out


def write_features(
    rows: Rows,
    path: str | Path,
    *,
    embedding: str | None = None,
    left_out: Mapping[str, str] | None = None,
) -> Path:
    """Features (``{query key: (doc ids, matrix)}``) to an ``.npz`` file: ``index`` (JSON,
    each query key's doc ids), one ``x:<query key>`` matrix per query, and ``meta`` (JSON:
    the feature names, ``embedding``, the model they read (None: the bundled MiniLM), and
    ``left_out``, the log's impressions left out for a document without a text, by answer
    id with why: left out again when the file is read back)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    index = json.dumps({key: list(ids) for key, (ids, _) in rows.items()})
    meta = json.dumps(
        {
            "features": list(learned.FEATURES),
            "embedding": embedding,
            "left_out": dict(left_out or {}),
        }
    )
    arrays = {f"x:{key}": np.asarray(x) for key, (_, x) in rows.items()}
    with open(path, "wb") as handle:
        np.savez_compressed(handle, index=np.array(index), meta=np.array(meta), **arrays)
    return path


def read_features(path: str | Path) -> dict[str, tuple[list[str], np.ndarray]]:
    """Features written by :func:`write_features` (other arrays in the file are ignored)."""
    try:
        stored = np.load(path, allow_pickle=False)
        index = json.loads(str(stored["index"]))
        return {key: (ids, stored[f"x:{key}"]) for key, ids in index.items()}
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(f"{path}: not a features file ({exc})") from None


def _features_meta(path: str | Path) -> dict[str, Any]:
    """The ``meta`` a features file keeps (empty for one written without it)."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            return json.loads(str(stored["meta"])) if "meta" in stored.files else {}
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a features file ({exc})") from None


def _left_out(path: str | Path) -> dict[str, str]:
    """The impressions a features file records as left out (answer id -> why)."""
    left = _features_meta(path).get("left_out") or {}
    if not isinstance(left, Mapping):
        raise InputError(f"{path}: not a features file (its left_out is not an object)")
    return {str(k): str(v) for k, v in left.items()}


def _leave_out(sessions: list[Session], left: Mapping[str, str], read: ReadReport) -> list:
    """``sessions`` without the impressions a features file records as left out (counted
    in ``read`` as :func:`~.sessions.with_texts` counts them)."""
    kept = []
    for s in sessions:
        why = left.get(str(s.impression.id))
        if why is None:
            kept.append(s)
        else:
            read.unresolved += 1
            read.note(f"impression {s.impression.id}: {why} (left out as the features file says)")
    return kept


def _check_features(
    path: str | Path, rows: Rows, logs: Mapping[str, QueryLog], asked: str | None
) -> None:
    """That a features file read back is of this log's candidates, with the features and
    the embedding model ``asked`` for (None: the bundled MiniLM); an InputError naming the
    first difference."""
    again = "; delete it to compute them anew"
    meta = _features_meta(path)
    names = meta.get("features")
    if names is not None and list(names) != list(learned.FEATURES):
        raise InputError(f"{path}: features of another version of rerankit ({names}){again}")
    if "embedding" in meta and meta["embedding"] != asked:
        raise InputError(
            f"{path}: features computed with the embedding model {meta['embedding'] or 'MiniLM'}"
            f", not {asked or 'MiniLM'} as asked{again}"
        )
    for key, log in logs.items():
        if key not in rows:
            raise InputError(
                f"{path}: no features for the log's query {key!r} (the file is of another "
                f"log, or of part of this one){again}"
            )
        ids, x = rows[key]
        missing = set(log.doc_ids) - set(ids)
        if missing:
            raise InputError(
                f"{path}: query {key!r}: no features for its logged documents "
                f"{sorted(missing)[:3]}{again}"
            )
        if np.ndim(x) != 2 or np.shape(x)[1] != len(learned.FEATURES):
            raise InputError(
                f"{path}: query {key!r}: {np.shape(x)} features, expected "
                f"{len(learned.FEATURES)} a document{again}"
            )


def given_corpus(data: Any) -> Mapping[str, str] | None:
    """:func:`learn_from_log`'s and :func:`~.checking.check_log`'s ``data``, the corpus of
    a log: a mapping as given, a path read by :func:`read_corpus`; a TypeError naming what
    to pass for anything else."""
    if data is None or isinstance(data, Mapping):
        return data
    if isinstance(data, str | Path):
        return read_corpus(data)
    raise TypeError(
        f"data: expected document id -> text (a dict, e.g. read_corpus(FOLDER)) or the "
        f"path of a corpus (a folder with corpus.jsonl, or the file), got {type(data).__name__}"
    )


def _left(read: ReadReport) -> str:
    """The impressions left out for a document without a text, when there are any."""
    n = read.unresolved
    return f" ({counted(n, 'impression')} left out: a document without a text)" if n else ""


def _why_no_clicks(read: ReadReport, min_dwell_ms: float | None, depth: int) -> str:
    """What the log held and what reading it left out, when no click is left."""
    parts = [f"{read.impressions} impressions, {read.feedback} feedback records"]
    if read.unresolved:
        parts.append(
            f"{read.unresolved} impressions (and their clicks) left out for a document "
            "without a text"
        )
    if read.late_feedback:
        parts.append(f"{read.late_feedback} left out as later than max_feedback_delay")
    if read.unknown_clicks:
        parts.append(f"{read.unknown_clicks} clicks naming no document")
    if read.unshown_clicks:
        parts.append(f"{read.unshown_clicks} clicks on documents not shown")
    if read.ambiguous_clicks:
        parts.append(f"{read.ambiguous_clicks} clicks by an id several documents share")
    if min_dwell_ms is not None:
        parts.append(f"clicks with under {min_dwell_ms:g} ms of dwell not counted")
    parts.append(f"only clicks in the first {depth} positions count")
    return "; ".join(parts) + f"; {MORE_CLICKS}"


#: what to do about a log too thin to learn from, said with the refusal
MORE_CLICKS = (
    "log more sessions (rerankit check --clicks LOG counts them in seconds; a log "
    "rerankit simulate-clicks wrote: run it again with a higher --sessions), or rehearse "
    "the loop on a judged collection with rerankit simulate-clicks (docs/clicks.md)"
)

#: about the sessions a verdict needs: the smallest log measured whose verdict adopted the
#: learned ranker was SciFact's 809 training queries with 100 sessions each (docs/measured.md,
#: "Learning from clicks"); at 10 a query (8,090 sessions) it could not tell either way
NEEDED_SESSIONS = 80_000

#: under this many sessions (an eighth of the 8,090 that could not yet tell) the
#: cross-validated figures are noise: the verdict says so instead of reading like a measurement
FAR_TOO_FEW = 1_000


def learn_from_log(
    path: str | Path | Sequence[str | Path],
    *,
    data: Mapping[str, str] | str | Path | None = None,
    rows: Rows | None = None,
    embedding: Any = None,
    depth: int = DEPTH,
    min_dwell_ms: float | None = None,
    pipelines: Sequence[str] | None = None,
    features: str | Path | None = None,
    max_feedback_delay: float | None = None,
    reporter: Reporter | None = None,
    corpus: Mapping[str, str] | str | Path | None = None,
    **options: Any,
) -> LogLearning:
    """Learn from the click log at ``path`` (see the module doc). ``data``: the corpus of a
    log that kept hashes or ids only, as ``--data`` names it: the path of a corpus
    (:func:`read_corpus` reads it) or document id -> text (``corpus``, its earlier name,
    still works); ``rows``: the features of each query's
    candidates, computed beforehand (query keys as :func:`~.sessions.collect` groups them:
    the ``query_id``, else the query text); ``embedding``: the model the features read
    (None: the bundled MiniLM). ``depth``, ``min_dwell_ms``, ``pipelines``: as
    :func:`~.sessions.collect` takes them; ``features``: a features file (``.npz``) read
    instead of computing them when it exists (checked against the log: every query's
    logged documents, the same features and embedding model), else written there once
    computed; ``max_feedback_delay``: seconds after its impression past which feedback is
    left out (:func:`~.reader.read_log`; None: none is); ``options``:
    :func:`~.learn.learn_from_clicks`'s.

    An impression with a document that has no text (in the log, or in ``data``) is left
    out when the features are computed here, and counted in ``.read`` (``unresolved``, with
    examples in its problems); it is an error only when no impression is left. A
    ``features`` file written then records which impressions were left out, and reading it
    back leaves out the same ones again (counted the same way; with ``rows`` given, none is
    left out: ``rows`` must cover every logged query). ``reporter``: where the start of
    each long step is noted and the features' progress shown (``rerankit tune --clicks``
    shows them on stderr; None: nowhere)."""
    corpus = given_corpus(one_name("learn_from_log", "data", data, "corpus", corpus))
    sessions, read = read_log(path, max_feedback_delay=max_feedback_delay)
    texts = CorpusTexts(corpus)
    from_file = rows is None and features is not None and Path(features).exists()
    left: dict[str, str] = {}  # impressions left out for a document without a text
    if from_file:  # it holds what learning reads: no text is needed
        rows = read_features(features)
        sessions = _leave_out(sessions, _left_out(features), read)
    if rows is None:
        usable = with_texts(sessions, texts, read)
        if sessions and not usable:
            raise InputError(
                f"{path}: none of its {len(sessions)} impressions can be learned from: each "
                f"has a document without a text; e.g. {texts.why_not(sessions[0].impression)}"
            )
        if len(usable) < len(sessions):
            kept = {id(s) for s in usable}
            left = {
                str(s.impression.id): texts.why_not(s.impression) or "a document without a text"
                for s in sessions
                if id(s) not in kept
            }
        sessions = usable
    logs = collect(sessions, depth=depth, min_dwell_ms=min_dwell_ms, pipelines=pipelines)
    if not logs:
        bad = f"{read.malformed} bad line{'' if read.malformed == 1 else 's'}"
        raise InputError(f"{path}: no impressions to learn from ({bad})")
    if not any(log.clicked.any() for log in logs.values()):
        raise InputError(
            f"{path}: no clicks to learn from: {_why_no_clicks(read, min_dwell_ms, depth)}"
        )
    clicked = sum(bool(log.clicked.any()) for log in logs.values())
    if clicked < MIN_QUERIES:  # said before the features, the slow part (and the model)
        raise ValueError(
            f"too few clicks to learn from: {clicked} of the {len(logs)} logged queries have "
            f"a click in the first {depth} positions{_left(read)}; learning needs at least "
            f"{MIN_QUERIES}, and many sessions each: {MORE_CLICKS}"
        )
    asked = embedding if isinstance(embedding, str) and embedding else None
    named = None  # the embedding model named for the features computed (or read) here
    kept = ""
    if from_file:
        _check_features(features, rows, logs, asked)
        named, kept = asked, f"features read from {features}"
    report = quiet(reporter)
    if rows is None:
        documents = sum(len(log.doc_ids) for log in logs.values())
        keep = f"kept in {features} for the next run" if features else "--features FILE keeps them"
        report.note(
            f"tune --clicks: computing the features of {len(logs)} queries' candidates "
            f"({documents} documents), the slow part ({keep})"
        )
        progress = report.progress("features")
        rows = log_features(logs, learned.Signals(embedding), corpus=texts, progress=progress)
        named = asked
        if features is not None:
            write_features(rows, features, embedding=named, left_out=left)
            kept = f"features written to {features} (read from there next time)"
    else:
        missing = [key for key in logs if key not in rows]
        if missing:
            raise InputError(
                f"the features have none for {len(missing)} of the log's {len(logs)} queries "
                f"(e.g. {missing[0]!r})"
            )
    report.note(
        f"tune --clicks: estimating the propensities and cross-validating over {clicked} "
        "queries with a click"
    )
    learning = learn_from_clicks(logs, rows, depth=depth, **options)
    if named:  # the pipeline reads the same model
        learning = replace(learning, embedding=named)
    learned_from = [s for s in sessions if pipelines is None or s.impression.pipeline in pipelines]
    exploration = count_exploration(learned_from, depth)
    if exploration.sessions:  # what the propensities' messages say of it
        learning = replace(
            learning, propensities=replace(learning.propensities, exploration=exploration)
        )
    served = Counter(s.impression.pipeline for s in sessions)
    clicks = sum(len(s.clicks) for s in sessions)
    counted = int(sum(log.clicked.sum() for log in logs.values()))
    found = LogLearning(learning, read, dict(served.most_common()), logs, clicks, counted)
    found.interleaved = dict(
        Counter(
            "+".join(map(str, s.impression.interleaving.get("pipelines") or ("?", "?")))
            for s in sessions
            if isinstance(s.impression.interleaving, Mapping)
        ).most_common()
    )
    found.features = kept
    found.explored = {
        name: count_exploration((s for s in sessions if s.impression.pipeline == name), depth)
        for name in found.served
    }
    return found
