"""CHANGELOG.md's guide from 0.1.0 says what is true: the front door's size and names (it
said 15 in one place and 14 in another, whose list lacked ``evaluate``) and the anchors its
links point to."""

from __future__ import annotations

import re
from pathlib import Path

import rerankit

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = (ROOT / "CHANGELOG.md").read_text()


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_every_count_of_the_front_door_is_its_size_and_the_list_is_complete():
    counts = re.findall(r"(\d+) names \(`rerankit", CHANGELOG)
    counts += re.findall(r"`rerankit` exports (\d+) names", CHANGELOG)
    assert counts and {int(n) for n in counts} == {len(rerankit.__all__)}
    listed = CHANGELOG.partition("`rerankit` exports")[2].partition(").")[0]
    assert set(re.findall(r"`(\w+)`", listed)) == set(rerankit.__all__)


def test_the_guides_links_point_to_headings_that_exist():
    guide = CHANGELOG.partition("### Upgrading from 0.1.0")[2].partition("\n### ")[0]
    links = re.findall(r"\]\(([^)]+)\)", guide)
    assert links
    for link in links:
        path, _, anchor = link.partition("#")
        page = (ROOT / path).read_text() if path else CHANGELOG
        if anchor:
            headings = {_anchor(h) for h in re.findall(r"^#+ .*$", page, flags=re.M)}
            assert anchor in headings, link
