"""What ``rerankit rank`` scores mean, said on every line: its JSON Lines (plain and
``--details``) carry the result's ``score_scale``; ``--output sigmoid`` asks a cross-encoder
for what ``output="sigmoid"`` gives in Python and in a pipeline file."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest

from rerankit.cli import build_parser, main
from rerankit.cli.rank import with_output

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample.jsonl"
QUERY = "vaccines immune system"


def _rank(capsys, *argv):
    code = main(["rank", "-q", QUERY, "-i", str(SAMPLE), *argv])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_every_line_carries_the_score_scale(capsys, monkeypatch):
    """Plain lines (test_cli.py checks they keep every field) and ``--details`` records."""
    code, rows, err = _rank(capsys, "-r", "bm25", "-k", "3")
    assert code == 0 and err == "" and [r["score_scale"] for r in rows] == ["relative"] * 3
    code, details, _ = _rank(capsys, "-r", "bm25", "-k", "3", "--details")
    assert [d["score_scale"] for d in details] == ["relative"] * 3
    assert [d["score"] for d in details] == [r["rerank_score"] for r in rows]
    # strings in; a field of that name in the input: said, then written over
    monkeypatch.setattr("sys.stdin", io.StringIO('["solar", "wind"]'))
    assert main(["rank", "-q", "solar", "-r", "bm25"]) == 0
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    assert first == {
        "text": "solar",
        "rerank_score": first["rerank_score"],
        "score_scale": "relative",
    }
    stdin = '[{"text": "solar", "score_scale": "mine"}, {"text": "wind"}]'
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    assert main(["rank", "-q", "solar", "-r", "bm25"]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(x)["score_scale"] for x in out.splitlines()] == ["relative"] * 2
    assert "1 input object already had a 'score_scale' field" in err


def test_output_sigmoid_gives_what_a_pipeline_file_gives(capsys, tmp_path, bert_dir):
    """The model's logits by default (as ``reranker="folder"`` gives them in Python), their
    sigmoid with ``--output sigmoid``, as a pipeline file's ``output = "sigmoid"`` (and
    ``CrossEncoderScorer(..., output="sigmoid")``) gives it, in the same order."""
    pytest.importorskip("sentence_transformers")

    def shell(*argv: str) -> tuple[dict[int, float], set[str]]:
        code, rows, _ = _rank(capsys, "-r", *argv, "--details")
        assert code == 0
        return {r["index"]: r["score"] for r in rows}, {r["score_scale"] for r in rows}

    logits, scale = shell(str(bert_dir))
    assert scale == {"logit"}
    sigmoids = {i: 1 / (1 + math.exp(-x)) for i, x in logits.items()}
    assert 0 < min(sigmoids.values()) < max(sigmoids.values()) < 1
    assert shell(str(bert_dir), "--output", "sigmoid") == (pytest.approx(sigmoids), {"unit"})
    spec = tmp_path / "ce.toml"
    spec.write_text(f'[scorer]\ntype = "cross_encoder"\nmodel = "{bert_dir}"\noutput = "sigmoid"\n')
    assert shell(str(spec)) == (pytest.approx(sigmoids), {"unit"})


@pytest.mark.parametrize("name", ["cross-encoder", "cross_encoder"])
def test_output_on_the_registered_cross_encoder_sets_its_output(name):
    args = build_parser().parse_args(
        ["rank", "-q", "q", "-r", name, "--output", "sigmoid", "--backend", "onnx"]
    )
    spec = with_output(args.reranker, args)
    assert spec == {"scorer": {"type": "cross_encoder", "backend": "onnx", "output": "sigmoid"}}


def test_output_where_nothing_has_one_is_an_error_saying_where_it_applies(capsys, tmp_path):
    spec = tmp_path / "lexical.toml"
    spec.write_text('[scorer]\ntype = "bm25"\n')
    code, _, err = _rank(capsys, "-r", "bm25", "--output", "sigmoid")
    assert code == 1 and "--output applies to a cross-encoder" in err and "'bm25' is not one" in err
    code, _, err = _rank(capsys, "-r", str(spec), "--output", "sigmoid")
    assert code == 1 and f'{spec} is a pipeline file: set output = "sigmoid" on its' in err
