"""The evaluation page's Python example runs as written, from the repository root (it reads
``examples/scifact-mini``), and prints the figures ``rerankit eval`` prints for the same
rerankers and candidates."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from rerankit.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_the_python_evaluation_example_prints_what_the_command_prints(monkeypatch, capsys):
    page = (REPO / "docs" / "evaluation.md").read_text(encoding="utf-8")
    code = re.search(r"## From Python\n.*?```python\n(.*?)```", page, flags=re.S).group(1)
    monkeypatch.chdir(REPO)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "evaluation.md", "exec"), {})
    shown = dict(re.findall(r"^(.+): nDCG@10 (\d+\.\d\d), p ", printed.getvalue(), flags=re.M))
    assert list(shown) == ["first stage", "bm25", "text"]
    argv = ["eval", "--data", "examples/scifact-mini", "--rerankers", "bm25,text"]
    assert main([*argv, "--candidates", "20", "--no-progress"]) == 0
    table = capsys.readouterr().out
    for name, ndcg in shown.items():
        assert f"| {name} | {ndcg} |" in table
