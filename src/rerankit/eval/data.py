"""Datasets in the BEIR layout: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``,
plus optional TREC run files (``qid Q0 docid rank score tag``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._jsonl import read_jsonl

__all__ = ["Dataset", "load_beir", "load_qrels", "load_run"]


@dataclass
class Dataset:
    """Corpus (doc id -> {"title", "text"}), queries (id -> text) and graded qrels
    (query id -> doc id -> relevance) of one split; ``run_scores`` is a first-stage ranking
    when the dataset ships one (query id -> ``(doc id, score)``, best first)."""

    name: str
    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    run_scores: dict[str, list[tuple[str, float]]] | None = None

    @property
    def run(self) -> dict[str, list[str]] | None:
        """The shipped first-stage ranking as doc ids only (None when there is none)."""
        if self.run_scores is None:
            return None
        return {q: [d for d, _ in rows] for q, rows in self.run_scores.items()}

    def text(self, doc_id: str) -> str:
        """A document's title and text, as one string."""
        doc = self.corpus[doc_id]
        title = doc.get("title") or ""
        return f"{title}\n{doc.get('text') or ''}" if title else doc.get("text") or ""


def load_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Graded judgements from a TSV with a header (``query-id corpus-id score``) or from a
    TREC qrels file (``qid 0 docid rel``)."""
    qrels: dict[str, dict[str, int]] = {}
    path = Path(path)
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            parts = line.split()
            if not parts or (n == 1 and not parts[-1].lstrip("-").isdigit()):
                continue  # blank line or header
            if len(parts) == 3:
                qid, did, rel = parts
            elif len(parts) == 4:
                qid, _, did, rel = parts
            else:
                raise ValueError(f"{path}:{n}: expected 3 or 4 columns, got {len(parts)}")
            qrels.setdefault(qid, {})[did] = int(rel)
    return qrels


def load_run(path: str | Path, *, with_scores: bool = False) -> dict[str, list[Any]]:
    """A TREC run (``qid Q0 docid rank score tag``) as query id -> doc ids, best first (or
    ``(doc id, score)`` pairs with ``with_scores=True``)."""
    scored: dict[str, list[tuple[float, int, str]]] = {}
    path = Path(path)
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise ValueError(f"{path}:{n}: expected 6 columns, got {len(parts)}")
            qid, _, did, rank, score, _ = parts
            scored.setdefault(qid, []).append((-float(score), int(rank), did))
    if with_scores:
        return {q: [(d, -s) for s, _, d in sorted(rows)] for q, rows in scored.items()}
    return {qid: [did for *_, did in sorted(rows)] for qid, rows in scored.items()}


def load_beir(path: str | Path, split: str = "test", *, run: str | Path | None = None) -> Dataset:
    """Load a BEIR-layout folder. Only queries judged in ``split`` are kept. A ``*.run.trec``
    file in the folder (or ``run=``) becomes :attr:`Dataset.run`."""
    path = Path(path)
    for needed in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (path / needed).exists():
            raise FileNotFoundError(f"{path / needed} not found (BEIR layout expected)")
    corpus = {
        str(r["_id"]): {"title": r.get("title") or "", "text": r.get("text") or ""}
        for r in read_jsonl(path / "corpus.jsonl")
    }
    qrels = load_qrels(path / f"qrels/{split}.tsv")
    queries = {
        str(r["_id"]): r["text"]
        for r in read_jsonl(path / "queries.jsonl")
        if str(r["_id"]) in qrels
    }
    runs = [Path(run)] if run is not None else sorted(path.glob("*.run.trec"))
    scored = load_run(runs[0], with_scores=True) if runs else None
    return Dataset(name=path.name, corpus=corpus, queries=queries, qrels=qrels, run_scores=scored)
