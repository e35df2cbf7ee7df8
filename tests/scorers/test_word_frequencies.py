"""The background idf's word frequencies: wordfreq's table, kept compact in the cache
directory and read by later processes without importing wordfreq, value for value."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit.text.frequencies import FrequencyTable, frequency_table

wordfreq = pytest.importorskip("wordfreq", reason="background idf needs the 'lexical' extra")
TABLE = wordfreq.get_frequency_dict("en", wordlist="best")


def test_the_compact_table_gives_wordfreqs_values_and_floor():
    table = frequency_table("en")
    assert len(table) == len(TABLE)
    assert table.floor == min(TABLE.values())
    words = [*list(TABLE)[:3000], *list(TABLE)[-3000:], "qqqzzx", "", "ça", "北京", "\ud800x"]
    assert [table.get(w, -1.0) for w in words] == [TABLE.get(w, -1.0) for w in words]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8), st.floats(1e-9, 1.0), max_size=40))
def test_any_mapping_is_looked_up_as_the_dict_would_be(mapping):
    table = FrequencyTable.from_mapping(mapping)
    for word in [*mapping, "absent", "", *[w + "x" for w in mapping]]:
        assert table.get(word) == mapping.get(word)


def test_a_second_process_reads_the_kept_table_without_importing_wordfreq(tmp_path):
    frequency_table("en")  # made (and kept) in this session's cache directory
    script = textwrap.dedent(
        """
        import json, sys
        from rerankit.text.language import BackgroundFrequencies

        table, floor = BackgroundFrequencies("en").table()
        print(json.dumps([table.get("vaccine"), floor, "wordfreq" in sys.modules]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    vaccine, floor, imported = json.loads(done.stdout)
    assert (vaccine, floor) == (TABLE["vaccine"], min(TABLE.values()))
    assert imported is False


def test_a_damaged_kept_table_is_built_again(tmp_path, monkeypatch):
    from rerankit.text import frequencies

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(frequencies, "_TABLES", {})
    frequency_table("en")
    (kept,) = (tmp_path / "wordfreq").iterdir()
    kept.write_bytes(b"not a table")
    monkeypatch.setattr(frequencies, "_TABLES", {})
    assert frequency_table("en").get("vaccine") == TABLE["vaccine"]
    assert FrequencyTable.load(kept).get("vaccine") == TABLE["vaccine"]  # written anew
