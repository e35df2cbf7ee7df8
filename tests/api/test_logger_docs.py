"""docs/api.md's table of loggers names every logger that warns a user: each module that
logs at WARNING or above is named there, or is under a name that is. It said
``rerankit.rerankers`` for "a stage that failed" only, and a reader saw per-request lines
from ``rerankit.rerankers.deadline`` (a stage cut at its deadline) and
``rerankit.rerankers.base`` (documents sharing an id) that it did not name, nor
``rerankit._paths``, ``rerankit.api``, ``rerankit.registry``, ``rerankit.text``,
``rerankit.compat`` or ``rerankit.integrations``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
WARNS = {"warning", "error", "exception", "critical"}


def warning_loggers() -> set[str]:
    """The modules whose ``logger`` (``logging.getLogger(__name__)``) warns somewhere."""
    found = set()
    for path in (SRC / "rerankit").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "logger"
            and node.attr in WARNS
            for node in ast.walk(tree)
        ):
            found.add(
                ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
            )
    return found


def named_loggers() -> set[str]:
    """The logger names the table of docs/api.md's logging section gives."""
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    section = page.split("## Configuration: environment variables and logs", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `rerankit")]
    return {name for row in rows for name in re.findall(r"`(rerankit[\w.]*)`", row.split("|")[1])}


def test_every_logger_that_warns_is_named():
    named = named_loggers()
    unnamed = sorted(
        module
        for module in warning_loggers()
        if not any(module == n or module.startswith(n + ".") for n in named)
    )
    assert unnamed == [], f"docs/api.md's table of loggers does not name {unnamed}"


def test_the_per_request_warnings_are_named_in_full():
    named = named_loggers()
    assert {"rerankit.rerankers.base", "rerankit.rerankers.deadline"} <= named
    assert "rerankit" not in named  # the root would make the first test pass for anything
    scanned = warning_loggers()
    assert {"rerankit.rerankers.deadline", "rerankit._paths", "rerankit.api"} <= scanned
