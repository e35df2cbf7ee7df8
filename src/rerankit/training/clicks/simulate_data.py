"""A click log simulated over a judged collection, for trying learning from clicks without
traffic (``rerankit simulate-clicks``): each query's first-stage candidates reranked by a
logging pipeline, the first ten (:data:`SHOWN`) shown to simulated users who follow the
position-based model (:class:`~.simulate.PositionBasedModel`) and click by the collection's
judgments (:func:`~.simulate.grades_0_to_4`), optionally with RandPair exploration; each
session written as the service writes it (an impression with every candidate and its
first-stage score, the order shown, with exploration the pairs exchanged, ``{"swapped":
[...]}``, and the feedback of its clicks) by :class:`~.log.ClickLog`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ...api import load
from ...errors import InputError
from ...eval.data import Dataset
from ...eval.first_stage import first_stage as first_stage_candidates
from ...eval.runner import run_pipeline
from .log import STORE, ClickLog, text_hash
from .sessions import records
from .simulate import PositionBasedModel, grades_0_to_4, max_grade, simulate_query

__all__ = ["SHOWN", "SimulatedLog", "simulate_collection"]

#: the positions each simulated session shows (the first of the logging pipeline's order);
#: the other candidates are logged, not shown
SHOWN = 10


@dataclass
class SimulatedLog:
    """What :func:`simulate_collection` wrote: the log, its queries (those with
    candidates), sessions and clicks, the pipeline named as serving it and the simulated
    users' true propensities by position (relative to position 1)."""

    path: Path
    queries: int
    sessions: int
    clicks: int
    pipeline: str
    propensities: list[float]
    without_candidates: int = 0

    def describe(self) -> str:
        truth = ", ".join(f"{v:.3f}".rstrip("0").rstrip(".") for v in self.propensities)
        skipped = (
            f" ({self.without_candidates} queries without candidates left out)"
            if self.without_candidates
            else ""
        )
        return (
            f"wrote {self.path}: {self.sessions} sessions of {self.queries} queries"
            f"{skipped}, {self.clicks} clicks, served by {self.pipeline}; the simulated "
            f"users' propensities by position: {truth}"
        )


def _swapped(order: Sequence[int], shown: np.ndarray) -> list[int]:
    """The 1-based positions ``p`` whose document RandPair exchanged with the one at
    ``p + 1`` (as :func:`~.propensity.randpair` gives them): each exchange moves two
    neighbours, and a document moves once at most, so the moved positions pair up."""
    width = min(len(order), len(shown))
    moved = np.flatnonzero(np.asarray(order[:width]) != shown[:width])
    return [int(p) + 1 for p in moved[::2]]


def simulate_collection(
    data: Dataset,
    out: str | Path,
    *,
    reranker: Any = "bm25",
    pipeline: str | None = None,
    first_stage: str = "auto",
    candidates: int = 10,
    sessions: int = 50,
    eta: float = 1.0,
    explore_pairs: float = 0.0,
    store: str = "id",
    seed: int = 0,
    progress: Any = None,
    explore: float | None = None,
) -> SimulatedLog:
    """Simulate ``sessions`` sessions of each of ``data``'s queries and write them to the
    click log ``out`` (a new file; see the module doc). ``reranker``: the logging pipeline
    (anything :func:`rerankit.load` takes), named ``pipeline`` in the log (default: its
    name when a string); ``first_stage`` and ``candidates``: where each query's candidates
    come from and how many (:func:`rerankit.eval.first_stage.first_stage`: every one is
    logged, the first :data:`SHOWN` of the logging pipeline's order shown); ``eta``: the
    users' position bias (> 1 steeper); ``explore_pairs`` (earlier ``explore``, still taken):
    RandPair's chance of exchanging each adjacent pair below the top 3, in every session
    (the service's ``explore_pairs`` with ``explore = 1``); ``store``: what the log keeps of a
    document (``text``, ``hash`` or ``id``: then learn with the collection as the corpus).
    ``progress`` wraps the reranking's query iterator (e.g. ``tqdm``)."""
    out = Path(out)
    if out.exists():
        raise InputError(f"{out} exists: simulate into a new file (delete it, or name another)")
    if store not in STORE:
        raise InputError(f"store {store!r}: expected one of {', '.join(STORE)}")
    if sessions < 1 or candidates < 1:
        raise InputError("sessions and candidates must be positive")
    if explore is not None:  # the earlier name
        if explore_pairs:
            raise TypeError("explore_pairs and explore (its earlier name) given: pass one")
        explore_pairs = explore
    if not 0.0 <= explore_pairs <= 1.0:
        raise InputError(f"explore_pairs {explore_pairs}: expected a chance between 0 and 1")
    explore = explore_pairs
    if eta <= 0:
        raise InputError(f"eta {eta}: expected a positive number")
    name = pipeline or (reranker if isinstance(reranker, str) else "simulated")
    cands = first_stage_candidates(data, first_stage, candidates)
    ranked = run_pipeline(name, load(reranker), data, cands, progress=progress).run
    model = PositionBasedModel(eta=eta)
    top = max_grade(data.qrels)
    rng = np.random.default_rng(seed)
    log = ClickLog(out, store=store, max_bytes=0)
    queries = total = clicks = empty = 0
    try:
        for qid, found in cands.items():
            if not found:
                empty += 1
                continue
            first = dict(found)
            ids = list(first)
            scores = ranked.get(qid, {})
            order = sorted(range(len(ids)), key=lambda i: -scores.get(ids[i], -np.inf))
            logged = simulate_query(
                model,
                key=qid,
                query=data.queries[qid],
                doc_ids=ids,
                order=order,
                grades=grades_0_to_4(ids, data.qrels.get(qid, {}), top),
                sessions=sessions,
                rng=rng,
                first_stage=[first[d] for d in ids],
                explore=explore,
                pipeline=name,
                depth=SHOWN,
            )
            texts = [data.text(d) for d in ids]
            logged.texts = list(texts) if store == "text" else []
            logged.hashes = [text_hash(t) for t in texts] if store == "hash" else []
            sessions_of = records(logged, start=float(total))
            for s, (impression, feedback) in enumerate(sessions_of):
                if explore > 0:  # as the service records an explored answer
                    swapped = _swapped(order, logged.shown[s])
                    impression = replace(impression, explore={"swapped": swapped})
                log.write(impression)
                if feedback is not None:
                    log.write(feedback)
                    clicks += len(feedback.clicks)
            queries += 1
            total += sessions
    finally:
        log.close()
    truth = [float(v) for v in model.propensities(SHOWN)]
    return SimulatedLog(out, queries, total, clicks, name, truth, empty)
