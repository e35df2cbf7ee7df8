r"""Vectorised word splitting and vocabulary lookup for a whole batch of texts.

The batch is joined into one UTF-8 byte buffer in which every non-word character is a
space; word boundaries, a 64-bit key per word and the document of each word then come from
numpy array operations. Words are looked up in an open-addressing hash table (also numpy)
that maps each distinct word to its term id, so a word costs Python time only the first
time an analyzer meets it. The split is the same as ``re.findall(r"[^\W_]+", text)`` on the
text's :func:`matching_form` (NFKC, case-folded), so a decomposed ``ü`` or a full-width
``Ａ`` matches its usual form.

Exactness: a word of up to 8 bytes is keyed by its own bytes, so such words never collide.
Longer words are keyed by a 64-bit hash; two of them (or one and a short word) share a term
only on a hash collision, about ``words**2 / 2**65`` (under 1e-7 for a million distinct
words). A word over ``MAX_WORD`` bytes sends the batch to the exact path.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

import numpy as np

MAX_WORD = 4096  # a batch with a longer word goes through the exact path
MAX_BYTES = 1 << 26  # batches larger than 64 MiB go through the exact path

_DOC_SEP = 0x01  # joins the texts; a text containing it takes the exact path
_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)
_MIN_BITS = 12
_CHUNK = 1 << 16  # tokens inserted per round, bounding the table's transient size


def _table(lowercase: bool) -> bytes:
    out = bytearray(256)
    for c in b"abcdefghijklmnopqrstuvwxyz0123456789":
        out[c] = c
    for c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        out[c] = c + 32 if lowercase else c
    for c in range(0x80, 0x100):  # UTF-8 bytes of the word characters left in the text
        out[c] = c
    out[_DOC_SEP] = _DOC_SEP
    return bytes(out)


_TABLES = {True: _table(True), False: _table(False)}
_TO_SPACE = bytes(0x20 if c in (0, _DOC_SEP) else c for c in range(256))

_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_U33, _U3 = np.uint64(33), np.uint64(3)


def _fmix(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser (a bijection that mixes every bit), in place."""
    h ^= h >> _U33
    h *= _M1
    h ^= h >> _U33
    h *= _M2
    h ^= h >> _U33
    return h


def _chunk(view: np.ndarray, at: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The ``min(size, 8)`` bytes at each ``at`` as little-endian integers, zero above."""
    missing = (8 - np.minimum(size, 8)).astype(np.uint64) << _U3  # bits past the word
    return view[at] & (_ALL >> missing)


def word_hashes(encoded: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """A 64-bit key per word of ``encoded`` (which must end with 8 padding bytes).

    A word of up to 8 bytes is its own bytes read as an integer (exact, as word bytes are
    never 0); a longer word chains the Murmur3 finaliser over its 8-byte chunks.
    """
    view = np.ndarray((len(encoded) - 7,), dtype="<u8", buffer=encoded, strides=(1,))
    size = ends - starts
    h = _chunk(view, starts, size)
    long = np.flatnonzero(size > 8)
    offset = 8
    while long.shape[0]:
        rest = size[long] - offset
        h[long] = _fmix(h[long] * _M2 + _chunk(view, starts[long] + offset, rest))
        offset += 8
        long = long[rest > 8]
    return h


class BatchWords:
    """Word spans of a batch: ``starts``/``ends`` into ``buf``, ``doc`` index, and (computed
    on first use) ``hashes``."""

    __slots__ = ("_encoded", "_hashes", "buf", "doc", "ends", "starts")

    def __init__(self, encoded: bytes, starts: np.ndarray, ends: np.ndarray, doc: np.ndarray):
        self._encoded = encoded
        self.buf = np.frombuffer(encoded, dtype=np.uint8)
        self.starts, self.ends, self.doc = starts, ends, doc
        self._hashes: np.ndarray | None = None

    @property
    def hashes(self) -> np.ndarray:
        """A 64-bit key per word (never 0, which marks an empty slot of the table)."""
        if self._hashes is None:
            h = word_hashes(self._encoded, self.starts, self.ends)
            h[h == 0] = 1
            self._hashes = h
        return self._hashes

    def strings(self, which: np.ndarray) -> list[str]:
        """The words at positions ``which``, decoded in one pass."""
        if which.shape[0] == 0:
            return []
        s = self.starts[which]
        span = self.ends[which] - s + 1  # each word with the separator byte after it
        offsets = np.cumsum(span) - span
        idx = np.arange(int(span.sum()), dtype=np.int64) + np.repeat(s - offsets, span)
        return self.buf[idx].tobytes().translate(_TO_SPACE).decode("utf-8").split()


def nfkc(text: str) -> str:
    """``text`` in Unicode's NFKC form: composed (``u`` + U+0308 is ``ü``) and compatibility
    characters mapped (full-width ``Ａ`` is ``A``, half-width ``ｶ`` is ``カ``, ``ﬁ`` is ``fi``).
    Text already in that form (all ASCII text is) comes back as it is, after one quick check."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    return unicodedata.normalize("NFKC", text)


def matching_form(text: str, lowercase: bool = True) -> str:
    """The form words are matched in: NFKC, then case-folded when ``lowercase`` (NFKC again
    after folding, as ICU's ``nfkc_cf``). The caller's text is never changed: this is a copy
    the splitter reads."""
    text = nfkc(text)
    if lowercase and not text.isascii():
        return nfkc(text.casefold())
    return text.lower() if lowercase else text


#: Latin letters that NFD leaves whole but that readers type without their mark
_LATIN_EXTRA = {"œ": "oe", "æ": "ae", "ø": "o", "ł": "l", "đ": "d", "ı": "i"}
_LATIN_EXTRA.update({k.upper(): v.upper() for k, v in _LATIN_EXTRA.items() if k != "ı"})


@functools.lru_cache(maxsize=4096)
def _fold_char(c: str) -> str:
    extra = _LATIN_EXTRA.get(c)
    if extra is not None:
        return extra
    parts = unicodedata.normalize("NFD", c)
    base, marks = parts[0], parts[1:]
    if (
        base.isascii()
        and base.isalpha()
        and marks
        and all("\u0300" <= m <= "\u036f" for m in marks)
    ):
        return base
    return c


def fold_accents(word: str) -> str:
    """``word`` with the accents of its Latin letters removed: a letter whose canonical
    decomposition is an ASCII letter followed by combining diacritical marks (U+0300 to
    U+036F) becomes that letter (``é`` ``e``, ``ü`` ``u``, ``ñ`` ``n``, ``ç`` ``c``, ``å``
    ``a``, ``ő`` ``o``, ``ş`` ``s``), and ``œ`` ``æ`` ``ø`` ``ł`` ``đ`` ``ı`` become ``oe``
    ``ae`` ``o`` ``l`` ``d`` ``i``. Every other character (Greek, Cyrillic, kana with their
    voicing marks, Han, digits) is kept, so ``й`` and ``が`` stay as they are."""
    if word.isascii():
        return word
    return "".join(c if c.isascii() else _fold_char(c) for c in word)


def _clean_run(run: bytes, lowercase: bool) -> bytes:
    """A run of non-ASCII characters, case-folded (:func:`matching_form`), with each
    character that is not alphanumeric turned into a space."""
    text = matching_form(run.decode("utf-8"), lowercase)
    return "".join(c if c.isalnum() else " " for c in text).encode("utf-8")


def _clean_non_ascii(joined: str, lowercase: bool) -> bytes:
    """UTF-8 of ``joined`` (in NFKC) with its non-ASCII characters case-folded and its
    non-ASCII non-alphanumeric characters (dashes, symbols, accents alone) turned into spaces.

    Runs of non-ASCII bytes are found with numpy and each distinct run is cleaned once
    (case folding, unlike ``str.lower``, never depends on the characters around).
    """
    raw = joined.encode("utf-8")
    high = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) >= 0x80)
    cut = np.flatnonzero(np.diff(high) != 1) + 1
    starts = high[np.concatenate((np.zeros(1, dtype=np.int64), cut))].tolist()
    ends = (high[np.concatenate((cut - 1, [high.shape[0] - 1]))] + 1).tolist()
    cleaned: dict[bytes, bytes] = {}
    parts, done = [], 0
    for a, b in zip(starts, ends, strict=True):
        run = raw[a:b]
        new = cleaned.get(run)
        if new is None:
            new = cleaned[run] = _clean_run(run, lowercase)
        parts += (raw[done:a], new)
        done = b
    parts.append(raw[done:])
    return b"".join(parts)


def split_batch(texts: Sequence[str], lowercase: bool) -> BatchWords | None:
    """Word spans of a batch, or None when the batch needs the exact path."""
    joined = "\x01".join([nfkc(t) for t in texts])  # per text: a quick check each
    if len(joined) > MAX_BYTES:
        return None
    # (On ASCII the byte table below does the lowercasing.)
    try:
        raw = joined.encode("ascii") if joined.isascii() else _clean_non_ascii(joined, lowercase)
    except UnicodeEncodeError:  # a lone surrogate: the regular expression copes with it
        return None
    # Padding: every word is followed by a non-word byte, and 8-byte reads stay inside.
    encoded = raw.translate(_TABLES[lowercase]) + bytes(8)
    buf = np.frombuffer(encoded, dtype=np.uint8)
    separators = np.flatnonzero(buf == _DOC_SEP)
    if separators.shape[0] != max(len(texts) - 1, 0):
        return None  # a text contains the separator byte itself
    is_word = buf > _DOC_SEP
    change = np.flatnonzero(is_word[1:] != is_word[:-1]) + 1
    if is_word[0]:
        change = np.concatenate((np.zeros(1, dtype=change.dtype), change))
    starts, ends = change[0::2], change[1::2]  # the padding ends the last word
    if starts.shape[0] and int((ends - starts).max()) > MAX_WORD:
        return None
    per_doc = np.diff(np.searchsorted(starts, separators), prepend=0, append=starts.shape[0])
    doc = np.repeat(np.arange(len(texts), dtype=np.int64), per_doc)
    return BatchWords(encoded, starts, ends, doc)


#: the split as a regular expression: runs of letters and digits (``_`` separates)
WORD = re.compile(r"[^\W_]+")


def split_words(texts: Sequence[str], *, lowercase: bool = True) -> list[list[str]]:
    """Each text's words: runs of letters and digits, Unicode-aware (``_`` separates), the
    same as ``WORD.findall`` on each text's :func:`matching_form`. Batches are split with
    numpy (:func:`split_batch`); a single short text, and batches numpy cannot take, go
    through the regular expression."""
    if not texts:
        return []
    # one short text (a query): the regular expression is faster than numpy's set-up
    words = split_batch(texts, lowercase) if len(texts) > 1 or len(texts[0]) > 4096 else None
    if words is None:
        return [WORD.findall(matching_form(t, lowercase)) for t in texts]
    flat = words.strings(np.arange(words.starts.shape[0]))
    bounds = np.cumsum(np.bincount(words.doc, minlength=len(texts))).tolist()
    return [flat[a:b] for a, b in zip([0, *bounds[:-1]], bounds, strict=True)]


class WordTable:
    """Open-addressing (linear probing) table from word hashes to term ids.

    ``values[slot]`` holds the term id, or -1 for a dropped word (a stopword). The load is
    kept at or under one half, so every probe sequence ends at an empty slot.
    """

    def __init__(self, bits: int = _MIN_BITS) -> None:
        self._alloc(bits)
        self.size = 0

    def _alloc(self, bits: int) -> None:
        self.bits = bits
        self.mask = (1 << bits) - 1
        self.keys = np.zeros(1 << bits, dtype=np.uint64)
        self.values = np.full(1 << bits, -1, dtype=np.int64)
        self._owner = np.zeros(1 << bits, dtype=np.int64)

    def _home(self, h: np.ndarray) -> np.ndarray:
        return ((h * _FIBONACCI) >> np.uint64(64 - self.bits)).astype(np.int64)

    def _rebuild(self, bits: int) -> np.ndarray:
        """Re-hash every word into a table of ``2**bits`` slots; returns old slot -> new."""
        occupied = np.flatnonzero(self.keys)
        keys, values = self.keys[occupied], self.values[occupied]
        moved = np.full(self.keys.shape[0], -1, dtype=np.int64)
        self._alloc(bits)
        self.size = 0
        relocated, _, _ = self._probe(keys, insert=True)
        self.values[relocated] = values
        moved[occupied] = relocated
        return moved

    def _probe(self, h: np.ndarray, *, insert: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Slot of each hash (-1 if absent and not inserting), plus the slots created and, for
        each, the position in ``h`` of the word that claimed it."""
        slot = self._home(h)
        created, claimed_by = [], []
        if insert:
            found = np.full(h.shape[0], -1, dtype=np.int64)
            pending = np.arange(h.shape[0], dtype=np.int64)
        else:  # first round over every word at once: most end at their home slot
            k = self.keys[slot]
            done = k == h
            found = np.where(done, slot, -1)
            pending = np.flatnonzero(~done & (k != 0))
            slot[pending] = (slot[pending] + 1) & self.mask
        while pending.shape[0]:
            s = slot[pending]
            k = self.keys[s]
            empty = k == 0
            if empty.any():
                es, ep = s[empty], pending[empty]
                if insert:
                    self._owner[es] = ep  # one writer per slot wins; all read back
                    won = self._owner[es] == ep
                    self.keys[es[won]] = h[ep[won]]
                    created.append(es[won])
                    claimed_by.append(ep[won])
                    k = self.keys[s]
                else:
                    keep = ~empty
                    pending, s, k = pending[keep], s[keep], k[keep]
            done = k == h[pending]
            found[pending[done]] = s[done]
            pending = pending[~done]
            slot[pending] = (slot[pending] + 1) & self.mask
        if created:
            new_slots, owners = np.concatenate(created), np.concatenate(claimed_by)
            self.size += new_slots.shape[0]
        else:
            new_slots = owners = np.zeros(0, dtype=np.int64)
        return found, new_slots, owners

    def lookup_or_insert(self, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Slots for every hash; new words get slots (values -1 until set by the caller).

        Returns ``(slots, new_slots, first_position)`` where ``first_position[i]`` is a
        position in ``h`` holding the word that ``new_slots[i]`` now stands for.
        """
        slots, _, _ = self._probe(h, insert=False)
        missing = np.flatnonzero(slots < 0)
        if missing.shape[0] == 0:
            return slots, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        created, claimed_by = [], []
        for lo in range(0, missing.shape[0], _CHUNK):
            chunk = missing[lo : lo + _CHUNK]
            bits = self.bits
            while self.size + chunk.shape[0] > (1 << bits) // 2:
                bits += 1  # room for every token of the chunk, as each may be a new word
            if bits != self.bits:
                moved = self._rebuild(bits)
                slots = np.where(slots >= 0, moved[slots], -1)
                created = [moved[c] for c in created]
            got, new_slots, owners = self._probe(h[chunk], insert=True)
            slots[chunk] = got
            created.append(new_slots)
            claimed_by.append(chunk[owners])
        new_slots, first = np.concatenate(created), np.concatenate(claimed_by)
        bits = self.bits
        while bits > _MIN_BITS and self.size * 4 <= (1 << (bits - 1)):
            bits -= 1  # sized for tokens, not words: shrink back
        if bits != self.bits:
            moved = self._rebuild(bits)
            slots, new_slots = moved[slots], moved[new_slots]
        return slots, new_slots, first
