"""Datasets in the BEIR layout: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``,
plus optional TREC run files (``qid Q0 docid rank score tag``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._jsonl import numbered_jsonl
from ..errors import InputError

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
                raise InputError(f"{path}:{n}: expected 3 or 4 columns, got {len(parts)}")
            try:
                qrels.setdefault(qid, {})[did] = int(rel)
            except ValueError:
                raise InputError(
                    f"{path}:{n}: relevance must be an integer grade, got {rel!r}"
                ) from None
    return qrels


def load_run(
    path: str | Path,
    *,
    with_scores: bool = False,
    corpus: Any = None,
) -> dict[str, list[Any]]:
    """A TREC run (``qid Q0 docid rank score tag``) as query id -> doc ids, best first (or
    ``(doc id, score)`` pairs with ``with_scores=True``). With ``corpus`` (anything
    supporting ``in``), a document it lacks is an error naming the line."""
    scored: dict[str, list[tuple[float, int, str]]] = {}
    path = Path(path)
    if not path.is_file():
        raise InputError(f"run file {path} not found")
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise InputError(f"{path}:{n}: expected 6 columns, got {len(parts)}")
            qid, _, did, rank, score, _ = parts
            if corpus is not None and did not in corpus:
                raise InputError(
                    f"{path}:{n}: document {did!r} (query {qid!r}) is not in the corpus"
                )
            try:
                scored.setdefault(qid, []).append((-float(score), int(rank), did))
            except ValueError:
                raise InputError(
                    f"{path}:{n}: rank must be an integer and score a number, got "
                    f"{rank!r} and {score!r}"
                ) from None
    if with_scores:
        return {q: [(d, -s) for s, _, d in sorted(rows)] for q, rows in scored.items()}
    return {qid: [did for *_, did in sorted(rows)] for qid, rows in scored.items()}


def load_beir(path: str | Path, split: str = "test", *, run: str | Path | None = None) -> Dataset:
    """Load a BEIR-layout folder. Only queries judged in ``split`` are kept. A ``*.run.trec``
    file in the folder (or ``run=``) becomes :attr:`Dataset.run`."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{path}: not a folder (a BEIR-layout dataset is a folder)")
    for needed in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (path / needed).exists():
            splits = sorted(p.stem for p in (path / "qrels").glob("*.tsv"))
            hint = f"; splits found: {', '.join(splits)}" if needed.startswith("qrels") else ""
            raise InputError(f"{path / needed} not found (BEIR layout expected){hint}")
    corpus = {
        _identity(r, n, path / "corpus.jsonl", "document"): {
            "title": str(r.get("title") or ""),
            "text": str(r.get("text") or ""),
        }
        for n, r in numbered_jsonl(path / "corpus.jsonl")
    }
    qrels = load_qrels(path / f"qrels/{split}.tsv")
    queries = {}
    for n, r in numbered_jsonl(path / "queries.jsonl"):
        qid = _identity(r, n, path / "queries.jsonl", "query")
        text = r.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError(
                f"{path / 'queries.jsonl'}, line {n}: query {qid!r} has no text "
                f"(a 'text' string is needed, got {text!r})"
            )
        if qid in qrels:
            queries[qid] = text
    if not queries:
        sample = ", ".join(repr(q) for q in list(qrels)[:3])
        raise InputError(
            f"{path / 'qrels' / f'{split}.tsv'}: none of its {len(qrels)} query ids "
            f"({sample}{', ...' if len(qrels) > 3 else ''}) is in queries.jsonl"
        )
    runs = [Path(run)] if run is not None else sorted(path.glob("*.run.trec"))
    scored = load_run(runs[0], with_scores=True, corpus=corpus) if runs else None
    if scored is not None and not set(scored) & set(queries):
        raise InputError(f"{runs[0]}: none of its query ids is among the {split} queries")
    return Dataset(name=path.name, corpus=corpus, queries=queries, qrels=qrels, run_scores=scored)


def _identity(row: Any, line: int, source: Path, what: str) -> str:
    """A row's ``_id``, or an error naming the file and line."""
    if not isinstance(row, dict):
        raise InputError(f"{source}, line {line}: expected a JSON object, got {row!r:.60}")
    if "_id" not in row:
        found = next((k for k in ("id", "doc_id", "docid", "qid", "query_id") if k in row), None)
        hint = f" (found {found!r}: BEIR files name it '_id')" if found else ""
        raise InputError(f"{source}, line {line}: the {what} has no '_id' field{hint}")
    return str(row["_id"])
