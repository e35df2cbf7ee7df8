"""Where the default ``hybrid`` cannot run (a torch-free install with an empty cache, as in a
new container), ``rerankit.rerank()`` without ``reranker=`` and ``rerankit rank`` without
``-r`` rank with ``bm25``, and say so where a caller looks: the result is ``degraded``, its
first warning says what the hybrid needs, ``rank``'s lines say ``"degraded": true`` and
``--strict`` refuses it. The result said only a warning, ``degraded`` False, so an app that
read no warnings served BM25 unawares while the README calls ``degraded`` honest about
anything that went wrong. The service, asked for ``hybrid``, answers 503 (it never stands
bm25 in for it), and ``load("hybrid")`` raises: the explicit routes stay strict."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

import rerankit
from rerankit.cli import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample.jsonl"
DOCS = ["solar panels on roofs", "wind farms", "solar power stations"]


@pytest.fixture
def no_model_runtime(monkeypatch, tmp_path):
    """Neither torch nor ONNX Runtime, as ``find_spec`` sees it, and an empty cache."""
    real = importlib.util.find_spec
    missing = ("torch", "onnxruntime")
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in missing else real(name, *a)
    )
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))


def test_the_fallback_result_is_degraded_and_says_why_first(no_model_runtime):
    result = rerankit.rerank("solar power", DOCS)
    assert result.degraded and not result.failed and result.unusable is None
    assert result.warnings[0].startswith("using bm25: ") and "rerankit[torch]" in result.warnings[0]
    assert set(result[0].scores) == {"bm25"} and result.score_scale == "relative"
    named = rerankit.rerank("solar power", DOCS, reranker="bm25")  # asked for: not degraded
    assert not named.degraded and not any("using bm25" in w for w in named.warnings)
    assert [r.index for r in named] == [r.index for r in result]


def test_rank_marks_the_fallback_degraded_and_strict_refuses_it(no_model_runtime, capsys):
    code = main(["rank", "-q", "mRNA vaccines", "-i", str(SAMPLE), "-k", "2"])
    out, err = capsys.readouterr()
    assert code == 0 and [json.loads(line)["degraded"] for line in out.splitlines()] == [True] * 2
    assert "rerankit: warning: using bm25: " in err and "rerankit: note: using bm25" not in err
    assert "degraded ranking: bm25 ranked in place of the default hybrid" in err
    assert err.count("using bm25") == 1, err  # said once
    code = main(["rank", "-q", "mRNA vaccines", "-i", str(SAMPLE), "--strict"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.strip().splitlines()[-1] == (
        "rerankit rank: error: degraded result (--strict): the default hybrid cannot run here "
        "(the warning above says what it needs); nothing written"
    )
    code = main(["rank", "-q", "mRNA vaccines", "-i", str(SAMPLE), "-r", "bm25", "--strict"])
    out, err = capsys.readouterr()
    assert code == 0 and "degraded" not in out + err


def test_a_torch_free_install_with_an_empty_cache(tmp_path):
    """The reader's case, in the real torch-free install: the library's default degrades,
    the explicit ``hybrid`` raises naming the export it needs."""
    python = os.environ.get("RERANKIT_TORCH_FREE_PYTHON")
    if not python or not Path(python).exists():
        pytest.skip("needs the torch-free install named in RERANKIT_TORCH_FREE_PYTHON")
    code = (
        "import json, rerankit\n"
        "r = rerankit.rerank('solar power', ['solar power plants', 'wind farms'])\n"
        "try:\n"
        "    rerankit.load('hybrid').rerank('solar power', ['a'])\n"
        "    said = None\n"
        "except rerankit.MissingDependencyError as exc:\n"
        "    said = str(exc)\n"
        "print(json.dumps([r.degraded, r.warnings[0], said]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    env |= {"HOME": str(tmp_path), "RERANKIT_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONPATH"] = str(ROOT / "src")  # this checkout, that install's packages
    done = subprocess.run(
        [python, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    degraded, warning, said = json.loads(done.stdout)
    assert degraded and warning.startswith("using bm25: ")
    assert said and "needs an export of 'sentence-transformers/all-MiniLM-L6-v2'" in said
