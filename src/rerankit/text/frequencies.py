"""A language's general word frequencies (the ``wordfreq`` package, extra ``lexical``) for
looking up a few words fast.

Importing ``wordfreq`` and building its table of a language (321,000 English words) takes
about a third of a second of CPU, each process. :func:`frequency_table` does it once per
machine: the table is kept in the rerankit cache directory (``wordfreq/``) as its words
sorted (one UTF-8 blob with offsets) and their frequencies, which later processes read in
milliseconds without importing ``wordfreq``, looking words up by binary search. The lookup
gives what ``wordfreq.get_frequency_dict(language, wordlist)`` gives, value for value; the
file is keyed by the installed ``wordfreq`` (its location and the size and time of its
files), so a new version is read afresh. Where the cache directory cannot be written, the
table is built from ``wordfreq`` as before, and a WARNING says so (once per folder).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
import uuid
from bisect import bisect_left
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from .._paths import default_cache_dir, warn_unwritable

__all__ = ["FrequencyTable", "frequency_table"]

logger = logging.getLogger(__name__)

#: bump when the file's layout changes
_FORMAT = 2


class _Words:
    """The sorted words of a blob, as a sequence of bytes (what ``bisect`` searches)."""

    def __init__(self, blob: bytes, offsets: np.ndarray) -> None:
        self.blob, self.offsets = blob, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> bytes:
        return self.blob[int(self.offsets[i]) : int(self.offsets[i + 1])]


class FrequencyTable:
    """Words and their frequencies, looked up with :meth:`get` as a dict would be;
    :attr:`floor` is the rarest frequency in the table."""

    def __init__(
        self,
        blob: bytes,
        offsets: np.ndarray,
        frequencies: np.ndarray,
        language: str | None = None,
    ) -> None:
        #: the language the words are of (None: not said), which for a language without
        #: its own table is the nearest one's (``"en"`` for ``"xh"``)
        self.language = language
        self._words = _Words(blob, offsets)
        self.frequencies = frequencies
        self.floor = float(frequencies.min()) if len(frequencies) else 1e-9

    @classmethod
    def from_mapping(cls, table: dict[str, float], language: str | None = None) -> FrequencyTable:
        """The table of a ``word -> frequency`` mapping (of ``language``)."""
        pairs = sorted((w.encode("utf-8", "surrogatepass"), f) for w, f in table.items())
        sizes = np.fromiter((len(w) for w, _ in pairs), dtype=np.int64, count=len(pairs))
        offsets = np.zeros(len(pairs) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        frequencies = np.fromiter((f for _, f in pairs), dtype=np.float64, count=len(pairs))
        return cls(b"".join(w for w, _ in pairs), offsets, frequencies, language)

    def __len__(self) -> int:
        return len(self._words)

    def get(self, word: str, default: float | None = None) -> float | None:
        """The frequency of ``word``, or ``default`` when the table does not have it."""
        key = word.encode("utf-8", "surrogatepass")
        i = bisect_left(self._words, key)
        if i < len(self._words) and self._words[i] == key:
            return float(self.frequencies[i])
        return default

    def save(self, path: Path) -> None:
        """Write the table to ``path`` (a temporary file renamed into place: a reader never
        sees part of one)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.npz")
        try:
            np.savez(
                staging,
                blob=np.frombuffer(self._words.blob, dtype=np.uint8),
                offsets=self._words.offsets,
                frequencies=self.frequencies,
                language=np.array(self.language or ""),
            )
            os.replace(staging, path)
        finally:
            staging.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> FrequencyTable:
        """A table :meth:`save` wrote."""
        with np.load(path, allow_pickle=False) as data:
            language = str(data["language"]) if "language" in data else ""
            return cls(
                data["blob"].tobytes(), data["offsets"], data["frequencies"], language or None
            )


def _source_key() -> str | None:
    """What identifies the installed ``wordfreq`` (its location and the sizes and times of
    its files), found without importing it; None when it is not installed."""
    spec = importlib.util.find_spec("wordfreq")
    if spec is None or spec.origin is None:
        return None
    root = Path(spec.origin).parent
    stats = []
    for folder in (root, root / "data"):
        try:
            stats += [(e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(folder)]
        except OSError:
            continue
    return hashlib.sha256(repr((str(root), sorted(stats))).encode()).hexdigest()[:16]


_TABLES: dict[tuple[str, str], FrequencyTable] = {}
_LOCK = threading.Lock()


def frequency_table(language: str, wordlist: str = "best") -> FrequencyTable:
    """``wordfreq``'s frequencies of ``language`` (its ``wordlist``), once per process, from
    the compact copy in the cache directory when there is one (see the module)."""
    with _LOCK:
        found = _TABLES.get((language, wordlist))
        if found is None:
            found = _TABLES[(language, wordlist)] = _read_or_build(language, wordlist)
        return found


def _read_or_build(language: str, wordlist: str) -> FrequencyTable:
    key = _source_key()
    path = None
    if key is not None:
        name = f"{language}-{wordlist}-{key}-v{_FORMAT}.npz"
        path = default_cache_dir() / "wordfreq" / name
        if path.is_file():
            try:
                return FrequencyTable.load(path)
            except Exception as exc:  # damaged or cut short (a zip error): built afresh below
                logger.warning("rebuilding the word-frequency table %s: %s", path, exc)
    wordfreq = require("wordfreq", "background idf")
    try:
        nearest = _nearest(wordfreq, language, wordlist)
        mapping = wordfreq.get_frequency_dict(nearest, wordlist=wordlist)
    except LookupError as exc:
        raise ValueError(f"no word-frequency table for language {language!r}: {exc}") from exc
    table = FrequencyTable.from_mapping(mapping, nearest)
    if path is not None:
        try:
            table.save(path)
        except OSError as exc:  # a read-only cache directory: built each time, as before
            warn_unwritable(
                default_cache_dir(),
                str(exc),
                f"the word-frequency table of {language!r} is built from wordfreq again in "
                "each process (about a third of a second of CPU for English) instead of read",
            )
    return table


def _nearest(wordfreq: Any, language: str, wordlist: str) -> str:
    """The language whose table ``wordfreq`` gives for ``language``: its own, or the nearest
    one (``"en"`` for ``"xh"``), found as ``wordfreq`` finds it, so that asking for that one
    does not log wordfreq's own note (the caller says it, in each result's warnings)."""
    available = list(wordfreq.available_languages(wordlist))
    if language in available:
        return language
    langcodes = require("langcodes", "background idf")
    best, _distance = langcodes.closest_match(language, available, max_distance=60)
    if best == "und":
        raise LookupError(f"No wordlist {wordlist!r} available for language {language!r}")
    return str(best)
