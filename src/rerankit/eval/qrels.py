"""Reading graded judgments (qrels), and what is said of the mistakes that would change a
metric without a word: the same (query, document) judged twice with different grades, and
negative grades."""

from __future__ import annotations

import logging
import math
from pathlib import Path

from ..errors import InputError, said_for

logger = logging.getLogger(__name__)

__all__ = ["ALL_SPLITS", "load_qrels", "read_qrels", "read_splits", "split_files", "splits_hint"]

#: the split that names every ``qrels/*.tsv`` of a folder (``qrels/all.tsv`` when there is one)
ALL_SPLITS = "all"


def read_qrels(path: str | Path) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Graded judgments from a TSV with a header (``query-id corpus-id score``) or from a
    TREC qrels file (``qid 0 docid rel``), and notes on what was read past: a (query,
    document) pair judged again with another grade (the later line's grade is used) and
    negative grades (read as 0, not relevant, as TREC counts them; a negative gain would
    lower nDCG for showing a document). A line that repeats the header is skipped, so that
    two qrels files joined with ``cat`` read as one. A line that cannot be read is an
    :class:`InputError` naming the file and line."""
    qrels: dict[str, dict[str, int]] = {}
    path = Path(path)
    seen: dict[tuple[str, str], tuple[int, str]] = {}  # the line and grade of each pair
    conflicts: list[tuple[str, str, int, str, int, str]] = []
    negative: list[tuple[int, str, str, str]] = []
    header = None
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            parts = line.split()
            if n == 1 and parts and not _is_number(parts[-1]):
                header = parts
            if not parts or parts == header:
                continue  # blank line, header, or the header again (files joined)
            if len(parts) == 3:
                qid, did, rel = parts
            elif len(parts) == 4:
                qid, _, did, rel = parts
            else:
                raise InputError(f"{path}:{n}: expected 3 or 4 columns, got {len(parts)}")
            grade = _grade(rel)
            if grade is None:
                raise InputError(f"{path}:{n}: relevance must be an integer grade, got {rel!r}")
            if grade < 0:
                negative.append((n, qid, did, rel))
                grade = 0
            judged = qrels.setdefault(qid, {})
            if did in judged and judged[did] != grade:
                conflicts.append((qid, did, *seen[qid, did], n, rel))
            judged[did] = grade
            seen[qid, did] = (n, rel)
    return qrels, _notes(path, conflicts, negative)


def split_files(folder: str | Path, split: str) -> list[Path]:
    """The qrels files a split name (without its ``:odd``/``:even``) names in ``folder``:
    ``qrels/<split>.tsv``; for several names, comma-separated (``train,test``), one file
    each, in that order; for ``all``, ``qrels/all.tsv`` when the folder has one, else every
    ``qrels/*.tsv`` in name order. They need not exist (the caller checks)."""
    qrels = Path(folder) / "qrels"
    if split == ALL_SPLITS and not (qrels / "all.tsv").exists():
        return sorted(qrels.glob("*.tsv")) or [qrels / "all.tsv"]
    names = list(dict.fromkeys(n.strip() for n in split.split(",")))
    return [qrels / f"{name}.tsv" for name in names]


def read_splits(paths: list[Path]) -> tuple[dict[str, dict[str, int]], list[str]]:
    """The judgments of several qrels files as one (:func:`read_qrels` for one file): a
    query judged in more than one is one query, its judgments joined (said in a note); a
    pair graded differently by two files takes the later file's grade (said too)."""
    if len(paths) == 1:
        return read_qrels(paths[0])
    qrels: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    shared: list[str] = []
    regraded: list[tuple[str, str, str]] = []
    for path in paths:
        own, said = read_qrels(path)
        notes += said
        for qid, judged in own.items():
            if qid in qrels:
                shared.append(qid)
                have = qrels[qid]
                regraded += [(qid, d, path.name) for d, g in judged.items() if have.get(d, g) != g]
            qrels.setdefault(qid, {}).update(judged)
    names = ", ".join(p.name for p in paths)
    if shared:
        count = len(set(shared))
        sample = ", ".join(repr(q) for q in dict.fromkeys(shared[:3]))
        what = "1 query is" if count == 1 else f"{count} queries are"
        notes.append(
            f"{what} judged in more than one of {names} ({sample}"
            f"{', ...' if count > 3 else ''}): each is evaluated once, with the "
            "judgments of every file joined"
        )
    if regraded:
        qid, did, name = regraded[0]
        more = f" ({len(regraded)} pairs in all)" if len(regraded) > 1 else ""
        notes.append(
            f"query {qid!r} grades document {did!r} differently in two of {names}{more}; "
            f"the later file's grade ({name}) is used"
        )
    return qrels, notes


def load_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Graded judgments as :func:`read_qrels` reads them (query id -> document id ->
    grade), its notes logged as warnings."""
    qrels, notes = read_qrels(path)
    for message in notes:
        logger.warning(message)
    return qrels


def _notes(
    path: Path,
    conflicts: list[tuple[str, str, int, str, int, str]],
    negative: list[tuple[int, str, str, str]],
) -> list[str]:
    notes = []
    if conflicts:
        qid, did, first, was, later, now = conflicts[0]
        more = f" ({len(conflicts)} pairs in all)" if len(conflicts) > 1 else ""
        notes.append(
            f"{path}: query {qid!r} judges document {did!r} twice with different grades "
            f"(line {first}: {was}, line {later}: {now}){more}; the later line's grade is used"
        )
    if negative:
        n, qid, did, rel = negative[0]
        count = len(negative)
        what = "1 judgment has" if count == 1 else f"{count} judgments have"
        notes.append(
            f"{path}: {what} a negative grade (line {n}: query {qid!r}, document {did!r}, "
            f"{rel}); negative grades are read as 0, not relevant, as TREC counts them"
        )
    return notes


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _grade(text: str) -> int | None:
    """An integer grade from ``"2"`` or ``"2.0"`` (as some tools write them); None otherwise."""
    value = float(text) if _is_number(text) else math.nan
    return int(value) if value.is_integer() else None


def splits_hint(path: Path, needed: str) -> str:
    """The splits ``path/qrels`` holds, and how to name one, for a split that is not there
    (``needed``: its file, ``qrels/NAME.tsv``), or the rename a file so named needs."""
    other = sorted((path / "qrels").glob(f"{Path(needed).stem}.*"))
    if other:  # qrels/test.txt, say: TREC qrels are read from .tsv files too
        return f"; found qrels/{other[0].name}: name it {needed}"
    splits = sorted(p.stem for p in (path / "qrels").glob("*.tsv"))
    if not splits:
        return "; no qrels/*.tsv found"
    one = splits[0]
    use = said_for(f"split={one!r}", f"--split {one} (on tune, --test-split {one})")
    return f"; splits found: {', '.join(splits)}; read one with {use}"
