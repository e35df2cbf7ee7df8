"""An LLM scorer declared in a pipeline file: its ``retry`` table, its client's keys
(``json_mode``) and unknown keys, end to end through the real openai SDK against a local
server that speaks its protocol."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from rerankit import scorers
from rerankit.config import build, read_pipeline
from rerankit.errors import ConfigError
from rerankit.llm import Limits, OpenAIClient, RetryPolicy
from rerankit.llm.testing import FakeLLMServer, Reply

DOCS = ["alpha doc", "beta doc"]


def _file(tmp_path, url: str, extra: str) -> str:
    path = tmp_path / "judge.toml"
    path.write_text(
        "[scorer]\n"
        'type = "llm_pointwise"\n'
        'provider = "openai"\n'
        'model = "m"\n'
        f'base_url = "{url}"\n'
        "cache = false\n" + extra,
        encoding="utf-8",
    )
    return str(path)


def test_a_retry_table_in_a_file_is_a_policy_that_retries(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    script = [Reply(status=500), Reply(status=500), Reply(text='{"id": "0", "score": 7}')]
    with FakeLLMServer(script, responder=lambda r: Reply(text='{"id": "1", "score": 3}')) as srv:
        retry = "retry = { attempts = 3, timeout = 5, min_wait = 0, max_wait = 0 }\n"
        reranker = build(read_pipeline(_file(tmp_path, srv.openai_url, retry)))
        policy = reranker.scorer.runner.policy
        assert policy == RetryPolicy(attempts=3, timeout=5.0, min_wait=0.0, max_wait=0.0)
        result = reranker.rerank("q", DOCS[:1])
    assert not result.degraded and result.usage["retries"] == 2 and result.usage["calls"] == 3
    assert result.results[0].score == 7.0


@pytest.mark.parametrize(
    ("retry", "message"),
    [
        ("{ attempts = 0 }", r"^scorer: retry: attempts must be >= 1"),
        ('{ attempts = "3" }', r"^scorer: retry\.attempts: must be an integer"),
        (
            "{ timout = 5 }",
            r"^scorer: retry: the table has no key 'timout' \(did you mean 'timeout'\?\)",
        ),
        ("5", r"^scorer: retry: a table of attempts, multiplier"),
        # a timeout that never ends a call, a backoff that shrinks, waits out of order
        ("{ timeout = nan }", r"^scorer: retry: timeout must be a finite number of seconds"),
        ("{ timeout = inf }", r"^scorer: retry: timeout must be a finite number of seconds"),
        ("{ multiplier = -1 }", r"^scorer: retry: multiplier must be > 0, got -1"),
        (
            "{ min_wait = 5, max_wait = 1 }",
            r"^scorer: retry: need 0 <= min_wait <= max_wait, got min_wait 5 and max_wait 1$",
        ),
    ],
)
def test_a_wrong_retry_table_is_named_when_the_file_loads(tmp_path, retry, message):
    with pytest.raises(ConfigError, match=message):
        build(read_pipeline(_file(tmp_path, "http://127.0.0.1:9/v1", f"retry = {retry}\n")))


def test_json_mode_from_a_file_reaches_the_client(tmp_path):
    with FakeLLMServer(responder=lambda r: Reply(text='{"id": "0", "score": 4}')) as srv:
        reranker = build(read_pipeline(_file(tmp_path, srv.openai_url, 'json_mode = "object"\n')))
        result = reranker.rerank("q", DOCS[:1])
    assert result.results[0].score == 4.0
    assert srv.requests[0].body["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("timeout = 5\n", r"has no key 'timeout': set it in the retry table"),
        ('api_key = "sk"\n', r"has no key 'api_key': .*api_key_env"),
        ("rate_limit = 600\n", r"has no key 'rate_limit': did you mean 'requests_per_minute'\?"),
        (
            "windw = 5\n",
            r"^scorer: an llm_pointwise scorer has no key 'windw'; its keys: "
            r"provider, model, base_url, api_key_env, json_mode, instructions, .*retry",
        ),
    ],
)
def test_an_unknown_key_in_an_llm_scorer_table_lists_the_valid_ones(tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message):
        build(read_pipeline(_file(tmp_path, "http://127.0.0.1:9/v1", extra)))


@pytest.mark.parametrize(
    ("scorer", "option", "message"),
    [
        (
            "LLMPointwiseScorer",
            {"timeout": 3},
            r"^LLMPointwiseScorer has no option 'timeout': pass it in a RetryPolicy: "
            r"retry=RetryPolicy\(timeout=\.\.\.\) .*; its options: instructions, .*retry, "
            r"max_concurrency, requests_per_minute",
        ),
        (
            "LLMListwiseScorer",
            {"max_concurency": 2},
            r"has no option 'max_concurency' \(did you mean 'max_concurrency'\?\); its options: "
            r"window, step, .*retry",
        ),
        ("LLMPointwiseScorer", {"model": "m"}, r"has no option 'model': it is the client's"),
    ],
)
def test_an_unknown_option_in_python_names_the_valid_ones_and_where_it_goes(
    scorer, option, message
):
    """From Python as from a file: a RetryPolicy's field given to the scorer itself points
    to ``retry=RetryPolicy(...)``, and every wrong keyword lists the options taken."""
    client = OpenAIClient(base_url="http://127.0.0.1:9/v1", model="m", api_key="k")
    with pytest.raises(TypeError, match=message):
        getattr(scorers, scorer)(client, cache=False, **option)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: RetryPolicy(attemps=2),
            r"^RetryPolicy has no field 'attemps' \(did you mean 'attempts'\?\); its fields: "
            r"attempts, multiplier, min_wait, max_wait, timeout$",
        ),
        (
            lambda: Limits(max_concurency=2),
            r"^Limits has no option 'max_concurency' \(did you mean 'max_concurrency'\?\); "
            r"its options: max_concurrency, requests_per_minute$",
        ),
        (lambda: Limits(rate_limit=60), r"did you mean 'requests_per_minute'\?"),
        (
            lambda: OpenAIClient(base_url="http://127.0.0.1:9/v1", timeout=5),
            r"^OpenAIClient has no option 'timeout': it is the scorer's retry policy: "
            r"LLMPointwiseScorer\(client, retry=RetryPolicy\(timeout=\.\.\.\)\) "
            r"\(from rerankit.llm import RetryPolicy; .*; its options: api_key, model, base_url",
        ),
        (
            lambda: scorers.LLMPointwiseScorer(
                OpenAIClient(base_url="http://127.0.0.1:9/v1"), rate_limit=60
            ),
            r"has no option 'rate_limit': did you mean 'requests_per_minute'\?",
        ),
    ],
)
def test_the_classes_the_errors_point_to_name_their_own_fields(make, message):
    """RetryPolicy, Limits and the clients answer a wrong keyword as the scorers do: the
    close name or where the option goes, and the list of those they take."""
    with pytest.raises(TypeError, match=message):
        make()


def test_a_retry_table_given_in_python_is_taken_as_a_file_takes_it():
    client = OpenAIClient(base_url="http://127.0.0.1:9/v1", model="m", api_key="k")
    retry = {"attempts": 2, "timeout": 5}
    scorer = scorers.LLMPointwiseScorer(client, cache=False, retry=retry)
    assert scorer.runner.policy == RetryPolicy(attempts=2, timeout=5)
    assert retry == {"attempts": 2, "timeout": 5}  # not changed
    with pytest.raises(ConfigError, match=r"no key 'attemps' \(did you mean 'attempts'\?\)"):
        scorers.LLMPointwiseScorer(client, cache=False, retry={"attemps": 2})
    with pytest.raises(TypeError, match=r"from rerankit.llm import RetryPolicy"):
        scorers.LLMPointwiseScorer(client, cache=False, retry=3)


@pytest.mark.parametrize("own", [{"max_concurrency": 4}, {"requests_per_minute": 60}])
def test_limits_and_the_scorers_own_limits_are_not_given_together(own):
    """One name for one thing: a shared Limits and the scorer's own bound would each claim
    to set the calls in flight, and one of them would be ignored."""
    client = OpenAIClient(base_url="http://127.0.0.1:9/v1", model="m", api_key="k")
    with pytest.raises(ValueError, match=rf"give limits= or {next(iter(own))}=, not both"):
        scorers.LLMPointwiseScorer(client, cache=False, limits=Limits(1), **own)
    alone = scorers.LLMPointwiseScorer(client, cache=False, limits=Limits(1))
    assert alone.runner.limits.concurrency.limit == 1
    assert scorers.LLMPointwiseScorer(client, cache=False).runner.limits.concurrency.limit == 16


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: RetryPolicy(timeout="10"), TypeError, "timeout must be a number of seconds"),
        (lambda: RetryPolicy(attempts=2.5), TypeError, "attempts must be an integer, got 2.5"),
        (lambda: RetryPolicy(timeout=float("nan")), ValueError, "timeout must be a finite"),
        (lambda: Limits(max_concurrency=2.5), TypeError, "max_concurrency must be an integer"),
        (
            lambda: Limits(requests_per_minute=float("inf")),
            ValueError,
            "requests_per_minute must be > 0 and finite, got inf",
        ),
    ],
)
def test_a_wrong_policy_or_limit_in_python_is_named_where_it_is_made(make, error, message):
    """Not later, as a TypeError from deep in a retry or a call that never times out."""
    with pytest.raises(error, match=re.escape(message)):
        make()
