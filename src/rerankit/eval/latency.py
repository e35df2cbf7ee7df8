"""What an evaluation's latency columns cannot show by themselves, said under its table:
:func:`latency_note`.

* **The embedding cache.** Pipelines run one after the other, and document vectors are
  kept in the embedding cache (on disk, by default): a pipeline that encodes documents pays
  for it, and one after it that reads them from the cache does not, so on a first run the
  later one looks faster than it would be on its own. Each run records what it looked up
  in the embedding cache (:func:`~rerankit.cache.embedding_lookups` counts them):
  ``misses`` (texts it encoded: documents, or their passages for the hybrid) and
  ``reused`` (vectors that were in the cache before it ran: in its store, which another
  run or an earlier evaluation wrote, or in memory).
  The note names the runs that encoded documents (their times are not their reranking
  times) and those after them that reused vectors, and where those came from: the runs
  before them or an earlier evaluation (a reader that reused more than the runs before it
  encoded had the rest from an earlier one); it says nothing where every run read the
  cache (a second evaluation) or where the runs happened elsewhere (Ray: nothing is
  counted here).
* **The cache's file.** With nothing to encode, a pipeline may still read its vectors from
  the cache's file (``store_hits``) where one after it, sharing the same vectors in memory,
  reads none (``store_hits`` 0): the first looks several times slower on every run, the
  second evaluation's too (the same pipeline twice: 37 against 11 ms a query for the
  hybrid on the shipped example). The note says so when no run encoded anything.
* **A first run** (:func:`first_run_note`, said before the runs): pipelines that embed
  documents, with an embedding cache file that holds no vector yet, encode
  every candidate's text (the hybrid: its passages) first, which takes minutes on a CPU for
  a few thousand; later runs read the cache. (Which of the candidates' texts are cached
  cannot be counted beforehand without splitting them as each pipeline does, so it is said
  only when the cache is empty, which is then true of all of them.)
* **Which stage costs.** A cascade's row has one time for all its stages; ``results.json``
  keeps each stage's mean (``stage_mean_ms``, from the results' ``timings``) and the note
  names each cascade's slowest stage with its mean.
* **A mean above the 95th percentile.** One query far slower than the rest (the first
  one warming a model up, or one encoding many documents) pulls the mean above p95, which
  it leaves alone: the note names the run and its slowest query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..scorers.embedding import EmbeddingScorer

__all__ = ["first_run_note", "latency_note"]

#: where vectors read from the cache came from when the runs before did not encode them
EARLIER = "by earlier work (an earlier evaluation, or tune's learning before its report)"


def first_run_note(pipelines: Sequence[tuple[str, Sequence[Any]]]) -> str | None:
    """Before the runs: of the ``(name, scorers)`` pipelines, those that embed documents
    and whose embedding cache file holds no vector yet, so that this first run encodes every
    candidate's text; None when there are none. A cache on a server is not counted (that
    would read every key, and a shared server is rarely empty), nor one in memory only."""
    names, where = [], ""
    for name, scorers in pipelines:
        caches = [
            s.cache for s in scorers if isinstance(s, EmbeddingScorer) and s.cache is not None
        ]
        if caches and all(_empty(c) for c in caches):
            names.append(name)
            where = str(caches[0].path)
    if not names:
        return None
    return (
        f"{', '.join(names)} encode{'s' if len(names) == 1 else ''} the candidates' texts "
        f"(passages, for the hybrid) first: the embedding cache ({where}) holds no vectors "
        "yet, so this first run takes minutes on a CPU for a few thousand documents; later "
        "runs read them from the cache"
    )


def _empty(cache: Any) -> bool:
    """Whether an embedding cache kept in a file holds no vector yet."""
    return (
        cache.path is not None
        and cache.store is not None
        and len(cache) == 0
        and (len(cache.store) == 0)
    )


def latency_note(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """What to keep in mind reading the rows' ``mean ms`` and ``p95 ms`` (see the module
    doc), or None when there is nothing to say. ``rows``: :func:`~.runner.evaluate_runs`'."""
    parts = []
    cache = _cache_part(rows) or _file_part(rows)
    if cache:
        parts.append(cache)
    slow = [
        f"{r['pipeline']}'s slowest query took {r['max_ms']:.1f} ms"
        for r in rows
        if r.get("max_ms") is not None and r["mean_ms"] > r["p95_ms"]
    ]
    stages = [
        f"{r['pipeline']}'s {name!r} at {ms:.1f} ms of its {r['mean_ms']:.1f} ms mean"
        for r in rows
        if len(r.get("stage_mean_ms") or {}) > 1
        for name, ms in [max(r["stage_mean_ms"].items(), key=lambda s: s[1])]
    ]
    if stages:  # (every stage's mean is in results.json)
        parts.append(f"the slowest stage (stage_mean_ms in results.json): {', '.join(stages)}")
    if slow:
        parts.append(
            f"mean above p95: {', '.join(slow)}; one query far slower than the rest (the "
            "first warming a model up, or one encoding many documents) pulls the mean above "
            "the 95th percentile, so p95 says more of a typical query"
        )
    return "(mean ms, p95 ms: " + "; ".join(parts) + ")" if parts else None


def _cache_part(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The runs that encoded documents (their times include it), and those after them that
    reused vectors from the embedding cache instead (None when no run encoded any)."""
    counted = [(r["pipeline"], r.get("embedding_cache") or {}) for r in rows]
    first = next((i for i, (_, c) in enumerate(counted) if c.get("misses", 0) > 0), None)
    if first is None:
        return None
    readers = [(name, c["reused"]) for name, c in counted[first + 1 :] if c.get("reused")]
    encoders = [(name, c["misses"]) for name, c in counted if c.get("misses", 0) > 0]
    encoded = ", ".join(
        f"{name} encoded {n}"
        + (f" text{'s' if n != 1 else ''} (documents or their passages)" if i == 0 else "")
        for i, (name, n) in enumerate(encoders)
    )
    times = "its time includes" if len(encoders) == 1 else "their times include"
    if not readers:  # one pipeline encoded: its time is not its reranking time
        return (
            f"{encoded}, and {times} that: run the evaluation again, when the vectors are "
            "read from the embedding cache, for the reranking time alone"
        )
    # where the vectors came from: the cache also keeps what earlier evaluations encoded
    origin = f"encoded by the runs before them or {EARLIER}"
    if len(readers) == 1:
        name, n = readers[0]
        at = [row for row, _ in counted].index(name)
        wrote = sum(c.get("misses", 0) for _, c in counted[:at])  # the most the runs before wrote
        read = f"{name} read {n} texts' vectors from the embedding cache"
        origin = (
            f"encoded by the runs before it or {EARLIER}"
            if n <= wrote
            else f"the runs before it encoded {wrote}, so at least {n - wrote} were there from "
            f"{EARLIER.removeprefix('by ')}"
        )
        looks = "it looks faster than it would on its own"
    else:
        names = ", ".join(name for name, _ in readers[:-1]) + f" and {readers[-1][0]}"
        counts = ", ".join(f"{name} {n}" for name, n in readers)
        read = f"{names} read texts' vectors from the embedding cache ({counts})"
        looks = "they look faster than they would on their own"
    return (
        f"{encoded}, and {times} that; after {counted[first][0]}, {read} instead of encoding "
        f"them ({origin}), so {looks}: to compare speeds, run the evaluation again, "
        "when every pipeline reads the cache"
    )


def _file_part(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The run that read vectors from the embedding cache's file (its time includes those
    reads) and those after it that found every vector they read in memory (None when
    there is no such pair)."""
    counted = [(r["pipeline"], r.get("embedding_cache") or {}) for r in rows]
    first = next((i for i, (_, c) in enumerate(counted) if c.get("store_hits", 0) > 0), None)
    if first is None:
        return None
    later = [n for n, c in counted[first + 1 :] if c.get("hits") and not c.get("store_hits")]
    if not later:
        return None
    name, read = counted[first][0], counted[first][1]["store_hits"]
    names = ", ".join(later[:-1]) + f" and {later[-1]}" if len(later) > 1 else later[0]
    they = (
        "it looks faster than it would" if len(later) == 1 else "they look faster than they would"
    )
    own = "its" if len(later) == 1 else "their"
    return (
        f"{name} read {read} texts' vectors from the embedding cache's file, and its time "
        f"includes that; {names} after it found them in memory, so {they} on {own} own, "
        "on this run and the next: to compare speeds, run each in an evaluation of its own"
    )
