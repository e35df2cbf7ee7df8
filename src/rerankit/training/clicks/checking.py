"""Checking a click log before learning from it (``rerankit check --clicks LOG``): every
line read as :func:`~.reader.read_log` reads it, with what the reader would skip or ignore
named by file and line (a bad record; a field the format does not have, most often a
misspelt one, which the reader ignores), what it leaves out of the sessions (feedback
naming no answer or no document, ...), whether each document's text can be had (from the
log, or from the corpus a log of hashes or ids needs: by its hash, else its id), and
whether the log holds enough to learn from (:data:`~..crossval.MIN_QUERIES` queries with
a click in the first positions). It computes no feature and loads no model."""

from __future__ import annotations

import difflib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..._renamed import one_name
from ..._words import counted
from ...errors import InputError
from ..crossval import MIN_QUERIES
from .from_log import FAR_TOO_FEW, MORE_CLICKS, NEEDED_SESSIONS, given_corpus
from .reader import ReadReport, Session, logs_files, read_log
from .sessions import DEPTH, CorpusTexts, collect, with_texts

__all__ = ["FIELDS", "LogCheck", "check_log"]

#: the fields of the format (docs/clicks.md, "The format"), by what holds them
FIELDS: dict[str, frozenset[str]] = {
    "impression": frozenset(
        "type id time pipeline query query_id documents shown scores explore interleaving "
        "endpoint".split()
    ),
    "document": frozenset("id text sha256 first_stage_score positional".split()),
    "feedback": frozenset("type id time clicks dwell_ms unchecked".split()),
}


@dataclass
class LogCheck:
    """What :func:`check_log` found: ``read`` (the reader's counts and notes), the fields
    the format does not have (``unknown``: ``"impression.dwell"`` -> (records, where the
    first is)), the sessions, queries and clicks learning would read, the documents' texts
    and, with a corpus, how they were found."""

    read: ReadReport
    unknown: dict[str, tuple[int, str]] = field(default_factory=dict)
    sessions: int = 0
    queries: int = 0
    clicked_queries: int = 0
    clicks: int = 0
    counted_clicks: int = 0
    pipelines: dict[str, int] = field(default_factory=dict)
    interleaved: int = 0
    explored: int = 0
    #: documents by what the log keeps of them: "text", "hash" or "id"
    kept: dict[str, int] = field(default_factory=dict)
    corpus: bool = False
    #: logged hashes not found in the corpus (each document then looked up by its id)
    hash_misses: int = 0
    #: impressions with a document whose text cannot be had (left out of learning)
    without_text: int = 0
    #: why the first of them has none (its query, the document, what the log keeps)
    example: str = ""
    #: of them, those whose document came without an id and with no text nor hash: no
    #: corpus can give its text
    no_corpus_helps: int = 0
    depth: int = DEPTH

    def mistakes(self) -> list[str]:
        """What stops learning or is lost from it: bad lines, and a log too thin to learn
        from (no impression with every text, fewer queries with a click than learning
        needs)."""
        out = []
        if self.read.malformed:
            out.append(
                f"{counted(self.read.malformed, 'bad line')} (the reader skips "
                f"{'it' if self.read.malformed == 1 else 'them'}): see the lines named below"
            )
        if not self.read.impressions:
            out.append("no impression: learning needs impressions and their feedback")
        elif not self.sessions and self.no_corpus_helps == self.without_text:
            out.append(
                "no impression can be learned from: each has a document without a text, "
                f"which no corpus can give; e.g. {self.example}"
            )
        elif not self.sessions:
            out.append(
                "no impression can be learned from: each has a document without a text "
                + ("in the log or the corpus" if self.corpus else "(pass the corpus: --data)")
            )
        elif self.clicked_queries < MIN_QUERIES:
            out.append(
                f"too few clicks to learn from: {self.clicked_queries} of the {self.queries} "
                f"queries have a click in the first {self.depth} positions; learning needs at "
                f"least {MIN_QUERIES}, and many sessions each: {MORE_CLICKS}"
            )
        return out

    def warnings(self) -> list[str]:
        """What the reader ignores or leaves out, and texts it cannot find."""
        out = []
        for name, (n, where) in sorted(self.unknown.items()):
            holder, key = name.split(".", 1)
            near = difflib.get_close_matches(key, sorted(FIELDS[holder]), n=1)
            known = f"did you mean {near[0]!r}?" if near else "a " + holder + "'s fields: "
            known += "" if near else ", ".join(sorted(FIELDS[holder]))
            if name == "document.title":
                known = "a title goes in the text, or its hash: the title, a newline, the text"
            out.append(
                f"{where}: {holder} field {key!r} is not in the format, and the reader ignores "
                f"it ({counted(n, 'record')}; {known})"
            )
        if self.without_text and self.sessions:  # none left: a mistake says it
            fix = "not in the corpus given" if self.corpus else "pass the corpus: --data"
            if self.no_corpus_helps == self.without_text:
                fix = "which no corpus can give"
            out.append(
                f"{counted(self.without_text, 'impression')} with a document without a text "
                f"({fix}): left out of learning; e.g. {self.example}"
            )
        if self.clicked_queries >= MIN_QUERIES and self.sessions < FAR_TOO_FEW:
            out.append(
                f"{counted(self.sessions, 'session')} are far too few for learning's verdict: "
                "tune --clicks keeps what served the log; about "
                f"{NEEDED_SESSIONS:,} are needed (hundreds of queries with about a hundred "
                f"sessions each): {MORE_CLICKS}"
            )
        if self.hash_misses:
            out.append(
                f"{counted(self.hash_misses, 'document')} whose logged hash no corpus text "
                "has: looked up by id instead, so learning reads a text other than the one "
                "the ranker read (a hash is of the title, a newline, then the text: "
                "docs/clicks.md, 'Which text')"
            )
        return out

    def describe(self) -> str:
        """What was read, what learning would get, then each mistake and warning, and the
        reader's notes (file and line), one a line."""
        lines = [self.read.describe().split("\n")[0]]
        served = ", ".join(f"{name or '(unnamed)'} {n}" for name, n in self.pipelines.items())
        extra = [
            f"{n} {what}"
            for n, what in ((self.interleaved, "interleaved"), (self.explored, "explored"))
            if n
        ]
        if served:
            lines.append(
                f"sessions by pipeline: {served}" + (f" ({', '.join(extra)})" if extra else "")
            )
        kept = ", ".join(f"{n} with {what}" for what, n in self.kept.items() if n)
        if kept:
            lines.append(f"documents: {kept}" + ("" if self.corpus else " (no corpus given)"))
        lines.append(
            f"learning would read {counted(self.sessions, 'session')} of "
            f"{counted(self.queries, 'query', 'queries')} ({self.clicked_queries} with a click), "
            f"with {counted(self.counted_clicks, 'click')} in the first {self.depth} positions "
            f"({self.clicks} in the log)"
        )
        lines += [f"mistake: {m}" for m in self.mistakes()]
        lines += [f"warning: {w}" for w in self.warnings()]
        lines += [f"  {problem}" for problem in self.read.problems]
        return "\n".join(lines)


def _unknown_fields(files: Sequence[Path]) -> dict[str, tuple[int, str]]:
    """Fields the format does not have, by ``holder.field``: how many records have each,
    and the file and line of the first."""
    found: dict[str, tuple[int, str]] = {}

    def see(name: str, where: str) -> None:
        n, first = found.get(name, (0, where))
        found[name] = (n + 1, first)

    for path in files:
        with open(path, encoding="utf-8-sig") as handle:
            for lineno, line in enumerate(handle, start=1):
                try:
                    value = json.loads(line) if line.strip() else None
                except ValueError:
                    continue  # a bad line: the reader names it
                if not isinstance(value, Mapping) or value.get("type") not in FIELDS:
                    continue
                kind, where = value["type"], f"{path}:{lineno}"
                for key in set(value) - FIELDS[kind]:
                    see(f"{kind}.{key}", where)
                docs = value.get("documents") if kind == "impression" else None
                for key in {k for d in docs or () if isinstance(d, Mapping) for k in d}:
                    if key not in FIELDS["document"]:
                        see(f"document.{key}", where)
    return found


def _texts(check: LogCheck, sessions: Sequence[Session], texts: CorpusTexts) -> None:
    """Count what the log keeps of each document and, with a corpus, the hashes it lacks."""
    kept: Counter[str] = Counter()
    for s in sessions:
        for d in s.impression.documents:
            kept["text" if d.text is not None else "hash" if d.sha256 else "id"] += 1
            if d.text is None and d.sha256 and texts.given:
                check.hash_misses += not texts.has_hash(d.sha256)
    check.kept = {what: kept[what] for what in ("text", "hash", "id") if kept[what]}


def check_log(
    paths: str | Path | Sequence[str | Path],
    *,
    data: Mapping[str, str] | str | Path | None = None,
    depth: int = DEPTH,
    max_feedback_delay: float | None = None,
    corpus: Mapping[str, str] | None = None,
) -> LogCheck:
    """Check the click log(s) at ``paths`` (each with its rotated files), as ``rerankit
    check --clicks`` does: see the module doc. ``data``: the corpus of a log that kept
    hashes or ids, as ``--data`` names it: its path (a folder with ``corpus.jsonl``, or the
    file) or document id -> text (:func:`~.from_log.read_corpus`; ``corpus``, its earlier
    name, still works); ``depth``, ``max_feedback_delay``: as learning takes them."""
    corpus = given_corpus(one_name("check_log", "data", data, "corpus", corpus))
    logs = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not logs:
        raise InputError("no click log to check")
    files = logs_files(logs)
    sessions, report = read_log(files, max_feedback_delay=max_feedback_delay)
    check = LogCheck(report, _unknown_fields(files), corpus=corpus is not None, depth=depth)
    texts = CorpusTexts(corpus)
    _texts(check, sessions, texts)
    usable = with_texts(sessions, texts, ReadReport())
    check.without_text = len(sessions) - len(usable)
    kept = {id(s) for s in usable}
    for s in (s for s in sessions if id(s) not in kept):
        if not check.example:
            check.example = f"impression {s.impression.id}: {texts.why_not(s.impression)}"
        check.no_corpus_helps += any(
            d.positional and d.text is None and not d.sha256 for d in s.impression.documents
        )
    grouped = collect(usable, depth=depth)
    check.sessions, check.queries = len(usable), len(grouped)
    check.clicked_queries = sum(bool(q.clicked.any()) for q in grouped.values())
    check.clicks = sum(len(s.clicks) for s in sessions)
    check.counted_clicks = int(sum(q.clicked.sum() for q in grouped.values()))
    check.pipelines = dict(Counter(s.impression.pipeline for s in sessions).most_common())
    check.interleaved = sum(isinstance(s.impression.interleaving, Mapping) for s in sessions)
    check.explored = sum(s.impression.explore is not None for s in sessions)
    return check
