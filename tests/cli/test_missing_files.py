"""A file or folder named on the command line that is not there: one form whatever the
command, ``rerankit COMMAND: error: PATH: no such file (FLAG: what it is for)``, a usage
error (exit status 2) said before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from rerankit.cli import main

MINI = str(Path(__file__).resolve().parents[2] / "examples" / "scifact-mini")

#: (command: {m} the missing path, {o} an output; what is missing, the flag named, what for)
CASES = [
    ("rank -q x -i {m}.jsonl", "file", "--input", "the documents to rank"),
    ("rank -q x -r {m}.toml", "file", "--reranker", "a pipeline file"),
    ("rank -q x -r {m}/model", "folder", "--reranker", "a model folder"),
    ("batch -i {m}.jsonl -o {o}", "file", "--input", "the rows to rerank"),
    ("batch -i {m} -o {o}", "file", "--input", "the rows to rerank"),
    ("batch --data {m} -o {o}", "folder", "--data", "a BEIR-layout folder"),
    (f"batch --data {MINI} --first-stage {{m}}.trec -o {{o}}", "file", "--first-stage", "a"),
    ("eval --data {m}", "folder", "--data", "a BEIR-layout folder, or a folder of them"),
    (f"eval --data {MINI} --first-stage {{m}}.tsv", "file", "--first-stage", "a TREC run"),
    (f"eval --data {MINI} -r bm25 -r {{m}}.toml", "file", "--reranker", "a pipeline file"),
    ("tune --data {m}", "folder", "--data", "a BEIR-layout folder"),
    (f"tune --data {MINI} --test-data {{m}}", "folder", "--test-data", "a BEIR-layout folder"),
    (f"tune --data {MINI} --embedding-model {{m}}", "folder", "--embedding-model", "an"),
    ("tune --clicks {m}.jsonl", "file", "--clicks", "a click log, or its rotated files"),
    ("interleave-report {m}.jsonl", "file", "LOG", "a click log, or its rotated files"),
    (f"label --data {MINI} --judge {{m}}.toml --out o", "file", "--judge", "a pipeline file"),
    ("label --data {m} --judge j.toml --out o", "folder", "--data", "a BEIR-layout folder"),
    ("serve --settings {m}.toml", "file", "--settings", "the service's settings file"),
    ("serve -r {m}.toml", "file", "--reranker", "a pipeline file"),
    ("serve --model {m}", "folder", "--model", "a model folder"),
    ("train embedding --data {m} --out o", "folder", "--data", "a BEIR-layout folder"),
    ("simulate-clicks --data {m} --out log.jsonl", "folder", "--data", "a BEIR-layout folder"),
]


@pytest.mark.parametrize(("command", "kind", "flag", "what"), CASES)
def test_a_missing_file_is_one_usage_error_in_every_command(
    capsys, tmp_path, command, kind, flag, what
):
    missing = str(tmp_path / "nowhere")
    out = tmp_path / "out.jsonl"
    argv = command.format(m=missing, o=out).split()
    assert main(argv) == 2
    err = capsys.readouterr().err
    path = next(a for a in argv if a.startswith(missing))
    assert err.startswith(f"rerankit {argv[0]}: error: {path}: no such {kind} ({flag}: {what}")
    assert err.count("\n") == 1 and not out.exists()


def test_what_the_library_says_of_a_missing_file_has_the_same_form(tmp_path):
    """A Python caller (and a file named inside another) gets the same words."""
    from rerankit import load
    from rerankit.batch import run_batch
    from rerankit.errors import no_such_file
    from rerankit.eval.data import find_collections, load_run

    missing = tmp_path / "nowhere"
    assert no_such_file(missing, "a click log") == f"{missing}: no such file (a click log)"
    with pytest.raises(ValueError, match=f"^{missing}.toml: no such file \\(a pipeline file\\)$"):
        load(f"{missing}.toml")
    with pytest.raises(ValueError, match=f"^{missing}.trec: no such file \\(a TREC run file\\)$"):
        load_run(f"{missing}.trec")
    with pytest.raises(ValueError, match=f"^{missing}: no such folder"):
        find_collections([str(missing)])
    with pytest.raises(ValueError, match=f"^{missing}.jsonl: no such file \\(the batch rows"):
        run_batch(f"{missing}.jsonl", tmp_path / "out.jsonl", "bm25")


def test_the_cli_page_shows_what_the_commands_print(capsys, tmp_path, monkeypatch):
    import re
    import shlex

    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n(\$ rerankit rank .*?)```", page, re.S).group(1)
    pairs = re.findall(r"^\$ rerankit (.*)\n(.*)\n", block, re.M)
    assert len(pairs) == 2
    monkeypatch.chdir(tmp_path)  # where neither file is
    for command, shown in pairs:
        assert main(shlex.split(command)) == 2
        assert capsys.readouterr().err == shown + "\n"


def test_a_relative_model_folder_that_is_not_there_is_said_before_the_hub_is_asked(
    tmp_path, monkeypatch, capsys
):
    """The reader's ``-r models/my-ce`` (``models/`` there, ``my-ce`` not in it) was read as
    a hub id in silence, and the offline error suggested ``-r /models/my-ce``, a root path
    never typed. It is said first (a note: ``owner/name`` may still be a hub id), and the
    error's folder is a placeholder; ``org/model`` without such a folder is a hub id."""
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))  # an empty cache
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    Path("docs.jsonl").write_text('{"text": "solar panels"}\n')
    assert main(["rank", "-q", "solar", "-i", "docs.jsonl", "-r", "models/my-ce"]) == 1
    err = capsys.readouterr().err
    said = (
        f"rerankit: note: --reranker models/my-ce: no such folder in the current directory "
        f"({tmp_path}), though models/ is one there; reading it as a hub id\n"
    )
    assert err.startswith(said) and err.count("no such folder") == 1
    assert "could not load model 'models/my-ce'" in err
    assert "/models/my-ce" not in err.replace(f"{tmp_path}", "")  # no path the user never gave
    assert "-r DIR on the command line" in err and "--local-dir DIR" in err
    assert main(["rank", "-q", "solar", "-i", "docs.jsonl", "-r", "org/model"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rerankit rank: error: could not load model 'org/model'")
    assert "/models/" not in err and "no such folder" not in err
