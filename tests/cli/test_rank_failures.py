"""``rerankit rank`` whose result carries no ranking (every LLM call failed, every strategy
failed) exits 1 and writes nothing, so ``rank ... | head`` cannot carry on with the input
order; a cascade whose last stage failed keeps the earlier stage's order and exits 0.
Through the real openai SDK against a local server that speaks its protocol."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from rerankit.cli import main
from rerankit.llm.testing import FakeLLMServer, Reply

DOCS = [{"id": "w", "text": "wind farms"}, {"id": "s", "text": "solar power and solar panels"}]
JUDGE = (
    'provider = "openai"\nmodel = "m"\nbase_url = "{url}"\napi_key_env = "RERANKIT_TEST_KEY"\n'
    "cache = false\nretry = {{ attempts = 1, timeout = 5 }}\n"
)


def _rank(capsys, tmp_path, monkeypatch, reply: Reply, pipeline: str) -> tuple[int, str, str]:
    monkeypatch.setenv("RERANKIT_TEST_KEY", "k")
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    with FakeLLMServer(responder=lambda request: reply) as server:
        spec = tmp_path / "pipeline.toml"
        spec.write_text(pipeline.format(judge=JUDGE.format(url=server.openai_url)))
        code = main(["rank", "-q", "solar", "-i", str(docs), "-r", str(spec)])
    out, err = capsys.readouterr()
    return code, out, err


ALONE = '[scorer]\ntype = "llm_pointwise"\n{judge}'
CASCADE = (
    '[[stages]]\nreranker = "bm25"\n\n[[stages]]\n[stages.scorer]\ntype = "llm_pointwise"\n{judge}'
)


@pytest.mark.parametrize(
    "reply",
    [Reply(status=401, text="bad key"), Reply(text="<html>proxy</html>", content_type="text/html")],
    ids=["auth", "not json"],
)
def test_rank_with_every_llm_call_failed_writes_nothing_and_exits_1(
    capsys, tmp_path, monkeypatch, reply
):
    code, out, err = _rank(capsys, tmp_path, monkeypatch, reply, ALONE)
    assert code == 1 and out == "", (code, out)
    last = err.strip().splitlines()[-1]
    assert last == (
        "rerankit rank: error: no ranking: the LLM provider failed for every document (the "
        "warnings above say why); nothing written"
    ), err
    assert "rerankit: warning: document 0" in err  # why, before it


def test_rank_whose_last_stage_failed_keeps_the_earlier_stage_s_order_and_exits_0(
    capsys, tmp_path, monkeypatch
):
    code, out, err = _rank(capsys, tmp_path, monkeypatch, Reply(status=401, text="no"), CASCADE)
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(r["id"], r.get("degraded")) for r in lines] == [("s", True), ("w", True)]  # bm25's
    assert 'each line says "degraded": true' in err
    assert "scored nothing (the LLM provider failed for every document)" in err
    assert "error:" not in err
    # each document's warning says what happened to it in a cascade: not scored 0.0
    doc = [line for line in err.splitlines() if "stage 'llm_pointwise': document 0" in line]
    assert doc and doc[0].endswith("; it keeps the previous stage's score and place"), err
    assert "scored 0.0" not in err


def test_rank_with_an_llm_says_what_it_cost_on_stderr_and_a_rerun_that_it_cost_nothing(
    capsys, tmp_path, monkeypatch
):
    """One line on stderr, as batch's summary says it: the calls and tokens, and on a rerun
    the judgments read from the cache (no call); stdout keeps the ranking alone, and a
    ranking with no LLM says nothing of the kind."""
    monkeypatch.setenv("RERANKIT_TEST_KEY", "k")
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    reply = Reply(text='{"id": "0", "score": 7}', input_tokens=40, output_tokens=5)
    with FakeLLMServer(responder=lambda request: reply) as server:
        judge = JUDGE.format(url=server.openai_url).replace(
            "cache = false", f'cache = "{tmp_path / "judgments.sqlite"}"'
        )
        spec = tmp_path / "judge.toml"
        spec.write_text(ALONE.format(judge=judge))
        said = []
        for _ in range(2):
            assert main(["rank", "-q", "solar", "-i", str(docs), "-r", str(spec)]) == 0
            out, err = capsys.readouterr()
            assert [json.loads(line)["id"] for line in out.splitlines()] == ["w", "s"]
            said.append([line for line in err.splitlines() if "LLM usage" in line])
    assert said[0] == [
        "rerankit: LLM usage: cache_hits 0, calls 2, failures 0, input_tokens 80, "
        "output_tokens 10, retries 0"
    ], said
    assert said[1] == [
        "rerankit: LLM usage: cache_hits 2, calls 0, failures 0, input_tokens 0, "
        "output_tokens 0, retries 0 (every judgment from the judgment cache: no call, no tokens)"
    ], said
    assert main(["rank", "-q", "solar", "-i", str(docs), "-r", "bm25"]) == 0
    assert "LLM usage" not in capsys.readouterr().err
