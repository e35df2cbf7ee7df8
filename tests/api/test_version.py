"""One version, written once: ``rerankit.__version__`` (PEP 440), which the package metadata
reads (pyproject.toml ``[tool.hatch.version]``), ``rerankit --version`` prints and the
CHANGELOG's Unreleased heading names. It said 0.1.0 with breaking changes made since."""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

import pytest
import tomllib

import rerankit
from rerankit.cli import main

ROOT = Path(__file__).resolve().parents[2]


#: a PEP 440 public version in its normal form: release, pre-release, post, dev
PEP_440 = re.compile(r"(\d+(?:\.\d+)*)(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?")


def test_version_is_pep_440_and_past_the_release_it_changes():
    match = PEP_440.fullmatch(rerankit.__version__)
    assert match, rerankit.__version__
    release = tuple(int(n) for n in match.group(1).split("."))
    assert release > (0, 1, 0)  # 0.2.0.dev0 comes before 0.2.0, after 0.1.0


def test_rerankit_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"rerankit {rerankit.__version__}"


def test_the_package_metadata_reads_the_version_from_the_one_place_it_is_written():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]  # no second copy to forget
    assert "version" in project["project"]["dynamic"]
    source = ROOT / project["tool"]["hatch"]["version"]["path"]
    # hatchling's default pattern for a version file
    written = re.findall(r'^__version__ = "([^"]+)"$', source.read_text(), flags=re.M)
    assert written == [rerankit.__version__]


def test_installed_metadata_agrees_when_installed_from_this_checkout():
    try:
        dist = importlib.metadata.distribution("rerankit")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("rerankit is not installed, only on the path")
    url = json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
    if Path(url.removeprefix("file://")).resolve() != ROOT.resolve():
        pytest.skip(f"the installed rerankit is another checkout's ({url or 'a wheel'})")
    assert dist.version == rerankit.__version__, "stale install: pip install -e ."


def test_the_changelog_names_the_version_under_way():
    head = next(
        line for line in (ROOT / "CHANGELOG.md").read_text().splitlines() if line.startswith("## ")
    )
    assert head.startswith("## Unreleased") and rerankit.__version__ in head
