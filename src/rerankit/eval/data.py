"""Datasets in the BEIR layout: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``,
plus optional TREC run files (``qid Q0 docid rank score tag``)."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._jsonl import numbered_jsonl
from .._paths import folder_name
from .._renamed import one_name
from ..errors import InputError, keyword_flag, no_such_file
from .corpus import TextCheck
from .dataset_checks import check_ids, checked, evaluation_only, in_memory_ids, no_query, not_a_run
from .qrels import load_qrels, read_splits, split_files, splits_hint

logger = logging.getLogger(__name__)

__all__ = [
    "TITLES",
    "Dataset",
    "asked_queries",
    "evaluation_only",
    "find_collections",
    "load_beir",
    "load_qrels",
    "load_run",
    "parse_split",
    "read_split",
]

#: query selectors a split name may carry after a colon (``test:odd``): the split's judged
#: queries at odd or even positions (1st, 3rd, ... or 2nd, 4th, ...) in queries.jsonl
SELECTORS = ("odd", "even")

#: how :meth:`Dataset.with_titles` gives rerankers a document's title: as a ``title``
#: field (``field``), joined to the text by a line break, a space or ". ", or left out
TITLES = {"field": None, "newline": "\n", "space": " ", "period": ". ", "drop": ""}


@dataclass
class Dataset:
    """Corpus (doc id -> {"title", "text"}), queries (id -> text) and graded qrels
    (query id -> doc id -> relevance) of one split; ``run_scores`` is a first-stage ranking
    when the dataset ships one (query id -> ``(doc id, score)``, best first); ``notes``:
    what :func:`load_beir` found amiss but could read past (also logged as warnings);
    ``query_ids``: every query id of ``queries.jsonl``, judged in this split or not (a run
    file's lines for other ids are another folder's, and skipped); ``split`` and
    ``folder``: the split as given (``test``, ``test:odd``) and the folder it was read
    from, when :func:`load_beir` read it."""

    name: str
    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    run_scores: dict[str, list[tuple[str, float]]] | None = None
    notes: list[str] = field(default_factory=list)
    run_file: str | None = None  #: the file ``run_scores`` was read from
    query_ids: frozenset[str] | None = None
    split: str | None = None
    folder: Path | None = None

    def __post_init__(self) -> None:
        """Check what was given (see :mod:`~rerankit.eval.dataset_checks` for the shapes
        taken): a mistake is an :class:`InputError` naming the id and the field. A
        collection built in memory (no ``folder``; :func:`load_beir` checks a folder's
        files as it reads them) also has its qrels checked against its queries and corpus,
        each finding logged as a warning and kept in :attr:`notes`."""
        self.corpus, self.queries, self.qrels, said = checked(self.corpus, self.queries, self.qrels)
        if self.folder is None:
            said += in_memory_ids(self.qrels, self.queries, self.corpus)
        new = [m for m in said if m not in self.notes]  # a copy (replace) says them once
        for message in new:
            logger.warning(message)
        if new:
            self.notes = [*self.notes, *new]  # the caller's list is kept as given

    @property
    def run(self) -> dict[str, list[str]] | None:
        """The shipped first-stage ranking as doc ids only (None when there is none)."""
        if self.run_scores is None:
            return None
        return {q: [d for d, _ in rows] for q, rows in self.run_scores.items()}

    def text(self, doc_id: str) -> str:
        """A document's title and text, as one string (the title on its own line)."""
        doc = self.corpus[doc_id]
        title = doc.get("title") or ""
        if not title.strip():
            return doc.get("text") or ""
        return f"{title}\n{doc.get('text') or ''}" if (doc.get("text") or "").strip() else title

    def sample(self, n: int, *, seed: int = 0) -> Dataset:
        """The same dataset with ``n`` of its queries drawn at random (the same ``n`` for the
        same ``seed``), their judgments and shipped first-stage ranking; the corpus stays
        whole. ``max_queries`` takes the first ones instead. All of them when there are no
        more than ``n``."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"sample: n must be a positive number of queries, got {n!r}")
        chosen = set(random.Random(seed).sample(sorted(self.queries), min(n, len(self.queries))))
        return replace(
            self,
            queries={q: t for q, t in self.queries.items() if q in chosen},
            qrels={q: j for q, j in self.qrels.items() if q in chosen},
            run_scores=None
            if self.run_scores is None
            else {q: r for q, r in self.run_scores.items() if q in chosen},
            notes=list(self.notes),
        )

    def with_titles(self, how: str) -> Dataset:
        """The same dataset with each title given to rerankers as ``how`` says (a key of
        :data:`TITLES`): ``field`` returns this dataset; ``newline``, ``space`` and
        ``period`` join the title to the text with ``"\\n"``, ``" "`` or ``". "`` and
        leave no title field (as a caller who sends one string per document does);
        ``drop`` keeps the text alone. Compute the first stage before, so that every form
        reranks the same candidates."""
        if how not in TITLES:
            raise InputError(f"titles {how!r}: expected one of {', '.join(TITLES)}")
        joint = TITLES[how]
        if joint is None:
            return self
        corpus = {}
        for doc_id, doc in self.corpus.items():
            title, text = doc.get("title") or "", doc.get("text") or ""
            if joint and title.strip():
                text = f"{title}{joint}{text}" if text else title
            corpus[doc_id] = {"title": "", "text": text}
        return replace(self, corpus=corpus)

    def write(self, folder: str | Path, split: str = "test") -> Path:
        """Write this dataset as a BEIR-layout ``folder`` (``corpus.jsonl``,
        ``queries.jsonl`` and ``qrels/<split>.tsv``; a shipped first-stage ranking is not
        written), which :func:`load_beir` reads back as it was and the commands that take a
        folder (``rerankit tune --data``, ``label``, ``train``) read: ``split="train"`` for
        judgments to learn from. Refuses a folder that already holds a collection."""
        root = Path(folder)
        if not split or any(c in split for c in "/\\:"):
            raise InputError(
                f"write: split must be a plain name such as train or test, got {split!r}"
            )
        held = [n for n in ("corpus.jsonl", "queries.jsonl", "qrels") if (root / n).exists()]
        if held:
            raise InputError(f"{root}: already holds {held[0]}; write to a new folder")
        (root / "qrels").mkdir(parents=True, exist_ok=True)
        with (root / "corpus.jsonl").open("w", encoding="utf-8") as out:
            for doc_id, doc in self.corpus.items():
                row = {
                    "_id": doc_id,
                    "title": doc.get("title") or "",
                    "text": doc.get("text") or "",
                }
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        with (root / "queries.jsonl").open("w", encoding="utf-8") as out:
            for query_id, text in self.queries.items():
                out.write(json.dumps({"_id": query_id, "text": text}, ensure_ascii=False) + "\n")
        with (root / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as out:
            out.write("query-id\tcorpus-id\tscore\n")
            for query_id, judged in self.qrels.items():
                for doc_id, grade in judged.items():
                    out.write(f"{query_id}\t{doc_id}\t{grade}\n")
        return root

    def document(self, doc_id: str) -> dict[str, str]:
        """A document as a reranker takes it: ``id``, ``text`` and, when it has one,
        ``title`` (which rerankers read as the title: :func:`rerankit.documents.document_title`)."""
        doc = self.corpus[doc_id]
        out = {"id": doc_id, "text": doc.get("text") or ""}
        if (doc.get("title") or "").strip():
            out["title"] = doc["title"]
        return out


def load_run(
    path: str | Path,
    *,
    with_scores: bool = False,
    corpus: Any = None,
    queries: Any = None,
) -> dict[str, list[Any]]:
    """A TREC run (``qid Q0 docid rank score tag``) as query id -> doc ids, best first (or
    ``(doc id, score)`` pairs with ``with_scores=True``). With ``queries`` (the ids of a
    folder's queries.jsonl), only their lines are read: a run may rank other folders'
    queries too, and their lines are skipped. With ``corpus`` (anything supporting ``in``),
    a document it lacks on a line read is an error naming the line."""
    scored: dict[str, list[tuple[float, int, str]]] = {}
    path = Path(path)
    if not path.is_file():
        raise InputError(no_such_file(path, "a TREC run file"))
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise InputError(not_a_run(path, n, len(parts)))
            qid, _, did, rank, score, _ = parts
            if queries is not None and qid not in queries:
                continue  # another folder's query
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


def parse_split(split: str) -> tuple[str, str | None]:
    """``"test"`` -> ``("test", None)``; ``"test:odd"`` -> ``("test", "odd")``;
    ``"train,test"`` -> ``("train,test", None)`` (see :func:`~.qrels.split_files`)."""
    name, sep, selector = split.partition(":")
    if not all(n.strip() for n in name.split(",")) or (sep and selector not in SELECTORS):
        raise InputError(
            f"split {split!r}: expected a qrels name (several, comma-separated, or all), "
            "optionally with :odd or :even (half of its queries by position in queries.jsonl)"
        )
    return name, selector or None


def load_beir(
    path: str | Path,
    split: str = "test",
    *,
    first_stage: str | Path | None = None,
    judged: bool = True,
    run: str | Path | None = None,
) -> Dataset:
    """Load a BEIR-layout folder. Only queries judged in ``split`` are kept. A ``*.run.trec``
    file in the folder (or ``first_stage=``, a run file, as ``--first-stage`` and
    :func:`rerankit.evaluate` name it; ``run=``, its earlier name, still works) becomes
    :attr:`Dataset.run`. With ``judged=False`` a
    folder without ``qrels/<split>.tsv`` is read too, with all its queries and no qrels.

    ``split`` names a qrels file (``qrels/<split>.tsv``), optionally with a selector:
    ``"test:odd"`` and ``"test:even"`` keep the split's judged queries at odd or even
    positions in queries.jsonl (the two halves of a collection with one qrels file, e.g.
    to tune on one and report on the other). Several names, comma-separated
    (``"train,test"``), or ``"all"`` (every qrels file; ``qrels/all.tsv`` when there is one)
    read their judgments as one split: a query judged in two files is one query.

    What it reads past is logged as a warning and kept in :attr:`Dataset.notes`, each
    naming the file: an ``_id`` on two lines of corpus.jsonl or queries.jsonl (the last
    is used), a pair judged twice with different grades (the later line's grade is used),
    negative grades (read as 0), judged queries missing from queries.jsonl (left out),
    relevant judged documents missing from corpus.jsonl (they count as never retrieved), and
    documents with no text (:class:`~rerankit.eval.corpus.TextCheck`; a corpus where none
    has a ``text`` is an error naming the fields its rows have)."""
    given = split
    split, selector = parse_split(split)
    path = Path(path)
    if not path.exists():
        raise InputError(no_such_file(path, "a BEIR-layout dataset", folder=True))
    if not path.is_dir():
        raise InputError(f"{path}: not a folder (a BEIR-layout dataset is a folder)")
    files = split_files(path, split)
    unjudged = not judged and not any(f.exists() for f in files)
    qrels_names = [f"qrels/{f.name}" for f in files]
    for needed in ("corpus.jsonl", "queries.jsonl", *qrels_names):
        if not (path / needed).exists() and not (unjudged and needed.startswith("qrels")):
            hint = splits_hint(path, needed) if needed.startswith("qrels") else ""
            raise InputError(no_such_file(path / needed, f"BEIR layout expected{hint}"))
    corpus_rows, notes = _rows(path / "corpus.jsonl", "document")
    texts = TextCheck(path / "corpus.jsonl")
    corpus = {}
    for n, doc_id, r in corpus_rows:
        texts.see(n, doc_id, r)
        corpus[doc_id] = {"title": str(r.get("title") or ""), "text": str(r.get("text") or "")}
    if said := texts.result():  # raises when no document has a text
        notes.append(said)
    qrels: dict[str, dict[str, int]] = {}
    if not unjudged:
        qrels, said = read_splits(files)
        notes += said
    query_rows, said = _rows(path / "queries.jsonl", "query")
    notes += said
    queries, query_ids = {}, set()
    for n, qid, r in query_rows:
        query_ids.add(qid)
        text = r.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError(
                f"{path / 'queries.jsonl'}:{n}: query {qid!r} has no text "
                f"(a 'text' string is needed, got {text!r})"
            )
        if qid in qrels or unjudged:
            queries[qid] = text
    source = files[0] if len(files) == 1 else path / f"qrels/{{{','.join(f.stem for f in files)}}}"
    notes += check_ids(source, qrels, queries, corpus)
    for message in notes:
        logger.warning(message)
    read, judged_queries = qrels, len(queries)
    if selector is not None:
        keep = 0 if selector == "odd" else 1  # position 1 is odd
        queries = {q: t for i, (q, t) in enumerate(queries.items()) if i % 2 == keep}
        qrels = {q: j for q, j in qrels.items() if q in queries}
    if not queries:
        raise InputError(no_query(source if not unjudged else path, read, judged_queries, given))
    run = one_name("load_beir", "first_stage", first_stage, "run", run)
    runs = [Path(run)] if run is not None else sorted(path.glob("*.run.trec"))
    if len(runs) > 1:
        notes.append(
            f"{path}: {len(runs)} run files ({', '.join(r.name for r in runs)}); the first, "
            f"{runs[0].name}, is the first stage (name another with "
            f"{keyword_flag('first_stage')})"
        )
        logger.warning(notes[-1])
    scored = None
    if runs:
        scored = load_run(runs[0], with_scores=True, corpus=corpus, queries=query_ids)
    if scored is not None and not set(scored) & set(queries):
        raise InputError(f"{runs[0]}: none of its query ids is among the {split} queries")
    return Dataset(
        folder_name(path),
        corpus,
        queries,
        qrels,
        run_scores=scored,
        notes=notes,
        run_file=runs[0].name if runs else None,
        query_ids=frozenset(query_ids),
        split=given,
        folder=path,
    )


def read_split(
    path: str | Path,
    split: str = "test",
    max_queries: int | None = None,
    *,
    note: Callable[[str], None] | None = None,
    **options: Any,
) -> Dataset:
    """:func:`load_beir` (with its ``options``), each of its notes passed to ``note``, cut
    to the first ``max_queries`` queries."""
    data = load_beir(path, split, **options)
    for message in data.notes:
        if note is not None:
            note(message)
    if max_queries:
        data.queries = dict(list(data.queries.items())[:max_queries])
    return data


def find_collections(specs: Sequence[str], split: str = "test") -> list[tuple[Path, str]]:
    """``(folder, split)`` for each collection named in ``specs``: a BEIR-layout folder, a
    folder whose subfolders are collections (each, in name order), and either followed by
    ``@SPLIT`` to use another split than ``split`` for it (``scifact@train``,
    ``classic@test:odd``)."""
    out: list[tuple[Path, str]] = []
    for spec in specs:
        path, own = Path(spec), split
        if not path.exists() and "@" in spec:
            head, _, own = spec.rpartition("@")
            path = Path(head)
        parse_split(own)
        if folder_name(path) != path.name:  # . or ..: named as the folder they stand for
            path = path.resolve()
        if (path / "corpus.jsonl").is_file():
            out.append((path, own))
            continue
        inner = (
            sorted(p for p in path.iterdir() if (p / "corpus.jsonl").is_file())
            if path.is_dir()
            else []
        )
        if not path.exists():
            raise InputError(
                no_such_file(path, "a BEIR-layout folder, or a folder of them", folder=True)
            )
        if not inner:
            what = "a folder with no corpus.jsonl" if path.is_dir() else "not a folder"
            raise InputError(f"{path}: {what} (give a BEIR-layout folder, or a folder of them)")
        out += [(p, own) for p in inner]
    return out


def asked_queries(folder: str | Path) -> list[str] | None:
    """The query ids of ``folder``'s ``queries.jsonl``, in its order (None without one):
    the judged queries :func:`load_beir` keeps (a subset folder's qrels may judge more)."""
    source = Path(folder) / "queries.jsonl"
    if not source.is_file():
        return None
    return list(dict.fromkeys(row_id for _, row_id, _ in _rows(source, "query")[0]))


#: what a line of corpus.jsonl and queries.jsonl holds, as an error about a broken line says
ROW_LINES = {
    "document": ("documents", '{"_id": "d1", "title": "...", "text": "..."}'),
    "query": ("queries", '{"_id": "q1", "text": "..."}'),
}


def _rows(source: Path, what: str) -> tuple[list[tuple[int, str, dict[str, Any]]], list[str]]:
    """``(line, _id, row)`` of each row of a JSON Lines file, and a note when an ``_id``
    is on more than one line (the last of them is used, as a later row replaces an
    earlier one)."""
    rows, first, repeated = [], {}, {}
    for n, row in numbered_jsonl(source, ROW_LINES[what]):
        row_id = _identity(row, n, source, what)
        if row_id in first:
            repeated.setdefault(row_id, [first[row_id]]).append(n)
        first.setdefault(row_id, n)
        rows.append((n, row_id, row))
    if not repeated:
        return rows, []
    row_id, lines = next(iter(repeated.items()))
    more = f" ({len(repeated)} ids in all)" if len(repeated) > 1 else ""
    at = ", ".join(map(str, lines[:-1])) + f" and {lines[-1]}"
    return rows, [f"{source}: {what} {row_id!r} is on lines {at}{more}; the last of them is used"]


def _identity(row: Any, line: int, source: Path, what: str) -> str:
    """A row's ``_id`` (BEIR's name), else its ``id``; or an error naming the file and line.
    A row holding both with different values is refused: which one is meant cannot be told."""
    if not isinstance(row, dict):
        raise InputError(f"{source}:{line}: expected a JSON object, got {row!r:.60}")
    if "_id" in row and "id" in row and str(row["_id"]) != str(row["id"]):
        raise InputError(
            f"{source}:{line}: the {what} has both '_id' ({row['_id']!r}) and 'id' "
            f"({row['id']!r}): keep one ('_id', BEIR's name, or 'id')"
        )
    if "_id" not in row and "id" not in row:
        found = next((k for k in ("doc_id", "docid", "qid", "query_id") if k in row), None)
        hint = f" (found {found!r}: name it '_id', as BEIR files do, or 'id')" if found else ""
        raise InputError(f"{source}:{line}: the {what} has no '_id' or 'id' field{hint}")
    return str(row["_id"] if "_id" in row else row["id"])
