from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import rerankit
from rerankit.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample.jsonl"


def run_cli(capsys, *argv, stdin=None, monkeypatch=None):
    """``rerankit ARGV``; a ``rank`` that names no reranker uses bm25 (these tests are about
    input and output, and the default reranker depends on the extras installed)."""
    if argv[:1] == ("rank",) and not {"-r", "--reranker", "-c", "--config"} & set(argv):
        argv = (*argv, "-r", "bm25")
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_rank_jsonl_keeps_every_field_and_adds_the_score(capsys):
    code, out, err = run_cli(
        capsys, "rank", "--query", "vaccines immune system", "--input", str(SAMPLE), "--top-k", "3"
    )
    assert code == 0 and err == ""
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 3
    originals = {r["id"]: r for r in map(json.loads, SAMPLE.read_text().splitlines())}
    for row in rows:
        assert row == {
            **originals[row["id"]],
            "rerank_score": row["rerank_score"],
            "score_scale": "relative",  # what the score means (bm25's: within this call)
        }
    scores = [r["rerank_score"] for r in rows]
    assert scores == sorted(scores, reverse=True)


def test_rank_reads_a_json_array_of_strings_from_stdin(capsys, monkeypatch):
    code, out, _ = run_cli(
        capsys,
        "rank",
        "-q",
        "solar",
        "--score-field",
        "s",
        stdin='["wind power", "solar power", "solar solar"]',
        monkeypatch=monkeypatch,
    )
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["text"] for r in rows] == ["solar solar", "solar power", "wind power"]
    assert set(rows[0]) == {"text", "s", "score_scale"}


def test_details_and_table_formats(capsys):
    from rerankit.scorers.recipe import HYBRID_CALIBRATION

    code = main(
        [
            *("rank", "-q", "mRNA vaccines", "-i", str(SAMPLE), "--details", "-k", "1"),
            *("--first-stage-field", "retriever_score"),
        ]
    )
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["rank"] == 1 and "mRNA" in record["text"]
    # the default is the hybrid pipeline when the torch extra is installed
    has_torch = all(importlib.util.find_spec(m) for m in ("torch", "sentence_transformers"))
    # the sample's retriever_score, named on the command line, is the hybrid's first stage,
    # fused with the default weight 0: the text signals alone rank, as probabilities
    beside = set(HYBRID_CALIBRATION["weights"])
    assert set(record["scores"]) == (beside if has_torch else {"bm25"})
    code, out, _ = run_cli(
        capsys, "rank", "-q", "mRNA vaccines", "-i", str(SAMPLE), "--format", "table", "-r", "text"
    )
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["rank", "score", "id", "text"]
    assert len(lines) == 13 and lines[1].split()[0] == "1"


def test_the_table_tells_a_title_from_its_body(tmp_path, capsys):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "title": "Wind", "text": "Wind turbines make power"}\n')
    code, out, _ = run_cli(capsys, "rank", "-q", "wind", "-i", str(docs), "--format", "table")
    assert code == 0 and out.splitlines()[1].endswith("Wind / Wind turbines make power"), out


@pytest.mark.parametrize(
    ("stdin", "args", "message"),
    [
        ('{"text": "ok"}\n{"text": 3}\n', [], "stdin:2: field 'text' must be a string"),
        ('\n{"text": "ok"}\n\n{"title": "t"}\n', [], "stdin:4: missing text field 'text'"),
        ('{"text": "ok"}\n{oops\n', [], "stdin:2: invalid JSON"),
        ("solar panels\nwind farms\n", [], "plain text is not read as documents"),
        ('[{"body": "x"}]', [], "stdin: item 1 of the JSON array: missing text field 'text'"),
        ('{"body": "x"}\n', [], "(fields present: 'body'); name yours with --text-field NAME"),
    ],
)
def test_bad_input_is_one_clear_line_and_nonzero_exit(capsys, monkeypatch, stdin, args, message):
    code, out, err = run_cli(capsys, "rank", "-q", "x", *args, stdin=stdin, monkeypatch=monkeypatch)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("rerankit rank: error: ") and message in err


def test_a_document_error_names_the_file_and_its_line(capsys, tmp_path):
    """The index a Python caller gets (``document 1``) is, for a file, its 1-based line
    (blank lines counted); the library's own wording is unchanged."""
    from rerankit import rerank

    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n\n{"id": "b", "title": "t"}\n')
    code, _, err = run_cli(capsys, "rank", "-q", "x", "-r", "bm25", "-i", str(path))
    assert code == 1 and err == (
        f"rerankit rank: error: {path}:3: missing text field 'text' (fields present: 'id', "
        "'title'); an earlier document has it: each document needs its text there\n"
    )
    # the field missing from the first line on: name the field that holds the texts
    path.write_text('{"id": "b", "title": "t"}\n')
    code, _, err = run_cli(capsys, "rank", "-q", "x", "-r", "bm25", "-i", str(path))
    assert code == 1 and err.endswith(
        "; name yours with --text-field NAME (or several: --text-fields A,B)\n"
    )
    with pytest.raises(ValueError, match=r"^document 1: missing text field 'text'"):
        rerank("x", [{"id": "a", "text": "x"}, {"id": "b", "title": "t"}], reranker="bm25")


def test_missing_file_and_warnings_go_to_stderr(capsys, monkeypatch, tmp_path):
    code, _, err = run_cli(capsys, "rank", "-q", "x", "-i", str(tmp_path / "none.jsonl"))
    assert code == 2 and err.count("\n") == 1
    assert err == f"rerankit rank: error: {tmp_path / 'none.jsonl'}: no such file (--input: " + (
        "the documents to rank)\n"
    )
    stdin = '[{"text": "b", "rerank_score": 1}, {"text": "a"}]'
    code, out, err = run_cli(capsys, "rank", "-q", "a", stdin=stdin, monkeypatch=monkeypatch)
    assert code == 0 and "warning: 1 input dict already had a 'rerank_score'" in err
    # the shell's user is told the flag, a caller of the library the keyword
    assert "(--score-field NAME names another field)" in err and "score_field=" not in err
    said = rerankit.rerank("a", json.loads(stdin), reranker="bm25").warnings
    assert any("(score_field= names another field)" in w for w in said)
    assert sorted(json.loads(line)["text"] for line in out.splitlines()) == ["a", "b"]


def test_a_torch_free_install_is_told_the_torch_free_route_to_the_default(
    capsys, monkeypatch, tmp_path
):
    """With ONNX Runtime but no torch and no export in the cache, `rank` without -r uses
    bm25 and says both ways to the hybrid: install torch, or an exported folder named in
    a pipeline file (the note named the torch extra alone)."""
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch" else real_find_spec(name, *a),
    )
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))  # no export there
    code = main(["rank", "-q", "mRNA vaccines", "-i", str(SAMPLE), "-k", "1"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0 and "using bm25" in err and "rerankit[torch]" in err
    assert "`rerankit export all-MiniLM-L6-v2 --out minilm-onnx`" in err
    assert 'reranker = { type = "hybrid", model = "minilm-onnx" }' in err
    assert "`rerankit serve --model minilm-onnx`" in err  # as service.md's Serve without torch
    assert "the export in the rerankit cache" in err and "makes hybrid the default" in err


@pytest.mark.parametrize("command", ["rank", "batch"])
def test_help_states_the_default_rerankers_rule_as_rerankers_does(command, capsys):
    """hybrid with torch, or with onnx and the bundled model's export (`rerankit rerankers`:
    "extra: torch, or onnx with an exported model"), else bm25; the help said "bm25 without
    the torch extra", wrong on a torch-free install with an export."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "bm25 without the torch extra" not in text
    assert "with the torch extra, or with the onnx extra and the bundled model's export" in text


def test_export_without_torch_fails_before_announcing_an_export(capsys, monkeypatch, tmp_path):
    """`export MODEL --out DIR` without torch says torch is needed, and does not first
    say "exporting MODEL as cross_encoder" as if it had begun."""
    model = tmp_path / "my-ce"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["BertForSequenceClassification"]}')
    monkeypatch.setitem(sys.modules, "torch", None)  # as in a torch-free install
    code = main(["export", str(model), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code != 0 and "needs the optional package 'torch'" in err
    assert "as cross_encoder" not in err and not (tmp_path / "out").exists()


def test_a_string_line_comes_out_as_the_cli_page_shows(capsys, monkeypatch):
    """docs/cli.md shows what `rank` writes for string input lines (an object, its text
    under `text`), which no page said; Python gives the string back as the document, as
    the README says."""
    import re
    import shlex

    page = (SAMPLE.parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    lines, command, shown = re.search(
        r"```text\n\$ printf '(.*?)' \| rerankit (rank .*?)\n(.*?)```", page, re.S
    ).groups()
    stdin = lines.replace("\\n", "\n")
    code, out, _ = run_cli(capsys, *shlex.split(command), stdin=stdin, monkeypatch=monkeypatch)
    assert code == 0 and out == shown
    result = rerankit.rerank("solar panels", ["wind turbines", "solar panels"], reranker="jaccard")
    assert result[0].document == "solar panels"


def test_help_lists_commands_via_the_module_entry_point():
    proc = subprocess.run(
        [sys.executable, "-m", "rerankit", "--help"], capture_output=True, text=True, check=True
    )
    assert "rank" in proc.stdout and "rerankers" in proc.stdout
    listing = subprocess.run(
        [sys.executable, "-m", "rerankit", "rerankers"], capture_output=True, text=True, check=True
    )
    assert {"bm25", "text", "jaccard", "embedding", "hybrid"} <= set(listing.stdout.split())


def test_without_the_torch_extra_the_default_is_bm25_and_says_so(capsys, monkeypatch):
    real_find_spec = importlib.util.find_spec
    missing = ("torch", "onnxruntime")  # neither torch nor ONNX Runtime to run the model
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in missing else real_find_spec(name, *a),
    )
    code = main(["rank", "-q", "mRNA vaccines", "-i", str(SAMPLE), "-k", "1"])
    out, err = capsys.readouterr()
    assert code == 0 and "using bm25" in err and "rerankit[torch]" in err
    assert "mRNA" in json.loads(out)["text"]


def test_closed_standard_streams_are_one_line_errors(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)
    code, _, err = run_cli(capsys, "rank", "-q", "x")
    assert (
        code == 1 and err == "rerankit rank: error: standard input is closed; pass --input FILE\n"
    )
    monkeypatch.setattr(sys, "stdout", None)
    assert main(["rank", "-q", "x", "-i", str(SAMPLE), "-r", "bm25"]) == 1
    assert "standard output is closed" in capsys.readouterr().err


def test_files_that_are_not_utf8_or_carry_a_bom(capsys, tmp_path):
    latin = tmp_path / "latin1.jsonl"
    latin.write_bytes(b'{"text": "caf\xe9"}\n')  # Latin-1, not UTF-8
    code, out, err = run_cli(capsys, "rank", "-q", "x", "-i", str(latin))
    assert code == 1 and str(latin) in err and "not UTF-8" in err and err.count("\n") == 1
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + b'{"text": "solar panels"}\n{"text": "wind"}\n')
    code, out, err = run_cli(capsys, "rank", "-q", "solar", "-i", str(bom))
    assert code == 0 and json.loads(out.splitlines()[0])["text"] == "solar panels"


def test_jsonl_whose_first_line_is_an_array_is_read_as_lines(capsys, monkeypatch):
    code, out, err = run_cli(
        capsys, "rank", "-q", "x", stdin="[1, 2]\n[3, 4]\n", monkeypatch=monkeypatch
    )
    assert code == 1 and "stdin:1: unsupported type list" in err
    code, out, err = run_cli(
        capsys, "rank", "-q", "a", stdin='["a b", "c"]', monkeypatch=monkeypatch
    )
    assert code == 0 and len(out.splitlines()) == 2  # a whole-file array is still an array


def test_details_never_write_nan(capsys, tmp_path):
    path = tmp_path / "docs.jsonl"
    rows = [{"text": "solar panels", "s": float("nan")}, {"text": "wind farms", "s": 1.0}]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    spec = tmp_path / "p.toml"
    spec.write_text('scorer = { type = "field", field = "s" }\n', encoding="utf-8")
    code, out, _ = run_cli(capsys, "rank", "-q", "x", "-i", str(path), "-c", str(spec), "--details")
    assert code == 0 and "NaN" not in out
    records = {r["text"]: r for r in map(json.loads, out.splitlines())}
    assert records["solar panels"]["scores"]["s"] is None
    assert "non_finite:s" in records["solar panels"]["flags"]


def test_rerankers_lists_what_each_needs(capsys):
    code, out, _ = run_cli(capsys, "rerankers")
    lines = {line.split()[0]: line for line in out.partition("\n\n")[0].splitlines()[1:]}
    assert code == 0 and "extra: torch" in lines["hybrid"] and "nothing extra" in lines["bm25"]
    assert "or onnx with an exported model" in lines["hybrid"]  # it runs torch-free too
    assert "or onnx with an exported model" in lines["cross-encoder"]  # rerankit export
    assert "onnx" not in lines["causal-lm"]
    assert "OPENAI_API_KEY" in lines["openai-pointwise"]
    code, out, _ = run_cli(capsys, "rerankers", "--all")
    assert "scorer:coverage" in out and "llm_client:gemini" in out
    learned = next(line for line in out.splitlines() if line.startswith("scorer:learned "))
    assert learned.rstrip().endswith("extra: learn and torch")  # "extra:" said once


def test_cache_command_shows_and_clears_the_judgment_cache(capsys, tmp_path, monkeypatch):
    from rerankit.cache import JudgmentCache

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RERANKIT_EMBEDDING_CACHE", raising=False)
    cache = JudgmentCache(tmp_path / "judgments.sqlite")
    cache.put_many([("a", 1.0), ("b", 2.0)])
    code, out, _ = run_cli(capsys, "cache")
    assert code == 0 and "judgments" in out and "2 entries" in out
    code, out, _ = run_cli(capsys, "cache", "clear")
    assert code == 0 and "cleared judgments" in out and len(cache) == 0


@pytest.mark.parametrize("name", ["judgments", "judgment"])
def test_cache_clear_takes_a_cache_by_its_plural_or_singular_name(
    name, capsys, tmp_path, monkeypatch
):
    from rerankit.cache import EmbeddingCache, JudgmentCache

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    judgments = JudgmentCache(tmp_path / "judgments.sqlite")
    judgments.put_many([("a", 1.0)])
    EmbeddingCache(path=tmp_path / "embeddings.sqlite").put_many("m", ["x"], [[1.0, 0.0]])
    code, out, _ = run_cli(capsys, "cache", "clear", name)
    assert code == 0 and out.startswith("cleared judgments:") and len(judgments) == 0
    code, out, _ = run_cli(capsys, "cache")
    embeddings = next(line for line in out.splitlines() if line.startswith("embeddings:"))
    assert "1 entry," in embeddings and "RERANKIT_EMBEDDING_CACHE names this file" in embeddings


@pytest.mark.parametrize("action", ["info", "clear"])
def test_cache_actions_have_their_own_help(action, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["cache", action, "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert out.startswith(f"usage: rerankit cache {action} ") and "--url" in out
    assert f"rerankit cache {action}" in out.split("examples:")[1]  # its own examples


@pytest.mark.parametrize(
    "argv",
    [
        ["cache", "--url", "redis://h:1/0", "--namespace", "v2", "info", "answers"],
        ["cache", "info", "answers", "--url", "redis://h:1/0", "--namespace", "v2"],
    ],
)
def test_cache_options_reach_the_action_before_or_after_it(argv):
    args = build_parser().parse_args(argv)
    assert (args.action, args.what, args.url, args.namespace) == (
        "info",
        "answers",
        "redis://h:1/0",
        "v2",
    )
    assert build_parser().parse_args(["cache"]).action == "info"  # the default


def test_batch_usage_shows_out_as_required_and_both_spellings_still_parse(capsys):
    batch = build_parser()._subparsers._group_actions[0].choices["batch"]
    assert "--out OUT" in batch.format_usage() and "[--out OUT]" not in batch.format_usage()
    for flag in ("--out", "-o", "--output"):
        assert build_parser().parse_args(["batch", "-i", "in", flag, "x.jsonl"]).out == "x.jsonl"
    with pytest.raises(SystemExit):
        main(["batch", "-i", "in.jsonl"])
    assert "--out" in capsys.readouterr().err


def test_an_unknown_name_suggests_the_close_one(capsys):
    code, _, err = run_cli(capsys, "rank", "-q", "solar", "-i", str(SAMPLE), "-r", "hybird")
    assert code == 2 and "did you mean 'hybrid'?" in err and "available:" in err
    code, _, err = run_cli(capsys, "rank", "-q", "solar", "-i", str(SAMPLE), "-r", "zzzz")
    assert code == 2 and "did you mean" not in err


def test_a_batch_file_given_to_rank_points_to_batch(capsys, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"query": "solar", "candidates": ["a solar panel", "wind"]}) + "\n")
    code, out, err = run_cli(capsys, "rank", "-q", "solar", "-i", str(rows))
    assert code == 1 and out == ""
    assert "batch rows" in err and "rerankit batch --input FILE --out OUT" in err


def test_batch_takes_k_as_rank_does_and_writes_strict_json(capsys, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "\n".join(
            json.dumps({"query": "solar power", "candidates": ["solar power", "wind", "coal"]})
            for _ in range(2)
        )
        + "\n"
    )
    out = tmp_path / "out.jsonl"
    summary = tmp_path / "summary.json"
    code, _, _ = run_cli(
        capsys,
        "batch",
        "-i",
        str(rows),
        "-o",
        str(out),
        "-r",
        "bm25",
        "-k",
        "1",
        "--summary",
        str(summary),
    )
    assert code == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [len(r["results"]) for r in written] == [1, 1]

    def refuse(constant):
        raise AssertionError(f"non-strict JSON constant {constant}")

    for text in (out.read_text(), summary.read_text()):
        for line in text.splitlines() if text.startswith('{"') else [text]:
            json.loads(line, parse_constant=refuse)


def test_reading_a_terminal_says_what_it_waits_for(capsys, monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal('["solar power", "wind"]'))
    code = main(["rank", "-q", "solar", "-r", "bm25"])
    _, err = capsys.readouterr()
    assert code == 0 and "reading documents from standard input" in err and "Ctrl-D" in err


def test_local_models_load_without_a_download_message(capsys, tmp_path):
    pytest.importorskip("sentence_transformers", reason="needs the 'torch' extra")
    from rerankit.backends.bundled import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2")
    code, _, err = run_cli(capsys, "rank", "-q", "vaccines", "-i", str(SAMPLE), "-r", "embedding")
    assert code == 0 and "loading" not in err and "hub" not in err


def test_a_model_folder_or_hub_id_is_a_reranker(capsys, tmp_path, monkeypatch, bert_dir, tiny_st):
    sentence_transformers = pytest.importorskip("sentence_transformers")

    from rerankit import load
    from rerankit.scorers import CrossEncoderScorer, EmbeddingScorer

    query, docs = "vaccines immune", [json.loads(line)["text"] for line in SAMPLE.open()]
    # a cross-encoder as sentence-transformers saves it (with modules.json, as rerankit train
    # cross_encoder writes): still a cross-encoder
    st_ce = tmp_path / "st-cross-encoder"
    sentence_transformers.CrossEncoder(str(bert_dir), num_labels=1).save(str(st_ce))
    assert (st_ce / "modules.json").is_file()
    kinds = (
        (bert_dir, CrossEncoderScorer),
        (st_ce, CrossEncoderScorer),
        (tiny_st, EmbeddingScorer),
    )
    for folder, scorer in kinds:
        reranker = load(str(folder))
        (step,) = list(reranker.scorers())
        assert isinstance(step, scorer) and step.model_id == str(folder)
        direct = scorer(str(folder)).score_texts(query, docs)
        got = {r.index: r.scores[step.name] for r in reranker.rerank(query, docs)}
        assert [got[i] for i in range(len(docs))] == pytest.approx(list(direct), abs=1e-6)
        code, out, _ = run_cli(capsys, "rank", "-q", query, "-i", str(SAMPLE), "-r", str(folder))
        assert code == 0 and len(out.splitlines()) == len(docs)
    # a hub id that is neither cached nor reachable: the error names it and the way out
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    code, _, err = run_cli(
        capsys, "rank", "-q", query, "-i", str(SAMPLE), "-r", "someone/not-a-cached-model"
    )
    assert code == 1 and "could not load model 'someone/not-a-cached-model'" in err
    assert "HF_HUB_OFFLINE is set" in err and "pass the path of a folder" in err
    # a folder whose kind its files do not tell: the way out is a form -r takes (a file)
    odd = tmp_path / "odd-model"
    odd.mkdir()
    (odd / "config.json").write_text('{"architectures": ["SomethingElse"]}')
    code, _, err = run_cli(capsys, "rank", "-q", query, "-i", str(SAMPLE), "-r", str(odd))
    assert code == 1 and f"cannot tell what {str(odd)!r} is" in err
    assert 'in a pipeline file ([scorer] type = "cross_encoder"' in err
    spec = tmp_path / "odd.toml"  # as the message says
    spec.write_text(f'[scorer]\ntype = "cross_encoder"\nmodel = "{bert_dir}"\n')
    code, out, _ = run_cli(capsys, "rank", "-q", query, "-i", str(SAMPLE), "-r", str(spec))
    assert code == 0 and len(out.splitlines()) == len(docs)


def test_cache_lists_every_cache_with_its_size_and_clears_the_one_named(
    capsys, tmp_path, monkeypatch
):
    import numpy as np

    from rerankit.cache import EmbeddingCache, JudgmentCache

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RERANKIT_EMBEDDING_CACHE", raising=False)
    vectors = EmbeddingCache(path=tmp_path / "embeddings.sqlite")
    vectors.put_many("m", ["a", "b", "c"], np.ones((3, 4), dtype=np.float32))
    JudgmentCache(tmp_path / "judgments.sqlite").put_many([("k", 1.0)])
    export = tmp_path / "onnx" / "all-MiniLM-L6-v2-abc"
    export.mkdir(parents=True)
    (export / "rerankit_onnx.json").write_text(json.dumps({"source": "all-MiniLM-L6-v2"}))
    (export / "model.onnx").write_bytes(b"0" * 2_000_000)
    code, out, _ = run_cli(capsys, "cache")
    lines = {line.split(":")[0]: line for line in out.splitlines()}
    assert code == 0 and set(lines) == {"embeddings", "judgments", "answers", "onnx", "wordfreq"}
    assert "3 entries" in lines["embeddings"] and str(tmp_path) in lines["embeddings"]
    assert "1 entry," in lines["judgments"]
    assert "1 export: all-MiniLM-L6-v2" in lines["onnx"] and "2.0 MB" in lines["onnx"]
    code, out, _ = run_cli(capsys, "cache", "clear", "onnx")
    assert code == 0 and out.startswith("cleared onnx") and not (tmp_path / "onnx").exists()
    assert (tmp_path / "embeddings.sqlite").exists()  # only the cache named
    code, out, _ = run_cli(capsys, "cache")
    assert "onnx:" in out and "(empty)" in out.split("onnx:")[1].splitlines()[0]


def test_cache_clear_all_keeps_the_onnx_exports_an_install_without_torch_cannot_remake(
    capsys, tmp_path, monkeypatch
):
    from rerankit.cache import JudgmentCache

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RERANKIT_CACHE_URL", raising=False)
    JudgmentCache(tmp_path / "judgments.sqlite").put_many([("k", 1.0)])
    export = tmp_path / "onnx" / "all-MiniLM-L6-v2-abc"
    export.mkdir(parents=True)
    (export / "rerankit_onnx.json").write_text(json.dumps({"source": "all-MiniLM-L6-v2"}))
    real_find_spec = importlib.util.find_spec  # torch-free: as `pip install rerankit[onnx]`
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch" else real_find_spec(name, *a),
    )
    code, out, _ = run_cli(capsys, "cache", "clear")
    assert code == 0 and "cleared judgments" in out and export.exists()
    assert "kept onnx:" in out and "`rerankit cache clear onnx` removes them" in out
    code, out, _ = run_cli(capsys, "cache", "clear", "onnx")  # named: removed
    assert code == 0 and out.startswith("cleared onnx") and not export.exists()
    export.mkdir(parents=True)
    (export / "rerankit_onnx.json").write_text(json.dumps({"source": "all-MiniLM-L6-v2"}))
    monkeypatch.setattr(importlib.util, "find_spec", real_find_spec)
    if can_export_here():  # with torch, all removes them: the next use exports again
        code, out, _ = run_cli(capsys, "cache", "clear")
        assert code == 0 and "cleared onnx" in out and not export.exists()


def can_export_here() -> bool:
    from rerankit.backends.export_cache import can_export

    return can_export()


def test_language_reaches_the_lexical_signals_from_every_command(capsys, tmp_path):
    from rerankit.cli import serve_settings

    german = tmp_path / "de.jsonl"
    german.write_text(
        "\n".join(json.dumps({"text": t}) for t in ("Die Häuser sind groß", "Ein Auto fährt"))
        + "\n"
    )
    # German stemming makes "Haus" match "Häuser" only when the analyzer reads German
    code, out, _ = run_cli(
        capsys, "rank", "-q", "Haus", "-i", str(german), "-r", "bm25", "--language", "de"
    )
    scores = [json.loads(line)["rerank_score"] for line in out.splitlines()]
    assert code == 0 and scores[0] > 0 == scores[1]
    code, out, _ = run_cli(capsys, "rank", "-q", "Haus", "-i", str(german), "-r", "bm25")
    assert code == 0 and all(json.loads(line)["rerank_score"] == 0 for line in out.splitlines())
    (tmp_path / "p.toml").write_text('[scorer]\ntype = "bm25"\n')
    code, _, err = run_cli(
        capsys,
        "rank",
        "-q",
        "Haus",
        "-i",
        str(german),
        "-r",
        str(tmp_path / "p.toml"),
        "--language",
        "de",
    )
    assert code == 2 and "--language applies to a registered reranker" in err
    settings = serve_settings(build_parser().parse_args(["serve", "--language", "de"]))
    assert settings.pipelines == {"hybrid": {"reranker": {"type": "hybrid", "language": "de"}}}


def test_rank_says_where_a_hub_model_comes_from_as_the_docs_say(capsys, monkeypatch, tmp_path):
    """docs/scorers.md: one line on stderr before a model named by a hub id loads, saying
    whether it is downloaded or read from the local cache (no download claimed for a model
    the cache holds); none for the bundled model or a local folder."""
    constants = pytest.importorskip("huggingface_hub.constants")
    from rerankit.cli.rank import announce_model_loading
    from rerankit.rerankers import ScorerReranker
    from rerankit.scorers import EmbeddingScorer

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    snapshot = tmp_path / "models--my-org--cached" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("abc123")

    # a hub that answers (any HTTP answer will do)
    import http.server
    import threading

    hub = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{hub.server_address[1]}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    try:
        announce_model_loading(ScorerReranker(EmbeddingScorer("some-org/some-model")))
    finally:
        hub.shutdown()
    err = capsys.readouterr().err
    assert "loading some-org/some-model from the Hugging Face hub (downloaded into its cache" in err
    # offline nothing is downloaded: no such claim (the load then says what to do offline)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    announce_model_loading(ScorerReranker(EmbeddingScorer("some-org/some-model")))
    assert capsys.readouterr().err == ""
    announce_model_loading(ScorerReranker(EmbeddingScorer("my-org/cached")))
    err = capsys.readouterr().err
    assert err == f"rerankit: loading my-org/cached from the Hugging Face cache ({tmp_path})\n"
    announce_model_loading(ScorerReranker(EmbeddingScorer()))  # the bundled model
    assert capsys.readouterr().err == ""
    # without torch nothing is downloaded (the load fails saying what it needs): no line
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sentence_transformers" else real(name, *a),
    )
    announce_model_loading(ScorerReranker(EmbeddingScorer("some-org/some-model")))
    assert capsys.readouterr().err == ""
    page = " ".join((Path(__file__).parents[2] / "docs" / "scorers.md").read_text().split())
    assert "prints a line while they do" not in page
    assert "one line on stderr before loading a model named by a hub id" in page
    assert "read from the local Hugging Face cache when it is there" in page


@pytest.mark.parametrize("flag", ["--settings", "--config"])  # and its old spelling
def test_a_missing_settings_file_is_called_a_settings_file(tmp_path, capsys, flag):
    pytest.importorskip("fastapi", reason="serve needs the 'server' extra")
    assert main(["serve", flag, str(tmp_path / "nosuch.toml")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'nosuch.toml'}: no such file (--settings: the service's settings" in err
    assert "pipeline file" not in err


def test_serve_reads_the_settings_formats_its_help_names(tmp_path, capsys):
    """serve --help names every format --settings reads (TOML, YAML, JSON), and each gives
    the same settings (docs/service.md offers YAML too)."""
    pytest.importorskip("fastapi", reason="serve needs the 'server' extra")
    pytest.importorskip("yaml", reason="YAML settings need the 'yaml' extra")
    from rerankit.cli import serve_settings

    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "TOML (.toml), YAML (.yaml/.yml: extra yaml) or JSON (.json)" in shown
    files = {
        "s.toml": '[server]\nmax_documents = 7\n[pipelines.lex]\nreranker = "bm25"\n',
        "s.yaml": "server:\n  max_documents: 7\npipelines:\n  lex:\n    reranker: bm25\n",
        "s.json": '{"server": {"max_documents": 7}, "pipelines": {"lex": {"reranker": "bm25"}}}',
    }
    read = []
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        settings = serve_settings(
            build_parser().parse_args(["serve", "--settings", str(tmp_path / name)])
        )
        read.append((settings.max_documents, settings.default, settings.pipelines))
    assert read == [(7, "lex", {"lex": {"reranker": "bm25"}})] * 3


def test_batch_over_a_beir_folder_takes_max_queries(tmp_path, capsys, synthetic):
    data = synthetic(tmp_path / "beir")
    out = tmp_path / "ranked.jsonl"
    argv = ["batch", "--data", str(data), "--split", "train", "-r", "bm25", "--out", str(out)]
    assert main([*argv, "--max-queries", "3"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["query_id"] for r in rows] == ["q0", "q1", "q2"]
    # without it, every query of the split: resumed after the 3 written
    assert main([*argv, "--resume"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["query_id"] for r in rows] == [f"q{i}" for i in range(30)]
    rows_file = tmp_path / "rows.jsonl"
    rows_file.write_text(json.dumps({"query": "q", "candidates": ["a", "b"]}) + "\n")
    assert main(["batch", "-i", str(rows_file), "--out", str(out), "--max-queries", "1"]) == 2
    assert "--max-queries has no effect with --input" in capsys.readouterr().err


def test_batch_over_a_folder_without_judgments_reranks_every_query(tmp_path, capsys, synthetic):
    data = synthetic(tmp_path / "beir")
    for qrels in (data / "qrels").glob("*.tsv"):
        qrels.unlink()
    out = tmp_path / "ranked.jsonl"
    assert main(["batch", "--data", str(data), "-r", "bm25", "--out", str(out)]) == 0
    queries = (data / "queries.jsonl").read_text().splitlines()
    assert len(out.read_text().splitlines()) == len(queries) > 0
    assert "no qrels/test.tsv (split 'test'): reranking every query" in capsys.readouterr().err


def test_rank_text_fields_reads_several_fields_as_python_does(capsys, tmp_path):
    docs = [
        {"id": "a", "heading": "Storage", "body": "Vaccines keep between 2 and 8 degrees."},
        {"id": "b", "heading": "Vaccines", "body": "They train B and T cells."},
        {"id": "c", "heading": "Fridges", "body": "Cold rooms for food."},
    ]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    query = "how do vaccines train cells"
    code, out, err = run_cli(
        capsys, "rank", "--query", query, "--input", str(path), "--text-fields", "heading,body"
    )
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    direct = rerankit.rerank(query, docs, reranker="bm25", text_fields=("heading", "body"))
    assert [(r["id"], r["rerank_score"]) for r in rows] == [(d.id, d.score) for d in direct]
    # the text comes from the two fields: without them there is no "text" to read
    code, _, err = run_cli(capsys, "rank", "--query", query, "--input", str(path))
    assert code == 1 and "'text'" in err
    # --text-field beside it would be ignored, so it is refused; an empty name too
    code, _, err = run_cli(
        capsys, "rank", "-q", query, "-i", str(path), "--text-fields", "body", "--text-field", "x"
    )
    assert code == 2 and "--text-field has no effect with --text-fields" in err
    with pytest.raises(SystemExit) as exit_:
        main(["rank", "-q", query, "-i", str(path), "--text-fields", "heading,,body"])
    assert exit_.value.code == 2 and "field names separated by commas" in capsys.readouterr().err


def test_rank_and_batch_title_field_read_it_as_a_title_field(capsys, tmp_path):
    docs = [
        {"doc_id": "a", "headline": "Vaccines", "body": "They train B and T cells."},
        {"doc_id": "b", "headline": "Storage", "body": "Vaccines keep cold."},
        {"doc_id": "c", "headline": "Fridges", "body": "Cold rooms for food."},
    ]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    query = "vaccines train cells"
    argv = ["rank", "-q", query, "-i", str(path), "-r", "bm25", "--text-field", "body"]
    code, out, err = run_cli(capsys, *argv, "--id-field", "doc_id", "--title-field", "headline")
    assert code == 0, err
    rows = [(r["doc_id"], r["rerank_score"]) for r in map(json.loads, out.splitlines())]
    renamed = [{"title" if k == "headline" else k: v for k, v in d.items()} for d in docs]
    direct = rerankit.rerank(query, renamed, reranker="bm25", text_field="body", id_field="doc_id")
    assert rows == [(d.id, d.score) for d in direct]
    untitled = rerankit.rerank(query, docs, reranker="bm25", text_field="body", id_field="doc_id")
    assert rows != [(d.id, d.score) for d in untitled]  # the headline counts
    code, _, err = run_cli(capsys, *argv, "--title-field", "heading")
    assert code == 1 and "title field 'heading' is in none of the 3 documents" in err
    code, _, err = run_cli(capsys, *argv[:5], "--text-fields", "body", "--title-field", "headline")
    assert code == 2 and "--title-field has no effect with --text-fields" in err
    # batch reads its rows' candidates the same way
    batch_rows = tmp_path / "rows.jsonl"
    batch_rows.write_text(json.dumps({"query": query, "candidates": docs}) + "\n")
    out_file = tmp_path / "out.jsonl"
    batch = ["batch", "-i", str(batch_rows), "-o", str(out_file), "-r", "bm25"]
    flags = ["--text-field", "body", "--id-field", "doc_id", "--title-field", "headline"]
    assert main([*batch, *flags]) == 0
    got = [(r["id"], r["score"]) for r in json.loads(out_file.read_text())["results"]]
    assert got == [(d.id, pytest.approx(d.score)) for d in direct]


def test_the_quickstart_says_explain_writes_a_table_as_rank_help_does(capsys):
    """quickstart.md said "without --format table it writes JSON Lines", but with --explain
    the table is the default (as `rank --help` says)."""
    with pytest.raises(SystemExit):
        main(["rank", "--help"])
    assert "table (the default with --explain)" in " ".join(capsys.readouterr().out.split())
    page = (Path(__file__).resolve().parents[2] / "docs" / "quickstart.md").read_text()
    said = " ".join(page.split())
    assert "it writes JSON Lines unless given `--format table` (or `--explain`" in said


def test_rank_reads_a_beir_corpus_file_with_its_ids(capsys, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    lines = [
        {"_id": "d1", "title": "Vaccines", "text": "vaccines train the immune system"},
        {"_id": "d2", "title": "Fridges", "text": "fridges keep food cold"},
    ]
    corpus.write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, out, err = run_cli(capsys, "rank", "-q", "vaccines", "--input", str(corpus))
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["_id"] for r in rows] == ["d1", "d2"]
    code, out, err = run_cli(
        capsys, "rank", "-q", "vaccines", "--input", str(corpus), "--format", "table"
    )
    assert code == 0 and "d1" in out and "d2" in out
