"""What a :class:`~rerankit.eval.data.Dataset` is checked for: the shapes of a collection
built in memory (:func:`checked`), and whether its judgments name the queries and documents
it holds (:func:`check_ids`, which :func:`~rerankit.eval.data.load_beir` runs on files).

A collection in memory takes the shapes BEIR's ``GenericDataLoader`` returns: the corpus
maps a doc id to ``{"title": ..., "text": ...}`` (the title may be left out, None or NaN), the
queries map a query id to its text, the qrels map a query id to doc id -> integer grade. A
document given as a bare string is read as its text (with no title), as a ``rerank`` reads
one; ids may be integers (read as strings, as a run file's ids are). Every mistake is an
:class:`~rerankit.errors.InputError` naming the argument, the id and the field, and saying
what is expected."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from .._words import counted
from ..errors import InputError

__all__ = ["check_ids", "checked", "evaluation_only", "in_memory_ids", "no_query"]

#: the shape each argument takes, as errors say it
SHAPES = {
    "corpus": "a mapping doc id -> {'title': ..., 'text': ...} (or doc id -> its text)",
    "queries": "a mapping query id -> query text",
    "qrels": "a mapping query id -> {doc id: grade}",
}

#: how to build each argument from a DataFrame (recognised by its ``to_dict``)
_FROM_FRAME = {
    "corpus": "df.set_index('_id')[['title', 'text']].to_dict('index')",
    "queries": "dict(zip(df['_id'], df['text']))",
    "qrels": "{q: dict(zip(g['corpus-id'], g['score'])) for q, g in df.groupby('query-id')}",
}


def checked(
    corpus: Any, queries: Any, qrels: Any
) -> tuple[dict[str, Any], dict[str, str], dict[str, dict[str, int]], list[str]]:
    """``corpus``, ``queries`` and ``qrels`` as a :class:`~rerankit.eval.data.Dataset`
    holds them, and notes on what was read past (negative grades, read as 0). Each is the
    object given when it needs no change, else a new one: what the caller passed is never
    changed. Raises an :class:`InputError` naming the first mistake."""
    for name, value in (("corpus", corpus), ("queries", queries), ("qrels", qrels)):
        _mapping(name, value)
    if not corpus:
        raise InputError(f"corpus: empty; expected {SHAPES['corpus']}")
    if not queries:
        raise InputError(f"queries: empty; expected {SHAPES['queries']}")
    notes: list[str] = []
    return _corpus(corpus), _queries(queries), _qrels(qrels, notes), notes


def _mapping(name: str, value: Any) -> None:
    if isinstance(value, Mapping):
        return
    hint = f"; from a DataFrame: {_FROM_FRAME[name]}" if hasattr(value, "to_dict") else ""
    raise InputError(f"{name}: expected {SHAPES[name]}, got {type(value).__name__}{hint}")


def _ids(name: str, what: str, given: Mapping[Any, Any]) -> list[str]:
    """The keys of ``given`` as strings (an integer is one); an error for any other, or
    for two keys that read as the same string (``1`` and ``'1'``)."""
    out, seen = [], {}
    for key in given:
        if not isinstance(key, str) and not (
            isinstance(key, Integral) and not isinstance(key, bool)
        ):
            raise InputError(
                f"{name}: {what} id {key!r} is a {type(key).__name__}; ids are strings "
                "(or integers, read as strings)"
            )
        text = str(key)
        if text in seen:
            raise InputError(f"{name}: {what} id {text!r} is given twice ({seen[text]!r}, {key!r})")
        seen[text] = key
        out.append(text)
    return out


def _keys(name: str, what: str, given: Mapping[Any, Any]) -> list[str] | None:
    """:func:`_ids`, or None when every key is a string already (the common case, quick)."""
    if all(type(k) is str for k in given):
        return None
    return _ids(name, what, given)


def _corpus(corpus: Mapping[Any, Any]) -> dict[str, Any]:
    ids = _keys("corpus", "doc", corpus)
    fixed: dict[Any, Any] = {}  # the documents stored in another form than given
    some_text = False
    for key, doc in corpus.items():
        if type(doc) is dict:  # the quick path, for the shape BEIR's loader returns
            text, title = doc.get("text"), doc.get("title")
            if type(text) is str and (title is None or type(title) is str):
                some_text = some_text or bool(text.strip() or (title or "").strip())
                continue
        if isinstance(doc, str):
            fixed[key] = {"title": "", "text": doc}
        else:
            fixed[key] = _document(str(key), doc)
        some_text = some_text or bool(fixed[key]["text"].strip() or fixed[key]["title"].strip())
    if not some_text:
        raise InputError("corpus: no document has any text or title (every 'text' is empty)")
    if ids is None and not fixed:
        return corpus if isinstance(corpus, dict) else dict(corpus)
    return {
        i: fixed.get(k, d) for i, (k, d) in zip(ids or list(corpus), corpus.items(), strict=True)
    }


def _document(doc_id: str, doc: Any) -> dict[str, str]:
    """A document given as a mapping, as ``{"title", "text"}`` strings; an error saying
    what is wrong when it has no ``text`` string. Its title is read as a reranked
    document's is (:func:`~rerankit.titles.read_title`): a number as text, None or NaN (an
    empty pandas cell) as no title."""
    where = f"corpus: document {doc_id!r}"
    if not isinstance(doc, Mapping):
        hint = ""
        if hasattr(doc, "text"):  # an ir_datasets document, say
            hint = "; from objects with a .text: {d.doc_id: {'text': d.text} for d in docs}"
        raise InputError(
            f"{where} is a {type(doc).__name__}; expected a mapping "
            f"{{'title': ..., 'text': ...}} or the text itself{hint}"
        )
    if "text" not in doc:
        found = ", ".join(repr(k) for k in list(doc)[:5]) or "no fields"
        raise InputError(
            f"{where} has no 'text' field (found {found}): BEIR names a document's text "
            "'text' and its title 'title'; rename the field"
        )
    text = doc["text"]
    if not isinstance(text, str):
        fix = " (a missing value from pandas is NaN: fillna('') first)" if _nan(text) else ""
        raise InputError(
            f"{where}: field 'text' is {text!r:.60} ({type(text).__name__}); expected a string{fix}"
        )
    title = doc.get("title")
    if isinstance(title, Real) and not isinstance(title, bool):
        title = "" if _nan(title) else str(title)
    if title is not None and not isinstance(title, str):
        raise InputError(
            f"{where}: field 'title' is {title!r:.60} ({type(title).__name__}); expected a "
            "string, a number or None (no title)"
        )
    return {**doc, "title": title or "", "text": text}


def _queries(queries: Mapping[Any, Any]) -> dict[str, str]:
    ids = _keys("queries", "query", queries)
    for key, text in queries.items():
        if isinstance(text, str) and text.strip():
            continue
        qid = str(key)
        if isinstance(text, str):
            raise InputError(f"queries: query {qid!r} has an empty text")
        hint = ""
        if isinstance(text, Mapping) and isinstance(text.get("text"), str):
            hint = " (give the text itself: {qid: q['text'] for qid, q in queries.items()})"
        raise InputError(
            f"queries: query {qid!r} is {text!r:.60} ({type(text).__name__}); "
            f"expected its text, a string{hint}"
        )
    if ids is None and isinstance(queries, dict):
        return queries
    return dict(zip(ids or list(queries), queries.values(), strict=True))


def _qrels(qrels: Mapping[Any, Any], notes: list[str]) -> dict[str, dict[str, int]]:
    ids = _ids("qrels", "query", qrels)
    out, changed, negative = {}, not isinstance(qrels, dict), []
    for qid, (key, judged) in zip(ids, qrels.items(), strict=True):
        changed = changed or qid is not key or not isinstance(judged, dict)
        where = f"qrels: query {qid!r}"
        if not isinstance(judged, Mapping):
            raise InputError(
                f"{where} is {judged!r:.60} ({type(judged).__name__}); expected a mapping "
                "doc id -> grade ({'d1': 1, 'd7': 0})"
            )
        grades = {}
        for did, (doc_key, grade) in zip(_ids(where, "doc", judged), judged.items(), strict=True):
            value = _grade(grade, f"{where}, document {did!r}")
            if value < 0:
                negative.append((qid, did, grade))
                value = 0
            changed = changed or did is not doc_key or value is not grade
            grades[did] = value
        out[qid] = grades
    if negative:
        qid, did, grade = negative[0]
        what = "1 judgment has" if len(negative) == 1 else f"{len(negative)} judgments have"
        notes.append(
            f"qrels: {what} a negative grade (query {qid!r}, document {did!r}, {grade!r}); "
            "negative grades are read as 0, not relevant, as TREC counts them"
        )
    return out if changed else qrels


def _grade(grade: Any, where: str) -> int:
    """An integer grade: an integer, or a float that is one (``2.0``, as a DataFrame holds)."""
    if isinstance(grade, Integral) and not isinstance(grade, bool):
        return grade if type(grade) is int else int(grade)
    if isinstance(grade, Real) and not isinstance(grade, bool) and float(grade).is_integer():
        return int(grade)
    raise InputError(
        f"{where}: the grade must be an integer (0 not relevant, 1 or more relevant), "
        f"got {grade!r} ({type(grade).__name__})"
    )


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def check_ids(
    source: Path | str,
    qrels: dict[str, dict[str, int]],
    queries: dict[str, str],
    corpus: dict[str, Any],
    *,
    queries_named: str = "queries.jsonl",
    corpus_named: str = "corpus.jsonl",
) -> list[str]:
    """Notes on qrels and the other files not naming the same things (the caller logs them):
    judged queries missing from queries.jsonl are left out; judged documents none of which
    is in the corpus mean the ids do not match (an error). Relevant documents missing from
    a corpus that holds others are said and kept: they count in the ideal ranking (nDCG's
    and recall's denominators) and are never retrieved, as trec_eval counts a judged
    document no run found. That is right for a corpus of a first stage's candidates, and
    shows a mistyped id for what it is. ``queries_named`` and ``corpus_named``: how the
    notes name the queries and the corpus (a collection in memory has no files)."""
    if not qrels or not queries:
        return []  # no qrels, or none of its queries: the caller says so
    notes = []
    lost = [q for q in qrels if q not in queries]
    if lost:
        sample = ", ".join(repr(q) for q in lost[:3]) + (", ..." if len(lost) > 3 else "")
        notes.append(
            f"{source}: {len(lost)} of its {counted(len(qrels), 'judged query', 'judged queries')} "
            f"{'is' if len(lost) == 1 else 'are'} not in {queries_named} and "
            f"{'is' if len(lost) == 1 else 'are'} left out ({sample})"
        )
    judged = [d for q, docs in qrels.items() if q in queries for d in docs]
    if judged and not any(d in corpus for d in judged):
        raise InputError(
            f"{source}: none of the {len(set(judged))} documents it judges is in "
            f"{corpus_named} (it names {judged[0]!r}; the corpus has ids such as "
            f"{next(iter(corpus), None)!r}): do the two use the same ids?"
        )
    relevant = (d for q, docs in qrels.items() if q in queries for d, g in docs.items() if g > 0)
    absent = [d for d in dict.fromkeys(relevant) if d not in corpus]
    if absent:
        notes.append(_absent_note(source, absent, corpus_named))
    return notes


def in_memory_ids(
    qrels: dict[str, dict[str, int]], queries: dict[str, str], corpus: dict[str, Any]
) -> list[str]:
    """:func:`check_ids` for a collection built in memory, and an error when qrels are
    given and none of their queries is among ``queries`` (an unjudged query is normal: it
    is reranked and not scored)."""
    if qrels and not any(q in queries for q in qrels):
        raise InputError(
            f"qrels: none of its {len(qrels)} query ids is in queries (it names "
            f"{next(iter(qrels))!r}; queries has ids such as {next(iter(queries))!r}): do "
            "the two use the same ids?"
        )
    return check_ids(
        "qrels", qrels, queries, corpus, queries_named="queries", corpus_named="the corpus"
    )


#: how :func:`_absent_note` begins after its source: the note only an evaluation needs
_ABSENT = re.compile(r"relevant judged documents? (is|are) not in (corpus\.jsonl|the corpus)")


def evaluation_only(note: str) -> bool:
    """Whether a note of :attr:`Dataset.notes` matters to an evaluation only (relevant
    judged documents missing from the corpus: nDCG's ideal ranking and recall's
    denominator), not to a run that only reranks the queries' candidates."""
    return _ABSENT.search(note) is not None


def _absent_note(source: Path | str, absent: list[str], corpus_named: str) -> str:
    """What to say of relevant judged documents missing from the corpus."""
    sample = ", ".join(repr(d) for d in absent[:3]) + (", ..." if len(absent) > 3 else "")
    if len(absent) == 1:
        what, count = "1 relevant judged document is", "it counts"
    else:
        what, count = f"{len(absent)} relevant judged documents are", "they count"
    return (
        f"{source}: {what} not in {corpus_named} ({sample}); {count} as relevant and never "
        "retrieved (in the ideal ranking of nDCG and in recall's denominator)"
    )


def no_query(source: Path, qrels: dict[str, dict[str, int]], judged: int, split: str) -> str:
    """Why a split read from ``source`` (its qrels file; the folder when it has none) keeps
    no query: the file holds no judgment, the half ``split`` names keeps none of its
    ``judged`` queries, or none of the queries ``qrels`` names is in queries.jsonl."""
    if source.is_dir():
        return f"{source / 'queries.jsonl'}: holds no query"
    if not qrels:
        return (
            f"{source}: holds no judgment (one query-id<TAB>corpus-id<TAB>score line each, "
            "after an optional header)"
        )
    if judged:
        whole = split.partition(":")[0]
        return (
            f"{split} keeps none of the {judged} judged quer{'y' if judged == 1 else 'ies'} of "
            f"{source} (a half by position in queries.jsonl): read {whole}, or judge more queries"
        )
    sample = ", ".join(repr(q) for q in list(qrels)[:3])
    return (
        f"{source}: none of its {len(qrels)} query ids "
        f"({sample}{', ...' if len(qrels) > 3 else ''}) is in queries.jsonl"
    )


def not_a_run(path: Path, n: int, columns: int) -> str:
    """The error for line ``n`` of a TREC run file that has ``columns`` columns, not 6:
    what a run line is, and the other form a first stage can take."""
    qrels = (
        " (a qrels file? judgments go in the folder's qrels/, the run is your retriever's ranking)"
        if columns in (3, 4)
        else ""
    )
    return (
        f"{path}:{n}: expected 6 columns, got {columns}{qrels}: a TREC run has one line per "
        "candidate, 'qid Q0 docid rank score tag' (whitespace-separated); JSON Lines "
        '({"query_id": "q1", "candidates": [{"id": "d3", "first_stage_score": 12.1}]} a line) '
        "are read as candidates whatever the file's name (.jsonl, .json)"
    )
