"""Prompt templates as data: one text file per mode and preset, shipped in the package.

``pointwise_<preset>.txt`` is the system text of the pointwise judge (presets ``general``,
``news``, ``passages``); ``listwise.txt`` is the listwise judge's, with ``{which}`` standing
for the indices asked for (literal braces doubled, as in :meth:`str.format`). The judgment
cache keys hash the rendered request, so an edited template never serves old judgments.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

__all__ = ["load_template", "presets"]


@cache
def _shipped(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8").strip()


def presets(mode: str) -> list[str]:
    """The preset names shipped for ``mode`` (``"pointwise"``)."""
    files = resources.files(__package__).iterdir()
    return sorted(f.name[len(mode) + 1 : -4] for f in files if f.name.startswith(f"{mode}_"))


def load_template(mode: str, value: str | Path | None) -> str:
    """A template's text: ``None`` for the mode's default, a preset name, a path to a text
    file, or the text itself."""
    if value is None:
        return _shipped(mode if mode == "listwise" else f"{mode}_general")
    if isinstance(value, Path) or (isinstance(value, str) and value.endswith(".txt")):
        return Path(value).read_text(encoding="utf-8").strip()
    if mode == "pointwise" and value in presets("pointwise"):
        return _shipped(f"pointwise_{value}")
    return value
