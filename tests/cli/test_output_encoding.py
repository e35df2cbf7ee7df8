"""What ``rank`` writes to standard output: JSON Lines in UTF-8 whatever the console's
encoding, a table in the console's encoding that never crashes, cut and aligned by display
width (a CJK character takes two columns)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rerankit.cli import main
from rerankit.cli.output import display_width

DOCS = [
    {"id": "de", "text": "Rücksendungen: Sie können Artikel innerhalb von 30 Tagen zurückgeben."},
    {"id": "ja", "text": "注文をキャンセルするには、マイページの注文履歴から手続きしてください。"},
    {"id": "文書2", "text": "配送は通常三日から五日かかります。" * 6},
]


def _docs(tmp_path: Path) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), "utf-8")
    return path


def _rank(tmp_path: Path, *flags: str, encoding: str = "cp1252") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONIOENCODING": encoding, "PYTHONUTF8": "0", "COLUMNS": "80"}
    argv = ["rank", "-q", "注文 キャンセル Rücksendung", "-i", str(_docs(tmp_path)), "-r", "bm25"]
    return subprocess.run(
        [sys.executable, "-m", "rerankit", *argv, *flags], capture_output=True, env=env
    )


def test_json_lines_are_utf8_on_a_cp1252_console(tmp_path):
    proc = _rank(tmp_path)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    lines = proc.stdout.decode("utf-8").splitlines()  # UTF-8, not cp1252 bytes
    assert {json.loads(line)["text"] for line in lines} == {d["text"] for d in DOCS}
    # and `rank -i` reads it back
    again = tmp_path / "again.jsonl"
    again.write_bytes(proc.stdout)
    argv = ["rank", "-q", "Rücksendungen", "-i", str(again), "-r", "bm25", "-k", "1"]
    back = subprocess.run(
        [sys.executable, "-m", "rerankit", *argv],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "cp1252"},
    )
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout.decode("utf-8"))["id"] == "de"


def test_a_table_on_a_console_that_cannot_write_the_text_shows_question_marks(tmp_path):
    proc = _rank(tmp_path, "--format", "table", encoding="cp1252")
    stderr = proc.stderr.decode("cp1252")
    assert proc.returncode == 0, stderr
    out = proc.stdout.decode("cp1252")
    assert "Rücksendungen" in out and "?" in out  # cp1252 has ü, not kana
    notes = [line for line in stderr.splitlines() if "cannot write" in line]
    assert len(notes) == 1 and "PYTHONIOENCODING=utf-8" in notes[0]


def test_the_table_is_cut_and_aligned_by_display_width(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    args = [
        "rank",
        "-q",
        "注文 配送",
        "-i",
        str(_docs(tmp_path)),
        "-r",
        "bm25",
        "--format",
        "table",
    ]
    assert main(args) == 0
    head, *rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 3
    for row in rows:
        assert display_width(row) <= 80, row
        # the text starts at the header's "text" column, whatever the id's script
        starts = [row.find(d["text"][:4]) for d in DOCS if d["text"][:4] in row]
        assert display_width(row[: starts[0]]) == head.index("text"), row
    long_row = next(r for r in rows if "配送" in r)
    assert long_row.endswith("…") and display_width(long_row) >= 78  # cut, in columns


def test_display_width_counts_wide_characters_twice():
    assert display_width("abc") == 3
    assert display_width("文書") == 4
    assert display_width("ＰＡ") == 4
    assert display_width("u\u0308") == 1
