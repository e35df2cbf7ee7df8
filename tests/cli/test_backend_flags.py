"""``--backend`` and ``--quantize``: the same flags on rank, batch, eval and serve, and they
reach the scorer that runs the model."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from rerankit.cli import build_parser, main
from rerankit.cli.eval import named_pipelines
from rerankit.cli.pipelines import pipeline_spec
from rerankit.cli.rank import reranker_from
from rerankit.config import build

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample.jsonl"
REQUIRED = {"rank": ["-q", "x"], "batch": ["-i", "in", "-o", "out"], "eval": ["--data", "d"]}


def _flags(command: str) -> dict[str, tuple]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        a.dest: (tuple(a.option_strings), a.choices, a.default)
        for a in sub.choices[command]._actions
        if a.dest in ("backend", "quantize")
    }


def test_rank_batch_and_eval_take_the_flags_serve_takes():
    served = _flags("serve")
    assert served["backend"] == (("--backend",), ("auto", "torch", "onnx"), None)
    assert served["quantize"] == (("--quantize",), ("int8",), None)
    for command in ("rank", "batch", "eval"):
        assert _flags(command) == served, command


def _parse(command: str, *flags: str) -> argparse.Namespace:
    return build_parser().parse_args([command, *REQUIRED[command], *flags])


def test_rank_flags_reach_the_embedding_scorer(tmp_path):
    assert reranker_from(_parse("rank", "--backend", "torch")).embedding.backend == "torch"
    hybrid = reranker_from(_parse("rank", "--backend", "onnx", "--quantize", "int8"))
    assert (hybrid.embedding.backend, hybrid.embedding.quantize) == ("onnx", "int8")
    german = reranker_from(_parse("rank", "--language", "de", "--backend", "torch"))
    assert (german.language, german.embedding.backend) == ("de", "torch")
    relative = reranker_from(_parse("rank", "-r", "hybrid-relative", "--backend", "torch"))
    assert relative.embedding.backend == "torch"
    embedding = reranker_from(_parse("rank", "-r", "embedding", "--quantize", "int8"))
    assert (embedding.scorer.backend, embedding.scorer.quantize) == ("onnx", "int8")
    pipeline = tmp_path / "cascade.toml"  # the built-in hybrid named in a file moves too
    pipeline.write_text(
        '[[stages]]\nscorer = { type = "bm25" }\nkeep = 5\n\n[[stages]]\nreranker = "hybrid"\n'
    )
    cascade = reranker_from(_parse("rank", "-c", str(pipeline), "--backend", "torch"))
    assert cascade.stages[1].step.embedding.backend == "torch"


def test_a_model_given_as_the_reranker_runs_where_the_flags_say(tiny_st):
    scorer = reranker_from(_parse("rank", "-r", str(tiny_st), "--backend", "onnx")).scorer
    assert (scorer.backend, scorer.model_id) == ("onnx", str(tiny_st))
    assert reranker_from(_parse("rank", "-r", str(tiny_st))).scorer.backend == "torch"


def test_batch_and_eval_flags_reach_the_embedding_scorer():
    spec = pipeline_spec("hybrid", _parse("batch", "--backend", "torch"))
    assert build(spec).embedding.backend == "torch"
    runs = named_pipelines("bm25,hybrid", _parse("eval", "--backend", "torch"))
    (_, _, declared), (_, hybrid, _) = runs
    assert declared == "bm25" and hybrid.embedding.backend == "torch"


def test_the_model_rerankers_by_name_take_the_flags_too():
    """``-r cross_encoder`` (either spelling) runs a model: the flags reach it as they reach
    one given by path (they were dropped)."""
    scorer = reranker_from(_parse("rank", "-r", "cross-encoder", "--backend", "onnx")).scorer
    assert scorer.backend == "onnx"
    int8 = reranker_from(_parse("rank", "-r", "cross_encoder", "--quantize", "int8")).scorer
    assert (int8.backend, int8.quantize) == ("onnx", "int8")


@pytest.mark.parametrize("flags", [["--quantize", "int8"], ["--backend", "torch"]])
def test_the_flags_with_a_reranker_that_runs_no_model_are_refused(capsys, tmp_path, flags):
    argv = ["rank", "-q", "x", "-i", str(SAMPLE), *flags]
    assert main([*argv, "-r", "bm25"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rerankit rank: error: {flags[0]} has no effect with --reranker bm25:")
    lexical = tmp_path / "lexical.toml"  # a file naming no built-in model
    lexical.write_text('[[stages]]\nscorer = { type = "bm25" }\n')
    assert main([*argv, "-r", str(lexical)]) == 2
    assert f"no effect with --reranker {lexical}: it runs no model" in capsys.readouterr().err
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"query": "x", "candidates": ["a"]}\n')
    out = tmp_path / "out.jsonl"
    assert main(["batch", "-i", str(rows), "-o", str(out), "-r", "text", *flags]) == 2
    assert f"{flags[0]} has no effect with --reranker text" in capsys.readouterr().err
    assert not out.exists()


def test_serve_moves_a_pipeline_file_s_model_and_refuses_flags_nothing_served_reads(tmp_path):
    from rerankit.cli import serve_settings
    from rerankit.cli.args import UsageError

    hybrid = tmp_path / "mine.toml"
    hybrid.write_text('name = "mine"\nreranker = "hybrid"\n')
    settings = serve_settings(build_parser().parse_args(["serve", "-r", str(hybrid), *TORCH]))
    assert settings.pipelines["mine"]["reranker"] == {"type": "hybrid", "backend": "torch"}
    build(settings.pipelines["mine"])  # it was {"reranker": {"type": "mine.toml", ...}}
    lexical = tmp_path / "service.toml"
    lexical.write_text('[pipelines.lexical]\nreranker = "bm25"\n')
    with pytest.raises(UsageError, match=f"--backend has no effect with --settings {lexical}"):
        serve_settings(build_parser().parse_args(["serve", "--settings", str(lexical), *TORCH]))
    with pytest.raises(UsageError, match="--backend has no effect with --reranker bm25"):
        serve_settings(build_parser().parse_args(["serve", "-r", "bm25", *TORCH]))


TORCH = ["--backend", "torch"]


def test_int8_on_torch_is_refused_with_the_reason(capsys):
    code = main(["rank", "-q", "x", "-i", str(SAMPLE), "--backend", "torch", "--quantize", "int8"])
    assert code == 1
    assert "quantize='int8' needs backend='onnx'" in capsys.readouterr().err


def test_an_unknown_backend_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["rank", "-q", "x", "--backend", "tensorrt"])
    assert "invalid choice: 'tensorrt'" in capsys.readouterr().err


def test_export_without_out_fills_the_cache_the_backends_read(
    tiny_st, tmp_path, monkeypatch, capsys
):
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    from rerankit.backends.export import export_folder
    from rerankit.backends.manifest import is_exported

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    folder = export_folder(str(tiny_st), kind="embedding")
    assert main(["export", str(tiny_st)]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0] == f"exported {tiny_st} to {folder}"
    # and how to read it: without --out, only an explicit ONNX backend does for this model
    assert said[1].startswith(f"rank, batch, eval and serve read it for -r {tiny_st} with ")
    assert "--backend onnx (" in said[1] and "--out FOLDER" in said[1]
    assert is_exported(folder)
    assert main(["export", str(tiny_st)]) == 0
    assert capsys.readouterr().out.startswith("already exported")


def test_export_without_kind_exports_a_cross_encoder_as_one(bert_dir, tmp_path, capsys):
    """Without --kind, export reads what the model is as -r does (a sequence-classification
    architecture is a cross-encoder), so -r on the export ranks with the classifier's
    logits, not by cosine; the kind chosen is said."""
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    from rerankit.backends.detect import model_kind
    from rerankit.backends.manifest import read_manifest

    out = tmp_path / "ce-onnx"
    assert main(["export", str(bert_dir), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert f"exporting {bert_dir} as cross_encoder (told from its files" in printed.err
    assert 'load it with reranker = { type = "cross_encoder"' in printed.out
    assert "in a pipeline file, or as one of its stages: { scorer = {" in printed.out
    assert "int8" not in printed.out  # a float32 export: nothing to judge
    assert read_manifest(out)["kind"] == "cross_encoder"
    assert model_kind(str(out)) == ("cross_encoder", {"backend": "onnx"})  # what -r reads


def test_export_says_how_far_its_scores_are_from_torch(bert_dir, tmp_path, capsys):
    """After writing a folder, export scores a few fixed pairs on torch and on each variant
    it wrote and says the largest difference (float32 within 1e-4, as the pages promise);
    --no-check skips it."""
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    import re

    out = tmp_path / "ce-onnx"
    args = ["export", str(bert_dir), "--kind", "cross-encoder", "--quantize", "int8"]
    assert main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    said = re.search(
        rf"checked on 8 fixed pairs against {re.escape(str(bert_dir))} on torch: largest "
        r"logit difference float32 (\S+), int8 (\S+) ",
        printed,
    )
    assert said, printed
    assert float(said.group(1)) < 1e-4 and float(said.group(2)) < 1.0
    # no bound for int8: the eval that judges it on the user's data instead
    assert "--rerankers float32.toml,int8.toml --baseline float32`" in printed
    assert main([*args, "--out", str(tmp_path / "again"), "--no-check"]) == 0
    assert "checked on" not in capsys.readouterr().out


@pytest.mark.slow
def test_an_int8_export_says_how_to_judge_it_on_your_data(bert_dir, tmp_path, capsys, monkeypatch):
    """No bound is given for int8: the export names the eval that judges it, the same
    pipeline on the float32 and on the int8 file over the user's judgments, and says a
    threshold calibrated on float32 is re-checked on int8. The files and the command it
    prints run as written (here on the bundled judgments)."""
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    import shlex

    out = tmp_path / "ce-onnx"
    args = ["export", str(bert_dir), "--kind", "cross-encoder", "--quantize", "int8"]
    assert main([*args, "--out", str(out), "--no-check"]) == 0
    printed = capsys.readouterr().out
    table = printed.split("Write float32.toml holding ", 1)[1].split(" and int8.toml", 1)[0]
    assert table == f'reranker = {{ type = "cross_encoder", model = "{out}", backend = "onnx" }}'
    assert 'int8.toml the same with quantize = "int8"' in printed
    assert "calibrated on float32 (tune --calibrate)" in printed
    assert "re-check the threshold you chose" in printed
    (tmp_path / "float32.toml").write_text(table + "\n")
    (tmp_path / "int8.toml").write_text(table.replace(" }", ', quantize = "int8" }') + "\n")
    command = shlex.split(printed.split("then run `", 1)[1].split("`", 1)[0])
    assert command[:2] == ["rerankit", "eval"]
    command[command.index("YOUR_DATA")] = str(ROOT / "examples" / "scifact-mini")
    monkeypatch.chdir(tmp_path)
    assert main([*command[1:], "--candidates", "3"]) == 0
    assert re.search(r"^\| int8 \| [+-]\d", capsys.readouterr().out, re.M)  # vs float32


def test_an_exported_embedding_model_is_shown_loading_in_the_hybrid(tiny_st, tmp_path, capsys):
    """The hint after exporting an embedding model loads it where the default reads it, in
    the hybrid (cosine alone ranks worse): the pipeline it prints loads as written, reading
    the export on ONNX Runtime, and the serve command it prints parses."""
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    import shlex

    import tomllib

    from rerankit import load
    from rerankit.cli import build_parser

    out = tmp_path / "st-onnx"
    assert main(["export", str(tiny_st), "--out", str(out)]) == 0
    hint = capsys.readouterr().out.splitlines()[-1]
    assert hint.startswith("load it in the default hybrid with reranker = {")
    table = hint.split(" with ", 1)[1].split(" or `")[0]
    hybrid = load(tomllib.loads(table))
    assert type(hybrid).__name__ == "HybridReranker"
    assert hybrid.embedding.model_id == str(out) and hybrid.embedding.backend == "onnx"
    serve = shlex.split(hint.split("`")[1])
    assert serve[:4] == ["rerankit", "serve", "--model", str(out)]  # the built-ins reading it
    build_parser().parse_args(serve[1:])
    assert 'alone it ranks by cosine similarity only: { type = "embedding"' in hint


def test_export_refuses_to_guess_a_model_it_cannot_tell(tmp_path, capsys):
    """A folder with neither sentence-transformers files nor a classification head: an
    error naming the --kind to pass, before any export work."""
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "config.json").write_text('{"architectures": ["BertModel"]}')
    assert main(["export", str(folder), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"cannot tell whether {str(folder)!r} is an embedding model or a cross-encoder" in err
    assert "name it with --kind embedding or --kind cross-encoder" in err
    assert not (tmp_path / "out").exists()
