"""What a batch run does with an ``--out`` that already holds rows: refuse it (the
default), start again (``overwrite``), or go on after its finished rows (``resume``); and
:class:`BatchInterrupted`, the Ctrl-C that says how far the output got."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

from .. import registry
from .._optional import require
from .._words import counted
from ..cache.keys import canonical_json, digest
from ..config import PIPELINE_SUFFIXES, read_pipeline
from ..errors import InputError, said_for
from .io import input_format
from .rows import DIGEST_KEY, BatchSummary, RowFields, candidates_digest, row_key

__all__ = [
    "PIPELINE_KEY",
    "SETTINGS_KEY",
    "BatchInterrupted",
    "Finished",
    "OutputHoldsRows",
    "OutputRefused",
    "finished_rows",
    "output_rows",
    "pipeline_settings",
    "pipeline_tag",
    "skip_finished",
]

logger = logging.getLogger(__name__)

#: the output row's field naming the pipeline that ranked it (``NAME@FINGERPRINT``), which
#: ``resume`` checks against the resuming run's
PIPELINE_KEY = "reranked_by"

#: the output row's field holding the settings its pipeline was run with, in words a
#: refusal can name (``{"quantize": "int8", "top_k": 5}`` as JSON text; ``{}``: none)
SETTINGS_KEY = "reranked_with"

#: the flags (and keywords) of the settings :data:`SETTINGS_KEY` records
_SETTING_FLAGS = {
    "backend": ("backend", "--backend"),
    "quantize": ("quantize", "--quantize"),
    "language": ("language", "--language"),
    "top_k": ("top_k", "--top-k"),
    "fields": ("fields", "the text fields (--text-field, --text-fields, --id-field, ...)"),
    "keep_candidates": ("keep_candidates", "--no-candidates"),
}


class OutputRefused(InputError):
    """What the run was asked to do with its output cannot be done: refused before any
    work (``rerankit batch`` exits 2, a usage error): an output that already holds rows
    (:class:`OutputHoldsRows`), ``resume`` with a Parquet output or with ``overwrite``, or
    an output written from other rows or by another pipeline."""


class OutputHoldsRows(OutputRefused):
    """The output already holds rows and the run was told neither to resume nor to
    overwrite it: refused before any work (``rerankit batch`` exits 2, a usage error)."""


def _changed(value: Any) -> Any:
    """A dataclass option (:class:`~rerankit.InputFields`) as the fields it sets to other
    than their defaults (None: all defaults); any other value as it is."""
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return value
    out = {}
    for f in dataclasses.fields(value):
        if getattr(value, f.name) != f.default:
            item = getattr(value, f.name)
            out[f.name] = list(item) if isinstance(item, tuple) else item
    return out or None


def _output_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The rerank options that change what a batch writes, those set to other than their
    defaults (so a run with none keeps the tag an earlier rerankit wrote)."""
    out = {}
    for key, value in (options or {}).items():
        value = _changed(value)
        if value is None or (key == "keep_candidates" and value is True):
            continue
        out[key] = value
    return out


def pipeline_tag(pipeline: Any, options: Mapping[str, Any] | None = None) -> str:
    """``NAME@FINGERPRINT`` of the pipeline a batch runs, written in each output row
    (:data:`PIPELINE_KEY`): its name (a registered name, a pipeline file's name, a spec's
    reranker type) and 12 hex digits of its declared form (a file's contents, not its path;
    a reranker object is told apart by its class only) with the rerank ``options`` that
    change the rows written (``top_k``, ``fields`` such as ``text_fields``,
    ``keep_candidates=False``), when set: resuming with other options is another run."""
    spec: Any = pipeline
    if isinstance(pipeline, Path) or (
        isinstance(pipeline, str) and Path(pipeline).suffix.lower() in PIPELINE_SUFFIXES
    ):
        name, spec = Path(pipeline).name, read_pipeline(pipeline)
    elif isinstance(pipeline, str):  # either spelling of a registered name: one tag
        name = spec = registry.canonical("reranker", pipeline) or pipeline
    elif isinstance(pipeline, Mapping):
        inner = pipeline.get("reranker")
        kind = inner.get("type") if isinstance(inner, Mapping) else None
        name = str(kind or pipeline.get("name") or "spec")
    else:
        name = spec = f"{type(pipeline).__module__}.{type(pipeline).__qualname__}"
    settings = _output_options(options)
    declared = {"pipeline": spec, "options": settings} if settings else spec
    try:
        text = canonical_json(declared, "pipeline")
    except TypeError:  # a spec holding an object: its text
        text = repr(declared)
    return f"{name}@{digest(text, 12)}"


def pipeline_settings(pipeline: Any, options: Mapping[str, Any] | None = None) -> str:
    """The settings of a run that :func:`pipeline_tag` digests, as JSON text that names
    them: a registered reranker's options (``--quantize``, ``--backend``, ``--language``
    give them) and the rerank ``options`` that change the rows written; a pipeline file's
    or spec's own contents are told apart by the tag alone."""
    settings: dict[str, Any] = {}
    inner = pipeline.get("reranker") if isinstance(pipeline, Mapping) else None
    if isinstance(inner, Mapping) and set(pipeline) == {"reranker"}:
        settings.update({k: v for k, v in inner.items() if k != "type"})
    settings.update(_output_options(options))
    try:
        return canonical_json(settings, "settings")
    except TypeError:
        return json.dumps(settings, sort_keys=True, default=repr)


def _way(flag: str, keyword: str) -> str:
    """``--resume (resume=True)`` for Python, ``--resume`` at the command line."""
    return said_for(f"{flag} ({keyword}=True)", flag)


class BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGINT) during a batch run: the rows written so far are whole lines in
    ``output`` and ``summary`` counts them (``summary.interrupted`` is set); a run with
    ``resume=True`` (``--resume``) goes on from there. A ``KeyboardInterrupt``, so code
    that does not catch it stops as on any Ctrl-C."""

    def __init__(self, summary: BatchSummary, output: str | Path) -> None:
        held = counted(summary.rows + summary.skipped, "row")
        super().__init__(f"interrupted after {held} in {output}")
        self.summary, self.output = summary, Path(output)


def _parquet_rows(path: Path) -> int | None:
    """The rows of a Parquet file, or None when it cannot be read (cut short)."""
    pq = require("pyarrow.parquet", "Parquet output")
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception:  # no footer: the run that wrote it was killed
        return None


class Finished(NamedTuple):
    """The whole rows of a JSON Lines batch output: their (query id, query) ``keys``;
    the ``digests`` of the candidates each was ranked from (its :data:`DIGEST_KEY`, or
    the digest of the candidates it holds, for a row written before rerankit recorded one;
    None: neither, not checked); the byte length ``end`` of those rows (a last line without
    its newline, of a run killed while writing it, is not counted); how many were written
    with an error (``failed``); the pipelines that wrote them (:data:`PIPELINE_KEY`;
    ``None``: an earlier rerankit's row, which recorded none) with their row counts, and
    the settings each recorded (:data:`SETTINGS_KEY`)."""

    keys: list[tuple[Any, Any]]
    digests: list[str | None]
    end: int
    failed: int
    writers: dict[Any, int]
    settings: dict[Any, Any]


def finished_rows(path: str | Path, names: RowFields | None = None) -> Finished:
    """The :class:`Finished` rows of the batch output ``path``. A whole line that is not a
    JSON object means the file is not a batch output: refused."""
    names = names or RowFields()
    data = Path(path).read_bytes()
    end = data.rfind(b"\n") + 1  # a cut last line (no newline) is left out
    keys, digests, failed, writers, settings = [], [], 0, {}, {}
    for number, line in enumerate(data[:end].splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict):
            raise OutputRefused(
                f"{path}:{number}: not a row of a batch output (not a JSON object); "
                f"pass {_way('--overwrite', 'overwrite')} to start the file again"
            )
        keys.append(row_key(row, names))
        if DIGEST_KEY in row:
            digests.append(row[DIGEST_KEY])
        elif names.candidates in row:  # an earlier rerankit's row, with its candidates
            digests.append(candidates_digest(row[names.candidates]))
        else:
            digests.append(None)
        failed += bool(row.get("error"))
        writer = row.get(PIPELINE_KEY)
        writers[writer] = writers.get(writer, 0) + 1
        settings.setdefault(writer, row.get(SETTINGS_KEY))
    return Finished(keys, digests, end, failed, writers, settings)


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"


def _differences(other: str, theirs: Any, pipeline: str, ours: str | None) -> str:
    """What differs between the run that wrote ``other`` (its recorded settings
    ``theirs``) and this one: the reranker, the settings by their flags, or the pipeline's
    contents; the list of what could when the output recorded no settings."""
    if other.split("@")[0] != pipeline.split("@")[0]:
        return f"the reranker differs ({other.split('@')[0]} there, {pipeline.split('@')[0]} here)"
    try:
        old, new = json.loads(theirs), json.loads(ours or "{}")
    except (TypeError, ValueError):  # written before rerankit recorded its settings
        flags = [said_for(*_SETTING_FLAGS[k]) for k in _SETTING_FLAGS]
        return f"another pipeline, or other options that change the rows: {', '.join(flags)}"
    changed = []
    for key in dict.fromkeys([*old, *new]):
        if old.get(key) != new.get(key):
            keyword, flag = _SETTING_FLAGS.get(key, (key, key))
            said = said_for(keyword, flag)
            changed.append(
                f"{said} ({_setting(key, old.get(key))} there, {_setting(key, new.get(key))} here)"
            )
    if not changed:
        return "the pipeline differs (a pipeline file's or spec's contents)"
    return ("options differ: " if len(changed) > 1 else "an option differs: ") + "; ".join(changed)


def _setting(key: str, value: Any) -> str:
    """A recorded setting's value as a refusal says it (``--no-candidates``: given or not)."""
    if key == "keep_candidates":
        return said_for(str(value is not False), "not given" if value is None else "given")
    return "not set" if value is None else json.dumps(value)


def _same_pipeline(
    path: Path, held: Finished, pipeline: str | None, settings: str | None = None
) -> int:
    """Refuse to resume ``path`` when rows in it were written by another pipeline than
    this run's (``pipeline``, a :func:`pipeline_tag`, run with ``settings``, its
    :func:`pipeline_settings`), naming what differs; the rows that record none (written
    by an earlier rerankit), which cannot be checked."""
    writers = held.writers
    if pipeline is None:
        return 0
    other = [w for w in writers if w is not None and w != pipeline]
    if other:
        what = _differences(other[0], held.settings.get(other[0]), pipeline, settings)
        raise OutputRefused(
            f"{path} was written by pipeline {other[0]} ({_rows(writers[other[0]])}), and this "
            f"run's is {pipeline}: {what}. Resuming would mix two kinds of rows in one file; "
            f"run it as the run that wrote it, or pass {_way('--overwrite', 'overwrite')} to "
            "rank every row again with this one"
        )
    return writers.get(None, 0)


def output_rows(
    path: str | Path,
    *,
    resume: bool,
    overwrite: bool,
    names: RowFields | None = None,
    pipeline: str | None = None,
    settings: str | None = None,
) -> tuple[Finished, int]:
    """Check what a run may do with ``path``: its :class:`Finished` rows to skip (none,
    with ``end`` 0, when it is absent, empty or overwritten; a resumed run does not rank
    again those that hold an error: they count as failed) and how many of them record no
    pipeline (an earlier rerankit's rows: not checked). An existing non-empty output
    without ``resume`` or ``overwrite`` is refused, naming its rows and both ways on; so is
    resuming one that another pipeline than ``pipeline`` (a :func:`pipeline_tag`, run with
    ``settings``, a :func:`pipeline_settings`) wrote, naming what differs."""
    path = Path(path)
    if resume and overwrite:
        both = "give {} or {}, not both"
        raise OutputRefused(
            said_for(both.format("resume=", "overwrite="), both.format("--resume", "--overwrite"))
        )
    parquet = input_format(path) == "parquet"
    if resume and parquet:
        raise OutputRefused(
            f"{path}: {_way('--resume', 'resume')} needs a .jsonl --out: a Parquet file cannot be "
            "appended to, and one whose run was killed cannot be read"
        )
    if overwrite or not path.is_file() or path.stat().st_size == 0:
        return Finished([], [], 0, 0, {}, {}), 0
    if parquet:
        count = _parquet_rows(path)
        held = f"{count} rows" if count is not None else "rows (cut short: unreadable)"
        raise OutputHoldsRows(
            f"{path} already holds {held}; pass {_way('--overwrite', 'overwrite')} to start "
            "it again, or write JSON Lines (.jsonl) to be able to --resume"
        )
    finished = finished_rows(path, names)
    if not resume:
        raise OutputHoldsRows(
            f"{path} already holds {len(finished.keys)} rows; pass {_way('--resume', 'resume')} "
            f"to skip them and append the rest, or {_way('--overwrite', 'overwrite')} to start "
            "again"
        )
    return finished, _same_pipeline(path, finished, pipeline, settings)


def skip_finished(
    rows: Iterable[dict[str, Any]],
    finished: Finished,
    output: str | Path,
    source: str | None,
    names: RowFields | None = None,
) -> Iterator[dict[str, Any]]:
    """``rows`` after the first ``len(finished.keys)``, which are checked now against the
    finished output rows (same query ids and queries, in order, and the same candidates,
    by their digests): an output written from other rows, or from other candidates of
    the same queries (last night's, say), is refused rather than appended to."""
    keys, names = finished.keys, names or RowFields()
    rows = iter(rows)
    done = list(islice(rows, len(keys)))
    name = source or "the input"
    if len(done) < len(keys):
        raise OutputRefused(
            f"{output} holds {len(keys)} rows, more than the {len(done)} of {name}: it was "
            f"not written from these rows; pass {_way('--overwrite', 'overwrite')} to start "
            "again"
        )
    for number, (row, key) in enumerate(zip(done, keys, strict=True), start=1):
        if row_key(row, names) != key:
            got = row_key(row, names)
            raise OutputRefused(
                f"{output} does not match {name}: its row {number} is query_id {key[0]!r}, "
                f"query {key[1]!r}, the input's is query_id {got[0]!r}, query {got[1]!r}; "
                f"pass {_way('--overwrite', 'overwrite')} to start again"
            )
    for number, (row, held) in enumerate(zip(done, finished.digests, strict=True), start=1):
        if held is not None and held != candidates_digest(row.get(names.candidates)):
            changed = sum(
                h is not None and h != candidates_digest(r.get(names.candidates))
                for r, h in zip(done, finished.digests, strict=True)
            )
            raise OutputRefused(
                f"{output} was ranked from other candidates than {name} holds now: its row "
                f"{number}, query_id {row.get(names.query_id)!r}, has other candidates (ids, "
                f"texts or other fields) in the input ({changed} of the {len(keys)} rows "
                f"written {'has' if changed == 1 else 'have'} changed), so its ranking there is "
                "stale; write this run to "
                + said_for(
                    "a new output file (one a night)",
                    "a new --out (one a night: --out ranked-$(date +%F).jsonl)",
                )
                + f", or pass {_way('--overwrite', 'overwrite')} to rank every row again"
            )
    return rows
