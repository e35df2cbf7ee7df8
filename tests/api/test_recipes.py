"""The README's four recipes run as a reader would copy them: a cross-encoder from the hub
with probabilities (the same code pointed at a tiny model folder built here, since the hub
cannot be reached), the service called with Cohere's SDK and with curl (against a service
started here), evaluating a retriever's output, and learning from judgments or an LLM
judge's (a local server speaking OpenAI's protocol stands in for the LLM). The example
folders they use run too, and the outputs the pages show are the commands' own.

The recipes that rerank hundreds of abstracts with the default (minutes on two cores, the
first time) are marked slow; they share one embedding cache."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from served import DEFAULT_URL, curl_json, default_service

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
SERVICE = (REPO / "docs" / "service.md").read_text(encoding="utf-8")
EVALUATION = (REPO / "docs" / "evaluation.md").read_text(encoding="utf-8")
HUB_ID = "cross-encoder/ms-marco-MiniLM-L6-v2"


def _section(text: str, heading: str) -> str:
    """The Markdown under ``heading`` up to the next heading of any level."""
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1 :]
    match = re.search(r"^#{1,6} ", rest, flags=re.M)
    return rest[: match.start()] if match else rest


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def _commands(block: str) -> list[str]:
    lines = block.replace("\\\n", " ").splitlines()
    return [line.split(" #")[0].strip() for line in lines if line.strip()]


def _python(code: str, *args: str, cwd: Path, env: dict | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{code}\n{done.stderr[-3000:]}"
    return done.stdout


def _rerankit(command: str, *, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """A ``rerankit ...`` line from a page, run as the installed command would run it."""
    words = shlex.split(command)
    assert words[0] == "rerankit", command
    done = subprocess.run(
        [sys.executable, "-m", "rerankit", *words[1:]],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), **(env or {})},
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def vectors(tmp_path_factory):
    """One embedding cache for every recipe here: each abstract is encoded once."""
    return {"RERANKIT_EMBEDDING_CACHE": str(tmp_path_factory.mktemp("vectors") / "e.sqlite")}


# --- 1. a cross-encoder from the hub, with probabilities ------------------------------------


@pytest.mark.slow  # 13 s: make test-slow (tests/training/test_fine_tune.py trains one)
def test_the_cross_encoder_recipe_runs_on_a_model_folder(bert_dir, tmp_path):
    pytest.importorskip("sentence_transformers", reason="the recipe needs the 'torch' extra")
    (block,) = _blocks(
        _section(README, "### Your own cross-encoder from the Hugging Face hub"), "python"
    )
    assert HUB_ID in block and 'output="sigmoid"' in block
    printed = _python(block.replace(HUB_ID, str(bert_dir)), cwd=tmp_path)
    pairs = json.loads(printed.replace("(", "[").replace(")", "]"))
    assert sorted(index for index, _ in pairs) == [0, 1]
    assert all(0 < score < 1 for _, score in pairs)  # probabilities, as the recipe says
    assert [s for _, s in pairs] == sorted((s for _, s in pairs), reverse=True)
    # the example script: the same code, the model given on its command line
    script = REPO / "examples" / "cross-encoder" / "rerank.py"
    lines = _python(script.read_text(), str(bert_dir), cwd=tmp_path).splitlines()
    assert len(lines) == 3 and all(0 < float(line.split()[0]) < 1 for line in lines)


# --- 2. the service, from Cohere's SDK and curl ---------------------------------------------


@pytest.fixture(scope="module")
def service():
    """`rerankit serve` as the recipe starts it (open, the default pipelines), on a free
    port, once it is ready."""
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    pytest.importorskip("sentence_transformers", reason="the default needs the 'torch' extra")
    with default_service() as url:
        yield SimpleNamespace(url=url)


def _cohere_blocks() -> list[str]:
    return [
        b for text in (README, SERVICE) for b in _blocks(text, "python") if "cohere.ClientV2" in b
    ]


def test_the_cohere_sdk_recipes_get_the_ranking(service, tmp_path):
    pytest.importorskip("cohere", reason="the recipe needs the cohere SDK (dev extra)")
    blocks = _cohere_blocks()
    assert len(blocks) == 2 and all('model="rerank-v3.5"' in b for b in blocks)
    for block in blocks:
        assert DEFAULT_URL in block and 'api_key="any-non-empty-key"' in block
        index, score = _python(block.replace(DEFAULT_URL, service.url), cwd=tmp_path).split()
        assert index == "1" and 0.5 < float(score) <= 1  # the B and T cells document
    # the SDK and curl recipes ask the same, so a reader comparing them sees one score
    asked = {re.search(r'query="([^"]+)"', b).group(1) for b in blocks}
    same_documents = [c for c in _curl_lines() if "Vaccine storage needs fridges." in c]
    assert same_documents
    asked |= {re.search(r'"query": "([^"]+)"', c).group(1) for c in same_documents}
    assert len(asked) == 1, asked
    script = REPO / "examples" / "service" / "cohere_client.py"
    index, score = _python(script.read_text(), service.url, cwd=tmp_path).split()
    assert index == "1" and 0.5 < float(score) <= 1


def _curl_lines() -> list[str]:
    lines = []
    for text in (README, SERVICE):
        for block in _blocks(text, "bash"):
            lines += [c for c in _commands(block) if c.startswith("curl ")]
    return lines


def test_the_curl_recipes_get_the_ranking_and_the_shown_answer(service):
    lines = _curl_lines()
    (traced,) = [line for line in lines if "X-Request-Id" in line]  # finding it in the logs
    lines.remove(traced)
    header = subprocess.run(
        ["sh", "-c", traced.replace(DEFAULT_URL, service.url)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert header.stdout.strip().lower() == "x-request-id: order-7731", header.stdout
    (timed,) = [line for line in lines if "x-rerankit-timeout" in line]  # a shorter deadline
    lines.remove(timed)
    assert [r["index"] for r in curl_json(timed, service.url)["results"]] == [0, 1]
    cohere = [line for line in lines if "/v2/rerank" in line or "/v1/rerank" in line]
    (ready,) = [line for line in lines if "/ready" in line]  # one pipeline's readiness
    assert curl_json(ready, service.url) == {"status": "ready", "model": "bm25", "pipeline": "bm25"}
    (tei,) = [line for line in lines if line not in cohere and line != ready]  # TEI's
    assert len(cohere) == 2 and f"{DEFAULT_URL}/rerank " in tei
    ranked = curl_json(tei, service.url)  # TEI's answer: a list, best first
    assert [r["index"] for r in ranked] == [1, 0] and ranked[0]["score"] > ranked[1]["score"]
    answers = [curl_json(line, service.url) for line in cohere]
    for answer in answers:
        (best,) = answer["results"]
        assert best["index"] == 1 and 0.5 < best["relevance_score"] <= 1
    shown = json.loads(re.search(r"```json\n(.*?)```", SERVICE, flags=re.S).group(1))
    got = answers[-1]  # the page shows the service's own answer (its id differs every time)
    assert shown["meta"] == got["meta"] and shown.keys() == got.keys()
    assert [r["index"] for r in shown["results"]] == [r["index"] for r in got["results"]]
    assert [r["relevance_score"] for r in shown["results"]] == pytest.approx(
        [r["relevance_score"] for r in got["results"]], abs=1e-4
    )
    script = REPO / "examples" / "service" / "rerank.sh"
    done = subprocess.run(
        ["sh", str(script), service.url], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout)["results"][0]["index"] == 1


def test_an_open_service_takes_any_key_and_cohere_model_names(service):
    import httpx

    body = {"query": "vaccines", "documents": ["vaccines train cells", "fridges"], "top_n": 1}
    for model in ("rerank-v3.5", "rerank-english-v3.0", "hybrid"):
        for headers in ({"Authorization": "Bearer any-non-empty-key"}, {}):
            answer = httpx.post(
                f"{service.url}/v2/rerank",
                json={**body, "model": model},
                headers=headers,
                timeout=120,  # a loaded machine may take seconds
            )
            assert answer.status_code == 200, answer.text


# --- 3. evaluating your own retriever's output ----------------------------------------------


def _eval_line() -> str:
    block = _blocks(_section(README, "### Evaluate your own retriever's output"), "bash")[0]
    (line,) = _commands(block)
    return line


def _table(printed: str) -> list[list[str]]:
    """The table's rows without its timing columns (they vary from run to run)."""
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in printed.splitlines()]
    rows = [r for r in rows if r and not set("".join(r)) <= set("-:")]
    keep = [i for i, name in enumerate(rows[0]) if " ms" not in name]
    return [[r[i] for i in keep] for r in rows]


@pytest.mark.slow
def test_the_evaluation_recipe_reranks_the_retrievers_candidates(vectors, tmp_path):
    pytest.importorskip("sentence_transformers", reason="hybrid needs the 'torch' extra")
    line = _eval_line()
    assert "--first-stage examples/own-retriever/candidates.jsonl" in line
    printed = _rerankit(line, cwd=REPO, env=vectors).stdout
    table = _table(printed)
    assert [r[0] for r in table] == ["pipeline", "first stage", "bm25", "hybrid"]
    assert "first stage: examples/own-retriever/candidates.jsonl" in printed
    # the same ranking as a TREC run gives the same table
    run = line.replace("candidates.jsonl", "candidates.run.trec")
    assert _table(_rerankit(run, cwd=REPO, env=vectors).stdout) == table


def test_the_shipped_candidates_are_what_their_script_makes(tmp_path):
    """examples/own-retriever holds the output of its own script, in both forms."""
    folder = REPO / "examples" / "own-retriever"
    rows = [json.loads(line) for line in (folder / "candidates.jsonl").read_text().splitlines()]
    run = (folder / "candidates.run.trec").read_text().split("\n")
    expected = [
        f"{r['query_id']} Q0 {c['id']} {rank} {c['first_stage_score']} minilm-dense"
        for r in rows
        for rank, c in enumerate(r["candidates"], start=1)
    ]
    assert run[:-1] == expected and len(rows) == 30
    assert all(len(r["candidates"]) == 20 for r in rows)
    test_queries = {
        line.split("\t")[0]
        for line in (REPO / "examples/scifact-mini/qrels/test.tsv").read_text().splitlines()[1:]
    }
    assert {r["query_id"] for r in rows} == test_queries


@pytest.mark.slow
def test_the_shown_eval_table_is_the_commands(vectors):
    pytest.importorskip("sentence_transformers", reason="hybrid needs the 'torch' extra")
    section = _section(EVALUATION, "## Try it on the shipped example")
    (line,) = _commands(_blocks(section, "bash")[0])
    shown = _blocks(section, "text")[0]
    printed = _rerankit(line, cwd=REPO, env=vectors).stdout
    assert _table(shown) == _table(printed)


# --- 4. learning from judgments, or an LLM judge's ------------------------------------------


def _learn_lines() -> list[str]:
    section = _section(README, "### Learn from your judgments, or an LLM judge's")
    return [c for block in _blocks(section, "bash") for c in _commands(block)]


@pytest.mark.slow
def test_the_tune_recipe_writes_a_pipeline_the_service_serves(vectors, tmp_path):
    pytest.importorskip("sentence_transformers", reason="tune needs the 'torch' extra")
    tune, serve, *_ = _learn_lines()
    assert tune.startswith("rerankit tune --data examples/scifact-mini")
    tune = tune.replace("--out tuned.toml", f"--out {tmp_path / 'tuned.toml'}")
    printed = _rerankit(tune, cwd=REPO, env=vectors).stdout
    assert "scifact-mini, test split, 30 queries" in printed
    from rerankit import load
    from rerankit.cli import build_parser, serve_settings

    assert load(tmp_path / "tuned.toml").rerank("vaccines", ["vaccines", "fridges"])
    words = shlex.split(serve.replace("tuned.toml", str(tmp_path / "tuned.toml")))
    settings = serve_settings(build_parser().parse_args(words[1:]))
    assert settings.default in settings.pipelines


@pytest.mark.slow
def test_the_llm_judge_recipe_labels_and_learns(vectors, tmp_path):
    pytest.importorskip("sentence_transformers", reason="tune needs the 'torch' extra")
    if importlib.util.find_spec("openai") is None:
        pytest.skip("the judge needs the 'openai' extra")
    from rerankit.llm.testing import FakeLLMServer, Reply

    relevant = {
        line.split("\t")[1]
        for line in (REPO / "examples/scifact-mini/qrels/train.tsv").read_text().splitlines()[1:]
    }
    corpus = {
        json.loads(line)["_id"]: json.loads(line)["text"][:60]
        for line in (REPO / "examples/scifact-mini/corpus.jsonl").read_text().splitlines()
    }
    document = re.compile(r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\)')

    def judge(request):  # an oracle: 9 for an abstract judged relevant, 1 otherwise
        text = json.loads(document.search(request.prompt).group(1))
        found = [doc for doc, head in corpus.items() if head in text]
        score = 9 if found and found[0] in relevant else 1
        return Reply(text=json.dumps({"score": score}), input_tokens=100, output_tokens=8)

    _, _, dry, label, tune = _learn_lines()
    with FakeLLMServer(responder=judge) as server:
        env = {**vectors, "OPENAI_BASE_URL": server.openai_url, "OPENAI_API_KEY": "test-key"}
        out = tmp_path / "labels"
        estimate = _rerankit(dry.replace("--out labels", f"--out {out}"), cwd=REPO, env=env)
        assert "calls" in estimate.stderr and not out.exists()  # a dry run spends nothing
        _rerankit(label.replace("--out labels", f"--out {out}"), cwd=REPO, env=env)
        assert (out / "qrels" / "train.tsv").is_file()
        tuned = tmp_path / "tuned.toml"
        tune = tune.replace("--data labels", f"--data {out}").replace(
            "--out tuned.toml", f"--out {tuned}"
        )
        printed = _rerankit(tune, cwd=REPO, env=env).stdout
    assert tuned.is_file() and "scifact-mini, test split, 30 queries" in printed
