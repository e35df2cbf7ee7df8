"""docs/evaluation.md shows the table ``rerankit eval --first-stage FILE`` prints on the
shipped example: the command under "Your retriever's output as the first stage" prints it,
every column but the timings (they vary from run to run)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "evaluation.md").read_text(encoding="utf-8")
HEADING = "## Your retriever's output as the first stage\n"


def _table(printed: str) -> list[list[str]]:
    """The table's rows without its timing columns."""
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in printed.splitlines()]
    rows = [r for r in rows if r and not set("".join(r)) <= set("-:")]
    keep = [i for i, name in enumerate(rows[0]) if " ms" not in name]
    return [[r[i] for i in keep] for r in rows]


def _section() -> str:
    rest = PAGE[PAGE.index(HEADING) + len(HEADING) :]
    return rest[: re.search(r"^#{1,6} ", rest, flags=re.M).start()]


def test_the_section_shows_a_table_for_its_command():
    section = _section()
    command = re.findall(r"```bash\n(rerankit eval [^\n]*)\n```", section)[0]
    shown = re.findall(r"```text\n(.*?)```", section, flags=re.S)[0]
    assert "--first-stage examples/own-retriever/candidates.jsonl" in command
    assert shown.startswith("scifact-mini, test split, 30 queries; first stage: examples/own-")
    assert [r[0] for r in _table(shown)] == ["pipeline", "first stage", "bm25", "hybrid"]


@pytest.mark.slow
def test_the_shown_table_is_the_commands(tmp_path):
    pytest.importorskip("onnxruntime", reason="hybrid needs the 'onnx' or 'torch' extra")
    section = _section()
    command = re.findall(r"```bash\n(rerankit eval [^\n]*)\n```", section)[0]
    shown = re.findall(r"```text\n(.*?)```", section, flags=re.S)[0]
    done = subprocess.run(
        [sys.executable, "-m", "rerankit", *shlex.split(command)[1:], "--no-progress"],
        cwd=REPO,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO / "src"),
            "RERANKIT_EMBEDDING_CACHE": str(tmp_path / "e.sqlite"),
        },
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    assert _table(done.stdout) == _table(shown)
    assert done.stdout.splitlines()[0] == shown.splitlines()[0]
