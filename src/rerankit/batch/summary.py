"""What a batch run did, counted row by row: :class:`BatchSummary`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._jsonl import dumps_strict
from .._words import counted

__all__ = ["NOTES_KEY", "SOME_ROWS_FAILED", "BatchSummary", "truncation"]


NOTES_KEY = "_notes"  # a row's pipeline notes (see pipeline_notes), to the summary; never written

#: a scorer's warning that it read long documents in part (the passages of ``max_passages``,
#: the characters of ``max_chars``, a model's tokens): routine on a corpus of long
#: documents, so counted apart (``truncated``), not in ``warned``
_TRUNCATION = re.compile(
    r"^[^:\n]+: \d+ documents? longer than .+ (?:was read on its|were read on their) "
    r"(first|start)",
    re.S,
)


def truncation(warning: str) -> bool:
    """Whether ``warning`` only says that long documents were read in part."""
    return bool(_TRUNCATION.match(warning))


#: ``rerankit batch``'s exit status when it finished but some (not all) rows failed
SOME_ROWS_FAILED = 3


@dataclass
class BatchSummary:
    """What a batch run did: rows written, rows that failed (``error`` set), rows whose
    pipeline degraded, rows that ranked with ``warnings`` (``warned``), wall time, summed
    provider usage, and the first few errors; with ``resume``, the rows ``skipped``
    (already in the output) and how many of those hold an error (``skipped_failures``: a
    resumed run does not rank them again); ``interrupted`` when Ctrl-C (or SIGTERM)
    stopped it; ``notes``, what the pipeline's settings made it say of every row (the
    hybrid's not fusing first-stage scores), each once with its row count: such a row is
    not counted in ``warned``, which is left to the rows' own problems; ``truncated``, the
    rows ranked with long documents read in part (:func:`truncation`: routine on long
    documents, and flagged ``truncated:<scorer>`` on each), counted apart from ``warned``
    so that a monitor can alert on ``warned``; ``failed_in_output``, the failed rows the
    output holds (this run's and the skipped ones), which the exit status follows.

    ``exit_status`` is ``rerankit batch``'s: 0 when no row of the output failed, 3 when
    some did, 1 when every row did, counting the skipped rows too (``failures +
    skipped_failures`` of ``rows + skipped``): a nightly job that always resumes still
    exits 1 or 3 while its output holds failed rows. ``status(strict=True)`` is ``rerankit
    batch --strict``'s, which counts a degraded row as failed too (``failed_rows``)."""

    rows: int = 0
    failures: int = 0
    degraded: int = 0
    seconds: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    skipped: int = 0
    interrupted: bool = False
    warned: int = 0
    blank_lines: int = 0
    skipped_failures: int = 0
    notes: dict[str, int] = field(default_factory=dict)
    truncated: int = 0

    @property
    def failed_in_output(self) -> int:
        return self.failures + self.skipped_failures

    @property
    def exit_status(self) -> int:
        return self.status()

    def failed_rows(self, strict: bool = False) -> int:
        """The rows of the output that count as failed: :attr:`failed_in_output` and, with
        ``strict`` (``rerankit batch --strict``), this run's degraded rows too."""
        return self.failed_in_output + (self.degraded if strict else 0)

    def status(self, strict: bool = False) -> int:
        """:attr:`exit_status`, or with ``strict`` ``rerankit batch --strict``'s, where a
        degraded row counts as failed: 0 when no row counts as failed, 3 when some do, 1
        when every row does (of ``rows + skipped``)."""
        failed = self.failed_rows(strict)
        if not failed:
            return 0
        return 1 if failed == self.rows + self.skipped else SOME_ROWS_FAILED

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def count(self, row: Mapping[str, Any], usage: Mapping[str, int] | None = None) -> None:
        self.rows += 1
        if row.get("error"):
            self.failures += 1
            if len(self.errors) < 10:
                self.errors.append(str(row["error"]))
        self.degraded += bool(row.get("degraded"))
        warnings = [str(w) for w in row.get("warnings") or ()]
        own = [w for w in warnings if not truncation(w)]
        if not row.get("error"):
            self.warned += bool(own)
            self.truncated += len(own) < len(warnings)
        for note in row.get(NOTES_KEY) or ():
            self.notes[note] = self.notes.get(note, 0) + 1
        for key, value in (usage or {}).items():
            self.usage[key] = self.usage.get(key, 0) + int(value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "failures": self.failures,
            "degraded": self.degraded,
            "warned": self.warned,
            "truncated": self.truncated,
            "failed_in_output": self.failed_in_output,
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rows_per_second, 2),
            "usage": dict(self.usage),
            "errors": list(self.errors),
            "skipped": self.skipped,
            "skipped_failures": self.skipped_failures,
            "interrupted": self.interrupted,
            "blank_lines": self.blank_lines,
            "notes": dict(self.notes),
        }

    def write(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` to ``path`` as ``rerankit batch --summary`` writes it:
        UTF-8 JSON, indented, text as written (``'本文'``), as the output rows are; a text
        UTF-8 cannot encode (a lone surrogate) escapes the file's non-ASCII instead.
        Returns the path written."""
        path = Path(path)
        data = self.to_dict()
        try:
            text = dumps_strict(data, indent=2, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            text = dumps_strict(data, indent=2).encode("ascii")
        path.write_bytes(text + b"\n")
        return path

    def __str__(self) -> str:
        failed = f"{self.failures} failed"
        if self.skipped_failures:  # the output's failed rows, which the exit status counts
            failed = (
                f"{self.failed_in_output} failed in the output ({self.failures} this run, "
                f"{self.skipped_failures} from an earlier run, not ranked again)"
            )
        text = (
            f"{counted(self.rows, 'row')} in {self.seconds:.1f} s "
            f"({self.rows_per_second:.1f} rows/s); "
            f"{failed}, {self.degraded} degraded"
        )
        if self.warned:
            text += f", {self.warned} with warnings"
        if self.truncated:
            text += f", {self.truncated} with long documents read in part (truncated)"
        if self.skipped:
            text += f"; {self.skipped} skipped (already written"
            if self.skipped_failures:
                text += f", {self.skipped_failures} of them with an error"
            text += ")"
        if self.blank_lines:
            text += f"; {counted(self.blank_lines, 'blank line')} skipped"
        if self.usage:
            text += "; LLM usage: " + ", ".join(f"{k} {v}" for k, v in sorted(self.usage.items()))
        return text
