"""The benchmarks stay runnable as the docs show them (``python -m benchmarks.speed.x``):
every script imports from the repository root, helpers are imported as modules (no
``sys.path`` edits), and every path the docs quote exists."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").rglob("*.py") if p.name != "__init__.py")


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_no_benchmark_edits_sys_path() -> None:
    edits = [str(p.relative_to(ROOT)) for p in SCRIPTS if "sys.path" in p.read_text("utf-8")]
    assert edits == []


@pytest.mark.parametrize("path", SCRIPTS, ids=_module)
def test_each_benchmark_imports_as_a_module(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    try:
        importlib.import_module(_module(path))
    except ImportError as exc:  # a third-party package of a benchmark, not ours
        if exc.name and exc.name.split(".")[0] not in ("benchmarks", "rerankit"):
            pytest.skip(f"{_module(path)} needs {exc.name}, not installed here")
        raise
    finally:
        for name in [m for m in sys.modules if m == "benchmarks" or m.startswith("benchmarks.")]:
            del sys.modules[name]


def test_every_benchmark_the_docs_name_exists() -> None:
    pages = [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "Makefile",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "docs" / "design").glob("*.md")),  # the studies' scripts
    ]
    named = set()
    for page in pages:
        text = page.read_text("utf-8")
        named |= {  # (`python -m` may end a line, the module begin the next)
            m.replace(".", "/") + ".py" for m in re.findall(r"-m\s+(benchmarks(?:\.\w+)+)", text)
        }
        named |= set(re.findall(r"benchmarks/[\w/]+\.py", text))
    missing = sorted(n for n in named if not (ROOT / n).is_file())
    assert named and missing == []


MAINS = [p for p in SCRIPTS if '__name__ == "__main__"' in p.read_text("utf-8")]


@pytest.mark.parametrize("path", MAINS, ids=_module)
def test_each_runnable_benchmark_parses_its_arguments(path: Path) -> None:
    """``--help`` prints and exits instead of starting the run (an argv read by hand ignored
    it: ``quality.rerankers --help`` ran the whole benchmark and wrote into ``.cache``)."""
    assert "ArgumentParser(" in path.read_text("utf-8")


def test_rerankers_help_prints_and_exits(tmp_path: Path) -> None:
    # an empty data folder: were --help ignored again, the run stops at once (no datasets)
    # instead of encoding into the checkout's cache
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "RERANKIT_BENCH_DATA": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.quality.rerankers", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "--int8" in done.stdout


def test_clicks_data_reads_the_data_folder_the_other_scripts_read(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "RERANKIT_BENCH_DATA": str(tmp_path),
    }
    code = "from benchmarks.quality import clicks_data; print(clicks_data.DATA)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == str(tmp_path / "beir"), done.stderr


def test_the_clicks_benchmark_pairs_two_rankers_by_query() -> None:
    from benchmarks.quality.clicks import paired

    b = {"q1": 50.0, "q2": 60.0, "q3": 70.0, "q4": 80.0}
    a = {q: v + d for (q, v), d in zip(b.items(), (1.0, 2.0, 3.0, 4.0), strict=True)}
    mean, low, high = paired(a, b)
    half = 1.96 * (5 / 3) ** 0.5 / 2  # the differences 1..4: variance 5/3, four queries
    assert mean == 2.5
    assert abs(low - (2.5 - half)) < 1e-12 and abs(high - (2.5 + half)) < 1e-12
