"""The Python API page lists every environment variable the library reads, so a user can
find them in one place."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "rerankit"
NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


@functools.cache  # (both tests read it: parsing every module is the slow part)
def _read_variables() -> dict[str, str]:
    """Every upper-case string in a module that reads the environment, less the names of
    Python objects (``CACHE_URL_ENV`` is a constant, its value the variable): name -> file."""
    texts = {path: path.read_text(encoding="utf-8") for path in SRC.rglob("*.py")}
    trees = {path: ast.parse(text) for path, text in texts.items()}
    identifiers = {
        node.id for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.Name)
    }
    found = {}
    for path, tree in trees.items():
        if "environ" not in texts[path] and "getenv" not in texts[path]:
            continue
        for node in ast.walk(tree):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and NAME.fullmatch(value) and value not in identifiers:
                found[value] = str(path.relative_to(REPO))
    return found


def test_the_source_reads_the_variables_this_test_finds():
    found = _read_variables()
    assert {"RERANKIT_CACHE_DIR", "RERANKIT_CACHE_URL", "OPENAI_API_KEY", "HF_ENDPOINT"} <= set(
        found
    )


def test_every_environment_variable_read_is_listed_in_the_api_page():
    page = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    section = page.split("## Configuration: environment variables and logs", 1)[1]
    section = section.split("\n## ", 1)[0]
    listed = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", section))
    missing = {name: where for name, where in _read_variables().items() if name not in listed}
    assert not missing, f"read but not listed in docs/api.md's configuration section: {missing}"
