"""``simulate-clicks --explore-pairs`` (the service's ``explore_pairs``), and its earlier
spelling ``--explore``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rerankit.cli import main
from rerankit.eval.data import load_beir
from rerankit.training.clicks import simulate_collection

DATA = Path(__file__).resolve().parents[2] / "examples" / "scifact-mini"
ARGS = ["simulate-clicks", "--data", str(DATA), "--max-queries", "3", "--sessions", "20"]


def _explored(log: Path) -> list[dict]:
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [r["explore"] for r in rows if r["type"] == "impression"]


@pytest.mark.parametrize("flag", ["--explore-pairs", "--explore"])
def test_explore_pairs_and_its_earlier_spelling_exchange_pairs(tmp_path, flag, capsys):
    log = tmp_path / "sim.jsonl"
    assert main([*ARGS, flag, "1", "--no-progress", "--out", str(log)]) == 0
    explored = _explored(log)
    assert len(explored) == 60 and all(e["swapped"] == [4, 6, 8] for e in explored)
    said = capsys.readouterr().err
    assert ("--explore-pairs" in said) == (flag == "--explore")  # the old one says the new


def test_the_python_keyword_and_its_earlier_name(tmp_path):
    data = load_beir(DATA, "train")
    data.queries = dict(list(data.queries.items())[:2])
    simulate_collection(data, tmp_path / "a.jsonl", sessions=5, explore_pairs=1.0)
    simulate_collection(data, tmp_path / "b.jsonl", sessions=5, explore=1.0)
    assert _explored(tmp_path / "a.jsonl") == _explored(tmp_path / "b.jsonl")
    assert all(e["swapped"] == [4, 6, 8] for e in _explored(tmp_path / "a.jsonl"))
    with pytest.raises(TypeError, match="explore_pairs and explore"):
        simulate_collection(data, tmp_path / "c.jsonl", explore_pairs=0.5, explore=0.5)
