"""docs/plugins.md: its plugin example, then its "Testing your plugin" block as the pytest
file the page says it is, run beside the plugin and the pipeline file the example writes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # two interpreters and the service warming up: make test-slow
def test_the_plugin_page_example_and_its_tests_run(tmp_path):
    pytest.importorskip("fastapi", reason="the service test needs the 'server' extra")
    text = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    example, tests = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(tmp_path)])}
    env.pop("RERANKIT_PLUGINS", None)
    run = {"cwd": tmp_path, "env": env, "capture_output": True, "text": True, "timeout": 120}
    done = subprocess.run([sys.executable, "-c", example], **run, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    (tmp_path / "test_acme.py").write_text(tests)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_acme.py"],
        **run,
        check=False,
    )
    assert done.returncode == 0 and "3 passed" in done.stdout, done.stdout[-3000:]


def _commands_taking(flag: str) -> set[str]:
    """The ``rerankit`` commands (``serve``, ``simulate-clicks``) whose parser takes ``flag``."""
    import argparse

    from rerankit.cli import build_parser

    found = set()

    def walk(name: str, parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    walk(f"{name} {sub}".strip(), subparser)
            elif flag in action.option_strings:
                found.add(name)

    walk("", build_parser())
    return found


def test_the_page_lists_every_command_that_takes_plugin():
    """The "Load your plugin" table's flag row names each command with ``--plugin``."""
    text = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| a flag |"))
    listed = set(re.findall(r"`([a-z][a-z -]*)`", row.split("|")[2].partition(" on ")[2]))
    assert listed == _commands_taking("--plugin")


def test_a_scorer_reads_the_title_where_the_page_says():
    """The page: a document's title is `.metadata["title"]` and also starts its `.text`."""
    from rerankit.documents import document_title
    from rerankit.rerankers import ScorerReranker

    seen = []

    class Reader:
        name = "reader"

        async def score(self, query, docs, **context):
            seen.extend((d.text, d.metadata.get("title"), document_title(d)) for d in docs)
            return [0.0] * len(docs)

    ScorerReranker(Reader()).rerank("q", [{"text": "body", "title": "Head"}, {"text": "x"}])
    assert seen == [("Head\nbody", "Head", "Head"), ("x", None, None)]
