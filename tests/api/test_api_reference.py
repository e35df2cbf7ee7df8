"""docs/api.md's reference is a hand-written list of ``::: module.Name`` lines: a scorer or
rule added to the package without a line there is missing from the site's API reference
(``ProximityScorer`` and ``PRFScorer`` were). Every public name of ``rerankit.scorers`` and
``rerankit.ordering`` has one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import rerankit.ordering
import rerankit.scorers

API = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _documented() -> list[tuple[str, list[str] | None]]:
    """Each ``::: path`` of api.md with its ``members: [...]`` (None: all of them)."""
    found = []
    for block in re.split(r"^(?=::: )", API.read_text(encoding="utf-8"), flags=re.M)[1:]:
        path = block.split(None, 2)[1]
        members = re.search(r"^\s+members: \[([^\]]*)\]", block, flags=re.M)
        names = [m.strip() for m in members.group(1).split(",")] if members else None
        found.append((path, names))
    return found


def _public(package) -> list[tuple[str, str]]:
    """``(module it is defined in, name)`` for each name of ``package.__all__``."""
    out = []
    for name in package.__all__:
        home = getattr(getattr(package, name), "__module__", None) or package.__name__
        out.append((home, name))
    return out


PUBLIC = _public(rerankit.scorers) + _public(rerankit.ordering)


@pytest.mark.parametrize(("home", "name"), PUBLIC, ids=[n for _, n in PUBLIC])
def test_every_public_scorer_and_rule_is_in_the_api_reference(home, name):
    listed = any(
        path == f"{home}.{name}" or (path == home and (members is None or name in members))
        for path, members in _documented()
    )
    assert listed, (
        f"docs/api.md has no `::: {home}.{name}` (nor {name} in the members of `::: {home}`)"
    )
