"""``rerankit check`` says the scale a hybrid fusing the first stage answers in: with a
``first_stage_weight``, a call whose documents all carry a first-stage score gets relative
scores, though the hybrid's own scale (texts only) is a probability; it said only
``scores probability``."""

from __future__ import annotations

from rerankit.cli import main

FUSED = "; scores relative when every document carries a first-stage score"


def _line(tmp_path, capsys, reranker: str) -> str:
    path = tmp_path / "p.toml"
    path.write_text(f'name = "p"\nreranker = {reranker}\n')
    assert main(["check", str(path)]) == 0
    return capsys.readouterr().out.splitlines()[0]


def test_check_says_a_hybrid_fusing_the_first_stage_answers_relative_scores(tmp_path, capsys):
    fused = _line(tmp_path, capsys, '{ type = "hybrid", first_stage_weight = 0.1 }')
    assert "; scores probability; scores relative when every document" in fused, fused
    # the default (weight 0) ranks by the texts alone; hybrid-relative's are relative anyway
    assert FUSED not in _line(tmp_path, capsys, '{ type = "hybrid" }')
    relative = _line(tmp_path, capsys, '"hybrid-relative"')
    assert "; scores relative" in relative and FUSED not in relative, relative
