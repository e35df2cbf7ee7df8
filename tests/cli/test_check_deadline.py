"""``rerankit check service.toml`` warns of a pipeline whose LLM judge can take longer per
call (retry's attempts x timeout, plus the waits between them) than the service's
``[server] deadline``: the deadline, not the retries, would then end a provider that stalls."""

from __future__ import annotations

from rerankit.cli.main import main
from rerankit.llm.resilience import RetryPolicy

JUDGE = """name = "{name}"
[[stages]]
name = "lexical"
scorer = {{ type = "bm25" }}
keep = 5
[[stages]]
name = "judge"
[stages.scorer]
type = "llm_pointwise"
provider = "openai"
model = "m"
base_url = "http://127.0.0.1:9/v1"
{retry}
"""


def test_the_longest_call_is_the_arithmetic_scorers_md_gives():
    assert RetryPolicy().longest_call() == 184  # 3 x 60 s and two waits of 2 s
    assert RetryPolicy(attempts=2, timeout=5).longest_call() == 12  # 2 x 5 + 2
    assert RetryPolicy(attempts=4, timeout=1, min_wait=0.5, max_wait=3).waits() == [1, 2, 3]
    assert RetryPolicy(attempts=1, timeout=2).waits() == []


def test_a_judge_slower_per_call_than_the_service_timeout_is_warned_of(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for name, retry in (
        ("longjudge", "retry = { timeout = 20 }"),
        ("quick", "retry = { attempts = 1, timeout = 2 }"),
        ("defaults", ""),
    ):
        (tmp_path / f"{name}.toml").write_text(JUDGE.format(name=name, retry=retry))
    settings = tmp_path / "service.toml"
    settings.write_text(
        '[server]\ndeadline = 6.0\n[pipelines]\nlongjudge = "longjudge.toml"\n'
        'quick = "quick.toml"\ndefaults = "defaults.toml"\n'
    )
    assert main(["check", str(settings)]) == 0  # a warning, not a mistake
    out = capsys.readouterr().out
    warned = [line for line in out.splitlines() if "one LLM call" in line]
    assert len(warned) == 2, out  # not the quick one: 2 s fits in 6 s
    assert warned[0].startswith(
        f"{settings}: warning: pipeline 'longjudge': stage 'judge' (llm_pointwise): one LLM "
        "call can take up to 64 s (retry: 3 attempts x timeout 20 s, plus waits of 2 + 2 s), "
        "longer than [server] deadline (6 s)"
    ), warned[0]
    assert "or raise [server] deadline above 64 s" in warned[0]
    assert "Lower the scorer's retry attempts or timeout" in warned[0]
    assert "pipeline 'defaults'" in warned[1] and "up to 184 s" in warned[1], warned[1]
    assert "'quick'" not in " ".join(warned)
    # under a timeout that covers the longest call, nothing is said
    settings.write_text(
        '[server]\ntimeout = 200\ngraceful_timeout = 200\n[pipelines]\nd = "defaults.toml"\n'
    )
    assert main(["check", str(settings)]) == 0
    assert "one LLM call" not in capsys.readouterr().out
