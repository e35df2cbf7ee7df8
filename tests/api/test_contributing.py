"""CONTRIBUTING.md says what ``make test`` installs beside the virtual environments: every
Debian package a target it depends on installs with ``apt-get``."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _apt_packages_of_make_test(makefile: str) -> set[str]:
    """The packages ``make test``'s prerequisites install with ``apt-get install``."""
    targets = re.search(r"^test: (.*)$", makefile, flags=re.M).group(1).split()
    variables = dict(re.findall(r"^(\w+) := (.*)$", makefile, flags=re.M))
    found = set()
    for target in targets:
        recipe = re.search(rf"^{re.escape(target)}:.*?\n((?:\t.*\n)+)", makefile, flags=re.M)
        if recipe is None:
            continue
        for named in re.findall(
            r"apt-get install [^\n]*?--no-install-recommends ([^>\n]+)", recipe.group(1)
        ):
            for word in named.replace("\\", " ").split():
                variable = re.fullmatch(r"\$\((\w+)\)", word)
                found |= set(variables[variable.group(1)].split()) if variable else {word}
    return found


def test_contributing_names_what_make_test_installs():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    page = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    installs = _apt_packages_of_make_test(makefile)
    assert {"chromium", "chromium-driver", "redis-server", "nginx"} <= installs
    assert sorted(p for p in installs if f"`{p}`" not in page) == []
